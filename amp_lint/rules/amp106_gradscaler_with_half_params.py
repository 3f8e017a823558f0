"""AMP106 gradscaler-with-half-params."""
from __future__ import annotations

from amp_lint.findings import Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class GradScalerWithHalfParams(Rule):
    code = "AMP106"
    name = "gradscaler-with-half-params"
    severity = Severity.ERROR
    summary = "GradScaler over float16 parameters"
    tokens = ("GradScaler",)
    requires = ("training",)
    docs = """
    ## What it does
    Finds a `GradScaler(...)` construction in a file whose trained model is cast wholesale to
    float16 (`model.half()`, `.to(torch.float16)`, ...) and optimized by a standard optimizer.

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
            """,
        ),
    ]

    def finish(self) -> None:
        training = self.ctx.analyses["training"]
        if training.has_master_weights():
            return
        optimized = training.optimized_models()
        half = [c for c in training.model_casts() if c.dtype == "float16" and c.target in optimized
                and optimized[c.target].kind in ("standard", "builder")]
        if not half:
            return
        for site in training.scalers:
            self.report(site.node, f"GradScaler over float16 parameters of `{half[0].target}`: unscaling raises "
                        f"\"Attempting to unscale FP16 gradients.\"; keep the model in fp32 and use torch.autocast",
                        precision_context="PURE_FP16")
