"""AMP106 gradscaler-with-half-params."""
from __future__ import annotations

import ast

from amp_lint.findings import Severity
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.torch_api import node_key


class GradScalerWithHalfParams(Rule):
    code = "AMP106"
    name = "gradscaler-with-half-params"
    severity = Severity.ERROR
    summary = "GradScaler over float16 parameters"
    tokens = ("GradScaler",)
    docs = """
    ## What it does
    Finds a `GradScaler(...)` whose `step`/`unscale_` receives an optimizer of float16 or
    bfloat16 parameters (a model cast wholesale with `model.half()`, `.to(torch.float16)`, ...),
    followed by dataflow from the cast to the optimizer to the scaler, across files.

    ## Why is this bad?
    `GradScaler.unscale_` (called by `scaler.step` or explicitly) refuses float16 gradients:
    it raises `ValueError: Attempting to unscale FP16 gradients.` on the first step. GradScaler
    is meant for fp32 parameters under `torch.autocast`.

    ## Fix safety
    There is no fix: remove the `.half()` cast and use `torch.autocast` (AMP101's fix does that
    together with the scaler).

    ## References
    - torch 2.13 `torch/amp/grad_scaler.py` (`_unscale_grads_`, "Attempting to unscale FP16 gradients.")
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    """
    VALID = [
        Valid("""
        import torch
        model = Net().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        """),
        Valid("""
        import torch
        model = Net().cuda().half().eval()
        scaler = torch.amp.GradScaler("cuda")
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            model = Net().cuda().half()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        origin = self.ctx.facts.half_scaler(":".join(map(str, node_key(self.ctx.module.relpath, node))))
        if origin is None:
            return
        message = (f"This GradScaler unscales gradients of half-precision parameters (cast at {origin.path}:"
                   f"{origin.line}): it raises \"Attempting to unscale FP16 gradients\"; keep the model in fp32 "
                   "and use `torch.autocast`")
        self.report(node, message, evidence=(self.ctx.observations(node)[0].evidence(None)
                                              if self.ctx.observations(node) else ()))
