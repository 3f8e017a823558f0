"""Fixes: the analysis runs on Python's ``ast``; fixes are LibCST edits (lossless: comments,
formatting and encoding survive). A rule's :class:`FixPlan` is built only when a fix or its edit is
wanted, against a :class:`FixContext` that parses the file with LibCST once and finds the CST node
for an ``ast`` node by its source span.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from amp_lint.engine.fixes import CstFix
from amp_lint.engine.names import ImportTable, NameCollector
from amp_lint.engine.walker import iter_subtree
from amp_lint.findings import Applicability

#: ast node class -> the LibCST classes that can have the same span.
_KINDS: Dict[type, Tuple[type, ...]] = {
    ast.Call: (cst.Call,), ast.Name: (cst.Name,), ast.Attribute: (cst.Attribute,),
    ast.BinOp: (cst.BinaryOperation,), ast.UnaryOp: (cst.UnaryOperation,), ast.Subscript: (cst.Subscript,),
    ast.Constant: (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Name),
    ast.Compare: (cst.Comparison,), ast.BoolOp: (cst.BooleanOperation,), ast.IfExp: (cst.IfExp,),
    ast.Tuple: (cst.Tuple,), ast.List: (cst.List,), ast.Dict: (cst.Dict,), ast.Lambda: (cst.Lambda,),
    ast.JoinedStr: (cst.FormattedString,), ast.Starred: (cst.StarredElement,),
    ast.Assign: (cst.Assign,), ast.AugAssign: (cst.AugAssign,), ast.AnnAssign: (cst.AnnAssign,),
    ast.Expr: (cst.Expr,), ast.Return: (cst.Return,), ast.For: (cst.For,), ast.While: (cst.While,),
    ast.If: (cst.If,), ast.With: (cst.With,), ast.FunctionDef: (cst.FunctionDef,),
    ast.ClassDef: (cst.ClassDef,), ast.Try: (cst.Try,), ast.Import: (cst.Import,),
    ast.ImportFrom: (cst.ImportFrom,),
}


@dataclass
class FixPlan:
    """A fix a rule offers: its title and safety now, its CST edit built on demand."""

    title: str
    applicability: Applicability
    build: Callable[["FixContext"], Optional[CstFix]]


class FixContext:
    """A file parsed with LibCST, with CST nodes findable from ``ast`` nodes."""

    def __init__(self, text: str) -> None:
        from amp_lint.engine.positions import Positions

        self.text = text
        self.module = cst.parse_module(text)
        self._positions = Positions(self.module)
        self._lines = text.splitlines()
        self._index: Optional[Dict[Tuple[int, int, int, int], List[cst.CSTNode]]] = None
        self._parents: Dict[int, cst.CSTNode] = {}
        self._names: Optional[ImportTable] = None

    @property
    def positions(self):  # -> amp_lint.engine.positions.Positions
        """Character spans and positions of the module's nodes."""
        return self._positions

    # -- finding nodes -------------------------------------------------------------------------------
    def _build_index(self) -> Dict[Tuple[int, int, int, int], List[cst.CSTNode]]:
        index: Dict[Tuple[int, int, int, int], List[cst.CSTNode]] = {}
        todo: List[cst.CSTNode] = [self.module]
        while todo:
            node = todo.pop()
            for child in node.children:
                self._parents[id(child)] = node
                todo.append(child)
            if node in self._positions:
                rng = self._positions[node]
                key = (rng.start.line, rng.start.column, rng.end.line, rng.end.column)
                index.setdefault(key, []).append(node)
        return index

    def node(self, node: ast.AST) -> Optional[cst.CSTNode]:
        """The CST node with the span and kind of ``node`` (None when there is none)."""
        if self._index is None:
            self._index = self._build_index()
        key = self._span(node)
        kinds = _KINDS.get(type(node))
        for candidate in self._index.get(key, ()):
            if kinds is None or isinstance(candidate, kinds):
                return candidate
        return None

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._index is None:
            self._index = self._build_index()
        return self._parents.get(id(node))

    def statement(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The statement (``SimpleStatementLine`` or compound statement) holding ``node``."""
        current: Optional[cst.CSTNode] = node
        while current is not None and not isinstance(current, (cst.SimpleStatementLine,
                                                               cst.BaseCompoundStatement)):
            current = self.parent(current)
        return current

    def _span(self, node: ast.AST) -> Tuple[int, int, int, int]:
        from amp_lint.engine.checker import byte_to_char

        row = node.lineno  # type: ignore[attr-defined]
        end = node.end_lineno  # type: ignore[attr-defined]
        line = self._lines[row - 1] if 0 < row <= len(self._lines) else ""
        end_line = self._lines[end - 1] if 0 < end <= len(self._lines) else ""
        return (row, byte_to_char(line, node.col_offset), end,  # type: ignore[attr-defined]
                byte_to_char(end_line, node.end_col_offset))  # type: ignore[attr-defined]

    # -- code ------------------------------------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @property
    def names(self) -> ImportTable:
        if self._names is None:
            table = ImportTable()
            collector = NameCollector(table)
            collector.prepass(self.module)
            for node in iter_subtree(self.module):
                if isinstance(node, cst.Import):
                    table.add_import(node)
                elif isinstance(node, cst.ImportFrom):
                    table.add_import_from(node)
            self._names = table
        return self._names

    def reference(self, qualified: str, like: Optional[cst.BaseExpression] = None) -> Tuple[str, Optional[str]]:
        """(expression text for ``qualified``, module to import or None) through names bound here.

        With ``like`` (the expression being replaced), its own root alias is preferred when it is
        bound to the same top-level package (``T.cuda.amp.autocast`` -> ``T.amp.autocast``).
        """
        names = self.names
        root_node = like
        while isinstance(root_node, cst.Attribute):
            root_node = root_node.value
        if isinstance(root_node, cst.Name):
            binding = names.bindings.get(root_node.value)
            top = qualified.split(".")[0]
            if binding is not None and binding.qualified == top and not isinstance(binding.node, cst.Assign):
                return root_node.value + qualified[len(top):], None
        local = names.local_for(qualified)
        if local is not None:
            return local, None
        return qualified, qualified.split(".")[0]

    def torch_ref(self, qualified: str) -> Tuple[cst.BaseExpression, Tuple[str, ...]]:
        """An expression for ``torch.float32`` etc. through names bound here, and imports to add."""
        text, module = self.reference(qualified)
        return cst.parse_expression(text), ((module,) if module else ())
