"""Run-time instrumentation, loaded *inside* the interpreter of the script under test.

Never imported by ``check``/``fix``, and it imports torch only when the script does:
``amp_lint/runtime/_site/sitecustomize.py`` calls :func:`boot` at interpreter start-up; boot
arranges for :func:`install` to patch torch right after ``import torch`` finishes, and writes the
record as JSON to ``$AMP_LINT_RUNTIME_REPORT`` at exit (or when the step limit stops the run).

What is recorded:

* ``torch.autocast`` entered (device, dtype, enabled); ``GradScaler`` created and its
  ``scale``/``unscale_``/``step``/``update`` calls; ``backward`` (through ``scaler.scale`` or
  not); ``clip_grad_norm_`` (after ``unscale_`` or on still-scaled gradients); optimizer steps
  (a global post-step hook) and the steps a GradScaler skipped; protocol violations with the
  user source line where they happened.
* Per step (one optimizer step or one step the scaler skipped): the loss (sum of the losses
  backpropagated since the previous step, so gradient accumulation adds up its micro-batches),
  the scale after ``update``, skipped, and inf/NaN in the loss, the gradients or the parameters;
  at exit, the parameters that never changed.
* Through a ``TorchFunctionMode`` pushed at import: every matmul-like op of the training forward
  (the ops autocast runs in lower precision, from ``amp_lint.data.ops``) inside or outside an
  enabled autocast; with ``$AMP_LINT_RUNTIME_TRACE=1`` also every op that reads or writes
  float16/bfloat16 tensors, keyed by op and the innermost source line in the user's code: dtypes,
  autocast state, new inf/NaN (the inputs were finite), new zeros, fills that overflow (caught,
  recorded, re-raised), and, with a ``sys.settrace`` line tracer, the user lines that ran
  (:mod:`amp_lint.runtime.optrace`).

Device (``$AMP_LINT_RUNTIME_DEVICE``): ``cuda`` runs as is (and stops with a message when CUDA is
missing). ``cpu`` (the parent also hides GPUs) and ``auto`` without CUDA map CUDA mixed precision
onto the CPU in real float16: ``autocast("cuda")``/``torch.cuda.amp.autocast()`` enter
``autocast("cpu", dtype=<its dtype, float16 by default>)`` and ``GradScaler("cuda")`` becomes
``GradScaler("cpu")``. Tensors a script places on CUDA are not moved: such a script fails, and
the parent reports that it needs CUDA.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import math
import os
import sys
import sysconfig
import weakref
from typing import Any, Dict, List, Optional, Tuple

REPORT_ENV = "AMP_LINT_RUNTIME_REPORT"
FORCE_FP32_ENV = "AMP_LINT_RUNTIME_FORCE_FP32"
MAX_STEPS_ENV = "AMP_LINT_RUNTIME_MAX_STEPS"
DEVICE_ENV = "AMP_LINT_RUNTIME_DEVICE"
TRACE_ENV = "AMP_LINT_RUNTIME_TRACE"
SEED_ENV = "AMP_LINT_RUNTIME_SEED"
#: Comma-separated step numbers a (force-fp32) run skips, as its fp16 twin's GradScaler did.
SKIP_STEPS_ENV = "AMP_LINT_RUNTIME_SKIP_STEPS"
OWNER_ENV = "AMP_LINT_RUNTIME_OWNER_PID"
#: Exit status of a run stopped because ``--device cuda`` was asked for and CUDA is missing.
EXIT_NO_CUDA = 97

_MAX_EVENTS = 400
_MAX_STEP_RECORDS = 2000
_MAX_NAMES = 50
_SNAPSHOT_MAX_ELEMENTS = 200_000_000

_R: Dict[str, Any] = {
    "instrumented": False,
    "instrumentation_error": None,
    "torch_version": None,
    "force_fp32": False,
    "device": {"requested": "auto", "used": None, "cuda_available": None, "mapped": 0},
    "autocast_enters": 0,
    "autocast": [],
    "matmul_outputs_in_autocast": {},
    "fp16_matmul_in_autocast": False,
    "forward": {"autocast": 0, "outside": 0, "disabled_region": 0, "dtypes": {}, "outside_dtypes": {},
                "first_outside": None},
    "scalers": [],
    "scaler_calls": {},
    "scaler_enabled_calls": {},
    "skipped_steps": 0,
    "replayed_skips": 0,
    "final_scale": None,
    "optimizer_steps": 0,
    "direct_optimizer_steps": 0,
    "first_direct_optimizer_step": None,
    "scaler_steps_without_update": 0,
    "backward_calls": 0,
    "scaled_backward_calls": 0,
    "first_unscaled_backward": None,
    "clip_grad_norm_calls": 0,
    "clip_after_unscale": 0,
    "clip_while_scaled": 0,
    "first_clip_while_scaled": None,
    "steps": [],
    "steps_total": 0,
    "stopped_after_steps": None,
    "params": None,
    "events": [],
    "events_total": 0,
    "uncaught_exception": None,
    "apex": {"imported": False, "file": None, "is_stub": False},
    "trace": None,
}

_CFG: Dict[str, Any] = {"force_fp32": False, "max_steps": 0, "device": "auto", "trace": False, "seed": None,
                        "report": None, "owner": None, "map_cuda": False, "skip_steps": frozenset()}


class _Step:
    """Accumulators of the step in progress."""

    loss: Optional[float] = None
    micro_batches = 0
    nonfinite: set = set()

    @classmethod
    def reset(cls) -> None:
        cls.loss, cls.micro_batches, cls.nonfinite = None, 0, set()


_grad_state = {"scaled_pending": False, "unscaled": False, "in_scaler_step": False, "stop_after_update": False,
               "update_due": False, "optimizer": None, "disabled_depth": 0,
               # optimizers stepped through the scaler since its last update (several optimizers
               # may each step once per iteration before the one update)
               "stepped_since_update": set()}
_scaled_ids: Dict[int, Any] = {}
_snapshots: Dict[int, Tuple[Any, List[Any]]] = {}
_param_names: Dict[int, str] = {}
_autocast_index: Dict[tuple, int] = {}
_user_cache: Dict[str, bool] = {}
_excluded_prefixes: List[str] = []
_torch: Any = None
#: True while the instrumentation itself runs torch ops (the mode must not record those).
_internal = [False]


class _Quiet:
    """``with _Quiet():`` around the instrumentation's own torch calls."""

    def __enter__(self) -> None:
        self.outer = _internal[0]
        _internal[0] = True

    def __exit__(self, *exc: Any) -> None:
        _internal[0] = self.outer


# -- user code -----------------------------------------------------------------------------------

def _compute_excluded() -> List[str]:
    """Directories whose files are not the user's: the standard library, site-packages, amp-lint."""
    prefixes = set()
    for base in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        paths = sysconfig.get_paths(vars={"base": base, "platbase": base, "installed_base": base,
                                          "installed_platbase": base})
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                prefixes.add(os.path.realpath(paths[key]) + os.sep)
    prefixes.add(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep)
    return sorted(prefixes)


def is_user_file(filename: str) -> bool:
    """True for a real source file of the user's (not torch, the standard library, site-packages)."""
    cached = _user_cache.get(filename)
    if cached is not None:
        return cached
    result = True
    if not filename or filename.startswith("<"):
        result = False
    else:
        real = os.path.realpath(filename)
        parts = real.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            result = False
        elif any(real.startswith(prefix) for prefix in _excluded_prefixes):
            result = False
    _user_cache[filename] = result
    return result


def user_site(depth: int = 2) -> Optional[Tuple[str, int, str]]:
    """(file, line, function) of the innermost frame in user code above the caller, or None."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    cache = _user_cache
    while frame is not None:
        code = frame.f_code
        user = cache.get(code.co_filename)
        if user is None:
            user = is_user_file(code.co_filename)
        if user:
            return code.co_filename, frame.f_lineno, code.co_name
        frame = frame.f_back
    return None


def _site_dict(site: Optional[Tuple[str, int, str]]) -> Optional[Dict[str, Any]]:
    return None if site is None else {"file": site[0], "line": site[1], "function": site[2]}


def _event(name: str) -> None:
    _R["events_total"] += 1
    if len(_R["events"]) < _MAX_EVENTS:
        _R["events"].append(name)


# -- steps ---------------------------------------------------------------------------------------

def _add_loss(tensor: Any) -> None:
    try:
        with _Quiet():
            if tensor.numel() != 1:
                return
            value = float(tensor.detach().float().reshape(()))
    except Exception:
        return
    _Step.loss = value if _Step.loss is None else _Step.loss + value
    _Step.micro_batches += 1
    if not math.isfinite(value):
        _Step.nonfinite.add("loss")


def _any_nonfinite(tensors: List[Any]) -> bool:
    torch = _torch
    with _Quiet():
        for t in tensors:
            if t is not None and t.is_floating_point() and not bool(torch.isfinite(t).all()):
                return True
    return False


def _optimizer_params(optimizer: Any) -> List[Any]:
    return [p for group in getattr(optimizer, "param_groups", []) for p in group.get("params", [])]


def _should_check_step(index: int) -> bool:
    """Every step under verify; the first few and then powers of two under trace (bounded cost)."""
    if not _CFG["trace"]:
        return True
    return index <= 4 or (index & (index - 1)) == 0


def _snapshot(optimizer: Any) -> None:
    """Remember the parameters before the first step of ``optimizer`` (to find those never updated)."""
    if _CFG["trace"] or id(optimizer) in _snapshots:
        return
    params = _optimizer_params(optimizer)
    if sum(p.numel() for p in params) > _SNAPSHOT_MAX_ELEMENTS:
        _snapshots[id(optimizer)] = (weakref.ref(optimizer), [])
        _R["params"] = {"checked": False, "reason": "model too large to snapshot"}
        return
    _name_params(params)
    with _Quiet():
        _snapshots[id(optimizer)] = (weakref.ref(optimizer), [(p, p.detach().clone()) for p in params])


def _name_params(params: List[Any]) -> None:
    """Name parameters after the modules held by variables of the user's frames (``model.fc.weight``)."""
    torch = _torch
    wanted = {id(p) for p in params} - set(_param_names)
    if not wanted:
        return
    frame = sys._getframe(1)
    seen = set()
    while frame is not None and wanted:
        if is_user_file(frame.f_code.co_filename):
            for var, value in list(frame.f_locals.items()):
                if isinstance(value, torch.nn.Module) and id(value) not in seen:
                    seen.add(id(value))
                    for name, p in value.named_parameters():
                        if id(p) in wanted:
                            _param_names[id(p)] = f"{var}.{name}"
                            wanted.discard(id(p))
        frame = frame.f_back
    for index, p in enumerate(params):
        if id(p) in wanted:
            _param_names[id(p)] = f"param[{index}] {tuple(p.shape)}"


def _close_step(skipped: bool, optimizer: Any) -> None:
    """One step is done (taken or skipped): record it and stop if the step limit is reached."""
    _R["steps_total"] += 1
    index = _R["steps_total"]
    nonfinite = set(_Step.nonfinite)
    if not skipped and _should_check_step(index) and _any_nonfinite(_optimizer_params(optimizer)):
        nonfinite.add("params")
    if len(_R["steps"]) < _MAX_STEP_RECORDS:
        _R["steps"].append({"step": index, "loss": _Step.loss, "micro_batches": _Step.micro_batches,
                            "skipped": skipped, "scale": None, "nonfinite": sorted(nonfinite)})
    _Step.reset()
    limit = _CFG["max_steps"]
    if limit and index >= limit:
        if _grad_state["in_scaler_step"]:
            _grad_state["stop_after_update"] = True  # let scaler.update() record the new scale
        else:
            _stop()


def _stop() -> None:
    """End the run at the step limit: write the record and exit without running the script's cleanup."""
    _R["stopped_after_steps"] = _R["steps_total"]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    _write_report()
    os._exit(0)


def _check_pending_stop() -> None:
    """A step limit reached inside ``scaler.step`` whose ``update()`` never came: stop now."""
    if _grad_state["stop_after_update"]:
        _stop()


# -- install -------------------------------------------------------------------------------------

def install(torch: Any) -> None:
    """Patch ``torch`` (called once, right after it is imported)."""
    global _torch
    _torch = torch
    from torch.amp import autocast_mode, grad_scaler
    from torch.optim import optimizer as optimizer_mod

    import torch.nn.utils
    import torch.nn.utils.clip_grad

    from amp_lint.data import training as training_data

    _R["torch_version"] = str(torch.__version__)
    cuda = bool(torch.cuda.is_available())
    _R["device"]["cuda_available"] = cuda
    requested = _CFG["device"]
    if requested == "cuda" and not cuda:
        _R["device"]["error"] = "CUDA was requested (--device cuda) but torch.cuda.is_available() is False"
        sys.stderr.write("amp-lint: --device cuda, but CUDA is not available here\n")
        _stop_with(EXIT_NO_CUDA)
    _CFG["map_cuda"] = requested == "cpu" or (requested == "auto" and not cuda)
    _R["device"]["used"] = "cpu" if _CFG["map_cuda"] else "cuda"
    _seed(torch)
    if _CFG["force_fp32"]:
        # The fp32 reference: wholesale half casts left in the script become no-ops too.
        torch.nn.Module.half = torch.nn.Module.float
        torch.Tensor.half = torch.Tensor.float

    methods = training_data.SCALER_METHODS
    _R["scaler_calls"] = {name: 0 for name in methods}
    _R["scaler_enabled_calls"] = {name: 0 for name in methods}

    _install_autocast(torch, autocast_mode)
    _install_scaler(torch, grad_scaler, methods)
    _install_optimizer(torch, optimizer_mod)
    _install_backward_and_clip(torch)
    _install_mode(torch)
    _R["instrumented"] = True


def _stop_with(code: int) -> None:
    try:
        sys.stderr.flush()
    except Exception:
        pass
    _write_report()
    os._exit(code)


def _seed(torch: Any) -> None:
    seed = _CFG["seed"]
    if seed is None:
        return
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed(seed)
        except Exception:
            pass


def _install_autocast(torch: Any, autocast_mode: Any) -> None:
    Autocast = autocast_mode.autocast
    orig_init, orig_enter, orig_exit = Autocast.__init__, Autocast.__enter__, Autocast.__exit__

    def ac_init(self, device_type, *args, **kwargs):
        mapped_from = None
        if _CFG["map_cuda"] and device_type == "cuda":
            # CUDA mixed precision, run on the CPU in real float16 (see the module docstring).
            mapped_from = "cuda"
            device_type = "cpu"
            if len(args) >= 1:
                if args[0] is None:
                    args = (torch.float16,) + tuple(args[1:])
            elif kwargs.get("dtype") is None:
                kwargs["dtype"] = torch.float16
            _R["device"]["mapped"] += 1
        orig_init(self, device_type, *args, **kwargs)
        self._amp_lint_mapped_from = mapped_from
        self._amp_lint_requested_enabled = bool(getattr(self, "_enabled", True))
        if _CFG["force_fp32"]:
            self._enabled = False

    def ac_enter(self):
        _check_pending_stop()
        result = orig_enter(self)
        device = getattr(self, "device", None)
        dtype = str(getattr(self, "fast_dtype", None)).replace("torch.", "")
        enabled = bool(getattr(self, "_enabled", False))
        requested = getattr(self, "_amp_lint_requested_enabled", enabled)
        try:
            active = bool(torch.is_autocast_enabled(device))
            active_dtype = str(torch.get_autocast_dtype(device)).replace("torch.", "")
        except Exception:
            active, active_dtype = None, None
        key = (device, dtype, enabled, active, active_dtype, getattr(self, "_amp_lint_mapped_from", None))
        if key not in _autocast_index:
            _autocast_index[key] = len(_R["autocast"])
            _R["autocast"].append({
                "device_type": device, "dtype": dtype, "enabled": enabled, "requested_enabled": requested,
                "active_after_enter": active, "active_dtype": active_dtype, "count": 0,
                "mapped_from": getattr(self, "_amp_lint_mapped_from", None),
                "site": _site_dict(user_site(2)),
            })
        _R["autocast"][_autocast_index[key]]["count"] += 1
        _R["autocast_enters"] += 1
        _event("autocast:%s:%s:%s" % (device, dtype, "on" if enabled else "off"))
        deliberate_off = not requested
        self._amp_lint_stack = getattr(self, "_amp_lint_stack", []) + [deliberate_off]
        if deliberate_off:
            _grad_state["disabled_depth"] += 1
        return result

    def ac_exit(self, *exc):
        stack = getattr(self, "_amp_lint_stack", None)
        if stack and stack.pop():
            _grad_state["disabled_depth"] -= 1
        return orig_exit(self, *exc)

    Autocast.__init__ = ac_init
    Autocast.__enter__ = ac_enter
    Autocast.__exit__ = ac_exit


def _install_scaler(torch: Any, grad_scaler: Any, methods: Tuple[str, ...]) -> None:
    Scaler = grad_scaler.GradScaler
    orig = {name: getattr(Scaler, name) for name in ("__init__",) + tuple(methods)}

    def sc_init(self, device="cuda", *args, **kwargs):
        mapped_from = None
        if _CFG["map_cuda"] and device == "cuda":
            device, mapped_from = "cpu", "cuda"
            _R["device"]["mapped"] += 1
        orig["__init__"](self, device, *args, **kwargs)
        requested = bool(self._enabled)
        if _CFG["force_fp32"]:
            self._enabled = False
        _R["scalers"].append({"device": str(getattr(self, "_device", None)), "enabled": bool(self._enabled),
                              "requested_enabled": requested})
        if mapped_from:
            _R["scalers"][-1]["mapped_from"] = mapped_from
        _event("scaler_init:%s" % getattr(self, "_device", None))

    def _count(self, name):
        _R["scaler_calls"][name] += 1
        if self.is_enabled():
            _R["scaler_enabled_calls"][name] += 1
        _event(name)

    def sc_scale(self, outputs):
        _check_pending_stop()
        _count(self, "scale")
        if _torch.is_tensor(outputs):
            _add_loss(outputs)
        result = orig["scale"](self, outputs)
        for t in result if isinstance(result, (list, tuple)) else [result]:
            if _torch.is_tensor(t):
                _scaled_ids[id(t)] = weakref.ref(t)
        if self.is_enabled():
            _grad_state["scaled_pending"] = True
        return result

    def sc_unscale(self, optimizer):
        _count(self, "unscale_")
        _grad_state["unscaled"] = True
        return orig["unscale_"](self, optimizer)

    def sc_step(self, optimizer, *args, **kwargs):
        _check_pending_stop()
        _count(self, "step")
        if id(optimizer) in _grad_state["stepped_since_update"]:
            _R["scaler_steps_without_update"] += 1
        _grad_state["stepped_since_update"].add(id(optimizer))
        _snapshot(optimizer)
        if _R["steps_total"] + 1 in _CFG["skip_steps"]:
            # Replay a skip of the fp16 run, so that both runs update on the same steps.
            _R["replayed_skips"] += 1
            _grad_state["update_due"] = True
            _event("step_skipped_replayed")
            _close_step(skipped=True, optimizer=optimizer)
            return None
        before = _R["optimizer_steps"]
        _grad_state["in_scaler_step"] = True
        try:
            result = orig["step"](self, optimizer, *args, **kwargs)
        finally:
            _grad_state["in_scaler_step"] = False
        _grad_state["update_due"] = True
        if _R["optimizer_steps"] == before:
            if self.is_enabled():
                _R["skipped_steps"] += 1
                _event("step_skipped")
            _close_step(skipped=True, optimizer=optimizer)
        return result

    def sc_update(self, *args, **kwargs):
        _count(self, "update")
        result = orig["update"](self, *args, **kwargs)
        _grad_state.update(scaled_pending=False, unscaled=False, update_due=False)
        _grad_state["stepped_since_update"].clear()
        if self.is_enabled():
            with _Quiet():
                scale = float(self.get_scale())
            _R["final_scale"] = scale
            if _R["steps"] and _R["steps"][-1]["scale"] is None:
                _R["steps"][-1]["scale"] = scale
        if _grad_state["stop_after_update"]:
            _stop()
        return result

    Scaler.__init__ = sc_init
    Scaler.scale = sc_scale
    Scaler.unscale_ = sc_unscale
    Scaler.step = sc_step
    Scaler.update = sc_update


def _scaler_active() -> bool:
    return any(s["enabled"] for s in _R["scalers"])


def _install_optimizer(torch: Any, optimizer_mod: Any) -> None:
    Optimizer = optimizer_mod.Optimizer
    orig_init = Optimizer.__init__

    def opt_init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        self._amp_lint_site = user_site(2)

    Optimizer.__init__ = opt_init

    def _pre_step(optimizer, args, kwargs):
        _check_pending_stop()
        _snapshot(optimizer)
        _grad_state["optimizer"] = optimizer
        if not _grad_state["in_scaler_step"] and _scaler_active():
            _R["direct_optimizer_steps"] += 1
            if _R["first_direct_optimizer_step"] is None:
                _R["first_direct_optimizer_step"] = _site_dict(user_site(2))
        index = _R["steps_total"] + 1
        if _should_check_step(index):
            grads = [p.grad for p in _optimizer_params(optimizer)]
            if _any_nonfinite(grads):
                _Step.nonfinite.add("grads")
        if _CFG["trace"]:
            optrace.optimizer_before(optimizer)

    def _post_step(optimizer, args, kwargs):
        _grad_state["optimizer"] = None
        _R["optimizer_steps"] += 1
        _event("optimizer_step")
        if _CFG["trace"]:
            optrace.optimizer_after(optimizer, _R["steps_total"] + 1)
        _close_step(skipped=False, optimizer=optimizer)

    optimizer_mod.register_optimizer_step_pre_hook(_pre_step)
    optimizer_mod.register_optimizer_step_post_hook(_post_step)


def _install_backward_and_clip(torch: Any) -> None:
    orig_backward = torch.Tensor.backward

    reentered = [False]

    def backward(self, *args, **kwargs):
        if reentered[0]:  # Tensor.backward dispatches to itself again through the TorchFunctionMode
            return orig_backward(self, *args, **kwargs)
        _check_pending_stop()
        _R["backward_calls"] += 1
        ref = _scaled_ids.pop(id(self), None)
        if ref is not None and ref() is self:
            _R["scaled_backward_calls"] += 1
            _event("backward_scaled")
        else:
            _add_loss(self)
            _event("backward")
            if _R["first_unscaled_backward"] is None:
                _R["first_unscaled_backward"] = _site_dict(user_site(2))
        reentered[0] = True
        try:
            return orig_backward(self, *args, **kwargs)
        finally:
            reentered[0] = False

    torch.Tensor.backward = backward

    orig_clip = torch.nn.utils.clip_grad.clip_grad_norm_

    def clip_grad_norm_(*args, **kwargs):
        _R["clip_grad_norm_calls"] += 1
        if _grad_state["unscaled"]:
            _R["clip_after_unscale"] += 1
        elif _grad_state["scaled_pending"]:
            _R["clip_while_scaled"] += 1
            if _R["first_clip_while_scaled"] is None:
                _R["first_clip_while_scaled"] = _site_dict(user_site(2))
        _event("clip_grad_norm_")
        return orig_clip(*args, **kwargs)

    torch.nn.utils.clip_grad.clip_grad_norm_ = clip_grad_norm_
    torch.nn.utils.clip_grad_norm_ = clip_grad_norm_


# -- the TorchFunctionMode -----------------------------------------------------------------------

#: Ops the mode passes through untouched: attribute reads, shapes, views, casts, bookkeeping.
_PASS = frozenset({
    "__get__", "__set__", "size", "dim", "numel", "stride", "is_floating_point", "is_complex", "data_ptr",
    "__len__", "__bool__", "__hash__", "__index__", "__int__", "__float__", "item", "tolist", "__format__",
    "__repr__", "__iter__", "__contains__", "__reduce_ex__", "__deepcopy__", "__setstate__", "requires_grad_",
    "register_hook", "backward", "retain_grad", "is_contiguous", "element_size", "get_device", "__array__",
    "numpy", "detach", "detach_", "cpu", "cuda", "to", "float", "half", "double", "bfloat16", "type_as",
    "type", "contiguous", "clone", "view", "view_as", "reshape", "reshape_as", "transpose", "t", "permute",
    "unsqueeze", "squeeze", "flatten", "expand", "expand_as", "split", "chunk", "unbind", "narrow", "select",
    "__getitem__", "storage_offset", "untyped_storage", "_is_view", "dtype", "device", "shape",
})


def _op_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    for prefix in ("linalg_", "special_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


_names: Dict[Any, str] = {}


def _install_mode(torch: Any) -> None:
    from torch.overrides import TorchFunctionMode

    from amp_lint.data import ops as opdata

    lower = {device: frozenset(n for n in opdata.OPS if opdata.policy(n, device) == opdata.LOWER)
             for device in ("cpu", "cuda")}
    lower_any = lower["cpu"] | lower["cuda"]
    tracer = optrace.Tracer(torch) if _CFG["trace"] else None
    Tensor = torch.Tensor
    is_grad_enabled = torch.is_grad_enabled
    is_autocast_enabled = torch.is_autocast_enabled

    def forward_op(name: str, args: tuple, out: Any) -> None:
        first = next((a for a in args if isinstance(a, Tensor)), None)
        if first is None or not isinstance(out, Tensor):
            return
        device = first.device.type
        if name not in lower.get(device, lower["cuda"]):
            return
        if is_autocast_enabled(device):
            key = "%s:%s" % (device, str(out.dtype).replace("torch.", ""))
            counts = _R["matmul_outputs_in_autocast"]
            counts[key] = counts.get(key, 0) + 1
            if out.dtype == torch.float16:
                _R["fp16_matmul_in_autocast"] = True
        if not (is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)):
            return  # not a training forward (no_grad / inference / optimizer)
        forward = _R["forward"]
        if is_autocast_enabled(device):
            forward["autocast"] += 1
            key = "%s:%s" % (device, str(out.dtype).replace("torch.", ""))
            forward["dtypes"][key] = forward["dtypes"].get(key, 0) + 1
        elif _grad_state["disabled_depth"] > 0:
            forward["disabled_region"] += 1
        else:
            forward["outside"] += 1
            key = str(out.dtype).replace("torch.", "")
            forward["outside_dtypes"][key] = forward["outside_dtypes"].get(key, 0) + 1
            if forward["first_outside"] is None:
                forward["first_outside"] = _site_dict(user_site(3))

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if _internal[0]:
                return func(*args, **kwargs)
            name = _names.get(func)
            if name is None:
                name = _names[func] = _op_name(func)
            if name in _PASS:
                return func(*args, **kwargs)
            if tracer is not None:
                out = tracer.call(func, name, args, kwargs)
            else:
                out = func(*args, **kwargs)
            if name in lower_any:
                forward_op(name, args, out)
            return out

    Recorder().__enter__()


# -- start-up and exit ---------------------------------------------------------------------------

class _TorchImportHook:
    """A meta-path finder that lets torch import normally, then patches it."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        orig_exec = spec.loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                install(module)
            except Exception as exc:  # never break the script under test
                _R["instrumentation_error"] = "%s: %s" % (type(exc).__name__, exc)

        spec.loader.exec_module = exec_module
        return spec


def _excepthook(exc_type, exc, tb, _orig=sys.excepthook):
    text = str(exc).strip().splitlines()
    _R["uncaught_exception"] = "%s: %s" % (exc_type.__name__, text[0] if text else "")
    return _orig(exc_type, exc, tb)


def _finish_params() -> None:
    if _R["params"] is not None or not _snapshots:
        return
    torch = _torch
    total, changed, unchanged = 0, 0, []
    for ref, pairs in _snapshots.values():
        for p, before in pairs:
            total += 1
            with _Quiet():
                same = bool(torch.equal(p.detach(), before))
            if same:
                if len(unchanged) < _MAX_NAMES:
                    unchanged.append(_param_names.get(id(p), "?"))
            else:
                changed += 1
    _R["params"] = {"checked": True, "total": total, "changed": changed, "unchanged": unchanged}


_written = [False]


def _write_report() -> None:
    if _written[0] or str(os.getpid()) != _CFG["owner"]:
        return
    _written[0] = True
    try:
        if _torch is not None:
            _finish_params()
    except Exception as exc:
        _R["instrumentation_error"] = "params: %s: %s" % (type(exc).__name__, exc)
    apex = sys.modules.get("apex")
    if apex is not None:
        _R["apex"] = {"imported": True, "file": getattr(apex, "__file__", None),
                      "is_stub": bool(getattr(apex, "IS_AMP_LINT_STUB", False))}
    if _CFG["trace"]:
        sys.settrace(None)
        tracer = _R["trace"]
        _R["trace"] = tracer.report() if isinstance(tracer, optrace.Tracer) else {"ops": [], "optimizers": []}
        _R["trace"]["lines"] = {f: sorted(v) for f, v in optrace.LINES.items()}
    if _CFG["report"]:
        with open(_CFG["report"], "w", encoding="utf-8") as fh:
            json.dump(_R, fh, indent=1, sort_keys=True, default=str)


def boot() -> None:
    """Read the configuration from the environment and arrange for torch to be patched on import."""
    global _excluded_prefixes
    env = os.environ
    _CFG["report"] = env.get(REPORT_ENV)
    # Only the process the harness started writes the report: not forked DataLoader workers,
    # spawned children or subprocesses that inherit the environment.
    _CFG["owner"] = env.setdefault(OWNER_ENV, str(os.getpid()))
    _CFG["force_fp32"] = env.get(FORCE_FP32_ENV) == "1"
    _CFG["max_steps"] = int(env.get(MAX_STEPS_ENV) or 0)
    _CFG["device"] = env.get(DEVICE_ENV) or "auto"
    _CFG["trace"] = env.get(TRACE_ENV) == "1"
    seed = env.get(SEED_ENV)
    _CFG["seed"] = int(seed) if seed not in (None, "") else None
    _CFG["skip_steps"] = frozenset(int(s) for s in (env.get(SKIP_STEPS_ENV) or "").split(",") if s.strip())
    _R["force_fp32"] = _CFG["force_fp32"]
    _R["device"]["requested"] = _CFG["device"]
    _excluded_prefixes = _compute_excluded()
    if "torch" in sys.modules:
        install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook())
    sys.excepthook = _excepthook
    atexit.register(_write_report)
    if _CFG["trace"] and str(os.getpid()) == _CFG["owner"]:
        sys.settrace(optrace.call_tracer)


from amp_lint.runtime import optrace  # noqa: E402  (uses the state above)
