"""Every rule's VALID / INVALID examples are tests (Fixit's idea)."""
from __future__ import annotations

import dataclasses

import libcst as cst
import pytest

from amp_lint.config import Settings
from amp_lint.engine.linter import fix_text, lint_text
from amp_lint.rules import ALL_RULES


def _cases(kind: str):
    for rule in ALL_RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


def _settings(example, unsafe: bool) -> Settings:
    return dataclasses.replace(Settings(unsafe_fixes=unsafe), **example.settings)


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_example_fires_and_fixes(rule, example):
    settings = _settings(example, example.unsafe_fixes)
    findings = lint_text(example.filename, example.code, settings, [rule])
    assert [f.code for f in findings] == [rule.code] * example.count, [f.message for f in findings]
    fixed, _ = fix_text(example.filename, example.code, settings, [rule])
    cst.parse_module(fixed)
    if example.expected is not None:
        assert fixed == example.expected
    again, applied = fix_text(example.filename, fixed, settings, [rule])
    assert again == fixed and applied == 0, "a second fix must change nothing"


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_a_claimed_fix_is_a_built_fix(rule, example):
    """What ``check`` marks fixable (``[*]``, from the rule's fix plan, built lazily) is what
    building the edits gives: every claim has a fix, and a fix is never left unclaimed."""
    settings = _settings(example, True)
    claimed = lint_text(example.filename, example.code, settings, [rule])
    built = lint_text(example.filename, example.code, settings, [rule], want_edits=True)
    assert [f.fix_applicability is not None for f in claimed] == [f.fix is not None for f in built]
    assert [f.fix_applicability for f in built] == [f.fix.applicability if f.fix else None for f in built]


@pytest.mark.parametrize("rule,example", list(_cases("VALID")))
def test_valid_example_is_silent(rule, example):
    settings = _settings(example, True)
    findings = lint_text(example.filename, example.code, settings, [rule])
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_has_firing_and_silent_examples_and_docs(rule):
    assert rule.INVALID and rule.VALID
    docs = rule.render_docs()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety", "## References"):
        assert section in docs, section
    if rule.fix_applicability is not None:
        assert any(e.expected is not None and e.expected != e.code for e in rule.INVALID), "show the fix"
