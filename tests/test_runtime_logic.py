"""The runtime commands' logic on hand-built records: no torch, no subprocess.

trace's classification of per-op records into AMP codes and its cross-reference with ``check``;
verify's checks on hand-built instrumentation; the target (script/module, import closure, mirror)
and the one-line reasons a run failed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict

import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.runtime import trace as tr
from amp_lint.runtime import verify as vf
from amp_lint.runtime.harness import RunResult
from amp_lint.runtime.instrument import EXIT_NO_CUDA
from amp_lint.runtime.static import static_findings
from amp_lint.runtime.target import (
    Target, TargetError, environmental, failure, local_files, mirror, resolve,
)

ROOT = Path(__file__).resolve().parents[1]


# -- trace: classification -----------------------------------------------------------------------

def op(name: str, line: int = 10, out=("float16",), **extra: Any) -> Dict[str, Any]:
    rec = {"op": name, "file": "/p/model.py", "line": line, "function": "forward", "calls": 1, "checked": 1,
           "in": ["float16"], "out": list(out), "autocast": ["off"], "first_step": 1, "in_optimizer": None,
           "nonfinite_new": 0, "nonfinite_step": None, "zeros_new": 0, "max_zero_fraction": 0.0, "max_in": None,
           "max_abs_in": None, "exponent": None, "fed_by": [], "feeds": [], "fill_value": None, "raised": None,
           "eps": None}
    rec.update(extra)
    return rec


def codes(*ops: Dict[str, Any], optimizers=()) -> list:
    return [(h.code, h.line) for h in tr.classify({"ops": list(ops), "optimizers": list(optimizers)})]


def test_fill_overflow_is_amp301_and_a_wider_finfo_is_amp303():
    raised = "value cannot be converted to type c10::Half without overflow"
    assert codes(op("masked_fill", fill_value=-1e9, raised=raised)) == [("AMP301", 10)]
    hazards = tr.classify({"ops": [op("masked_fill", fill_value=-3.4028234663852886e38, raised=raised)]})
    assert [h.code for h in hazards] == ["AMP303"]
    assert "torch.finfo(torch.float32).min" in hazards[0].message and "raised" in hazards[0].message
    silent = tr.classify({"ops": [op("__setitem__", fill_value=-1e9)]})
    assert [h.code for h in silent] == ["AMP301"] and "inf silently" in silent[0].message


def test_softmax_and_loss_count_only_with_a_float16_result():
    assert codes(op("log_softmax")) == [("AMP201", 10)]
    assert codes(op("softmax", out=("float32",))) == []  # dtype=torch.float32 / CUDA autocast
    assert codes(op("cross_entropy", out=("float32",))) == []  # CPU autocast runs losses in fp32
    hazards = tr.classify({"ops": [op("cross_entropy", nonfinite_new=1, nonfinite_step=1)]})
    assert [h.code for h in hazards] == ["AMP202"] and "inf/NaN first appeared" in hazards[0].message


def test_reductions_follow_the_static_rules_patterns():
    # x.pow(2).mean(): one AMP203 (the square is folded in), no AMP204
    square = op("pow", exponent=2.0, feeds=["mean"], nonfinite_new=1, nonfinite_step=1, max_abs_in=1200.0)
    hazards = tr.classify({"ops": [square, op("mean", fed_by=["square"])]})
    assert [(h.code, h.line) for h in hazards] == [("AMP203", 10)]
    assert "mean of squares" in hazards[0].message and "overflowed" in hazards[0].message
    assert codes(op("mean")) == []  # a plain mean accumulates in fp32
    assert codes(op("sum")) == [("AMP203", 10)]
    # exp(x) / exp(x).sum(): AMP204 for the exp only
    assert codes(op("exp", max_in=13.8, feeds=["sum"]), op("sum", fed_by=["exp"])) == [("AMP204", 10)]
    assert codes(op("exp", max_in=-0.5)) == []  # exp(x - x.max()) cannot overflow
    assert codes(op("pow", exponent=2.0, max_abs_in=3.0)) == [("AMP204", 10)]
    assert codes(op("pow", exponent=0.5)) == []


def test_eps_underflow_and_optimizers():
    assert codes(op("add", eps=1e-8)) == [("AMP302", 10)]
    adam = {"key": "Adam@/p/train.py:34", "class": "Adam", "file": "/p/train.py", "line": 34,
            "param_dtypes": ["float16"], "eps": [1e-8], "fused": False, "steps": 4, "params_nonfinite_step": 1}
    inner_eps = op("add_", line=42, eps=1e-8, in_optimizer=adam["key"])
    inner_nan = op("addcdiv_", line=42, nonfinite_new=1, nonfinite_step=1, in_optimizer=adam["key"])
    hazards = tr.classify({"ops": [inner_eps, inner_nan], "optimizers": [adam]}, stepped=True)
    assert [(h.code, h.path, h.line) for h in hazards] == [("AMP302", "/p/train.py", 34)]
    assert "after step 1" in hazards[0].message and "addcdiv_" in hazards[0].message
    assert codes(optimizers=[dict(adam, fused=True)]) == []
    assert codes(optimizers=[dict(adam, eps=[1e-4])]) == []
    assert codes(optimizers=[dict(adam, param_dtypes=["float32"])]) == []


def test_nonfinite_without_a_code_and_folded_into_a_coded_line():
    hazards = tr.classify({"ops": [op("linear", nonfinite_new=1, nonfinite_step=3)]}, stepped=True)
    assert [h.code for h in hazards] == [tr.NONFINITE] and "step 3" in hazards[0].message
    unstepped = tr.classify({"ops": [op("linear", nonfinite_new=1, nonfinite_step=1)]})
    assert "step" not in unstepped[0].message
    assert codes(op("log_softmax"), op("div", nonfinite_new=1)) == [("AMP201", 10)]
    underflow = tr.classify({"ops": [op("mul", zeros_new=2, max_zero_fraction=0.25)]})
    assert [h.code for h in underflow] == [tr.UNDERFLOW] and "up to 25.0% of the result" in underflow[0].message
    assert codes(op("mul_", zeros_new=2, in_optimizer="Adam@x:1")) == []  # fp16 optimizer moments: AMP101's


# -- trace: cross-reference ----------------------------------------------------------------------

SCRIPT = '''\
import torch
import torch.nn.functional as F

x = torch.randn(4, 8).half()
probs = F.softmax(
    x, dim=-1)
y = torch.randn(4, 8).half()
z = F.log_softmax(y, dim=-1)


def never_called():
    w = torch.randn(4, 8).half()
    return F.softmax(w, dim=-1)
'''


def test_cross_reference_statuses(tmp_path: Path):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    static = {(s.line, s.code) for s in static_findings(
        [str(path)], tr.RUNTIME_CODES, start=tmp_path)}
    assert static == {(5, "AMP201"), (8, "AMP201"), (13, "AMP201")}, static
    result = tr.TraceResult(Target(path, (), tmp_path), tr.Options())
    result.run = RunResult(0, "", "", None, {"trace": {"lines": {str(path): [1, 2, 4, 5, 6, 7, 8, 11]}}})
    result.hazards = [
        # the runtime sees the softmax on the call's second line: same statement, so confirmed
        tr.Hazard("AMP201", str(path), 6, "<module>", ["softmax"], "ran in float16", 1, 1),
        tr.Hazard("AMP204", str(path), 7, "<module>", ["exp"], "ran in float16", 1, 1),
    ]
    tr.cross_reference(result, [str(path)])
    assert [(h.code, h.status, h.shown_line) for h in result.hazards] == [
        ("AMP201", tr.CONFIRMED, 5), ("AMP204", tr.RUNTIME_ONLY, 7)]
    assert {(s.line, s.status) for s in result.static} == {
        (5, tr.CONFIRMED), (8, tr.NOT_OBSERVED), (13, tr.NOT_REACHED)}
    text = tr.render_text(result)
    assert "RUNTIME ONLY: 1 hazard the static analysis missed" in text
    assert text.index("RUNTIME ONLY") < text.index("confirming static findings")
    assert result.exit_code == 1


# -- verify: checks ------------------------------------------------------------------------------

def inst(**changes: Any) -> Dict[str, Any]:
    base = {
        "autocast": [{"enabled": True, "device_type": "cpu", "dtype": "float16"}],
        "forward": {"autocast": 16, "outside": 0, "disabled_region": 0, "dtypes": {"cpu:float16": 16},
                    "first_outside": None},
        "scalers": [{"device": "cpu", "enabled": True, "requested_enabled": True}],
        "scaler_enabled_calls": {"scale": 8, "unscale_": 0, "step": 8, "update": 8},
        "backward_calls": 8, "scaled_backward_calls": 8, "direct_optimizer_steps": 0,
        "scaler_steps_without_update": 0, "clip_grad_norm_calls": 0, "clip_while_scaled": 0, "skipped_steps": 0,
        "final_scale": 65536.0, "device": {"used": "cpu"},
        "params": {"checked": True, "total": 4, "changed": 4, "unchanged": []},
    }
    base.update(changes)
    return base


SITE = {"file": "/p/train.py", "line": 31, "function": "main"}


def test_autocast_check():
    assert vf._check_autocast(inst())[0] == vf.PASS
    status, detail = vf._check_autocast(inst(forward={"autocast": 0, "outside": 16, "disabled_region": 0,
                                                      "dtypes": {}, "first_outside": SITE}))
    assert status == vf.FAIL and "16 of 16" in detail and "train.py:31" in detail
    assert vf._check_autocast(inst(autocast=[]))[1] == "autocast was never entered (enabled)"


def test_scaler_check_names_each_protocol_break():
    assert vf._check_scaler(inst())[0] == vf.PASS
    status, detail = vf._check_scaler(inst(scalers=[], first_unscaled_backward=SITE))
    assert status == vf.FAIL and "no enabled GradScaler" in detail and "train.py:31" in detail
    assert "called directly 8 times" in vf._check_scaler(inst(direct_optimizer_steps=8))[1]
    calls = {"scale": 8, "unscale_": 0, "step": 8, "update": 0}
    assert "(0 updates for 8 scaler.step calls)" in vf._check_scaler(inst(scaler_enabled_calls=calls))[1]
    repeated = inst(scaler_steps_without_update=3, scaler_enabled_calls=dict(calls, update=5))
    assert "stepped through the scaler again before scaler.update()" in vf._check_scaler(repeated)[1]
    # two optimizers, one update per iteration (PyTorch's multiple-optimizer recipe): fine
    assert vf._check_scaler(inst(scaler_enabled_calls=dict(calls, update=4)))[0] == vf.PASS
    status, detail = vf._check_scaler(inst(clip_grad_norm_calls=8, clip_while_scaled=8,
                                           first_clip_while_scaled=SITE))
    assert status == vf.FAIL and "before scaler.unscale_" in detail
    bf16 = inst(scalers=[], forward=dict(inst()["forward"], dtypes={"cpu:bfloat16": 16}))
    assert vf._check_scaler(bf16) == (vf.NA, "bfloat16 autocast needs no loss scaling")
    fp32 = inst(scalers=[], forward=dict(inst()["forward"], dtypes={}, outside_dtypes={"float32": 16}))
    assert vf._check_scaler(fp32)[0] == vf.NA
    pure_fp16 = inst(scalers=[], forward=dict(inst()["forward"], dtypes={}, outside_dtypes={"float16": 16}))
    assert vf._check_scaler(pure_fp16)[0] == vf.FAIL


def run(steps, params=None) -> RunResult:
    return RunResult(0, "", "", None, {"steps": steps, "params": params})


def test_loss_finite_and_update_checks():
    a = run([{"step": i, "loss": 1.0 + 0.01 * i, "nonfinite": [], "skipped": False} for i in range(1, 5)])
    r = run([{"step": i, "loss": 1.0, "nonfinite": []} for i in range(1, 5)])
    assert vf._check_loss(a, r, 0.05)[0] == vf.PASS
    assert vf._check_loss(a, r, 0.001)[0] == vf.FAIL
    assert vf._check_loss(run([]), r, 0.05)[0] == vf.FAIL
    bad = run([{"step": 1, "loss": 1.0, "nonfinite": []}, {"step": 2, "loss": float("nan"), "nonfinite": ["loss"]}])
    status, detail = vf._check_finite(bad)
    assert status == vf.FAIL and "loss at step 2" in detail
    frozen = inst(params={"checked": True, "total": 4, "changed": 3, "unchanged": ["model.0.bias"]})
    assert vf._check_update(frozen, inst())[0] == vf.FAIL
    assert vf._check_update(frozen, inst(params=frozen["params"]))[0] == vf.PASS  # same in fp32
    assert vf._check_update(inst(params={"checked": True, "total": 4, "changed": 0, "unchanged": []}), inst())[0] \
        == vf.FAIL


# -- target ----------------------------------------------------------------------------------------

def test_resolve_errors(tmp_path: Path):
    with pytest.raises(TargetError, match="no such file"):
        resolve("missing.py", None, (), tmp_path)
    with pytest.raises(TargetError, match="is a directory"):
        resolve(".", None, (), tmp_path)
    with pytest.raises(TargetError, match="not found"):
        resolve(None, "pkg.train", (), tmp_path)
    with pytest.raises(TargetError, match="not a module name"):
        resolve(None, "pkg/train.py", (), tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("")
    target = resolve(None, "pkg.train", ("--x",), tmp_path)
    assert target.file == (tmp_path / "pkg" / "train.py").resolve() and target.root == tmp_path.resolve()


def test_local_files_follow_local_imports_only(tmp_path: Path):
    split = ROOT / "fixtures" / "training" / "split_project" / "train.py"
    names = sorted(p.name for p in local_files(resolve(str(split), None, ())))
    assert names == ["builders.py", "train.py"]
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .layers import Block\n")
    (pkg / "sub" / "layers.py").write_text("import torch\n")
    (pkg / "unused.py").write_text("")
    (pkg / "train.py").write_text("import os\nfrom pkg.sub import Block\n")
    found = {p.relative_to(tmp_path.resolve()).as_posix() for p in local_files(resolve(None, "pkg.train", (), tmp_path))}
    assert found == {"pkg/__init__.py", "pkg/train.py", "pkg/sub/__init__.py", "pkg/sub/layers.py"}


def test_mirror_writes_the_rewrite_and_links_the_rest(tmp_path: Path):
    src = tmp_path / "proj"
    (src / "data").mkdir(parents=True)
    (src / "__pycache__").mkdir()
    (src / "train.py").write_text("old\n")
    (src / "model.py").write_text("model\n")
    (src / "data" / "x.csv").write_text("1\n")
    target = resolve("proj/train.py", None, ("--a",), tmp_path)
    dest = tmp_path / "mirror"
    new = mirror(target, {str(src / "train.py"): b"new\n"}, dest)
    assert new.file == dest / "train.py" and new.args == ("--a",) and new.cwd == target.cwd
    assert (dest / "train.py").read_text() == "new\n" and not (dest / "train.py").is_symlink()
    assert (dest / "model.py").is_symlink() and (dest / "data" / "x.csv").read_text() == "1\n"
    assert not (dest / "__pycache__").exists()
    assert (src / "train.py").read_text() == "old\n"


def result(returncode=1, stderr="", timed_out=False, **inst_) -> RunResult:
    return RunResult(returncode, "", stderr, None, dict(inst_), timed_out=timed_out, timeout_s=5)


def test_failure_reasons_are_one_line():
    assert failure(result(0)) is None
    assert "timed out after 5 s" in failure(result(-1, timed_out=True))
    cuda = "Traceback...\nAssertionError: Torch not compiled with CUDA enabled\n"
    assert "needs CUDA" in failure(result(stderr=cuda)) and environmental(result(stderr=cuda))
    missing = "FileNotFoundError: [Errno 2] No such file or directory: 'data/points.csv'\n"
    assert "missing file 'data/points.csv'" in failure(result(stderr=missing))
    assert "'apex', which is not installed" in failure(result(stderr="ModuleNotFoundError: No module named 'apex'\n"))
    assert failure(result(stderr="  File x\nValueError: bad shape\n")) == "ValueError: bad shape"
    assert not environmental(result(stderr="ValueError: bad shape\n"))
    assert "CUDA is not available" in failure(result(EXIT_NO_CUDA))
    for reason in (failure(result(stderr=cuda)), failure(result(stderr=missing))):
        assert "\n" not in reason


# -- CLI: user errors are one line, exit 2, and never start a run ---------------------------------

@pytest.mark.parametrize("args, message", [
    (["verify", "no_such_script.py"], "no_such_script.py: no such file"),
    (["trace", "no_such_script.py"], "no_such_script.py: no such file"),
    (["verify"], "give a SCRIPT or -m MODULE"),
    (["trace", "-m", "not/a/module"], "is not a module name"),
    (["verify", "--no-fix", "--apply", os.path.join("fixtures", "training", "fp32_mlp.py")], "exclude each other"),
])
def test_cli_user_errors(args, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2, out.output
    assert message in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1
