"""AMP301 fp16-overflowing-constant."""
from __future__ import annotations

import ast
from typing import List, Optional

import libcst as cst

from amp_lint.data.numerics import dtype_label, format_number, max_of, overflows
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import PROJECT_TOKENS, FillSite, fill_sites, is_fill_call, is_simple, mask_literal
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid
from amp_lint.semantics.values import BF16, F16, Scalar, half_tensor


class Fp16OverflowingConstant(Rule):
    code = "AMP301"
    name = "fp16-overflowing-constant"
    severity = Severity.ERROR
    summary = "Literal fill/mask value that overflows float16"
    fix_applicability = Applicability.UNSAFE
    tokens = ("e", "E", "00000") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds a literal with magnitude above 65504 used as a fill / mask / sentinel value on a tensor
    that is float16 in its context: `masked_fill(mask, -1e9)`, `fill_`, `index_fill`, `new_full`,
    `torch.full(..., dtype=torch.float16)`, `clamp(min=...)`, `torch.where(mask, -1e9, x)`, the
    additive mask `x + mask * -1e9`, a mask scaled in half on its own (`bias = (1.0 - m) * -1e10`,
    reported at the product), and an indexed store `scores[:, 1:] = -1e9` (reported at the
    statement). It applies inside autocast too: matmul outputs are float16 there. bfloat16 has the
    range of float32, so `-1e9` on bf16 is fine.

    ## Why is this bad?
    `masked_fill`, `fill_`, `new_full`, `full` and `index_fill` raise
    `RuntimeError: value cannot be converted to type c10::Half without overflow` (older releases:
    `at::Half`). Arithmetic and an indexed store (`scores[:, 1:] = -1e9`) silently produce `-inf`,
    and so does `torch.where(mask, x, -1e9)` on the CPU, while on CUDA it raises the same error; a
    fully-masked row of a softmax filled with `-inf` becomes NaN, and a beam score meant as a large
    finite penalty becomes `-inf`.

    ## Fix safety
    The fix uses the extreme of the filled tensor's own dtype: `torch.finfo(scores.dtype).min`
    (`.max` for positive values). Unsafe: in float32 the fill value changes from -1e9 to -3.4e38.

    ## References
    - Measured with torch 2.13.0 (CPU): on a float16 tensor, `masked_fill`, `fill_`, `new_full`,
      `torch.full(..., dtype=torch.float16)` and `index_fill` with -1e9 raise `RuntimeError: value
      cannot be converted to type c10::Half without overflow`; `torch.where(mask, torch.tensor(-1e9), x)`
      and `x + 1e9` silently give `inf`, as does `t[:, 1:] = -1e9` (`-inf` stored); -65504 and
      `float("-inf")` are accepted
    - Measured with torch 2.11.0+cu130 on an NVIDIA H100 (`tests/data/cuda_dtypes.json`): under
      `torch.autocast("cuda", dtype=torch.float16)`, `masked_fill(mask, -1e9)` and
      `torch.where(mask, x, -1e9)` of a matmul output raise `value cannot be converted to type c10::Half
      without overflow`; the CPU's `torch.where` gives `-inf` instead
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
        # indexed stores: -1e9 into a float32 tensor, and values a float16 tensor holds
        Valid("""
        import torch
        beams = torch.zeros(2, 4)
        beams[:, 1:] = -1e9
        half_beams = torch.zeros(2, 4).half()
        half_beams[:, 1:] = -1e4
        half_beams[:, 2:] = float("-inf")
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            def to_bias(mask, dtype):
                mask = mask.to(dtype)
                return mask * -1.0e10

            scores = torch.randn(4, 4).cuda().half()
            scores = scores + to_bias(torch.rand(4, 4).cuda() > 0.5, scores.dtype)
            """,
            expected="""
            import torch

            def to_bias(mask, dtype):
                mask = mask.to(dtype)
                return mask * torch.finfo(mask.dtype).min

            scores = torch.randn(4, 4).cuda().half()
            scores = scores + to_bias(torch.rand(4, 4).cuda() > 0.5, scores.dtype)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = nn.Linear(64, 128)

                def forward(self, x, mask):
                    q, k = self.qk(x).chunk(2, dim=-1)
                    scores = q @ k.transpose(-2, -1)
                    scores = scores.masked_fill(mask == 0, -1e9)
                    return scores.softmax(-1)

            attn = Attention().half()
            """,
            expected="""
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = nn.Linear(64, 128)

                def forward(self, x, mask):
                    q, k = self.qk(x).chunk(2, dim=-1)
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
        Invalid(
            """
            import torch
            def init_beams(enc, beams):
                scores = enc.new_zeros(enc.size(0), beams)
                scores[:, 1:] = -1e9
                return scores
            init_beams(torch.randn(2, 8).half(), 4)
            """,
            expected="""
            import torch
            def init_beams(enc, beams):
                scores = enc.new_zeros(enc.size(0), beams)
                scores[:, 1:] = torch.finfo(scores.dtype).min
                return scores
            init_beams(torch.randn(2, 8).half(), 4)
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if is_fill_call(self.ctx.callee(node), node):
            self._check(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Subscript) and isinstance(node.value, (ast.Constant, ast.UnaryOp)):
            self._check(node, target.value)  # ``scores[:, 1:] = -1e9``: observed through the container

    def visit_BinOp(self, node: ast.BinOp) -> None:
        parent = self.ctx.parent()
        if isinstance(node.op, ast.Mult) and isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Add, ast.Sub)) \
                and mask_literal(node) is not None and (parent.left is node or parent.right is node):
            added = parent.right if parent.left is node else parent.left
            if any(half_tensor(obs.value(added)) is not None for obs in self.ctx.observations(added)):
                return  # the additive mask ``x + m * -1e9`` on a half ``x``: reported at the addition
        self._check(node)

    def _check(self, node: ast.AST, observed: Optional[ast.AST] = None) -> None:
        hazards: List[Hazard] = []
        chosen: Optional[FillSite] = None
        negative = False
        for obs in self.ctx.observations(observed if observed is not None else node):
            for site in fill_sites(obs, node):
                value = obs.value(site.value)
                if not isinstance(value, Scalar) or value.number is None or value.finfo is not None:
                    continue  # AMP303 judges torch.finfo(...) extremes
                number = value.number
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and site.value in (
                        getattr(node.right, "left", None), getattr(node.right, "right", None)):
                    number = -number
                tensor = site.tensor
                if tensor is None:
                    continue
                dtype = "f16" if tensor.dtypes & F16 and overflows(number, "f16") else (
                    "bf16" if tensor.dtypes & BF16 and overflows(number, "bf16") else None)
                if dtype is None:
                    continue
                chosen, negative = site, number < 0
                role = "scaled" if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) else "filled"
                hazards.append(Hazard(obs, f"`{format_number(value.number)}` overflows {dtype_label(dtype)} (max "
                                           f"{format_number(max_of(dtype))}): the {role} tensor is "
                                           f"{obs.where(tensor)[3:]}; use `torch.finfo(<tensor>.dtype)."
                                           f"{'min' if number < 0 else 'max'}`", obs.label(tensor.dtypes, tensor), tensor))
        if chosen is None:
            return
        site = chosen
        plan = FixPlan("Fill with the extreme of the tensor's own dtype", Applicability.UNSAFE,
                       lambda fctx: self._fix(fctx, site, negative))
        self.report_hazard(node, hazards, fix=plan)

    @staticmethod
    def _fix(fctx: FixContext, site: FillSite, negative: bool) -> Optional[CstFix]:
        literal = fctx.node(site.value)
        if literal is None:
            return None
        if site.filled is not None:
            if not is_simple(site.filled):
                return None
            filled = fctx.node(site.filled)
            if filled is None:
                return None
            arg = cst.parse_expression(f"{fctx.code(filled)}.dtype")
        elif site.dtype is not None:
            dtype = fctx.node(site.dtype)
            if dtype is None:
                return None
            arg = cst.parse_expression(fctx.code(dtype))
        else:
            return None
        finfo, imports = fctx.torch_ref("torch.finfo")
        new = cst.Attribute(value=cst.Call(func=finfo, args=[cst.Arg(arg)]), attr=cst.Name("min" if negative else "max"))
        fix = CstFix("Fill with the extreme of the tensor's own dtype", Applicability.UNSAFE, add_imports=imports)
        fix.replace(literal, new)
        return fix
