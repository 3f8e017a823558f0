"""Render findings in ruff's output formats; knows nothing of LibCST."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from amp_lint import OUTPUT_FORMATS as FORMATS
from amp_lint.findings import Finding
from amp_lint.reporters import concise, full, github, json_format, sarif, statistics


@dataclass
class RuleMeta:
    """What SARIF and statistics need to know about one rule."""

    code: str
    name: str
    severity: str
    summary: str
    url: str


def render(
    findings: List[Finding],
    fmt: str,
    *,
    unsafe_fixes: bool = False,
    show_fixes: bool = False,
    rules: Optional[Dict[str, RuleMeta]] = None,
    tool_version: str = "0.1.0",
    root: Optional[str] = None,
) -> str:
    """Render ``findings`` (in any order) as ``fmt``; the text ends with a newline unless empty.

    ``root`` is the project root: SARIF writes file locations relative to it (its base URI).
    """
    ordered = sorted(findings, key=Finding.sort_key)
    if fmt == "concise":
        return concise.render(ordered, unsafe_fixes=unsafe_fixes, show_fixes=show_fixes)
    if fmt == "full":
        return full.render(ordered, unsafe_fixes=unsafe_fixes, show_fixes=show_fixes)
    if fmt == "json":
        return json_format.render_json(ordered)
    if fmt == "json-lines":
        return json_format.render_json_lines(ordered)
    if fmt == "github":
        return github.render(ordered)
    if fmt == "sarif":
        return sarif.render(ordered, rules=rules, tool_version=tool_version, root=root)
    raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def render_statistics(findings: List[Finding], *, unsafe_fixes: bool = False, fmt: str = "concise") -> str:
    """Per-rule counts, as ``ruff --statistics``, in ``fmt`` (text, or JSON for json/json-lines)."""
    return statistics.render_statistics(findings, unsafe_fixes=unsafe_fixes, fmt=fmt)


def render_summary(
    findings_count: int, fixable_count: int, fixed_count: int = 0, *, unsafe_hidden: int = 0,
    fix_command: str = "amp-lint fix", not_checked: int = 0, skipped: int = 0,
) -> str:
    """The closing summary for stderr (``findings_count`` = findings still reported)."""
    return statistics.render_summary(
        findings_count, fixable_count, fixed_count, unsafe_hidden=unsafe_hidden, fix_command=fix_command,
        not_checked=not_checked, skipped=skipped,
    )


__all__ = ["FORMATS", "RuleMeta", "render", "render_statistics", "render_summary"]
