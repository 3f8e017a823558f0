"""A flow-sensitive abstract interpreter for the precision analysis, over Python's ``ast``.

Every module's top level runs once (imports run the imported module first). A call of a user
function analyses its body for that calling context - the argument values, the receiver, the
autocast state - and memoises the result, so a function is analysed once per distinct context (at
most :data:`MAX_CONTEXTS`; past that, contexts are widened by joining their arguments, a module
receiver apart; a context widened :data:`MAX_WIDENINGS` times answers only the calls whose
arguments it covers and, when its arguments carry half evidence, only calls whose own arguments do
too; another call gets a context of its own, up to :data:`MAX_EXACT_CONTEXTS`, and past those an
unknown result). A summary
remembers which classes' instance fields it read, its callees' included; when one of those fields
changes later (a wrapper's ``self.module`` gets another class), the next call in that context
analyses it again. Functions no analysed code reaches are analysed once at the end with unknown
arguments ("context-free").

Within a function: assignments, unpacking, augmented assignment and attribute stores update an
environment; ``if``/``else`` and ``try`` join their branches (values that differ between the
branches of a flag test keep the condition as evidence); loops iterate to a fixpoint;
``with torch.autocast(...)`` changes the autocast state for its body (forking it when the autocast
is conditional); comprehensions and generators yield their element values.

What each expression evaluated to is recorded per analysis context in a :class:`Record`, which
rules read through :mod:`amp_lint.semantics.facts`. Instance attributes are kept per class (the
join of every ``self.x = ...``), and a module's cast (``.half()``) is a property of the instance
value that its submodules and parameters adopt when read.
"""
from __future__ import annotations

import ast
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from amp_lint.data import libraries
from amp_lint.data import ops as optable
from amp_lint.data import training as trainingdata
from amp_lint.data.paths import is_test_file
from amp_lint.semantics import torch_api
from amp_lint.semantics.configfiles import ConfigFiles
from amp_lint.semantics.program import (
    ClassInfo, Closure, FunctionInfo, ModuleIndex, Namespace, SourceModule, walk_scope,
)
from amp_lint.semantics.values import (
    BF16, BOOL, F16, F32, FLOATS, HALF, NONE, OPEN_KEYS, UNION_LIMIT, UNKNOWN, Builtin, ClassVal, Coll, DictVal, DType, Ext, FuncVal, Star,
    Instance, Method, ModVal, Module, Obj, Origin, Scalar, Seq, Tensor, Union, Value, covers, element, join, options,
    carries_half, half_cast_keys, known_strings, registry_join, REGISTRY_MODEL_LIMIT, shape, union_of,
    made_under, text_or_default, with_cast_origin, with_condition, without_condition,
)

#: An autocast state: None (no autocast) or (device, dtype bit); device "cuda", "cpu" or "apex" (O1).
State = Optional[Tuple[str, int]]

#: Set ``AMP_LINT_DEBUG=1`` to let internal errors of the analysis propagate (development).
DEBUG = bool(os.environ.get("AMP_LINT_DEBUG"))
MAX_CONTEXTS = 8
MAX_WIDENINGS = 3
MAX_EXACT_CONTEXTS = 16
MAX_DEPTH = 40
MAX_LOOP_ITERATIONS = 4
#: a ``for`` over a tuple or list of at most this many known items runs its body once per item
MAX_UNROLLED_ITEMS = 4
#: how often a context is analysed again because a field it read changed afterwards
MAX_RERUNS = 2
#: how many instance fields have changed so far (in any analysis): a summary checked at this count
#: is current without comparing its classes' versions
FIELD_CHANGES = [0]


@dataclass(frozen=True)
class CallSite:
    """One step of a call path: ``callee`` called at ``path:line`` (by the call node ``node_id``)."""

    path: str
    line: int
    callee: str
    node_id: int = 0
    #: the step is a guess: the forward of a module cast to half that the program only uses through
    #: other methods, run with unknown inputs (see ``analyse_seed`` and ``_seed_is_guess``)
    seeded: bool = False
    #: the step is no call: ``callee`` is the forward of the module cast at ``path:line``, run with
    #: unknown inputs because the program hands the module on (``analyse_seed``)
    via_cast: bool = False

    def describe(self) -> str:
        """What this step did, for evidence chains: ``calls `f```."""
        if self.via_cast:
            return f"runs `{self.callee}` of the module cast here (inputs unknown)"
        return f"calls `{self.callee}`"


@dataclass(eq=False)
class Record:
    """The values of one analysis of a scope (function, lambda or module top level) in one state."""

    scope: ast.AST
    module: SourceModule
    state: State
    stack: Tuple[CallSite, ...]
    context_free: bool
    autocast_origin: Optional[Origin] = None
    values: Dict[int, Value] = field(default_factory=dict)


@dataclass
class Summary:
    returns: Value
    effects: Dict[int, Value]
    #: the classes whose fields the analysis read (its callees' included) -> their field versions then
    reads: Dict[ClassInfo, int] = field(default_factory=dict)
    #: the analysis's record (dropped when the summary is stale and the context analysed again)
    record: Optional[Record] = None
    reruns: int = 0
    #: the value of FIELD_CHANGES when ``reads`` was last found current (no field changed since: not stale)
    checked: int = -1
    #: an optimizer's ``step()`` ran in it (or in a call it made)
    steps: bool = False
    #: an autocast region was entered in it (or in a call it made)
    autocasts: bool = False

    def stale(self) -> bool:
        """A field it read has changed since (``model.module`` got another class after this ran)."""
        if self.checked == FIELD_CHANGES[0]:
            return False
        if any(cls.field_version != version for cls, version in self.reads.items()):
            return True
        self.checked = FIELD_CHANGES[0]
        return False


class Frame:
    """The state of one running scope."""

    __slots__ = ("module", "info", "env", "record", "state", "stack", "returns", "mutated", "assigned", "loops",
                 "cls", "autocast_origin", "context_free", "yields", "statement", "closure", "no_grad", "returned",
                 "refuted", "branches", "narrowed", "aliases")

    def __init__(self, module: SourceModule, info: Optional[FunctionInfo], env: Dict[str, Value], record: Record,
                 state: State, stack: Tuple[CallSite, ...], cls: Optional[ClassInfo] = None) -> None:
        self.module = module
        self.info = info
        self.env = env
        self.record = record
        self.state = state
        self.stack = stack
        self.returns: Optional[Value] = None
        self.mutated: Set[str] = set()
        self.assigned: Set[str] = set()
        #: at each ``return`` passed so far, what the names changed in place by then held
        self.returned: List[Dict[str, Value]] = []
        self.loops: List[Tuple[List[Dict[str, Value]], List[Dict[str, Value]]]] = []
        self.cls = cls
        self.autocast_origin: Optional[Origin] = record.autocast_origin
        self.context_free = record.context_free
        self.yields: Optional[Value] = None
        self.statement: Optional[ast.AST] = None  # the call an expression statement consists of
        self.closure: Optional[Closure] = None  # a nested function's enclosing environments
        self.no_grad = False  # inside ``with torch.no_grad():`` (what it computes has no graph)
        #: conditions known false in the branch running (``else`` of ``if self.args.fp16:``): the
        #: half evidence that holds only under them is dropped from fields read here too
        self.refuted: FrozenSet[str] = frozenset()
        #: the branches running, innermost last: (the ``if`` test, whether this is its ``else``, the
        #: branch's first and last line)
        self.branches: Tuple[Tuple[ast.AST, bool, int, int], ...] = ()
        #: the locals a field of which was stored here (``self.logvar = ...``), ever: the environment
        #: holds such a field under ``"self.logvar"`` (see :meth:`Interpreter.narrow_field`)
        self.narrowed: Set[str] = set()
        #: locals bound to a field (``z = self.z``): a dict filled through the name fills the field
        self.aliases: Dict[str, ast.Attribute] = {}


_BUILTIN_NAMES = frozenset({
    "len", "range", "enumerate", "zip", "int", "float", "bool", "str", "list", "tuple", "dict", "set",
    "frozenset", "min", "max", "abs", "round", "sum", "sorted", "reversed", "isinstance", "issubclass",
    "hasattr", "getattr", "setattr", "print", "super", "type", "iter", "next", "map", "filter", "any", "all",
    "open", "repr", "format", "divmod", "pow", "callable", "id", "hash", "vars", "object", "property",
    "staticmethod", "classmethod", "Exception", "ValueError", "RuntimeError", "NotImplementedError",
    "KeyError", "TypeError", "AttributeError", "ImportError", "AssertionError", "StopIteration", "input",
    "__import__", "eval",
})


class Interpreter:
    """Runs the analysis over a set of source modules."""

    def __init__(self, modules: Sequence[SourceModule], *, device: str = "cuda",
                 configs: Optional[ConfigFiles] = None) -> None:
        # Modules run in one order whatever order the files were given in (the order of a
        # directory walk): which calls reach a function first decides how its contexts widen.
        # Test files run after the program's own files: a helper's first contexts (and the
        # summaries later calls with the same arguments reuse) are the program's, not a test's
        # toy model's.
        self.modules = sorted(modules, key=lambda module: (is_test_file(module.relpath), module.relpath.split("/")))
        #: the config files the program reads by a known path (``OmegaConf.load("model.yaml")``)
        self.configs = configs if configs is not None else ConfigFiles(None)
        #: DeepSpeed configs the program writes (``json.dumps(ds_config)``), with where
        self.written_deepspeed: List[Tuple[DictVal, str]] = []
        self.index = ModuleIndex(self.modules)
        self.device = "cpu" if device == "cpu" else "cuda"
        self.memo: Dict[tuple, Summary] = {}
        #: ``a() if c else b()`` used as a statement, as the ``if`` it runs as (by the statement's id)
        self.ifexp_statements: Dict[int, ast.If] = {}
        #: the value of each literal, by node id (the same in every run)
        self.constants: Dict[int, Value] = {}
        #: the literal defaults of each function's parameters, by its node's id
        self.literals: Dict[Tuple[int, bool], Dict[str, Value]] = {}
        self.running: Set[tuple] = set()
        self.wide: Dict[tuple, Tuple[tuple, int]] = {}
        #: the classes whose fields the running analysis has read (None at a module's top level)
        self.reading: Optional[Set[ClassInfo]] = None
        self.records: Dict[int, List[Record]] = {}
        self.functions: Dict[int, FunctionInfo] = {}
        self.classes: Dict[int, ClassInfo] = {}
        self.depth = 0
        self.live: Dict[int, Frame] = {}  # module id -> its running top-level frame
        #: module instances cast to half (or loaded in half): their forward runs in half wherever they
        #: go, also when the call is out of sight (a trainer, another program, the user)
        self.seeds: List[Tuple[Module, SourceModule, Optional[Origin]]] = []
        #: (cast site, class) of a half module -> how the program calls it (``__call__``, method names)
        self.half_uses: Dict[Tuple, Set[str]] = {}
        #: per cast site and class: the uses of the cast model that the text of its file shows (_uses_in_text)
        self.text_uses: Dict[Tuple, Set[str]] = {}
        #: id(function node) -> the parameters some call of it passes ("*": a call passes ``*args``
        #: or ``**kwargs`` of unknown content)
        self.passed_args: Dict[int, Set[str]] = {}
        #: creation sites of optimizers passed to a wrapper that keeps fp32 master weights
        self.master_wrapped: Set[str] = set()
        #: a library's model registry (``timm``) -> the project functions registered in it, by name,
        #: each by the file that registers it (two scripts' model files may register one name)
        self.library_models: Dict[str, Dict[str, Dict[str, Value]]] = {}
        #: file -> the project files it imports (what a program's run registers)
        self.import_edges: Dict[str, Set[str]] = {}
        #: texts of the branch conditions some half evidence was marked with (``args.fp16``)
        self.conditions: Set[str] = set()
        #: pairs of conditions the program asserts cannot both hold (``assert not a or not b``)
        self.declared_exclusive: Set[FrozenSet[str]] = set()
        #: such a condition's comparisons of an expression with constants (for exclusive tests)
        self.condition_compares: Dict[str, List[Compared]] = {}
        self._compares_of: Dict[int, List[Compared]] = {}
        #: ids of torch.nn constructor calls whose module ran in half (cast, or called under autocast)
        self.half_layers: Set[int] = set()
        #: a ``model.apply`` converter is being tried on a layer of each ``torch.nn`` class: tests
        #: ``isinstance(layer, nn.Linear)`` of those layers are decided
        self.probing_layers = False
        #: per frame running ``for p in X.parameters():`` that stores ``p.data``: (``X``, those stores)
        self.parameter_loops: Dict[int, Tuple[ast.AST, FrozenSet[int]]] = {}
        #: per running frame, the loops over a container's keys it is in: loop variable -> the
        #: container's text (``for k in keys:`` after ``keys = list(z.keys())``: ``k`` -> ``z``)
        self.key_loops: Dict[int, Dict[str, str]] = {}
        #: the body of each ``for m in model.modules():`` loop that casts ``m``, as a function of ``m``
        self.layer_loops: Dict[int, FunctionInfo] = {}
        self.parameter_casts: Dict[int, Tuple[Value, ast.AST]] = {}  # the last ``p.data = <half>`` of such a loop

        #: optimizers built over half parameters: (optimizer site, origin of the half dtype)
        self.half_optimizers: List[Tuple[str, Origin]] = []
        #: optimizer site -> origins of in-place half casts of its model made after it was built
        self.pending_casts: Dict[str, List[Origin]] = {}
        #: the half dtypes each of those casts (by its origin's key) made
        self.cast_bits: Dict[Tuple[str, int, int, int, int], int] = {}
        #: GradScaler sites that step or unscale an optimizer of half parameters -> that dtype's origin
        self.half_scalers: Dict[str, Origin] = {}
        #: mixed precision owned by a framework: (kind, precision text or None, origin)
        #: (kind, precision, where it was set up, the file of the program that reached it or None)
        self.frameworks: List[Tuple[str, Optional[str], Optional[Origin], Optional[str]]] = []
        #: ids of the call nodes through which an optimizer's ``step()`` ran (``opt.step_and_update_lr()``)
        self.stepping_calls: Set[int] = set()
        #: an optimizer stepped in the function being analysed (for its summary's ``steps``)
        self.stepped = False
        #: an autocast region was entered in the function being analysed (its summary's ``autocasts``)
        self.autocasted = False
        #: the files whose run opened an autocast region (outermost caller's, or the top level's)
        self.autocast_programs: Set[str] = set()
        #: internal errors met (path, line, description): the code there is left unknown
        self.errors: List[Tuple[str, int, str]] = []
        #: id of a ``map(f, ...)`` call -> the node its calls of ``f`` are made at (see torch_api._map)
        self.map_sites: Dict[int, ast.AST] = {}
        for module in self.modules:
            self._collect(module)

    # -- set-up ------------------------------------------------------------------------------------
    def _collect(self, module: SourceModule) -> None:
        """Create the infos of every def and class of ``module`` (qualified names by nesting)."""

        def visit(body: Sequence[ast.AST], prefix: str, cls: Optional[ClassInfo]) -> None:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    info = FunctionInfo(node, module, prefix + node.name, cls)
                    self.functions[id(node)] = info
                    module.functions.append(info)
                    visit(node.body, info.qualname + ".", None)
                elif isinstance(node, ast.ClassDef):
                    cinfo = ClassInfo(node, module, prefix + node.name)
                    self.classes[id(node)] = cinfo
                    module.classes.append(cinfo)
                    visit(node.body, cinfo.qualname + ".", cinfo)
                else:
                    for child in ast.iter_child_nodes(node):
                        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                            visit([child], prefix, cls)
                        elif isinstance(child, list):  # pragma: no cover
                            visit(child, prefix, cls)
            return None

        visit(module.tree.body, "", None)

    # -- driver ------------------------------------------------------------------------------------
    def run(self) -> None:
        """Run every module's top level, then the forward of every half module (seeds), then the
        functions nothing reached."""
        for module in self.modules:
            self.run_module(module)
        done: Set[Tuple[int, Module]] = set()
        while self.seeds:
            seeds, self.seeds = self.seeds, []
            for seed, where, origin in seeds:
                self.analyse_seed(seed, where, origin, done)
        free = [info for module in self.modules for info in module.functions if info.contexts == 0]
        unreached = unreferenced_classes(self.modules, {_top_class(info) for info in free} - {None})
        for info in free:
            if _top_class(info) not in unreached:
                self.analyse_free(info)

    def run_module(self, module: SourceModule) -> None:
        if module.state != "new":
            return
        module.state = "running"
        module.env.update({"__name__": Scalar("str"), "__file__": Scalar("str", module.relpath)})
        record = self._record(module.tree, module, None, (), False)
        frame = Frame(module, None, module.env, record, None, ())
        self.live[id(module)] = frame
        try:
            self.exec_block(module.tree.body, frame)
        except RecursionError:  # pragma: no cover - pathological nesting
            pass
        except Exception as exc:  # an analysis bug must not end the run: this module stays unknown
            if DEBUG:
                raise
            self.errors.append((module.relpath, 0, f"{type(exc).__name__}: {exc}"))
        finally:
            module.env = frame.env
            self.live.pop(id(module), None)
            module.state = "done"

    def enter_state(self, frame: Frame, state: State, origin: Optional[Origin]) -> None:
        """The rest of ``frame`` runs in ``state`` (apex O1 patches torch globally once initialised)."""
        if frame.state == state:
            return
        record = frame.record
        frame.state, frame.autocast_origin = state, origin
        frame.record = self._record(record.scope, record.module, state, record.stack, record.context_free, origin)
        frame.record.values.update(record.values)  # the call being evaluated spans both

    def run_in_state(self, frame: Frame, state: State, origin: Optional[Origin], run: Callable[[], Value]) -> Value:
        """``run()`` (a call a library makes for the program: Lightning's ``training_step``) in the
        autocast ``state``, the frame going back to its own afterwards."""
        saved = frame.state, frame.autocast_origin, frame.record
        if state != frame.state:
            self._enter_fork(frame, frame.record, state, origin)
        try:
            return run()
        finally:
            frame.state, frame.autocast_origin, frame.record = saved

    def _enter_fork(self, frame: Frame, record: Record, state: State, origin: Optional[Origin]) -> None:
        """``frame`` (whose record was ``record``) goes on in the autocast ``state``, with a record of
        its own; a program that runs code under autocast is noted as one that uses it."""
        if state is not None and state[1] & HALF:  # a float32 autocast makes nothing half
            self.autocasted = True
            if frame.stack or frame.info is None:
                self.autocast_programs.add(frame.stack[0].path if frame.stack else frame.module.relpath)
        frame.state, frame.autocast_origin = state, origin
        frame.record = self._record(record.scope, record.module, state, record.stack, record.context_free, origin)

    def _note_half_use(self, module: Module, how: str) -> None:
        """Remember that the program calls a module cast to half (``__call__``) or one of its methods."""
        if module.cast & HALF and module.origin is not None:
            self.half_uses.setdefault(_use_key(module, module.origin), set()).add(how)

    def _seed_is_guess(self, seed: Module, origin: Optional[Origin], where: SourceModule) -> bool:
        """The program uses the half module only through other methods (``model.half()`` then
        ``model.inference(...)``): running its ``forward`` is a guess, and what it finds is low confidence.
        A module the program never calls (handed to a trainer, library code) is run as it would be.
        The uses are those the run saw and, in the file of the cast, those its text shows on the name
        the cast binds (in functions not run yet: a UI callback that calls ``model.generate``)."""
        if origin is None:
            return False
        uses = set(self.half_uses.get(_use_key(seed, origin), ()))
        uses |= self._uses_in_text(seed, origin, where)
        return bool(uses) and not uses & {"__call__", "forward", _HANDED}

    def _uses_in_text(self, seed: Module, origin: Origin, where: SourceModule) -> Set[str]:
        """The methods of its own class called on the name ``model`` of ``model.half()`` in the file
        of the cast; ``__call__`` for ``model(...)``, and :data:`_HANDED` where the name is passed to
        a call, or a method its class does not define is called (a library's ``generate`` runs
        ``forward``). torch's own module methods (``eval``, ``to``) are no use. A model returned is
        used by the callers, whose uses the run records (:meth:`call`)."""
        if origin.path != where.relpath or not isinstance(seed.cls, ClassVal):
            return set()
        key = (origin.key, id(seed.cls.info))
        found = self.text_uses.get(key)
        if found is None:
            name = _cast_receiver(where.tree, origin)
            found = self.text_uses[key] = self._read_uses(seed.cls.info, name, where, _uses_scope(where.tree, origin, name))
        return found

    def _read_uses(self, cls: ClassInfo, name: Optional[str], where: SourceModule, scope: ast.AST) -> Set[str]:
        """:meth:`_uses_in_text` read once per cast and class: the uses of ``name`` in ``scope`` of ``where``."""
        if name is None:
            return set()
        out: Set[str] = set()
        for node in ast.walk(scope):
            if isinstance(node, ast.Call):
                func = node.func
                if _dotted(func) == name:
                    out.add("__call__")
                elif isinstance(func, ast.Attribute) and _dotted(func.value) == name:
                    if isinstance(self.class_lookup(cls, func.attr), FunctionInfo):
                        out.add(func.attr)
                    elif func.attr not in torch_api.MODULE_HOUSEKEEPING:
                        out.add(_HANDED)
                passed = [a for a in [a.value if isinstance(a, ast.Starred) else a for a in node.args]
                          + [k.value for k in node.keywords] if _dotted(a) == name]
                if passed and not _only_shows(func) and not all(self._kept_aside(node, a, where) for a in passed):
                    out.add(_HANDED)
        return out

    def _kept_aside(self, call: ast.Call, arg: ast.AST, where: SourceModule) -> bool:
        """``run_cuda_graph(self.net_g, ...)``: a project function whose parameter receiving the model
        is only looked at (``getattr``/``setattr``/``hasattr`` of it, a cache kept on it), never
        called, passed on, returned or a method of it called: the model is not handed to code that
        runs it."""
        if not isinstance(call.func, ast.Name) or isinstance(arg, ast.Starred):
            return False
        target = self.global_env(where).get(call.func.id)
        fnode = target.info.node if isinstance(target, FuncVal) else None
        if not isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        spec = fnode.args
        positional = [a.arg for a in spec.posonlyargs + spec.args]
        if arg in call.args:
            index = call.args.index(arg)
            if any(isinstance(a, ast.Starred) for a in call.args[:index]) or index >= len(positional):
                return False
            param = positional[index]
        else:
            keyword = next((k.arg for k in call.keywords if k.value is arg), None)
            if keyword is None or keyword not in positional + [a.arg for a in spec.kwonlyargs]:
                return False
            param = keyword
        looked_at = {id(c.args[0]) for c in ast.walk(fnode) if isinstance(c, ast.Call) and c.args
                     and isinstance(c.func, ast.Name) and c.func.id in _LOOKING_AT}
        return all(id(n) in looked_at for n in ast.walk(fnode)
                   if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load))

    def add_seed(self, module: Value, frame: Frame) -> None:
        for option in options(module):
            if isinstance(option, Module) and option.cast & HALF:
                self.mark_half_layers(option, set())
                if isinstance(option.cls, ClassVal) or option.items:
                    self.seeds.append((option, frame.module, option.origin))

    def mark_half_layers(self, module: Value, seen: Set[int], kinds: FrozenSet[str] = frozenset()) -> None:
        """Every torch.nn layer inside a module cast to half computes in half (``kinds``: every
        layer of those classes, where a converter cast only some)."""
        for option in options(module):
            if not isinstance(option, Module):
                if isinstance(option, (Seq, Coll)):
                    for item in (option.items if isinstance(option, Seq) else (option.elem,)):
                        self.mark_half_layers(item, seen, kinds)
                continue
            reached = kinds or option.kinds
            if option.site is not None and (not reached or option.layer_name in reached):
                self.half_layers.add(id(option.site))
            for item in option.items:
                self.mark_half_layers(item, seen, reached)
            if isinstance(option.cls, ClassVal) and id(option.cls.info) not in seen:
                seen.add(id(option.cls.info))
                for cls in self.mro(option.cls.info):
                    for value in cls.fields.values():
                        self.mark_half_layers(value, seen, reached)

    def analyse_seed(self, seed: Module, where: SourceModule, origin: Optional[Origin],
                     done: Set[Tuple[int, Module]]) -> None:
        """Run ``forward`` (or its class's own ``__call__``) of a half module with unknown inputs (its
        parameters decide). When the program calls the module itself, a parameter with a default
        that no call passes keeps its default (``labels=None`` where no caller passes labels): the
        run takes no branch no caller takes."""
        if not isinstance(seed.cls, ClassVal):
            key = (id(seed.cls), seed)
            if key in done:
                return
            done.add(key)
            site = CallSite(origin.path if origin else where.relpath, origin.line if origin else 0,
                            "forward", seeded=self._seed_is_guess(seed, origin, where), via_cast=True)
            record = self._record(where.tree, where, None, (site,), False)
            frame = Frame(where, None, {}, record, None, (site,))
            if isinstance(seed.cls, Ext) and seed.cls.name.endswith("Sequential"):
                self.call_module(seed, [UNKNOWN], {}, frame, None)  # the chain: each child gets its input
            else:
                for item in seed.items:
                    if isinstance(item, Module) and item.cast & HALF:
                        self.analyse_seed(item, where, origin, done)
            return
        forward = self.class_lookup(seed.cls.info, "forward")
        call = self.class_lookup(seed.cls.info, "__call__")
        if isinstance(call, FunctionInfo):  # its own ``__call__`` is what calling it runs (an attention processor)
            forward = call
        if not isinstance(forward, FunctionInfo) or (id(forward), seed) in done:
            return
        done.add((id(forward), seed))
        spec = forward.node.args  # type: ignore[attr-defined]
        count = len(spec.posonlyargs) + len(spec.args) - 1
        record = self._record(where.tree, where, None, (), False)
        frame = Frame(where, None, {}, record, None, ())
        site = CallSite(origin.path if origin else where.relpath, origin.line if origin else 0, forward.qualname,
                        seeded=self._seed_is_guess(seed, origin, where), via_cast=True)
        env, names = bind_arguments(forward.node, seed, [UNKNOWN] * max(count, 0), {}, forward.default_values)
        uses = self.half_uses.get(_use_key(seed, origin), set()) if origin is not None else set()
        passed = self.passed_args.get(id(forward.node))
        if uses & {"__call__", "forward"} and passed is not None and "*" not in passed:
            for name, default in parameter_defaults(forward.node, forward.module.relpath).items():
                if name not in passed:
                    env[name] = forward.default_values.get(name, default) if default is UNKNOWN else default
        self._invoke(forward, env, names, None, (site,), origin=None)
        del frame

    def analyse_free(self, info: FunctionInfo) -> None:
        """Analyse ``info`` with unknown arguments and, for a method, an instance of unknown cast."""
        node = info.node
        bound: Optional[Value] = None
        if info.cls is not None and not _is_static(node):
            cls_val = ClassVal(info.cls)
            bound = Module(cls_val, cast=0, cast_unknown=True) if info.cls.is_module else Instance(cls_val)
        args = node.args  # type: ignore[attr-defined]
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        values: List[Value] = [UNKNOWN] * len(names)
        if bound is not None and names:
            values[0] = bound
        if args.vararg:
            names.append(args.vararg.arg)
            values.append(Coll(UNKNOWN))
        if args.kwarg:
            names.append(args.kwarg.arg)
            values.append(DictVal(OPEN_KEYS))
        state, origin = None, None
        for dec in getattr(info, "decorators", ()):  # ``@torch.autocast("cuda")`` sets the body's state
            for option in torch_api.autocast_states(dec, state, origin, self.device):
                state, origin = option
                break
        env = dict(zip(names, values))
        for name, value in info.default_values.items():  # ``make_net=make_net94``: the factory it runs by default
            if env.get(name) is UNKNOWN and isinstance(value, (FuncVal, ClassVal)):
                env[name] = value
        for name, value in info.parametrized.items():  # a test run by pytest with the values it lists
            if env.get(name) is UNKNOWN:
                env[name] = value
        self._invoke(info, env, names, state, (), context_free=True, origin=origin)

    def run_from_command_line(self, runnable: Value, frame: Frame, node: Optional[ast.AST]) -> Value:
        """``fire.Fire(main)`` and the like (:data:`libraries.CLI_RUNNERS`): each function given
        (also as the values of a dict or the items of a list: one command each) is called with values
        from the command line (:func:`command_line_arguments`)."""
        out: Optional[Value] = None
        for option in options(runnable):
            items: Tuple[Value, ...] = (option,)
            if isinstance(option, DictVal):
                items = tuple(value for _, value in option.items)
            elif isinstance(option, Seq):
                items = option.items
            for item in items:
                if isinstance(item, FuncVal) and not isinstance(item.info.node, ast.Lambda):
                    kwargs = command_line_arguments(item.info.node, item.info.module.relpath)
                    out = join(out, self.call(item, [], kwargs, frame, node))
        return out if out is not None else UNKNOWN

    # -- records -----------------------------------------------------------------------------------
    def _record(self, scope: ast.AST, module: SourceModule, state: State, stack: Tuple[CallSite, ...],
                context_free: bool, origin: Optional[Origin] = None) -> Record:
        record = Record(scope, module, state, stack, context_free, origin)
        self.records.setdefault(id(scope), []).append(record)
        return record

    # -- names ---------------------------------------------------------------------------------------
    def global_env(self, module: SourceModule) -> Dict[str, Value]:
        live = self.live.get(id(module))
        if live is not None:
            return live.env
        if module.state == "new":
            self.run_module(module)
        return module.env

    def lookup(self, name: str, frame: Frame) -> Value:
        value = frame.env.get(name)
        if value is not None:
            return value
        if frame.closure is not None:
            scope = frame.closure.find(name)
            if scope is not None:
                return scope.env[name]
        if frame.info is not None or frame.cls is not None:
            value = self.global_env(frame.module).get(name)
            if value is not None:
                return value
        if name in _BUILTIN_NAMES:
            return Builtin(name)
        if name in ("True", "False"):
            return Scalar("bool", name == "True")
        return UNKNOWN

    # -- imports -------------------------------------------------------------------------------------
    def import_module(self, importer: SourceModule, dotted: str, level: int = 0) -> Value:
        found = (self.index.resolve_relative(importer, level, dotted) if level
                 else self.index.resolve_absolute(importer, dotted))
        if isinstance(found, SourceModule):
            self._note_import(importer, found)
            return ModVal(found)
        if isinstance(found, Namespace):
            return Obj("namespace_package", (("folder", Scalar("str", found.folder)),))
        if level:
            return UNKNOWN
        return Ext(dotted)

    def _note_import(self, importer: SourceModule, imported: SourceModule) -> None:
        """``importer`` imports ``imported`` (:attr:`import_edges`)."""
        self.import_edges.setdefault(importer.relpath, set()).add(imported.relpath)

    def imported_by(self, path: str) -> Set[str]:
        """The project files the file ``path`` imports, directly or through others, and itself."""
        seen = {path}
        todo = [path]
        while todo:
            for found in self.import_edges.get(todo.pop(), ()):
                if found not in seen:
                    seen.add(found)
                    todo.append(found)
        return seen

    def import_dynamic(self, arg: ast.AST, frame: Frame, *, package_only: bool = False,
                       libraries_too: bool = False) -> Value:
        """``importlib.import_module(name)``: the module when ``name`` is known (a library's by its
        name; ``package_only``: the top package, as ``__import__(name)`` without a ``fromlist``
        returns; a name chosen at run time whose default is known: the default's, the module the
        script runs unless told otherwise); where it is one of a few names, one of those modules
        (``__import__(module)`` of ``"torch.optim"`` or of a name the user gave); when only its
        package is known (``f"pkg.tasks.{name}"``, ``namespace + "." + file``: the plugin loop of a
        registry), every module of that package runs, as the loop over its folder would run them,
        and the module imported is one of them."""
        value = frame.record.values.get(id(arg))
        named = [text_or_default(o) for o in options(value) if text_or_default(o)] if value is not None else []
        if named:
            found_any: Optional[Value] = None
            for option in options(value):
                name = text_or_default(option)
                found_any = join(found_any, self._module_named(name.split(".")[0] if package_only and name
                                                               else name, frame, libraries_too))
            return found_any if found_any is not None else UNKNOWN
        prefix = self._string_prefix(arg, frame)
        if len(prefix) < 2 or not prefix.endswith("."):
            return UNKNOWN
        package = self.index.resolve_absolute(frame.module, prefix[:-1])
        folder = package.folder if isinstance(package, (SourceModule, Namespace)) else None
        if folder is None:
            return UNKNOWN
        found_modules: List[Value] = []
        for module in self.modules:
            if module.folder == folder and not module.is_package \
                    and not PurePosixPath(module.relpath).name.startswith("_"):
                self._note_import(frame.module, module)
                self.run_module(module)
                found_modules.append(ModVal(module))
        # the module imported is one of them (the plugin loop's current one, ``models.{args.model}``)
        return registry_join(found_modules) if found_modules else UNKNOWN

    def _module_named(self, name: Optional[str], frame: Frame, libraries_too: bool) -> Value:
        """The module of that absolute dotted name: the project's, run, or (``libraries_too``) a library's."""
        if not name or not all(part.isidentifier() for part in name.split(".")):
            return UNKNOWN
        found = self.import_module(frame.module, name)
        if isinstance(found, ModVal):
            self.run_module(found.info)
        return found if libraries_too or not isinstance(found, Ext) else UNKNOWN

    def _string_prefix(self, node: ast.AST, frame: Frame) -> str:
        """The known leading text of a string expression ("" when none)."""
        value = frame.record.values.get(id(node))
        if isinstance(value, Scalar) and isinstance(value.value, str):
            return value.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            out = ""
            for part in node.values:
                if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                    break
                out += part.value
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = frame.record.values.get(id(node.left))
            if isinstance(left, Scalar) and isinstance(left.value, str):
                return left.value + self._string_prefix(node.right, frame)
            return self._string_prefix(node.left, frame)
        return ""

    def module_attr(self, module: SourceModule, name: str, importer: Optional[SourceModule] = None) -> Value:
        env = self.global_env(module)
        value = env.get(name)
        if value is not None:
            return value
        if name == "__dict__":  # ``models.__dict__[args.arch]``: a registry of what the module defines
            return DictVal(tuple((key, fn) for key, fn in self.module_callables(module)))
        # a submodule of a package: ``from pkg import mod``
        if module.is_package:
            sub = self.index._lookup(module.folder, name)
            if isinstance(sub, SourceModule):
                return ModVal(sub)
        return UNKNOWN

    def module_callables(self, module: SourceModule) -> List[Tuple[str, Value]]:
        """The public classes and functions ``module`` defines itself (what a lookup by a name from
        the command line, ``getattr(models, args.arch)``, can pick)."""
        out: List[Tuple[str, Value]] = []
        for key, value in self.global_env(module).items():
            if key.startswith("_") or not isinstance(value, (ClassVal, FuncVal)) or value.info.module is not module:
                continue
            if isinstance(value, FuncVal) and value.bound is not None:
                continue
            out.append((key, value))
        return out

    def exec_import(self, node: ast.AST, frame: Frame) -> None:
        module = frame.module
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found = [self.import_module(module, ".".join(parts[:i])) for i in range(1, len(parts) + 1)]
                for value in found:  # ``import a.b`` runs a, then a.b, as Python does
                    if isinstance(value, ModVal):
                        self.run_module(value.info)
                frame.env[alias.asname or parts[0]] = found[-1] if alias.asname else found[0]
            return
        assert isinstance(node, ast.ImportFrom)
        base = self.import_module(module, node.module or "", node.level) if (node.module or node.level) else UNKNOWN
        for alias in node.names:
            if alias.name == "*":
                if isinstance(base, ModVal):
                    for key, value in self.global_env(base.info).items():
                        if not key.startswith("_"):
                            frame.env[key] = value
                continue
            local = alias.asname or alias.name
            if isinstance(base, ModVal):
                value = self.module_attr(base.info, alias.name)
                if value is UNKNOWN:
                    sub = self.import_module(module, f"{node.module}.{alias.name}" if node.module else alias.name,
                                             node.level)
                    value = sub if isinstance(sub, ModVal) else UNKNOWN
            elif isinstance(base, Obj) and base.kind == "namespace_package":
                sub = self.import_module(module, f"{node.module}.{alias.name}" if node.module else alias.name,
                                         node.level)
                value = sub if isinstance(sub, ModVal) else UNKNOWN
            elif isinstance(base, Ext):
                value = torch_api.ext_attr(base, alias.name)
            else:
                value = UNKNOWN
            frame.env[local] = value

    # -- statements ----------------------------------------------------------------------------------
    def exec_block(self, body: Sequence[ast.stmt], frame: Frame) -> bool:
        """Run ``body``; False when every path through it ended (return, raise, break)."""
        for stmt in body:
            handler = self._stmt_table.get(type(stmt))
            if handler is None:
                continue
            if not handler(self, stmt, frame):
                return False
        return True

    def _s_expr(self, node: ast.Expr, frame: Frame) -> bool:
        if isinstance(node.value, ast.IfExp):
            # ``model.half() if half else model.float()`` as a statement: an ``if`` of its two arms
            branch = self.ifexp_statements.get(id(node))
            if branch is None:
                value = node.value
                branch = self.ifexp_statements[id(node)] = ast.copy_location(ast.If(
                    test=value.test, body=[ast.copy_location(ast.Expr(value.body), value.body)],
                    orelse=[ast.copy_location(ast.Expr(value.orelse), value.orelse)]), node)
                branch.end_lineno, branch.end_col_offset = node.end_lineno, node.end_col_offset
            return self._s_if(branch, frame)
        frame.statement = node.value
        self.ev(node.value, frame)
        frame.statement = None
        if frame.info is None and frame.cls is None and _rebinds_globals(node.value):
            frame.module.overridable.update(name for name, value in frame.env.items() if isinstance(value, Scalar))
        return True

    def _s_assign(self, node: ast.Assign, frame: Frame) -> bool:
        value = self.ev(node.value, frame)
        for target in node.targets:
            self.bind(target, value, frame)
        if isinstance(node.value, ast.Attribute) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            frame.aliases[node.targets[0].id] = node.value
        return True

    def _s_annassign(self, node: ast.AnnAssign, frame: Frame) -> bool:
        if node.value is not None:
            self.bind(node.target, self.ev(node.value, frame), frame)
        return True

    def _s_augassign(self, node: ast.AugAssign, frame: Frame) -> bool:
        current = self.ev(node.target, frame)
        operand = self.ev(node.value, frame)
        result = self.binop(node.op, current, operand, frame, node)
        if isinstance(current, Tensor) and isinstance(result, Tensor):
            # in place: the dtype stays; what the values can be follows the op (``x /= x.norm()``)
            result = replace(current, scaled=current.scaled or result.scaled, learned=result.learned)
        self.bind(node.target, result, frame)
        return True

    def _s_return(self, node: ast.Return, frame: Frame) -> bool:
        value = self.ev(node.value, frame) if node.value is not None else NONE
        if frame.no_grad:
            value = torch_api.detached(value)
        frame.returns = join(frame.returns, value)
        # the effects of this path (an early return skips a cast below it)
        frame.returned.append({name: frame.env[name] for name in frame.mutated if name in frame.env})
        return False

    def _s_raise(self, node: ast.Raise, frame: Frame) -> bool:
        if node.exc is not None:
            self.ev(node.exc, frame)
        return False

    def _s_pass(self, node: ast.stmt, frame: Frame) -> bool:
        return True

    def _s_assert(self, node: ast.Assert, frame: Frame) -> bool:
        self.ev(node.test, frame)
        self._narrow_by_membership(node.test, frame)
        pair = _asserted_exclusive(node.test)
        if pair is not None:
            self.declared_exclusive.add(frozenset(condition_texts(t, frame.module)[0] for t in pair))
        return True

    def exclusive(self, left: str, right: str) -> bool:
        """Whether two conditions of evidence cannot both hold: by their text
        (:func:`conditions_exclusive`), or as the program asserts (``assert not (a and b)``)."""
        return conditions_exclusive(left, right) or frozenset((left, right)) in self.declared_exclusive

    def _narrow_by_membership(self, test: ast.AST, frame: Frame) -> None:
        """``assert args.dtype in ("float16", "bfloat16")``: past it, a string not known here is one
        of those (``getattr(torch, args.dtype)`` is then one of their dtypes)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
                and isinstance(test.comparators[0], (ast.Tuple, ast.List, ast.Set))
                and isinstance(test.left, (ast.Name, ast.Attribute))):
            return
        choices = test.comparators[0].elts
        if not choices or not all(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in choices):
            return
        current = self.ev(test.left, frame)
        if known_strings(current) or not all(o is UNKNOWN or isinstance(o, Scalar) and o.kind == "str"
                                             for o in options(current)):
            return
        self.bind(test.left, union_of(Scalar("str", c.value) for c in choices), frame)  # type: ignore[attr-defined]

    def _s_delete(self, node: ast.Delete, frame: Frame) -> bool:
        for target in node.targets:
            if isinstance(target, ast.Name):
                frame.env.pop(target.id, None)
        return True

    def _s_import(self, node: ast.AST, frame: Frame) -> bool:
        self.exec_import(node, frame)
        return True

    def _s_break(self, node: ast.stmt, frame: Frame) -> bool:
        if frame.loops:
            frame.loops[-1][0].append(dict(frame.env))
        return False

    def _s_continue(self, node: ast.stmt, frame: Frame) -> bool:
        if frame.loops:
            frame.loops[-1][1].append(dict(frame.env))
        return False

    def _s_if(self, node: ast.If, frame: Frame) -> bool:
        test = self.ev(node.test, frame)
        decided = self._decide(node.test, test, frame)
        if decided is True:
            return self.exec_block(node.body, frame)
        if decided is False:
            return self.exec_block(node.orelse, frame)
        before = frame.env
        false_in_then: List[str] = []
        false_in_else: List[str] = []
        if self.conditions:  # only once some evidence is conditional
            false_in_then, false_in_else = _refuted_flags(node.test, frame.module)
            false_in_then = [a for c in false_in_then for a in _flag_aliases(c) if a in self.conditions] \
                + self._excluded_by(node.test)
            false_in_else = [a for c in false_in_else for a in _flag_aliases(c) if a in self.conditions]
            false_in_else += self._excluded_by(node.test, negated=True)
        absent = _scaler_absent(node.test, frame)
        if absent is not None:  # where the scaler is None, the conditions that made it are false
            conditions, in_else = absent
            if in_else:
                false_in_else = false_in_else + conditions
            else:
                false_in_then = false_in_then + conditions
            # ... and where it is not, the conditions it excludes (``loss_scaler`` made under
            # ``not args.deepspeed``, None under ``args.deepspeed``: where it is there, the model
            # is not DeepSpeed's)
            made = set(conditions)
            excluded = [c for c in self.conditions if all(self.exclusive(m, c) for m in made)]
            if in_else:
                false_in_then = false_in_then + excluded
            else:
                false_in_else = false_in_else + excluded
        narrowing = _dtype_narrowing(node.test, frame)
        narrowed = _aliases(narrowing[0], frame) if narrowing is not None else ()
        refuted = frame.refuted
        entered = frame.state, frame.autocast_origin, frame.record
        alive_then, env_then = self._branch(node, False, _refine(before, false_in_then), false_in_then, frame,
                                            narrowing, narrowed)
        then_state = frame.state, frame.autocast_origin
        if then_state[0] != entered[0]:  # the else-branch does not run in what the then-branch entered
            frame.state, frame.autocast_origin, frame.record = entered
        alive_else, env_else = self._branch(node, True, _refine(before, false_in_else), false_in_else, frame,
                                            narrowing, narrowed)
        self._join_states(node, frame, entered, then_state if alive_then else None,
                          (frame.state, frame.autocast_origin) if alive_else else None)
        if not alive_then and not alive_else:
            frame.env = env_else
            return False
        if alive_then != alive_else:  # the rest runs on the path that goes on (``if fp16: return``)
            going_on = false_in_then if alive_then else false_in_else
            frame.refuted = refuted.union(going_on) if going_on else refuted
        frame.env = join_envs(env_then if alive_then else None, env_else if alive_else else None,
                              lambda: self._condition_texts(node.test, frame.module), before)
        return True

    def _join_states(self, node: ast.If, frame: Frame, entered: Tuple[State, Optional[Origin], Record],
                     then_went: Optional[Tuple[State, Optional[Origin]]],
                     else_went: Optional[Tuple[State, Optional[Origin]]]) -> None:
        """After an ``if`` (each branch's state where it falls through): a state a branch entered
        (apex O1's ``amp.initialize`` patches torch for the rest of the run) holds on, its evidence
        holding only under that branch's test where the other branch did not enter it."""
        went = [(side, w) for side, w in ((0, then_went), (1, else_went)) if w is not None and w[0] != entered[0]]
        if not went:
            frame.state, frame.autocast_origin, frame.record = entered
            return
        side, (state, origin) = went[0]
        if len(went) == 1 and origin is not None and origin.condition is None:
            origin = replace(origin, condition=self._condition_texts(node.test, frame.module)[side])
        if (frame.state, frame.autocast_origin) != (state, origin):
            frame.state, frame.autocast_origin, frame.record = entered
            self.enter_state(frame, state, origin)

    def _branch(self, node: ast.If, is_else: bool, env: Dict[str, Value], refuted: List[str], frame: Frame,
                narrowing: Optional[Tuple[str, int, bool]], narrowed: Sequence[str]) -> Tuple[bool, Dict[str, Value]]:
        """Run one branch of ``node`` from ``env`` with the conditions ``refuted`` there known false
        and the names ``narrowed`` narrowed by the test (``narrowing``): whether it falls through,
        and the environment it leaves."""
        body = node.orelse if is_else else node.body
        frame.env = env
        possible = [_narrow(env, name, narrowing[1], narrowing[2] != is_else)  # type: ignore[index]
                    for name in narrowed]
        if not all(possible):  # the test's value cannot take this branch: nothing runs on it
            return False, env
        saved_refuted, saved_branches = frame.refuted, frame.branches
        frame.refuted = saved_refuted.union(refuted) if refuted else saved_refuted
        if body:
            frame.branches = saved_branches + ((node.test, is_else, body[0].lineno, body[-1].end_lineno or 0),)
        entered = frame.state, frame.autocast_origin, frame.record
        origin = frame.autocast_origin
        state_refuted = frame.state is not None and origin is not None and origin.condition in refuted
        if state_refuted:
            # the state holds only under a condition false here (apex's ``amp.initialize`` under
            # ``use_amp == "apex"``, in the branch where the scaler made with it is None): not here
            record = frame.record
            frame.state, frame.autocast_origin = None, None
            frame.record = self._record(record.scope, record.module, None, record.stack, record.context_free, None)
        try:
            alive = self.exec_block(body, frame)
        finally:
            frame.refuted, frame.branches = saved_refuted, saved_branches
            if state_refuted and frame.state is None:
                frame.state, frame.autocast_origin, frame.record = entered
        return alive, frame.env

    def _excluded_by(self, test: ast.AST, negated: bool = False) -> List[str]:
        """Conditions false wherever ``test`` holds (``negated``: where it fails): ``args.opt == "fused"``
        where ``args.opt == "adam"`` holds (a conjunct of each compares the same expression with
        different constants)."""
        if not self.condition_compares:
            return []
        holding = self._compares(test)
        if negated:  # the else of ``x == c`` / ``x in (...)``: the flipped comparison holds
            single = isinstance(test, ast.Compare) and len(holding) == 1
            holding = [(holding[0][0], not holding[0][1], holding[0][2])] if single else []
        if not holding:
            return []
        return [text for text, compares in self.condition_compares.items()
                if any(_exclusive(a, b) for a in compares for b in holding)]

    def _compares(self, test: ast.AST) -> List["Compared"]:
        """The conjuncts of ``test`` that compare an expression with constants (cached per node)."""
        found = self._compares_of.get(id(test))
        if found is None:
            found = [c for c in map(_compared_constants, _conjuncts(test)) if c is not None]
            self._compares_of[id(test)] = found
        return found

    @staticmethod
    def _decide(test: ast.AST, value: Value, frame: Frame) -> Optional[bool]:
        """``_truth``, except for a module constant the module may rebind at run time."""
        name = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
        if (isinstance(name, ast.Name) and name.id in frame.module.overridable
                and (frame.info is None and frame.cls is None or name.id not in frame.env)):
            return None
        if isinstance(name, ast.Attribute) and isinstance(name.value, ast.Name) and name.value.id == "self":
            return value.value if _constant_field(name, frame) and isinstance(value, Scalar) \
                and value.kind == "bool" and isinstance(value.value, bool) else None
        return _truth(test, value)

    def _condition_texts(self, test: ast.AST, module: SourceModule) -> Tuple[str, str]:
        """:func:`condition_texts`, remembered as conditions some evidence depends on."""
        texts = condition_texts(test, module)
        self.conditions.update(texts)
        if texts[0] not in self.condition_compares:
            compares = self._compares(test)
            if compares:
                self.condition_compares[texts[0]] = compares
        return texts

    def _s_match(self, node: ast.Match, frame: Frame) -> bool:
        self.ev(node.subject, frame)
        before = frame.env
        out: Optional[Dict[str, Value]] = dict(before)
        alive_any = True
        for case in node.cases:
            frame.env = dict(before)
            self._bind_pattern(case.pattern, frame)
            if self.exec_block(case.body, frame):
                out = join_envs(out, frame.env, None)
            alive_any = True
        frame.env = out if out is not None else dict(before)
        return alive_any

    def _bind_pattern(self, pattern: ast.AST, frame: Frame) -> None:
        for sub in ast.walk(pattern):
            name = getattr(sub, "name", None)
            if isinstance(name, str):
                frame.env[name] = UNKNOWN

    def _loop(self, node: ast.AST, frame: Frame, bind_target: Callable[[], None], test: Optional[ast.AST]) -> bool:
        env_in = frame.env
        breaks: List[Dict[str, Value]] = []
        for _ in range(MAX_LOOP_ITERATIONS):
            frame.env = dict(env_in)
            if test is not None:
                self.ev(test, frame)
            bind_target()
            frame.loops.append(([], []))
            alive = self.exec_block(node.body, frame)  # type: ignore[attr-defined]
            breaks_now, continues = frame.loops.pop()
            breaks = breaks_now
            ends = [frame.env] if alive else []
            ends.extend(continues)
            new_in = env_in
            for env in ends:
                new_in = join_envs(new_in, env, None)
            if envs_equal(new_in, env_in):
                break
            env_in = new_in
        infinite = isinstance(test, ast.Constant) and bool(test.value)
        after = self._loop_exit(node, frame, None if infinite and breaks else env_in, breaks)
        frame.env = dict(after if after is not None else env_in)
        return after is not None or not getattr(node, "orelse", [])

    def _loop_exit(self, node: ast.AST, frame: Frame, normal_exit: Optional[Dict[str, Value]],
                   breaks: List[Dict[str, Value]]) -> Optional[Dict[str, Value]]:
        """The environment after a loop (None: not reached). Its ``else`` runs only when the loop ends
        without ``break``: ``for ...: ... break`` then ``else: raise ValueError("not found")`` leaves
        the code after it reached by the breaks."""
        orelse = getattr(node, "orelse", [])
        if orelse and normal_exit is not None:
            frame.env = dict(normal_exit)
            normal_exit = frame.env if self.exec_block(orelse, frame) else None
        after = normal_exit
        for env in breaks:
            after = join_envs(after, env, None)
        return after

    def _s_for(self, node: ast.For, frame: Frame) -> bool:
        key_loop = self._key_loop(node, frame)
        if key_loop is None:
            return self._s_for_items(node, frame)
        loops = self.key_loops.setdefault(id(frame), {})
        outer = loops.get(key_loop[0])
        loops[key_loop[0]] = key_loop[1]
        try:
            return self._s_for_items(node, frame)
        finally:
            if outer is None:
                loops.pop(key_loop[0], None)
                if not loops:
                    self.key_loops.pop(id(frame), None)
            else:
                loops[key_loop[0]] = outer

    def _key_loop(self, node: ast.For, frame: Frame) -> Optional[Tuple[str, str]]:
        """(the loop variable, the container's text) of a loop over the keys of a container: ``for k
        in z``, ``z.keys()``, ``list(z.keys())``, ``for k, v in z.items()``, or over a name bound
        once in the scope to such keys (``keys = list(z.keys())``). Read once per loop."""
        key = ("key loop", id(node))
        texts = frame.module.texts
        if key in texts:
            return texts[key]
        found = None
        target, iterable = node.target, node.iter
        if isinstance(iterable, ast.Name):  # ``keys = list(z.keys())`` bound once, then ``for k in keys``
            binding = _single_assignment(frame.info.node if frame.info is not None else frame.module.tree,
                                         iterable.id)
            iterable = binding.value if binding is not None else iterable
        container, items = _keys_of(iterable)
        if items:  # ``for k, v in z.items()``
            target = target.elts[0] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        if container is not None and isinstance(target, ast.Name):
            found = (target.id, _dotted(container))
        texts[key] = found
        return found

    def _s_for_items(self, node: ast.For, frame: Frame) -> bool:
        iterable = self.ev(node.iter, frame)
        elem = self.iterate(iterable, frame)
        owner = _parameter_loop(node)
        if owner is None:
            if isinstance(iterable, Seq) and 0 < len(iterable.items) <= MAX_UNROLLED_ITEMS \
                    and any(_holds_module(item) for item in iterable.items):
                return self._unrolled(node, frame, iterable.items, elem)
            alive = self._loop(node, frame, lambda: self.bind(node.target, elem, frame), None)
            layer_loop = _layer_loop(node)
            if layer_loop is not None:
                self._cast_by_layer_loop(node, layer_loop[0], layer_loop[1], frame)
            return alive
        self.parameter_loops[id(frame)] = owner
        try:
            alive = self._loop(node, frame, lambda: self.bind(node.target, elem, frame), None)
        finally:
            self.parameter_loops.pop(id(frame), None)
        cast = self.parameter_casts.pop(id(frame), None)
        if cast is not None:  # the loop ran over every parameter: none is left as it was
            self._cast_by_parameter_data(owner[0], cast[0], cast[1], frame)
        return alive

    def _cast_by_layer_loop(self, node: ast.For, receiver: ast.AST, cast_site: ast.Call, frame: Frame) -> None:
        """``for m in model.modules(): ... m.half()`` casts the layers of ``model`` it reaches, as
        ``model.apply`` of the loop's body would (:func:`torch_api.cast_by_layer_loop`)."""
        model = self.ev(receiver, frame)
        if not isinstance(model, Module):
            return
        info = self.layer_loops.get(id(node))
        if info is None:
            target = node.target.id  # type: ignore[attr-defined]
            body = ast.FunctionDef(name="<layer loop>", args=ast.arguments(
                posonlyargs=[], args=[ast.arg(arg=target)], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                defaults=[]), body=node.body, decorator_list=[], returns=None, type_params=[])
            ast.copy_location(body, node)
            body.end_lineno, body.end_col_offset = node.end_lineno, node.end_col_offset
            scope = frame.info.qualname + "." if frame.info is not None else ""
            info = self.layer_loops[id(node)] = FunctionInfo(body, frame.module, scope + "<layer loop>")
        closure = Closure(frame.env, frame.closure) if frame.info is not None else None
        torch_api.cast_by_layer_loop(self, frame, model, FuncVal(info, None, closure), node, receiver, cast_site)

    def _unrolled(self, node: ast.For, frame: Frame, items: Sequence[Value], elem: Value) -> bool:
        """A ``for`` over a few known items holding modules (``for m in (self.q, self.k):``, the pairs
        of an nn.ModuleDict's ``items()``): the body runs once per item in order, each run starting from
        where the last ended, so what one item's run does stays that item's. The body then runs once
        more over the joined items from the join of the runs' starts, only for what the rules read of
        it (one record per node): the environment that run leaves is dropped."""
        env: Optional[Dict[str, Value]] = frame.env
        starts: Optional[Dict[str, Value]] = None
        breaks: List[Dict[str, Value]] = []
        for item in items:
            assert env is not None  # the loop stops where no path goes on
            starts = join_envs(starts, env, None)
            frame.env = dict(env)
            self.bind(node.target, item, frame)
            frame.loops.append(([], []))
            alive = self.exec_block(node.body, frame)
            broken, continued = frame.loops.pop()
            breaks.extend(broken)
            following: Optional[Dict[str, Value]] = frame.env if alive else None
            for other in continued:
                following = join_envs(following, other, None)
            env = following
            if env is None:  # every path left the loop (break, return, raise)
                break
        assert starts is not None  # ``items`` is never empty
        frame.env = dict(starts)
        self.bind(node.target, elem, frame)
        frame.loops.append(([], []))
        self.exec_block(node.body, frame)
        frame.loops.pop()
        after = self._loop_exit(node, frame, env, breaks)
        if after is not None:
            frame.env = dict(after)
        return after is not None

    def _s_while(self, node: ast.While, frame: Frame) -> bool:
        return self._loop(node, frame, lambda: None, node.test)

    def _s_try(self, node: ast.AST, frame: Frame) -> bool:
        before = dict(frame.env)
        alive = self.exec_block(node.body, frame)  # type: ignore[attr-defined]
        env_body = frame.env if alive else None
        out: Optional[Dict[str, Value]] = None
        if alive and node.orelse:  # type: ignore[attr-defined]
            alive = self.exec_block(node.orelse, frame)  # type: ignore[attr-defined]
            env_body = frame.env if alive else None
        out = env_body
        any_alive = alive
        for handler in node.handlers:  # type: ignore[attr-defined]
            if alive and self._feature_test_of_torch(node.body, handler, frame):  # type: ignore[attr-defined]
                continue
            frame.env = join_envs(before, env_body, None) or dict(before)
            frame.env = dict(frame.env)
            if handler.type is not None:
                self.ev(handler.type, frame)
            if handler.name:
                frame.env[handler.name] = UNKNOWN
            if self.exec_block(handler.body, frame):
                out = join_envs(out, frame.env, None)
                any_alive = True
        frame.env = out if out is not None else dict(before)
        if node.finalbody:  # type: ignore[attr-defined]
            self.exec_block(node.finalbody, frame)  # type: ignore[attr-defined]
        return any_alive

    def _feature_test_of_torch(self, body: Sequence[ast.stmt], handler: ast.AST, frame: Frame) -> bool:
        """``try: if getattr(torch.cuda.amp, "autocast") is not None: has_native_amp = True`` /
        ``except AttributeError:``: the handler of a feature test whose only calls are ``getattr`` of
        the autocasts and gradient scalers the torch this tool describes has, which cannot raise."""
        kind = handler.type  # type: ignore[attr-defined]
        if not (isinstance(kind, ast.Name) and kind.id == "AttributeError"):
            return False
        calls = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        for call in calls:
            if not (isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) == 2):
                return False
            found = frame.record.values.get(id(call))
            if found is None or not _torch_feature(found):
                return False
        return bool(calls)

    def _s_with(self, node: ast.AST, frame: Frame) -> bool:
        states: List[Tuple[State, Optional[Origin]]] = [(frame.state, frame.autocast_origin)]
        no_grad = False
        for item in node.items:  # type: ignore[attr-defined]
            cm = self.ev(item.context_expr, frame)
            no_grad = no_grad or torch_api.is_no_grad(cm)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, torch_api.enter_value(cm), frame)
            new: List[Tuple[State, Optional[Origin]]] = []
            for state, origin in states:
                for option in torch_api.autocast_states(cm, state, origin, self.device):
                    if option[1] is not None and option[1].condition:  # ``enabled=<flag>``: refinable
                        self.conditions.add(option[1].condition)
                    if option not in new:
                        new.append(option)
            states = new or states
        if no_grad and not frame.no_grad:  # values made in the block carry no graph out of it
            before = frame.env
            frame.no_grad = True
            try:
                alive = self._with_body(node, frame, states)
            finally:
                frame.no_grad = False
            frame.env = {k: (torch_api.detached(v) if before.get(k) is not v else v) for k, v in frame.env.items()}
            return alive
        return self._with_body(node, frame, states)

    def _with_body(self, node: ast.AST, frame: Frame, states: List[Tuple[State, Optional[Origin]]]) -> bool:
        """Run a ``with`` block's body once, or once per autocast state its managers may set."""
        if len(states) == 1 and states[0][0] == frame.state:
            return self.exec_block(node.body, frame)  # type: ignore[attr-defined]
        return self._forked(node.body, frame, states)  # type: ignore[attr-defined]

    def _forked(self, body: Sequence[ast.stmt], frame: Frame, states: List[Tuple[State, Optional[Origin]]]) -> bool:
        """Run ``body`` once per autocast state, each with its own record; join the results."""
        before, record, state, origin = frame.env, frame.record, frame.state, frame.autocast_origin
        out: Optional[Dict[str, Value]] = None
        alive_any = False
        for new_state, new_origin in states:
            frame.env = dict(before)
            self._enter_fork(frame, record, new_state, new_origin)
            if self.exec_block(body, frame):
                alive_any = True
                out = join_envs(out, frame.env, None)
        frame.record, frame.state, frame.autocast_origin = record, state, origin
        frame.env = out if out is not None else before
        return alive_any or out is None and False

    def _s_functiondef(self, node: ast.AST, frame: Frame) -> bool:
        info = self.functions.get(id(node))
        if info is None:  # pragma: no cover - every def was collected
            return True
        for name, default in default_nodes(node):
            value = self.ev(default, frame)
            if value is not UNKNOWN and _default_value(default) is UNKNOWN:
                old = info.default_values.get(name)
                info.default_values[name] = value if old is None else join(old, value)
        closure = None
        if frame.info is not None:
            closure = info.closure = Closure(frame.env, frame.closure)
        decorators = [self.ev(d, frame) for d in node.decorator_list]  # type: ignore[attr-defined]
        info.decorators = decorators  # type: ignore[attr-defined]
        for dec in node.decorator_list:  # type: ignore[attr-defined]
            for name, value in self._parametrized(dec, frame).items():
                info.parametrized[name] = join(info.parametrized.get(name), value)
        value: Value = FuncVal(info, None, closure)
        if frame.cls is not None:
            frame.cls.methods[node.name] = info  # type: ignore[attr-defined]
        for dec in decorators:
            if isinstance(dec, Builtin) and dec.name == "property":
                value = Obj("property", (("getter", value),))
        frame.env[node.name] = value  # type: ignore[attr-defined]
        self._apply_user_decorators(decorators, FuncVal(info, None, closure), node, frame)
        for dec in decorators:  # ``@register_model`` of timm: ``create_model(name)`` builds it
            registry = libraries.MODEL_REGISTRATIONS.get(dec.name) if isinstance(dec, Ext) else None
            if registry is not None:
                by_file = self.library_models.setdefault(registry, {}).setdefault(node.name, {})  # type: ignore[attr-defined]
                by_file[frame.module.relpath] = FuncVal(info, None, closure)
        self._register_in_library(node, FuncVal(info, None, closure), frame)
        return True

    def _register_in_library(self, node: ast.AST, value: Value, frame: Frame) -> None:
        """``@META_ARCH_REGISTRY.register()`` (or ``.register("name")``) of detectron2 over a class
        or a builder function: the library's builder (``build_model(cfg)``) may build it; of a
        project's own fvcore ``Registry``, its ``get(name)`` returns it."""
        for dec in getattr(node, "decorator_list", ()):
            if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "register"):
                continue
            holder = frame.record.values.get(id(dec.func.value))
            for option in options(holder) if holder is not None else ():
                if isinstance(option, Obj) and option.kind == "class_registry":
                    key = option.get("key")  # a project's fvcore ``Registry``
                    registry = key.value if isinstance(key, Scalar) and isinstance(key.value, str) else None
                elif isinstance(option, Ext) and option.name.startswith(libraries.DETECTRON2_PACKAGE):
                    registry = libraries.DETECTRON2_REGISTRIES.get(option.name.rsplit(".", 1)[-1])
                else:
                    continue
                if registry is None:
                    continue
                given = dec.args[0] if dec.args else None
                name = given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) \
                    else getattr(node, "name", "")
                by_file = self.library_models.setdefault(registry, {}).setdefault(name, {})
                by_file[frame.module.relpath] = value

    def _parametrized(self, decorator: ast.AST, frame: Frame) -> Dict[str, Value]:
        """``@pytest.mark.parametrize("dtype, amp", [(torch.float16, True), pytest.param(...)])``:
        each parameter it names -> the join of the values listed for it (empty where the list is
        not written out)."""
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2):
            return {}
        spec, rows = decorator.args[0], decorator.args[1]
        if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
            names = [n.strip() for n in spec.value.split(",") if n.strip()]
        elif isinstance(spec, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in spec.elts):
            names = [e.value for e in spec.elts]  # type: ignore[attr-defined]
        else:
            return {}
        if not names or not isinstance(rows, (ast.List, ast.Tuple)):
            return {}
        out: Dict[str, Value] = {}
        for row in rows.elts:
            if isinstance(row, ast.Call) and getattr(row.func, "attr", getattr(row.func, "id", "")) == "param":
                cells = list(row.args)  # ``pytest.param(a, b, marks=...)``
            elif len(names) > 1 and isinstance(row, (ast.Tuple, ast.List)):
                cells = list(row.elts)
            else:
                cells = [row]
            if len(cells) != len(names) or any(isinstance(c, ast.Starred) for c in cells):
                return {}
            for name, cell in zip(names, cells):
                value = frame.record.values.get(id(cell))
                out[name] = join(out.get(name), value if value is not None else self.ev(cell, frame))
        return out

    def _apply_user_decorators(self, decorators: List[Value], target: Value, node: ast.AST, frame: Frame) -> None:
        """Run the project's own decorators on what they decorate, innermost first, for their
        effects: a registry decorator (``@register("name")``) stores the class or function in a dict
        that a lookup by a configured name (``MODELS[args.arch]``) reads. The name keeps the class
        or function itself: what a wrapper returns instead is not followed."""
        for dec in reversed(decorators):
            for option in options(dec):
                if isinstance(option, FuncVal):
                    self.call_function(option.info, option.bound, [target], {}, frame, node, effects=False,
                                       closure=option.closure)
                elif isinstance(option, Obj) and option.kind == "partial":  # ``partial(self.register, name=...)``
                    self.call(option, [target], {}, frame, None)

    def _s_classdef(self, node: ast.ClassDef, frame: Frame) -> bool:
        info = self.classes.get(id(node))
        if info is None:  # pragma: no cover
            return True
        info.bases = tuple(self.ev(b, frame) for b in node.bases)
        info.is_module = self.is_module_class(info)
        decorators = [self.ev(d, frame) for d in node.decorator_list]
        env: Dict[str, Value] = dict(frame.env) if frame.info is not None else {}
        body_frame = Frame(frame.module, frame.info, env, frame.record, frame.state, frame.stack, cls=info)
        body_frame.closure = frame.closure
        if frame.info is None:
            body_frame.env = _ClassNamespace(self.global_env(frame.module))  # type: ignore[assignment]
        self.exec_block(node.body, body_frame)
        for key, value in list(body_frame.env.items()):
            if isinstance(value, FuncVal):
                info.methods.setdefault(key, value.info)
            elif isinstance(value, Obj) and value.kind == "property":
                getter = value.get("getter")
                if isinstance(getter, FuncVal):
                    getter.info.is_property = True  # type: ignore[attr-defined]
                    info.methods[key] = getter.info
            else:
                info.class_attrs[key] = value
        if any(isinstance(d, Ext) and d.name.endswith("dataclass") for d in decorators) or \
                any(isinstance(d, Ext) and d.name.endswith("dataclasses.dataclass") for d in decorators):
            info.is_dataclass = True  # type: ignore[attr-defined]
        frame.env[node.name] = ClassVal(info)
        self._apply_user_decorators(decorators, ClassVal(info), node, frame)
        self._register_in_library(node, ClassVal(info), frame)
        return True

    def is_module_class(self, info: ClassInfo) -> bool:
        for base in info.bases:
            for option in options(base):
                if isinstance(option, ClassVal) and option.info.is_module:
                    return True
                if isinstance(option, Ext) and torch_api.is_module_base(option.name):
                    return True
        has_forward = any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "forward"
                          for s in info.node.body)
        return has_forward and any(isinstance(b, Ext) or b is UNKNOWN for b in info.bases)

    _stmt_table: Dict[type, Callable[..., bool]] = {}

    # -- binding -------------------------------------------------------------------------------------
    def bind(self, target: ast.AST, value: Value, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            if frame.narrowed:
                forget_fields(frame, target.id)
            if frame.aliases:
                frame.aliases.pop(target.id, None)
            frame.env[target.id] = value
            frame.assigned.add(target.id)
            frame.record.values[id(target)] = value
            if frame.info is not None and frame.cls is None:
                self._bind_declared(target.id, value, frame)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            star = next((i for i, e in enumerate(elts) if isinstance(e, ast.Starred)), None)
            items = unpack_targets(value, len(elts), star)
            for i, elt in enumerate(elts):
                if items is not None:
                    self.bind(elt.value if isinstance(elt, ast.Starred) else elt, items[i], frame)
                elif isinstance(elt, ast.Starred):
                    self.bind(elt.value, Coll(element(value) if not isinstance(value, Tensor) else value), frame)
                elif isinstance(value, Module) and value.items:  # ``a, b = self.blocks[i:i + 2]``
                    self.bind(elt, self.iterate(value, frame), frame)
                else:
                    self.bind(elt, value if isinstance(value, Tensor) else element(value), frame)
        elif isinstance(target, ast.Attribute):
            receiver = self.ev(target.value, frame)
            frame.record.values[id(target)] = value
            self.store_attr(receiver, target.attr, value, target, frame)
            if isinstance(target.value, ast.Name) and frame.info is not None:
                self.narrow_field(frame, target.value.id, target.attr, value, receiver)
            if target.attr == "data" and isinstance(target.value, ast.Attribute):
                self._cast_by_parameter_data(target.value.value, value, target, frame)
            elif target.attr == "data" and id(target) in self.parameter_loops.get(id(frame), (None, ()))[1]:
                # ``for p in model.parameters(): p.data = p.data.half()``: every parameter, so the module
                self._cast_by_parameter_data(self.parameter_loops[id(frame)][0], value, target, frame)
                self.parameter_casts[id(frame)] = (value, target)
        elif isinstance(target, ast.Subscript):
            container = self.ev(target.value, frame)
            index = self.ev(target.slice, frame)
            if isinstance(container, Module) and container.items:
                self._store_child(container, target, index, value, frame)
            elif container is UNKNOWN and isinstance(target.slice, ast.Name) and carries_half(value):
                self._cast_by_key_loop(target, value, frame)
            if isinstance(container, DictVal) and isinstance(target.value, ast.Name):
                name = target.value.id
                key = _const_key(target.slice)
                items = dict(container.items)
                if name in frame.env or frame.info is None:
                    items[key] = join(items.get(key), value) if key is None else value
                    frame.env[name] = DictVal(tuple(items.items()))
                elif all(isinstance(o, (ClassVal, FuncVal)) for o in options(value)):
                    # a module's dict of classes or functions filled by a function (a registry's
                    # decorator): every store is kept. Other values (a cache of tensors keyed by
                    # dtype) stay local: a join over unknown keys would mix what the keys keep
                    # apart. A dict of the enclosing call (a registry a factory makes, fairseq's
                    # ``setup_registry``) is not filled: its criteria, each run on every registered
                    # model, gave 1 true and 4 false findings on fairseq (the models a criterion
                    # is used with are chosen on the command line)
                    genv = self.global_env(frame.module)
                    if isinstance(genv.get(name), DictVal):
                        items[key] = registry_join((items.get(key), value))
                        genv[name] = DictVal(tuple(items.items()))
            elif isinstance(container, DictVal) and isinstance(target.value, ast.Attribute) \
                    and isinstance(target.value.value, ast.Name) and target.value.value.id == "self" \
                    and carries_half(value) and not all(isinstance(o, (ClassVal, FuncVal)) for o in options(value)):
                # ``self.z[k] = w.to(DTYPE)`` in a method filling the instance's dict of weights: the
                # field's dict holds the half tensor under that key (any key where it is not known)
                value = _weights_of(value)
                key = _const_key(target.slice)
                items = dict(container.items)
                items[key] = join(items.get(key), value) if key is None else value
                owner = frame.record.values.get(id(target.value.value), UNKNOWN)
                for option in options(owner):
                    if _class_info(option) is not None:
                        self.replace_field(option, target.value.attr, container, DictVal(tuple(items.items())))
            elif isinstance(container, DictVal) and isinstance(target.value, ast.Attribute) and options(value) \
                    and all(isinstance(o, (ClassVal, FuncVal)) for o in options(value)):
                # ``self._module_dict[name] = fn`` in a method of a registry class (mmcv's
                # ``Registry``): the field's dict keeps every class or function stored in it
                # under each name known here (``module_name`` or, when None, ``fn.__name__``)
                names = [o.value for o in options(index) if isinstance(o, Scalar) and isinstance(o.value, str)]
                items = dict(container.items)
                for key in names or [None]:
                    items[key] = registry_join((items.get(key), value))
                owner = frame.record.values.get(id(target.value.value), UNKNOWN)
                for option in options(owner):
                    if _class_info(option) is not None:
                        self.replace_field(option, target.value.attr, container, DictVal(tuple(items.items())))
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value, frame)

    def _cast_by_key_loop(self, target: ast.Subscript, value: Value, frame: Frame) -> None:
        """``for k in keys: z[k] = z[k].to(dtype=DTYPE)`` over the keys of a dict of unknown content
        (a loaded state dict): every value it holds is now ``value``, and so is what a constant key
        reads from it later (``z['emb.weight']``). Where the dict is a field, or a local bound to
        one (``z = self.z``), the field holds it too."""
        loops = self.key_loops.get(id(frame))
        container_text = loops.get(target.slice.id) if loops else None  # type: ignore[attr-defined]
        if container_text is None or container_text != _dotted(target.value):
            return
        filled = DictVal(((None, _weights_of(value)),))
        field_node: Optional[ast.AST] = target.value
        if isinstance(target.value, ast.Name):
            name = target.value.id
            frame.env[name] = filled
            frame.mutated.add(name)
            field_node = frame.aliases.get(name)
        if isinstance(field_node, ast.Attribute):
            owner = frame.record.values.get(id(field_node.value))
            if owner is not None:
                self.replace_field(owner, field_node.attr, UNKNOWN, filled)

    def _store_child(self, container: Module, target: ast.Subscript, index: Value, value: Value,
                     frame: Frame) -> None:
        """``self.blocks[k] = wrap(self.blocks[k])`` into an nn.ModuleDict / ModuleList / Sequential:
        the child under a known key or index is replaced; under a key not known here (a loop over
        its keys) every child may be it, so each is joined with the stored value. The expression
        that names the container (a name or a field) then holds the updated container."""
        key = index.value if isinstance(index, Scalar) else None
        items = list(container.items)
        if isinstance(key, str) and key in container.names:
            items[container.names.index(key)] = value
        elif isinstance(key, int) and not isinstance(key, bool) and -len(items) <= key < len(items):
            items[key] = value
        else:
            items = [join(item, value) for item in items]
        updated = replace(container, items=tuple(items))
        owner_expr = target.value
        if isinstance(owner_expr, ast.Name):
            frame.env[owner_expr.id] = updated
        elif isinstance(owner_expr, ast.Attribute):
            owner = frame.record.values.get(id(owner_expr.value))
            # a field is the class's, for every instance: children read through an owner of another
            # or an unknown dtype carry that owner's cast (adopt), which must not be stored back
            if owner is not None and all(isinstance(o, Module) and o.cast == F32 and not o.cast_unknown
                                         for o in options(owner)):
                self.replace_field(owner, owner_expr.attr, container, updated)

    def _bind_declared(self, name: str, value: Value, frame: Frame) -> None:
        """A store to a name the function declares ``global`` (``global model; model = Net().half()``
        in a setup function) or ``nonlocal`` also reaches the module's or the enclosing call's
        binding, joined with what it held: whether and when the function runs is not known there."""
        globals_, nonlocals = frame.info.declared  # type: ignore[union-attr]
        if name in globals_:
            held: Optional[Dict[str, Value]] = self.global_env(frame.module)
        elif name in nonlocals and frame.closure is not None:
            scope = frame.closure.find(name)
            held = scope.env if scope is not None else None
        else:
            return
        if held is not None:
            old = held.get(name)
            held[name] = value if old is None else join(old, value)

    def _cast_by_parameter_data(self, owner_expr: ast.AST, value: Value, node: ast.AST, frame: Frame) -> None:
        """``layer.weight.data = layer.weight.data.half()`` (a hand-written ``convert_weights``, often
        run on every layer by ``model.apply``): the layer owning the parameter now computes in half.
        Only a value that is half for sure casts; the cast is in place, as ``layer.half()``'s. A value
        that is float32 for sure casts back (``p.data = p.data.float()``, CLIP's
        ``convert_models_to_fp32``), as ``layer.float()`` does."""
        if not isinstance(value, Tensor) or value.unknown:
            return
        floats = value.dtypes & FLOATS
        if floats == F32:
            dtypes = F32
        elif value.dtypes & HALF and not floats & ~HALF:
            dtypes = value.dtypes & HALF
        else:
            return
        owner = frame.record.values.get(id(owner_expr))
        modules = options(owner) if owner is not None else []
        if not modules or not all(isinstance(o, Module) for o in modules):
            return
        origin = torch_api.module_cast_origin(frame, node)
        cast = union_of(m.cast_to(dtypes, origin) for m in modules)  # type: ignore[union-attr]
        torch_api.cast_in_place(self, frame, owner, cast, owner_expr)

    @staticmethod
    def narrow_field(frame: Frame, name: str, attr: str, value: Value, receiver: Value) -> None:
        """After ``self.logvar = v`` in a function, reading ``self.logvar`` there gives ``v`` until
        ``self`` is rebound or handed to a call (a field is otherwise the join of every store into
        it, in every context: a value made half in another caller's context would show up here).
        Only data is narrowed (tensors, numbers, strings, their tuples), on instances of project
        classes; a module stored in a field keeps its owner's cast as :meth:`getattr` applies it."""
        key = f"{name}.{attr}"
        if _narrowable(value) and all(_class_info(o) is not None for o in options(receiver)):
            frame.env[key] = value
            frame.narrowed.add(name)
        elif frame.narrowed:
            frame.env.pop(key, None)

    def store_attr(self, receiver: Value, name: str, value: Value, node: ast.AST, frame: Frame) -> None:
        if frame.branches:
            value = self._cast_in_branch(value, frame)
        local = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and (frame.info is None or node.value.id in frame.assigned) else None
        for option in options(receiver):
            cls = _class_info(option)
            if isinstance(option, Instance) and cls is not None and option.field(name) is not None:
                if local is not None and receiver is option:
                    # ``config = Config.from_name("7B"); config.vocab_size = 100``: this instance, the
                    # one the name holds, now has that field (other instances keep theirs)
                    frame.env[local] = replace(option, own=tuple((k, value if k == name else v)
                                                                 for k, v in option.own))
                else:
                    cls.stored_fields.add(name)  # stored after it was built: the class's join is read
            if cls is not None:
                old = cls.fields.get(name)
                set_field(cls, name, value if old is None else join(old, value))
            elif isinstance(option, Obj) and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                frame.env[node.value.id] = option.set(name, value)

    def _cast_in_branch(self, value: Value, frame: Frame) -> Value:
        """A value made half inside the branch that stores it in a field (``if args.fp16:
        self.model = model.half()``): the cast holds under the branch's test, as for a name."""
        for option in options(value):
            origin = option.origin if isinstance(option, (Tensor, Module)) else None
            if origin is None or origin.condition is not None or origin.path != frame.module.relpath:
                continue
            for test, negated, first, last in reversed(frame.branches):
                if first <= origin.line <= last:
                    texts = self._condition_texts(test, frame.module)
                    return with_condition(value, texts[1] if negated else texts[0])
        return value

    def replace_field(self, receiver: Value, name: str, old: Value, new: Value) -> None:
        """A strong update of a field: where it may hold ``old`` (a container grown in place), it now
        holds ``new`` instead (a join would lose the children of containers of different lengths)."""
        for option in options(receiver):
            cls = _class_info(option)
            if cls is None:
                continue
            current = cls.fields.get(name)
            if current is None or old not in options(current):
                old_join = current
                set_field(cls, name, new if old_join is None else join(old_join, new))
                continue
            out: Optional[Value] = None
            for member in options(current):
                out = join(out, new if member == old else member)
            set_field(cls, name, out if out is not None else new)

    # -- expressions ---------------------------------------------------------------------------------
    def ev(self, node: Optional[ast.AST], frame: Frame) -> Value:
        if node is None:
            return NONE
        handler = self._expr_table.get(type(node))
        value = handler(self, node, frame) if handler is not None else UNKNOWN
        frame.record.values[id(node)] = value
        return value

    def _e_constant(self, node: ast.Constant, frame: Frame) -> Value:
        found = self.constants.get(id(node))
        if found is None:
            found = self.constants[id(node)] = self._constant(node, frame)
        return found

    @staticmethod
    def _constant(node: ast.Constant, frame: Frame) -> Value:
        v = node.value
        if v is None:
            return NONE
        if isinstance(v, bool):
            return Scalar("bool", v)
        if isinstance(v, int):
            return Scalar("int", v, site=(frame.module.relpath, node))
        if isinstance(v, float):
            return Scalar("float", v, site=(frame.module.relpath, node))
        if isinstance(v, str):
            return Scalar("str", v)
        return Scalar("other")

    def _e_name(self, node: ast.Name, frame: Frame) -> Value:
        return self.lookup(node.id, frame)

    def _e_attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        receiver = self.ev(node.value, frame)
        narrowed = frame.env.get(f"{node.value.id}.{node.attr}") \
            if frame.narrowed and isinstance(node.value, ast.Name) and node.value.id in frame.narrowed else None
        value = narrowed if narrowed is not None else self.getattr(receiver, node.attr, frame, node)
        for condition in frame.refuted:  # a field made half under a test known false here
            value = without_condition(value, condition)
        return value

    def _e_subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        container = self.ev(node.value, frame)
        index = self.ev(node.slice, frame)
        out: Optional[Value] = None
        for option in options(container):
            out = join(out, self.subscript(option, index, node))
        return out if out is not None else UNKNOWN

    def subscript(self, container: Value, index: Value, node: ast.Subscript) -> Value:
        if isinstance(container, Tensor):
            return replace(container, param=False, zero_dim=False)  # ``s[None]`` has a dimension
        if isinstance(container, Seq):
            key = index.value if isinstance(index, Scalar) and isinstance(index.value, int) else None
            if key is not None and -len(container.items) <= key < len(container.items):
                return container.items[key]
            if isinstance(node.slice, ast.Slice):
                return Coll(element(container))
            return element(container)
        if isinstance(container, Coll):
            key = index.value if isinstance(index, Scalar) and isinstance(index.value, int) else None
            if key is not None and 0 <= key < len(container.prefix) and not isinstance(node.slice, ast.Slice):
                return container.prefix[key]
            return container.elem if not isinstance(node.slice, ast.Slice) else container
        if isinstance(container, DictVal):
            key = index.value if isinstance(index, Scalar) else None
            for k, v in container.items:
                if key is not None and k == key:
                    return v
            if key is not None:  # not a value stored under another constant key: one stored under an
                # unknown key (``out[name] = ...`` in a loop), or, if none, unknown
                values = tuple(v for k, v in container.items if k is None)
            else:
                values = tuple(v for _, v in container.items)
            return registry_join(values) if values else UNKNOWN
        if isinstance(container, Module):  # a child of ModuleList/Sequential/ParameterList follows its cast
            if container.names and isinstance(index, Scalar) and index.value in container.names:
                return adopt(container.items[container.names.index(index.value)], container)  # type: ignore[arg-type]
            if container.items:
                key = index.value if isinstance(index, Scalar) and isinstance(index.value, int) else None
                if key is not None and -len(container.items) <= key < len(container.items):
                    return adopt(container.items[key], container)
                if isinstance(node.slice, ast.Slice):
                    return container
                return adopt(element(Seq(container.items)), container)
            cls = container.cls
            if cls is None or isinstance(cls, Ext) and (not cls.name.startswith("torch.nn.") or cls.name.rsplit(
                    ".", 1)[-1] in ("ModuleList", "Sequential", "ModuleDict")):
                # a layer of a model known only by its cast (``model.model.layers[i]`` of a loaded
                # checkpoint): a submodule, as its attributes are (torch_api.module_builtin_attr)
                return Module(None, container.cast, container.cast_unknown, container.origin,
                              master=container.master, kinds=container.kinds)
            return UNKNOWN
        if isinstance(container, Obj) and container.kind == "namespace":
            key = index.value if isinstance(index, Scalar) else None
            return container.get(key) or UNKNOWN if isinstance(key, str) else UNKNOWN
        return UNKNOWN

    def _e_binop(self, node: ast.BinOp, frame: Frame) -> Value:
        left = self.ev(node.left, frame)
        right = self.ev(node.right, frame)
        return self.binop(node.op, left, right, frame, node)

    def binop(self, op: ast.operator, left: Value, right: Value, frame: Frame, node: ast.AST) -> Value:
        out: Optional[Value] = None
        for a in options(left):
            for b in options(right):
                if _raises_in_arithmetic(a, b):
                    continue  # that path stops here: the other pairs make the result
                out = join(out, torch_api.binop(self, frame, op, a, b, node))
        return out if out is not None else UNKNOWN

    def _e_unaryop(self, node: ast.UnaryOp, frame: Frame) -> Value:
        operand = self.ev(node.operand, frame)
        if isinstance(node.op, ast.Not):
            known = _truth(node.operand, operand) if isinstance(node.operand, (ast.Name, ast.Compare, ast.BoolOp)) \
                or _is_isinstance(node.operand) else None
            return Scalar("bool") if known is None else Scalar("bool", not known)
        out: Optional[Value] = None
        for option in options(operand):
            if isinstance(option, Scalar):
                number = option.value
                if isinstance(node.op, ast.USub) and isinstance(number, (int, float)) and not isinstance(number, bool):
                    finfo = option.finfo
                    if finfo is not None:
                        finfo = (finfo[0], "max" if finfo[1] == "min" else "min")
                    out = join(out, Scalar(option.kind, -number, finfo))
                elif isinstance(node.op, ast.UAdd):
                    out = join(out, option)
                else:
                    out = join(out, Scalar(option.kind if option.kind != "bool" else "int"))
            elif isinstance(option, Tensor):
                out = join(out, replace(option, param=False) if not isinstance(node.op, ast.Invert) else option)
            else:
                out = join(out, UNKNOWN)
        return out if out is not None else UNKNOWN

    def _e_boolop(self, node: ast.BoolOp, frame: Frame) -> Value:
        """The join of the operands; where a known bool operand decides the whole test (a false
        one in an ``and``, a true one in an ``or``, as :func:`_truth` decides an ``if``) or every
        operand is decided, that bool (the test's truth; its value may be an earlier operand)."""
        out: Optional[Value] = None
        deciding = isinstance(node.op, ast.Or)
        decided: List[Optional[bool]] = []
        decisive, bools, settled = False, True, False
        for i, operand in enumerate(node.values):
            value = self.ev(operand, frame)
            decided.append(self._decide(operand, value, frame))
            boolean = isinstance(value, Scalar) and value.kind == "bool"
            decisive = decisive or (decided[-1] is deciding and boolean)
            bools = bools and boolean
            if settled:
                continue
            # ``hidden or dim``: a known scalar that decides the operation is its value; one that
            # does not is skipped (``None or 4 * dim``); an operand not known may be the value. A
            # field counts only where its class sets it to one constant (:func:`_constant_field`)
            truth = _scalar_truth(value) if not isinstance(operand, ast.Attribute) \
                or _constant_field(operand, frame) else None
            if truth is deciding:
                settled = True
            if truth is None or truth is deciding or i == len(node.values) - 1:
                out = join(out, value)
        if decisive or bools and all(d is (not deciding) for d in decided):
            return Scalar("bool", deciding if decisive else not deciding)
        return out if out is not None else UNKNOWN

    def _e_compare(self, node: ast.Compare, frame: Frame) -> Value:
        left = self.ev(node.left, frame)
        tensor = isinstance(left, Tensor)
        rights = [self.ev(comparator, frame) for comparator in node.comparators]
        tensor = tensor or any(isinstance(right, Tensor) for right in rights)
        if tensor and not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops):
            return Tensor(BOOL)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
            known = not isinstance(node.left, ast.Name) or (
                node.left.id in frame.env if frame.info is not None else node.left.id not in frame.module.overridable)
            return Scalar("bool", none_test(node.ops[0], left) if known else None)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and _container_vs_scalar(left, rights[0]):
            return Scalar("bool", isinstance(node.ops[0], ast.NotEq))  # ``config == "__is_first_stage__"``
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            equal = strings_equal(left, rights[0])
            if equal is not None:
                return Scalar("bool", equal if isinstance(node.ops[0], ast.Eq) else not equal)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            member = membership(left, rights[0])
            if member is not None:
                return Scalar("bool", member if isinstance(node.ops[0], ast.In) else not member)
        if len(node.ops) == 1:
            activation = self._activation_dtype_read(node.left, frame) \
                or self._activation_dtype_read(node.comparators[0], frame)
            return Scalar("bool", dtype_test(node.ops[0], left, rights[0], unknown_is_not_half=activation))
        return Scalar("bool")

    @staticmethod
    def _activation_dtype_read(node: ast.AST, frame: Frame) -> bool:
        """``x.dtype`` of an activation: ``x`` (already evaluated) is a tensor on every path where it
        has a dtype (a path where it is a Python number raises) and no parameter (not
        ``self.weight.dtype``, nor a module's or a config's ``dtype``), or a value the analysis
        knows nothing of that is an input of a module's ``forward`` or an argument of a function no
        caller is seen to call: a branch taken only when such a value is already half is no
        evidence of half either."""
        if not (isinstance(node, ast.Attribute) and node.attr == "dtype"):
            return False
        receiver = frame.record.values.get(id(node.value))
        if receiver is UNKNOWN:  # an argument of unknown value is an activation where it is forward's
            return frame.record.context_free or _forward_input(node.value, frame)
        # a tensor that may also be a Python number (which has no ``.dtype``: that path raises)
        return receiver is not None and any(isinstance(o, Tensor) for o in options(receiver)) and all(
            isinstance(o, Tensor) and not o.param or isinstance(o, Scalar) for o in options(receiver))

    def _e_ifexp(self, node: ast.IfExp, frame: Frame) -> Value:
        test = self.ev(node.test, frame)
        decided = self._decide(node.test, test, frame)
        body = self.ev(node.body, frame) if decided is not False else None
        orelse = self.ev(node.orelse, frame) if decided is not True else None
        if body is None or orelse is None:
            return body if body is not None else (orelse if orelse is not None else UNKNOWN)
        side = _half_side(body, orelse) if body != orelse else 0
        if side == 1:
            body = _dtype_with_origin(body, frame, node.body)
        elif side == 2:
            orelse = _dtype_with_origin(orelse, frame, node.orelse)
        joined = join(body, orelse)
        if side:
            joined = with_condition(joined, self._condition_texts(node.test, frame.module)[side - 1])
        return joined

    def _e_tuple(self, node: ast.AST, frame: Frame) -> Value:
        """A display; ``*x`` splices a sequence of known length, else the length is unknown from
        there on (the items before it stay known: the prefix of a :class:`Coll`)."""
        items: List[Value] = []
        known: Optional[int] = None  # how many leading items are positional, once a length is unknown
        for elt in node.elts:  # type: ignore[attr-defined]
            if isinstance(elt, ast.Starred):
                value = self.ev(elt.value, frame)
                if isinstance(value, Seq):
                    items.extend(value.items)
                    continue
                if known is None:
                    known = len(items)
                items.append(element(value))
            else:
                items.append(self.ev(elt, frame))
        if known is not None:
            return Coll(element(Seq(tuple(items))), tuple(items[:known]))
        return Seq(tuple(items))

    def _e_set(self, node: ast.Set, frame: Frame) -> Value:
        return Coll(element(self._e_tuple(node, frame)))

    def _e_dict(self, node: ast.Dict, frame: Frame) -> Value:
        items = []
        for key, value in zip(node.keys, node.values):
            v = self.ev(value, frame)
            if key is None:  # ``{**other, ...}``
                items.extend(v.items if isinstance(v, DictVal) else OPEN_KEYS)
                continue
            k = self.ev(key, frame)
            items.append((k.value if isinstance(k, Scalar) else None, v))
        return DictVal(tuple(items))

    def _e_joinedstr(self, node: ast.JoinedStr, frame: Frame) -> Value:
        """An f-string: its text where every part is known (``f"{root}/{name}.yaml"``), or each of
        its few texts where a part is one of a few known strings (``f"models.{kind}"`` where
        ``kind`` is ``"llama"`` or ``"mixtral"``)."""
        texts: Optional[List[str]] = [""]
        defaulted = False  # a part is a run-time string's default (``f"{args.config}"``)
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = self.ev(part.value, frame)
                knowns: List[Any] = [o.value if isinstance(o, Scalar) and o.kind in ("str", "int") else None
                                     for o in options(value)]
                if len(knowns) == 1 and knowns[0] is None and isinstance(value, Scalar) and value.default is not None:
                    knowns, defaulted = [value.default], True
                if any(k is None or isinstance(k, bool) for k in knowns) or part.format_spec is not None \
                        or part.conversion not in (-1, ord("s")):
                    texts = None
                elif texts is not None:
                    texts = [t + str(k) for t in texts for k in dict.fromkeys(knowns)]
                    if len(texts) > UNION_LIMIT:
                        texts = None
            elif texts is not None and isinstance(part, ast.Constant) and isinstance(part.value, str):
                texts = [t + part.value for t in texts]
            else:
                texts = None
        if texts is None or len(texts) == 1:
            text = texts[0] if texts else None
            return Scalar("str", None, default=text) if defaulted else Scalar("str", text)
        return union_of(Scalar("str", t) for t in texts)

    def _e_lambda(self, node: ast.Lambda, frame: Frame) -> Value:
        info = self.functions.get(id(node))
        if info is None:
            info = FunctionInfo(node, frame.module, "<lambda>")
            self.functions[id(node)] = info
        closure = None
        if frame.info is not None:
            closure = info.closure = Closure(frame.env, frame.closure)
        return FuncVal(info, None, closure)

    def _e_namedexpr(self, node: ast.NamedExpr, frame: Frame) -> Value:
        value = self.ev(node.value, frame)
        self.bind(node.target, value, frame)
        return value

    def _e_starred(self, node: ast.Starred, frame: Frame) -> Value:
        return self.ev(node.value, frame)

    def _e_slice(self, node: ast.Slice, frame: Frame) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.ev(part, frame)
        return Scalar("other")

    def _e_yield(self, node: ast.AST, frame: Frame) -> Value:
        value = self.ev(node.value, frame) if node.value is not None else NONE  # type: ignore[attr-defined]
        if isinstance(node, ast.YieldFrom):
            value = element(value)
        frame.yields = join(frame.yields, value)
        return UNKNOWN

    def _e_await(self, node: ast.AST, frame: Frame) -> Value:
        self.ev(node.value, frame)  # type: ignore[attr-defined]
        return UNKNOWN

    def _e_comprehension(self, node: ast.AST, frame: Frame) -> Value:
        saved = frame.env
        frame.env = dict(saved)
        items: Optional[Tuple[Value, ...]] = None
        for generator in node.generators:  # type: ignore[attr-defined]
            iterable = self.ev(generator.iter, frame)
            if isinstance(iterable, Seq) and len(node.generators) == 1 and not generator.ifs \
                    and not generator.is_async and 0 < len(iterable.items) <= torch_api.MAX_MAPPED_ITEMS:
                items = iterable.items
            self.bind(generator.target, self.iterate(iterable, frame), frame)
            for cond in generator.ifs:
                self.ev(cond, frame)
        if isinstance(node, ast.DictComp):
            self.ev(node.key, frame)
            result: Value = DictVal(((None, self.ev(node.value, frame)),))
        elif items is not None and isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            result = self._comprehension_items(node, items, frame)
        else:
            result = Coll(self.ev(node.elt, frame))  # type: ignore[attr-defined]
        frame.env = saved
        return result

    def _comprehension_items(self, node: ast.expr, items: Tuple[Value, ...],
                             frame: Frame) -> Seq:
        """``[f(v) for v in (a, b)]`` over a tuple or list of a few known items is a list of as many:
        ``f`` of each item (``self.module(*[cast(v) for v in inputs])`` passes as many arguments as
        the caller gave). The element is then evaluated once more over the joined items, for what
        the rules read of it (one value per node)."""
        target = node.generators[0].target
        if all(item == items[0] for item in items[1:]):
            return Seq((self.ev(node.elt, frame),) * len(items))
        results = []
        for item in items:
            self.bind(target, item, frame)
            results.append(self.ev(node.elt, frame))
        self.bind(target, self.iterate(Seq(items), frame), frame)
        self.ev(node.elt, frame)
        return Seq(tuple(results))

    _expr_table: Dict[type, Callable[..., Value]] = {}

    # -- attributes ----------------------------------------------------------------------------------
    def getattr(self, receiver: Value, name: str, frame: Frame, node: Optional[ast.AST] = None) -> Value:
        modules = options(receiver)
        if len(modules) > 1 and all(isinstance(o, ModVal) for o in modules):
            # one of the modules of a package imported by a name chosen at run time
            # (``import_module(f"models.{args.model}").Transformer``): one of their classes, as a
            # registry holds them; a module that lacks the name would raise
            found = [v for v in (self.module_attr(o.info, name) for o in modules) if v is not UNKNOWN]  # type: ignore[union-attr]
            return registry_join(found) if found else UNKNOWN
        out: Optional[Value] = None
        for option in options(receiver):
            out = join(out, self._getattr(option, name, frame, node))
        return out if out is not None else UNKNOWN

    def _getattr(self, receiver: Value, name: str, frame: Frame, node: Optional[ast.AST]) -> Value:
        if receiver is UNKNOWN and name == "dtype":
            return DType(0, True)  # whatever it is, its ``dtype`` is a dtype (``x.to(labels.dtype)`` casts)
        if isinstance(receiver, Ext):
            return torch_api.ext_attr(receiver, name)
        if name == "__name__" and isinstance(receiver, (ClassVal, FuncVal)):
            return Scalar("str", receiver.info.name)  # a registry's default key (``cls.__name__``)
        if isinstance(receiver, ModVal):
            return self.module_attr(receiver.info, name)
        if isinstance(receiver, Tensor):
            return torch_api.tensor_attr(receiver, name)
        if isinstance(receiver, Module):
            return self.module_attr_of(receiver, name, frame, node)
        if isinstance(receiver, Instance):
            return self.instance_attr(receiver, name, frame, node)
        if isinstance(receiver, ClassVal):
            found = self.class_lookup(receiver.info, name)
            if isinstance(found, FunctionInfo):
                decorators = getattr(found, "decorators", ())
                if any(isinstance(d, Builtin) and d.name == "classmethod" for d in decorators):
                    return FuncVal(found, receiver)  # ``Model.from_pretrained(...)``: cls is the class
                return FuncVal(found)
            if found is None and name == "from_pretrained":
                return Method(receiver, name)  # inherited from a library base class
            if found is None and name == "apply" and self.is_autograd_function(receiver.info):
                return Method(receiver, name)
            return found if found is not None else UNKNOWN
        if isinstance(receiver, Obj):
            return torch_api.obj_attr(receiver, name)
        if isinstance(receiver, DType):
            return Method(receiver, name) if name in ("is_floating_point",) else UNKNOWN
        if isinstance(receiver, Seq) and name in receiver.names:  # a namedtuple's field
            return receiver.items[receiver.names.index(name)]
        if isinstance(receiver, Seq) and len(receiver.items) == 2 and name in ("values", "indices"):
            return receiver.items[name == "indices"]  # ``x.max(dim=-1).values``: (values, indices)
        if isinstance(receiver, DictVal) and name not in _DICT_METHODS:
            # a config read by attribute (``config.model.params`` of an OmegaConf or EasyDict config)
            found = receiver.value_of(name)
            return found if found is not None else UNKNOWN
        if isinstance(receiver, (Scalar, Seq, Coll, DictVal)):
            return Method(receiver, name)
        if isinstance(receiver, FuncVal):
            return UNKNOWN
        return UNKNOWN

    def is_autograd_function(self, info: ClassInfo) -> bool:
        """Whether ``info`` derives from ``torch.autograd.Function``."""
        return any(isinstance(option, Ext) and option.name in optable.AUTOGRAD_FUNCTION_BASES
                   for cls in self.mro(info) for base in cls.bases for option in options(base))

    def class_lookup(self, info: ClassInfo, name: str, skip: int = 0) -> Optional[Any]:
        """``name`` along the MRO of ``info`` (methods as FunctionInfo, class attributes as values)."""
        for cls in self.mro(info)[skip:]:
            if name in cls.methods:
                return cls.methods[name]
            if name in cls.class_attrs:
                return cls.class_attrs[name]
        return None

    def mro(self, info: ClassInfo) -> List[ClassInfo]:
        cached = getattr(info, "_mro", None)
        if cached is not None and getattr(info, "_mro_bases", None) is info.bases:
            return cached
        out: List[ClassInfo] = []
        todo = [info]
        while todo:
            cls = todo.pop(0)
            if cls in out:
                continue
            out.append(cls)
            for base in cls.bases:
                for option in options(base):
                    if isinstance(option, ClassVal) and option.info not in out:
                        todo.append(option.info)
            if len(out) > 30:
                break
        info._mro, info._mro_bases = out, info.bases  # type: ignore[attr-defined]
        return out

    def field_of(self, info: ClassInfo, name: str) -> Optional[Value]:
        for cls in self.mro(info):
            if self.reading is not None:
                self.reading.add(cls)
            if name in cls.fields:
                return cls.fields[name]
        return None

    def module_attr_of(self, module: Module, name: str, frame: Frame, node: Optional[ast.AST]) -> Value:
        if name in module.names:  # ``self.transformer.wte`` of an nn.ModuleDict
            return adopt(module.items[module.names.index(name)], module)
        if module.names and name in ("keys", "values", "items"):
            return Method(module, name)
        cls = module.cls
        if isinstance(cls, ClassVal):
            value = self.field_of(cls.info, name)
            if value is not None:
                return adopt(value, module, name)
            found = self.class_lookup(cls.info, name)
            if isinstance(found, FunctionInfo):
                if getattr(found, "is_property", False):
                    return self.call_function(found, module, [], {}, frame, node)
                return FuncVal(found, module)
            if found is not None:
                return adopt(found, module)
            return torch_api.module_builtin_attr(module, name)
        return torch_api.module_builtin_attr(module, name)

    def instance_attr(self, inst: Instance, name: str, frame: Frame, node: Optional[ast.AST]) -> Value:
        own = inst.field(name)
        if own is not None and isinstance(inst.cls, ClassVal) and name not in inst.cls.info.stored_fields:
            return own
        if isinstance(inst.cls, ClassVal):
            value = self.field_of(inst.cls.info, name)
            if value is not None:
                return value
            found = self.class_lookup(inst.cls.info, name)
            if isinstance(found, FunctionInfo):
                if getattr(found, "is_property", False):
                    return self.call_function(found, inst, [], {}, frame, node)
                return FuncVal(found, inst)
            if found is not None:
                return found
        return UNKNOWN

    # -- iteration -----------------------------------------------------------------------------------
    def iterate(self, iterable: Value, frame: Frame) -> Value:
        out: Optional[Value] = None
        for option in options(iterable):
            if isinstance(option, Tensor):
                out = join(out, replace(option, param=False))
            elif isinstance(option, Module) and option.names:  # an nn.ModuleDict yields its keys
                out = join(out, element(Seq(tuple(Scalar("str", n) for n in option.names))))
            elif isinstance(option, Module):
                out = join(out, adopt(element(Seq(option.items)), option) if option.items else UNKNOWN)
            elif isinstance(option, Obj) and option.kind == "parameters":
                out = join(out, torch_api.params_tensor(option))
            elif isinstance(option, DictVal):
                keys = [Scalar("str", k) if isinstance(k, str) else UNKNOWN for k, _ in option.items]
                out = join(out, element(Seq(tuple(keys))) if keys else UNKNOWN)
            else:
                out = join(out, element(option))
        return out if out is not None else UNKNOWN

    # -- calls ---------------------------------------------------------------------------------------
    def _e_call(self, node: ast.Call, frame: Frame) -> Value:
        func = node.func
        args: List[Value] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                value = self.ev(arg.value, frame)
                args.append(Star(value))  # type: ignore[arg-type]
            else:
                args.append(self.ev(arg, frame))
        kwargs: Dict[str, Value] = {}
        for kw in node.keywords:
            value = self.ev(kw.value, frame)
            if kw.arg is not None:
                kwargs[kw.arg] = value
            elif isinstance(value, DictVal) and any(isinstance(k, str) for k, _ in value.items):
                for key, item in value.items:  # ``f(**kwargs)``: each known key is that argument
                    if isinstance(key, str):
                        kwargs.setdefault(key, item)
                if not all(isinstance(k, str) for k, _ in value.items):
                    # and what it holds under keys nobody knows (``config[f"{k}_root"] = ...``) may
                    # be any other argument
                    kwargs["**"] = DictVal(tuple((k, v) for k, v in value.items if not isinstance(k, str)))
            else:
                kwargs["**"] = value
        if isinstance(func, ast.Attribute):
            receiver = self.ev(func.value, frame)
            parts = []
            for option in _callable_receivers(receiver, func.attr):  # a tensor's (or unknown's) is its method
                parts.append(Method(option, func.attr) if isinstance(option, Tensor) or option is UNKNOWN else
                             self._getattr(option, func.attr, frame, func))
            if isinstance(receiver, Union) and receiver.wide:
                callee = registry_join(parts)  # the methods of a registry's instances
            else:
                callee = None
                for part in parts:
                    callee = join(callee, part)
            callee = callee if callee is not None else UNKNOWN
            frame.record.values[id(func)] = callee
        else:
            callee = self.ev(func, frame)
        out: Optional[Value] = None
        choices = options(callee)
        root = func.value if isinstance(func, ast.Attribute) else None
        while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute) \
                and root.func.attr in torch_api.RETURNS_ITS_MODULE:
            root = root.func.value  # ``model.eval().requires_grad_(False)`` changes ``model``
        target = root.id if isinstance(root, ast.Name) and len(choices) > 1 else None
        before = frame.env.get(target) if target is not None else None
        lefts: List[Value] = []
        rebound = False
        built: List[Value] = []  # what each of a registry's classes (a wide union) returns
        wide = isinstance(callee, Union) and callee.wide
        for option in choices:
            if before is not None:
                frame.env[target] = before  # type: ignore[index]
            result = self.call(option, args, kwargs, frame, node)
            if wide:
                built.append(result)
            out = join(out, result)
            if before is not None:
                # a method that changes its receiver in place (``model.half()`` on one of several
                # models): the name holds whatever each option left, not the last option's result;
                # an option that left it alone keeps its own receiver (``te.requires_grad_(False)``
                # on a model or a tensor: the model's change is not undone by the tensor's option)
                left = frame.env.get(target, before)
                if left is before:
                    own = option.recv if isinstance(option, Method) else (
                        option.bound if isinstance(option, FuncVal) else None)
                    left = own if own is not None and own in options(before) else before
                else:
                    rebound = True
                lefts.append(left)
        if before is not None:
            after: Optional[Value] = None
            for left in lefts if rebound else ():
                after = join(after, left)
            frame.env[target] = after if after is not None else before  # type: ignore[index]
        if frame.narrowed and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and any(isinstance(option, (Module, Instance)) for option in options(receiver)):
            forget_fields(frame, func.value.id)  # ``self.half()``, ``self.reset()``: its fields may change
        made = [o for b in built for o in options(b)]
        if made and len(made) <= REGISTRY_MODEL_LIMIT and all(isinstance(o, Module) for o in made):
            # a few models stay apart; other objects join as anywhere (a registry's hundred
            # instances kept apart made the project phase on torch's first 250 files 2.5x as long)
            out = registry_join(built)
        if any(isinstance(option, (FuncVal, ClassVal, Instance, Module)) for option in choices):
            _open_passed_dicts(node, frame)  # user code may store keys into a dict it was handed
            if frame.narrowed:  # ... or into the fields of an object it was handed
                for handed in list(node.args) + [kw.value for kw in node.keywords]:
                    if isinstance(handed, ast.Starred):
                        handed = handed.value
                    if isinstance(handed, ast.Name):
                        forget_fields(frame, handed.id)
        return out if out is not None else UNKNOWN

    def call(self, callee: Value, args: List[Value], kwargs: Dict[str, Value], frame: Frame,
             node: Optional[ast.AST]) -> Value:
        if isinstance(callee, Union):  # a layer of ``nn.Sequential(*layers)`` that is one of several
            out: Optional[Value] = None
            for option in options(callee):
                out = join(out, self.call(option, args, kwargs, frame, node))
            return out if out is not None else UNKNOWN
        if isinstance(callee, (ClassVal, Ext, FuncVal)) and torch_api.keeps_master_weights(callee):
            for value in list(args) + list(kwargs.values()):
                for option in options(value.value if isinstance(value, Star) else value):
                    site = option.get("site") if isinstance(option, Obj) and option.kind == "optimizer" else None
                    if isinstance(site, Scalar) and site.value:
                        self.master_wrapped.add(site.value)
        if not isinstance(callee, (FuncVal, ClassVal, Module, Builtin)) \
                and not (isinstance(node, ast.Call) and _only_shows(node.func)):
            # a half model handed to code the run does not follow (a library's function, a method of
            # a library object or of an unknown value) may have its forward run there; not one
            # printed, logged or saved
            for value in list(args) + list(kwargs.values()):
                for option in options(value.value if isinstance(value, Star) else value):
                    if isinstance(option, Module):
                        self._note_half_use(option, _HANDED)
        if isinstance(callee, FuncVal):
            if isinstance(callee.bound, Module):
                self._note_half_use(callee.bound, callee.info.name)
            return self.call_function(callee.info, callee.bound, args, kwargs, frame, node, closure=callee.closure)
        if isinstance(callee, ClassVal):
            made = self.instantiate(callee, args, kwargs, frame, node)
            default = torch_api.default_dtype(self, frame)
            if default is not None and isinstance(made, Module) and made.cast == F32 and not made.cast_unknown:
                made = made.cast_to(default.dtypes, default.origin)  # built under set_default_dtype
                self.add_seed(made, frame)
            return made
        if isinstance(callee, Module):
            return self.call_module(callee, args, kwargs, frame, node)
        if isinstance(callee, Method):
            return self.call_method(callee.recv, callee.name, args, kwargs, frame, node)
        if isinstance(callee, Ext):
            return torch_api.call_ext(self, frame, callee.name, args, kwargs, node)
        if isinstance(callee, Builtin):
            return torch_api.call_builtin(self, frame, callee.name, args, kwargs, node)
        if isinstance(callee, Instance):
            call = self.instance_attr(callee, "__call__", frame, node)
            if isinstance(call, FuncVal):
                return self.call_function(call.info, call.bound, args, kwargs, frame, node)
        if isinstance(callee, Obj):
            return torch_api.call_obj(self, frame, callee, args, kwargs, node)
        return torch_api.derived(args, kwargs, frame)

    def call_method(self, receiver: Value, name: str, args: List[Value], kwargs: Dict[str, Value], frame: Frame,
                    node: Optional[ast.AST]) -> Value:
        if isinstance(receiver, ClassVal) and name == "apply":
            forward = self.class_lookup(receiver.info, "forward")
            if not isinstance(forward, FunctionInfo):
                return UNKNOWN
            # ``Fn.apply(*args)`` runs ``Fn.forward(ctx, *args)``; ctx is opaque (save_for_backward etc.)
            return self.call_function(forward, None, [UNKNOWN] + list(args), kwargs, frame, node, effects=False)
        if isinstance(receiver, Tensor):
            return torch_api.tensor_method(self, frame, receiver, name, args, kwargs, node)
        if isinstance(receiver, Module) and receiver.names and name in ("keys", "values", "items") and not args:
            # an nn.ModuleDict's views, each child following the dict's cast
            keys = tuple(Scalar("str", n) for n in receiver.names)
            children = tuple(adopt(item, receiver) for item in receiver.items)
            return Seq(keys if name == "keys" else children if name == "values"
                       else tuple(Seq(pair) for pair in zip(keys, children)))
        if isinstance(receiver, Module):
            return torch_api.module_method(self, frame, receiver, name, args, kwargs, node)
        if isinstance(receiver, Obj):
            return torch_api.obj_method(self, frame, receiver, name, args, kwargs, node)
        if receiver is UNKNOWN:
            return torch_api.unknown_method(self, frame, name, args, kwargs, node)
        return torch_api.python_method(self, frame, receiver, name, args, kwargs, node)

    def call_module(self, module: Module, args: List[Value], kwargs: Dict[str, Value], frame: Frame,
                    node: Optional[ast.AST]) -> Value:
        if module.mode in (torch_api.APEX_CAST_IO, torch_api.FABRIC_CAST_IO):
            # apex O2/O3 patched its forward (or Fabric wrapped it): inputs to its dtype, outputs to float32
            half = module.cast & HALF or F16
            args = [torch_api.cast_input(a, half, module.origin) for a in args]
            kwargs = {k: torch_api.cast_input(v, half, module.origin) for k, v in kwargs.items()}
            inner = replace(module, mode="")
            return torch_api.cast_floating(self.call_module(inner, args, kwargs, frame, node), F32)
        if module.mode == torch_api.F32_OUT:  # Accelerate's float32 model, mixed precision not known
            return torch_api.cast_floating(self.call_module(replace(module, mode=""), args, kwargs, frame, node), F32)
        if module.mode in (torch_api.MIXED_F32_OUT_F16, torch_api.MIXED_F32_OUT_BF16):
            # Fabric's mixed precision, Accelerate's prepare: autocast around the forward, outputs to float32
            inner = replace(module, mode="")
            saved = frame.state, frame.autocast_origin
            if frame.state is None:
                frame.state = ("cuda", F16 if module.mode == torch_api.MIXED_F32_OUT_F16 else BF16)
            try:
                result = self.call_module(inner, args, kwargs, frame, node)
            finally:
                frame.state, frame.autocast_origin = saved
            return torch_api.cast_floating(result, F32)
        cls = module.cls
        self._note_half_use(module, "__call__")
        if isinstance(cls, ClassVal):
            forward = self.class_lookup(cls.info, "forward")
            call = self.class_lookup(cls.info, "__call__")
            target = call if isinstance(call, FunctionInfo) else forward
            if isinstance(target, FunctionInfo):
                if module.mode == torch_api.APEX_O1 and frame.state is None:
                    saved = frame.state, frame.autocast_origin
                    # what it makes carries apex O1's origin: wherever such a tensor goes, apex's
                    # patches (global once initialised) are in force
                    frame.state, frame.autocast_origin = ("apex", F16), torch_api.apex_o1_origin(module.origin)
                    try:
                        return self.call_function(target, module, args, kwargs, frame, node)
                    finally:
                        frame.state, frame.autocast_origin = saved
                return self.call_function(target, module, args, kwargs, frame, node)
            return UNKNOWN
        return torch_api.call_torch_module(self, frame, module, args, kwargs, node)

    def instantiate(self, cls: ClassVal, args: List[Value], kwargs: Dict[str, Value], frame: Frame,
                    node: Optional[ast.AST]) -> Value:
        info = cls.info
        new = self.class_lookup(info, "__new__")
        if isinstance(new, FunctionInfo):
            return self.call_function(new, cls, args, kwargs, frame, node)
        if any(isinstance(o, Ext) and o.name in ("typing.NamedTuple", "typing_extensions.NamedTuple")
               for base in info.bases for o in options(base)):
            return self._named_tuple(info, args, kwargs)
        instance: Value = Module(cls, F32) if info.is_module else Instance(cls)
        init = self.class_lookup(info, "__init__")
        if isinstance(init, FunctionInfo):
            changed: Dict[int, Value] = {}
            self.call_function(init, instance, args, kwargs, frame, node, changed=changed)
            built = changed.pop(0, None)
            if isinstance(instance, Module) and isinstance(built, Module) and built.cls == cls:
                instance = built  # ``self.half()`` in ``__init__``: the instance is built cast
            if changed and isinstance(node, ast.Call):  # ``inner.half()`` on an argument: the caller's
                self._apply_effects(changed, node, instance, frame)
            if isinstance(instance, Instance) and not instance.own:
                own = _models_kept(init, cls, args, kwargs)
                if own:
                    instance = Instance(cls, own)
        elif getattr(info, "is_dataclass", False) or any(getattr(c, "is_dataclass", False) for c in self.mro(info)):
            own = self._dataclass_fields(info, args, kwargs)
            if isinstance(instance, Instance) and own is not None:
                instance = Instance(cls, own)
        return instance

    @staticmethod
    def _named_tuple(info: ClassInfo, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        """An instance of a ``typing.NamedTuple`` class: a tuple whose fields are its annotated
        names (a field not passed keeps its literal default)."""
        fields = [s for s in info.node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        defaults = {s.target.id: _default_value(s.value, info.module.relpath)  # type: ignore[attr-defined]
                    for s in fields if s.value is not None}
        return torch_api.named_tuple(tuple(s.target.id for s in fields), args, kwargs, defaults)  # type: ignore[attr-defined]

    def _dataclass_fields(self, info: ClassInfo, args: List[Value], kwargs: Dict[str, Value]
                          ) -> Optional[Tuple[Tuple[str, Value], ...]]:
        """Join the values a dataclass is built with into its class's fields, and return the
        instance's own (passed, else the field's literal default; the fields of its dataclass bases
        first, as ``dataclasses`` orders them; None where the arguments are not all known: ``*args``,
        ``**other``). A field its ``__post_init__`` sets (``self.padded = ...``) is not its own: it
        reads the class's field, the join of every store."""
        if info.dataclass_layout is None:
            fields: Dict[str, Tuple[ast.AnnAssign, ClassInfo]] = {}
            for klass in reversed(self.mro(info)):
                if klass is not info and not getattr(klass, "is_dataclass", False):
                    continue
                for statement in klass.node.body:
                    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                            and not _is_class_var(statement.annotation):
                        fields[statement.target.id] = (statement, klass)
            post_init = self.class_lookup(info, "__post_init__")
            info.dataclass_layout = (fields, _self_stores(post_init.node) if isinstance(post_init, FunctionInfo)
                                     else set())
        fields, set_after = info.dataclass_layout
        names = list(fields)
        own: Optional[List[Tuple[str, Value]]] = []
        if any(isinstance(a, Star) for a in args) or "**" in kwargs or len(args) > len(names):
            own = None
        for i, name in enumerate(names):
            statement, klass = fields[name]
            value = kwargs.get(name) if name in kwargs else (args[i] if i < len(args) else None)
            if value is not None and not isinstance(value, Star):
                old = klass.fields.get(name)
                set_field(klass, name, value if old is None else join(old, value))
            if own is not None and name not in set_after:
                default = statement.value
                own.append((name, value if value is not None else (
                    _default_value(default, klass.module.relpath) if default is not None else UNKNOWN)))
        return tuple(own) if own is not None else None

    # -- user functions --------------------------------------------------------------------------
    def call_function(self, info: FunctionInfo, bound: Optional[Value], args: List[Value], kwargs: Dict[str, Value],
                      frame: Frame, node: Optional[ast.AST], effects: bool = True,
                      changed: Optional[Dict[int, Value]] = None, closure: Optional[Closure] = None) -> Value:
        """Run a project function in this context. Its effects on the arguments it changes in place
        (``m.half()`` on a parameter ``m``) rebind the caller's argument expressions; with ``changed``
        given they are joined into it instead (index 0 is the bound receiver where there is one).
        ``closure``: a nested function's enclosing environments (its :class:`FuncVal`'s)."""
        fnode = info.node
        decorators = getattr(info, "decorators", ())
        if any(isinstance(d, Builtin) and d.name == "staticmethod" for d in decorators):
            bound = None
        elif any(isinstance(d, Builtin) and d.name == "classmethod" for d in decorators):
            bound = bound.cls if isinstance(bound, (Module, Instance)) else bound  # type: ignore[union-attr]
        env, names = bind_arguments(fnode, bound, args, kwargs, info.default_values, info.module.relpath,
                                    self.passed_args.setdefault(id(fnode), set()),
                                    literal_defaults=self._literal_defaults(info, called=isinstance(node, ast.Call)))
        for name, value in info.parametrized.items():  # a test run by pytest with the values it lists
            if env.get(name) is UNKNOWN:
                env[name] = value
        state, origin = frame.state, frame.autocast_origin
        for dec in decorators:
            for option in torch_api.autocast_states(dec, state, origin, self.device):
                state, origin = option
                break
            if torch_api.is_custom_fwd_fp32(dec):
                state = None
                env = {k: (Tensor(F32) if isinstance(v, Tensor) and v.dtypes & FLOATS else v) for k, v in env.items()}
        site = CallSite(frame.module.relpath, getattr(node, "lineno", 0), info.qualname, id(node))
        stack = (frame.stack + (site,))[-12:]
        summary = self._invoke(info, env, names, state, stack, origin=origin, closure=closure)
        if summary is None:
            return UNKNOWN
        if changed is not None:
            for index, value in summary.effects.items():
                changed[index] = join(changed.get(index), value)
        elif effects and summary.effects and isinstance(node, ast.Call):
            self._apply_effects(summary.effects, node, bound, frame)
        if any(torch_api.is_no_grad(d) for d in decorators):  # ``@torch.no_grad()``: no graph out of it
            return torch_api.detached(summary.returns)
        return summary.returns

    def _literal_defaults(self, info: FunctionInfo, called: bool = False) -> Dict[str, Value]:
        """:func:`parameter_defaults` of a project function, computed once. ``called``: for a call
        in the program, where a flag's default the call leaves out is its value (``fp16_out=False``
        not passed is False); a function run without a caller (an entry point whose flags a
        command line sets) keeps such flags undecided."""
        key = (id(info.node), called)
        found = self.literals.get(key)
        if found is None:
            found = parameter_defaults(info.node, info.module.relpath)
            if called:
                found = dict(found)
                for name, default in default_nodes(info.node):
                    if isinstance(default, ast.Constant) and isinstance(default.value, bool):
                        found[name] = Scalar("bool", default.value)
            self.literals[key] = found
        return found

    def _apply_effects(self, effects: Dict[int, Value], node: ast.Call, bound: Optional[Value], frame: Frame) -> None:
        exprs: List[Optional[ast.AST]] = []
        if bound is not None:
            exprs.append(node.func.value if isinstance(node.func, ast.Attribute) else None)
        exprs.extend(a for a in node.args)
        for index, value in effects.items():
            if index < len(exprs):
                target = exprs[index]
                if target is not None:
                    value = self._cast_by_call(value, frame.record.values.get(id(target)), node, frame)
                if isinstance(target, ast.Name):
                    frame.env[target.id] = value
                    frame.mutated.add(target.id)
                elif isinstance(target, ast.Attribute):
                    receiver = frame.record.values.get(id(target.value)) or self.ev(target.value, frame)
                    self.store_attr(receiver, target.attr, value, target, frame)

    def _cast_by_call(self, value: Value, before: Optional[Value], node: ast.Call, frame: Frame) -> Value:
        """A function that casts a model it is given to half (``convert_weights_to_fp16(model)``): the
        cast is this call's. A finding (AMP101) is reported where the caller cast its model, each
        call site apart (one helper may cast a model to train and another for inference), and the
        cast holds under the caller's branch (``if precision == "fp16":``), not the helper's own tests."""
        held = {o.origin.key for o in options(before) if isinstance(o, Module) and o.origin is not None} \
            if before is not None else set()
        here = torch_api.helper_cast_origin(frame, node)
        for option in options(value):
            origin = option.origin if isinstance(option, Module) and option.cast & HALF else None
            if origin is not None and here is not None and origin.kind in ("module_cast", "helper_cast") \
                    and origin.key not in held:
                value = with_cast_origin(value, origin, here)
        return value

    def _invoke(self, info: FunctionInfo, env: Dict[str, Value], names: List[str], state: State,
                stack: Tuple[CallSite, ...], *, context_free: bool = False,
                origin: Optional[Origin] = None, closure: Optional[Closure] = None) -> Optional[Summary]:
        params = tuple(env.get(n, UNKNOWN) for n in names)
        # A nested function's runs share their memo entries (keyed by arguments, not by what each
        # run of its ``def`` bound around it): keying them apart (a registry factory called once
        # per kind of component) multiplied the contexts of fairseq's nested functions, and its
        # model registry, resolved per architecture, then held more models than a union keeps.
        key = (id(info), params, state)
        found = self.memo.get(key)
        reruns = 0
        if found is not None:
            if found.reruns >= MAX_RERUNS or key in self.running or self.depth >= MAX_DEPTH or not found.stale():
                return self._reused(found, stack)
            reruns = found.reruns + 1  # analysed again in the same context: its old record goes
            if found.record is not None:
                self.records[id(found.record.scope)].remove(found.record)
                if _program_stack(found.record.stack) and not _program_stack(stack):
                    # a test calling again what the program called keeps the program's run as the
                    # record's (rules set aside what only tests build: a toy model's sizes)
                    stack = found.record.stack
        if key in self.running or self.depth >= MAX_DEPTH:
            return None
        if not reruns and not context_free and info.contexts >= MAX_CONTEXTS:
            # widened: the arguments of further calls are joined, apart from a module receiver
            # (``self`` of a half model and of a float32 one keep their own widened context)
            receiver = params[0] if params and all(isinstance(o, Module) for o in options(params[0])) else None
            slot = (id(info), state, None if receiver is None else shape(receiver))
            wide = self.wide.get(slot)
            if wide is not None and wide[1] >= MAX_WIDENINGS:
                # widened enough: its last summary answers the calls whose arguments it covers;
                # another call is analysed in its own context (below) while the function has some
                # left (:data:`MAX_EXACT_CONTEXTS`), else its result is unknown - another context's
                # result would be false evidence
                # A call whose arguments carry no half evidence is not answered by a context
                # widened with half arguments of other calls: their half results would be false
                # evidence here (a benchmark script's half input showing up in the training script)
                if all(covers(w, p) for w, p in zip(wide[0], params)) \
                        and not (any(carries_half(w) for w in wide[0]) and not any(carries_half(p) for p in params)):
                    found = self.memo.get((id(info), wide[0], state))
                    return self._reused(found, stack) if found is not None else None
                if info.exact_contexts >= MAX_EXACT_CONTEXTS:
                    return None
                info.exact_contexts += 1
            else:
                joined = tuple(join(a, b) for a, b in zip(wide[0], params)) if wide else params
                if receiver is not None:
                    joined = (receiver,) + joined[1:]
                self.wide[slot] = (joined, (wide[1] + 1) if wide else 1)
                wide_key = (id(info), joined, state)
                found = self.memo.get(wide_key)
                if found is not None:
                    return self._reused(found, stack)
                if wide_key in self.running:
                    return None
                env = dict(zip(names, joined))
                key = wide_key
        if not reruns:  # a context analysed again is not another context
            info.contexts += 1
        self.running.add(key)
        self.depth += 1
        outer_reading, self.reading = self.reading, set()
        outer_stepped, self.stepped = self.stepped, False
        outer_autocasted, self.autocasted = self.autocasted, False
        record = self._record(info.node, info.module, state, stack, context_free, origin)
        frame = Frame(info.module, info, dict(env), record, state, stack, cls=None)
        frame.closure = closure if closure is not None else info.closure
        try:
            fnode = info.node
            if isinstance(fnode, ast.Lambda):
                frame.returns = self.ev(fnode.body, frame)
            else:
                self.exec_block(fnode.body, frame)  # type: ignore[attr-defined]
                if frame.yields is not None:
                    frame.returns = Coll(frame.yields)
        except RecursionError:
            frame.returns = UNKNOWN
        except Exception as exc:  # an analysis bug must not end the run: this function stays unknown
            if DEBUG:
                raise
            self.errors.append((info.module.relpath, getattr(info.node, "lineno", 0), f"{type(exc).__name__}: {exc}"))
            frame.returns = UNKNOWN
        finally:
            self.depth -= 1
            self.running.discard(key)
            read, self.reading = self.reading, outer_reading
            if outer_reading is not None:
                outer_reading |= read
            stepped, self.stepped = self.stepped, outer_stepped or self.stepped
            autocasted, self.autocasted = self.autocasted, outer_autocasted or self.autocasted
        effects: Dict[int, Value] = {}
        for i, name in enumerate(names):
            if name in frame.mutated and name not in frame.assigned:
                effect = frame.env.get(name, UNKNOWN)
                for returned in frame.returned:  # joined over the paths that return early
                    effect = join(effect, returned.get(name, env.get(name, UNKNOWN)))
                effects[i] = effect
        summary = Summary(frame.returns if frame.returns is not None else NONE, effects,
                          {cls: cls.field_version for cls in read}, record, reruns, FIELD_CHANGES[0], stepped,
                          autocasted)
        self.memo[key] = summary
        return summary

    def _reused(self, found: Summary, stack: Tuple[CallSite, ...]) -> Summary:
        """``found`` answers a call with ``stack``: the fields it read are read here too, and an
        optimizer it stepped steps through this call's sites as well."""
        if self.reading is not None:
            self.reading.update(found.reads)
        if found.steps:
            self.stepping_calls.update(site.node_id for site in stack)
            self.stepped = True
        if found.autocasts:
            self.autocasted = True
            if stack:
                self.autocast_programs.add(stack[0].path)
        return found


def _program_stack(stack: Tuple[CallSite, ...]) -> bool:
    """A call stack whose outermost call is in the program's own files, not in a test file."""
    return bool(stack) and not is_test_file(stack[0].path)


class _ClassNamespace(dict):
    """A class body's namespace: reads fall back to the module globals."""

    def __init__(self, globals_: Dict[str, Value]) -> None:
        super().__init__()
        self._globals = globals_

    def get(self, key, default=None):  # type: ignore[override]
        if key in self:
            return dict.__getitem__(self, key)
        return self._globals.get(key, default)


def _models_kept(init: FunctionInfo, cls: ClassVal, args: List[Value], kwargs: Dict[str, Value]
                 ) -> Tuple[Tuple[str, Value], ...]:
    """The fields a plain class's ``__init__`` sets once, at its top level, to a parameter it is given
    anything but plain data in (``self.model = model`` in a wrapper), where it calls no method of
    the instance, no ``super()`` and hands the instance to nothing: the instance's own, so that a
    wrapper of a sampling script's half model and one of the training script's float32 model
    each call their own (the class's field joins every instance's)."""
    kept = init.kept_fields
    if kept is None:
        kept = init.kept_fields = _parameters_kept(init.node)
    if not kept:
        return ()
    env, _ = bind_arguments(init.node, Instance(cls), args, kwargs, None)
    own = [(attr, value) for attr, value in ((attr, env.get(param, UNKNOWN)) for attr, param in kept)
           if not all(isinstance(o, (Scalar, Seq, Coll, DictVal)) for o in options(value))]
    # data (sizes, names, their lists) is read from the class's fields, as before (fewer contexts);
    # anything else, unknown included, is the instance's own: what other instances were given is
    # no evidence for it
    return tuple(sorted(own, key=lambda pair: pair[0]))


def _parameters_kept(fnode: ast.AST) -> Tuple[Tuple[str, str], ...]:
    """(field, parameter) of each ``self.field = parameter`` at the top level of ``__init__``, where the
    field is stored once and the parameter never rebound, and nothing else can store a field (no
    method of the instance called, no ``super()``, ``setattr`` or ``vars``, the instance handed to
    nothing); empty otherwise."""
    spec = fnode.args  # type: ignore[attr-defined]
    if not spec.args:
        return ()
    this = spec.args[0].arg
    stores: Counter = Counter()
    rebound: Set[str] = set()
    for sub in ast.walk(fnode):
        if isinstance(sub, ast.Call) and (isinstance(sub.func, ast.Name) and sub.func.id in ("super", "setattr", "vars")
                                          or isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name)
                                          and sub.func.value.id == this):
            return ()  # ``super().__init__()``, ``self.setup()``: fields may be stored again
        for child in ast.iter_child_nodes(sub):
            if isinstance(child, ast.Name) and child.id == this and not isinstance(sub, ast.Attribute):
                return ()  # ``self`` handed on (``register(self)``): fields may be stored again
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and isinstance(sub.value, ast.Name) \
                and sub.value.id == this:
            stores[sub.attr] += 1
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            rebound.add(sub.id)
    return tuple((stmt.targets[0].attr, stmt.value.id) for stmt in fnode.body  # type: ignore[attr-defined]
                 if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                 and isinstance(stmt.targets[0], ast.Attribute) and isinstance(stmt.targets[0].value, ast.Name)
                 and stmt.targets[0].value.id == this and isinstance(stmt.value, ast.Name)
                 and stmt.value.id not in rebound and stores[stmt.targets[0].attr] == 1)


def bind_arguments(node: ast.AST, bound: Optional[Value], args: List[Value], kwargs: Dict[str, Value],
                   defaults: Optional[Dict[str, Value]], relpath: str = "",
                   passed: Optional[Set[str]] = None,
                   literal_defaults: Optional[Dict[str, Value]] = None) -> Tuple[Dict[str, Value], List[str]]:
    """Parameter name -> value for a call (unknown where the call does not say; ``defaults``: the
    values of defaults that are not literals, :attr:`FunctionInfo.default_values`); adds the names
    the call passes to ``passed`` ("*" for ``*args``/``**kwargs`` of unknown content);
    ``literal_defaults``: :func:`parameter_defaults` of ``node``, where already known)."""
    spec = node.args  # type: ignore[attr-defined]
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    names = positional + [a.arg for a in spec.kwonlyargs]
    env: Dict[str, Value] = {}
    values: List[Any] = list(args)
    if bound is not None:
        values.insert(0, bound)
    unknown_rest = False
    flat: List[Value] = []
    for value in values:
        if isinstance(value, Star):
            inner = value.value
            if isinstance(inner, Seq):
                flat.extend(inner.items)
            else:
                unknown_rest = True
                break
        else:
            flat.append(value)
    for name, value in zip(positional, flat):
        env[name] = value
    extra = flat[len(positional):]
    for name, value in kwargs.items():
        if name == "**":
            unknown_rest = True
        elif name in names:
            env[name] = value
    if spec.vararg:
        names.append(spec.vararg.arg)
        env[spec.vararg.arg] = Seq(tuple(extra)) if not unknown_rest else Coll(UNKNOWN)
    if spec.kwarg:
        names.append(spec.kwarg.arg)
        rest = tuple((k, v) for k, v in kwargs.items() if k not in names and k != "**")
        env[spec.kwarg.arg] = DictVal(rest + (OPEN_KEYS if unknown_rest else ()))
    if passed is not None:
        passed.update(env)
        if unknown_rest:
            passed.add("*")
    if not unknown_rest:  # defaults: literal values, else what the expression was when the def ran
        if literal_defaults is None:
            literal_defaults = parameter_defaults(node, relpath)
        for name, default in literal_defaults.items():
            if default is UNKNOWN and defaults:
                default = defaults.get(name, UNKNOWN)
            env.setdefault(name, default)
    for name in names:
        env.setdefault(name, UNKNOWN)
    return env, names


def default_nodes(node: ast.AST) -> List[Tuple[str, ast.expr]]:
    """(parameter name, default expression) of each parameter of ``node`` that has a default."""
    spec = node.args  # type: ignore[attr-defined]
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    out = list(zip(positional[len(positional) - len(spec.defaults):], spec.defaults))
    out += [(arg.arg, default) for arg, default in zip(spec.kwonlyargs, spec.kw_defaults) if default is not None]
    return out


def parameter_defaults(node: ast.AST, relpath: str) -> Dict[str, Value]:
    """Parameter name -> its default's value (:func:`_default_value`), for parameters with one."""
    return {name: _default_value(default, relpath) for name, default in default_nodes(node)}


def command_line_arguments(node: ast.AST, relpath: str) -> Dict[str, Value]:
    """The value of each parameter of a function a command-line runner calls: one of the literals
    of a ``Literal[...]`` annotation; a string chosen at run time whose default is known for a string
    default (as for an argparse flag); a number default (sizes, eps, as argparse's); else unknown."""
    spec = node.args  # type: ignore[attr-defined]
    defaults = parameter_defaults(node, relpath)
    out: Dict[str, Value] = {}
    for arg in spec.posonlyargs + spec.args + spec.kwonlyargs:
        choices = _literal_choices(arg.annotation)
        default = defaults.get(arg.arg, UNKNOWN)
        if choices:
            out[arg.arg] = union_of(choices)
        elif isinstance(default, Scalar) and default.kind == "str" and isinstance(default.value, str):
            out[arg.arg] = Scalar("str", default=default.value)
        elif isinstance(default, Scalar) and (default.kind == "bool" or default.kind in ("int", "float")
                                              and default.value is not None):
            out[arg.arg] = default
        else:  # ``dtype: Optional[str] = None``: anything the command line gives
            out[arg.arg] = UNKNOWN
    return out


def _literal_choices(annotation: Optional[ast.AST]) -> List[Value]:
    """The values ``Literal["a", "b"]`` (also inside ``Optional[...]``/``Union[...]``) allows."""
    if annotation is None:
        return []
    if isinstance(annotation, ast.Subscript):
        head = annotation.value
        name = head.attr if isinstance(head, ast.Attribute) else head.id if isinstance(head, ast.Name) else ""
        inner = annotation.slice
        parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if name == "Literal":
            found = [_default_value(part) for part in parts]
            return found if all(isinstance(v, Scalar) and v.value is not None or v is NONE for v in found) else []
        if name in ("Optional", "Union"):
            out: List[Value] = []
            for part in parts:
                if isinstance(part, ast.Constant) and part.value is None:
                    continue
                found = _literal_choices(part)
                if not found:
                    return []
                out.extend(found)
            return out + ([NONE] if name == "Optional" else [])
    return []


def _default_value(node: ast.AST, relpath: str = "") -> Value:
    """A parameter default: a literal's value (``eps=1e-8``; ``fp16=False`` is a flag: unknown here,
    its value where a call leaves it out, :meth:`Interpreter._literal_defaults`)."""
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None:
            return NONE
        if isinstance(v, bool):
            return Scalar("bool")  # a flag: either way
        if isinstance(v, int):
            return Scalar("int", v, site=(relpath, node))
        if isinstance(v, float):
            return Scalar("float", v, site=(relpath, node))
        if isinstance(v, str):
            return Scalar("str", v)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        v = -node.operand.value
        return Scalar("int" if isinstance(v, int) else "float", v)
    return UNKNOWN


def _is_static(node: ast.AST) -> bool:
    for dec in getattr(node, "decorator_list", ()):
        if isinstance(dec, ast.Name) and dec.id == "staticmethod":
            return True
    return False


def _flag_aliases(text: str) -> Tuple[str, str]:
    """A condition's text and its other spelling in a class that keeps the arguments it was given:
    ``self.args.fp16`` tests what ``args.fp16`` tested in ``__init__`` (``self.args = args``)."""
    negated = text.startswith("not ")
    body = text[4:] if negated else text
    other = body[5:] if body.startswith("self.") else "self." + body
    return text, ("not " + other) if negated else other


def presence_subject(test: ast.AST) -> Optional[Tuple[ast.AST, bool]]:
    """The name or attribute whose presence ``test`` checks (``if x is not None:``, ``if x:``,
    ``if x is None:``, ``if not x:``), and whether the branch where it is None is the ``else``."""
    in_else = True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, in_else = test.operand, False
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        in_else = in_else == isinstance(test.ops[0], ast.IsNot)
        test = test.left
    return (test, in_else) if isinstance(test, (ast.Name, ast.Attribute)) else None


def _scaler_class_test(test: ast.AST, frame: Frame) -> Optional[Tuple[ast.AST, bool]]:
    """For ``if isinstance(scaler, NativeScaler):`` (or ``not isinstance(...)``) with a loss-scaler
    class (:data:`~amp_lint.data.training.GRAD_SCALERS`, ``LIBRARY_LOSS_SCALERS``): the name or
    attribute tested, and whether the branch where it is no scaler is the ``else``."""
    in_else = True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, in_else = test.operand, False
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords and isinstance(test.args[0], (ast.Name, ast.Attribute))):
        return None
    tested = frame.record.values.get(id(test.args[1]))
    names = {o.name for o in options(tested) if isinstance(o, Ext)} if tested is not None else set()
    if not names or not names <= trainingdata.GRAD_SCALERS | trainingdata.LIBRARY_LOSS_SCALERS:
        return None
    return test.args[0], in_else


def _scaler_absent(test: ast.AST, frame: Frame) -> Optional[Tuple[List[str], bool]]:
    """For ``if scaler is not None:`` (:func:`presence_subject`) or ``if isinstance(scaler,
    NativeScaler):`` (:func:`_scaler_class_test`) on a GradScaler made only under conditions
    (``GradScaler() if args.amp else None``): those conditions, and whether the branch where it
    is not there is the ``else``."""
    subject = presence_subject(test)
    by_class = subject is None
    if by_class:
        subject = _scaler_class_test(test, frame)
    if subject is None:
        return None
    test, in_else = subject
    value = frame.record.values.get(id(test))
    if value is None:
        return None
    conditions: List[str] = []
    for option in options(value):
        if option == NONE or by_class and not (isinstance(option, Obj) and option.kind == "grad_scaler"):
            continue  # where ``isinstance`` fails, anything but a scaler (``loss_scaler = "none"``)
        made = made_under(option)
        if made is None:
            return None  # a scaler made on every path, or something else
        conditions.append(made)
    return (conditions, in_else) if conditions else None


def _refuted_flags(test: ast.AST, module: SourceModule) -> Tuple[List[str], List[str]]:
    """The conditions known false in the then- and the else-branch of ``if test:`` (by their
    text, as :func:`condition_texts` writes them into origins): ``X`` is false in the else of
    ``if X`` and of ``if X or Y``, ``not X`` in the then of ``if X``. Not to be changed in place
    (one pair per test, kept for the module)."""
    key = ("refuted", id(test))
    found = module.texts.get(key)
    if found is None:
        found = module.texts[key] = _refuted_flags_of(test, module)
    return found


def _refuted_flags_of(test: ast.AST, module: SourceModule) -> Tuple[List[str], List[str]]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        false_in_else: List[str] = []
        for value in test.values:
            false_in_else.extend(_refuted_flags(value, module)[1])
        return [], false_in_else
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        false_in_then: List[str] = []
        for value in test.values:
            false_in_then.extend(_refuted_flags(value, module)[0])
        return false_in_then, [condition_texts(test, module)[0]]
    if isinstance(test, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Compare, ast.UnaryOp)):
        text, negated = condition_texts(test, module)
        return [negated], [text]
    return [], []


def _raises_in_arithmetic(a: Value, b: Value) -> bool:
    """Arithmetic of None, or of a module with a tensor or a number, raises TypeError (an unknown
    value's ``x.to(torch.float32)`` may be a module or a tensor: the sum with a tensor is the
    tensor's)."""
    if a == NONE or b == NONE:
        return True
    return isinstance(a, Module) and isinstance(b, (Tensor, Scalar)) or \
        isinstance(b, Module) and isinstance(a, (Tensor, Scalar))


def _callable_receivers(receiver: Value, method: str) -> Tuple[Value, ...]:
    """The options of ``receiver`` a call of its ``method`` continues with: ``None`` has no methods
    besides the object protocol, so ``x.to(torch.float32)`` where ``x`` may be None (a first block
    given no input) continues only with the other options; only None: unknown."""
    found = options(receiver)
    if method.startswith("__") or not any(o == NONE for o in found):
        return found
    rest = tuple(o for o in found if o != NONE)
    return rest or (UNKNOWN,)


def _open_passed_dicts(node: ast.Call, frame: Frame) -> None:
    """Dicts passed by name to user code are open afterwards (``fill(cfg)`` may add keys)."""
    for arg in list(node.args) + [kw.value for kw in node.keywords if kw.arg is not None]:
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if isinstance(arg, ast.Name):
            value = frame.env.get(arg.id)
            if isinstance(value, DictVal) and value.keys_known:
                frame.env[arg.id] = DictVal(value.items + OPEN_KEYS)


def _conjuncts(test: ast.AST) -> List[ast.AST]:
    """The tests that hold wherever ``test`` holds (``a and b``: a, b)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


#: ``x == c`` / ``x in (c1, c2)`` and their negations: (dump of x, positive, constants).
Compared = Tuple[str, bool, Tuple[object, ...]]


def _compared_constants(test: ast.AST) -> Optional[Compared]:
    """``x == c`` / ``x != c`` / ``x in (c1, c2)`` / ``x not in (...)`` as (dump of x, positive,
    constants), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
        constants: Tuple[object, ...] = (right.value,)
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
            and all(isinstance(e, ast.Constant) for e in right.elts):
        constants = tuple(e.value for e in right.elts)  # type: ignore[attr-defined]
    else:
        return None
    if any(isinstance(c, bool) or c is None for c in constants):
        return None
    return ast.dump(test.left), isinstance(op, (ast.Eq, ast.In)), constants


def _exclusive(left: Compared, right: Compared) -> bool:
    """Whether two comparisons cannot both hold: they compare the same expression with constants
    no value satisfies both ways (``x == "a"`` and ``x == "b"``, ``x == "a"`` and ``x != "a"``)."""
    if left[0] != right[0]:
        return False
    if left[1] and right[1]:
        return not set(left[2]) & set(right[2])
    if left[1] != right[1]:
        positive, negative = (left, right) if left[1] else (right, left)
        return set(positive[2]) <= set(negative[2])
    return False


def _asserted_exclusive(test: ast.AST) -> Optional[Tuple[ast.AST, ast.AST]]:
    """The two tests an assertion says cannot both hold: ``assert not a or not b``,
    ``assert not (a and b)`` (timm's ``assert not args.apex_amp or not args.native_amp``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and len(test.values) == 2 \
            and all(isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) for v in test.values):
        return test.values[0].operand, test.values[1].operand  # type: ignore[attr-defined]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.BoolOp) \
            and isinstance(test.operand.op, ast.And) and len(test.operand.values) == 2:
        return test.operand.values[0], test.operand.values[1]
    return None


def conditions_exclusive(left: str, right: str) -> bool:
    """Whether two conditions of evidence (``Origin.condition``, source texts) cannot both hold: one
    negates the other (``args.amp`` / ``not args.amp``, ``s is None`` / ``s is not None``), or a
    conjunct of each compares the same expression with constants no value satisfies both ways
    (``use_amp == "apex"`` / ``use_amp == "native"``). A text cut short (not an expression) is not."""
    a, b = _condition_forms(left), _condition_forms(right)
    if a is None or b is None:
        return False
    if a[1] == b[0] or b[1] == a[0]:
        return True
    return any(_exclusive(x, y) for x in a[2] for y in b[2])


#: condition text -> (its expression's text, its negation's text, its conjuncts' comparisons with
#: constants), or None where the text does not parse (cut short with "...")
_CONDITION_FORMS: Dict[str, Optional[Tuple[str, str, List[Compared]]]] = {}


def _condition_forms(text: str) -> Optional[Tuple[str, str, List[Compared]]]:
    """What :func:`conditions_exclusive` compares of a condition's text, read once per text."""
    if text not in _CONDITION_FORMS:
        try:
            test = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError):
            _CONDITION_FORMS[text] = None
        else:
            _CONDITION_FORMS[text] = (ast.unparse(test), _negation_text(test),
                                      [c for c in map(_compared_constants, _conjuncts(test)) if c is not None])
    return _CONDITION_FORMS[text]


def _negation_text(test: ast.AST) -> str:
    """The source text of ``not test`` as its simplest form reads (``x`` for ``not x``, ``x != c``
    for ``x == c``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED_OPS:
        return f"{ast.unparse(test.left)} {_NEGATED_OPS[type(test.ops[0])]} {ast.unparse(test.comparators[0])}"
    return ast.unparse(ast.UnaryOp(ast.Not(), test))


def _dtype_narrowing(test: ast.AST, frame: Frame) -> Optional[Tuple[str, int, bool]]:
    """``(name, dtypes, holds)`` when ``test`` checks a local tensor's (or model's) dtype against literal dtypes:
    ``x.dtype == torch.float16`` (holds: x is float16 in the body), ``!=``, ``is``, ``in (...)``,
    ``not in``, ``isinstance(x, torch.cuda.HalfTensor)`` and ``not`` of one (None: no such test)."""
    holds = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    values = frame.record.values
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
            and len(test.args) == 2 and isinstance(test.args[0], ast.Name):
        name, kinds = test.args[0].id, values.get(id(test.args[1]))
        members = kinds.items if isinstance(kinds, Seq) else (kinds,)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, (ast.Attribute, ast.Name)):
        op, right = test.ops[0], values.get(id(test.comparators[0]))
        left = test.left
        if isinstance(left, ast.Attribute) and left.attr == "dtype" and isinstance(left.value, ast.Name):
            name = left.value.id
        elif isinstance(left, ast.Name) and right is not None and all(
                _literal_dtype(m) for m in (right.items if isinstance(right, Seq) else (right,))):
            found = _dtype_of_name(left.id, test, frame)  # a dtype kept in a name: the tensor it came from
            if found is None:
                return None
            name = found
        else:
            return None
        if isinstance(op, (ast.In, ast.NotIn)):
            members = right.items if isinstance(right, Seq) else ()
        elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            members = (right,)
        else:
            return None
        holds = holds if isinstance(op, (ast.Eq, ast.Is, ast.In)) else not holds
    else:
        return None
    if not members or not all(_literal_dtype(m) for m in members):  # type: ignore[arg-type]
        return None
    wanted = 0
    for member in members:
        wanted |= member.dtypes  # type: ignore[union-attr]
    return name, wanted, holds


def _dtype_of_name(name: str, test: ast.AST, frame: Frame) -> Optional[str]:
    """The local tensor whose dtype ``name`` holds (``original_dtype = att_map.dtype``, then a test
    of ``original_dtype``): ``name`` is bound once in the function, by that statement, before the
    test, and the tensor is not bound again between the two (None otherwise). Read once per test."""
    scope = frame.info.node if frame.info is not None else None
    if scope is None:
        return None
    key = (f"dtype_of_name {id(scope)}", id(test))  # a test in a loop's body is also in its own scope
    if key not in frame.module.texts:
        frame.module.texts[key] = _dtype_of_name_in(name, test, scope)
    return frame.module.texts[key]


def _dtype_of_name_in(name: str, test: ast.AST, scope: ast.AST) -> Optional[str]:
    binding = _single_assignment(scope, name)
    if binding is None:
        return None
    source = binding.value
    if not (isinstance(source, ast.Attribute) and source.attr == "dtype" and isinstance(source.value, ast.Name)):
        return None
    tensor = source.value.id
    start, end = binding.lineno, getattr(test, "lineno", 0)
    if end <= start:
        return None
    for stmt in walk_scope(scope):
        if start < getattr(stmt, "lineno", 0) < end and isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(sub, ast.Name) and sub.id == tensor for t in targets for sub in ast.walk(t)):
                return None
    return tensor


def _aliases(name: str, frame: Frame) -> Tuple[str, ...]:
    """``name`` and the locals it copies in this function (``val_typecheck = val`` or ``= val.data``,
    the tensor whose type a conversion helper tests): a dtype test on one holds for the other."""
    scope = frame.info.node if frame.info is not None else None
    if scope is None:
        return (name,)
    found = [name]
    for stmt in walk_scope(scope):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == name:
            source = stmt.value.value if isinstance(stmt.value, ast.Attribute) and stmt.value.attr == "data" \
                else stmt.value
            if isinstance(source, ast.Name) and source.id not in found:
                found.append(source.id)
    return tuple(found)


def _narrow(env: Dict[str, Value], name: str, dtypes: int, holds: bool) -> bool:
    """In a branch where ``name``'s dtype is (``holds``) or is not one of ``dtypes``, drop the
    dtypes it cannot have there (``if x.dtype == torch.float16: x = x.float()`` leaves no float16
    path); the evidence of a half dtype goes with it. A model's ``dtype`` is its parameters'.
    False where no value ``name`` may hold passes the test: a tensor whose dtype is known for sure
    and is not (or is) one of ``dtypes`` (``if not isinstance(val, HALF_TYPES)`` on a half tensor)."""
    value = env.get(name)
    if value is None:
        return True
    out: Optional[Value] = None
    impossible = 0
    for option in options(value):
        if isinstance(option, Tensor) and option.dtypes:
            kept = option.dtypes & dtypes if holds else option.dtypes & ~dtypes
            if not kept and not option.unknown:
                impossible += 1
            if kept and kept != option.dtypes:
                option = replace(option, dtypes=kept, origin=option.origin if kept & HALF else None)
        elif isinstance(option, Module):  # ``model.dtype``: the dtype of its parameters
            if holds:  # known now, also where it was not (a loaded model)
                kept = dtypes & FLOATS if option.cast_unknown or not option.cast else option.cast & dtypes
            else:
                kept = option.cast & ~dtypes
            if kept and (kept != option.cast or option.cast_unknown and holds):
                option = option.cast_to(kept, option.origin)
        out = join(out, option)
    if out is not None:
        env[name] = out
    return impossible < len(options(value))


def _refine(env: Dict[str, Value], false_conditions: List[str]) -> Dict[str, Value]:
    """A copy of ``env`` on a path where ``false_conditions`` are false."""
    out = dict(env)
    if not false_conditions:
        return out
    for condition in false_conditions:
        for name, value in out.items():
            out[name] = without_condition(value, condition)
    return out


def set_field(cls: ClassInfo, name: str, value: Value) -> None:
    """Store an instance field of ``cls``; a change bumps the class's field version."""
    if cls.fields.get(name) != value:
        cls.fields[name] = value
        cls.field_version += 1
        FIELD_CHANGES[0] += 1


def _top_class(info: FunctionInfo) -> Optional[Tuple[str, str]]:
    """(module path, name) of the top-level class ``info`` is defined in, if any."""
    if "." not in info.qualname:
        return None
    return info.module.relpath, info.qualname.split(".", 1)[0]


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def unreferenced_classes(modules: Sequence[SourceModule],
                         candidates: Set[Tuple[str, str]]) -> Set[Tuple[str, str]]:
    """The ``candidates`` (top-level classes whose methods nothing called) that no code names
    outside their own body, in a module some of whose other classes other files do name: the
    unused heads of a model file that the program uses (a ``BertForQuestionAnswering`` next to the
    ``BertForSequenceClassification`` the scripts build). Running them with unknown arguments
    reports code no run reaches. Decorated classes (registries) are kept, and so is every class of
    a module no other file names (a library: its users are elsewhere). Names are counted in the
    text, comments and strings included, so a doubt keeps the class."""
    if not candidates or any(m.source is None for m in modules):
        return set()
    by_path = {m.relpath: m for m in modules}
    wanted: Dict[str, List[ClassInfo]] = {}
    for path, name in candidates:
        module = by_path.get(path)
        if module is None:
            continue
        top = [c for c in module.classes if "." not in c.qualname]
        cls = next((c for c in top if c.name == name), None)
        if cls is not None and not cls.node.decorator_list and len(top) > 1:
            wanted.setdefault(path, []).append(cls)
    if not wanted:
        return set()
    everywhere: Counter = Counter()
    for module in modules:
        everywhere.update(_IDENTIFIER.findall(module.source or ""))
    out: Set[Tuple[str, str]] = set()
    for path, classes in wanted.items():
        module = by_path[path]
        lines = (module.source or "").splitlines()
        own = Counter(_IDENTIFIER.findall(module.source or ""))
        top = [c for c in module.classes if "." not in c.qualname]
        # the module is in use: another file names one of its other classes
        used = {c.name for c in top if everywhere[c.name] > own[c.name]}
        for cls in classes:
            if not used - {cls.name}:
                continue
            body = "\n".join(lines[cls.node.lineno - 1:cls.node.end_lineno])
            inside = Counter(_IDENTIFIER.findall(body))[cls.name]
            if everywhere[cls.name] == inside:
                out.add((path, cls.name))
    return out


def _rebinds_globals(call: ast.AST) -> bool:
    """``exec(...)`` or ``globals().update(...)``: a statement that may rebind any module constant."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "exec"
    return (isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id in ("globals", "vars"))


def _is_isinstance(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"


def _truth(node: ast.AST, value: Value) -> Optional[bool]:
    """A branch decided statically: literal constants, ``TYPE_CHECKING``, and a name whose value
    is a known constant here (``USE_CUTOUTS = False`` at module level, ``False`` passed by every
    caller of this context, or a flag's ``False`` default a call left out), and ``not`` of such a
    name. Flags of a function run with no caller, and flags read from outside, stay undecided:
    their values are unknown."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) == "TYPE_CHECKING"
                                                       or getattr(node, "attr", None) == "TYPE_CHECKING"):
        return False
    if isinstance(node, (ast.Compare, ast.BoolOp)) and isinstance(value, Scalar) and isinstance(value.value, bool):
        return value.value  # a dtype or None test (:func:`dtype_test`, :func:`none_test`), or and/or of known ones
    if _is_isinstance(node) and isinstance(value, Scalar) and isinstance(value.value, bool):
        return value.value  # a torch.nn layer of a known class (:func:`torch_api.layer_isinstance`)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(value, Scalar) \
            and isinstance(value.value, bool) and (isinstance(node.operand, (ast.Name, ast.Compare, ast.BoolOp))
                                                   or _is_isinstance(node.operand)):
        return value.value  # ``not flag`` of a known flag or test (its value is already negated)
    if isinstance(node, ast.Name) and isinstance(value, Scalar):
        if value.kind == "none":
            return False
        if value.kind in ("bool", "int", "float") and isinstance(value.value, (bool, int, float)):
            return bool(value.value)
    return None


def _constant_field(node: ast.Attribute, frame: Frame) -> bool:
    """``self.qk_float`` read in a method of a class that sets the field only in ``__init__`` or
    only to one constant, in a file that stores it no other way (:attr:`SourceModule.settled_fields`):
    the value the object's run holds is the field's. A field a method sets otherwise (one a library
    calls, which the analysis does not run) is not known to hold it."""
    cls = frame.info.cls if frame.info is not None else None
    return isinstance(node.value, ast.Name) and node.value.id == "self" and cls is not None \
        and (cls.node.name, node.attr) in frame.module.settled_fields


def _scalar_truth(value: Value) -> Optional[bool]:
    """The truth of a Python scalar whose value is known (``None``, ``0``, ``2730``, ``""``)."""
    if not isinstance(value, Scalar) or value.finfo is not None:
        return None
    if value.kind == "none":
        return False
    if value.kind in ("int", "float", "bool", "str", "num") and isinstance(value.value, (bool, int, float, str)):
        return bool(value.value)
    return None


def _torch_feature(value: Value) -> bool:
    """An autocast or gradient scaler of torch (``getattr(torch.cuda.amp, "autocast")``): a class or
    function the torch this tool describes has, never None."""
    return isinstance(value, Ext) and (value.name in trainingdata.AUTOCASTS or value.name in trainingdata.GRAD_SCALERS)


def none_test(op: ast.cmpop, value: Value) -> Optional[bool]:
    """The outcome of ``x is None`` (``is not None``) when ``x`` is known: None (a default the
    caller did not pass), or a tensor, module or function on every path. The caller leaves a
    module global read in a function undecided (``assert _GROUP is not None``: another function
    sets it through ``global``)."""
    if value == NONE:
        outcome: Optional[bool] = True
    elif all(isinstance(option, (Tensor, Module, FuncVal, ClassVal)) or _torch_feature(option)
             for option in options(value)):
        outcome = False
    else:
        return None
    return outcome if isinstance(op, ast.Is) else not outcome


def _forward_input(node: ast.AST, frame: Frame) -> bool:
    """``node`` names an input of a module's ``forward`` (not ``self``): an activation."""
    info = frame.info
    if info is None or info.name != "forward" or "." not in info.qualname or not isinstance(node, ast.Name):
        return False
    spec = info.node.args  # type: ignore[attr-defined]
    inputs = [a.arg for a in spec.posonlyargs + spec.args][1:] + [a.arg for a in spec.kwonlyargs]
    return node.id in inputs and node.id not in frame.assigned


def dtype_test(op: ast.cmpop, left: Value, right: Value, unknown_is_not_half: bool = False) -> Optional[bool]:
    """The outcome of ``x.dtype == torch.float16`` (``!=``, ``is``, ``is not``, ``in (...)``,
    ``not in``) when the dtypes decide it, else None.

    With ``unknown_is_not_half`` (a test on an activation's dtype), a test *for a half dtype* on
    a value whose dtype is unknown is false: a branch that runs only when the input is already
    half (``if x.dtype == torch.float16: ...; out = out.half()``, restoring the caller's
    precision) is no evidence that anything is half. A test on a module's own weights
    (``if self.weight.dtype == torch.float16: x = x.half()``) stays undecided: the module is
    written to run cast to half, and the finding names that condition. Tests for other dtypes on
    an unknown one stay undecided."""
    if isinstance(op, (ast.In, ast.NotIn)):
        members = right.items if isinstance(right, Seq) else None
        if not members or not all(_literal_dtype(m) for m in members):
            return None
        wanted = 0
        for member in members:
            wanted |= member.dtypes  # type: ignore[attr-defined]
        tested = left
    elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
        if _literal_dtype(right):
            tested, wanted = left, right.dtypes  # type: ignore[attr-defined]
        elif _literal_dtype(left):
            tested, wanted = right, left.dtypes  # type: ignore[attr-defined]
        else:
            return None
    else:
        return None
    if unknown_is_not_half and isinstance(tested, Union):
        # an activation's ``x.dtype`` where ``x`` may also be a number (no dtype: that path
        # raises): the dtypes of its tensors
        tested = next((o for o in options(tested) if isinstance(o, DType)), DType(0, True))
    if tested is UNKNOWN and unknown_is_not_half:
        tested = DType(0, True)  # ``x.dtype`` of a value the analysis knows nothing of
    if not isinstance(tested, DType):
        return None
    unknown = tested.unknown or not tested.dtypes  # no dtype at all: a tensor of unknown dtype
    if not unknown and not tested.dtypes & ~wanted:
        outcome: Optional[bool] = True
    elif tested.dtypes & wanted:
        outcome = None
    elif not unknown or (unknown_is_not_half and not wanted & ~HALF):
        outcome = False
    else:
        outcome = None
    if outcome is None or isinstance(op, (ast.Eq, ast.Is, ast.In)):
        return outcome
    return not outcome


def _container_vs_scalar(a: Value, b: Value) -> bool:
    """One is a dict, tuple or list and the other a string or number: never equal."""
    def container(v: Value) -> bool:
        return isinstance(v, (DictVal, Seq))

    def scalar(v: Value) -> bool:
        return isinstance(v, Scalar) and v.kind in ("str", "int", "float", "bool", "none")

    return container(a) and scalar(b) or container(b) and scalar(a)


def strings_equal(a: Value, b: Value) -> Optional[bool]:
    """``mode == "math"`` where both sides are strings whose texts are known (a literal, a default
    no caller overrides, a config file's value; not a string chosen on the command line, whose
    text is unknown): whether they are equal, None where it depends on the path."""
    texts_a, texts_b = known_strings(a), known_strings(b)
    if not texts_a or not texts_b:
        return None
    outcomes = {x == y for x in texts_a for y in texts_b}
    return outcomes.pop() if len(outcomes) == 1 else None


def membership(key: Value, container: Value) -> Optional[bool]:
    """``key in container`` for a known string or int and a dict whose keys are all known or a
    tuple or list of known strings or ints; None where it is not known."""
    if not (isinstance(key, Scalar) and isinstance(key.value, (str, int))) or isinstance(key.value, bool):
        return None
    if isinstance(container, DictVal) and container.keys_known:
        return any(k == key.value for k, _ in container.items)
    if isinstance(container, Seq) and all(isinstance(i, Scalar) and isinstance(i.value, (str, int))
                                          and not isinstance(i.value, bool) for i in container.items):
        return any(i.value == key.value for i in container.items)  # type: ignore[attr-defined]
    return None


def _literal_dtype(value: Value) -> bool:
    """A single dtype known exactly (``torch.float16``, or read off a value known to be float16)."""
    return (isinstance(value, DType) and bool(value.dtypes) and not value.dtypes & (value.dtypes - 1)
            and not value.unknown)


#: Scalar kinds that ``a, b = value`` cannot unpack (TypeError)
#: the methods of a dict (an attribute of a dict value by another name is a config's key)
_DICT_METHODS = frozenset(name for name in dir(dict) if not name.startswith("__"))
_NOT_ITERABLE = frozenset({"none", "int", "float", "bool", "num"})


def unpack_targets(value: Value, count: int, star: Optional[int]) -> Optional[List[Value]]:
    """What each of ``count`` unpacking targets gets (``star``: the index of the starred one, which
    gets a sequence), where the value's length or its leading items are known; None where not.
    ``logits, *mems = (logits, *hidden)`` gives the logits to ``logits``; a union unpacks per option:
    a tensor into its rows (``forward`` returns one feature on an early return, a triple at its end),
    a tuple of another length not at all (that path raises), a list of unknown length into values
    not known."""
    if isinstance(value, Union):
        out: Optional[List[Value]] = None
        unknown = False
        for option in options(value):
            if isinstance(option, Scalar) and option.kind in _NOT_ITERABLE:
                continue  # unpacking None or a number raises: that path assigns nothing
            if option is UNKNOWN:
                unknown = True  # each target may be anything besides what the other options give
                continue
            got = [Coll(option) if i == star else option for i in range(count)] if isinstance(option, Tensor) \
                else unpack_targets(option, count, star)
            if got is None:
                if isinstance(option, Seq):
                    continue  # a tuple of another length: unpacking it raises, that path assigns nothing
                if isinstance(option, Coll):
                    unknown = True  # a list of unknown length: what lands in each target is not known
                    continue
                return None
            out = got if out is None else [join(a, b) for a, b in zip(out, got)]
        return [join(item, UNKNOWN) for item in out] if unknown and out is not None else out
    if isinstance(value, Seq):
        items = value.items
        if star is None:
            return list(items) if len(items) == count else None
        if len(items) < count - 1:
            return None
        after = count - star - 1
        middle = Seq(tuple(items[star:len(items) - after]))
        return list(items[:star]) + [middle] + list(items[len(items) - after:])
    if isinstance(value, Coll) and value.prefix:
        known = count if star is None else star
        if known > len(value.prefix) or (star is not None and count - star - 1 > 0):
            return None
        rest = [Coll(value.elem)] if star is not None else []
        return list(value.prefix[:known]) + rest
    return None


def _holds_module(value: Value) -> bool:
    """A module, or a tuple holding one (a ``(name, module)`` pair of ``ModuleDict.items()``): a loop
    over a few of these runs once per item. Loops over numbers or strings are not unrolled: a call
    in their body would get one context per item (transformer-xl's self-test builds its model for
    each of four sizes), and its callees would be widened for every other caller."""
    return any(isinstance(o, Module) or isinstance(o, Seq) and any(isinstance(i, Module) for i in o.items)
               for o in options(value))


def _const_key(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
        return node.value
    return None


def _class_info(value: Value) -> Optional[ClassInfo]:
    if isinstance(value, (Module, Instance)) and isinstance(value.cls, ClassVal):
        return value.cls.info
    return None


def adopt(value: Value, owner: Module, name: str = "") -> Value:
    """A field of ``owner`` as read through it: submodules and parameters follow the owner's cast
    (``name``: the field's; a converter that cast only some layers reached the parameters it names)."""
    if owner.cast == F32 and not owner.cast_unknown:
        return value
    out: Optional[Value] = None
    for option in options(value):
        if isinstance(option, Module):
            adopted: Value = option.cast_to(owner.cast, owner.origin, owner.kinds)
            if owner.cast_unknown and adopted is not option:
                adopted = adopted.with_unknown()  # type: ignore[union-attr]
        elif isinstance(option, Tensor) and option.param and (not owner.kinds or "." + name in owner.kinds):
            dtypes = owner.cast if option.dtypes & FLOATS else option.dtypes
            adopted = Tensor(dtypes, owner.cast_unknown, owner.origin if owner.cast & HALF else None, param=True,
                             zero_dim=option.zero_dim)
        elif isinstance(option, Coll):
            adopted = Coll(adopt(option.elem, owner), tuple(adopt(i, owner) for i in option.prefix))
        elif isinstance(option, Seq):
            adopted = Seq(tuple(adopt(i, owner) for i in option.items))
        else:
            adopted = option
        out = join(out, adopted)
    return out if out is not None else UNKNOWN


#: a use of a half module that may run its forward out of sight (passed on, returned, a library method)
_HANDED = "<handed>"

#: builtins that only look at an object they are given (its attributes, its type, its identity)
_LOOKING_AT = frozenset({"getattr", "setattr", "hasattr", "delattr", "isinstance", "type", "id", "print", "repr"})


def _only_shows(func: ast.AST) -> bool:
    """``print(model)``, ``logger.info(model)``, ``torch.save(model, path)``: the model is shown or
    stored, not handed to code that runs it."""
    parts: List[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    dotted = ".".join(reversed(parts))
    return dotted in trainingdata.MODEL_SHOWING_CALLS or (len(parts) > 1 and parts[0] in trainingdata.LOGGING_METHODS)


def _uses_scope(tree: ast.AST, origin: Origin, name: Optional[str]) -> ast.AST:
    """Where the name a cast binds is read: the function the cast is in, for a plain name that
    function binds (a local: ``model = model.to(dtype)`` in a loader, whose other functions' own
    ``model`` is another value), else the whole file (a global, a field)."""
    if name is None or "." in name:
        return tree
    enclosing: Optional[ast.AST] = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= origin.line <= (node.end_lineno or node.lineno) \
                and (enclosing is None or node.lineno >= enclosing.lineno):  # type: ignore[attr-defined]
            enclosing = node
    if enclosing is None or any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names
                                for n in ast.walk(enclosing)):
        return tree
    spec = enclosing.args  # type: ignore[attr-defined]
    local = name in {a.arg for a in spec.posonlyargs + spec.args + spec.kwonlyargs} or any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(enclosing))
    return enclosing if local else tree


def _cast_receiver(tree: ast.AST, origin: Origin) -> Optional[str]:
    """The name a cast at ``origin`` applies to: ``model`` of ``model.half()`` (a statement, or
    ``model = model.half()``) or of ``model = build().half()``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno == origin.line and node.col_offset == origin.col:
            break
    else:
        return None
    parent = None
    for candidate in ast.walk(tree):
        if isinstance(candidate, ast.Assign) and candidate.value is node and len(candidate.targets) == 1:
            parent = candidate.targets[0]
    if parent is not None and _dotted(parent):
        return _dotted(parent)  # ``model = ...`` or ``self.net = self.net.half()``: the name bound
    func = node.func
    while isinstance(func, ast.Attribute):
        inner = func.value
        if _dotted(inner):
            return _dotted(inner)
        func = inner.func if isinstance(inner, ast.Call) else inner
    return None


def _dotted(node: ast.AST) -> Optional[str]:
    """``model`` or ``self.net_g`` (names and fields of names), else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _use_key(module: Module, origin: Origin) -> Tuple:
    """A half module by its cast site and class (its submodules share the cast site)."""
    cls = module.cls
    return origin.key, (id(cls.info) if isinstance(cls, ClassVal) else getattr(cls, "name", None))


#: the kinds of value whose equal members may still name different half casts (evidence)
_NAMING_CASTS = (Module, Union, Tensor, Seq)


def join_envs(a: Optional[Dict[str, Value]], b: Optional[Dict[str, Value]],
              condition: Optional[Callable[[], Tuple[str, str]]],
              before: Optional[Dict[str, Value]] = None) -> Optional[Dict[str, Value]]:
    """Join two environments. With ``condition`` (the test's text and its negation, ``a`` being the
    environment where the test held), a value half on one side only gets the side's condition as
    evidence, and a value made half on each side at different places gives each cast its side's
    (``before``: the environment before the test)."""
    if a is None:
        return dict(b) if b is not None else None
    if b is None:
        return dict(a)
    out: Dict[str, Value] = {}
    texts: Optional[Tuple[str, str]] = None
    # the two sides are mostly copies of one environment: what neither changed is taken as it is
    differing = []
    for key, va in a.items():
        vb = b.get(key)
        if va is vb:
            out[key] = va
        else:
            differing.append(key)
    differing.extend(key for key in b if key not in a)
    for key in differing:
        va, vb = a.get(key), b.get(key)
        if (va is None or vb is None) and "." in key:
            continue  # a field stored on one path only: reads go back to the field
        if va is vb or (va is not None and vb is not None and va == vb):
            # equal values may still name different casts (a model made half on either branch)
            out[key] = join(va, vb) if type(va) in _NAMING_CASTS else (
                va if va is not None else vb)  # type: ignore[assignment]
            continue
        joined = join(va, vb)
        side = _half_side(va, vb, before.get(key) if before is not None else None) \
            if condition is not None and va is not None and vb is not None else 0
        if side:
            if texts is None:
                texts = condition()  # type: ignore[misc]
            joined = with_condition(joined, texts[0] if side == 1 else texts[1])
        elif condition is not None and va is not None and vb is not None and before is not None \
                and _casts_on_both_sides(va, vb, before.get(key)):
            # made half on each side, at different places: each cast holds under its side's test
            if texts is None:
                texts = condition()  # type: ignore[misc]
            joined = join(with_condition(va, texts[0]), with_condition(vb, texts[1]))
        out[key] = joined
    return out


def forget_fields(frame: Frame, name: str) -> None:
    """``name`` is rebound or handed on: its fields are read from the fields again."""
    if name not in frame.narrowed:
        return
    prefix = name + "."
    for key in [k for k in frame.env if k.startswith(prefix)]:
        del frame.env[key]


def _is_class_var(annotation: ast.AST) -> bool:
    """``ClassVar[...]``: a class attribute, no dataclass field."""
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (isinstance(head, ast.Name) and head.id == "ClassVar") or \
        (isinstance(head, ast.Attribute) and head.attr == "ClassVar")


def _self_stores(node: ast.AST) -> Set[str]:
    """The fields a method sets on its first parameter (``self.x = ...``, ``self.x += ...``)."""
    spec = node.args  # type: ignore[attr-defined]
    params = spec.posonlyargs + spec.args
    if not params:
        return set()
    me = params[0].arg
    out: Set[str] = set()
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] \
            if isinstance(sub, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                    out.add(t.attr)
    return out


def _narrowable(value: Value) -> bool:
    """Data whose field stores are narrowed (:meth:`Interpreter.narrow_field`)."""
    for option in options(value):
        if isinstance(option, Seq):
            if not all(_narrowable(item) for item in option.items):
                return False
        elif not isinstance(option, (Tensor, Scalar)) and option is not UNKNOWN:
            return False
    return True


def _casts_on_both_sides(a: Value, b: Value, before: Optional[Value]) -> bool:
    """Whether each branch made ``a`` / ``b`` half at a place of its own (not a cast both inherit)."""
    old = half_cast_keys(before)
    new_a, new_b = half_cast_keys(a) - old, half_cast_keys(b) - old
    return bool(new_a) and bool(new_b) and not new_a & new_b


def _dtype_with_origin(value: Value, frame: Frame, node: ast.AST) -> Value:
    """A half dtype picked on one side of a conditional expression (``torch.float16 if fp16 else
    "auto"``) is evidence there, so that it can carry the condition."""
    if isinstance(value, DType) and value.dtypes & FLOATS and not value.dtypes & FLOATS & ~HALF and value.origin is None:
        return replace(value, origin=torch_api.dtype_origin(frame, node))
    return value


def _scalers_only(value: Value) -> bool:
    found = options(value)
    return bool(found) and all(isinstance(o, Obj) and o.kind == "grad_scaler" for o in found)


def _plain_instances(value: Value) -> bool:
    """Instances of project classes only, none marked with a test yet."""
    found = options(value)
    return bool(found) and all(isinstance(o, Instance) and isinstance(o.cls, ClassVal) and o.made is None
                               for o in found)


def _absent_unless_made_under(value: Value) -> bool:
    """``None`` (or a string or flag standing in for a scaler: ``loss_scaler = "none"``), possibly
    with GradScalers each made under a test of its own (the other branches of an if/elif chain
    that made one)."""
    found = options(value)
    placeholders = [o for o in found if o == NONE or isinstance(o, Scalar) and isinstance(o.value, (str, bool))]
    return bool(placeholders) and all(o in placeholders or made_under(o) is not None for o in found)


def _autocast_factories(value: Value) -> bool:
    """``torch.cuda.amp.autocast`` and its kin as values, not called (``amp_autocast = ...``)."""
    found = options(value)
    return bool(found) and all(isinstance(o, Ext) and o.name in trainingdata.AUTOCASTS for o in found)


def _null_contexts(value: Value) -> bool:
    """Context managers that change nothing, as values (``contextlib.suppress``, ``nullcontext``)."""
    found = options(value)
    return bool(found) and all(isinstance(o, Ext) and o.name in trainingdata.NULL_CONTEXTS for o in found)


def _half_side(a: Value, b: Value, before: Optional[Value] = None) -> int:
    """1 when only ``a`` is half and ``b`` is the same kind of value wider (``model.half()`` on one
    path only: the branch condition is the precision's), or ``a`` is what a precision mode makes and
    ``b`` its absence (a GradScaler or None, an autocast or a null context), 2 the other way round,
    else 0. ``before``:
    the value before the test, where there is one."""
    def dtypes(v: Value) -> Tuple[int, int]:
        half = wide = 0
        for o in options(v):
            bits_ = o.dtypes if isinstance(o, (Tensor, DType)) else (o.cast if isinstance(o, Module) else 0)
            half |= bits_ & HALF
            wide |= bits_ & ~HALF & FLOATS
        return half, wide

    def half_graph(v: Value) -> bool:
        return any(isinstance(o, Tensor) and o.graph & HALF for o in options(v))

    def unspecified(v: Value) -> bool:  # ``None`` or ``"auto"`` in place of a dtype: not half either
        return all(isinstance(o, Scalar) and o.kind in ("none", "str") for o in options(v))

    def dtype_choice(v: Value) -> bool:
        return any(isinstance(o, DType) for o in options(v))

    def unknown_model(v: Value, half_side: Value) -> bool:
        # a model of a class nobody knows, cast to half on one path only (``net = cls()``, then
        # ``if precision == "fp16": to_fp16(net)``): the cast holds under the test all the same.
        # Not where the model was half before the test and the other path lost track of it
        # (``if cpu: model = ipex.optimize(model)``): that cast does not depend on the test
        return before is not None and not dtypes(before)[0] \
            and any(isinstance(o, Module) for o in options(half_side)) and all(
                o is UNKNOWN or isinstance(o, Module) and not o.cast & HALF for o in options(v))

    # a GradScaler made on one path only (``GradScaler() if args.amp else None``, or one branch of
    # an if/elif chain whose others made their own under their tests): it exists under the test,
    # as a half value made on one path holds under it
    if _scalers_only(a) and _absent_unless_made_under(b):
        return 1
    if _scalers_only(b) and _absent_unless_made_under(a):
        return 2
    # a project object made on one path, None left on the other (``loss_scaler = None`` under
    # ``if args.deepspeed:``, ``NativeScaler()`` in the else): it exists under its path's test
    if _plain_instances(a) and b == NONE:
        return 1
    if _plain_instances(b) and a == NONE:
        return 2
    # an autocast picked on one path, a null context on the other (``amp_autocast = suppress``,
    # then ``amp_autocast = torch.cuda.amp.autocast`` under ``if use_amp == "native":``)
    if _autocast_factories(a) and _null_contexts(b):
        return 1
    if _autocast_factories(b) and _null_contexts(a):
        return 2
    half_a, wide_a = dtypes(a)
    half_b, wide_b = dtypes(b)
    if half_a and not half_b and (wide_b or dtype_choice(a) and unspecified(b) or unknown_model(b, a)):
        return 1
    if half_b and not half_a and (wide_a or dtype_choice(b) and unspecified(a) or unknown_model(a, b)):
        return 2
    # a loss computed under autocast on one path only (``if use_amp: with autocast(): loss = ...``)
    graph_a, graph_b = half_graph(a), half_graph(b)
    if graph_a and not graph_b and not half_b:
        return 1
    if graph_b and not graph_a and not half_a:
        return 2
    return 0


def _layer_loop(node: ast.For) -> Optional[Tuple[ast.AST, ast.Call]]:
    """``for m in X.modules():`` (or ``X.children()``) whose body casts ``m`` (``m.half()``,
    ``m.to(...)``), with no ``break``, ``continue``, ``return`` or ``yield`` in it: (``X``, the
    first cast call)."""
    call = node.iter
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.args
            and not call.keywords and call.func.attr in ("modules", "children") and isinstance(node.target, ast.Name)):
        return None
    target = node.target.id
    cast: Optional[ast.Call] = None
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, _LOOP_EXITS):
                return None
            if cast is None and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in _LAYER_CASTS and isinstance(sub.func.value, ast.Name) \
                    and sub.func.value.id == target:
                cast = sub
    return (call.func.value, cast) if cast is not None else None


#: statements that leave a loop's body early, or make it a generator or another scope
_LOOP_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
               ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: the methods that cast a layer in place
_LAYER_CASTS = frozenset({"half", "bfloat16", "to", "type"})


def _weights_of(value: Value) -> Value:
    """What a dict of weights holds when ``value`` is stored in it: its tensors (``z[k].to(dtype)``
    on a value of unknown kind may be a module's cast, :func:`torch_api.cast_method`; in a dict of
    weights it cast a tensor), their half evidence read as a tensor's cast."""
    tensors = [_tensor_cast_origin(o) for o in options(value) if isinstance(o, Tensor)]
    if not tensors:
        return value
    return union_of(tensors) if len(set(tensors)) > 1 else tensors[0]


def _tensor_cast_origin(value: Tensor) -> Tensor:
    """``value`` with the origin of its half evidence read as a tensor's cast."""
    if value.origin is not None and value.origin.kind == "module_cast":
        return replace(value, origin=replace(value.origin, kind="cast"))
    return value


def _keys_of(iterable: ast.AST) -> Tuple[Optional[ast.AST], bool]:
    """(the container whose keys ``iterable`` are, whether it is its ``items()``): ``z``,
    ``z.keys()``, ``z.items()``, and those in ``list(...)``, ``sorted(...)`` or ``tuple(...)``;
    the container is a name or a field (``self.z``)."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) \
            and iterable.func.id in ("list", "sorted", "tuple") and len(iterable.args) == 1 and not iterable.keywords:
        iterable = iterable.args[0]
    items = False
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args \
            and iterable.func.attr in ("keys", "items"):
        items = iterable.func.attr == "items"
        iterable = iterable.func.value
    if isinstance(iterable, ast.Name) or (isinstance(iterable, ast.Attribute) and isinstance(iterable.value, ast.Name)):
        return iterable, items
    return None, False


def _single_assignment(scope: ast.AST, name: str) -> Optional[ast.Assign]:
    """The one statement that binds ``name`` in ``scope`` (not in nested functions) when it is a
    plain ``name = value``; None where there is none, more than one, or another kind of binding
    (``+=``, unpacking, a loop or ``with`` target, ``:=``)."""
    found: Optional[ast.Assign] = None
    for node in walk_scope(scope):
        if isinstance(node, ast.Assign):
            targets: List[Optional[ast.AST]] = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items]
        else:
            continue
        if any(isinstance(sub, ast.Name) and sub.id == name for t in targets if t is not None for sub in ast.walk(t)):
            if found is not None or not (isinstance(node, ast.Assign) and len(node.targets) == 1
                                         and isinstance(node.targets[0], ast.Name)):
                return None
            found = node
    return found


def _parameter_loop(node: ast.For) -> Optional[Tuple[ast.AST, FrozenSet[int]]]:
    """``for p in X.parameters():`` (or ``for name, p in X.named_parameters():``) whose body stores
    ``p.data = ...`` as a statement of its own, on every iteration (not under a test, which would
    cast only some parameters): (``X``, the ids of those ``p.data`` targets)."""
    call = node.iter
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.args
            and call.func.attr in ("parameters", "named_parameters")):
        return None
    target = node.target
    if call.func.attr == "named_parameters":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        target = target.elts[1]
    if not isinstance(target, ast.Name):
        return None
    stores = frozenset(id(t) for stmt in node.body if isinstance(stmt, ast.Assign) for t in stmt.targets
                       if isinstance(t, ast.Attribute) and t.attr == "data" and isinstance(t.value, ast.Name)
                       and t.value.id == target.id)
    return (call.func.value, stores) if stores else None


def condition_texts(test: ast.AST, module: SourceModule) -> Tuple[str, str]:
    """The text of a branch test and of its negation, as conditions of evidence read them."""
    key = ("condition", id(test))
    found = module.texts.get(key)
    if found is None:
        found = module.texts[key] = _condition_texts_of(test, module)
    return found


def _condition_texts_of(test: ast.AST, module: SourceModule) -> Tuple[str, str]:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        text = module.segment(test, 40)
        return text, module.segment(test.operand, 40)
    text = module.segment(test, 40)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED_OPS:
        left, right = module.segment(test.left, 40), module.segment(test.comparators[0], 40)
        return text, f"{left} {_NEGATED_OPS[type(test.ops[0])]} {right}"  # ``x is None`` / ``x is not None``
    simple = isinstance(test, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))
    return text, f"not {text}" if simple else f"not ({text})"


#: Comparisons whose negation is another comparison (as source text writes it).
_NEGATED_OPS = {ast.Is: "is not", ast.IsNot: "is", ast.Eq: "!=", ast.NotEq: "==", ast.In: "not in",
                ast.NotIn: "in", ast.Lt: ">=", ast.GtE: "<", ast.Gt: "<=", ast.LtE: ">"}


def envs_equal(a: Dict[str, Value], b: Dict[str, Value]) -> bool:
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if value is not other and value != other:
            return False
    return True


Interpreter._stmt_table = {
    ast.Expr: Interpreter._s_expr, ast.Assign: Interpreter._s_assign, ast.AnnAssign: Interpreter._s_annassign,
    ast.AugAssign: Interpreter._s_augassign, ast.Return: Interpreter._s_return, ast.Raise: Interpreter._s_raise,
    ast.Pass: Interpreter._s_pass, ast.Assert: Interpreter._s_assert, ast.Delete: Interpreter._s_delete,
    ast.Import: Interpreter._s_import, ast.ImportFrom: Interpreter._s_import, ast.Break: Interpreter._s_break,
    ast.Continue: Interpreter._s_continue, ast.If: Interpreter._s_if, ast.For: Interpreter._s_for,
    ast.AsyncFor: Interpreter._s_for, ast.While: Interpreter._s_while, ast.Try: Interpreter._s_try,
    ast.With: Interpreter._s_with, ast.AsyncWith: Interpreter._s_with,
    ast.FunctionDef: Interpreter._s_functiondef, ast.AsyncFunctionDef: Interpreter._s_functiondef,
    ast.ClassDef: Interpreter._s_classdef, ast.Global: Interpreter._s_pass, ast.Nonlocal: Interpreter._s_pass,
    ast.Match: Interpreter._s_match,
}
if sys.version_info >= (3, 11):
    Interpreter._stmt_table[ast.TryStar] = Interpreter._s_try  # type: ignore[attr-defined]

Interpreter._expr_table = {
    ast.Constant: Interpreter._e_constant, ast.Name: Interpreter._e_name, ast.Attribute: Interpreter._e_attribute,
    ast.Subscript: Interpreter._e_subscript, ast.BinOp: Interpreter._e_binop, ast.UnaryOp: Interpreter._e_unaryop,
    ast.BoolOp: Interpreter._e_boolop, ast.Compare: Interpreter._e_compare, ast.IfExp: Interpreter._e_ifexp,
    ast.Tuple: Interpreter._e_tuple, ast.List: Interpreter._e_tuple, ast.Set: Interpreter._e_set,
    ast.Dict: Interpreter._e_dict, ast.JoinedStr: Interpreter._e_joinedstr, ast.Lambda: Interpreter._e_lambda,
    ast.NamedExpr: Interpreter._e_namedexpr, ast.Starred: Interpreter._e_starred, ast.Slice: Interpreter._e_slice,
    ast.Await: Interpreter._e_await, ast.Yield: Interpreter._e_yield, ast.YieldFrom: Interpreter._e_yield,
    ast.Call: Interpreter._e_call, ast.ListComp: Interpreter._e_comprehension,
    ast.SetComp: Interpreter._e_comprehension, ast.GeneratorExp: Interpreter._e_comprehension,
    ast.DictComp: Interpreter._e_comprehension,
}
