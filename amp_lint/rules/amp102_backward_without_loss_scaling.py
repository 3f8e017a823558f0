"""AMP102 backward-without-loss-scaling."""
from __future__ import annotations

from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class BackwardWithoutLossScaling(Rule):
    code = "AMP102"
    name = "backward-without-loss-scaling"
    severity = Severity.ERROR
    summary = "`.backward()` on an fp16 loss without a GradScaler"
    fix_applicability = Applicability.UNSAFE
    tokens = ("backward",)
    requires = ("training",)
    docs = """
    ## What it does
    Finds `.backward()` on a loss computed under float16 autocast (AUTOCAST_FP16) or by a model
    cast wholesale to float16 (PURE_FP16) when the file has no `GradScaler` or other loss scaler
    (apex, a master-weight optimizer wrapper, a hand-written `(loss * scale).backward()`).
    bfloat16 needs no loss scaling and is not reported.

    ## Why is this bad?
    fp16's smallest subnormal is 6e-8 and its smallest normal 6.1e-5: many activation gradients
    are smaller, so without scaling they flush to zero and those weights stop learning, silently.
    `torch.amp.GradScaler` multiplies the loss before backward, unscales before the step, skips
    steps whose gradients overflowed and adapts the scale.

    ## Fix safety
    The fix is unsafe: it creates one `torch.amp.GradScaler(<device>.type)` after the optimizer,
    rewrites `loss.backward()` to `scaler.scale(loss).backward()` and `optimizer.step()` to
    `scaler.step(optimizer)` + `scaler.update()`, and adds `scaler.unscale_(optimizer)` before
    gradient clipping. For a model cast with `.half()` the same fix also removes the cast and
    adds autocast (as AMP101's fix does): a GradScaler over fp16 parameters raises "Attempting
    to unscale FP16 gradients". Skipped steps change the step count seen by LR schedulers.

    ## References
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    """
    VALID = [
        Valid("""
        import torch
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        """),
        Valid("""
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            def train(model, loader, optimizer):
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast(device_type="cuda", dtype=torch.float16):
                        loss = loss_fn(model(x.cuda()), y.cuda())
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
            expected="""
            import torch

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler("cuda")
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast(device_type="cuda", dtype=torch.float16):
                        loss = loss_fn(model(x.cuda()), y.cuda())
                    scaler.scale(loss).backward()
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
        ),
        Invalid(
            """
            import torch

            model = Net().cuda().half()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(x.cuda().half()), y.cuda())
                loss.backward()
                optimizer.step()
            """,
            expected="""
            import torch

            model = Net().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x.cuda()), y.cuda())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
    ]

    def finish(self) -> None:
        training = self.ctx.analyses["training"]
        if training.scalers or training.has_master_weights():
            return
        pure = [c for c in training.model_casts() if c.dtype == "float16"]
        for loop in training.loops:
            if loop.scaled or loop.manual_scale or loop.apex_with is not None:
                continue
            if loop.autocast is not None and loop.autocast.dtype == "float16":
                context = "AUTOCAST_FP16"
            elif pure and not (loop.autocast is not None and loop.autocast.dtype == "bfloat16"):
                context = "PURE_FP16"
            else:
                continue
            fix, reason = training.migration(
                loop, title="Route backward/step through a torch.amp.GradScaler", remove_casts=context == "PURE_FP16")
            message = (f"`.backward()` on a float16 loss ({context}) without loss scaling: small gradients flush to "
                       f"zero; use `torch.amp.GradScaler`")
            if fix is None:
                message += f" (not migrated automatically: {reason})"
            self.report(loop.backward, message, fix=fix, precision_context=context)
