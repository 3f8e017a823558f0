"""Shared pieces of the numerics rules (AMP2xx/AMP3xx): which call is which, the values of its
operands per observation, and the small fix builders they share."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

import libcst as cst

from amp_lint.engine import codegen
from amp_lint.engine.fixing import FixContext
from amp_lint.semantics.facts import Observation
from amp_lint.semantics.values import HALF, Ext, Method, Module, Scalar, Tensor, Value, half_tensor, options

if TYPE_CHECKING:
    from amp_lint.engine.checker import CheckContext

#: Substrings of files the precision analysis needs to see before a numerics rule can fire anywhere:
#: half casts and dtypes, autocast, modules (a prefilter; the analysis itself always sees every file).
PROJECT_TOKENS = ("half", "float16", "bfloat16", "autocast", "HalfTensor", "Module", "torch_dtype", "import")


def is_simple(node: ast.AST) -> bool:
    """An expression cheap and side-effect free to repeat (``x``, ``self.x``, ``x[i]``)."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return is_simple(node.value)
    if isinstance(node, ast.Subscript):
        index = node.slice
        return is_simple(node.value) and isinstance(index, (ast.Name, ast.Constant, ast.UnaryOp))
    return False


def stand_in(node: ast.AST, hazards: Sequence[Tuple[Observation, Tensor]]) -> Optional[ast.AST]:
    """An expression with the dtype of ``node`` in every hazardous context, cheap to repeat: ``node``
    itself when simple, else a name inside it whose value matches (``hidden`` in
    ``self.lm_head(hidden)`` when both are half)."""
    if is_simple(node):
        return node
    for candidate in ast.walk(node):
        if not isinstance(candidate, ast.Name) or candidate is node or candidate.id in ("self", "torch", "F", "nn"):
            continue
        if all(_same_half(obs.value(candidate), value) for obs, value in hazards):
            return candidate
    return None


def _same_half(value: Value, target: Tensor) -> bool:
    tensor = half_tensor(value)
    return tensor is not None and tensor.dtypes == target.dtypes and not tensor.unknown


def tensor_receiver(obs: Observation, call: ast.Call) -> Optional[ast.AST]:
    """The receiver of ``recv.method(...)`` when, here, it is a tensor."""
    if not isinstance(call.func, ast.Attribute):
        return None
    value = obs.value(call.func)
    if isinstance(value, Method) and isinstance(value.recv, Tensor):
        return call.func.value
    return None


def callee_name(obs: Observation, call: ast.Call) -> Optional[str]:
    """The torch/library name ``call`` calls here (``torch.nn.functional.softmax``)."""
    value = obs.value(call.func)
    if isinstance(value, Ext):
        return value.name
    names = {o.name for o in options(value) if isinstance(o, Ext)}
    return names.pop() if len(names) == 1 else None


def module_class(obs: Observation, call: ast.Call) -> Optional[str]:
    """The ``torch.nn`` class of the module instance ``call`` calls here (``torch.nn.Softmax``)."""
    value = obs.value(call.func)
    names = {o.cls.name for o in options(value) if isinstance(o, Module) and isinstance(o.cls, Ext)}
    return names.pop() if len(names) == 1 else None


def number(obs: Observation, node: ast.AST) -> Optional[float]:
    """The numeric constant ``node`` evaluates to here (literals, names, defaults, arithmetic)."""
    value = obs.value(node)
    if isinstance(value, Scalar):
        return value.number
    return None


def half_of(obs: Observation, node: Optional[ast.AST]) -> Optional[Tensor]:
    """The tensor value of ``node`` here when it may be half on positive evidence (not a value
    made half by another caller's autocast region, read where the autocast state is unknown)."""
    if node is None:
        return None
    value = obs.value(node)
    tensor = half_tensor(value)
    if tensor is not None and (obs.autocast_state_unknown_for(value) or obs.half_from_another_program(value)):
        return None
    return tensor


def has_half_dtype(tensor: Tensor, dtype_bits: int = HALF) -> bool:
    return bool(tensor.dtypes & dtype_bits)


def typed_back(fctx: FixContext, new: cst.BaseExpression, back: ast.AST) -> cst.Call:
    """``new.type_as(<back>)``."""
    node = fctx.node(back)
    if node is None:
        raise ValueError("no CST node for the stand-in")
    return codegen.method_call(new, "type_as", [cst.Arg(cst.parse_expression(fctx.code(node)))])


def replace_node(fctx: FixContext, node: ast.AST) -> cst.CSTNode:
    found = fctx.node(node)
    if found is None:
        raise ValueError("no CST node")
    return found


Decide = Callable[[Observation], Optional[Tuple[str, str, Value]]]


# -- fill sites (AMP301, AMP303) --------------------------------------------------------------------
_FILL_METHODS = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0, "index_fill": 2, "index_fill_": 2,
                 "fill_diagonal_": 0, "new_full": 1}
_CLAMPS = ("clamp", "clamp_", "clamp_min", "clamp_max", "clip")


class FillSite:
    """A value written into a tensor here: ``t.masked_fill(m, v)``, ``torch.full(s, v, dtype=...)``,
    ``x + mask * -1e9``. ``filled`` is the tensor expression receiving it (None: an explicit dtype,
    ``dtype``)."""

    __slots__ = ("value", "filled", "tensor", "dtype")

    def __init__(self, value: ast.AST, filled: Optional[ast.AST], tensor: Optional[Tensor],
                 dtype: Optional[ast.AST] = None) -> None:
        self.value = value
        self.filled = filled
        self.tensor = tensor
        self.dtype = dtype


def _kwarg(call: ast.Call, *names: str) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg in names:
            return kw.value
    return None


def is_fill_call(callee, node: ast.Call) -> bool:
    """A cheap test before :func:`fill_sites`: could ``node`` write a value into a tensor?"""
    if callee.names & {"torch.full", "torch.full_like", "torch.where", "torch.clamp", "torch.clip"}:
        return True
    return callee.tensor_method and isinstance(node.func, ast.Attribute) and (
        node.func.attr in _FILL_METHODS or node.func.attr in _CLAMPS)


def fill_sites(obs: Observation, node: ast.AST) -> List[FillSite]:
    """The fill sites of ``node`` in this observation."""
    out: List[FillSite] = []
    if isinstance(node, ast.Assign):  # ``scores[:, 1:] = -1e9``: an indexed store of a constant
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Subscript):
            out.append(FillSite(node.value, target.value, half_tensor(obs.value(target.value))))
        return out
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Add, ast.Sub)):
            for tensor, other in ((node.left, node.right), (node.right, node.left)):
                literal = mask_literal(other)
                if literal is not None:
                    out.append(FillSite(literal, tensor, half_tensor(obs.value(tensor))))
                    break
        elif isinstance(node.op, ast.Mult):  # a mask scaled in half on its own: ``bias = (1.0 - m) * -1e10``
            literal = mask_literal(node)
            if literal is not None:
                scaled = node.left if literal is node.right else node.right
                out.append(FillSite(literal, scaled, half_tensor(obs.value(scaled))))
        return out
    if not isinstance(node, ast.Call):
        return out
    positional = [a for a in node.args if not isinstance(a, ast.Starred)]
    receiver = tensor_receiver(obs, node)
    if receiver is not None:
        method = node.func.attr  # type: ignore[attr-defined]
        tensor = half_tensor(obs.value(receiver))
        if method in _FILL_METHODS:
            index = _FILL_METHODS[method]
            value = _kwarg(node, "value", "fill_value")
            if value is None and len(positional) > index:
                value = positional[index]
            if value is not None:
                dtype = _kwarg(node, "dtype") if method == "new_full" else None
                if dtype is not None:
                    out.append(FillSite(value, None, half_tensor(obs.value(node)), dtype))
                else:
                    out.append(FillSite(value, receiver, tensor))
        elif method in _CLAMPS:
            for kw in node.keywords:
                if kw.arg in ("min", "max"):
                    out.append(FillSite(kw.value, receiver, tensor))
            if method in ("clamp_min", "clamp_max") and positional:
                out.append(FillSite(positional[0], receiver, tensor))
        return out
    name = callee_name(obs, node)
    if name in ("torch.full", "torch.full_like") and len(positional) >= 2:
        dtype = _kwarg(node, "dtype")
        result = half_tensor(obs.value(node))
        if dtype is not None:
            filled = dtype.value if isinstance(dtype, ast.Attribute) and dtype.attr == "dtype" else None
            out.append(FillSite(positional[1], filled, result, None if filled is not None else dtype))
        elif name == "torch.full_like":
            out.append(FillSite(positional[1], positional[0], half_tensor(obs.value(positional[0]))))
    elif name == "torch.where" and len(positional) == 3:
        a, b = positional[1], positional[2]
        for value, other in ((a, b), (b, a)):
            out.append(FillSite(value, other, half_tensor(obs.value(other))))
    elif name in ("torch.clamp", "torch.clip") and positional:
        for kw in node.keywords:
            if kw.arg in ("min", "max"):
                out.append(FillSite(kw.value, positional[0], half_tensor(obs.value(positional[0]))))
    return out


def mask_literal(expr: ast.AST) -> Optional[ast.AST]:
    """The literal of ``mask * -1e9`` / ``-1e9 * (1 - mask)`` / ``(1.0 - mask) * -10000.0``."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        for side in (expr.right, expr.left):
            inner = side.operand if isinstance(side, ast.UnaryOp) else side
            if isinstance(inner, ast.Constant) and isinstance(inner.value, (int, float)) \
                    and not isinstance(inner.value, bool):
                return side
    return None


def local_scope(ctx: "CheckContext", node: ast.AST) -> Optional[Tuple[ast.AST, int]]:
    """The function enclosing the node being visited and ``node``'s line: where :func:`reaching_value`
    and :func:`last_binding` look for what a local name holds (None at module level)."""
    enclosing = ctx.enclosing(ast.FunctionDef, ast.AsyncFunctionDef)
    return (enclosing, node.lineno) if enclosing is not None else None  # type: ignore[attr-defined]


def reaching_value(scope: Optional[Tuple[ast.AST, int]], name: str) -> Optional[ast.AST]:
    """The value of the last binding of ``name`` before the line in ``scope`` (function, line),
    when that binding is a plain ``name = value`` (None: a parameter, unpacking, ``+=``, a loop
    or ``with`` target, or no binding)."""
    binding = last_binding(scope, name)
    if isinstance(binding, ast.Assign) and len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name):
        return binding.value
    return None


def last_binding(scope: Optional[Tuple[ast.AST, int]], name: str) -> Optional[ast.AST]:
    """The statement that last binds ``name`` before the line in ``scope`` (function, line): an
    assignment, ``+=``, a loop or ``with`` target (None: a parameter, or no binding)."""
    if scope is None:
        return None
    function, line = scope
    last: Optional[Tuple[int, ast.AST]] = None

    def binds(target: Optional[ast.AST]) -> bool:
        return target is not None and any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(target))

    for node in ast.walk(function):
        bound = isinstance(node, ast.Assign) and any(binds(t) for t in node.targets) \
            or isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)) \
            and binds(node.target) \
            or isinstance(node, ast.With) and any(binds(item.optional_vars) for item in node.items)
        if bound and node.lineno < line and (last is None or node.lineno >= last[0]):  # type: ignore[attr-defined]
            last = (node.lineno, node)  # type: ignore[attr-defined]
    return last[1] if last is not None else None
