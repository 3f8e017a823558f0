"""Source ranges of CST nodes, the same as LibCST's ``PositionProvider`` gives, at a fraction of
its cost.

``PositionProvider`` splits every emitted token with a regular expression and builds two
``CodePosition`` objects per node, which costs about twice the parse. Here code generation only
counts characters: each node gets a (start, end) character offset, and offsets become
line/column pairs (by bisecting the line starts of the generated text) only for the nodes that
are asked about. Syntactic positions (``record_syntactic_position``, with start/end hoisted
from child nodes) follow ``PositionProvidingCodegenState`` exactly.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Dict, List, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

_NEWLINE_RE = re.compile(r"\r\n?|\n")
Span = Tuple[int, int]


class _Syntactic:
    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_OffsetState", node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc: object) -> None:
        spans = self.state.spans
        start = spans[self.start_node][0] if self.start_node is not None else self.start
        end = spans[self.end_node][1] if self.end_node is not None else self.state.offset
        spans[self.node] = (start, end)


class _OffsetState(CodegenState):
    """Code generation that records each node's character span (and nothing else)."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: Dict[cst.CSTNode, Span] = {}
        self.full: Dict[cst.CSTNode, Span] = {}  # whole node, where it differs from ``spans``
        self._starts: List[int] = []
        self.popped = ""

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.popped = self.tokens.pop()  # still counted in offsets, as PositionProvider does

    def add_indent_tokens(self) -> None:
        tokens = self.indent_tokens
        self.tokens.extend(tokens)
        for token in tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        span = (start, self.offset)
        if node not in self.spans:
            self.spans[node] = span
        elif self.spans[node] != span:
            self.full[node] = span

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> _Syntactic:  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)


class Positions:
    """``positions[node]`` -> CodeRange for every node of ``module`` (one code generation)."""

    def __init__(self, module: cst.Module) -> None:
        state = _OffsetState(module)
        module._codegen(state)
        self._spans = state.spans
        self._full = state.full
        text = "".join(state.tokens) + state.popped
        # Line starts as PositionProvider counts lines: "\r\n", "\r" and "\n" each end one.
        self._line_starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(text)]
        self._cache: Dict[cst.CSTNode, CodeRange] = {}

    def _position(self, offset: int) -> CodePosition:
        line = bisect_right(self._line_starts, offset)
        return CodePosition(line, offset - self._line_starts[line - 1])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._cache.get(node)
        if found is None:
            start, end = self._spans[node]
            found = self._cache[node] = CodeRange(self._position(start), self._position(end))
        return found

    def span(self, node: cst.CSTNode) -> Span:
        """Character offsets of ``node``'s whole text (parentheses and owned whitespace included)."""
        return self._full.get(node) or self._spans[node]

    def location(self, offset: int) -> Tuple[int, int]:
        """(1-based row, 0-based column) of a character offset."""
        position = self._position(offset)
        return position.line, position.column

    def __contains__(self, node: object) -> bool:
        return node in self._spans
