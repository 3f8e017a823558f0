"""Worker processes give exactly the results of one process; small runs stay in-process."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_lint import runner
from amp_lint.cli import main
from amp_lint.config import Settings
from amp_lint.discovery import discover

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))


@pytest.fixture
def always_parallel(monkeypatch):
    monkeypatch.setattr(runner, "MIN_PARALLEL_FILES", 2)
    monkeypatch.setattr(runner, "FILES_PER_WORKER", 1)


def run(root: Path, jobs: int, *, fix: bool = False, diff: bool = False):
    settings = Settings(select=("ALL",), project_root=str(root))
    files, _ = discover(["."], settings.exclude, root)
    return runner.run(files, runner.Selection.from_settings(settings),
                      runner.RunOptions(fix=fix, diff=diff, jobs=jobs, want_edits=True))


def outcome(reports):
    return [(r.path, r.findings, r.error, r.fixed, r.new_text) for r in reports]


def test_jobs_identical_to_one_process(tmp_path, monkeypatch, always_parallel):
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, root)
    monkeypatch.chdir(root)
    one = run(root, 1)
    assert any(r.findings for r in one)
    assert outcome(run(root, 2)) == outcome(one)
    assert outcome(run(root, 3)) == outcome(one)


def test_diff_and_fix_identical_with_jobs(tmp_path, monkeypatch, always_parallel):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES, a)
    shutil.copytree(FIXTURES, b)
    monkeypatch.chdir(a)
    diff_one = run(a, 1, diff=True)
    diff_two = run(a, 2, diff=True)
    assert outcome(diff_one) == outcome(diff_two)
    assert [runner.unified_diff(r) for r in diff_one] == [runner.unified_diff(r) for r in diff_two]
    fixed_one = run(a, 1, fix=True)
    monkeypatch.chdir(b)
    fixed_two = run(b, 2, fix=True)
    assert [(r.path, r.fixed, r.findings) for r in fixed_one] == [(r.path, r.fixed, r.findings) for r in fixed_two]
    for path in sorted(a.rglob("*.py")):
        assert path.read_text() == (b / path.relative_to(a)).read_text(), path


def test_cli_jobs_output_identical(tmp_path, monkeypatch, always_parallel):
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, root)
    monkeypatch.chdir(root)
    cli = CliRunner()
    outputs = [
        cli.invoke(main, ["check", "--isolated", "--no-cache", "--select", "ALL", "--output-format", "json", jobs, "."])
        for jobs in ("-j1", "-j2")
    ]
    assert outputs[0].exit_code == outputs[1].exit_code == 1
    assert outputs[0].stdout == outputs[1].stdout


def test_small_runs_stay_in_process(tmp_path, monkeypatch):
    import concurrent.futures

    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool was started for a small run")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    (tmp_path / "a.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    reports = run(tmp_path, 8)
    assert [len(r.findings) for r in reports] == [1]


def test_unreadable_files_reported_with_jobs(tmp_path, monkeypatch, always_parallel):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text("import torch\n")
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe not utf-8 \x80\n")
    monkeypatch.chdir(tmp_path)
    reports = run(tmp_path, 2)
    assert [r.path for r in reports] == ["bad.py", "m0.py", "m1.py", "m2.py", "m3.py"]
    assert reports[0].error and "utf-8" in reports[0].error
    assert outcome(reports) == outcome(run(tmp_path, 1))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_for_large_runs(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setattr(runner.sys, "stderr", io.StringIO())
    assert runner._make_progress(runner.RunOptions(progress=True), 1000) is None
    terminal = _Terminal()
    monkeypatch.setattr(runner.sys, "stderr", terminal)
    assert runner._make_progress(runner.RunOptions(progress=True), 3) is None
    assert runner._make_progress(runner.RunOptions(progress=False), 1000) is None
    bar = runner._make_progress(runner.RunOptions(progress=True), 1000)
    assert bar is not None
    for _ in range(1000):
        bar.advance()
    bar.close()
    text = terminal.getvalue()
    assert "1000/1000 files" in text and text.endswith("\r\x1b[K")


def test_cli_prints_no_progress_when_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "PROGRESS_MIN_FILES", 1)
    (tmp_path / "a.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "-j1", "."])
    assert result.exit_code == 0
    assert "files" not in result.stderr and "\r" not in result.stderr
