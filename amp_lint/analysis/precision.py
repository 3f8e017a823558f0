"""Precision analysis: which dtype each tensor expression has, in which precision context.

A static counterpart of autocast's casting policy (op tables in :mod:`amp_lint.data.ops`), run
in the one shared traversal. The trick that keeps it to one pass: a function's *entry context*
(is this ``forward`` running in pure fp16 because the model was ``.half()``-ed further down the
file, or under ``torch.autocast``?) is often known only after the whole file was seen. So every
expression's dtype is computed for all entry contexts at once - a value is a vector with one dtype
per entry context in :data:`CONTEXTS` - and rules hand the analysis per-context verdicts
(:meth:`PrecisionAnalysis.report_when`). When the walk ends, the analysis works out each
function's entry contexts (casts of its class, calls under autocast, submodule and call edges)
and emits the findings whose verdict holds in one of them.

Dtypes are short strings: ``f16``, ``bf16``, ``f32``, ``f64``, ``int``, ``bool``, ``py`` (a Python
scalar), ``None`` (unknown). A trailing ``?`` marks a half dtype that only holds when a
condition is true (``if args.fp16: model.half()``).

What a rule reads: :meth:`value` (the vector of an expression), :meth:`effective` (the effective
context per entry, lexical autocast regions applied), :func:`is_half`, :meth:`report_when`.
Per-file facts that other files need (classes, casts of imported classes) are kept in
:attr:`summary` for the project phase.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from amp_lint.data import ops as opdata
from amp_lint.engine.context import FileContext
from amp_lint.engine.names import dotted_name


@dataclass(frozen=True)
class Context:
    """A precision context: kind FP32 / AUTOCAST / PURE, half dtype, autocast device."""

    kind: str
    dtype: Optional[str] = None
    device: Optional[str] = None

    @property
    def label(self) -> str:
        if self.kind == "FP32":
            return "FP32"
        return f"{self.kind}_{'BF16' if self.dtype == 'bf16' else 'FP16'}"

    def describe(self) -> str:
        if self.kind == "AUTOCAST":
            return f"{'CPU' if self.device == 'cpu' else 'CUDA'} autocast ({'bfloat16' if self.dtype == 'bf16' else 'float16'})"
        if self.kind == "PURE":
            return f"a module cast to {'bfloat16' if self.dtype == 'bf16' else 'float16'}"
        return "float32"


FP32 = Context("FP32")
CONTEXTS: Tuple[Context, ...] = (
    FP32,
    Context("AUTOCAST", "f16", "cuda"),
    Context("AUTOCAST", "bf16", "cuda"),
    Context("AUTOCAST", "f16", "cpu"),
    Context("AUTOCAST", "bf16", "cpu"),
    Context("PURE", "f16"),
    Context("PURE", "bf16"),
)
N = len(CONTEXTS)
#: Order in which a finding picks the context it is reported in (most telling first).
PRIORITY = (5, 6, 3, 4, 1, 2, 0)

Vector = Tuple[Optional[str], ...]
FLOATS = ("f16", "bf16", "f32", "f64")

_DTYPE_NAMES = {
    "float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "float": "f32", "float64": "f64",
    "double": "f64", "int64": "int", "long": "int", "int32": "int", "int": "int", "bool": "bool",
    "HalfTensor": "f16", "FloatTensor": "f32", "BFloat16Tensor": "bf16", "DoubleTensor": "f64",
}
_CAST_METHODS = {"half": "f16", "bfloat16": "bf16", "float": "f32", "double": "f64", "long": "int", "int": "int",
                 "bool": "bool"}
_FACTORIES = {"randn", "rand", "zeros", "ones", "full", "empty", "tensor", "as_tensor", "eye", "linspace",
              "logspace", "normal", "arange", "randint", "from_numpy"}
_LIKE = {"randn_like", "rand_like", "zeros_like", "ones_like", "full_like", "empty_like"}
_NEW = {"new_full", "new_zeros", "new_ones", "new_empty", "new_tensor"}
_INT_RESULTS = {"argmax", "argmin", "argsort", "size", "dim", "numel", "long", "nonzero", "item", "tolist",
                "eq", "ne", "lt", "gt", "le", "ge", "isinf", "isnan", "isfinite", "any", "all", "bool"}
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast", "torch.cuda.amp.autocast",
             "torch.cpu.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"}


#: Substrings of files whose summary the project phase needs (casts, autocast calls): every
#: numerics rule adds them to its prefilter tokens so those files are analysed.
PROJECT_TOKENS = ("half", "float16", "bfloat16", "autocast", "HalfTensor", "Module", "torch_dtype", "from .")


def is_half(dtype: Optional[str]) -> bool:
    return dtype is not None and dtype.rstrip("?") in ("f16", "bf16")


def base(dtype: Optional[str]) -> Optional[str]:
    return dtype.rstrip("?") if dtype else dtype


def const(dtype: Optional[str]) -> Vector:
    return (dtype,) * N


def promote(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """Native type promotion of two tensor dtypes (Python scalars do not promote)."""
    if a in (None, "py"):
        return b if b != "py" else a
    if b in (None, "py"):
        return a
    cond = "?" if (a.endswith("?") or b.endswith("?")) else ""
    x, y = base(a), base(b)
    if x == y:
        return a if a.endswith("?") else b
    if x in ("int", "bool"):
        return b
    if y in ("int", "bool"):
        return a
    if "f64" in (x, y):
        return "f64"
    if "f32" in (x, y) or {x, y} == {"f16", "bf16"}:
        return "f32"
    return x + cond  # pragma: no cover


@dataclass
class ModuleVal:
    """A module instance: its class (local name or qualified nn class) and any wholesale cast."""

    cls: Optional[str] = None
    cast: Optional[str] = None  # "f16" / "bf16" / "f32", with "?" when conditional
    low: bool = False
    children: Tuple[str, ...] = ()  # local classes built inside a container (``nn.Sequential(Block(), ...)``)


Value = Union[Vector, ModuleVal]


@dataclass
class ClassInfo:
    name: str
    bases: List[str] = field(default_factory=list)
    submodules: Dict[str, str] = field(default_factory=dict)  # attr -> class (local or torch.nn.X)
    children: Set[str] = field(default_factory=set)  # local / imported class names used as submodules


@dataclass
class Pending:
    """A rule verdict waiting for its function's entry contexts."""

    key: str
    rule: object
    node: cst.CSTNode
    messages: List[Optional[str]]
    fix: object
    low: bool
    labels: List[str] = field(default_factory=list)
    method: Optional[str] = None  # the class method the finding is in, if any


@dataclass
class Scope:
    key: str
    env: Dict[str, Value] = field(default_factory=dict)
    exprs: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    class_name: Optional[str] = None
    params: Set[str] = field(default_factory=set)
    ifs: int = 0
    method: Optional[str] = None


class PrecisionAnalysis:
    """Walker participant computing dtype vectors and resolving findings' contexts at the end."""

    key = "precision"

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.device_default = "cpu" if ctx.settings.device == "cpu" else "cuda"
        self.scopes: List[Scope] = [Scope("<module>")]
        self.regions: List[Tuple[Context, bool]] = []  # (context, low confidence)
        self.region_marks: Dict[int, int] = {}
        self.classes: Dict[str, ClassInfo] = {}
        self.class_stack: List[str] = []
        self.values: Dict[int, Vector] = {}
        # entry contexts: key -> {context index: (conditional, low)}
        self.entries: Dict[str, Dict[int, Tuple[bool, bool]]] = {"<module>": {0: (False, False)}}
        self.call_edges: List[Tuple[str, str, Optional[Tuple[Context, bool]], bool]] = []
        self.class_seeds: List[Tuple[str, int, bool, bool]] = []  # (class, ctx index, conditional, low)
        #: class -> method -> methods it calls on ``self`` (what ``forward`` reaches)
        self.self_calls: Dict[str, Dict[str, Set[str]]] = {}
        self.functions: Set[str] = set()
        self.relative_names: Set[str] = set()
        self.param_defaults: Dict[str, cst.BaseExpression] = {}
        self.class_constants: Dict[str, Dict[str, cst.BaseExpression]] = {}
        self.class_attrs: Dict[str, Dict[str, Vector]] = {}
        self.pending: List[Pending] = []
        self.resolved = False
        #: Facts other files need (classes, casts and autocast calls of imported classes).
        self.summary: Dict[str, object] = {}

    # -- imports (for the project phase) -----------------------------------------------------------
    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        level = len(node.relative)
        module = dotted_name(node.module) if node.module is not None else ""
        imports = self.summary.setdefault("imports", {})
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            imports[local] = (level, module or "", name)  # type: ignore[index]
            if level:
                self.relative_names.add(local)

    def visit_Import(self, node: cst.Import) -> None:
        imports = self.summary.setdefault("imports", {})
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname and isinstance(alias.asname.name, cst.Name):
                imports[alias.asname.name.value] = (0, full, "")  # type: ignore[index]

    # -- scopes ---------------------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = ClassInfo(node.name.value, [self.ctx.qualify(b.value) or (dotted_name(b.value) or "") for b in node.bases])
        self.classes[node.name.value] = info
        self.class_stack.append(node.name.value)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        in_class = bool(self.class_stack) and isinstance(self.ctx.parent(2), cst.ClassDef)
        if in_class:
            # every method of a class shares the class's entry contexts; __init__ runs before any cast
            cls = self.class_stack[-1]
            key = cls if node.name.value != "__init__" else "init:" + cls
        elif outer.key != "<module>":
            key, cls = outer.key, outer.class_name  # nested function: its encloser's contexts
        else:
            key, cls = "def:" + node.name.value, None
        self.functions.add(key)
        scope = Scope(key, class_name=cls, method=node.name.value if in_class else outer.method)
        params = list(node.params.params) + list(node.params.kwonly_params) + list(node.params.posonly_params)
        scope.params = {p.name.value for p in params}
        self.param_defaults = {p.name.value: p.default for p in params if p.default is not None}
        self.scopes.append(scope)
        self.region_marks[id(node)] = len(self.regions)
        for dec in node.decorators:
            region = self._autocast_region(dec.decorator)
            if region is not None:
                self.regions.append(region)
            elif (self.ctx.qualify(dec.decorator.func) if isinstance(dec.decorator, cst.Call) else None) in (
                    "torch.amp.custom_fwd", "torch.cuda.amp.custom_fwd"):
                if any(a.keyword is not None and a.keyword.value == "cast_inputs" for a in dec.decorator.args):
                    self.regions.append((FP32, False))
                    for name in scope.params:
                        scope.env[name] = const("f32")

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.pop()
        del self.regions[self.region_marks.pop(id(node)):]

    def visit_If(self, node: cst.If) -> None:
        self.scope.ifs += 1

    def leave_If(self, node: cst.If) -> None:
        self.scope.ifs -= 1

    def resolve_constant(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The literal a name / ``self.attr`` stands for, when bound once to a literal."""
        if isinstance(expr, cst.Name):
            for scope in (self.scope, self.scopes[0]):
                if expr.value in scope.exprs:
                    return scope.exprs[expr.value]
            return self.param_defaults.get(expr.value) if expr.value in self.scope.params else None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.scope.class_name
            if cls is not None:
                return self.class_constants.get(cls, {}).get(expr.attr.value)
        return None

    # -- autocast regions -----------------------------------------------------------------------
    def visit_With(self, node: cst.With) -> None:
        self.region_marks[id(node)] = len(self.regions)
        for item in node.items:
            region = self._autocast_region(item.item)
            if region is not None:
                self.regions.append(region)

    def leave_With(self, node: cst.With) -> None:
        del self.regions[self.region_marks.pop(id(node)):]

    def _lookup_expr(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """Follow a Name bound by a simple assignment in the current (or module) scope."""
        for _ in range(4):
            if not isinstance(expr, cst.Name):
                return expr
            for scope in (self.scope, self.scopes[0]):
                if expr.value in scope.exprs:
                    expr = scope.exprs[expr.value]
                    break
            else:
                return expr
        return expr

    def _autocast_region(self, expr: cst.BaseExpression) -> Optional[Tuple[Context, bool]]:
        expr = self._lookup_expr(expr)
        if not isinstance(expr, cst.Call):
            return None
        qualified = self.ctx.qualify(expr.func)
        if qualified not in _AUTOCAST:
            return None
        args = list(expr.args)
        if qualified.startswith("torch.cuda.amp") or qualified.startswith("torch.cpu.amp"):
            device: Optional[str] = "cpu" if qualified.startswith("torch.cpu") else "cuda"
            order = ("enabled", "dtype", "cache_enabled")
        else:
            device = None
            order = ("device_type", "dtype", "enabled", "cache_enabled")
        given: Dict[str, cst.BaseExpression] = {}
        pos = 0
        for arg in args:
            if arg.keyword is not None:
                given[arg.keyword.value] = arg.value
            elif not arg.star and pos < len(order):
                given[order[pos]] = arg.value
                pos += 1
        low = False
        if "device_type" in given:
            dev = self._lookup_expr(given["device_type"])
            if isinstance(dev, cst.SimpleString):
                device = str(dev.evaluated_value)
            else:
                device = self.device_default
        device = "cpu" if device == "cpu" else ("cuda" if device else self.device_default)
        enabled = given.get("enabled")
        if enabled is not None:
            enabled = self._lookup_expr(enabled)
            if isinstance(enabled, cst.Name) and enabled.value == "False":
                return (FP32, False)
        dtype = "bf16" if device == "cpu" else "f16"
        if "dtype" in given:
            resolved = self._dtype_literal(given["dtype"])
            if resolved in ("f16", "bf16"):
                dtype = resolved
            elif resolved == "f32":
                return (FP32, False)
            else:
                low = True
        return (Context("AUTOCAST", dtype, device), low)

    def _dtype_literal(self, expr: cst.BaseExpression) -> Optional[str]:
        expr = self._lookup_expr(expr)
        q = self.ctx.qualify(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if q and q.startswith("torch."):
            return _DTYPE_NAMES.get(q.split(".")[-1])
        if isinstance(expr, cst.SimpleString):
            return _DTYPE_NAMES.get(str(expr.evaluated_value).replace("torch.", ""))
        return None

    # -- contexts -------------------------------------------------------------------------------
    def region(self) -> Optional[Tuple[Context, bool]]:
        return self.regions[-1] if self.regions else None

    def effective(self) -> List[Context]:
        """The effective context at the current node, per entry context."""
        region = self.region()
        if region is not None:
            return [region[0]] * N
        return list(CONTEXTS)

    def region_low(self) -> bool:
        region = self.region()
        return bool(region and region[1])

    # -- values ---------------------------------------------------------------------------------
    def _act(self) -> Vector:
        """Dtype of a tensor of unknown origin (parameter, loop variable) per entry context."""
        return tuple("f32" if c.kind != "PURE" else c.dtype for c in CONTEXTS)

    def _lookup(self, name: str) -> Optional[Value]:
        if name in self.scope.env:
            return self.scope.env[name]
        if self.scope.key != "<module>" and name not in self.scope.params and name in self.scopes[0].env:
            return self.scopes[0].env[name]
        return None

    def value(self, expr: cst.BaseExpression) -> Vector:
        """Dtype vector of ``expr`` (one dtype per entry context)."""
        cached = self.values.get(id(expr))
        if cached is not None:
            return cached
        result = self._value(expr)
        if isinstance(result, ModuleVal):
            result = const(None)
        self.values[id(expr)] = result
        return result

    def module_of(self, expr: cst.BaseExpression) -> Optional[ModuleVal]:
        """The module instance ``expr`` denotes, if known."""
        if isinstance(expr, cst.Name):
            found = self._lookup(expr.value)
            return found if isinstance(found, ModuleVal) else None
        if isinstance(expr, cst.Attribute):
            code = dotted_name(expr)
            if code and code in self.scope.env and isinstance(self.scope.env[code], ModuleVal):
                return self.scope.env[code]  # type: ignore[return-value]
            if isinstance(expr.value, cst.Name) and expr.value.value == "self" and self.scope.class_name:
                info = self.classes.get(self.scope.class_name)
                if info and expr.attr.value in info.submodules:
                    return ModuleVal(info.submodules[expr.attr.value])
            owner = self.module_of(expr.value) if isinstance(expr.value, (cst.Name, cst.Attribute)) else None
            if owner is not None and expr.attr.value not in _MODULE_METHODS:
                return ModuleVal(None, owner.cast, owner.low)  # ``model.backbone``: cast with its parent
        if isinstance(expr, cst.Call):
            found = self._value(expr)
            return found if isinstance(found, ModuleVal) else None
        return None

    def _value(self, expr: cst.BaseExpression) -> Value:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return const("py")
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return const("py")
            found = self._lookup(expr.value)
            if found is not None:
                return found
            if _INTEGER_NAME.search(expr.value):
                return const("int")
            if self.scope.key == "<module>":
                return const("f32")
            return self._act()
        if isinstance(expr, cst.Attribute):
            code = dotted_name(expr)
            if code and code in self.scope.env:
                return self.scope.env[code]
            if expr.attr.value in ("dtype", "shape", "device", "ndim", "is_cuda", "requires_grad"):
                return const("py")
            if expr.attr.value in ("T", "mT", "data", "real", "grad"):
                return self.value(expr.value)
            mod = self.module_of(expr)
            if mod is not None:
                return mod
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                known = self.class_attrs.get(self.scope.class_name or "", {}).get(expr.attr.value)
                if known is not None:
                    return known
                if _INTEGER_NAME.search(expr.attr.value):
                    return const("int")
                return self._act()
            if not isinstance(expr.value, (cst.Name, cst.Attribute)):
                return self.value(expr.value)  # ``model(x).logits``: a field of a model output
            root = expr.value
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(root, cst.Name) and _CONFIG_NAME.match(root.value):
                return const("py")  # ``args.temperature``, ``config.eps``
            if isinstance(expr.value, cst.Name):
                base_value = self._lookup(expr.value.value)
                if isinstance(base_value, tuple):
                    return base_value  # ``outputs.logits`` of a value we know
            q = self.ctx.qualify(expr)
            if q is not None and q.startswith("torch.") and not q.startswith("torch.Tensor"):
                return const("py")
            if self.scope.key == "<module>":
                return const("f32")
            return self._act()
        if isinstance(expr, cst.Subscript):
            return self.value(expr.value)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return const("bool")
            return self.value(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary(expr)
        if isinstance(expr, cst.Comparison):
            return const("bool")
        if isinstance(expr, cst.IfExp):
            a, b = self.value(expr.body), self.value(expr.orelse)
            return tuple(x if x == y else None for x, y in zip(a, b))
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.List, cst.Tuple,
                             cst.Dict, cst.Lambda)):
            return const("py")
        return const(None)

    def _binary(self, expr: cst.BinaryOperation) -> Vector:
        left, right = self.value(expr.left), self.value(expr.right)
        if isinstance(expr.operator, cst.MatrixMultiply):
            return self._apply_op("matmul", [left, right])
        if isinstance(expr.operator, cst.Power):
            return self._apply_op("pow", [left, right])
        if isinstance(expr.operator, (cst.Divide,)) and all(d == "py" for d in left):
            return self._apply_op("reciprocal", [right])
        return tuple(promote(a, b) for a, b in zip(left, right))

    def _apply_op(self, op: str, inputs: Sequence[Vector], explicit: Optional[str] = None) -> Vector:
        """Output dtypes of ``op`` per entry context, under the effective context."""
        effective = self.effective()
        out: List[Optional[str]] = []
        for i in range(N):
            dtypes = [v[i] for v in inputs]
            merged: Optional[str] = "py"
            for d in dtypes:
                merged = promote(merged, d)
            if explicit is not None:
                out.append(explicit)
                continue
            ctx = effective[i]
            if ctx.kind == "AUTOCAST" and (merged is None or base(merged) in ("f16", "bf16", "f32", "py")):
                pol = opdata.policy(op, ctx.device or "cuda")
                if pol == opdata.LOWER:
                    out.append(ctx.dtype)
                    continue
                if pol == opdata.FP32:
                    out.append("f32")
                    continue
            out.append(merged if merged != "py" else None)
        return tuple(out)

    def _explicit_dtype(self, call: cst.Call) -> Optional[str]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self._dtype_of_dtype_expr(arg.value, single=True)
        return None

    def _dtype_of_dtype_expr(self, expr: cst.BaseExpression, single: bool = False):
        """``torch.float16`` -> "f16"; ``y.dtype`` -> y's vector (or None when ``single``)."""
        literal = self._dtype_literal(expr)
        if literal is not None:
            return literal
        expr = self._lookup_expr(expr)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "dtype":
            if single:
                return None
            return self.value(expr.value)
        return None

    def _call(self, call: cst.Call) -> Value:
        func = call.func
        qualified = self.ctx.qualify(func)
        args = [a for a in call.args if a.keyword is None and not a.star]
        explicit = self._explicit_dtype(call)
        if isinstance(func, cst.Attribute) and qualified is None and (
                (isinstance(func.value, cst.Name) and func.value.value == "self")
                or (dotted_name(func) or "") in self.scope.env):
            called = self.module_of(func)  # ``self.proj(x)``: a submodule call
            if called is not None:
                return self._module_call(called, call)
        # calls of local classes / functions
        if isinstance(func, cst.Name) and qualified is None:
            found = self._lookup(func.value)
            if isinstance(found, ModuleVal):
                return self._module_call(found, call)
            if func.value in self.classes:
                return ModuleVal(func.value)
            if func.value in self.relative_names and func.value[:1].isupper():
                return ModuleVal("rel:" + func.value)  # ``from .gpt import GPT``
        if qualified is not None and qualified.split(".")[0] in ("math", "numpy", "random", "builtins"):
            return const("py")
        if isinstance(func, cst.Name) and func.value in ("int", "float", "len", "min", "max", "abs", "round", "sum",
                                                          "range", "pow") and qualified is None:
            return const("py") if func.value != "float" else const("py")
        if qualified is not None:
            short = qualified.rsplit(".", 1)[-1]
            if short in ("Parameter", "Buffer", "UninitializedParameter"):
                inner = self.value(args[0].value) if args else const(None)
                return tuple(self._act()[i] if CONTEXTS[i].kind == "PURE" else inner[i] for i in range(N))
            if qualified.startswith("torch.nn.") and short[:1].isupper() and not qualified.startswith("torch.nn.functional"):
                if short in ("Sequential", "ModuleList", "ModuleDict"):
                    return ModuleVal(qualified, children=tuple(n for n in _called_names(call) if n in self.classes))
                return ModuleVal(qualified)
            if short == "from_pretrained" or qualified.endswith(".from_pretrained"):
                return self._from_pretrained(call)
            if not qualified.startswith("torch.") and short[:1].isupper():
                return ModuleVal(qualified)  # an imported class: most likely a model (resolved per project)
            if qualified.startswith("torch.") and not qualified.startswith("torch.Tensor"):
                if short in _FACTORIES:
                    if explicit is not None:
                        return const(explicit)
                    if short in ("arange", "randint") and not any(isinstance(a.value, cst.Float) for a in args):
                        return const("int")
                    if short in ("tensor", "as_tensor", "from_numpy"):
                        return const(None)
                    return const("f32")
                if short in _LIKE:
                    return const(explicit) if explicit else (self.value(args[0].value) if args else const(None))
                if short == "where" and len(args) == 3:
                    return tuple(promote(a, b) for a, b in zip(self.value(args[1].value), self.value(args[2].value)))
                if short in ("finfo", "iinfo", "is_tensor", "no_grad", "device", "Size", "manual_seed"):
                    return const("py")
                inputs = [self.value(a.value) for a in args[:2] if not isinstance(a.value, (cst.List, cst.Tuple))]
                if short in ("cat", "stack") and args and isinstance(args[0].value, (cst.List, cst.Tuple)):
                    inputs = [self.value(e.value) for e in args[0].value.elements]
                if short in opdata.LOSSES or short in opdata.OPS:
                    return self._apply_op(short, inputs[:1] if short not in ("matmul", "bmm", "mm") else inputs, explicit)
                if short in _INT_RESULTS:
                    return const("int")
                if explicit is not None:
                    return const(explicit)
                return self._apply_op(short, inputs[:1]) if inputs else const(None)
            return self._unknown_call(call)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            mod = self.module_of(receiver)
            if mod is None and method in ("half", "bfloat16", "cuda", "eval", "train", "to") and _looks_like_model(
                    self.ctx, receiver):
                mod = ModuleVal(None)
            if mod is not None:
                if method in ("half", "bfloat16", "float", "to", "type", "cuda", "cpu", "eval", "train",
                              "requires_grad_", "apply", "share_memory"):
                    cast = self._cast_of(call, method)
                    return ModuleVal(mod.cls, cast[0] if cast else mod.cast, mod.low or (cast[1] if cast else False),
                                     mod.children)
                if method == "forward":
                    return self._module_call(mod, call)
                if method in ("parameters", "named_parameters", "state_dict", "children", "modules"):
                    return const("py")
                return const(None)
            if method in _CAST_METHODS:
                return const(_CAST_METHODS[method])
            if method in ("to", "type"):
                cast = self._tensor_cast(call)
                return cast if cast is not None else self.value(receiver)
            if method == "type_as" and args:
                return self.value(args[0].value)
            if method in ("view_as", "expand_as", "reshape_as"):
                return self.value(receiver)
            if method in _NEW:
                return const(explicit) if explicit else self.value(receiver)
            if method in _INT_RESULTS:
                return const("int" if method not in ("eq", "ne", "lt", "gt", "le", "ge", "isinf", "isnan", "isfinite",
                                                     "any", "all", "bool") else "bool")
            if method == "item":
                return const("py")
            recv = self.value(receiver)
            if method in opdata.OPS or method in opdata.LOSSES:
                inputs = [recv] + ([self.value(args[0].value)] if method in ("matmul", "mm", "bmm") and args else [])
                return self._apply_op(method, inputs, explicit)
            if explicit is not None:
                return const(explicit)
            if method in ("masked_fill", "masked_fill_", "fill_", "clamp", "clamp_", "view", "reshape",
                          "transpose", "permute", "contiguous", "unsqueeze", "squeeze", "split", "chunk",
                          "flatten", "expand", "repeat", "detach", "clone", "gather", "index_select",
                          "mean", "var", "std", "max", "min", "amax", "amin", "sqrt", "tanh", "sigmoid", "relu",
                          "abs", "neg", "add", "sub", "mul", "div", "square", "masked_scatter", "roll",
                          "triu", "tril", "narrow", "t", "flip", "unbind", "diagonal"):
                return recv
            return recv if not (isinstance(receiver, cst.Name) and self._lookup(receiver.value) is None
                                and self.scope.key == "<module>") else const(None)
        return self._unknown_call(call)

    def _unknown_call(self, call: cst.Call) -> Value:
        """A call we know nothing about: a local function, another library."""
        if self.scope.key == "<module>":
            return const(None)
        return self._act()

    def _from_pretrained(self, call: cst.Call) -> Value:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in ("torch_dtype", "dtype"):
                d = self._dtype_literal(arg.value)
                if d is not None:
                    return ModuleVal(self._class_of_callee(call.func), d + ("?" if self.scope.ifs else ""))
                if not (isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == "auto"):
                    return ModuleVal(self._class_of_callee(call.func), "f16", low=True)
        return ModuleVal(self._class_of_callee(call.func))

    def _class_of_callee(self, func: cst.BaseExpression) -> Optional[str]:
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.classes:
            return func.value.value
        return None

    def _cast_of(self, call: cst.Call, method: str) -> Optional[Tuple[str, bool]]:
        """(dtype, low) of a wholesale module cast ``m.half()`` / ``m.to(torch.float16)``."""
        cond = "?" if self.scope.ifs else ""
        if method in ("half", "bfloat16", "float"):
            return ({"half": "f16", "bfloat16": "bf16", "float": "f32"}[method] + cond, False)
        if method in ("to", "type"):
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value not in ("dtype",):
                    continue
                chosen = self._lookup_expr(arg.value)
                if isinstance(chosen, cst.IfExp):  # ``torch.float16 if args.fp16 else torch.float32``
                    branches = [self._dtype_literal(chosen.body), self._dtype_literal(chosen.orelse)]
                    half = [b for b in branches if b in ("f16", "bf16")]
                    if half:
                        return (half[0] + "?", False)
                d = self._dtype_literal(arg.value)
                if d in FLOATS:
                    return (d + cond if d != "f32" else d, False)
                if arg.keyword is not None and arg.keyword.value == "dtype":
                    return ("f16" + cond, True)
        return None

    def _tensor_cast(self, call: cst.Call) -> Optional[Vector]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value != "dtype":
                continue
            d = self._dtype_of_dtype_expr(arg.value)
            if isinstance(d, str):
                return const(d)
            if isinstance(d, tuple):
                return d
            if isinstance(arg.value, cst.Call) and isinstance(arg.value.func, cst.Attribute) and isinstance(
                    arg.value.func.value, (cst.Name, cst.Attribute)) is False:
                continue
            # ``.to(other_tensor)`` takes the other tensor's dtype
            if arg.keyword is None and isinstance(arg.value, cst.Name):
                v = self._lookup(arg.value.value)
                if isinstance(v, tuple) and any(x in FLOATS for x in v):
                    return v
        return None

    def _module_call(self, mod: ModuleVal, call: cst.Call) -> Vector:
        args = [a for a in call.args if a.keyword is None and not a.star]
        for cls in (mod.cls,) + mod.children:
            if cls and not cls.startswith("torch."):
                self._seed_call(cls)
        if mod.cast is not None and is_half(mod.cast):
            return const(mod.cast)
        if mod.cast == "f32":
            return const("f32")
        inputs = [self.value(args[0].value)] if args else [self._act()]
        if mod.cls and mod.cls.startswith("torch.nn.") and not mod.cls.endswith("Sequential"):
            short = mod.cls.rsplit(".", 1)[-1]
            if short.startswith("Embedding") or all(d in (None, "int", "bool", "py") for d in inputs[0]):
                # an embedding (or a layer fed ids) outputs its weight's dtype
                inputs = [self._act()]
                if short.startswith("Embedding"):
                    return inputs[0]
            op = opdata.MODULE_OPS.get(short)
            if op is not None:
                return self._apply_op(op, inputs)
            return inputs[0]
        # a model of our own or of another library: under autocast it ends, most often, in a GEMM
        effective = self.effective()
        out = []
        for i in range(N):
            ctx = effective[i]
            if ctx.kind == "AUTOCAST":
                known = mod.cls is not None and (mod.cls in self.classes or mod.cls.startswith("torch.nn."))
                out.append(ctx.dtype if known else None)
            else:
                out.append(inputs[0][i] if mod.cls else (None if ctx.kind == "FP32" else inputs[0][i]))
        return tuple(out)

    # -- entry-context seeds ------------------------------------------------------------------
    def _edge(self, callee: str, _unused) -> None:
        if not callee:
            return
        self.call_edges.append((callee, self.scope.key, self.region(), bool(self.scope.ifs)))

    def _seed_call(self, cls: str) -> None:
        """An instance of class ``cls`` is called here: its methods get this context."""
        if cls in self.classes:
            self.call_edges.append((cls, self.scope.key, self.region(), False))
            return
        region = self.region()
        if region is not None and region[0].kind == "AUTOCAST":
            seeds = self.summary.setdefault("seeds", [])
            seeds.append((cls, _index_of(region[0]), False, region[1]))  # type: ignore[union-attr]

    def _seed_cast(self, mod: ModuleVal) -> None:
        for cls in (mod.cls,) + mod.children:
            if cls in self.classes and mod.cast is not None and is_half(mod.cast):
                idx = 5 if base(mod.cast) == "f16" else 6
                self.class_seeds.append((cls, idx, mod.cast.endswith("?"), mod.low))
        if mod.cls and mod.cls not in self.classes and mod.cast is not None and is_half(mod.cast):
            casts = self.summary.setdefault("casts", [])
            casts.append((mod.cls, mod.cast))  # type: ignore[union-attr]
            seeds = self.summary.setdefault("seeds", [])
            seeds.append((mod.cls, 5 if base(mod.cast) == "f16" else 6, mod.cast.endswith("?"), mod.low))  # type: ignore[union-attr]

    # -- assignments ----------------------------------------------------------------------------
    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        name = dotted_name(node.target)
        if name is None:
            return
        old = self._lookup(name) if "." not in name else self.scope.env.get(name)
        if isinstance(old, tuple):
            new = self.value(node.value)
            self.scope.env[name] = tuple(promote(a, b) for a, b in zip(old, new))

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            vec = self.value(value) if not isinstance(value, (cst.Tuple, cst.List)) else None
            for i, el in enumerate(target.elements):
                if isinstance(value, (cst.Tuple, cst.List)) and i < len(value.elements):
                    self._bind(el.value, value.elements[i].value)
                elif isinstance(el.value, (cst.Name, cst.Attribute)) and vec is not None:
                    self._store(el.value, vec)
            return
        if isinstance(target, cst.Name):
            self.scope.exprs[target.value] = value
        elif (self.scope.class_name and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
              and target.value.value == "self"):
            literal = value
            if isinstance(value, cst.Name) and value.value in self.scope.params:
                literal = self.param_defaults.get(value.value)
            if literal is not None and isinstance(literal, (cst.Float, cst.Integer, cst.UnaryOperation)):
                self.class_constants.setdefault(self.scope.class_name, {})[target.attr.value] = literal
        mod = self.module_of(value) if isinstance(value, (cst.Call, cst.Name, cst.Attribute)) else None
        if isinstance(value, cst.Call) and mod is None:
            found = self._value(value)
            mod = found if isinstance(found, ModuleVal) else None
        if mod is not None:
            self._seed_cast(mod)
            self._note_submodule(target, mod, value)
            self._store(target, mod)
            return
        self._note_submodule(target, None, value)
        vec = self.value(value)
        if (self.scope.class_name and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self" and self.scope.key.startswith("init:")):
            if all(d in ("py", "int", "bool") for d in vec):
                self.class_attrs.setdefault(self.scope.class_name, {})[target.attr.value] = vec
        self._store(target, vec)

    def _store(self, target: cst.BaseExpression, val: Value) -> None:
        name = dotted_name(target)
        if name is None:
            return
        if self.scope.ifs and isinstance(val, tuple):
            val = tuple(d + "?" if d in ("f16", "bf16") else d for d in val)
        self.scope.env[name] = val

    def _note_submodule(self, target: cst.BaseExpression, mod: Optional[ModuleVal], value: cst.BaseExpression) -> None:
        """``self.attn = Attention(...)`` (or inside ModuleList/Sequential) in a class body's methods."""
        if not (self.scope.class_name and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            return
        info = self.classes.get(self.scope.class_name)
        if info is None:
            return
        if mod is not None and mod.cls:
            info.submodules[target.attr.value] = mod.cls
        for sub in _called_names(value):
            info.children.add(sub)

    def visit_Expr(self, node: cst.Expr) -> None:
        """``model.half()`` / ``model.to(torch.float16)`` as a statement casts the module in place."""
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return
        method = call.func.attr.value
        if method not in ("half", "bfloat16", "to", "type", "float"):
            return
        receiver = call.func.value
        name = dotted_name(receiver)
        if name is None:
            return
        cast = self._cast_of(call, method)
        if cast is None:
            return
        mod = self.module_of(receiver)
        if mod is None:
            existing = self._lookup(name) if "." not in name else None
            if isinstance(existing, tuple):
                return  # a tensor: ``x.half()`` as a statement does nothing
            mod = ModuleVal(None)
        new = ModuleVal(mod.cls, cast[0], cast[1] or mod.low, mod.children)
        self._seed_cast(new)
        self.scope.env[name] = new

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                and self.scope.class_name and self.scope.method):
            self.self_calls.setdefault(self.scope.class_name, {}).setdefault(self.scope.method, set()).add(func.attr.value)
        # calls of local functions propagate the caller's context to the callee
        if isinstance(node.func, cst.Name) and self.ctx.qualify(node.func) is None:
            name = node.func.value
            if name in self.classes:
                return
            self._edge("def:" + name, None)

    # -- rule interface ---------------------------------------------------------------------
    def report_when(self, rule, node: cst.CSTNode, messages: Sequence[Optional[str]], fix=None,
                    low: bool = False) -> None:
        """Report ``messages[i]`` at ``node`` if the current function runs in entry context i.

        ``messages`` has one entry per :data:`CONTEXTS` (None: no hazard in that context).
        """
        if not any(messages):
            return
        labels = [c.label for c in self.effective()]
        for i, message in enumerate(messages):
            if message and labels[i] == "FP32":
                # a half value outside autocast: a tensor cast or created in half precision
                labels[i] = "PURE_BF16" if "bfloat16" in message.split(";")[0] else "PURE_FP16"
        pending = Pending(self.scope.key, rule, node, list(messages), fix, low or self.region_low(), labels,
                          method=self.scope.method if self.scope.class_name == self.scope.key else None)
        if self.resolved:
            self._emit(pending)
        else:
            self.pending.append(pending)

    # -- resolution ---------------------------------------------------------------------------
    def finish(self) -> None:
        self._resolve_entries()
        self.resolved = True
        for pending in self.pending:
            self._emit(pending)
        self.pending = []
        self.summary["classes"] = {
            name: {"bases": info.bases, "children": sorted(info.children),
                   "submodules": dict(info.submodules), "entries": dict(self.entries.get(name, {}))}
            for name, info in self.classes.items()
        }

    def add_entry(self, key: str, index: int, conditional: bool, low: bool) -> bool:
        return merge_entry(self.entries.setdefault(key, {}), index, conditional, low)

    def _resolve_entries(self) -> None:
        for key in self.functions:
            self.entries.setdefault(key, {0: (False, False)})
        external = getattr(self.ctx.project, "entries_for", None)
        if external is not None:  # contexts other files put this file's classes in
            for cls, table in (external(self.ctx.path) or {}).items():
                for idx, (cond, low) in table.items():
                    if cls in self.classes:
                        self.add_entry(cls, idx, cond, low)
        for cls, idx, cond, low in self.class_seeds:
            self.add_entry(cls, idx, cond, low)
        changed = True
        rounds = 0
        while changed and rounds < 50:
            changed = False
            rounds += 1
            for callee, caller, region, cond in self.call_edges:
                if callee not in self.entries:
                    continue
                if region is not None:
                    changed |= self.add_entry(callee, _index_of(region[0]), cond, region[1])
                else:
                    for idx, (c, low) in list(self.entries.get(caller, {}).items()):
                        changed |= self.add_entry(callee, idx, c or cond, low)
            for name, info in self.classes.items():
                for child in info.children:
                    if child in self.classes and child != name:
                        for idx, (c, low) in list(self.entries.get(name, {}).items()):
                            changed |= self.add_entry(child, idx, c, low)

    def _runs_in_forward(self, cls: str, method: str) -> bool:
        """Whether ``method`` of ``cls`` is ``forward``/``__call__`` or reached from them through
        ``self.<method>()`` calls (methods of the class called from outside are uncertain)."""
        calls = self.self_calls.get(cls, {})
        reached = {"forward", "__call__"}
        todo = list(reached)
        while todo:
            for callee in calls.get(todo.pop(), ()):
                if callee not in reached:
                    reached.add(callee)
                    todo.append(callee)
        return method in reached

    def _emit(self, pending: Pending) -> None:
        entries = self.entries.get(pending.key, {0: (False, False)})
        if pending.method is not None and not self._runs_in_forward(pending.key, pending.method):
            # a method ``forward`` never reaches: the class's cast context is a guess there
            pending.low = True
        for i in PRIORITY:
            if i in entries and pending.messages[i]:
                conditional, low = entries[i]
                message = pending.messages[i]
                if conditional and "when fp16 is enabled" not in message:
                    message += " (when fp16 is enabled)"
                label = pending.labels[i]
                pending.rule.report(pending.node, message, fix=_fix_for(pending.fix, i), precision_context=label,
                                    confidence="low" if (low or pending.low) else "high")
                return
        if pending.key in self.classes:
            # Not a hazard in the contexts this file shows, but it would be if another file casts
            # the class or calls it under autocast: a conditional finding for the project phase.
            options = {i: (pending.messages[i], pending.labels[i]) for i in range(N) if pending.messages[i]}
            first = next(i for i in PRIORITY if i in options)
            pending.rule.report(pending.node, options[first][0], fix=_fix_for(pending.fix, first),
                                precision_context=next(iter(options.values()))[1],
                                confidence="low" if pending.low else "high")
            raw = self.ctx.findings[-1]
            raw.condition = Condition(pending.key, options, pending.low)  # type: ignore[attr-defined]


def _fix_for(fix, index: int):
    """A rule's fix, or the fix its factory builds for the entry context the finding is in."""
    if fix is not None and callable(fix) and not hasattr(fix, "replacements"):
        return fix(index)
    return fix


@dataclass(frozen=True)
class Condition:
    """A finding that holds only if class ``cls`` (of this file) runs in one of ``options``'
    entry contexts (index -> (message, precision context label)), decided across the project."""

    cls: str
    options: Dict[int, Tuple[str, str]]
    low: bool = False


def _index_of(context: Context) -> int:
    for i, c in enumerate(CONTEXTS):
        if c == context:
            return i
    return 0


def _called_names(expr: cst.BaseExpression) -> List[str]:
    """Local class names called in ``expr`` (``Block(cfg)`` inside ``nn.ModuleList([...])``)."""
    from amp_lint.engine.walker import iter_subtree

    out = []
    for node in iter_subtree(expr):
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            if name and name[:1].isupper() and "." not in name:
                out.append(name)
    return out


# -- helpers for the numerics rules' fixes -------------------------------------------------------
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def method_call(expr: cst.BaseExpression, method: str, args: Sequence[cst.Arg] = ()) -> cst.Call:
    """``expr.method(args)``, parenthesising ``expr`` when needed."""
    return cst.Call(func=cst.Attribute(value=parenthesized(expr), attr=cst.Name(method)), args=list(args))


def is_simple(expr: cst.BaseExpression) -> bool:
    """An expression cheap and side-effect free to repeat (``x``, ``self.x``, ``x[i]``)."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return is_simple(expr.value)
    if isinstance(expr, cst.Subscript):
        return is_simple(expr.value) and all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Name, cst.Integer, cst.UnaryOperation))
            for e in expr.slice)
    return False


def simple_stand_in(prec: "PrecisionAnalysis", expr: cst.BaseExpression) -> Callable[[int], Optional[cst.BaseExpression]]:
    """For a fix decided later: index -> ``expr`` itself when simple, else a name inside it whose
    dtype equals ``expr``'s in that entry context (``hidden`` for ``self.lm_head(hidden)`` in pure
    fp16). The dtypes are taken now, during the walk."""
    if is_simple(expr):
        return lambda i: expr
    from amp_lint.engine.walker import iter_subtree

    want = prec.value(expr)
    candidates = [(node, prec.value(node)) for node in iter_subtree(expr)
                  if isinstance(node, cst.Name) and node is not expr
                  and node.value not in ("self", "torch", "F", "nn", "math")
                  and not prec.ctx.names.is_bound(node.value)]

    def pick(i: int) -> Optional[cst.BaseExpression]:
        for node, vec in candidates:
            if vec[i] == want[i] and is_half(vec[i]):
                return node
        return None

    return pick


def per_context(prec: "PrecisionAnalysis", decide: Callable[[Context, int], Optional[str]]) -> List[Optional[str]]:
    """``decide(effective context, entry index)`` for every entry context."""
    effective = prec.effective()
    return [decide(effective[i], i) for i in range(N)]


def cuda_autocast(context: Context) -> bool:
    return context.kind == "AUTOCAST" and context.device != "cpu"


def where(context: Context, dtype: Optional[str]) -> str:
    """``in float16 (a module cast to float16)`` - the phrase messages end with."""
    from amp_lint.data.numerics import dtype_label

    if context.kind == "FP32":
        return f"in {dtype_label(base(dtype) or '')} (a half tensor outside autocast)"
    return f"in {dtype_label(base(dtype) or '')} ({context.describe()})"


def torch_ref(ctx: FileContext, qualified: str) -> Tuple[cst.BaseExpression, Tuple[str, ...]]:
    """An expression for ``torch.float32`` etc. through names bound in the file, and imports to add."""
    text, module = ctx.reference(qualified)
    return cst.parse_expression(text), ((module,) if module else ())


def literal_value(prec: "PrecisionAnalysis", expr: cst.BaseExpression) -> Optional[Tuple[float, cst.BaseExpression]]:
    """(value, the expression to replace) for a numeric literal, ``-lit``, ``float("-inf")`` or a
    name bound to one; None otherwise."""
    target = expr
    seen = 0
    while isinstance(expr, (cst.Name, cst.Attribute)) and seen < 4:
        seen += 1
        resolved = prec.resolve_constant(expr)
        if resolved is None:
            return None
        expr = resolved
    sign = 1.0
    while isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        if isinstance(expr.operator, cst.Minus):
            sign = -sign
        expr = expr.expression
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return sign * float(expr.evaluated_value), target
        except (ValueError, OverflowError):
            return None
    return None


_FILL_METHODS = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0, "index_fill": 2, "index_fill_": 2,
                 "fill_diagonal_": 0, "new_full": 1}


@dataclass
class FillSite:
    """A value written into a tensor: ``t.masked_fill(m, v)``, ``torch.full(s, v, dtype=...)``, ..."""

    call: cst.BaseExpression
    value: cst.BaseExpression
    filled: Optional[cst.BaseExpression]  # the tensor whose dtype receives the value (None: ``dtype=``)
    filled_values: Vector


def fill_sites(prec: "PrecisionAnalysis", node: cst.Call) -> List[FillSite]:
    """Fill sites of a call (AMP301 / AMP303): masked_fill, fill_, index_fill, new_full, full,
    full_like, clamp(min=/max=), torch.where with a literal branch."""
    ctx = prec.ctx
    func = node.func
    qualified = ctx.qualify(func)
    positional = [a for a in node.args if a.keyword is None and not a.star]
    out: List[FillSite] = []
    if isinstance(func, cst.Attribute) and qualified is None:
        method = func.attr.value
        receiver = func.value
        if method in _FILL_METHODS:
            index = _FILL_METHODS[method]
            arg = None
            for a in node.args:
                if a.keyword is not None and a.keyword.value in ("value", "fill_value"):
                    arg = a
            if arg is None and len(positional) > index:
                arg = positional[index]
            if arg is not None:
                explicit = prec._explicit_dtype(node) if method == "new_full" else None
                vec = const(explicit) if explicit else prec.value(receiver)
                out.append(FillSite(node, arg.value, None if explicit else receiver, vec))
        elif method in ("clamp", "clamp_", "clamp_min", "clamp_max", "clip"):
            for a in node.args:
                if a.keyword is not None and a.keyword.value in ("min", "max"):
                    out.append(FillSite(node, a.value, receiver, prec.value(receiver)))
            if method in ("clamp_min", "clamp_max") and positional:
                out.append(FillSite(node, positional[0].value, receiver, prec.value(receiver)))
        return out
    if qualified in ("torch.full", "torch.full_like") and len(positional) >= 2:
        explicit = prec._explicit_dtype(node)
        if explicit is not None:
            out.append(FillSite(node, positional[1].value, None, const(explicit)))
        elif qualified == "torch.full_like":
            out.append(FillSite(node, positional[1].value, positional[0].value, prec.value(positional[0].value)))
        else:
            # ``dtype=some_tensor.dtype``
            for a in node.args:
                if a.keyword is not None and a.keyword.value == "dtype":
                    d = prec._dtype_of_dtype_expr(a.value)
                    if isinstance(d, tuple) and isinstance(a.value, cst.Attribute):
                        out.append(FillSite(node, positional[1].value, a.value.value, d))
    elif qualified == "torch.where" and len(positional) == 3:
        a, b = positional[1].value, positional[2].value
        for value, other in ((a, b), (b, a)):
            out.append(FillSite(node, value, other, prec.value(other)))
    elif qualified in ("torch.clamp", "torch.clip") and positional:
        for a in node.args:
            if a.keyword is not None and a.keyword.value in ("min", "max"):
                out.append(FillSite(node, a.value, positional[0].value, prec.value(positional[0].value)))
    return out


def finfo_of(prec: "PrecisionAnalysis", expr: cst.BaseExpression) -> Optional[Tuple[cst.Call, str, Vector, bool]]:
    """(finfo call, "min"/"max", dtype vector of its argument, negated) for ``torch.finfo(X).min`` and
    ``-torch.finfo(X).max`` (directly or through a name bound to it)."""
    expr = prec._lookup_expr(expr)
    negated = False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        negated, expr = True, expr.expression
    if not (isinstance(expr, cst.Attribute) and expr.attr.value in ("min", "max") and isinstance(expr.value, cst.Call)):
        return None
    call = expr.value
    if prec.ctx.qualify(call.func) != "torch.finfo":
        return None
    if not call.args:
        return call, expr.attr.value, const("f32"), negated
    d = prec._dtype_of_dtype_expr(call.args[0].value)
    if isinstance(d, str):
        return call, expr.attr.value, const(d), negated
    if isinstance(d, tuple):
        return call, expr.attr.value, d, negated
    return None


def tensor_receiver(prec: "PrecisionAnalysis", func: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The receiver of ``recv.method(...)`` when it can be a tensor (not ``self``, a module instance,
    or an imported module such as ``torch`` / ``np``)."""
    if not isinstance(func, cst.Attribute):
        return None
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        return None
    if isinstance(receiver, (cst.Name, cst.Attribute)):
        if prec.ctx.qualify(receiver) is not None or prec.module_of(receiver) is not None:
            return None
        root = receiver
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value in prec.summary.get("imports", {}):
            return None  # ``utils.softmax(x, ...)`` of an imported module
    return receiver



import re as _re


def merge_entry(table: Dict[int, Tuple[bool, bool]], index: int, conditional: bool, low: bool) -> bool:
    """Record that context ``index`` can reach a function; True when that changed ``table``.

    A context reached both conditionally and unconditionally (or with low and high confidence)
    keeps the stronger claim.
    """
    old = table.get(index)
    new = (conditional, low) if old is None else (old[0] and conditional, old[1] and low)
    if new == old:
        return False
    table[index] = new
    return True

_MODULE_METHODS = frozenset({
    "weight", "bias", "half", "float", "double", "bfloat16", "to", "type", "cuda", "cpu", "eval", "train", "forward",
    "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict", "apply",
    "requires_grad_", "zero_grad", "modules", "children", "named_modules", "register_buffer", "generate",
    "config", "device", "dtype", "training", "save_pretrained", "resize_token_embeddings", "get_input_embeddings",
})

#: Names that hold integer / boolean tensors (masks, ids, lengths), never half floats.
_INTEGER_NAME = _re.compile(r"(^|_)(mask|masks|ids|idx|index|indices|labels?|lengths?|lens|positions?|pos|tokens?|"
                            r"targets?|counts?|steps?|seq_len|num_\w+|n_\w+)$|_mask$|^mask|attention_mask", _re.I)

_CONFIG_NAME = _re.compile(r"^(args|cfg|config|conf|opt|opts|options|hparams|hp|params|settings|flags|FLAGS|"
                          r"self\.config|training_args|model_args|data_args)$")

_MODEL_HINTS = ("model", "net", "encoder", "decoder", "backbone", "transformer", "bert", "gpt", "llama", "resnet",
                "vit", "classifier", "policy", "teacher", "student")


def _looks_like_model(ctx: FileContext, receiver: cst.BaseExpression) -> bool:
    """``torchvision.models.resnet50(...)`` / ``Model(...)`` / ``build_model(...)`` and the like."""
    if not isinstance(receiver, cst.Call):
        return False
    name = ctx.qualify(receiver.func) or dotted_name(receiver.func) or ""
    if name.startswith("torch.") and not name.startswith("torch.hub"):
        return False
    last = name.rsplit(".", 1)[-1]
    lowered = name.lower()
    return last[:1].isupper() or any(h in lowered for h in _MODEL_HINTS) or lowered.startswith(("torchvision", "timm"))
