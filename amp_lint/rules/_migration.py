"""The AMP migration codemod: one all-or-nothing fix that moves a recognised training step to native
AMP (autocast around the forward and the loss, one ``torch.amp.GradScaler`` routing every backward and
optimizer step), used by AMP001, AMP101, AMP102 and AMP502.

It plans on the training model (:mod:`amp_lint.semantics.training`) and refuses, saying why, unless
the model is complete: the autocast block must hold a forward of the model, every backward is scaled
once, every optimizer steps through the scaler and ``update()`` follows the last step, the scaler is
created where it dominates its uses and lives across steps, and autocast and scaler use one device
expression, taken from where the model's device comes from. The edits are built against LibCST
(:class:`FixContext`) and touch only the statements they must.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from amp_lint.data import training as trainingdata
from amp_lint.engine.checker import CheckContext
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability
from amp_lint.semantics.program import is_main_guard, walk_scope
from amp_lint.semantics.torch_api import node_key, param_dtypes, param_origins
from amp_lint.semantics.training import FUNCTIONS, LOOPS, TrainingModel, TrainingStep
from amp_lint.semantics.values import (
    HALF, DType, Ext, FuncVal, Module, Obj, Scalar, Value, options,
)

Block = Union[cst.IndentedBlock, cst.Module]


@dataclass
class Plan:
    """What the migration will do, decided on the ``ast`` (so the message can say it)."""

    step: TrainingStep
    dtype: str
    scaler: bool
    wrap: List[Tuple[ast.stmt, ast.stmt]] = field(default_factory=list)  # (first, last) statement per range
    scaler_name: str = "scaler"
    scaler_place: Optional[Tuple[str, ast.AST]] = None  # ("after"/"before", statement)
    scaler_in_init: bool = False
    thread: Optional[Tuple[ast.AST, ast.Call]] = None  # (loop function def, its one call site)
    device: str = '"cuda"'
    scaler_device: str = '"cuda"'
    casts: List[ast.Call] = field(default_factory=list)
    sharded: bool = False
    enabled: Optional[str] = None  # ``args.fp16``: autocast and scaler on only where the removed cast was
    #: per cast (by ``id``) that keeps its call: the indices of the arguments (in source order) that name its dtype
    drop: Dict[int, Set[int]] = field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        if self.wrap:
            lines = ", ".join(f"lines {a.lineno}-{b.end_lineno}" if a is not b or a.lineno != b.end_lineno
                              else f"line {a.lineno}" for a, b in self.wrap)
            parts.append(f"wraps {lines} in `torch.autocast({self.device}, {self.dtype})`")
        if self.scaler:
            parts.append(f"routes backward and step through a `{'ShardedGradScaler' if self.sharded else 'GradScaler'}`")
        if self.casts:
            parts.append("removes the half cast")
        if self.enabled:
            parts.append(f"both enabled only when `{self.enabled}`, as the cast was")
        return "; ".join(parts)

    def enabled_code(self) -> str:
        """``enabled=``'s value: the test itself where it is a bool (a comparison, ``not``), else
        ``bool(test)``, since autocast raises on ``enabled=1`` (an ``int`` flag such as ``--fp16 1``)."""
        assert self.enabled is not None
        return self.enabled if _is_boolean(ast.parse(self.enabled, mode="eval").body) else f"bool({self.enabled})"


def _is_half_literal(node: ast.AST) -> bool:
    """``torch.float16``, ``torch.half``, ``torch.bfloat16`` (as an attribute of any name)."""
    return isinstance(node, ast.Attribute) and node.attr in trainingdata.HALF_DTYPES


def _is_boolean(test: ast.AST) -> bool:
    """Whether ``test`` always gives a ``bool``: a comparison, ``not``, ``True``/``False``, or
    ``and``/``or`` of those."""
    if isinstance(test, ast.BoolOp):
        return all(_is_boolean(value) for value in test.values)
    return isinstance(test, ast.Compare) or (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) \
        or (isinstance(test, ast.Constant) and isinstance(test.value, bool))


def _names_read(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _names_assigned(stmt: ast.stmt) -> Set[str]:
    out: Set[str] = set()
    targets: List[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                out.add(node.id)
    return out


def _names_stored(stmt: ast.stmt) -> Set[str]:
    """Names a (compound) statement binds or mutates anywhere inside it."""
    out: Set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                out.add(root.id)
    return out


def _block_of(tree: ast.AST, stmt: ast.stmt) -> Optional[Tuple[List[ast.stmt], int]]:
    """(the statement list holding ``stmt``, its index)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                for index, item in enumerate(body):
                    if item is stmt:
                        return body, index
        for handler in getattr(node, "handlers", ()) or ():
            for index, item in enumerate(handler.body):
                if item is stmt:
                    return handler.body, index
    return None


def _statement(ancestors: Sequence[ast.AST]) -> Optional[ast.stmt]:
    for node in reversed(ancestors):
        if isinstance(node, ast.stmt):
            return node
    return None


class Migration:
    """Plans a training step's migration on the ``ast`` and builds it against LibCST."""

    def __init__(self, ctx: CheckContext, model: TrainingModel, step: TrainingStep, *, dtype: str = "float16",
                 scaler: bool = True, remove_casts: bool = False, apex: bool = False,
                 enabled: Optional[Tuple[str, ast.AST]] = None) -> None:
        self.ctx = ctx
        self.model = model
        self.step = step
        self.dtype = dtype
        self.use_scaler = scaler and dtype == "float16"
        self.remove_casts = remove_casts
        self.apex = apex
        self.enabled = enabled  # (condition, the cast that holds only under it)
        self.tree = ctx.tree
        self.trained = set(model.trained_models())

    # -- planning ----------------------------------------------------------------------------------
    def plan(self) -> Tuple[Optional[Plan], str]:
        step = self.step
        func = step.backward.node.func
        if not (isinstance(func, ast.Attribute) and func.value is step.backward.receiver):
            # ``fabric.backward(loss)``: the framework owns backward and the cast of the model
            return None, (f"`{ast.unparse(func)}(...)` belongs to a framework; set its precision to a mixed "
                          "one (Lightning Fabric: `\"16-mixed\"`, autocast with a GradScaler inside)")
        if step.steps_via:
            call = ast.unparse(step.steps_via[0].node.func)
            return None, f"the optimizer steps inside `{call}()`; route its `step()` through a GradScaler by hand"
        if not step.steps and not step.scaler_steps:
            return None, "no optimizer step after `.backward()`"
        for event in step.steps:
            if event.node.args or event.node.keywords:
                return None, "`optimizer.step(closure)` cannot go through a GradScaler"
        if self.use_scaler and step.scaler_steps and not self.apex:
            return None, "the loop already steps through a GradScaler"
        plan = Plan(step, self.dtype, self.use_scaler)
        for event in step.steps + step.scaler_steps:
            stmt = _statement(event.ancestors)
            if not (isinstance(stmt, ast.Expr) and stmt.value is event.node):
                return None, "the optimizer step is not a statement of its own"
            for ancestor in event.ancestors:
                if isinstance(ancestor, ast.If) and ancestor.orelse and _within_body(ancestor, event.ancestors) \
                        and not _within_body(ancestor, step.backward.ancestors):
                    return None, ("the parameters are updated without the optimizer on another branch "
                                  f"(line {ancestor.lineno}); a GradScaler would leave them scaled there")
        banned = self._banned()
        if banned:
            return None, banned
        reason = self._plan_ranges(plan)
        if reason:
            return None, reason
        plan.device = self._device(self._scope_of(step.backward.ancestors)) or self._default_device()
        cpu_reason = self._cpu_unsupported(plan.device)
        if cpu_reason:
            return None, cpu_reason
        if self.use_scaler:
            reason = self._plan_scaler(plan)
            if reason:
                return None, reason
            if plan.device != plan.scaler_device and not ('"' in plan.device and '"' in plan.scaler_device):
                return None, (f"autocast would use {plan.device} and the GradScaler {plan.scaler_device}: "
                              "they must agree; name one device variable in both places")
        if self.remove_casts:
            plan.casts = self._casts()
            reason = self._plan_enabled(plan) or self._removable(plan)
            if reason:
                return None, reason
        return plan, ""

    def _removable(self, plan: Plan) -> str:
        """Why the casts cannot all be undone ("" when they can): a GradScaler over parameters left
        half raises. Every half origin of the trained parameters must be one of the casts removed,
        and parameters of a dtype the analysis cannot see are not presumed float32. Each cast names
        its dtype so that the edit can drop exactly that argument: a half dtype literal
        (``.to(torch.float16)``, ``torch_dtype=torch.bfloat16``), the flag's conditional expression,
        or a variable the analysis saw hold only half dtypes. A dtype variable that may be float32
        on some runs (``.to(dtype)``, ``torch_dtype=weight_dtype``) is not removed: dropping it would
        train under AMP whatever chose it, and keeping it would leave half parameters."""
        removed = {node_key(self.ctx.module.relpath, cast) for cast in plan.casts}
        by_helper: Set[Tuple[str, int, int, int, int]] = set()
        for optimizer in self.step.optimizers():
            params = optimizer.get("params") or Scalar("other")
            dtypes, unknown, _ = param_dtypes(params)
            origins = param_origins(params)
            by_helper.update(o.key for o in origins if o.kind == "helper_cast")
            if not origins and (unknown or not dtypes or dtypes & HALF):
                # e.g. inputs cast with .half() for a model the analysis cannot see
                return ("the dtype of the parameters this optimizer trains is not known here; if they are half, "
                        "a GradScaler over them raises: keep them in float32, then migrate")
            for origin in origins:
                if origin.key not in removed:  # a GradScaler over parameters left half raises
                    return (f"the parameters are made half by {origin.describe()}, which this fix cannot remove; "
                            "keep the model in float32 there by hand")
        for cast in plan.casts:
            func = cast.func
            if isinstance(func, ast.Attribute) and func.attr in trainingdata.HALF_METHODS:
                continue
            if node_key(self.ctx.module.relpath, cast) in by_helper:
                return (f"the model is cast inside `{self.ctx.segment(func, 40)}`; keep it in float32 there by hand, "
                        "then migrate")
            arguments = sorted(list(cast.args) + list(cast.keywords), key=lambda a: (a.lineno, a.col_offset))
            drop: Set[int] = set()
            for index, argument in enumerate(arguments):
                value = argument.value if isinstance(argument, ast.keyword) else argument
                if isinstance(argument, ast.keyword):
                    names_dtype = argument.arg in (("dtype",) if isinstance(func, ast.Attribute) and func.attr == "to"
                                                   else ("torch_dtype", "dtype"))
                else:
                    names_dtype = isinstance(func, ast.Attribute) and func.attr == "to" and (
                        _is_half_literal(value) or self._holds_dtype(value) is not None)
                if not names_dtype:
                    continue
                if not (_is_half_literal(value) or self._holds_dtype(value) == "half" or (
                        isinstance(value, ast.IfExp) and plan.enabled is not None
                        and self.ctx.segment(value.test, 10 ** 6) == plan.enabled)):
                    return (f"the cast takes its dtype from `{self.ctx.segment(value, 40)}`, which may be float32 on "
                            "some runs; keep the model in float32 by hand (with `enabled=` on autocast and scaler "
                            "if a flag chooses that dtype)")
                drop.add(index)
            if not drop:
                return f"cannot tell which argument of `{self.ctx.segment(cast, 40)}` is its half dtype"
            plan.drop[id(cast)] = drop
        return ""

    def _holds_dtype(self, node: ast.AST) -> Optional[str]:
        """What the analysis saw ``node`` hold: ``"half"`` (only half ``torch.dtype``s, every time it ran),
        ``"dtype"`` (a dtype that may be another), None (no dtype: a device, a tensor)."""
        seen: List[Value] = [o for obs in self.model.observations(node) for o in options(obs.value(node))]
        if not any(isinstance(o, DType) for o in seen):
            return None
        half = all(isinstance(o, DType) and not o.unknown and o.dtypes and not o.dtypes & ~HALF for o in seen)
        return "half" if half else "dtype"

    def _plan_enabled(self, plan: Plan) -> str:
        """Autocast and scaler take ``enabled=<test>`` when the removed casts held only under one test
        (``if args.fp16: model.half()``, or a dtype the rule read as ``float16 if args.fp16 else
        None``), so the flag still chooses: off, the script trains in fp32 as before. The test must be
        code that reads the same value at the casts, the autocast and the scaler: one scope, no
        calls, its names not rebound from the first cast on."""
        given: Dict[int, str] = {}
        if self.enabled is not None:  # the rule's evidence condition: used only as the file writes it
            source = self.ctx.module.source or ""
            given[id(self.enabled[1])] = self.enabled[0] if self.enabled[0] in source else "..."
        casts = list(plan.casts) + [c for c in ([self.enabled[1]] if self.enabled else []) if c not in plan.casts]
        guards = [self._guard_of(cast) or given.get(id(cast)) for cast in casts]
        texts = {text for text in guards if text is not None}
        if not texts:
            return ""
        if "..." in texts:
            return ("a half cast is made on a path that one `enabled=` test cannot express (an `else` branch, "
                    "nested tests, a conditional expression); migrate by hand")
        condition = min(texts)
        why = (f"the half cast holds only when `{condition}`; add `enabled={condition}` to the autocast and the "
               "GradScaler by hand")
        try:
            tests = {ast.dump(ast.parse(text, mode="eval").body) for text in texts}
        except SyntaxError:
            return why
        if len(tests) > 1 or None in guards:
            return "the half casts are made under different tests; migrate by hand with `enabled=` on autocast and scaler"
        test = ast.parse(condition, mode="eval").body
        if any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield)) for n in ast.walk(test)):
            return why
        function = self.step.function
        anchors = casts + [first for first, _ in plan.wrap]
        if plan.scaler:
            if plan.thread is not None or plan.scaler_in_init or plan.scaler_place is None:
                return why
            anchors.append(plan.scaler_place[1])
        if any(self._function_of(anchor) is not function for anchor in anchors):
            return why
        names, line = _names_read(test), min(getattr(cast, "lineno", 0) for cast in casts)
        for node in walk_scope(function or self.tree):
            if isinstance(node, ast.stmt) and not isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)) \
                    and node.lineno >= line and _names_stored(node) & names:
                return why
        plan.enabled = condition
        return ""

    def _ancestors(self, node: ast.AST) -> Iterator[Tuple[ast.AST, ast.AST]]:
        """(ancestor, its child on the way to ``node``), innermost first, from a parent map of the file."""
        if not hasattr(self, "_parents"):
            self._parents = {id(child): parent for parent in ast.walk(self.tree)
                             for child in ast.iter_child_nodes(parent)}
        child, parent = node, self._parents.get(id(node))
        while parent is not None:
            yield parent, child
            child, parent = parent, self._parents.get(id(parent))

    def _guard_of(self, cast: ast.AST) -> Optional[str]:
        """The test of the one ``if`` whose body holds ``cast`` in its function (None: unconditional;
        ``"..."``: on some other kind of path, an ``else``, nested tests, a conditional expression)."""
        guard: Optional[str] = None
        for node, child in self._ancestors(cast):
            if isinstance(node, (*FUNCTIONS, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(node, (ast.If, ast.IfExp, ast.BoolOp)) or type(node).__name__ == "Match":
                if guard is not None or not isinstance(node, ast.If) or child not in node.body:
                    return "..."
                guard = self.ctx.segment(node.test, 10 ** 6)
                try:  # the text joins lines and spaces: inside a string literal that would change the test
                    if ast.dump(ast.parse(guard, mode="eval").body) != ast.dump(node.test):
                        return "..."
                except SyntaxError:
                    return "..."
        return guard

    def _function_of(self, node: ast.AST) -> Optional[ast.AST]:
        """The innermost function whose body holds ``node`` (None: module level)."""
        return next((a for a, _ in self._ancestors(node) if isinstance(a, FUNCTIONS)), None)

    def _banned(self) -> str:
        """CUDA autocast raises on BCELoss; migrating would crash the script on a GPU."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                for obs in self.model.observations(node):
                    for option in options(obs.value(node.func)):
                        qualified = option.name if isinstance(option, Ext) else (
                            option.cls.name if isinstance(option, Module) and isinstance(option.cls, Ext) else None)
                        if qualified in trainingdata.AUTOCAST_BANNED:
                            return (f"`{qualified}` raises under CUDA autocast; use "
                                    "`binary_cross_entropy_with_logits` / `nn.BCEWithLogitsLoss` on the logits first")
        return ""

    def _cpu_unsupported(self, device: str) -> str:
        if self.dtype != "float16" or device == '"cuda"':
            return ""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                for obs in self.model.observations(node):
                    for option in options(obs.value(node)):
                        if isinstance(option, Module) and isinstance(option.cls, Ext) \
                                and option.cls.name in trainingdata.CPU_FP16_AUTOCAST_TRAINING_UNSUPPORTED:
                            return (f"`{option.cls.name}` has no float16 training kernel under CPU autocast, and this "
                                    f"script can run on the CPU; use `torch.autocast(..., enabled={device} == "
                                    '"cuda")` or bfloat16 there')
        return ""

    def _scope_of(self, ancestors: Sequence[ast.AST]) -> ast.AST:
        for node in reversed(ancestors):
            if isinstance(node, (*FUNCTIONS, ast.Lambda)):
                return node
        return self.tree

    # -- the autocast ranges -----------------------------------------------------------------------------
    def _plan_ranges(self, plan: Plan) -> str:
        step = self.step
        if not self.remove_casts and not self.apex and (step.in_autocast or
                                                        self.model.autocast_inside(step.container)):
            return ""  # the forward already runs under autocast
        if step.graph & HALF and not self.remove_casts and not self.apex:
            return ""  # already mixed precision
        for backward in step.backwards:
            stmt = _statement(backward.ancestors)
            if step.apex_with is not None and backward is step.backward:
                stmt = step.apex_with
            elif not (isinstance(stmt, ast.Expr) and stmt.value is backward.node):
                return "the backward is not a statement of its own"
            found = _block_of(self.tree, stmt)  # type: ignore[arg-type]
            if found is None:
                return "cannot find the block around `.backward()`"
            body, index = found
            loss = step.loss if backward is step.backward else (backward.receiver or step.loss)
            if isinstance(loss, ast.Call) and loss.args and isinstance(loss.func, ast.Attribute) \
                    and loss.func.attr == "scale":
                loss = loss.args[0]
            needed = _names_read(loss)
            contributing: List[int] = []
            for j in range(index - 1, -1, -1):
                candidate = body[j]
                if not isinstance(candidate, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
                    if _names_stored(candidate) & needed:
                        break  # a branch or loop changes what the loss reads: not a straight line
                    continue  # logging, a finiteness check: stays outside the autocast region
                if _names_assigned(candidate) & needed:
                    contributing.append(j)
                    value = getattr(candidate, "value", None)
                    if value is not None:
                        needed |= _names_read(value)
                    if isinstance(candidate, ast.AugAssign):
                        needed |= _names_read(candidate.target)
            if not contributing:
                if self._has_forward(loss):
                    continue  # ``model(x).sum().backward()``: nothing to wrap but the backward itself
                return "the loss is not computed in the statements right before `.backward()`"
            forward = [j for j in sorted(contributing) if self._has_forward(body[j])]
            if not forward:
                return ("the model's forward is not among the statements that compute the loss; autocast would "
                        "wrap only the loss arithmetic")
            first, last = body[forward[0]], body[max(contributing)]
            if any(first is a or last is b for a, b in plan.wrap):
                continue
            plan.wrap.append((first, last))
        return ""

    def _has_forward(self, node: ast.AST) -> bool:
        """A call of a module (not a loss module), or of a function given a module; a trained model
        counts whatever the analysis knows of its value."""
        trained = self.trained
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call):
                continue
            func_text = ast.unparse(sub.func) if isinstance(sub.func, (ast.Name, ast.Attribute)) else ""
            if func_text in trained or any(isinstance(a, (ast.Name, ast.Attribute)) and ast.unparse(a) in trained
                                           for a in sub.args):
                return True
            for obs in self.model.observations(sub):
                for option in options(obs.value(sub.func)):
                    if isinstance(option, Module) and not _is_loss_module(option):
                        return True
                    if isinstance(option, FuncVal) and isinstance(option.bound, Module) \
                            and option.info.name == "forward":
                        return True
                for arg in list(sub.args) + [k.value for k in sub.keywords]:
                    if any(isinstance(o, Module) and not _is_loss_module(o) for o in options(obs.value(arg))):
                        return True
        return False

    # -- the scaler ----------------------------------------------------------------------------------
    def _plan_scaler(self, plan: Plan) -> str:
        step = self.step
        plan.scaler_name = self._fresh_name()
        optimizers = [e for e in step.steps]
        plan.sharded = self._fsdp()
        opt_event = optimizers[0] if optimizers else None
        definition = self._optimizer_definition(opt_event) if opt_event is not None else None
        loop_function = step.function
        outer_loop = self._outer_loop()
        if definition is not None:
            def_stmt, def_function = definition
            if def_function is loop_function and outer_loop is not None and _dominates(self.tree, def_stmt, outer_loop):
                plan.scaler_place = ("after", def_stmt)
                plan.scaler_device = self._device(def_function or self.tree) or plan.device
                return ""
            if def_function is None and not isinstance(def_stmt, ast.ClassDef) and self._module_level(def_stmt):
                plan.scaler_place = ("after", def_stmt)  # a module-level optimizer: a scaler beside it
                plan.scaler_device = self._device(self.tree) or plan.device
                return ""
            if self._self_attribute(opt_event) and def_function is not None and def_function.name == "__init__":
                plan.scaler_place = ("after", def_stmt)
                plan.scaler_in_init = True
                plan.scaler_name = "self." + plan.scaler_name
                plan.scaler_device = self._device(def_function) or plan.device
                return ""
            if loop_function is not None and def_function is not None and def_function is not loop_function:
                site = self._single_call(loop_function, def_function)
                if site is not None and _dominates(self.tree, def_stmt, _statement_of_call(self.tree, site)):
                    plan.scaler_place = ("after", def_stmt)
                    plan.thread = (loop_function, site)
                    plan.scaler_device = self._device(def_function) or plan.device
                    return ""
        if outer_loop is not None:
            plan.scaler_place = ("before", outer_loop)
            plan.scaler_device = plan.device
            return ""
        return ("the GradScaler must live across steps: create it next to the optimizer and route "
                "backward/step through it")

    def _fresh_name(self) -> str:
        """A name for the scaler that no identifier of the module uses (comments and strings may)."""
        used: Set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.arg):
                used.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                used.add(node.name)
            elif isinstance(node, ast.alias):
                used.add((node.asname or node.name).split(".")[0])
        for name in ("scaler", "grad_scaler", "amp_scaler"):
            if name not in used:
                return name
        return "amp_grad_scaler"

    def _fsdp(self) -> bool:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                for obs in self.model.observations(node):
                    for option in options(obs.value(node.func)):
                        if isinstance(option, Ext) and "FullyShardedDataParallel" in option.name:
                            return True
        return False

    def _outer_loop(self) -> Optional[ast.AST]:
        """The outermost loop around the backward within its function."""
        outer = None
        for node in self.step.backward.ancestors:
            if isinstance(node, FUNCTIONS):
                outer = None
            elif isinstance(node, LOOPS):
                outer = node if outer is None else outer
        return outer

    def _optimizer_definition(self, event) -> Optional[Tuple[ast.stmt, Optional[ast.AST]]]:
        """(the statement creating the stepped optimizer in this file, its function)."""
        sites: Set[str] = set()
        for value in event.values(event.receiver):
            for option in options(value):
                if isinstance(option, Obj) and option.kind == "optimizer":
                    site = option.get("site")
                    if isinstance(site, Scalar) and isinstance(site.value, str):
                        sites.add(site.value)
        if not sites:
            return self._optimizer_binding(event)
        if len(sites) != 1:
            return None
        site = sites.pop()
        if site.rsplit(":", 4)[0] != self.ctx.module.relpath:
            return self._optimizer_binding(event)
        stack: List[ast.AST] = []

        def visit(node: ast.AST) -> Optional[Tuple[ast.stmt, Optional[ast.AST]]]:
            stack.append(node)
            if isinstance(node, ast.Call) and ":".join(map(str, node_key(self.ctx.module.relpath, node))) == site:
                stmt = _statement(stack)
                function = next((n for n in reversed(stack) if isinstance(n, FUNCTIONS)), None)
                stack.pop()
                return (stmt, function) if stmt is not None else None
            for child in ast.iter_child_nodes(node):
                found = visit(child)
                if found is not None:
                    return found
            stack.pop()
            return None

        return visit(self.tree)

    def _optimizer_binding(self, event) -> Optional[Tuple[ast.stmt, Optional[ast.AST]]]:
        """The statement of this file that binds the stepped optimizer built elsewhere
        (``optimizer = build_optimizer(model)``), in the loop's function."""
        if not isinstance(event.receiver, ast.Name):
            return None
        name = event.receiver.id
        function = self.step.function
        scope = function if function is not None else self.tree
        found: Optional[ast.stmt] = None
        for node in walk_scope(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                if found is not None:
                    return None  # bound twice: no single place
                found = node
        return (found, function) if found is not None else None

    def _module_level(self, stmt: ast.stmt) -> bool:
        """At the top of the module, or of its ``if __name__ == "__main__":`` block: it runs on every
        path (an optimizer under ``if args.use_optimizer:`` does not)."""
        return any(s is stmt for s in self.tree.body) or any(
            isinstance(s, ast.If) and is_main_guard(s.test) and any(b is stmt for b in s.body)
            for s in self.tree.body)

    @staticmethod
    def _self_attribute(event) -> bool:
        receiver = event.receiver
        return isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
            and receiver.value.id == "self"

    def _single_call(self, function: ast.AST, caller: ast.AST) -> Optional[ast.Call]:
        """The one call of ``function`` in the file, when it is in ``caller`` and simple enough to extend."""
        name = function.name  # type: ignore[attr-defined]
        calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == name]
        inside = [c for c in calls if any(c is n for n in ast.walk(caller))]
        spec = function.args  # type: ignore[attr-defined]
        if len(calls) != 1 or len(inside) != 1 or spec.vararg or spec.kwarg or spec.kwonlyargs or spec.defaults:
            return None
        if any(isinstance(a, ast.Starred) for a in inside[0].args) or any(k.arg is None for k in inside[0].keywords):
            return None
        return inside[0]

    # -- devices -------------------------------------------------------------------------------------
    def _device(self, scope: ast.AST) -> Optional[str]:
        """The device type as an expression valid in ``scope``, from where tensors and the model go."""
        torch = self._torch()
        names: List[str] = []
        cuda = False
        for node in walk_scope(scope):
            exprs: List[ast.AST] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "to":
                    exprs.extend(node.args[:1])
                    exprs.extend(k.value for k in node.keywords if k.arg == "device")
                elif node.func.attr == "cuda":
                    cuda = True
            if isinstance(node, ast.keyword) and node.arg == "device":
                exprs.append(node.value)
            for expr in exprs:
                for obs in self.model.observations(expr):
                    value = obs.value(expr)
                    if isinstance(expr, ast.Name):
                        if any(isinstance(o, Obj) and o.kind == "device" for o in options(value)):
                            names.append(f"{expr.id}.type")
                        elif any(isinstance(o, Scalar) and o.kind == "str" for o in options(value)):
                            known = {o.value for o in options(value) if isinstance(o, Scalar)}
                            if known in ({"cuda"}, {"cpu"}):
                                names.append(f'"{known.pop()}"')
                            else:
                                names.append(f"{torch}.device({expr.id}).type")
                    elif isinstance(expr, ast.Constant) and isinstance(expr.value, str):
                        names.append(f'"{expr.value.split(":")[0]}"')
                    elif isinstance(expr, ast.Attribute) and any(isinstance(o, Obj) and o.kind == "device"
                                                                 for o in options(value)):
                        names.append(f"{ast.unparse(expr)}.type")
        if names:
            return max(set(names), key=names.count)
        if cuda:
            return '"cuda"'
        return None

    def _default_device(self) -> str:
        return f'"{self.ctx.settings.device}"'

    def _torch(self) -> str:
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "torch":
                        return alias.asname or "torch"
        return "torch"

    # -- casts ----------------------------------------------------------------------------------------
    def _casts(self) -> List[ast.Call]:
        """The half casts this migration removes: of the trained module (this file), and of tensors in the loop."""
        origins: Set[Tuple[str, int, int, int, int]] = set()
        for optimizer in self.step.optimizers():
            origins.update(origin.key for origin in param_origins(optimizer.get("params") or Scalar("other")))
        out: List[ast.Call] = []
        container = self.step.container or self.tree
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            if node_key(self.ctx.module.relpath, node) in origins:
                out.append(node)
                continue
            if any(node is n for n in ast.walk(container)) and _is_tensor_half_cast(node):
                out.append(node)
        return out

    # -- building --------------------------------------------------------------------------------------
    def fix_plan(self, title: str, applicability: Applicability = Applicability.UNSAFE) -> Tuple[Optional[FixPlan], str]:
        plan, reason = self.plan()
        if plan is None:
            return None, reason
        return FixPlan(title, applicability, lambda fctx: _Builder(self, plan, fctx).build(title, applicability)), ""


def _within_body(node: ast.If, ancestors: Sequence[ast.AST]) -> bool:
    return any(any(s is a for s in node.body) for a in ancestors)


def _is_loss_module(module: Module) -> bool:
    cls = module.cls
    return isinstance(cls, Ext) and cls.name.endswith("Loss")


def _is_tensor_half_cast(node: ast.Call) -> bool:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("half", "bfloat16") and not node.args:
        return True
    if func.attr == "to":
        for arg in list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]:
            if isinstance(arg, ast.Attribute) and arg.attr in trainingdata.HALF_DTYPES:
                return True
    return False


def _statement_of_call(tree: ast.AST, call: ast.Call) -> ast.AST:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            for stmt in getattr(node, name, None) or ():
                if isinstance(stmt, ast.stmt) and not isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try,
                                                                     ast.FunctionDef, ast.ClassDef)):
                    if any(n is call for n in ast.walk(stmt)):
                        return stmt
    return call


def _dominates(tree: ast.AST, first: ast.AST, later: ast.AST) -> bool:
    """``first`` (a statement) runs on every path to ``later``: its block contains ``later`` after it."""
    found = _block_of(tree, first)  # type: ignore[arg-type]
    if found is None:
        return False
    body, index = found
    for stmt in body[index + 1:]:
        if stmt is later or any(n is later for n in ast.walk(stmt)):
            return True
    return False


# -- CST side ----------------------------------------------------------------------------------------
def parse_statement(text: str, like: Optional[cst.CSTNode] = None) -> cst.BaseStatement:
    stmt = cst.parse_statement(text + "\n")
    if like is not None and hasattr(like, "leading_lines"):
        stmt = stmt.with_changes(leading_lines=like.leading_lines)
    return stmt


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
                inner = []
                for j in range(i, end + 1):  # wrapped statements keep their own replacements
                    rep = next((p for o, p in ops.get(j, []) if o == "replace"), None)
                    inner.extend(rep(body[j]) if rep is not None else [body[j]])  # type: ignore[operator]
                out.append(make(inner))
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


class _Builder:
    """Turns a :class:`Plan` into one :class:`CstFix` against the file's LibCST tree."""

    def __init__(self, migration: Migration, plan: Plan, fctx: FixContext) -> None:
        self.m = migration
        self.plan = plan
        self.fctx = fctx
        self.edits = BlockEdits()
        self.imports: List[str] = []
        self.fix: Optional[CstFix] = None

    def ref(self, qualified: str) -> str:
        text, module = self.fctx.reference(qualified)
        if module:
            self.imports.append(module)
        return text

    def locate(self, stmt: ast.AST) -> Tuple[cst.CSTNode, Block, int]:
        """The CST statement for an ``ast`` statement, its block and index."""
        node = self.fctx.node(stmt)
        if node is None:
            raise ValueError("no CST node for a statement")
        line = self.fctx.statement(node) if not isinstance(node, cst.BaseCompoundStatement) else node
        if line is None:
            raise ValueError("no CST statement")
        block = self.fctx.parent(line)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            raise ValueError("statement outside a block")
        for index, item in enumerate(block.body):
            if item is line:
                return line, block, index
        raise ValueError("statement not in its block")

    def build(self, title: str, applicability: Applicability) -> Optional[CstFix]:
        fix = CstFix(title, applicability)
        self.fix = fix
        plan, step = self.plan, self.plan.step
        for first, last in plan.wrap:
            self._wrap(first, last)
        if plan.scaler:
            self._create_scaler()
            self._route()
        elif step.apex_with is not None:
            _, block, index = self.locate(step.apex_with)
            loss = self.fctx.code(self.fctx.node(step.loss))  # type: ignore[arg-type]
            self.edits.replace(block, index, lambda s: [parse_statement(f"{loss}.backward()", s)])
        for cast in plan.casts:
            self._remove_cast(cast)
        if self.m.apex:
            self._remove_apex()
        self.edits.apply_to(fix)
        fix.add_imports = tuple(dict.fromkeys(self.imports))
        return fix

    def _wrap(self, first: ast.stmt, last: ast.stmt) -> None:
        _, block, start = self.locate(first)
        _, block_end, end = self.locate(last)
        if block_end is not block:
            raise ValueError("the range crosses blocks")
        enabled = f", enabled={self.plan.enabled_code()}" if self.plan.enabled else ""
        header = (f"with {self.ref('torch.autocast')}(device_type={self.plan.device}, "
                  f"dtype={self.ref('torch.' + self.plan.dtype)}{enabled}):\n    pass\n")
        template = cst.parse_statement(header)
        assert isinstance(template, cst.With)

        def make(stmts: List[cst.BaseStatement]) -> cst.BaseStatement:
            head = stmts[0]
            inner = [head.with_changes(leading_lines=())] + list(stmts[1:])
            return template.with_changes(body=template.body.with_changes(body=inner), leading_lines=head.leading_lines)

        self.edits.wrap(block, start, end, make)

    def _create_scaler(self) -> None:
        plan = self.plan
        assert plan.scaler_place is not None
        where, anchor = plan.scaler_place
        cls = "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler" if plan.sharded else "torch.amp.GradScaler"
        device = plan.scaler_device
        args = "" if plan.sharded else device
        if plan.enabled:
            args += f"{', ' if args else ''}enabled={plan.enabled_code()}"
        new = parse_statement(f"{plan.scaler_name} = {self.ref(cls)}({args})")
        _, block, index = self.locate(anchor)
        if where == "after":
            self.edits.insert_after(block, index, [new])
        else:
            self.edits.insert_before(block, index, [new])
        if plan.thread is not None:
            self._thread(*plan.thread)

    def _thread(self, function: ast.AST, site: ast.Call) -> None:
        """Add the scaler as the last parameter of the loop function and pass it at its call."""
        assert self.fix is not None
        name = self.plan.scaler_name
        fdef = self.fctx.node(function)
        call = self.fctx.node(site)
        if not isinstance(fdef, cst.FunctionDef) or not isinstance(call, cst.Call):
            raise ValueError("cannot thread the scaler")
        params = fdef.params

        def add_param(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Parameters)
            items = list(updated.params)
            if items and items[-1].comma is cst.MaybeSentinel.DEFAULT:
                items[-1] = items[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated.with_changes(params=items + [cst.Param(cst.Name(name))])

        keyword = any(a.keyword is not None for a in call.args)

        def add_arg(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            args = list(updated.args)
            if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new = cst.Arg(cst.Name(name), keyword=cst.Name(name) if keyword else None,
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
                          if keyword else cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=args + [new])

        self.fix.replace(params, add_param)
        self.fix.replace(call, add_arg)

    def _route(self) -> None:
        plan, step = self.plan, self.plan.step
        scaler = plan.scaler_name
        for backward in step.backwards:
            if backward is step.backward and step.apex_with is not None:
                _, block, index = self.locate(step.apex_with)
                loss = self.fctx.code(self.fctx.node(step.loss))  # type: ignore[arg-type]
                self.edits.replace(block, index, lambda s, loss=loss: [
                    parse_statement(f"{scaler}.scale({loss}).backward()", s)])
                continue
            receiver = backward.receiver
            loss_node = self.fctx.node(receiver) if receiver is not None else None
            call = self.fctx.node(backward.node)
            if loss_node is None or not isinstance(call, cst.Call):
                raise ValueError("cannot route the backward")
            args = ", ".join(self.fctx.code(a).rstrip(", ") for a in call.args)
            if isinstance(loss_node, cst.BaseExpression) and loss_node.lpar:  # ``(loss / n).backward()``
                loss_node = loss_node.with_changes(lpar=[], rpar=[])
            new_call = cst.parse_expression(f"{scaler}.scale({self.fctx.code(loss_node)}).backward({args})")
            _, block, index = self.locate(_statement(backward.ancestors))  # type: ignore[arg-type]

            def make(stmt: cst.CSTNode, new_call: cst.BaseExpression = new_call) -> List[cst.BaseStatement]:
                assert isinstance(stmt, cst.SimpleStatementLine)
                return [stmt.with_changes(body=[stmt.body[0].with_changes(value=new_call)])]

            self.edits.replace(block, index, make)
        optimizers = [self.fctx.code(self.fctx.node(e.receiver)) for e in step.steps]  # type: ignore[arg-type]
        for clip in step.clips:
            _, block, index = self.locate(_statement(clip.ancestors))  # type: ignore[arg-type]
            if not self.edits.has(block, index, "before"):
                self.edits.insert_before(block, index, [parse_statement(f"{scaler}.unscale_({o})")
                                                        for o in dict.fromkeys(optimizers)])
        ordered = sorted(step.steps, key=lambda e: e.position)
        for position, event in enumerate(ordered):
            _, block, index = self.locate(_statement(event.ancestors))  # type: ignore[arg-type]
            opt = self.fctx.code(self.fctx.node(event.receiver))  # type: ignore[arg-type]
            last = position == len(ordered) - 1

            def make(stmt: cst.CSTNode, opt: str = opt, last: bool = last) -> List[cst.BaseStatement]:
                assert isinstance(stmt, cst.SimpleStatementLine)
                first = stmt.with_changes(body=[stmt.body[0].with_changes(
                    value=cst.parse_expression(f"{scaler}.step({opt})"))])
                return [first] + ([parse_statement(f"{scaler}.update()")] if last else [])

            self.edits.replace(block, index, make)

    def _remove_cast(self, cast: ast.Call) -> None:
        assert self.fix is not None
        node = self.fctx.node(cast)
        if not isinstance(node, cst.Call):
            raise ValueError("cannot find the cast")
        line = self.fctx.statement(node)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            small = line.body[0]
            whole = isinstance(small, cst.Expr) and small.value is node
            if isinstance(small, cst.Assign) and small.value is node and len(small.targets) == 1:
                target, inner = small.targets[0].target, node.func
                whole = isinstance(inner, cst.Attribute) and isinstance(target, cst.Name) \
                    and isinstance(inner.value, cst.Name) and inner.value.value == target.value
            if whole:
                block = self.fctx.parent(line)
                if isinstance(block, (cst.IndentedBlock, cst.Module)):
                    owner = self.fctx.parent(block)
                    if isinstance(block, cst.IndentedBlock) and len(block.body) == 1 and isinstance(owner, cst.If) \
                            and self._bare_flag_test(owner):
                        line, block = owner, self.fctx.parent(owner)  # ``if args.fp16: model.half()``: all of it
                    if isinstance(block, (cst.IndentedBlock, cst.Module)):
                        index = [i for i, s in enumerate(block.body) if s is line][0]
                        self.edits.replace(block, index, lambda s: [])
                        return
        drop = self.plan.drop.get(id(cast), set())
        self.fix.replace(node, lambda updated: _uncast(updated, drop))

    def _bare_flag_test(self, stmt: cst.If) -> bool:
        """An ``if`` with no ``else``, no comment, and a test without calls: it only guarded the cast,
        and goes with it (the autocast and scaler take the test as ``enabled=``)."""
        if stmt.orelse is not None or "#" in self.fctx.code(stmt) or self.plan.enabled is None:
            return False
        try:
            test = ast.parse(self.fctx.code(stmt.test).strip(), mode="eval").body
            return ast.dump(test) == ast.dump(ast.parse(self.plan.enabled, mode="eval").body)
        except SyntaxError:
            return False

    def _remove_apex(self) -> None:
        assert self.fix is not None
        tree = self.m.tree
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _apex_name(self.m.model, node)
            if name == "apex.amp.initialize":
                stmt = _statement_of_call(tree, node)
                _, block, index = self.locate(stmt)
                if not self.edits.has(block, index, "replace"):
                    self.edits.replace(block, index, lambda s: [])
            elif name == "apex.amp.master_params" and len(node.args) == 1:
                models = [m for m in self._trained_models()]
                if len(models) != 1:
                    raise ValueError("cannot tell which model `amp.master_params` refers to")
                target = self.fctx.node(node)
                if target is None:
                    raise ValueError("no CST node")
                self.fix.replace(target, cst.parse_expression(f"{models[0]}.parameters()"))
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in stmt.names]
                module = stmt.module if isinstance(stmt, ast.ImportFrom) else None
                if (module == "apex" and set(names) <= {"amp"}) or (isinstance(stmt, ast.Import) and
                                                                 all(n == "apex" or n.startswith("apex.amp")
                                                                     for n in names)) or (module or "").startswith("apex.amp"):
                    _, block, index = self.locate(stmt)
                    self.edits.replace(block, index, lambda s: [])

    def _trained_models(self) -> List[str]:
        out: List[str] = []
        for node in ast.walk(self.m.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "parameters" and isinstance(node.func.value, ast.Name):
                if node.func.value.id not in out:
                    out.append(node.func.value.id)
        return out


def _apex_name(model: TrainingModel, node: ast.Call) -> Optional[str]:
    for obs in model.observations(node):
        for option in options(obs.value(node.func)):
            if isinstance(option, Ext) and option.name.startswith("apex."):
                return option.name
    return None


def _uncast(updated: cst.CSTNode, drop: Set[int]) -> cst.CSTNode:
    """The cast without its cast: ``x.half()`` -> ``x``; otherwise the call without the arguments at
    the ``drop`` indices (its dtype), and ``x.to(dtype)`` with nothing left -> ``x``."""
    assert isinstance(updated, cst.Call)
    name = updated.func.attr.value if isinstance(updated.func, cst.Attribute) else ""
    if name in trainingdata.HALF_METHODS:
        return updated.func.value  # type: ignore[attr-defined]
    keep = [a for i, a in enumerate(updated.args) if i not in drop]
    if not keep and name == "to":
        return updated.func.value  # type: ignore[attr-defined]
    if keep:
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return updated.with_changes(args=keep)
