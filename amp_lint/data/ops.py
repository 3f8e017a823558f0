"""Autocast casting policy per op and device, as data.

Sources:
- S1 ``torch/include/ATen/autocast_mode.h`` of the torch 2.13.0 wheel (CUDA/XPU lists: lower
  precision, fp32, fp32_set_opt_dtype, promote; pytorch/pytorch ``aten/src/ATen/autocast_mode.h``).
- S2 pytorch/pytorch ``aten/src/ATen/autocast_mode.cpp`` (CPU registrations).
- S4 PyTorch docs, Autocast Op Reference: https://pytorch.org/docs/stable/amp.html#autocast-op-reference
- E  output dtype of each op under ``torch.autocast("cpu", dtype=torch.float16 / torch.bfloat16)``,
  measured with torch 2.13.0+cpu; every row is checked against torch by
  ``tests/test_op_table_vs_torch.py`` (CPU live, CUDA from a recording made on a GPU).

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
        # CPU: unlisted, but they decompose into ``mm``, which is (E)
        "chain_matmul", "multi_dot",
    )},
    **{name: _CUDA_LOWER for name in ("mv", "addmv", "addr")},
    # fp32 on CUDA/XPU only (S1); unlisted on CPU (S2, E)
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
    **{name: (PROMOTE, None) for name in ("addcmul", "addcdiv", "atan2", "cross", "dot", "bilinear")},
    "tensordot": (PROMOTE, LOWER),  # CPU: decomposes into ``mm`` (E)
    "cat": (None, PROMOTE),
    "stack": (None, PROMOTE),
}

#: Rows of the CUDA column that hold since a torch release (before it, the op was unlisted): the
#: table describes torch 2.13; a recording made with an older torch is read with these.
CUDA_SINCE: Dict[str, Tuple[int, int]] = {
    "rms_norm": (2, 12),  # pytorch/pytorch#174824 put it on the fp32 list (issue #188955: "fp32 policy (2.12)")
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

#: Vector norms whose kernels square and sum in float32 and round only the norm (measured, torch 2.13
#: on the CPU and 2.11 on an H200): ``inf`` in float16 only where the norm itself exceeds 65504.
FP32_ACCUMULATING_NORMS = frozenset({"norm", "vector_norm"})

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

#: Ops whose output is a learned activation (AMP204's evidence that a value can be large): products
#: with weights (GEMMs, convolutions, attention), embedding lookups, spectra; any op on a parameter
#: counts too. What only rescales or
#: shifts a value keeps its flag; the bounded ops below clear it.
LEARNED_OPS = frozenset({
    "matmul", "__matmul__", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "bilinear", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "einsum", "mv", "addmv",
    "scaled_dot_product_attention", "embedding", "tensordot", "dot", "vecdot",
    # sums over many input samples (a spectrum of audio is as large as a layer's output)
    "stft", "fft", "rfft", "fft2", "rfft2", "fftn", "rfftn",
})

#: Ops whose tensor operands must share a dtype: outside autocast a float16 operand with a float32
#: one raises instead of promoting (torch 2.13.0, CPU, measured: matmul/mm/linear "expected m1 and
#: m2 to have the same dtype", bmm/einsum "expected scalar type Half but found Float", conv "Input
#: type ... and weight type ... should be the same", sdpa "Expected query, key, and value to have the
#: same dtype"). Where the analysis sees two dtypes, one of them is known imprecisely (a parameter
#: cast by a converter it cannot follow), so the result may be either, not the promoted float32.
SAME_DTYPE_OPS = frozenset({
    "matmul", "__matmul__", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "bilinear", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "einsum", "mv", "addmv", "dot", "vdot",
    "tensordot", "scaled_dot_product_attention",
})

#: Reductions that return a 0-dim tensor when called with no ``dim`` (``x.sum()``, ``torch.mean(x)``).
#: A 0-dim tensor yields to tensors with dimensions in type promotion (PyTorch docs, "Type promotion":
#: "If a zero-dimension tensor operand has a higher category than dimensioned operands, we promote to
#: a type with sufficient size and category to hold all zero-dim tensor operands of that category";
#: measured with torch 2.13.0: ``float16[4] / float32[].`` is float16).
FULL_REDUCTIONS = frozenset({
    "sum", "mean", "prod", "max", "min", "amax", "amin", "norm", "std", "var", "median", "nansum", "nanmean",
    "count_nonzero", "all", "any",
})

#: Ops whose output is bounded in magnitude whatever their input (|y| <= 6, relu6's bound): exp or a
#: square of it cannot overflow float16. (Log-probabilities are <= 0 but not bounded below: AMP204
#: knows their exp is at most 1 on its own.)
BOUNDED_OPS = frozenset({
    "sigmoid", "tanh", "softmax", "softmin", "sin", "cos", "asin", "arcsin",
    "acos", "arccos", "atan", "arctan", "atan2", "erf", "normalize", "cosine_similarity", "sign", "hardtanh",
    "relu6", "softsign", "hardsigmoid",
})

#: torch.nn modules that compute one of the bounded ops.
BOUNDED_MODULES = frozenset({
    "Sigmoid", "Tanh", "Softmax", "Softmin", "Hardtanh", "ReLU6", "Softsign",
    "Hardsigmoid",
})

#: Ops whose result dtype is the first tensor input's (shape/view/elementwise ops, unlisted).
#: Anything not in OPS is treated this way, so this set only documents intent.

#: Optimizers whose default eps underflows in fp16, as (default eps, positional index of ``eps``
#: with ``params`` at 0), from the torch 2.13 signatures. Adam, AdamW and Adagrad take ``fused=`` (fused
#: kernels compute in fp32, measured with torch 2.13.0+cpu: Adam eps=1e-8 over fp16 params is NaN in
#: 3 steps, finite with fused=True).
EPS_OPTIMIZERS: Dict[str, Tuple[float, int]] = {
    "Adam": (1e-8, 3), "AdamW": (1e-8, 3), "Adamax": (1e-8, 3), "NAdam": (1e-8, 3), "RAdam": (1e-8, 3),
    "RMSprop": (1e-8, 3), "SparseAdam": (1e-8, 3), "Adagrad": (1e-10, 5),
}


#: Ops with no kernel and no autocast rule of their own (``CompositeImplicitAutograd`` in torch's
#: dispatcher): they run as the op they decompose into, which autocast then dispatches, so they
#: take that op's row of ``OPS`` (``torch.square(x)`` is ``torch.pow(x, 2)``: float32 under CUDA
#: autocast). Checked against the dispatcher by ``tests/test_op_table_vs_torch.py``.
DECOMPOSED_OPS: Dict[str, str] = {"square": "pow"}

#: Every op autocast has a policy for: the rows of ``OPS`` and the ops that decompose into one.
AUTOCAST_OPS = frozenset(OPS) | frozenset(DECOMPOSED_OPS)


def policy(op: str, device: str) -> Optional[str]:
    """Autocast policy of ``op`` on ``device`` ("cuda"-like or "cpu")."""
    entry = OPS.get(DECOMPOSED_OPS.get(op, op))
    if entry is None:
        return None
    return entry[1] if device == "cpu" else entry[0]


# -- how a result's dtype follows from the inputs (before autocast's policy) ---------------------
# Sources: torch 2.13 signatures (``torch/_C/_VariableFunctions.pyi``, ``torch/_tensor.py``) and the
# autocast docs' "Op Eligibility": ops called with ``dtype=`` keep that dtype, in-place ops and
# ``out=`` calls are not autocast, unlisted ops run in their inputs' (promoted) dtype.
SAME = "same"            # promoted dtype of the tensor inputs (elementwise, shape and unlisted ops)
INT_RESULT = "int"       # indices, counts
BOOL_RESULT = "bool"     # comparisons and predicates
PYTHON = "python"        # a Python value (``item()``, ``size()``)
FACTORY = "factory"      # a new tensor: ``dtype=`` or the default float32
FACTORY_INT = "factory_int"  # ``arange``/``randint``: int64 unless a float argument or ``dtype=``
INFER = "infer"          # ``torch.tensor(data)``: from the data
LIKE = "like"            # ``zeros_like(t)``: ``dtype=`` or t's dtype
NEW = "new"              # ``t.new_zeros(...)``: ``dtype=`` or t's dtype
FIRST = "first"          # the first tensor input's dtype, whatever the others (``masked_fill``)

RESULT_KINDS: Dict[str, str] = {
    **{name: INT_RESULT for name in (
        "argmax", "argmin", "argsort", "nonzero", "searchsorted", "bucketize", "bincount", "multinomial",
        "randperm", "tril_indices", "triu_indices", "count_nonzero", "long", "int", "short",
    )},
    **{name: BOOL_RESULT for name in (
        "eq", "ne", "lt", "gt", "le", "ge", "greater", "less", "equal", "isnan", "isinf", "isfinite",
        "isposinf", "isneginf", "isclose", "logical_and", "logical_or", "logical_not", "logical_xor", "any",
        "all", "bool", "signbit",
    )},
    **{name: PYTHON for name in (
        "item", "tolist", "size", "dim", "numel", "nelement", "element_size", "data_ptr", "is_contiguous",
        "stride", "get_device", "is_floating_point", "is_complex", "is_tensor", "numpy", "equal_",
        "storage_offset", "ndimension",
    )},
    **{name: FACTORY for name in (
        "randn", "rand", "zeros", "ones", "empty", "full", "eye", "linspace", "logspace", "normal",
        "empty_strided", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
        "Tensor",  # the legacy constructor: sizes or data, always the default float dtype
        "scalar_tensor", "range",  # float32 whatever the number (measured)
    )},
    **{name: FACTORY_INT for name in ("arange", "randint")},
    **{name: INFER for name in ("tensor", "as_tensor", "asarray", "from_numpy")},
    **{name: LIKE for name in (
        "randn_like", "rand_like", "zeros_like", "ones_like", "full_like", "empty_like", "randint_like",
    )},
    **{name: NEW for name in ("new_full", "new_zeros", "new_ones", "new_empty", "new_tensor")},
    **{name: FIRST for name in (
        "masked_fill", "masked_fill_", "fill_", "index_fill", "index_fill_", "fill_diagonal_", "clamp_",
        "masked_scatter", "scatter", "index_select", "gather", "roll", "flip", "repeat", "expand", "expand_as",
        "view_as", "reshape_as",
    )},
    # not listed, so promoted over their tensor inputs: ``clamp``/``clip`` with tensor bounds
    # (``torch.clamp(h, min=f)`` is float32, measured) and ``unique`` (the values' dtype)
}

#: Positional arguments that are tensor inputs of a torch *function* (default: the first);
#: "seq" means the elements of the first argument (``cat``/``stack``); "rest" everything after the
#: first (``einsum``'s operands).
TENSOR_ARGS: Dict[str, object] = {
    **{name: "seq" for name in ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                                "column_stack", "block_diag", "cartesian_prod", "broadcast_tensors")},
    "einsum": "rest",
    **{name: (0, 1) for name in (
        "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "cross", "kron", "tensordot",
        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
        "remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "lerp", "pow",
        "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
        "cosine_similarity", "pairwise_distance", "cdist", "dist", "bilinear", "prelu", "vecdot",
    )},
    **{name: (0, 1, 2) for name in ("addmm", "addbmm", "baddbmm", "addmv", "addr", "addcmul", "addcdiv",
                                     "linear", "scaled_dot_product_attention")},
    "where": (1, 2),
    "embedding": (1,),
    **{name: (0, 1, 2) for name in ("clamp", "clip")},
    **{name: (0, 1) for name in ("clamp_min", "clamp_max")},
}

#: Keyword arguments that are tensor inputs too (the bounds of a clamp).
TENSOR_KEYWORDS: Dict[str, Tuple[str, ...]] = {
    "clamp": ("min", "max"), "clip": ("min", "max"), "clamp_min": ("min",), "clamp_max": ("max",),
}

#: Tensor methods that cast (receiver -> dtype).
CAST_METHODS: Dict[str, str] = {
    "half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64", "long": "int64",
    "int": "int64", "short": "int64", "char": "int64", "byte": "int64", "bool": "bool",
}

#: torch dtype names (``torch.<name>``) and legacy tensor types, to dtype names.
DTYPE_ALIASES: Dict[str, str] = {
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float": "float32", "float64": "float64", "double": "float64", "int64": "int64", "long": "int64",
    "int32": "int64", "int": "int64", "int16": "int64", "short": "int64", "int8": "int64", "uint8": "int64",
    "bool": "bool", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16", "FloatTensor": "float32",
    "DoubleTensor": "float64", "LongTensor": "int64", "IntTensor": "int64", "BoolTensor": "bool",
    "ByteTensor": "int64",
}

#: Binary operators -> the op whose autocast policy they follow (S4: ``@`` is matmul, ``**`` pow,
#: ``scalar / x`` reciprocal; the rest are unlisted and promote natively).
OPERATOR_OPS: Dict[str, str] = {"MatMult": "matmul", "Pow": "pow"}

#: nn module classes (``torch.nn.<name>``): how calling an instance behaves. ``params``: has floating
#: parameters (cast with ``.half()``); its forward runs ``MODULE_OPS[name]`` when listed there, else
#: keeps its input's dtype. ``container``: runs its children in order. ``embedding``: returns rows of
#: its weight (the weight's dtype, whatever the input).
MODULE_KINDS: Dict[str, str] = {
    **{name: "params" for name in (
        "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LayerNorm", "RMSNorm", "GroupNorm",
        "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
        "InstanceNorm3d", "LocalResponseNorm", "PReLU", "MultiheadAttention", "Transformer",
        "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
        "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    )},
    **{name: "embedding" for name in ("Embedding", "EmbeddingBag")},
    **{name: "container" for name in ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")},
}

#: Wrappers that return the module they wrap (calling them runs its forward). apex's
#: ``DistributedDataParallel(module)`` forward returns ``self.module(*inputs, **kwargs)`` and
#: ``convert_syncbn_model(module)`` returns the module with its BatchNorms replaced
#: (``apex/parallel/distributed.py``, ``apex/parallel/__init__.py``); timm's
#: ``convert_splitbn_model(module, num_splits)`` returns the module with split BatchNorms
#: (``timm/layers/split_batchnorm.py``, re-exported by ``timm.models`` in the releases its training
#: script was copied from). detectron2's ``create_ddp_model(model, **kwargs)`` returns the model, in
#: ``DistributedDataParallel`` where there is more than one process (``detectron2/engine/defaults.py``).
MODULE_WRAPPERS = frozenset({
    "detectron2.engine.create_ddp_model", "detectron2.engine.defaults.create_ddp_model",
    "apex.parallel.DistributedDataParallel", "apex.parallel.distributed.DistributedDataParallel",
    "apex.parallel.convert_syncbn_model", "timm.models.convert_splitbn_model", "timm.layers.convert_splitbn_model",
    "timm.models.layers.convert_splitbn_model", "timm.models.split_batchnorm.convert_splitbn_model",
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.DistributedDataParallelCPU", "torch.compile", "torch.jit.script", "torch.jit.trace",
    "torch.nn.utils.weight_norm", "torch.nn.utils.spectral_norm", "torch.nn.utils.parametrizations.weight_norm",
    "torch.nn.utils.parametrizations.spectral_norm", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
})

#: Bases of custom autograd functions: ``Fn.apply(*args)`` runs the static ``Fn.forward(ctx, *args)``
#: in the caller's autocast state (torch/autograd/function.py, torch 2.13).
AUTOGRAD_FUNCTION_BASES = frozenset({
    "torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction",
})

#: apex ``amp`` O1 (removed from apex in 2025; NVIDIA/apex ``apex/amp/lists/*.py`` at the parent of
#: commit cb65b8ed): the functions it patched to run in fp16, in fp32, or at the widest input type.
#: Under O1 everything else runs in its inputs' dtype, as under native autocast.
APEX_O1: Dict[str, str] = {
    **{name: LOWER for name in (
        "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
        "linear", "prelu", "addmm", "addmv", "addr", "matmul", "mm", "mv", "addbmm", "baddbmm", "bmm",
        "__matmul__",
    )},
    **{name: FP32 for name in (
        "interpolate", "grid_sample", "softplus", "softmin", "log_softmax", "softmax", "gelu", "layer_norm",
        "group_norm", "local_response_norm", "normalize", "cosine_similarity", "poisson_nll_loss",
        "cosine_embedding_loss", "cross_entropy", "hinge_embedding_loss", "kl_div", "l1_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
        "nll_loss", "binary_cross_entropy_with_logits", "smooth_l1_loss", "soft_margin_loss",
        "triplet_margin_loss", "ctc_loss", "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10",
        "log2", "reciprocal", "rsqrt", "sinh", "tan", "pow", "cumprod", "cumsum", "dist", "norm", "prod",
        "std", "sum", "var", "renorm", "__pow__", "__rpow__",
    )},
    **{name: PROMOTE for name in (
        "addcdiv", "addcmul", "atan2", "cross", "bilinear", "dot", "add", "div", "mul", "cat", "stack",
    )},
}


#: apex O1 patched these only as ``torch.nn.functional`` functions (``lists/functional_overrides.py``;
#: ``torch_overrides.py`` and ``tensor_overrides.py`` list none of them), so ``torch.softmax(x)`` and
#: ``x.softmax(-1)`` ran unpatched, in their input's dtype; modules such as ``nn.Softmax`` and
#: ``nn.LayerNorm`` call the patched functional.
APEX_O1_FUNCTIONAL_ONLY = frozenset({
    "interpolate", "grid_sample", "softplus", "softmin", "log_softmax", "softmax", "gelu", "layer_norm",
    "group_norm", "local_response_norm", "normalize", "cosine_similarity", "linear", "poisson_nll_loss",
    "cosine_embedding_loss", "cross_entropy", "hinge_embedding_loss", "kl_div", "l1_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "nll_loss", "binary_cross_entropy_with_logits", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
})


def policy_in(op: str, device: str, functional: bool = True) -> Optional[str]:
    """Autocast policy of ``op`` in a state's device: "cuda", "cpu" or "apex" (apex O1). ``functional``:
    the op is called as a ``torch.nn.functional`` function or a module's forward, not as a ``torch``
    function or a Tensor method (only apex told them apart: :data:`APEX_O1_FUNCTIONAL_ONLY`)."""
    if device == "apex":
        return None if not functional and op in APEX_O1_FUNCTIONAL_ONLY else APEX_O1.get(op)
    return policy(op, device)
