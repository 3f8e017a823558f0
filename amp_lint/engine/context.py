"""Per-file state shared by the analyses and the rules during the one traversal."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import libcst as cst
from libcst.metadata import CodeRange

from amp_lint.config import Settings
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.names import ImportTable

if TYPE_CHECKING:
    from amp_lint.rules.base import Rule


@dataclass
class RawFinding:
    """A finding before positions are computed (nodes are still live)."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Optional[CstFix]
    fix_title: Optional[str]
    precision_context: Optional[str]
    confidence: str


#: Parent node type -> the field that holds an assignment target / bound name (for is_store).
_STORE_FIELD = {
    cst.AssignTarget: "target", cst.AnnAssign: "target", cst.AugAssign: "target", cst.For: "target",
    cst.CompFor: "target", cst.AsName: "name", cst.FunctionDef: "name", cst.ClassDef: "name",
    cst.Param: "name",
}


class FileContext:
    """What a rule may read about the file being linted, and where it reports."""

    def __init__(self, path: str, text: str, module: cst.Module, settings: Settings,
                 project: Any = None) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.settings = settings
        self.project = project
        self.names = ImportTable()
        self.stack: List[cst.CSTNode] = []
        self.findings: List[RawFinding] = []
        self.analyses: Dict[str, Any] = {}
        self._positions: Optional[Any] = None

    # -- tree navigation ----------------------------------------------------------------------
    def parent(self, levels: int = 1) -> Optional[cst.CSTNode]:
        """The ancestor ``levels`` up from the node being visited."""
        index = len(self.stack) - 1 - levels
        return self.stack[index] if index >= 0 else None

    def enclosing(self, *types: type) -> Optional[cst.CSTNode]:
        """The nearest ancestor of one of ``types``."""
        for node in reversed(self.stack[:-1]):
            if isinstance(node, types):
                return node
        return None

    def is_store(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` (being visited) is an assignment target rather than a use."""
        # One dict lookup on the parent's exact type (isinstance on LibCST's ABCs is slow and
        # this runs for every Name); node classes are never subclassed.
        stack = self.stack
        if len(stack) < 2:
            return False
        parent = stack[-2]
        field = _STORE_FIELD.get(type(parent))
        return field is not None and getattr(parent, field) is node

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        return self.names.qualify(node)

    def reference(self, qualified: str, like: Optional[cst.BaseExpression] = None) -> "tuple[str, Optional[str]]":
        """(expression text for ``qualified``, module to import or None) using names bound here.

        With ``like`` (the expression being replaced), its own root alias is preferred when it
        is bound to the same top-level package (``T.cuda.amp.autocast`` -> ``T.amp.autocast``).
        """
        root_node = like
        while isinstance(root_node, cst.Attribute):
            root_node = root_node.value
        if isinstance(root_node, cst.Name):
            binding = self.names.bindings.get(root_node.value)
            top = qualified.split(".")[0]
            if binding is not None and binding.qualified == top and not isinstance(binding.node, cst.Assign):
                return root_node.value + qualified[len(top):], None
        local = self.names.local_for(qualified)
        if local is not None:
            return local, None
        root = qualified.split(".")[0]
        return qualified, root

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- reporting ---------------------------------------------------------------------------
    def add_finding(self, rule: "Rule", node: cst.CSTNode, message: str, *, fix: Optional[CstFix],
                    fix_title: Optional[str], precision_context: Optional[str], confidence: str) -> None:
        self.findings.append(RawFinding(rule, node, message, fix, fix_title, precision_context, confidence))

    def position(self, node: cst.CSTNode) -> CodeRange:
        """Source range of ``node``; computed for the whole file on first use only."""
        if self._positions is None:
            from amp_lint.engine.positions import Positions  # PositionProvider's ranges, ~4x cheaper

            self._positions = Positions(self.module)
        return self._positions[node]
