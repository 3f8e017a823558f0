"""Runs on some files of a project (as pre-commit does) analyse the whole project as one program
and report on the given files only."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import List

import pytest
from click.testing import CliRunner

from amp_lint import runner
from amp_lint.engine import linter
from amp_lint.cli import main
from amp_lint.project_scope import find_project_root, project_scope

ROOT = Path(__file__).resolve().parents[1]
GPT_PKG = ROOT / "fixtures" / "projects" / "gpt_pkg"


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    dest = tmp_path / "repo"
    shutil.copytree(GPT_PKG, dest)
    (dest / "expected.txt").unlink()
    (dest / "pyproject.toml").write_text('[project]\nname = "gpt"\n')
    monkeypatch.chdir(dest)
    return dest


@pytest.fixture
def parsed(monkeypatch) -> List[str]:
    """The files the runner parses (none when the reports come from the cache)."""
    seen: List[str] = []
    real = linter.ParsedFile.parse.__func__

    def parse(cls, path, *args, **kwargs):
        seen.append(path)
        return real(cls, path, *args, **kwargs)

    monkeypatch.setattr(linter.ParsedFile, "parse", classmethod(parse))
    return seen


def amp(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_project_root_is_the_nearest_marker(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "setup.cfg").write_text("")
    (tmp_path / "a" / "b" / "x.py").write_text("")
    assert find_project_root([str(tmp_path / "a" / "b" / "x.py")]) == tmp_path / "a"
    (tmp_path / "a" / "b" / ".git").mkdir()
    assert find_project_root([str(tmp_path / "a" / "b" / "x.py")]) == tmp_path / "a" / "b"


def test_directories_are_checked_as_given(project: Path) -> None:
    assert project_scope(["model"], ["model/attention.py"], (), project).context == []
    scope = project_scope(["model/attention.py"], ["model/attention.py"], (), project)
    assert scope.root == str(project)
    assert sorted(scope.context) == ["model/__init__.py", "model/gpt.py", "train.py"]
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text("x = 1\n")  # excluded by default, as in a walk
    assert "build/gen.py" not in project_scope(["train.py"], ["train.py"], ("build",), project).context


def test_one_file_sees_the_cast_in_another(project: Path, parsed: List[str]) -> None:
    result = amp("check", "model/attention.py")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model/attention.py:34:15: AMP301 `-1e9` overflows float16")
    assert lines[1].startswith("model/attention.py:35:15: AMP201")
    assert len(lines) == 2  # train.py and model/gpt.py have findings too: context, not reported
    assert sorted(parsed) == ["model/__init__.py", "model/attention.py", "model/gpt.py", "train.py"]

    # Warm: an unchanged project is answered from the cache, and so is a run on all of it.
    parsed.clear()
    again = amp("check", "model/attention.py")
    assert again.stdout == result.stdout and parsed == []
    everything = amp("check", ".")
    assert parsed == [] and "train.py:26:13: AMP101" in everything.stdout
    assert [line for line in everything.stdout.splitlines() if line.startswith("model/attention.py")] == lines

    # The context follows the other files: without the cast the file is clean.
    train = project / "train.py"
    train.write_text(train.read_text().replace("GPT(cfg).cuda().half()", "GPT(cfg).cuda()"))
    assert amp("check", "model/attention.py").exit_code == 0


def test_fix_on_one_file_fixes_only_that_file(project: Path) -> None:
    before = (project / "train.py").read_text()
    result = amp("fix", "--unsafe-fixes", "model/attention.py")
    assert result.exit_code == 0, result.output
    text = (project / "model" / "attention.py").read_text()
    assert "masked_fill(mask == 0, torch.finfo(att.dtype).min)" in text
    assert (project / "train.py").read_text() == before  # its own findings are not touched
    assert "fixed" not in amp("fix", "--unsafe-fixes", "model/attention.py").stderr


def test_without_project_root_no_context(tmp_path: Path, monkeypatch) -> None:
    if find_project_root([str(tmp_path)]) is not None:
        pytest.skip("the temporary directory lies inside a project")
    shutil.copytree(GPT_PKG, tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    assert project_scope(["model/attention.py"], ["model/attention.py"], (), tmp_path / "p").context == []
    assert amp("check", "model/attention.py").exit_code == 0
