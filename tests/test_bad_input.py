"""Bad input and safe writing: syntax errors, encodings, binary/empty/unreadable/missing files; fix
keeps encoding, BOM, line endings, comments and permissions, writes atomically, is idempotent
and never writes code that does not parse."""
from __future__ import annotations

import ast

import json
import os
import stat
from pathlib import Path
from typing import List, Optional

import libcst as cst
import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.config import Settings
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixPlan
from amp_lint.engine.linter import fix_text
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Rule
from amp_lint.runner import RunOptions, Selection, process_path
from amp_lint.source import SourceError, decode_source, read_source, write_atomic

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
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> List[str]:
        return self.out.splitlines()

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def amp(*args: str, input: Optional[bytes] = None) -> Result:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"amp-lint {' '.join(args)} raised {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return Result(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMP_LINT_OUTPUT_FORMAT", raising=False)
    (tmp_path / "a.py").write_text(AUTOCAST)
    return tmp_path


# -- syntax errors ----------------------------------------------------------------------------------

def test_syntax_error_is_a_finding_and_the_run_goes_on(project: Path) -> None:
    (project / "broken.py").write_text("import torch\n\ndef f(:\n    pass\n")
    r = amp("check", "--select", "AMP501,AMP000")
    assert r.code == 1
    assert r.lines[:2] == [
        "a.py:3:10: AMP501 [*] `torch.cuda.amp.GradScaler` is deprecated since torch 2.4; use `torch.amp.GradScaler`",
        "a.py:4:6: AMP501 [*] `torch.cuda.amp.autocast` is deprecated since torch 2.4; use `torch.amp.autocast`",
    ]
    assert len(r.lines) == 3
    assert r.lines[2].startswith("broken.py:3:7: AMP000 SyntaxError: ")
    assert "Found 3 findings." in r.err


def test_syntax_error_is_reported_whichever_rules_are_selected(project: Path) -> None:
    (project / "broken.py").write_text("x = (1,\n")  # no rule's prefilter token: ast finds it
    r = amp("check", "--select", "AMP4", "broken.py")
    assert r.code == 1
    assert len(r.lines) == 1
    row, col = map(int, r.lines[0].split(":")[1:3])
    assert r.lines[0].split()[1] == "AMP000"
    assert row == 1 and col >= 1
    (project / "broken2.py").write_text("import torch\nx = torch.cuda.amp.autocast(\n")  # the CST path
    r = amp("check", "--select", "AMP501", "broken2.py")
    assert r.code == 1 and [line.split()[1] for line in r.lines] == ["AMP000"]
    assert amp("check", "--select", "AMP501", "--ignore", "AMP000", "broken.py").code == 0
    assert amp("check", "--ignore", "ALL", "broken.py").code == 0
    (project / "pyproject.toml").write_text('[tool.amp-lint]\nselect = ["AMP5"]\nignore = ["AMP0"]\n')
    assert amp("check", "broken.py").code == 0


def test_syntax_errors_are_always_selected() -> None:
    from amp_lint.config import ALWAYS_SELECTED
    from amp_lint.engine.linter import SYNTAX_ERROR_CODE

    assert ALWAYS_SELECTED == (SYNTAX_ERROR_CODE,)


def test_syntax_error_in_json(project: Path) -> None:
    (project / "broken.py").write_text("x = 1\ndef f(:\n")
    (finding,) = json.loads(amp("check", "--output-format", "json", "--select", "AMP501", "broken.py").out)
    assert finding["code"] == "AMP000"
    assert finding["name"] == "syntax-error"
    assert finding["message"].startswith("SyntaxError: ")
    assert finding["location"] == {"row": 2, "column": 7}
    assert finding["fix"] is None
    # Whatever rules run (the CST parser's error instead of ast's), the row is the broken line.
    (finding,) = json.loads(amp("check", "--output-format", "json", "broken.py").out)
    assert (finding["code"], finding["location"]["row"]) == ("AMP000", 2)


def test_fix_leaves_a_file_with_a_syntax_error_untouched(project: Path) -> None:
    data = b"import torch\nx = torch.cuda.amp.autocast()\ndef f(:\n"
    (project / "broken.py").write_bytes(data)
    r = amp("fix", "--select", "AMP501", "broken.py", "a.py")
    assert r.code == 1
    assert (project / "broken.py").read_bytes() == data
    assert (project / "a.py").read_text() == AUTOCAST_FIXED  # the other file was still fixed


# -- unreadable input: one line each, never a traceback ----------------------------------------------

def test_non_utf8_file(project: Path) -> None:
    (project / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    r = amp("check", "--select", "AMP501")
    assert r.code == 2
    assert "amp-lint: error: latin.py: not valid utf-8 (byte 5): declare the file's encoding" in r.err.splitlines()
    assert [line.split(":")[0] for line in r.lines] == ["a.py", "a.py"]  # the run went on


def test_unknown_declared_encoding(project: Path) -> None:
    (project / "enc.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    r = amp("check", "enc.py")
    assert (r.code, r.err.splitlines()[0]) == (2, "amp-lint: error: enc.py: unknown encoding 'klingon'")


def test_binary_file(project: Path) -> None:
    (project / "blob.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe")
    r = amp("check", "--select", "AMP501")
    assert r.code == 2
    assert "amp-lint: error: blob.py: binary file (contains NUL bytes)" in r.err.splitlines()
    assert len(r.lines) == 2
    r = amp("fix", "--select", "AMP501", "blob.py")
    assert r.code == 2 and (project / "blob.py").read_bytes().startswith(b"\x7fELF")


def test_binary_stdin(project: Path) -> None:
    r = amp("check", "-", input=b"\x00\x01\x02")
    assert r.code == 2
    assert r.err.splitlines() == ["amp-lint: error: -: binary file (contains NUL bytes)"]
    r = amp("fix", "--stdin-filename", "x.py", "-", input=b"\x00\x01\x02")
    assert (r.code, r.out) == (2, "")
    assert r.err.splitlines() == ["amp-lint: error: x.py: binary file (contains NUL bytes)"]


@pytest.mark.parametrize("content", [b"", b"\n", b"# only a comment\n", b"\xef\xbb\xbf"])
def test_empty_files_are_fine(project: Path, content: bytes) -> None:
    (project / "empty.py").write_bytes(content)
    r = amp("check", "empty.py")
    assert (r.code, r.out, r.err.strip()) == (0, "", "All checks passed!")
    assert amp("fix", "empty.py").code == 0
    assert (project / "empty.py").read_bytes() == content


def test_unreadable_file(project: Path) -> None:
    locked = project / "locked.py"
    locked.write_text(AUTOCAST)
    locked.chmod(0)
    try:
        r = amp("check", "--select", "AMP501")
        if IS_ROOT:
            # root reads it anyway: it is simply checked.
            assert r.code == 1 and "locked.py:3:10: AMP501" in r.out
        else:
            assert r.code == 2
            assert "amp-lint: error: locked.py: Permission denied" in r.err.splitlines()
            assert [line.split(":")[0] for line in r.lines] == ["a.py", "a.py"]
    finally:
        locked.chmod(0o644)


def test_nonexistent_paths(project: Path) -> None:
    r = amp("check", "nope.py", "no/such/dir")
    assert r.code == 2
    assert r.err.splitlines() == [
        "amp-lint: error: nope.py: No such file or directory",
        "amp-lint: error: no/such/dir: No such file or directory",
    ]
    assert r.out == ""
    r = amp("fix", "nope.py")
    assert r.code == 2 and r.err.splitlines() == ["amp-lint: error: nope.py: No such file or directory"]


def test_errors_win_over_exit_zero_and_are_in_every_format(project: Path) -> None:
    (project / "blob.py").write_bytes(b"\x00")
    assert amp("check", "--exit-zero", "blob.py").code == 2
    for fmt in ("json", "json-lines", "sarif", "github", "full"):
        r = amp("check", "--output-format", fmt, "blob.py")
        assert r.code == 2 and "blob.py: binary file" in r.err, fmt


def test_read_source_errors_are_one_line(project: Path) -> None:
    with pytest.raises(SourceError, match="^is a directory$"):
        read_source(str(project))
    with pytest.raises(SourceError, match="No such file"):
        read_source(str(project / "missing.py"))
    with pytest.raises(SourceError, match=r"^not valid utf-8 \(byte 0\)"):
        decode_source("x.py", b"\xff\n")


# -- encodings, BOM, line endings ------------------------------------------------------------------

def test_fix_keeps_latin1_with_coding_cookie(project: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + AUTOCAST + "# café, naïve\n"
    path = project / "latin.py"
    path.write_bytes(text.encode("latin-1"))
    r = amp("fix", "--select", "AMP501", "latin.py")
    assert r.code == 0
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n" + AUTOCAST_FIXED + "# café, naïve\n").encode("latin-1")


def test_fix_keeps_bom_and_crlf(project: Path) -> None:
    path = project / "win.py"
    path.write_bytes(b"\xef\xbb\xbf" + AUTOCAST.replace("\n", "\r\n").encode())
    r = amp("fix", "--select", "AMP501", "win.py")
    assert r.code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + AUTOCAST_FIXED.replace("\n", "\r\n").encode()


def test_fix_keeps_crlf_without_bom_and_non_ascii_utf8(project: Path) -> None:
    path = project / "u.py"
    source = "# ünïcode ✓\r\n" + AUTOCAST.replace("\n", "\r\n")
    path.write_bytes(source.encode())
    assert amp("fix", "--select", "AMP501", "u.py").code == 0
    assert path.read_bytes() == ("# ünïcode ✓\r\n" + AUTOCAST_FIXED.replace("\n", "\r\n")).encode()


def test_fix_keeps_comments_and_formatting(project: Path) -> None:
    source = (
        "import torch  # the framework\n"
        "\n"
        "# A scaler for fp16.\n"
        "scaler = torch.cuda.amp.GradScaler(  # old API\n"
        "    init_scale=2.0**16,   # keep this\n"
        "    growth_interval=2000,\n"
        ")\n"
        "\n"
        "\n"
        "with torch.cuda.amp.autocast(enabled=True):    # weird spacing stays\n"
        "    pass\n"
    )
    path = project / "c.py"
    path.write_text(source)
    assert amp("fix", "--select", "AMP501", "c.py").code == 0
    fixed = path.read_text()
    for comment in ("# the framework", "# A scaler for fp16.", "# old API", "# keep this", "# weird spacing stays"):
        assert comment in fixed
    assert "torch.cuda.amp" not in fixed
    assert 'with torch.amp.autocast("cuda", enabled=True):    # weird spacing stays\n' in fixed
    assert fixed.startswith("import torch  # the framework\n\n# A scaler for fp16.\nscaler = torch.amp.GradScaler(  # old API\n")
    compile(fixed, "c.py", "exec")


def test_fix_twice_changes_nothing(project: Path) -> None:
    (project / "layers.py").write_text("import torch.nn as nn\nVOCAB = 50257\nhead = nn.Linear(768, VOCAB)\n")
    first = amp("fix", "--select", "AMP501,AMP401,AMP402", "--unsafe-fixes")
    assert first.code == 0
    snapshot = {p.name: p.read_bytes() for p in project.glob("*.py")}
    second = amp("fix", "--select", "AMP501,AMP401,AMP402", "--unsafe-fixes")
    assert second.code == 0
    assert second.err.strip() == "All checks passed!"
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == snapshot
    assert amp("fix", "--diff", "--select", "AMP501,AMP401,AMP402", "--unsafe-fixes").out == ""


# -- writing safely ---------------------------------------------------------------------------------

def test_fix_keeps_permissions_and_leaves_no_temp_files(project: Path) -> None:
    path = project / "a.py"
    path.chmod(0o751)
    assert amp("fix", "--select", "AMP501", "a.py").code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in project.iterdir() if not p.name.startswith(".amp_lint_cache")) == ["a.py"]


def test_fix_replaces_the_file_atomically(project: Path) -> None:
    """The fixed file is a new inode renamed over the old one: a reader never sees half a file."""
    path = project / "a.py"
    hard_link = project / "a_link.py"
    os.link(path, hard_link)
    assert amp("fix", "--select", "AMP501", "a.py").code == 0
    assert path.read_text() == AUTOCAST_FIXED
    assert hard_link.read_text() == AUTOCAST  # the old inode is untouched


def test_fix_writes_through_a_symlink(project: Path) -> None:
    real = project / "real"
    real.mkdir()
    (project / "a.py").rename(real / "a.py")
    (project / "link.py").symlink_to(real / "a.py")
    assert amp("fix", "--select", "AMP501", "link.py").code == 0
    assert (project / "link.py").is_symlink()
    assert (real / "a.py").read_text() == AUTOCAST_FIXED
    assert sorted(p.name for p in real.iterdir()) == ["a.py"]


def test_write_atomic_cleans_up_on_failure(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = project / "a.py"

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(str(path), b"new")
    assert path.read_text() == AUTOCAST
    assert sorted(p.name for p in project.iterdir()) == ["a.py"]


def test_fix_reports_a_write_failure_in_one_line(project: Path) -> None:
    if IS_ROOT:
        pytest.skip("root can write into a read-only directory")
    sub = project / "ro"
    sub.mkdir()
    (sub / "m.py").write_text(AUTOCAST)
    sub.chmod(0o555)
    try:
        r = amp("fix", "--select", "AMP501", "ro/m.py")
        assert r.code == 2
        assert r.err.splitlines()[0].startswith("amp-lint: error: ro/m.py: cannot write fixed file: ")
        assert (sub / "m.py").read_text() == AUTOCAST
    finally:
        sub.chmod(0o755)


class _BreaksCode(Rule):
    """A rule whose 'fix' turns ``a = ...`` into ``1 = ...`` (LibCST renders it; Python rejects it)."""

    code = "AMP501"  # borrowed: selection and reporting need a known code
    name = "breaks-code"
    severity = Severity.ERROR
    summary = "test rule"
    docs = ""
    fix_applicability = Applicability.SAFE

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "a":
            def build(fctx):
                found = fctx.node(target)
                return CstFix("break it", Applicability.SAFE, replacements=[(found, cst.Integer("1"))])

            self.report(target, "assignment to a", fix=FixPlan("break it", Applicability.SAFE, build))


def test_fix_never_returns_code_that_does_not_parse() -> None:
    text = "a = 1\nb = 2\n"
    new_text, fixed = fix_text("m.py", text, Settings(), [_BreaksCode])
    assert (new_text, fixed) == (text, 0)


def test_fix_never_writes_code_that_does_not_parse(project: Path) -> None:
    path = project / "m.py"
    path.write_text("a = 1\n")
    selection = Selection(Settings(project_root=str(project)), [_BreaksCode], True)
    report = process_path(str(path), selection, RunOptions(fix=True))
    assert report.error is None
    assert report.new_text is None
    assert [f.code for f in report.findings] == ["AMP501"]  # still reported, not "fixed"
    assert path.read_text() == "a = 1\n"


def test_fix_of_a_file_with_mixed_line_endings(tmp_path, monkeypatch) -> None:
    """Lines ending in both \\r\\n and \\n: where LibCST parses such a file (newer versions do), every
    line keeps its ending; where it cannot (1.0), the file is fixed with its most common ending. Either
    way the fix is made (it was reported fixable and must not silently do nothing), and a second fix
    is a no-op."""
    import libcst
    from click.testing import CliRunner
    from amp_lint.cli import main

    monkeypatch.chdir(tmp_path)
    source = "import torch\r\nx = torch.randn(8, 8).half()\r\np = torch.softmax(x, -1)\r\nif x is not None:\n    y = 1\n"
    try:
        libcst.parse_module(source)
        kept = source
    except libcst.ParserSyntaxError:
        kept = source.replace("\r\n", "\n").replace("\n", "\r\n")
    expected = kept.replace("torch.softmax(x, -1)", "torch.softmax(x, -1, dtype=torch.float32).type_as(x)")
    (tmp_path / "m.py").write_bytes(source.encode())
    first = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--no-cache", "--select", "AMP201", "m.py"])
    fixed = (tmp_path / "m.py").read_bytes()
    assert first.exit_code == 0, first.output
    assert fixed == expected.encode()
    CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--no-cache", "--select", "AMP201", "m.py"])
    assert (tmp_path / "m.py").read_bytes() == fixed
