"""The ``amp-lint`` command end to end: every flag of ``check``/``fix``, ``rule``, exit codes.

Most tests run the real click command in-process (CliRunner) inside a temporary project; a few
run the installed console script and ``python -m amp_lint`` as subprocesses. Other rules are
being added to the tree, so tests whose exact output matters select their rules explicitly.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from click.testing import CliRunner

from amp_lint import __version__
from amp_lint.cli import main
from amp_lint.rules import ALL_RULES

#: The official SARIF 2.1.0 schema, vendored (see tests/data/README.md).
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"

#: Two AMP501 findings, both with a safe fix.
AUTOCAST = """\
import torch

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    loss = 1.0
"""
AUTOCAST_FIXED = """\
import torch

scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda"):
    loss = 1.0
"""
#: AMP401 (unsafe fix: pad the vocabulary constant) and AMP402 (a literal: no fix).
LAYERS = """\
import torch.nn as nn

VOCAB = 50257
head = nn.Linear(768, VOCAB).half()
mid = nn.Linear(768, 1001).half()
"""
CLEAN = """\
import torch

with torch.amp.autocast("cuda"):
    pass
"""

A501_1 = "a.py:3:10: AMP501 [*] `torch.cuda.amp.GradScaler` is deprecated since torch 2.4; use `torch.amp.GradScaler`"
A501_2 = "a.py:4:6: AMP501 [*] `torch.cuda.amp.autocast` is deprecated since torch 2.4; use `torch.amp.autocast`"
L401 = ("layers.py:4:8: AMP401 Vocabulary size 50257 of this LM-head is not a multiple of 8; "
        "pad it to 50304 (a multiple of 64) for Tensor Core GEMMs")
L402 = "layers.py:5:7: AMP402 Linear output size 1001 is not a multiple of 8; Tensor Core GEMMs run slower (use 1008)"
SELECT = "--select=AMP501,AMP401,AMP402"


class Result:
    def __init__(self, code: int, out: str, err: str, out_bytes: bytes = b"") -> None:
        self.code, self.out, self.err, self.out_bytes = code, out, err, out_bytes

    @property
    def lines(self) -> List[str]:
        return self.out.splitlines()

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def amp(*args: str, input: Optional[bytes | str] = None, env: Optional[Dict[str, str]] = None) -> Result:
    """Run ``amp-lint ARGS`` in-process in the current directory."""
    result = CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"amp-lint {' '.join(args)} raised {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return Result(result.exit_code, result.stdout, result.stderr, result.stdout_bytes)


def run_process(argv: List[str], cwd: Path, input: Optional[str] = None) -> Result:
    proc = subprocess.run(argv, cwd=str(cwd), input=input, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with a.py (AMP501), layers.py (AMP401/402) and clean.py; the cwd."""
    (tmp_path / "a.py").write_text(AUTOCAST)
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "clean.py").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMP_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


# -- check: default output, summary, exit codes ---------------------------------------------------

def test_check_prints_concise_lines_and_summary(project: Path) -> None:
    r = amp("check", SELECT)
    assert r.code == 1
    assert r.lines == [A501_1, A501_2, L401, L402]
    assert r.err.splitlines() == [
        "Found 4 findings.",
        "[*] 2 fixable with `amp-lint fix` (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_check_defaults_to_current_directory_and_explicit_paths(project: Path) -> None:
    assert amp("check", SELECT).lines == amp("check", SELECT, ".").lines
    r = amp("check", SELECT, "layers.py")
    assert r.lines == [L401, L402]


def test_clean_code_exits_0(project: Path) -> None:
    r = amp("check", SELECT, "clean.py")
    assert (r.code, r.out) == (0, "")
    assert r.err.strip() == "All checks passed!"


def test_exit_zero_keeps_output(project: Path) -> None:
    r = amp("check", SELECT, "--exit-zero")
    assert r.code == 0
    assert r.lines == [A501_1, A501_2, L401, L402]


def test_quiet_drops_the_summary(project: Path) -> None:
    r = amp("check", SELECT, "-q")
    assert r.code == 1
    assert r.lines == [A501_1, A501_2, L401, L402]
    assert r.err == ""
    assert amp("check", SELECT, "--quiet", "clean.py").err == ""


# -- selection --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "args, expected",
    [
        (["--select", "AMP501"], [A501_1, A501_2]),
        (["--select", "amp501"], [A501_1, A501_2]),  # selectors are case-insensitive
        (["--select", "AMP4"], [L401, L402]),  # a prefix
        (["--select", "AMP40"], [L401, L402]),
        (["--select", "AMP401,AMP402"], [L401, L402]),  # comma-separated
        (["--select", "AMP401", "--select", "AMP501"], [A501_1, A501_2, L401]),  # repeated
        (["--select", "AMP5", "--ignore", "AMP502"], [A501_1, A501_2]),
        (["--select", "AMP4", "--ignore", "AMP402"], [L401]),
        (["--select", "AMP4", "--extend-select", "AMP501"], [A501_1, A501_2, L401, L402]),
        (["--select", "AMP402", "--extend-select", "AMP5"], [A501_1, A501_2, L402]),
        (["--select", "AMP401", "--ignore", "AMP4"], [L401]),  # the more specific selector wins
        (["--select", "AMP4", "--ignore", "AMP401"], [L402]),
        (["--select", "AMP501", "--ignore", "AMP501"], []),  # ignore wins a tie
    ],
)
def test_select_ignore_extend_select(project: Path, args: List[str], expected: List[str]) -> None:
    r = amp("check", *args)
    assert r.lines == expected
    assert r.code == (1 if expected else 0)


def test_select_all_enables_every_default_rule(project: Path) -> None:
    r = amp("check", "--select", "ALL", "a.py", "layers.py")
    codes = [line.split()[1] for line in r.lines]
    assert {"AMP501", "AMP401", "AMP402"} <= set(codes)
    assert amp("check", "--select", "ALL", "--ignore", "ALL", "a.py").code == 0
    r = amp("check", "--ignore", "ALL", "--extend-select", "AMP501", "a.py")
    assert r.lines == [A501_1, A501_2]


def test_default_selection_reports_the_implemented_rules(project: Path) -> None:
    r = amp("check", "a.py", "layers.py")
    codes = {line.split()[1] for line in r.lines}
    assert {"AMP501", "AMP401", "AMP402"} <= codes


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
@pytest.mark.parametrize("selector", ["AMP9", "XYZ", "AMP5019", "E501"])
def test_unknown_selector_is_one_line_error(project: Path, flag: str, selector: str) -> None:
    r = amp("check", flag, selector)
    assert r.code == 2
    assert r.out == ""
    assert r.err.splitlines() == [
        f"amp-lint: error: unknown rule selector '{selector}' "
        "(expected a code like AMP301, a prefix like AMP3, or ALL)"
    ]


def test_reserved_code_is_a_valid_selector(project: Path) -> None:
    """Codes of the catalog not implemented yet may be selected (configs written ahead)."""
    from amp_lint.rules import RESERVED_CODES

    r = amp("check", "--select", RESERVED_CODES[0], "a.py")
    assert (r.code, r.out) == (0, "")
    assert "is reserved for a planned rule" in r.err.splitlines()[0]  # and says it selects nothing yet


# -- output formats ---------------------------------------------------------------------------

def test_output_format_full_shows_source_and_carets(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "--output-format", "full", "a.py")
    assert r.code == 1
    assert r.out.split("\n\n")[0].splitlines() == [
        A501_1,
        "  |",
        "3 | scaler = torch.cuda.amp.GradScaler()",
        "  |          ^^^^^^^^^^^^^^^^^^^^^^^^^^^ AMP501",
        "  |",
        "  = help: Use `torch.amp.GradScaler`",
    ]
    assert "4 | with torch.cuda.amp.autocast():" in r.out
    assert "Found 2 findings." in r.err


def test_output_format_json(project: Path) -> None:
    r = amp("check", SELECT, "--output-format", "json")
    assert r.code == 1
    data = json.loads(r.out)
    a, layers = str(project / "a.py"), str(project / "layers.py")  # absolute, as ruff writes them
    assert [(d["filename"], d["code"], d["location"]["row"], d["location"]["column"]) for d in data] == [
        (a, "AMP501", 3, 10), (a, "AMP501", 4, 6), (layers, "AMP401", 4, 8), (layers, "AMP402", 5, 7),
    ]  # fmt: skip
    first = data[0]
    assert set(first) == {
        "cell", "code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url",
        "name", "severity", "precision_context", "confidence", "evidence",
    }  # fmt: skip
    assert first["evidence"] == []  # a deprecated call needs no precision evidence
    assert first["name"] == "deprecated-cuda-amp-api"
    assert first["severity"] == "migration"
    assert first["end_location"] == {"row": 3, "column": 37}
    assert first["noqa_row"] == 3
    assert first["url"].endswith("/AMP501.md")
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["message"] == "Use `torch.amp.GradScaler`"
    # Applying the edits reproduces the fixed line.
    line = AUTOCAST.splitlines()[2]
    for edit in sorted(first["fix"]["edits"], key=lambda e: e["location"]["column"], reverse=True):
        assert edit["location"]["row"] == edit["end_location"]["row"] == 3
        line = line[: edit["location"]["column"] - 1] + edit["content"] + line[edit["end_location"]["column"] - 1:]
    assert line == AUTOCAST_FIXED.splitlines()[2]
    assert data[2]["fix"]["applicability"] == "unsafe"
    assert data[3]["fix"] is None
    assert r.err == ""  # machine formats print no summary


def test_output_format_json_lines(project: Path) -> None:
    r = amp("check", SELECT, "--output-format", "json-lines")
    assert r.code == 1
    objects = [json.loads(line) for line in r.lines]
    a, layers = str(project / "a.py"), str(project / "layers.py")
    assert [(o["filename"], o["code"]) for o in objects] == [
        (a, "AMP501"), (a, "AMP501"), (layers, "AMP401"), (layers, "AMP402"),
    ]  # fmt: skip
    assert objects == json.loads(amp("check", SELECT, "--output-format", "json").out)


def test_output_format_json_empty(project: Path) -> None:
    r = amp("check", SELECT, "--output-format", "json", "clean.py")
    assert (r.code, json.loads(r.out)) == (0, [])
    assert amp("check", SELECT, "--output-format", "json-lines", "clean.py").out == ""


def test_output_format_github(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "--output-format", "github", "a.py")
    assert r.code == 1
    assert r.lines[0] == (
        "::warning title=amp-lint (AMP501),file=a.py,line=3,col=10,endLine=3,endColumn=37::" + A501_1.replace(" [*]", "")
    )
    assert len(r.lines) == 2 and r.lines[1].startswith("::warning title=amp-lint (AMP501),file=a.py,line=4,col=6,")


def test_output_format_sarif(project: Path) -> None:
    r = amp("check", SELECT, "--output-format", "sarif")
    assert r.code == 1
    log = json.loads(r.out)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "amp-lint"
    assert run["tool"]["driver"]["version"] == __version__
    results = run["results"]
    assert [res["ruleId"] for res in results] == ["AMP501", "AMP501", "AMP401", "AMP402"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (3, 10)
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("a.py")
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {"AMP501", "AMP401", "AMP402"} <= rule_ids
    import jsonschema

    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def test_unknown_output_format_is_usage_error(project: Path) -> None:
    r = amp("check", "--output-format", "xml")
    assert r.code == 2
    assert "Invalid value for '--output-format'" in r.err


def test_output_format_from_environment(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "a.py", env={"AMP_LINT_OUTPUT_FORMAT": "json-lines"})
    assert [json.loads(line)["code"] for line in r.lines] == ["AMP501", "AMP501"]


# -- statistics, show-fixes, unsafe-fixes --------------------------------------------------------

def test_statistics(project: Path) -> None:
    r = amp("check", SELECT, "--statistics")
    assert r.code == 1
    assert r.lines == [
        "2\tAMP501\t[*] deprecated-cuda-amp-api",
        "1\tAMP401\t[ ] unpadded-vocab",
        "1\tAMP402\t[ ] tensor-core-misaligned-dim",
    ]
    r = amp("check", SELECT, "--statistics", "--unsafe-fixes")
    assert "1\tAMP401\t[*] unpadded-vocab" in r.lines
    assert amp("check", SELECT, "--statistics", "clean.py").out == ""


def test_show_fixes(project: Path) -> None:
    r = amp("check", SELECT, "--show-fixes")
    assert r.code == 1
    assert r.lines[:4] == [
        A501_1,
        "  Safe fix: Use `torch.amp.GradScaler`",
        "  3 - scaler = torch.cuda.amp.GradScaler()",
        '  3 + scaler = torch.amp.GradScaler("cuda")',
    ]
    assert "  Unsafe fix: Pad the vocabulary to 50304" in r.lines
    assert r.lines[-1] == L402  # no fix to show


def test_unsafe_fixes_marks_and_applies_unsafe_fixes(project: Path) -> None:
    r = amp("check", SELECT, "--unsafe-fixes", "layers.py")
    assert r.lines == [L401.replace("AMP401 ", "AMP401 [*] "), L402]
    assert "[*] 1 fixable" in r.err and "hidden" not in r.err

    r = amp("fix", SELECT, "layers.py")  # safe fixes only: AMP401's padding is unsafe
    assert r.code == 1
    assert (project / "layers.py").read_text() == LAYERS

    r = amp("fix", SELECT, "--unsafe-fixes", "layers.py")
    assert r.code == 1  # AMP402 has no fix and remains
    assert r.lines == [L402]
    assert (project / "layers.py").read_text() == LAYERS.replace("VOCAB = 50257", "VOCAB = 50304")
    assert r.err.splitlines()[0] == "Found 2 findings (1 fixed, 1 remaining)."


def test_no_unsafe_fixes_overrides_config(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nunsafe-fixes = true\n')
    assert amp("check", SELECT, "layers.py").lines[0] == L401.replace("AMP401 ", "AMP401 [*] ")
    assert amp("check", SELECT, "--no-unsafe-fixes", "layers.py").lines[0] == L401


# -- fix and diff -------------------------------------------------------------------------------

def test_fix_writes_the_file_and_exits_0_when_nothing_remains(project: Path) -> None:
    r = amp("fix", "--select", "AMP501", "a.py")
    assert r.code == 0
    assert r.out == ""
    assert r.err.splitlines() == ["Found 2 findings (2 fixed, 0 remaining)."]
    assert (project / "a.py").read_text() == AUTOCAST_FIXED
    # A second fix changes nothing.
    r = amp("fix", "--select", "AMP501", "a.py")
    assert (r.code, r.err.strip()) == (0, "All checks passed!")
    assert (project / "a.py").read_text() == AUTOCAST_FIXED


def test_check_fix_is_fix(project: Path) -> None:
    r = amp("check", "--fix", "--select", "AMP501", "a.py")
    assert r.code == 0
    assert (project / "a.py").read_text() == AUTOCAST_FIXED


def test_fix_exits_1_when_findings_remain(project: Path) -> None:
    r = amp("fix", SELECT)
    assert r.code == 1
    assert r.lines == [L401, L402]
    assert (project / "a.py").read_text() == AUTOCAST_FIXED
    assert amp("fix", SELECT, "--exit-zero").code == 0


DIFF = """\
--- a/a.py
+++ b/a.py
@@ -1,5 +1,5 @@
 import torch
 
-scaler = torch.cuda.amp.GradScaler()
-with torch.cuda.amp.autocast():
+scaler = torch.amp.GradScaler("cuda")
+with torch.amp.autocast("cuda"):
     loss = 1.0
"""


@pytest.mark.parametrize("command", [["fix", "--diff"], ["check", "--diff"], ["check", "--fix", "--diff"]])
def test_diff_prints_a_patch_and_writes_nothing(project: Path, command: List[str]) -> None:
    before = {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()}
    r = amp(*command, SELECT)
    assert r.code == 1
    assert r.out == DIFF
    assert r.err.splitlines() == ["Would fix 2 findings."]
    assert {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()} == before


def test_diff_on_clean_code_exits_0(project: Path) -> None:
    r = amp("fix", "--diff", SELECT, "clean.py", "layers.py")
    assert (r.code, r.out) == (0, "")
    assert r.err.splitlines() == ["Would fix 0 findings."]
    assert amp("fix", "--diff", "-q", SELECT, "clean.py").err == ""


def test_diff_with_unsafe_fixes(project: Path) -> None:
    r = amp("fix", "--diff", "--unsafe-fixes", SELECT, "layers.py")
    assert r.code == 1
    assert "-VOCAB = 50257\n+VOCAB = 50304\n" in r.out
    assert (project / "layers.py").read_text() == LAYERS


def test_diff_applies_the_patch(project: Path) -> None:
    patch = shutil.which("patch")
    if patch is None:
        pytest.skip("patch(1) not installed")
    out = amp("fix", "--diff", SELECT).out
    subprocess.run([patch, "-p1", "-s"], input=out, text=True, cwd=project, check=True)
    assert (project / "a.py").read_text() == AUTOCAST_FIXED


# -- config file flags ---------------------------------------------------------------------------

def test_config_flag_uses_the_given_file(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nselect = ["AMP501"]\n')
    other = project / "conf" / "strict.toml"
    other.parent.mkdir()
    other.write_text('select = ["AMP402"]\n')
    assert amp("check", "a.py", "layers.py").lines == [A501_1, A501_2]
    assert amp("check", "--config", str(other), "a.py", "layers.py").lines == [L402]
    other.write_text('[tool.amp-lint]\nselect = ["AMP401"]\n')
    assert amp("check", "--config", "conf/strict.toml", "a.py", "layers.py").lines == [L401]


def test_config_flag_missing_file(project: Path) -> None:
    r = amp("check", "--config", "nope.toml")
    assert r.code == 2
    assert r.err.splitlines() == ["amp-lint: error: nope.toml: config file not found"]


def test_isolated_ignores_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nselect = ["AMP402"]\nunsafe-fixes = true\n')
    assert amp("check", "a.py", "layers.py").lines == [L402]
    r = amp("check", "--isolated", SELECT, "a.py", "layers.py")
    assert r.lines == [A501_1, A501_2, L401, L402]  # no [*] on AMP401: unsafe-fixes not read
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nselect = 1\n')  # even a broken one
    assert amp("check", "--isolated", "--select", "AMP501", "a.py").lines == [A501_1, A501_2]


def test_no_cache_gives_the_same_result_and_writes_no_cache(project: Path) -> None:
    r = amp("check", SELECT, "--no-cache")
    assert r.code == 1
    assert r.lines == [A501_1, A501_2, L401, L402]
    assert not (project / ".amp_lint_cache").exists()
    cached_first = amp("check", SELECT)
    cached_again = amp("check", SELECT)
    assert cached_first.lines == cached_again.lines == r.lines
    assert amp("check", SELECT, "--no-cache").lines == r.lines


def test_many_files_are_one_program(project: Path) -> None:
    for i in range(12):
        (project / f"m{i:02}.py").write_text(AUTOCAST)
    result = amp("check", "--select", "AMP501", "--no-cache")
    assert result.code == 1 and len(result.lines) == 26


HALF_TOY = """import torch
x = torch.nn.Linear(64, 64).half()(torch.randn(1000, 64).half())
total = x.sum(0)
scores = x.masked_fill(x > 0, -1e9)
"""


def test_magnitude_rules_skip_test_files(project: Path) -> None:
    """Test files run toy models in half on purpose: AMP1xx/AMP2xx leave them alone, AMP3xx does not."""
    for name in ("train.py", "tests/helpers.py", "test_model.py", "model_test.py", "conftest.py"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(HALF_TOY)
    result = amp("check", "--select", "AMP203,AMP301", "--no-cache", ".")
    found = sorted(line.split(":")[0] + " " + line.split()[1] for line in result.lines if " AMP" in line)
    assert found == ["conftest.py AMP301", "model_test.py AMP301", "test_model.py AMP301",
                     "tests/helpers.py AMP301", "train.py AMP203", "train.py AMP301"]


# -- stdin ---------------------------------------------------------------------------------------

def test_check_stdin(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "-", input=AUTOCAST)
    assert r.code == 1
    assert r.lines == [A501_1.replace("a.py", "-"), A501_2.replace("a.py", "-")]
    r = amp("check", "--select", "AMP501", "--stdin-filename", "pkg/train.py", "-", input=AUTOCAST)
    assert r.lines == [A501_1.replace("a.py", "pkg/train.py"), A501_2.replace("a.py", "pkg/train.py")]
    assert amp("check", "--select", "AMP501", "-", input=CLEAN).code == 0


def test_fix_stdin_prints_the_fixed_code(project: Path) -> None:
    r = amp("fix", "--select", "AMP501", "--stdin-filename", "train.py", "-", input=AUTOCAST)
    assert r.code == 0
    assert r.out == AUTOCAST_FIXED
    assert r.err.splitlines() == ["Found 2 findings (2 fixed, 0 remaining)."]
    # Remaining findings go to stderr: stdout is the code.
    r = amp("fix", SELECT, "--stdin-filename", "layers.py", "-", input=LAYERS)
    assert r.code == 1
    assert r.out == LAYERS
    assert L402 in r.err.splitlines()


def test_fix_stdin_keeps_bytes(project: Path) -> None:
    source = ("# -*- coding: latin-1 -*-\r\n" + AUTOCAST.replace("\n", "\r\n") + "# caf\xe9\r\n").encode("latin-1")
    r = amp("fix", "--select", "AMP501", "-", input=source)
    assert r.code == 0
    expected = ("# -*- coding: latin-1 -*-\r\n" + AUTOCAST_FIXED.replace("\n", "\r\n") + "# caf\xe9\r\n").encode("latin-1")
    assert r.out_bytes == expected


def test_fix_stdin_with_syntax_error_echoes_the_input(project: Path) -> None:
    r = amp("fix", "--stdin-filename", "x.py", "-", input="def f(:\n")
    assert r.code == 1
    assert r.out == "def f(:\n"
    assert r.err.startswith("x.py:1:") and " AMP000 SyntaxError: " in r.err


def test_fix_stdin_diff(project: Path) -> None:
    r = amp("fix", "--diff", "--select", "AMP501", "--stdin-filename", "a.py", "-", input=AUTOCAST)
    assert r.code == 1
    assert r.out == DIFF


def test_stdin_filename_drives_per_file_ignores_and_force_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.amp-lint]\nper-file-ignores = {"legacy/*" = ["AMP5"]}\nextend-exclude = ["vendored"]\n'
    )
    r = amp("check", "--select", "AMP501", "--stdin-filename", "legacy/old.py", "-", input=AUTOCAST)
    assert (r.code, r.out) == (0, "")
    args = ["--select", "AMP501", "--stdin-filename", "vendored/x.py", "-"]
    assert amp("check", *args, input=AUTOCAST).code == 1  # excluded only with --force-exclude
    r = amp("check", "--force-exclude", *args, input=AUTOCAST)
    assert (r.code, r.out) == (0, "")
    # An editor's format-on-save gets its buffer back unchanged.
    r = amp("fix", "--force-exclude", *args, input=AUTOCAST)
    assert (r.code, r.out) == (0, AUTOCAST)


def test_stdin_cannot_mix_with_paths(project: Path) -> None:
    r = amp("check", "a.py", "-", input=AUTOCAST)
    assert r.code == 2
    assert r.err.splitlines() == ["amp-lint: error: '-' (stdin) cannot be combined with other paths"]


# -- force-exclude -------------------------------------------------------------------------------

def test_force_exclude(project: Path) -> None:
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(AUTOCAST)
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nextend-exclude = ["legacy_*.py"]\n')
    (project / "legacy_x.py").write_text(AUTOCAST)
    # Explicit files are checked even when excluded...
    r = amp("check", "--select", "AMP501", "build/gen.py", "legacy_x.py")
    assert [line.split(":")[0] for line in r.lines] == ["build/gen.py"] * 2 + ["legacy_x.py"] * 2
    # ... unless --force-exclude (what pre-commit passes).
    r = amp("check", "--select", "AMP501", "--force-exclude", "build/gen.py", "legacy_x.py", "a.py")
    assert r.lines == [A501_1, A501_2]
    r = amp("check", "--select", "AMP501", "--force-exclude", "build/gen.py")
    assert (r.code, r.out) == (0, "")
    r = amp("fix", "--select", "AMP501", "--force-exclude", "build/gen.py")
    assert r.code == 0 and (project / "build" / "gen.py").read_text() == AUTOCAST


# -- rule ---------------------------------------------------------------------------------------

def test_rule_code(project: Path) -> None:
    r = amp("rule", "AMP501")
    assert r.code == 0
    text = r.out
    assert text.startswith("# deprecated-cuda-amp-api (AMP501)\n")
    sections = ["## What it does", "## Why is this bad?", "## Example", "Use instead:", "## Fix safety", "## References"]
    positions = [text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert "scaler = torch.cuda.amp.GradScaler()" in text
    assert 'scaler = torch.amp.GradScaler("cuda")' in text
    assert amp("rule", "amp501").out == text
    assert amp("rule", "deprecated-cuda-amp-api").out == text


def test_rule_unknown_or_missing(project: Path) -> None:
    r = amp("rule", "AMP999")
    assert (r.code, r.err.splitlines()) == (2, ["amp-lint: error: unknown rule 'AMP999'"])
    r = amp("rule")
    assert (r.code, r.err.splitlines()) == (2, ["amp-lint: error: give a rule code (e.g. AMP301) or --all"])
    assert amp("rule", "AMP501", "--all").code == 2


def test_rule_all(project: Path) -> None:
    r = amp("rule", "--all")
    assert r.code == 0
    headers = [line for line in r.lines if line.startswith("# ")]
    assert headers == ["# syntax-error (AMP000)"] + [f"# {rule.name} ({rule.code})" for rule in ALL_RULES]


def test_rule_all_json(project: Path) -> None:
    r = amp("rule", "--all", "--output-format", "json")
    assert r.code == 0
    data = json.loads(r.out)
    assert [d["code"] for d in data] == ["AMP000"] + [rule.code for rule in ALL_RULES]
    by_code = {d["code"]: d for d in data}
    assert by_code["AMP501"]["name"] == "deprecated-cuda-amp-api"
    assert by_code["AMP501"]["fix"] == "safe"
    assert by_code["AMP401"]["fix"] == "unsafe"
    assert by_code["AMP501"]["explanation"] == amp("rule", "AMP501").out  # one source of truth
    one = json.loads(amp("rule", "AMP401", "--output-format", "json").out)
    assert one == by_code["AMP401"]


# -- processes: the console script and python -m --------------------------------------------------

def _console_script() -> str:
    # The script installed beside this interpreter first: another amp-lint on PATH may be another checkout's.
    beside = Path(sys.executable).with_name("amp-lint")
    found = str(beside) if beside.exists() else (shutil.which("amp-lint") or str(beside))
    if not Path(found).exists():
        pytest.skip("amp-lint console script not installed")
    return found


def test_console_script_exit_codes(project: Path) -> None:
    exe = _console_script()
    clean = run_process([exe, "check", "--select", "AMP501", "clean.py"], project)
    assert (clean.code, clean.out) == (0, "")
    found = run_process([exe, "check", "--select", "AMP501", "a.py"], project)
    assert (found.code, found.out.splitlines()) == (1, [A501_1, A501_2])
    usage = run_process([exe, "check", "--select", "NOPE"], project)
    assert usage.code == 2 and usage.err.count("\n") == 1
    missing = run_process([exe, "check", "missing.py"], project)
    assert (missing.code, missing.err.splitlines()[0]) == (2, "amp-lint: error: missing.py: No such file or directory")
    bad_flag = run_process([exe, "check", "--no-such-flag"], project)
    assert bad_flag.code == 2 and "No such option" in bad_flag.err


def test_python_dash_m(project: Path) -> None:
    r = run_process([sys.executable, "-m", "amp_lint", "check", "--select", "AMP501", "a.py"], project)
    assert (r.code, r.out.splitlines()) == (1, [A501_1, A501_2])
    version = run_process([sys.executable, "-m", "amp_lint", "--version"], project)
    assert version.out.strip() == f"amp-lint, version {__version__}"
    helped = run_process([sys.executable, "-m", "amp_lint", "--help"], project)
    assert helped.code == 0 and helped.out.startswith("Usage: amp-lint")
    fixed = run_process([sys.executable, "-m", "amp_lint", "fix", "--select", "AMP501", "-"], project, input=AUTOCAST)
    assert (fixed.code, fixed.out) == (0, AUTOCAST_FIXED)


def test_help_lists_every_flag(project: Path) -> None:
    for command in ("check", "fix"):
        text = amp(command, "--help").out
        for flag in ("--select", "--ignore", "--extend-select", "--output-format", "--statistics", "--exit-zero",
                     "--diff", "--show-fixes", "--unsafe-fixes", "--config", "--isolated", "--no-cache",
                     "--stdin-filename", "--force-exclude", "--quiet", "--output-file", "--preview", "--exclude",
                     "--extend-exclude", "--show-settings", "--show-files"):
            assert flag in text, (command, flag)
    assert "--add-noqa" in amp("check", "--help").out
