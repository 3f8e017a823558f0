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
  recorded, re-raised), and, with a ``sys.settrace`` line tracer, the user lines that ran.

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
import re
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
_MAX_OP_RECORDS = 5000
_MAX_NAMES = 50
_SNAPSHOT_MAX_ELEMENTS = 200_000_000
_OVERFLOW_RE = re.compile(r"cannot be converted to type (?:c10|at)::(Half|BFloat16) without overflow")

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
               "update_due": False, "optimizer": None, "disabled_depth": 0}
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
        if _grad_state["update_due"]:
            _R["scaler_steps_without_update"] += 1
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
            _trace_optimizer(optimizer, index)

    def _post_step(optimizer, args, kwargs):
        _grad_state["optimizer"] = None
        _R["optimizer_steps"] += 1
        _event("optimizer_step")
        if _CFG["trace"]:
            _trace_optimizer_after(optimizer, _R["steps_total"] + 1)
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
    tracer = _Tracer(torch) if _CFG["trace"] else None
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


# -- trace ---------------------------------------------------------------------------------------

_FILL_OPS = frozenset({"masked_fill", "fill", "full", "full_like", "new_full", "__setitem__", "index_fill",
                       "where", "index_put"})
_EPS_OPS = frozenset({"add", "__add__", "__radd__", "__iadd__", "sub", "__sub__", "__rsub__", "__isub__",
                      "clamp", "clamp_min", "rsub"})
#: Ops whose exact result is nonzero when every operand is: a zero out of nonzero operands is an
#: underflow. (exp and sigmoid are left out: 0 is their intended limit, e.g. in a masked softmax.)
_UNDERFLOW_OPS = frozenset({"mul", "__mul__", "__rmul__", "__imul__", "div", "__truediv__", "__rtruediv__",
                            "__itruediv__", "pow", "square", "rsqrt", "reciprocal"})
_INPLACE_DUNDER = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__", "__setitem__"})


class _Tracer:
    """Per-op records for ``trace``: keyed by (op, user file, line); numerics checked on a sample."""

    def __init__(self, torch: Any) -> None:
        from amp_lint.data import numerics
        from amp_lint.data import ops as opdata

        self.torch = torch
        self.numerics = numerics
        self.records: Dict[tuple, Dict[str, Any]] = {}
        self.produced: Dict[int, tuple] = {}
        self.optimizers: Dict[int, Dict[str, Any]] = {}
        self.calls = 0
        self.checked = 0
        self.dropped = 0
        self.reductions = frozenset(opdata.REDUCTIONS)
        self.exp_ops = opdata.EXP_OPS
        self.power_ops = opdata.POWER_OPS
        self.low = (torch.float16, torch.bfloat16)
        _R["trace"] = self

    # - helpers -
    def _tensors(self, args: tuple, kwargs: dict) -> List[Any]:
        Tensor = self.torch.Tensor
        out = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                out.append(a)
            elif isinstance(a, (list, tuple)):
                out.extend(x for x in a if isinstance(x, Tensor))
        return out

    def _low_dtype(self, tensors: List[Any]) -> Optional[Any]:
        low = self.low
        for t in tensors:
            if t.dtype in low:
                return t.dtype
        return None

    @staticmethod
    def _scalars(args: tuple, kwargs: dict) -> List[float]:
        return [float(a) for a in list(args) + list(kwargs.values())
                if isinstance(a, (int, float)) and not isinstance(a, bool)]

    def _record(self, name: str, depth: int) -> Optional[Dict[str, Any]]:
        site = user_site(depth)
        if site is None:
            return None
        key = (name, site[0], site[1])
        rec = self.records.get(key)
        if rec is None:
            if len(self.records) >= _MAX_OP_RECORDS:
                self.dropped += 1
                return None
            optimizer = _grad_state["optimizer"]
            rec = self.records[key] = {
                "op": name, "file": site[0], "line": site[1], "function": site[2], "calls": 0, "checked": 0,
                "in": [], "out": [], "autocast": [], "first_step": _R["steps_total"] + 1,
                "in_optimizer": None if optimizer is None else _opt_key(optimizer),
                "nonfinite_new": 0, "nonfinite_step": None, "zeros_new": 0, "max_zero_fraction": 0.0,
                "max_in": None, "max_abs_in": None, "exponent": None, "fed_by": [], "feeds": [],
                "fill_value": None, "raised": None, "eps": None, "_out_seen": set(),
            }
        rec["calls"] += 1
        return rec

    def _autocast_state(self) -> str:
        torch = self.torch
        states = []
        for device in ("cpu", "cuda"):
            try:
                if torch.is_autocast_enabled(device):
                    states.append("%s:%s" % (device, str(torch.get_autocast_dtype(device)).replace("torch.", "")))
            except Exception:
                pass
        return ",".join(states) or "off"

    @staticmethod
    def _dtype(t: Any) -> str:
        return str(t.dtype).replace("torch.", "")

    def _finite(self, tensors: List[Any]) -> bool:
        isfinite = self.torch.isfinite
        return all(bool(isfinite(t).all()) for t in tensors if t.is_floating_point() and t.numel())

    @staticmethod
    def _nonzero(tensors: List[Any]) -> List[Any]:
        return [t != 0 for t in tensors if t.is_floating_point()]

    # - the call -
    def call(self, func: Any, name: str, args: tuple, kwargs: dict) -> Any:
        self.calls += 1
        inputs = self._tensors(args, kwargs)
        low = self._low_dtype(inputs)
        inplace = name in _INPLACE_DUNDER or (name.endswith("_") and not name.startswith("__"))
        base = name[:-1] if inplace and not name.startswith("__") else name
        rec = None
        check = False
        pre_finite = pre_nonzero = None
        if low is not None and inplace and inputs:
            rec = self._record(name, 4)
            check = rec is not None and self._sample(rec)
            if check:
                pre_finite = self._finite(inputs)
                pre_nonzero = self._nonzero(inputs) if base in _UNDERFLOW_OPS else None
        try:
            out = func(*args, **kwargs)
        except RuntimeError as exc:
            match = _OVERFLOW_RE.search(str(exc))
            if match:
                rec = rec or self._record(name, 4)
                if rec is not None:
                    value = self._big_scalar(args, kwargs)
                    rec["fill_value"] = value
                    rec["raised"] = str(exc).strip().splitlines()[0]
                    rec["out"] = sorted(set(rec["out"]) | {"float16" if match.group(1) == "Half" else "bfloat16"})
                    rec["autocast"] = sorted(set(rec["autocast"]) | {self._autocast_state()})
            raise
        Tensor = self.torch.Tensor
        if inplace:
            outputs = [args[0]] if args and isinstance(args[0], Tensor) else []
        elif isinstance(out, Tensor):
            outputs = [out]
        elif isinstance(out, (list, tuple)):
            outputs = [o for o in out if isinstance(o, Tensor)]
        else:
            outputs = []
        out_low = self._low_dtype(outputs)
        if low is None and out_low is None:
            return out
        if rec is None:
            rec = self._record(name, 4)
            if rec is None:
                return out
            check = self._sample(rec)
        self._always(rec, base, name, args, kwargs, inputs, outputs, low or out_low)
        if check:
            self.checked += 1
            rec["checked"] += 1
            self._check(rec, base, args, inputs, outputs, inplace, pre_finite, pre_nonzero)
        return out

    @staticmethod
    def _sample(rec: Dict[str, Any]) -> bool:
        calls = rec["calls"]
        return calls <= 4 or (calls & (calls - 1)) == 0

    def _always(self, rec, base, name, args, kwargs, inputs, outputs, low) -> None:
        """Cheap facts recorded on every call: dtypes, autocast, scalars, provenance."""
        seen = rec["_out_seen"]
        for t in outputs:
            if t.dtype not in seen:
                seen.add(t.dtype)
                rec["out"] = sorted(set(rec["out"]) | {self._dtype(t)})
        if not rec["in"]:
            rec["in"] = [self._dtype(t) for t in inputs[:4]]
        state = self._autocast_state()
        if state not in rec["autocast"]:
            rec["autocast"].append(state)
        numerics = self.numerics
        if base in _FILL_OPS and low == self.torch.float16:
            value = self._big_scalar(args, kwargs)
            if value is not None and numerics.overflows(value, "f16"):
                rec["fill_value"] = value
        if base in _EPS_OPS and low == self.torch.float16:
            for s in self._scalars(args, kwargs):
                if s and numerics.underflows(abs(s), "f16"):
                    rec["eps"] = s
        if base == "normalize" and low == self.torch.float16:
            eps = kwargs.get("eps", args[3] if len(args) > 3 else 1e-12)
            if isinstance(eps, (int, float)) and numerics.underflows(float(eps), "f16"):
                rec["eps"] = float(eps)
        if base == "pow" and len(args) > 1 and isinstance(args[1], (int, float)):
            rec["exponent"] = float(args[1])
        elif base == "square":
            rec["exponent"] = 2.0
        # provenance: exp / square outputs feeding a reduction on the same line
        kind = "exp" if base in self.exp_ops else ("square" if base in self.power_ops and rec["exponent"] == 2.0
                                                  else None)
        if kind is not None and outputs:
            if len(self.produced) > 256:
                self.produced.clear()
            self.produced[id(outputs[0])] = (kind, rec["file"], rec["line"], weakref.ref(outputs[0]), rec)
        elif base in self.reductions and inputs:
            entry = self.produced.get(id(inputs[0]))
            if entry is not None and entry[3]() is inputs[0] and entry[1:3] == (rec["file"], rec["line"]):
                if entry[0] not in rec["fed_by"]:
                    rec["fed_by"].append(entry[0])
                if base not in entry[4]["feeds"]:
                    entry[4]["feeds"].append(base)

    def _check(self, rec, base, args, inputs, outputs, inplace, pre_finite, pre_nonzero) -> None:
        """Numeric facts on a sampled call: new inf/NaN, new zeros, the input range."""
        scalars_finite = all(math.isfinite(s) for s in self._scalars(args, {}))
        in_finite = pre_finite if inplace else self._finite(inputs)
        in_finite = bool(in_finite) and scalars_finite
        out_finite = self._finite(outputs)
        if in_finite and not out_finite:
            rec["nonfinite_new"] += 1
            if rec["nonfinite_step"] is None:
                rec["nonfinite_step"] = _R["steps_total"] + 1
        if base in _UNDERFLOW_OPS and in_finite and out_finite and outputs and outputs[0].is_floating_point() \
                and all(s != 0 for s in self._scalars(args, {})):
            nonzero = pre_nonzero if inplace else self._nonzero(inputs)
            try:
                new_zeros = outputs[0] == 0
                for mask in nonzero or ():
                    new_zeros = new_zeros & mask
                count = int(new_zeros.sum())
            except RuntimeError:  # operands that do not broadcast to the result
                count = 0
            if count:
                rec["zeros_new"] += 1
                rec["max_zero_fraction"] = max(rec["max_zero_fraction"], count / outputs[0].numel())
        if (base in self.exp_ops or base in self.power_ops) and inputs and inputs[0].is_floating_point() \
                and inputs[0].numel():
            x = inputs[0].detach()
            finite = x[self.torch.isfinite(x)]
            if finite.numel():
                top = float(finite.max())
                big = float(finite.abs().max())
                rec["max_in"] = top if rec["max_in"] is None else max(rec["max_in"], top)
                rec["max_abs_in"] = big if rec["max_abs_in"] is None else max(rec["max_abs_in"], big)

    @staticmethod
    def _big_scalar(args: tuple, kwargs: dict) -> Optional[float]:
        """The Python number of largest magnitude among the arguments (a fill value)."""
        best = None
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (int, float)) and not isinstance(a, bool):
                value = float(a)
                if math.isfinite(value) and (best is None or abs(value) > abs(best)):
                    best = value
        return best

    def report(self) -> Dict[str, Any]:
        ops = []
        for rec in self.records.values():
            ops.append({k: v for k, v in rec.items() if not k.startswith("_")})
        return {"ops": ops, "optimizers": list(self.optimizers.values()), "calls": self.calls,
                "checked": self.checked, "dropped_records": self.dropped}


def _opt_key(optimizer: Any) -> str:
    site = getattr(optimizer, "_amp_lint_site", None)
    return "%s@%s:%s" % (type(optimizer).__name__, site[0] if site else "?", site[1] if site else 0)


def _trace_optimizer(optimizer: Any, index: int) -> None:
    """Trace: an optimizer's eps against the dtype of its parameters (AMP302 at its construction line)."""
    tracer = _R["trace"]
    key = _opt_key(optimizer)
    info = tracer.optimizers.get(key)
    if info is None:
        site = getattr(optimizer, "_amp_lint_site", None)
        dtypes = sorted({str(p.dtype).replace("torch.", "") for p in _optimizer_params(optimizer)})
        eps_values = sorted({g.get("eps") for g in optimizer.param_groups if isinstance(g.get("eps"), float)})
        fused = any(bool(g.get("fused")) for g in optimizer.param_groups)
        info = tracer.optimizers[key] = {
            "key": key, "class": type(optimizer).__name__, "file": site[0] if site else None,
            "line": site[1] if site else None, "param_dtypes": dtypes, "eps": eps_values, "fused": fused,
            "steps": 0, "params_nonfinite_step": None,
        }
    info["steps"] += 1


def _trace_optimizer_after(optimizer: Any, index: int) -> None:
    info = _R["trace"].optimizers.get(_opt_key(optimizer))
    if info is not None and info["params_nonfinite_step"] is None and _should_check_step(index):
        if _any_nonfinite(_optimizer_params(optimizer)):
            info["params_nonfinite_step"] = index


# -- line coverage (trace) -----------------------------------------------------------------------

_lines: Dict[str, set] = {}


def _line_tracer(frame, event, arg):
    if event == "line":
        _lines[frame.f_code.co_filename].add(frame.f_lineno)
    return _line_tracer


def _call_tracer(frame, event, arg):
    filename = frame.f_code.co_filename
    user = _user_cache.get(filename)
    if user is None:
        user = is_user_file(filename)
    if not user:
        return None
    lines = _lines.get(filename)
    if lines is None:
        lines = _lines[filename] = set()
    lines.add(frame.f_lineno)
    return _line_tracer


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
        _R["trace"] = tracer.report() if isinstance(tracer, _Tracer) else {"ops": [], "optimizers": []}
        _R["trace"]["lines"] = {f: sorted(v) for f, v in _lines.items()}
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
        sys.settrace(_call_tracer)

