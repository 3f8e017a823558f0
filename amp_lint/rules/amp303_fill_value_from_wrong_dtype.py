"""AMP303 fill-value-from-wrong-dtype."""
from __future__ import annotations

import libcst as cst

from amp_lint.analysis.precision import PROJECT_TOKENS, base, fill_sites, finfo_of, is_simple, per_context, simple_stand_in, where
from amp_lint.data.numerics import dtype_label
from amp_lint.engine.fixes import CstFix
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid

#: (finfo dtype, filled dtype) pairs whose extreme does not fit (float16 max 65504, bfloat16 max 3.39e38).
_OVERFLOWS = {("f32", "f16"), ("f64", "f16"), ("bf16", "f16"), ("f32", "bf16"), ("f64", "bf16")}


class FillValueFromWrongDtype(Rule):
    code = "AMP303"
    name = "fill-value-from-wrong-dtype"
    severity = Severity.ERROR
    summary = "finfo extreme of another dtype used to fill a half tensor"
    fix_applicability = Applicability.SAFE
    tokens = ("finfo",) + PROJECT_TOKENS
    requires = ("precision",)
    docs = """
    ## What it does
    Finds `torch.finfo(<other tensor>.dtype).min` / `torch.finfo(torch.float32).min` (or `.max`)
    used to fill a tensor that is float16/bfloat16 in its context: `masked_fill`, `fill_`,
    `new_full`, `full`, `torch.where`, `clamp`. The classic case is a mask built from the fp32 module
    input `x` while `scores = q @ k.T` is float16 under autocast.

    ## Why is this bad?
    float32's extreme (-3.4e38) does not fit float16 (max 65504) nor even bfloat16 (max 3.39e38):
    `masked_fill` raises `RuntimeError: value cannot be converted to type c10::Half without
    overflow`; `torch.where` silently writes `-inf` and a fully-masked softmax row becomes NaN.

    ## Fix safety
    The fix takes the finfo of the tensor being filled (`torch.finfo(scores.dtype).min`). It is
    safe: wherever the old value fitted, the two dtypes agree and nothing changes. When the filled
    tensor is an expression (`self.fc(h).masked_fill(...)`), the fix names a tensor of the same
    dtype in the reported context (`h.dtype`) and is unsafe.

    ## References
    - Measured with torch 2.13.0 (CPU): under float16 autocast, `scores = q @ k.T` of float32 inputs is
      float16, and `scores.masked_fill(m, torch.finfo(q.dtype).min)` raises `RuntimeError: value cannot
      be converted to type c10::Half without overflow`; `torch.finfo(torch.float32).min` also overflows
      bfloat16
    - `torch.finfo`: https://pytorch.org/docs/stable/type_info.html#torch.finfo
    """
    VALID = [
        Valid("""
        import torch
        scores = torch.randn(4, 4).half()
        scores = scores.masked_fill(scores > 0, torch.finfo(scores.dtype).min)
        """),
        Valid("""
        import torch
        x = torch.randn(4, 4)
        scores = x @ x.T
        scores = scores.masked_fill(scores > 0, torch.finfo(x.dtype).min)
        """),
        Valid("""
        import torch
        def f(x, m):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                s = x.float() @ x.float().T
                return s.float().masked_fill(m, torch.finfo(torch.float32).min)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qkv = nn.Linear(64, 192)

                def forward(self, x, pad):
                    q, k, v = self.qkv(x).split(64, dim=-1)
                    scores = q @ k.transpose(-2, -1)
                    scores = scores.masked_fill(pad, torch.finfo(x.dtype).min)
                    return scores.softmax(-1) @ v

            attn = Attention()
            with torch.autocast("cpu", dtype=torch.float16):
                out = attn(torch.randn(2, 8, 64), torch.zeros(2, 8, 8, dtype=torch.bool))
            """,
            expected="""
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qkv = nn.Linear(64, 192)

                def forward(self, x, pad):
                    q, k, v = self.qkv(x).split(64, dim=-1)
                    scores = q @ k.transpose(-2, -1)
                    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
                    return scores.softmax(-1) @ v

            attn = Attention()
            with torch.autocast("cpu", dtype=torch.float16):
                out = attn(torch.randn(2, 8, 64), torch.zeros(2, 8, 8, dtype=torch.bool))
            """,
        ),
        Invalid(
            """
            import torch
            scores = torch.randn(4, 4).half()
            neg = torch.finfo(torch.float32).min
            scores = torch.where(scores > 0, scores, neg)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        prec = self.ctx.analyses["precision"]
        for site in fill_sites(prec, node):
            found = finfo_of(prec, site.value)
            if found is None:
                continue
            finfo_call, attr, finfo_values, negated = found
            filled_values = site.filled_values

            def decide(context, i, finfo_values=finfo_values, filled_values=filled_values):
                src, dst = base(finfo_values[i]), base(filled_values[i])
                if (src, dst) not in _OVERFLOWS:
                    return None
                return (f"`torch.finfo({dtype_label(src)}).{attr}` does not fit the filled tensor, which is "
                        f"{where(context, dst)[3:]}; take the finfo of the tensor being filled")

            messages = per_context(prec, decide)
            if not any(messages):
                continue
            if site.filled is not None:
                stand_ins = simple_stand_in(prec, site.filled)
                dtype_of = lambda i, stand_ins=stand_ins: (  # noqa: E731
                    f"{self.ctx.code(stand_ins(i))}.dtype" if stand_ins(i) is not None else None)
            else:
                explicit = _dtype_keyword(node)
                dtype_of = lambda i, explicit=explicit: self.ctx.code(explicit) if explicit is not None else None  # noqa: E731
            exact = site.filled is None or is_simple(site.filled)
            fix = (lambda i, site=site, finfo_call=finfo_call, attr=attr, negated=negated, dtype_of=dtype_of,
                   exact=exact: self._fix(site, dtype_of(i), finfo_call, attr, negated, exact))
            prec.report_when(self, node, messages, fix=fix)

    def _fix(self, site, dtype: "str | None", finfo_call: cst.Call, attr: str, negated: bool, exact: bool):
        if dtype is None or site.value is None:
            return None
        # A name standing in for a filled expression (``h`` for ``self.fc(h)``) has its dtype only in
        # the context reported: unsafe.
        fix = CstFix("Take the finfo of the tensor being filled",
                     Applicability.SAFE if exact else Applicability.UNSAFE)
        new_dtype = cst.parse_expression(dtype)
        if finfo_call in _subtree(site.value):
            if finfo_call.args:
                fix.replace(finfo_call.args[0].value, new_dtype)
            else:
                fix.replace(finfo_call, finfo_call.with_changes(args=[cst.Arg(new_dtype)]))
        else:  # through a name: rewrite the use at the fill site
            fix.replace(site.value, cst.parse_expression(
                ("-" if negated else "") + f"{self.ctx.code(finfo_call.func)}({dtype}).{attr}"))
        return fix


def _dtype_keyword(node: cst.Call):
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return arg.value
    return None


def _subtree(node):
    from amp_lint.engine.walker import iter_subtree

    return list(iter_subtree(node))
