"""AMP502 apex-amp."""
from __future__ import annotations

import libcst as cst

from amp_lint.data.deprecations import APEX_AMP_APIS
from amp_lint.findings import Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class ApexAmp(Rule):
    code = "AMP502"
    name = "apex-amp"
    severity = Severity.MIGRATION
    summary = "NVIDIA apex mixed precision (removed from apex in 2025)"
    tokens = ("apex",)
    docs = """
    ## What it does
    Finds uses of `apex.amp` (`initialize`, `scale_loss`, `master_params`, ...),
    `apex.fp16_utils` (`FP16_Optimizer`, `network_to_half`) and `apex.parallel`.

    ## Why is this bad?
    apex's mixed-precision and parallel wrappers were deprecated in 2022 and removed from
    NVIDIA/apex in May 2025 (commit cb65b8ed, "remove old features: amp, ddp, and rnn"): a fresh
    install no longer has them, so the script cannot run. Native `torch.amp` (autocast +
    GradScaler) and `torch.nn.parallel.DistributedDataParallel` replace them.

    ## Fix safety
    No automatic fix yet: the message says what to use instead.

    ## References
    - https://github.com/NVIDIA/apex/pull/1896
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    """
    VALID = [
        Valid("""
        import torch
        scaler = torch.amp.GradScaler("cuda")
        """),
        Valid("""
        from mylib import amp
        amp.initialize(model)
        """),
        Valid("""
        try:
            from apex.normalization import FusedLayerNorm
        except ImportError:
            FusedLayerNorm = None
        """),
    ]
    INVALID = [
        Invalid(
            """
            from apex import amp
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
            """,
            count=2,
        ),
        Invalid(
            """
            from apex.fp16_utils import FP16_Optimizer
            optimizer = FP16_Optimizer(optimizer, dynamic_loss_scale=True)
            """,
        ),
        Invalid(
            """
            import apex
            model = apex.parallel.DistributedDataParallel(model)
            """,
        ),
        Invalid(
            """
            from apex import amp
            """,
        ),
        Invalid(
            """
            try:
                from apex import amp
                has_apex = True
            except ImportError:
                amp = None
                has_apex = False

            def backward(loss, optimizer):
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
            """,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.imports = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        if self.ctx.is_store(node):
            return
        parent = self.ctx.parent()
        if isinstance(parent, cst.Attribute) and parent.value is node:
            qualified_parent = self.ctx.qualify(parent)
            if qualified_parent in APEX_AMP_APIS:
                return  # the longer chain is reported
        qualified = self.ctx.qualify(node)
        if qualified not in APEX_AMP_APIS:
            return
        target = parent if isinstance(parent, cst.Call) and parent.func is node else node
        self.report(target, f"`{qualified}` was removed from NVIDIA apex; {APEX_AMP_APIS[qualified]}")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.append(node)

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.append(node)

    def finish(self) -> None:
        names = self.ctx.names
        for stmt in self.imports:
            for binding in names.bindings_for_statement(stmt):
                if binding.qualified.startswith("apex.") and binding.qualified in APEX_AMP_APIS and names.uses[binding.local] == 0:
                    self.report(stmt, f"Unused import of `{binding.qualified}`, removed from NVIDIA apex")
