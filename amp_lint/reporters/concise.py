"""``concise``: one line per finding, ``path:row:col: CODE [*] message``."""
from __future__ import annotations

from typing import List, Optional

from amp_lint.findings import Applicability, Edit, Finding


def one_line(text: str) -> str:
    """Escape line breaks so that a message stays on one output line."""
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")


def header(finding: Finding, unsafe_fixes: bool) -> str:
    """``path:row:col: CODE [*] message``; ``[*]`` only when the finding would be fixed."""
    marker = " [*]" if finding.fixable(unsafe_fixes) else ""
    loc = finding.location
    message = one_line(finding.message)
    return f"{finding.filename}:{cell_prefix(finding.cell)}{loc.row}:{loc.column}: {finding.code}{marker} {message}"


def cell_prefix(cell: Optional[int]) -> str:
    """``cell 7:`` before the row of a notebook location, else nothing."""
    return f"cell {cell}:" if cell is not None else ""


def _apply_on_line(line: str, row: int, edits: tuple[Edit, ...]) -> Optional[str]:
    """The line with ``edits`` applied, or None when an edit leaves the line."""
    for edit in edits:
        if not (edit.location.row == edit.end_location.row == row):
            return None
        if not 1 <= edit.location.column <= edit.end_location.column <= len(line) + 1:
            return None
    if "\n" in "".join(e.content for e in edits):
        return None
    for edit in sorted(edits, key=lambda e: e.location.column, reverse=True):
        start, end = edit.location.column - 1, edit.end_location.column - 1
        line = line[:start] + edit.content + line[end:]
    return line


def fix_lines(finding: Finding, indent: str = "  ") -> List[str]:
    """What ``--show-fixes`` prints under a finding: a one-line diff, else the edits listed."""
    fix = finding.fix
    if fix is None or not fix.edits:
        return []
    kind = "Safe" if fix.applicability is Applicability.SAFE else "Unsafe"
    out = [f"{indent}{kind} fix: {one_line(fix.message)}"]
    row = finding.location.row
    old = finding.source_line.rstrip("\r\n") if finding.source_line is not None else None
    new = _apply_on_line(old, row, fix.edits) if old is not None else None
    if old is not None and new is not None:
        out += [f"{indent}{row} - {old}", f"{indent}{row} + {new}"]
        return out
    for edit in fix.edits:
        start, end = edit.location, edit.end_location
        out.append(
            f"{indent}{start.row}:{start.column}-{end.row}:{end.column} -> {edit.content!r}"
        )
    return out


def render(findings: List[Finding], *, unsafe_fixes: bool, show_fixes: bool) -> str:
    """Render sorted findings in the concise format."""
    lines: List[str] = []
    for finding in findings:
        lines.append(header(finding, unsafe_fixes))
        if show_fixes:
            lines += fix_lines(finding)
    return "".join(line + "\n" for line in lines)
