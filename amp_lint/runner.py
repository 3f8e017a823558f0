"""Run check/fix over many files as one program: read, parse, analyse once, check or fix, write back.

The precision analysis needs the whole program (a cast in ``train.py`` makes ``model.py`` half),
so every file given is parsed and analysed together; reports then come per file. ``fix`` runs in
project-wide rounds (:func:`amp_lint.engine.linter.fix_files`).

The cache (``.amp_lint_cache/``) keeps each file's report, keyed by a digest of every file of the
run (paths and bytes) and the configuration: an unchanged tree is answered from the cache, and any
change re-analyses the program. (Parses are not cached: unpickling an ``ast`` costs more than
parsing the file again; for the same reason there are no worker processes.)
"""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import gc
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Type

from amp_lint.cache import Cache, content_digest
from amp_lint.config import Settings, enabled_codes, ignored_for_path
from amp_lint.engine.linter import (
    MAX_FIX_ROUNDS, SYNTAX_ERROR_CODE, FileReport, ParsedFile, fix_files, lint_files,
)
from amp_lint.rules import ALL_RULES, RESERVED_CODES
from amp_lint.rules.base import Rule
from amp_lint.source import SourceError, SourceFile, decode_source, write_atomic


@dataclass
class RunOptions:
    """What the CLI asked for beyond the settings."""

    fix: bool = False
    diff: bool = False
    want_edits: bool = False
    #: Read and write ``.amp_lint_cache/`` at the project root.
    cache: bool = False

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
        return Path(path).as_posix().lstrip("/")


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None


@dataclass
class _Input:
    """One file of the run: its report (errors go there), decoded source and parse."""

    report: FileReport
    source: Optional[SourceFile] = None
    parsed: Optional[ParsedFile] = None
    digest: Optional[str] = None


def _parse(source: SourceFile, relpath: str, selection: Selection) -> ParsedFile:
    rules, syntax = selection.for_path(relpath)
    return ParsedFile.parse(source.path, relpath, source.text, rules, syntax)


def run(paths: Sequence[str], selection: Selection, options: RunOptions) -> List[FileReport]:
    """Reports for ``paths`` in order, the files analysed as one program."""
    settings = selection.settings
    root = settings.project_root
    cache = Cache(root, settings, _options_key(options)) if options.cache and paths else None
    inputs: List[_Input] = []
    for path in paths:
        item = _Input(FileReport(path=path))
        inputs.append(item)
        try:
            data = _read_bytes(path)
            item.digest = content_digest(data)
            item.source = decode_source(path, data)
        except SourceError as exc:
            item.report.error = str(exc)
    project = _project_digest(inputs, root)
    if cache is not None:
        cached = [cache.get((relative_to_root(i.report.path, root), "report"), project) for i in inputs]
        # a fix with nothing fixable is a check: the cached reports answer it too
        if all(isinstance(c, FileReport) for c in cached) and not (
                (options.fix or options.diff) and any(f.fixable(settings.unsafe_fixes)
                                                      for c in cached for f in c.findings)):  # type: ignore
            out = [dataclasses.replace(c, path=i.report.path) for c, i in zip(cached, inputs)]  # type: ignore
            if options.keep_source:
                for report, item in zip(out, inputs):
                    report.source = item.source
            return out
    with _fewer_collections():
        return _analyse_and_report(inputs, selection, options, cache, project)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """No cyclic garbage collection during a run. The analysis allocates millions of short-lived
    values while the syntax trees and recorded values of the whole program stay alive, and each
    collection re-scans them: on microsoft/LoRA (815 files) collections took a third of the CPU time
    even with the parsed trees frozen and a 50,000-allocation threshold (user 27-30 s, 18-19 s
    with collection off; peak memory 736 MB and 784 MB). What the run allocates is nearly all
    acyclic and freed by reference counting; the collector runs again when the run ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _analyse_and_report(inputs: List["_Input"], selection: Selection, options: RunOptions,
                        cache: Optional[Cache], project: str) -> List[FileReport]:
    settings = selection.settings
    root = settings.project_root
    for item in inputs:
        if item.source is not None:
            item.parsed = _parse(item.source, relative_to_root(item.source.path, root), selection)
    live = [i for i in inputs if i.parsed is not None]
    parsed = [i.parsed for i in live]
    errors: List[Tuple[str, int, str]] = []
    if options.fix or options.diff:
        outcome = fix_files(parsed, settings, options.want_edits)  # type: ignore[arg-type]
        for item, text, fixed, findings in zip(live, outcome.texts, outcome.fixed, outcome.findings):
            item.report.findings = findings
            item.report.fixed = fixed
            assert item.source is not None
            if text != item.source.text:
                item.report.new_text = text
                if not options.diff:
                    try:
                        write_atomic(item.source.path, item.source.encode(text))
                    except OSError as exc:
                        item.report.error = f"cannot write fixed file: {exc.strerror or exc}"
        errors.extend(outcome.errors)
        if not outcome.converged:
            for item in live:
                if item.report.fixed:
                    item.report.warning = (f"fixes did not converge in {MAX_FIX_ROUNDS} rounds; "
                                           "run `amp-lint fix` again")
    else:
        for item, findings in zip(live, lint_files(parsed, settings, options.want_edits, errors)):  # type: ignore
            item.report.findings = findings
    by_relpath = {i.parsed.relpath: i for i in live if i.parsed is not None}
    for relpath, line, description in errors:
        item = by_relpath.get(relpath)
        if item is not None and item.report.warning is None:
            where = f" (line {line})" if line else ""
            item.report.warning = (f"internal error in the analysis{where}, its code was left unanalysed: "
                                   f"{description}; please report it")
    for item in inputs:
        if options.keep_source:
            item.report.source = item.source
    if cache is not None:
        if not (options.fix or options.diff):
            for item in inputs:
                if item.report.error is None:
                    cache.put((relative_to_root(item.report.path, root), "report"), project,
                              dataclasses.replace(item.report, source=None))
        cache.save(present=[(relative_to_root(i.report.path, root), "report") for i in inputs])
    return [i.report for i in inputs]


def _options_key(options: RunOptions) -> str:
    return f"want_edits={bool(options.want_edits)}"


def _project_digest(inputs: Sequence[_Input], root: str) -> str:
    """A digest of every file of the run (path and bytes): any change invalidates every report."""
    digest = hashlib.blake2b(digest_size=16)
    for item in inputs:
        digest.update(relative_to_root(item.report.path, root).encode() + b"\0" + (item.digest or "-").encode()
                      + b"\0")
    return digest.hexdigest()


def process_source(source: SourceFile, selection: Selection, options: RunOptions) -> FileReport:
    """Check (and fix, if asked) one decoded source on its own; writes nothing."""
    settings = selection.settings
    relpath = relative_to_root(source.path, settings.project_root)
    rules, syntax = selection.for_path(relpath)
    parsed = ParsedFile.parse(source.path, relpath, source.text, rules, syntax)
    report = FileReport(path=source.path, source=source)
    if options.fix or options.diff:
        outcome = fix_files([parsed], settings, options.want_edits)
        report.findings, report.fixed = outcome.findings[0], outcome.fixed[0]
        if outcome.texts[0] != source.text:
            report.new_text = outcome.texts[0]
    else:
        report.findings = lint_files([parsed], settings, options.want_edits)[0]
    return report


def process_path(path: str, selection: Selection, options: RunOptions) -> FileReport:
    """Read, check/fix and (for ``fix`` without ``--diff``) atomically write one file."""
    return run([path], selection, options)[0]


def process_stdin(data: bytes, filename: str, selection: Selection, options: RunOptions) -> FileReport:
    try:
        source = decode_source(filename, data)
    except SourceError as exc:
        return FileReport(path=filename, error=str(exc))
    return process_source(source, selection, options)


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
