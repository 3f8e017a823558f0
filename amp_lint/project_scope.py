"""The rest of the project for a run on some of its files (pre-commit passes only changed files).

The analysis is whole-program: a hazard in ``model/attention.py`` exists because ``train.py``
casts the model to half. When every path given is a file (directories are checked as given),
the other files of their project (below the nearest directory with ``pyproject.toml``,
``setup.cfg`` or ``.git``) become *context*: analysed with the given files as one program,
never reported on, never fixed; module names are taken relative to that project root.

Context is the whole project, not a guess at which files matter: the analysis decides that.
A run on an unchanged project is answered from the report cache (the entries a full
``amp-lint check .`` writes too, see :mod:`amp_lint.runner`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from amp_lint.discovery import discover

PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def find_project_root(paths: Sequence[str]) -> Optional[Path]:
    """The nearest directory at or above the given paths' common parent with a project marker."""
    if not paths:
        return None
    try:
        common = Path(os.path.commonpath([os.path.abspath(p) for p in paths]))
    except ValueError:  # different drives
        return None
    start = common if common.is_dir() else common.parent
    for directory in [start, *start.parents]:
        if any((directory / marker).exists() for marker in PROJECT_MARKERS):
            return directory
    return None


def _display(path: Path) -> str:
    """``path`` relative to the working directory when below it (as discovery reports the paths
    given), else absolute: context files appear in the evidence of findings."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


@dataclass
class Scope:
    """The project of a run on some files: its root (module names are relative to it) and the
    other files the analysis reads with them."""

    root: Optional[str] = None
    context: List[str] = field(default_factory=list)


def project_scope(paths: Sequence[str], files: Sequence[str], excludes: Sequence[str],
                  exclude_root: Path) -> Scope:
    """The scope of a run on ``files`` (found from ``paths``): none unless every path is a file
    and a project root is found above them. ``excludes`` (relative to ``exclude_root``, the
    settings' project root) and .gitignore files apply to the context as to a directory walk."""
    if not files or not all(os.path.isfile(p) for p in paths):
        return Scope()
    root = find_project_root(list(paths))
    if root is None:
        return Scope()
    everything, _ = discover([_display(root)], excludes, exclude_root)
    given = {os.path.abspath(f) for f in files}
    rest = [f for f in everything if os.path.abspath(f) not in given]
    return Scope(str(root), rest)
