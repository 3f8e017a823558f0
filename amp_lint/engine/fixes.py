"""Fixes as CST operations, turned into text by applying them to the module.

A rule describes a fix as node replacements, statement insertions and imports to add. The
engine applies the non-overlapping fixes of a pass in one transform, renders the code, and
re-parses it (the fix loop lives in :mod:`amp_lint.engine.linter`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from amp_lint.engine.walker import iter_subtree
from amp_lint.findings import Applicability, Edit, Location

Replacement = Union[cst.CSTNode, cst.RemovalSentinel, Callable[[cst.CSTNode], cst.CSTNode]]


@dataclass
class CstFix:
    """One finding's fix: applied whole or not at all."""

    title: str
    applicability: Applicability
    replacements: List[Tuple[cst.CSTNode, Replacement]] = field(default_factory=list)
    insert_before: List[Tuple[cst.CSTNode, Sequence[cst.BaseStatement]]] = field(default_factory=list)
    insert_after: List[Tuple[cst.CSTNode, Sequence[cst.BaseStatement]]] = field(default_factory=list)
    add_imports: Tuple[str, ...] = ()

    def replace(self, node: cst.CSTNode, new: Replacement) -> "CstFix":
        self.replacements.append((node, new))
        return self

    def remove(self, node: cst.CSTNode) -> "CstFix":
        self.replacements.append((node, cst.RemovalSentinel.REMOVE))
        return self

    def touched(self) -> Set[int]:
        """ids of every node this fix rewrites (replaced subtrees, whole)."""
        ids: Set[int] = set()
        for node, _ in self.replacements:
            ids.update(id(n) for n in iter_subtree(node))
        return ids

    def claimed(self) -> Set[int]:
        """ids of the nodes no other fix of the same pass may rewrite: replaced subtrees, except
        inside a *wrapper* (a replacement that embeds the node it replaces, ``x`` ->
        ``x.float()``), which keeps whatever other fixes do inside it."""
        ids: Set[int] = set()
        for node, new in self.replacements:
            if is_wrapper(node, new):
                ids.add(id(node))
            else:
                ids.update(id(n) for n in iter_subtree(node))
        return ids

    def anchors(self) -> Set[int]:
        """ids of the nodes this fix replaces or inserts around."""
        return {id(n) for n, _ in self.replacements} | {
            id(n) for n, _ in self.insert_before + self.insert_after
        }


def is_wrapper(node: cst.CSTNode, new: Replacement) -> bool:
    """Whether ``new`` embeds ``node`` itself (so edits inside ``node`` can be carried into it)."""
    return isinstance(new, cst.CSTNode) and new is not node and any(n is node for n in iter_subtree(new))


def choose_compatible(fixes: Sequence[CstFix], kinds: Optional[Sequence[str]] = None) -> List[CstFix]:
    """Greedily keep fixes whose rewritten nodes do not overlap an earlier kept one's.

    With ``kinds`` (one per fix, e.g. the rule code), a fix is deferred to a later pass when a
    fix of the same kind sits inside what it rewrites: nested hazards (``exp(exp(x))``) are
    fixed innermost first, which often makes the outer ones disappear.
    """
    if kinds is not None:
        fixes = _innermost(fixes, kinds)
    kept: List[CstFix] = []
    claimed: Set[int] = set()
    claimed_anchors: Set[int] = set()
    for fix in fixes:
        touched = fix.claimed()
        anchors = fix.anchors()
        if touched & claimed or anchors & claimed or touched & claimed_anchors:
            continue
        kept.append(fix)
        claimed |= touched
        claimed_anchors |= anchors
    return kept


def _innermost(fixes: Sequence[CstFix], kinds: Sequence[str]) -> List[CstFix]:
    anchors_of: Dict[str, Dict[int, int]] = {}
    for index, (fix, kind) in enumerate(zip(fixes, kinds)):
        for anchor in fix.anchors():
            anchors_of.setdefault(kind, {})[anchor] = index
    if all(len(a) <= 1 for a in anchors_of.values()):
        return list(fixes)
    out = []
    for index, (fix, kind) in enumerate(zip(fixes, kinds)):
        same = anchors_of.get(kind, {})
        own = fix.anchors()
        if not any(same.get(i, index) != index for i in fix.touched() - own):
            out.append(fix)
    return out


class _ApplyFixes(cst.CSTTransformer):
    def __init__(self, fixes: Sequence[CstFix]) -> None:
        super().__init__()
        self.replace: Dict[int, Replacement] = {}
        self.before: Dict[int, List[cst.BaseStatement]] = {}
        self.after: Dict[int, List[cst.BaseStatement]] = {}
        for fix in fixes:
            for node, new in fix.replacements:
                self.replace[id(node)] = new
            for node, stmts in fix.insert_before:
                self.before.setdefault(id(node), []).extend(stmts)
            for node, stmts in fix.insert_after:
                self.after.setdefault(id(node), []).extend(stmts)

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        key = id(original_node)
        result = updated_node
        if key in self.replace:
            new = self.replace[key]
            if isinstance(new, cst.RemovalSentinel):
                return new
            if callable(new) and not isinstance(new, cst.CSTNode):
                result = new(updated_node)
            elif updated_node is not original_node and is_wrapper(original_node, new):
                result = new.deep_replace(original_node, updated_node)  # keep the edits inside
            else:
                result = new
        if key in self.before or key in self.after:
            return cst.FlattenSentinel([*self.before.get(key, []), result, *self.after.get(key, [])])
        if isinstance(result, cst.IndentedBlock) and not result.body:
            return result.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return result


def _is_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _bound_modules(module: cst.Module) -> Set[str]:
    bound: Set[str] = set()
    for stmt in module.body:
        if not _is_import(stmt):
            continue
        for small in stmt.body:  # type: ignore[attr-defined]
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.asname is None:
                        bound.add(cst.Module([]).code_for_node(alias.name).split(".")[0])
    return bound


def add_imports(module: cst.Module, modules: Sequence[str]) -> cst.Module:
    """Add ``import X`` for each module not already imported plainly at top level."""
    missing = [m for m in dict.fromkeys(modules) if m not in _bound_modules(module)]
    if not missing:
        return module
    body = list(module.body)
    index = 1 if body and _is_docstring(body[0]) else 0
    while index < len(body) and _is_import(body[index]):
        index += 1
    new = [cst.parse_statement(f"import {m}\n", config=module.config_for_parsing) for m in missing]
    return module.with_changes(body=body[:index] + new + body[index:])


def apply_fixes(module: cst.Module, fixes: Sequence[CstFix]) -> str:
    """The module's code with ``fixes`` (already non-overlapping) applied."""
    updated = module.visit(_ApplyFixes(fixes))
    imports = [m for fix in fixes for m in fix.add_imports]
    if imports:
        updated = add_imports(updated, imports)
    return updated.code


def local_edits(fix: CstFix, module: cst.Module, text: str, positions: Any) -> Optional[Tuple[Edit, ...]]:
    """The edits of a fix that only replaces expressions, computed from the replaced nodes alone
    (no render of the whole module); None when the fix needs the whole module (insertions,
    imports to add, statements, removals)."""
    if fix.insert_before or fix.insert_after or not fix.replacements:
        return None
    if fix.add_imports and not set(fix.add_imports) <= _bound_modules(module):
        return None
    edits = []
    for node, new in fix.replacements:
        if isinstance(new, cst.RemovalSentinel) or isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement,
                                                                      cst.BaseSuite, cst.Module)):
            return None
        replacement = new(node) if callable(new) and not isinstance(new, cst.CSTNode) else new
        if isinstance(replacement, (cst.BaseStatement, cst.BaseSmallStatement, cst.BaseSuite)):
            return None
        start, end = positions.span(node)
        old, content = text[start:end], module.code_for_node(replacement)
        # Trim what the old and new text share, as a diff of the whole module would.
        head = 0
        while head < min(len(old), len(content)) and old[head] == content[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(content)) - head and old[-1 - tail] == content[-1 - tail]:
            tail += 1
        if old == content:
            continue
        row, col = positions.location(start + head)
        end_row, end_col = positions.location(end - tail)
        edits.append(Edit(content[head:len(content) - tail], Location(row, col + 1), Location(end_row, end_col + 1)))
    edits.sort(key=lambda e: (e.location.row, e.location.column))
    for before, after in zip(edits, edits[1:]):
        if (after.location.row, after.location.column) < (before.end_location.row, before.end_location.column):
            return None  # overlapping replacements: let the whole render decide
    return tuple(edits)


def text_edit(old: str, new: str) -> Optional[Edit]:
    """The single minimal edit turning ``old`` into ``new`` (None when equal)."""
    if old == new:
        return None
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return Edit(new[start:end_new], offset_location(old, start), offset_location(old, end_old))


def offset_location(text: str, offset: int) -> Location:
    row = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return Location(row, offset - line_start + 1)
