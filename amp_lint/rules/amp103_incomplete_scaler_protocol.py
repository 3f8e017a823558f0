"""AMP103 incomplete-scaler-protocol."""
from __future__ import annotations

from typing import List

import libcst as cst

from amp_lint.analysis.training_loop import BlockEdits, parse_statement, receiver, statement_of
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.names import dotted_name
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class IncompleteScalerProtocol(Rule):
    code = "AMP103"
    name = "incomplete-scaler-protocol"
    severity = Severity.ERROR
    summary = "GradScaler-scaled backward without `scaler.step` / `scaler.update()`"
    fix_applicability = Applicability.SAFE
    tokens = ("scale",)
    requires = ("training",)
    docs = """
    ## What it does
    Finds a loop that runs `scaler.scale(loss).backward()` and then calls `optimizer.step()`
    directly instead of `scaler.step(optimizer)`, or calls `scaler.step(...)` with no
    `scaler.update()` after it in the loop.

    ## Why is this bad?
    `optimizer.step()` on scaled gradients applies an update 65536 times too large (the default
    initial scale) and never skips inf/NaN steps: the weights blow up silently. Without
    `scaler.update()` the scale never adapts: after one overflow every later step is skipped, or
    the scale stays too small.

    ## Fix safety
    The fix is safe: it routes the step through the scaler (`scaler.step(optimizer)`) and
    inserts `scaler.update()` after the last `scaler.step` of the iteration, in the same block
    (so gradient-accumulation loops still update only on stepping iterations).

    ## References
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    """
    VALID = [
        Valid("""
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
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                optimizer.step()
            """,
            expected="""
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for i, (x, y) in enumerate(loader):
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y) / 4
                scaler.scale(loss).backward()
                if (i + 1) % 4 == 0:
                    scaler.step(optimizer)
                    optimizer.zero_grad()
            """,
            expected="""
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for i, (x, y) in enumerate(loader):
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(model(x), y) / 4
                scaler.scale(loss).backward()
                if (i + 1) % 4 == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad()
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
            if loop.steps:
                edits = BlockEdits()
                needs_update = not loop.scaler_updates
                for position, site in enumerate(loop.steps):
                    found = statement_of(site.stack)
                    opt = dotted_name(receiver(site.node))
                    last = needs_update and position == len(loop.steps) - 1
                    fix = None
                    if found is not None and isinstance(found[0], cst.SimpleStatementLine) and len(found[0].body) == 1 \
                            and isinstance(found[0].body[0], cst.Expr) and found[0].body[0].value is site.node:
                        new: List[cst.BaseStatement] = [parse_statement(f"{scaler}.step({opt})", found[0])]
                        if last:
                            new.append(parse_statement(f"{scaler}.update()"))
                        edits.replace(found[1], found[2], lambda _s, new=new: new)
                        fix = CstFix(f"Use `{scaler}.step({opt})`" + (f" and `{scaler}.update()`" if last else ""),
                                     Applicability.SAFE)
                        edits.apply_to(fix)
                        edits = BlockEdits()
                    self.report(site.node, f"`{opt}.step()` after `{scaler}.scale(loss).backward()` applies the scaled "
                                f"gradients (65536x by default) and never skips inf steps; use `{scaler}.step({opt})`",
                                fix=fix)
            elif loop.scaler_steps and not loop.scaler_updates:
                site = loop.scaler_steps[-1]
                found = statement_of(site.stack)
                fix = None
                if found is not None and isinstance(found[0], cst.SimpleStatementLine):
                    edits = BlockEdits()
                    edits.insert_after(found[1], found[2], [parse_statement(f"{scaler}.update()")])
                    fix = CstFix(f"Insert `{scaler}.update()`", Applicability.SAFE)
                    edits.apply_to(fix)
                self.report(site.node, f"`{scaler}.step(...)` without `{scaler}.update()` in the loop: the loss scale "
                            f"never adapts", fix=fix)
