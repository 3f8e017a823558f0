"""Finding the Python files to check: directory walks honour .gitignore and excludes."""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

PYTHON_SUFFIXES = (".py", ".pyi")


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
                parts.append(line[i:end + 1])
                i = end + 1
        else:
            parts.append(re.escape(line[i]))
            i += 1
    body = "".join(parts)
    regex = ("^" if anchored else "^(?:.*/)?") + body + "$"
    return _IgnoreRule(re.compile(regex), negate, dir_only)


class GitIgnore:
    """The .gitignore rules of one directory, matched against paths relative to it."""

    def __init__(self, base: Path, lines: Iterable[str]) -> None:
        self.base = base
        self.rules = [r for r in map(_compile_gitignore_pattern, lines) if r is not None]

    def decision(self, path: Path, is_dir: bool) -> Optional[bool]:
        """True ignored, False re-included, None no rule matched."""
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


def _load_gitignore(directory: Path) -> Optional[GitIgnore]:
    path = directory / ".gitignore"
    if not path.is_file():
        return None
    try:
        return GitIgnore(directory, path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


def is_excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    """Whether ``path`` (or one of its parents below ``root``) matches an exclude pattern."""
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = rel.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatch(rel, pattern) or any(
                fnmatch.fnmatch("/".join(parts[:i]), pattern) for i in range(1, len(parts))
            ):
                return True
        elif any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


def discover(paths: Sequence[str], excludes: Sequence[str], root: Path,
             force_exclude: bool = False) -> Tuple[List[str], List[Tuple[str, str]]]:
    """(files to check, [(path, error)]) for the given paths, in a stable order."""
    files: List[str] = []
    errors: List[Tuple[str, str]] = []
    seen = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            errors.append((raw, "No such file or directory"))
            continue
        if path.is_file():
            if force_exclude and is_excluded(path, excludes, root):
                continue
            key = os.path.normpath(raw)
            if key not in seen:
                seen.add(key)
                files.append(raw)
            continue
        for found in _walk(path, excludes, root):
            key = os.path.normpath(found)
            if key not in seen:
                seen.add(key)
                files.append(found)
    return files, errors


def _walk(top: Path, excludes: Sequence[str], root: Path) -> Iterator[str]:
    ignores: List[GitIgnore] = []
    # .gitignore files of the parents up to the repository root apply too.
    for parent in reversed(top.resolve().parents):
        ignore = _load_gitignore(parent)
        if ignore is not None:
            ignores.append(ignore)
        if (parent / ".git").exists():
            ignores = [i for i in ignores if i.base == parent or parent in i.base.parents]

    def ignored(path: Path, is_dir: bool) -> bool:
        result = False
        resolved = path.resolve()
        for ignore in ignores:
            decision = ignore.decision(resolved, is_dir)
            if decision is not None:
                result = decision
        return result

    def walk(directory: Path) -> Iterator[str]:
        ignore = _load_gitignore(directory)
        if ignore is not None:
            ignores.append(ignore)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            child = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_excluded(child, excludes, root) or ignored(child, is_dir):
                continue
            if is_dir:
                yield from walk(child)
            elif entry.name.endswith(PYTHON_SUFFIXES) and entry.is_file():
                yield os.path.normpath(entry.path)
        if ignore is not None:
            ignores.remove(ignore)

    if not is_excluded(top, excludes, root) or top.resolve() == root.resolve():
        yield from walk(top)
