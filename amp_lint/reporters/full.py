"""``full``: the concise header, then the source line with a caret underline and the help."""
from __future__ import annotations

import unicodedata
from typing import List

from amp_lint.findings import Finding
from amp_lint.reporters.concise import cell_prefix, fix_lines, header, one_line

TAB_WIDTH = 4


def _width(char: str) -> int:
    """Terminal cells taken by one character (tabs are expanded before this)."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _snippet(finding: Finding) -> List[str]:
    """The source line and a caret line under columns [column, end column), or [] if no source."""
    if finding.source_line is None:
        return []
    line = finding.source_line.rstrip("\r\n")
    start = max(finding.location.column, 1)
    if finding.end_location.row == finding.location.row:
        end = finding.end_location.column
    else:
        end = len(line) + 1  # spans lines: underline to the end of this one
    shown, before, under = "", 0, 0
    for index, char in enumerate(line, start=1):
        text = " " * TAB_WIDTH if char == "\t" else char
        cells = sum(_width(c) for c in text)
        shown += text
        if index < start:
            before += cells
        elif index < end:
            under += cells
    gutter = str(finding.location.row)
    pad = " " * len(gutter)
    carets = " " * before + "^" * max(under, 1)
    return [f"{pad} |", f"{gutter} | {shown}", f"{pad} | {carets} {finding.code}", f"{pad} |"]


def render(findings: List[Finding], *, unsafe_fixes: bool, show_fixes: bool) -> str:
    """Render sorted findings in the full format, a blank line between findings."""
    blocks: List[str] = []
    for finding in findings:
        lines = [header(finding, unsafe_fixes)]
        lines += _snippet(finding)
        pad = " " * len(str(finding.location.row))
        for index, step in enumerate(finding.related):
            lead = "because" if index == 0 else "  then"
            lines.append(f"{pad} = {lead}: {step.filename}:{cell_prefix(step.cell)}{step.row}: {one_line(step.message)}")
        if finding.fix_title:
            lines.append(f"{pad} = help: {one_line(finding.fix_title)}")
        if show_fixes:
            lines += fix_lines(finding, indent=pad + " ")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
