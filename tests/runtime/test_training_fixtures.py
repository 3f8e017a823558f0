"""What the instrumented runs of the training fixtures did, read from the session's ``verify`` runs.

For each runnable training fixture ``verify`` (tests/runtime/conftest.py) ran the ORIGINAL script,
its ``fix --unsafe-fixes`` rewrite (``amp``) and the rewrite with autocast/GradScaler forced off
(``fp32-ref``), each stopped after 8 optimizer steps on the CPU; the apex original with the apex
stub of ``apex_stub/`` on its path. These tests check the runs themselves, as observed by
``amp_lint.runtime.instrument``: the originals train in plain fp32 (or pure fp16) with no AMP; the
rewrites enter CPU float16 autocast around every forward, route every backward and step through one
enabled GradScaler, clip only after ``unscale_`` and keep gradient accumulation; the fp32 reference
really runs in fp32 and, for fp32 originals, reproduces the original's losses exactly until the
first step the fp16 run's scaler skipped (the reference replays those skips).
"""
from __future__ import annotations

import math

import pytest

from runtime_cases import STEPS

pytestmark = pytest.mark.runtime

MIGRATED = ["fp32_cnn", "fp32_mlp", "gpt_accum_clip", "half_finetune", "apex_o1", "split_project", "gan_two_losses",
            "conditional_optimizer", "cpu_model"]
FP32_ORIGINALS = ["fp32_cnn", "fp32_mlp", "gpt_accum_clip", "apex_o1", "split_project", "gan_two_losses",
                  "conditional_optimizer", "cpu_model"]
CLIPS = {"gpt_accum_clip", "apex_o1"}  # migrated scripts that clip gradients
MICRO_BATCHES = {"gpt_accum_clip": 4}  # backward calls per optimizer step
OPTIMIZERS = {"gan_two_losses": 2}  # optimizers stepped per iteration (one scaler.update per iteration)


def _no_amp(inst):
    assert inst["autocast_enters"] == 0, inst["autocast"]
    assert inst["scalers"] == [], inst["scalers"]
    assert sum(inst["scaler_calls"].values()) == 0, inst["scaler_calls"]


def _stopped_at_limit(run):
    assert run.ok, run.describe()
    inst = run.instrumentation
    assert inst["instrumented"] and inst["instrumentation_error"] is None, inst
    assert inst["stopped_after_steps"] == STEPS and len(run.steps) == STEPS
    assert all(s["loss"] is not None and math.isfinite(s["loss"]) for s in run.steps), run.steps


@pytest.mark.parametrize("case", MIGRATED)
def test_original_runs_as_it_is(verified, case):
    run = verified(case).runs["original"]
    _stopped_at_limit(run)
    inst = run.instrumentation
    _no_amp(inst)
    assert inst["optimizer_steps"] == STEPS and inst["skipped_steps"] == 0
    assert inst["backward_calls"] == STEPS * MICRO_BATCHES.get(case, 1)
    forward = inst["forward"]
    assert forward["autocast"] == 0 and forward["outside"] > 0
    dtypes = set(forward["outside_dtypes"])
    assert dtypes == ({"float16"} if case == "half_finetune" else {"float32"}), forward
    if case == "apex_o1":
        assert inst["apex"]["imported"] and inst["apex"]["is_stub"], inst["apex"]
        assert inst["clip_grad_norm_calls"] == STEPS


@pytest.mark.parametrize("case", MIGRATED)
def test_rewrite_trains_in_fp16_with_a_grad_scaler(verified, case):
    run = verified(case).runs["amp"]
    _stopped_at_limit(run)
    inst = run.instrumentation
    # autocast: only cpu/float16, really active, and matmuls came out in fp16
    assert run.autocast_entries() and run.autocast_entries() == run.autocast_entries("cpu", "float16", enabled=True)
    for entry in run.autocast_entries():
        assert entry["active_after_enter"] and entry["active_dtype"] == "float16", entry
    assert inst["fp16_matmul_in_autocast"] and set(inst["matmul_outputs_in_autocast"]) == {"cpu:float16"}
    assert inst["forward"]["outside"] == 0 and set(inst["forward"]["dtypes"]) == {"cpu:float16"}
    # exactly one GradScaler, on cpu, enabled; every backward scaled; one autocast region per forward
    assert inst["scalers"] == [{"device": "cpu", "enabled": True, "requested_enabled": True}]
    calls = inst["scaler_calls"]
    assert calls == inst["scaler_enabled_calls"]
    assert inst["autocast_enters"] == inst["backward_calls"] == inst["scaled_backward_calls"] == calls["scale"]
    assert calls["scale"] == MICRO_BATCHES.get(case, 1) * calls["step"]
    # stepping: every step through scaler.step + update; skipped steps are steps
    assert calls["step"] == STEPS and calls["update"] == STEPS // OPTIMIZERS.get(case, 1)
    assert inst["direct_optimizer_steps"] == 0
    assert inst["optimizer_steps"] + inst["skipped_steps"] == STEPS
    assert inst["skipped_steps"] <= OPTIMIZERS.get(case, 1)
    assert [s["skipped"] for s in run.steps].count(True) == inst["skipped_steps"]
    scales = [s["scale"] for s in run.steps if s["scale"] is not None]  # read at each update
    assert len(scales) == calls["update"] and all(x in (32768.0, 65536.0) for x in scales), run.steps
    # clipping only after unscale_
    assert inst["clip_while_scaled"] == 0
    if case in CLIPS:
        assert calls["unscale_"] == calls["step"] and inst["clip_after_unscale"] == inst["clip_grad_norm_calls"] == STEPS
    else:
        assert inst["clip_grad_norm_calls"] == 0
    # no apex after migration (the stub is on the path of every run of this case)
    assert not inst["apex"]["imported"], inst["apex"]


@pytest.mark.parametrize("case", MIGRATED)
def test_fp32_reference_is_really_fp32(verified, case):
    verdict = verified(case)
    ref, amp = verdict.runs["fp32-ref"], verdict.runs["amp"]
    _stopped_at_limit(ref)
    inst = ref.instrumentation
    assert inst["force_fp32"]
    assert inst["autocast"] and all(not e["enabled"] and e["requested_enabled"] for e in inst["autocast"])
    assert inst["matmul_outputs_in_autocast"] == {} and set(inst["forward"]["outside_dtypes"]) == {"float32"}
    assert inst["scalers"] == [{"device": "cpu", "enabled": False, "requested_enabled": True}]
    skipped = [s["step"] for s in amp.steps if s["skipped"]]
    # only the first iteration's steps may be skipped (the initial scale overflows once)
    assert [s["step"] for s in ref.steps if s["skipped"]] == skipped == [
        s for s in skipped if s <= OPTIMIZERS.get(case, 1)]
    assert inst["replayed_skips"] == len(skipped) and inst["skipped_steps"] == 0


@pytest.mark.parametrize("case", FP32_ORIGINALS)
def test_fp32_reference_reproduces_the_fp32_original(verified, case):
    """The rewrite with AMP off is the original program: same losses until a replayed skip."""
    verdict = verified(case)
    original, ref = verdict.runs["original"].steps, verdict.runs["fp32-ref"].steps
    first_skip = next((s["step"] for s in ref if s["skipped"]), STEPS + 1)
    for a, b in zip(original, ref):
        if a["step"] <= first_skip:
            assert a["loss"] == pytest.approx(b["loss"], rel=1e-6), (case, a, b)


@pytest.mark.parametrize("case", MIGRATED)
def test_rewrite_loss_is_close_to_fp32(verified, case):
    """Measured: at most 0.02 % apart over 8 steps; 1 % leaves room for other CPUs' fp16 kernels."""
    amp, ref = verified(case).runs["amp"].steps, verified(case).runs["fp32-ref"].steps
    for a, b in zip(amp, ref):
        assert a["loss"] == pytest.approx(b["loss"], rel=0.01), (case, a, b)


@pytest.mark.cases("already_amp")
def test_already_amp_script_is_used_as_it_is(verified):
    verdict = verified("already_amp")
    assert set(verdict.runs) == {"amp", "fp32-ref"} and verdict.changed == []
    inst = verdict.runs["amp"].instrumentation
    assert inst["clip_after_unscale"] == inst["clip_grad_norm_calls"] == STEPS
    assert inst["scaler_calls"]["unscale_"] == STEPS
