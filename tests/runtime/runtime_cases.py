"""The verify and trace cases of the runtime tests (read by conftest.py and the test modules)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "fixtures" / "training"
NUMERICS = ROOT / "fixtures" / "numerics"
RUNTIME = ROOT / "fixtures" / "runtime"
APEX_STUB = {"PYTHONPATH": str(Path(__file__).resolve().parent / "apex_stub")}
STEPS = 8


def cuda_available() -> bool:
    """Whether this machine's torch sees a GPU (runs started with ``device="auto"`` then use it)."""
    import torch

    return torch.cuda.is_available()

#: name -> (script relative to fixtures/training, verify options)
VERIFY_CASES: Dict[str, tuple] = {
    "fp32_cnn": ("fp32_cnn.py", {}),
    "fp32_mlp": ("fp32_mlp.py", {}),
    "gpt_accum_clip": ("gpt_accum_clip.py", {}),
    "half_finetune": ("half_finetune.py", {}),
    "apex_o1": ("apex_o1.py", {"env": APEX_STUB}),
    "split_project": ("split_project/train.py", {}),
    "gan_two_losses": ("gan_two_losses.py", {}),
    "conditional_optimizer": ("conditional_optimizer.py", {}),
    "cpu_model": ("cpu_model.py", {}),
    "already_amp": ("already_amp.py", {}),
    "bf16_autocast": ("bf16_autocast.py", {}),
    "inference_only": ("inference_only.py", {}),
    "broken/scaler_in_branch": ("broken/scaler_in_branch.py", {"no_fix": True}),
    "broken/autocast_not_around_forward": ("broken/autocast_not_around_forward.py", {"no_fix": True}),
    "broken/clip_before_unscale": ("broken/clip_before_unscale.py", {"no_fix": True}),
    # --device cpu: the CUDA mixed precision is mapped onto the CPU also where a GPU is present
    "cuda_amp_any_device": ("../runtime/cuda_amp_any_device.py", {"no_fix": True, "device": "cpu"}),
}
#: ``python -m csv_regression.train ARGS`` from a copy of fixtures/runtime, with --apply.
MODULE_CASE = "module_with_data_and_args"
MODULE_ARGS = ("--data", "csv_regression/data/points.csv", "--epochs", "2")

TRACE_CASES: Dict[str, Path] = {
    **{p.stem: p for p in sorted(NUMERICS.glob("AMP*.py"))},
    **{f"fixed/{p.stem}": p for p in sorted((NUMERICS / "fixed").glob("AMP*.py"))},
    "precision_from_config": RUNTIME / "precision_from_config.py",
}
