"""``amp-lint trace`` on the numerics fixtures (each hazard at its line, with its code; each fixed
script clean), a runtime-only hazard and a not-reached finding, sampling, and the output formats."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amp_lint.runtime import trace as tr
from amp_lint.runtime.target import resolve
from runtime_cases import NUMERICS, ROOT, TRACE_CASES, cuda_available

pytestmark = pytest.mark.runtime

HAZARDS = sorted(name for name in TRACE_CASES if name.startswith("AMP"))
FIXED = sorted(name for name in TRACE_CASES if name.startswith("fixed/"))
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"  # vendored: a fresh clone alone must pass


#: fixtures whose overflowing fill raises (``masked_fill``, a finfo fill under autocast); an indexed
#: store of the same constant stores inf silently
RAISING_FILLS = {"AMP301_attention_mask_1e9", "AMP303_finfo_of_input_under_autocast"}


def _expected_line(name: str) -> int:
    """The hazard's row in fixtures/numerics/expected.txt (the line that differs from fixed/)."""
    code = name[:6]
    for line in (NUMERICS / "expected.txt").read_text().splitlines():
        if line.startswith(f"{name}.py:") and line.endswith(f": {code}"):
            return int(line.split(":")[1])
    raise AssertionError(f"{name} not in expected.txt")


@pytest.mark.parametrize("case", HAZARDS)
def test_hazard_reported_at_its_line_with_its_code(traced, case):
    result = traced(case)
    code, line = case[:6], _expected_line(case)
    assert [(h.code, h.shown_line, h.status) for h in result.hazards] == [(code, line, tr.CONFIRMED)], \
        tr.render_text(result)
    assert Path(result.hazards[0].path).name == f"{case}.py"
    assert [(s.code, s.line, s.status) for s in result.static] == [(code, line, tr.CONFIRMED)]
    assert result.exit_code == 1 and result.error is None
    if case in RAISING_FILLS:  # the fill raised: caught, attributed, re-raised
        assert result.run.returncode == 1 and "RuntimeError: value cannot be converted" in result.crash
        assert "raised" in result.hazards[0].message
    elif code == "AMP301":  # an indexed store: the value became inf, the script ran on
        assert result.run.returncode == 0 and result.crash is None
        assert "became inf silently" in result.hazards[0].message
    else:
        assert result.run.returncode == 0 and result.crash is None


def test_numeric_evidence_in_the_messages(traced):
    messages = {case: traced(case).hazards[0].message for case in HAZARDS}
    assert "inf/NaN first appeared here" in messages["AMP202_lm_cross_entropy"]
    assert "the square overflowed to inf (|x| up to 1200)" in messages["AMP203_rmsnorm_mean_of_squares"]
    assert "on inputs up to 13.8" in messages["AMP204_handwritten_softmax_exp"]
    assert "-1e9" in messages["AMP301_attention_mask_1e9"]
    assert "torch.finfo(torch.float32).min" in messages["AMP303_finfo_of_input_under_autocast"]
    assert messages["AMP302_adam_eps_1e8"].startswith("Adam(eps=1e-8) stepped float16 parameters 4 times")
    assert "parameters were inf/NaN after step 1" in messages["AMP302_adam_eps_1e8"]


@pytest.mark.parametrize("case", FIXED)
def test_fixed_script_traces_clean(traced, case):
    result = traced(case)
    assert result.hazards == [] and result.exit_code == 0, tr.render_text(result)
    assert result.run.returncode == 0 and result.static == []


@pytest.mark.cases("precision_from_config")
def test_runtime_only_hazard_and_not_reached_finding(traced):
    result = traced("precision_from_config")
    source = (ROOT / "fixtures" / "runtime" / "precision_from_config.py").read_text().splitlines()
    softmax = next(i for i, ln in enumerate(source, 1) if "F.softmax(scores" in ln)
    log_softmax = next(i for i, ln in enumerate(source, 1) if "F.log_softmax(" in ln)
    assert [(h.code, h.line, h.status) for h in result.hazards] == [("AMP201", softmax, tr.RUNTIME_ONLY)]
    assert [(s.code, s.line, s.status) for s in result.static] == [("AMP201", log_softmax, tr.NOT_REACHED)]
    text = tr.render_text(result)
    assert text.splitlines()[3] == "RUNTIME ONLY: 1 hazard the static analysis missed:"
    assert f"precision_from_config.py:{log_softmax}: AMP201 [not reached]" in text


@pytest.mark.cases("AMP303_finfo_of_input_under_autocast")
def test_op_records_carry_dtypes_and_autocast_state(traced):
    """The records are a dynamic oracle for the static dtype inference: under CPU autocast the
    matmul of the fp32 input's projections comes out float16."""
    ops = tr.to_json(traced("AMP303_finfo_of_input_under_autocast"))["ops"]
    matmul = next(o for o in ops if o["op"] == "matmul")
    assert matmul["line"] == 37 and matmul["out"] == ["float16"] and matmul["autocast"] == ["cpu:float16"]
    fill = next(o for o in ops if o["op"] == "masked_fill")
    assert fill["fill_value"] == pytest.approx(-3.4028234663852886e38) and fill["out"] == ["float16"]


@pytest.mark.cases("AMP202_lm_cross_entropy", "AMP301_attention_mask_1e9")
def test_json_and_sarif(traced):
    data = json.loads(tr.render_json(traced("AMP202_lm_cross_entropy")))
    assert data["exit_code"] == 1 and data["run"]["device"]["used"] == ("cuda" if cuda_available() else "cpu")
    assert [(h["code"], h["line"], h["status"]) for h in data["hazards"]] == [("AMP202", 43, "confirmed")]
    sarif = json.loads(tr.render_sarif(traced("AMP301_attention_mask_1e9"), "9.9.9"))
    result = sarif["runs"][0]["results"][0]
    assert result["ruleId"] == "AMP301" and result["properties"]["runtime_status"] == "confirmed"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 38
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(sarif))
    assert errors == []


LOOP = '''\
import torch
torch.set_num_threads(1)
x = torch.nn.Linear(64, 64).half()(torch.randn(64).half()).detach()  # a layer's output: AMP204's evidence
tiny = torch.full((8,), 1e-4).half()
total = 0.0
for i in range(3000):
    y = torch.exp(x * 0.1)
    total += float(y[0])
print(total, float((tiny * tiny).float().sum()), float((torch.relu(x) * 2.0).float().sum()))
'''


def test_sampling_bounds_the_numeric_checks_and_underflow_is_seen(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    result = tr.trace(resolve(str(script), None, (), tmp_path), tr.Options())
    exp = next(o for o in result.run.instrumentation["trace"]["ops"] if o["op"] == "exp")
    # every call counted, numerics checked on calls 1-4 and powers of two only
    assert exp["calls"] == 3000 and exp["checked"] == 4 + len([2 ** k for k in range(3, 12)])
    # 1e-4 * 1e-4 is 0 in float16 (an underflow); relu's zeros times 2.0 are not new zeros
    assert [(h.code, h.line, h.status) for h in result.hazards] == [
        ("AMP204", 7, tr.CONFIRMED), (tr.UNDERFLOW, 9, tr.RUNTIME_ONLY)]
    assert [h.ops for h in result.hazards][1] == ["mul"]


def test_cli_exit_codes_and_text():
    out = subprocess.run([sys.executable, "-m", "amp_lint", "trace", "fixtures/numerics/AMP301_attention_mask_1e9.py"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 1, out.stderr
    assert ("fixtures/numerics/AMP301_attention_mask_1e9.py:38: AMP301 [confirmed] `masked_fill` filled a float16 "
            "tensor with -1e9") in out.stdout
    assert out.stderr == ""
    missing = subprocess.run([sys.executable, "-m", "amp_lint", "trace", "fixtures/runtime/csv_regression/train.py"],
                             capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0].startswith("amp-lint: error: run failed: missing file 'data/points.csv'")
