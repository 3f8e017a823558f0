"""Run the rules over one parsed file: one walk of its ``ast``, every rule's ``visit_<Node>`` /
``leave_<Node>`` called in turn, with the current scope kept so rules can ask the facts.

Rules read the file through :class:`CheckContext`; they never see the interpreter.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from amp_lint.config import Settings
from amp_lint.semantics.facts import Evidence, Facts, Observation
from amp_lint.semantics.program import SourceModule

if TYPE_CHECKING:
    from amp_lint.engine.fixing import FixPlan
    from amp_lint.rules.base import Rule

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class RawFinding:
    """A finding before positions and edits (its node is still the live ``ast`` node)."""

    rule: "Rule"
    node: ast.AST
    message: str
    fix: Optional["FixPlan"]
    fix_title: Optional[str]
    precision_context: Optional[str]
    confidence: str
    evidence: Tuple[Evidence, ...] = ()


class CheckContext:
    """What a rule may read about the file being checked, and where it reports."""

    def __init__(self, module: SourceModule, settings: Settings, facts: Facts) -> None:
        self.module = module
        self.path = module.path
        self.settings = settings
        self.facts = facts
        self.tree = module.tree
        self.stack: List[ast.AST] = []
        self.scopes: List[ast.AST] = [module.tree]
        self.findings: List[RawFinding] = []
        self._callees: Dict[int, "Callee"] = {}

    # -- navigation --------------------------------------------------------------------------------
    @property
    def scope(self) -> ast.AST:
        return self.scopes[-1]

    def parent(self, levels: int = 1) -> Optional[ast.AST]:
        index = len(self.stack) - 1 - levels
        return self.stack[index] if index >= 0 else None

    def enclosing(self, *types: type) -> Optional[ast.AST]:
        for node in reversed(self.stack[:-1]):
            if isinstance(node, types):
                return node
        return None

    # -- facts ---------------------------------------------------------------------------------------
    def observations(self, node: ast.AST) -> List[Observation]:
        return self.facts.observations(node, self.scope)

    def callee(self, node: ast.Call) -> "Callee":
        """What ``node`` calls, over every context it ran in (computed once, shared by the rules)."""
        found = self._callees.get(id(node))
        if found is None:
            found = self._callees[id(node)] = Callee.of(self.observations(node), node)
        return found

    def qualified(self, node: ast.AST) -> Optional[str]:
        """The torch/library name ``node`` stands for (value-based, so scopes and aliases count)."""
        return self.facts.qualified(node, self.scope)

    def segment(self, node: ast.AST, limit: int = 80) -> str:
        return self.module.segment(node, limit)

    # -- reporting -----------------------------------------------------------------------------------
    def add(self, finding: RawFinding) -> None:
        self.findings.append(finding)


@dataclass
class Callee:
    """What a call calls: torch/library names, torch.nn module classes, and whether it is a method of
    a tensor; empty when it never ran."""

    names: frozenset = frozenset()
    modules: frozenset = frozenset()
    tensor_method: bool = False

    @classmethod
    def of(cls, observations, node: ast.Call) -> "Callee":
        from amp_lint.semantics.values import Ext, Method, Module, Tensor, options

        names, modules, tensor = set(), set(), False
        for obs in observations:
            for option in options(obs.value(node.func)):
                if isinstance(option, Ext):
                    names.add(option.name)
                elif isinstance(option, Module) and isinstance(option.cls, Ext):
                    modules.add(option.cls.name)
                elif isinstance(option, Method) and isinstance(option.recv, Tensor):
                    tensor = True
        return cls(frozenset(names), frozenset(modules), tensor)


_FIELDS: Dict[type, Tuple[str, ...]] = {}
_HANDLERS: Dict[Tuple[type, str], Tuple[str, ...]] = {}


def _handler_names(cls: type, prefix: str) -> Tuple[str, ...]:
    key = (cls, prefix)
    names = _HANDLERS.get(key)
    if names is None:
        names = tuple(n for n in dir(cls) if n.startswith(prefix) and isinstance(getattr(ast, n[len(prefix):], None),
                                                                                 type))
        _HANDLERS[key] = names
    return names


def walk(ctx: CheckContext, rules: Sequence[object]) -> None:
    """Visit every node of the file once, calling the rules' handlers in order."""
    visits: Dict[type, List[Callable[[Any], None]]] = {}
    leaves: Dict[type, List[Callable[[Any], None]]] = {}
    for rule in rules:
        for name in _handler_names(type(rule), "visit_"):
            visits.setdefault(getattr(ast, name[6:]), []).append(getattr(rule, name))
        for name in _handler_names(type(rule), "leave_"):
            leaves.setdefault(getattr(ast, name[6:]), []).append(getattr(rule, name))
    stack = ctx.stack
    scopes = ctx.scopes

    def visit(node: ast.AST) -> None:
        cls = type(node)
        stack.append(node)
        for handler in visits.get(cls, ()):
            handler(node)
        is_scope = cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _FIELDS[cls] = tuple(cls._fields)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                if is_scope and name == "body":
                    scopes.append(node)
                    visit(value)
                    scopes.pop()
                else:
                    visit(value)
            elif isinstance(value, list):
                if is_scope and name == "body":
                    scopes.append(node)
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
                if is_scope and name == "body":
                    scopes.pop()
        for handler in leaves.get(cls, ()):
            handler(node)
        stack.pop()

    visit(ctx.tree)
    for rule in rules:
        finish = getattr(rule, "finish", None)
        if finish is not None:
            finish()


def byte_to_char(line: str, column: int) -> int:
    """A character column from a UTF-8 byte offset into ``line`` (ast's convention)."""
    if line.isascii():
        return column
    return len(line.encode("utf-8")[:column].decode("utf-8", errors="ignore"))


def node_range(module: SourceModule, node: ast.AST) -> Tuple[int, int, int, int]:
    """(start row, start column, end row, end column): rows 1-based, columns 0-based characters."""
    row = getattr(node, "lineno", 1)
    end_row = getattr(node, "end_lineno", row) or row
    col = byte_to_char(module.line(row), getattr(node, "col_offset", 0))
    end_col = byte_to_char(module.line(end_row), getattr(node, "end_col_offset", 0) or 0)
    return row, col, end_row, end_col
