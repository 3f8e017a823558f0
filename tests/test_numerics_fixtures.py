"""Execution checks for the numerics rules (AMP201-204, AMP301-303).

Each ``fixtures/numerics/AMPxxx_*.py`` runs on the CPU in real float16 and shows its hazard (a
RuntimeError, inf/NaN, or a result far from the float32 run of the same script with
``AMP_FIXTURE_DTYPE=float32``). ``amp-lint fix --unsafe-fixes`` on a copy must report the rule,
rewrite the script so that it runs and lands close to the float32 result, and be idempotent.
Where torch sees a GPU, the hazard and the rewrite also run there (``fixtures/numerics/on_cuda.py``).
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "numerics"
CASES = sorted(p for p in FIXTURES.glob("AMP*.py") if re.match(r"AMP(20[1-4]|30[1-3])_", p.name))
RESULT = re.compile(r"result=(\S+)")
#: Relative distance from the fp32 result that counts as "far" (the hazard) and "close" after the fix.
#: AMP302's fixture trains 4 Adam steps in fp16, which lands ~3% from the fp32 run even when correct.
FAR = 0.1
CLOSE = 0.05


#: fixtures whose hazard lives in the CPU kernel: the CUDA kernels accumulate in float32, and on an
#: H100 these scripts landed within 0.2 % of fp32 (fixtures/numerics/README.md). On a GPU only their
#: rewrite is checked there.
CPU_KERNEL_HAZARDS = {"AMP201", "AMP202"}


@functools.lru_cache(maxsize=None)
def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _run(script: Path, dtype: str, device: str = "cpu") -> "tuple[int, float | None, str]":
    env = dict(os.environ, AMP_FIXTURE_DTYPE=dtype, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    runner = [str(FIXTURES / "on_cuda.py")] if device == "cuda" else []
    proc = subprocess.run([sys.executable, *runner, str(script)], capture_output=True, text=True, env=env,
                          timeout=120, cwd=script.parent)
    match = RESULT.search(proc.stdout)
    value = float(match.group(1)) if match else None
    return proc.returncode, value, proc.stderr[-2000:]


def _amp_lint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", *args, "--no-cache", "--isolated"],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-6)


@pytest.fixture(scope="session")
def references():
    """The float32 result of each script, run once per session."""
    cache = {}

    def get(script: Path, device: str = "cpu") -> float:
        if (script, device) not in cache:
            rc, value, err = _run(script, "float32", device)
            assert rc == 0 and value is not None and math.isfinite(value), err
            cache[script, device] = value
        return cache[script, device]

    return get


def test_every_numerics_rule_has_a_fixture():
    codes = {p.name[:6] for p in CASES}
    assert codes == {"AMP201", "AMP202", "AMP203", "AMP204", "AMP301", "AMP302", "AMP303"}


@pytest.mark.runtime
@pytest.mark.parametrize("script", CASES, ids=lambda p: p.stem)
def test_fixture_shows_hazard_and_fix_repairs_it(script: Path, tmp_path: Path, references):
    code = script.name[:6]
    reference = references(script)

    # 1. the hazard is real: it raises, produces inf/NaN, or lands far from fp32
    rc, value, err = _run(script, "float16")
    hazard = rc != 0 or value is None or not math.isfinite(value) or _rel(value, reference) > FAR
    assert hazard, f"{script.name} ran cleanly in fp16 with {value} vs fp32 {reference}"

    # 2. the rule fires on it
    copy = tmp_path / script.name
    shutil.copy(script, copy)
    check = _amp_lint("check", "--select", code, "--output-format", "json", "--exit-zero", str(copy), cwd=tmp_path)
    findings = json.loads(check.stdout)
    assert any(f["code"] == code for f in findings), check.stdout + check.stderr
    assert all(f.get("precision_context") for f in findings if f["code"] == code)

    # 3. the unsafe fix rewrites it so that it runs and lands close to the fp32 result
    fixed = _amp_lint("fix", "--unsafe-fixes", "--select", code, "--exit-zero", str(copy), cwd=tmp_path)
    text = copy.read_text()
    assert text != script.read_text(), fixed.stdout + fixed.stderr
    rc, value, err = _run(copy, "float16")
    assert rc == 0, err
    assert value is not None and math.isfinite(value), f"fixed {script.name} gave {value}"
    assert _rel(value, reference) <= CLOSE, f"fixed {script.name}: {value} vs fp32 {reference}"

    # 4. a second fix changes nothing, and the rule is silent on the fixed file
    _amp_lint("fix", "--unsafe-fixes", "--select", code, "--exit-zero", str(copy), cwd=tmp_path)
    assert copy.read_text() == text
    again = _amp_lint("check", "--select", code, "--output-format", "json", "--exit-zero", str(copy), cwd=tmp_path)
    assert [f for f in json.loads(again.stdout) if f["code"] == code] == []

    # 5. on a GPU: the hazard (unless it is the CPU kernel's), and the rewrite lands close to fp32 there
    if _cuda_available():
        reference = references(script, "cuda")
        rc, value, err = _run(script, "float16", "cuda")
        hazard = rc != 0 or value is None or not math.isfinite(value) or _rel(value, reference) > FAR
        assert hazard or code in CPU_KERNEL_HAZARDS, f"{script.name} on CUDA: {value} vs fp32 {reference}"
        rc, value, err = _run(copy, "float16", "cuda")
        assert rc == 0 and value is not None and _rel(value, reference) <= CLOSE, (value, reference, err)


@pytest.mark.parametrize("script", sorted((FIXTURES / "fixed").glob("AMP*.py")), ids=lambda p: p.stem)
def test_hand_fixed_versions_are_silent(script: Path):
    code = script.name[:6]
    check = _amp_lint("check", "--select", code, "--output-format", "json", "--exit-zero", str(script),
                      cwd=script.parent)
    assert [f for f in json.loads(check.stdout) if f["code"] == code] == [], check.stdout
