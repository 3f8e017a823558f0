"""One batched traversal of a LibCST tree shared by every participant (analyses, then rules).

A participant is any object with ``visit_<NodeClass>(node)`` / ``leave_<NodeClass>(node)``
methods. The walker reads child nodes straight from dataclass fields, skipping whitespace and
punctuation, so visiting costs a fraction of LibCST's own ``visit`` machinery (which rebuilds
every node).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Sequence, Tuple

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


# type -> 1 (a CST node), 2 (a list/tuple of fields), 0 (anything else). A plain dict lookup is
# much cheaper than ``isinstance(value, CSTNode)``, which goes through ABCMeta for every field.
_KINDS: Dict[type, int] = {tuple: 2, list: 2}


def _kind(cls: type) -> int:
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = 1 if issubclass(cls, cst.CSTNode) else 0
    return kind


def walk(module: cst.Module, participants: Sequence[object], stack: List[cst.CSTNode]) -> None:
    """Visit every node of ``module`` once, calling participants' handlers in order.

    ``stack`` is kept equal to the ancestors of the node being visited (the node included), so
    handlers can look at parents through it.
    """
    visits = _collect(participants, "visit_")
    leaves = _collect(participants, "leave_")
    plans: Dict[type, Tuple[Tuple[Handler, ...], Tuple[str, ...], Tuple[Handler, ...]]] = {}
    kinds = _KINDS
    push = stack.append
    pop = stack.pop

    def visit(node: cst.CSTNode) -> None:
        cls = type(node)
        plan = plans.get(cls)
        if plan is None:
            plan = plans[cls] = (tuple(visits.get(cls, ())), _child_fields(cls), tuple(leaves.get(cls, ())))
        before, names, after = plan
        push(node)
        for handler in before:
            handler(node)
        for name in names:
            value = getattr(node, name)
            cls = type(value)
            kind = kinds.get(cls)
            if kind is None:
                kind = _kind(cls)
            if kind == 1:
                visit(value)
            elif kind == 2:
                for item in value:
                    cls = type(item)
                    if kinds.get(cls) == 1 or (cls not in kinds and _kind(cls) == 1):
                        visit(item)
        for handler in after:
            handler(node)
        pop()

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
