"""AMP203 norm-or-reduction-in-fp16."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

import libcst as cst

from amp_lint.data import ops as opdata
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import (
    PROJECT_TOKENS, callee_name, half_of, is_simple, local_scope, reaching_value, tensor_receiver,
)
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid, find_arg
from amp_lint.semantics.facts import Observation
from amp_lint.semantics.values import F16, Tensor, options

_TORCH = {"torch.mean": "mean", "torch.sum": "sum", "torch.var": "var", "torch.std": "std", "torch.cumsum": "cumsum",
          "torch.norm": "norm", "torch.linalg.vector_norm": "vector_norm", "torch.linalg.norm": "norm",
          "torch.var_mean": "var_mean", "torch.std_mean": "std_mean"}

# Reductions whose result stays within the range of its inputs: their kernels accumulate in fp32, so an fp16
# mean or std of finite values is finite (of 100 float16 values +-300, var is inf, std 301.5), and a
# logsumexp is at most its largest input plus log(n).
_BOUNDED_BY_INPUT = {"mean", "std", "std_mean", "logsumexp"}
# Norms square and sum in fp32 and round only the norm, at most sqrt(n) times the largest input: it is inf
# only when the norm itself exceeds 65504 (measured, torch 2.13 CPU and 2.11 on an H200: 512 float16
# values of 300 have norm 6788, 4096 values of 1000 have 64000). Over one dimension (a feature row,
# ``x / x.norm(dim=-1)``) that needs values no evidence here can show; over a whole tensor (a gradient
# norm of millions of values) an rms of 16 is enough, so those keep the var rule's evidence test.
_FP32_NORMS = opdata.FP32_ACCUMULATING_NORMS
# Positional index of ``dim`` in the method and the function forms (``x.norm(p, dim)``, ``torch.norm(x, p, dim)``).
_NORM_DIM_INDEX = {"method": 1, "function": 2}
# Statistics whose result is a square of the values (their kernels accumulate in fp32): it overflows for
# values of abs >= 256 or so, which needs positive evidence, as for AMP204: values from a learned layer
# (GEMM, convolution, embedding, model call) or parameters.
_SQUARING = {"var", "var_mean"}
# Sums accumulate in fp32 too and round only the total: n values of size a overflow once n*a > 65504, which
# needs values that can be large (a learned layer's output or a parameter), as for var: a sum of mask
# entries, pixels or noise counts or averages small values.
_SUMS = {"sum", "cumsum"}
# The reductions reported only with that evidence.
_NEED_LARGE_VALUES = _SQUARING | _FP32_NORMS | _SUMS


def squared_base(expr: ast.AST) -> Optional[ast.AST]:
    """``b`` for ``b.pow(2)``, ``b ** 2``, ``b.square()``, ``torch.square(b)``, ``b * b``."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        attr = expr.func.attr
        if attr == "pow" and len(expr.args) == 1 and _is_two(expr.args[0]):
            return expr.func.value
        if attr == "square" and not expr.args:
            return expr.func.value
        if attr == "square" and len(expr.args) == 1 and isinstance(expr.func.value, ast.Name) \
                and expr.func.value.id == "torch":
            return expr.args[0]
        if attr == "pow" and len(expr.args) == 2 and _is_two(expr.args[1]):
            return expr.args[0]
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, ast.Pow) and _is_two(expr.right):
            return expr.left
        if isinstance(expr.op, ast.Mult) and ast.dump(expr.left) == ast.dump(expr.right):
            return expr.left
    return None


def _over_one_dim(node: ast.Call, form: str) -> bool:
    """Whether a norm call reduces over given dimensions (``dim=``), not the whole tensor."""
    if find_arg(node, "dim") is not None:
        return True
    index = _NORM_DIM_INDEX[form]
    return len(node.args) > index and not any(isinstance(a, ast.Starred) for a in node.args[:index + 1])


def _weighted_by_parameter(obs: Observation, expr: ast.AST) -> bool:
    """``x * w`` with ``w`` a parameter (``conv_state * rearrange(self.conv1d.weight, ...)``): its sum is
    the output of the layer it writes out by hand, which the layer's own kernel would round alike."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult)):
        return False
    return any(any(isinstance(o, Tensor) and o.param for o in options(obs.value(_viewed(side))))
               for side in (expr.left, expr.right))


_VIEWS = frozenset({"view", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "t", "flatten", "unflatten",
                    "expand", "expand_as", "contiguous", "flip", "T", "mT"})


def _viewed(expr: ast.AST) -> ast.AST:
    """The tensor a chain of reshapes shows (``w.squeeze(1)``, ``rearrange(w, "d 1 k -> d k")``: ``w``)."""
    while True:
        if isinstance(expr, ast.Attribute) and expr.attr in _VIEWS:
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEWS:
            expr = expr.func.value
        elif isinstance(expr, ast.Call) and expr.args and getattr(expr.func, "id", getattr(
                expr.func, "attr", "")) == "rearrange":
            expr = expr.args[0]
        else:
            return expr


def _is_exp(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("exp", "exp2")


def _is_two(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and float(expr.value) == 2.0


class NormOrReductionInFp16(Rule):
    code = "AMP203"
    skips_test_files = True
    name = "norm-or-reduction-in-fp16"
    severity = Severity.WARNING
    summary = "Hand-written normalisation or reduction in half precision"
    fix_applicability = Applicability.UNSAFE
    tokens = ("mean", "sum", "var", "std", "norm") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds hand-written normalisation statistics and reductions on float16 values where
    nothing upcasts them: `x.pow(2).mean(-1)` (RMSNorm), `var`, `sum`/`cumsum`, a norm of squares,
    in a module cast wholesale to half or on tensors cast to half, and under autocast where
    autocast leaves the op in fp16 (`var` and means of squares on CUDA; all of them on CPU; under
    apex O1, which patched `var`, `std`, `sum`, `cumsum`, `norm`, `prod` and `pow` to float32,
    what it left alone, such as a mean of `square()`). A sum
    that only seeds `.backward()` (`y.sum().backward()`) is not reported: its gradient does not
    depend on its value; nor is the sum of a hand-written softmax's exponentials (`e = torch.exp(s
    - s.amax(-1, keepdim=True))`, then `e.sum(-1)`): AMP204 judges whether the exp overflows. The native `nn.LayerNorm`/`F.layer_norm`/`group_norm`/
    `rms_norm` are not reported: their kernels keep statistics and eps in float32. A plain `mean`
    is not reported either: its kernels accumulate in float32 and the result cannot exceed the
    largest input (`torch.ones(100000).half().mean()` is 1.0 while `.sum()` is `inf`), nor a plain
    `std` (its kernel squares in float32: of 100 float16 values +-300, `std` is 301.5 and `var` is `inf`),
    nor a norm over a dimension (`x / x.norm(dim=-1, keepdim=True)`): its kernel squares and sums in
    float32 and rounds only the norm, which is `inf` only above 65504 (512 float16 values of 300 have
    norm 6788; 4096 values of 1000 have 64000), and nothing static shows a row norm that large;
    nor a weight's own norm (`param.norm()`, a debugging dump: weights are small), while a
    gradient's (`p.grad.norm()`) is. `var` overflows for values of abs >= 256 or so, a norm of a whole tensor (no `dim`: a gradient
    norm over millions of values, where an rms of 16 is enough) when its values are large, and a
    `sum`/`cumsum` (whose kernels also accumulate in float32 and round only the totals) once n values
    of size a pass n*a > 65504; all three need positive evidence
    that the values can be that large, as AMP204 does: the output of a learned layer (GEMM,
    convolution, embedding, model call) or a parameter; the var of pixels or noise and the sum of a mask are not reported, nor a
    sum of a product with a parameter (`(state * conv.weight).sum(-1)`: a layer written out by hand, whose
    total is the layer's own output, which its kernel would round alike). Nor are
    bfloat16 values: bfloat16 has float32's range and the reduction kernels accumulate in float32.

    ## Why is this bad?
    `x.pow(2)` overflows float16 for abs(x) >= 256, so one "massive activation" channel makes the
    mean of squares `inf`, `rsqrt(inf)` is 0 and the whole row collapses; `var` overflows above
    65504 even when `std` would be finite; an fp16 `sum` of n values of size a is `inf` once
    n*a > 65504.

    ## Fix safety
    For a mean of squares the fix upcasts the base and casts the statistic back:
    `x.float().pow(2).mean(-1, keepdim=True).type_as(x)`. For `sum`/`cumsum`/`mean`/norms it passes
    `dtype=torch.float32`, else it uses `.float()` ... `.type_as(x)`. Unsafe: numerics change (the
    statistic becomes correct) and `dtype=torch.float32` makes the result float32.

    ## References
    - PyTorch docs, Autocast Op Reference (`sum`, `cumsum` and norms are on the CUDA fp32 list; `mean`,
      `var`, `std` are not listed and run in the input dtype):
      https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - pytorch/pytorch `aten/src/ATen/autocast_mode.h` and `aten/src/ATen/autocast_mode.cpp`:
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp
    - Measured with torch 2.13.0 (CPU): float16 `256 ** 2` is `inf`; `torch.ones(100000).half().sum()`
      is `inf`; `var` of 100 values +-300 in float16 is `inf` while `std` is 301.5; `F.layer_norm` keeps its
      statistics and `eps` in float32; float16 `x.norm()`, `torch.norm` and `torch.linalg.vector_norm` of
      512 values of 300 are 6788, of 4096 values of 1000 are 64000 and of 4096 values of 1100 `inf` (also
      with torch 2.11 on an NVIDIA H200)
    """
    VALID = [
        Valid("""
        import torch

        # a debugging dump of each weight's norm: weights are small, and the norm accumulates in float32
        model = torch.nn.Linear(1024, 1024).cuda().half()
        for name, param in model.named_parameters():
            print(name, param.norm().item())
        """),
        Valid("""
        import torch

        # a depthwise convolution's decoding step written out: the sum of the state times the
        # kernel is the convolution's own output, which its kernel would round alike
        class ConvStep(torch.nn.Module):
            def __init__(self, channels, width=4):
                super().__init__()
                self.conv = torch.nn.Conv1d(channels, channels, width, groups=channels, padding=width - 1)

            def step(self, x, state):
                state = torch.roll(state, shifts=-1, dims=-1)
                state[:, :, -1] = x
                return torch.sum(state * self.conv.weight.squeeze(1), dim=-1), state

        layer = ConvStep(256).half()
        y, s = layer.step(torch.randn(2, 256).half(), torch.zeros(2, 256, 4).half())
        """),
        Valid("""
        import torch
        from apex import amp

        # apex O1 patched torch.var and Tensor.var (and sum, std, norm) to run in float32
        class ChannelNorm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Conv2d(64, 64, 3, padding=1)

            def forward(self, x):
                h = self.proj(x)
                return (h - h.mean(dim=1, keepdim=True)) / (h.var(dim=1, keepdim=True) + 1e-5).sqrt()

        model = ChannelNorm().cuda()
        optimizer = torch.optim.Adam(model.parameters())
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
        for x in loader:
            loss = model(x).sum()
            with amp.scale_loss(loss, optimizer) as scaled:
                scaled.backward()
            optimizer.step()
        """),
        Valid("""
        # a sum that only seeds backward: its gradient is ones whatever its value
        import torch
        proj = torch.nn.Linear(64, 64).half()
        proj(torch.randn(8, 64, dtype=torch.float16)).sum().backward()
        """),
        Valid("""
        # row norms of a learned activation: the norm accumulates in float32 and stays far below 65504
        import torch
        proj = torch.nn.Linear(64, 64).half()
        feats = proj(torch.randn(8, 64, dtype=torch.float16))
        feats = feats / feats.norm(dim=-1, keepdim=True)
        rows = torch.linalg.vector_norm(feats, 2, -1)
        """),
        Valid("""
        # sums of values no learned layer produced: a mask's count, noise (sums accumulate in fp32)
        import torch
        mask = (torch.rand(8, 512) > 0.5).half()
        lengths = mask.sum(dim=-1)
        total = torch.randn(1000, 64).half().sum(0)
        """),
        Valid("""
        # the var of values no learned layer produced (pixels, noise) stays small; norms accumulate in fp32
        import torch
        import torch.nn.functional as F
        pixels = torch.rand(8, 3 * 16 * 16).half()
        spread = pixels.var(-1)
        u, w = F.normalize(torch.randn(4, 8).half(), dim=-1), F.normalize(torch.randn(4, 8).half(), dim=-1)
        gap = (u - w).norm(dim=-1)
        """),
        Valid("""
        import torch
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(64, 64)

            def forward(self, x):
                return self.proj(x)

            def head_importance(self):  # never reached from forward: reported only with --preview
                return torch.sum(torch.abs(self.proj.weight), dim=1)

        attn = Attention().half()
        """),
        Valid("""
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = nn.LayerNorm(64, eps=1e-12)
            def forward(self, x):
                return self.ln(x)
        block = Block().half()
        """),
        # the sum of a hand-written softmax's exponentials, through a name: AMP204 judges the exp
        Valid("""
        import torch
        def attend(q, k):
            scores = q.half() @ k.half().transpose(-1, -2)
            weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            return weights / weights.sum(dim=-1, keepdim=True)
        attend(torch.randn(4, 8), torch.randn(4, 8))
        """),
        Valid("""
        import torch
        x = torch.randn(4, 64).half()
        v = x.float().pow(2).mean(-1, keepdim=True)
        s = x.sum(dtype=torch.float32)
        """),
        Valid("""
        import torch
        def f(x):
            with torch.autocast("cuda", dtype=torch.float16):
                return x.pow(2).mean(-1)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn

            class RMSNorm(nn.Module):
                def __init__(self, dim, eps=1e-6):
                    super().__init__()
                    self.eps = eps
                    self.weight = nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    variance = x.pow(2).mean(-1, keepdim=True)
                    return self.weight * (x * torch.rsqrt(variance + self.eps))

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(64, 64)
                    self.norm = RMSNorm(64)

                def forward(self, x):
                    return self.norm(self.proj(x))

            block = Block().half()
            """,
            expected="""
            import torch
            import torch.nn as nn

            class RMSNorm(nn.Module):
                def __init__(self, dim, eps=1e-6):
                    super().__init__()
                    self.eps = eps
                    self.weight = nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    variance = x.float().pow(2).mean(-1, keepdim=True).type_as(x)
                    return self.weight * (x * torch.rsqrt(variance + self.eps))

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(64, 64)
                    self.norm = RMSNorm(64)

                def forward(self, x):
                    return self.norm(self.proj(x))

            block = Block().half()
            """,
        ),
        Invalid(
            """
            import torch
            model = torch.nn.Linear(4096, 4096).half()
            grad_norm = torch.norm(model.weight.grad)
            """,
            expected="""
            import torch
            model = torch.nn.Linear(4096, 4096).half()
            grad_norm = torch.norm(model.weight.grad.float()).type_as(model.weight.grad)
            """,
        ),
        Invalid(
            """
            # summed log-probabilities of a 32,000-token vocabulary: about 10 each, 320,000 in all
            import torch
            import torch.nn.functional as F
            head = torch.nn.Linear(64, 32000).half()
            log_probs = F.log_softmax(head(torch.randn(8, 64, dtype=torch.float16)), dim=-1)
            smoothed = -log_probs.sum(dim=-1)
            """,
            expected="""
            # summed log-probabilities of a 32,000-token vocabulary: about 10 each, 320,000 in all
            import torch
            import torch.nn.functional as F
            head = torch.nn.Linear(64, 32000).half()
            log_probs = F.log_softmax(head(torch.randn(8, 64, dtype=torch.float16)), dim=-1)
            smoothed = -log_probs.sum(dim=-1, dtype=torch.float32)
            """,
        ),
        Invalid(
            """
            import torch
            proj = torch.nn.Linear(64, 64).half()
            h = proj(torch.randn(8, 64, dtype=torch.float16))
            c = torch.cumsum(h.abs() * 2.0, dim=0)
            """,
            expected="""
            import torch
            proj = torch.nn.Linear(64, 64).half()
            h = proj(torch.randn(8, 64, dtype=torch.float16))
            c = torch.cumsum(h.abs() * 2.0, dim=0, dtype=torch.float32)
            """,
        ),
        Invalid(
            """
            import torch
            proj = torch.nn.Linear(64, 64).half()
            h = proj(torch.randn(8, 64, dtype=torch.float16))
            v = h.var(-1)
            """,
            expected="""
            import torch
            proj = torch.nn.Linear(64, 64).half()
            h = proj(torch.randn(8, 64, dtype=torch.float16))
            v = h.float().var(-1).type_as(h)
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.ctx.callee(node)
        method = isinstance(node.func, ast.Attribute) and node.func.attr in opdata.REDUCTIONS
        if not (callee.names & _TORCH.keys() or (method and callee.tensor_method)):
            return
        if find_arg(node, "dtype") is not None or self._seeds_backward():
            return
        hazards: List[Hazard] = []
        site: Optional[Tuple[str, ast.AST, str]] = None
        for obs in self.ctx.observations(node):
            found = self._reduction(obs, node)
            if found is None:
                continue
            op, source, form = found
            squared = squared_base(source)
            if op in _BOUNDED_BY_INPUT and squared is None:
                return  # accumulates in fp32 and cannot (much) exceed its largest input
            if op in _FP32_NORMS and squared is None and _over_one_dim(node, form):
                return  # a row norm: accumulates in fp32, inf only for a norm above 65504
            if op == "sum" and (_is_exp(source) or isinstance(source, ast.Name) and _is_exp(
                    reaching_value(local_scope(self.ctx, node), source.id))):
                return  # hand-written softmax (also through a name): AMP204 reports the exp
            if op == "sum" and squared is None and _weighted_by_parameter(obs, source):
                continue  # a hand-written layer (``(state * conv.weight).sum(-1)``): a GEMM rounds the same total
            tensor = half_of(obs, source)
            if tensor is None or not tensor.dtypes & F16 or obs.keeps_in_fp32(op, tensor):
                continue  # bfloat16 cannot overflow here
            if op in _NEED_LARGE_VALUES and squared is None and not (tensor.learned or tensor.param):
                continue  # the var, norm or sum of values no learned layer produced (masks, pixels, noise)
            if op in _FP32_NORMS and squared is None and tensor.param and not tensor.learned:
                continue  # a weight's own norm (``param.norm()``): weights are small; a gradient's is kept
            site = found
            what = "mean of squares" if squared is not None else f"`{op}`"
            hazards.append(Hazard(obs, f"{what} computed {obs.where(tensor)}; it overflows above 65504 - compute it "
                                       "in float32", obs.label(tensor.dtypes, tensor), tensor))
        if site is None:
            return
        op, source, form = site
        plan = FixPlan("Compute the reduction in float32", Applicability.UNSAFE,
                       lambda fctx: self._fix(fctx, node, op, source, squared_base(source), form))
        self.report_hazard(node, hazards, fix=plan)

    def _seeds_backward(self) -> bool:
        """``y.sum().backward()``: the reduction only seeds backward, whose gradient (ones for a sum)
        does not depend on the value, so an overflowing value changes nothing."""
        attribute, call = self.ctx.parent(), self.ctx.parent(2)
        return isinstance(attribute, ast.Attribute) and attribute.attr == "backward" and isinstance(call, ast.Call)

    def _reduction(self, obs: Observation, node: ast.Call) -> Optional[Tuple[str, ast.AST, str]]:
        name = callee_name(obs, node)
        if name in _TORCH and node.args:
            return _TORCH[name], node.args[0], "function"
        if isinstance(node.func, ast.Attribute) and node.func.attr in opdata.REDUCTIONS:
            receiver = tensor_receiver(obs, node)
            if receiver is not None:
                return node.func.attr, receiver, "method"
        return None

    def _fix(self, fctx: FixContext, node: ast.Call, op: str, source: ast.AST, squared: Optional[ast.AST],
             form: str) -> Optional[CstFix]:
        call = fctx.node(node)
        if not isinstance(call, cst.Call):
            return None
        fix = CstFix("Compute the reduction in float32", Applicability.UNSAFE)
        # ``dtype=`` where the op takes one: always on a method, and on a function whose operand is
        # no simple name to upcast in place (``torch.cumsum(F.softmax(x, -1), -1)``)
        takes_dtype = squared is None and opdata.REDUCTIONS.get(op)
        if takes_dtype and (form == "method" or not is_simple(source)):
            f32, imports = fctx.torch_ref("torch.float32")
            fix.add_imports = imports
            fix.replace(call, codegen.call(call.func, list(call.args) + [codegen.keyword("dtype", f32)], like=call))
            return fix
        base_ast = squared if squared is not None else source
        if not is_simple(base_ast):
            return None
        base = fctx.node(base_ast)
        if base is None:
            return None
        back = cst.parse_expression(fctx.code(base))
        fix.replace(base, codegen.method_call(base, "float"))
        fix.replace(call, lambda updated: codegen.method_call(updated, "type_as", [cst.Arg(back)]))
        return fix
