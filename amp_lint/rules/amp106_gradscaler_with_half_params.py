"""AMP106 gradscaler-with-half-params."""
from __future__ import annotations

import ast
from typing import Optional, Set

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
    followed by dataflow from the cast to the optimizer to the scaler, across files. A scaler built
    under a test (`GradScaler() if args.precision == "amp" else None`, `if args.amp:`) is reported
    only when the cast holds under that same test: built for one mode and cast for another, nothing
    shows that a run does both. A test of `None` (`if self.scaler is None:`, building it once) is
    no mode.

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
        Valid("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--precision", default="amp")
        args = parser.parse_args()
        model = Net().cuda()
        if args.precision == "fp16":
            model.half()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda") if args.precision == "amp" else None
        for x, y in loader:
            loss = loss_fn(model(x), y)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
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
        Invalid(
            """
            import argparse
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true")
            args = parser.parse_args()
            model = Net().cuda()
            if args.fp16:
                model.half()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            if args.fp16:
                scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            import argparse
            import torch

            class Trainer:
                def __init__(self, model, half):
                    if half:
                        model.half()
                    self.model = model
                    self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
                    self.scaler = None

                def step(self, x, y):
                    if self.scaler is None:
                        self.scaler = torch.amp.GradScaler("cuda")
                    loss = torch.nn.functional.mse_loss(self.model(x).float(), y)
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()

            parser = argparse.ArgumentParser()
            parser.add_argument("--half", action="store_true")
            trainer = Trainer(torch.nn.Linear(4, 4), parser.parse_args().half)
            for x, y in loader:
                trainer.step(x, y)
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        origin = self.ctx.facts.half_scaler(":".join(map(str, node_key(self.ctx.module.relpath, node))))
        if origin is None:
            return
        guards = self._guards()
        if guards is not None and origin.condition and origin.condition not in guards:
            # built under one test, the model cast under another: nothing shows that one run does
            # both (``GradScaler() if args.precision == "amp" else None`` with the cast for "fp16")
            return
        message = (f"This GradScaler unscales gradients of half-precision parameters (cast at {origin.path}:"
                   f"{origin.line}): it raises \"Attempting to unscale FP16 gradients\"; keep the model in fp32 "
                   "and use `torch.autocast`")
        self.report(node, message, evidence=(self.ctx.observations(node)[0].evidence(None)
                                              if self.ctx.observations(node) else ()))

    def _guards(self) -> Optional[Set[str]]:
        """The conditions the call runs under, as evidence names them (the tests of the ``if``
        statements and conditional expressions around it, and each conjunct of a test that holds);
        None where it runs unconditionally."""
        texts: Set[str] = set()
        guarded = False
        stack = self.ctx.stack
        for parent, child in zip(stack, stack[1:]):
            if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
                holds = child in parent.body if isinstance(parent, ast.If) else child is parent.body
            else:
                continue
            if _is_none_test(parent.test):
                continue  # ``if self.scaler is None:`` builds it once, whatever the mode
            guarded = True
            texts.add(self.ctx.facts.condition_texts(parent.test, self.ctx.module)[0 if holds else 1])
            if holds and isinstance(parent.test, ast.BoolOp) and isinstance(parent.test.op, ast.And):
                texts.update(self.ctx.facts.condition_texts(value, self.ctx.module)[0] for value in parent.test.values)
        return texts if guarded else None


def _is_none_test(test: ast.AST) -> bool:
    """``x is None`` / ``x is not None``."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
