"""How torch, its nn modules and the training libraries behave, as the interpreter sees them.

Every behaviour here is read from a table in :mod:`amp_lint.data` (op policies per device, result
kinds, casts, module kinds, optimizers, scalers, autocast entry points); this module applies them
to abstract values. A torch function nobody listed runs in its inputs' dtype, as the autocast docs
say of unlisted ops; a library call nobody listed returns an unknown value.
"""
from __future__ import annotations

import ast
import math
from pathlib import PurePosixPath
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from amp_lint.data import libraries
from amp_lint.data import ops as optable
from amp_lint.data import training as trainingdata
from amp_lint.semantics import configfiles
from amp_lint.semantics.program import is_main_guard
from amp_lint.semantics.values import (
    APEX_O1_ORIGIN, BF16, BOOL, F16, F32, F64, FLOATS, HALF, INT, NONE, OPEN_KEYS, UNKNOWN, Autocast, Builtin, ClassVal, Coll,
    DictVal, DType, Star, Ext, FuncVal, Instance, Method, ModVal, Module, Obj, Origin, Scalar, Seq, Tensor, Value,
    apex_o1_only, bits, element, holds_under, join, known_strings, module_casts, obj, options, promote, python_scalar,
    REGISTRY_UNION_LIMIT, registry_join, shape,
    text_or_default, trained_casts, union_of, with_condition,
)

if TYPE_CHECKING:
    from amp_lint.semantics.interpreter import Frame, Interpreter

_DTYPE_BITS = {"float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64, "int64": INT, "bool": BOOL}


def dtype_bit(name: str) -> int:
    alias = optable.DTYPE_ALIASES.get(name)
    return _DTYPE_BITS.get(alias or "", 0)


def _origin(frame: "Frame", node: Optional[ast.AST], kind: str) -> Optional[Origin]:
    if node is None:
        return None
    return Origin(kind, frame.module.relpath, getattr(node, "lineno", 0), frame.module.segment(node),
                  col=getattr(node, "col_offset", 0),
                  end=(getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0))


def note_framework(interp: "Interpreter", frame: "Frame", kind: str, precision: Optional[str],
                   origin: Optional[Origin]) -> None:
    """A framework (accelerate, Lightning, DeepSpeed, FSDP) owns mixed precision in the program run
    from the file that made the outermost call reaching here, or from this file where it is set up
    in its ``if __name__ == "__main__":`` block; None (every program) elsewhere at a module's top
    level, which an import runs, or in a function nothing calls."""
    entry = frame.stack[0].path if frame.stack else None
    if entry is None and frame.info is None and any(
            is_main_guard(test) and not orelse for test, orelse, _, _ in frame.branches):
        entry = frame.module.relpath
    interp.frameworks.append((kind, precision, origin, entry))


#: The environment slot (no Python name can clash) holding the default float dtype that
#: ``torch.set_default_dtype`` / ``torch.set_default_tensor_type`` set in a scope.
DEFAULT_DTYPE = "<default dtype>"
#: Legacy tensor types ``set_default_tensor_type`` takes, by the end of their name.
_TENSOR_TYPES = {"HalfTensor": F16, "BFloat16Tensor": BF16, "FloatTensor": F32, "DoubleTensor": F64}


def default_dtype(interp: "Interpreter", frame: "Frame") -> Optional[DType]:
    """The default float dtype set by ``torch.set_default_dtype(...)`` earlier in this scope or at
    the top of its module, or ``None`` (float32, torch's own default)."""
    value = interp.lookup(DEFAULT_DTYPE, frame)
    return value if isinstance(value, DType) and value.dtypes & FLOATS and value.dtypes != F32 else None


def _set_default_dtype(frame: "Frame", short: str, positional: List[Value], node: Optional[ast.AST]) -> None:
    arg = positional[0] if positional else UNKNOWN
    bit = 0
    if isinstance(arg, DType) and not arg.unknown:  # ``torch.float16``, ``torch.cuda.HalfTensor``
        bit = arg.dtypes & FLOATS
    elif short == "set_default_tensor_type":
        name = arg.name if isinstance(arg, Ext) else (arg.value if isinstance(arg, Scalar)
                                                     and isinstance(arg.value, str) else "")
        bit = _TENSOR_TYPES.get(str(name).rsplit(".", 1)[-1], 0)
    frame.env[DEFAULT_DTYPE] = DType(bit, False, _origin(frame, node, "default_dtype") if bit & HALF else None) \
        if bit else DType(0, True)


def node_key(relpath: str, node: Optional[ast.AST]) -> Tuple[str, int, int, int, int]:
    """A node's identity across runs: its file and span."""
    return (relpath, getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def _site(frame: "Frame", node: Optional[ast.AST]) -> str:
    return ":".join(str(part) for part in node_key(frame.module.relpath, node))


# -- attributes ----------------------------------------------------------------------------------
def ext_attr(ext: Ext, name: str) -> Value:
    qualified = f"{ext.name}.{name}"
    if ext.name == "torch" or ext.name == "torch.cuda" or ext.name.endswith(".torch"):
        bit = dtype_bit(name)
        if bit and (name in optable.DTYPE_ALIASES) and name[:1].islower():
            return DType(bit)
        if bit and name.endswith("Tensor"):
            return DType(bit)
    return Ext(qualified)


def tensor_attr(tensor: Tensor, name: str) -> Value:
    if name == "dtype":
        return DType(tensor.dtypes, tensor.unknown, tensor.origin)
    if name == "device":
        return obj("device")
    if name in ("shape",):
        return Coll(Scalar("int"))
    if name in ("ndim",):
        return Scalar("int")
    if name in ("is_cuda", "requires_grad", "is_leaf", "is_sparse"):
        return Scalar("bool")
    if name in ("grad", "data", "T", "mT", "H", "mH", "real", "imag"):
        return Tensor(tensor.dtypes, tensor.unknown, tensor.origin, learned=tensor.learned or tensor.param)
    # a field of a model output (``outputs.logits``) holds a tensor of the same kind
    return Tensor(tensor.dtypes, tensor.unknown, tensor.origin, tensor.scaled, learned=tensor.learned)


#: torch.nn containers whose children ``append``/``extend``/``insert`` add
_GROWABLE_CONTAINERS = ("ModuleList", "Sequential", "ParameterList")

_MODULE_METHODS = frozenset({
    "half", "float", "double", "bfloat16", "to", "type", "cuda", "cpu", "eval", "train", "parameters",
    "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules", "named_modules",
    "state_dict", "load_state_dict", "apply", "requires_grad_", "zero_grad", "register_buffer", "register_parameter",
    "add_module", "register_module", "forward", "generate", "save_pretrained", "resize_token_embeddings",
    "get_input_embeddings", "get_output_embeddings", "tie_weights", "gradient_checkpointing_enable",
    "enable_input_require_grads", "share_memory", "extra_repr", "to_empty", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "get_submodule", "get_parameter", "__init__",
    "print_trainable_parameters", "merge_and_unload", "prepare_inputs_for_generation", "xpu", "ipu",
})


#: methods of ``torch.nn.Module`` that change or read a model without running its forward
MODULE_HOUSEKEEPING = frozenset(_MODULE_METHODS - {"forward", "generate", "__init__", "prepare_inputs_for_generation"})


#: names of tensor operations that no model has as a submodule (``x.pow``, ``x.sum``); layer-like
#: names (``norm``, ``linear``, ``softmax``, ``*_loss``) may well be submodules and are left out
_TENSOR_OP_NAMES = frozenset(
    name for name in set(optable.AUTOCAST_OPS) | set(optable.RESULT_KINDS) | set(optable.REDUCTIONS)
    | optable.EXP_OPS | optable.POWER_OPS
    if name not in _MODULE_METHODS and not any(part in name for part in (
        "norm", "loss", "entropy", "soft", "linear", "sample", "interpolate", "prelu", "conv", "attention",
        "kl_div", "dist", "similarity")))


def module_builtin_attr(module: Module, name: str) -> Value:
    if name in _MODULE_METHODS or name in ("append", "extend", "insert") and isinstance(module.cls, Ext) \
            and module.cls.name.rsplit(".", 1)[-1] in _GROWABLE_CONTAINERS:
        return Method(module, name)
    if name in ("weight", "bias", "in_proj_weight", "out_proj_weight"):
        return Tensor(module.cast & FLOATS if module.cast else 0, module.cast_unknown or not module.cast,
                      module.origin if module.cast & HALF else None, param=True)
    if name == "dtype":
        return DType(module.cast, module.cast_unknown or not module.cast, module.origin)
    if name == "device":
        return obj("device")
    if name == "training":
        return Scalar("bool")
    if name == "module" and module.cls is not None:
        return module  # DataParallel(model).module
    if name in ("config", "hparams", "args"):
        return UNKNOWN
    if name in _TENSOR_OP_NAMES:
        return UNKNOWN  # ``x.pow`` of a value that may be a model or a tensor: not a submodule
    if module.cls is None or (isinstance(module.cls, Ext) and not module.cls.name.startswith("torch.nn.")):
        # a submodule of a model we know only by its cast (``model.transformer``, ``model.lm_head``)
        return Module(None, module.cast, module.cast_unknown, module.origin, master=module.master, kinds=module.kinds)
    return UNKNOWN


def obj_attr(value: Obj, name: str) -> Value:
    if value.kind == "finfo":
        dtype = value.get("dtype")
        dts = dtype.dtypes if isinstance(dtype, DType) else 0
        if name in ("min", "max", "eps", "tiny", "smallest_normal", "resolution"):
            number = _finfo_value(dts, name)
            return Scalar("float", number, (dts, name) if name in ("min", "max") else None)
        if name == "bits":
            return Scalar("int")
        return UNKNOWN
    if value.kind == "device" and name == "type":
        return value.get("type") or Scalar("str")
    if value.kind == "super":
        return Method(value, name)
    found = value.get(name)
    if found is not None:
        return found
    if value.kind in ("optimizer", "grad_scaler", "argparser", "accelerator", "ds_engine", "scheduler", "namespace",
                      "dataloader", "trainer", "fabric", "class_registry"):
        if value.kind == "namespace":
            return UNKNOWN
        if value.kind == "optimizer" and name == "param_groups":
            return Coll(DictVal((("params", value.get("params") or UNKNOWN),)))
        return Method(value, name)
    return UNKNOWN


def _finfo_value(dtypes: int, name: str) -> Optional[float]:
    table = {
        F16: {"min": -65504.0, "max": 65504.0, "eps": 0.0009765625, "tiny": 6.103515625e-05},
        BF16: {"min": -3.3895313892515355e38, "max": 3.3895313892515355e38, "eps": 0.0078125,
               "tiny": 1.1754943508222875e-38},
        F32: {"min": -3.4028234663852886e38, "max": 3.4028234663852886e38, "eps": 1.1920928955078125e-07,
              "tiny": 1.1754943508222875e-38},
        F64: {"min": -1.7976931348623157e308, "max": 1.7976931348623157e308, "eps": 2.220446049250313e-16,
              "tiny": 2.2250738585072014e-308},
    }
    values = {table[b].get(name) for b in bits(dtypes) if b in table}
    if len(values) == 1:
        return values.pop()
    return None


def is_module_base(name: str) -> bool:
    if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper() and ".functional" not in name:
        return True
    return name.rsplit(".", 1)[-1] in trainingdata.MODEL_BASES


# -- autocast ------------------------------------------------------------------------------------
def autocast_states(cm: Value, state, origin: Optional[Origin], default_device: str):
    """The autocast states a ``with cm:`` body may run in (one per alternative)."""
    out = []
    for option in options(cm):
        if isinstance(option, Autocast):
            if option.enabled is not True:
                out.append((None, None))
            if option.enabled is not False:
                dtypes = option.dtype & HALF
                if not option.dtype:
                    dtypes = F16 if option.device != "cpu" else BF16
                for bit in bits(dtypes):
                    out.append(((option.device, bit), option.origin))
                if option.dtype & F32:
                    # ``autocast(dtype=torch.float32)`` (around a half region): the listed ops, the
                    # fp32 ones and the lower-precision ones alike, run in float32
                    out.append(((option.device, F32), option.origin))
                if option.dtype & F64:
                    out.append((None, None))
        elif isinstance(option, Obj) and option.kind == "accelerator":
            out.append((state, origin))
        else:
            out.append((state, origin))
    unique = []
    for item in out:
        if item not in unique:
            unique.append(item)
    return unique


def enter_value(cm: Value) -> Value:
    if isinstance(cm, Autocast) or isinstance(cm, Obj) and cm.kind == "file":
        return cm
    return UNKNOWN


def is_custom_fwd_fp32(decorator: Value) -> bool:
    if isinstance(decorator, Obj) and decorator.kind == "custom_fwd":
        cast = decorator.get("cast_inputs")
        return isinstance(cast, DType) and cast.dtypes == F32
    return False


def make_autocast(frame: "Frame", qualified: str, args: Sequence[Value], kwargs: Dict[str, Value],
                  node: Optional[ast.AST], default_device: str) -> Value:
    implied = trainingdata.AUTOCASTS.get(qualified)
    if implied is not None:
        order = ("enabled", "dtype", "cache_enabled")
        device: Optional[str] = implied
    else:
        order = ("device_type", "dtype", "enabled", "cache_enabled")
        device = None
    given: Dict[str, Value] = {}
    for name, value in zip(order, [a for a in args if not _is_star(a)]):
        given[name] = value
    given.update({k: v for k, v in kwargs.items() if k != "**"})
    if device is None:
        device = _device_of(given.get("device_type"), default_device)
    dtype = 0
    guessed = False
    if "dtype" in given:
        value = given["dtype"]
        for option in options(value):
            if isinstance(option, DType) and not option.unknown:
                dtype |= option.dtypes
            elif not (isinstance(option, Scalar) and option.kind == "none"):
                dtype |= F16 | BF16  # an autocast dtype we cannot see: half if anything (a guess)
                guessed = True
    enabled: Optional[bool] = True
    origin = _origin(frame, node, "autocast_guess" if guessed else "autocast")
    if "enabled" in given:
        value = given["enabled"]
        enabled = value.value if isinstance(value, Scalar) and isinstance(value.value, bool) else None
        expr = _argument_node(node, "enabled", order.index("enabled"))
        if enabled is None and expr is not None and origin is not None:
            # ``autocast(enabled=scaler is not None)``: what it computes is half only when that holds
            origin = replace(origin, condition=frame.module.segment(expr, 40))
    return Autocast(device, dtype, enabled, origin)


def _argument_node(call: Optional[ast.AST], keyword: str, position: int) -> Optional[ast.AST]:
    """The expression passed as ``keyword=`` or at ``position`` of ``call`` (no ``*args`` before it)."""
    if not isinstance(call, ast.Call):
        return None
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    args = call.args
    if position < len(args) and not any(isinstance(a, ast.Starred) for a in args[:position + 1]):
        return args[position]
    return None


def _device_of(value: Optional[Value], default: str) -> str:
    if value is None:
        return default
    names = set()
    for option in options(value):
        if isinstance(option, Scalar) and isinstance(option.value, str):
            names.add(option.value.split(":")[0])
        elif isinstance(option, Obj) and option.kind == "device":
            kind = option.get("type")
            if isinstance(kind, Scalar) and isinstance(kind.value, str):
                names.add(kind.value)
            else:
                return default
        else:
            return default
    if len(names) == 1:
        name = names.pop()
        return "cpu" if name == "cpu" else "cuda"
    return default


# -- op transfer ---------------------------------------------------------------------------------
def _tensors(values: Sequence[Value]) -> List[Tensor]:
    out = []
    for value in values:
        for option in options(value):
            if isinstance(option, Tensor):
                out.append(option)
    return out


def apply_op(op: str, inputs: Sequence[Value], frame: "Frame", explicit: Optional[Value] = None,
             functional: bool = True) -> Value:
    """The result of torch op ``op`` on ``inputs`` in the frame's autocast state. ``functional``: called
    as a ``torch.nn.functional`` function or by a module, not as a ``torch`` function or Tensor method
    (:func:`amp_lint.data.ops.policy_in`)."""
    if explicit is not None:
        return _explicit(explicit)
    tensors = _tensors(inputs)
    unknown = any(not any(isinstance(o, (Tensor, Scalar)) for o in options(v)) for v in inputs)
    dtypes = 0
    graph = 0
    origin = None
    operands = sum(len(v.items) if isinstance(v, Seq) else 1 for v in inputs)  # ``einsum(eq, [a, b])`` too
    learned = op in optable.LEARNED_OPS and not (op == "einsum" and operands < 2)  # one operand: a permutation
    # 0-dim tensors take part in promotion only where no tensor with dimensions is a float already
    dimensioned = [t for t in tensors if not t.zero_dim]
    promoted = dimensioned if dimensioned and all(t.dtypes and not t.dtypes & ~FLOATS for t in dimensioned) \
        else tensors
    zero_dim = bool(tensors) and not dimensioned and optable.TENSOR_ARGS.get(op) != "seq" and all(
        isinstance(v, (Tensor, Scalar)) for v in inputs)  # a stack of 0-dim tensors has a dimension
    for t in promoted:
        dtypes = promote(dtypes, t.dtypes)
    if op in optable.SAME_DTYPE_OPS and frame.state is None:
        floats = {t.dtypes & FLOATS for t in tensors if t.dtypes & FLOATS and not t.unknown}
        if len(floats) > 1:  # it would raise: one of the operands is not what it seems, so either dtype
            dtypes = 0
            for bits_ in floats:
                dtypes |= bits_
    for t in tensors:
        unknown = unknown or t.unknown
        graph |= t.low_graph
        learned = learned or t.learned or t.param
        if origin is None and (t.half or t.low_graph):
            origin = t.origin
    learned = learned and op not in optable.BOUNDED_OPS
    state, state_origin = frame.state, frame.autocast_origin
    if state is None and origin is not None and apex_o1_only(tensors):
        # a tensor an apex-O1 model made, used outside it: apex O1 patched torch's functions for
        # the whole process (``amp.initialize``), so this op runs as under O1 too
        state, state_origin = ("apex", F16), origin
    if state is not None and (dtypes & FLOATS or (unknown and not dtypes & (INT | BOOL))):
        device, half = state
        policy = optable.policy_in(op, device, functional)
        if policy == optable.LOWER:
            return Tensor(half, False, state_origin, graph=graph | half, learned=learned)
        if policy == optable.FP32:  # the value is fp32; its gradients flow through the half ops before it
            return Tensor(F32 if dtypes & FLOATS or unknown else dtypes, False, origin if graph else None, graph=graph,
                          learned=learned)
        if policy == optable.PROMOTE:
            return Tensor(dtypes, unknown, origin, graph=graph, learned=learned)
    if not tensors:
        return Tensor(0, True, learned=learned) if unknown else UNKNOWN
    return Tensor(dtypes, unknown, origin if dtypes & HALF or graph else None, graph=graph, learned=learned,
                  zero_dim=zero_dim)


def _explicit(value: Value) -> Value:
    dtypes, unknown, origin = 0, False, None
    for option in options(value):
        if isinstance(option, DType):
            dtypes |= option.dtypes
            unknown = unknown or option.unknown
            origin = origin or option.origin
        else:
            unknown = True
    return Tensor(dtypes, unknown, origin)


def _dtype_kw(kwargs: Dict[str, Value]) -> Optional[Value]:
    value = kwargs.get("dtype")
    if value is None or (isinstance(value, Scalar) and value.kind == "none"):
        return None
    return value


def _with_origin(value: Value, frame: "Frame", node: Optional[ast.AST], kind: str = "dtype") -> Value:
    if isinstance(value, Tensor) and value.half and value.origin is None:
        return replace(value, origin=_origin(frame, node, kind))
    return value


def binop(interp: "Interpreter", frame: "Frame", op: ast.operator, a: Value, b: Value, node: ast.AST) -> Value:
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        return _fold(op, a, b)
    if type(op).__name__ == "MatMult" and frame.state is not None and not isinstance(a, (Scalar, Seq, Coll)) \
            and not isinstance(b, (Scalar, Seq, Coll)):
        return apply_op("matmul", [a, b], frame)  # ``@`` under autocast: a GEMM in the autocast dtype
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        name = type(op).__name__
        if name == "MatMult":
            return apply_op("matmul", [a, b], frame)
        if name == "Pow":
            if isinstance(a, Tensor):
                return apply_op("pow", [a], frame)
            return apply_op("pow", [b], frame)
        if name in ("Div",) and isinstance(a, Scalar) and isinstance(b, Tensor):
            return apply_op("reciprocal", [b], frame)
        ta = a if isinstance(a, Tensor) else None
        tb = b if isinstance(b, Tensor) else None
        if ta is not None and tb is not None:
            result = apply_op("add", [ta, tb], frame)
            if name == "Div" and isinstance(result, Tensor) and _divides_by_own_norm(node):
                result = replace(result, learned=False)  # ``x / x.norm(dim=-1, keepdim=True)``: unit length
            return result
        tensor = ta or tb
        other = b if tensor is ta else a
        assert tensor is not None
        if isinstance(other, (Module, Obj, ClassVal, FuncVal, Ext, ModVal)):
            return UNKNOWN  # not arithmetic between tensors: an impossible combination of a union
        if isinstance(other, Scalar) and other.kind in ("float",) and not tensor.dtypes & FLOATS and tensor.dtypes:
            return Tensor(F32)  # an integer/bool tensor times a Python float: the default float dtype
        if isinstance(other, (Scalar,)) or other is UNKNOWN:
            scaled = tensor.scaled or _is_loss_scale(node, tensor is ta)
            return Tensor(tensor.dtypes, tensor.unknown, tensor.origin, scaled, graph=tensor.graph,
                          learned=tensor.learned or tensor.param,
                          zero_dim=tensor.zero_dim and isinstance(other, Scalar))
        return Tensor(tensor.dtypes, True, tensor.origin, graph=tensor.graph, learned=tensor.learned or tensor.param)
    if isinstance(a, Seq) and isinstance(b, Seq) and isinstance(op, ast.Add):
        return Seq(a.items + b.items)
    if isinstance(a, (Seq, Coll)) and isinstance(b, (Seq, Coll)):
        return Coll(join(element(a), element(b)))
    return UNKNOWN


def _divides_by_own_norm(node: ast.AST) -> bool:
    """``x / x.norm(...)``, ``x /= torch.linalg.norm(x, ...)``, ``x / (x.norm(...) + eps)``,
    ``x / x.norm(...).clamp(min=eps)``: ``x`` scaled to unit length, whose values are at most 1."""
    if isinstance(node, ast.BinOp):
        left, right = node.left, node.right
    elif isinstance(node, ast.AugAssign):
        left, right = node.target, node.value
    else:
        return False
    if isinstance(left, ast.Subscript) or not isinstance(left, (ast.Name, ast.Attribute)):
        return False
    while True:
        if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Add):
            right = right.left if isinstance(right.left, ast.Call) else right.right
        elif isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) \
                and right.func.attr in ("clamp", "clamp_min", "clip", "add", "expand_as") \
                and isinstance(right.func.value, ast.Call):
            right = right.func.value
        else:
            break
    if not (isinstance(right, ast.Call) and isinstance(right.func, (ast.Attribute, ast.Name))):
        return False
    func = right.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id
    if name not in optable.FP32_ACCUMULATING_NORMS:
        return False
    target = ast.unparse(left)  # the text: an augmented assignment's target is a store, not a load
    if isinstance(func, ast.Attribute) and ast.unparse(func.value) == target:
        return True  # ``x.norm(...)``
    return bool(right.args) and ast.unparse(right.args[0]) == target  # ``torch.norm(x, ...)``


def _is_loss_scale(node: ast.AST, tensor_left: bool) -> bool:
    """``loss * args.loss_scale`` / ``loss * self.scaler.loss_scale``: a hand-rolled loss scale (by name)."""
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
        return False
    other = node.right if tensor_left else node.left
    text = ast.unparse(other).lower() if isinstance(other, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) else ""
    return "scale" in text


def _fold(op: ast.operator, a: Scalar, b: Scalar) -> Value:
    if a.kind == "str" or b.kind == "str":
        if isinstance(op, ast.Add) and isinstance(a.value, str) and isinstance(b.value, str):
            return Scalar("str", a.value + b.value)
        return Scalar("str")
    x, y = a.value, b.value
    numeric = a.kind in ("int", "float", "num", "bool") and b.kind in ("int", "float", "num", "bool")
    if not numeric:
        return UNKNOWN
    kind = "int" if a.kind in ("int", "bool") and b.kind in ("int", "bool") else "float"
    if a.kind == "num" or b.kind == "num":
        kind = "num"
    if isinstance(op, ast.Div):
        kind = "float"
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return Scalar(kind)
    try:
        if isinstance(op, ast.Add):
            result = x + y
        elif isinstance(op, ast.Sub):
            result = x - y
        elif isinstance(op, ast.Mult):
            result = x * y
        elif isinstance(op, ast.Div):
            result = x / y
        elif isinstance(op, ast.FloorDiv):
            result = x // y
        elif isinstance(op, ast.Mod):
            result = x % y
        elif isinstance(op, ast.Pow):
            if abs(y) > 64 or abs(x) > 1e6:
                return Scalar("float" if isinstance(y, float) or y < 0 else kind)
            result = x ** y
        else:
            return Scalar(kind)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        return Scalar(kind)
    if isinstance(result, complex):
        return UNKNOWN
    if isinstance(result, float) and kind == "int":
        kind = "float"
    return Scalar(kind, result)


# -- tensor methods ------------------------------------------------------------------------------
def tensor_method(interp: "Interpreter", frame: "Frame", tensor: Tensor, name: str, args: List[Value],
                  kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    result = _tensor_method(interp, frame, tensor, name, args, kwargs, node)
    if isinstance(result, Tensor) and not result.zero_dim and (
            (name in optable.FULL_REDUCTIONS and not _positional(args) and not kwargs.keys() & {"dim", "axis"})
            or (tensor.zero_dim and (name in optable.CAST_METHODS or name in ("to", "type", "type_as", "detach",
                                                                            "clone", "contiguous")))):
        return replace(result, zero_dim=True)
    return result


def _tensor_method(interp: "Interpreter", frame: "Frame", tensor: Tensor, name: str, args: List[Value],
                   kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    explicit = _dtype_kw(kwargs)
    plain = Tensor(tensor.dtypes, tensor.unknown, tensor.origin, tensor.scaled, graph=tensor.graph,
                   learned=tensor.learned or tensor.param)
    if name in optable.CAST_METHODS:
        bit = _DTYPE_BITS[optable.CAST_METHODS[name]]
        # cast up, the value keeps where the half ops of its graph came from (as the fp32 ops of
        # autocast keep it): what a backward through it runs in half is still evidenced
        return Tensor(bit, False, _origin(frame, node, "cast") if bit & HALF else (
            tensor.origin if tensor.low_graph else None), tensor.scaled,
                      graph=tensor.low_graph | (bit & HALF), learned=tensor.learned)
    if name in ("to", "type"):
        target = _cast_target(args, kwargs)
        if target is None:
            if name == "type" and not args and not kwargs:
                return Scalar("str")
            return plain  # ``x.to(device)``: the dtype stays
        cast = _with_origin(_explicit(target), frame, node, "cast")
        if isinstance(cast, Tensor):
            cast = Tensor(cast.dtypes, cast.unknown, cast.origin, tensor.scaled, graph=tensor.low_graph | cast.half,
                          learned=tensor.learned)
        return cast
    if name == "type_as":
        other = _tensors(args[:1])
        if other:
            return Tensor(other[0].dtypes, other[0].unknown, other[0].origin, learned=tensor.learned)
        return Tensor(0, True, learned=tensor.learned)
    if name in optable.BOUNDED_OPS and name not in optable.AUTOCAST_OPS:
        return replace(plain, learned=False)
    kind = optable.RESULT_KINDS.get(name)
    if kind == optable.INT_RESULT:
        return Tensor(INT)
    if kind == optable.BOOL_RESULT:
        return Tensor(BOOL)
    if kind == optable.PYTHON:
        if name == "size" and not args:
            return Coll(Scalar("int"))
        return Scalar("int") if name in ("size", "dim", "numel", "nelement", "element_size", "ndimension") \
            else (Scalar("float") if name == "item" and tensor.dtypes & FLOATS else UNKNOWN)
    if kind == optable.NEW:  # fresh values (``x.new_zeros(n)``), as ``torch.zeros_like``: no layer made them
        return _with_origin(_explicit(explicit), frame, node) if explicit is not None else \
            Tensor(tensor.dtypes, tensor.unknown, tensor.origin)
    if name in ("chunk", "split", "unbind", "tensor_split"):
        return Coll(plain)
    if name in ("max", "min") and _tensors(args[:1]):  # ``a.max(b)``: the elementwise maximum, promoted
        return apply_op(name + "imum", [tensor, args[0]], frame)
    if name in ("max", "min", "sort", "topk", "kthvalue", "mode", "median") and (args or kwargs):
        return Seq((plain, Tensor(INT)))  # (values, indices)
    if name.endswith("_") and not name.startswith("__"):
        return plain  # in place: the receiver's dtype (autocast does not apply)
    if name in optable.AUTOCAST_OPS or name in optable.LOSSES:
        inputs: List[Value] = [tensor]
        if name in ("matmul", "mm", "bmm", "mv", "dot", "addmm", "baddbmm", "__matmul__"):
            inputs.extend(args[:2])
        return _with_origin(apply_op(name, inputs, frame, explicit, functional=False), frame, node)
    if kind == optable.FIRST:
        return plain
    if explicit is not None:
        return _with_origin(_explicit(explicit), frame, node)
    others = [a for a in args if isinstance(a, Tensor)]
    others += [kwargs[k] for k in optable.TENSOR_KEYWORDS.get(name, ()) if isinstance(kwargs.get(k), Tensor)]
    if others and name in ("add", "sub", "mul", "div", "true_divide", "maximum", "minimum", "where", "lerp",
                           "addcmul", "addcdiv", "fmax", "fmin", "atan2", "hypot", "remainder", "fmod", "pow",
                           "clamp", "clip", "clamp_min", "clamp_max"):
        return apply_op(name, [tensor] + others, frame)
    return plain


def _cast_target(args: Sequence[Value], kwargs: Dict[str, Value]) -> Optional[Value]:
    candidates: List[Value] = []
    if "dtype" in kwargs:  # a dtype whatever its value: one of unknown value casts to an unknown dtype
        value = kwargs["dtype"]
        candidates.append(value if any(isinstance(o, DType) for o in options(value)) else DType(0, True))
    for arg in args:
        if _is_star(arg):
            continue
        candidates.append(arg)
    for value in candidates:
        dtypes = [o for o in options(value) if isinstance(o, DType)]
        if dtypes:
            out: Optional[Value] = None
            for o in options(value):
                out = join(out, o if isinstance(o, DType) else DType(0, True))
            return out
        tensors = [o for o in options(value) if isinstance(o, Tensor)]
        if tensors:
            t = tensors[0]
            return DType(t.dtypes, t.unknown, t.origin)
        if isinstance(value, Scalar) and isinstance(value.value, str):
            bit = dtype_bit(value.value.replace("torch.", "").replace("cuda.", ""))
            if bit:
                return DType(bit)
    return None


# -- modules -------------------------------------------------------------------------------------
def _grow_container(interp: "Interpreter", frame: "Frame", module: Module, name: str, args: List[Value],
                    node: Optional[ast.AST]) -> Module:
    """``layers.append(Block())`` / ``extend`` / ``insert``: the container with the new children
    (each distinct child once, so a loop that appends the same block reaches a fixpoint); the
    receiver expression is rebound to it, replacing the value it held."""
    added = args[-1]
    new_items = [element(added)] if name == "extend" and not isinstance(added, Seq) else (
        list(added.items) if name == "extend" else [added])  # type: ignore[union-attr]
    items = list(module.items)
    for item in new_items:
        if item is not UNKNOWN and item not in items:
            items.append(item)
    result = replace(module, items=tuple(items))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        target = node.func.value
        if isinstance(target, ast.Name):
            frame.env[target.id] = result
        elif isinstance(target, ast.Attribute):
            owner = frame.record.values.get(id(target.value))
            if owner is not None:
                interp.replace_field(owner, target.attr, module, result)
    return result


def module_method(interp: "Interpreter", frame: "Frame", module: Module, name: str, args: List[Value],
                  kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    if name in ("append", "extend", "insert") and args and isinstance(module.cls, Ext) \
            and module.cls.name.rsplit(".", 1)[-1] in _GROWABLE_CONTAINERS:
        return _grow_container(interp, frame, module, name, args, node)
    if name in ("half", "bfloat16", "float", "double"):
        bit = {"half": F16, "bfloat16": BF16, "float": F32, "double": F64}[name]
        result = module.cast_to(bit, _origin(frame, node, "module_cast"))
        cast_in_place(interp, frame, module, result, _receiver(node))
        return result
    if name in ("to", "type"):
        target = _cast_target(args, kwargs)
        if isinstance(target, DType) and (target.dtypes & FLOATS):
            # a conditional half value's origin is the cast's evidence; a dtype chosen under a
            # condition (``torch.float16 if fp16 else None``) is not: the cast is, unconditional
            # here (evidence keeps one condition, and the branch this cast sits in must set it:
            # ``if not train_encoder: encoder.to(dtype)`` is exclusive with the optimizer's branch)
            chosen = target.origin is not None and target.origin.kind == "dtype_choice"
            result = module.cast_to(target.dtypes & FLOATS, target.origin if target.dtypes & HALF and target.origin
                                    and target.origin.condition and not chosen else _origin(frame, node, "module_cast"))
            if target.unknown:
                result = result.with_unknown()
            cast_in_place(interp, frame, module, result, _receiver(node))
            return result
        return module
    if name == "requires_grad_":
        flag = args[0] if args else kwargs.get("requires_grad", Scalar("bool", True))
        frozen = isinstance(flag, Scalar) and flag.value is False
        unless = ""
        if not (isinstance(flag, Scalar) and isinstance(flag.value, bool)) and isinstance(node, ast.Call) \
                and len(node.args) == 1 and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            unless = frame.module.segment(node.args[0], 40)  # ``requires_grad_(train_unet)``
        if frozen == module.frozen and unless == module.frozen_unless:
            return module
        result = replace(module, frozen=frozen, frozen_unless=unless)
        target = _receiver(node)
        if target is not None and node is frame.statement:  # ``te.requires_grad_(False)``: in place
            rebind(interp, frame, target, result)
        return result
    if name in ("cuda", "cpu", "eval", "train", "share_memory", "xpu", "ipu", "to_empty"):
        return module
    if name in ("parameters", "named_parameters", "buffers", "named_buffers"):
        return obj("parameters", module=module, named=Scalar("bool", name.startswith("named")),
                   buffers=Scalar("bool", name.endswith("buffers")))
    if name in ("modules", "children", "named_modules", "named_children"):
        sub = Module(None, module.cast, module.cast_unknown, module.origin)
        return Coll(Seq((Scalar("str"), sub)) if name.startswith("named") else sub)
    if name == "forward":
        return interp.call_module(module, args, kwargs, frame, node)
    if name in ("register_buffer", "register_parameter", "add_module", "register_module") and len(args) >= 2:
        key = args[0]
        if isinstance(key, Scalar) and isinstance(key.value, str):
            value = args[1]
            if name in ("register_buffer", "register_parameter"):
                # a tensor (also one of a buffer's values that may be None: ``attn_mask`` of shifted
                # windows only) casts with the module: it reads as the module's dtype
                registered: Optional[Value] = None
                for option in options(value):
                    registered = join(registered, Tensor(option.dtypes, option.unknown, option.origin, param=True)
                                      if isinstance(option, Tensor) else option)
                value = registered if registered is not None else value
            interp.store_attr(module, key.value, value, None, frame)  # type: ignore[arg-type]
        return NONE
    if name == "apply" and args:
        return _apply_to_layers(interp, frame, module, args[0], node)
    if name == "generate":
        return Tensor(INT)
    if name in ("state_dict",):
        return DictVal(OPEN_KEYS)
    if name in ("merge_and_unload",):
        return module
    if name in ("get_input_embeddings", "get_output_embeddings"):
        return Module(Ext("torch.nn.Embedding"), module.cast, module.cast_unknown, module.origin)
    return UNKNOWN


#: the ``torch.nn`` layer classes a converter run by ``model.apply`` is tried on
PROBED_LAYERS = tuple(name for name, kind in optable.MODULE_KINDS.items()
                      if kind in ("params", "embedding") and not name.startswith("Lazy"))


def _apply_to_layers(interp: "Interpreter", frame: "Frame", module: Module, fn: Value, node: Optional[ast.AST],
                     receiver: Optional[ast.AST] = None, cast_site: Optional[ast.AST] = None) -> Value:
    """``model.apply(fn)`` runs ``fn`` on every layer. Where ``fn`` casts every layer it is given to
    half (``layer.half()``, ``layer.weight.data = layer.weight.data.half()`` on every path), the
    model computes in half afterwards, as after ``model.half()``; the receiver expression is
    rebound. A converter that casts only some kinds of layer (``if isinstance(layer, nn.Linear):``)
    is run once more on a layer of each ``torch.nn`` class: the cast reaches the classes it casts on
    every path (:attr:`Module.kinds`), and the other layers (norms, embeddings, a module's own
    parameters) keep their dtype. ``receiver`` (the expression rebound) and ``cast_site`` (where
    the cast is reported) default to ``model`` and the ``apply`` call."""
    half, every_layer = _casts_to_half(interp, frame, fn, Module(None, module.cast, module.cast_unknown, module.origin),
                                       node)
    kinds: FrozenSet[str] = frozenset()
    if half and not every_layer:
        interp.probing_layers = True
        try:
            kinds = frozenset(name for name in PROBED_LAYERS
                              if _casts_to_half(interp, frame, fn, Module(Ext("torch.nn." + name)), node) == (half, True))
        finally:
            interp.probing_layers = False
        if not kinds:
            return module
        named = _named_attributes(fn)
        if named and _reads_data_of_named(fn) and _names_a_submodule(interp, module, named):
            # ``attr.data = attr.data.half()`` where the model's ``text_projection`` is a layer, not
            # a parameter: the converter raises AttributeError, and nothing after it runs in half
            return module
        kinds |= named
    elif not half:
        return module
    result = module.cast_to(half, module_cast_origin(frame, cast_site or node), kinds)
    cast_in_place(interp, frame, module, result, receiver if receiver is not None else _receiver(node))
    return result


def cast_by_layer_loop(interp: "Interpreter", frame: "Frame", module: Module, body: Value, loop: ast.For,
                       receiver: ast.AST, cast_site: ast.AST) -> None:
    """``for m in model.modules(): ... m.half()``: the loop's ``body`` (a function of the loop
    variable, closing over the loop's scope) is a converter run on every layer, as by
    ``model.apply``; the cast is reported at ``cast_site`` (the ``m.half()`` call)."""
    _apply_to_layers(interp, frame, module, body, loop.iter, receiver, cast_site)


def _named_attributes(fn: Value) -> FrozenSet[str]:
    """The attributes a layer converter reaches by name (``for name in ["text_projection", "proj"]:
    attr = getattr(layer, name)``, then cast): the identifiers among its string literals, where it
    calls ``getattr`` with a name it does not spell out. Each is kept as ``"." + name`` in
    :attr:`Module.kinds`: a module's own parameter of that name is cast with its layers."""
    names: Set[str] = set()
    for option in options(fn):
        if not isinstance(option, FuncVal):
            continue
        body = option.info.node
        dynamic = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
                      and len(n.args) >= 2 and not isinstance(n.args[1], ast.Constant) for n in ast.walk(body))
        if dynamic:
            # pieces of f-strings, and the parts an f-string is built from (``f"{s}_proj_weight" for s in "qkv"``)
            pieces = {id(v) for n in ast.walk(body) if isinstance(n, ast.JoinedStr) for v in n.values}
            pieces.update(id(c) for n in ast.walk(body) if isinstance(n, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
                          and isinstance(n.elt, ast.JoinedStr) for g in n.generators for c in ast.walk(g.iter))
            names.update(n.value for n in ast.walk(body) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                         and n.value.isidentifier() and id(n) not in pieces)  # not a piece of an f-string
    return frozenset("." + name for name in names)


def _reads_data_of_named(fn: Value) -> bool:
    """The converter reads ``.data`` of what ``getattr(layer, name)`` gave (``attr = getattr(l, name)``,
    then ``attr.data``): a parameter's tensor, which a layer does not have."""
    for option in options(fn):
        if not isinstance(option, FuncVal):
            continue
        fetched = {target.id for n in ast.walk(option.info.node) if isinstance(n, ast.Assign)
                   and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
                   and n.value.func.id == "getattr" for target in n.targets if isinstance(target, ast.Name)}
        if any(isinstance(n, ast.Attribute) and n.attr == "data" and isinstance(n.value, ast.Name)
               and n.value.id in fetched for n in ast.walk(option.info.node)):
            return True
    return False


def _names_a_submodule(interp: "Interpreter", module: Module, named: FrozenSet[str]) -> bool:
    """Whether a field of the model's class that the converter names (``.text_projection``) holds a
    layer on every path the analysis saw (CLAP's ``nn.Sequential`` where CLIP has a parameter)."""
    if not isinstance(module.cls, ClassVal):
        return False
    for klass in interp.mro(module.cls.info):
        for key in named:
            value = klass.fields.get(key[1:])
            if value is not None and all(isinstance(o, Module) for o in options(value)):
                return True
    return False


def _casts_to_half(interp: "Interpreter", frame: "Frame", fn: Value, layer: Module,
                   node: Optional[ast.AST]) -> Tuple[int, bool]:
    """What ``fn(layer)`` leaves ``layer`` as: the half dtypes it may be cast to, and whether it is
    cast to half on every path."""
    half = 0
    every_path = True
    for option in options(fn):
        if isinstance(option, FuncVal):
            changed: Dict[int, Value] = {}
            offset = 0 if option.bound is None else 1
            interp.call_function(option.info, option.bound, [layer], {}, frame, node, changed=changed,
                                 closure=option.closure)
            for member in options(changed.get(offset) or UNKNOWN):
                cast = member.cast if isinstance(member, Module) and not member.cast_unknown else 0
                half |= cast & HALF
                every_path = every_path and bool(cast & HALF) and not cast & FLOATS & ~HALF
        else:
            interp.call(option, [layer], {}, frame, None)
            every_path = False
    return half, every_path and bool(half)


def dtype_origin(frame: "Frame", node: Optional[ast.AST]) -> Optional[Origin]:
    """Where a half dtype was chosen on one path (``torch.float16 if fp16 else None``)."""
    return _origin(frame, node, "dtype_choice")


def module_cast_origin(frame: "Frame", node: Optional[ast.AST]) -> Optional[Origin]:
    """Where a module was cast (``model.half()``, a parameter's data set to half)."""
    return _origin(frame, node, "module_cast")


def helper_cast_origin(frame: "Frame", node: Optional[ast.AST]) -> Optional[Origin]:
    """Where a function of the project was called on a model it casts (``to_fp16(model)``)."""
    return _origin(frame, node, "helper_cast")


def cast_in_place(interp: "Interpreter", frame: "Frame", module: Value, result: Value,
                  target: Optional[ast.AST]) -> None:
    """A model cast in place (``model.half()``, ``model.apply(to_fp16)``, ``layer.weight.data = ...``):
    an optimizer already built over its parameters now holds the cast ones, the expression that
    names it (``target``) holds ``result``, and its layers compute in the new dtype."""
    _note_cast_of_trained(interp, frame, module, result)
    if target is not None:
        rebind(interp, frame, target, result)
    interp.add_seed(result, frame)


def _receiver(node: Optional[ast.AST]) -> Optional[ast.AST]:
    """The receiver expression of a method call (``model`` in ``model.half()``)."""
    return node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None


def _note_cast_of_trained(interp: "Interpreter", frame: "Frame", module: Value, result: Value) -> None:
    """A module cast to half in place after an optimizer was built over its parameters (in this
    function, or kept in a field of the model): the optimizer now holds half parameters. Noted as
    pending; an optimizer step after the cast makes it a fact (a cast for export after training is
    none)."""
    cast = next((o for o in options(result) if isinstance(o, Module) and o.cast & HALF and o.origin), None)
    if cast is None:
        return
    wanted = {_identity(o) for o in options(module) if isinstance(o, Module)}
    held = list(frame.env.values())
    for option in options(module):  # an optimizer the model keeps (``self.optim = Adam(self.parameters())``)
        if isinstance(option, Module) and isinstance(option.cls, ClassVal):
            held.extend(value for klass in interp.mro(option.cls.info) for value in klass.fields.values())
    for value in held:
        for option in options(value):
            site = option.get("site") if isinstance(option, Obj) and option.kind == "optimizer" else None
            if isinstance(site, Scalar) and site.value and _names_module(option.get("params") or UNKNOWN, wanted):
                pending = interp.pending_casts.setdefault(site.value, [])
                if cast.origin not in pending:
                    pending.append(cast.origin)
                interp.cast_bits[cast.origin.key] = interp.cast_bits.get(cast.origin.key, 0) | (cast.cast & HALF)


def _is_parameters(value: Value) -> bool:
    """``model.parameters()``: ``params.extend(...)`` of it keeps it whole, so an optimizer over the
    list still knows whose parameters it trains."""
    return isinstance(value, Obj) and value.kind == "parameters"


def _names_module(params: Value, wanted: Set[object]) -> bool:
    """Whether an optimizer's ``params`` include the parameters of a module of identity ``wanted``."""
    return any(_is_parameters(leaf) and any(isinstance(m, Module) and _identity(m) in wanted
                                            for m in options(leaf.get("module") or UNKNOWN))
               for leaf in _param_leaves(params))


def _identity(module: Module) -> object:
    """A module as one object, whatever was known of its dtype when it was seen: the optimizer
    may have recorded it where a branch ruled out a cast (``if train_unet:`` after ``if not
    train_unet: unet.to(dtype)``) and a later cast sees it with that cast as possible."""
    return shape(module.cast_to(F32, None))


def mutate(interp: "Interpreter", frame: "Frame", node: Optional[ast.AST], new_receiver: Value) -> None:
    """A method changed its receiver in place (``parser.add_argument(...)``, ``.half()`` of a value
    that may be a model or a tensor): rebind the receiver expression. A model known as one is cast
    through :func:`cast_in_place`."""
    target = _receiver(node)
    if target is not None:
        rebind(interp, frame, target, new_receiver)


def rebind(interp: "Interpreter", frame: "Frame", target: ast.AST, value: Value) -> None:
    """An object changed in place: the expression that named it (a name, or a field) now holds ``value``."""
    if isinstance(target, ast.Name):
        frame.env[target.id] = value
        frame.mutated.add(target.id)
    elif isinstance(target, ast.Attribute):
        owner = frame.record.values.get(id(target.value))
        if owner is not None:
            interp.store_attr(owner, target.attr, value, target, frame)
    elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) \
            and target.func.attr in RETURNS_ITS_MODULE:
        # ``model.half().float()``: ``model.half()`` is ``model``, changed in place, so the name
        # holds the round trip's float32, not the half in between
        rebind(interp, frame, target.func.value, value)


#: ``nn.Module`` methods that change the module in place and return it
RETURNS_ITS_MODULE = frozenset({"half", "float", "double", "bfloat16", "to", "cuda", "cpu", "type", "train",
                                 "eval", "requires_grad_", "apply", "to_empty", "share_memory"})


def call_torch_module(interp: "Interpreter", frame: "Frame", module: Module, args: List[Value],
                      kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    """Calling an instance of a torch.nn class, or of a model known only by its cast."""
    first = next((a for a in args if not _is_star(a)), None)
    cls = module.cls
    name = cls.name if isinstance(cls, Ext) else ""
    short = name.rsplit(".", 1)[-1]
    if libraries.MODULES.get(name) == libraries.SAME_AS_FIRST:
        return same_as_first(args, kwargs, frame)
    if not name.startswith("torch.nn."):
        # a model we cannot see into: under autocast it most often ends in a GEMM; else it returns
        # what its parameters are. Where a converter cast only some kinds of its layers (CLIP's
        # ``convert_weights``: linear and conv, not embeddings), what it returns is not known: its
        # float32 embeddings may feed the half layers (which raises) or be cast on the way
        if frame.state is not None:
            return Tensor(frame.state[1], False, frame.autocast_origin, graph=frame.state[1], learned=True)
        dts = module.cast & FLOATS
        if dts and not module.kinds:
            return Tensor(dts, module.cast_unknown, module.origin if dts & HALF else None, graph=dts & HALF,
                          learned=True)
        return UNKNOWN
    kind = optable.MODULE_KINDS.get(short)
    if module.site is not None and (frame.state is not None or module.cast & HALF):
        interp.half_layers.add(id(module.site))
    param = Tensor(module.cast & FLOATS if module.cast else 0, module.cast_unknown or not module.cast,
                   module.origin if module.cast & HALF else None, param=True)
    if kind == "container":
        if short == "Sequential" and module.items:
            value = first if first is not None else UNKNOWN
            for item in module.items:
                value = interp.call(item, [value], {}, frame, node)
            return value
        return UNKNOWN
    if kind == "embedding":
        if module.cast_unknown or not module.cast:
            return Tensor(0, True, learned=True)
        return Tensor(module.cast & FLOATS, False, module.origin if module.cast & HALF else None, learned=True)
    op = optable.MODULE_OPS.get(short)
    if op in optable.LOSSES:  # its float inputs decide (not class-index targets: an int64 loss is none)
        return apply_op(op, [a for a in args[:optable.LOSSES[op]] if not _is_star(a)], frame)
    if kind == "params":
        if op is not None:
            result = apply_op(op, [first if first is not None else UNKNOWN, param], frame)
            sure_fp32_input = isinstance(first, Tensor) and not first.unknown and first.dtypes & FLOATS & ~HALF
            if frame.state is None and isinstance(result, Tensor) and param.half and not param.unknown \
                    and not param.dtypes & FLOATS & ~HALF and not sure_fp32_input:
                # outside autocast the input must match the weights: half weights make a half output
                # of an input known no better (a float32 input says one of the two is imprecise)
                result = Tensor(param.dtypes & FLOATS, False, param.origin, graph=result.graph | (param.dtypes & HALF),
                                learned=True)
            elif frame.state is None and isinstance(result, Tensor) and isinstance(first, Tensor) \
                    and first.dtypes & FLOATS and param.dtypes & FLOATS:
                # the weights and the input must share a dtype (a half layer given fp32 raises),
                # so when the two disagree one of them is known imprecisely: keep either's half
                dtypes = (first.dtypes | param.dtypes) & FLOATS
                origin = param.origin if param.half else (first.origin if first.half else result.origin)
                result = Tensor(dtypes, first.unknown or param.unknown, origin, graph=result.graph, learned=True)
            return result
        if frame.state is not None and short in ("MultiheadAttention", "LSTM", "GRU", "RNN", "Transformer",
                                                 "TransformerEncoder", "TransformerDecoder",
                                                 "TransformerEncoderLayer", "TransformerDecoderLayer"):
            out = Tensor(frame.state[1], False, frame.autocast_origin, learned=True)
        elif frame.state is not None:
            out = first if isinstance(first, Tensor) else Tensor(0, True)
        else:
            out = param if not (isinstance(first, Tensor) and not module.cast) else first
            out = Tensor(out.dtypes, out.unknown, out.origin) if isinstance(out, Tensor) else out
        if isinstance(out, Tensor) and short not in optable.BOUNDED_MODULES:
            out = replace(out, learned=True)
        if short in ("MultiheadAttention",):
            return Seq((out, out))
        if short in ("LSTM", "GRU", "RNN"):
            return Seq((out, UNKNOWN))
        return out
    if op is not None:
        return apply_op(op, [first if first is not None else UNKNOWN], frame)
    if isinstance(first, Tensor):
        return Tensor(first.dtypes, first.unknown, first.origin,
                      learned=first.learned and short not in optable.BOUNDED_MODULES)
    return UNKNOWN


def params_tensor(parameters: Obj) -> Value:
    """What iterating ``model.parameters()`` yields."""
    tensor: Optional[Value] = None
    for one in _params_per_module(parameters):
        tensor = join(tensor, one)
    assert tensor is not None
    named = parameters.get("named")
    if isinstance(named, Scalar) and named.value:
        return Seq((Scalar("str"), tensor))
    return tensor


def _params_per_module(parameters: Obj) -> List[Tensor]:
    """The parameter tensor of each module ``parameters`` may come from (a model built on either
    branch has two, each with its own cast)."""
    buffers = parameters.get("buffers")
    param = not (isinstance(buffers, Scalar) and buffers.value)
    out = []
    for module in options(parameters.get("module") or UNKNOWN):
        if not isinstance(module, Module):
            out.append(Tensor(0, True, param=param))
        elif module.master and param:  # FSDP mixed precision, an engine: the optimizer sees fp32 masters
            out.append(Tensor(F32, False, param=True))
        else:
            # one tensor per half cast (another branch loaded it in float16: each reported); for the
            # parameters, not the casts made only where its ``requires_grad_(flag)`` flag is false
            casts = trained_casts(module) if param else module_casts(module)
            if casts:
                out.extend(Tensor(module.cast & FLOATS, module.cast_unknown, origin, param=param) for origin in casts)
            elif module_casts(module):  # every half cast made where its flag freezes it
                out.append(Tensor(module.cast & FLOATS & ~HALF, True, param=True))
            else:
                out.append(Tensor(module.cast & FLOATS if module.cast else 0, module.cast_unknown or not module.cast,
                                  param=param))
    return out


# -- torch functions and library calls -----------------------------------------------------------
def _is_star(value: object) -> bool:
    return type(value) is Star


def _positional(args: Sequence[Value]) -> List[Value]:
    return [a for a in args if not _is_star(a)]


def _sums_no_index(equation: Value) -> bool:
    """An explicit einsum equation whose output keeps every input index (nothing is contracted)."""
    if not (isinstance(equation, Scalar) and isinstance(equation.value, str) and "->" in equation.value):
        return False
    inputs, output = equation.value.replace(" ", "").split("->", 1)
    return set(inputs.replace(",", "").replace(".", "")) <= set(output.replace(".", ""))


def _tensor_inputs(short: str, args: Sequence[Value], kwargs: Dict[str, Value]) -> List[Value]:
    spec = optable.TENSOR_ARGS.get(short) or tuple(range(optable.LOSSES.get(short, 1)))
    positional = _positional(args)
    if spec == "seq":
        if positional:
            first = positional[0]
            if isinstance(first, Seq):
                return list(first.items)
            return [element(first)]
        return []
    if spec == "rest":
        out: List[Value] = []
        for value in positional[1:]:
            out.extend(value.items if isinstance(value, Seq) else [value])
        return out
    out = [positional[i] for i in spec if i < len(positional)]  # type: ignore[union-attr]
    if not out and "input" in kwargs:
        out.append(kwargs["input"])
    out.extend(kwargs[k] for k in optable.TENSOR_KEYWORDS.get(short, ()) if k in kwargs)
    return out


def call_ext(interp: "Interpreter", frame: "Frame", qualified: str, args: List[Value], kwargs: Dict[str, Value],
             node: Optional[ast.AST]) -> Value:
    short = qualified.rsplit(".", 1)[-1]
    positional = _positional(args)
    if qualified == trainingdata.SOME_PROJECT_MODULE_CLASS:
        return Module(None)  # a layer of some project class: a model of no known class, in float32
    if qualified in libraries.MODEL_FACTORIES:
        built = build_registered(interp, frame, libraries.MODEL_FACTORIES[qualified], args, kwargs, node)
        if built is not None:
            return built
    if qualified.startswith(libraries.DETECTRON2_PACKAGE) and short in libraries.DETECTRON2_BUILDERS:
        built = build_from_config(interp, frame, libraries.DETECTRON2_BUILDERS[short], args, kwargs, node)
        if built is not None:
            return built
    if qualified in libraries.CLASS_REGISTRIES:  # a project's own registry, told apart by where it is made
        where = _site(frame, node)
        return obj("class_registry", key=Scalar("str", f"registry:{where}"))
    if qualified in libraries.MODEL_CLASS_BUILDERS and positional and len(positional) == len(args):
        passed = {k: v for k, v in kwargs.items() if k not in libraries.MODEL_CLASS_BUILDER_KEYWORDS}
        config = kwargs.get("model_cfg")
        if config is not None and config is not NONE:
            passed["cfg"] = config
        return interp.call(positional[0], [], passed, frame, node)
    library = libraries.FUNCTIONS.get(qualified)
    if library is not None:
        return library_call(interp, frame, library, args, kwargs, node)
    if qualified in libraries.CLI_RUNNERS and positional:
        return interp.run_from_command_line(positional[0], frame, node)
    if qualified == "functools.partial" and args and not _is_star(args[0]):
        # bound ``*args`` (a Star is no value: it cannot sit in a Seq that may be joined) leave the
        # bound arguments unknown, passed on as ``*`` of an unknown collection
        bound = Coll(UNKNOWN) if any(_is_star(a) for a in args[1:]) else Seq(tuple(args[1:]))
        return obj("partial", func=args[0], args=bound, kwargs=DictVal(tuple(kwargs.items())))
    if qualified == "collections.OrderedDict" and len(positional) <= 1:
        return dict_of(positional[0] if positional else None, kwargs)
    if qualified == "collections.namedtuple":
        return namedtuple_class(positional[1] if len(positional) > 1 else kwargs.get("field_names", UNKNOWN))
    if qualified in trainingdata.AUTOCASTS:
        return make_autocast(frame, qualified, args, kwargs, node, interp.device)
    if qualified in libraries.CONFIG_LOADERS and positional:
        return load_config(interp, frame, positional[0])
    if qualified in libraries.CONFIG_WRITERS and positional:
        written = positional[0]
        if isinstance(written, DictVal) and any(written.value_of(key) is not None
                                                for key in trainingdata.DEEPSPEED_CONFIG_KEYS):
            where = f"{frame.module.relpath}:{getattr(node, 'lineno', 0)}"
            if all(where != w for _, w in interp.written_deepspeed):
                interp.written_deepspeed.append((written, where))
        return Scalar("str") if qualified.endswith("dumps") or qualified.endswith("dump") and len(positional) == 1 \
            else NONE
    if qualified in libraries.CONFIG_WRAPPERS and len(positional) == 1 and not kwargs:
        return positional[0] if isinstance(positional[0], DictVal) else UNKNOWN
    if qualified == "importlib.import_module" and isinstance(node, ast.Call) and node.args:
        return interp.import_dynamic(node.args[0], frame)
    if qualified in trainingdata.GATHER_INTO_LIST and len(positional) > 1 and isinstance(node, ast.Call) \
            and node.args:
        # ``dist.all_gather(out, x)``: ``out`` now holds every rank's ``x`` (not the zeros it was made of)
        rebind(interp, frame, node.args[0], Coll(positional[1]))
        return NONE
    if qualified in trainingdata.GATHER_RETURNING and positional:
        return Coll(positional[0])
    if qualified in trainingdata.LIBRARY_LOSS_SCALERS:  # timm's: a GradScaler (or apex) behind a call
        return obj("grad_scaler", name=Scalar("str", qualified), enabled=Scalar("bool", True),
                   device=Scalar("str", "cuda"), sharded=Scalar("bool", False), site=Scalar("str", _site(frame, node)))
    if qualified in trainingdata.GRAD_SCALERS:
        enabled = kwargs.get("enabled")
        device = kwargs.get("device") or (positional[0] if positional and qualified.startswith("torch.amp") else None)
        return obj("grad_scaler", name=Scalar("str", qualified), enabled=enabled or Scalar("bool", True),
                   device=device or Scalar("str", "cuda" if ".cpu." not in qualified else "cpu"),
                   sharded=Scalar("bool", short == "ShardedGradScaler"), site=Scalar("str", _site(frame, node)))
    if qualified in ("torch.amp.custom_fwd", "torch.cuda.amp.custom_fwd"):
        return obj("custom_fwd", cast_inputs=kwargs.get("cast_inputs") or NONE)
    if qualified in trainingdata.OPTIMIZERS or (qualified.startswith("torch.optim.") and short[:1].isupper()
                                                and ".lr_scheduler" not in qualified):
        optimizer = make_optimizer(qualified, positional, kwargs, _site(frame, node))
        params = optimizer.get("params") or UNKNOWN  # type: ignore[union-attr]
        if param_dtypes(params)[0] & HALF:
            for origin in param_origins(params):
                interp.half_optimizers.append((_site(frame, node), origin))
        return optimizer
    if qualified.startswith(trainingdata.SCHEDULER_PREFIXES):
        return obj("scheduler")
    if qualified in ("torch.finfo", "torch.iinfo"):
        dtype = positional[0] if positional else DType(F32)
        if isinstance(dtype, Tensor):  # torch.finfo(x) is an error, but take what it meant
            dtype = DType(dtype.dtypes, dtype.unknown)
        if not isinstance(dtype, DType):
            dtype = DType(0, True)
        return obj("finfo", dtype=dtype)
    if qualified == "torch.device":
        return obj("device", type=_device_name(positional[0] if positional else UNKNOWN))
    if qualified in trainingdata.NO_GRAD_CONTEXTS:
        mode = positional[0] if positional else kwargs.get("mode")
        if not (isinstance(mode, Scalar) and mode.value is False):  # ``inference_mode(False)`` records
            return obj("nullcontext", no_grad=Scalar("bool", True))
    if qualified in trainingdata.NULL_CONTEXTS:
        return obj("nullcontext")
    if qualified in optable.MODULE_WRAPPERS:
        inner = positional[0] if positional else kwargs.get("module", UNKNOWN)
        mixed = kwargs.get("mixed_precision")
        if isinstance(mixed, Obj) and mixed.kind == "fsdp_mixed_precision":
            note_framework(interp, frame, "fsdp", None, _origin(frame, node, "framework"))
        if isinstance(inner, Module) and isinstance(mixed, Obj) and mixed.kind == "fsdp_mixed_precision":
            param_dtype = mixed.get("param_dtype")
            if isinstance(param_dtype, DType) and param_dtype.dtypes & HALF:
                return Module(inner.cls, param_dtype.dtypes, False, _origin(frame, node, "framework"), inner.items,
                              master=True, names=inner.names)
        return inner
    if short == "fully_shard" and qualified.startswith("torch.distributed"):
        policy = kwargs.get("mp_policy")
        if isinstance(policy, Obj) and policy.kind == "fsdp_mixed_precision":
            note_framework(interp, frame, "fsdp", None, _origin(frame, node, "framework"))
        return positional[0] if positional else UNKNOWN
    if qualified in trainingdata.FSDP_MIXED_PRECISION:
        return obj("fsdp_mixed_precision", param_dtype=kwargs.get("param_dtype") or NONE)
    if qualified in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                     "torch.nn.parameter.Buffer", "torch.nn.UninitializedParameter"):
        inner = positional[0] if positional else kwargs.get("data", UNKNOWN)
        if isinstance(inner, Tensor):
            return Tensor(inner.dtypes, inner.unknown, inner.origin, param=True, zero_dim=inner.zero_dim)
        return Tensor(F32 if not positional else 0, bool(positional), param=True)
    if qualified.startswith("torch.nn.") and short[:1].isupper() and ".functional" not in qualified \
            and ".utils" not in qualified and ".init" not in qualified:
        return make_nn_module(interp, frame, qualified, short, positional, kwargs, node, args)
    if short == "from_pretrained":
        return from_pretrained(interp, frame, Ext(qualified.rsplit(".", 1)[0]), args, kwargs, node)
    if qualified in trainingdata.APEX_INITIALIZE:
        result = apex_initialize(frame, positional, kwargs, node)
        level = kwargs.get("opt_level")
        if isinstance(level, Scalar) and level.value == "O1" or level is None:
            interp.enter_state(frame, ("apex", F16), _origin(frame, node, "apex"))
        return result
    if qualified in trainingdata.DEEPSPEED_INITIALIZE:
        return deepspeed_initialize(interp, frame, positional, kwargs, node)
    if qualified == "argparse.ArgumentParser":
        return obj("argparser", args=DictVal())
    if qualified in ("copy.deepcopy", "copy.copy") and positional:
        return positional[0]
    if qualified == "dataclasses.field":
        return kwargs.get("default", UNKNOWN)
    if qualified.startswith("math.") and positional:
        return _math(short, positional)
    if qualified.startswith("numpy.") and positional and short in _NUMPY_SCALAR_MATH \
            and all(isinstance(p, Scalar) and p.number is not None for p in positional):
        return _math(short, positional)  # ``np.log(1 / 0.07)``: a number, as Python's own
    if qualified.startswith("torch."):
        return torch_function(interp, frame, qualified, short, positional, kwargs, node)
    if short[:1].isupper() and short not in ("Path",):
        return library_object(interp, qualified, positional, kwargs, frame, node)
    return UNKNOWN


def torch_function(interp: "Interpreter", frame: "Frame", qualified: str, short: str, positional: List[Value],
                   kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    result = _torch_function(interp, frame, qualified, short, positional, kwargs, node)
    if isinstance(result, Tensor) and not result.zero_dim and (
            (short in optable.FULL_REDUCTIONS and len(positional) == 1 and not kwargs.keys() & {"dim", "axis"})
            or (short in ("tensor", "scalar_tensor", "as_tensor") and positional
                and isinstance(positional[0], Scalar))
            or (short in ("zeros", "ones", "empty", "full", "rand", "randn") and positional
                and isinstance(positional[0], Seq) and not positional[0].items)):  # ``torch.ones(())``
        return replace(result, zero_dim=True)
    return result


def _torch_function(interp: "Interpreter", frame: "Frame", qualified: str, short: str, positional: List[Value],
                   kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    explicit = _dtype_kw(kwargs)
    kind = optable.RESULT_KINDS.get(short)
    if kind in (optable.FACTORY, optable.FACTORY_INT):
        if explicit is not None:
            return _with_origin(_explicit(explicit), frame, node)
        if kind == optable.FACTORY_INT and not any(isinstance(a, Scalar) and a.kind == "float" for a in positional):
            return Tensor(INT)
        if short == "full" and len(positional) > 1:
            fill = positional[1]
            if isinstance(fill, Scalar) and fill.kind == "int":
                return Tensor(INT)
            if isinstance(fill, Scalar) and fill.kind == "bool":
                return Tensor(BOOL)
        default = default_dtype(interp, frame)
        if default is not None:
            return Tensor(default.dtypes, False, default.origin)
        return Tensor(F32)
    if kind == optable.INFER:
        if explicit is not None:
            return _with_origin(_explicit(explicit), frame, node)
        return _infer_data(positional[0] if positional else UNKNOWN)
    if kind == optable.LIKE:
        if explicit is not None:
            return _with_origin(_explicit(explicit), frame, node)
        tensors = _tensors(positional[:1])
        return Tensor(tensors[0].dtypes, tensors[0].unknown, tensors[0].origin) if tensors else Tensor(0, True)
    if kind == optable.INT_RESULT:
        return Tensor(INT)
    if kind == optable.BOOL_RESULT:
        return Tensor(BOOL) if positional and _tensors(positional[:1]) else Scalar("bool")
    if kind == optable.PYTHON:
        return Scalar("bool") if short.startswith("is_") else UNKNOWN
    if short in ("set_default_dtype", "set_default_tensor_type"):
        _set_default_dtype(frame, short, positional, node)
        return NONE
    if short in ("manual_seed", "set_num_threads", "save", "load", "is_available",
                 "device_count", "current_device", "set_device", "synchronize", "empty_cache", "get_rank",
                 "get_world_size", "is_initialized", "init_process_group", "barrier", "compile"):
        if short == "compile" and positional:
            return positional[0]
        if short in ("is_available", "is_initialized"):
            return Scalar("bool")
        return UNKNOWN
    if short == "where" and len(positional) == 3:
        branches = [v for v in positional[1:] if not isinstance(v, Scalar)]
        return apply_op("where", branches or positional[1:], frame)
    if short in ("split", "chunk", "unbind", "tensor_split"):
        tensors = _tensors(positional[:1])
        return Coll(Tensor(tensors[0].dtypes, tensors[0].unknown, tensors[0].origin, learned=tensors[0].learned)) \
            if tensors else Coll(UNKNOWN)
    if short in ("max", "min") and len(positional) > 1 and _tensors(positional[1:2]):
        return apply_op(short + "imum", positional[:2], frame)  # ``torch.max(a, b)``: elementwise, promoted
    if short in ("max", "min", "sort", "topk", "kthvalue", "median", "mode") and (len(positional) > 1 or kwargs):
        tensors = _tensors(positional[:1])
        if tensors and short not in ("max", "min") or (tensors and isinstance(positional[1] if len(positional) > 1
                                                                              else kwargs.get("dim"), Scalar)):
            t = tensors[0]
            return Seq((Tensor(t.dtypes, t.unknown, t.origin, learned=t.learned), Tensor(INT)))
    inputs = _tensor_inputs(short, positional, kwargs)
    if short == "einsum" and frame.state is None and explicit is None and positional \
            and _sums_no_index(positional[0]):
        # ``einsum("bd,dn->bdn", a, b)``: a broadcast product, which promotes mixed dtypes as ``*`` does
        # (measured, torch 2.13: float16 and float32 give float32; with a summed index it raises)
        return apply_op("mul", inputs, frame)
    if short in optable.AUTOCAST_OPS or short in optable.LOSSES or optable.TENSOR_ARGS.get(short) == "seq":
        functional = qualified.startswith("torch.nn.functional.")
        return _with_origin(apply_op(short, inputs, frame, explicit, functional), frame, node)
    # an unlisted function of a model (``torch.xpu.optimize(model, dtype=...)``) is no tensor op, and
    # one of an unknown value says nothing about its result even with ``dtype=``
    given = [option for value in positional for option in options(value)]
    if any(isinstance(option, (Module, Instance)) for option in given) or (
            explicit is not None and any(option is UNKNOWN for option in given)):
        return UNKNOWN
    if explicit is not None:
        return _with_origin(_explicit(explicit), frame, node)
    tensors = _tensors(inputs)
    if tensors:
        return apply_op(short, inputs, frame)
    return UNKNOWN


def _infer_data(value: Value) -> Value:
    if isinstance(value, Tensor):
        return Tensor(value.dtypes, value.unknown, value.origin)
    if isinstance(value, Scalar):
        return Tensor({"float": F32, "int": INT, "bool": BOOL}.get(value.kind, 0), value.kind not in
                      ("float", "int", "bool"))
    if isinstance(value, (Seq, Coll)):
        return _infer_data(element(value))
    return Tensor(0, True)


#: numpy functions that, on Python numbers, give a number as :mod:`math`'s function of the same name
#: (a numpy float64, which torch promotes as a Python float)
_NUMPY_SCALAR_MATH = frozenset(("log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "sin", "cos", "tan"))


def _math(short: str, positional: List[Value]) -> Value:
    x = positional[0]
    if isinstance(x, Scalar) and isinstance(x.value, (int, float)) and not isinstance(x.value, bool):
        func = getattr(math, short, None)
        if callable(func):
            try:
                result = func(*[p.value for p in positional if isinstance(p, Scalar)])
            except (TypeError, ValueError, OverflowError):
                return Scalar("float")
            known = python_scalar(result)
            if known is not None and known.kind in ("bool", "int", "float"):
                return known
    return Scalar("float")


def _device_name(value: Value) -> Value:
    if isinstance(value, Scalar) and isinstance(value.value, str):
        return Scalar("str", value.value.split(":")[0])
    return Scalar("str")


def keeps_master_weights(callee: Value) -> bool:
    """A wrapper that keeps fp32 master weights for the optimizer passed to it (by its name)."""
    if isinstance(callee, Ext):
        if callee.name in trainingdata.MASTER_WEIGHT_BUILDERS:
            return True
        name = callee.name.rsplit(".", 1)[-1]
    elif isinstance(callee, ClassVal):
        name = callee.info.name
    elif isinstance(callee, FuncVal):
        name = callee.info.name
    else:
        return False
    return name in trainingdata.MASTER_WEIGHT_WRAPPERS


def make_optimizer(qualified: str, positional: List[Value], kwargs: Dict[str, Value],
                   site: Optional[str] = None) -> Value:
    short = qualified.rsplit(".", 1)[-1]
    params = positional[0] if positional else kwargs.get("params", UNKNOWN)
    eps = kwargs.get("eps")
    known = optable.EPS_OPTIMIZERS.get(short)
    if eps is None and known is not None:
        default, position = known
        eps = positional[position] if len(positional) > position else Scalar("float", default)
    elif eps is None:
        eps = NONE
    fused = kwargs.get("fused") or Scalar("bool", False)
    return obj("optimizer", name=Scalar("str", qualified), params=params, eps=eps, fused=fused,
               master=Scalar("bool", False), site=Scalar("str", site))


def layer_isinstance(interp: "Interpreter", value: Value, classes: Value) -> Optional[bool]:
    """``isinstance(layer, (nn.Linear, nn.Conv2d))`` for a ``torch.nn`` layer of a known class (only
    while a converter is tried on each kind of layer: deciding these tests everywhere changed which
    paths other code takes, and lost findings on timm that a blind triage had judged true), tested
    against ``torch.nn`` layer classes (``MODULE_KINDS``, none a subclass of another) or ``nn.Module``,
    or a project class built on one (``class BatchNorm(nn.BatchNorm2d)``: a layer of another kind is
    none, one of that kind may be); None where the answer is not known (another library's class)."""
    layers = options(value)
    tested = classes.items if isinstance(classes, Seq) else (classes,)
    names: List[str] = []
    subclassed: Set[str] = set()  # kinds a tested project class derives from: the answer is unknown
    for cls in tested:
        if isinstance(cls, ClassVal):
            bases = _layer_bases(interp, cls)
            if not bases:
                return None
            subclassed |= bases
            continue
        if not isinstance(cls, Ext) or not cls.name.startswith("torch.nn."):
            return None
        short = cls.name.rsplit(".", 1)[-1]
        if short != "Module" and (short not in optable.MODULE_KINDS or short.startswith("Lazy")):
            return None
        names.append(short)
    answers = set()
    for layer in layers:
        short = layer.layer_name if isinstance(layer, Module) else None
        if short is None or short not in optable.MODULE_KINDS or short.startswith("Lazy"):
            return None
        if "Module" in names or short in names:
            answers.add(True)
        elif short in subclassed:
            return None
        else:
            answers.add(False)
    return answers.pop() if len(answers) == 1 else None


def _layer_bases(interp: "Interpreter", cls: ClassVal) -> Set[str]:
    """The ``torch.nn`` layer classes (``MODULE_KINDS``) a project class derives from; empty where
    one of its bases is neither a project class nor a ``torch.nn`` layer class (``nn.Module``,
    another library's class): a layer of any kind might then be one."""
    found: Set[str] = set()
    for info in interp.mro(cls.info):
        for base in info.bases:
            for option in options(base):
                if isinstance(option, ClassVal):
                    continue
                short = option.name.rsplit(".", 1)[-1] if isinstance(option, Ext) and option.name.startswith(
                    "torch.nn.") else None
                if short is None or short not in optable.MODULE_KINDS:
                    return set()
                found.add(short)
    return found


#: the builtin container classes ``isinstance`` is decided for (:func:`container_isinstance`)
_CONTAINER_CLASSES = frozenset({"tuple", "list", "dict"})


def container_isinstance(value: Value, classes: Value) -> Optional[bool]:
    """``isinstance(x, (tuple, list))`` where every value ``x`` may be is a tuple or list of known
    length (True) or None or a dict with known keys, or, tested against ``dict``, such a dict (True),
    and None or a tuple or list (False). A list and a tuple are not told apart, so a test against
    only one of them is not decided; nor is one of a tensor or an unknown value (what the analysis
    takes for a tensor may be a library call's tuple)."""
    tested = classes.items if isinstance(classes, Seq) else (classes,)
    names = {cls.name for cls in tested if isinstance(cls, Builtin)}
    if len(names) != len(tested) or not names <= _CONTAINER_CLASSES:
        return None
    answers = set()
    for option in options(value):
        if isinstance(option, Seq):
            if not {"tuple", "list"} <= names and names & {"tuple", "list"}:
                return None
            answers.add(bool(names & {"tuple", "list"}))
        elif isinstance(option, DictVal) and option.keys_known:
            answers.add("dict" in names)
        elif option == NONE:
            answers.add(False)
        else:
            return None
    return answers.pop() if len(answers) == 1 else None


def make_nn_module(interp: "Interpreter", frame: "Frame", qualified: str, short: str, positional: List[Value],
                   kwargs: Dict[str, Value], node: Optional[ast.AST], args: Sequence[Value] = ()) -> Value:
    cast = F32
    origin = None
    dtype = _dtype_kw(kwargs)
    default = default_dtype(interp, frame)
    if default is not None:  # parameters are created in the default dtype
        cast, origin = default.dtypes, default.origin
    if isinstance(dtype, DType) and dtype.dtypes & FLOATS:
        cast = dtype.dtypes & FLOATS
        origin = _origin(frame, node, "dtype") if cast & HALF else None
    items: Tuple[Value, ...] = ()
    if short == "Sequential":
        if len(positional) == 1 and isinstance(positional[0], DictVal):
            items = tuple(v for _, v in positional[0].items)
        else:
            flat: List[Value] = []
            for arg in args or positional:
                if _is_star(arg):  # ``nn.Sequential(*[Block() for _ in range(n)])``
                    inner = arg.value  # type: ignore[attr-defined]
                    # n copies: two stand for them (the second sees the first's output)
                    flat.extend(inner.items if isinstance(inner, Seq) else [element(inner)] * 2)
                else:
                    flat.append(arg)
            items = tuple(flat)
    elif short in ("ModuleList", "ParameterList") and positional:
        first = positional[0]
        items = first.items if isinstance(first, Seq) else ((element(first),) if first is not UNKNOWN else ())
    names: Tuple[str, ...] = ()
    if short in ("ModuleDict", "ParameterDict") and positional and isinstance(positional[0], DictVal):
        items = tuple(v for _, v in positional[0].items)
        keys = [k for k, _ in positional[0].items]
        names = tuple(keys) if all(isinstance(k, str) for k in keys) else ()  # type: ignore[arg-type]
    return Module(Ext(qualified), cast, False, origin, items, site=node, names=names)


def from_pretrained(interp: "Interpreter", frame: "Frame", cls: Value, args: List[Value], kwargs: Dict[str, Value],
                    node: Optional[ast.AST]) -> Value:
    """``Model.from_pretrained(..., torch_dtype=...)``: a model cast to that dtype (fp32 by default)."""
    dtype = kwargs.get("torch_dtype") or kwargs.get("dtype")
    if isinstance(cls, ClassVal):
        base = interp.instantiate(cls, [UNKNOWN], {}, frame, node)
        module = base if isinstance(base, Module) else Module(cls)
    else:
        module = Module(cls)
    if dtype is None:
        return module
    target = _cast_target([dtype], {})
    stored_half = _stored_half(cls, dtype)
    if stored_half:  # ``torch_dtype="auto"``: the checkpoint's float16 or bfloat16
        target = join(target, DType(HALF)) if isinstance(target, DType) else DType(HALF)
    if isinstance(target, DType) and target.dtypes & FLOATS:
        origin = _origin(frame, node, "checkpoint_dtype" if stored_half else "from_pretrained")
        if origin is not None and target.origin is not None and target.origin.condition:
            origin = replace(origin, condition=target.origin.condition)  # ``torch.float16 if fp16 else "auto"``
        result = module.cast_to(target.dtypes & FLOATS, origin)
        interp.add_seed(result, frame)
        return result.with_unknown() if target.unknown else result
    return module.with_unknown()


def _stored_half(cls: Value, dtype: Value) -> bool:
    """``torch_dtype="auto"`` given to a model class whose checkpoints are stored in half precision
    (:data:`~amp_lint.data.libraries.HALF_CHECKPOINT_CLASS_SUFFIXES`): it loads them in that dtype."""
    if not any(isinstance(o, Scalar) and o.value == "auto" for o in options(dtype)):
        return False
    names = [o.name if isinstance(o, Ext) else o.info.qualname if isinstance(o, ClassVal) else "" for o in options(cls)]
    return bool(names) and all(name.endswith(libraries.HALF_CHECKPOINT_CLASS_SUFFIXES) for name in names)


def apex_initialize(frame: "Frame", positional: List[Value], kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    model = kwargs.get("models") or (positional[0] if positional else UNKNOWN)
    optimizer = kwargs.get("optimizers") or (positional[1] if len(positional) > 1 else UNKNOWN)
    level = kwargs.get("opt_level")
    name = level.value if isinstance(level, Scalar) and isinstance(level.value, str) else None
    if level is None:
        name = "O1"  # apex's default opt_level
    origin = _origin(frame, node, "apex")
    # apex patches an O2/O3 model's forward: floating inputs cast to half, outputs to float32
    # (unless ``cast_model_outputs`` names another dtype)
    mode = "" if "cast_model_outputs" in kwargs else APEX_CAST_IO

    def initialised(model: Value) -> Value:
        if isinstance(model, Seq):  # ``amp.initialize([encoder, decoder], ...)``
            return Seq(tuple(initialised(item) for item in model.items), model.names)
        if isinstance(model, Coll):
            return Coll(initialised(model.elem), tuple(initialised(item) for item in model.prefix))
        if len(options(model)) > 1:
            out: Optional[Value] = None
            for option in options(model):
                out = join(out, initialised(option))
            return out if out is not None else model
        if not isinstance(model, Module):
            return model
        patched = _mark_apex(Module(model.cls, model.cast, model.cast_unknown, origin, model.items, master=True))
        if name == "O1":
            return patched
        if name in ("O2", "O3"):
            return Module(model.cls, F16, False, origin, model.items, master=(name == "O2"), mode=mode)
        if name is not None:  # O0: float32 as it was
            return model
        # an opt level chosen at run time (``'O%i' % params.amp``): apex-O1 patched, or (at O2/O3)
        # cast to float16 - under that condition, as a cast under ``if args.fp16:`` is
        expr = _argument_node(node, "opt_level", 3)
        condition = f"{frame.module.segment(expr, 40) if expr is not None else '?'} in ('O2', 'O3')"
        cast = Module(model.cls, F16, False, origin, model.items, master=True, mode=mode)
        return join(patched, with_condition(cast, condition))

    model = initialised(model)
    if isinstance(optimizer, Obj) and optimizer.kind == "optimizer":
        optimizer = optimizer.set("master", Scalar("bool", name in ("O1", "O2") or name is None))
        optimizer = optimizer.set("loss_scaler", Scalar("str", "apex"))
    return Seq((model, optimizer))


def deepspeed_initialize(interp: "Interpreter", frame: "Frame", positional: List[Value], kwargs: Dict[str, Value],
                         node: Optional[ast.AST]) -> Value:
    """``deepspeed.initialize(args, model, ..., config=...)``: (engine, optimizer, loader, scheduler).
    The engine keeps fp32 master weights and scales the loss; where its config (a dict, or a
    config file by a known path) enables ``fp16`` or ``bf16``, it casts the model to that dtype
    (DeepSpeed ``engine.py``, ``_configure_distributed_model``), so its forward runs in half."""
    origin = _origin(frame, node, "framework")
    config = kwargs.get("config") or kwargs.get("config_params")
    if isinstance(config, (Scalar, Obj)):
        config = load_config(interp, frame, config)
    half = deepspeed_half(config)
    if config is None and (kwargs.get("args") or positional[:1]):
        half = written_deepspeed_half(interp) or shipped_deepspeed_half(interp, frame)
    note_framework(interp, frame, "deepspeed", ("fp16" if half[0] == F16 else "bf16") if half else None, origin)
    model = kwargs.get("model") or (positional[1] if len(positional) > 1 else UNKNOWN)

    def engine_of(model: Value) -> Value:
        if len(options(model)) > 1:
            out: Optional[Value] = None
            for option in options(model):
                out = join(out, engine_of(option))
            return out if out is not None else model
        plain = model if isinstance(model, Module) else Module(None, 0, True)
        # a config not known here: the model as the code made it. Its parameters may be cast by
        # that config, which no finding assumes; marking them of unknown dtype erased the half
        # casts of the modules it wraps (a wrapper's children are fields, not in this value)
        engine = Module(plain.cls, plain.cast, plain.cast_unknown, plain.origin, plain.items, master=True)
        if half is None:
            return engine
        cast = Module(plain.cls, half[0], False, origin, plain.items, master=True)
        return cast if half[1] is None else join(engine, with_condition(cast, half[1]))

    return Seq((engine_of(model), obj("optimizer", name=Scalar("str", "deepspeed"), master=Scalar("bool", True),
                                      params=UNKNOWN), UNKNOWN, UNKNOWN))


def written_deepspeed_half(interp: "Interpreter") -> Optional[Tuple[int, Optional[str]]]:
    """For a config named by ``args`` (``args.deepspeed_config``): the half dtype a DeepSpeed config
    the program itself writes enables (``create_ds_config(args)`` dumps ``{"fp16": {"enabled":
    True}, ...}`` to the path it sets there), unconditionally where that is its only one."""
    halves = {deepspeed_half(config) for config, _ in interp.written_deepspeed}
    if len(halves) != 1:
        return None
    return next(iter(halves))


def shipped_deepspeed_half(interp: "Interpreter", frame: "Frame") -> Optional[Tuple[int, Optional[str]]]:
    """For a config named on the command line (``--deepspeed_config``): the half dtype the
    DeepSpeed configs shipped beside the script enable, under the condition that the run names
    that file (the first, in name order, that enables one)."""
    folder = str(PurePosixPath(frame.module.relpath).parent)
    for path in interp.configs.listing("" if folder == "." else folder, ".json"):
        config = config_value(interp.configs.load(path))
        if isinstance(config, DictVal) and any(config.value_of(key) is not None
                                               for key in trainingdata.DEEPSPEED_CONFIG_KEYS):
            half = deepspeed_half(config)
            if half is not None:
                return half[0], f"the run's DeepSpeed config is {path}"
    return None


def deepspeed_half(config: Optional[Value]) -> Optional[Tuple[int, Optional[str]]]:
    """The half dtype a DeepSpeed config enables (``{"fp16": {"enabled": true}}``, ``bf16``), and
    the condition it holds under when ``enabled`` is not a constant (None when always); None
    when the config is not known or enables neither (``"auto"`` is decided by a trainer). Of a
    config that may be one of several (a builder that returns its dict or gives up), the first
    that enables one."""
    if not isinstance(config, DictVal):
        for option in options(config) if config is not None else ():
            half = deepspeed_half(option) if isinstance(option, DictVal) else None
            if half is not None:
                return half
        return None
    for key, name in trainingdata.DEEPSPEED_HALF_SECTIONS:
        bits = _DTYPE_BITS[name]
        section = config.value_of(key)
        enabled = section.value_of("enabled") if isinstance(section, DictVal) else None
        if not isinstance(enabled, Scalar) or enabled.value is False or enabled.kind == "str":
            continue
        if enabled.value is True:
            return bits, None
        if enabled.kind == "bool":
            return bits, f"{key}.enabled in the DeepSpeed config"
    return None


#: :attr:`Module.mode` of a model apex O1 initialised: its calls run as under apex's patched
#: torch functions (as autocast would, with apex's lists)
APEX_O1 = "apex-O1"
#: :attr:`Module.mode` of a model apex O2/O3 initialised: its forward's floating inputs are cast
#: to float16 and its outputs to float32 (apex ``_initialize.py``, ``patch_forward``)
APEX_CAST_IO = "apex-cast-io"


def is_no_grad(value: Value) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (as a context or a decorator, called or not)."""
    return (isinstance(value, Obj) and value.kind == "nullcontext" and value.get("no_grad") is not None
            or isinstance(value, Ext) and value.name in trainingdata.NO_GRAD_CONTEXTS)


def map_tensors(value: Value, fn: Callable[[Tensor], Value]) -> Value:
    """``value`` with ``fn`` applied to each tensor in it: tensors, and tensors in tuples, lists,
    dicts and each member of a union."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, Seq):
        return Seq(tuple(map_tensors(v, fn) for v in value.items), value.names)
    if isinstance(value, Coll):
        return Coll(map_tensors(value.elem, fn), tuple(map_tensors(v, fn) for v in value.prefix))
    if isinstance(value, DictVal):
        return DictVal(tuple((k, map_tensors(v, fn)) for k, v in value.items))
    members = options(value)
    if len(members) > 1:
        out: Optional[Value] = None
        for member in members:
            out = join(out, map_tensors(member, fn))
        return out if out is not None else value
    return value


def detached(value: Value) -> Value:
    """``value`` computed where autograd records nothing: its tensors have no graph of half ops."""
    return map_tensors(value, lambda t: t if t.detached else replace(t, graph=0, detached=True))


def cast_floating(value: Value, dtype: int) -> Value:
    """``value`` with each floating tensor in it cast to ``dtype`` (apex's ``applier(..., to_type)``)."""
    return map_tensors(value, lambda t: replace(t, dtypes=(t.dtypes & ~FLOATS) | dtype, graph=t.low_graph, param=False)
                       if t.dtypes & FLOATS else t)


def cast_input(value: Value, dtype: int, origin: Optional[Origin]) -> Value:
    """An input of a model whose forward casts its floating inputs to ``dtype`` (apex O2/O3's
    patched forward): :func:`cast_floating`; a value of unknown kind (a batch from a data loader)
    may be a floating tensor, so it is also one of ``dtype`` made there."""
    if value is UNKNOWN:
        return join(UNKNOWN, Tensor(dtype, False, origin))
    return cast_floating(value, dtype)


def apex_o1_origin(origin: Optional[Origin]) -> Optional[Origin]:
    """The origin of what an apex-O1 model (initialised at ``origin``) computes."""
    return replace(origin, kind=APEX_O1_ORIGIN) if origin is not None and origin.kind == "apex" else origin


#: :attr:`Module.mode` of a model Lightning Fabric set up at a "true" half precision: its floating
#: inputs are cast to its dtype and its outputs to float32 (as apex O2's)
FABRIC_CAST_IO = "fabric-cast-io"
#: :attr:`Module.mode` of a model Lightning Fabric set up at a mixed precision, or Accelerate
#: prepared with native mixed precision: its forward runs under CUDA autocast to that dtype and its
#: outputs are cast to float32 (Fabric ``plugins/precision/amp.py``; Accelerate's ``prepare_model``
#: wraps the forward in autocast and ``convert_outputs_to_fp32``)
MIXED_F32_OUT_F16 = "mixed-f16-f32-out"
MIXED_F32_OUT_BF16 = "mixed-bf16-f32-out"
#: :attr:`Module.mode` of a float32 model Accelerate prepared where its mixed precision is not known
#: here: with mixed precision on, its outputs are cast to float32; off, it computes them in float32
F32_OUT = "f32-out"


def _mark_apex(model: Module) -> Module:
    # apex O1 patches torch functions: the model's forward runs as under autocast (apex's lists)
    return Module(model.cls, model.cast, model.cast_unknown, model.origin, model.items, model.master, APEX_O1)


def library_object(interp: "Interpreter", qualified: str, positional: List[Value], kwargs: Dict[str, Value],
                   frame: "Frame", node: Optional[ast.AST]) -> Value:
    short = qualified.rsplit(".", 1)[-1]
    framework = trainingdata.FRAMEWORK_PRECISION.get(short)
    if framework is not None and (qualified.split(".")[0] in trainingdata.FRAMEWORK_PACKAGES):
        kind, keys = framework
        precision: Optional[str] = None
        mixed = False
        for key in keys:
            if key not in kwargs:
                continue
            value = kwargs[key]
            known = value.value if isinstance(value, Scalar) else None
            if known in (False, "no", "fp32", "32", 32, "32-true", "64", 64, "64-true"):
                continue
            mixed = True
            precision = str(known) if known is not None and known is not True else (key if known is True else None)
        if mixed:
            note_framework(interp, frame, kind, precision, _origin(frame, node, "framework"))
        if kind == "accelerator":
            # a precision the code does not set is the launcher's (``accelerate launch --config_file``)
            launched = not {"mixed_precision", "deepspeed_plugin", "**"} & set(kwargs)
            return obj("accelerator", mixed_precision=kwargs.get("mixed_precision") or UNKNOWN,
                       name=Scalar("str", qualified),
                       launched_from=Scalar("str", frame.module.relpath if launched else None))
        if kind == "lightning":
            return obj("trainer", precision=kwargs.get("precision") or UNKNOWN, name=Scalar("str", qualified),
                       strategy=kwargs.get("strategy") or Scalar("str", "auto"))
        return obj("framework_config", name=Scalar("str", qualified))
    if qualified in trainingdata.AUTOCAST_TRAINERS and (positional or "model" in kwargs):
        run_autocast_trainer(interp, frame, kwargs.get("model") or positional[0], kwargs.get("precision"), node)
        return UNKNOWN
    if qualified in libraries.MODULES:
        return Module(Ext(qualified))
    if short in trainingdata.DATALOADERS:
        return obj("dataloader")
    if short in trainingdata.OPTIMIZER_NAMES:
        return make_optimizer(qualified, positional, kwargs, _site(frame, node))
    if is_module_base(qualified) or any(h in short for h in trainingdata.MODEL_CLASS_HINTS):
        return Module(Ext(qualified))
    return UNKNOWN


def library_call(interp: "Interpreter", frame: "Frame", kind: str, args: List[Value], kwargs: Dict[str, Value],
                 node: Optional[ast.AST]) -> Value:
    """A call of a function of another library listed in :data:`libraries.FUNCTIONS`."""
    if kind == libraries.EINSUM_PATTERN_LAST:
        positional = _positional(args)
        if not positional or len(positional) < len(args):
            return derived(args, kwargs, frame)
        return torch_function(interp, frame, "torch.einsum", "einsum", [positional[-1]] + positional[:-1], {}, node)
    if kwargs.keys() & libraries.EXTRA_OUTPUT_KEYWORDS:
        return derived(args, kwargs, frame)
    return same_as_first(args, kwargs, frame)


def same_as_first(args: Sequence[Value], kwargs: Dict[str, Value], frame: "Frame") -> Value:
    """A tensor of the first argument's dtype (a tensor, or a list of them as ``rearrange`` takes),
    computed from all the tensor arguments (their graphs; learned if one of them is)."""
    positional = _positional(args)
    first = positional[0] if positional else None
    if isinstance(first, (Seq, Coll)):
        first = element(first)
    if first is None or not any(isinstance(o, Tensor) for o in options(first)):
        return derived(args, kwargs, frame)
    graph, learned = 0, False
    for value in positional[1:] + list(kwargs.values()):
        for option in options(value):
            if isinstance(option, Tensor):
                graph, learned = graph | option.graph, learned or option.learned
    out: Optional[Value] = None
    for option in options(first):
        if isinstance(option, Tensor):
            option = replace(option, graph=option.graph | graph, learned=option.learned or learned)
        else:
            option = UNKNOWN
        out = join(out, option)
    return out if out is not None else UNKNOWN


def call_builtin(interp: "Interpreter", frame: "Frame", name: str, args: List[Value], kwargs: Dict[str, Value],
                 node: Optional[ast.AST]) -> Value:
    positional = _positional(args)
    first = positional[0] if positional else UNKNOWN
    if name in ("len", "id", "hash"):
        return Scalar("int")
    if name == "range":
        return Coll(Scalar("int"))
    if name == "enumerate":
        return Coll(Seq((Scalar("int"), interp.iterate(first, frame))))
    if name == "zip":
        return Coll(Seq(tuple(interp.iterate(a, frame) for a in positional)))
    if name == "map" and len(positional) >= 2 and len(positional) == len(args):
        return _map(interp, frame, positional[0], positional[1:], node)
    if name == "filter" and len(positional) == 2:  # the elements it keeps are the iterable's
        return Coll(interp.iterate(positional[1], frame))
    if name in ("int", "float", "bool", "str", "repr", "format"):
        kind = {"int": "int", "float": "float", "bool": "bool"}.get(name, "str")
        if isinstance(first, Scalar) and first.value is not None and kind != "str":
            try:
                return Scalar(kind, {"int": int, "float": float, "bool": bool}[kind](first.value))
            except (TypeError, ValueError, OverflowError):
                return Scalar(kind)
        return Scalar(kind)
    if name in ("min", "max"):
        values = positional if len(positional) > 1 else [interp.iterate(first, frame)]
        numbers = [v.value for v in values if isinstance(v, Scalar) and isinstance(v.value, (int, float))]
        if len(numbers) == len(values) and numbers:
            result = min(numbers) if name == "min" else max(numbers)
            return Scalar("int" if isinstance(result, int) else "float", result)
        out: Optional[Value] = None
        for v in values:
            out = join(out, v)
        return out if out is not None else UNKNOWN
    if name in ("abs", "round", "divmod", "pow"):
        if name == "abs" and isinstance(first, Scalar) and isinstance(first.value, (int, float)):
            return Scalar(first.kind, abs(first.value))
        return Scalar("num") if isinstance(first, Scalar) else first  # a tensor's abs is a tensor
    if name == "sum":
        if isinstance(first, Seq) and first.items and all(isinstance(i, Tensor) for i in first.items):
            return apply_op("add", list(first.items), frame)  # ``sum([a, b])`` is ``0 + a + b``: promoted
        elem = interp.iterate(first, frame)  # a sum of tensors (losses) is a tensor; unknown stays unknown
        return Scalar("num") if isinstance(elem, Scalar) else elem
    if name in ("sorted", "list", "tuple", "reversed", "set", "frozenset", "iter"):
        if (isinstance(first, Seq) or _is_parameters(first)) and name in ("list", "tuple"):
            return first  # ``list(model.parameters())`` stays the model's parameters, for an optimizer
        if isinstance(first, Module) and first.items:
            return Seq(first.items)
        return Coll(interp.iterate(first, frame)) if positional else Seq(())
    if name == "next":
        return interp.iterate(first, frame)
    if name == "dict":
        return dict_of(first if positional else None, kwargs)
    if name == "isinstance" and len(positional) == 2 and interp.probing_layers:
        return Scalar("bool", layer_isinstance(interp, first, positional[1]))
    if name == "isinstance" and len(positional) == 2:
        answer = container_isinstance(first, positional[1])
        if answer is not None:
            return Scalar("bool", answer)
    if name in ("isinstance", "issubclass", "hasattr", "callable", "any", "all"):
        return Scalar("bool")
    if name == "getattr" and len(positional) >= 2:
        names = known_strings(positional[1])
        if names:
            out: Optional[Value] = None
            for attr in names:  # ``getattr(self, "model" if encoder_only else "decoder")``: either
                found = interp.getattr(first, attr, frame, node)
                out = join(out, positional[2] if found is UNKNOWN and len(positional) > 2 else found)
            return out if out is not None else UNKNOWN
        if len(positional) != 2:
            return UNKNOWN
        out = None
        for option in options(first):
            if isinstance(option, ModVal):  # ``getattr(models, args.arch)``: what it defines
                found_any = [value for _, value in interp.module_callables(option.info)]
                out = join(out, element(Seq(tuple(found_any))) if found_any else UNKNOWN)
            elif isinstance(option, Ext) and option.name == "torch.optim":
                # ``getattr(torch.optim, args.optimizer)``: one of its optimizers, which is not known
                out = join(out, Ext(trainingdata.SOME_TORCH_OPTIMIZER))
            else:
                out = join(out, UNKNOWN)
        return out if out is not None else UNKNOWN
    if name == "eval" and len(positional) == 1:
        return _eval_name(interp, frame, first)
    if name == "__import__" and isinstance(node, ast.Call) and node.args and not any(
            k.arg is None for k in node.keywords):
        # ``__import__(name, fromlist=[...])`` is the module of that name; without a fromlist, its package
        fromlist = kwargs.get("fromlist") or (positional[3] if len(positional) > 3 else None)
        listed = fromlist is not None and not (isinstance(fromlist, Seq) and not fromlist.items)
        return interp.import_dynamic(node.args[0], frame, package_only=not listed, libraries_too=True)
    if name == "setattr" and len(positional) >= 3:
        for attr in known_strings(positional[1]):  # fields are joins: storing into each of a few names
            interp.store_attr(first, attr, positional[2], None, frame)  # type: ignore[arg-type]
        return NONE
    if name == "super":
        info = frame.info
        cls = info.cls if info is not None else None
        if cls is None or info is None:
            return UNKNOWN
        spec = info.node.args  # type: ignore[attr-defined]
        params = spec.posonlyargs + spec.args
        receiver = frame.env.get(params[0].arg) if params else None
        if receiver is None:
            return UNKNOWN
        return obj("super", cls=ClassVal(cls), receiver=receiver)
    if name == "vars" and len(positional) == 1 and isinstance(first, Obj) and first.kind == "namespace":
        # ``config = vars(parser.parse_args())``: the flags as a dict (BigGAN's ``config['model']``)
        return DictVal(first.attrs)
    if name == "open" and positional and isinstance(first, Scalar) and (first.value or first.default):
        return obj("file", path=first)
    if name in ("print", "setattr", "delattr", "open", "input", "vars", "type", "map", "filter", "object",
                "property", "staticmethod", "classmethod"):
        if name in ("property", "staticmethod", "classmethod") and positional:
            return positional[0]
        return NONE if name == "print" else UNKNOWN
    return UNKNOWN


#: ``map(f, (q, k, v))`` over at most this many known items calls ``f`` on each (``q, k, v = map(...)``
#: keeps each its own dtype); over more, or over an iterable of unknown length, once on their join
MAX_MAPPED_ITEMS = 8  # also the items a comprehension over a known tuple or list maps one by one


def _eval_name(interp: "Interpreter", frame: "Frame", source: Value) -> Value:
    """``eval(text)``: a (dotted) name the string spells is looked up where the call is; a string
    nobody knows, where the calling module's names reach ``nn.Module`` classes of the project (YOLO's
    ``parse_model`` evaluates the layer names of a model YAML), is one of them, or anything else
    (:data:`trainingdata.SOME_PROJECT_MODULE_CLASS`). Any other expression is unknown."""
    texts = known_strings(source)
    if texts:
        out: Optional[Value] = None
        for text in texts:
            parts = text.strip().split(".")
            if not all(part.isidentifier() for part in parts):
                return UNKNOWN
            value = interp.lookup(parts[0], frame)
            for part in parts[1:]:
                value = interp.getattr(value, part, frame, None)
            out = join(out, value)
        return out if out is not None else UNKNOWN
    if not (source is UNKNOWN or (isinstance(source, Scalar) and source.kind == "str")):
        return UNKNOWN
    if any(isinstance(value, ClassVal) and getattr(value.info, "is_module", False)
           for value in interp.global_env(frame.module).values()):
        return join(Ext(trainingdata.SOME_PROJECT_MODULE_CLASS), UNKNOWN)
    return UNKNOWN


def _map(interp: "Interpreter", frame: "Frame", fn: Value, iterables: List[Value], node: Optional[ast.AST]) -> Value:
    """``map(fn, *iterables)``: what ``fn`` returns for their items, item by item where every
    iterable is a tuple or list of the same known length."""
    # the calls are made at the ``map`` call's place, but are not that call (whose arguments are
    # ``fn`` and the iterables): a name at its location, so no effect rebinds its arguments. One
    # per call node, kept for the run: call sites are known by the id of their node
    site = interp.map_sites.setdefault(id(node), ast.copy_location(ast.Name(id="map", ctx=ast.Load()), node)) \
        if isinstance(node, ast.Call) else None
    lengths = {len(s.items) for s in iterables if isinstance(s, Seq)}
    if all(isinstance(s, Seq) for s in iterables) and len(lengths) == 1 and 0 < min(lengths) <= MAX_MAPPED_ITEMS:
        count = min(lengths)
        return Seq(tuple(_call_each(interp, frame, fn, [s.items[i] for s in iterables], site)  # type: ignore[attr-defined]
                         for i in range(count)))
    return Coll(_call_each(interp, frame, fn, [interp.iterate(s, frame) for s in iterables], site))


def build_registered(interp: "Interpreter", frame: "Frame", registry: str, args: List[Value],
                     kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Optional[Value]:
    """``timm.create_model(name, pretrained, **kwargs)`` where the project registered its own models
    with the library's decorator: the model the function registered under ``name`` builds, or, where
    the name is not known here, the join of every registered model. None where nothing is registered
    or a name known here is not one of the project's (a model of the library itself)."""
    registered = interp.library_models.get(registry)
    positional = _positional(args)
    if not registered or len(positional) < len(args):
        return None
    builders = _builders_named(interp, frame, registered, positional[0] if positional else kwargs.get(
        "model_name", UNKNOWN))
    if builders is None:
        return None
    passed = {k: v for k, v in kwargs.items() if k not in libraries.MODEL_FACTORY_KEYWORDS}
    if len(positional) > 1:
        passed.setdefault("pretrained", positional[1])
    out: Optional[Value] = None
    for builder in builders:
        out = join(out, interp.call(builder, [], dict(passed), frame, node))
    return out


def registered_class(interp: "Interpreter", frame: "Frame", registry: Obj, name: Value) -> Value:
    """``REGISTRY.get(name)`` of a project's fvcore registry: the class or function registered under
    ``name``, or, where the name is not known here (a config's), any of them (the program's files'
    first). Unknown where nothing is registered there or the name is not."""
    key = registry.get("key")
    registered = interp.library_models.get(key.value) if isinstance(key, Scalar) and isinstance(key.value, str) else None
    builders = _builders_named(interp, frame, registered, name) if registered else None
    return registry_join(builders) if builders is not None else UNKNOWN


def _builders_named(interp: "Interpreter", frame: "Frame", registered: Dict[str, Dict[str, Value]],
                    name: Value) -> Optional[List[Value]]:
    """What a registry keeps under ``name`` (name -> file -> builder), or, where the name is not
    known here, everything it keeps (the program's files' first); None where a name known here is
    not registered or there are more than :data:`REGISTRY_UNION_LIMIT`."""
    names = known_strings(name)
    if names and any(n not in registered for n in names):
        return None
    builders = _program_builders(interp, frame, [registered[n] for n in names] if names else list(registered.values()))
    return builders if len(builders) <= REGISTRY_UNION_LIMIT else None


def build_from_config(interp: "Interpreter", frame: "Frame", registry: str, args: List[Value],
                      kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Optional[Value]:
    """detectron2's ``build_model(cfg)``: the class (or builder) the config names among those the
    project registered with ``registry``, called with the builder's arguments. The config's choice is
    not known here, so it is any of them (the files the program imports first). None where the
    project registered nothing there: one of the library's own classes."""
    registered = interp.library_models.get(registry)
    if not registered:
        return None
    builders = _program_builders(interp, frame, list(registered.values()))
    if len(builders) > REGISTRY_UNION_LIMIT:
        return None
    out: Optional[Value] = None
    for builder in builders:
        out = join(out, interp.call(builder, list(args), dict(kwargs), frame, node))
    return out


def _program_builders(interp: "Interpreter", frame: "Frame", asked: List[Dict[str, Value]]) -> List[Value]:
    """Of the builders registered under the names asked for (each: file -> builder), those the files
    the program imports register (the program: the file whose run this is), where they register
    any: two scripts' model files may register one name. Else all of them."""
    program = interp.imported_by(frame.stack[0].path if frame.stack else frame.module.relpath)
    mine = [builder for by_file in asked for path, builder in by_file.items() if path in program]
    return mine or [builder for by_file in asked for builder in by_file.values()]


def _call_each(interp: "Interpreter", frame: "Frame", fn: Value, args: List[Value], site: Optional[ast.AST]) -> Value:
    """``fn(*args)`` for each callable ``fn`` may be."""
    out: Optional[Value] = None
    for option in options(fn):
        out = join(out, interp.call(option, list(args), {}, frame, site))
    return out if out is not None else UNKNOWN


def namedtuple_class(fields: Value) -> Value:
    """``collections.namedtuple(name, fields)``: fields as a list of names or one string of them."""
    if isinstance(fields, Scalar) and isinstance(fields.value, str):
        names = fields.value.replace(",", " ").split()
    elif isinstance(fields, Seq) and all(isinstance(i, Scalar) and isinstance(i.value, str) for i in fields.items):
        names = [i.value for i in fields.items]  # type: ignore[attr-defined]
    else:
        return UNKNOWN
    return obj("namedtuple", fields=Seq(tuple(Scalar("str", n) for n in names)))


def named_tuple(names: Tuple[str, ...], args: Sequence[Value], kwargs: Dict[str, Value],
                defaults: Dict[str, Value]) -> Value:
    """An instance of a named tuple with fields ``names`` (``defaults``: of the fields that have one)."""
    positional = _positional(args)
    if len(positional) < len(args) or "**" in kwargs:
        return Coll(UNKNOWN)
    items = [positional[i] if i < len(positional) else kwargs.get(n, defaults.get(n, UNKNOWN))
             for i, n in enumerate(names)]
    return Seq(tuple(items), names)


def call_obj(interp: "Interpreter", frame: "Frame", value: Obj, args: List[Value], kwargs: Dict[str, Value],
             node: Optional[ast.AST]) -> Value:
    if value.kind == "partial":  # ``functools.partial(f, *bound, **fixed)(*rest, **more)``
        bound, fixed = value.get("args"), value.get("kwargs")
        func = value.get("func") or UNKNOWN
        before = list(bound.items) if isinstance(bound, Seq) else [Star(bound)] if isinstance(bound, Coll) else []
        merged = dict(fixed.items) if isinstance(fixed, DictVal) else {}
        merged.update(kwargs)
        result = interp.call(func, before + list(args), merged, frame, node)
        condition = holds_under(value)  # an autocast picked on one path only
        return with_condition(result, condition) if condition is not None else result
    if value.kind == "namedtuple":
        fields = value.get("fields")
        names = tuple(i.value for i in fields.items) if isinstance(fields, Seq) else ()  # type: ignore[attr-defined]
        return named_tuple(names, args, kwargs, {})
    if value.kind == "ds_engine":
        module = value.get("module")
        if isinstance(module, Module):
            return interp.call_module(module, args, kwargs, frame, node)
    return UNKNOWN


def load_config(interp: "Interpreter", frame: "Frame", source: Value) -> Value:
    """The data of the config file ``source`` names: a path, ``open(path)`` or its ``read()``."""
    path = source.get("path") if isinstance(source, Obj) and source.kind in ("file", "file_text") else source
    text = (path.value if isinstance(path.value, str) else path.default) if isinstance(path, Scalar) else None
    if text is None:
        return UNKNOWN
    near = str(PurePosixPath(frame.module.relpath).parent)
    return config_value(interp.configs.load(text, near if near != "." else None))


def config_value(data: object, depth: int = 0) -> Value:
    """A config file's data as a value: mappings as dicts (keys as written), lists as tuples."""
    if data is configfiles.UNREAD or depth > 32:
        return UNKNOWN
    known = python_scalar(data)
    if known is not None:
        return known
    if isinstance(data, dict):
        return DictVal(tuple((key, config_value(value, depth + 1)) for key, value in data.items()
                             if isinstance(key, (str, int))))
    if isinstance(data, list):
        items = tuple(config_value(item, depth + 1) for item in data)
        return Seq(items) if len(items) <= 64 else Coll(element(Seq(items)))
    return UNKNOWN


def obj_method(interp: "Interpreter", frame: "Frame", value: Obj, name: str, args: List[Value],
               kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    positional = _positional(args)
    kind = value.kind
    if kind == "class_registry" and name == "get" and len(positional) == 1 and not kwargs:
        return registered_class(interp, frame, value, positional[0])
    if kind == "file" and name in ("read", "__enter__"):
        return obj("file_text", path=value.get("path") or UNKNOWN) if name == "read" else value
    if kind == "super":
        cls = value.get("cls")
        receiver = value.get("receiver")
        if isinstance(cls, ClassVal) and receiver is not None:
            owner_cls = receiver.cls if isinstance(receiver, (Module, Instance)) else None
            mro = interp.mro(owner_cls.info) if isinstance(owner_cls, ClassVal) else interp.mro(cls.info)
            after = False
            for klass in mro:
                if after and name in klass.methods:
                    return interp.call_function(klass.methods[name], receiver, args, kwargs, frame, node)
                if klass is cls.info:
                    after = True
            if name == "from_pretrained" and isinstance(receiver, ClassVal):
                return from_pretrained(interp, frame, receiver, args, kwargs, node)
        return NONE if name == "__init__" else UNKNOWN
    if kind == "grad_scaler":
        if name in ("step", "unscale_") and positional:
            dtypes, unknown, origin = param_dtypes(_optimizer_params(positional[0]))
            site = value.get("site")
            if dtypes & HALF and origin is not None and isinstance(site, Scalar) and site.value:
                interp.half_scalers.setdefault(site.value, origin)
        if name == "scale" and positional:
            loss = positional[0]
            if isinstance(loss, Tensor):
                return Tensor(loss.dtypes, loss.unknown, loss.origin, scaled=True)
            return Tensor(0, True, scaled=True)
        if name in ("get_scale",):
            return Scalar("float")
        if name in ("is_enabled",):
            return Scalar("bool")
        return NONE
    if kind == "argparser":
        if name in ("add_argument",) and positional:
            return _add_argument(interp, frame, value, positional, kwargs, node)
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return value
        if name == "set_defaults":
            updated = value
            for key, default in kwargs.items():
                updated = _declare(updated, key, default)
            mutate(interp, frame, node, updated)
            return NONE
        if name in ("parse_args", "parse_known_args"):
            declared = value.get("args")
            attrs = tuple(sorted(declared.items, key=lambda kv: str(kv[0]))) if isinstance(declared, DictVal) else ()
            namespace = Obj("namespace", tuple((str(k), v) for k, v in attrs))
            return Seq((namespace, Coll(Scalar("str")))) if name == "parse_known_args" else namespace
        return UNKNOWN
    if kind == "trainer" and name in trainingdata.LIGHTNING_LOOP_HOOKS and _is_lightning_trainer(value):
        model = kwargs.get("model") or (positional[0] if positional else None)
        if model is not None:
            run_lightning_loop(interp, frame, value, trainingdata.LIGHTNING_LOOP_HOOKS[name], model, node)
        return NONE
    if kind == "trainer" and name in ("setup", "setup_module"):
        return fabric_setup(interp, frame, value, name, positional, node)
    if kind == "trainer" and name == "launch" and args and not _is_star(args[0]):
        # Fabric's ``launch(function, *args)`` runs ``function(fabric, *args)`` in each process
        return interp.call(args[0], [value] + list(args[1:]), kwargs, frame, node)
    if kind == "accelerator":
        if name == "prepare":
            dtype = _mixed_precision_dtype(value.get("mixed_precision"))
            if dtype in (F16, BF16):  # the models: forward under autocast, outputs to float32
                mode = MIXED_F32_OUT_F16 if dtype == F16 else MIXED_F32_OUT_BF16
                positional = [union_of(replace(o, mode=mode) if type(o) is Module and not o.mode else o
                                       for o in options(p)) for p in positional]
            else:  # float32 models give float32 outputs, with mixed precision on or off
                positional = [union_of(replace(o, mode=F32_OUT) if type(o) is Module and not o.mode
                                       and o.cast == F32 and not o.cast_unknown else o
                                       for o in options(p)) for p in positional]
                launched = value.get("launched_from")
                if isinstance(launched, Scalar) and isinstance(launched.value, str):
                    positional = _launched_deepspeed(interp, frame, launched.value, positional, node)
            return positional[0] if len(positional) == 1 else Seq(tuple(positional))
        if name == "autocast":
            mp = value.get("mixed_precision")
            dtype = _mixed_precision_dtype(mp)
            return Autocast("cuda", dtype, None if dtype else False, _origin(frame, node, "framework")) if dtype \
                else obj("nullcontext")
        return UNKNOWN
    if kind == "optimizer" and name == "step":
        interp.stepping_calls.update(site.node_id for site in frame.stack)
        interp.stepped = True
        site = value.get("site")
        for origin in interp.pending_casts.get(site.value, ()) if isinstance(site, Scalar) else ():
            if (site.value, origin) not in interp.half_optimizers:
                interp.half_optimizers.append((site.value, origin))
        return NONE
    return UNKNOWN


def _is_lightning_trainer(value: Obj) -> bool:
    """Lightning's ``Trainer`` (not Fabric, not another library's ``Trainer``)."""
    qualified = value.get("name")
    text = str(qualified.value) if isinstance(qualified, Scalar) and qualified.value else ""
    return text.split(".")[0] in trainingdata.LIGHTNING_PACKAGES and text.endswith(".Trainer")


def run_lightning_loop(interp: "Interpreter", frame: "Frame", trainer: Obj, hooks: Tuple[str, ...], model: Value,
                       node: Optional[ast.AST]) -> None:
    """``trainer.fit(model)``: Lightning runs the model's hooks (``training_step``, ...) on batches
    it loads, under autocast at a mixed precision (``16-mixed``: CUDA float16) and in float32 at
    full precision. Each hook of the model's class runs once per precision the Trainer may have;
    at a precision not known (or a "true" one, which casts the model) they are left to the
    analysis of code nobody calls, and so they are where the strategy may be DeepSpeed's (which
    casts the model to half instead: ``strategy="deepspeed_stage_2"``) or is not known."""
    strategy = trainer.get("strategy")
    if strategy is None or not all(_not_deepspeed(o) for o in options(strategy)):
        return
    for precision in _precision_choices(trainer.get("precision")):
        mixed = trainingdata.FABRIC_MIXED_PRECISION.get(precision) if isinstance(precision, (str, int)) else None
        if mixed is None and precision not in trainingdata.LIGHTNING_FULL_PRECISION:
            continue
        state = ("cuda", F16 if mixed == "float16" else BF16) if mixed else None
        origin = _origin(frame, node, "autocast") if mixed else None
        for option in options(model):
            if not (isinstance(option, Module) and isinstance(option.cls, ClassVal)):
                continue
            for hook in hooks:
                if interp.class_lookup(option.cls.info, hook) is None:
                    continue
                method = interp.getattr(option, hook, frame)
                interp.run_in_state(frame, state, origin, lambda method=method: interp.call(
                    method, [UNKNOWN, Scalar("int")], {}, frame, node))


def run_autocast_trainer(interp: "Interpreter", frame: "Frame", model: Value, precision: Optional[Value],
                         node: Optional[ast.AST]) -> None:
    """detectron2's ``AMPTrainer(model, ...)``: each step runs ``model(data)`` under CUDA autocast to
    its ``precision`` (float16 unless given), on batches it loads. A precision given but not known
    here runs nothing: the model is left to the analysis of code nobody calls."""
    dtypes = F16 if precision is None else 0
    for option in options(precision) if precision is not None else ():
        dtypes |= option.dtypes & HALF if isinstance(option, DType) and not option.unknown else 0
    origin = _origin(frame, node, "autocast")
    for dtype in (F16, BF16):
        if not dtypes & dtype:
            continue
        for option in options(model):
            if isinstance(option, Module) and isinstance(option.cls, ClassVal):
                interp.run_in_state(frame, ("cuda", dtype), origin, lambda option=option: interp.call(
                    option, [UNKNOWN], {}, frame, node))


def _not_deepspeed(strategy: Value) -> bool:
    """A Lightning strategy known not to be DeepSpeed's: a name (``"ddp"``, ``"auto"``) or a
    strategy class of another name (``DDPStrategy(...)``)."""
    if isinstance(strategy, Scalar):
        return isinstance(strategy.value, str) and "deepspeed" not in strategy.value.lower()
    name = strategy.name if isinstance(strategy, Ext) else ""
    if isinstance(strategy, Module) and isinstance(strategy.cls, Ext):
        name = strategy.cls.name
    return bool(name) and "deepspeed" not in name.lower()


def fabric_setup(interp: "Interpreter", frame: "Frame", fabric: Obj, name: str, positional: List[Value],
                 node: Optional[ast.AST]) -> Value:
    """Lightning Fabric's ``setup(model, *optimizers)`` / ``setup_module(model)``: the model (and
    the optimizers). At a "true" precision (``"bf16-true"``, ``"16-true"``) Fabric casts the model
    to that dtype in place (the optimizers built over it then hold half parameters) and wraps its
    forward: floating inputs cast to it, outputs back to float32 (``plugins/precision/half.py``)."""
    if not positional:
        return UNKNOWN
    given = positional[0]
    model: Optional[Value] = None
    for precision in _precision_choices(fabric.get("precision")):
        model = join(model, _fabric_set_up(interp, frame, given, precision, node))
    model = model if model is not None else given
    if name == "setup_module" or len(positional) == 1:
        return model
    return Seq((model,) + tuple(positional[1:]))


def unscaled_fp16_fabric(value: Value) -> bool:
    """A Lightning Fabric that may run at ``"16-true"``: its ``backward`` scales nothing (its
    ``HalfPrecision`` plugin has no scaler; only ``"16-mixed"`` brings a GradScaler)."""
    return any(isinstance(o, Obj) and o.kind == "trainer" and isinstance(o.get("name"), Scalar)
               and str(o.get("name").value).endswith("Fabric")  # type: ignore[union-attr]
               and "16-true" in _precision_choices(o.get("precision")) for o in options(value))


def _precision_choices(precision: Optional[Value]) -> List[Any]:
    """The precisions a ``precision=`` value may be: its literals; for a string chosen at run time,
    its default (the run the script makes unless told otherwise: ``precision: str = "bf16-true"``
    of a function run from the command line); None for one not known."""
    out: List[Any] = []
    for option in options(precision) if precision is not None else (UNKNOWN,):
        if isinstance(option, Scalar) and isinstance(option.value, int):
            out.append(option.value)  # ``precision=16``
        else:
            out.append(text_or_default(option))
    return out or [None]


def _fabric_set_up(interp: "Interpreter", frame: "Frame", model: Value, precision: Any,
                   node: Optional[ast.AST]) -> Value:
    """The model Fabric sets up at ``precision`` (None: not known, the model as given)."""
    dtype = trainingdata.FABRIC_TRUE_PRECISION.get(precision) if isinstance(precision, str) else None
    mixed = trainingdata.FABRIC_MIXED_PRECISION.get(precision) if isinstance(precision, (str, int)) else None
    if mixed is not None:  # autocast around its forward, outputs to float32 (``plugins/precision/amp.py``)
        mode = MIXED_F32_OUT_F16 if mixed == "float16" else MIXED_F32_OUT_BF16
        model = union_of(replace(o, mode=mode) if isinstance(o, Module) and not o.mode else o for o in options(model))
    if dtype is not None:
        bits = _DTYPE_BITS[dtype]
        origin = _origin(frame, node, "framework")
        cast: Value = UNKNOWN
        for i, option in enumerate(options(model)):
            made = Module(option.cls, bits, False, origin, option.items, mode=FABRIC_CAST_IO) \
                if isinstance(option, Module) else option
            cast = made if i == 0 else join(cast, made)
        _note_cast_of_trained(interp, frame, model, cast)
        interp.add_seed(cast, frame)
        model = cast
    return model


def _optimizer_params(value: Value) -> Value:
    for option in options(value):
        if isinstance(option, Obj) and option.kind == "optimizer":
            return option.get("params") or UNKNOWN
    return UNKNOWN


def _launched_deepspeed(interp: "Interpreter", frame: "Frame", where: str, positional: List[Value],
                        node: Optional[ast.AST]) -> List[Value]:
    """The models ``accelerator.prepare`` returns where the Accelerator's precision is the
    launcher's and the project ships accelerate configs that run DeepSpeed in half
    (``distributed_type: DEEPSPEED``, ``mixed_precision: fp16``): under such a config DeepSpeed
    casts the model to that dtype (no autocast; fp32 master weights, its own loss scaling), so
    the model is also that cast, holding when the run uses the config (the finding names it)."""
    for path, bits in shipped_accelerate_configs(interp, where):
        origin = _origin(frame, node, "framework")
        if origin is None:
            break
        origin = replace(origin, condition=f"the run's accelerate config is {path}")
        positional = [join(p, union_of(replace(o.cast_to(bits, origin), master=True, mode="")
                                       for o in options(p) if type(o) is Module)) if any(
            type(o) is Module for o in options(p)) else p for p in positional]
    return positional


def shipped_accelerate_configs(interp: "Interpreter", where: str) -> List[Tuple[str, int]]:
    """Accelerate configs the project ships (``accelerate config`` files: ``distributed_type`` and
    ``mixed_precision`` at the top) that run DeepSpeed in half, with the half dtype: looked for in
    the folders :data:`~amp_lint.data.training.ACCELERATE_CONFIG_FOLDERS` names, below the folder
    of ``where`` (root-relative) and each folder above it."""
    found: List[Tuple[str, int]] = []
    seen: Set[str] = set()
    for base in ("" if str(folder) == "." else str(folder) for folder in PurePosixPath(where).parents):
        for sub in trainingdata.ACCELERATE_CONFIG_FOLDERS:
            place = "/".join(part for part in (base, sub) if part)
            for suffix in (".yaml", ".yml"):
                for path in interp.configs.listing(place, suffix):
                    if path in seen:
                        continue
                    seen.add(path)
                    data = interp.configs.load(path)
                    if not isinstance(data, dict) or "distributed_type" not in data:
                        continue
                    if str(data.get("distributed_type")).upper() != "DEEPSPEED":
                        continue
                    bits = {"fp16": F16, "bf16": BF16}.get(str(data.get("mixed_precision")), 0) or \
                        _deepspeed_file_half(interp, data.get("deepspeed_config"), path)
                    if bits:
                        found.append((path, bits))
    # float16 configs first: their evidence is the one a finding names (float16 overflows, bfloat16 does not)
    return sorted(found, key=lambda item: item[1] != F16)


def _deepspeed_file_half(interp: "Interpreter", section: object, config_path: str) -> int:
    """The half dtype of the DeepSpeed config file an accelerate config names
    (``deepspeed_config: {deepspeed_config_file: configs/ds_zero1.json}``, where the precision is
    set instead of ``mixed_precision``): a path relative to the folder the run starts from, looked
    for from the accelerate config's folder up to the root. 0 where none is read or it enables none."""
    named = section.get("deepspeed_config_file") if isinstance(section, dict) else None
    if not isinstance(named, str):
        return 0
    for folder in PurePosixPath(config_path).parents:
        base = "" if str(folder) == "." else str(folder)
        data = interp.configs.load("/".join(part for part in (base, named) if part))
        if isinstance(data, dict):
            half = deepspeed_half(config_value(data))
            return half[0] if half is not None and half[1] is None else 0
    return 0


def _mixed_precision_dtype(value: Optional[Value]) -> int:
    if isinstance(value, Scalar) and isinstance(value.value, str):
        return {"fp16": F16, "bf16": BF16, "16-mixed": F16, "bf16-mixed": BF16}.get(value.value, 0)
    return F16 | BF16 if value is not None and value is not UNKNOWN else 0


def _declare(parser: Obj, name: str, value: Value) -> Obj:
    declared = parser.get("args")
    items = dict(declared.items) if isinstance(declared, DictVal) else {}
    items[name] = value
    return parser.set("args", DictVal(tuple(items.items())))


def _add_argument(interp: "Interpreter", frame: "Frame", parser: Obj, positional: List[Value],
                  kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    names = [p.value for p in positional if isinstance(p, Scalar) and isinstance(p.value, str)]
    dest = kwargs.get("dest")
    if isinstance(dest, Scalar) and isinstance(dest.value, str):
        key = dest.value
    else:
        longs = [n for n in names if n.startswith("--")]
        key = (longs[0] if longs else names[0] if names else "").lstrip("-").replace("-", "_")
    if not key:
        return UNKNOWN
    action = kwargs.get("action")
    default = kwargs.get("default")
    if isinstance(action, Scalar) and action.value in ("store_true", "store_false"):
        value: Value = Scalar("bool")
    elif isinstance(default, Scalar) and default.kind == "int" and default.value in (0, 1):
        value = Scalar("int")  # ``--fp16 0``/``--amp 1``: a switch as often as a count, chosen at run time
    elif isinstance(default, Scalar) and default.kind in ("int", "float") and default.value is not None:
        value = default  # a numeric default counts as the value (sizes, eps)
    elif isinstance(default, Scalar) and default.kind == "str":
        # a device or dtype name is chosen at run time; a config file path's default is read
        value = Scalar("str", default=default.value if isinstance(default.value, str) else None)
    elif isinstance(default, Scalar) and default.kind == "bool":
        value = Scalar("bool")
    else:
        kind = kwargs.get("type")
        value = Scalar({"int": "int", "float": "float", "str": "str"}.get(kind.name, "other")) \
            if isinstance(kind, Builtin) else UNKNOWN
    mutate(interp, frame, node, _declare(parser, key, value))
    return UNKNOWN


def derived(args: Sequence[Value], kwargs: Dict[str, Value], frame: Optional["Frame"] = None) -> Value:
    """What an unknown callable returns: unknown, but a tensor computed from tensor arguments keeps
    their history (a loss of a model's outputs has the model's graph). Called under a half autocast
    with tensor or unknown arguments (an unseen model's forward, a loss function), its result's
    gradients may flow through the region's half ops: the region is their evidence."""
    graph = 0
    found = unknown = False
    origin: Optional[Origin] = None
    for value in list(args) + list(kwargs.values()):
        inner = value.value if _is_star(value) else value  # type: ignore[attr-defined]
        for option in options(inner):
            if isinstance(option, Tensor):
                found = True
                graph |= option.low_graph
                if origin is None and option.origin is not None and (option.half or option.low_graph):
                    origin = option.origin
            elif option is UNKNOWN:
                unknown = True
    if frame is not None and frame.state is not None and frame.state[1] & HALF and (found or unknown):
        return Tensor(0, True, origin or frame.autocast_origin, graph=graph | frame.state[1])
    return Tensor(0, True, origin if graph else None, graph=graph) if found else UNKNOWN


def unknown_method(interp: "Interpreter", frame: "Frame", name: str, args: List[Value], kwargs: Dict[str, Value],
                   node: Optional[ast.AST]) -> Value:
    """A method of a value nobody knows. Casting it to half is evidence that it becomes half, whether it
    is a module or a tensor (``model.half()`` on a model from a factory we cannot see)."""
    bit = _DTYPE_BITS.get(optable.CAST_METHODS.get(name, ""), 0)
    if name in ("to", "type"):
        target = _cast_target(args, kwargs)
        if isinstance(target, DType) and target.dtypes and not target.unknown:
            bit = target.dtypes
    if name == "apply" and len(args) == 1 and not kwargs and any(isinstance(o, FuncVal) for o in options(args[0])):
        # ``model.apply(convert_weights)`` on a model from a factory we cannot see: a converter that
        # casts the layers it is given makes the model half there, as on a model we know
        unknown_model = Module(None, F32)
        result = _apply_to_layers(interp, frame, unknown_model, args[0], node)
        if result is not unknown_model:
            return result
    if not bit:
        if name in ("parameters", "named_parameters") and not args:
            return obj("parameters", module=UNKNOWN, named=Scalar("bool", name == "named_parameters"),
                       buffers=Scalar("bool", False))
        return derived(args, kwargs, frame)
    if not bit & FLOATS:
        return Tensor(bit)  # ``.long()``, ``.bool()``: only tensors have them
    origin = _origin(frame, node, "module_cast") if bit & HALF else None
    result = union_of((Module(None, bit, False, origin), Tensor(bit, False, origin, graph=bit & HALF)))
    if not bit & HALF:
        return result
    if node is not None and frame.statement is node:  # ``model.half()`` as a statement casts in place
        mutate(interp, frame, node, result)
    return result


#: the methods of ``str`` evaluated on known strings and arguments (pure: no side effects)
_STRING_METHODS = frozenset({
    "split", "rsplit", "partition", "rpartition", "replace", "lower", "upper", "strip", "lstrip", "rstrip",
    "startswith", "endswith", "removeprefix", "removesuffix", "join", "format", "isdigit", "isalpha",
})


def string_method(receiver: Scalar, name: str, positional: Sequence[Value], kwargs: Dict[str, Value]) -> Optional[Value]:
    """``"pkg.mod.Cls".rsplit(".", 1)`` and the like, on a known string with known arguments
    (strings, ints, None; ``join``: a tuple or list of known strings): the result, else None."""
    if name not in _STRING_METHODS or not isinstance(receiver.value, str) or kwargs:
        return None
    if name == "join":
        items = positional[0].items if len(positional) == 1 and isinstance(positional[0], Seq) else None
        if items is None or not all(isinstance(i, Scalar) and isinstance(i.value, str) for i in items):
            return None
        return Scalar("str", receiver.value.join(i.value for i in items))  # type: ignore[union-attr]
    arguments = []
    for value in positional:
        if not (isinstance(value, Scalar) and (isinstance(value.value, (str, int)) or value.kind == "none")) \
                or isinstance(value.value, bool):
            return None
        arguments.append(value.value)
    try:
        result = getattr(receiver.value, name)(*arguments)
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if isinstance(result, (bool, str)):
        return python_scalar(result)
    if isinstance(result, (list, tuple)) and len(result) <= 64:
        return Seq(tuple(Scalar("str", part) for part in result))
    return None


def python_method(interp: "Interpreter", frame: "Frame", receiver: Value, name: str, args: List[Value],
                  kwargs: Dict[str, Value], node: Optional[ast.AST]) -> Value:
    positional = _positional(args)
    if isinstance(receiver, ClassVal):
        if name == "from_pretrained":
            return from_pretrained(interp, frame, receiver, args, kwargs, node)
        return UNKNOWN
    if isinstance(receiver, Scalar) and receiver.kind == "str":
        known = string_method(receiver, name, positional, kwargs)
        if known is not None:
            return known
        if name in ("startswith", "endswith", "isdigit", "isalpha"):
            return Scalar("bool")
        return Scalar("str") if name not in ("split", "splitlines") else Coll(Scalar("str"))
    if isinstance(receiver, DictVal):
        if name == "get" and positional:
            key = positional[0].value if isinstance(positional[0], Scalar) else None
            found = receiver.value_of(key) if key is not None else None
            if found is not None:
                return found
            if not receiver.keys_known:  # maybe stored under a key we do not know
                return UNKNOWN
            if key is None and receiver.items:  # a key not known here (``REGISTRY.get(args.arch)``):
                return registry_join(tuple(v for _, v in receiver.items))  # one of them, as ``d[k]`` reads
            return positional[1] if len(positional) > 1 else NONE
        if name in ("pop", "update", "setdefault", "clear", "popitem") and isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            found = python_method(interp, frame, receiver, "get", args, kwargs, node) if positional else UNKNOWN
            frame.env[node.func.value.id] = _dict_after(receiver, name, positional, kwargs)
            return found if name in ("pop", "setdefault") else NONE
        if name == "items":
            return Coll(Seq((UNKNOWN, element(Seq(tuple(v for _, v in receiver.items))))))
        if name == "values":
            return Coll(element(Seq(tuple(v for _, v in receiver.items))))
        if name == "keys":
            return Coll(Scalar("str"))
        if name == "pop" and positional:
            return python_method(interp, frame, receiver, "get", args, kwargs, node)
        return UNKNOWN
    if isinstance(receiver, (Seq, Coll)):
        if name == "index":
            return Scalar("int")
        if name in ("pop",):
            return element(receiver)
        if name in ("append", "extend", "insert") and positional and isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute):
            added = positional[-1] if name != "extend" or _is_parameters(positional[-1]) else element(positional[-1])
            item = _dict_item(node.func.value, frame)
            if isinstance(node.func.value, ast.Name):
                target = node.func.value.id
                if target not in frame.env and frame.info is not None and _kept_by_registry(added):
                    # a module's list of classes, functions or their instances filled by a function
                    # (``register_adapter(cls)`` appends ``cls()``): every append is kept, as for a dict
                    # registry. Other values (tensors) stay local to the call.
                    genv = interp.global_env(frame.module)
                    if isinstance(genv.get(target), (Seq, Coll)):
                        genv[target] = _grown(genv[target], added, registry=True)
                else:
                    frame.env[target] = _grown(receiver, added)
                return NONE
            if item is not None:  # ``group["params"].append(p)``: the list a dict of the frame holds
                owner, key = item
                held = frame.env[owner]
                frame.env[owner] = DictVal(tuple((k, _grown(v, added) if k == key else v)
                                                 for k, v in held.items))  # type: ignore[attr-defined]
                frame.mutated.add(owner)
                return NONE
        return UNKNOWN
    return UNKNOWN


def _dict_item(expr: ast.AST, frame: "Frame") -> Optional[Tuple[str, str]]:
    """(name, key) for ``name["key"]`` where ``name`` is a dict of the frame holding ``key``."""
    if not (isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name)
            and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str)):
        return None
    held = frame.env.get(expr.value.id)
    if not isinstance(held, DictVal) or all(k != expr.slice.value for k, _ in held.items):
        return None
    return expr.value.id, expr.slice.value


def _grown(container: Value, added: Value, registry: bool = False) -> Coll:
    """A list after ``added`` was appended to it (a tuple of unknown items becomes a list of ``added``);
    a registry's list keeps every class or instance appended (:func:`registry_join`)."""
    if element(container) is not UNKNOWN or isinstance(container, Coll):
        return Coll(registry_join((element(container), added)) if registry else join(element(container), added))
    return Coll(added)


def _kept_by_registry(value: Value) -> bool:
    """Whether a value is what a registry keeps: project classes, functions or instances of them."""
    found = options(value)
    return bool(found) and all(isinstance(o, (ClassVal, FuncVal, Instance)) or isinstance(o, Module)
                               and isinstance(o.cls, ClassVal) for o in found)


def dict_of(first: Optional[Value], kwargs: Dict[str, Value]) -> DictVal:
    """``dict(...)`` / ``OrderedDict(...)``: a mapping copied, or key-value pairs (a list of
    2-tuples: ``OrderedDict([("conv", Conv()), ("gn", GroupNorm())])``, where the pairs of a
    comprehension have unknown keys), then the keyword arguments."""
    items: List[Tuple[object, Value]] = []
    if isinstance(first, DictVal):
        items = list(first.items)
    elif first is not None:
        pairs = _pairs(first)
        items = list(OPEN_KEYS) if pairs is None else pairs  # a mapping or pairs of unknown shape
    items += [(k, v) for k, v in kwargs.items() if k != "**"]
    if "**" in kwargs:
        items += list(OPEN_KEYS)
    return DictVal(tuple(items))


def _pairs(value: Value) -> Optional[List[Tuple[object, Value]]]:
    """The (key, value) items of a list of 2-tuples keyed by names or numbers (None where it is
    not one: a mapping keyed by classes, ``OrderedDict([(BertConfig, BertModel), ...])``, is a
    registry whose lookups by an unknown key stay unknown, as before)."""
    if isinstance(value, Seq):
        out: List[Tuple[object, Value]] = []
        for item in value.items:
            if _is_star(item):  # ``[*pairs, ...]``
                inner = _pairs(item.value)  # type: ignore[attr-defined]
                if inner is None:
                    return None
                out.extend(inner)
            elif isinstance(item, Seq) and len(item.items) == 2 and isinstance(item.items[0], Scalar):
                key = item.items[0]
                out.append((key.value if key.value is not None else None, item.items[1]))
            else:
                return None
        return out
    if isinstance(value, Coll):  # pairs a comprehension made: keys of unknown value (also of unknown kind)
        elem = value.elem
        if isinstance(elem, Seq) and len(elem.items) == 2 and (isinstance(elem.items[0], Scalar)
                                                                or elem.items[0] is UNKNOWN):
            return [(None, elem.items[1])]
    return None


def _dict_after(receiver: DictVal, name: str, positional: List[Value], kwargs: Dict[str, Value]) -> DictVal:
    """The dict after ``d.<name>(...)`` mutated it in place."""
    items = dict(receiver.items)
    key = positional[0].value if positional and isinstance(positional[0], Scalar) else None
    if name == "clear":
        return DictVal()
    if name == "pop" and isinstance(key, str):
        items.pop(key, None)
    elif name == "setdefault" and isinstance(key, str):
        items.setdefault(key, positional[1] if len(positional) > 1 else NONE)
    elif name == "update":
        other = positional[0] if positional else None
        if isinstance(other, DictVal):
            for k, v in other.items:
                items[k] = join(items.get(k), v) if k is None else v
        elif other is not None:
            items[None] = UNKNOWN
        for k, v in kwargs.items():
            if k == "**":
                items[None] = UNKNOWN
            else:
                items[k] = v
    elif name != "pop":
        items[None] = UNKNOWN  # popitem, or a key we cannot read
    return DictVal(tuple(items.items()))


def is_loss_scaler(value: Value) -> bool:
    return any(isinstance(o, Obj) and o.kind == "grad_scaler" for o in options(value))


def module_of_params(value: Value) -> List[Module]:
    """The modules whose parameters an optimizer argument names (``model.parameters()``, groups)."""
    out: List[Module] = []
    for option in options(value):
        if isinstance(option, Obj) and option.kind == "parameters":
            module = option.get("module")
            if isinstance(module, Module):
                out.append(module)
        elif isinstance(option, (Seq, Coll)):
            out.extend(module_of_params(element(option)))
        elif isinstance(option, DictVal):
            for key, v in option.items:
                if key == "params":
                    out.extend(module_of_params(v))
    return out


def param_dtypes(value: Value) -> Tuple[int, bool, Optional[Origin]]:
    """(dtypes, unknown, origin) of the tensors an optimizer argument names; of several origins (a
    model built on either branch), the first in source order, so that runs agree."""
    dtypes, unknown, origins = _param_facts(value)
    return dtypes, unknown, min((o for o, _ in origins), key=lambda o: o.key) if origins else None


def param_origins(value: Value) -> List[Origin]:
    """Every origin of the half tensors an optimizer argument names, in source order."""
    return sorted((o for o, half in _param_facts(value)[2] if half), key=lambda o: o.key)


def _param_leaves(value: Value) -> Iterator[Value]:
    """What an optimizer argument is made of: ``model.parameters()`` objects, tensors and unknowns,
    through lists of them and param-group dicts (their ``"params"``)."""
    for option in options(value):
        if isinstance(option, Seq):  # item by item: a join would merge two modules' casts into one origin
            for item in option.items:
                yield from _param_leaves(item)
        elif isinstance(option, Coll):
            yield from _param_leaves(element(option))
        elif isinstance(option, DictVal):
            for key, item in option.items:
                if key == "params":
                    yield from _param_leaves(item)
        else:
            yield option


def _param_facts(value: Value) -> Tuple[int, bool, List[Tuple[Origin, bool]]]:
    """(dtypes, unknown, [(origin, whether its tensor may be half)]) of an optimizer argument."""
    dtypes, unknown, origins = 0, False, []  # type: Tuple[int, bool, List[Tuple[Origin, bool]]]

    def add(origin: Origin, half: bool) -> None:
        for i, (o, h) in enumerate(origins):
            if o.key == origin.key:
                origins[i] = (o, h or half)
                return
        origins.append((origin, half))

    def tensor(t: Tensor) -> None:
        nonlocal dtypes, unknown
        dtypes |= t.dtypes
        unknown = unknown or t.unknown
        if t.origin is not None:
            add(t.origin, bool(t.dtypes & HALF))
        for other in t.also:  # the other models' casts joined into it (each reported)
            add(other, bool(t.dtypes & HALF))

    for leaf in _param_leaves(value):
        if _is_parameters(leaf):
            for t in _params_per_module(leaf):  # each module's cast, not one joined origin
                tensor(t)
        elif isinstance(leaf, Tensor):
            tensor(leaf)
        else:
            unknown = True
    return dtypes, unknown, origins
