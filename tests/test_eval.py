"""The labelled evaluation set (eval/cases) meets the precision/recall targets of the numerics and tensor-core rules."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCORE = ROOT / "eval" / "score.py"
CODES = ("AMP201", "AMP202", "AMP203", "AMP204", "AMP301", "AMP302", "AMP303", "AMP401", "AMP402")
PRECISION_TARGET = 0.95
#: Per rule, over the positives that are not known misses.
RECALL_TARGET = 0.85
#: Standalone modules whose first op works on a ``forward`` input the analysis cannot see the dtype of
#: (no caller in the snippet): unknown stays unknown, so they are missed by design (eval/README.md,
#: "Known misses"). Any other miss fails.
KNOWN_MISSES = {
    ("AMP203", "AMP302/pos_rsqrt_self_eps.py", 13),
    ("AMP302", "AMP302/pos_rsqrt_self_eps.py", 14),
    ("AMP203", "AMP302/pos_sqrt_var_plus_1e12.py", 14),
    ("AMP302", "AMP302/pos_sqrt_var_plus_1e12.py", 15),
    ("AMP204", "AMP204/pos_handwritten_softmax.py", 13),
    # AMP204 needs a value a learned layer or parameter produced (evidence that it can be large):
    # on real code, exp/pow of noise levels and timesteps were most of its false alarms. Random
    # draws scaled up by hand are the price.
    ("AMP204", "AMP204/pos_explicit_half_tensor_exp.py", 5),
    # AMP203's var and whole-tensor norms need the same evidence (their kernels accumulate in fp32, so
    # only large values overflow): on real code, the var of patchified pixels and the norm of a
    # difference of unit vectors were false alarms. A random draw scaled by hand is the price.
    ("AMP203", "AMP203/pos_torch_norm_functional.py", 5),
}


def _load():
    spec = importlib.util.spec_from_file_location("amp_lint_eval_score", SCORE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def scores():
    score = _load()
    if not list((ROOT / "eval" / "cases").glob("AMP*/*.py")):
        pytest.fail("eval/cases is empty")
    return score.score(list(CODES)), score


def test_every_rule_has_positive_and_safe_cases():
    cases = ROOT / "eval" / "cases"
    for code in CODES:
        names = [p.name for p in (cases / code).glob("*.py")]
        assert any(n.startswith("pos_") for n in names), code
        assert any(n.startswith("safe_") for n in names), code


@pytest.mark.parametrize("code", CODES)
def test_rule_meets_targets(scores, code):
    table, score = scores
    s = table[code]
    detail = score.report({code: s})
    assert s.tp, f"{code}: no true positives\n{detail}"
    assert s.precision >= PRECISION_TARGET, detail
    misses = {(code, path, row) for path, row in s.fn}
    assert misses <= KNOWN_MISSES, detail
    wanted = len(s.tp) + len(s.fn) - len(misses)
    assert len(s.tp) / wanted >= RECALL_TARGET, detail


def test_expect_markers_are_parsed():
    score = _load()
    text = "x = 1\ny = f(x)  # expect: AMP201, AMP203\n"
    assert score.expectations(text) == {("AMP201", 2), ("AMP203", 2)}


def test_safe_cases_have_no_markers_for_their_rule():
    score = _load()
    for path in (ROOT / "eval" / "cases").glob("AMP*/safe_*.py"):
        own = path.parent.name
        assert not any(code == own for code, _ in score.expectations(path.read_text())), path
