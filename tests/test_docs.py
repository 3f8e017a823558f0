"""The browsable catalog under rules/ matches the rules' own docs (one source of truth)."""
from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from amp_lint.config import Settings
from amp_lint.data.catalog import CATALOG, CATALOG_BY_CODE
from amp_lint.docs import render_catalog
from amp_lint.engine.linter import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, lint_text
from amp_lint.rules import ALL_RULES, RESERVED_CODES

ROOT = Path(__file__).resolve().parents[1]


def test_rules_directory_is_in_sync():
    pages = render_catalog()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "rules").glob("*.md")}
    assert set(on_disk) == set(pages), "run `python -m amp_lint.docs` to regenerate rules/"
    for name, text in pages.items():
        assert on_disk[name] == text, f"rules/{name} is stale: run `python -m amp_lint.docs`"


def test_rule_command_prints_the_catalog_page():
    rule = ALL_RULES[0]
    out = subprocess.run([sys.executable, "-m", "amp_lint", "rule", rule.code], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout == (ROOT / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")


def test_catalog_matches_the_rules() -> None:
    """The implemented rules agree with the catalog (amp_lint/data/catalog.py) on every fact."""
    for rule in ALL_RULES:
        entry = CATALOG_BY_CODE.get(rule.code)
        assert entry is not None, f"{rule.code} is not in the catalog"
        assert not entry.reserved, f"{rule.code} is implemented but marked reserved"
        fix = rule.fix_applicability.value if rule.fix_applicability else "none"
        assert (entry.name, entry.severity, entry.fix) == (rule.name, rule.severity.value, fix), rule.code
    implemented = {rule.code for rule in ALL_RULES} | {SYNTAX_ERROR_CODE}
    reserved = {entry.code for entry in CATALOG if entry.reserved}
    assert set(RESERVED_CODES) == reserved
    assert implemented | reserved == set(CATALOG_BY_CODE)
    assert not implemented & reserved
    assert CATALOG_BY_CODE[SYNTAX_ERROR_CODE].name == SYNTAX_ERROR_NAME


def _span(text: str, finding) -> str:
    lines = text.splitlines()
    start, end = finding.location, finding.end_location
    if start.row == end.row:
        return lines[start.row - 1][start.column - 1:end.column - 1]
    chunk = [lines[start.row - 1][start.column - 1:]] + lines[start.row:end.row - 1]
    return "\n".join(chunk + [lines[end.row - 1][:end.column - 1]])


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_findings_are_reported_where_the_catalog_says(rule) -> None:
    """Every INVALID example's finding spans one whole expression or statement, and the one the
    catalog names (its ``anchor``)."""
    entry = CATALOG_BY_CODE[rule.code]
    for example in rule.INVALID:
        settings = dataclasses.replace(Settings(unsafe_fixes=True), **example.settings)
        for finding in lint_text(example.filename, example.code, settings, [rule]):
            span = _span(example.code, finding)
            try:
                ast.parse(span.strip(), mode="eval")
            except SyntaxError:
                ast.parse(span.strip())  # a statement (an import)
            if entry.anchor is not None:
                assert re.search(entry.anchor, span), (rule.code, span, entry.reported_at)
