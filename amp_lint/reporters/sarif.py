"""``sarif``: a SARIF 2.1.0 log with one run, for GitHub code scanning and other viewers."""
from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Dict, List, Optional
from urllib.parse import quote

from amp_lint.findings import Finding, Fix, Location

if TYPE_CHECKING:
    from amp_lint.reporters import RuleMeta

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/amp-lint/amp-lint"
LEVELS = {"error": "error", "warning": "warning", "perf": "note", "migration": "note"}


def artifact_uri(filename: str) -> str:
    """A relative path as a relative URI (``/``, percent-encoded); an absolute one as file://."""
    if PureWindowsPath(filename).is_absolute() and not PurePosixPath(filename).is_absolute():
        return PureWindowsPath(filename).as_uri()
    posix = filename.replace("\\", "/")
    if PurePosixPath(posix).is_absolute():
        return PurePosixPath(posix).as_uri()
    return quote(posix, safe="/!$&'()*+,;=@-._~")


def _region(start: Location, end: Location) -> Dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _fix(fix: Fix, uri: str) -> Dict[str, Any]:
    return {
        "description": {"text": fix.message},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri},
                "replacements": [
                    {
                        "deletedRegion": _region(edit.location, edit.end_location),
                        "insertedContent": {"text": edit.content},
                    }
                    for edit in fix.edits
                ],
            }
        ],
        "properties": {"applicability": fix.applicability.value},
    }


def _rule(code: str, first: Finding, meta: Optional[RuleMeta]) -> Dict[str, Any]:
    name = meta.name if meta else first.name
    severity = meta.severity if meta else first.severity.value
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": meta.summary if meta and meta.summary else name},
        "helpUri": meta.url if meta and meta.url else first.url,
        "defaultConfiguration": {"level": LEVELS.get(severity, "warning")},
    }


def _result(finding: Finding, rule_index: int) -> Dict[str, Any]:
    uri = artifact_uri(finding.filename)
    result: Dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity.value],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri},
                    "region": _region(finding.location, finding.end_location),
                }
            }
        ],
        "properties": {
            "name": finding.name,
            "severity": finding.severity.value,
            "precision_context": finding.precision_context,
            "confidence": finding.confidence,
        },
    }
    if finding.fix is not None and finding.fix.edits:
        result["fixes"] = [_fix(finding.fix, uri)]
    return result


def build(
    findings: List[Finding], *, rules: Optional[Dict[str, RuleMeta]], tool_version: str
) -> Dict[str, Any]:
    """The SARIF log as a dict; rules are those present in findings, sorted by code."""
    first: Dict[str, Finding] = {}
    for finding in findings:
        first.setdefault(finding.code, finding)
    codes = sorted(first)
    index = {code: i for i, code in enumerate(codes)}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "amp-lint",
                        "version": tool_version,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(c, first[c], (rules or {}).get(c)) for c in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, index[f.code]) for f in findings],
            }
        ],
    }


def render(
    findings: List[Finding], *, rules: Optional[Dict[str, RuleMeta]], tool_version: str
) -> str:
    """Render sorted findings as an indented SARIF document."""
    log = build(findings, rules=rules, tool_version=tool_version)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
