"""AMP502 apex-amp."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from amp_lint.data.deprecations import APEX_AMP_APIS
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.values import Ext, options


class ApexAmp(Rule):
    code = "AMP502"
    name = "apex-amp"
    severity = Severity.MIGRATION
    summary = "NVIDIA apex mixed precision (removed from apex in 2025)"
    fix_applicability = Applicability.UNSAFE
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
    The fix is unsafe (numerics change: apex O1 patched functions, autocast uses its own op
    lists) and offered when the whole `apex.amp` use of the file sits in one recognised training
    loop. It migrates to native AMP in one edit: `amp.initialize(...)` is removed (model and
    optimizer are kept as they are, in fp32), forward + loss are wrapped in
    `torch.autocast(device_type=<device>.type, dtype=torch.float16)` (`opt_level` O1, O2 and O3
    all become fp16 autocast with fp32 weights; O0 is not migrated), one `torch.amp.GradScaler`
    is created after the optimizer, `with amp.scale_loss(loss, opt) as s: s.backward()` becomes
    `scaler.scale(loss).backward()`, `optimizer.step()` becomes `scaler.step(optimizer)` +
    `scaler.update()`, `amp.master_params(opt)` becomes the model's `parameters()` after a
    `scaler.unscale_(opt)`, and the apex imports are removed. `amp.state_dict()`,
    `FP16_Optimizer` and `apex.parallel` are reported without a fix (the message says what to
    use instead). apex's `loss_scale=` option is not carried over (GradScaler is dynamic).

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
            import torch
            from apex import amp

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            for x, y in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(x.to(device)), y.to(device))
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
                torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
                optimizer.step()
            """,
            expected="""
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            scaler = torch.amp.GradScaler(device.type)
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type=device.type, dtype=torch.float16):
                    loss = loss_fn(model(x.to(device)), y.to(device))
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            count=3,
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
        self.imports: List[ast.AST] = []
        self.pending: List[Tuple[ast.AST, str]] = []
        self.loads: Dict[str, int] = {}

    def apex_name(self, node: ast.AST) -> Optional[str]:
        for obs in self.ctx.observations(node):
            for option in options(obs.value(node)):
                if isinstance(option, Ext) and option.name in APEX_AMP_APIS:
                    return option.name
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads[node.id] = self.loads.get(node.id, 0) + 1
        self._check(node)

    def _check(self, node: ast.AST) -> None:
        if not isinstance(getattr(node, "ctx", None), ast.Load):
            return
        parent = self.ctx.parent()
        if isinstance(parent, ast.Attribute) and parent.value is node and self.apex_name(parent) is not None:
            return  # the longer chain is reported
        qualified = self.apex_name(node)
        if qualified is None:
            return
        target = parent if isinstance(parent, ast.Call) and parent.func is node else node
        self.pending.append((target, qualified))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imports.append(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.append(node)

    def finish(self) -> None:
        plan, reason = self._migration()
        for target, qualified in self.pending:
            message = f"`{qualified}` was removed from NVIDIA apex; {APEX_AMP_APIS[qualified]}"
            in_amp = qualified.startswith("apex.amp")
            if in_amp and plan is None and reason:
                message += f" (not migrated automatically: {reason})"
            self.report(target, message, fix=plan if in_amp else None)
        for stmt in self.imports:
            for qualified, local in _bindings(stmt):
                if qualified.startswith("apex.") and qualified in APEX_AMP_APIS and self.loads.get(local, 0) == 0:
                    self.report(stmt, f"Unused import of `{qualified}`, removed from NVIDIA apex")

    def _migration(self):
        """The one fix migrating the file's apex loop to torch.amp, or (None, why not)."""
        if not any(q.startswith("apex.amp") for _, q in self.pending):
            return None, ""
        if any(not q.startswith("apex.amp") for _, q in self.pending):
            return None, "the file also uses other apex APIs; migrate those first"
        from amp_lint.rules._training import apex_migration

        return apex_migration(self.ctx)


def _bindings(stmt: ast.AST):
    """(qualified name, local name) of each name an import statement binds."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                yield alias.name, alias.asname
            else:
                yield alias.name.split(".")[0], alias.name.split(".")[0]
    elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        for alias in stmt.names:
            if alias.name != "*":
                yield f"{stmt.module}.{alias.name}", alias.asname or alias.name
