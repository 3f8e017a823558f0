"""Lint and fix one file: parse once, walk once, turn raw findings into reported ones.

The fix loop applies non-overlapping fixes, re-parses and re-lints until nothing more is
fixable (capped), and never returns text that does not parse.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

import libcst as cst

from amp_lint.config import Settings
from amp_lint.engine.context import FileContext, RawFinding
from amp_lint.engine.fixes import apply_fixes, choose_compatible, text_edit
from amp_lint.engine.names import NameCollector
from amp_lint.engine.noqa import Suppressions, parse_suppressions
from amp_lint.engine.walker import walk
from amp_lint.findings import Applicability, Finding, Fix, Location, Severity
from amp_lint.source import SourceFile

MAX_FIX_PASSES = 10
SYNTAX_ERROR_CODE = "AMP000"
SYNTAX_ERROR_NAME = "syntax-error"


class Findings(list):
    """A file's findings, plus ``summary``: the per-file facts the project phase needs (classes,
    imports, casts of imported classes, and conditional findings; see analysis/project.py)."""

    summary: Optional[dict] = None


@dataclass
class FileReport:
    """The outcome for one file."""

    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    fixed: int = 0
    new_text: Optional[str] = None
    source: Optional[SourceFile] = None


def active_rules(text: str, rules: Sequence[type]) -> List[type]:
    """The prefilter: rules whose declared tokens occur in the text (no tokens: always)."""
    return [r for r in rules if not r.tokens or any(tok in text for tok in r.tokens)]


def analyses_for(rules: Sequence[type]) -> List[type]:
    """Analysis participants the rules need, in dependency order."""
    from amp_lint.analysis import ANALYSES

    needed = set()
    for rule in rules:
        needed.update(getattr(rule, "requires", ()))
    return [a for a in ANALYSES if a.key in needed]


def run_rules(path: str, text: str, module: cst.Module, settings: Settings, rules: Sequence[type],
              project: Any = None) -> FileContext:
    """One traversal of ``module`` with the name table, the needed analyses, then the rules."""
    ctx = FileContext(path, text, module, settings, project)
    collector = NameCollector(ctx.names)
    collector.prepass(module)
    participants: List[object] = [collector]
    for analysis in analyses_for(rules):
        participant = analysis(ctx)
        ctx.analyses[analysis.key] = participant
        participants.append(participant)
    participants.extend(rule(ctx) for rule in rules)
    walk(module, participants, ctx.stack)
    for participant in participants:
        finish = getattr(participant, "finish", None)
        if finish is not None:
            finish()
    return ctx


def syntax_error_finding(path: str, text: str, exc: Exception) -> Finding:
    """AMP000 at the parse error; Python's own parser gives the exact position and message."""
    if not isinstance(exc, SyntaxError):
        try:
            ast.parse(text, filename=path)
        except SyntaxError as precise:
            exc = precise
        except (ValueError, RecursionError, MemoryError):
            pass
    if isinstance(exc, cst.ParserSyntaxError):
        row, col = exc.raw_line, exc.raw_column + 1
        message = exc.message.splitlines()[0] if exc.message else "invalid syntax"
    elif isinstance(exc, SyntaxError):
        row, col = exc.lineno or 1, exc.offset or 1
        message = exc.msg
    else:  # pragma: no cover - defensive
        row, col, message = 1, 1, str(exc).splitlines()[0]
    lines = text.splitlines()
    row = max(1, min(row, len(lines) or 1))
    line = lines[row - 1] if lines else ""
    loc = Location(row, max(1, col))
    return Finding(SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, Severity.ERROR, f"SyntaxError: {message}", path,
                   loc, loc, noqa_row=None, source_line=line)


def parse(text: str) -> cst.Module:
    return cst.parse_module(text)


def to_findings(ctx: FileContext, raws: Sequence[RawFinding], suppressions: Suppressions,
                unsafe_fixes: bool, want_edits: bool) -> List[Finding]:
    """Positions, suppressions and (when wanted) text edits for the raw findings."""
    out: List[Finding] = []
    lines: Optional[List[str]] = None
    for raw in raws:
        rule = raw.rule
        rng = ctx.position(raw.node)
        row = rng.start.line
        if suppressions.suppresses(rule.code, row):
            continue
        if lines is None:
            lines = ctx.text.splitlines()
        fix = None
        applicability = raw.fix.applicability if raw.fix else None
        if raw.fix is not None and want_edits:
            edit = text_edit(ctx.text, apply_fixes(ctx.module, [raw.fix]))
            fix = Fix(raw.fix.applicability, raw.fix.title, (edit,) if edit else ())
        out.append(
            Finding(
                code=rule.code,
                name=rule.name,
                severity=rule.severity,
                message=raw.message,
                filename=ctx.path,
                location=Location(row, rng.start.column + 1),
                end_location=Location(rng.end.line, rng.end.column + 1),
                fix_applicability=applicability,
                fix_title=raw.fix_title,
                fix=fix,
                precision_context=raw.precision_context,
                confidence=raw.confidence,
                noqa_row=row,
                source_line=lines[row - 1] if row - 1 < len(lines) else "",
            )
        )
    return out


def _reportable(raws: Sequence[RawFinding], settings: Settings) -> List[RawFinding]:
    """Low-confidence findings are only reported in preview mode; conditional ones (which hold
    only if another file casts a class of this one) wait for the project phase."""
    return [r for r in raws if (settings.preview or r.confidence != "low") and getattr(r, "condition", None) is None]


def lint_text(path: str, text: str, settings: Settings, rules: Sequence[type], *,
              syntax_check: bool = True, want_edits: bool = False, project: Any = None) -> List[Finding]:
    """All findings of ``text`` (a syntax error is one AMP000 finding)."""
    suppressions = parse_suppressions(text)
    if suppressions.file_all:
        return []
    rules = active_rules(text, rules)
    if not rules:
        if syntax_check:
            try:
                ast.parse(text, filename=path)
            except SyntaxError as exc:
                return [syntax_error_finding(path, text, exc)]
            except ValueError as exc:  # e.g. NUL bytes in source
                return [syntax_error_finding(path, text, SyntaxError(str(exc)))]
        return []
    try:
        module = parse(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError) as exc:
        return [syntax_error_finding(path, text, exc)] if syntax_check else []
    ctx = run_rules(path, text, module, settings, rules, project)
    return findings_of(ctx, suppressions, settings, want_edits)


def findings_of(ctx: FileContext, suppressions: Suppressions, settings: Settings, want_edits: bool) -> "Findings":
    """The reported findings of a linted file, with its summary for the project phase."""
    out = Findings(to_findings(ctx, _reportable(ctx.findings, settings), suppressions, settings.unsafe_fixes,
                               want_edits))
    precision = ctx.analyses.get("precision")
    if precision is not None:  # per-file facts and conditional findings for the project phase
        conditional = [r for r in ctx.findings if getattr(r, "condition", None) is not None]
        out.summary = dict(precision.summary, conditional=list(zip(
            to_findings(ctx, conditional, suppressions, settings.unsafe_fixes, want_edits),
            [r.condition for r in conditional if not suppressions.suppresses(r.rule.code, ctx.position(r.node).start.line)])))
    return out


def fix_text(path: str, text: str, settings: Settings, rules: Sequence[type], *,
             project: Any = None) -> "tuple[str, int]":
    """(new text, number of fixes applied). Only text that re-parses is ever returned."""
    result = fix_loop(path, text, settings, rules, project=project)
    return result.text, result.fixed


@dataclass
class FixResult:
    """The fixed text, how many fixes were applied, and (when the loop linted the final text
    itself) that lint, so the caller need not parse and lint the result once more."""

    text: str
    fixed: int
    final: Optional["tuple[FileContext, Suppressions]"] = None


def fix_loop(path: str, text: str, settings: Settings, rules: Sequence[type], *,
             project: Any = None) -> FixResult:
    """Apply non-overlapping fixes, re-parse and re-lint to a fixpoint (capped at MAX_FIX_PASSES);
    every pass parses its text once, and the text that would be written always parses."""
    fixed = 0
    rules = list(rules)
    module: Optional[cst.Module] = None  # the parse of ``text`` when already known
    final = None
    for _ in range(MAX_FIX_PASSES):
        final = None
        suppressions = parse_suppressions(text)
        if suppressions.file_all:
            break
        active = active_rules(text, rules)
        if not active:
            break
        if module is None:
            try:
                module = parse(text)
            except (cst.ParserSyntaxError, RecursionError, ValueError):
                break
        ctx = run_rules(path, text, module, settings, active, project)
        final = (ctx, suppressions)
        candidates = [
            raw for raw in _reportable(ctx.findings, settings)
            if raw.fix is not None
            and (raw.fix.applicability is Applicability.SAFE or settings.unsafe_fixes)
            and not suppressions.suppresses(raw.rule.code, ctx.position(raw.node).start.line)
        ]
        if not candidates:
            break
        chosen = choose_compatible([raw.fix for raw in candidates])
        new_text = apply_fixes(module, chosen)
        if new_text == text:
            break
        try:
            new_module = parse(new_text)
            compile(new_text, path, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        except (cst.ParserSyntaxError, SyntaxError, RecursionError, ValueError):
            break
        text, module, final = new_text, new_module, None
        fixed += len(chosen)
    return FixResult(text, fixed, final)
