"""Training-loop recognition and the AMP migration codemod.

Collected during the shared walk: ``.backward()`` calls, optimizer/scheduler/clip/zero_grad
calls, optimizer constructions, GradScaler constructions, autocast regions, wholesale half
casts, apex calls and function definitions/call sites. At ``finish`` each ``.backward()`` whose
loop (``for``/``while``, or the function holding it) also steps an optimizer becomes a
:class:`Loop`. :meth:`TrainingLoops.migration` turns a loop into ONE :class:`CstFix` (autocast
around forward + loss, one GradScaler, backward/step/update routed through it, ``unscale_``
before clipping, half casts and apex removed) or explains why it cannot.

The light autocast / GradScaler / half-cast detection here is deliberately small; the precision
analysis (``analysis/precision.py``) is the general one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from amp_lint.data.training import (
    APEX_OPT_LEVELS, AUTOCAST_DEFAULT_DTYPE, AUTOCASTS, CLIP_FUNCTIONS, CLIP_METHODS,
    AUTOCAST_BANNED,
    MIXED_PRECISION_CONFIGS,
    CPU_FP16_AUTOCAST_TRAINING_UNSUPPORTED,
    ENGINE_INITIALIZERS, GRAD_SCALERS, HALF_DTYPES, HALF_METHODS, MASTER_WEIGHT_WRAPPERS, OPTIMIZERS,
    SCHEDULER_PREFIXES,
)
from amp_lint.engine.context import FileContext
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.names import dotted_name
from amp_lint.engine.walker import iter_subtree
from amp_lint.findings import Applicability

Block = Union[cst.IndentedBlock, cst.Module]
Stack = Tuple[cst.CSTNode, ...]
_STATEMENT = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
_MODEL_METHODS = ("parameters", "named_parameters", "train", "eval", "state_dict")
_NOT_FORWARD = frozenset({"to", "cuda", "cpu", "float", "long", "view", "reshape", "next", "iter", "item", "len",
                          "range", "enumerate", "zip", "size", "numel", "detach", "contiguous", "squeeze",
                          "unsqueeze", "flatten", "permute", "transpose", "int", "float"})


# -- small helpers ---------------------------------------------------------------------------
def method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def root_name(expr: cst.BaseExpression) -> Optional[str]:
    while True:
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            break
    return expr.value if isinstance(expr, cst.Name) else None


def names_read(node: cst.CSTNode) -> Set[str]:
    return {n.value for n in iter_subtree(node) if isinstance(n, cst.Name)}


def assigned_names(stmt: cst.CSTNode) -> Set[str]:
    out: Set[str] = set()
    if not isinstance(stmt, cst.SimpleStatementLine):
        return out
    for small in stmt.body:
        targets: List[cst.CSTNode] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            targets = [small.target]
        for target in targets:
            if isinstance(target, cst.Name):
                out.add(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                out.update(e.value.value for e in target.elements if isinstance(e.value, cst.Name))
    return out


def statement_of(stack: Stack) -> Optional[Tuple[cst.CSTNode, Block, int]]:
    """The innermost statement holding the last node of ``stack``, its block and index."""
    for i in range(len(stack) - 1, 0, -1):
        node, parent = stack[i], stack[i - 1]
        if isinstance(node, _STATEMENT) and isinstance(parent, (cst.IndentedBlock, cst.Module)):
            for index, stmt in enumerate(parent.body):
                if stmt is node:
                    return node, parent, index
    return None


def enclosing(stack: Stack, *types: type) -> Optional[cst.CSTNode]:
    for node in reversed(stack[:-1]):
        if isinstance(node, types):
            return node
    return None


def exclusive_branches(a: Stack, b: Stack) -> bool:
    """True when ``a`` and ``b`` lie in different branches of one ``if``/``else``: never both run."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x is not y:
            parent = a[i - 1] if i else None
            return isinstance(parent, cst.If) and {id(x), id(y)} == {id(parent.body), id(parent.orelse)}
    return False


def is_within(stack: Stack, node: cst.CSTNode) -> bool:
    return any(n is node for n in stack)


def parse_statement(text: str, like: Optional[cst.CSTNode] = None) -> cst.BaseStatement:
    stmt = cst.parse_statement(text + "\n")
    if like is not None and hasattr(like, "leading_lines"):
        stmt = stmt.with_changes(leading_lines=like.leading_lines)
    return stmt


# -- collected facts -------------------------------------------------------------------------
@dataclass
class Site:
    node: cst.Call
    stack: Stack


@dataclass
class AutocastRegion:
    node: cst.With
    call: cst.Call
    dtype: Optional[str]  # "float16", "bfloat16", None (unknown)
    enabled: bool


@dataclass
class HalfCast:
    call: cst.Call
    stack: Stack
    dtype: str
    target: Optional[str]  # the variable that ends up half (model or tensor)
    whole_statement: bool  # ``model.half()`` / ``model = model.half()``: the statement is the cast


@dataclass
class OptimizerDef:
    name: str
    call: cst.Call
    stack: Stack
    qualified: Optional[str]
    kind: str  # "standard", "master", "builder", "engine"
    models: Set[str]


@dataclass
class Loop:
    """A recognised training step: one ``.backward()`` and the optimizer steps after it."""

    backward: cst.Call
    backward_stmt: cst.CSTNode
    block: Block
    index: int
    loss: cst.BaseExpression
    loop: Optional[cst.CSTNode]
    function: Optional[cst.FunctionDef]
    stack: Stack
    steps: List[Site] = field(default_factory=list)  # ``opt.step()`` (direct)
    scaler_steps: List[Site] = field(default_factory=list)  # ``scaler.step(opt)``
    scaler_updates: List[Site] = field(default_factory=list)
    unscales: List[Site] = field(default_factory=list)
    clips: List[Site] = field(default_factory=list)
    optimizers: List[str] = field(default_factory=list)
    scaled: bool = False  # backward through ``scaler.scale(...)``
    apex_with: Optional[cst.With] = None  # ``with amp.scale_loss(...) as s: s.backward()``
    autocast: Optional[AutocastRegion] = None  # the region the loss is computed in
    manual_scale: bool = False  # ``(loss * scale).backward()``

    @property
    def container(self) -> cst.CSTNode:
        return self.loop if self.loop is not None else self.function  # type: ignore[return-value]


class TrainingLoops:
    """Walker participant: recognises training loops and builds the migration fix."""

    key = "training"

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.backwards: List[Site] = []
        self.steps: List[Site] = []
        self.scaler_scales: List[Site] = []
        self.scaler_steps: List[Site] = []
        self.scaler_updates: List[Site] = []
        self.unscales: List[Site] = []
        self.clips: List[Site] = []
        self.zero_grads: List[Site] = []
        self.scalers: List[Site] = []  # GradScaler constructions
        self.scaler_names: Set[str] = set()
        self.optimizers: Dict[str, OptimizerDef] = {}
        self.schedulers: Set[str] = set()
        self.models: Set[str] = set()
        self.casts: List[HalfCast] = []
        self.autocasts: List[AutocastRegion] = []
        self.amp_references = 0
        self.apex_calls: List[Site] = []
        self.cuda_calls = 0
        self.functions: Dict[str, cst.FunctionDef] = {}
        self.calls_by_name: Dict[str, List[Site]] = {}
        self.device_defs: Dict[str, List[Tuple[cst.BaseExpression, Optional[cst.FunctionDef]]]] = {}
        self.engines = False
        self.cpu_unsupported: Set[str] = set()
        self.autocast_banned: Set[str] = set()
        self._autocast_stack: List[AutocastRegion] = []
        self.loops: List[Loop] = []

    # -- collection ------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.setdefault(node.name.value, node)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and (self.ctx.qualify(call.func) or "") in AUTOCASTS:
                region = self._autocast(node, call)
                self.autocasts.append(region)
                self._autocast_stack.append(region)
                return

    def leave_With(self, node: cst.With) -> None:
        if self._autocast_stack and self._autocast_stack[-1].node is node:
            self._autocast_stack.pop()

    def _autocast(self, node: cst.With, call: cst.Call) -> AutocastRegion:
        implied = AUTOCASTS[self.ctx.qualify(call.func) or ""]
        device = implied
        dtype: Optional[str] = None
        enabled = True
        positional = [a for a in call.args if a.keyword is None]
        for arg in call.args:
            key = arg.keyword.value if arg.keyword is not None else None
            if key == "dtype" or (key is None and implied is not None and len(positional) > 1 and arg is positional[1]):
                dtype = HALF_DTYPES.get((self.ctx.qualify(arg.value) or "").rsplit(".", 1)[-1])
            elif key == "device_type" or (key is None and implied is None and arg is positional[0]):
                if isinstance(arg.value, cst.SimpleString):
                    device = str(arg.value.evaluated_value)
            elif key == "enabled" and isinstance(arg.value, cst.Name) and arg.value.value == "False":
                enabled = False
        if dtype is None:
            dtype = AUTOCAST_DEFAULT_DTYPE.get(device or self.ctx.settings.device, "float16")
        return AutocastRegion(node, call, dtype, enabled)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        value = node.value
        function = self._function()
        self_attr = (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                     and target.value.value == "self")
        if (isinstance(target, cst.Name) or self_attr) and isinstance(value, cst.Call):
            name = dotted_name(target) or ""
            qualified = self.ctx.qualify(value.func) or ""
            last = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
            if qualified == "torch.device" or last == "device" and qualified.startswith("torch"):
                self.device_defs.setdefault(name, []).append((value, function))
            if qualified in GRAD_SCALERS:
                self.scaler_names.add(name)
            if qualified.startswith(SCHEDULER_PREFIXES) or "sched" in last.lower():
                self.schedulers.add(name)
            elif qualified in OPTIMIZERS or last in MASTER_WEIGHT_WRAPPERS or "optim" in last.lower():
                kind = "standard" if qualified in OPTIMIZERS else "master" if last in MASTER_WEIGHT_WRAPPERS else "builder"
                models = {root_name(n.func) for a in value.args for n in iter_subtree(a.value)
                          if isinstance(n, cst.Call) and method_name(n) in ("parameters", "named_parameters")}
                models |= {a.value.value for a in value.args if isinstance(a.value, cst.Name) and kind != "standard"}
                models.discard(None)
                self.optimizers[name] = OptimizerDef(name, value, tuple(self.ctx.stack), qualified, kind, models)  # type: ignore[arg-type]
                if kind == "builder":
                    self.models.update(m for m in models if m)  # type: ignore[misc]
        elif isinstance(target, cst.Name) and isinstance(value, (cst.SimpleString, cst.IfExp, cst.Attribute)):
            self.device_defs.setdefault(target.value, []).append((value, function))
        elif isinstance(target, cst.Tuple) and isinstance(value, cst.Call):
            qualified = self.ctx.qualify(value.func) or ""
            names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
            if qualified in ENGINE_INITIALIZERS:
                self.engines = True
            if qualified == "apex.amp.initialize" and len(names) >= 2 and names[1] not in self.optimizers:
                # ``model, optimizer = amp.initialize(model, optimizer)``: same objects.
                self.models.add(names[0])

    def _function(self) -> Optional[cst.FunctionDef]:
        node = self.ctx.enclosing(cst.FunctionDef)
        return node if isinstance(node, cst.FunctionDef) else None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = method_name(node)
        func_name = node.func.value if isinstance(node.func, cst.Name) else None
        if func_name is not None:
            self.calls_by_name.setdefault(func_name, []).append(Site(node, tuple(ctx.stack)))
        qualified = ctx.qualify(node.func) or ""
        if qualified.startswith("apex."):
            self.apex_calls.append(Site(node, tuple(ctx.stack)))
        if qualified in GRAD_SCALERS:
            self.scalers.append(Site(node, tuple(ctx.stack)))
        if qualified in AUTOCASTS or any(
            (ctx.qualify(a.value) or "") in AUTOCASTS or (ctx.qualify(a.value) or "") in GRAD_SCALERS
            for a in node.args if isinstance(a.value, (cst.Name, cst.Attribute))
        ) or (func_name is not None and "scaler" in func_name.lower()):
            # ``ctx = torch.amp.autocast(...)``, ``partial(torch.autocast, ...)``, ``loss_scaler(loss, opt)``
            self.amp_references += 1
        if qualified in ENGINE_INITIALIZERS:
            self.engines = True
        if qualified in MIXED_PRECISION_CONFIGS and (
            qualified != "accelerate.Accelerator" or any(a.keyword and a.keyword.value == "mixed_precision" for a in node.args)
        ):
            self.amp_references += 1
        if qualified in CPU_FP16_AUTOCAST_TRAINING_UNSUPPORTED:
            self.cpu_unsupported.add(qualified)
        if qualified in AUTOCAST_BANNED:
            self.autocast_banned.add(qualified)
        if qualified in CLIP_FUNCTIONS or (name in CLIP_METHODS and not qualified.startswith("torch.")):
            self.clips.append(Site(node, tuple(ctx.stack)))
            return
        if name is None:
            return
        recv = receiver(node)
        recv_text = dotted_name(recv) if recv is not None else None
        if name == "backward" and recv is not None and not qualified.startswith("torch."):
            self.backwards.append(Site(node, tuple(ctx.stack)))
        elif name == "step":
            self.steps.append(Site(node, tuple(ctx.stack)))
        elif name == "scale" and len(node.args) == 1:
            self.scaler_scales.append(Site(node, tuple(ctx.stack)))
        elif name == "update" and not node.args:
            self.scaler_updates.append(Site(node, tuple(ctx.stack)))
        elif name == "unscale_":
            self.unscales.append(Site(node, tuple(ctx.stack)))
        elif name == "zero_grad":
            self.zero_grads.append(Site(node, tuple(ctx.stack)))
        elif name in _MODEL_METHODS and recv_text and "." not in recv_text:
            self.models.add(recv_text)
        elif name == "cuda":
            self.cuda_calls += 1
        dtype = self._cast_dtype(node, name)
        if dtype is not None:
            self.casts.append(self._half_cast(node, dtype))

    def _cast_dtype(self, node: cst.Call, name: str) -> Optional[str]:
        if name in HALF_METHODS and not node.args:
            return HALF_METHODS[name]
        if name == "to":
            for arg in node.args:
                if arg.keyword is None or arg.keyword.value == "dtype":
                    q = self.ctx.qualify(arg.value) or ""
                    if q.startswith("torch.") and q.rsplit(".", 1)[-1] in HALF_DTYPES:
                        return HALF_DTYPES[q.rsplit(".", 1)[-1]]
        if name == "from_pretrained":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("torch_dtype", "dtype"):
                    q = self.ctx.qualify(arg.value) or ""
                    if q.rsplit(".", 1)[-1] in HALF_DTYPES:
                        return HALF_DTYPES[q.rsplit(".", 1)[-1]]
        return None

    def _half_cast(self, node: cst.Call, dtype: str) -> HalfCast:
        stack = tuple(self.ctx.stack)
        found = statement_of(stack)
        target = root_name(node.func.value) if method_name(node) != "from_pretrained" else None  # type: ignore[attr-defined]
        whole = False
        if found is not None and isinstance(found[0], cst.SimpleStatementLine) and len(found[0].body) == 1:
            small = found[0].body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                if _on_spine(small.value, node):
                    target = small.targets[0].target.value
                    inner = node.func.value  # type: ignore[attr-defined]
                    whole = small.value is node and isinstance(inner, cst.Name) and inner.value == target
            elif isinstance(small, cst.Expr) and small.value is node:
                whole = True
        return HalfCast(node, stack, dtype, target, whole)

    # -- recognition -------------------------------------------------------------------------
    def finish(self) -> None:
        self.models -= set(self.optimizers) | self.schedulers | self.scaler_names
        for site in self.backwards:
            loop = self._loop(site)
            if loop is not None:
                self.loops.append(loop)

    def is_optimizer(self, text: Optional[str]) -> bool:
        if not text or text in self.schedulers or text in self.scaler_names:
            return False
        last = text.rsplit(".", 1)[-1]
        return text in self.optimizers or "opt" in last.lower()

    def _loop(self, site: Site) -> Optional[Loop]:
        call = site.node
        recv = receiver(call)
        assert recv is not None
        recv_text = dotted_name(recv)
        if self.is_optimizer(recv_text) or recv_text in self.models or (recv_text or "").startswith("self"):
            return None  # ``optimizer.backward(loss)`` (a wrapper) is not a loss's backward
        found = statement_of(site.stack)
        if found is None:
            return None
        stmt, block, index = found
        loss: cst.BaseExpression = recv
        apex_with = None
        scaled = False
        manual = False
        if isinstance(recv, cst.Call) and method_name(recv) == "scale" and len(recv.args) == 1:
            scaled = True
            loss = recv.args[0].value
        elif isinstance(recv, cst.BinaryOperation) and isinstance(recv.operator, cst.Multiply):
            manual = True
        with_node = enclosing(site.stack, cst.With)
        if isinstance(with_node, cst.With) and isinstance(stmt, cst.SimpleStatementLine) and isinstance(recv, cst.Name):
            for item in with_node.items:
                if (isinstance(item.item, cst.Call) and self.ctx.qualify(item.item.func) == "apex.amp.scale_loss"
                        and item.asname is not None and isinstance(item.asname.name, cst.Name)
                        and item.asname.name.value == recv.value and item.item.args):
                    outer = statement_of(site.stack[: site.stack.index(with_node) + 1])
                    if outer is not None:
                        apex_with = with_node
                        stmt, block, index = outer
                        loss = item.item.args[0].value
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
                and stmt.body[0].value is call) and apex_with is None:
            return None
        container = enclosing(site.stack, cst.For, cst.While, cst.FunctionDef)
        function = enclosing(site.stack, cst.FunctionDef)
        loop_node = container if isinstance(container, (cst.For, cst.While)) else None
        scope = container if container is not None else self.ctx.module
        where = self.pos(call)
        def after(s: Site) -> bool:
            return (self._inside(s, scope) and self.pos(s.node) > where
                    and not exclusive_branches(s.stack, site.stack))

        steps = [s for s in self.steps if after(s) and not s.node.args and self.is_optimizer(dotted_name(receiver(s.node)))]
        scaler_steps = [s for s in self.steps if after(s) and len(s.node.args) == 1
                        and dotted_name(receiver(s.node)) in self._scaler_like()]
        if not steps and not scaler_steps:
            return None
        loop = Loop(call, stmt, block, index, loss, loop_node, function if isinstance(function, cst.FunctionDef) else None,
                    site.stack, steps=steps, scaler_steps=scaler_steps, scaled=scaled, apex_with=apex_with,
                    manual_scale=manual)
        loop.scaler_updates = [s for s in self.scaler_updates if after(s) and dotted_name(receiver(s.node)) in self._scaler_like()]
        loop.unscales = [s for s in self.unscales if self._inside(s, scope)]
        last_step = max([self.pos(s.node) for s in steps + scaler_steps])
        loop.clips = [s for s in self.clips if after(s) and self.pos(s.node) < last_step]
        loop.optimizers = list(dict.fromkeys(
            [dotted_name(receiver(s.node)) or "" for s in steps]
            + [dotted_name(s.node.args[0].value) or "" for s in scaler_steps]))
        loop.autocast = self._loss_autocast(loop, scope)
        return loop

    def pos(self, node: cst.CSTNode) -> Tuple[int, int]:
        start = self.ctx.position(node).start
        return start.line, start.column

    def _scaler_like(self) -> Set[str]:
        names = set(self.scaler_names)
        for site in self.scaler_scales:
            text = dotted_name(receiver(site.node))  # type: ignore[arg-type]
            if text:
                names.add(text)
        return names

    def _inside(self, site: Site, scope: cst.CSTNode) -> bool:
        return is_within(site.stack, scope)

    def _loss_autocast(self, loop: Loop, scope: cst.CSTNode) -> Optional[AutocastRegion]:
        """The autocast region the loss is computed in (its assignment, or the backward itself)."""
        loss_names = names_read(loop.loss)
        for region in self.autocasts:
            if not region.enabled:
                continue
            if is_within(loop.stack, region.node):
                return region
            if not any(n is region.node for n in iter_subtree(scope)):
                continue
            for node in iter_subtree(region.node.body):
                if isinstance(node, cst.SimpleStatementLine) and assigned_names(node) & loss_names:
                    return region
        return None

    # -- queries for the rules ------------------------------------------------------------------
    @property
    def has_mixed_precision(self) -> bool:
        return bool(self.autocasts or self.scalers or self.casts or self.apex_calls or self.engines
                    or self.amp_references
                    or any(o.kind == "master" for o in self.optimizers.values()))

    def model_casts(self) -> List[HalfCast]:
        return [c for c in self.casts if c.target is not None and c.target in self.models]

    def optimized_models(self) -> Dict[str, OptimizerDef]:
        """model name -> the optimizer built over its parameters."""
        out: Dict[str, OptimizerDef] = {}
        for opt in self.optimizers.values():
            for model in opt.models:
                if model in self.models:
                    out.setdefault(model, opt)
        return out

    def has_master_weights(self) -> bool:
        return self.engines or any(o.kind == "master" for o in self.optimizers.values()) or any(
            self.ctx.qualify(s.node.func) == "apex.amp.initialize" for s in self.apex_calls)

    def apex_opt_levels(self) -> List[str]:
        return [level for site in self.apex_calls if self.ctx.qualify(site.node.func) == "apex.amp.initialize"
                for level in [_opt_level(site.node) or "O1"]]

    # -- device --------------------------------------------------------------------------------
    def device_text(self, function: Optional[cst.FunctionDef]) -> str:
        """The script's device type as an expression valid in ``function``."""
        scope: cst.CSTNode = function if function is not None else self.ctx.module
        candidates: List[cst.BaseExpression] = []
        for node in iter_subtree(scope):
            if isinstance(node, cst.Call) and method_name(node) == "to":
                for arg in node.args:
                    if arg.keyword is None or arg.keyword.value == "device":
                        candidates.append(arg.value)
            elif isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
                candidates.append(node.value)
        params = {p.name.value for p in function.params.params} if function is not None else set()
        for expr in candidates:
            if isinstance(expr, cst.Name):
                kind = self._device_kind(expr.value, function, params)
                if kind == "torch.device":
                    return f"{expr.value}.type"
                if kind == "other":
                    return f"{self._torch()}.device({expr.value}).type"
            elif isinstance(expr, cst.Attribute) and expr.attr.value == "device" and isinstance(expr.value, cst.Name) \
                    and expr.value.value in ("args", "cfg", "config", "opt", "opts", "hparams"):
                return f"{self._torch()}.device({self.ctx.code(expr)}).type"
        # a torch.device defined in this scope but only used by name elsewhere
        for name, defs in self.device_defs.items():
            if any(f is function for _, f in defs) and all(isinstance(v, cst.Call) for v, f in defs if f is function):
                return f"{name}.type"
        if self.cuda_calls:
            return '"cuda"'
        return f'"{self.ctx.settings.device}"'

    def _device_kind(self, name: str, function: Optional[cst.FunctionDef], params: Set[str]) -> Optional[str]:
        defs = [v for v, f in self.device_defs.get(name, []) if f is function or f is None]
        if defs:
            return "torch.device" if all(isinstance(v, cst.Call) for v in defs) else "other"
        if name in params and function is not None:
            kinds = set()
            for caller, arg in self._call_args(function, name):
                if isinstance(arg, cst.Name):
                    kinds.add(self._device_kind(arg.value, caller, self._params(caller)))
                else:
                    kinds.add("other")
            if kinds == {"torch.device"}:
                return "torch.device"
            return "other"
        return None

    def _params(self, function: Optional[cst.FunctionDef]) -> Set[str]:
        return {p.name.value for p in function.params.params} if function is not None else set()

    def _call_args(self, function: cst.FunctionDef, param: str) -> List[Tuple[Optional[cst.FunctionDef], cst.BaseExpression]]:
        """(calling function, argument expression) for every call of ``function`` in the file."""
        names = [p.name.value for p in function.params.params]
        position = names.index(param)
        out = []
        for site in self.calls_by_name.get(function.name.value, []):
            arg = None
            for i, a in enumerate(site.node.args):
                if a.keyword is not None and a.keyword.value == param:
                    arg = a
                elif a.keyword is None and not a.star and i == position:
                    arg = a
            if arg is not None:
                caller = enclosing(site.stack, cst.FunctionDef)
                out.append((caller if isinstance(caller, cst.FunctionDef) else None, arg.value))
        return out

    def _torch(self) -> str:
        return self.ctx.reference("torch")[0]

    # -- the codemod ----------------------------------------------------------------------------
    def migration(self, loop: Loop, *, title: str, applicability: Applicability = Applicability.UNSAFE,
                  dtype: str = "float16", scaler: bool = True, remove_casts: bool = False,
                  apex: bool = False) -> Tuple[Optional[CstFix], str]:
        """ONE fix migrating ``loop`` to native AMP, or (None, what to do by hand)."""
        return _Migration(self, loop, dtype, scaler, remove_casts, apex).build(title, applicability)


def _on_spine(value: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """Whether ``node`` is on the method chain of ``value`` (``A().to(d).half()``)."""
    current: cst.CSTNode = value
    while True:
        if current is node:
            return True
        if isinstance(current, cst.Call):
            current = current.func
        elif isinstance(current, cst.Attribute):
            current = current.value
        else:
            return False


class BlockEdits:
    """Statement-level edits, gathered per block and applied by one replacement of the block."""

    def __init__(self) -> None:
        self.blocks: Dict[int, Tuple[Block, Dict[int, List[Tuple[str, object]]]]] = {}

    def _add(self, block: Block, index: int, op: str, payload: object) -> None:
        self.blocks.setdefault(id(block), (block, {}))[1].setdefault(index, []).append((op, payload))

    def insert_before(self, block: Block, index: int, stmts: Sequence[cst.BaseStatement]) -> None:
        self._add(block, index, "before", list(stmts))

    def insert_after(self, block: Block, index: int, stmts: Sequence[cst.BaseStatement]) -> None:
        self._add(block, index, "after", list(stmts))

    def replace(self, block: Block, index: int, make: Callable[[cst.CSTNode], List[cst.BaseStatement]]) -> None:
        self._add(block, index, "replace", make)

    def wrap(self, block: Block, start: int, end: int, make: Callable[[List[cst.BaseStatement]], cst.BaseStatement]) -> None:
        self._add(block, start, "wrap", (end, make))

    def has(self, block: Block, index: int, op: str) -> bool:
        entry = self.blocks.get(id(block))
        return bool(entry and any(o == op for o, _ in entry[1].get(index, [])))

    def apply_to(self, fix: CstFix) -> None:
        for block, ops in self.blocks.values():
            fix.replace(block, _block_rewriter(ops))


def _block_rewriter(ops: Dict[int, List[Tuple[str, object]]]) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def rewrite(updated: cst.CSTNode) -> cst.CSTNode:
        body = list(updated.body)  # type: ignore[attr-defined]
        out: List[cst.BaseStatement] = []
        i = 0
        while i < len(body):
            entries = ops.get(i, [])
            for op, payload in entries:
                if op == "before":
                    out.extend(payload)  # type: ignore[arg-type]
            wrap = next((p for o, p in entries if o == "wrap"), None)
            replace = next((p for o, p in entries if o == "replace"), None)
            after = [s for o, p in entries if o == "after" for s in p]  # type: ignore[union-attr]
            if wrap is not None:
                end, make = wrap  # type: ignore[misc]
                out.append(make(body[i:end + 1]))
                for j in range(i + 1, end + 1):  # statements after the wrapped ones keep their edits
                    after.extend(s for o, p in ops.get(j, []) if o == "after" for s in p)  # type: ignore[union-attr]
                i = end + 1
            else:
                out.extend(replace(body[i]) if replace is not None else [body[i]])  # type: ignore[operator]
                i += 1
            out.extend(after)
        if isinstance(updated, cst.IndentedBlock) and not out:
            out = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=out)

    return rewrite


class _Migration:
    def __init__(self, analysis: TrainingLoops, loop: Loop, dtype: str, scaler: bool, remove_casts: bool,
                 apex: bool) -> None:
        self.a = analysis
        self.ctx = analysis.ctx
        self.loop = loop
        self.dtype = dtype
        self.use_scaler = scaler and dtype == "float16"
        self.remove_casts = remove_casts
        self.apex = apex
        self.edits = BlockEdits()
        self.fix: Optional[CstFix] = None
        self.imports: List[str] = []

    def ref(self, qualified: str) -> str:
        text, module = self.ctx.reference(qualified)
        if module:
            self.imports.append(module)
        return text

    def build(self, title: str, applicability: Applicability) -> Tuple[Optional[CstFix], str]:
        fix = CstFix(title, applicability)
        self.fix = fix
        loop = self.loop
        self.self_scaler = bool(loop.optimizers) and loop.optimizers[0].startswith("self.") \
            and loop.optimizers[0] in self.a.optimizers
        if len(loop.optimizers) != 1 and self.use_scaler and len(self.a.scaler_names) == 0 and len(loop.optimizers) == 0:
            return None, "no optimizer step found after `.backward()`"
        for site in loop.steps:
            if site.node.args:
                return None, "`optimizer.step(closure)` cannot go through a GradScaler"
        scaler_name = self._scaler_name()
        device_loop = self.a.device_text(loop.function)
        if self.dtype == "float16" and self.a.cpu_unsupported and device_loop != '"cuda"':
            layers = ", ".join(f"`{q}`" for q in sorted(self.a.cpu_unsupported))
            return None, (f"{layers} has no float16 training kernel under CPU autocast, and this script can run on "
                          f"the CPU; use `torch.autocast(..., enabled={device_loop} == \"cuda\")` or bfloat16 there")
        if loop.autocast is None and self.a.autocast_banned and device_loop != '"cpu"':
            banned = ", ".join(f"`{q}`" for q in sorted(self.a.autocast_banned))
            return None, (f"{banned} raises under CUDA autocast; use `binary_cross_entropy_with_logits` / "
                          f"`nn.BCEWithLogitsLoss` on the logits first")
        # 1. autocast around forward + loss
        if loop.autocast is None or self.remove_casts:
            if loop.autocast is None:
                reason = self._wrap_forward(device_loop)
                if reason:
                    return None, reason
        # 2. the scaler
        if self.use_scaler and not self.a.scalers:
            reason = self._create_scaler(scaler_name)
            if reason:
                return None, reason
            reason = self._route(scaler_name)
            if reason:
                return None, reason
        elif self.apex:
            return None, "the apex loop already has a GradScaler; remove `amp.scale_loss` by hand"
        elif loop.apex_with is not None:
            self._replace_stmt(loop.block, loop.index, lambda s: [parse_statement(f"{self.ctx.code(loop.loss)}.backward()", s)])
        # 3. half casts
        if self.remove_casts:
            reason = self._remove_casts()
            if reason:
                return None, reason
        # 4. apex
        if self.apex:
            reason = self._remove_apex(scaler_name)
            if reason:
                return None, reason
        self.edits.apply_to(fix)
        fix.add_imports = tuple(dict.fromkeys(self.imports))
        return fix, ""

    # -- pieces --------------------------------------------------------------------------------
    def _scaler_name(self) -> str:
        if self.a.scaler_names:
            return sorted(self.a.scaler_names)[0]
        for name in ("scaler", "grad_scaler", "amp_scaler"):
            if self.ctx.names.uses[name] == 0 and not self.ctx.names.is_bound(name) and name not in self.ctx.text:
                return f"self.{name}" if self.self_scaler else name
        return "amp_grad_scaler"

    def _replace_stmt(self, block: Block, index: int, make: Callable[[cst.CSTNode], List[cst.BaseStatement]]) -> None:
        self.edits.replace(block, index, make)

    def _forward_range(self) -> Tuple[Optional[Tuple[int, int]], str]:
        loop = self.loop
        body = loop.block.body
        needed = names_read(loop.loss)
        contributing: List[int] = []
        for j in range(loop.index - 1, -1, -1):
            stmt = body[j]
            if not isinstance(stmt, cst.SimpleStatementLine):
                break
            if assigned_names(stmt) & needed:
                contributing.append(j)
                for small in stmt.body:
                    value = getattr(small, "value", None)
                    if value is not None:
                        needed |= names_read(value)
                    if isinstance(small, cst.AugAssign):
                        needed |= names_read(small.target)
        if not contributing:
            return None, "the loss is not computed in the statements right before `.backward()`"
        start = None
        for j in sorted(contributing):
            if self._is_forward(body[j]):
                start = j
                break
        if start is None:
            start = min(contributing)
        return (start, max(contributing)), ""

    def _is_forward(self, stmt: cst.CSTNode) -> bool:
        for node in iter_subtree(stmt):
            if isinstance(node, cst.Call):
                if isinstance(node.func, cst.Name) and node.func.value in self.a.models:
                    return True
                if any(root_name(a.value) in self.a.models and not isinstance(a.value, cst.Call) for a in node.args):
                    return True
                if isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                        and node.func.value.value in self.a.models and node.func.attr.value not in _MODEL_METHODS:
                    return True
        return False

    def _wrap_forward(self, device: str) -> str:
        span, reason = self._forward_range()
        if span is None:
            return reason
        start, end = span
        header = (f"with {self.ref('torch.autocast')}(device_type={device}, "
                  f"dtype={self.ref('torch.' + self.dtype)}):\n    pass\n")
        template = cst.parse_statement(header)
        assert isinstance(template, cst.With)

        def make(stmts: List[cst.BaseStatement]) -> cst.BaseStatement:
            first = stmts[0]
            inner = [first.with_changes(leading_lines=())] + list(stmts[1:])
            return template.with_changes(body=template.body.with_changes(body=inner),
                                         leading_lines=first.leading_lines)

        self.edits.wrap(self.loop.block, start, end, make)
        return ""

    def _stmt_of(self, site: Site) -> Optional[Tuple[cst.CSTNode, Block, int]]:
        found = statement_of(site.stack)
        if found is None:
            return None
        stmt = found[0]
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            return found
        return None

    def _create_scaler(self, name: str) -> str:
        loop = self.loop
        opt = loop.optimizers[0] if loop.optimizers else None
        definition = self.a.optimizers.get(opt or "")
        grad_scaler = self.ref("torch.amp.GradScaler")
        if definition is not None:
            function = enclosing(definition.stack, cst.FunctionDef)
            function = function if isinstance(function, cst.FunctionDef) else None
            found = statement_of(definition.stack)
            if found is None:
                return "cannot place the GradScaler"
            stmt, block, index = found
            device = self.a.device_text(function)
            new = parse_statement(f"{name} = {grad_scaler}({device})")
            if function is loop.function or loop.function is None or self.self_scaler:
                return self._place_after_optimizer(block, index, new)
            if function is None and not enclosing(definition.stack, cst.ClassDef):
                # a module-level optimizer: a module-level scaler next to it lives across calls
                return self._place_after_optimizer(block, index, new)
            # optimizer built in a caller: thread the scaler through the loop function's call
            if self._thread(loop.function, function, name):
                return self._place_after_optimizer(block, index, new)
        # optimizer from elsewhere: at the loop function's start
        function = loop.function
        if loop.loop is None:
            return ("the GradScaler must live across steps: create it next to the optimizer and route "
                    "backward/step through it")
        device = self.a.device_text(function)
        new = parse_statement(f"{name} = {grad_scaler}({device})")
        if function is None:
            if loop.loop is None:
                return "no loop or function to hold the GradScaler"
            found = statement_of(loop.stack[: loop.stack.index(loop.loop) + 1])
            if found is None:
                return "cannot place the GradScaler"
            self.edits.insert_before(found[1], found[2], [new])
            return ""
        body = function.body
        if not isinstance(body, cst.IndentedBlock):
            return "one-line function"
        index = 0
        if body.body and isinstance(body.body[0], cst.SimpleStatementLine) and isinstance(body.body[0].body[0], cst.Expr) \
                and isinstance(body.body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            index = 1
        if index < len(body.body):
            self.edits.insert_before(body, index, [new])
        else:
            self.edits.insert_after(body, index - 1, [new])
        return ""

    def _place_after_optimizer(self, block: Block, index: int, new: cst.BaseStatement) -> str:
        # apex: the ``amp.initialize`` line right after the optimizer becomes the scaler line
        self.edits.insert_after(block, index, [new])
        return ""

    def _thread(self, loop_function: Optional[cst.FunctionDef], caller: Optional[cst.FunctionDef], name: str) -> bool:
        """Add ``name`` as the last parameter of ``loop_function`` and pass it at its one call site."""
        if loop_function is None or caller is None:
            return False
        sites = [s for s in self.a.calls_by_name.get(loop_function.name.value, []) if is_within(s.stack, caller)]
        all_sites = self.a.calls_by_name.get(loop_function.name.value, [])
        params = loop_function.params
        if len(sites) != 1 or len(all_sites) != 1 or params.star_arg is not cst.MaybeSentinel.DEFAULT or params.kwonly_params \
                or params.star_kwarg is not None or any(p.default is not None for p in params.params):
            return False
        if any(p.name.value == name for p in params.params):
            return False
        site = sites[0]
        if any(a.star for a in site.node.args):
            return False

        def add_param(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Parameters)
            items = list(updated.params)
            if items and items[-1].comma is cst.MaybeSentinel.DEFAULT:
                items[-1] = items[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated.with_changes(params=items + [cst.Param(cst.Name(name))])

        keyword = any(a.keyword is not None for a in site.node.args)

        def add_arg(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            args = list(updated.args)
            if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new = cst.Arg(cst.Name(name), keyword=cst.Name(name) if keyword else None,
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")) if keyword else cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=args + [new])

        assert self.fix is not None
        self.fix.replace(params, add_param)
        self.fix.replace(site.node, add_arg)
        return True

    def _route(self, scaler: str) -> str:
        loop = self.loop
        if not loop.scaled:
            loss_code = self.ctx.code(loop.loss)
            if loop.apex_with is not None:
                self._replace_stmt(loop.block, loop.index,
                                   lambda s: [parse_statement(f"{scaler}.scale({loss_code}).backward()", s)])
            else:
                args = ", ".join(self.ctx.code(a).rstrip(", ") for a in loop.backward.args)
                new_call = cst.parse_expression(f"{scaler}.scale({loss_code}).backward({args})")

                def make(stmt: cst.CSTNode) -> List[cst.BaseStatement]:
                    assert isinstance(stmt, cst.SimpleStatementLine)
                    return [stmt.with_changes(body=[stmt.body[0].with_changes(value=new_call)])]

                self._replace_stmt(loop.block, loop.index, make)
        optimizers = [dotted_name(receiver(s.node)) or "" for s in loop.steps]
        # unscale_ before each clip between backward and step
        for clip in loop.clips:
            found = statement_of(clip.stack)
            if found is None:
                return "cannot place `unscale_` before the clipping call"
            _, block, index = found
            if not self.edits.has(block, index, "before"):
                self.edits.insert_before(block, index, [parse_statement(f"{scaler}.unscale_({o})") for o in optimizers])
        for position, site in enumerate(loop.steps):
            found = self._stmt_of(site)
            if found is None or not isinstance(found[0].body[0], cst.Expr):  # type: ignore[attr-defined]
                return "the optimizer step is not a statement of its own"
            _, block, index = found
            opt = optimizers[position]
            last = position == len(loop.steps) - 1

            def make(stmt: cst.CSTNode, opt: str = opt, last: bool = last) -> List[cst.BaseStatement]:
                assert isinstance(stmt, cst.SimpleStatementLine)
                first = stmt.with_changes(body=[stmt.body[0].with_changes(value=cst.parse_expression(f"{scaler}.step({opt})"))])
                return [first] + ([parse_statement(f"{scaler}.update()")] if last else [])

            self._replace_stmt(block, index, make)
        return ""

    def _remove_casts(self) -> str:
        assert self.fix is not None
        loop_scope = self.loop.container
        for cast in self.a.casts:
            is_model = cast.target in self.a.models
            in_loop = loop_scope is not None and is_within(cast.stack, loop_scope)
            if not is_model and not in_loop:
                continue
            if cast.whole_statement:
                found = statement_of(cast.stack)
                if found is None:
                    return "cannot remove the cast"
                self._replace_stmt(found[1], found[2], lambda s: [])
                continue
            self.fix.replace(cast.call, _uncast)
        return ""

    def _remove_apex(self, scaler: str) -> str:
        assert self.fix is not None
        handled: Set[int] = set()
        for site in self.a.apex_calls:
            qualified = self.ctx.qualify(site.node.func)
            if qualified == "apex.amp.initialize":
                level = _opt_level(site.node)
                if level is not None and APEX_OPT_LEVELS.get(level, "x") is None:
                    return f"opt_level {level} means no mixed precision; remove apex by hand"
                found = statement_of(site.stack)
                if found is None or not isinstance(found[0], cst.SimpleStatementLine):
                    return "`amp.initialize` is not a statement of its own"
                stmt, block, index = found
                if not self.edits.has(block, index, "replace"):
                    self._replace_stmt(block, index, _drop_keep_lines)
                handled.add(id(site.node))
            elif qualified == "apex.amp.scale_loss":
                if self.loop.apex_with is None or not any(i.item is site.node for i in self.loop.apex_with.items):
                    return "`amp.scale_loss` outside the recognised loop"
                handled.add(id(site.node))
            elif qualified == "apex.amp.master_params" and len(site.node.args) == 1:
                opt = dotted_name(site.node.args[0].value) or ""
                definition = self.a.optimizers.get(opt)
                models = [m for m in (definition.models if definition else set()) if m in self.a.models]
                if len(models) != 1:
                    return "cannot tell which model `amp.master_params` refers to"
                if not any(c.node is site.node or is_within(c.stack, site.node) for c in self.loop.clips) and \
                        not any(is_within(site.stack, c.node) for c in self.loop.clips):
                    return "`amp.master_params` outside a clipping call of the loop"
                self.fix.replace(site.node, cst.parse_expression(f"{models[0]}.parameters()"))
                handled.add(id(site.node))
            else:
                return f"`{qualified}` has no automatic replacement"
        # the initialize line: replace it with the scaler when the scaler goes right before it
        for stmt, block, index in self._apex_imports():
            self._replace_stmt(block, index, lambda s: [])
        return ""

    def _apex_imports(self) -> List[Tuple[cst.CSTNode, Block, int]]:
        out = []
        module = self.ctx.module
        for index, stmt in enumerate(module.body):
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom)):
                small = stmt.body[0]
                bindings = list(self.ctx.names.bindings_for_statement(small))
                if bindings and all(b.qualified == "apex" or b.qualified.startswith("apex.amp") for b in bindings):
                    out.append((stmt, module, index))
        return out


def _drop_keep_lines(stmt: cst.CSTNode) -> List[cst.BaseStatement]:
    return []


def _uncast(updated: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
    name = updated.func.attr.value
    if name in HALF_METHODS:
        return updated.func.value
    if name == "to":
        keep = [a for a in updated.args if not (a.keyword is None and _is_dtype(a.value)) and not
                (a.keyword is not None and a.keyword.value == "dtype")]
        if not keep:
            return updated.func.value
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=keep)
    keep = [a for a in updated.args if not (a.keyword is not None and a.keyword.value in ("torch_dtype", "dtype"))]
    if keep:
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return updated.with_changes(args=keep)


def _is_dtype(expr: cst.BaseExpression) -> bool:
    text = dotted_name(expr) or ""
    return text.rsplit(".", 1)[-1] in HALF_DTYPES


def _opt_level(call: cst.Call) -> Optional[str]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "opt_level" and isinstance(arg.value, cst.SimpleString):
            return str(arg.value.evaluated_value)
    return None
