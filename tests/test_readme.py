"""The README renders, says true things, and its tour is the output of its commands."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from markdown_it import MarkdownIt

from amp_lint.data.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
TOKENS = MarkdownIt("commonmark").enable("table").parse(TEXT)
LINES = TEXT.splitlines()
TEST_COMMAND = 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest'
FAST_LOOP = 'python -m pytest -m "not runtime"'


def _tour():
    if "readme_tour" not in sys.modules:
        spec = importlib.util.spec_from_file_location("readme_tour", ROOT / "tests" / "readme_tour.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["readme_tour"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["readme_tour"]


def _headings() -> List[str]:
    return [TOKENS[i + 1].content for i, t in enumerate(TOKENS) if t.type == "heading_open"]


def _fences(info: str) -> List[str]:
    return [t.content for t in TOKENS if t.type == "fence" and t.info.strip() == info]


def test_every_fence_is_closed() -> None:
    for token in TOKENS:
        if token.type == "fence":
            start, end = token.map
            closing = LINES[end - 1].strip() if end <= len(LINES) else ""
            assert end - start >= 2 and closing.startswith(token.markup), f"unclosed fence at README.md:{start + 1}"
    assert sum(1 for line in LINES if line.lstrip().startswith("```")) % 2 == 0


def test_headings_and_rules_table_are_not_in_a_code_block() -> None:
    headings = _headings()
    for heading in ("amp-lint", "Tour", "Rules", "Use", "pre-commit", "Speed", "How it is built", "Evidence"):
        assert heading in headings, heading
    rules = [i for i, t in enumerate(TOKENS) if t.type == "heading_open" and TOKENS[i + 1].content == "Rules"][0]
    table = next(i for i in range(rules, len(TOKENS)) if TOKENS[i].type in ("table_open", "heading_open", "fence")
                 and i > rules + 2)
    assert TOKENS[table].type == "table_open", "the Rules table must follow the Rules heading as a table"
    cells = [TOKENS[i + 1].content for i in range(table, len(TOKENS)) if TOKENS[i].type == "td_open"]
    rows = [cells[i:i + 4] for i in range(0, len(cells), 4)]
    implemented = [e for e in CATALOG if not e.reserved]
    assert [(r[0], r[1], r[2]) for r in rows[:len(implemented)]] == [(e.code, e.name, e.severity) for e in implemented]
    for row, entry in zip(rows, implemented):
        assert row[3].split(" ")[0].rstrip(":") == entry.fix, row


def test_the_two_commands_come_first_and_ci_runs_the_test_command() -> None:
    first = next(t for t in TOKENS if t.type == "fence")
    commands = [line.split("#")[0].strip() for line in first.content.splitlines()]
    assert commands == ["pip install . && amp-lint check fixtures/", TEST_COMMAND]
    assert TOKENS.index(first) < min(i for i, t in enumerate(TOKENS) if t.type == "heading_open" and t.tag == "h2")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TEST_COMMAND in ci, ".ci/run must run the README's test command verbatim"


def test_fast_loop_is_documented_and_its_marker_registered() -> None:
    assert any(FAST_LOOP in block for block in _fences("bash"))
    assert re.search(r"whole suite, about \d+ to \d+ minutes on 2 cores", TEXT)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'markers = \[\s*"runtime:', pyproject)


def test_pre_commit_snippet_names_real_hooks() -> None:
    yaml = pytest.importorskip("yaml")
    (snippet,) = _fences("yaml")
    config = yaml.safe_load(snippet)
    repo = config["repos"][0]
    from amp_lint.reporters.sarif import INFORMATION_URI

    assert repo["repo"] == INFORMATION_URI
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {hook["id"] for hook in repo["hooks"]} <= hooks
    assert "v0.1.0" not in TEXT  # no such release


def test_pre_commit_snippet_autoupdates_to_a_commit(tmp_path: Path) -> None:
    """The README's pre-commit block, pointed at a snapshot of this repository: `pre-commit
    autoupdate` pins `rev:` to the snapshot's commit SHA, and the result is a valid config."""
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    from test_precommit import _snapshot_of_this_repository  # tests/ is on sys.path under pytest

    repo = _snapshot_of_this_repository(tmp_path / "amp-lint")
    (snippet,) = _fences("yaml")
    from amp_lint.reporters.sarif import INFORMATION_URI

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    config = project / ".pre-commit-config.yaml"
    config.write_text(snippet.replace(INFORMATION_URI, str(repo)))
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "home"), PRE_COMMIT_COLOR="never")
    run = subprocess.run([sys.executable, "-m", "pre_commit", "autoupdate"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    assert f"rev: {head}" in config.read_text()
    valid = subprocess.run([sys.executable, "-m", "pre_commit", "validate-config", str(config)], cwd=project,
                           env=env, capture_output=True, text=True, timeout=120)
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_tour_blocks_are_the_output_of_their_commands() -> None:
    tour = _tour()
    blocks = tour.tour_blocks(TEXT)
    assert len(blocks) >= 4 and sum(len(b.commands) for b in blocks) >= 5
    diffs = tour.check(TEXT)
    assert not diffs, "README tour is stale; run `python tests/readme_tour.py --write`\n" + "\n\n".join(diffs)


def test_tour_check_notices_a_stale_block() -> None:
    tour = _tour()
    block = "```console\n$ amp-lint rule AMP000 | head -n 1\n# not what it prints\n```\n"
    assert tour.check(block)
    assert tour.rewrite(block) == "```console\n$ amp-lint rule AMP000 | head -n 1\n# syntax-error (AMP000)\n```\n"


def test_tour_compares_run_times_loosely_and_losses_to_the_last_digits() -> None:
    """Run times never make a block stale; a loss differing in its last printed digit (fp16 on CPUs
    with and without native fp16 kernels) does not either, but a larger difference or other text does."""
    same = _tour()._same
    assert same(["   1  0.381634  stopped after 8 steps, 5.4 s"], ["   1  0.381633  stopped after 8 steps, 2.7 s"])
    assert not same(["   1  0.381634"], ["   1  0.381734"])
    assert not same(["   1  0.381634  no"], ["   1  0.381634  yes"])
    assert not same(["   1  0.381634"], ["   1  0.381634", "   2  0.363615"])
