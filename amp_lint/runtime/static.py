"""The runtime commands' only door into the static analysis.

Both functions go through :mod:`amp_lint.runner` (``Selection.from_settings``, ``RunOptions``,
``run``) and read nothing of a report but its stable surface: the file, and per finding its
``(row, code)``, message and confidence; or the fixed text. The analysis behind them may change
freely.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from amp_lint.config import load_settings, with_cli_selection
from amp_lint.runner import RunOptions, Selection, run


@dataclass(frozen=True)
class StaticFinding:
    """One ``check`` finding, keyed as the runtime cross-reference needs it."""

    path: str
    line: int
    code: str
    message: str
    low_confidence: bool = False


def static_findings(paths: Sequence[str], codes: Iterable[str], start: Optional[Path] = None) -> List[StaticFinding]:
    """``check``'s findings of ``codes`` in ``paths`` (low-confidence ones included and marked).

    The configuration is the one ``check`` would load from ``start``, with ``codes`` selected on
    top of it, so a configured ``ignore`` does not turn a real hazard into a "runtime only" one.
    """
    codes = tuple(codes)
    settings, _ = load_settings(None, False, start or Path.cwd())
    settings = dataclasses.replace(with_cli_selection(settings, extend_select=codes), preview=True)
    reports = run(list(paths), Selection.from_settings(settings), RunOptions(cache=False))
    return [
        StaticFinding(report.path, f.location.row, f.code, f.message, f.confidence != "high")
        for report in reports
        for f in report.findings
        if f.code in codes
    ]


def rewrite(paths: Sequence[str], start: Optional[Path] = None) -> Tuple[Dict[str, bytes], int, List[str]]:
    """What ``amp-lint fix --unsafe-fixes`` would write: ({path: new bytes}, fixes applied, errors).

    Nothing is written; files the fix leaves unchanged are not in the mapping. The migration of
    fp32 loops (AMP001, off by default in ``check``) is selected on top of the configuration: a
    migration is what ``verify`` proves.
    """
    settings, _ = load_settings(None, False, start or Path.cwd())
    settings = dataclasses.replace(with_cli_selection(settings, extend_select=("AMP001",)), unsafe_fixes=True)
    reports = run(list(paths), Selection.from_settings(settings),
                  RunOptions(fix=True, diff=True, cache=False))
    changed: Dict[str, bytes] = {}
    errors: List[str] = []
    fixed = 0
    for report in reports:
        if report.error is not None:
            errors.append(f"{report.path}: {report.error}")
            continue
        fixed += report.fixed
        if report.new_text is not None and report.source is not None:
            changed[report.path] = report.source.encode(report.new_text)
    return changed, fixed, errors
