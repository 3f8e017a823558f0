"""Deprecated AMP entry points and their replacements.

Sources: torch 2.13 ``torch/cuda/amp/*.py`` and ``torch/cpu/amp/*.py`` (FutureWarning texts, old
signatures); availability of the replacements from release behaviour: ``torch.amp.GradScaler``
since 2.3, ``torch.amp.custom_fwd/custom_bwd(device_type=...)`` since 2.4 (their docstrings in
torch/amp/grad_scaler.py and torch/amp/autocast_mode.py; https://pytorch.org/docs/stable/amp.html).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple


@dataclass(frozen=True)
class Deprecation:
    """One deprecated callable and how a call to it maps onto its replacement."""

    replacement: str
    device: str
    #: first torch version that has the replacement (gates the fix on ``torch-version``)
    available_since: str
    #: the old callable's positional parameters, in order, mapped to keywords in the new call
    old_positional: Tuple[str, ...]
    #: how the device is passed: "positional" (first argument) or "device_type" (keyword)
    device_arg: str = "positional"
    deprecated_since: str = "2.4"


_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")
_SCALER_ARGS = ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled")

DEPRECATED_AMP_APIS: Dict[str, Deprecation] = {}
for _module, _device in (("torch.cuda.amp", "cuda"), ("torch.cpu.amp", "cpu")):
    for _path in ("", ".autocast_mode"):
        DEPRECATED_AMP_APIS[f"{_module}{_path}.autocast"] = Deprecation(
            "torch.amp.autocast", _device, "1.10", _AUTOCAST_ARGS)
    for _path in ("", ".grad_scaler"):
        DEPRECATED_AMP_APIS[f"{_module}{_path}.GradScaler"] = Deprecation(
            "torch.amp.GradScaler", _device, "2.3", _SCALER_ARGS)
for _name in ("custom_fwd", "custom_bwd"):
    for _path in ("", ".autocast_mode"):
        DEPRECATED_AMP_APIS[f"torch.cuda.amp{_path}.{_name}"] = Deprecation(
            f"torch.amp.{_name}", "cuda", "2.4", ("fwd",) if _name == "custom_fwd" else ("bwd",),
            device_arg="device_type")

#: Modules whose import alone is deprecated (reported when nothing else in the file uses them).
DEPRECATED_AMP_MODULES = ("torch.cuda.amp", "torch.cpu.amp")

#: The first torch release in which any of the above warns: below it AMP501 reports nothing.
DEPRECATIONS_SINCE = min((d.deprecated_since for d in DEPRECATED_AMP_APIS.values()),
                         key=lambda v: tuple(int(p) for p in v.split(".")))

#: Modules of the replacement API: a ``try`` body importing from them is new-API code.
AMP_REPLACEMENT_MODULES = ("torch.amp", "torch.amp.autocast_mode", "torch.amp.grad_scaler")

#: What a missing or changed API raises on old torch (``torch.amp.GradScaler`` missing: AttributeError;
#: ``custom_fwd(device_type=...)`` unknown: TypeError; ``from torch.amp import ...``: ImportError).
#: An ``except`` branch catching one of these (or everything) after a ``try`` that uses the new API
#: is a compatibility fallback, which AMP501 leaves alone.
COMPAT_FALLBACK_EXCEPTIONS = frozenset({
    "ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "Exception", "BaseException",
})

#: apex mixed-precision entry points, removed from NVIDIA/apex in commit cb65b8ed (2025-05-08).
APEX_AMP_APIS: Dict[str, str] = {
    "apex.amp": "use torch.amp.autocast and torch.amp.GradScaler",
    "apex.amp.initialize": "drop it: keep the model in fp32 and wrap forward+loss in torch.autocast",
    "apex.amp.scale_loss": "use scaler.scale(loss).backward() with torch.amp.GradScaler",
    "apex.amp.master_params": "use the model's parameters after scaler.unscale_(optimizer)",
    "apex.amp.state_dict": "save scaler.state_dict() of torch.amp.GradScaler",
    "apex.amp.load_state_dict": "load scaler.load_state_dict() of torch.amp.GradScaler",
    "apex.fp16_utils": "use torch.amp.autocast and torch.amp.GradScaler",
    "apex.fp16_utils.FP16_Optimizer": "use torch.amp.GradScaler with an fp32 model",
    "apex.fp16_utils.network_to_half": "keep the model in fp32 and use torch.autocast",
    "apex.parallel": "use torch.nn.parallel.DistributedDataParallel",
    "apex.parallel.DistributedDataParallel": "use torch.nn.parallel.DistributedDataParallel",
    "apex.parallel.convert_syncbn_model": "use torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    "apex.parallel.SyncBatchNorm": "use torch.nn.SyncBatchNorm",
}
