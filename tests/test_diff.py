"""The unified diff of fixed files: difflib's format, applies back, anchored on unique lines."""
from __future__ import annotations

import difflib
import random
import re
from typing import List

from amp_lint.diff import unified_diff


def _apply(a: List[str], diff: str) -> List[str]:
    """``a`` patched by a unified diff (the hunks in order)."""
    out: List[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]
    k = 0
    while k < len(lines):
        match = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", lines[k])
        assert match, lines[k]
        start = int(match.group(1)) - (1 if int(match.group(2) or 1) else 0)
        out += a[at:start]
        at = start
        k += 1
        while k < len(lines) and not lines[k].startswith("@@"):
            kind, text = lines[k][0], lines[k][1:]
            if kind in " -":
                assert a[at] == text
                at += 1
            if kind in " +":
                out.append(text)
            k += 1
    return out + a[at:]


def test_same_output_as_difflib_on_a_small_change() -> None:
    a = [f"line {i}\n" for i in range(20)]
    b = a[:5] + ["new\n"] + a[6:15] + a[16:] + ["end\n"]
    assert list(unified_diff(a, b, "a/x", "b/x")) == list(difflib.unified_diff(a, b, "a/x", "b/x"))
    assert list(unified_diff(a, a, "a/x", "b/x")) == []


def test_random_edits_apply_back() -> None:
    rng = random.Random(7)
    for _ in range(400):
        a = [rng.choice("abcdef") + "\n" for _ in range(rng.randint(0, 40))] + [f"u{i}\n" for i in range(rng.randint(0, 6))]
        rng.shuffle(a)
        b = list(a)
        for _ in range(rng.randint(0, 6)):
            where = rng.randint(0, len(b))
            roll = rng.random()
            if roll < 0.4:
                b.insert(where, rng.choice("abxyz") + "\n")
            elif where < len(b):
                if roll < 0.7:
                    del b[where]
                else:
                    b[where] = "z\n"
        diff = "".join(unified_diff(a, b, "a", "b"))
        assert (_apply(a, diff) if diff else a) == b


def test_repeated_snippets_are_anchored_on_their_unique_lines() -> None:
    snippet = "def f_{i}(x):\n    y = x.masked_fill(m, -1e9)\n    return y\n\n"
    a = "".join(snippet.format(i=i) for i in range(300)).splitlines(keepends=True)
    b = [line.replace("-1e9", "torch.finfo(x.dtype).min") for line in a]
    diff = "".join(unified_diff(a, b, "a", "b"))
    assert _apply(a, diff) == b
    body = diff.splitlines()[2:]
    assert sum(line.startswith("-") for line in body) == sum(line.startswith("+") for line in body) == 300
