"""The browsable catalog under rules/ matches the rules' own docs (one source of truth)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amp_lint.docs import render_catalog
from amp_lint.rules import ALL_RULES

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


def test_catalog_codes_are_the_public_ones():
    catalog = ROOT.parent / "shared" / "rule-catalog.md"
    assert catalog.exists(), "the shared rule catalog sits beside the checkout (../shared)"
    text = catalog.read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"| {rule.code} | {rule.name} |" in text, f"{rule.code} {rule.name} not in the shared catalog"
