"""``github``: GitHub Actions workflow commands (annotations), one per finding."""
from __future__ import annotations

from typing import List

from amp_lint.findings import Finding
from amp_lint.reporters.concise import cell_prefix

#: GitHub's workflow command for each level of ``amp_lint.findings.LEVELS``.
COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value (also ``:`` and ``,``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _line(finding: Finding) -> str:
    command = COMMANDS[finding.severity.level]
    start, end = finding.location, finding.end_location
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (
            ("title", f"amp-lint ({finding.code})"),
            ("file", finding.filename),
            ("line", start.row),
            ("col", start.column),
            ("endLine", end.row),
            ("endColumn", end.column),
        )
    )
    data = f"{finding.filename}:{cell_prefix(finding.cell)}{start.row}:{start.column}: {finding.code} {finding.message}"
    return f"::{command} {props}::{escape_data(data)}"


def render(findings: List[Finding]) -> str:
    """Render sorted findings as workflow commands."""
    return "".join(_line(f) + "\n" for f in findings)
