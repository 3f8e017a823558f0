"""AMP204 overflow-prone-pointwise-in-fp16."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from amp_lint.data.numerics import FP16_CUBE_OVERFLOW, FP16_EXP_OVERFLOW, FP16_MAX, FP16_SQUARE_OVERFLOW
from amp_lint.data.ops import REDUCTIONS
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import (
    PROJECT_TOKENS, callee_name, half_of, last_binding, local_scope, number, reaching_value, tensor_receiver,
)
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid
from amp_lint.semantics.facts import Observation
from amp_lint.semantics.values import F16

_EXP = {"exp", "expm1", "cosh", "sinh"}
#: in-place forms (``x.pow_(2)``): autocast does not apply to them, so they run in the tensor's dtype
_INPLACE = {name + "_" for name in _EXP | {"pow", "square"}}
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
        return f"x**{exponent:g} overflows float16 above {FP16_MAX ** (1 / exponent):.2f}"
    return None


class OverflowPronePointwiseInFp16(Rule):
    code = "AMP204"
    skips_test_files = True
    name = "overflow-prone-pointwise-in-fp16"
    severity = Severity.WARNING
    summary = "exp / pow / square on float16 values outside an fp32 region"
    fix_applicability = Applicability.UNSAFE
    tokens = ("exp", "pow", "**", "square", "cosh", "sinh") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds `exp`/`expm1`/`cosh`/`sinh`, `pow`/`**` with an exponent >= 2 and `square` applied to
    float16 values where nothing upcasts them (CUDA autocast runs exp and pow in float32, and
    `square`, which has no kernel of its own and runs as `pow(x, 2)`; CPU autocast and pure fp16
    do not), including the hand-written softmax `exp(x) / exp(x).sum()`.
    The operand must come from a learned layer (a matmul, convolution, embedding or model call,
    through any arithmetic): that is the evidence that its values can be large. Values no layer
    produced (noise levels, timesteps, random draws) and the outputs of bounded ops (sigmoid, tanh,
    softmax, sin/cos/arcsin, normalize) are not reported. Nor are operands the code bounds itself:
    a max-subtracted `exp(x - x.max())` or `exp(x - torch.logsumexp(x, -1))` (directly, through a
    local name, or subtracted in place: `x -= x.amax(-1, keepdim=True)`), the exp of log-probabilities (`F.log_softmax(x, -1).exp()`, at most 1), a clamped
    value whose bound keeps the result finite (`exp(0.5 * logvar.clamp(-30, 20))` is at most e^10),
    and a square that feeds a reduction (AMP203 reports that one).

    ## Why is this bad?
    float16 tops out at 65504: `exp(x)` is `inf` above 11.09, `x**2` above 255.9, `x**3` above
    40.3. A temperature-scaled logit of 14 makes a hand-written softmax `inf / inf = NaN`.

    In-place forms (`x.pow_(2)`, `x.exp_()`, `x.square_()`) are reported under CUDA autocast too:
    autocast does not apply to in-place ops, so they run in the tensor's float16.

    The exp of a negated non-negative value (`torch.exp(-z.abs())`, `exp(-x ** 2)`) is at most 1 and
    is not reported either.

    ## Fix safety
    The fix computes the op in float32 (`torch.exp(x.float())`, `x.float() ** 2`). Unsafe: the
    result is float32 from then on. In-place forms get no fix: a float32 copy would leave the tensor
    they change as it was.

    ## References
    - PyTorch docs, Autocast Op Reference (`exp` and `pow` autocast to float32 on CUDA):
      https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - pytorch/pytorch `aten/src/ATen/autocast_mode.h` (CUDA fp32 list):
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h
    - PyTorch docs, "Autocasting": in-place ops and ops called with `out=` are not autocast:
      https://pytorch.org/docs/stable/amp.html#op-eligibility
    - Measured with torch 2.13.0 (CPU): float16 `exp([11.0859375, 11.09375])` is `[65248, inf]`;
      `[255.875, 256] ** 2` is `[65472, inf]` (`torch.finfo(torch.float16).max` is 65504)
    """
    VALID = [
        Valid("""
        import torch
        x = torch.nn.Linear(8, 8).half()(torch.randn(2, 8).half())
        y = torch.exp(x.float())
        z = torch.exp(x - x.max(dim=-1, keepdim=True).values)
        p = torch.nn.functional.log_softmax(x, dim=-1).exp()
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
        x = torch.nn.Linear(8, 8).bfloat16()(torch.randn(2, 8).bfloat16())
        y = torch.exp(x)
        """),
        # a fresh buffer (`new_zeros`) that holds log-probabilities: no layer made its values
        Valid("""
        import torch
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(64, 1000)
                self.lsm = torch.nn.LogSoftmax(dim=-1)

            def forward(self, h):
                y = self.proj(h)
                out = y.new_zeros(y.shape)
                out[:, :500] = self.lsm(y[:, :500].float())
                return out.exp_()

        head = Head().half()
        """),
        # the exp of a negated absolute value is at most 1
        Valid("""
        import torch
        class LaplaceHead(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(64, 64)

            def forward(self, h):
                z = self.proj(h)
                return torch.sign(z) * (1.0 - torch.exp(-torch.abs(z)))

        head = LaplaceHead().half()
        """),
        # values no learned layer produced: noise levels, random draws, bounded activations
        Valid("""
        import torch
        t = torch.rand(16).half()
        weight = 1 / (1 + (1 - t) ** 2)
        decay = torch.exp(-4.0 * t)
        gate = torch.sigmoid(torch.nn.Linear(8, 8).half()(torch.randn(2, 8).half())) ** 2
        """),
        # the code bounds the operand below the overflow: clamp, then a constant multiple
        Valid("""
        import torch
        head = torch.nn.Linear(32, 16).half()
        def sample(h):
            log_var = head(h).clamp(-20.0, 10.0)
            return torch.exp(0.5 * log_var)
        sample(torch.randn(4, 32).half())
        """),
        # exp of scores after subtracting their row maximum in place
        Valid("""
        import torch
        def attend(q, k):
            scores = q.half() @ k.half().transpose(-1, -2)
            scores -= scores.amax(dim=-1, keepdim=True)
            weights = torch.exp(scores)
            return weights / weights.sum(dim=-1, keepdim=True)
        attend(torch.randn(4, 8), torch.randn(4, 8))
        """),
        # exp of scores minus their own logsumexp, through a local name
        Valid("""
        import torch
        def attend(q, k):
            with torch.autocast("cpu", dtype=torch.float16):
                scores = q @ k.transpose(-1, -2)
                normaliser = torch.logsumexp(scores, dim=-1, keepdim=True)
                return torch.exp(scores - normaliser)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            class Decorrelation(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.expander = torch.nn.Linear(256, 1024)

                def forward(self, x):
                    z = self.expander(x)
                    cov = z.T @ z / (z.shape[0] - 1)
                    # autocast runs `cov.pow(2)` in float32, but not the in-place `pow_`
                    return cov.pow_(2).sum()

            model = Decorrelation().cuda()
            for x in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x)
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import torch
            proj = torch.nn.Linear(16, 8).half()
            logits = proj(torch.randn(4, 16).half()) / 0.07
            probs = torch.exp(logits) / torch.exp(logits).sum(dim=-1, keepdim=True)
            """,
            expected="""
            import torch
            proj = torch.nn.Linear(16, 8).half()
            logits = proj(torch.randn(4, 16).half()) / 0.07
            probs = torch.exp(logits.float()) / torch.exp(logits.float()).sum(dim=-1, keepdim=True)
            """,
            count=2,
        ),
        Invalid(
            """
            import torch
            fc = torch.nn.Linear(64, 256).half()
            h = fc(torch.randn(2, 64, dtype=torch.float16))
            y = 0.5 * h * (1 + torch.tanh(0.79788456 * (h + 0.044715 * h ** 3)))
            """,
            expected="""
            import torch
            fc = torch.nn.Linear(64, 256).half()
            h = fc(torch.randn(2, 64, dtype=torch.float16))
            y = 0.5 * h * (1 + torch.tanh(0.79788456 * (h + 0.044715 * h.float() ** 3)))
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
        # a clamp that still lets exp overflow (e^20 > 65504) is no bound
        Invalid(
            """
            import torch
            head = torch.nn.Linear(32, 16).half()
            def sample(h):
                log_var = head(h).clamp(-30.0, 20.0)
                return torch.exp(log_var)
            sample(torch.randn(4, 32).half())
            """,
            expected="""
            import torch
            head = torch.nn.Linear(32, 16).half()
            def sample(h):
                log_var = head(h).clamp(-30.0, 20.0)
                return torch.exp(log_var.float())
            sample(torch.randn(4, 32).half())
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.ctx.callee(node)
        method = isinstance(node.func, ast.Attribute) and node.func.attr in _EXP | {"square", "pow"} | _INPLACE
        if not (callee.names & _TORCH.keys() or (method and callee.tensor_method)):
            return
        self._check(node, lambda obs: self._match_call(obs, node))

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Pow):
            self._check(node, lambda obs: self._match_power(obs, node))

    def _match_power(self, obs: Observation, node: ast.BinOp) -> Optional[Tuple[str, ast.AST, Optional[float]]]:
        exponent = number(obs, node.right)
        if exponent is not None and exponent >= 2:
            return "pow", node.left, exponent
        return None

    def _match_call(self, obs: Observation, node: ast.Call) -> Optional[Tuple[str, ast.AST, Optional[float]]]:
        name = callee_name(obs, node)
        if name in _TORCH and node.args:
            op = _TORCH[name]
            exponent = number(obs, node.args[1]) if op == "pow" and len(node.args) > 1 else None
            if op == "pow" and (exponent is None or exponent < 2):
                return None
            return op, node.args[0], exponent
        receiver = tensor_receiver(obs, node)
        if receiver is not None:
            op = node.func.attr  # type: ignore[attr-defined]
            base = op[:-1] if op in _INPLACE else op
            if base in _EXP and not node.args:
                return op, receiver, None
            if base == "square" and not node.args:
                return op, receiver, 2.0
            if base == "pow" and node.args:
                exponent = number(obs, node.args[0])
                if exponent is not None and exponent >= 2:
                    return op, receiver, exponent
        return None

    def _check(self, node: ast.AST, match) -> None:
        hazards: List[Hazard] = []
        source: Optional[ast.AST] = None
        for obs in self.ctx.observations(node):
            found = match(obs)
            if found is None:
                continue
            op, src, exponent = found
            inplace = op in _INPLACE
            base = op[:-1] if inplace else op
            threshold = _threshold(base, exponent)
            if threshold is None:
                continue
            if base in ("pow", "square") and not inplace and self._feeds_reduction():
                return  # AMP203 reports the reduction of the square (an in-place square overflows first)
            scope = local_scope(self.ctx, node)
            if base in _EXP and _nonpositive(src, scope):
                return
            if _bounded_below_overflow(obs, base, src, exponent, scope):
                return
            tensor = half_of(obs, src)
            if tensor is None or not tensor.dtypes & F16 or (not inplace and obs.fp32_lists_for(tensor)) \
                    or not (tensor.learned or tensor.param):
                continue
            source = src
            where = obs.where(tensor) + (", in place, which autocast does not upcast" if inplace else "")
            hazards.append(Hazard(obs, f"`{op}` computed {where}: {threshold}; compute it in float32",
                                  obs.label(tensor.dtypes, tensor), tensor))
        if source is None:
            return
        # an in-place op has no float32 form that changes the tensor it was given: no fix
        plan = None if inplace else FixPlan("Compute it in float32", Applicability.UNSAFE,
                                            lambda fctx: self._fix(fctx, source))
        self.report_hazard(node, hazards, fix=plan)

    @staticmethod
    def _fix(fctx: FixContext, source: ast.AST) -> Optional[CstFix]:
        found = fctx.node(source)
        if found is None:
            return None
        fix = CstFix("Compute it in float32", Applicability.UNSAFE)
        fix.replace(found, codegen.method_call(found, "float"))
        return fix

    def _feeds_reduction(self) -> bool:
        """The square is the receiver/argument of a mean/sum (AMP203's case)."""
        parent = self.ctx.parent()
        if isinstance(parent, ast.Attribute) and parent.attr in REDUCTIONS:
            return True
        if isinstance(parent, ast.Call) and self.ctx.stack[-1] in parent.args:
            func = parent.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return name in REDUCTIONS
        return False


#: Ops whose result is <= 0 (log-probabilities): their exp cannot overflow.
_NONPOSITIVE = frozenset({"log_softmax", "logsigmoid"})
#: Ops whose result is >= 0: the exp of their negation is at most 1.
_NONNEGATIVE = frozenset({"abs", "square", "relu", "softplus", "sigmoid", "exp", "norm"})


_MAXIMA = frozenset({"max", "amax", "logsumexp", "values"})


def _nonpositive(expr: ast.AST, scope: Optional[Tuple[ast.AST, int]]) -> bool:
    """``x - x.max(...)`` / ``x - logsumexp(...)`` / ``log_softmax(x)``, directly or through a
    local name (``lse = torch.logsumexp(x, -1)`` then ``exp(x - lse)``), or a negated non-negative
    value (``-z.abs()``): exp of a value <= 0 cannot overflow."""
    if isinstance(expr, ast.Call):
        return _call_name(expr) in _NONPOSITIVE
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):  # ``exp(-z.abs())``: at most 1
        inner = expr.operand
        return isinstance(inner, ast.Call) and _call_name(inner) in _NONNEGATIVE or (
            isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow) and isinstance(inner.right, ast.Constant)
            and inner.right.value == 2)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Sub):
        return _names_a_maximum(expr.right, scope)
    if isinstance(expr, ast.Name):  # ``x -= x.amax(-1, keepdim=True)`` just before ``exp(x)``
        binding = last_binding(scope, expr.id)
        return isinstance(binding, ast.AugAssign) and isinstance(binding.op, ast.Sub) \
            and _names_a_maximum(binding.value, scope)
    return False


def _names_a_maximum(expr: ast.AST, scope: Optional[Tuple[ast.AST, int]]) -> bool:
    """Whether ``expr`` is (or holds) a maximum or a logsumexp: ``x.max(...)``, ``row_max``, ``lse``."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in _MAXIMA:
            return True
        if isinstance(node, ast.Name):
            if "max" in node.id.lower() or "lse" in node.id.lower():
                return True
            value = reaching_value(scope, node.id)
            if isinstance(value, ast.Call) and _call_name(value) in _MAXIMA:
                return True
    return False


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


_CLAMPS = frozenset({"clamp", "clip", "clamp_", "clip_"})


def _bound(obs: Observation, expr: ast.AST, scope: Optional[Tuple[ast.AST, int]], magnitude: bool,
           depth: int = 0) -> Optional[float]:
    """An upper bound of ``expr`` (of ``|expr|`` when ``magnitude``) that the code itself sets:
    ``clamp(x, lo, hi)``, a constant multiple of one, or a local name assigned one (None: none known)."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        value = reaching_value(scope, expr.id)
        return _bound(obs, value, scope, magnitude, depth + 1) if value is not None else None
    if isinstance(expr, ast.Call) and _call_name(expr) in _CLAMPS:
        func = expr.func
        function_form = isinstance(func, ast.Name) or (isinstance(func.value, ast.Name)  # type: ignore[attr-defined]
                                                        and func.value.id in ("torch", "np", "numpy"))  # type: ignore[attr-defined]
        bounds = list(expr.args[1 if function_form else 0:])
        lo = bounds[0] if bounds else None
        hi = bounds[1] if len(bounds) > 1 else None
        for keyword in expr.keywords:
            if keyword.arg == "min":
                lo = keyword.value
            elif keyword.arg == "max":
                hi = keyword.value
        high = number(obs, hi) if hi is not None else None
        if high is None:
            return None
        if not magnitude:
            return high
        low = number(obs, lo) if lo is not None else None
        return max(abs(low), abs(high)) if low is not None else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Div)):
        divides = isinstance(expr.op, ast.Div)
        pairs = [(expr.right, expr.left)] if divides else [(expr.left, expr.right), (expr.right, expr.left)]
        for scale_node, inner in pairs:
            scale = number(obs, scale_node)
            if scale is None or scale <= 0:
                continue
            bound = _bound(obs, inner, scope, magnitude, depth + 1)
            if bound is None:
                return None
            return bound / scale if divides else bound * scale
    return None


def _bounded_below_overflow(obs: Observation, op: str, src: ast.AST, exponent: Optional[float],
                            scope: Optional[Tuple[ast.AST, int]]) -> bool:
    """The code bounds the operand below the float16 overflow of ``op`` (``exp(0.5 * logvar)``
    after ``logvar = logvar.clamp(-30.0, 20.0)``)."""
    if op in ("exp", "expm1"):
        bound = _bound(obs, src, scope, magnitude=False)
        return bound is not None and bound < FP16_EXP_OVERFLOW
    if op in ("pow", "square") and exponent is not None and exponent >= 2:
        bound = _bound(obs, src, scope, magnitude=True)
        return bound is not None and bound ** exponent < FP16_MAX
    return False
