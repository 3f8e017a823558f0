"""Per-rule counts (``--statistics``) and the closing summary line, worded as ruff's."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from amp_lint.findings import Finding

#: Output formats ``--statistics`` can be written in.
STATISTICS_FORMATS = ("concise", "full", "json", "json-lines")


def _groups(findings: List[Finding]) -> List[Tuple[str, List[Finding]]]:
    """Findings grouped by code, by count descending then code."""
    groups: Dict[str, List[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.code, []).append(finding)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def statistics_rows(findings: List[Finding], *, unsafe_fixes: bool = False) -> List[Dict[str, Any]]:
    """One object per rule, with ruff's keys: ``code``, ``name``, ``count``, ``fixable`` (every
    finding of the rule would be fixed) and ``fixable_count``."""
    rows = []
    for code, group in _groups(findings):
        fixable = sum(1 for f in group if f.fixable(unsafe_fixes))
        rows.append({"code": code, "name": group[0].name, "count": len(group), "fixable": fixable == len(group),
                     "fixable_count": fixable})
    return rows


def render_statistics(findings: List[Finding], *, unsafe_fixes: bool = False, fmt: str = "concise") -> str:
    """Per-rule counts in ``fmt``: text for concise/full, an array for json, lines for json-lines.

    The text form is ``count<TAB>code<TAB>[*] name`` per rule, by count descending then code.
    A rule is marked ``[*]`` when all its findings would be fixed; the marker column is
    left out entirely when no rule is fixable, as ruff does.
    """
    if fmt == "json":
        return json.dumps(statistics_rows(findings, unsafe_fixes=unsafe_fixes), indent=2) + "\n"
    if fmt == "json-lines":
        return "".join(json.dumps(row, separators=(",", ":")) + "\n"
                       for row in statistics_rows(findings, unsafe_fixes=unsafe_fixes))
    if fmt not in ("concise", "full"):
        raise ValueError(f"--statistics supports the {', '.join(STATISTICS_FORMATS)} formats, not {fmt!r}")
    rows = _groups(findings)
    if not rows:
        return ""
    fixable = {code: all(f.fixable(unsafe_fixes) for f in group) for code, group in rows}
    any_fixable = any(fixable.values())
    count_width = len(str(max(len(group) for _, group in rows)))
    code_width = max(len(code) for code, _ in rows)
    lines = []
    for code, group in rows:
        marker = ("[*] " if fixable[code] else "[ ] ") if any_fixable else ""
        lines.append(f"{len(group):>{count_width}}\t{code:<{code_width}}\t{marker}{group[0].name}")
    return "".join(line + "\n" for line in lines)


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def render_summary(
    findings_count: int, fixable_count: int, fixed_count: int = 0, *, unsafe_hidden: int = 0,
    fix_command: str = "amp-lint fix", not_checked: int = 0, skipped: int = 0,
) -> str:
    """Summary lines for stderr.

    ``findings_count`` counts the findings still reported (remaining), ``fixable_count``
    those that ``amp-lint fix`` would fix with the current ``--unsafe-fixes`` setting,
    ``unsafe_hidden`` those fixable only with ``--unsafe-fixes`` (pass 0 when it is on).
    ``not_checked`` counts the files that could not be read or decoded (errors), ``skipped``
    the paths passed over with a warning (dangling symlinks, symlink loops); both are named in
    the first line, which never says "All checks passed!" while something went unchecked.
    """
    total = findings_count + fixed_count
    unchecked = []
    if not_checked:
        unchecked.append(f"{not_checked} {_plural(not_checked, 'file', 'files')} could not be checked")
    if skipped:
        unchecked.append(f"{skipped} {_plural(skipped, 'path', 'paths')} skipped")
    tail = f"; {', '.join(unchecked)} (see above)" if unchecked else ""
    if fixed_count > 0:
        noun = _plural(total, "finding", "findings")
        lines = [f"Found {total} {noun} ({fixed_count} fixed, {findings_count} remaining){tail}."]
    elif findings_count > 0:
        lines = [f"Found {findings_count} {_plural(findings_count, 'finding', 'findings')}{tail}."]
    elif unchecked:
        lines = [f"No findings{tail}."]
    else:
        lines = ["All checks passed!"]
    hidden = ""
    if unsafe_hidden > 0:
        fixes = _plural(unsafe_hidden, "fix", "fixes")
        hidden = f"{unsafe_hidden} hidden {fixes} can be enabled with the `--unsafe-fixes` option"
    if fixable_count > 0:
        tail = f" ({hidden})." if hidden else "."
        lines.append(f"[*] {fixable_count} fixable with `{fix_command}`{tail}")
    elif hidden:
        lines.append(f"No fixes available ({hidden}).")
    return "".join(line + "\n" for line in lines)
