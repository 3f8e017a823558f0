"""Configuration: ``[tool.amp-lint]`` in pyproject.toml or amp-lint.toml, overridden by the CLI."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import pytest
from click.testing import CliRunner

from amp_lint.cli import main
from amp_lint.config import ConfigError, Settings, find_config, load_settings

AUTOCAST = """\
import torch

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    loss = 1.0
"""
LAYERS = """\
import torch.nn as nn

VOCAB = 50257
head = nn.Linear(768, VOCAB).half()
mid = nn.Linear(768, 1001).half()
small = nn.Linear(100, 36).half()
"""
SELECT = "--select=AMP501,AMP401,AMP402"


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> List[str]:
        return self.out.splitlines()

    @property
    def codes(self) -> List[str]:
        """(file, code) of each concise line, as 'file CODE'."""
        return [f"{line.split(':')[0]} {line.split()[1]}" for line in self.lines]

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def amp(*args: str, input: Optional[str] = None) -> Result:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"amp-lint {' '.join(args)} raised {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return Result(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "a.py").write_text(AUTOCAST)
    (tmp_path / "layers.py").write_text(LAYERS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMP_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def write_config(project: Path, body: str, name: str = "pyproject.toml") -> Path:
    path = project / name
    path.write_text(("[tool.amp-lint]\n" if name == "pyproject.toml" else "") + body)
    return path


# -- each key -------------------------------------------------------------------------------------

def test_select_ignore_extend_select(project: Path) -> None:
    write_config(project, 'select = ["AMP4"]\n')
    assert amp("check").codes == ["layers.py AMP401", "layers.py AMP402"]
    write_config(project, 'select = ["AMP4"]\nignore = ["AMP402"]\n')
    assert amp("check").codes == ["layers.py AMP401"]
    write_config(project, 'select = ["AMP401"]\nextend-select = ["AMP501"]\n')
    assert amp("check").codes == ["a.py AMP501", "a.py AMP501", "layers.py AMP401"]
    write_config(project, 'select = ["ALL"]\nignore = ["AMP4", "AMP5"]\n')
    assert not {"AMP401", "AMP402", "AMP501"} & {c.split()[1] for c in amp("check", "a.py", "layers.py").codes}


def test_per_file_ignores(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text(AUTOCAST)
    write_config(project, 'select = ["AMP5", "AMP4"]\n[tool.amp-lint.per-file-ignores]\n"tests/*" = ["AMP501"]\n"layers.py" = ["AMP40"]\n')
    assert amp("check").codes == ["a.py AMP501", "a.py AMP501"]
    # Patterns are relative to the project root, also when run from a subdirectory.
    monkeypatch.chdir(project / "tests")
    assert amp("check", ".").codes == []
    assert amp("check", "test_a.py").codes == []


def test_per_file_ignores_by_file_name(project: Path) -> None:
    write_config(project, 'select = ["AMP4"]\nper-file-ignores = {"layers.py" = ["AMP402"]}\n')
    assert amp("check").codes == ["layers.py AMP401"]


def test_exclude_replaces_defaults_and_extend_exclude_adds(project: Path) -> None:
    for d in ("build", "generated", "keep"):
        (project / d).mkdir()
        (project / d / "m.py").write_text(AUTOCAST)
    args = ("check", "--select", "AMP501")
    files = lambda r: sorted({c.split()[0] for c in r.codes})  # noqa: E731
    assert files(amp(*args)) == ["a.py", "generated/m.py", "keep/m.py"]  # build/ is a default exclude
    write_config(project, 'extend-exclude = ["generated"]\n')
    assert files(amp(*args)) == ["a.py", "keep/m.py"]
    write_config(project, 'exclude = ["generated", "keep/*.py"]\n')
    assert files(amp(*args)) == ["a.py", "build/m.py"]


def test_unsafe_fixes_key(project: Path) -> None:
    write_config(project, 'select = ["AMP401"]\nunsafe-fixes = true\n')
    r = amp("check", "layers.py")
    assert r.lines[0].startswith("layers.py:4:8: AMP401 [*] ")
    r = amp("fix", "layers.py")
    assert r.code == 0
    assert "VOCAB = 50304" in (project / "layers.py").read_text()


def test_torch_version_below_the_deprecation_reports_nothing(project: Path) -> None:
    """torch.cuda.amp warns from torch 2.4 on: for an older target there is nothing to migrate."""
    before = (project / "a.py").read_text()
    for version in ("2.2", "2.3"):
        write_config(project, f'select = ["AMP501"]\ntorch-version = "{version}"\n')
        r = amp("check", "a.py")
        assert (r.code, r.out) == (0, ""), version
        assert amp("fix", "a.py").code == 0
        assert (project / "a.py").read_text() == before
    write_config(project, 'select = ["AMP501"]\ntorch-version = "2.4"\n')
    assert amp("check", "a.py").code == 1
    assert amp("fix", "a.py").code == 0
    text = (project / "a.py").read_text()
    assert 'scaler = torch.amp.GradScaler("cuda")' in text and 'with torch.amp.autocast("cuda"):' in text


def test_torch_version_default_is_2_4(project: Path) -> None:
    settings, _ = load_settings(None, True, project)
    assert settings.torch_version == "2.4"
    assert settings.device == "cuda"
    assert settings.min_dim == 128


def test_min_dim(project: Path) -> None:
    write_config(project, 'select = ["AMP402"]\n')
    assert amp("check", "layers.py").lines == [
        "layers.py:5:7: AMP402 Linear output size 1001 is not a multiple of 8; Tensor Core GEMMs run slower (use 1008)"
    ]
    write_config(project, 'select = ["AMP402"]\nmin-dim = 32\n')
    lines = amp("check", "layers.py").lines
    assert len(lines) == 3 and lines[2].startswith("layers.py:6:9: AMP402 ")
    write_config(project, 'select = ["AMP402"]\nmin-dim = 2000\n')
    assert amp("check", "layers.py").code == 0


def test_device_key(project: Path) -> None:
    for device in ("cuda", "cpu"):
        path = write_config(project, f'select = ["AMP501"]\ndevice = "{device}"\n')
        settings, found = load_settings(None, False, project)
        assert (settings.device, found) == (device, path)
        assert amp("check", "a.py").code == 1


def test_amp_lint_toml(project: Path) -> None:
    write_config(project, 'select = ["AMP402"]\n', name="amp-lint.toml")
    assert amp("check").codes == ["layers.py AMP402"]
    # A [tool.amp-lint] table in amp-lint.toml works too.
    write_config(project, '[tool.amp-lint]\nselect = ["AMP401"]\n', name="amp-lint.toml")
    assert amp("check").codes == ["layers.py AMP401"]
    # amp-lint.toml wins over pyproject.toml in the same directory.
    write_config(project, 'select = ["AMP501"]\n')
    assert amp("check").codes == ["layers.py AMP401"]


def test_nearest_config_is_used(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(project, 'select = ["AMP501"]\n')
    sub = project / "pkg" / "inner"
    sub.mkdir(parents=True)
    (sub / "m.py").write_text(AUTOCAST + LAYERS)
    # A pyproject.toml without [tool.amp-lint] does not stop the search.
    (project / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    monkeypatch.chdir(sub)
    assert {c.split()[1] for c in amp("check", "m.py").codes} == {"AMP501"}
    assert find_config(sub) == project / "pyproject.toml"
    (project / "pkg" / "pyproject.toml").write_text('[tool.amp-lint]\nselect = ["AMP402"]\n')
    assert {c.split()[1] for c in amp("check", "m.py").codes} == {"AMP402"}


def test_no_config_uses_defaults(project: Path) -> None:
    settings, path = load_settings(None, True, project)
    assert path is None and settings == Settings(project_root=str(project.resolve()))


# -- the CLI beats the config ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "config, args, expected",
    [
        ('select = ["AMP402"]\n', ["--select", "AMP401"], ["layers.py AMP401"]),
        ('ignore = ["AMP401"]\n', ["--select", "AMP401"], ["layers.py AMP401"]),  # config ignore dropped
        ('select = ["AMP401"]\n', ["--ignore", "AMP4"], []),  # a CLI prefix beats a configured code
        ('select = ["AMP4"]\nignore = ["AMP402"]\n', ["--extend-select", "AMP402"], ["layers.py AMP401", "layers.py AMP402"]),
        ('select = ["AMP4"]\n', ["--extend-select", "AMP501"], ["a.py AMP501", "a.py AMP501", "layers.py AMP401", "layers.py AMP402"]),
        ('select = ["AMP4", "AMP501"]\n', ["--ignore", "AMP501"], ["layers.py AMP401", "layers.py AMP402"]),
        ('extend-select = ["AMP501"]\nselect = ["AMP402"]\n', ["--select", "AMP401"], ["layers.py AMP401"]),
    ],
)
def test_cli_selection_beats_config(project: Path, config: str, args: List[str], expected: List[str]) -> None:
    write_config(project, config)
    assert amp("check", *args).codes == expected


def test_cli_keeps_config_per_file_ignores(project: Path) -> None:
    write_config(project, 'per-file-ignores = {"layers.py" = ["AMP402"]}\n')
    assert amp("check", "--select", "AMP402").codes == []


def test_cli_unsafe_fixes_beats_config(project: Path) -> None:
    write_config(project, 'select = ["AMP401"]\nunsafe-fixes = false\n')
    assert "[*]" in amp("check", "--unsafe-fixes", "layers.py").out
    write_config(project, 'select = ["AMP401"]\nunsafe-fixes = true\n')
    assert "[*]" not in amp("check", "--no-unsafe-fixes", "layers.py").out


# -- bad config: one line naming the key, exit 2 -------------------------------------------------------

@pytest.mark.parametrize(
    "body, message",
    [
        ('selct = ["AMP501"]\n', "unknown key 'selct' in [tool.amp-lint]"),
        ('select = "AMP501"\n', "[tool.amp-lint] select: expected a list of strings"),
        ('ignore = [1]\n', "[tool.amp-lint] ignore: expected a list of strings"),
        ('extend-select = ["AMP9"]\n', "[tool.amp-lint] extend-select: unknown rule selector 'AMP9'"),
        ('select = ["XYZ"]\n', "[tool.amp-lint] select: unknown rule selector 'XYZ'"),
        ('exclude = "build"\n', "[tool.amp-lint] exclude: expected a list of strings"),
        ('extend-exclude = [true]\n', "[tool.amp-lint] extend-exclude: expected a list of strings"),
        ('per-file-ignores = ["x"]\n', "[tool.amp-lint] per-file-ignores: expected a table of glob = [codes]"),
        ('per-file-ignores = {"x.py" = "AMP501"}\n', "[tool.amp-lint] per-file-ignores: expected a table of glob = [codes]"),
        ('per-file-ignores = {"x.py" = ["AMP7"]}\n', "[tool.amp-lint] per-file-ignores 'x.py': unknown rule selector 'AMP7'"),
        ('unsafe-fixes = "yes"\n', "[tool.amp-lint] unsafe-fixes: expected true or false"),
        ('torch-version = "latest"\n', "[tool.amp-lint] torch-version: invalid version 'latest'"),
        ('torch-version = 2.10\n', "[tool.amp-lint] torch-version: expected a quoted version string"),
        ('torch-version = true\n', "[tool.amp-lint] torch-version: expected a version string"),
        ('device = "tpu"\n', "[tool.amp-lint] device: expected one of cuda, cpu, xpu, mps, hip"),
        ('min-dim = 0\n', "[tool.amp-lint] min-dim: expected a positive integer"),
        ('min-dim = "128"\n', "[tool.amp-lint] min-dim: expected a positive integer"),
        ('min-dim = true\n', "[tool.amp-lint] min-dim: expected a positive integer"),
    ],
)
def test_bad_config_is_one_line_naming_the_key(project: Path, body: str, message: str) -> None:
    path = write_config(project, body)
    for command in ("check", "fix"):
        r = amp(command)
        assert r.code == 2
        assert r.out == ""
        lines = r.err.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"amp-lint: error: {path}: ")
        assert message in lines[0]
    assert (project / "a.py").read_text() == AUTOCAST  # fix wrote nothing


def test_invalid_toml(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.amp-lint\nselect = [\n")
    r = amp("check")
    assert r.code == 2
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith(f"amp-lint: error: {project / 'pyproject.toml'}: invalid TOML: ")
    (project / "amp-lint.toml").write_text("select = [\n")
    r = amp("check")
    assert r.code == 2 and "amp-lint.toml: invalid TOML" in r.err


def test_broken_unrelated_pyproject_is_skipped(project: Path) -> None:
    """A pyproject.toml that is not ours and does not parse is none of our business."""
    (project / "pyproject.toml").write_text("[project\nname = 'x'\n")
    assert amp("check", "--select", "AMP501", "a.py").code == 1


def test_config_table_must_be_a_table(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool]\namp-lint = 3\n')
    r = amp("check")
    assert r.code == 2
    assert r.err.strip().endswith("[tool.amp-lint] must be a table")


def test_non_utf8_config(project: Path) -> None:
    (project / "amp-lint.toml").write_bytes(b"select = ['\xff']\n")
    r = amp("check")
    assert r.code == 2 and len(r.err.splitlines()) == 1 and "amp-lint.toml" in r.err


def test_settings_api_errors_are_config_errors(project: Path) -> None:
    write_config(project, "min-dim = -1\n")
    with pytest.raises(ConfigError, match="min-dim"):
        load_settings(None, False, project)
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(str(project / "missing.toml"), False, project)
