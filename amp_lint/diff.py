"""Unified diffs of a file and its fixed text, linear in practice on big files.

:func:`difflib.unified_diff` matches the whole file at once, which grows with the square of the
file on a big file with many repeated lines and many fixes (33 s for 50,000 lines with 10,000
fixes). Fixes never move lines, so the diff is anchored first on lines that occur exactly once
in both texts, in the same order (patience diff, as ``git diff --patience``), and
:class:`difflib.SequenceMatcher` only matches the short stretches between anchors. The output
format is difflib's (and so git's).
"""
from __future__ import annotations

import difflib
from typing import Dict, Iterator, List, Sequence, Tuple

Opcode = Tuple[str, int, int, int, int]


def _anchors(a: Sequence[str], b: Sequence[str]) -> List[Tuple[int, int]]:
    """(i, j) pairs of lines unique in both texts, the longest run increasing in both."""
    count_a: Dict[str, int] = {}
    for line in a:
        count_a[line] = count_a.get(line, 0) + 1
    where_b: Dict[str, int] = {}
    count_b: Dict[str, int] = {}
    for j, line in enumerate(b):
        count_b[line] = count_b.get(line, 0) + 1
        where_b[line] = j
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if count_a[line] == 1 and count_b.get(line) == 1]
    # Longest increasing subsequence of the j's (patience sorting), i's already increase.
    tails: List[int] = []  # tails[k]: index into pairs of the smallest tail of a run of length k+1
    previous: List[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = _bisect_tails(pairs, tails, j)
        if k > 0:
            previous[index] = tails[k - 1]
        if k == len(tails):
            tails.append(index)
        else:
            tails[k] = index
    out: List[Tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index != -1:
        out.append(pairs[index])
        index = previous[index]
    return out[::-1]


def _bisect_tails(pairs: List[Tuple[int, int]], tails: List[int], j: int) -> int:
    """The first run length whose tail's j is not below ``j``."""
    low, high = 0, len(tails)
    while low < high:
        middle = (low + high) // 2
        if pairs[tails[middle]][1] < j:
            low = middle + 1
        else:
            high = middle
    return low


def opcodes(a: Sequence[str], b: Sequence[str]) -> List[Opcode]:
    """SequenceMatcher-style opcodes turning ``a`` into ``b``."""
    out: List[Opcode] = []

    def add(tag: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if i1 == i2 and j1 == j2:
            return
        if out and out[-1][0] == tag == "equal":
            last = out.pop()
            out.append((tag, last[1], i2, last[3], j2))
        else:
            out.append((tag, i1, i2, j1, j2))

    i = j = 0
    for anchor_i, anchor_j in [*_anchors(a, b), (len(a), len(b))]:
        matcher = difflib.SequenceMatcher(None, a[i:anchor_i], b[j:anchor_j], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            add(tag, i + i1, i + i2, j + j1, j + j2)
        if anchor_i < len(a):
            add("equal", anchor_i, anchor_i + 1, anchor_j, anchor_j + 1)
        i, j = anchor_i + 1, anchor_j + 1
    return out


class _Matcher(difflib.SequenceMatcher):
    def __init__(self, a: Sequence[str], b: Sequence[str]) -> None:
        super().__init__(None, a, b, autojunk=False)
        self._codes = opcodes(a, b)

    def get_opcodes(self) -> List[Opcode]:  # type: ignore[override]
        return list(self._codes)


def _range(start: int, stop: int) -> str:
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def unified_diff(a: List[str], b: List[str], fromfile: str, tofile: str, n: int = 3) -> Iterator[str]:
    """The lines of :func:`difflib.unified_diff` (same format), from :func:`opcodes`."""
    started = False
    for group in _Matcher(a, b).get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    yield " " + line
                continue
            if tag in ("replace", "delete"):
                for line in a[i1:i2]:
                    yield "-" + line
            if tag in ("replace", "insert"):
                for line in b[j1:j2]:
                    yield "+" + line
