"""Finding the Python files to check: directory walks honour .gitignore and excludes.

Nothing is passed over silently: a Python-named entry that cannot be checked (a dangling
symlink, a symlink loop, something that is not a regular file) is reported as skipped with its
reason, and a directory that cannot be listed is an error.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

PYTHON_SUFFIXES = (".py", ".pyi")
#: What a directory walk picks up: Python files and, like ruff's default ``extend-include``,
#: Jupyter notebooks.
INCLUDED_SUFFIXES = PYTHON_SUFFIXES + (".ipynb",)


@dataclass
class _IgnoreRule:
    regex: "re.Pattern[str]"
    negate: bool
    dir_only: bool


def _compile_gitignore_pattern(pattern: str) -> Optional[_IgnoreRule]:
    line = pattern.rstrip("\n").rstrip()
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    if line.startswith("\\"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    anchored = "/" in line
    line = line.lstrip("/")
    parts = []
    i = 0
    while i < len(line):
        if line.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif line.startswith("/**", i) and i + 3 == len(line):
            parts.append("/.*")
            i += 3
        elif line[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif line[i] == "?":
            parts.append("[^/]")
            i += 1
        elif line[i] == "[":
            end = line.find("]", i)
            if end == -1:
                parts.append(re.escape(line[i]))
                i += 1
            else:
                body = line[i + 1:end]
                if body.startswith("!"):  # git's negated class is regex's [^...]
                    body = "^" + body[1:]
                parts.append("[" + body + "]")
                i = end + 1
        else:
            parts.append(re.escape(line[i]))
            i += 1
    body = "".join(parts)
    regex = ("^" if anchored else "^(?:.*/)?") + body + "$"
    try:
        return _IgnoreRule(re.compile(regex), negate, dir_only)
    except re.error:  # e.g. a reversed range "[z-a]": git matches nothing with it
        return None


class GitIgnore:
    """The .gitignore rules of one directory, matched against paths relative to it."""

    def __init__(self, base: Path, lines: Iterable[str]) -> None:
        self.base = _absolute(base)
        self.rules = [r for r in map(_compile_gitignore_pattern, lines) if r is not None]

    def decision(self, path: Path, is_dir: bool) -> Optional[bool]:
        """True ignored, False re-included, None no rule matched (``path`` absolute)."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        result = None
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel):
                result = not rule.negate
        return result


def _absolute(path: Path) -> Path:
    """An absolute, normalised path without resolving symlinks (so it stays comparable)."""
    return Path(os.path.abspath(path))


def _load_gitignore(directory: Path, path: Optional[Path] = None) -> Optional[GitIgnore]:
    """The rules of ``directory``'s .gitignore (or of ``path``, matched relative to ``directory``)."""
    path = path if path is not None else directory / ".gitignore"
    if not path.is_file():
        return None
    try:
        return GitIgnore(directory, path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


def _relative(path: Path, root: Path) -> str:
    try:
        return _absolute(path).relative_to(_absolute(root)).as_posix()
    except ValueError:
        pass
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _normalise_pattern(pattern: str) -> str:
    """``build/`` -> ``build``; ``./src/gen`` -> ``src/gen``."""
    pattern = pattern.strip()
    if len(pattern) > 1:
        pattern = pattern.rstrip("/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def _matches(pattern: str, path: Path, rel: str) -> bool:
    """Whether one exclude pattern matches ``path`` (``rel``: the path relative to the root).

    A pattern without ``/`` matches the file or directory name; a relative one with ``/`` the
    path relative to the project root; an absolute one the absolute path.
    """
    pattern = _normalise_pattern(pattern)
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.name, pattern)
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(_absolute(path).as_posix(), pattern)
    return fnmatch.fnmatchcase(rel, pattern)


def is_excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    """Whether ``path`` or one of its parents (below ``root``) matches an exclude pattern.

    A pattern without ``/`` matches any path component (``build`` excludes ``build/x.py``); one
    with ``/`` matches the path relative to ``root`` (or a parent directory of it). A path
    outside ``root`` is matched by its absolute components.
    """
    rel = _relative(path, root)
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        return False  # the project root itself
    if parts[0] == ".." or rel.startswith("/"):
        # Outside the project root: match the path's own components only.
        parts = [p for p in _absolute(path).as_posix().split("/") if p]
        anchor = Path("/")
    else:
        anchor = _absolute(root)
    for i in range(len(parts)):
        prefix = "/".join(parts[:i + 1])
        candidate = anchor.joinpath(*parts[:i + 1])
        if any(_matches(pattern, candidate, prefix) for pattern in patterns):
            return True
    return False


def link_problem(path: str, exc: Optional[OSError] = None) -> Optional[str]:
    """Why the symlink at ``path`` cannot be followed (dangling or a loop), or None."""
    if not os.path.islink(path):
        return None
    if exc is None:
        try:
            os.stat(path)
            return None
        except OSError as error:
            exc = error
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        try:
            target = os.readlink(path)
        except OSError:
            return "dangling symlink"
        return f"dangling symlink to {target!r}"
    return f"unreadable symlink: {exc.strerror or exc}"


def discover(paths: Sequence[str], excludes: Sequence[str], root: Path,
             force_exclude: bool = False,
             skipped: Optional[List[Tuple[str, str]]] = None) -> Tuple[List[str], List[Tuple[str, str]]]:
    """(files to check, [(path, error)]) for the given paths, in a stable order.

    ``skipped``, when given, receives ``(path, reason)`` for the Python-named entries found
    while walking directories that cannot be checked (dangling symlinks, symlink loops,
    non-regular files); a path given explicitly that cannot be checked is an error instead.
    """
    files: List[str] = []
    errors: List[Tuple[str, str]] = []
    passed_over: List[Tuple[str, str]] = skipped if skipped is not None else []
    seen = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            errors.append((raw, link_problem(raw) or "No such file or directory"))
            continue
        if force_exclude and is_excluded(path, excludes, root):
            continue
        if path.is_file():
            key = os.path.normpath(raw)
            if key not in seen:
                seen.add(key)
                files.append(raw)
            continue
        if not path.is_dir():
            errors.append((raw, "not a regular file or directory"))
            continue
        for found in _walk(path, excludes, root, passed_over, errors):
            key = os.path.normpath(found)
            if key not in seen:
                seen.add(key)
                files.append(found)
    return files, errors


def _walk(top: Path, excludes: Sequence[str], root: Path, skipped: Optional[List[Tuple[str, str]]] = None,
          errors: Optional[List[Tuple[str, str]]] = None) -> Iterator[str]:
    """Python files below ``top``. ``top`` itself was given explicitly and is never excluded;
    below it, each entry is matched by its own name (and path) against the excludes and the
    .gitignore files of ``top``'s repository, from the repository root down. Python-named
    entries that cannot be checked go to ``skipped``, unlistable directories to ``errors``."""
    top_abs = _absolute(top)
    root_abs = _absolute(root)
    ignores: List[GitIgnore] = []
    # The .gitignore files of the parents up to the repository root apply too, and so does
    # the repository's .git/info/exclude.
    for directory in list(reversed(top_abs.parents)) + [top_abs]:
        if (directory / ".git").exists():
            ignores = []
            exclude_file = _load_gitignore(directory, directory / ".git" / "info" / "exclude")
            if exclude_file is not None:
                ignores.append(exclude_file)
        if directory != top_abs:
            ignore = _load_gitignore(directory)
            if ignore is not None:
                ignores.append(ignore)

    def ignored(path: Path, is_dir: bool) -> bool:
        result = False
        for ignore in ignores:
            decision = ignore.decision(path, is_dir)
            if decision is not None:
                result = decision
        return result

    normalised = [_normalise_pattern(p) for p in excludes]
    name_patterns = [p for p in normalised if "/" not in p]
    path_patterns = [p for p in normalised if "/" in p]

    def excluded(path: Path) -> bool:
        """``path`` is absolute; its parents were checked on the way down."""
        if any(fnmatch.fnmatchcase(path.name, pattern) for pattern in name_patterns):
            return True
        if not path_patterns:
            return False
        try:
            rel = path.relative_to(root_abs).as_posix()
        except ValueError:
            rel = _relative(path, root)
        return any(_matches(pattern, path, rel) for pattern in path_patterns)

    def walk(directory: Path, directory_abs: Path) -> Iterator[str]:
        ignore = _load_gitignore(directory_abs)
        if ignore is not None:
            ignores.append(ignore)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            if errors is not None:
                errors.append((os.path.normpath(str(directory)), f"cannot list directory: {exc.strerror or exc}"))
            entries = []
        for entry in entries:
            child_abs = directory_abs / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if excluded(child_abs) or ignored(child_abs, is_dir):
                continue
            if is_dir:
                yield from walk(Path(entry.path), child_abs)
                continue
            if not entry.name.endswith(INCLUDED_SUFFIXES):
                continue
            try:
                is_file = entry.is_file()
                problem = None if is_file else link_problem(entry.path)
            except OSError as exc:
                is_file, problem = False, link_problem(entry.path, exc) or f"cannot read: {exc.strerror or exc}"
            if is_file:
                yield os.path.normpath(entry.path)
            elif skipped is not None and not (entry.is_symlink() and os.path.isdir(entry.path)):
                skipped.append((os.path.normpath(entry.path), problem or "not a regular file"))
        if ignore is not None:
            ignores.remove(ignore)

    yield from walk(top, top_abs)
