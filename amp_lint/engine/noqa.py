"""``# noqa`` and ``# amp-lint: noqa`` suppression comments."""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple

_CODES = r"[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*"
_LINE_RE = re.compile(r"#\s*noqa(?::\s*(?P<codes>" + _CODES + r"))?", re.IGNORECASE)
_FILE_RE = re.compile(r"#\s*amp-lint\s*:\s*noqa(?::\s*(?P<codes>" + _CODES + r"))?", re.IGNORECASE)
_SPLIT = re.compile(r"[,\s]+")


def _codes(text: Optional[str]) -> Optional[FrozenSet[str]]:
    if not text:
        return None
    return frozenset(c.upper() for c in _SPLIT.split(text.strip()) if c)


@dataclass
class Suppressions:
    """Per-line and file-level suppressions of one file. ``None`` as codes means all codes."""

    lines: Dict[int, Optional[FrozenSet[str]]] = field(default_factory=dict)
    file_all: bool = False
    file_codes: FrozenSet[str] = frozenset()

    def suppresses(self, code: str, row: int) -> bool:
        if self.file_all or code in self.file_codes:
            return True
        if row not in self.lines:
            return False
        codes = self.lines[row]
        return codes is None or code in codes


def _comments(text: str) -> Iterator[Tuple[int, str]]:
    """(row, comment text) of every comment that mentions noqa.

    The tokenizer tells comments from ``#`` inside string literals (a docstring that mentions
    ``# noqa`` must not suppress anything). Source that does not tokenize (a syntax error) falls
    back to the text after the first ``#`` of each line.
    """
    found: List[Tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and "noqa" in token.string.lower():
                found.append((token.start[0], token.string))
    except (tokenize.TokenError, SyntaxError, ValueError):
        found = []
        for row, line in enumerate(text.splitlines(), start=1):
            if "#" in line and "noqa" in line.lower():
                found.append((row, line[line.index("#"):]))
    return iter(found)


def parse_suppressions(text: str) -> Suppressions:
    """Scan comments for suppressions (fast path: files without 'noqa' cost one search)."""
    result = Suppressions()
    if "noqa" not in text.lower():
        return result
    file_codes = set()
    for row, comment in _comments(text):
        file_match = _FILE_RE.search(comment)
        if file_match:
            codes = _codes(file_match.group("codes"))
            if codes is None:
                result.file_all = True
            else:
                file_codes |= codes
            continue
        match = _LINE_RE.search(comment)
        if match:
            result.lines[row] = _codes(match.group("codes"))
    result.file_codes = frozenset(file_codes)
    return result
