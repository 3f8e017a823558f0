"""``sarif``: a SARIF 2.1.0 log with one run, for GitHub code scanning and other viewers."""
from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Dict, List, Optional
from urllib.parse import quote

from amp_lint.findings import LEVELS, Finding, Fix, Location, Severity

if TYPE_CHECKING:
    from amp_lint.reporters import RuleMeta

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/amp-lint/amp-lint"
#: The base id of artifact URIs relative to the project root (as GitHub code scanning expects).
SRCROOT = "%SRCROOT%"


def artifact_uri(filename: str) -> str:
    """A relative path as a relative URI (``/``, percent-encoded); an absolute one as file://."""
    if PureWindowsPath(filename).is_absolute() and not PurePosixPath(filename).is_absolute():
        return PureWindowsPath(filename).as_uri()
    posix = filename.replace("\\", "/")
    if PurePosixPath(posix).is_absolute():
        return PurePosixPath(posix).as_uri()
    return quote(posix, safe="/!$&'()*+,;=@-._~")


def root_uri(root: str) -> str:
    """The file:// URI of a directory, ending in ``/`` (SARIF requires it of a base URI)."""
    uri = Path(os.path.abspath(root)).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def artifact_location(filename: str, root: Optional[str]) -> Dict[str, str]:
    """``{"uri": ..., "uriBaseId": "%SRCROOT%"}`` for a file under ``root``, else an absolute URI.

    Without a root (or for stdin, ``-``) the filename is written as given.
    """
    if root is None or filename == "-":
        return {"uri": artifact_uri(filename)}
    path = os.path.abspath(filename)
    base = os.path.abspath(root)
    try:
        relative = os.path.relpath(path, base)
    except ValueError:  # another drive on Windows
        relative = os.pardir
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return {"uri": artifact_uri(path)}
    return {"uri": artifact_uri(relative), "uriBaseId": SRCROOT}


def _region(start: Location, end: Location) -> Dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _fix(fix: Fix, location: Dict[str, str]) -> Dict[str, Any]:
    return {
        "description": {"text": fix.message},
        "artifactChanges": [
            {
                "artifactLocation": dict(location),
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
        "defaultConfiguration": {"level": LEVELS[Severity(severity)]},
    }


def _result(finding: Finding, rule_index: int, root: Optional[str]) -> Dict[str, Any]:
    location = artifact_location(finding.filename, root)
    result: Dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": finding.severity.level,
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": dict(location),
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
    if finding.cell is not None:  # a notebook: rows are within this cell
        result["properties"]["cell"] = finding.cell
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": artifact_location(step.filename, root),
                    "region": {"startLine": step.row},
                },
                "message": {"text": step.message},
                **({"properties": {"cell": step.cell}} if step.cell is not None else {}),  # rows within the cell
            }
            for index, step in enumerate(finding.related)
        ]
    if finding.fix is not None and finding.fix.edits:
        result["fixes"] = [_fix(finding.fix, location)]
    return result


def build(
    findings: List[Finding], *, rules: Optional[Dict[str, RuleMeta]], tool_version: str,
    root: Optional[str] = None,
) -> Dict[str, Any]:
    """The SARIF log as a dict; rules are those present in findings, sorted by code.

    With ``root`` (the project root), files below it are written relative to the base URI
    ``%SRCROOT%``, which ``originalUriBaseIds`` defines as ``root``'s file:// URI.
    """
    first: Dict[str, Finding] = {}
    for finding in findings:
        first.setdefault(finding.code, finding)
    codes = sorted(first)
    index = {code: i for i, code in enumerate(codes)}
    run: Dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "amp-lint",
                "version": tool_version,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(c, first[c], (rules or {}).get(c)) for c in codes],
            }
        },
    }
    if root is not None:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root_uri(root)}}
    run["columnKind"] = "unicodeCodePoints"
    run["results"] = [_result(f, index[f.code], root) for f in findings]
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(
    findings: List[Finding], *, rules: Optional[Dict[str, RuleMeta]], tool_version: str,
    root: Optional[str] = None,
) -> str:
    """Render sorted findings as an indented SARIF document."""
    log = build(findings, rules=rules, tool_version=tool_version, root=root)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
