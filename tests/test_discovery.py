"""Finding files: .gitignore (nested, negation, dir-only, anchored, parents, info/exclude), default
excludes, exclude settings, explicit paths, --force-exclude."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, List

import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.config import DEFAULT_EXCLUDES
from amp_lint.discovery import GitIgnore, discover, is_excluded

HAZARD = "import torch\nx = torch.cuda.amp.autocast()\n"


def make(root: Path, files: Iterable[str], text: str = HAZARD) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def checked(*args: str) -> List[str]:
    """The files ``amp-lint check --select AMP501 ARGS`` reports (output is sorted by path)."""
    result = CliRunner().invoke(main, ["check", "--select", "AMP501", "--no-cache", "-q", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    files: List[str] = []
    for line in result.stdout.splitlines():
        name = line.split(":")[0]
        if name not in files:
            files.append(name)
    return files


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()  # a repository root, as far as discovery is concerned
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_walk_finds_py_and_pyi_only_in_sorted_order(repo: Path) -> None:
    make(repo, ["b.py", "a.py", "stubs/m.pyi", "pkg/z.py", "pkg/sub/y.py", "notes.txt", "script", "data.pyc"])
    assert checked() == ["a.py", "b.py", "pkg/sub/y.py", "pkg/z.py", "stubs/m.pyi"]
    assert checked(".") == checked()
    assert checked("pkg") == ["pkg/sub/y.py", "pkg/z.py"]


def test_gitignore_basic_negation_dir_only(repo: Path) -> None:
    make(repo, [
        "keep.py", "gen/g.py", "out.py", "logs/l.py", "cache/c.py",
        "vendor/a.py", "vendor/b.py", "vendor/keep_me.py",
        "dironly/d.py", "sub/dironly", "docs/conf.py", "src/docs/x.py",
    ])  # fmt: skip
    (repo / ".gitignore").write_text(
        "# comment\n"
        "\n"
        "gen/\n"          # a directory
        "out.py\n"        # a file name anywhere
        "/logs\n"         # anchored to the root
        "cache/*\n"
        "vendor/*.py\n"
        "!vendor/keep_me.py\n"  # negation re-includes
        "dironly/\n"      # dir-only: the file sub/dironly is not a directory
        "/docs/\n"        # anchored dir: src/docs stays
    )  # fmt: skip
    (repo / "sub" / "dironly").write_text(HAZARD)  # not .py: not walked anyway, but must not crash
    assert checked() == ["keep.py", "src/docs/x.py", "vendor/keep_me.py"]


def test_gitignore_nested_files_and_precedence(repo: Path) -> None:
    make(repo, ["top.py", "pkg/a.py", "pkg/sub/b.py", "pkg/sub/skip_me.py", "pkg/sub/important.py", "pkg/gen/g.py"])
    (repo / ".gitignore").write_text("skip_me.py\n")
    (repo / "pkg" / ".gitignore").write_text("gen\n")
    (repo / "pkg" / "sub" / ".gitignore").write_text("*.py\n!important.py\n")
    assert checked() == ["pkg/a.py", "pkg/sub/important.py", "top.py"]
    # A deeper .gitignore can re-include what a higher one ignores.
    (repo / "pkg" / "sub" / ".gitignore").write_text("!skip_me.py\n")
    assert checked() == ["pkg/a.py", "pkg/sub/b.py", "pkg/sub/important.py", "pkg/sub/skip_me.py", "top.py"]


def test_gitignore_of_parents_applies_when_walking_a_subdirectory(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(repo, ["pkg/a.py", "pkg/gen/g.py", "pkg/sub/tmp_x.py"])
    (repo / ".gitignore").write_text("gen/\ntmp_*.py\n")
    assert checked("pkg") == ["pkg/a.py"]
    monkeypatch.chdir(repo / "pkg")
    assert checked() == ["a.py"]
    assert checked("sub") == []


def test_gitignore_above_the_repository_does_not_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    make(repo, ["a.py"])
    monkeypatch.chdir(repo)
    assert checked() == ["a.py"]


def test_git_info_exclude(repo: Path) -> None:
    make(repo, ["a.py", "scratch/s.py"])
    (repo / ".git" / "info").mkdir()
    (repo / ".git" / "info" / "exclude").write_text("scratch/\n")
    assert checked() == ["a.py"]


def test_gitignore_double_star_and_character_classes(repo: Path) -> None:
    make(repo, ["a/b/c/gen_1.py", "a/gen_2.py", "a/gen_xy.py", "x/tests/t.py", "x/y/tests/t.py", "keep/tests.py", "m1.py", "m2.py", "mz.py"])
    (repo / ".gitignore").write_text("a/**/gen_?.py\n**/tests/\nm[0-9].py\n")
    assert checked() == ["a/gen_xy.py", "keep/tests.py", "mz.py"]


def test_ignored_directory_contents_cannot_be_re_included(repo: Path) -> None:
    make(repo, ["build2/a.py", "build2/keep.py"])
    (repo / ".gitignore").write_text("build2/\n!build2/keep.py\n")
    assert checked() == []


def test_default_excludes(repo: Path) -> None:
    make(repo, [
        "a.py", ".git/hooks/h.py", ".venv/lib/v.py", "venv/v.py", "build/b.py", "dist/d.py",
        "lib/python3.11/site-packages/pkg/s.py", "node_modules/n.py", "__pycache__/p.py", ".tox/t.py",
        "src/build/nested.py", ".mypy_cache/m.py", ".amp_lint_cache/c.py",
    ])  # fmt: skip
    assert checked() == ["a.py"]
    assert {".git", ".venv", "build", "site-packages", "__pycache__", "node_modules"} <= set(DEFAULT_EXCLUDES)


def test_explicit_paths_are_checked_even_when_excluded(repo: Path) -> None:
    make(repo, ["build/b.py", "build/inner/c.py", "gen/g.py", ".venv/v.py"])
    (repo / ".gitignore").write_text("gen/\n")
    assert checked("build/b.py", "gen/g.py", ".venv/v.py") == [".venv/v.py", "build/b.py", "gen/g.py"]
    # An explicitly named directory is walked too (its entries still obey the excludes).
    assert checked("build") == ["build/b.py", "build/inner/c.py"]
    assert checked("gen") == ["gen/g.py"]
    # A non-Python file named explicitly is checked as Python.
    make(repo, ["tools/run"])
    assert checked("tools/run") == ["tools/run"]


def test_force_exclude_applies_excludes_to_explicit_paths(repo: Path) -> None:
    make(repo, ["a.py", "build/b.py", "src/build/c.py", "generated/x.py", "migrations/0001.py", ".venv/v.py"])
    (repo / "pyproject.toml").write_text('[tool.amp-lint]\nextend-exclude = ["generated", "src/build/*.py", "0*.py"]\n')
    explicit = ["a.py", "build/b.py", "src/build/c.py", "generated/x.py", "migrations/0001.py", ".venv/v.py"]
    assert checked(*explicit) == sorted(explicit)
    assert checked("--force-exclude", *explicit) == ["a.py"]
    assert checked("--force-exclude", "build") == []
    assert checked("--force-exclude", ".") == ["a.py"]


def test_exclude_path_patterns_are_relative_to_the_project_root(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(repo, ["src/gen/a.py", "src/ok.py", "other/src/gen/b.py"])
    (repo / "pyproject.toml").write_text('[tool.amp-lint]\nextend-exclude = ["src/gen", "./other/src/gen/"]\n')
    assert checked() == ["src/ok.py"]
    monkeypatch.chdir(repo / "src")
    assert checked() == ["ok.py"]
    assert checked("--force-exclude", "gen/a.py") == []


def test_nonexistent_path(repo: Path) -> None:
    make(repo, ["a.py"])
    result = CliRunner().invoke(main, ["check", "--select", "AMP501", "--no-cache", "missing.py", "a.py", "nodir/"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[:2] == [
        "amp-lint: error: missing.py: No such file or directory",
        "amp-lint: error: nodir/: No such file or directory",
    ]
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["a.py"]  # the rest still ran


def test_duplicates_are_checked_once(repo: Path) -> None:
    make(repo, ["pkg/a.py"])
    assert checked("pkg", "pkg/a.py", "./pkg/a.py", ".") == ["pkg/a.py"]


def test_symlinked_directories_are_not_followed(repo: Path) -> None:
    make(repo, ["real/a.py"])
    os.symlink(repo / "real", repo / "link", target_is_directory=True)
    os.symlink(repo, repo / "real" / "loop", target_is_directory=True)  # a loop must not hang
    assert checked() == ["real/a.py"]


# -- the functions ---------------------------------------------------------------------------------

def test_gitignore_matcher_directly(tmp_path: Path) -> None:
    ignore = GitIgnore(tmp_path, ["*.log", "!keep.log", "tmp/", "/root_only.py", "a/**/b.py", "\\#hash.py", "v[!0-9].py"])
    decide = lambda rel, is_dir=False: ignore.decision(tmp_path / rel, is_dir)  # noqa: E731
    assert decide("x.log") is True and decide("d/x.log") is True
    assert decide("keep.log") is False  # re-included
    assert decide("tmp", True) is True and decide("tmp") is None  # dir-only
    assert decide("root_only.py") is True and decide("sub/root_only.py") is None
    assert decide("a/b.py") is True and decide("a/x/y/b.py") is True and decide("b.py") is None
    assert decide("#hash.py") is True
    assert decide("vx.py") is True and decide("v1.py") is None  # [!...] is a negated class
    assert ignore.decision(tmp_path.parent / "x.log", False) is None  # outside its directory
    # A relative base works (it is made absolute).
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert GitIgnore(Path("."), ["*.log"]).decision(tmp_path / "x.log", False) is True
    finally:
        os.chdir(cwd)


def test_malformed_gitignore_patterns_are_skipped(repo: Path) -> None:
    make(repo, ["a.py", "b.py"])
    (repo / ".gitignore").write_text("[z-a].py\n[unclosed\nb.py\n")
    assert checked() == ["a.py"]


def test_is_excluded(tmp_path: Path) -> None:
    assert is_excluded(tmp_path / "build" / "x.py", ["build"], tmp_path)
    assert is_excluded(tmp_path / "a" / "build" / "x.py", ["build"], tmp_path)
    assert not is_excluded(tmp_path / "builder" / "x.py", ["build"], tmp_path)
    assert is_excluded(tmp_path / "src" / "gen" / "x.py", ["src/gen"], tmp_path)
    assert not is_excluded(tmp_path / "lib" / "src" / "gen" / "x.py", ["src/gen"], tmp_path)
    assert is_excluded(tmp_path / "x_pb2.py", ["*_pb2.py"], tmp_path)
    assert not is_excluded(tmp_path, ["*"], tmp_path)  # the root itself is never excluded


def test_discover_reports_missing_paths(tmp_path: Path) -> None:
    make(tmp_path, ["a.py"])
    files, errors = discover([str(tmp_path / "a.py"), str(tmp_path / "nope.py")], DEFAULT_EXCLUDES, tmp_path)
    assert files == [str(tmp_path / "a.py")]
    assert errors == [(str(tmp_path / "nope.py"), "No such file or directory")]


def test_discover_names_what_it_skips(tmp_path: Path) -> None:
    make(tmp_path, ["a.py"])
    os.symlink("gone.py", tmp_path / "dangling.py")
    os.symlink("self.py", tmp_path / "self.py")  # a loop of one
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink(tmp_path, tmp_path / "dir_link.py", target_is_directory=True)  # directory links are not followed
    skipped: list = []
    files, errors = discover([str(tmp_path)], DEFAULT_EXCLUDES, tmp_path, skipped=skipped)
    assert files == [str(tmp_path / "a.py")] and errors == []
    assert skipped == [
        (str(tmp_path / "dangling.py"), "dangling symlink to 'gone.py'"),
        (str(tmp_path / "pipe.py"), "not a regular file"),
        (str(tmp_path / "self.py"), "symlink loop"),
    ]
    files, errors = discover([str(tmp_path / "self.py"), str(tmp_path / "pipe.py")], DEFAULT_EXCLUDES, tmp_path)
    assert files == [] and errors == [(str(tmp_path / "self.py"), "symlink loop"),
                                      (str(tmp_path / "pipe.py"), "not a regular file or directory")]
