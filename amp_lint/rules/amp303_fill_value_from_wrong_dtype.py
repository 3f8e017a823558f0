"""AMP303 fill-value-from-wrong-dtype."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

import libcst as cst

from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import PROJECT_TOKENS, FillSite, fill_sites, is_fill_call, is_simple, stand_in
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid
from amp_lint.semantics.facts import Observation
from amp_lint.semantics.values import BF16, F16, F32, F64, Scalar, Tensor, bits, dtype_label

#: (finfo dtype, filled dtype) pairs whose extreme does not fit (float16 max 65504, bfloat16 max 3.39e38):
#: the fill raises or becomes inf.
_OVERFLOWS = {(F32, F16), (F64, F16), (BF16, F16), (F32, BF16), (F64, BF16)}


class FillValueFromWrongDtype(Rule):
    code = "AMP303"
    name = "fill-value-from-wrong-dtype"
    severity = Severity.ERROR
    summary = "finfo extreme of another dtype used to fill a half tensor"
    fix_applicability = Applicability.SAFE
    tokens = ("finfo",) + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds `torch.finfo(<other tensor>.dtype).min` / `torch.finfo(torch.float32).min` (or `.max`)
    used to fill a tensor that is float16/bfloat16 in its context: `masked_fill`, `fill_`,
    `new_full`, `full`, `torch.where`, `clamp`. The classic case is a mask built from the fp32 module
    input `x` while `scores = q @ k.T` is float16 under autocast. A finfo that may be of the filled
    tensor's own dtype is no evidence (`dtype = x.dtype` where `x` is float16 or float32, used for
    the finfo and to make the mask): only a half dtype the finfo cannot be of is reported.

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
        # the mask is made in the dtype whose finfo fills it, whichever of two that is
        import sys
        import torch
        q = torch.randn(4, 8, device="cuda")
        if "--half" in sys.argv:
            q = q.half()
        bias = torch.ones(4, 4, dtype=q.dtype, device=q.device).triu(diagonal=1)
        bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)
        """),
        Valid("""
        import sys
        import torch
        scores = torch.randn(4, 4)
        if "--bf16" in sys.argv:
            scores = scores.bfloat16()
        # float32 on one path, bfloat16 on the other: the finfo follows the filled tensor on both
        scores = scores.masked_fill(scores > 0, torch.finfo(scores.dtype).min)
        """),
        Valid("""
        import torch
        x = torch.randn(4, 4)
        scores = x @ x.T
        scores = scores.masked_fill(scores > 0, torch.finfo(x.dtype).min)
        """),
        Valid("""
        # a finfo of whichever dtype the input has, filling a mask made in that same dtype and
        # edited since: which of the two dtypes each is, is not known apart, so nothing is reported
        import sys
        import torch
        hidden = torch.randn(2, 6, 8)
        if "--half" in sys.argv:
            hidden = hidden.half()
        dtype = hidden.dtype
        lowest = torch.finfo(dtype).min
        causal = torch.full((6, 6), lowest, dtype=dtype).triu(diagonal=1)
        causal = causal[None].expand(2, -1, -1).clone()
        pad = torch.zeros(2, 1, 6, dtype=torch.bool)
        causal[:, :, :4] = causal[:, :, :4].masked_fill(pad[:, :, :4], lowest)
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

    def visit_Call(self, node: ast.Call) -> None:
        if not is_fill_call(self.ctx.callee(node), node):
            return
        hazards: List[Hazard] = []
        chosen: Optional[FillSite] = None
        found: List[Tuple[Observation, Tensor]] = []
        attr = "min"
        for obs in self.ctx.observations(node):
            for site in fill_sites(obs, node):
                value = obs.value(site.value)
                tensor = site.tensor
                if not isinstance(value, Scalar) or value.finfo is None or tensor is None:
                    continue
                if _finfo_of_filled(site) or self._made_in_finfo_dtype(site):
                    continue  # finfo(t.dtype) filling t: right by construction, whatever t's dtypes
                source, which = value.finfo
                # a finfo of one of several dtypes, the filled tensor's among them, may be its own
                # (``dtype = x.dtype`` made both): only a half dtype the finfo cannot be of is evidence
                pairs = [(s_bit, d_bit) for s_bit in bits(source) for d_bit in bits(tensor.dtypes & (F16 | BF16) & ~source)]
                bad = [p for p in pairs if p in _OVERFLOWS]
                if not bad:
                    continue
                chosen, attr = site, which
                found.append((obs, tensor))
                hazards.append(Hazard(obs, f"`torch.finfo({dtype_label(bad[0][0])}).{which}` does not fit the filled "
                                           f"tensor, which is {obs.where(tensor)[3:]}; take the finfo of the tensor "
                                           "being filled", obs.label(tensor.dtypes, tensor), tensor))
        if chosen is None:
            return
        site = chosen
        if site.filled is not None:
            back = stand_in(site.filled, found)
            exact = is_simple(site.filled)
        else:
            back, exact = site.dtype, True
        plan = None
        if back is not None:
            plan = FixPlan("Take the finfo of the tensor being filled",
                           Applicability.SAFE if exact else Applicability.UNSAFE,
                           lambda fctx: self._fix(fctx, site, back, site.filled is not None, exact, attr))
        self.report_hazard(node, hazards, fix=plan)

    def _made_in_finfo_dtype(self, site: FillSite) -> bool:
        """``t = torch.ones(..., dtype=E)`` (or ``.to(E)``), then in the same block, with no other
        store to ``t`` between, ``t.masked_fill_(m, torch.finfo(E).min)``: the finfo is of the
        dtype ``t`` was made in, whichever that is (a non-relational analysis sees "float16 or
        float32" on each side and cannot pair them)."""
        call = _finfo_call(site.value)
        filled = site.filled
        if call is None or len(call.args) != 1 or not isinstance(filled, ast.Name):
            return False
        wanted = ast.dump(call.args[0])
        stack = self.ctx.stack
        for owner, statement in zip(reversed(stack[:-1]), reversed(stack[1:])):
            for name in ("body", "orelse", "finalbody"):
                block = getattr(owner, name, None)
                if not isinstance(block, list):
                    continue
                index = next((i for i, s in enumerate(block) if s is statement), None)
                if index is None:
                    continue
                for before in reversed(block[:index]):
                    if not any(isinstance(n, ast.Name) and n.id == filled.id and isinstance(n.ctx, ast.Store)
                               for n in ast.walk(before)):
                        continue
                    return isinstance(before, ast.Assign) and len(before.targets) == 1 \
                        and _dtype_argument(before.value) == wanted
                return False
        return False

    @staticmethod
    def _fix(fctx: FixContext, site: FillSite, back: ast.AST, of_tensor: bool, exact: bool,
             which: str) -> Optional[CstFix]:
        # A name standing in for a filled expression (``h`` for ``self.fc(h)``) has its dtype only in
        # the context reported: unsafe.
        target = fctx.node(back)
        value = fctx.node(site.value)
        if target is None or value is None:
            return None
        dtype = f"{fctx.code(target)}.dtype" if of_tensor else fctx.code(target)
        fix = CstFix("Take the finfo of the tensor being filled", Applicability.SAFE if exact else Applicability.UNSAFE)
        finfo = _finfo_call(site.value)
        if finfo is not None:
            call = fctx.node(finfo)
            if not isinstance(call, cst.Call):
                return None
            if call.args:
                fix.replace(call.args[0].value, cst.parse_expression(dtype))
            else:
                fix.replace(call, call.with_changes(args=[cst.Arg(cst.parse_expression(dtype))]))
            return fix
        # through a name: rewrite the use at the fill site (``which`` is the extreme the value is)
        ref, imports = fctx.reference("torch.finfo")
        fix.add_imports = (imports,) if imports else ()
        fix.replace(value, cst.parse_expression(f"{ref}({dtype}).{which}"))
        return fix


def _finfo_of_filled(site: FillSite) -> bool:
    """``t.masked_fill(m, torch.finfo(t.dtype).min)``: the finfo is of the filled expression itself."""
    call = _finfo_call(site.value)
    if call is None or len(call.args) != 1 or site.filled is None:
        return False
    arg = call.args[0]
    return (isinstance(arg, ast.Attribute) and arg.attr == "dtype"
            and ast.dump(arg.value) == ast.dump(site.filled))


def _dtype_argument(expr: ast.AST) -> Optional[str]:
    """The dumped ``dtype=`` of a factory call, or the argument of a ``.to(E)``/``.type(E)`` at the
    end of a method chain (``torch.ones(n, dtype=E).triu(1)``: the factory's)."""
    while isinstance(expr, ast.Call):
        keyword = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
        if keyword is not None:
            return ast.dump(keyword)
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in ("to", "type") and len(expr.args) == 1:
            return ast.dump(expr.args[0])
        if not (isinstance(func, ast.Attribute) and func.attr in _KEEPS_DTYPE):
            return None
        expr = func.value
    return None


#: tensor methods that keep their receiver's dtype (a chain ending in them is made in the factory's)
_KEEPS_DTYPE = frozenset({"triu", "tril", "contiguous", "view", "reshape", "expand", "unsqueeze", "squeeze",
                          "clone", "detach", "transpose", "permute", "repeat", "flip", "cuda"})


def _finfo_call(expr: ast.AST) -> Optional[ast.Call]:
    """The ``torch.finfo(...)`` call inside ``torch.finfo(X).min`` / ``-torch.finfo(X).max``."""
    if isinstance(expr, ast.UnaryOp):
        expr = expr.operand
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call):
        return expr.value
    return None
