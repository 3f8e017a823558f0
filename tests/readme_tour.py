"""Run the README's tour and compare (or rewrite) its output blocks.

The tour is every ``console`` block of README.md whose first line is a command (``$ ...``): the
lines after a command, up to the next one, are its output, stdout and stderr as a terminal shows
them. Commands run with bash, one after the other, in a scratch directory holding a copy of
``fixtures/``; ``amp-lint`` there is this checkout's (``sys.executable -m amp_lint``).

    python tests/readme_tour.py          # exit 1 and print a diff when a block is stale
    python tests/readme_tour.py --write  # rewrite the blocks from fresh runs
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PROMPT = "$ "


@dataclass
class Block:
    """One tour block: README lines [start, end) between its fences."""

    start: int
    end: int
    commands: List[Tuple[str, List[str]]]  # (command, expected output lines)


def tour_blocks(text: str) -> List[Block]:
    """The console blocks of ``text`` that start with a command."""
    lines = text.splitlines()
    blocks = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "fence" or token.info.strip() != "console" or token.map is None:
            continue
        start, end = token.map[0] + 1, token.map[1] - 1  # inside the fences
        body = lines[start:end]
        if not body or not body[0].startswith(PROMPT):
            continue
        commands: List[Tuple[str, List[str]]] = []
        for line in body:
            if line.startswith(PROMPT):
                commands.append((line[len(PROMPT):], []))
            else:
                commands[-1][1].append(line)
        blocks.append(Block(start, end, commands))
    return blocks


def run_tour(blocks: List[Block]) -> List[List[Tuple[str, List[str]]]]:
    """The actual output of every command of ``blocks``, in a scratch copy of the fixtures."""
    with tempfile.TemporaryDirectory(prefix="amp-lint-tour-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(ROOT / "fixtures", work / "fixtures", ignore=shutil.ignore_patterns("__pycache__"))
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "amp-lint"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m amp_lint "$@"\n')
        shim.chmod(0o755)
        # CUDA_VISIBLE_DEVICES: the README shows the CPU path (``verify``'s header says which device ran),
        # so a machine with a GPU reproduces it too
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                   PYTHONPATH=str(ROOT), TERM="dumb", CUDA_VISIBLE_DEVICES="")
        for name in ("AMP_LINT_OUTPUT_FORMAT", "AMP_LINT_OUTPUT_FILE"):
            env.pop(name, None)
        results = []
        for block in blocks:
            ran = []
            for command, _ in block.commands:
                proc = subprocess.run(["bash", "-c", f"{{ {command} ; }} 2>&1"], cwd=work, env=env,
                                      capture_output=True, text=True, timeout=300)
                ran.append((command, proc.stdout.splitlines()))
            results.append(ran)
        return results


def rendered(commands: List[Tuple[str, List[str]]]) -> List[str]:
    out: List[str] = []
    for command, output in commands:
        out.append(PROMPT + command)
        out.extend(output)
    return out


#: Wall-clock times in verify/trace output ("stopped after 8 steps, 4.0 s", "ran 3.3 s"): compared as
#: "<t> s", since they change from run to run.
_SECONDS = re.compile(r"\b\d+\.\d+ s\b")


def _timeless(lines: List[str]) -> List[str]:
    return [_SECONDS.sub("<t> s", line) for line in lines]


#: Decimal numbers (losses in a verify table) compare within :data:`_LAST_DIGITS`: fp16 arithmetic on
#: the CPU rounds differently in the last printed digit on machines whose CPU has native fp16
#: kernels (AVX512-FP16) and on those without.
_DECIMAL = re.compile(r"-?\d+\.\d+")
_LAST_DIGITS = 5e-6


def _same(expected: List[str], got: List[str]) -> bool:
    """The lines agree, run times aside and decimals within :data:`_LAST_DIGITS`."""
    expected, got = _timeless(expected), _timeless(got)
    if len(expected) != len(got):
        return False
    for a, b in zip(expected, got):
        if a == b:
            continue
        if _DECIMAL.sub("<n>", a) != _DECIMAL.sub("<n>", b):
            return False
        if any(abs(float(x) - float(y)) > _LAST_DIGITS for x, y in zip(_DECIMAL.findall(a), _DECIMAL.findall(b))):
            return False
    return True


def check(text: str) -> List[str]:
    """A unified diff per stale block (empty when the tour is current; run times aside)."""
    blocks = tour_blocks(text)
    diffs = []
    for block, actual in zip(blocks, run_tour(blocks)):
        expected = rendered(block.commands)
        got = rendered(actual)
        if not _same(expected, got):
            diffs.append("\n".join(difflib.unified_diff(expected, got, "README.md", "actual", lineterm="")))
    return diffs


def rewrite(text: str) -> str:
    """``text`` with every tour block replaced by fresh output."""
    lines = text.splitlines()
    blocks = tour_blocks(text)
    for block, actual in reversed(list(zip(blocks, run_tour(blocks)))):
        lines[block.start:block.end] = rendered(actual)
    return "\n".join(lines) + "\n"


def main(argv: List[str]) -> int:
    text = README.read_text(encoding="utf-8")
    if "--write" in argv:
        README.write_text(rewrite(text), encoding="utf-8")
        return 0
    diffs = check(text)
    for diff in diffs:
        print(diff)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
