"""``amp-lint verify`` on every runnable training fixture, on broken migrations and on scripts that
cannot run. The verify runs are shared with test_training_fixtures.py (tests/runtime/conftest.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amp_lint.runtime import verify as vf
from runtime_cases import MODULE_ARGS, MODULE_CASE, ROOT, RUNTIME, STEPS, TRAINING, cuda_available

pytestmark = pytest.mark.runtime

#: case -> the files the rewrite changes (relative to fixtures/training)
MIGRATED = {
    "fp32_cnn": ["fp32_cnn.py"],
    "fp32_mlp": ["fp32_mlp.py"],
    "gpt_accum_clip": ["gpt_accum_clip.py"],
    "half_finetune": ["half_finetune.py"],
    "apex_o1": ["apex_o1.py"],
    "split_project": ["split_project/train.py"],  # builders.py is read, and left as it is
    "gan_two_losses": ["gan_two_losses.py"],
    "conditional_optimizer": ["conditional_optimizer.py"],
    "cpu_model": ["cpu_model.py"],
}
CHECKS = ["runs", "autocast", "scaler", "loss", "finite", "update"]


def _amp_lint(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


@pytest.mark.parametrize("case", sorted(MIGRATED))
def test_migrated_fixture_verifies(verified, case):
    verdict = verified(case)
    assert verdict.verdict == vf.VERIFIED, vf.render_text(verdict)
    assert [(c.name, c.status) for c in verdict.checks] == [(name, vf.PASS) for name in CHECKS]
    assert [Path(p).relative_to(TRAINING).as_posix() for p in verdict.changed] == MIGRATED[case]
    assert verdict.fixes >= 1 and not verdict.applied and verdict.exit_code == 0
    assert set(verdict.runs) == {"original", "amp", "fp32-ref"}
    for path in verdict.changed:  # the user's files are untouched
        assert "GradScaler" not in Path(path).read_text(encoding="utf-8")


#: case -> (expected migration in fixtures/training/expected, a line every rule's fixes change on top of it)
EXPECTED = {
    "fp32_cnn": ("fp32_cnn.py", None),
    "fp32_mlp": ("fp32_mlp.py", None),
    "gpt_accum_clip": ("gpt_accum_clip.py", None),
    "half_finetune": ("half_finetune.py", None),
    "apex_o1": ("apex_o1.py", None),
    "split_project": ("split_project_train.py", None),
    "gan_two_losses": ("gan_two_losses.py", None),
    "conditional_optimizer": ("conditional_optimizer.py", None),
    "cpu_model": ("cpu_model.py", None),
}


@pytest.mark.parametrize("case", sorted(MIGRATED))
def test_rewrite_is_the_expected_migration(verified, case):
    """What verify ran is the codemod's output (tests/test_training_codemod.py checks that file)."""
    verdict = verified(case)
    (rewritten,) = verdict.rewrites.values()
    name, extra = EXPECTED[case]
    expected = (TRAINING / "expected" / name).read_text(encoding="utf-8")
    if extra is not None:
        assert expected.count(extra[0]) == 1
        expected = expected.replace(*extra)
    assert rewritten.decode("utf-8") == expected


@pytest.mark.parametrize("case, scaler", [("already_amp", vf.PASS), ("bf16_autocast", vf.NA)])
def test_correct_mixed_precision_verifies_as_it_is(verified, case, scaler):
    verdict = verified(case)
    assert verdict.verdict == vf.VERIFIED and verdict.changed == [], vf.render_text(verdict)
    assert {c.name: c.status for c in verdict.checks}["scaler"] == scaler
    assert "no change (the script is checked as it is)" in vf.render_text(verdict)


@pytest.mark.cases("inference_only")
def test_inference_script_has_nothing_to_verify(verified):
    verdict = verified("inference_only")
    assert verdict.verdict == vf.ERROR and verdict.exit_code == 2
    assert verdict.error == "no optimizer step ran: nothing to verify (is this a training script?)"
    assert set(verdict.runs) == {"amp"}  # no reference run for a script that never steps


@pytest.mark.parametrize("case, check, detail", [
    ("broken/scaler_in_branch", "scaler", "no enabled GradScaler was created: 8 backward calls"),
    ("broken/autocast_not_around_forward", "autocast",
     "16 of 16 matmul-like ops of the training forward ran outside autocast (first at "),
    ("broken/clip_before_unscale", "scaler", "clip_grad_norm_ ran 8 times on still-scaled gradients"),
])
def test_broken_migration_fails_the_named_check(verified, case, check, detail):
    verdict = verified(case)
    assert verdict.verdict == vf.FAILED and verdict.exit_code == 1, vf.render_text(verdict)
    failed = {c.name: c.detail for c in verdict.checks if c.status == vf.FAIL}
    assert check in failed and detail in failed[check], failed
    assert failed.keys() <= {check, "loss"}  # clipping scaled gradients also slows training down
    text = vf.render_text(verdict)
    assert f"FAILED: {', '.join(failed)}" in text and "rewrite: none (--no-fix" in text


@pytest.mark.cases("broken/autocast_not_around_forward")
def test_broken_migration_points_at_the_line(verified):
    verdict = verified("broken/autocast_not_around_forward")
    detail = {c.name: c.detail for c in verdict.checks}["autocast"]
    source = (TRAINING / "broken" / "autocast_not_around_forward.py").read_text().splitlines()
    line = int(detail.rsplit(":", 1)[1].rstrip(")"))
    assert source[line - 1].strip() == "pred = model(x)"


@pytest.mark.cases("cuda_amp_any_device")
def test_cuda_mixed_precision_runs_in_cpu_float16_without_a_gpu(verified):
    """``--device cpu`` hides any GPU, as a machine without one has none."""
    verdict = verified("cuda_amp_any_device")
    assert verdict.verdict == vf.VERIFIED, vf.render_text(verdict)
    inst = verdict.runs["amp"].instrumentation
    assert inst["device"]["used"] == "cpu" and not inst["device"]["cuda_available"]
    assert [(e["device_type"], e["dtype"], e["enabled"], e["mapped_from"]) for e in inst["autocast"]] == [
        ("cpu", "float16", True, "cuda")]
    assert inst["scalers"] == [{"device": "cpu", "enabled": True, "requested_enabled": True, "mapped_from": "cuda"}]
    assert "(the script's CUDA autocast, run on the CPU)" in {c.name: c.detail for c in verdict.checks}["autocast"]


@pytest.mark.cases(MODULE_CASE)
def test_module_with_arguments_and_data_from_disk_verifies_and_applies(verified, module_copy):
    verdict = verified(MODULE_CASE)
    assert verdict.verdict == vf.VERIFIED, vf.render_text(verdict)
    original = verdict.runs["original"]
    assert original.argv[1:] == ["-m", "csv_regression.train", *MODULE_ARGS]
    assert all(run.steps and run.stopped for run in verdict.runs.values())
    # --apply wrote the verified rewrite into the (copied) package, and only there
    assert verdict.applied
    rewritten = (module_copy / "csv_regression" / "train.py").read_text(encoding="utf-8")
    assert "torch.autocast(" in rewritten and "GradScaler" in rewritten
    assert "GradScaler" not in (RUNTIME / "csv_regression" / "train.py").read_text(encoding="utf-8")


@pytest.mark.cases("fp32_mlp")
def test_rendered_outputs(verified):
    verdict = verified("fp32_mlp")
    text = vf.render_text(verdict)
    lines = text.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("step"))
    assert lines[header].split() == ["step", "original", "loss", "amp", "loss", "scale", "skipped", "fp32-ref",
                                     "loss", "non-finite"]
    assert [ln.split()[0] for ln in lines[header + 1:header + 1 + STEPS]] == [str(i) for i in range(1, STEPS + 1)]
    assert sum(ln.startswith("PASS") for ln in lines) == len(CHECKS) and lines[-1] == "verified"
    data = json.loads(vf.render_json(verdict))
    assert data["verdict"] == "verified" and data["exit_code"] == 0
    assert [c["status"] for c in data["checks"]] == ["pass"] * len(CHECKS)
    assert len(data["runs"]["amp"]["steps"]) == STEPS and data["rewrite"]["changed"]


# -- scripts that cannot run: one clear line, the script's stderr tail, exit 2 --------------------

def test_missing_data_file(tmp_path):
    out = _amp_lint("verify", str(RUNTIME / "csv_regression" / "train.py"), "--output-format", "json", cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.splitlines()[0] == ("amp-lint: error: original run failed: missing file 'data/points.csv' "
                                          "(data the script reads?): run from the directory it expects, or pass its path")
    assert "FileNotFoundError" in out.stderr  # the script's own stderr tail
    data = json.loads(out.stdout)
    assert data["verdict"] == "error" and list(data["runs"]) == ["original"]


def test_cuda_only_script_without_cuda():
    out = _amp_lint("verify", "--device", "cpu", "fixtures/projects/gpt_pkg/train.py")
    assert out.returncode == 2, out.stdout + out.stderr
    first = out.stderr.splitlines()[0]
    assert first.startswith("amp-lint: error: original run failed: the script needs CUDA and there is none here")
    # a CPU build of torch says the first, a CUDA build with its GPUs hidden the second
    assert ("Torch not compiled with CUDA enabled" in first or "No CUDA GPUs are available" in first), first
    assert out.stdout == "" and "--- the script's stderr (tail) ---" in out.stderr


@pytest.mark.skipif(not cuda_available(), reason="needs a GPU: the script places its model and data on CUDA")
def test_cuda_only_script_is_migrated_and_its_crash_traced_on_a_gpu():
    """gpt_pkg trains a ``.cuda().half()`` GPT: on a GPU the original crashes on the fp16 mask fill,
    the rewrite trains under CUDA autocast with a CUDA GradScaler, and trace confirms AMP301."""
    out = _amp_lint("verify", "--device", "cuda", "--output-format", "json", "train.py",
                    cwd=ROOT / "fixtures" / "projects" / "gpt_pkg")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["verdict"] == "verified", out.stdout + out.stderr
    original, amp = data["runs"]["original"], data["runs"]["amp"]
    assert "value cannot be converted to type c10::Half without overflow" in original["failure"]
    assert amp["device"]["used"] == "cuda" and amp["scalers"][0]["device"] == "cuda"
    assert [(e["device_type"], e["dtype"]) for e in amp["autocast"]] == [("cuda", "float16")]
    traced = _amp_lint("trace", "--device", "cuda", "train.py", cwd=ROOT / "fixtures" / "projects" / "gpt_pkg")
    assert traced.returncode == 1, traced.stdout + traced.stderr
    assert "model/attention.py:34: AMP301 [confirmed]" in traced.stdout and "device: cuda;" in traced.stdout


def test_timeout(tmp_path):
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(60)\n")
    out = _amp_lint("verify", "--timeout", "2", "slow.py", cwd=tmp_path, timeout=60)
    assert out.returncode == 2
    # no rewrite (the fix changes nothing), so the script itself is the first run
    assert out.stderr.strip() == ("amp-lint: error: script run failed: timed out after 2 s "
                                  "(raise --timeout, or lower --steps)")
