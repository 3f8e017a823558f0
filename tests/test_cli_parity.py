"""ruff parity of the command line: --output-file, --statistics in JSON, --show-settings,
--show-files, --exclude, --add-noqa, --preview, reserved and syntax-error codes, and nothing
skipped without a word (empty folders, dangling symlinks, symlink loops, unreadable files)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from click.testing import CliRunner

from amp_lint.cli import NO_FILES_WARNING, main

AUTOCAST = """\
import torch

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    loss = 1.0
"""
FINDING_1 = "a.py:3:10: AMP501 [*] `torch.cuda.amp.GradScaler` is deprecated since torch 2.4; use `torch.amp.GradScaler`"
FINDING_2 = "a.py:4:6: AMP501 [*] `torch.cuda.amp.autocast` is deprecated since torch 2.4; use `torch.amp.autocast`"
NO_FILES = f"amp-lint: warning: {NO_FILES_WARNING}"


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> List[str]:
        return self.out.splitlines()

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def amp(*args: str, input: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> Result:
    result = CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"amp-lint {' '.join(args)} raised {result.exception!r}\n{result.output}")
    return Result(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "a.py").write_text(AUTOCAST)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMP_LINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.delenv("AMP_LINT_OUTPUT_FILE", raising=False)
    return tmp_path


# -- --output-file ---------------------------------------------------------------------------------

def test_output_file_receives_the_findings(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "--output-file", "reports/out.txt", "--no-cache")
    assert r.code == 1 and r.out == ""
    assert (project / "reports" / "out.txt").read_text().splitlines() == [FINDING_1, FINDING_2]
    assert r.err.splitlines()[0] == "Found 2 findings."  # the summary stays on stderr
    r = amp("check", "--select", "AMP501", "--output-format", "json", "-o", "out.json")
    assert r.code == 1 and r.out == "" and len(json.loads((project / "out.json").read_text())) == 2
    r = amp("check", "--select", "AMP501", env={"AMP_LINT_OUTPUT_FILE": "env.txt"})
    assert r.out == "" and (project / "env.txt").read_text().splitlines() == [FINDING_1, FINDING_2]


def test_output_file_with_diff_and_statistics(project: Path) -> None:
    r = amp("fix", "--diff", "--select", "AMP501", "-o", "fix.diff")
    assert r.code == 1 and r.out == ""
    assert (project / "fix.diff").read_text().startswith("--- a/a.py\n+++ b/a.py\n")
    assert (project / "a.py").read_text() == AUTOCAST
    r = amp("check", "--select", "AMP501", "--statistics", "-o", "stats.txt")
    assert (project / "stats.txt").read_text() == "2\tAMP501\t[*] deprecated-cuda-amp-api\n"


def test_unwritable_output_file_is_one_line_error(project: Path) -> None:
    (project / "taken").write_text("a file, not a directory")
    r = amp("check", "--select", "AMP501", "-o", "taken/out.txt")
    assert r.code == 2
    assert r.err.splitlines()[-1].startswith("amp-lint: error: taken/out.txt: cannot write the output file: ")


# -- --statistics honours --output-format ----------------------------------------------------------

def test_statistics_in_json(project: Path) -> None:
    r = amp("check", "--select", "AMP501", "--statistics", "--output-format", "json")
    assert r.code == 1 and r.err == ""
    assert json.loads(r.out) == [
        {"code": "AMP501", "name": "deprecated-cuda-amp-api", "count": 2, "fixable": True, "fixable_count": 2}
    ]
    lines = amp("check", "--select", "AMP501", "--statistics", "--output-format", "json-lines").lines
    assert [json.loads(line)["count"] for line in lines] == [2]


def test_statistics_in_a_format_without_statistics_is_an_error(project: Path) -> None:
    r = amp("check", "--statistics", "--output-format", "sarif")
    assert r.code == 2 and r.out == ""
    assert r.err.splitlines() == [
        "amp-lint: error: --statistics supports the concise, full, json, json-lines output formats, not 'sarif'"
    ]


# -- empty folders and skipped paths -------------------------------------------------------------

def test_empty_folder_warns_and_does_not_pass(project: Path) -> None:
    (project / "empty").mkdir()
    (project / "empty" / "notes.txt").write_text("not python")
    r = amp("check", "empty")
    assert (r.code, r.out) == (0, "")
    assert r.err.splitlines() == [NO_FILES]
    assert "All checks passed!" not in r.err
    r = amp("check", "--output-format", "json", "empty")
    assert (r.code, json.loads(r.out)) == (0, [])
    assert amp("fix", "empty").err.splitlines() == [NO_FILES]


def test_everything_excluded_warns(project: Path) -> None:
    r = amp("check", "--force-exclude", "--extend-exclude", "a.py", "a.py")
    assert (r.code, r.err.splitlines()) == (0, [NO_FILES])


def test_dangling_symlink_and_symlink_loop_are_reported(project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "b.py").write_text(AUTOCAST)
    os.symlink("missing.py", project / "pkg" / "dangling.py")
    os.symlink("loop_b.py", project / "pkg" / "loop_a.py")
    os.symlink("loop_a.py", project / "pkg" / "loop_b.py")
    os.symlink("notes.txt", project / "pkg" / "not_python.txt")  # not Python: nothing to say
    r = amp("check", "--select", "AMP501", "--no-cache", "pkg")
    assert r.code == 1
    assert [line.split(":")[0] for line in r.lines] == ["pkg/b.py", "pkg/b.py"]
    assert r.err.splitlines() == [
        "amp-lint: warning: pkg/dangling.py: skipped (dangling symlink to 'missing.py')",
        "amp-lint: warning: pkg/loop_a.py: skipped (symlink loop)",
        "amp-lint: warning: pkg/loop_b.py: skipped (symlink loop)",
        "Found 2 findings; 3 paths skipped (see above).",
        "[*] 2 fixable with `amp-lint fix`.",
    ]
    # Named explicitly, the same paths are errors.
    r = amp("check", "pkg/dangling.py", "pkg/loop_a.py")
    assert r.code == 2
    assert r.err.splitlines() == [
        "amp-lint: error: pkg/dangling.py: dangling symlink to 'missing.py'",
        "amp-lint: error: pkg/loop_a.py: symlink loop",
    ]


def test_files_that_cannot_be_checked_are_counted_in_the_summary(project: Path) -> None:
    (project / "blob.py").write_bytes(b"\x00\x01")
    (project / "latin.py").write_bytes(b"x = '\xe9'\n")
    r = amp("check", "--select", "AMP501", "--no-cache")
    assert r.code == 2
    assert r.lines == [FINDING_1, FINDING_2]
    assert r.err.splitlines()[-2:] == [
        "Found 2 findings; 2 files could not be checked (see above).",
        "[*] 2 fixable with `amp-lint fix`.",
    ]
    (project / "a.py").unlink()
    r = amp("check", "--select", "AMP501", "--no-cache")
    assert r.code == 2 and "All checks passed!" not in r.err
    (project / "ok.py").write_text("x = 1\n")
    assert amp("check", "--no-cache").err.splitlines()[-1] == "No findings; 2 files could not be checked (see above)."


def test_unlistable_directory_is_an_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "private").mkdir()
    (project / "private" / "x.py").write_text(AUTOCAST)
    real_scandir = os.scandir

    def scandir(path):
        if os.path.basename(os.fspath(path)) == "private":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr("amp_lint.discovery.os.scandir", scandir)
    r = amp("check", "--select", "AMP501", "--no-cache")
    assert r.code == 2
    assert "amp-lint: error: private: cannot list directory: Permission denied" in r.err.splitlines()
    assert "1 file could not be checked" in r.err.splitlines()[-2]


# -- --show-settings, --show-files, --exclude ---------------------------------------------------------

def test_show_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.amp-lint]\ntorch-version = "2.2"\nper-file-ignores = { "tests/*" = ["AMP001"] }\n')
    r = amp("check", "--show-settings", "--select", "AMP5", "a.py")
    assert r.code == 0 and r.err == ""
    lines = r.lines
    assert lines[0] == f'Resolved settings for: "{project / "a.py"}"'
    assert lines[1] == f'Settings path: "{(project / "pyproject.toml").resolve()}"'
    assert 'torch-version = "2.2"' in lines
    assert 'enabled-rules = ["AMP000", "AMP501", "AMP502"]' in lines
    assert 'per-file-ignores = {"tests/*" = ["AMP001"]}' in lines
    assert "AMP501" not in r.out.split("enabled-rules")[0]  # no findings: nothing was checked
    assert amp("check", "--show-settings", "--isolated").lines[1] == "Settings path: none (defaults)"


def test_show_files_and_exclude(project: Path) -> None:
    for rel in ("pkg/m.py", "pkg/gen/g.py", "build/b.py", "stubs/s.pyi", "notes.txt"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("x = 1\n")
    shown = lambda *args: [Path(line).relative_to(project).as_posix() for line in amp("check", "--show-files", *args).lines]  # noqa: E731
    assert shown() == ["a.py", "pkg/gen/g.py", "pkg/m.py", "stubs/s.pyi"]  # build/ is a default exclude
    assert shown("--extend-exclude", "gen") == ["a.py", "pkg/m.py", "stubs/s.pyi"]
    # --exclude replaces the configured and default list, as in ruff.
    assert shown("--exclude", "stubs,pkg/gen") == ["a.py", "build/b.py", "pkg/m.py"]
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nextend-exclude = ["pkg"]\n')
    assert shown() == ["a.py", "stubs/s.pyi"]
    assert shown("--extend-exclude", "stubs") == ["a.py"]
    r = amp("check", "--select", "AMP501", "--exclude", "a.py")
    assert (r.code, r.err.splitlines()) == (0, ["All checks passed!"])


# -- --add-noqa ------------------------------------------------------------------------------------

NOQA_SOURCE = """\
import torch
scaler = torch.cuda.amp.GradScaler()  # keep this comment
with torch.cuda.amp.autocast():  # noqa: AMP301
    pass
doc = '''text
''' + str(torch.cuda.amp.GradScaler)
ok = torch.cuda.amp.autocast(
    enabled=False)
"""
NOQA_EXPECTED = """\
import torch
scaler = torch.cuda.amp.GradScaler()  # keep this comment  # noqa: AMP501
with torch.cuda.amp.autocast():  # noqa: AMP301, AMP501
    pass
doc = '''text
''' + str(torch.cuda.amp.GradScaler)  # noqa: AMP501
ok = torch.cuda.amp.autocast(  # noqa: AMP501
    enabled=False)
"""


def test_add_noqa_adds_merges_and_is_idempotent(project: Path) -> None:
    target = project / "a.py"
    target.write_text(NOQA_SOURCE)
    r = amp("check", "--add-noqa", "--select", "AMP501", "--no-cache")
    assert r.code == 0 and r.out == ""
    assert r.err.splitlines() == ["Added 4 noqa directives."]
    assert target.read_text() == NOQA_EXPECTED
    assert amp("check", "--select", "AMP501", "--no-cache").code == 0  # every finding is now suppressed
    r = amp("check", "--add-noqa", "--select", "AMP501", "--no-cache")
    assert r.err.splitlines() == ["Added 0 noqa directives."]
    assert target.read_text() == NOQA_EXPECTED


def test_add_noqa_keeps_encoding_bom_and_line_endings(project: Path) -> None:
    latin = project / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\r\nimport torch\r\ns = torch.cuda.amp.GradScaler()\r\n# caf\xe9\r\n")
    bom = project / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    r = amp("check", "--add-noqa", "--select", "AMP501", "--no-cache", "latin.py", "bom.py")
    assert r.code == 0 and r.err.splitlines() == ["Added 2 noqa directives."]
    assert latin.read_bytes() == (b"# -*- coding: latin-1 -*-\r\nimport torch\r\n"
                                  b"s = torch.cuda.amp.GradScaler()  # noqa: AMP501\r\n# caf\xe9\r\n")
    assert bom.read_bytes() == b"\xef\xbb\xbfimport torch\nwith torch.cuda.amp.autocast():  # noqa: AMP501\n    pass\n"
    assert not [p.name for p in project.iterdir() if p.name.endswith(".tmp")]  # written atomically


def test_add_noqa_leaves_lines_that_cannot_take_a_comment(project: Path) -> None:
    source = "import torch\ns = f(torch.cuda.amp.GradScaler(), '''\n''')\nt = 1 + \\\n    torch.cuda.amp.GradScaler()\n"
    (project / "a.py").write_text(source)
    r = amp("check", "--add-noqa", "--select", "AMP501", "--no-cache")
    assert r.code == 0
    assert r.err.splitlines() == [
        "amp-lint: warning: a.py:2: no noqa directive added: the line ends inside a multi-line string",
        "Added 1 noqa directive.",
    ]
    assert (project / "a.py").read_text() == source.replace("    torch.cuda.amp.GradScaler()\n",
                                                            "    torch.cuda.amp.GradScaler()  # noqa: AMP501\n")


def test_add_noqa_refuses_fix_diff_and_stdin(project: Path) -> None:
    for extra in (["--fix"], ["--diff"]):
        r = amp("check", "--add-noqa", *extra)
        assert (r.code, r.err.splitlines()) == (2, ["amp-lint: error: --add-noqa cannot be combined with --fix or --diff"])
    r = amp("check", "--add-noqa", "-", input=AUTOCAST)
    assert (r.code, r.err.splitlines()) == (2, ["amp-lint: error: --add-noqa edits files; it cannot read stdin ('-')"])
    assert (project / "a.py").read_text() == AUTOCAST


# -- --preview: preview rules and low-confidence findings ----------------------------------------------

UNCERTAIN = """\
import torch
a = torch.randn(4, 4)
with torch.autocast("cpu", dtype=get_dtype()):
    s = torch.softmax(a @ a, dim=-1)
"""


def test_preview_shows_low_confidence_findings(project: Path) -> None:
    (project / "a.py").write_text(UNCERTAIN)
    assert amp("check", "--select", "AMP201", "--no-cache").code == 0
    r = amp("check", "--select", "AMP201", "--preview", "--no-cache", "--output-format", "json")
    assert r.code == 1 and [(f["code"], f["confidence"]) for f in json.loads(r.out)] == [("AMP201", "low")]
    (project / "pyproject.toml").write_text("[tool.amp-lint]\npreview = true\n")
    assert amp("check", "--select", "AMP201", "--no-cache").code == 1
    assert amp("check", "--select", "AMP201", "--no-preview", "--no-cache").code == 0


def test_preview_rules_run_only_in_preview_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from amp_lint.config import Settings
    from amp_lint.rules import RULES_BY_CODE
    from amp_lint.runner import Selection

    rule = RULES_BY_CODE["AMP402"]
    monkeypatch.setattr(rule, "preview", True)
    assert rule not in Selection.from_settings(Settings()).rules
    assert rule in Selection.from_settings(Settings(preview=True)).rules
    assert "This rule is in preview" in rule.render_docs()


# -- rule AMP000, reserved codes ---------------------------------------------------------------------

def test_rule_syntax_error_code(project: Path) -> None:
    r = amp("rule", "AMP000")
    assert r.code == 0 and r.out.startswith("# syntax-error (AMP000)\n")
    assert r.out == (Path(__file__).resolve().parents[1] / "rules" / "AMP000.md").read_text()
    assert amp("rule", "syntax-error").out == r.out
    data = json.loads(amp("rule", "AMP000", "--output-format", "json").out)
    assert (data["code"], data["name"], data["fix"], data["explanation"]) == ("AMP000", "syntax-error", "none", r.out)


def test_rule_reserved_code_says_reserved(project: Path) -> None:
    r = amp("rule", "AMP105")
    assert r.code == 0
    assert r.lines == ["AMP105 (backward-inside-autocast) is reserved for a planned rule that is not implemented "
                       "yet; selecting it is allowed and reports nothing."]
    data = json.loads(amp("rule", "amp105", "--output-format", "json").out)
    assert (data["code"], data["reserved"]) == ("AMP105", True)
    assert amp("rule", "AMP999").code == 2  # unknown stays an error


@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore"])
def test_reserved_selector_warns_in_one_line(project: Path, flag: str) -> None:
    r = amp("check", flag, "AMP105", "--no-cache", "a.py")
    warning = ("amp-lint: warning: AMP105 (backward-inside-autocast) is reserved for a planned rule that is not "
               "implemented yet; it has no effect")
    assert r.err.splitlines()[0] == warning
    assert r.err.count("reserved") == 1


def test_reserved_prefix_and_config_warn(project: Path) -> None:
    r = amp("check", "--select", "AMP21", "a.py")
    assert r.err.splitlines()[0] == (
        "amp-lint: warning: AMP21 matches only reserved codes (AMP210, AMP211, AMP213, AMP215) of planned rules "
        "that are not implemented yet; it has no effect")
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nextend-select = ["AMP403"]\n')
    assert "AMP403 (batch-size-not-multiple-of-8) is reserved" in amp("check", "a.py").err
    assert "reserved" not in amp("check", "--isolated", "--select", "AMP1", "a.py").err  # implemented codes match
