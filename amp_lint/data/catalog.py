"""The public rule catalog: every code amp-lint has given out, as data.

Codes and names are an interface (users write them in ``--select``, ``# noqa:`` and config),
so a code is never reused or renumbered. Each row says what the rule's severity and best fix
are, and where a finding is reported: the location is where a reader looks to act, so that
tools, editors and tests agree on it. Codes marked ``reserved`` are planned and not implemented
yet; they may already be named in a selection. ``tests/test_docs.py`` checks the implemented
rules against this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class CatalogEntry:
    """One code of the catalog."""

    code: str
    name: str
    #: ``error``, ``warning``, ``perf`` or ``migration``
    severity: str
    #: the best fix the rule offers: ``safe``, ``unsafe`` or ``none``
    fix: str
    #: where a finding is reported, in words
    reported_at: str
    #: a regular expression that the text of a finding's span matches (None: any expression)
    anchor: Optional[str] = None
    #: True for a planned rule that is not implemented yet
    reserved: bool = False
    #: False for an opinionated rule that runs only when selected by its code (as ruff keeps them
    #: out of its defaults); the rule classes read this, so a selection needs no rule imported
    on_by_default: bool = True


_BACKWARD = r"\.backward\(.*\)$"

CATALOG: Tuple[CatalogEntry, ...] = (
    CatalogEntry("AMP000", "syntax-error", "error", "none", "the position of the parse error"),
    # -- training loops and loss scaling
    CatalogEntry("AMP001", "fp32-training-loop", "migration", "unsafe",
                 "the loop's `.backward()` call, once per loop", _BACKWARD, on_by_default=False),
    CatalogEntry("AMP101", "half-model-training", "error", "unsafe",
                 "the call that casts the model (`.half()`, `.to(torch.float16)`, `from_pretrained(torch_dtype=...)`, "
                 "a layer built with `dtype=torch.float16`, a `torch.set_default_dtype(...)` it is built under, "
                 "or the call of a project function that casts the model it is given: `to_half(model)`; "
                 "for a framework, the call that casts it: Lightning Fabric's `fabric.setup(model, ...)` at a "
                 "\"true\" precision, a Lightning `Trainer(precision=\"bf16-true\")`)",
                 r"\.(half|bfloat16|to)\(.*\)$|from_pretrained\(|set_default_(dtype|tensor_type)\(|dtype=|"
                 r"^[\w.]+\([\w.]+\)$|\.setup(_module)?\(|precision="),
    CatalogEntry("AMP102", "backward-without-loss-scaling", "error", "unsafe",
                 "the loop's `.backward()` call, once per loop", _BACKWARD),
    CatalogEntry("AMP103", "incomplete-scaler-protocol", "error", "safe",
                 "the `opt.step()` that bypasses the scaler, or the `scaler.step(...)` without `update()`",
                 r"\.step\(.*\)$"),
    CatalogEntry("AMP104", "clip-before-unscale", "error", "safe", "the gradient-clipping call",
                 r"clip_grad_\w+\("),
    CatalogEntry("AMP106", "gradscaler-with-half-params", "error", "none", "the `GradScaler(...)` construction",
                 r"GradScaler\("),
    # -- ops in half precision
    CatalogEntry("AMP201", "softmax-in-fp16", "warning", "unsafe", "the softmax call"),
    CatalogEntry("AMP202", "loss-in-fp16", "error", "unsafe", "the loss call"),
    CatalogEntry("AMP203", "norm-or-reduction-in-fp16", "warning", "unsafe", "the reduction expression"),
    CatalogEntry("AMP204", "overflow-prone-pointwise-in-fp16", "warning", "unsafe", "the exp/pow expression"),
    # -- constants that do not fit half precision
    CatalogEntry("AMP301", "fp16-overflowing-constant", "error", "unsafe",
                 "the fill call, or the expression that adds the scaled mask (the scaled mask where it is "
                 "not added to a half tensor)"),
    CatalogEntry("AMP302", "fp16-underflowing-epsilon", "error", "unsafe",
                 "the optimizer construction, or the expression that adds the epsilon"),
    CatalogEntry("AMP303", "fill-value-from-wrong-dtype", "error", "safe", "the fill call"),
    # -- Tensor Core shapes
    CatalogEntry("AMP401", "unpadded-vocab", "perf", "unsafe", "the layer constructor (`nn.Linear(...)`, `nn.Embedding(...)`)",
                 r"(Linear|Embedding)\("),
    CatalogEntry("AMP402", "tensor-core-misaligned-dim", "perf", "unsafe", "the layer constructor",
                 r"(Linear|Conv\w*)\("),
    # -- deprecated APIs
    CatalogEntry("AMP501", "deprecated-cuda-amp-api", "migration", "safe",
                 "every call, decorator or reference of the old API, and an import of it that nothing uses",
                 r"autocast|GradScaler|custom_fwd|custom_bwd|amp"),
    CatalogEntry("AMP502", "apex-amp", "migration", "unsafe",
                 "every call or reference of apex's mixed-precision API, and an import of it that nothing uses",
                 r"amp|apex|FP16_Optimizer|network_to_half|SyncBatchNorm|DistributedDataParallel"),
    # -- planned (reserved) codes
    CatalogEntry("AMP105", "backward-inside-autocast", "warning", "none", "the `.backward()` call", reserved=True),
    CatalogEntry("AMP107", "gradscaler-grad-accumulation", "error", "none", "the scaler call run per micro-batch",
                 reserved=True),
    CatalogEntry("AMP108", "gradscaler-state-not-checkpointed", "warning", "unsafe", "the checkpoint save call",
                 reserved=True),
    CatalogEntry("AMP109", "scaler-update-per-optimizer", "error", "none", "the extra `scaler.update()` call",
                 reserved=True),
    CatalogEntry("AMP110", "fsdp-plain-gradscaler", "error", "safe", "the `GradScaler(...)` construction",
                 reserved=True),
    CatalogEntry("AMP205", "unsafe-bce-under-autocast", "error", "unsafe", "the binary cross-entropy call",
                 reserved=True),
    CatalogEntry("AMP206", "manual-half-cast-in-autocast", "warning", "safe", "the cast call", reserved=True),
    CatalogEntry("AMP207", "attention-scaled-after-matmul", "warning", "unsafe", "the scaling expression",
                 reserved=True),
    CatalogEntry("AMP208", "autocast-disabled-region-without-upcast", "warning", "safe",
                 "the use of the outside tensor", reserved=True),
    CatalogEntry("AMP209", "custom-function-without-custom-fwd", "warning", "safe", "the Function class",
                 reserved=True),
    CatalogEntry("AMP210", "rope-phase-in-low-precision", "warning", "unsafe", "the phase expression", reserved=True),
    CatalogEntry("AMP211", "integer-valued-tensor-in-low-precision", "error", "unsafe", "the tensor creation",
                 reserved=True),
    CatalogEntry("AMP213", "sdpa-float-mask-under-autocast", "warning", "unsafe", "the attention call",
                 reserved=True),
    CatalogEntry("AMP215", "half-model-on-cpu", "warning", "none", "the cast or the device move", reserved=True),
    CatalogEntry("AMP304", "neg-inf-mask-fully-masked-rows", "warning", "unsafe", "the fill call", reserved=True),
    CatalogEntry("AMP403", "batch-size-not-multiple-of-8", "perf", "none", "the `batch_size=` value", reserved=True),
    CatalogEntry("AMP503", "gradscaler-with-bfloat16", "migration", "unsafe", "the `GradScaler(...)` construction",
                 reserved=True),
)

CATALOG_BY_CODE: Dict[str, CatalogEntry] = {entry.code: entry for entry in CATALOG}

SYNTAX_ERROR_CODE = "AMP000"
SYNTAX_ERROR_NAME = CATALOG_BY_CODE[SYNTAX_ERROR_CODE].name

#: Codes planned and not implemented yet (selecting them is allowed).
RESERVED_CODES: Tuple[str, ...] = tuple(entry.code for entry in CATALOG if entry.reserved)

#: Implemented code -> on by default: all a selection needs, without importing a rule.
ON_BY_DEFAULT: Dict[str, bool] = {entry.code: entry.on_by_default for entry in CATALOG if not entry.reserved}
