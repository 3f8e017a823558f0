"""AMP302 fp16-underflowing-epsilon."""
from __future__ import annotations

import re
from typing import List, Optional

import libcst as cst

from amp_lint.analysis.precision import (
    PROJECT_TOKENS,
    base, cuda_autocast, is_simple, literal_value, method_call, per_context, where,
)
from amp_lint.data.numerics import SAFE_FP16_EPS, format_number, underflows
from amp_lint.data.ops import EPS_OPTIMIZERS
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.walker import iter_subtree
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid, find_arg

#: Wrappers that keep fp32 master weights for the wrapped optimizer (apex O2 / fairseq / DeepSpeed).
_MASTER_WEIGHTS = re.compile(r"fp16.?optim|mixedprecision|master|deepspeed|kahan|bf16.?optim", re.IGNORECASE)


class Fp16UnderflowingEpsilon(Rule):
    code = "AMP302"
    name = "fp16-underflowing-epsilon"
    severity = Severity.ERROR
    summary = "Epsilon that rounds to 0 in float16"
    fix_applicability = Applicability.UNSAFE
    tokens = ("eps", "Adam", "RMSprop", "Adagrad", "e-8", "e-9", "e-10", "e-12", "normalize") + PROJECT_TOKENS
    requires = ("constants", "precision")
    docs = """
    ## What it does
    Finds an epsilon that rounds to 0 in float16 (below 3e-8) where it meets float16 values:
    a non-fused `Adam`/`AdamW`/`RMSprop`/... with `eps=1e-8` (explicit or default) over the
    parameters of a module cast with `.half()`; `x / (norm + 1e-8)`, `sqrt(var + 1e-12)` and
    `clamp(min=1e-12)` in float16 arithmetic; `F.normalize` on float16 values (its default eps is
    1e-12). `nn.LayerNorm(eps=1e-12)` / `F.layer_norm` are not reported: their kernels keep eps in
    float32. bfloat16 represents 1e-8, and optimizers wrapped for fp32 master weights are fine.

    ## Why is this bad?
    1e-8 becomes 0.0 in float16 (smallest subnormal 6e-8). Adam's `exp_avg_sq` underflows to 0 for
    small gradients, and the update is `m / (0 + 0)`: parameters go NaN/-inf within 3 steps. A
    hand-written `(x - u) / sqrt(var + 1e-12)` returns NaN on constant rows.

    ## Fix safety
    For an optimizer the fix sets `eps=1e-4`, the smallest eps the catalog deems safe for fp16
    parameters; `F.normalize` is computed in float32 and cast back. Unsafe: the update rule
    changes. Hand-written arithmetic is reported without a fix (compute it in float32).

    ## References
    - Measured with torch 2.13.0 (CPU): `torch.tensor(1e-8).half()` is 0.0 (the smallest float16
      subnormal is 5.96e-8); `torch.optim.Adam(eps=1e-8)` over float16 parameters with gradients of
      1e-5 gives NaN/-inf parameters within 3 steps (finite with `fused=True` or `eps=1e-4`);
      `F.layer_norm(x, eps=1e-12)` on constant float16 rows returns 0, a hand-written
      `(x - u) / torch.sqrt(s + 1e-12)` returns NaN
    - `torch.optim.Adam` (the `eps` and `fused` parameters):
      https://pytorch.org/docs/stable/generated/torch.optim.Adam.html
    """
    VALID = [
        Valid("""
        import torch
        import torch.nn as nn
        model = nn.Linear(8, 8)
        opt = torch.optim.Adam(model.parameters(), eps=1e-8)
        """),
        Valid("""
        import torch
        import torch.nn as nn
        model = nn.Linear(8, 8).half()
        opt = torch.optim.Adam(model.parameters(), eps=1e-8, fused=True)
        ln = nn.LayerNorm(8, eps=1e-12).half()
        """),
        Valid("""
        import torch
        import torch.nn as nn
        model = nn.Linear(8, 8).to(torch.bfloat16)
        opt = torch.optim.AdamW(model.parameters(), eps=1e-8)
        """),
        Valid("""
        import torch
        x = torch.randn(8, 64)
        y = x / (x.norm(dim=-1, keepdim=True) + 1e-8)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn
            model = nn.Embedding(1000, 32).half()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)
            """,
            expected="""
            import torch
            import torch.nn as nn
            model = nn.Embedding(1000, 32).half()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            model = nn.Linear(8, 8)
            model.half()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            """,
            expected="""
            import torch
            import torch.nn as nn
            model = nn.Linear(8, 8)
            model.half()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class BertLayerNorm(nn.Module):
                def __init__(self, hidden, eps=1e-12):
                    super().__init__()
                    self.variance_epsilon = eps

                def forward(self, x):
                    u = x.mean(-1, keepdim=True)
                    s = (x - u).pow(2).mean(-1, keepdim=True)
                    return (x - u) / torch.sqrt(s + self.variance_epsilon)

            ln = BertLayerNorm(768).half()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            z = torch.randn(4, 128).half()
            z = F.normalize(z, dim=-1)
            """,
            expected="""
            import torch
            import torch.nn.functional as F
            z = torch.randn(4, 128).half()
            z = F.normalize(z.float(), dim=-1).type_as(z)
            """,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.optimizers: List[tuple] = []
        self.wrapped: set = set()
        self.assignments: List[tuple] = []

    def visit_Call(self, node: cst.Call) -> None:
        prec = self.ctx.analyses["precision"]
        qualified = self.ctx.qualify(node.func) or ""
        short = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.optim.") and short in EPS_OPTIMIZERS:
            self._optimizer(prec, node, short)
        elif qualified == "torch.nn.functional.normalize":
            self._normalize(prec, node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("clamp", "clamp_", "clamp_min", "clip"):
            for arg in node.args:
                if (arg.keyword is not None and arg.keyword.value == "min") or (
                        node.func.attr.value == "clamp_min" and arg.keyword is None):
                    self._arith(prec, node, node.func.value, arg.value)
        name = self.ctx.code(node.func)
        if _MASTER_WEIGHTS.search(name):
            for sub in iter_subtree(node):
                if isinstance(sub, cst.Name):
                    self.wrapped.add(sub.value)
                if isinstance(sub, cst.Call):
                    self.wrapped.add(id(sub))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Add):
            prec = self.ctx.analyses["precision"]
            for tensor, eps in ((node.left, node.right), (node.right, node.left)):
                self._arith(prec, node, tensor, eps)

    def _arith(self, prec, node, tensor: cst.BaseExpression, eps: cst.BaseExpression) -> None:
        found = literal_value(prec, eps)
        if found is None or not underflows(found[0], "f16"):
            return
        values = prec.value(tensor)
        value = found[0]

        def decide(context, i):
            if base(values[i]) != "f16":
                return None
            return (f"eps `{format_number(value)}` rounds to 0 in float16 (smallest subnormal 6e-8) and the "
                    f"operand is {where(context, values[i])[3:]}; compute this in float32")

        prec.report_when(self, node, per_context(prec, decide))

    def _normalize(self, prec, node: cst.Call) -> None:
        arg = find_arg(node, "input", 0)
        if arg is None:
            return
        eps_arg = find_arg(node, "eps", 3)
        if eps_arg is not None:
            found = literal_value(prec, eps_arg.value)
            if found is None or not underflows(found[0], "f16"):
                return
        values = prec.value(arg.value)

        def decide(context, i):
            if base(values[i]) != "f16" or cuda_autocast(context):
                return None
            return (f"`F.normalize` on {where(context, values[i])[3:]}: its eps (default 1e-12) rounds to 0 in "
                    "float16; normalise in float32 and cast back")

        messages = per_context(prec, decide)
        if not any(messages):
            return
        fix = None
        if is_simple(arg.value):
            fix = CstFix("Normalise in float32 and cast back", Applicability.UNSAFE)
            back = cst.parse_expression(self.ctx.code(arg.value))
            fix.replace(arg.value, method_call(arg.value, "float"))
            fix.replace(node, lambda updated: method_call(updated, "type_as", [cst.Arg(back)]))
        prec.report_when(self, node, messages, fix=fix)

    def _optimizer(self, prec, node: cst.Call, short: str) -> None:
        fused = find_arg(node, "fused")
        if fused is not None and isinstance(fused.value, cst.Name) and fused.value.value == "True":
            return
        eps_arg = find_arg(node, "eps")
        if eps_arg is not None:
            found = literal_value(prec, eps_arg.value) or self._config_default(eps_arg.value)
            if found is None:
                return
            eps = found[0]
        else:
            eps = EPS_OPTIMIZERS[short]
        if not underflows(eps, "f16"):
            return
        owner = self._params_owner(prec, node)
        if owner is None or owner.cast is None or base(owner.cast) != "f16":
            return
        self.optimizers.append((node, short, eps, eps_arg, owner, prec.scope.ifs > 0))

    def _config_default(self, expr: cst.BaseExpression):
        """``args.adam_eps`` with ``add_argument("--adam-eps", default=1e-8)`` / a config-class default."""
        if not isinstance(expr, cst.Attribute):
            return None
        defs = self.ctx.analyses["constants"].attr_defs.get(expr.attr.value, [])
        values = {literal_value(self.ctx.analyses["precision"], d)[0] for d in defs
                  if literal_value(self.ctx.analyses["precision"], d) is not None}
        if len(defs) >= 1 and len(values) == 1 and len(defs) == sum(
                1 for d in defs if literal_value(self.ctx.analyses["precision"], d) is not None):
            return values.pop(), None
        return None

    def _params_owner(self, prec, node: cst.Call):
        params = find_arg(node, "params", 0)
        if params is None:
            return None
        for sub in iter_subtree(params.value):
            if isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute) and sub.func.attr.value in (
                    "parameters", "named_parameters"):
                mod = prec.module_of(sub.func.value)
                if mod is not None:
                    return mod
        return None

    def finish(self) -> None:
        for node, short, eps, eps_arg, owner, _ in self.optimizers:
            if id(node) in self.wrapped:
                continue
            target = self._assigned_name(node)
            if target is not None and target in self.wrapped:
                continue
            fix = CstFix(f"Use eps={format_number(SAFE_FP16_EPS)}", Applicability.UNSAFE)
            new_eps = cst.Float("1e-4")
            if eps_arg is not None:
                fix.replace(eps_arg.value, new_eps)
            else:
                fix.replace(node, codegen.call(node.func, list(node.args) + [codegen.keyword("eps", new_eps)], like=node))
            default = "" if eps_arg is not None else " (the default)"
            message = (f"`{short}` eps={format_number(eps)}{default} rounds to 0 in float16 and the parameters are "
                       f"float16: updates become NaN/inf; use eps>={format_number(SAFE_FP16_EPS)} or fp32 master weights")
            if owner.cast.endswith("?"):
                message += " (when fp16 is enabled)"
            self.report(node, message, fix=fix, precision_context="PURE_FP16",
                        confidence="low" if owner.low else "high")

    def _assigned_name(self, node: cst.Call) -> Optional[str]:
        for target, value in self.assignments:
            if value is node:
                return target
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.assignments.append((node.targets[0].target.value, node.value))
