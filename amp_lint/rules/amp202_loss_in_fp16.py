"""AMP202 loss-in-fp16."""
from __future__ import annotations

from typing import List, Optional

import libcst as cst

from amp_lint.analysis.precision import PROJECT_TOKENS, N, is_half, method_call, per_context, where
from amp_lint.data.ops import LOSSES, MODULE_OPS
from amp_lint.engine.fixes import CstFix
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid

_KEYWORDS = ("input", "target")


class LossInFp16(Rule):
    code = "AMP202"
    name = "loss-in-fp16"
    severity = Severity.ERROR
    summary = "Loss computed on half-precision inputs outside autocast"
    fix_applicability = Applicability.UNSAFE
    tokens = ("loss", "Loss", "entropy", "kl_div") + PROJECT_TOKENS
    requires = ("precision",)
    docs = """
    ## What it does
    Finds a loss (`F.cross_entropy`, `F.mse_loss`, ... or an `nn.*Loss` instance) called on
    float16/bfloat16 inputs outside autocast: logits of a model cast with `.half()`, tensors cast
    to half explicitly.

    ## Why is this bad?
    Autocast (CUDA and CPU) runs every loss in float32. Outside it the loss runs in the input
    dtype: the reduction accumulates per-token losses in float16, so a mean over 16k tokens at ~6
    nats each passes 65504 and is `inf` although every term is finite; small losses lose their
    digits, and a loss-scaled fp16 loss overflows at 1.0 x 65536.

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
      `torch.tensor(2.0).half() * 65536` is `inf`
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

    def visit_Call(self, node: cst.Call) -> None:
        prec = self.ctx.analyses["precision"]
        qualified = self.ctx.qualify(node.func)
        loss: Optional[str] = None
        if qualified and qualified.startswith("torch.nn.functional."):
            short = qualified.rsplit(".", 1)[-1]
            if short in LOSSES:
                loss = short
        elif isinstance(node.func, (cst.Name, cst.Attribute)) and qualified is None:
            mod = prec.module_of(node.func)
            if mod is not None and mod.cls and mod.cls.startswith("torch.nn."):
                op = MODULE_OPS.get(mod.cls.rsplit(".", 1)[-1])
                if op in LOSSES:
                    loss = op
        if loss is None:
            return
        count = LOSSES[loss]
        inputs: List[cst.Arg] = []
        positional = [a for a in node.args if a.keyword is None and not a.star]
        inputs.extend(positional[:count])
        inputs.extend(a for a in node.args if a.keyword is not None and a.keyword.value in _KEYWORDS[:count])
        if not inputs:
            return
        vectors = [prec.value(a.value) for a in inputs]

        def decide(context, i):
            if context.kind == "AUTOCAST":
                return None
            half = [v[i] for v in vectors if is_half(v[i])]
            if not half:
                return None
            return f"`{loss}` computed {where(context, half[0])}; call `.float()` on its inputs"

        messages = per_context(prec, decide)
        if not any(messages):
            return
        half_args = [a for a, v in zip(inputs, vectors) if any(is_half(v[i]) for i in range(N) if messages[i])]
        fix = CstFix("Call `.float()` on the loss inputs", Applicability.UNSAFE)
        for arg in half_args:
            fix.replace(arg.value, method_call(arg.value, "float"))
        prec.report_when(self, node, messages, fix=fix)
