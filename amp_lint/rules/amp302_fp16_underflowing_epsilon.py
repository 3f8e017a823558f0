"""AMP302 fp16-underflowing-epsilon."""
from __future__ import annotations

import ast
from typing import List, Optional

import libcst as cst

from amp_lint.data.numerics import SAFE_FP16_EPS, format_number, underflows
from amp_lint.data.ops import EPS_OPTIMIZERS
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import PROJECT_TOKENS, callee_name, half_of, is_simple, number, tensor_receiver
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid, find_arg
from amp_lint.semantics.torch_api import param_dtypes
from amp_lint.semantics.values import F16, NONE, Ext, Obj, Scalar, Tensor, known_strings, options

class Fp16UnderflowingEpsilon(Rule):
    code = "AMP302"
    name = "fp16-underflowing-epsilon"
    severity = Severity.ERROR
    summary = "Epsilon that rounds to 0 in float16"
    fix_applicability = Applicability.UNSAFE
    tokens = ("eps", "Adam", "RMSprop", "Adagrad", "e-8", "e-9", "e-10", "e-12", "normalize") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds an epsilon that rounds to 0 in float16 (below 3e-8) where it meets float16 values:
    a non-fused `Adam`/`AdamW`/`RMSprop`/... with `eps=1e-8` (explicit or default) over the
    parameters of a module cast with `.half()` (also where the module is cast in place after the
    optimizer was built and the optimizer then steps, as a GAN's `self.optim = Adam(self.parameters())`
    in `__init__` followed by `G = G.half()`); `x / (norm + 1e-8)`, `sqrt(var + 1e-12)` and
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
        Valid(
            # the model keeps its optimizer; it is cast to half only after training, for export
            """
            import torch
            import torch.nn as nn

            class Critic(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Linear(32, 1)
                    self.optim = torch.optim.Adam(self.parameters(), lr=2e-4)

            critic = Critic().cuda()
            for x in loader:
                critic.body(x).mean().backward()
                critic.optim.step()
            critic.half()
            torch.save(critic.state_dict(), "critic_fp16.pt")
            """,
        ),
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
        Valid("""
        import torch
        import torch.nn as nn
        net = nn.Linear(8, 8).half()
        opt = torch.optim.RMSprop(net.parameters(), 1e-2, 0.99, 1e-4)
        """),
    ]
    INVALID = [
        Invalid(
            # the model keeps its optimizer, built over its float32 parameters; the cast that follows
            # makes them float16, and the optimizer then steps them
            """
            import torch
            import torch.nn as nn

            class Critic(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Linear(32, 1)
                    self.optim = torch.optim.Adam(self.parameters(), lr=2e-4)

            critic = Critic().cuda().half()
            for x in loader:
                critic.body(x).mean().backward()
                critic.optim.step()
            """,
            expected="""
            import torch
            import torch.nn as nn

            class Critic(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Linear(32, 1)
                    self.optim = torch.optim.Adam(self.parameters(), lr=2e-4, eps=1e-4)

            critic = Critic().cuda().half()
            for x in loader:
                critic.body(x).mean().backward()
                critic.optim.step()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            net = nn.Linear(8, 8).half()
            opt = torch.optim.Adagrad(net.parameters(), 0.01, 0, 0, 0, 1e-10)
            """,
            expected="""
            import torch
            import torch.nn as nn
            net = nn.Linear(8, 8).half()
            opt = torch.optim.Adagrad(net.parameters(), 0.01, 0, 0, 0, 1e-4)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            table = nn.Embedding(5000, 16, sparse=True).half()
            sparse = []
            for weight in table.parameters():
                sparse.append(weight)
            opt = torch.optim.SparseAdam(sparse, lr=1e-3)
            """,
            expected="""
            import torch
            import torch.nn as nn
            table = nn.Embedding(5000, 16, sparse=True).half()
            sparse = []
            for weight in table.parameters():
                sparse.append(weight)
            opt = torch.optim.SparseAdam(sparse, lr=1e-3, eps=1e-4)
            """,
        ),
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
            import sys
            import bitsandbytes as bnb
            import torch
            import torch.nn as nn
            unet = nn.Conv2d(4, 4, 3).to("cuda", dtype=torch.float16)
            optimizer_class = bnb.optim.AdamW8bit if "--use-8bit-adam" in sys.argv else torch.optim.AdamW
            optimizer = optimizer_class([p for p in unet.parameters() if p.requires_grad], lr=1e-4, eps=1e-8)
            """,
            expected="""
            import sys
            import bitsandbytes as bnb
            import torch
            import torch.nn as nn
            unet = nn.Conv2d(4, 4, 3).to("cuda", dtype=torch.float16)
            optimizer_class = bnb.optim.AdamW8bit if "--use-8bit-adam" in sys.argv else torch.optim.AdamW
            optimizer = optimizer_class([p for p in unet.parameters() if p.requires_grad], lr=1e-4, eps=1e-4)
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

            class BertSelfOutput(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.dense = nn.Linear(hidden, hidden)
                    self.LayerNorm = BertLayerNorm(hidden)
                def forward(self, hidden_states, input_tensor):
                    return self.LayerNorm(self.dense(hidden_states) + input_tensor)
            output = BertSelfOutput(768).half()
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

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.ctx.callee(node)
        clamp = isinstance(node.func, ast.Attribute) and node.func.attr in ("clamp", "clamp_", "clamp_min", "clip")
        if not (any(n.startswith("torch.optim.") for n in callee.names) or "torch.nn.functional.normalize"
                in callee.names or (clamp and callee.tensor_method)):
            return
        hazards: List[Hazard] = []
        kind = None
        optimizer_name = ""
        for obs in self.ctx.observations(node):
            name = callee_name(obs, node) or _torch_optimizer_among(obs, node)
            short = name.rsplit(".", 1)[-1]
            if name.startswith("torch.optim.") and short in EPS_OPTIMIZERS:
                hazard = self._optimizer(obs, node, short)
                if hazard:
                    kind, optimizer_name = "optimizer", short
            elif name == "torch.nn.functional.normalize":
                hazard = self._normalize(obs, node)
                kind = "normalize" if hazard else kind
            elif isinstance(node.func, ast.Attribute) and node.func.attr in ("clamp", "clamp_", "clamp_min", "clip"):
                receiver = tensor_receiver(obs, node)
                hazard = None
                if receiver is not None:
                    for kw in node.keywords:
                        if kw.arg == "min":
                            hazard = hazard or self._arith(obs, receiver, kw.value)
                    if node.func.attr == "clamp_min" and node.args:
                        hazard = hazard or self._arith(obs, receiver, node.args[0])
            else:
                return
            if hazard is not None:
                hazards.append(hazard)
        plan = None
        if kind == "optimizer":
            plan = FixPlan(f"Use eps={format_number(SAFE_FP16_EPS)}", Applicability.UNSAFE,
                           lambda fctx: self._fix_optimizer(fctx, node, optimizer_name))
        elif kind == "normalize":
            source = find_arg(node, "input", 0)
            if source is not None and is_simple(source):
                plan = FixPlan("Normalise in float32 and cast back", Applicability.UNSAFE,
                               lambda fctx: self._fix_normalize(fctx, node, source))
        self.report_hazard(node, hazards, fix=plan)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, ast.Add):
            return
        hazards: List[Hazard] = []
        for obs in self.ctx.observations(node):
            for tensor, eps in ((node.left, node.right), (node.right, node.left)):
                hazard = self._arith(obs, tensor, eps)
                if hazard is not None:
                    hazards.append(hazard)
                    break
        self.report_hazard(node, hazards)

    def _arith(self, obs, tensor: ast.AST, eps: ast.AST) -> Optional[Hazard]:
        value = obs.value(eps)
        if not isinstance(value, Scalar) or value.number is None or not underflows(value.number, "f16"):
            return None
        half = half_of(obs, tensor)
        if half is None or not half.dtypes & F16:
            return None
        return Hazard(obs, f"eps `{format_number(value.number)}` rounds to 0 in float16 (smallest subnormal 6e-8) and "
                           f"the operand is {obs.where(half)[3:]}; compute this in float32", obs.label(half.dtypes, half), half)

    def _normalize(self, obs, node: ast.Call) -> Optional[Hazard]:
        source = find_arg(node, "input", 0)
        if source is None:
            return None
        eps = find_arg(node, "eps", 3)
        if eps is not None:
            value = number(obs, eps)
            if value is None or not underflows(value, "f16"):
                return None
        half = half_of(obs, source)
        if half is None or not half.dtypes & F16 or (obs.cuda_autocast and not obs.state_excluded_for(half)):
            return None
        return Hazard(obs, f"`F.normalize` on {obs.where(half)[3:]}: its eps (default 1e-12) rounds to 0 in float16; "
                           "normalise in float32 and cast back", obs.label(half.dtypes, half), half)

    def _optimizer(self, obs, node: ast.Call, short: str) -> Optional[Hazard]:
        built = [o for o in options(obs.value(node)) if isinstance(o, Obj) and o.kind == "optimizer"
                 and any(name.endswith("." + short) for name in known_strings(o.get("name") or NONE))]
        if len(built) != 1:
            return None
        optimizer = built[0]
        fused = optimizer.get("fused")
        if isinstance(fused, Scalar) and fused.value is True:
            return None
        site = optimizer.get("site")
        if isinstance(site, Scalar) and self.ctx.facts.master_wrapped(site.value):
            return None
        eps_value = optimizer.get("eps")
        eps = eps_value.number if isinstance(eps_value, Scalar) else None
        if eps is None or not underflows(eps, "f16"):
            return None
        dtypes, _, origin = param_dtypes(optimizer.get("params") or Scalar("other"))
        if not dtypes & F16 and isinstance(site, Scalar):  # its model cast in place after it was built
            later, later_origin = self.ctx.facts.params_cast_after_built(site.value)
            if later & F16:
                dtypes, origin = dtypes | later, later_origin
        if not dtypes & F16:
            return None
        default = "" if find_arg(node, "eps") is not None else " (the default)"
        tensor = Tensor(dtypes, False, origin)
        return Hazard(obs, f"`{short}` eps={format_number(eps)}{default} rounds to 0 in float16 and the parameters "
                           f"are float16: updates become NaN/inf; use eps>={format_number(SAFE_FP16_EPS)} or fp32 "
                           "master weights", "PURE_FP16", tensor)

    @staticmethod
    def _fix_optimizer(fctx: FixContext, node: ast.Call, short: str) -> Optional[CstFix]:
        call = fctx.node(node)
        if not isinstance(call, cst.Call) or any(arg.star for arg in call.args):
            return None
        fix = CstFix(f"Use eps={format_number(SAFE_FP16_EPS)}", Applicability.UNSAFE)
        new_eps = cst.Float("1e-4")
        positional = [arg for arg in call.args if arg.keyword is None]
        position = EPS_OPTIMIZERS[short][1]
        if len(positional) > position:
            fix.replace(positional[position].value, new_eps)
            return fix
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "eps":
                fix.replace(arg.value, new_eps)
                return fix
        fix.replace(call, codegen.call(call.func, list(call.args) + [codegen.keyword("eps", new_eps)], like=call))
        return fix

    @staticmethod
    def _fix_normalize(fctx: FixContext, node: ast.Call, source: ast.AST) -> Optional[CstFix]:
        call, arg = fctx.node(node), fctx.node(source)
        if not isinstance(call, cst.Call) or arg is None:
            return None
        fix = CstFix("Normalise in float32 and cast back", Applicability.UNSAFE)
        back = cst.parse_expression(fctx.code(arg))
        fix.replace(arg, codegen.method_call(arg, "float"))
        fix.replace(call, lambda updated: codegen.method_call(updated, "type_as", [cst.Arg(back)]))
        return fix


def _torch_optimizer_among(obs, call: ast.Call) -> str:
    """Of a class picked at run time (``bnb.optim.AdamW8bit if args.use_8bit_adam else
    torch.optim.AdamW``), the one torch optimizer with an eps it may be, or ""."""
    value = obs.value(call.func)
    names = {o.name for o in options(value) if isinstance(o, Ext) and o.name.startswith("torch.optim.")
             and o.name.rsplit(".", 1)[-1] in EPS_OPTIMIZERS}
    return names.pop() if len(names) == 1 else ""
