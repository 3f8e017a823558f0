"""Run check/fix over many files: read, select rules per file, lint or fix, write back safely."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Type

from amp_lint.config import Settings, enabled_codes, ignored_for_path
from amp_lint.engine.linter import SYNTAX_ERROR_CODE, FileReport, fix_text, lint_text
from amp_lint.rules import ALL_RULES, RESERVED_CODES
from amp_lint.rules.base import Rule
from amp_lint.source import SourceError, SourceFile, decode_source, read_source, write_atomic


@dataclass
class RunOptions:
    """What the CLI asked for beyond the settings."""

    fix: bool = False
    diff: bool = False
    want_edits: bool = False


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
        return cls(settings, [r for r in ALL_RULES if r.code in codes], SYNTAX_ERROR_CODE in codes)

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
        new_text, report.fixed = fix_text(source.path, text, settings, rules)
        if new_text != text:
            report.new_text = new_text
            text = new_text
    report.findings = lint_text(source.path, text, settings, rules, syntax_check=syntax,
                                want_edits=options.want_edits)
    return report


def process_path(path: str, selection: Selection, options: RunOptions) -> FileReport:
    """Read, check/fix and (for ``fix`` without ``--diff``) atomically write one file."""
    try:
        source = read_source(path)
    except SourceError as exc:
        return FileReport(path=path, error=str(exc))
    report = process_source(source, selection, options)
    if report.new_text is not None and options.fix and not options.diff:
        try:
            write_atomic(path, source.encode(report.new_text))
        except OSError as exc:
            report.error = f"cannot write fixed file: {exc.strerror or exc}"
    return report


def process_stdin(data: bytes, filename: str, selection: Selection, options: RunOptions) -> FileReport:
    try:
        source = decode_source(filename, data)
    except SourceError as exc:
        return FileReport(path=filename, error=str(exc))
    return process_source(source, selection, options)


def run(paths: Sequence[str], selection: Selection, options: RunOptions) -> List[FileReport]:
    return [process_path(path, selection, options) for path in paths]


def unified_diff(report: FileReport) -> str:
    if report.new_text is None or report.source is None:
        return ""
    return "".join(
        difflib.unified_diff(
            report.source.text.splitlines(keepends=True),
            report.new_text.splitlines(keepends=True),
            fromfile=f"a/{report.path}",
            tofile=f"b/{report.path}",
        )
    )
