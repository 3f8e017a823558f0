"""trace's per-op recorder and line coverage; runs inside the traced script (see instrument.py).

:class:`Tracer` keeps one record per (op, user file, line) for every op that reads or writes
float16/bfloat16 tensors: dtypes, autocast state, fills whose value overflows (silent or raised:
caught, recorded, re-raised), tiny eps added to float16 values, the exp/square outputs feeding a
reduction on the same line; and on a sample of the calls (1-4, then powers of two) inf/NaN that
first appear (inputs finite), zeros out of nonzero operands, and the input range. Optimizers are
recorded with their construction line, eps and parameter dtypes. ``call_tracer`` records the user
lines that ran. amp_lint.runtime.trace turns the records into hazards.
"""
from __future__ import annotations

import math
import re
import weakref
from typing import Any, Dict, List, Optional

from amp_lint.runtime.instrument import (
    _R, _grad_state, _optimizer_params, _any_nonfinite, _should_check_step, _user_cache, is_user_file, user_site,
)

_MAX_OP_RECORDS = 5000
_OVERFLOW_RE = re.compile(r"cannot be converted to type (?:c10|at)::(Half|BFloat16) without overflow")

_FILL_OPS = frozenset({"masked_fill", "fill", "full", "full_like", "new_full", "__setitem__", "index_fill",
                       "where", "index_put"})
_EPS_OPS = frozenset({"add", "__add__", "__radd__", "__iadd__", "sub", "__sub__", "__rsub__", "__isub__",
                      "clamp", "clamp_min", "rsub"})
#: Ops whose exact result is nonzero when every operand is: a zero out of nonzero operands is an
#: underflow. (exp and sigmoid are left out: 0 is their intended limit, e.g. in a masked softmax.)
_UNDERFLOW_OPS = frozenset({"mul", "__mul__", "__rmul__", "__imul__", "div", "__truediv__", "__rtruediv__",
                            "__itruediv__", "pow", "square", "rsqrt", "reciprocal"})
_INPLACE_DUNDER = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__", "__setitem__"})


class Tracer:
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
                "in_optimizer": None if optimizer is None else opt_key(optimizer),
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


def opt_key(optimizer: Any) -> str:
    site = getattr(optimizer, "_amp_lint_site", None)
    return "%s@%s:%s" % (type(optimizer).__name__, site[0] if site else "?", site[1] if site else 0)


def optimizer_before(optimizer: Any) -> None:
    """Trace: an optimizer's eps against the dtype of its parameters (AMP302 at its construction line)."""
    tracer = _R["trace"]
    key = opt_key(optimizer)
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


def optimizer_after(optimizer: Any, index: int) -> None:
    info = _R["trace"].optimizers.get(opt_key(optimizer))
    if info is not None and info["params_nonfinite_step"] is None and _should_check_step(index):
        if _any_nonfinite(_optimizer_params(optimizer)):
            info["params_nonfinite_step"] = index


# -- line coverage ---------------------------------------------------------------------------------

LINES: Dict[str, set] = {}


def _line_tracer(frame, event, arg):
    if event == "line":
        LINES[frame.f_code.co_filename].add(frame.f_lineno)
    return _line_tracer


def call_tracer(frame, event, arg):
    filename = frame.f_code.co_filename
    user = _user_cache.get(filename)
    if user is None:
        user = is_user_file(filename)
    if not user:
        return None
    lines = LINES.get(filename)
    if lines is None:
        lines = LINES[filename] = set()
    lines.add(frame.f_lineno)
    return _line_tracer
