"""``json`` (an indented array) and ``json-lines`` (one compact object per line), ruff's keys."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from amp_lint.findings import Finding, Location


def _location(loc: Location) -> Dict[str, int]:
    return {"row": loc.row, "column": loc.column}


def absolute_filename(filename: str) -> str:
    """The absolute path, as ruff writes ``filename`` in JSON (stdin, ``-``, stays ``-``)."""
    return filename if filename == "-" else os.path.abspath(filename)


def to_dict(finding: Finding) -> Dict[str, Any]:
    """One finding as ruff's JSON object plus amp-lint's extra keys."""
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message,
            "edits": [
                {
                    "content": edit.content,
                    "location": _location(edit.location),
                    "end_location": _location(edit.end_location),
                }
                for edit in finding.fix.edits
            ],
        }
    return {
        "cell": finding.cell,
        "code": finding.code,
        "message": finding.message,
        "filename": absolute_filename(finding.filename),
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": fix,
        "noqa_row": finding.noqa_row if finding.noqa_row is not None else finding.location.row,
        "url": finding.url,
        "name": finding.name,
        "severity": finding.severity.value,
        "precision_context": finding.precision_context,
        "confidence": finding.confidence,
        "evidence": [
            {"filename": absolute_filename(step.filename), "cell": step.cell, "row": step.row, "message": step.message}
            for step in finding.related
        ],
    }


def render_json(findings: List[Finding]) -> str:
    """A JSON array, indent 2, keys sorted as ruff's serde output is."""
    data = [to_dict(f) for f in findings]
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_json_lines(findings: List[Finding]) -> str:
    """One compact JSON object per finding per line."""
    return "".join(
        json.dumps(to_dict(f), sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        for f in findings
    )
