"""Suppression comments: ``# noqa``, ``# noqa: AMP301, AMP302`` and file-level ``# amp-lint: noqa``."""
from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.engine.noqa import parse_suppressions

CALL = "torch.cuda.amp.autocast()"


def run(*args: str) -> "tuple[int, List[str], str]":
    result = CliRunner().invoke(main, ["--help"] if not args else list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout.splitlines(), result.stderr


def rows(path: Path, *extra: str) -> List[int]:
    """Rows of the AMP501 findings in ``path``."""
    code, lines, _ = run("check", "--select", "AMP501,AMP402", "--no-cache", *extra, str(path))
    return [int(line.split(":")[1]) for line in lines]


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "m.py"


def test_line_suppressions(src: Path) -> None:
    src.write_text(
        "import torch\n"
        f"a = {CALL}  # noqa\n"                         # 2: everything
        f"b = {CALL}  # noqa: AMP501\n"                 # 3: this code
        f"c = {CALL}  # NOQA:amp501\n"                  # 4: case-insensitive
        f"d = {CALL}  # noqa: AMP401, AMP501\n"         # 5: a list
        f"e = {CALL}  # noqa:AMP401,AMP501\n"           # 6: no spaces
        f"f = {CALL}  # noqa: AMP401 AMP501\n"          # 7: whitespace-separated
        f"g = {CALL}  # noqa: AMP401\n"                 # 8: another code: reported
        f"h = {CALL}  # type: ignore  # noqa: AMP501\n"  # 9: after another comment
        f"i = {CALL}  # noqa: AMP501 -- migrating in #123\n"  # 10: with an explanation
        f"j = {CALL}  #noqa\n"                          # 11: no space
        f"k = {CALL}\n"                                 # 12: reported
        f"l = {CALL}  # noqa: E501\n"                   # 13: a ruff code: reported
    )  # fmt: skip
    assert rows(src) == [8, 12, 13]


def test_noqa_inside_a_string_is_not_a_comment(src: Path) -> None:
    src.write_text(
        "import torch\n"
        f's = "# noqa"; a = {CALL}\n'
        'DOC = """\n'
        "# amp-lint: noqa\n"
        '"""\n'
        f"b = {CALL}\n"
        f"c = '# noqa: AMP501' + str({CALL})\n"
    )
    assert rows(src) == [2, 6, 7]


def test_noqa_covers_the_first_line_of_a_multiline_finding(src: Path) -> None:
    src.write_text(
        "import torch\n"
        "a = torch.cuda.amp.autocast(  # noqa: AMP501\n"
        "    enabled=True,\n"
        ")\n"
        "b = torch.cuda.amp.autocast(\n"
        "    enabled=True,\n"
        ")  # noqa: AMP501\n"
    )
    assert rows(src) == [5]


@pytest.mark.parametrize("comment", ["# amp-lint: noqa", "# AMP-LINT: NOQA", "#amp-lint:noqa"])
def test_file_level_noqa(src: Path, comment: str) -> None:
    src.write_text(f"import torch\n{comment}\na = {CALL}\nimport torch.nn as nn\nl = nn.Linear(768, 1001).half()\n")
    code, lines, err = run("check", "--select", "AMP501,AMP402", str(src))
    assert (code, lines) == (0, [])
    assert err.strip() == "All checks passed!"


def test_file_level_noqa_with_codes(src: Path) -> None:
    src.write_text(
        "import torch\nimport torch.nn as nn\n"
        f"a = {CALL}\n"
        "l = nn.Linear(768, 1001).half()\n"
        "# amp-lint: noqa: AMP501\n"
    )
    code, lines, _ = run("check", "--select", "AMP501,AMP402", str(src))
    assert code == 1
    assert [line.split()[1] for line in lines] == ["AMP402"]


def test_file_level_noqa_is_not_a_line_noqa(src: Path) -> None:
    """``# amp-lint: noqa: AMP402`` at the end of a line does not suppress AMP501 on that line."""
    src.write_text(f"import torch\na = {CALL}  # amp-lint: noqa: AMP402\n")
    assert rows(src) == [2]


def test_fix_leaves_suppressed_findings_alone(src: Path) -> None:
    text = f"import torch\na = {CALL}  # noqa: AMP501\nb = {CALL}\n"
    src.write_text(text)
    code, lines, _ = run("fix", "--select", "AMP501", str(src))
    assert code == 0
    assert src.read_text() == f'import torch\na = {CALL}  # noqa: AMP501\nb = torch.amp.autocast("cuda")\n'
    src.write_text(f"# amp-lint: noqa\nimport torch\na = {CALL}\n")
    assert run("fix", "--select", "AMP501", str(src))[0] == 0
    assert src.read_text() == f"# amp-lint: noqa\nimport torch\na = {CALL}\n"


def test_suppressed_findings_are_absent_from_every_format(src: Path) -> None:
    src.write_text(f"import torch\na = {CALL}  # noqa\n")
    for fmt in ("concise", "full", "json-lines", "github"):
        code, lines, _ = run("check", "--select", "AMP501", "--output-format", fmt, str(src))
        assert (code, lines) == (0, []), fmt
    code, lines, _ = run("check", "--select", "AMP501", "--statistics", str(src))
    assert (code, lines) == (0, [])


def test_json_reports_the_noqa_row(src: Path) -> None:
    import json

    src.write_text("import torch\na = torch.cuda.amp.autocast(\n    enabled=True,\n)\n")
    _, lines, _ = run("check", "--select", "AMP501", "--output-format", "json", str(src))
    (finding,) = json.loads("\n".join(lines))
    assert finding["noqa_row"] == 2


# -- the parser --------------------------------------------------------------------------------------

def test_parse_suppressions() -> None:
    s = parse_suppressions("x = 1  # noqa\ny = 2  # noqa: amp401, AMP402\nz = 3\n")
    assert s.suppresses("AMP501", 1) and s.suppresses("AMP401", 2) and s.suppresses("AMP402", 2)
    assert not s.suppresses("AMP501", 2) and not s.suppresses("AMP401", 3)
    assert not s.file_all
    assert parse_suppressions("# amp-lint: noqa\n").file_all
    s = parse_suppressions("# amp-lint: noqa: AMP501,AMP502\n")
    assert s.file_codes == frozenset({"AMP501", "AMP502"}) and not s.file_all
    assert s.suppresses("AMP501", 99) and not s.suppresses("AMP401", 1)


def test_parse_suppressions_without_noqa_is_empty() -> None:
    s = parse_suppressions("x = 1  # a comment\n")
    assert s.lines == {} and not s.file_all and not s.file_codes


def test_parse_suppressions_on_source_that_does_not_tokenize() -> None:
    """Broken source (say, an unterminated string) still gets its line comments read."""
    s = parse_suppressions('x = 1  # noqa: AMP501\ny = """never closed\n')
    assert s.suppresses("AMP501", 1)
    s = parse_suppressions("def f(:\n    pass  # noqa\n")
    assert s.suppresses("AMP000", 2)
