"""Autocast casting policy per op and device, as data.

Sources (``../shared/reference/op-precision.md``):
- S1 ``torch/include/ATen/autocast_mode.h`` of the torch 2.13.0 wheel (CUDA/XPU lists: lower
  precision, fp32, fp32_set_opt_dtype, promote), sections 5 and 6.
- S2 pytorch/pytorch ``aten/src/ATen/autocast_mode.cpp`` (CPU registrations), sections 5 and 6.
- E  empirical CPU autocast output dtypes, torch 2.13.0+cpu, section 7.

Policies: ``LOWER`` (output in the autocast dtype), ``FP32`` (output float32), ``PROMOTE``
(widest input), ``None`` (unlisted: runs in the dtype of its inputs). ``OPS`` maps an op's
short name (as in ``torch.X``, ``torch.nn.functional.X`` or ``Tensor.X``) to
(CUDA/XPU policy, CPU policy).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

LOWER = "lower"
FP32 = "fp32"
PROMOTE = "promote"

_BOTH_LOWER = (LOWER, LOWER)
_CUDA_LOWER = (LOWER, None)
_CUDA_FP32 = (FP32, None)
_BOTH_FP32 = (FP32, FP32)

OPS: Dict[str, Tuple[Optional[str], Optional[str]]] = {
    # lower precision (S1; CPU per S2/E, einsum decomposes to bmm on CPU: E fp16 out)
    **{name: _BOTH_LOWER for name in (
        "matmul", "__matmul__", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "conv1d", "conv2d",
        "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "prelu",
        "scaled_dot_product_attention", "einsum", "vecdot",
    )},
    **{name: _CUDA_LOWER for name in ("mv", "addmv", "addr", "chain_matmul", "multi_dot")},
    # fp32 on CUDA/XPU only (S1); unlisted on CPU (S2, E section 7)
    **{name: _CUDA_FP32 for name in (
        "softmax", "log_softmax", "softmin", "exp", "expm1", "log", "log2", "log10", "log1p", "reciprocal",
        "rsqrt", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "pow", "__pow__", "__rpow__", "softplus",
        "layer_norm", "rms_norm", "group_norm", "normalize", "norm", "vector_norm", "matrix_norm",
        "frobenius_norm", "nuclear_norm", "renorm", "dist", "pdist", "sum", "cumsum", "cumprod",
        "logsumexp", "cosine_similarity", "interpolate", "upsample",
    )},
    # fp32 on both (S1 + S2: losses, prod, cdist)
    **{name: _BOTH_FP32 for name in (
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
        "poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss",
        "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "prod", "cdist",
    )},
    "ctc_loss": (None, FP32),
    # promote (S1 CUDA; CPU promotes cat/stack, S2)
    **{name: (PROMOTE, None) for name in ("addcmul", "addcdiv", "atan2", "cross", "dot", "tensordot", "bilinear")},
    "cat": (None, PROMOTE),
    "stack": (None, PROMOTE),
}

#: nn module classes and the op their forward runs (for ``self.proj = nn.Linear(...)`` submodules).
MODULE_OPS: Dict[str, str] = {
    "Linear": "linear", "Bilinear": "bilinear", "LazyLinear": "linear",
    "Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d",
    "ConvTranspose1d": "conv_transpose1d", "ConvTranspose2d": "conv_transpose2d",
    "ConvTranspose3d": "conv_transpose3d", "PReLU": "prelu",
    "Softmax": "softmax", "LogSoftmax": "log_softmax", "Softmin": "softmin",
    "LayerNorm": "layer_norm", "RMSNorm": "rms_norm", "GroupNorm": "group_norm",
    "CrossEntropyLoss": "cross_entropy", "NLLLoss": "nll_loss", "MSELoss": "mse_loss", "L1Loss": "l1_loss",
    "SmoothL1Loss": "smooth_l1_loss", "HuberLoss": "huber_loss", "KLDivLoss": "kl_div",
    "PoissonNLLLoss": "poisson_nll_loss", "HingeEmbeddingLoss": "hinge_embedding_loss",
    "MarginRankingLoss": "margin_ranking_loss", "CosineEmbeddingLoss": "cosine_embedding_loss",
    "SoftMarginLoss": "soft_margin_loss", "MultiMarginLoss": "multi_margin_loss",
    "MultiLabelMarginLoss": "multilabel_margin_loss", "TripletMarginLoss": "triplet_margin_loss",
    "BCELoss": "binary_cross_entropy", "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "CTCLoss": "ctc_loss",
}

#: Loss functions (AMP202): name -> number of leading float inputs (input, target, ...).
LOSSES: Dict[str, int] = {
    "cross_entropy": 1, "nll_loss": 1, "mse_loss": 2, "l1_loss": 2, "smooth_l1_loss": 2, "huber_loss": 2,
    "kl_div": 2, "poisson_nll_loss": 2, "hinge_embedding_loss": 1, "margin_ranking_loss": 2,
    "cosine_embedding_loss": 2, "soft_margin_loss": 1, "multi_margin_loss": 1, "multilabel_margin_loss": 1,
    "triplet_margin_loss": 3, "binary_cross_entropy": 2, "binary_cross_entropy_with_logits": 2,
    "ctc_loss": 1, "gaussian_nll_loss": 2, "multilabel_soft_margin_loss": 1,
}

#: Reductions and statistics that AMP203 watches, with whether the op takes ``dtype=`` (S1: the
#: fp32_set_opt_dtype ops accept it; mean takes it too; var/std do not).
REDUCTIONS: Dict[str, bool] = {
    "mean": True, "sum": True, "cumsum": True, "var": False, "std": False, "var_mean": False,
    "std_mean": False, "norm": True, "vector_norm": True, "logsumexp": False,
}

#: Softmax-family ops (AMP201): their short names as functions, Tensor methods and module forwards.
SOFTMAX_OPS = frozenset({"softmax", "log_softmax", "softmin"})

#: Pointwise ops that overflow float16 for moderate inputs (AMP204; thresholds in numerics.py):
#: the exp family (exp(x) is inf above 11.09) and powers >= 2 (x**2 is inf above 255.9).
EXP_OPS = frozenset({"exp", "expm1", "exp2", "cosh", "sinh"})
POWER_OPS = frozenset({"pow", "square"})

#: Ops whose result dtype is the first tensor input's (shape/view/elementwise ops, unlisted).
#: Anything not in OPS is treated this way, so this set only documents intent.

#: Optimizers whose default eps underflows in fp16 (torch 2.13 signatures: Adam/AdamW/Adamax/NAdam/
#: RAdam/RMSprop eps=1e-8, Adagrad eps=1e-10) and that take ``fused=`` (fused kernels compute in fp32,
#: op-precision.md section 3).
EPS_OPTIMIZERS: Dict[str, float] = {
    "Adam": 1e-8, "AdamW": 1e-8, "Adamax": 1e-8, "NAdam": 1e-8, "RAdam": 1e-8, "RMSprop": 1e-8, "Adagrad": 1e-10,
}


def policy(op: str, device: str) -> Optional[str]:
    """Autocast policy of ``op`` on ``device`` ("cuda"-like or "cpu")."""
    entry = OPS.get(op)
    if entry is None:
        return None
    return entry[1] if device == "cpu" else entry[0]
