"""Float16 / bfloat16 numeric limits and overflow thresholds used by the numerics rules.

Source: measured with torch 2.13.0+cpu (``torch.finfo`` and direct conversions such as
``torch.tensor(65520.).half()`` = inf, ``torch.tensor(1e-8).half()`` = 0.0; which fills raise and
which silently become inf).
"""
from __future__ import annotations

import math

#: Largest finite value (``torch.finfo(dt).max``; E).
FP16_MAX = 65504.0
BF16_MAX = 3.3895313892515355e38
FP32_MAX = 3.4028234663852886e38
#: Literals of at least this magnitude round to +-inf in fp16 (65504 < x < 65520 rounds to 65504; E).
FP16_OVERFLOW_AT = 65520.0
#: Smallest subnormal of fp16 (2**-24; E).
FP16_TINY_SUBNORMAL = 5.960464477539063e-08
#: Values at or below this flush to 0 when converted to fp16 (2**-25, ties to even; E: 1e-8 -> 0).
FP16_FLUSH_TO_ZERO = 2.98023e-08
#: The catalog's smallest epsilon that is safe with fp16 parameters (AMP302 fix).
SAFE_FP16_EPS = 1e-4
#: ``exp(x)`` overflows fp16 above ln(65504) (E: exp(11.09375) = inf).
FP16_EXP_OVERFLOW = math.log(FP16_MAX)  # 11.0899...
#: ``x**2`` overflows fp16 for abs(x) above sqrt(65504) (E: 256**2 = inf).
FP16_SQUARE_OVERFLOW = math.sqrt(FP16_MAX)  # 255.94
#: ``x**3`` overflows fp16 for abs(x) above the cube root of 65504.
FP16_CUBE_OVERFLOW = FP16_MAX ** (1.0 / 3.0)  # 40.31


def overflows(value: float, dtype: str) -> bool:
    """True when ``value`` cannot be stored in ``dtype`` ("f16" / "bf16") without overflow."""
    if math.isinf(value) or math.isnan(value):
        return False  # +-inf is allowed by masked_fill and friends (measured, torch 2.13.0+cpu)
    if dtype == "f16":
        return abs(value) > FP16_MAX
    if dtype == "bf16":
        return abs(value) > BF16_MAX
    return False


def underflows(value: float, dtype: str) -> bool:
    """True when a positive epsilon ``value`` rounds to 0 in ``dtype``."""
    if value <= 0:
        return False
    if dtype == "f16":
        return value <= FP16_FLUSH_TO_ZERO
    if dtype == "bf16":
        return value < 4.6e-41
    return False


def max_of(dtype: str) -> float:
    return {"f16": FP16_MAX, "bf16": BF16_MAX}.get(dtype, FP32_MAX)


def dtype_label(dtype: str) -> str:
    return {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}.get(dtype, dtype)


def format_number(value: float) -> str:
    """``-1e9`` style for big round numbers, plain otherwise."""
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")
