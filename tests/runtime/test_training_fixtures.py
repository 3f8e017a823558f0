"""Run the training fixtures and their hand-migrated versions, instrumented.

* Every ORIGINAL script in ``fixtures/training`` runs (the apex one with the
  apex stub) and prints one finite ``final_loss=``; what it did with autocast,
  GradScaler, backward and optimizer steps is checked against what it is.
* Every hand-MIGRATED script in ``fixtures/training/expected`` runs with
  ``--device cpu`` in real float16 (CPU autocast + ``GradScaler("cpu")``):
  autocast entered on cpu/float16 and produced float16 matmuls, one enabled
  scaler whose scale/step/update were called, every backward went through
  ``scaler.scale``, clipping happened after ``unscale_``, the optimizer stepped
  as often as in the original (accumulation kept), and the final loss is close
  to the fp32 result.

Measured on torch 2.13.0+cpu, one thread (relative difference migrated vs fp32):
    fp32_cnn        1.427953 vs 1.436563  0.60 %
    fp32_mlp        0.055706 vs 0.056305  1.08 %
    gpt_accum_clip  3.688489 vs 3.688772  0.008 %
    half_finetune   0.719054 vs 0.719019  0.005 %  (fp32 reference = migrated
                    script with autocast/scaler forced off; the pure-fp16
                    original gets 0.656152, 9 % away: it is a different
                    numerical program, not a reference)
    apex_o1         0.581967 vs 0.581851  0.02 %
    split_project   0.469298 vs 0.467031  0.48 %
The tolerances below are those numbers times about 3-5, with a 1 % floor, to
leave room for other CPUs' fp16 kernels.
"""
from __future__ import annotations

import concurrent.futures
import os
import shutil
import threading
from pathlib import Path

import pytest

from amp_lint.runtime import harness

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "fixtures" / "training"
EXPECTED = FIXTURES / "expected"


APEX_STUB = {"PYTHONPATH": str(HERE / "apex_stub")}

# name -> path of the original, relative to fixtures/training
ORIGINALS = {
    "fp32_cnn": "fp32_cnn.py",
    "fp32_mlp": "fp32_mlp.py",
    "gpt_accum_clip": "gpt_accum_clip.py",
    "half_finetune": "half_finetune.py",
    "apex_o1": "apex_o1.py",
    "split_project": "split_project/train.py",
    "inference_only": "inference_only.py",
    "bf16_autocast": "bf16_autocast.py",
    "already_amp": "already_amp.py",
    "fairseq_style_fp16_optimizer": "fairseq_style_fp16_optimizer.py",
    "lstm_tagger": "lstm_tagger.py",
}

# name -> hand-migrated file in expected/
MIGRATED = {
    "fp32_cnn": "fp32_cnn.py",
    "fp32_mlp": "fp32_mlp.py",
    "gpt_accum_clip": "gpt_accum_clip.py",
    "half_finetune": "half_finetune.py",
    "apex_o1": "apex_o1.py",
    "split_project": "split_project_train.py",
}

# Real optimizer.step() calls of each original with its default arguments.
OPTIMIZER_STEPS = {
    "fp32_cnn": 3 * 16,
    "fp32_mlp": 150,
    "gpt_accum_clip": 64 // 4,
    "half_finetune": 60,
    "apex_o1": 80,
    "split_project": 100,
    "inference_only": 0,
    "bf16_autocast": 80,
    "already_amp": 80,  # minus steps the GradScaler skips
    "fairseq_style_fp16_optimizer": 80,  # minus steps its own loss scaler skips
    "lstm_tagger": 60,
}

# Relative tolerance of the migrated final loss against the fp32 reference.
RTOL = {
    "fp32_cnn": 0.03,
    "fp32_mlp": 0.05,
    "gpt_accum_clip": 0.01,
    "half_finetune": 0.01,
    "apex_o1": 0.01,
    "split_project": 0.03,
}

CLIPS = {"gpt_accum_clip", "apex_o1"}  # migrated scripts that clip gradients
PLAIN_FP32 = {"fp32_cnn", "fp32_mlp", "gpt_accum_clip", "split_project", "lstm_tagger"}


class _Runs:
    """Each script runs at most once per module; results are shared by the tests."""

    def __init__(self, tmp_factory):
        self._tmp = tmp_factory
        self._cache = {}
        self._lock = threading.Lock()

    def _mktemp(self, stem):
        with self._lock:  # tmp_path_factory is not meant for concurrent use
            return self._tmp.mktemp(stem)

    def get(self, key):
        if key not in self._cache:
            kind, name = key[0], key[1]
            if kind == "original":
                self._cache[key] = self._run_original(name)
            else:
                self._cache[key] = self._run_migrated(name, force_fp32=key[2])
        return self._cache[key]

    def original(self, name):
        return self.get(("original", name))

    def migrated(self, name, force_fp32=False):
        return self.get(("migrated", name, force_fp32))

    def fp32_reference(self, name):
        """The fp32 loss the migrated script should reproduce approximately."""
        return self.get(self.fp32_reference_key(name))

    @staticmethod
    def fp32_reference_key(name):
        if name == "half_finetune":
            # The original is pure fp16, not a reference: run the migrated
            # script with every autocast / GradScaler forced off instead.
            return ("migrated", name, True)
        return ("original", name)

    def _run_original(self, name):
        # Run from an unrelated directory: scripts must work when run by path.
        return harness.run_script(
            FIXTURES / ORIGINALS[name], "--device", "cpu",
            cwd=self._mktemp(f"cwd_{name}"), env_extra=APEX_STUB if name == "apex_o1" else None,
        )

    def _run_migrated(self, name, force_fp32):
        if name == "split_project":
            # The codemod rewrites train.py in place next to builders.py;
            # rebuild that project and run it as `python train.py` from its dir.
            project = self._mktemp("split_project_migrated")
            shutil.copy(FIXTURES / "split_project" / "builders.py", project / "builders.py")
            shutil.copy(EXPECTED / MIGRATED[name], project / "train.py")
            path, cwd = Path("train.py"), project
        else:
            path, cwd = EXPECTED / MIGRATED[name], self._mktemp(f"cwd_m_{name}")
        # No apex stub here: the migrated apex script must not need apex.
        return harness.run_script(path, "--device", "cpu", cwd=cwd, force_fp32=force_fp32)

    def prefetch(self, keys):
        """Run the given keys up front, in parallel where more than one CPU is ours."""
        keys = [k for k in dict.fromkeys(keys) if k not in self._cache]
        jobs = int(os.environ.get("AMP_LINT_RUNTIME_JOBS", "0")) or min(4, _usable_cpus())
        if jobs <= 1 or len(keys) <= 1:
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(self.get, keys))


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _needed_runs(item):
    """The runs one collected test of this module will ask for."""
    name = getattr(item, "callspec", None) and item.callspec.params.get("name")
    test = item.originalname if hasattr(item, "originalname") else item.name
    if test == "test_original_runs":
        return [("original", name)]
    if test == "test_migrated_runs_in_fp16_on_cpu":
        return [("migrated", name, False)]
    if test == "test_migrated_loss_close_to_fp32":
        return [("migrated", name, False), _Runs.fp32_reference_key(name)]
    if test == "test_half_finetune_fp32_reference_is_really_fp32":
        return [_Runs.fp32_reference_key("half_finetune")]
    if test == "test_migrated_apex_does_not_import_apex":
        return [("migrated", "apex_o1", False)]
    return []


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    runner = _Runs(tmp_path_factory)
    wanted = []
    for item in request.session.items:
        if getattr(item, "module", None) is request.module:
            wanted.extend(_needed_runs(item))
    runner.prefetch(wanted)
    return runner


def _assert_ran(res):
    assert res.ok, res.describe()
    assert res.instrumentation.get("instrumented"), res.instrumentation
    assert res.instrumentation.get("uncaught_exception") is None, res.describe()
    assert len(res.final_loss_lines) == 1, res.describe()
    assert res.stdout.strip().splitlines()[-1].startswith("final_loss="), res.describe()
    assert res.loss_is_finite, res.describe()


def _assert_no_amp(inst):
    assert inst["autocast_enters"] == 0, inst["autocast"]
    assert inst["scalers"] == [], inst["scalers"]
    assert sum(inst["scaler_calls"].values()) == 0, inst["scaler_calls"]


# ---------------------------------------------------------------------------
# originals
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ORIGINALS))
def test_original_runs(runs, name):
    res = runs.original(name)
    _assert_ran(res)
    inst = res.instrumentation

    if name in PLAIN_FP32 or name in {"half_finetune", "apex_o1"}:
        _assert_no_amp(inst)
        assert inst["optimizer_steps"] == OPTIMIZER_STEPS[name]
        assert inst["backward_calls"] > 0

    if name == "apex_o1":
        assert inst["apex"]["imported"] and inst["apex"]["is_stub"], inst["apex"]
        assert inst["clip_grad_norm_calls"] == OPTIMIZER_STEPS[name]
    elif name == "gpt_accum_clip":
        assert inst["clip_grad_norm_calls"] == OPTIMIZER_STEPS[name]
        assert inst["backward_calls"] == 4 * OPTIMIZER_STEPS[name]
    elif name == "inference_only":
        _assert_no_amp(inst)
        assert inst["backward_calls"] == 0
        assert inst["optimizer_steps"] == 0
    elif name == "bf16_autocast":
        kinds = {(e["device_type"], e["dtype"], e["enabled"]) for e in inst["autocast"]}
        assert kinds == {("cpu", "bfloat16", True)}, inst["autocast"]
        assert inst["autocast_enters"] == OPTIMIZER_STEPS[name]
        assert not inst["fp16_matmul_in_autocast"]
        assert inst["matmul_outputs_in_autocast"].get("cpu:bfloat16", 0) > 0
        assert inst["scalers"] == []
        assert inst["optimizer_steps"] == OPTIMIZER_STEPS[name]
    elif name == "already_amp":
        assert res.autocast_entries() == res.autocast_entries("cpu", "float16", enabled=True)
        assert inst["fp16_matmul_in_autocast"]
        assert [s["enabled"] for s in inst["scalers"]] == [True]
        assert inst["scaled_backward_calls"] == inst["backward_calls"] == OPTIMIZER_STEPS[name]
        assert inst["clip_after_unscale"] == inst["clip_grad_norm_calls"] == OPTIMIZER_STEPS[name]
        assert inst["optimizer_steps"] + inst["skipped_steps"] == OPTIMIZER_STEPS[name]
    elif name == "fairseq_style_fp16_optimizer":
        _assert_no_amp(inst)
        # its own dynamic loss scaler may skip a few overflowing steps
        assert 0.8 * OPTIMIZER_STEPS[name] <= inst["optimizer_steps"] <= OPTIMIZER_STEPS[name]
        assert inst["clip_grad_norm_calls"] == inst["optimizer_steps"]


# ---------------------------------------------------------------------------
# hand-migrated versions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MIGRATED))
def test_migrated_runs_in_fp16_on_cpu(runs, name):
    res = runs.migrated(name)
    _assert_ran(res)
    inst = res.instrumentation

    # autocast: only cpu/float16, really active, and matmuls came out in fp16
    assert res.autocast_entries("cpu", "float16", enabled=True), inst["autocast"]
    assert res.autocast_entries() == res.autocast_entries("cpu", "float16", enabled=True)
    for entry in res.autocast_entries():
        assert entry["active_after_enter"] and entry["active_dtype"] == "float16", entry
    assert inst["fp16_matmul_in_autocast"], inst["matmul_outputs_in_autocast"]
    assert set(inst["matmul_outputs_in_autocast"]) == {"cpu:float16"}

    # exactly one GradScaler, on cpu, enabled
    assert inst["scalers"] == [{"device": "cpu", "enabled": True, "requested_enabled": True}]
    calls, enabled_calls = inst["scaler_calls"], inst["scaler_enabled_calls"]
    assert calls == enabled_calls, (calls, enabled_calls)
    for method in ("scale", "step", "update"):
        assert calls[method] > 0, calls

    # one autocast region per forward, every backward through scaler.scale
    assert inst["autocast_enters"] == inst["backward_calls"] == calls["scale"]
    assert inst["scaled_backward_calls"] == inst["backward_calls"]

    # stepping: step/update paired and as often as the original stepped
    assert calls["step"] == calls["update"] == OPTIMIZER_STEPS[name]
    assert inst["optimizer_steps"] + inst["skipped_steps"] == OPTIMIZER_STEPS[name]
    assert inst["optimizer_steps"] >= 0.8 * OPTIMIZER_STEPS[name], inst["skipped_steps"]

    # clipping only after unscale_
    assert inst["clip_while_scaled"] == 0
    if name in CLIPS:
        assert calls["unscale_"] == calls["step"]
        assert inst["clip_after_unscale"] == inst["clip_grad_norm_calls"] == calls["step"]
    else:
        assert inst["clip_grad_norm_calls"] == 0

    # gradient accumulation: 4 scaled backwards per step
    if name == "gpt_accum_clip":
        assert calls["scale"] == 4 * calls["step"]

    # no apex anywhere after migration (this run has no apex stub on the path)
    assert not inst["apex"]["imported"], inst["apex"]


@pytest.mark.parametrize("name", sorted(MIGRATED))
def test_migrated_loss_close_to_fp32(runs, name):
    res = runs.migrated(name)
    ref = runs.fp32_reference(name)
    _assert_ran(res)
    _assert_ran(ref)
    rel = abs(res.final_loss - ref.final_loss) / abs(ref.final_loss)
    assert rel <= RTOL[name], (
        f"{name}: migrated fp16 final_loss={res.final_loss} vs fp32 {ref.final_loss} "
        f"(rel diff {rel:.4%} > {RTOL[name]:.0%})"
    )


def test_half_finetune_fp32_reference_is_really_fp32(runs):
    ref = runs.fp32_reference("half_finetune")
    _assert_ran(ref)
    inst = ref.instrumentation
    assert inst["force_fp32"]
    assert inst["autocast"] and all(not e["enabled"] and e["requested_enabled"] for e in inst["autocast"])
    assert inst["matmul_outputs_in_autocast"] == {}
    assert inst["scalers"] == [{"device": "cpu", "enabled": False, "requested_enabled": True}]
    assert inst["optimizer_steps"] == OPTIMIZER_STEPS["half_finetune"]
    assert inst["skipped_steps"] == 0


def test_migrated_apex_does_not_import_apex(runs):
    res = runs.migrated("apex_o1")
    _assert_ran(res)
    assert res.instrumentation["apex"] == {"imported": False, "file": None, "is_stub": False}
    original_text = (FIXTURES / ORIGINALS["apex_o1"]).read_text()
    assert "from apex import amp" in original_text  # the original really needs the stub

