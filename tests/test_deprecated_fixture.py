"""AMP501 on a realistic legacy script: the fix matches the expected file, and running it shows
the deprecation warnings gone (the original emits torch's FutureWarnings)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "deprecated" / "legacy_amp_train.py"
EXPECTED = ROOT / "fixtures" / "deprecated" / "expected" / "legacy_amp_train.py"

EXERCISE = r"""
import importlib.util, sys, warnings
import torch
torch.set_num_threads(1)
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    spec = importlib.util.spec_from_file_location("legacy", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    mod.make_scaler(enabled=False)
    mod.evaluate(model, x)
    out = mod.cpu_eval(model, x)
    y = mod.ScaledMul.apply(x.requires_grad_(), 2.0)
    y.sum().backward()
future = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
print("FUTURE", len(future))
print("DTYPE", out.dtype)
"""


def _exercise(path: Path) -> str:
    out = subprocess.run([sys.executable, "-c", EXERCISE, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.runtime
def test_fix_matches_expected_and_runs_without_deprecations(tmp_path):
    target = tmp_path / FIXTURE.name
    shutil.copy(FIXTURE, target)
    run = subprocess.run([sys.executable, "-m", "amp_lint", "fix", "--isolated", "--no-cache", "--select", "AMP5", str(target)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_text() == EXPECTED.read_text()
    original = _exercise(FIXTURE)
    fixed = _exercise(target)
    assert "FUTURE 0" not in original  # torch warns about the deprecated calls
    assert "FUTURE 0" in fixed
    assert "DTYPE torch.bfloat16" in original and "DTYPE torch.bfloat16" in fixed  # same behaviour
