"""Notebooks: code cells checked and fixed as one module, magics kept, the JSON kept byte for byte
except the changed sources, locations as cell and row (ruff's ``cell``)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.notebook import decode_notebook
from amp_lint.source import SourceError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "notebooks" / "half_finetune.ipynb"


def amp(*args: str, input: bytes = None):
    return CliRunner().invoke(main, [*args, "--isolated", "--no-cache"], input=input,
                              catch_exceptions=False)


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURE, tmp_path / "nb.ipynb")
    return tmp_path / "nb.ipynb"


def _notebook(cells, **dump) -> str:
    nb = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, **dump) + "\n"


def _code(source, outputs=()):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": list(outputs), "source": source}


# a layer's output in half: AMP204 needs a learned value
HALF = ["import torch\n", "x = torch.nn.Linear(4, 4).cuda().half()(torch.randn(4, device=\"cuda\").half())\n"]


def test_cross_cell_findings_in_cells(notebook: Path) -> None:
    result = amp("check", "nb.ipynb")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert [line[:line.index(" ", line.index("AMP"))] for line in lines] == [
        "nb.ipynb:cell 7:3:10: AMP301", "nb.ipynb:cell 7:4:9: AMP201", "nb.ipynb:cell 7:5:1: AMP203",
        "nb.ipynb:cell 9:3:5: AMP204",  # its line 2 carries `# noqa: AMP204`; the raw and %%bash cells are not code
    ]
    data = json.loads(amp("check", "nb.ipynb", "--output-format", "json").stdout)
    assert [(d["cell"], d["location"]["row"], d["noqa_row"]) for d in data] == [(7, 3, 3), (7, 4, 4), (7, 5, 5), (9, 3, 3)]
    assert data[0]["fix"] is None or data[0]["fix"]["edits"][0]["location"]["row"] == 3
    # The evidence points into the cell that casts the model (cell 3, its line 10).
    assert [(e["cell"], e["row"]) for e in data[0]["evidence"]] == [(3, 10)]
    assert "= because: nb.ipynb:cell 3:10: module cast to half" in amp("check", "nb.ipynb", "--output-format", "full").stdout


def test_evidence_from_a_notebook_into_a_module_points_into_its_cell(tmp_path: Path, monkeypatch) -> None:
    """A notebook that casts a model drives the analysis of the model's file: the finding there
    names the notebook's cell and the row within it, also when only the model file is checked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "head.py").write_text("import torch.nn as nn\nclass Head(nn.Module):\n    def __init__(self):\n"
                                      "        super().__init__()\n        self.fc = nn.Linear(8, 8)\n"
                                      "    def forward(self, x):\n        return self.fc(x).softmax(-1)\n")
    (tmp_path / "demo.ipynb").write_text(_notebook([
        _code(["import torch\n", "from head import Head\n"]),
        _code(["# half for the demo\n", "head = Head().half()\n", "probs = head(torch.randn(2, 8).half())\n"])]))
    for target in (".", "head.py"):
        data = json.loads(amp("check", target, "--output-format", "json").stdout)
        assert [(d["filename"].rsplit("/", 1)[-1], d["code"]) for d in data] == [("head.py", "AMP201")]
        assert [(e["cell"], e["row"]) for e in data[0]["evidence"]] == [(2, 2), (2, 3)]
    sarif = json.loads(amp("check", ".", "--output-format", "sarif").stdout)
    related = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert [(r["properties"]["cell"], r["physicalLocation"]["region"]["startLine"]) for r in related] == [(2, 2), (2, 3)]


def test_explain_takes_and_prints_cell_locations(tmp_path: Path, monkeypatch) -> None:
    """``explain nb.ipynb:cell 2:2`` (the form findings use) explains that row of that cell and
    writes notebook locations as cells; a cell the notebook lacks is a one-line error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.ipynb").write_text(_notebook([
        _code(["import torch\n"]),
        _code(["# half for the demo\n", "layer = torch.nn.Linear(8, 8).half()\n",
               "probs = layer(torch.randn(2, 8).half()).softmax(-1)\n"])]))
    out = CliRunner().invoke(main, ["explain", "demo.ipynb:cell 2:2", "--isolated"]).stdout
    assert out.startswith("demo.ipynb:cell 2:2: layer = torch.nn.Linear(8, 8).half()")
    assert "because demo.ipynb:cell 2:2: module cast to half" in out
    data = json.loads(CliRunner().invoke(main, ["explain", "demo.ipynb:cell 2:3", "--isolated",
                                                "--output-format", "json"]).stdout)
    assert (data["cell"], data["line"]) == (2, 3) and data["source"].startswith("probs = ")
    bad = CliRunner().invoke(main, ["explain", "demo.ipynb:cell 9:1", "--isolated"])
    assert bad.exit_code == 2 and "no code cell 9" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_fix_changes_only_the_sources_it_fixes(notebook: Path) -> None:
    before = notebook.read_text(encoding="utf-8")
    result = amp("fix", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 0, result.output
    after = notebook.read_text(encoding="utf-8")
    old, new = json.loads(before), json.loads(after)
    changed = [i for i, (a, b) in enumerate(zip(old["cells"], new["cells"])) if a != b]
    assert changed == [6, 8]  # cells 7 and 9
    for a, b in zip(old["cells"], new["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
        assert isinstance(b["source"], list) == isinstance(a["source"], list)
    assert new["metadata"] == old["metadata"]
    assert new["cells"][6]["source"][2] == "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    assert new["cells"][6]["source"][-1] == "scores.sum(dtype=torch.float32)"  # no newline added
    assert new["cells"][4]["source"] == old["cells"][4]["source"]  # magics and shell lines untouched
    assert new["cells"][8]["source"][0] == "%%time\n"
    # Byte for byte: re-serialising the new content in the original's layout gives the file.
    assert after == json.dumps(new, indent=1, ensure_ascii=False) + "\n"
    assert before.count("\n") == after.count("\n")
    again = amp("fix", "--unsafe-fixes", "nb.ipynb")
    assert notebook.read_text(encoding="utf-8") == after and "fixed" not in again.stderr


@pytest.mark.parametrize("dump", [
    {"indent": 1, "ensure_ascii": False}, {"indent": 2, "ensure_ascii": True, "sort_keys": True},
    {"indent": None, "separators": (",", ":")}, {"indent": 4},
], ids=["nbformat", "ascii-sorted", "compact", "indent4"])
def test_layout_is_kept(tmp_path: Path, monkeypatch, dump) -> None:
    monkeypatch.chdir(tmp_path)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["Café ☕\n"]},
             _code(HALF + ["\n", "# naïve\n", "y = x.masked_fill(x > 0, -1e9)"]),
             _code("z = x.masked_fill(x > 0, -1e9)\n")]
    text = _notebook(cells, **dump)
    Path("nb.ipynb").write_text(text, encoding="utf-8")
    assert amp("fix", "--unsafe-fixes", "nb.ipynb").exit_code == 0
    after = Path("nb.ipynb").read_text(encoding="utf-8")
    cells[1]["source"][-1] = "y = x.masked_fill(x > 0, torch.finfo(x.dtype).min)"
    cells[2]["source"] = "z = x.masked_fill(x > 0, torch.finfo(x.dtype).min)\n"  # a string stays a string
    assert after == _notebook(cells, **dump)


def test_magics_are_masked_and_restored(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = ["import torch\n", "%load_ext autoreload\n", "files = !ls \\\n", "   -la\n", "if True:\n",
              "    !echo hi\n", "    x = torch.nn.Linear(4, 4).half()(torch.randn(4).half())\n", "torch.exp?\n", "y = torch.exp(x)"]
    Path("nb.ipynb").write_text(_notebook([_code(source)], indent=1))
    notebook = decode_notebook("nb.ipynb", Path("nb.ipynb").read_bytes())
    compile(notebook.text, "nb", "exec")  # the masked module parses
    assert "!ls" not in notebook.text and "files = None" in notebook.text
    assert amp("fix", "--unsafe-fixes", "nb.ipynb").exit_code == 0
    fixed = json.loads(Path("nb.ipynb").read_text())["cells"][0]["source"]
    assert fixed == source[:-1] + ["y = torch.exp(x.float())"]


def test_noqa_per_line_and_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    cells = [_code(HALF), _code(["a = torch.exp(x)  # noqa: AMP204\n", "b = torch.exp(x)"])]
    Path("nb.ipynb").write_text(_notebook(cells, indent=1))
    out = amp("check", "nb.ipynb").stdout
    assert out.startswith("nb.ipynb:cell 2:2:5: AMP204") and out.count("AMP204") == 1
    cells.append(_code("# amp-lint: noqa\n"))
    Path("nb.ipynb").write_text(_notebook(cells, indent=1))
    assert amp("check", "nb.ipynb").exit_code == 0


def test_syntax_error_points_into_its_cell(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("nb.ipynb").write_text(_notebook([_code("import torch\n"), _code(["x = 1\n", "def f(:\n"])], indent=1))
    result = amp("check", "nb.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("nb.ipynb:cell 2:2:")
    assert "AMP000" in result.stdout


def test_directories_include_notebooks_and_bad_ones_are_one_line_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("good.ipynb").write_text(_notebook([_code(HALF + ["\n", "y = torch.exp(x)"])], indent=1))
    Path("bad.ipynb").write_text("{not json")
    Path("text.ipynb").write_text(json.dumps({"nbformat": 4}))
    result = amp("fix", "--unsafe-fixes", ".")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("amp-lint: error")]
    assert errors == [
        "amp-lint: error: bad.ipynb: invalid notebook JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        "amp-lint: error: text.ipynb: not a Jupyter notebook (no \"cells\" list)",
    ]
    assert Path("bad.ipynb").read_text() == "{not json"
    assert "torch.exp(x.float())" in Path("good.ipynb").read_text()


def test_stdin_notebook_round_trip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = _notebook([_code(HALF + ["\n", "y = torch.exp(x)"])], indent=1)
    result = amp("fix", "--unsafe-fixes", "--stdin-filename", "nb.ipynb", "-", input=text.encode())
    assert json.loads(result.stdout)["cells"][0]["source"][-1] == "y = torch.exp(x.float())"
    result = amp("check", "--stdin-filename", "nb.ipynb", "-", input=text.encode())
    assert result.stdout.startswith("nb.ipynb:cell 1:4:5: AMP204")


def test_a_fix_that_loses_a_cell_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook([_code("a = 1\n"), _code("b = 2\n")], indent=1))
    notebook = decode_notebook(str(path), path.read_bytes())
    assert notebook.encode(notebook.text) == path.read_bytes()
    mangled = notebook.text.replace("# amp-lint: notebook cell 1\n", "")
    with pytest.raises(SourceError, match="cell 2 was lost"):
        notebook.encode(mangled)
