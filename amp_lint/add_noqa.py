"""``check --add-noqa``: suppress every current finding with a ``# noqa: CODE`` comment.

As ruff does: a line without a comment gets ``  # noqa: CODE`` at its end; an existing
``# noqa: A`` becomes ``# noqa: A, CODE`` (the codes already there are kept, in their order); any
other comment is kept and the directive appended after it. A line whose end lies inside a
multi-line string, or that ends in a backslash continuation, cannot take a comment and is left
alone (and said so). The result is checked before it is written: it must parse if the input
did, and the new comments must suppress exactly the codes they were added for. A second run
adds nothing, since every finding is then suppressed.
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from amp_lint.engine.noqa import _LINE_RE, parse_suppressions

_SKIP_TOKENS = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
                tokenize.ENDMARKER}


@dataclass
class NoqaEdit:
    """The outcome for one file: the new text, how many lines got a directive, what was left."""

    text: str
    added: int = 0
    #: (row, reason) of rows that could not take a comment
    left: List[Tuple[int, str]] = field(default_factory=list)


def _line_parts(line: str) -> Tuple[str, str]:
    """(content, line ending) of one line kept with its ending."""
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return line[: -len(ending)], ending
    return line, ""


def _scan(text: str) -> Tuple[Dict[int, Tuple[int, str]], Set[int]]:
    """({row: (column, text) of its comment}, rows whose end lies inside a multi-line token)."""
    comments: Dict[int, Tuple[int, str]] = {}
    inside: Set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments.setdefault(token.start[0], (token.start[1], token.string))
            elif token.type not in _SKIP_TOKENS and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass  # the check below refuses a result that does not parse
    return comments, inside


def _merged(comment: str, codes: Iterable[str]) -> Optional[str]:
    """``comment`` with ``codes`` added to its ``# noqa: ...`` directive; None when it has none."""
    match = _LINE_RE.search(comment)
    if match is None:
        return None
    existing = match.group("codes")
    if existing is None:
        return comment  # a blanket ``# noqa`` already suppresses everything
    have = [c for c in existing.replace(",", " ").split() if c]
    known = {c.upper() for c in have}
    merged = have + [c for c in sorted(set(codes)) if c not in known]
    return comment[: match.start("codes")] + ", ".join(merged) + comment[match.end("codes"):]


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def add_noqa(text: str, codes_by_row: Dict[int, Set[str]]) -> NoqaEdit:
    """Add ``# noqa`` directives for ``codes_by_row`` (1-based rows) to ``text``."""
    lines = text.splitlines(keepends=True)
    comments, inside = _scan(text)
    result = NoqaEdit(text)
    changed: Dict[int, Set[str]] = {}
    for row in sorted(codes_by_row):
        codes = codes_by_row[row]
        if not 1 <= row <= len(lines) or not codes:
            continue
        content, ending = _line_parts(lines[row - 1])
        if row in inside:
            result.left.append((row, "the line ends inside a multi-line string"))
            continue
        if content.rstrip().endswith("\\") and row not in comments:
            result.left.append((row, "the line ends in a backslash continuation"))
            continue
        directive = "# noqa: " + ", ".join(sorted(codes))
        if row in comments:
            column, comment = comments[row]
            merged = _merged(comment, codes)
            if merged is None:
                new = content.rstrip() + "  " + directive
            elif merged == comment:
                continue
            else:
                new = content[:column] + merged + content[column + len(comment):]
        else:
            new = content.rstrip() + "  " + directive
        lines[row - 1] = new + ending
        changed[row] = codes
    if not changed:
        return result
    new_text = "".join(lines)
    suppressions = parse_suppressions(new_text)
    wrong = [row for row, codes in changed.items() if not all(suppressions.suppresses(c, row) for c in codes)]
    if wrong or (_parses(text) and not _parses(new_text)):
        for row in sorted(changed):
            result.left.append((row, "the comment would not be read back as a suppression"))
        return result
    result.text = new_text
    result.added = len(changed)
    return result
