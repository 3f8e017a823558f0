"""Per-rule counts (``--statistics``) and the closing summary line, worded as ruff's."""
from __future__ import annotations

from typing import Dict, List

from amp_lint.findings import Finding


def render_statistics(findings: List[Finding], *, unsafe_fixes: bool = False) -> str:
    """``count<TAB>code<TAB>[*] name`` per rule, by count descending then code.

    A rule is marked ``[*]`` when all its findings would be fixed; the marker column is
    left out entirely when no rule is fixable, as ruff does.
    """
    groups: Dict[str, List[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.code, []).append(finding)
    if not groups:
        return ""
    rows = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
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
    fix_command: str = "amp-lint fix",
) -> str:
    """Summary lines for stderr.

    ``findings_count`` counts the findings still reported (remaining), ``fixable_count``
    those that ``amp-lint fix`` would fix with the current ``--unsafe-fixes`` setting,
    ``unsafe_hidden`` those fixable only with ``--unsafe-fixes`` (pass 0 when it is on).
    """
    total = findings_count + fixed_count
    if fixed_count > 0:
        noun = _plural(total, "finding", "findings")
        lines = [f"Found {total} {noun} ({fixed_count} fixed, {findings_count} remaining)."]
    elif findings_count > 0:
        lines = [f"Found {findings_count} {_plural(findings_count, 'finding', 'findings')}."]
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
