"""The pre-commit hooks: `.pre-commit-hooks.yaml` is shaped like ruff-pre-commit's, and the real
``pre-commit try-repo`` installs this repository and runs them on a temporary git repository."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / ".pre-commit-hooks.yaml"

HAZARD = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
FIXED = 'import torch\n\nscaler = torch.amp.GradScaler("cuda")\n'
CLEAN = 'import torch\n\nwith torch.amp.autocast("cuda"):\n    pass\n'


def test_hooks_file_shape() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    assert set(hooks) == {"amp-lint", "amp-lint-fix"}
    assert hooks["amp-lint"]["entry"] == "amp-lint check --force-exclude"
    assert hooks["amp-lint-fix"]["entry"] == "amp-lint fix --force-exclude"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is False
        assert hook["name"] and hook["description"]


def test_runtime_dependencies_do_not_pull_torch() -> None:
    """The hook's environment installs the package's dependencies: libcst and click, never torch."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {dep.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for dep in project["dependencies"]}
    assert {"libcst", "click"} <= names
    assert "torch" not in names


def _git(cwd: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=str(cwd), env=env, check=True, capture_output=True, text=True)


def _snapshot_of_this_repository(dest: Path) -> Path:
    """A committed copy of the working tree: try-repo installs a repository's HEAD."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.cfg", "setup.py", ".pre-commit-hooks.yaml"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "amp_lint", dest / "amp_lint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    return dest


def _try_repo(project: Path, repo: Path, env: Dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(repo), *(args or ("--all-files",)), "--color", "never"],
        cwd=str(project), env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> "tuple[Path, Dict[str, str]]":
    """This repository as pre-commit installs it (a committed snapshot, made once for the module),
    and the environment to run pre-commit in. try-repo builds the hook's virtualenv in a store
    of its own on every call: each call costs about half a minute."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    base = tmp_path_factory.mktemp("precommit")
    repo = _snapshot_of_this_repository(base / "amp-lint")
    env = dict(os.environ, PRE_COMMIT_HOME=str(base / "pre-commit-home"), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return repo, env


@pytest.mark.runtime  # installs this repository into pre-commit's own virtualenv and runs the hooks
def test_pre_commit_try_repo(tmp_path: Path, hook_repo) -> None:
    repo, env = hook_repo
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "train.py").write_text(HAZARD)
    (project / "notes.txt").write_text("torch.cuda.amp.GradScaler()\n")  # not Python: not passed
    (project / "build").mkdir()
    (project / "build" / "generated.py").write_text(HAZARD)  # default exclude: --force-exclude drops it
    _git(project, "add", "-A")

    # Both hooks (no hook id: all of them): the check fails on the hazard and prints the
    # finding, then the fix hook rewrites the file, which pre-commit counts as a failure.
    run = _try_repo(project, repo, env)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "- hook id: amp-lint\n" in output and "- hook id: amp-lint-fix\n" in output
    assert "train.py:3:10: AMP501 [*] `torch.cuda.amp.GradScaler` is deprecated" in output
    assert "files were modified by this hook" in output
    assert "build/generated.py" not in output
    assert "notes.txt" not in output
    assert (project / "train.py").read_text() == FIXED
    assert (project / "build" / "generated.py").read_text() == HAZARD

    # On clean code both hooks pass.
    (project / "other.py").write_text(CLEAN)
    _git(project, "add", "-A")
    run = _try_repo(project, repo, env)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count("Passed") == 2, output
    assert "Failed" not in output


@pytest.mark.runtime
def test_pre_commit_on_one_changed_file_keeps_cross_file_context(tmp_path: Path, hook_repo) -> None:
    """pre-commit passes only the staged file; the hazard in it exists because another,
    unchanged file casts the model to half: amp-lint takes that file's summary from the project."""
    repo, env = hook_repo
    project = tmp_path / "gpt_pkg"
    shutil.copytree(ROOT / "fixtures" / "projects" / "gpt_pkg", project)
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "project")
    attention = project / "model" / "attention.py"
    attention.write_text(attention.read_text() + "\n# edited\n")
    _git(project, "add", "model/attention.py")

    # No --all-files: try-repo runs the hook on the staged files only.
    run = _try_repo(project, repo, env, "amp-lint")
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "model/attention.py:34:15: AMP301 `-1e9` overflows float16" in output, output
    assert "model/attention.py:35:15: AMP201" in output, output
    assert "train.py" not in output  # context only: findings of unchanged files are not reported
