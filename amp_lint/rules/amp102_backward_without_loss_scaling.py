"""AMP102 backward-without-loss-scaling."""
from __future__ import annotations

import ast
from typing import List

from amp_lint.findings import Applicability, Severity
from amp_lint.rules._training import migration_plan, training_model
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.torch_api import node_key
from amp_lint.semantics.training import half_through
from amp_lint.semantics.values import APEX_O1_ORIGIN, F16, Tensor


class BackwardWithoutLossScaling(Rule):
    code = "AMP102"
    skips_test_files = True
    name = "backward-without-loss-scaling"
    severity = Severity.ERROR
    summary = "`.backward()` on an fp16 loss without a GradScaler"
    fix_applicability = Applicability.UNSAFE
    tokens = ("backward",)
    docs = """
    ## What it does
    Finds `.backward()` on a loss whose graph went through float16 - computed under float16
    autocast (AUTOCAST_FP16, also a dtype picked at run time such as `{...}[args.dtype]`) or by a
    model cast wholesale to float16 (PURE_FP16) - when nothing scales it: no `GradScaler`, no
    apex `amp.scale_loss`, no hand-written `loss * loss_scale`. Loops whose backward belongs to
    a framework (`accelerator.backward`, a DeepSpeed engine, a fairseq/apex master-weight
    optimizer's `optimizer.backward(loss)`) are not `loss.backward()` and are not reported, except
    Lightning Fabric's `fabric.backward(loss)` where the Fabric may run at `"16-true"` (its half
    plugin scales nothing; `"16-mixed"` brings a GradScaler), reported without a fix, nor is
    a plain backward beside one that apex's `amp.scale_loss` scales, on parameters that only apex
    made float16 (the path that does not use apex), nor one whose loss is half only through a cast
    in another program (another script - with a `__main__` block, or a top level that loops -
    that this one does not import, whose model reached a class field both use). The plain
    backward of `if scaler is not None: scaler.scale(loss).backward() else: loss.backward()` is
    checked on its own: reported where that branch can be half (a model cast under
    `precision == "fp16"` while the scaler is made only for `"amp"`), not where the scaler is
    made under the same test as the half evidence (`GradScaler() if amp else None` beside
    `autocast(enabled=amp)`: the unscaled branch runs in float32). So is the plain backward on
    the other branch of a flag (`if args.precision == "amp": ... scaler.scale(loss).backward()
    else: loss.backward()`) whose loss went through a model cast to half (Chinese-CLIP's
    `convert_weights(model)` under `precision == "fp16"`). timm's `NativeScaler` and
    `ApexScaler`, called as `loss_scaler(loss, optimizer, ...)`, are loss scalers too: in
    timm-style scripts that make each under its own `use_amp == ...` test, beside an autocast
    picked under the same test (`amp_autocast = torch.cuda.amp.autocast`, else `suppress`) or
    apex's `amp.initialize`, the plain backward where `loss_scaler is None` runs in neither and
    is not reported. bfloat16 needs no loss scaling and is not reported.

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
    to unscale FP16 gradients". A cast made only under one test (`if args.fp16: model.half()`)
    gives autocast and scaler `enabled=<that test>` (in `bool()` unless it is a comparison or a
    `not`: autocast raises on `enabled=1`), so the flag still chooses; casts on paths one
    test cannot express (an `else`, nested tests) get no fix, nor do parameters made half where the
    fix cannot undo it (`p.data = p.data.half()` in a loop, another file) or of a dtype it cannot
    see (inputs cast with `.half()` for a model defined elsewhere): a GradScaler over half
    parameters raises. Skipped steps change the step count seen by LR schedulers.

    ## References
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    - huggingface/pytorch-image-models `timm/utils/cuda.py` (`NativeScaler.__call__` scales,
      runs backward, steps and updates; `ApexScaler.__call__` does so through `amp.scale_loss`)
    """
    VALID = [
        # Lightning Fabric at "16-mixed" runs the forward under autocast and scales the loss in
        # its ``backward``
        Valid("""
        import lightning as L
        import torch
        from torch import nn

        fabric = L.Fabric(devices=1, precision="16-mixed")
        model = fabric.setup(nn.Linear(64, 8))
        optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.01))
        for x in loader:
            loss = model(x).logsumexp(-1).mean()
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        """),
        Valid("""
        import argparse
        import torch

        # the scaler exists exactly when autocast is on: the unscaled branch runs in float32
        def backward(loss, scaler, optimizer):
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()

        def train(model, loader, precision):
            scaler = torch.amp.GradScaler("cuda") if precision == "amp" else None
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", enabled=precision == "amp"):
                    loss = torch.nn.functional.mse_loss(model(x), y)
                backward(loss, scaler, optimizer)

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--precision", choices=["amp", "fp32"], default="amp")
            train(torch.nn.Linear(4, 4).cuda(), [], parser.parse_args().precision)
        """),
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
        Valid("""
        # a scaler handed in by a caller the analysis does not see is still a scaler
        import torch
        def train_epoch(model, loader, optimizer, scaler=None, accum_grad_iters=1):
            use_amp = scaler is not None
            for i, (x, y) in enumerate(loader):
                with torch.cuda.amp.autocast(enabled=use_amp):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                if use_amp:
                    scaler.scale(loss).backward()
                else:
                    loss.backward()
                if (i + 1) % accum_grad_iters == 0:
                    if use_amp:
                        scaler.step(optimizer)
                        scaler.update()
                    else:
                        optimizer.step()
                    optimizer.zero_grad()
        """),
        Valid("""
        # the plain backward is on the path that does not use apex; the other one scales with apex
        import torch
        from apex import amp
        model = torch.nn.Linear(16, 4).cuda()
        optimizer = torch.optim.Adam(model.parameters())
        if level >= 0:
            model, optimizer = amp.initialize(model, optimizer, opt_level="O%d" % level)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
            if level < 0:
                loss.backward()
            else:
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
            optimizer.step()
        """),
        Valid("""
        # timm's loss scalers, each made with its own precision mode; the plain backward runs where
        # neither was made, so neither apex nor the autocast picked with the native one is in force
        from contextlib import suppress
        import torch
        from apex import amp
        from timm.utils import ApexScaler, NativeScaler

        def fit(model, loader, optimizer, autocast_cm=suppress, scaler=None):
            for x, y in loader:
                with autocast_cm():
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                if scaler is not None:
                    scaler(loss, optimizer, clip_grad=1.0)
                else:
                    loss.backward()
                    optimizer.step()

        def main(mode, loader):
            model = torch.nn.Linear(16, 4).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            autocast_cm, scaler = suppress, None
            if mode == "apex":
                model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
                scaler = ApexScaler()
            elif mode == "native":
                autocast_cm = torch.cuda.amp.autocast
                scaler = NativeScaler()
            fit(model, loader, optimizer, autocast_cm, scaler)
        """),
    ]
    INVALID = [
        Invalid(
            # at "16-true" Fabric casts the model to float16 and its ``backward`` scales nothing; the
            # backward is Fabric's, so there is no fix (its precision is the thing to change)
            """
            import lightning as L
            import torch
            from torch import nn

            fabric = L.Fabric(devices=1, precision="16-true")
            model = fabric.setup(nn.Linear(64, 8))
            optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.01))
            for x in loader:
                loss = model(x).logsumexp(-1).mean()
                fabric.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            # the autocast is on in every mode, the scaler only in "native": the plain backward
            # runs under float16 autocast unscaled
            """
            import torch
            from timm.utils import NativeScaler

            def fit(model, loader, optimizer, autocast_cm, scaler=None):
                for x, y in loader:
                    with autocast_cm():
                        loss = torch.nn.functional.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    if scaler is not None:
                        scaler(loss, optimizer)
                    else:
                        loss.backward()
                        optimizer.step()

            def main(mode, loader):
                model = torch.nn.Linear(16, 4).cuda()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                autocast_cm, scaler = torch.cuda.amp.autocast, None
                if mode == "native":
                    scaler = NativeScaler()
                fit(model, loader, optimizer, autocast_cm, scaler)
            """,
        ),
        Invalid(
            # the unscaled branch is the one "fp16" takes: the model is half and no scaler exists
            """
            import argparse
            import torch

            def backward(loss, scaler, optimizer):
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()

            def train(model, loader, precision):
                if precision == "fp16":
                    model.half()
                scaler = torch.amp.GradScaler("cuda") if precision == "amp" else None
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast("cuda", enabled=precision == "amp"):
                        loss = torch.nn.functional.mse_loss(model(x), y)
                    backward(loss, scaler, optimizer)

            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--precision", choices=["amp", "fp16", "fp32"], default="amp")
                train(torch.nn.Linear(4, 4).cuda(), [], parser.parse_args().precision)
            """,
            fix_withheld=True,
        ),
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
        Invalid(
            """
            import sys
            import torch

            fp16 = "--fp16" in sys.argv
            model = Net().cuda()
            if fp16:
                model.half()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                if fp16:
                    x = x.half()
                loss = model(x.cuda()).float().sub(y.cuda()).pow(2).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            expected="""
            import sys
            import torch

            fp16 = "--fp16" in sys.argv
            model = Net().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda", enabled=bool(fp16))
            for x, y in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=bool(fp16)):
                    loss = model(x.cuda()).float().sub(y.cuda()).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import sys
            import torch

            model = Net().cuda()
            if "--fp16" in sys.argv:
                if "--pure" in sys.argv:
                    model.half()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = loss_fn(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import torch

            def to_half(module):
                for param in module.parameters():
                    param.data = param.data.half()

            model = torch.nn.Linear(16, 4).cuda()
            to_half(model)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = loss_fn(model(x.cuda().half()), y.cuda())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import torch

            model = Net().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = loss_fn(model(x.cuda().half()), y.cuda())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import torch

            encoder = torch.nn.Linear(16, 16).cuda().half()
            head = torch.nn.Linear(16, 4).cuda().half()
            optimizer = torch.optim.SGD([{"params": encoder.parameters()}, {"params": head.parameters(), "lr": 0.01}])
            for x, y in loader:
                loss = loss_fn(head(encoder(x.cuda().half())), y.cuda())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            expected="""
            import torch

            encoder = torch.nn.Linear(16, 16).cuda()
            head = torch.nn.Linear(16, 4).cuda()
            optimizer = torch.optim.SGD([{"params": encoder.parameters()}, {"params": head.parameters(), "lr": 0.01}])
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = loss_fn(head(encoder(x.cuda())), y.cuda())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
        ),
    ]

    def finish(self) -> None:
        model = training_model(self.ctx)
        for step in model.steps:
            if step.scaled or step.apex_with is not None or any(t.scaled for t in step.loss_tensors()):
                continue
            tensors = step.loss_tensors()
            # the loss's gradients flow through fp16 ops of an autocast region (the loss value says so:
            # a backward on the branch where autocast was off is not one), or backward runs inside one
            # (a backward split off a scaled one on the other branch of an ``if`` has only its own
            # loss to go by: the region may be on the other branch)
            regions = half_through(tensors, by_autocast=True) if step.siblings \
                else model.autocast_inside(step.container) & F16
            autocast = (regions and step.graph & F16) or any(
                obs.state is not None and obs.state[1] == F16 for obs in step.backward.observations)
            pure = step.graph & F16 and not autocast
            if not (autocast or pure):
                continue
            if step.backward.observations and all(obs.half_from_another_program(obs.value(step.loss))
                                                  for obs in step.backward.observations):
                continue  # made half only by a cast in another program (a field both programs' runs share)
            if pure and _apex_origins_only(tensors) and any(
                    model.apex_scaled(other) for other in step.backwards + step.siblings if other is not step.backward):
                # the float16 parameters are apex's and another backward of this loop or function
                # is scaled by apex's ``amp.scale_loss``: this one is on the path that does not use
                # apex (``if params.amp == -1: loss.backward() else: with amp.scale_loss(...)``)
                continue
            context = "AUTOCAST_FP16" if autocast else "PURE_FP16"
            origin = next((t.origin for t in tensors if t.origin is not None and t.origin.condition), None)
            condition = origin.condition if origin is not None else None
            enabled = None
            if pure and condition:
                # the casts go, so the flag that chose them must choose the autocast and the scaler instead
                cast = next((n for n in ast.walk(self.ctx.tree) if isinstance(n, ast.Call)
                             and node_key(self.ctx.module.relpath, n) == origin.key), None)
                enabled = (condition, cast)
            if enabled is not None and enabled[1] is None:
                fix, reason = None, (f"the float16 cast is in another file and holds only when `{condition}`; "
                                     f"migrate with `enabled={condition}` by hand")
            else:
                fix, reason = migration_plan(self.ctx, step, "Route backward/step through a torch.amp.GradScaler",
                                             remove_casts=bool(pure), enabled=enabled)
            # under autocast the loss itself is often float32 (cross_entropy): its gradients are not; a
            # loss cast back with ``.float()`` still sends float16 gradients through the half model
            what = "through float16 autocast ops" if autocast else (
                "on a float16 loss" if any(t.dtypes & F16 for t in tensors) else "through float16 parameters")
            message = (f"`.backward()` {what} ({context}) without loss scaling: small gradients flush to "
                       "zero; use `torch.amp.GradScaler`")
            if condition:
                message += f" (when `{condition}`)"
            if fix is None:
                message += f" (not migrated automatically: {reason})"
            self.report(step.backward.node, message, fix=fix, precision_context=context,
                        evidence=step.backward.observations[0].evidence(tensors[0] if tensors else None))


def _apex_origins_only(tensors: List[Tensor]) -> bool:
    """No half evidence of ``tensors`` names a cast other than apex's ``amp.initialize`` (a loss
    cast back with ``.float()`` keeps no origin)."""
    return all(t.origin.kind in ("apex", APEX_O1_ORIGIN) for t in tensors if t.origin is not None)
