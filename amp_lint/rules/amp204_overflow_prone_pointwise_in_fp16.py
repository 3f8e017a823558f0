"""AMP204 overflow-prone-pointwise-in-fp16."""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from amp_lint.analysis.precision import (
    PROJECT_TOKENS,
    base, cuda_autocast, literal_value, method_call, per_context, tensor_receiver, where,
)
from amp_lint.data.numerics import FP16_CUBE_OVERFLOW, FP16_EXP_OVERFLOW, FP16_SQUARE_OVERFLOW
from amp_lint.data.ops import REDUCTIONS
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.walker import iter_subtree
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid

_EXP = {"exp", "expm1", "cosh", "sinh"}
_TORCH = {"torch.exp": "exp", "torch.expm1": "expm1", "torch.special.expm1": "expm1", "torch.special.exp2": "exp2",
          "torch.cosh": "cosh", "torch.sinh": "sinh", "torch.pow": "pow", "torch.square": "square"}


def _threshold(op: str, exponent: Optional[float]) -> Optional[str]:
    if op in ("exp", "expm1"):
        return f"{op} overflows float16 above {FP16_EXP_OVERFLOW:.2f}"
    if op in ("cosh", "sinh"):
        return f"{op} overflows float16 above {FP16_EXP_OVERFLOW + 0.69:.2f}"
    if op == "square" or exponent == 2:
        return f"x**2 overflows float16 above {FP16_SQUARE_OVERFLOW:.1f}"
    if exponent == 3:
        return f"x**3 overflows float16 above {FP16_CUBE_OVERFLOW:.2f}"
    if exponent is not None and exponent > 3:
        return f"x**{exponent:g} overflows float16 above {65504 ** (1 / exponent):.2f}"
    return None


class OverflowPronePointwiseInFp16(Rule):
    code = "AMP204"
    name = "overflow-prone-pointwise-in-fp16"
    severity = Severity.WARNING
    summary = "exp / pow / square on float16 values outside an fp32 region"
    fix_applicability = Applicability.UNSAFE
    tokens = ("exp", "pow", "**", "square", "cosh", "sinh") + PROJECT_TOKENS
    requires = ("precision",)
    docs = """
    ## What it does
    Finds `exp`/`expm1`/`cosh`/`sinh`, `pow`/`**` with an exponent >= 2 and `square` applied to
    float16 values where nothing upcasts them (CUDA autocast runs exp and pow in float32; CPU
    autocast and pure fp16 do not), including the hand-written softmax `exp(x) / exp(x).sum()`.
    A max-subtracted `exp(x - x.max())` is not reported, nor a square that feeds a reduction
    (AMP203 reports that one).

    ## Why is this bad?
    float16 tops out at 65504: `exp(x)` is `inf` above 11.09, `x**2` above 255.9, `x**3` above
    40.3. A temperature-scaled logit of 14 makes a hand-written softmax `inf / inf = NaN`.

    ## Fix safety
    The fix computes the op in float32 (`torch.exp(x.float())`, `x.float() ** 2`). Unsafe: the
    result is float32 from then on.

    ## References
    - PyTorch docs, Autocast Op Reference (`exp` and `pow` autocast to float32 on CUDA):
      https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - pytorch/pytorch `aten/src/ATen/autocast_mode.h` (CUDA fp32 list):
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h
    - Measured with torch 2.13.0 (CPU): float16 `exp([11.0859375, 11.09375])` is `[65248, inf]`;
      `[255.875, 256] ** 2` is `[65472, inf]` (`torch.finfo(torch.float16).max` is 65504)
    """
    VALID = [
        Valid("""
        import torch
        x = torch.randn(8).half()
        y = torch.exp(x.float())
        z = torch.exp(x - x.max(dim=-1, keepdim=True).values)
        w = x ** 0.5
        """),
        Valid("""
        import torch
        def f(x):
            with torch.autocast("cuda", dtype=torch.float16):
                return torch.exp(x @ x.T)
        """),
        Valid("""
        import torch
        x = torch.randn(8).bfloat16()
        y = torch.exp(x)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            logits = torch.randn(4, 8).half() / 0.07
            probs = torch.exp(logits) / torch.exp(logits).sum(dim=-1, keepdim=True)
            """,
            expected="""
            import torch
            logits = torch.randn(4, 8).half() / 0.07
            probs = torch.exp(logits.float()) / torch.exp(logits.float()).sum(dim=-1, keepdim=True)
            """,
            count=2,
        ),
        Invalid(
            """
            import torch
            x = torch.randn(8, dtype=torch.float16)
            y = x ** 3
            """,
            expected="""
            import torch
            x = torch.randn(8, dtype=torch.float16)
            y = x.float() ** 3
            """,
        ),
        Invalid(
            """
            import torch
            def f(q, k):
                with torch.autocast("cpu", dtype=torch.float16):
                    return (q @ k.T).exp()
            """,
            expected="""
            import torch
            def f(q, k):
                with torch.autocast("cpu", dtype=torch.float16):
                    return (q @ k.T).float().exp()
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self._match_call(node)
        if found is not None:
            self._check(node, *found)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power):
            exponent = self._exponent(node.right)
            if exponent is not None and exponent >= 2:
                self._check(node, "pow", node.left, exponent)

    def _match_call(self, node: cst.Call) -> Optional[Tuple[str, cst.BaseExpression, Optional[float]]]:
        qualified = self.ctx.qualify(node.func)
        if qualified in _TORCH and node.args:
            op = _TORCH[qualified]
            exponent = self._exponent(node.args[1].value) if op == "pow" and len(node.args) > 1 else None
            if op == "pow" and (exponent is None or exponent < 2):
                return None
            return op, node.args[0].value, exponent
        receiver = tensor_receiver(self.ctx.analyses["precision"], node.func) if qualified is None else None
        if receiver is not None:
            op = node.func.attr.value
            if op in _EXP and not node.args:
                return op, receiver, None
            if op == "square" and not node.args:
                return op, receiver, 2.0
            if op == "pow" and node.args:
                exponent = self._exponent(node.args[0].value)
                if exponent is not None and exponent >= 2:
                    return op, receiver, exponent
        return None

    def _exponent(self, expr: cst.BaseExpression) -> Optional[float]:
        found = literal_value(self.ctx.analyses["precision"], expr)
        return found[0] if found else None

    def _check(self, node: cst.CSTNode, op: str, source: cst.BaseExpression, exponent: Optional[float]) -> None:
        prec = self.ctx.analyses["precision"]
        threshold = _threshold(op, exponent)
        if threshold is None:
            return
        if op in ("pow", "square") and self._feeds_reduction():
            return
        if op in _EXP and _max_subtracted(source):
            return
        values = prec.value(source)

        def decide(context, i):
            if base(values[i]) != "f16" or cuda_autocast(context):
                return None
            return f"`{op}` computed {where(context, values[i])}: {threshold}; compute it in float32"

        messages = per_context(prec, decide)
        if not any(messages):
            return
        fix = CstFix("Compute it in float32", Applicability.UNSAFE)
        fix.replace(source, method_call(source, "float"))
        prec.report_when(self, node, messages, fix=fix)

    def _feeds_reduction(self) -> bool:
        """The square is the receiver/argument of a mean/sum (AMP203's case)."""
        parent = self.ctx.parent()
        if isinstance(parent, cst.Attribute) and parent.attr.value in REDUCTIONS:
            return True
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(2)
            if isinstance(call, cst.Call):
                name = self.ctx.qualify(call.func) or ""
                return name.rsplit(".", 1)[-1] in REDUCTIONS
        return False


def _max_subtracted(expr: cst.BaseExpression) -> bool:
    """``x - x.max(...)`` / ``x - logsumexp(...)``: exp of a value <= 0 cannot overflow."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return False
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract):
        for node in iter_subtree(expr.right):
            if isinstance(node, cst.Attribute) and node.attr.value in ("max", "amax", "logsumexp", "values"):
                return True
            if isinstance(node, cst.Name) and ("max" in node.value.lower() or "lse" in node.value.lower()):
                return True
    return False
