"""The abstract values of the precision analysis, and how they join.

A value says what an expression may hold, as far as the analysis can tell:

- :class:`Tensor`: a set of possible dtypes (a bitmask of :data:`BOOL` ... :data:`F64`), plus
  ``unknown`` when some paths give a tensor of unknown dtype. "May be half" is a non-empty
  intersection with :data:`HALF`; "must be half" is a set inside it with no unknown paths. The
  *evidence* for a half dtype rides along as :attr:`Tensor.origin` (where it came from); it is
  an annotation and takes no part in equality.
- :class:`Scalar`: a Python number, bool, string or None, with its constant value when known
  (constant propagation gives AMP301 its literal and AMP401 its vocabulary size).
- :class:`Module`: an ``nn.Module`` instance: its class (a user class, a ``torch.nn`` class,
  another library's class, or unknown) and the dtypes of its floating parameters (``cast``).
- :class:`Instance`, :class:`Obj`: a plain user-class instance; a recognised library object
  (optimizer, GradScaler, argparse namespace, ...) with its attributes.
- :class:`FuncVal`, :class:`ClassVal`, :class:`Ext`, :class:`Method`, :class:`Builtin`:
  callables (user functions and classes, torch and library names, bound methods, builtins).
- :class:`Autocast`: an autocast context manager (device, dtype, enabled).
- :class:`Seq` (known length), :class:`Coll` (unknown length), :class:`DictVal`.
- :data:`UNKNOWN`: nothing is known. **Unknown is never fp32**: it joins without erasing
  evidence, and no rule fires on it.
- :class:`Union`: a few values of different kinds (a join of different kinds).

Values are immutable and hashable (they key the memo of function analyses).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from amp_lint.data.ops import MODULE_KINDS
from amp_lint.data.training import AUTOCASTS

#: ``torch.nn`` classes that hold other modules and have no parameters of their own
CONTAINERS = frozenset(name for name, kind in MODULE_KINDS.items() if kind == "container")

# -- dtypes as bits ------------------------------------------------------------------------------
BOOL, INT, F16, BF16, F32, F64 = 1, 2, 4, 8, 16, 32
HALF = F16 | BF16
FLOATS = F16 | BF16 | F32 | F64
DTYPE_NAMES = {BOOL: "bool", INT: "int64", F16: "float16", BF16: "bfloat16", F32: "float32", F64: "float64"}
SHORT_NAMES = {BOOL: "bool", INT: "int", F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}
_ORDER = (F64, F32, BF16, F16, INT, BOOL)


def bits(dtypes: int) -> Iterator[int]:
    """The single-dtype bits of a set, widest first."""
    for bit in _ORDER:
        if dtypes & bit:
            yield bit


def dtype_label(dtypes: int) -> str:
    """``float16``, ``float16 or float32``, ..."""
    names = [DTYPE_NAMES[b] for b in reversed(list(bits(dtypes)))]
    return " or ".join(names) if names else "unknown"


def _promote_bit(a: int, b: int) -> int:
    if a == b:
        return a
    if a in (BOOL, INT) and b in (BOOL, INT):
        return INT
    if a in (BOOL, INT):
        return b
    if b in (BOOL, INT):
        return a
    if F64 in (a, b):
        return F64
    return F32  # f16 + f32, bf16 + f32, f16 + bf16


def promote(a: int, b: int) -> int:
    """Native type promotion of two dtype sets (every pair of possibilities)."""
    if not a:
        return b
    if not b:
        return a
    out = 0
    for x in bits(a):
        for y in bits(b):
            out |= _promote_bit(x, y)
    return out


# -- evidence ------------------------------------------------------------------------------------
#: :attr:`Origin.kind` of what an apex-O1 initialised model computes: apex's patches of torch's
#: functions hold for it wherever it goes (they are global once ``amp.initialize`` ran)
APEX_O1_ORIGIN = "apex_o1"


@dataclass(frozen=True)
class Origin:
    """Where a half dtype (or a cast, or an autocast region) comes from."""

    kind: str  # "cast", "autocast", "dtype", "dtype_choice", "from_pretrained", "checkpoint_dtype", "apex", "apex_o1", "framework", "library"
    path: str
    line: int
    text: str
    #: the condition the value depends on (``args.fp16``), when only some paths are half
    condition: Optional[str] = None
    col: int = 0
    end: Tuple[int, int] = (0, 0)

    @property
    def key(self) -> Tuple[str, int, int, int, int]:
        return self.path, self.line, self.col, self.end[0], self.end[1]

    def describe(self) -> str:
        where = f"{self.path}:{self.line}"
        cond = f" (when `{self.condition}`)" if self.condition else ""
        return f"`{self.text}` at {where}{cond}"


# -- values --------------------------------------------------------------------------------------
class Value:
    """Base class of abstract values."""

    __slots__ = ()

    def with_unknown(self) -> "Value":
        """This value joined with an unknown one (evidence kept)."""
        return union_of((self, UNKNOWN))


class _Unknown(Value):
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def with_unknown(self) -> "Value":
        return self


UNKNOWN: Value = _Unknown()


@dataclass(frozen=True, eq=False)
class Tensor(Value):
    dtypes: int
    unknown: bool = False
    origin: Optional[Origin] = None
    #: the value was multiplied by a loss scale (hand-rolled loss scaling)
    scaled: bool = False
    #: a parameter of a module on some path (cast with it; a join keeps it when either side has it)
    param: bool = False
    #: half dtypes its autograd graph went through (a loss computed under fp16 autocast is fp32 but
    #: its gradients flow through fp16 ops)
    graph: int = 0
    #: computed from a learned layer's output (a GEMM, convolution, embedding or model call) with no
    #: bounding op since (``data/ops.py``): its values can be large (AMP204's positive evidence)
    learned: bool = False
    #: a 0-dim tensor (a full reduction, ``torch.tensor(1.0)``): in type promotion it yields to
    #: tensors with dimensions of the same category (``h16 / f32.sum()`` is float16)
    zero_dim: bool = False
    #: computed where autograd recorded nothing (``torch.no_grad()``, ``inference_mode()``): no
    #: gradient flows back through it, whatever its dtype
    detached: bool = False
    #: the other places a half tensor joined into this one was made half (evidence only, like
    #: ``origin``): the parameters of two models cast at two sites, listed by one optimizer
    also: Tuple[Origin, ...] = ()

    def __eq__(self, other: object) -> bool:
        return (type(other) is Tensor and self.dtypes == other.dtypes and self.unknown == other.unknown  # type: ignore[attr-defined]
                and self.scaled == other.scaled and self.param == other.param  # type: ignore[attr-defined]
                and self.graph == other.graph and self.learned == other.learned  # type: ignore[attr-defined]
                and self.zero_dim == other.zero_dim and self.detached == other.detached)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((1, self.dtypes, self.unknown, self.scaled, self.param, self.graph, self.learned, self.zero_dim,
                     self.detached))

    @property
    def low_graph(self) -> int:
        """Half dtypes in this tensor's history, itself included (none where it is detached)."""
        return 0 if self.detached else self.graph | (self.dtypes & HALF)

    @property
    def half(self) -> int:
        """The half dtypes this tensor may have, on positive evidence."""
        return self.dtypes & HALF

    def with_unknown(self) -> "Tensor":
        return replace(self, unknown=True)


@dataclass(frozen=True, eq=False)
class Scalar(Value):
    """A Python scalar. ``kind``: int, float, bool, str, none, num (int or float)."""

    kind: str
    value: Any = None
    #: ``torch.finfo(d).min`` / ``.max``: (dtype bits of ``d``, "min"/"max")
    finfo: Optional[Tuple[int, str]] = None
    #: the literal that defines this constant: (module relpath, its ast node); an annotation
    site: Optional[Tuple[str, Any]] = None
    #: a string chosen at run time whose default is known (``--config`` with a default path):
    #: that default, for what is read from such a path (:mod:`configfiles`); not part of the value
    default: Optional[str] = None

    def __eq__(self, other: object) -> bool:
        return (type(other) is Scalar and self.kind == other.kind and self.value == other.value  # type: ignore[attr-defined]
                and self.finfo == other.finfo)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((8, self.kind, self.value if not isinstance(self.value, float) or self.value == self.value
                     else "nan", self.finfo))

    @property
    def number(self) -> Optional[float]:
        if self.kind in ("int", "float", "num", "bool") and isinstance(self.value, (int, float)):
            return float(self.value)
        return None


@dataclass(frozen=True, eq=False)
class Module(Value):
    """An nn.Module instance. ``cls``: ClassVal, Ext (torch.nn.Linear, transformers.AutoModel),
    or None (an unknown model). ``cast``: dtypes of its floating parameters; 0 = unknown."""

    cls: Optional[Value]
    cast: int = F32
    cast_unknown: bool = False
    origin: Optional[Origin] = None
    #: children of an nn.Sequential / nn.ModuleList / nn.ModuleDict, in order
    items: Tuple[Value, ...] = ()
    #: fp32 master weights are kept by a wrapper (apex O2, fairseq FP16Optimizer, DeepSpeed)
    master: bool = False
    #: "apex-O1": calls run as under apex O1's patched functions; "apex-cast-io": apex O2/O3 patched
    #: its forward (floating inputs cast to float16, outputs to float32)
    mode: str = ""
    #: the ``torch.nn`` constructor call that made it (an annotation)
    site: Any = None
    #: where a converter cast only some kinds of layer (``model.apply(f)``, ``f`` casting the weights
    #: of ``nn.Linear`` and ``nn.Conv2d`` only): the short names of those ``torch.nn`` classes. The
    #: cast reaches them and the containers and user modules that hold them, not the other layers
    #: nor a user module's own parameters. Empty: the cast reached every parameter.
    kinds: FrozenSet[str] = frozenset()
    #: the other places a half cast of it was made, on paths joined into this value (loaded in
    #: float16 by either of two branches' ``from_pretrained``, then cast again on a third path):
    #: evidence only, like ``origin`` (not part of its identity), so that every cast is reported
    also: Tuple[Origin, ...] = ()
    #: ``requires_grad_(False)`` was called on it: where paths that cast it are joined, the cast of
    #: a path where it is frozen does not make trained parameters half (evidence, not identity)
    frozen: bool = False
    #: an nn.ModuleDict's keys, one per item (``md.head``, ``md["head"]``); empty where not known
    names: Tuple[str, ...] = ()
    #: ``requires_grad_(flag)`` with a flag of unknown value: the text of ``flag``. A cast made only
    #: where the flag is false (``if not flag: m.to(dtype)``) is of a frozen module (evidence only)
    frozen_unless: str = ""

    def __eq__(self, other: object) -> bool:
        return (type(other) is Module and self.cls == other.cls and self.cast == other.cast  # type: ignore[attr-defined]
                and self.cast_unknown == other.cast_unknown and self.items == other.items  # type: ignore[attr-defined]
                and self.master == other.master and self.mode == other.mode  # type: ignore[attr-defined]
                and self.kinds == other.kinds and self.names == other.names)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((2, self.cls, self.cast, self.cast_unknown, self.items, self.master, self.mode, self.kinds,
                           self.names))
            object.__setattr__(self, "_hash", cached)
        return cached

    def cast_to(self, dtypes: int, origin: Optional[Origin], kinds: FrozenSet[str] = frozenset()) -> "Module":
        """The module after a cast of its parameters to ``dtypes`` (``kinds``: only those layers')."""
        layer = self.layer_name
        if kinds and layer is not None and layer not in CONTAINERS:
            return self.cast_to(dtypes, origin) if layer in kinds else self
        kinds = kinds if dtypes & HALF else frozenset()
        items = tuple(_cast_child(i, dtypes, origin, kinds) for i in self.items)
        return replace(self, cast=dtypes, cast_unknown=False, origin=origin if dtypes & HALF else None, items=items,
                       kinds=kinds, also=())

    @property
    def layer_name(self) -> Optional[str]:
        """The short name of a ``torch.nn`` class (``Linear``); None for other modules."""
        cls = self.cls
        if isinstance(cls, Ext) and cls.name.startswith("torch.nn."):
            return cls.name.rsplit(".", 1)[-1]
        return None

    def with_unknown(self) -> "Module":
        return replace(self, cast_unknown=True)


def _cast_child(child: Value, dtypes: int, origin: Optional[Origin], kinds: FrozenSet[str]) -> Value:
    """A container's child under its owner's cast: a module, or each module a child may be."""
    if isinstance(child, Module):
        return child.cast_to(dtypes, origin, kinds)
    if isinstance(child, Union):
        return union_of(_cast_child(o, dtypes, origin, kinds) for o in options(child))
    return child


@dataclass(frozen=True)
class Instance(Value):
    """An instance of a user class that is not an nn.Module. ``own``: the fields a dataclass
    instance was built with (passed or its class's literal default), per instance: two configs
    of one class keep their own sizes (``GPTConfig(vocab_size=50304)`` and the default 50257);
    and the models a plain wrapper keeps of those it is given. ``made``: the test it was made
    under, where the other path left None instead (``loss_scaler = None`` under
    ``args.deepspeed``, ``NativeScaler()`` in the else; :func:`with_condition`)."""

    cls: Value
    own: Tuple[Tuple[str, Value], ...] = ()
    made: Optional[str] = None

    def field(self, name: str) -> Optional[Value]:
        return _named(self.own, name)


def known_strings(value: Value) -> List[str]:
    """The texts ``value`` may be, when each is known (empty otherwise)."""
    texts = [o.value for o in options(value) if isinstance(o, Scalar) and isinstance(o.value, str)]
    return texts if len(texts) == len(options(value)) else []


def text_or_default(value: Value) -> Optional[str]:
    """A string's text, or for one chosen at run time (``--model`` with ``default="BigGAN"``) its
    default: the run the script makes unless told otherwise."""
    if isinstance(value, Scalar) and value.kind == "str":
        return value.value if isinstance(value.value, str) else value.default
    return None


def _named(pairs: Tuple[Tuple[Any, Value], ...], name: Any) -> Optional[Value]:
    """The value of ``name`` in (name, value) pairs."""
    for key, value in pairs:
        if key == name:
            return value
    return None


@dataclass(frozen=True)
class Obj(Value):
    """A recognised library object: ``kind`` (optimizer, grad_scaler, namespace, device, finfo,
    nullcontext, ...) and known attributes as sorted (name, value) pairs."""

    kind: str
    attrs: Tuple[Tuple[str, Value], ...] = ()

    def get(self, name: str) -> Optional[Value]:
        # an argparse namespace holds hundreds of attributes: their index is built once, on first read
        index = self.__dict__.get("_index")
        if index is None:
            index = dict(self.attrs) if len(self.attrs) > 8 else None
            if index is None:
                return _named(self.attrs, name)
            object.__setattr__(self, "_index", index)
        return index.get(name)

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.kind, self.attrs))
            object.__setattr__(self, "_hash", cached)
        return cached

    def set(self, name: str, value: Value) -> "Obj":
        attrs = dict(self.attrs)
        attrs[name] = value
        return Obj(self.kind, tuple(sorted(attrs.items(), key=lambda kv: kv[0])))


def obj(kind: str, **attrs: Value) -> Obj:
    return Obj(kind, tuple(sorted(attrs.items(), key=lambda kv: kv[0])))


@dataclass(frozen=True, eq=False)
class DType(Value):
    """A ``torch.dtype`` (``torch.float16``, ``x.dtype``): the dtypes it may be."""

    dtypes: int
    unknown: bool = False
    origin: Optional[Origin] = None

    def __eq__(self, other: object) -> bool:
        return type(other) is DType and self.dtypes == other.dtypes and self.unknown == other.unknown  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((6, self.dtypes, self.unknown))

    def with_unknown(self) -> "DType":
        return replace(self, unknown=True)


@dataclass(frozen=True, eq=False)
class ModVal(Value):
    """A module of the analysed project (``import model``; ``from . import layers``)."""

    info: Any  # semantics.program.SourceModule

    def __eq__(self, other: object) -> bool:
        return type(other) is ModVal and self.info is other.info  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((7, id(self.info)))


@dataclass(frozen=True)
class Ext(Value):
    """A name of torch or another library (``torch.nn.functional.softmax``, ``transformers``)."""

    name: str


@dataclass(frozen=True)
class Builtin(Value):
    name: str


@dataclass(frozen=True)
class Method(Value):
    """``recv.name`` where the method is built in (a tensor, module or library object method)."""

    recv: Value
    name: str


@dataclass(frozen=True, eq=False)
class Autocast(Value):
    """An autocast context manager. ``dtype`` 0: unknown; ``enabled`` None: depends on a flag."""

    device: str
    dtype: int
    enabled: Optional[bool] = True
    origin: Optional[Origin] = None

    def __eq__(self, other: object) -> bool:
        return (type(other) is Autocast and self.device == other.device and self.dtype == other.dtype  # type: ignore[attr-defined]
                and self.enabled == other.enabled)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((3, self.device, self.dtype, self.enabled))


@dataclass(frozen=True)
class Seq(Value):
    """A tuple or list of known length; ``names``: its fields', for a ``namedtuple``'s instance."""

    items: Tuple[Value, ...]
    names: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Coll(Value):
    """A collection of unknown length whose elements are ``elem``; its first items, where known,
    are ``prefix`` (``(logits, *hidden)``: the first is the logits, ``elem`` joins them all)."""

    elem: Value
    prefix: Tuple[Value, ...] = ()


@dataclass(frozen=True)
class DictVal(Value):
    """A dict with constant keys (``key`` None: values stored under unknown keys). Its keys are
    all known unless it holds :data:`OPEN_KEYS`' item (``**kwargs`` of a call that passed ``**other``)."""

    items: Tuple[Tuple[Any, Value], ...] = ()

    def value_of(self, key: Any) -> Optional[Value]:
        """The value stored under ``key`` (None where it is not among the known keys)."""
        return _named(self.items, key)

    @property
    def keys_known(self) -> bool:
        """Every key it may hold is known (no value under an unknown key, not open)."""
        return all(key is not None for key, _ in self.items)


#: The item that marks a dict whose other keys are unknown.
OPEN_KEYS: Tuple[Tuple[Any, Value], ...] = ((None, UNKNOWN),)


@dataclass(frozen=True)
class Union(Value):
    """Values of different kinds (at most :data:`UNION_LIMIT`). Equal as sets; iterated (``ordered``)
    in the order the members joined, so that "the first evidence" is the same in every run (a
    frozenset's order follows string hashes and ids, which change from run to run)."""

    options: FrozenSet[Value] = field(default_factory=frozenset)
    ordered: Tuple[Value, ...] = field(default=(), compare=False, hash=False, repr=False)
    #: read from a registry (:func:`registry_join`): it may hold up to :data:`REGISTRY_UNION_LIMIT`
    #: project classes, and so may what it joins
    wide: bool = field(default=False, compare=False, hash=False, repr=False)


def union_of(members: Iterable[Value], wide: bool = False) -> Union:
    """A Union of ``members`` (distinct, at least two) in their order."""
    ordered = tuple(dict.fromkeys(members))
    return Union(frozenset(ordered), ordered, wide)


UNION_LIMIT = 6
#: modules (or methods bound to them) a value may hold besides: a factory's branches build one of a
#: dozen heads, and each stays a class whose forward can be run
MODULE_UNION_LIMIT = 12
#: project and library functions a value may be besides (an activation picked by name)
FUNCTION_UNION_LIMIT = 12
#: project classes a value may hold besides: what a registry of models or tasks keeps (one class per
#: architecture, a hundred in a model zoo), each still instantiated and run where it is called. The
#: instances a registry keeps (``ADAPTERS.append(cls())``), and their methods, are widened so only
#: where they are read from that registry: every instance union widened so (a compiler's hundred
#: variable trackers) made every method call run each override, and the project phase on torch's
#: first 250 files took 12 times as long
REGISTRY_UNION_LIMIT = 128
#: at most this many models (or their methods) a registry's union keeps: the models built at one call
#: of its classes (SlowFast's ``MODEL_REGISTRY.get(name)(cfg)``, a dozen architectures); more
#: (fairseq's hundred architectures, each a forward to run) join into an unknown module. Counting
#: models as a registry's classes (up to 128) made the project phase on torch's first 250 files
#: five times as long
REGISTRY_MODEL_LIMIT = 16


@dataclass(frozen=True, eq=False)
class FuncVal(Value):
    """A user function or method (``bound``: the receiver of a bound method)."""

    info: Any  # semantics.program.FunctionInfo
    bound: Optional[Value] = None
    #: a nested function's free names: the environments of the calls that defined it
    #: (semantics.program.Closure; the same ``def`` run by two calls makes two functions)
    closure: Any = None

    def __eq__(self, other: object) -> bool:
        return (type(other) is FuncVal and self.info is other.info and self.bound == other.bound  # type: ignore[attr-defined]
                and self.closure is other.closure)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((4, id(self.info), self.bound))


@dataclass(frozen=True, eq=False)
class ClassVal(Value):
    info: Any  # semantics.program.ClassInfo

    def __eq__(self, other: object) -> bool:
        return type(other) is ClassVal and self.info is other.info  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((5, id(self.info)))


class Star:
    """A ``*args`` argument of a call (its value is the collection)."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value


NONE = Scalar("none")
BOOL_SCALAR = Scalar("bool")


def python_scalar(value: Any) -> Optional[Scalar]:
    """A Python constant (bool, int, float, str, None) as a known scalar; None for anything else."""
    if value is None:
        return Scalar("none")
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(value, types):
            return Scalar(kind, value)
    return None
STR = Scalar("str")


# -- join ----------------------------------------------------------------------------------------
def options(value: Value) -> Tuple[Value, ...]:
    return (value.ordered or tuple(value.options)) if isinstance(value, Union) else (value,)


def join(a: Optional[Value], b: Optional[Value]) -> Value:
    """The least value that holds whatever ``a`` or ``b`` holds (None: not reached)."""
    if a is None:
        return b if b is not None else UNKNOWN
    if b is None or a is b:
        return a
    if a == b:  # equal as values; the casts they name may differ
        if type(a) is Module:
            return _join_same(a, b) if _cast_keys(b) - _cast_keys(a) else a  # type: ignore[arg-type]
        if type(a) is Tensor:
            return _join_same(a, b) if _half_origin_keys(b) - _half_origin_keys(a) else a  # type: ignore[arg-type]
        if type(a) in (Union, Seq) and _nested_half_keys(b) - _nested_half_keys(a):
            if type(a) is Seq:  # a model's ``(logits, hidden)`` made half at two places
                return _join_same(a, b) or a
            return _union(options(a) + options(b), a.wide or b.wide)  # type: ignore[union-attr]
        return a
    wide = isinstance(a, Union) and a.wide or isinstance(b, Union) and b.wide
    if a is UNKNOWN:
        return b.with_unknown() if not isinstance(b, Union) else _union(options(b) + (UNKNOWN,), wide, _settled(b))
    if b is UNKNOWN:
        return a.with_unknown() if not isinstance(a, Union) else _union(options(a) + (UNKNOWN,), wide, _settled(a))
    ta, tb = type(a), type(b)
    if ta is tb and ta is not Union:
        merged = _join_same(a, b)
        if merged is not None:
            return merged
    return _union(options(a) + options(b), wide, _settled(a))


def _settled(value: Value) -> int:
    """How many of the options of ``value`` :func:`_union` may take as they are: all of them where
    no two can merge (modules of different classes, a registry's classes, one value of every other
    kind that merges), else none (a union of a known and an unknown string merges them again)."""
    if not isinstance(value, Union):
        return 1
    found = value.__dict__.get("_settled")
    if found is None:
        kinds: Set[Any] = set()
        found = len(value.options)
        for member in options(value):
            kind = (member.cls, member.mode) if type(member) is Module else (  # type: ignore[attr-defined]
                (Instance, member.cls) if type(member) is Instance else type(member))  # type: ignore[attr-defined]
            if type(member) in _MERGING and kind in kinds:
                found = 0
                break
            kinds.add(kind)
        object.__setattr__(value, "_settled", found)
    return found


def trained_casts(module: "Module") -> Tuple[Origin, ...]:
    """The half casts of ``module`` made where it may be trained: not those made only where the
    flag of its ``requires_grad_(flag)`` is false (:attr:`Module.frozen_unless`)."""
    casts = module_casts(module)
    if not module.frozen_unless:
        return casts
    frozen_when = "not " + module.frozen_unless
    return tuple(o for o in casts if o.condition != frozen_when)


def module_casts(module: "Module") -> Tuple[Origin, ...]:
    """Where the half cast of ``module`` was made (its origin, then the others joined into it)."""
    return ((module.origin,) if module.cast & HALF and module.origin is not None else ()) + module.also


def tensor_casts(tensor: "Tensor") -> Tuple[Origin, ...]:
    """Where a half tensor was made half (its origin, then the others joined into it)."""
    return ((tensor.origin,) if tensor.origin is not None else ()) + tensor.also if tensor.half else ()


def _half_origin_keys(tensor: "Tensor") -> Set[Tuple[str, int, int, int, int]]:
    """The places a half tensor was made half."""
    return {o.key for o in tensor_casts(tensor)}


def _cast_keys(value: Value) -> Set[Tuple[str, int, int, int, int]]:
    """The places of the half casts of the modules ``value`` may be."""
    return {o.key for m in options(value) if type(m) is Module for o in module_casts(m)}  # type: ignore[arg-type]


def _nested_half_keys(value: Value, depth: int = 2) -> Set[Tuple[str, int, int, int, int]]:
    """:func:`half_cast_keys` of ``value`` and of the items of the tuples it may be (``depth`` deep)."""
    keys = half_cast_keys(value)
    if depth:
        for option in options(value):
            if type(option) is Seq:
                for item in option.items:  # type: ignore[attr-defined]
                    keys |= _nested_half_keys(item, depth - 1)
    return keys


def half_cast_keys(value: Optional[Value]) -> Set[Tuple[str, int, int, int, int]]:
    """The places where the modules and tensors ``value`` may be were made half."""
    if value is None:
        return set()
    return _cast_keys(value) | {o.key for t in options(value) if type(t) is Tensor
                                for o in tensor_casts(t)}  # type: ignore[arg-type]


#: at most this many other origins a joined tensor keeps (evidence; a join of many activations made
#: half at many places would otherwise carry them all)
MAX_TENSOR_ALSO = 8


def _other_origins(a: Tuple[Origin, ...], b: Tuple[Origin, ...], kept: Optional[Origin],
                   limit: Optional[int] = None) -> Tuple[Origin, ...]:
    """The origins of ``a`` and ``b`` besides ``kept`` (a joined value's ``origin``), each once (at
    most ``limit``)."""
    out: List[Origin] = []
    seen = {kept.key} if kept is not None else set()
    for origin in a + b:
        if origin.key not in seen and (limit is None or len(out) < limit):
            seen.add(origin.key)
            out.append(origin)
    return tuple(out)


def _join_kinds(a: "Module", b: "Module") -> FrozenSet[str]:
    """The layers a half cast may have reached in either module (empty: every layer)."""
    halves = [m.kinds for m in (a, b) if m.cast & HALF]
    if not halves or not all(halves):
        return frozenset()
    return frozenset().union(*halves)


def registry_join(values: Iterable[Optional[Value]]) -> Value:
    """The join of what a registry keeps (a dict or list of classes, stored under keys nobody knows):
    up to :data:`REGISTRY_UNION_LIMIT` project classes stay, where another join keeps six."""
    found = [o for v in values if v is not None for o in options(v)]
    known = [o for o in found if o is not UNKNOWN]
    out = _union(known, True) if known else UNKNOWN
    return join(out, UNKNOWN) if len(known) < len(found) and known else out  # as join treats unknown


def _union(values: Iterable[Value], wide: bool = False, settled: int = 0) -> Value:
    """A Union of ``values``, members of the same kind merged (one value per kind). ``settled``: how
    many of the first values are already a union's members (distinct, none merging with another),
    taken as they are: joining one value into a registry's hundred classes stays linear."""
    values = tuple(values)
    members: list = list(values[:settled])
    for value in values[settled:]:
        for i, member in enumerate(members):
            if type(member) is type(value) and member is not UNKNOWN:
                merged = _join_same(member, value)
                if merged is not None:
                    members[i] = merged
                    break
        else:
            if value not in members:
                members.append(value)
    if len(members) == 1:
        return members[0]
    if len(members) > UNION_LIMIT and not _kept_wide(members, wide):
        members = _strings_merged(members)
        if len(members) == 1:
            return members[0]
    if len(members) > UNION_LIMIT and not _kept_wide(members, wide):
        tensors = [m for m in members if isinstance(m, Tensor)]
        return tensors[0].with_unknown() if len(tensors) == 1 else UNKNOWN
    return union_of(members, wide)


def _strings_merged(members: List[Value]) -> List[Value]:
    """``members`` with their known strings merged into one string of unknown text."""
    strings = [m for m in members if type(m) is Scalar and m.kind == "str"]  # type: ignore[attr-defined]
    if len(strings) < 2:
        return members
    return [m for m in members if m not in strings] + [Scalar("str")]


def _kept_wide(members: List[Value], wide: bool) -> bool:
    """Whether a union of more than :data:`UNION_LIMIT` members is kept: modules (at most
    :data:`MODULE_UNION_LIMIT`), functions (at most :data:`FUNCTION_UNION_LIMIT`: what a dispatcher
    such as ``get_activation_fn(name)`` returns) and, in a registry's union, project classes (at
    most :data:`REGISTRY_UNION_LIMIT`) count as one member each beside the others."""
    modules = sum(1 for m in members if _of_a_module(m))
    registered = sum(1 for m in members if _registered(m)) if wide else 0
    functions = sum(1 for m in members if _a_function(m) and not (wide and _registered(m)))
    others = len(members) - modules - registered - functions
    return modules <= (REGISTRY_MODEL_LIMIT if wide else MODULE_UNION_LIMIT) and registered <= REGISTRY_UNION_LIMIT \
        and functions <= FUNCTION_UNION_LIMIT \
        and others + (modules > 0) + (registered > 0) + (functions > 0) <= UNION_LIMIT


def _a_function(value: Value) -> bool:
    """A project function (not a bound method) or a library name (``torch.tanh``, ``nn.SiLU``):
    what a dispatcher returns by reference, not an object it built."""
    return isinstance(value, FuncVal) and value.bound is None or isinstance(value, (Ext, Builtin))


def _registered(value: Value) -> bool:
    """A project class (what a registry of architectures keeps), an instance of one, a method
    bound to such an instance, or a project module (one of a package's plugins imported by name)."""
    if isinstance(value, FuncVal):
        value = value.bound
    return isinstance(value, (ClassVal, ModVal)) or isinstance(value, Instance) and isinstance(value.cls, ClassVal)


def _of_a_module(value: Value) -> bool:
    """A module, or a method bound to one: the members :data:`MODULE_UNION_LIMIT` counts."""
    if isinstance(value, Module):
        return True
    if isinstance(value, Method):
        return isinstance(value.recv, Module)
    return isinstance(value, FuncVal) and isinstance(value.bound, Module)


def _learned_join(a: "Tensor", b: "Tensor") -> bool:
    """Whether the join of two tensors is a learned layer's output where it is half: where it may be
    half, one of the learned sides must be (a float32 layer output on one branch and the float16
    ``zeros_like`` of another give a half value no layer made, whose exp or square cannot overflow)."""
    learned = a.learned or b.learned
    half = (a.dtypes | b.dtypes) & HALF
    if not learned or not half:
        return learned
    return bool(((a.dtypes if a.learned else 0) | (b.dtypes if b.learned else 0)) & half)


def _join_same(a: Value, b: Value) -> Optional[Value]:
    """The join of two values of one kind, None where they stay apart in a union. Only the kinds
    in :data:`_MERGING` ever merge."""
    if isinstance(a, Instance):
        assert isinstance(b, Instance)
        if a.cls != b.cls or getattr(getattr(a.cls, "info", None), "is_dataclass", False):
            return None  # two configs of one dataclass keep their own sizes
        # the fields a wrapper keeps of its own, joined; where either reads the class's, both do
        made = a.made if a.made == b.made else None
        if not a.own or not b.own or [k for k, _ in a.own] != [k for k, _ in b.own]:
            return Instance(a.cls, (), made)
        return Instance(a.cls, tuple((k, join(v, w)) for (k, v), (_, w) in zip(a.own, b.own)), made)
    if isinstance(a, Tensor):
        assert isinstance(b, Tensor)
        origin = a.origin if (a.origin is not None and (a.half or a.graph & HALF)) or b.origin is None else b.origin
        also = _other_origins(tensor_casts(a), tensor_casts(b), origin, MAX_TENSOR_ALSO) if a.also or b.also or (
            a.half and b.half and a.origin is not None and b.origin is not None and a.origin.key != b.origin.key) \
            else ()
        return Tensor(a.dtypes | b.dtypes, a.unknown or b.unknown, origin, a.scaled and b.scaled, a.param or b.param,
                      a.graph | b.graph, _learned_join(a, b), a.zero_dim and b.zero_dim, a.detached and b.detached,
                      also)
    if isinstance(a, Scalar):
        assert isinstance(b, Scalar)
        if a.kind != b.kind:
            kinds = {a.kind, b.kind}
            if kinds <= {"int", "float", "num"}:
                return Scalar("num")
            return None
        same = a.value == b.value
        if a.kind == "str" and not same and isinstance(a.value, str) and isinstance(b.value, str):
            return None  # a few known strings stay apart (``getattr(self, "model" if c else "decoder")``)
        return Scalar(a.kind, a.value if same else None, a.finfo if a.finfo == b.finfo else None,
                      a.site if same and a.site == b.site else None, a.default if a.default == b.default else None)
    if isinstance(a, Module):
        assert isinstance(b, Module)
        if a.cls != b.cls or a.mode != b.mode or a.master != b.master:
            # a union: an apex-initialised model and a plain one run differently, and an engine
            # that keeps fp32 master weights (DeepSpeed's half model) trains differently
            return None
        # cast on a path that may train it and on one that freezes it: only the casts of the first
        # make trained parameters half (``if train_te: te.to(dtype) else: te.to(dtype);
        # te.requires_grad_(False)``)
        one_frozen = a.frozen != b.frozen and bool(module_casts(a)) and bool(module_casts(b))
        if one_frozen and a.frozen:
            a, b = b, a
        origin = a.origin if (a.origin is not None and a.cast & HALF) or b.origin is None else b.origin
        items = a.items if a.items == b.items else (
            tuple(join(x, y) for x, y in zip(a.items, b.items)) if len(a.items) == len(b.items) else ())
        also = tuple(o for o in module_casts(a) if o is not origin) if one_frozen \
            else _other_origins(module_casts(a), module_casts(b), origin)
        return Module(a.cls, a.cast | b.cast, a.cast_unknown or b.cast_unknown, origin, items, a.master and b.master,
                      a.mode, a.site if a.site is b.site else None, _join_kinds(a, b), also, a.frozen and b.frozen,
                      a.names if a.names == b.names and items else (),
                      a.frozen_unless if a.frozen_unless == b.frozen_unless else "")
    if isinstance(a, Seq):
        assert isinstance(b, Seq)
        if len(a.items) == len(b.items):
            return Seq(tuple(join(x, y) for x, y in zip(a.items, b.items)), a.names if a.names == b.names else ())
        return Coll(join(_elem(a), _elem(b)))
    if isinstance(a, Coll):
        assert isinstance(b, Coll)
        return Coll(join(a.elem, b.elem), tuple(join(x, y) for x, y in zip(a.prefix, b.prefix)))
    if isinstance(a, Obj):
        assert isinstance(b, Obj)
        if a.kind != b.kind:
            return None
        site_a, site_b = a.get("site"), b.get("site")
        if isinstance(site_a, Scalar) and isinstance(site_b, Scalar) and site_a.value != site_b.value:
            return None  # objects built at different sites stay apart (an optimizer wrapped on one path)
        keys = sorted({k for k, _ in a.attrs} | {k for k, _ in b.attrs})
        return Obj(a.kind, tuple((k, join(a.get(k), b.get(k))) for k in keys))
    if isinstance(a, Autocast):
        assert isinstance(b, Autocast)
        if a.device != b.device:
            return None
        enabled = a.enabled if a.enabled == b.enabled else None
        return Autocast(a.device, a.dtype | b.dtype, enabled, a.origin or b.origin)
    if isinstance(a, DType):
        assert isinstance(b, DType)
        return DType(a.dtypes | b.dtypes, a.unknown or b.unknown, a.origin or b.origin)
    if isinstance(a, DictVal):
        assert isinstance(b, DictVal)
        merged = dict(a.items)
        for key, value in b.items:
            merged[key] = join(merged.get(key), value)
        return DictVal(tuple(merged.items()))
    return None


#: the kinds of value :func:`_join_same` may merge (other kinds stay apart in a union)
_MERGING = frozenset({Tensor, Scalar, Module, Seq, Coll, Obj, Autocast, DType, DictVal, Instance})


def _elem(value: Value) -> Value:
    if isinstance(value, Seq):
        out: Optional[Value] = None
        for item in value.items:
            out = join(out, item)
        return out if out is not None else UNKNOWN
    if isinstance(value, Coll):
        return value.elem
    if isinstance(value, Union) and all(isinstance(o, (Seq, Coll)) for o in options(value)):
        # a list grown in a loop: ``[]`` before it, its appends after. A value that may also be
        # something else (a tensor, unknown) stays unknown: what it yields is not known
        joined: Optional[Value] = None
        for option in options(value):
            if not (isinstance(option, Seq) and not option.items):  # an empty list yields nothing
                joined = join(joined, _elem(option))
        return joined if joined is not None else UNKNOWN
    return UNKNOWN


def covers(wide: Value, value: Value) -> bool:
    """Whether ``wide`` holds whatever ``value`` holds, evidence (origins, sites) aside: a summary
    computed for ``wide`` then answers for ``value`` too."""
    if wide is value or wide == value:
        return True
    return shape(join(wide, value)) == shape(wide)


def shape(value: Value) -> Any:
    """``value`` with its evidence erased, for comparison."""
    # tensors, dtypes, autocasts and scalars compare and hash without their evidence (origin, site)
    if isinstance(value, (Tensor, DType, Autocast, Scalar)):
        return value
    if isinstance(value, Module):
        return replace(value, origin=None, site=None, items=tuple(shape(v) for v in value.items)) \
            if value.items else value
    if isinstance(value, Union):
        return frozenset(shape(v) for v in options(value))
    if isinstance(value, Seq):
        return ("seq",) + tuple(shape(v) for v in value.items)
    if isinstance(value, Coll):
        return ("coll", shape(value.elem)) + tuple(shape(v) for v in value.prefix)
    if isinstance(value, DictVal):
        return ("dict",) + tuple((k, shape(v)) for k, v in value.items)
    if isinstance(value, Obj):
        return ("obj", value.kind) + tuple((k, shape(v)) for k, v in value.attrs)
    if isinstance(value, Method):
        return ("method", shape(value.recv), value.name)
    return value


def element(value: Value) -> Value:
    """What iterating ``value`` yields (the join of its items)."""
    return _elem(value)


#: the attribute of a GradScaler made on one path only that holds the test it was made under
_MADE_UNDER = "made_under"


def made_under(option: Value) -> Optional[str]:
    """The test a GradScaler (or a project class's instance) was made under, where it was made on
    one path only (:func:`with_condition`)."""
    if isinstance(option, Instance):
        return option.made
    made = option.get(_MADE_UNDER) if isinstance(option, Obj) and option.kind == "grad_scaler" else None
    return made.value if isinstance(made, Scalar) and isinstance(made.value, str) else None


#: the attribute of a partial made of an autocast picked on one path only that holds that path's test
_HOLDS_UNDER = "holds_under"


def holds_under(option: Value) -> Optional[str]:
    """The test under which the regions an autocast factory opens hold (:func:`with_condition`)."""
    held = option.get(_HOLDS_UNDER) if isinstance(option, Obj) and option.kind == "partial" else None
    return held.value if isinstance(held, Scalar) and isinstance(held.value, str) else None


def with_condition(value: Value, condition: str) -> Value:
    """Mark the half evidence of ``value`` as holding only when ``condition`` holds."""
    if isinstance(value, Tensor) and value.origin is not None and value.origin.condition is None:
        return replace(value, origin=replace(value.origin, condition=condition))
    if isinstance(value, Module) and value.origin is not None and value.origin.condition is None:
        return replace(value, origin=replace(value.origin, condition=condition))
    if isinstance(value, (Autocast, DType)) and value.origin is not None and value.origin.condition is None:
        return replace(value, origin=replace(value.origin, condition=condition))
    if isinstance(value, Obj) and value.kind == "grad_scaler" and made_under(value) is None:
        return value.set(_MADE_UNDER, Scalar("str", condition))  # ``GradScaler() if amp else None``
    if isinstance(value, Instance) and value.made is None:
        return replace(value, made=condition)
    if isinstance(value, Ext) and value.name in AUTOCASTS:
        # ``amp_autocast = torch.cuda.amp.autocast`` on one path, ``suppress`` on the other: the
        # regions it opens hold under the test (a partial that marks what it makes)
        return obj("partial", func=value, args=Seq(()), kwargs=DictVal(()), **{_HOLDS_UNDER: Scalar("str", condition)})
    if isinstance(value, Union):
        return union_of(with_condition(v, condition) for v in options(value))
    return value


def without_condition(value: Value, condition: str) -> Value:
    """``value`` on a path where ``condition`` is false: the half evidence that holds only when
    ``condition`` holds is dropped (``loss.backward()`` in the ``else`` of ``if args.fp16:``)."""
    if isinstance(value, Tensor) and value.origin is not None and value.origin.condition == condition \
            and (value.half or value.graph & HALF):
        dtypes = value.dtypes & ~HALF if value.half else value.dtypes
        return Tensor(dtypes, value.unknown or not dtypes, None, value.scaled, value.param, value.graph & ~HALF,
                      value.learned)
    if isinstance(value, Module) and value.origin is not None and value.origin.condition == condition \
            and value.cast & HALF:
        cast = value.cast & ~HALF
        return replace(value, cast=cast, cast_unknown=value.cast_unknown or not cast, origin=None, also=())
    if isinstance(value, Union):
        members = [without_condition(v, condition) for v in options(value)]
        if all(m is v for m, v in zip(members, options(value))):
            return value
        # a model that is half only under ``condition`` (apex's ``amp.initialize`` under ``if
        # args.fp16:``, beside the float32 model of the other path) is no model of this path: it
        # goes, rather than staying as a model of unknown dtype
        kept = [m for m, v in zip(members, options(value)) if not _made_only_under(v, condition)]
        return _union(kept if kept else members)
    if isinstance(value, Seq):
        items = tuple(without_condition(v, condition) for v in value.items)
        return value if all(m is v for m, v in zip(items, value.items)) else Seq(items, value.names)
    return value


def _made_only_under(value: Value, condition: str) -> bool:
    """A model all of whose cast is the half one made where ``condition`` holds."""
    return isinstance(value, Module) and value.origin is not None and value.origin.condition == condition \
        and bool(value.cast & HALF) and not value.cast & ~HALF and not value.cast_unknown


def with_cast_origin(value: Value, old: Origin, new: Origin) -> Value:
    """``value`` with its modules' half cast at ``old`` re-attributed to ``new`` (their children's too)."""
    if isinstance(value, Module):
        items = tuple(with_cast_origin(i, old, new) for i in value.items)
        also = tuple(new if o.key == old.key else o for o in value.also)
        if value.origin is not None and value.origin.key == old.key:
            return replace(value, origin=new, items=items, also=also)
        return replace(value, items=items, also=also) if items != value.items or also != value.also else value
    if isinstance(value, Union):
        return union_of(with_cast_origin(v, old, new) for v in options(value))
    return value


def tensor_dtypes(value: Value) -> Tuple[int, bool]:
    """(known dtypes, whether some paths are unknown) of a value used as a tensor."""
    if isinstance(value, Tensor):
        return value.dtypes, value.unknown
    if isinstance(value, Union):
        dt, unknown = 0, False
        for option in options(value):
            d, u = tensor_dtypes(option)
            dt |= d
            unknown = unknown or u
        return dt, unknown
    return 0, True


def apex_o1_only(tensors: Iterable["Tensor"]) -> bool:
    """Whether all the half evidence of ``tensors`` (there is some) is an apex-O1 model's: apex's
    patches of torch's functions are then in force wherever they are used."""
    origins = [o for t in tensors if t.half or t.low_graph & HALF
               for o in ((t.origin,) if t.origin is not None else ()) + t.also]
    return bool(origins) and all(o.kind == APEX_O1_ORIGIN for o in origins)


def carries_half(value: Value, depth: int = 2) -> bool:
    """Whether ``value`` carries evidence of half precision: a tensor that may be half (or went
    through half ops), a module cast to half, or such an item of a tuple, list or dict."""
    for option in options(value):
        if isinstance(option, Tensor) and option.low_graph & HALF:
            return True
        if isinstance(option, Module) and option.cast & HALF:
            return True
        if depth and isinstance(option, Seq) and any(carries_half(v, depth - 1) for v in option.items):
            return True
        if depth and isinstance(option, Coll) and (carries_half(option.elem, depth - 1)
                                                   or any(carries_half(v, depth - 1) for v in option.prefix)):
            return True
        if depth and isinstance(option, DictVal) and any(carries_half(v, depth - 1) for _, v in option.items):
            return True
    return False


def half_tensor(value: Value) -> Optional[Tensor]:
    """The tensor part of ``value`` when it may be half on positive evidence, else None."""
    for option in options(value):
        if isinstance(option, Tensor) and option.half:
            return option
    return None


def constant(value: Optional[Value]) -> Any:
    """The Python constant a value stands for, if known (else None)."""
    if isinstance(value, Scalar):
        return value.value
    return None
