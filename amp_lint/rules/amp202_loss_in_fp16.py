"""AMP202 loss-in-fp16."""
from __future__ import annotations

import ast
from typing import List, Optional

from amp_lint.data.ops import LOSSES, MODULE_OPS
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import PROJECT_TOKENS, callee_name, half_of, module_class
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid
from amp_lint.semantics.facts import Observation

_KEYWORDS = ("input", "target")


class LossInFp16(Rule):
    code = "AMP202"
    skips_test_files = True
    name = "loss-in-fp16"
    severity = Severity.ERROR
    summary = "Loss computed on half-precision inputs outside autocast"
    fix_applicability = Applicability.UNSAFE
    tokens = ("loss", "Loss", "entropy", "kl_div") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds a loss (`F.cross_entropy`, `F.mse_loss`, ... or an `nn.*Loss` instance) called on
    float16/bfloat16 inputs outside autocast: logits of a model cast with `.half()`, tensors cast
    to half explicitly.

    ## Why is this bad?
    Autocast (CUDA and CPU) runs every loss in float32. Outside it the loss runs in the input
    dtype. On the CPU the reduction accumulates per-token losses in float16, so a mean over 16k
    tokens at ~6 nats each passes 65504 and is `inf` although every term is finite. CUDA's loss
    kernels accumulate in float32 and round only the result, which still holds 3 significant
    digits and cannot exceed 65504 (a `reduction="sum"` over many tokens is `inf`). A hand-written
    loss scale (`loss * 65536` of a float16 loss) overflows once the loss passes 1.0;
    `torch.amp.GradScaler.scale` returns float32 (it multiplies by a float32 one-element tensor).

    ## Fix safety
    The fix calls `.float()` on the half inputs (class-index targets are left alone). Unsafe: the
    loss becomes float32 (backward then flows an fp32 gradient into the half logits, which is
    fine) and its value changes (it becomes correct).

    ## References
    - PyTorch docs, Autocast Op Reference (losses such as `cross_entropy`, `nll_loss`, `mse_loss`
      autocast to float32): https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - pytorch/pytorch `aten/src/ATen/autocast_mode.h` (CUDA fp32 list) and `aten/src/ATen/autocast_mode.cpp`
      (CPU registrations):
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp
    - Measured with torch 2.13.0 (CPU): outside autocast a loss of float16 inputs is float16;
      `torch.tensor(2.0).half() * 65536` is `inf`; `GradScaler("cpu").scale(loss)` of a float16 loss
      is float32
    - Measured: `fixtures/numerics/AMP202_lm_cross_entropy.py` (mean over 16k tokens) is `inf` on the
      CPU (torch 2.13.0) and within 0.01 % of float32 on an NVIDIA H100 (torch 2.11.0+cu130)
    """
    VALID = [
        Valid("""
        import torch
        import torch.nn.functional as F
        logits = torch.randn(4, 10).half()
        loss = F.cross_entropy(logits.float(), torch.zeros(4, dtype=torch.long))
        """),
        Valid("""
        import torch
        import torch.nn.functional as F
        def step(model, x, y):
            with torch.autocast("cuda"):
                out = model(x)
                return F.cross_entropy(out, y)
        """),
        Valid("""
        import torch
        import torch.nn as nn
        criterion = nn.MSELoss()
        pred = torch.randn(4)
        loss = criterion(pred, torch.randn(4))
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            model = nn.Linear(16, 10).half()
            logits = model(torch.randn(4, 16).half())
            loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))
            """,
            expected="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            model = nn.Linear(16, 10).half()
            logits = model(torch.randn(4, 16).half())
            loss = F.cross_entropy(logits.float(), torch.zeros(4, dtype=torch.long))
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            criterion = nn.MSELoss()
            pred = torch.randn(4, dtype=torch.float16)
            target = torch.randn(4).half()
            loss = criterion(pred, target)
            """,
            expected="""
            import torch
            import torch.nn as nn
            criterion = nn.MSELoss()
            pred = torch.randn(4, dtype=torch.float16)
            target = torch.randn(4).half()
            loss = criterion(pred.float(), target.float())
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.ctx.callee(node)
        if not any(n.startswith("torch.nn.functional.") for n in callee.names) and not callee.modules:
            return
        hazards: List[Hazard] = []
        half_inputs: List[ast.AST] = []
        for obs in self.ctx.observations(node):
            loss = self._loss(obs, node)
            if loss is None:
                continue
            inputs = self._inputs(node, LOSSES[loss])
            halves = [(arg, half_of(obs, arg)) for arg in inputs]
            # autocast (CUDA and CPU) runs every loss in float32, where it is in force for the input
            halves = [(arg, t) for arg, t in halves
                      if t is not None and not obs.protected(t) and not obs.fp32_lists_for(t)]
            if not halves:
                continue
            for arg, _ in halves:
                if arg not in half_inputs:
                    half_inputs.append(arg)
            tensor = halves[0][1]
            hazards.append(Hazard(obs, f"`{loss}` computed {obs.where(tensor)}; call `.float()` on its inputs",
                                  obs.label(tensor.dtypes, tensor), tensor))
        if hazards:
            plan = FixPlan("Call `.float()` on the loss inputs", Applicability.UNSAFE,
                           lambda fctx: self._fix(fctx, half_inputs))
            self.report_hazard(node, hazards, fix=plan)

    def _loss(self, obs: Observation, node: ast.Call) -> Optional[str]:
        name = callee_name(obs, node)
        if name and name.startswith("torch.nn.functional."):
            short = name.rsplit(".", 1)[-1]
            return short if short in LOSSES else None
        cls = module_class(obs, node)
        if cls and cls.startswith("torch.nn."):
            op = MODULE_OPS.get(cls.rsplit(".", 1)[-1])
            return op if op in LOSSES else None
        return None

    @staticmethod
    def _inputs(node: ast.Call, count: int) -> List[ast.AST]:
        inputs: List[ast.AST] = [a for a in node.args[:count] if not isinstance(a, ast.Starred)]
        inputs.extend(kw.value for kw in node.keywords if kw.arg in _KEYWORDS[:count])
        return inputs

    def _fix(self, fctx: FixContext, inputs: List[ast.AST]) -> Optional[CstFix]:
        fix = CstFix("Call `.float()` on the loss inputs", Applicability.UNSAFE)
        for arg in inputs:
            found = fctx.node(arg)
            if found is None:
                return None
            fix.replace(found, codegen.method_call(found, "float"))
        return fix
