"""AMP301 fp16-overflowing-constant."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from amp_lint.analysis.precision import (
    PROJECT_TOKENS,
    base, fill_sites, is_simple, literal_value, per_context, torch_ref, where,
)
from amp_lint.data.numerics import dtype_label, format_number, max_of, overflows
from amp_lint.engine.fixes import CstFix
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class Fp16OverflowingConstant(Rule):
    code = "AMP301"
    name = "fp16-overflowing-constant"
    severity = Severity.ERROR
    summary = "Literal fill/mask value that overflows float16"
    fix_applicability = Applicability.UNSAFE
    tokens = ("e", "E", "00000") + PROJECT_TOKENS
    requires = ("precision",)
    docs = """
    ## What it does
    Finds a literal with magnitude above 65504 used as a fill / mask / sentinel value on a tensor
    that is float16 in its context: `masked_fill(mask, -1e9)`, `fill_`, `index_fill`, `new_full`,
    `torch.full(..., dtype=torch.float16)`, `clamp(min=...)`, `torch.where(mask, -1e9, x)` and the
    additive mask `x + mask * -1e9`. It applies inside autocast too: matmul outputs are float16
    there. bfloat16 has the range of float32, so `-1e9` on bf16 is fine.

    ## Why is this bad?
    `masked_fill`, `fill_`, `new_full`, `full` and `index_fill` raise
    `RuntimeError: value cannot be converted to type c10::Half without overflow` (older releases:
    `at::Half`). `torch.where` and arithmetic silently produce `-inf`, and a fully-masked row of a
    softmax then becomes NaN.

    ## Fix safety
    The fix uses the extreme of the filled tensor's own dtype: `torch.finfo(scores.dtype).min`
    (`.max` for positive values). Unsafe: in float32 the fill value changes from -1e9 to -3.4e38.

    ## References
    - Measured with torch 2.13.0 (CPU): on a float16 tensor, `masked_fill`, `fill_`, `new_full`,
      `torch.full(..., dtype=torch.float16)` and `index_fill` with -1e9 raise `RuntimeError: value
      cannot be converted to type c10::Half without overflow`; `torch.where(mask, torch.tensor(-1e9), x)`
      and `x + 1e9` silently give `inf`; -65504 and `float("-inf")` are accepted
    - `torch.finfo`: https://pytorch.org/docs/stable/type_info.html#torch.finfo
    """
    VALID = [
        Valid("""
        import torch
        scores = torch.randn(4, 4)
        scores = scores.masked_fill(scores > 0, -1e9)
        """),
        Valid("""
        import torch
        scores = torch.randn(4, 4).bfloat16()
        scores = scores.masked_fill(scores > 0, -1e9)
        """),
        Valid("""
        import torch
        scores = torch.randn(4, 4).half()
        scores = scores.masked_fill(scores > 0, -1e4)
        scores = scores.masked_fill(scores > 0, float("-inf"))
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def forward(self, q, k, mask):
                    scores = q @ k.transpose(-2, -1)
                    scores = scores.masked_fill(mask == 0, -1e9)
                    return scores.softmax(-1)

            attn = Attention().half()
            """,
            expected="""
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def forward(self, q, k, mask):
                    scores = q @ k.transpose(-2, -1)
                    scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
                    return scores.softmax(-1)

            attn = Attention().half()
            """,
        ),
        Invalid(
            """
            import torch
            def attend(q, k, mask):
                with torch.autocast("cuda"):
                    scores = q @ k.T
                    return scores + mask * -1e9
            """,
            expected="""
            import torch
            def attend(q, k, mask):
                with torch.autocast("cuda"):
                    scores = q @ k.T
                    return scores + mask * torch.finfo(scores.dtype).min
            """,
        ),
        Invalid(
            """
            import torch
            bias = torch.full((4, 4), -1e9, dtype=torch.float16)
            """,
            expected="""
            import torch
            bias = torch.full((4, 4), torch.finfo(torch.float16).min, dtype=torch.float16)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        prec = self.ctx.analyses["precision"]
        for site in fill_sites(prec, node):
            self._check(prec, node, site.value, site.filled, site.filled_values, site.call)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """``x + mask * -1e9`` / ``x - 1e9 * (1 - mask)``: an additive mask on ``x``."""
        if not isinstance(node.operator, (cst.Add, cst.Subtract)):
            return
        prec = self.ctx.analyses["precision"]
        for tensor, other in ((node.left, node.right), (node.right, node.left)):
            literal = _mask_literal(other)
            if literal is not None:
                self._check(prec, node, literal, tensor, prec.value(tensor), node,
                            negate=isinstance(node.operator, cst.Subtract) and other is node.right)
                return

    def _check(self, prec, node, value_expr, filled, filled_values, report_at, negate: bool = False) -> None:
        found = literal_value(prec, value_expr)
        if found is None:
            return
        raw, replace_node = found
        value = -raw if negate else raw

        def decide(context, i):
            d = base(filled_values[i])
            if d not in ("f16", "bf16") or not overflows(value, d):
                return None
            return (f"`{format_number(raw)}` overflows {dtype_label(d)} (max {format_number(max_of(d))}): the filled "
                    f"tensor is {where(context, d)[3:]}; use `torch.finfo(<tensor>.dtype).{'min' if value < 0 else 'max'}`")

        messages = per_context(prec, decide)
        if any(messages):
            prec.report_when(self, report_at, messages, fix=self._fix(replace_node, filled, raw < 0, prec, node))

    def _fix(self, literal: cst.BaseExpression, filled: Optional[cst.BaseExpression], negative: bool, prec,
             node) -> Optional[CstFix]:
        finfo, imports = torch_ref(self.ctx, "torch.finfo")
        if filled is None:
            explicit = _dtype_arg(node)
            if explicit is None:
                return None
            arg = cst.parse_expression(self.ctx.code(explicit))
        elif is_simple(filled):
            arg = cst.parse_expression(f"{self.ctx.code(filled)}.dtype")
        else:
            return None
        new = cst.Attribute(value=cst.Call(func=finfo, args=[cst.Arg(arg)]), attr=cst.Name("min" if negative else "max"))
        fix = CstFix("Fill with the extreme of the tensor's own dtype", Applicability.UNSAFE, add_imports=imports)
        fix.replace(literal, new)
        return fix


def _dtype_arg(node) -> Optional[cst.BaseExpression]:
    if isinstance(node, cst.Call):
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "dtype":
                return a.value
    return None


def _mask_literal(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The literal of ``mask * -1e9`` / ``-1e9 * (1 - mask)`` / ``(1.0 - mask) * -10000.0``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        for side in (expr.right, expr.left):
            inner = side.expression if isinstance(side, cst.UnaryOperation) else side
            if isinstance(inner, (cst.Float, cst.Integer)):
                return side
    return None
