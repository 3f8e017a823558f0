"""The result cache: hits only for the same bytes, path, configuration and amp-lint; never a crash."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from click.testing import CliRunner

import amp_lint
from amp_lint import cache as cache_mod
from amp_lint import runner
from amp_lint.engine import linter
from amp_lint.cli import main
from amp_lint.config import Settings
from amp_lint.discovery import discover

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

DEPRECATED = """\
import torch

with torch.cuda.amp.autocast():
    y = model(x)
"""
CLEAN = """\
import torch

with torch.autocast("cuda"):
    y = model(x)
"""


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory, monkeypatch):
    # The signing key lives in the user's cache directory; keep tests out of the real one.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))


class _Spy(list):
    """Paths parsed (not served from the cache) by runner.run in this process; ``runs`` counts the
    analyses of the program (zero when every report came from the cache)."""

    runs = 0

    def clear(self) -> None:
        super().clear()
        self.runs = 0


@pytest.fixture
def analysed(monkeypatch) -> List[str]:
    seen = _Spy()
    real_parse = linter.ParsedFile.parse.__func__
    real_lint = linter.lint_files

    def parse(cls, path, *args, **kwargs):
        seen.append(path)
        return real_parse(cls, path, *args, **kwargs)

    def lint(*args, **kwargs):
        seen.runs += 1
        return real_lint(*args, **kwargs)

    monkeypatch.setattr(linter.ParsedFile, "parse", classmethod(parse))
    monkeypatch.setattr(linter, "lint_files", lint)
    return seen


def check(root: Path, *, cache: bool = True, fix: bool = False, settings: Settings = None, **changes):
    settings = settings or Settings(select=("ALL",), project_root=str(root))
    settings = dataclasses.replace(settings, **changes)
    files, errors = discover(["."], settings.exclude, root)
    assert not errors
    selection = runner.Selection.from_settings(settings)
    return runner.run(files, selection, runner.RunOptions(fix=fix, cache=cache))


def outcome(reports):
    return [(r.path, r.findings, r.error, r.fixed, r.new_text) for r in reports]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "a.py").write_text(DEPRECATED)
    (tmp_path / "b.py").write_text(CLEAN)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "c.py").write_text(DEPRECATED.replace("y =", "z ="))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fixtures_identical_with_and_without_cache(tmp_path, monkeypatch, analysed):
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, root)
    monkeypatch.chdir(root)
    plain = check(root, cache=False)
    assert not (root / ".amp_lint_cache").exists()
    assert any(r.findings for r in plain)
    analysed.clear()
    cold = check(root)
    assert len(analysed) == len(plain)
    analysed.clear()
    warm = check(root)
    assert analysed == [] and analysed.runs == 0  # every report from the cache
    assert outcome(plain) == outcome(cold) == outcome(warm)


def test_cache_directory_is_tagged(project):
    check(project)
    directory = project / ".amp_lint_cache"
    assert (directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (directory / ".gitignore").read_text().splitlines()[-1] == "*"
    assert list(directory.glob("*.cache"))


def test_edit_reanalyses_the_program(project, analysed):
    """An edit re-runs the analysis of the whole program: findings depend on every file."""
    first = check(project)
    assert [len(r.findings) for r in first] == [1, 0, 1]
    analysed.clear()
    (project / "b.py").write_text(DEPRECATED)
    second = check(project)
    assert sorted(analysed) == ["a.py", "b.py", os.path.join("pkg", "c.py")] and analysed.runs == 1
    assert [len(r.findings) for r in second] == [1, 1, 1]
    assert second[1].findings == check(project, cache=False)[1].findings
    analysed.clear()
    (project / "b.py").write_text(CLEAN)  # back to content that was cached before: still right
    assert [len(r.findings) for r in check(project)] == [1, 0, 1]


def test_rename_reports_new_path(project, analysed):
    check(project)
    analysed.clear()
    os.rename(project / "a.py", project / "renamed.py")
    reports = check(project)
    assert sorted(analysed) == ["b.py", os.path.join("pkg", "c.py"), "renamed.py"] and analysed.runs == 1
    assert [r.path for r in reports] == ["b.py", os.path.join("pkg", "c.py"), "renamed.py"]
    assert [f.filename for f in reports[2].findings] == ["renamed.py"]
    assert outcome(reports) == outcome(check(project, cache=False))


def test_delete_drops_entry(project, analysed):
    check(project)
    (project / "a.py").unlink()
    (project / "b.py").write_text(CLEAN + "\n")  # forces a save
    analysed.clear()
    reports = check(project)
    assert sorted(analysed) == ["b.py", os.path.join("pkg", "c.py")]
    assert [r.path for r in reports] == ["b.py", os.path.join("pkg", "c.py")]
    settings = Settings(select=("ALL",), project_root=str(project))
    cache = cache_mod.Cache(str(project), settings, runner._options_key(runner.RunOptions()))
    cache._load()
    assert set(cache._entries) == {("b.py", "report"), ("pkg/c.py", "report"), runner._CONFIG_READS}


def test_config_change_misses(project, analysed):
    check(project)
    analysed.clear()
    reports = check(project, ignore=("AMP501",))
    assert len(analysed) == 3
    assert all(not r.findings for r in reports)
    analysed.clear()
    check(project, ignore=("AMP501",))
    assert analysed == []
    analysed.clear()
    check(project, per_file_ignores=(("pkg/*", ("AMP501",)),))
    assert len(analysed) == 3


def test_version_change_misses(project, analysed, monkeypatch):
    check(project)
    analysed.clear()
    monkeypatch.setattr(amp_lint, "__version__", "999.0")
    check(project)
    assert len(analysed) == 3


def test_code_change_misses(project, analysed, monkeypatch):
    check(project)
    analysed.clear()
    monkeypatch.setattr(cache_mod, "_package_fingerprint", lambda: "edited rules")
    check(project)
    assert len(analysed) == 3


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: b"",
        lambda blob: b"garbage" * 10,
        lambda blob: blob[: len(blob) // 2],
        lambda blob: blob[:-1] + bytes([blob[-1] ^ 1]),  # tampered payload: signature fails
    ],
)
def test_corrupt_cache_is_ignored(project, analysed, damage):
    expected = outcome(check(project))
    for path in (project / ".amp_lint_cache").glob("*.cache"):
        path.write_bytes(damage(path.read_bytes()))
    analysed.clear()
    assert outcome(check(project)) == expected
    assert len(analysed) == 3
    analysed.clear()
    assert outcome(check(project)) == expected  # rewritten
    assert analysed == []


def test_foreign_signature_is_ignored(project, analysed, monkeypatch, tmp_path_factory):
    check(project)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("other-user")))
    analysed.clear()
    check(project)
    assert len(analysed) == 3


def test_unusable_cache_directory_does_not_crash(project, analysed):
    (project / ".amp_lint_cache").write_text("not a directory")
    expected = outcome(check(project, cache=False))
    assert outcome(check(project)) == expected
    assert outcome(check(project)) == expected


def test_unwritable_cache_entry_layout(project, analysed):
    # A directory where the index file should be: reads and writes fail, results do not.
    check(project)
    for path in (project / ".amp_lint_cache").glob("*.cache"):
        path.unlink()
        path.mkdir()
    analysed.clear()
    assert outcome(check(project)) == outcome(check(project, cache=False))


def test_fix_never_uses_stale_results(project):
    check(project)  # a.py and pkg/c.py cached with a fixable finding
    reports = check(project, fix=True)
    assert [r.fixed for r in reports] == [1, 0, 1]
    assert "torch.cuda.amp" not in (project / "a.py").read_text()
    assert all(not r.findings for r in check(project))


def test_fix_reuses_results_without_fixes(project, analysed):
    (project / "a.py").write_text(CLEAN)
    (project / "pkg" / "c.py").write_text(CLEAN)
    check(project)
    analysed.clear()
    reports = check(project, fix=True)
    assert analysed == []
    assert [r.fixed for r in reports] == [0, 0, 0]


def test_cli_no_cache_neither_reads_nor_writes(project, analysed):
    cli = CliRunner()
    result = cli.invoke(main, ["check", "--isolated", "--no-cache", "."])
    assert result.exit_code == 1, result.output
    assert not (project / ".amp_lint_cache").exists()
    result = cli.invoke(main, ["check", "--isolated", "."])
    assert (project / ".amp_lint_cache").is_dir()
    analysed.clear()
    result = cli.invoke(main, ["check", "--isolated", "."])
    assert analysed == []
    result = cli.invoke(main, ["check", "--isolated", "--no-cache", "."])
    assert len(analysed) == 3


def test_cli_output_same_warm_and_cold(project):
    cli = CliRunner()
    args = ["check", "--isolated", "--output-format", "json", "."]
    cold = cli.invoke(main, args)
    warm = cli.invoke(main, args)
    plain = cli.invoke(main, args + ["--no-cache"])
    assert cold.exit_code == warm.exit_code == plain.exit_code == 1
    assert cold.stdout == warm.stdout == plain.stdout


def test_cached_run_never_loads_the_engine(project):
    """An unchanged tree is answered without importing LibCST, the analysis or the rules (most of
    a warm run's time used to be those imports)."""
    probe = ("import sys\n"
             "from amp_lint.cli import main\n"
             "try:\n    main(['check', '--isolated', '.'])\n"
             "except SystemExit as exit:\n    code = exit.code\n"
             "heavy = sorted(m for m in sys.modules if m == 'libcst' or m.startswith(('amp_lint.engine', 'amp_lint.rules', 'amp_lint.semantics')))\n"
             "print(code, heavy)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(amp_lint.__file__).resolve().parents[1])}
    cold = subprocess.run([sys.executable, "-c", probe], cwd=project, env=env, capture_output=True, text=True)
    warm = subprocess.run([sys.executable, "-c", probe], cwd=project, env=env, capture_output=True, text=True)
    assert cold.stdout.strip().splitlines()[-1].startswith("1 ['amp_lint.engine")
    assert warm.stdout.strip().splitlines()[-1] == "1 []"


def test_stale_index_files_are_pruned(project):
    directory = project / ".amp_lint_cache"
    check(project)
    old = directory / ("0" * 32 + ".cache")
    old.write_bytes(b"from an older amp-lint")
    os.utime(old, (1, 1))
    recent = directory / ("1" * 32 + ".cache")
    recent.write_bytes(b"from other settings, used recently")
    (project / "a.py").write_text(CLEAN)  # something to save
    check(project)
    assert not old.exists()
    assert recent.exists()


def codes(reports) -> list:
    """The codes of every finding of ``reports``, in order."""
    return [f.code for r in reports for f in r.findings]


def test_a_config_file_the_analysis_read_invalidates_the_cache_when_it_changes(tmp_path, monkeypatch, analysed):
    """The analysis reads ``configs/model.yaml`` where the script loads it: a cached report holds
    only while that file is unchanged (the Python files alone are not the whole input)."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "model.yaml").write_text("model:\n  target: nets.Attn\n", encoding="utf-8")
    (tmp_path / "nets.py").write_text(
        "import torch.nn as nn\n"
        "class Attn(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.softmax(-1)\n"
        "class Plain(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n", encoding="utf-8")
    (tmp_path / "run.py").write_text(
        "import importlib\n"
        "import torch\n"
        "from omegaconf import OmegaConf\n"
        "config = OmegaConf.load('configs/model.yaml')\n"
        "module, name = config.model.target.rsplit('.', 1)\n"
        "model = getattr(importlib.import_module(module), name)().half()\n"
        "out = model(torch.randn(2, 8).half())\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert codes(check(tmp_path, select=("AMP201",))) == ["AMP201"]
    analysed.clear()
    assert codes(check(tmp_path, select=("AMP201",))) == ["AMP201"] and analysed.runs == 0  # from the cache
    (tmp_path / "configs" / "model.yaml").write_text("model:\n  target: nets.Plain\n", encoding="utf-8")
    assert codes(check(tmp_path, select=("AMP201",))) == [] and analysed.runs == 1
    (tmp_path / "configs" / "model.yaml").unlink()
    assert codes(check(tmp_path, select=("AMP201",))) == [] and analysed.runs == 2


def test_a_config_added_beside_a_deepspeed_script_invalidates_the_cache(tmp_path, monkeypatch, analysed):
    """A DeepSpeed script whose config comes from the command line is analysed with the configs
    shipped beside it: the listing of that folder is an input, so adding one is noticed."""
    (tmp_path / "train.py").write_text(
        "import argparse\n"
        "import deepspeed\n"
        "import torch\n"
        "args = argparse.ArgumentParser().parse_args()\n"
        "engine, _, _, _ = deepspeed.initialize(args=args, model=torch.nn.Linear(8, 8))\n"
        "out = engine(torch.randn(2, 8)).softmax(-1)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert codes(check(tmp_path, select=("AMP201",))) == []
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "fp16": {"enabled": true}}', encoding="utf-8")
    analysed.clear()
    assert codes(check(tmp_path, select=("AMP201",))) == ["AMP201"] and analysed.runs == 1
    assert codes(check(tmp_path, select=("AMP201",))) == ["AMP201"] and analysed.runs == 1  # from the cache
    (tmp_path / "ds_config.json").unlink()
    assert codes(check(tmp_path, select=("AMP201",))) == [] and analysed.runs == 2
