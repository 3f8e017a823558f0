"""AMP104 clip-before-unscale."""
from __future__ import annotations

import ast
from typing import Optional

from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._migration import BlockEdits, parse_statement
from amp_lint.rules._training import training_model
from amp_lint.rules.amp103_incomplete_scaler_protocol import _locate, _scaler_text
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.training import Event


class ClipBeforeUnscale(Rule):
    code = "AMP104"
    name = "clip-before-unscale"
    severity = Severity.ERROR
    summary = "Gradient clipping on still-scaled gradients"
    fix_applicability = Applicability.SAFE
    tokens = ("clip_grad",)
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
        for step in training_model(self.ctx).steps:
            if not step.scaled or step.apex_with is not None or not step.scaler_steps:
                continue
            scaler = _scaler_text(step)
            if scaler is None:
                continue
            first_step = min(e.position for e in step.scaler_steps)
            optimizers = [ast.unparse(e.node.args[0]) for e in step.scaler_steps if e.node.args]
            for clip in step.clips:
                if clip.position > first_step:
                    continue
                if any(step.backward.position < u.position < clip.position for u in step.unscales):
                    continue
                plan = FixPlan(f"Insert `{scaler}.unscale_(...)` before clipping", Applicability.SAFE,
                               lambda fctx, clip=clip: _insert_unscale(fctx, clip, scaler, optimizers))
                self.report(clip.node, f"Gradient clipping on still-scaled gradients (after `{scaler}.scale(loss)"
                                       f".backward()`, before `{scaler}.step`): the clip threshold is compared with a "
                                       f"norm 65536x too large; call `{scaler}.unscale_(optimizer)` first", fix=plan)


def _insert_unscale(fctx: FixContext, clip: Event, scaler: str, optimizers) -> Optional[CstFix]:
    found = _locate(fctx, clip)
    if found is None or not optimizers:
        return None
    block, index = found
    edits = BlockEdits()
    edits.insert_before(block, index, [parse_statement(f"{scaler}.unscale_({o})") for o in dict.fromkeys(optimizers)])
    fix = CstFix(f"Insert `{scaler}.unscale_(...)` before clipping", Applicability.SAFE)
    edits.apply_to(fix)
    return fix
