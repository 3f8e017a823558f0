"""The browsable rule catalog under ``rules/``, rendered from the rules themselves.

One source of truth: ``amp-lint rule CODE`` and ``rules/CODE.md`` print the same text, and a
test fails when the committed pages drift. Regenerate with ``python -m amp_lint.docs``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict

from amp_lint.rules import ALL_RULES

SYNTAX_ERROR_PAGE = """# syntax-error (AMP000)

Severity: error. Fix is not available.

## What it does
Reports a file that does not parse as Python, at the position of the parse error. The file is
skipped by every other rule and never rewritten; the run goes on with the other files.

## Why is this bad?
A file that does not parse cannot be checked, so its hazards would go unreported.

## Fix safety
There is no fix: correct the syntax error.

## References
- https://docs.python.org/3/reference/grammar.html
"""


def render_catalog() -> Dict[str, str]:
    """File name -> content for every page of ``rules/``."""
    pages = {"AMP000.md": SYNTAX_ERROR_PAGE}
    index = [
        "# amp-lint rules",
        "",
        "Generated from the rule classes by `python -m amp_lint.docs`; `amp-lint rule CODE` prints the same text.",
        "",
        "| code | name | severity | fix | default |",
        "|---|---|---|---|---|",
        "| [AMP000](AMP000.md) | syntax-error | error | none | on |",
    ]
    for rule in ALL_RULES:
        pages[f"{rule.code}.md"] = rule.render_docs()
        fix = rule.fix_applicability.value if rule.fix_applicability else "none"
        default = "on" if rule.default_enabled else "off"
        index.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.severity.value} | {fix} | {default} |")
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def write_catalog(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    pages = render_catalog()
    for stale in directory.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (directory / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) > 2 or len(sys.argv) == 2 and sys.argv[1].startswith("-"):
        sys.exit("usage: python -m amp_lint.docs [DIRECTORY]  (writes the rule pages; default: rules/)")
    write_catalog(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "rules")
