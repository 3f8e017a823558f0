"""What rules may ask of the analysis, and the evidence behind each answer.

A rule looks at a node of the file's ``ast`` and asks for its :class:`Observation` s: one per
analysis context in which the node ran (a calling context of its function, a branch of a forked
autocast region). An observation gives the value of any expression evaluated in that context, the
autocast state there, and the evidence for a half dtype: where it came from (a cast, an autocast
region, an explicit dtype, a ``from_pretrained(torch_dtype=...)``) and the call path that carried it
to this node. Rules decide per observation, so operands are always judged together, in one context.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Collection, Dict, Iterator, List, Optional, Set, Tuple

from amp_lint.data import ops as optable
from amp_lint.semantics.interpreter import Interpreter, Record, State, condition_texts, conditions_exclusive
from amp_lint.semantics.program import SourceModule
from amp_lint.semantics.values import (
    BF16, HALF, UNKNOWN, DType, Ext, Module, Obj, Origin, Scalar, Tensor, Value, apex_o1_only, dtype_label,
    module_casts, options, tensor_casts,
)

CUDA, CPU, APEX = "cuda", "cpu", "apex"
_NONE: List["Observation"] = []


@dataclass(frozen=True)
class Evidence:
    """One step of the chain that makes a value half: ``message`` at ``path:line``."""

    path: str
    line: int
    message: str


class Observation:
    """One context in which a node ran."""

    __slots__ = ("record", "facts")

    def __init__(self, record: Record, facts: Optional["Facts"] = None) -> None:
        self.record = record
        self.facts = facts

    def value(self, node: Optional[ast.AST]) -> Value:
        if node is None:
            return UNKNOWN
        return self.record.values.get(id(node), UNKNOWN)

    @property
    def state(self) -> State:
        return self.record.state

    @property
    def autocast(self) -> bool:
        return self.record.state is not None

    @property
    def cuda_autocast(self) -> bool:
        """Under CUDA autocast (or apex O1, whose fp32 lists are a superset for our ops)."""
        state = self.record.state
        return state is not None and state[0] in (CUDA, APEX)

    def state_excluded_for(self, value: Optional[Value]) -> bool:
        """Whether ``value`` is half in a run where this context's autocast state is not in force
        (:meth:`unprotected_origin`)."""
        return self.unprotected_origin(value) is not None

    def unprotected_origin(self, value: Optional[Value]) -> Optional[Origin]:
        """Half evidence of ``value`` from a run where this context's autocast state is not in
        force: the state holds under a condition (apex O1 set up ``when use_amp == "apex"``) that
        this evidence excludes (an autocast region ``when use_amp == "native"`` made the value).
        In that run no region or patch protects the value."""
        origin = self.record.autocast_origin
        if value is None or self.record.state is None or origin is None or not origin.condition:
            return None
        for option in options(value):
            for other in tensor_casts(option) if isinstance(option, Tensor) else ():
                if other.condition and self._exclusive(origin.condition, other.condition):
                    return other
        return None

    def _exclusive(self, left: str, right: str) -> bool:
        if self.facts is not None:
            return self.facts.interpreter.exclusive(left, right)
        return conditions_exclusive(left, right)

    def protected(self, value: Optional[Value]) -> bool:
        """Under autocast (any device) in every run where ``value`` is half: :attr:`autocast`, unless
        :meth:`state_excluded_for` the value."""
        return self.autocast and not self.state_excluded_for(value)

    def fp32_lists_for(self, tensor: Optional[Tensor]) -> bool:
        """Whether the ops autocast keeps in float32 run so on ``tensor`` here: under CUDA autocast
        or apex O1 (:attr:`cuda_autocast`, not :meth:`state_excluded_for` the tensor), or, outside
        any region, on a tensor whose half evidence is all an apex-O1 model's (apex patched torch's
        functions for the whole process)."""
        if self.cuda_autocast:
            return not self.state_excluded_for(tensor)
        return self.record.state is None and tensor is not None and apex_o1_only((tensor,))

    def keeps_in_fp32(self, op: str, tensor: Optional[Tensor], functional: bool = True) -> bool:
        """Whether the fp32 lists in force on ``tensor`` here (:meth:`fp32_lists_for`) run ``op`` in
        float32: apex O1's where apex's patches are the ones in force (its state, or an apex-O1
        model's tensor outside any region), else CUDA autocast's (``data/ops.py``). ``functional``:
        ``op`` is called through ``torch.nn.functional`` or a module (apex patched some ops only there)."""
        if not self.fp32_lists_for(tensor):
            return False
        state = self.record.state
        device = APEX if state is None or state[0] == APEX else CUDA
        return optable.policy_in(op, device, functional) == optable.FP32

    @property
    def cpu_autocast(self) -> bool:
        state = self.record.state
        return state is not None and state[0] == CPU

    @property
    def context_free(self) -> bool:
        return self.record.context_free

    @property
    def entry_path(self) -> str:
        """The file whose code started this context: the outermost call site, else the scope's own."""
        stack = self.record.stack
        return stack[0].path if stack else self.record.module.relpath

    @property
    def speculative(self) -> bool:
        """The context is the guessed forward of a module cast to half, not a call the program makes."""
        return any(site.seeded for site in self.record.stack)

    def autocast_state_unknown_for(self, value: Value) -> bool:
        """In a run no caller was seen to make (so whether autocast is on is unknown), a value made
        half only by autocast regions outside this function (stored in a field by another caller's
        run): no evidence that it is used outside autocast here."""
        record = self.record
        if not record.context_free or record.state is not None:
            return False
        scope = record.scope
        first, last = getattr(scope, "lineno", 0), getattr(scope, "end_lineno", 0) or 0
        origins = [o for option in options(value) if isinstance(option, Tensor) for o in tensor_casts(option)]
        return bool(origins) and all(o.kind == "autocast" and not (o.path == record.module.relpath
                                                                   and first <= o.line <= last) for o in origins)

    def half_from_another_program(self, value: Value) -> bool:
        """The half evidence of ``value`` is all from casts in another program: a script of its
        own (:attr:`SourceModule.is_script`) that the script running this context neither is nor imports
        (an inference script's ``model.half()`` reaching a training script's run through a field
        of a wrapper class both use). Separate programs share no objects at run time."""
        if self.facts is None:
            return False
        if self.record.stack:
            entry = self.record.stack[0].path
        elif isinstance(self.record.scope, ast.Module):  # a script's own top level
            entry = self.record.module.relpath
        else:
            return False
        origins = [o for option in options(value)
                   if isinstance(option, Tensor) and (option.half or option.graph & HALF)
                   for o in ((option.origin,) if option.origin is not None else ()) + option.also]
        return bool(origins) and all(self.facts.another_program(entry, o.path) for o in origins)

    def label(self, dtypes: int, value: Optional[Value] = None) -> str:
        """The precision context label of a half value here (AUTOCAST_FP16, PURE_BF16, ...); ``value``:
        the value, where the state may not be in force for it (:meth:`state_excluded_for`)."""
        state = None if self.state_excluded_for(value) else self.record.state
        if state is not None and state[1] & HALF:
            return "AUTOCAST_BF16" if state[1] == BF16 else "AUTOCAST_FP16"
        return "PURE_BF16" if (dtypes & HALF) == BF16 else "PURE_FP16"

    def where(self, value: Value) -> str:
        """``in float16 (a module cast to float16)``: the phrase messages end with."""
        dtypes = 0
        for option in options(value):
            dtypes |= getattr(option, "dtypes", 0)
        name = dtype_label(dtypes & HALF or dtypes)
        unprotected = self.unprotected_origin(value)
        origin = unprotected or _origin_of(value)
        state = None if unprotected is not None else self.record.state
        if origin is not None and origin.kind != "autocast" or state is None:
            kind = origin.kind if origin is not None else ""
            what = {"module_cast": f"a module cast to {name}", "helper_cast": f"a module cast to {name}", "from_pretrained": f"a model loaded in {name}",
                    "checkpoint_dtype": f"a model loaded in its checkpoint's {name}",
                    "apex": "an apex fp16 model", "apex_o1": "an apex O1 model", "framework": f"a model cast to {name}",
                    "cast": f"a tensor cast to {name}", "dtype": f"created as {name}",
                    "dtype_choice": f"created as {name}",
                    "default_dtype": f"default dtype {name}"}.get(kind, "outside autocast")
            return f"in {name} ({what})"
        device = {"cpu": "CPU autocast", "apex": "apex O1"}.get(state[0], "CUDA autocast")
        return f"in {name} ({device})"

    def origin_evidence(self, value: Optional[Value] = None) -> List[Evidence]:
        """Where the half dtype of ``value`` (or the autocast region) comes from: its origin, then the
        other places a module or tensor it may be was made half (``Module.also``, ``Tensor.also``)."""
        steps: List[Evidence] = []
        origin = (self.unprotected_origin(value) or _origin_of(value)) if value is not None else None
        if origin is None and self.record.state is not None:
            origin = self.record.autocast_origin
        if origin is not None:
            steps.append(Evidence(origin.path, origin.line, _origin_message(origin)))
            seen = {origin.key}
            for option in options(value) if value is not None else ():
                casts = module_casts(option) if isinstance(option, Module) else (
                    (tensor_casts(option) or option.also) if isinstance(option, Tensor) else ())
                for other in casts:
                    if other.key not in seen:
                        seen.add(other.key)
                        steps.append(Evidence(other.path, other.line, "also " + _origin_message(other)))
        return steps

    def evidence(self, value: Optional[Value] = None) -> Tuple[Evidence, ...]:
        """Where the half dtype of ``value`` (or the autocast region) comes from, then the call path."""
        steps = self.origin_evidence(value)
        for site in self.record.stack:
            steps.append(Evidence(site.path, site.line, site.describe()))
        return tuple(steps)


def _origin_of(value: Value) -> Optional[Origin]:
    for option in options(value):
        origin = getattr(option, "origin", None)
        if origin is not None and (not isinstance(option, Tensor) or option.half):
            return origin
    return None


def _origin_message(origin: Origin) -> str:
    what = {
        "cast": "cast to half", "module_cast": "module cast to half", "helper_cast": "module cast to half by a function", "autocast_guess": "autocast (dtype unknown)", "autocast": "autocast region", "dtype": "created in half precision",
        "dtype_choice": "half dtype chosen",
        "from_pretrained": "loaded in half precision",
        "checkpoint_dtype": "loaded in the checkpoint's half precision (`torch_dtype=\"auto\"`)", "apex": "apex amp", "apex_o1": "apex amp (O1)", "framework": "mixed precision set here",
        "default_dtype": "default dtype set to half",
    }.get(origin.kind, origin.kind)
    cond = f" (when `{origin.condition}`)" if origin.condition else ""
    return f"{what}: `{origin.text}`{cond}"


class Facts:
    """Read access to a finished analysis."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self._index: Dict[int, Dict[int, List[Observation]]] = {}
        self._casting: Optional[Set[str]] = None  # see _files_casting_to_half
        self._closures: Dict[str, Tuple[Set[str], Set[str]]] = {}  # see _imported_closure

    def observations(self, node: ast.AST, scope: ast.AST) -> List[Observation]:
        """The contexts in which ``node`` (inside ``scope``) was evaluated."""
        index = self._index.get(id(scope))
        if index is None:
            index = self._index[id(scope)] = {}
            for record in self.interpreter.records.get(id(scope), ()):
                observation = Observation(record, self)
                for key in record.values:
                    found = index.get(key)
                    if found is None:
                        index[key] = [observation]
                    else:
                        found.append(observation)
        return index.get(id(node), _NONE)

    def another_program(self, entry: str, origin: str) -> bool:
        """Whether the file ``origin`` is a program of its own apart from the script ``entry``:
        both are scripts (a ``__main__`` block or a top level that loops), neither ``entry`` nor a
        file it imports, directly or through others, imports ``origin`` (by its name), and none of
        them casts a model to half itself (where one does, a summary shared by equal calls may
        name the other program's cast for its own: ``val.py``'s and ``panoptic/val.py``'s casts
        of the same model class)."""
        if entry == origin:
            return False
        by_relpath = self.interpreter.index.by_relpath
        running, other = by_relpath.get(entry), by_relpath.get(origin)
        if running is None or other is None or not running.is_script or not other.is_script:
            return False
        names, files = self._imported_closure(entry)
        return PurePosixPath(origin).stem not in names and not files & self._files_casting_to_half()

    def _imported_closure(self, entry: str) -> Tuple[Set[str], Set[str]]:
        """The names the file ``entry`` and the project files it imports (by name, transitively)
        import, and those files with ``entry``."""
        found = self._closures.get(entry)
        if found is None:
            by_relpath = self.interpreter.index.by_relpath
            by_stem: Dict[str, List[str]] = {}
            for path in by_relpath:
                by_stem.setdefault(PurePosixPath(path).stem, []).append(path)
            names: Set[str] = set()
            files: Set[str] = {entry}
            todo = [entry]
            while todo:
                module = by_relpath.get(todo.pop())
                if module is None:
                    continue
                for name in module.imported_names - names:
                    names.add(name)
                    for path in by_stem.get(name, ()):
                        if path not in files:
                            files.add(path)
                            todo.append(path)
            found = self._closures[entry] = (names, files)
        return found

    def _files_casting_to_half(self) -> Set[str]:
        """The files whose own code makes a value half (a module or tensor cast, a half factory, an
        autocast region): the origin of a half value the analysis saw there is in the file."""
        found = self._casting
        if found is None:
            found = self._casting = set()
            for records in self.interpreter.records.values():
                for record in records:
                    path = record.module.relpath
                    if path in found:
                        continue
                    for value in record.values.values():
                        if any(isinstance(o, (Tensor, Module)) and o.origin is not None and o.origin.path == path
                               and (o.dtypes if isinstance(o, Tensor) else o.cast) & HALF for o in options(value)):
                            found.add(path)
                            break
        return found

    def master_wrapped(self, site: Optional[str]) -> bool:
        """Whether the optimizer created at ``site`` is handed to a master-weight wrapper anywhere."""
        return site is not None and site in self.interpreter.master_wrapped

    def half_trained_casts(self) -> Dict[Tuple[str, int, int, int, int], Origin]:
        """Cast sites (by node key) of half parameters that an optimizer trains without fp32 master
        weights (no master-weight wrapper takes the optimizer anywhere)."""
        return {origin.key: origin for site, origin in self.interpreter.half_optimizers
                if not self.master_wrapped(site)}

    def params_cast_after_built(self, site: Optional[str]) -> Tuple[int, Optional[Origin]]:
        """The half dtypes (and a cast's origin) of the parameters the optimizer built at ``site``
        holds because its model was cast in place after it was built, and it then stepped
        (``self.optim = Adam(self.parameters())`` in ``__init__``, ``G.half()`` later)."""
        bits, found = 0, None
        for where, origin in self.interpreter.half_optimizers:
            if where == site and origin in self.interpreter.pending_casts.get(site, ()):
                bits |= self.interpreter.cast_bits.get(origin.key, 0)
                found = found or origin
        return bits, found

    def cast_after_optimizer(self, origin: Origin) -> bool:
        """Whether the in-place cast at ``origin`` ran after an optimizer over that model was built."""
        return any(origin in casts for casts in self.interpreter.pending_casts.values())

    def half_scaler(self, site: str) -> Optional[Origin]:
        """The origin of the half parameters whose gradients the GradScaler built at ``site``
        (``path:line:col:...`` node key) unscales, or ``None``."""
        return self.interpreter.half_scalers.get(site)

    @staticmethod
    def condition_texts(test: ast.AST, module: SourceModule) -> Tuple[str, str]:
        """The text of a branch test and of its negation, as the evidence's conditions read them
        (``Origin.condition``: ``args.fp16`` / ``not args.fp16``)."""
        return condition_texts(test, module)

    def frameworks(self, entries: Optional[Collection[str]] = None) -> List[Tuple[str, Optional[str]]]:
        """(kind, precision text or None) of each framework that owns mixed precision in the program;
        with ``entries`` (files whose run reaches some code), only those set up in the programs run
        from them, or where no one program is known (a module's top level)."""
        return [(kind, precision) for kind, precision, _, entry in self.interpreter.frameworks
                if entries is None or entry is None or entry in entries]

    def autocast_programs(self) -> Set[str]:
        """The files whose run opened an autocast region (the outermost caller's file, or the file
        whose top level opened it)."""
        return self.interpreter.autocast_programs

    def steps_an_optimizer(self, call: ast.AST) -> bool:
        """Whether an optimizer's ``step()`` ran inside the call ``call`` (``opt.step_and_update_lr()``)."""
        return id(call) in self.interpreter.stepping_calls

    @property
    def errors(self) -> List[Tuple[str, int, str]]:
        """Internal errors of the analysis (path, line, description)."""
        return self.interpreter.errors

    def runs_in_half(self, constructor: ast.AST) -> bool:
        """Whether the torch.nn module built by the call ``constructor`` ever runs in half precision
        (its owner cast to fp16/bf16, or called under autocast), where its GEMMs use Tensor Cores."""
        return id(constructor) in self.interpreter.half_layers

    def values(self, node: ast.AST, scope: ast.AST) -> Iterator[Value]:
        for obs in self.observations(node, scope):
            yield obs.value(node)

    def qualified(self, node: ast.AST, scope: ast.AST) -> Optional[str]:
        """The torch/library name an expression stands for in every context it ran (``None`` if it
        is not one, or not the same one everywhere)."""
        names = set()
        for value in self.values(node, scope):
            for option in options(value):
                names.add(option.name if isinstance(option, Ext) else None)
        if len(names) == 1:
            return names.pop()
        return None


def describe(value: Value) -> str:
    """A short human description of an abstract value (``explain``)."""
    parts = []
    for option in options(value):
        if isinstance(option, Tensor):
            text = f"tensor {dtype_label(option.dtypes)}" if option.dtypes else "tensor of unknown dtype"
            if option.unknown and option.dtypes:
                text += " (or unknown)"
            if option.zero_dim:
                text += ", 0-dim"
            parts.append(text)
        elif isinstance(option, Module):
            cls = option.cls
            name = getattr(getattr(cls, "info", None), "qualname", None) or getattr(cls, "name", None) or "a model"
            cast = dtype_label(option.cast) if option.cast and not option.cast_unknown else "unknown dtype"
            layers = sorted(k for k in option.kinds if not k.startswith("."))
            named = sorted(k[1:] for k in option.kinds if k.startswith("."))
            where = f" in its {', '.join(layers)} layers" if layers else ""
            where += f" and the parameters it names ({', '.join(named)})" if named else ""
            parts.append(f"module {name} with {cast} parameters{where}")
        elif isinstance(option, DType):
            parts.append(f"dtype {dtype_label(option.dtypes)}")
        elif isinstance(option, Obj):  # an optimizer, a GradScaler, ...: its kind, and its class where known
            name = option.get("name")
            parts.append(option.kind + (f" {name.value}" if isinstance(name, Scalar) and name.value else ""))
        elif option is UNKNOWN:
            parts.append("unknown")
        else:
            parts.append(type(option).__name__.lower() + (f" {option.value!r}" if getattr(option, "value", None)
                                                            is not None else ""))
    return " | ".join(parts) if parts else "unknown"
