"""Run check/fix over many files: read, select rules per file, lint or fix, write back safely."""
from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple, Type

from amp_lint.cache import Cache, content_digest
from amp_lint.config import Settings, enabled_codes, ignored_for_path
from amp_lint.engine.linter import SYNTAX_ERROR_CODE, FileReport, findings_of, fix_loop, lint_text
from amp_lint.rules import ALL_RULES, RESERVED_CODES
from amp_lint.rules.base import Rule
from amp_lint.source import SourceError, SourceFile, decode_source, write_atomic


@dataclass
class RunOptions:
    """What the CLI asked for beyond the settings."""

    fix: bool = False
    diff: bool = False
    want_edits: bool = False
    #: Worker processes (None: all cores). Runs with few files to analyse stay in-process.
    jobs: Optional[int] = 1
    #: Read and write ``.amp_lint_cache/`` at the project root.
    cache: bool = False
    #: Draw a progress bar on stderr (only if it is a terminal and the run is large).
    progress: bool = False
    #: Cross-file contexts for the files being fixed (set by :func:`run` between its phases).
    project: Any = None

    @property
    def keep_source(self) -> bool:
        """Reports keep their source text only when a diff or the fixed text needs it."""
        return self.fix or self.diff


@dataclass
class Selection:
    """The enabled rule classes, and per-file ignores applied on top."""

    settings: Settings
    rules: List[Type[Rule]] = field(default_factory=list)
    syntax_errors: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> "Selection":
        known = {SYNTAX_ERROR_CODE: True}
        known.update({rule.code: rule.default_enabled for rule in ALL_RULES})
        codes = set(enabled_codes(known, settings.select, settings.extend_select, settings.ignore, RESERVED_CODES))
        rules = [r for r in ALL_RULES if r.code in codes and (settings.preview or not r.preview)]
        return cls(settings, rules, SYNTAX_ERROR_CODE in codes)

    def for_path(self, relpath: str) -> "tuple[List[Type[Rule]], bool]":
        ignored = ignored_for_path(self.settings, relpath)
        if not ignored:
            return self.rules, self.syntax_errors
        known = {SYNTAX_ERROR_CODE: True}
        known.update({rule.code: True for rule in ALL_RULES})
        off = set(enabled_codes(known, ["ALL"], [], [], RESERVED_CODES)) - set(
            enabled_codes(known, ["ALL"], [], ignored, RESERVED_CODES)
        )
        return [r for r in self.rules if r.code not in off], self.syntax_errors and SYNTAX_ERROR_CODE not in off


def relative_to_root(path: str, root: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def process_source(source: SourceFile, selection: Selection, options: RunOptions) -> FileReport:
    """Check (and fix, if asked) one decoded source; writes nothing."""
    settings = selection.settings
    rules, syntax = selection.for_path(relative_to_root(source.path, settings.project_root))
    report = FileReport(path=source.path, source=source)
    text = source.text
    if options.fix or options.diff:
        result = fix_loop(source.path, text, settings, rules, project=options.project)
        report.fixed = result.fixed
        if result.text != text:
            report.new_text = text = result.text
        if result.final is not None:  # the loop already linted the final text
            report.findings = findings_of(*result.final, settings, options.want_edits)
            return report
    report.findings = lint_text(source.path, text, settings, rules, syntax_check=syntax,
                                want_edits=options.want_edits, project=options.project)
    return report


def process_path(path: str, selection: Selection, options: RunOptions) -> FileReport:
    """Read, check/fix and (for ``fix`` without ``--diff``) atomically write one file."""
    return _process_path(path, selection, options)[0]


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None


def _process_path(path: str, selection: Selection, options: RunOptions) -> Tuple[FileReport, Optional[str]]:
    """(report, digest of the bytes the report was computed from; None if unreadable)."""
    try:
        data = _read_bytes(path)
    except SourceError as exc:
        return FileReport(path=path, error=str(exc)), None
    digest = content_digest(data) if options.cache else None
    try:
        source = decode_source(path, data)
    except SourceError as exc:
        return FileReport(path=path, error=str(exc)), digest
    report = process_source(source, selection, options)
    if report.new_text is not None and options.fix and not options.diff:
        try:
            write_atomic(path, source.encode(report.new_text))
        except OSError as exc:
            report.error = f"cannot write fixed file: {exc.strerror or exc}"
    if not options.keep_source:
        report.source = None
    return report, digest


def process_stdin(data: bytes, filename: str, selection: Selection, options: RunOptions) -> FileReport:
    try:
        source = decode_source(filename, data)
    except SourceError as exc:
        return FileReport(path=filename, error=str(exc))
    return process_source(source, selection, options)


# -- many files: cache, worker processes, progress ----------------------------------------------

#: Fewer files than this to analyse (after cache hits) run in-process: starting workers costs more.
MIN_PARALLEL_FILES = 8
#: Analyse at least this many files per worker, so tiny runs use fewer workers.
FILES_PER_WORKER = 4
#: Draw a progress bar only for runs with at least this many files to analyse.
PROGRESS_MIN_FILES = 100


def default_jobs() -> int:
    """All cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _options_key(options: RunOptions) -> str:
    # fix/diff are not part of the key: only check results are stored, and a fix run reuses
    # one only when it holds nothing that fix would change (see _usable_for).
    return f"want_edits={bool(options.want_edits)}"


def _usable_for(report: FileReport, options: RunOptions, settings: Settings) -> bool:
    """Whether a cached check result is exactly what this run would compute."""
    if not isinstance(report, FileReport) or report.error is not None:
        return False
    if options.fix or options.diff:
        # fix_loop applies only findings that are fixable here; with none, fix is a no-op
        # and the report equals the check report.
        return not any(f.fixable(settings.unsafe_fixes) for f in report.findings)
    return True


def _cacheable(report: FileReport) -> bool:
    return report.error is None and report.new_text is None and report.fixed == 0


class Progress:
    """A one-line progress bar on a terminal stream, redrawn at most ten times a second."""

    def __init__(self, total: int, stream: TextIO, label: str = "amp-lint") -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        self.label = label
        self._last = 0.0
        self._drawn = False

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        line = f"\r{self.label}: [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files"
        try:
            self.stream.write(line)
            self.stream.flush()
            self._drawn = True
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        if self._drawn:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass


def _make_progress(options: RunOptions, total: int) -> Optional[Progress]:
    if not options.progress or total < PROGRESS_MIN_FILES or os.environ.get("TERM") == "dumb":
        return None
    stream = sys.stderr
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return Progress(total, stream)


# Worker processes get the selection and options once, then only paths.
_WORKER_STATE: Optional[Tuple[Selection, RunOptions]] = None


def _init_worker(selection: Selection, options: RunOptions) -> None:
    global _WORKER_STATE
    _WORKER_STATE = (selection, options)


def _work(path: str) -> Tuple[FileReport, Optional[str]]:
    assert _WORKER_STATE is not None
    selection, options = _WORKER_STATE
    return _process_path(path, selection, options)


def _mp_context():
    import multiprocessing

    # fork starts workers in milliseconds with everything imported; elsewhere use the default.
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _analyse(paths: Sequence[str], selection: Selection, options: RunOptions, jobs: int,
             done: Callable[[int, FileReport, Optional[str]], None]) -> None:
    """Analyse ``paths``, calling ``done(index, report, digest)`` for each (in any order)."""
    workers = min(jobs, max(1, len(paths) // FILES_PER_WORKER))
    if workers <= 1 or len(paths) < MIN_PARALLEL_FILES:
        for index, path in enumerate(paths):
            done(index, *_process_path(path, selection, options))
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    def size(index: int) -> int:
        try:
            return os.path.getsize(paths[index])
        except OSError:
            return 0

    # Largest files first, one file per task: the pool stays balanced to the end.
    order = sorted(range(len(paths)), key=size, reverse=True)
    remaining = set(order)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(), initializer=_init_worker,
                                 initargs=(selection, options)) as pool:
            futures = {pool.submit(_work, paths[index]): index for index in order}
            try:
                for future in as_completed(futures):
                    index = futures[future]
                    report, digest = future.result()
                    remaining.discard(index)
                    done(index, report, digest)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    except BrokenProcessPool:
        # A worker died (killed, out of memory): finish what is left in this process.
        for index in sorted(remaining):
            done(index, *_process_path(paths[index], selection, options))


def _entry_key(path: str, root: str) -> Tuple[str, str]:
    return relative_to_root(path, root), path


def run(paths: Sequence[str], selection: Selection, options: RunOptions) -> List[FileReport]:
    """Reports for ``paths`` in order, with the project's cross-file findings resolved.

    ``fix``/``--diff`` run in two phases: a check of every file (cached) gives the cross-file
    contexts; then only the files with something fixable are fixed, each seeing those contexts,
    so a hazard in ``model.py`` that ``train.py``'s ``.half()`` causes is fixed too.
    """
    if not (options.fix or options.diff) or options.project is not None:
        return resolve_project(_run_files(paths, selection, options), selection.settings)
    from amp_lint.analysis.project import project_context

    settings = selection.settings
    checked = run(paths, selection, dataclasses.replace(options, fix=False, diff=False))
    wanted = [
        i for i, report in enumerate(checked)
        if report.error is None and any(f.fixable(settings.unsafe_fixes) for f in report.findings)
    ]
    if not wanted:
        return checked
    context = project_context(checked, settings.project_root)
    fixing = dataclasses.replace(options, project=context, cache=False)
    for i, report in zip(wanted, _run_files([paths[i] for i in wanted], selection, fixing)):
        checked[i] = report
    return checked


def _run_files(paths: Sequence[str], selection: Selection, options: RunOptions) -> List[FileReport]:
    """Reports for ``paths`` in order: cached where the file and configuration are unchanged,
    the rest analysed in ``options.jobs`` worker processes (or in-process for small runs)."""
    settings = selection.settings
    reports: List[Optional[FileReport]] = [None] * len(paths)
    cache: Optional[Cache] = None
    keys: Dict[int, Tuple[str, str]] = {}
    todo: List[int] = list(range(len(paths)))
    if options.cache and paths:
        cache = Cache(settings.project_root, settings, _options_key(options))
        todo = []
        for index, path in enumerate(paths):
            keys[index] = key = _entry_key(path, settings.project_root)
            try:
                data = _read_bytes(path)
            except SourceError:
                todo.append(index)
                continue
            hit = cache.get(key, content_digest(data))
            if hit is not None and _usable_for(hit, options, settings):
                reports[index] = dataclasses.replace(hit, path=path)
            else:
                todo.append(index)

    progress = _make_progress(options, len(todo))
    todo_paths = [paths[index] for index in todo]

    def done(position: int, report: FileReport, digest: Optional[str]) -> None:
        index = todo[position]
        reports[index] = report
        if cache is not None and digest is not None and _cacheable(report):
            cache.put(keys[index], digest, dataclasses.replace(report, source=None))
        if progress is not None:
            progress.advance()

    try:
        _analyse(todo_paths, selection, options, options.jobs or default_jobs(), done)
    finally:
        if progress is not None:
            progress.close()
    if cache is not None:
        cache.save(present=keys.values())
    return [r for r in reports if r is not None]


# -- project phase: cross-file precision contexts (amp_lint/analysis/project.py) ----------------
def resolve_project(reports: List[FileReport], settings: Settings) -> List[FileReport]:
    """After every file was analysed: turn conditional findings (a hazard in a class that
    another file casts to half or calls under autocast) into findings, from per-file summaries."""
    from amp_lint.analysis.project import resolve_project as resolve

    return resolve(reports, settings.project_root, settings.preview)


def unified_diff(report: FileReport) -> str:
    if report.new_text is None or report.source is None:
        return ""
    return "".join(
        difflib.unified_diff(
            report.source.text.splitlines(keepends=True),
            report.new_text.splitlines(keepends=True),
            fromfile="a/" + report.path.lstrip("/"),
            tofile="b/" + report.path.lstrip("/"),
        )
    )
