"""`amp-lint fix --unsafe-fixes` over every bundled fixture: output parses, a second run changes nothing."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parents[1]


def _snapshot(tree: Path) -> dict:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*.py"))}


def _fix(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "amp_lint", "fix", "--unsafe-fixes", "--isolated", "--no-cache", "--select", "ALL", "-q", "."],
        cwd=tree, capture_output=True, text=True,
    )


def test_fix_twice_changes_nothing_the_second_time(tmp_path):
    tree = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", tree)
    before = _snapshot(tree)
    first = _fix(tree)
    assert first.returncode in (0, 1), first.stderr
    after_first = _snapshot(tree)
    assert after_first != before, "the fixtures hold fixable hazards, so the first run must change something"
    for name, data in after_first.items():
        cst.parse_module(data.decode("utf-8"))  # every rewritten file still parses
    second = _fix(tree)
    assert second.returncode in (0, 1), second.stderr
    assert _snapshot(tree) == after_first
