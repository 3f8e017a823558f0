"""AMP104 clip-before-unscale."""
from __future__ import annotations

import libcst as cst

from amp_lint.analysis.training_loop import BlockEdits, parse_statement, receiver, statement_of
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.names import dotted_name
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class ClipBeforeUnscale(Rule):
    code = "AMP104"
    name = "clip-before-unscale"
    severity = Severity.ERROR
    summary = "Gradient clipping on still-scaled gradients"
    fix_applicability = Applicability.SAFE
    tokens = ("clip_grad",)
    requires = ("training",)
    docs = """
    ## What it does
    Finds gradient clipping (`torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`, or a
    `.clip_grad_norm_()` method) after `scaler.scale(loss).backward()` and before the step, with
    no `scaler.unscale_(optimizer)` in between.

    ## Why is this bad?
    The gradients are still multiplied by the loss scale (65536 at first), so `max_norm` is
    compared with a norm thousands of times too large: every step is clipped to a tiny update,
    and the clip threshold changes whenever the scale does. Training is silently slowed or
    stalls.

    ## Fix safety
    The fix is safe: it inserts `scaler.unscale_(optimizer)` right before the clipping
    statement (for each optimizer the loop steps through the scaler); `scaler.step` then knows
    the gradients are already unscaled.

    ## References
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    """
    VALID = [
        Valid("""
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            expected="""
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
    ]

    def finish(self) -> None:
        training = self.ctx.analyses["training"]
        for loop in training.loops:
            if not loop.scaled:
                continue
            scaler = dotted_name(receiver(receiver(loop.backward)))
            if scaler is None:
                continue
            start = training.pos(loop.backward)
            for clip in loop.clips:
                where = training.pos(clip.node)
                if any(start < training.pos(u.node) < where for u in loop.unscales):
                    continue
                found = statement_of(clip.stack)
                fix = None
                if found is not None and isinstance(found[0], cst.SimpleStatementLine) and loop.optimizers:
                    edits = BlockEdits()
                    edits.insert_before(found[1], found[2],
                                        [parse_statement(f"{scaler}.unscale_({opt})") for opt in loop.optimizers])
                    fix = CstFix(f"Insert `{scaler}.unscale_(...)` before clipping", Applicability.SAFE)
                    edits.apply_to(fix)
                self.report(clip.node, f"Gradient clipping on gradients still scaled by `{scaler}`: call "
                            f"`{scaler}.unscale_(optimizer)` before clipping", fix=fix)
