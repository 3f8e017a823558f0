"""`fix` applies fixes for cross-file findings: the cast lives in train.py, the hazard in model/."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _amp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", *args, "--isolated"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _tree(path: Path) -> dict:
    return {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("*.py"))}


def test_fix_reaches_hazards_caused_by_another_file(tmp_path):
    results = {}
    for run_index in ("1", "2"):
        project = tmp_path / f"gpt_pkg_{run_index}"
        shutil.copytree(ROOT / "fixtures" / "projects" / "gpt_pkg", project)
        attention = project / "model" / "attention.py"
        assert "masked_fill(mask == 0, -1e9)" in attention.read_text()
        # Alone, attention.py shows no hazard: nothing in it is half precision.
        alone = _amp(project / "model", "check", "--no-cache", "attention.py")
        assert alone.returncode == 0, alone.stdout
        run = _amp(project, "fix", "--unsafe-fixes", "--no-cache", ".")
        assert run.returncode == 0, run.stdout + run.stderr
        text = attention.read_text()
        assert "masked_fill(mask == 0, torch.finfo(att.dtype).min)" in text
        assert "F.softmax(att, dim=-1, dtype=torch.float32).type_as(att)" in text
        assert "GPT(cfg).cuda().half()" not in (project / "train.py").read_text()
        again = _amp(project, "fix", "--unsafe-fixes", ".")
        assert again.returncode == 0 and "fixed" not in again.stderr, again.stderr
        results[run_index] = _tree(project)
    assert results["1"] == results["2"]  # deterministic
