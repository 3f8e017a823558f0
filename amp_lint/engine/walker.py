"""One batched traversal of a LibCST tree shared by every participant (analyses, then rules).

A participant is any object with ``visit_<NodeClass>(node)`` / ``leave_<NodeClass>(node)``
methods. The walker reads child nodes straight from dataclass fields, skipping whitespace and
punctuation, so visiting costs a fraction of LibCST's own ``visit`` machinery (which rebuilds
every node).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Sequence, Tuple, Type

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "colon", "dot", "equal", "semicolon", "leading_lines",
        "lines_after_decorators", "header", "footer", "trailing_whitespace", "newline", "lbrace",
        "lbracket", "rbrace", "rbracket", "first_colon", "second_colon", "asynchronous",
        "empty_lines", "leading_whitespace", "operator", "comment", "trailing_comma", "whitespace",
        "indent", "default_indent", "default_newline", "encoding", "has_trailing_newline", "attr",
        "keyword", "star", "relative", "posonly_ind", "whitespace_before_params",
    }
)
_FIELDS_CACHE: Dict[type, Tuple[str, ...]] = {}
_NO_CHILDREN: Tuple[str, ...] = ()
# Import statements are walked as one node: their names are not uses.
_OPAQUE = (cst.Import, cst.ImportFrom, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)


def _child_fields(cls: type) -> Tuple[str, ...]:
    names = _FIELDS_CACHE.get(cls)
    if names is None:
        if issubclass(cls, _OPAQUE):
            names = _NO_CHILDREN
        else:
            names = tuple(
                f.name
                for f in dataclasses.fields(cls)
                if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
            )
        _FIELDS_CACHE[cls] = names
    return names


Handler = Callable[[cst.CSTNode], object]


def _collect(participants: Sequence[object], prefix: str) -> Dict[type, List[Handler]]:
    table: Dict[type, List[Handler]] = {}
    for participant in participants:
        for attr in _handler_names(type(participant), prefix):
            node_cls = getattr(cst, attr[len(prefix):])
            table.setdefault(node_cls, []).append(getattr(participant, attr))
    return table


_HANDLER_NAMES: Dict[Tuple[type, str], Tuple[str, ...]] = {}


def _handler_names(cls: type, prefix: str) -> Tuple[str, ...]:
    key = (cls, prefix)
    names = _HANDLER_NAMES.get(key)
    if names is None:
        names = tuple(
            n for n in dir(cls)
            if n.startswith(prefix) and isinstance(getattr(cst, n[len(prefix):], None), type)
        )
        _HANDLER_NAMES[key] = names
    return names


def walk(module: cst.Module, participants: Sequence[object], stack: List[cst.CSTNode]) -> None:
    """Visit every node of ``module`` once, calling participants' handlers in order.

    ``stack`` is kept equal to the ancestors of the node being visited (the node included), so
    handlers can look at parents through it.
    """
    visits = _collect(participants, "visit_")
    leaves = _collect(participants, "leave_")
    fields_of = _child_fields
    node_types = cst.CSTNode

    def visit(node: cst.CSTNode) -> None:
        cls = type(node)
        stack.append(node)
        handlers = visits.get(cls)
        if handlers:
            for handler in handlers:
                handler(node)
        for name in fields_of(cls):
            value = getattr(node, name)
            if isinstance(value, node_types):
                visit(value)
            elif type(value) is tuple or type(value) is list:
                for item in value:
                    if isinstance(item, node_types):
                        visit(item)
        handlers = leaves.get(cls)
        if handlers:
            for handler in handlers:
                handler(node)
        stack.pop()

    visit(module)


def iter_subtree(node: cst.CSTNode):
    """Every node under ``node`` (itself included), in the walker's order."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                todo.append(value)
            elif type(value) in (tuple, list):
                todo.extend(v for v in value if isinstance(v, cst.CSTNode))
