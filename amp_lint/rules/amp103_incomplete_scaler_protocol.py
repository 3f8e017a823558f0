"""AMP103 incomplete-scaler-protocol."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

import libcst as cst

from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._migration import BlockEdits, parse_statement
from amp_lint.rules._training import training_model
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.training import Event, TrainingStep


class IncompleteScalerProtocol(Rule):
    code = "AMP103"
    name = "incomplete-scaler-protocol"
    severity = Severity.ERROR
    summary = "GradScaler-scaled backward without `scaler.step` / `scaler.update()`"
    fix_applicability = Applicability.SAFE
    tokens = ("scale",)
    docs = """
    ## What it does
    Finds a loop that runs `scaler.scale(loss).backward()` and then calls `optimizer.step()`
    directly instead of `scaler.step(optimizer)`, or calls `scaler.step(...)` with no
    `scaler.update()` after it in the loop, or - in gradient accumulation - calls
    `scaler.unscale_(optimizer)` on every micro-batch while `scaler.step` and `update` run only on
    stepping iterations.

    ## Why is this bad?
    `optimizer.step()` on scaled gradients applies an update 65536 times too large (the default
    initial scale) and never skips inf/NaN steps: the weights blow up silently. Without
    `scaler.update()` the scale never adapts: after one overflow every later step is skipped, or
    the scale stays too small. A second `unscale_` before `update()` raises `RuntimeError:
    unscale_() has already been called on this optimizer since the last update().`

    ## Fix safety
    The fix is safe: it routes the step through the scaler (`scaler.step(optimizer)`) and
    inserts `scaler.update()` after the last `scaler.step` of the iteration, in the same block
    (so gradient-accumulation loops still update only on stepping iterations). The accumulation
    case has no fix: move `unscale_` (and the clipping) under the stepping condition.

    ## References
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    """
    VALID = [
        Valid("""
        # steps skipped while a queue warms up, but update() runs on every iteration: it resets the
        # unscale state, so each iteration's unscale_ is the first since the last update()
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if i >= warmup_iters:
                scaler.step(optimizer)
            scaler.update()
        """),
        Valid("""
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        Valid("""
        # the plain step is on the other branch of the test the scaled backward is under
        import torch
        def run(net, data, opt, grad_scaler=None, every=4, max_norm=1.0):
            mixed = grad_scaler is not None
            for k, batch in enumerate(data):
                with torch.cuda.amp.autocast(enabled=mixed):
                    loss = net(**batch).loss / every
                if mixed:
                    grad_scaler.scale(loss).backward()
                else:
                    loss.backward()
                if k % every == every - 1:
                    if mixed:
                        grad_scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm)
                    if mixed:
                        grad_scaler.step(opt)
                        grad_scaler.update()
                    else:
                        opt.step()
                    opt.zero_grad(set_to_none=True)
        """),
        Valid("""
        # unscale_ and step sit under two ifs of the same test as the scaled backward: they run
        # in the same calls of the step function (one backward per step)
        import torch
        def main(encoder, loader, optimizer, use_amp, clip, epochs):
            scaler = torch.amp.GradScaler("cuda") if use_amp else None
            for epoch in range(epochs):
                for x in loader:
                    def train_step():
                        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
                            loss = encoder(x).pow(2).mean()
                        if use_amp:
                            scaler.scale(loss).backward()
                            scaler.unscale_(optimizer)
                        else:
                            loss.backward()
                        torch.nn.utils.clip_grad_norm_(encoder.parameters(), clip)
                        if use_amp:
                            scaler.step(optimizer)
                            scaler.update()
                        else:
                            optimizer.step()
                        optimizer.zero_grad()
                        return float(loss)
                    train_step()
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
        for step in training_model(self.ctx).steps:
            if not step.scaled or step.apex_with is not None:
                continue
            scaler = _scaler_text(step)
            if scaler is None:
                continue
            plain_steps = [e for e in step.steps if not _exclusive_branches(step.backward, e)]
            if plain_steps:
                event = plain_steps[0]
                opt = ast.unparse(event.receiver) if event.receiver is not None else "optimizer"
                plan = FixPlan(f"Use `{scaler}.step({opt})`", Applicability.SAFE,
                               lambda fctx, event=event, opt=opt: _route_step(fctx, event, scaler, opt,
                                                                           not step.updates))
                self.report(event.node, f"`{opt}.step()` after `{scaler}.scale(loss).backward()` applies the still "
                                        "scaled gradients (65536x too large by default) and never skips inf steps; use "
                                        f"`{scaler}.step({opt})` and `{scaler}.update()`", fix=plan)
                continue
            if step.scaler_steps and not step.updates:
                last = max(step.scaler_steps, key=lambda e: e.position)
                plan = FixPlan(f"Insert `{scaler}.update()`", Applicability.SAFE,
                               lambda fctx, last=last: _insert_update(fctx, last, scaler))
                self.report(last.node, f"`{scaler}.step(...)` without `{scaler}.update()` in the loop: the scale never "
                                       "adapts (after an overflow every later step is skipped)", fix=plan)
                continue
            self._accumulation(step, scaler)

    def _accumulation(self, step: TrainingStep, scaler: str) -> None:
        """``unscale_`` on every micro-batch, ``step``/``update`` only under an accumulation guard."""
        if any(not _guards(update, step) for update in step.updates):
            return  # ``update()`` on every iteration resets the unscale state: no second unscale_ follows
        for unscale in step.unscales:
            guards = [g for e in step.scaler_steps for g in _guards(e, step)]
            if guards and not any(any(a is g for a in unscale.ancestors) for g in guards):
                self.report(unscale.node, f"`{scaler}.unscale_(...)` runs on every micro-batch but `{scaler}.step` "
                                          f"only under `{ast.unparse(guards[0].test)}`: the second micro-batch raises "
                                          "\"unscale_() has already been called on this optimizer since the last "
                                          "update()\"; unscale (and clip) only on stepping iterations")
                return


def _branches(event: Event) -> List[Tuple[str, bool]]:
    """(test text, taken) of each ``if`` around ``event``: taken is True in its body, False in its
    ``else`` (``if not x:`` is ``x`` with the branches swapped)."""
    return [_branch_in(event, parent) for parent in reversed(event.ancestors) if isinstance(parent, ast.If)]


def _exclusive_branches(a: Event, b: Event) -> bool:
    """``a`` and ``b`` sit on opposite branches of the same test (``if use_amp: scaler.scale(loss).backward()``
    ... ``else: optimizer.step()``): no run does both."""
    taken = dict(_branches(a))
    return any(text in taken and taken[text] != side for text, side in _branches(b))


def _scaler_text(step: TrainingStep) -> Optional[str]:
    receiver = step.backward.receiver
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        return ast.unparse(receiver.func.value)
    return None


def _guards(event: Event, step: TrainingStep) -> List[ast.If]:
    """The ``if`` statements between the loop and ``event`` that the backward is not under, nor under
    another ``if`` of the same test on the same side (``if use_amp: scaler.scale(loss).backward()``
    ... ``if use_amp: scaler.step(opt)``: both run on the same iterations)."""
    backward_tests = set(_branches(step.backward))
    return [a for a in event.ancestors if isinstance(a, ast.If) and not any(a is b for b in step.backward.ancestors)
            and step.container is not None and any(a is n for n in ast.walk(step.container))
            and _branch_in(event, a) not in backward_tests]


def _branch_in(event: Event, branch: ast.If) -> Tuple[str, bool]:
    """(test text, taken) of the ``if`` ``branch`` around ``event``, as :func:`_branches` gives them."""
    chain = [event.node, *reversed(event.ancestors)]
    child = next(c for c, p in zip(chain, chain[1:]) if p is branch)
    taken, test = any(child is n for n in branch.body), branch.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, taken = test.operand, not taken
    return ast.unparse(test), taken


def _locate(fctx: FixContext, event: Event):
    stmt = next((a for a in reversed(event.ancestors) if isinstance(a, ast.stmt)), None)
    node = fctx.node(stmt) if stmt is not None else None
    line = fctx.statement(node) if node is not None else None
    block = fctx.parent(line) if line is not None else None
    if not isinstance(line, cst.SimpleStatementLine) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    return block, [i for i, s in enumerate(block.body) if s is line][0]


def _route_step(fctx: FixContext, event: Event, scaler: str, opt: str, add_update: bool) -> Optional[CstFix]:
    found = _locate(fctx, event)
    if found is None:
        return None
    block, index = found
    edits = BlockEdits()

    def make(stmt):
        first = stmt.with_changes(body=[stmt.body[0].with_changes(value=cst.parse_expression(f"{scaler}.step({opt})"))])
        return [first] + ([parse_statement(f"{scaler}.update()")] if add_update else [])

    edits.replace(block, index, make)
    fix = CstFix(f"Use `{scaler}.step({opt})`", Applicability.SAFE)
    edits.apply_to(fix)
    return fix


def _insert_update(fctx: FixContext, event: Event, scaler: str) -> Optional[CstFix]:
    found = _locate(fctx, event)
    if found is None:
        return None
    block, index = found
    edits = BlockEdits()
    edits.insert_after(block, index, [parse_statement(f"{scaler}.update()")])
    fix = CstFix(f"Insert `{scaler}.update()`", Applicability.SAFE)
    edits.apply_to(fix)
    return fix
