"""Reporters: every format rendered from hand-built findings."""
from __future__ import annotations

import json
from pathlib import Path
import os
from typing import Optional

import pytest

from amp_lint.findings import LEVELS, Applicability, Edit, Finding, Fix, Location, Related, Severity
from amp_lint.reporters import FORMATS, RuleMeta, render, render_statistics, render_summary

#: The official SARIF 2.1.0 schema, vendored (see tests/data/README.md).
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
JSON_KEYS = {
    "cell", "code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url",
    "name", "severity", "precision_context", "confidence", "evidence",
}  # fmt: skip

MASK_LINE = "    scores = scores.masked_fill(mask, -1e9)\n"


def make(
    code: str = "AMP301",
    *,
    name: str = "fp16-overflowing-constant",
    severity: Severity = Severity.ERROR,
    message: str = "`-1e9` overflows float16 (max 65504)",
    filename: str = "model.py",
    start: tuple = (3, 14),
    end: tuple = (3, 44),
    applicability: Optional[Applicability] = None,
    fix_title: Optional[str] = None,
    edits: tuple = (),
    source_line: Optional[str] = None,
    noqa_row: Optional[int] = None,
    context: Optional[str] = "AUTOCAST_FP16",
) -> Finding:
    """A finding; ``fix`` is set when ``edits`` are given."""
    fix = None
    if edits:
        assert applicability is not None
        made = tuple(Edit(c, Location(*s), Location(*e)) for c, s, e in edits)
        fix = Fix(applicability, fix_title or "", made)
    return Finding(
        code=code, name=name, severity=severity, message=message, filename=filename,
        location=Location(*start), end_location=Location(*end), fix_applicability=applicability,
        fix_title=fix_title, fix=fix, precision_context=context, noqa_row=noqa_row,
        source_line=source_line,
    )  # fmt: skip


def overflow(**kw) -> Finding:
    """AMP301 on MASK_LINE with an unsafe one-line fix."""
    args = dict(
        applicability=Applicability.UNSAFE,
        fix_title="Use `torch.finfo(scores.dtype).min`",
        edits=(("torch.finfo(scores.dtype).min", (3, 39), (3, 43)),),
        source_line=MASK_LINE,
    )
    args.update(kw)
    return make(**args)


def scaler(**kw) -> Finding:
    """AMP104 with a safe fix that inserts a line."""
    args = dict(
        code="AMP104", name="clip-before-unscale", message="clipping scaled gradients",
        filename="train.py", start=(10, 5), end=(10, 60), applicability=Applicability.SAFE,
        fix_title="Insert `scaler.unscale_(opt)` before clipping",
        edits=(("scaler.unscale_(opt)\n    ", (10, 5), (10, 5)),),
        source_line="    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    )  # fmt: skip
    args.update(kw)
    return make(**args)


def perf(**kw) -> Finding:
    """AMP401, no fix, spanning two lines."""
    args = dict(
        code="AMP401", name="unpadded-vocab", severity=Severity.PERF,
        message="vocab 50257 is not a multiple of 8; pad to 50304", filename="lm.py",
        start=(7, 21), end=(8, 9), source_line="        self.head = nn.Linear(\n", context=None,
    )  # fmt: skip
    args.update(kw)
    return make(**args)


# ---------------------------------------------------------------- concise


def test_concise_sorted_and_marks_only_applicable_fixes() -> None:
    findings = [scaler(), perf(), overflow(), overflow(start=(1, 1), end=(1, 5), edits=())]
    assert render(findings, "concise").splitlines() == [
        "lm.py:7:21: AMP401 vocab 50257 is not a multiple of 8; pad to 50304",
        "model.py:1:1: AMP301 `-1e9` overflows float16 (max 65504)",
        "model.py:3:14: AMP301 `-1e9` overflows float16 (max 65504)",
        "train.py:10:5: AMP104 [*] clipping scaled gradients",
    ]
    unsafe = render(findings, "concise", unsafe_fixes=True).splitlines()
    assert unsafe[1] == "model.py:1:1: AMP301 [*] `-1e9` overflows float16 (max 65504)"
    assert unsafe[2] == "model.py:3:14: AMP301 [*] `-1e9` overflows float16 (max 65504)"


def test_concise_keeps_one_line_per_finding() -> None:
    out = render([make(message="line one\nline two")], "concise")
    assert out == "model.py:3:14: AMP301 line one\\nline two\n"


def test_concise_empty_is_empty() -> None:
    assert render([], "concise") == ""


def test_concise_show_fixes_diff() -> None:
    out = render([overflow()], "concise", show_fixes=True)
    assert out.splitlines() == [
        "model.py:3:14: AMP301 `-1e9` overflows float16 (max 65504)",
        "  Unsafe fix: Use `torch.finfo(scores.dtype).min`",
        "  3 -     scores = scores.masked_fill(mask, -1e9)",
        "  3 +     scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)",
    ]


def test_show_fixes_lists_edits_that_leave_the_line() -> None:
    out = render([scaler()], "concise", show_fixes=True).splitlines()
    assert out[1:] == [
        "  Safe fix: Insert `scaler.unscale_(opt)` before clipping",
        "  10:5-10:5 -> 'scaler.unscale_(opt)\\n    '",
    ]


# ---------------------------------------------------------------- full


def test_full_single_line_span() -> None:
    assert render([overflow()], "full") == (
        "model.py:3:14: AMP301 `-1e9` overflows float16 (max 65504)\n"
        "  |\n"
        "3 |     scores = scores.masked_fill(mask, -1e9)\n"
        "  |              " + "^" * 30 + " AMP301\n"
        "  |\n"
        "  = help: Use `torch.finfo(scores.dtype).min`\n"
    )


def test_full_multiline_span_underlines_to_end_of_line_and_separates_findings() -> None:
    out = render([scaler(), perf()], "full", unsafe_fixes=True)
    assert out == (
        "lm.py:7:21: AMP401 vocab 50257 is not a multiple of 8; pad to 50304\n"
        "  |\n"
        "7 |         self.head = nn.Linear(\n"
        "  |                     ^^^^^^^^^^ AMP401\n"
        "  |\n"
        "\n"
        "train.py:10:5: AMP104 [*] clipping scaled gradients\n"
        "   |\n"
        "10 |     torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "   |     " + "^" * 55 + " AMP104\n"
        "   |\n"
        "   = help: Insert `scaler.unscale_(opt)` before clipping\n"
    )


def test_full_without_source_tabs_and_empty_span() -> None:
    no_source = make(fix_title="do this")
    assert render([no_source], "full") == (
        "model.py:3:14: AMP301 `-1e9` overflows float16 (max 65504)\n  = help: do this\n"
    )
    tabbed = make(source_line="\tx = y", start=(3, 2), end=(3, 2), fix_title=None)
    assert render([tabbed], "full").splitlines()[2:4] == ["3 |     x = y", "  |     ^ AMP301"]
    wide = make(source_line='y = "中文" + x', start=(3, 10), end=(3, 11))
    assert render([wide], "full").splitlines()[3] == "  | " + " " * 11 + "^ AMP301"


def test_full_show_fixes() -> None:
    lines = render([overflow()], "full", show_fixes=True).splitlines()
    assert lines[-3:] == [
        "  Unsafe fix: Use `torch.finfo(scores.dtype).min`",
        "  3 -     scores = scores.masked_fill(mask, -1e9)",
        "  3 +     scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)",
    ]


# ---------------------------------------------------------------- json


def test_json_keys_values_and_fix() -> None:
    data = json.loads(render([scaler(), perf(noqa_row=8), overflow()], "json"))
    assert [set(obj) for obj in data] == [JSON_KEYS] * 3
    lm, model, train = data
    assert lm["fix"] is None and lm["noqa_row"] == 8 and lm["precision_context"] is None
    assert lm["severity"] == "perf" and lm["end_location"] == {"row": 8, "column": 9}
    assert model == {
        "cell": None,
        "code": "AMP301",
        "message": "`-1e9` overflows float16 (max 65504)",
        "filename": os.path.abspath("model.py"),  # absolute, as ruff writes it
        "location": {"row": 3, "column": 14},
        "end_location": {"row": 3, "column": 44},
        "fix": {
            "applicability": "unsafe",
            "message": "Use `torch.finfo(scores.dtype).min`",
            "edits": [
                {
                    "content": "torch.finfo(scores.dtype).min",
                    "location": {"row": 3, "column": 39},
                    "end_location": {"row": 3, "column": 43},
                }
            ],
        },
        "noqa_row": 3,
        "url": model["url"],
        "name": "fp16-overflowing-constant",
        "severity": "error",
        "precision_context": "AUTOCAST_FP16",
        "confidence": "high",
        "evidence": [],
    }
    assert model["url"].endswith("/AMP301.md")
    assert train["fix"]["applicability"] == "safe"
    assert set(train["fix"]) == {"applicability", "message", "edits"}


def test_json_filename_is_absolute_except_stdin(tmp_path: Path) -> None:
    absolute = str(tmp_path / "pkg" / "m.py")
    rows = json.loads(render([make(filename=absolute), make(filename="-"), make(filename="rel/x.py")], "json"))
    assert sorted(r["filename"] for r in rows) == sorted(["-", os.path.abspath("rel/x.py"), absolute])


def test_json_fix_null_when_only_title() -> None:
    data = json.loads(render([make(applicability=Applicability.SAFE, fix_title="t")], "json"))
    assert data[0]["fix"] is None


def test_json_empty_and_indent() -> None:
    assert json.loads(render([], "json")) == []
    assert render([perf()], "json").startswith('[\n  {\n    "cell": null,\n    "code": "AMP401",')


def test_json_lines_one_compact_object_per_line() -> None:
    out = render([overflow(message="a\nb % c"), scaler()], "json-lines")
    lines = out.splitlines()
    assert len(lines) == 2 and out.endswith("\n")
    objs = [json.loads(line) for line in lines]
    assert [set(o) for o in objs] == [JSON_KEYS] * 2
    assert objs[0]["message"] == "a\nb % c" and objs[1]["code"] == "AMP104"
    assert lines[1].startswith('{"cell":null,"code":"AMP104","confidence":"high",')
    assert json.loads(render([overflow()], "json"))[0] == json.loads(
        render([overflow()], "json-lines")
    )


# ---------------------------------------------------------------- github


def test_github_error_and_warning_commands() -> None:
    out = render([overflow(), perf()], "github").splitlines()
    assert out == [
        "::notice title=amp-lint (AMP401),file=lm.py,line=7,col=21,endLine=8,endColumn=9::"
        "lm.py:7:21: AMP401 vocab 50257 is not a multiple of 8; pad to 50304",
        "::error title=amp-lint (AMP301),file=model.py,line=3,col=14,endLine=3,endColumn=44::"
        "model.py:3:14: AMP301 `-1e9` overflows float16 (max 65504)",
    ]


@pytest.mark.parametrize(
    "severity,command",
    [(Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.MIGRATION, "warning"),
     (Severity.PERF, "notice")],
)
def test_github_severity(severity: Severity, command: str) -> None:
    assert render([make(severity=severity)], "github").startswith(f"::{command} title=")


@pytest.mark.parametrize("severity", list(Severity))
def test_one_severity_mapping_for_every_format(severity: Severity) -> None:
    """GitHub annotations and SARIF show the same level for a severity: the one LEVELS table."""
    level = LEVELS[severity]
    assert level in ("error", "warning", "note") and severity.level == level
    github_level = render([make(severity=severity)], "github").split()[0].lstrip(":")
    assert {"notice": "note"}.get(github_level, github_level) == level
    log = json.loads(render([make(severity=severity)], "sarif"))
    assert log["runs"][0]["results"][0]["level"] == level
    rule = RuleMeta("AMP301", "fp16-overflowing-constant", severity.value, "s", "u")
    log = json.loads(render([make(severity=severity)], "sarif", rules={"AMP301": rule}))
    assert log["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == level


def test_github_escapes_data_and_properties() -> None:
    finding = make(filename="dir,x/a:b%.py", message="50% of\r\nthe mask, too: x")
    out = render([finding], "github")
    assert out == (
        "::error title=amp-lint (AMP301),file=dir%2Cx/a%3Ab%25.py,line=3,col=14,endLine=3,"
        "endColumn=44::dir,x/a:b%25.py:3:14: AMP301 50%25 of%0D%0Athe mask, too: x\n"
    )


# ---------------------------------------------------------------- sarif


@pytest.fixture(scope="module")
def sarif_validator():
    """A validator for the official SARIF 2.1.0 schema."""
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_sarif_valid_and_structured(sarif_validator) -> None:
    rules = {
        "AMP301": RuleMeta(
            "AMP301", "fp16-overflowing-constant", "error", "Literal overflows float16",
            "https://x/AMP301",
        )
    }
    findings = [overflow(), scaler(filename="sub dir/train,1.py"), perf()]
    log = json.loads(render(findings, "sarif", rules=rules, tool_version="9.9.9"))
    errors = sorted(sarif_validator.iter_errors(log), key=str)
    assert not errors, [e.message for e in errors]
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    driver = log["runs"][0]["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("amp-lint", "9.9.9")
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == ["AMP104", "AMP301", "AMP401"]
    amp104, amp301, amp401 = driver["rules"]
    assert amp301 == {
        "id": "AMP301",
        "name": "fp16-overflowing-constant",
        "shortDescription": {"text": "Literal overflows float16"},
        "helpUri": "https://x/AMP301",
        "defaultConfiguration": {"level": "error"},
    }
    assert amp104["name"] == "clip-before-unscale" and amp104["helpUri"].endswith("/AMP104.md")
    assert amp401["defaultConfiguration"] == {"level": "note"}

    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in results] == [
        ("AMP401", 2, "note"),
        ("AMP301", 1, "error"),
        ("AMP104", 0, "error"),
    ]
    lm, model, train = results
    assert lm["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "lm.py"},
        "region": {"startLine": 7, "startColumn": 21, "endLine": 8, "endColumn": 9},
    }
    assert "fixes" not in lm and lm["properties"]["precision_context"] is None
    assert model["message"] == {"text": "`-1e9` overflows float16 (max 65504)"}
    assert model["properties"]["precision_context"] == "AUTOCAST_FP16"
    assert model["properties"]["confidence"] == "high"
    assert model["fixes"] == [
        {
            "description": {"text": "Use `torch.finfo(scores.dtype).min`"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "model.py"},
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": 3, "startColumn": 39, "endLine": 3, "endColumn": 43,
                            },  # fmt: skip
                            "insertedContent": {"text": "torch.finfo(scores.dtype).min"},
                        }
                    ],
                }
            ],
            "properties": {"applicability": "unsafe"},
        }
    ]
    uri = train["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "sub%20dir/train,1.py"
    assert train["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == uri


def test_sarif_empty_and_special_messages_valid(sarif_validator) -> None:
    empty = json.loads(render([], "sarif"))
    assert not list(sarif_validator.iter_errors(empty))
    assert empty["runs"][0]["results"] == [] and empty["runs"][0]["tool"]["driver"]["rules"] == []
    odd = make(message="100% bad\nreally", filename="C:\\work\\a.py", severity=Severity.MIGRATION)
    log = json.loads(render([odd], "sarif"))
    assert not list(sarif_validator.iter_errors(log))
    result = log["runs"][0]["results"][0]
    assert result["message"]["text"] == "100% bad\nreally" and result["level"] == "warning"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "file:///C:/work/a.py"


def test_sarif_base_uri(sarif_validator, tmp_path: Path) -> None:
    """With the project root, files below it are relative to %SRCROOT%; files outside stay absolute."""
    root = tmp_path / "proj"
    inside = overflow(filename=str(root / "pkg" / "model.py"))
    outside = perf(filename=str(tmp_path / "elsewhere" / "lm.py"))
    log = json.loads(render([inside, outside], "sarif", root=str(root)))
    assert not list(sarif_validator.iter_errors(log))
    run = log["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": root.as_uri() + "/"}}
    locations = {r["ruleId"]: r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]}
    assert locations["AMP301"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    assert locations["AMP401"] == {"uri": (tmp_path / "elsewhere" / "lm.py").as_uri()}
    fix_location = run["results"][1]["fixes"][0]["artifactChanges"][0]["artifactLocation"]
    assert fix_location == locations["AMP301"]
    # A relative filename is relative to the working directory, like the paths amp-lint is given.
    relative = json.loads(render([make(filename="model.py")], "sarif", root=os.getcwd()))
    assert relative["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "model.py", "uriBaseId": "%SRCROOT%"}


def test_sarif_level_for_warning() -> None:
    log = json.loads(render([make(severity=Severity.WARNING)], "sarif"))
    assert log["runs"][0]["results"][0]["level"] == "warning"
    rule = log["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["defaultConfiguration"]["level"] == "warning"


# ---------------------------------------------------------------- dispatch, statistics, summary


def test_every_format_renders_and_unknown_raises() -> None:
    for fmt in FORMATS:
        assert "AMP301" in render([overflow()], fmt), fmt
    with pytest.raises(ValueError, match="unknown output format"):
        render([], "pylint")


def test_statistics_layout() -> None:
    misaligned = perf(code="AMP402", name="tensor-core-misaligned-dim")
    findings = [overflow() for _ in range(12)] + [scaler(), perf(), misaligned]
    assert render_statistics(findings) == (
        "12\tAMP301\t[ ] fp16-overflowing-constant\n"
        " 1\tAMP104\t[*] clip-before-unscale\n"
        " 1\tAMP401\t[ ] unpadded-vocab\n"
        " 1\tAMP402\t[ ] tensor-core-misaligned-dim\n"
    )
    assert render_statistics(findings, unsafe_fixes=True).splitlines()[0] == (
        "12\tAMP301\t[*] fp16-overflowing-constant"
    )


def test_statistics_without_fixable_or_findings() -> None:
    assert render_statistics([perf(), perf(), make()]) == (
        "2\tAMP401\tunpadded-vocab\n1\tAMP301\tfp16-overflowing-constant\n"
    )
    assert render_statistics([]) == ""


def test_statistics_rule_partly_fixable_is_unmarked() -> None:
    out = render_statistics([scaler(), scaler(edits=(), applicability=None), overflow()])
    assert out == "2\tAMP104\tclip-before-unscale\n1\tAMP301\tfp16-overflowing-constant\n"
    unfixed = scaler(edits=(), applicability=None)
    out = render_statistics([scaler(), unfixed, scaler(code="AMP103")])
    assert out.splitlines() == [
        "2\tAMP104\t[ ] clip-before-unscale",
        "1\tAMP103\t[*] clip-before-unscale",
    ]


def test_statistics_json_has_rufs_keys() -> None:
    findings = [overflow() for _ in range(3)] + [scaler(), scaler(edits=(), applicability=None), perf()]
    rows = json.loads(render_statistics(findings, fmt="json"))
    assert rows == [
        {"code": "AMP301", "name": "fp16-overflowing-constant", "count": 3, "fixable": False, "fixable_count": 0},
        {"code": "AMP104", "name": "clip-before-unscale", "count": 2, "fixable": False, "fixable_count": 1},
        {"code": "AMP401", "name": "unpadded-vocab", "count": 1, "fixable": False, "fixable_count": 0},
    ]
    unsafe = json.loads(render_statistics(findings, fmt="json", unsafe_fixes=True))
    assert unsafe[0]["fixable"] is True and unsafe[0]["fixable_count"] == 3
    lines = render_statistics(findings, fmt="json-lines").splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert json.loads(render_statistics([], fmt="json")) == []
    with pytest.raises(ValueError, match="--statistics supports"):
        render_statistics(findings, fmt="sarif")


@pytest.mark.parametrize(
    "args,kwargs,expected",
    [
        ((0, 0), {}, "All checks passed!\n"),
        ((0, 0), {"not_checked": 1}, "No findings; 1 file could not be checked (see above).\n"),
        ((2, 1), {"not_checked": 2, "skipped": 1},
         "Found 2 findings; 2 files could not be checked, 1 path skipped (see above).\n"
         "[*] 1 fixable with `amp-lint fix`.\n"),
        ((1, 0, 1), {"skipped": 3}, "Found 2 findings (1 fixed, 1 remaining); 3 paths skipped (see above).\n"),
        ((1, 0), {}, "Found 1 finding.\n"),
        ((3, 2), {}, "Found 3 findings.\n[*] 2 fixable with `amp-lint fix`.\n"),
        (
            (3, 1),
            {"unsafe_hidden": 2},
            "Found 3 findings.\n[*] 1 fixable with `amp-lint fix` "
            "(2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n",
        ),
        (
            (1, 0),
            {"unsafe_hidden": 1},
            "Found 1 finding.\n"
            "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n",
        ),
        ((2, 0, 3), {}, "Found 5 findings (3 fixed, 2 remaining).\n"),
        ((0, 0, 1), {}, "Found 1 finding (1 fixed, 0 remaining).\n"),
    ],
)
def test_summary(args: tuple, kwargs: dict, expected: str) -> None:
    assert render_summary(*args, **kwargs) == expected


def with_evidence() -> Finding:
    """AMP301 whose half-precision evidence is two steps in another file."""
    finding = overflow()
    finding.related = [
        Related("train.py", 12, "cast to half: `model.half()`"),
        Related("train.py", 30, "calls `attend`"),
    ]
    return finding


def test_evidence_in_full_json_and_sarif(sarif_validator) -> None:
    finding = with_evidence()
    full = render([finding], "full", unsafe_fixes=False, show_fixes=False)
    assert "  = because: train.py:12: cast to half: `model.half()`" in full
    assert "  =   then: train.py:30: calls `attend`" in full
    assert full.index("because") < full.index("= help")
    data = json.loads(render([finding], "json"))
    assert data[0]["evidence"] == [
        {"filename": os.path.abspath("train.py"), "cell": None, "row": 12, "message": "cast to half: `model.half()`"},
        {"filename": os.path.abspath("train.py"), "cell": None, "row": 30, "message": "calls `attend`"},
    ]
    assert json.loads(render([overflow()], "json"))[0]["evidence"] == []
    log = json.loads(render([finding], "sarif", rules=None, tool_version="9.9.9"))
    assert list(sarif_validator.iter_errors(log)) == []
    related = log["runs"][0]["results"][0]["relatedLocations"]
    assert [(r["id"], r["physicalLocation"]["region"]["startLine"], r["message"]["text"]) for r in related] == [
        (0, 12, "cast to half: `model.half()`"), (1, 30, "calls `attend`"),
    ]
    assert related[0]["physicalLocation"]["artifactLocation"]["uri"].endswith("train.py")
