"""A light import/alias table: resolves ``T.cuda.amp.autocast`` to ``torch.cuda.amp.autocast``.

LibCST's QualifiedNameProvider costs several times the parse; this table is built in the one
shared traversal from import statements and simple aliases, which is all the rules need.
Scopes are flattened: a name imported anywhere in the file counts everywhere after it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

import libcst as cst


_NAME = cst.Name
_ATTRIBUTE = cst.Attribute


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def module_name(node: cst.BaseExpression) -> str:
    """Text of an import's module expression (``torch.cuda.amp``)."""
    return dotted_name(node) or ""


@dataclass
class Binding:
    """A local name bound by an import or a simple alias assignment."""

    local: str
    qualified: str
    node: cst.CSTNode  # the Import/ImportFrom statement (or Assign for aliases)
    alias: Optional[cst.ImportAlias] = None


@dataclass
class ImportTable:
    """Local name -> qualified name, plus use counts for import clean-up."""

    bindings: Dict[str, Binding] = field(default_factory=dict)
    uses: Counter = field(default_factory=Counter)

    # -- building -------------------------------------------------------------------------
    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bindings[alias.asname.name.value] = Binding(alias.asname.name.value, full, node, alias)
            else:
                root = full.split(".")[0]
                # ``import torch.cuda.amp`` binds ``torch``; keep an existing richer binding.
                if root not in self.bindings or self.bindings[root].qualified != root:
                    self.bindings[root] = Binding(root, root, node, alias)

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or isinstance(node.names, cst.ImportStar):
            return
        base = module_name(node.module) if node.module is not None else ""
        for alias in node.names:
            imported = module_name(alias.name)
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.bindings[local] = Binding(local, f"{base}.{imported}" if base else imported, node, alias)

    def add_alias(self, local: str, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        """``ac = torch.cuda.amp.autocast``: ``ac`` now resolves like its value."""
        qualified = self.qualify(value)
        if qualified is not None:
            self.bindings[local] = Binding(local, qualified, node)
        elif local in self.bindings and isinstance(self.bindings[local].node, cst.Assign):
            # Scopes are flattened, so an import stays bound (``except ImportError: amp = None``).
            self.bindings.pop(local, None)

    def note_use(self, name: str) -> None:
        self.uses[name] += 1

    # -- queries ----------------------------------------------------------------------------
    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """Qualified name of a Name/Attribute chain whose root is an imported name."""
        # ``type(...) is`` rather than isinstance: LibCST nodes are ABCs, and isinstance on them
        # is slow; this runs for most names of every file. Node classes are never subclassed.
        if type(node) is _NAME:
            binding = self.bindings.get(node.value)  # type: ignore[attr-defined]
            return None if binding is None else binding.qualified
        parts: List[str] = []
        while type(node) is _ATTRIBUTE:
            parts.append(node.attr.value)  # type: ignore[attr-defined]
            node = node.value  # type: ignore[attr-defined]
        if type(node) is not _NAME:
            return None
        binding = self.bindings.get(node.value)  # type: ignore[attr-defined]
        if binding is None:
            return None
        parts.append(binding.qualified)
        return ".".join(reversed(parts))

    def is_bound(self, local: str) -> bool:
        return local in self.bindings

    def local_for(self, qualified: str) -> Optional[str]:
        """An expression text that refers to ``qualified`` through names bound here, if any.

        Prefers a binding of the top-level package (``T.amp.autocast`` for ``import torch as T``),
        then the longest module prefix that is bound.
        """
        root = qualified.split(".")[0]
        best: Optional[Tuple[int, str]] = None
        for binding in self.bindings.values():
            if binding.node is None or isinstance(binding.node, cst.Assign):
                continue
            q = binding.qualified
            if q == qualified:
                return binding.local
            if qualified.startswith(q + "."):
                rank = 10**6 if q == root else len(q)
                if best is None or rank > best[0]:
                    best = (rank, binding.local + qualified[len(q):])
        return best[1] if best else None

    def bindings_for_statement(self, node: cst.CSTNode) -> Iterable[Binding]:
        return [b for b in self.bindings.values() if b.node is node]


class NameCollector:
    """Walker participant that fills the file's ImportTable and counts name uses."""

    def __init__(self, table: ImportTable) -> None:
        self.table = table

    def prepass(self, module: cst.Module) -> None:
        """Record top-level imports first, so uses in functions above them still resolve."""
        todo = list(module.body)
        while todo:
            stmt = todo.pop(0)
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import):
                        self.table.add_import(small)
                    elif isinstance(small, cst.ImportFrom):
                        self.table.add_import_from(small)
            elif isinstance(stmt, (cst.If, cst.Try)):
                todo.extend(stmt.body.body)
                for handler in getattr(stmt, "handlers", ()):
                    todo.extend(handler.body.body)
                orelse = getattr(stmt, "orelse", None)
                if isinstance(orelse, cst.Else):
                    todo.extend(orelse.body.body)

    def visit_Import(self, node: cst.Import) -> None:
        self.table.add_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.table.add_import_from(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.table.note_use(node.value)

    def leave_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        local = node.targets[0].target.value
        if isinstance(node.value, (cst.Name, cst.Attribute)):
            self.table.add_alias(local, node.value, node)
        elif local in self.table.bindings and not isinstance(self.table.bindings[local].node, (cst.Import, cst.ImportFrom)):
            self.table.bindings.pop(local, None)
