"""Static constant resolution for sizes: literals, module constants, simple arithmetic,
argparse ``default=``, dataclass/config-class defaults, keyword arguments and parameter defaults.

A value is known only when every definition that could supply it agrees (precision first).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from amp_lint.engine.context import FileContext
from amp_lint.engine.names import dotted_name


class ConstantTable:
    """Collects definitions during the walk; :meth:`resolve` evaluates at ``finish`` time."""

    key = "constants"

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.module_defs: Dict[str, List[cst.BaseExpression]] = {}
        self.attr_defs: Dict[str, List[cst.BaseExpression]] = {}
        self.param_defaults: List[Dict[str, cst.BaseExpression]] = []

    # -- collection --------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        defaults = {
            p.name.value: p.default
            for p in list(node.params.params) + list(node.params.kwonly_params)
            if p.default is not None
        }
        self.param_defaults.append(defaults)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.param_defaults.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._define(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._define(node.target, node.value)

    def _define(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        in_class = any(isinstance(n, cst.ClassDef) for n in self.ctx.stack)
        in_function = bool(self.param_defaults)
        if isinstance(target, cst.Name):
            if in_class and not in_function:
                self.attr_defs.setdefault(target.value, []).append(value)
            elif not in_function:
                self.module_defs.setdefault(target.value, []).append(value)
            else:
                # a local ``vocab_size = 8003``: visible to later code of the function, like a default
                self.param_defaults[-1][target.value] = value
        elif isinstance(target, cst.Attribute):
            # ``self.vocab_size = vocab_size`` in __init__: an attribute default through the param;
            # any other ``x.vocab_size = <expr>`` is one more definition (unknown ones make it ambiguous).
            attr = target.attr.value
            if isinstance(value, cst.Name) and self.param_defaults and value.value in self.param_defaults[-1]:
                self.attr_defs.setdefault(attr, []).append(self.param_defaults[-1][value.value])
            elif not (isinstance(value, cst.Name) and value.value == attr):
                self.attr_defs.setdefault(attr, []).append(value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            dest = None
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "dest" and isinstance(arg.value, cst.SimpleString):
                    dest = arg.value.evaluated_value
            if dest is None:
                for arg in node.args:
                    if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
                        flag = arg.value.evaluated_value
                        if isinstance(flag, str) and flag.startswith("--"):
                            dest = flag[2:].replace("-", "_")
                            break
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "default" and dest:
                    self.attr_defs.setdefault(dest, []).append(arg.value)
            return
        # ``GPTConfig(vocab_size=50257)`` / ``dict(vocab_size=...)``: keyword values feed attributes.
        for arg in node.args:
            if arg.keyword is not None and isinstance(arg.value, (cst.Integer, cst.BinaryOperation)):
                self.attr_defs.setdefault(arg.keyword.value, []).append(arg.value)

    # -- evaluation --------------------------------------------------------------------------
    def scope_snapshot(self) -> Dict[str, cst.BaseExpression]:
        """Parameter defaults visible at the current point (inner functions win)."""
        merged: Dict[str, cst.BaseExpression] = {}
        for defaults in self.param_defaults:
            merged.update(defaults)
        return merged

    def resolve(self, expr: cst.BaseExpression, params: Optional[Dict[str, cst.BaseExpression]] = None,
                _seen: Optional[Set[int]] = None) -> Optional[Tuple[int, Optional[cst.Integer]]]:
        """(value, the single Integer literal that defines it or None) for an int-valued expression."""
        seen = _seen if _seen is not None else set()
        if id(expr) in seen:
            return None
        seen.add(id(expr))
        params = params or {}
        if isinstance(expr, cst.Integer):
            try:
                return int(expr.evaluated_value), expr
            except ValueError:
                return None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            inner = self.resolve(expr.expression, params, seen)
            return (-inner[0], None) if inner else None
        if isinstance(expr, cst.BinaryOperation):
            left = self.resolve(expr.left, params, seen)
            right = self.resolve(expr.right, params, seen)
            if left is None or right is None:
                return None
            a, b = left[0], right[0]
            op = expr.operator
            if isinstance(op, cst.Add):
                return a + b, None
            if isinstance(op, cst.Subtract):
                return a - b, None
            if isinstance(op, cst.Multiply):
                return a * b, None
            if isinstance(op, cst.FloorDivide) and b:
                return a // b, None
            return None
        if isinstance(expr, cst.Call) and dotted_name(expr.func) == "int" and len(expr.args) == 1:
            return self.resolve(expr.args[0].value, params, seen)
        if isinstance(expr, cst.Name):
            if expr.value in params:
                return self.resolve(params[expr.value], {}, seen)
            return self._unique(self.module_defs.get(expr.value, []), seen)
        if isinstance(expr, cst.Attribute):
            return self._unique(self.attr_defs.get(expr.attr.value, []), seen)
        return None

    def _unique(self, defs: List[cst.BaseExpression], seen: Set[int]) -> Optional[Tuple[int, Optional[cst.Integer]]]:
        values = [self.resolve(d, {}, set(seen)) for d in defs]
        if not values or any(v is None for v in values):
            return None
        if len({v[0] for v in values}) != 1:  # type: ignore[index]
            return None
        literals = {id(v[1]) for v in values if v[1] is not None}  # type: ignore[index]
        literal = values[0][1] if len(values) == 1 else None  # type: ignore[index]
        return values[0][0], (literal if len(literals) == 1 else None)  # type: ignore[index]
