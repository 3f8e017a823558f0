"""AMP001 fp32-training-loop."""
from __future__ import annotations

from amp_lint.findings import Applicability, Severity
from amp_lint.semantics.values import HALF
from amp_lint.rules._migration import Migration
from amp_lint.rules._training import (
    backward_of_a_new_tensor, in_test, mixed_precision_in_program, optimizes_plain_tensors, training_model,
)
from amp_lint.rules.base import Invalid, Rule, Valid


class Fp32TrainingLoop(Rule):
    code = "AMP001"
    skips_test_files = True
    name = "fp32-training-loop"
    severity = Severity.MIGRATION
    summary = "Training loop without mixed precision"
    fix_applicability = Applicability.UNSAFE
    tokens = ("backward",)
    docs = """
    ## What it does
    Finds training loops (a loss's `.backward()` and an optimizer's `step()` after it, in a
    `for`/`while` loop or a training-step function) that run in fp32: nothing in the loop runs
    under autocast, the program that runs it opens no autocast region anywhere (a probe trained in fp32 on features extracted under autocast is deliberate),
    the model is not cast to half, no GradScaler scales the loss, and no framework
    (accelerate, Lightning, Hugging Face `Trainer`, DeepSpeed, FSDP mixed precision) owns the
    precision in the program that runs the loop. In a repository of several scripts each script
    is its own program: a framework set up in one script's functions or `__main__` block does not
    own the loop another script runs (one set up at a module's top level, which any import runs,
    or in a function nothing calls, counts for every program). Optimizers are recognised by value (built by a
    `torch.optim` class) or by use (`x.zero_grad()` and `x.step()` on the same object). A loop that
    scales its loss with a GradScaler but runs nothing under autocast is reported too (its fix adds
    only the autocast block). Loops in
    test files and test functions are not reported, nor loops whose optimizer is known to
    optimise only tensors the script built (a latent through a frozen generator), and a loop is
    reported once.

    This rule is off by default: an fp32 loop is a migration opportunity, not a hazard. Select it
    (`--extend-select AMP001`) to find the loops worth migrating, and `amp-lint fix --unsafe-fixes
    --extend-select AMP001` to migrate them.

    ## Why is this bad?
    On GPUs with Tensor Cores, fp16 autocast runs matmuls and convolutions several times faster
    than fp32 and halves activation memory; a GradScaler keeps small fp16 gradients from
    flushing to zero. Adding both is the standard recipe (PyTorch "Automatic Mixed Precision
    examples").

    ## Fix safety
    The fix is unsafe: it changes the numerics of training. It wraps the forward and loss
    statements (only those) in `torch.autocast(device_type=<device>.type, dtype=torch.float16)`,
    where `<device>` is the script's own device (`device = torch.device(...)`, `args.device`,
    `.cuda()`), creates one `torch.amp.GradScaler` right after the optimizer (threading it into a
    `train_one_epoch(...)`-style function through a new parameter, or at the loop function's
    start when the optimizer comes from elsewhere), and rewrites `loss.backward()` to
    `scaler.scale(loss).backward()`, `optimizer.step()` to `scaler.step(optimizer)` +
    `scaler.update()`, with `scaler.unscale_(optimizer)` before gradient clipping. In a
    gradient-accumulation loop the unscale/step/update stay where the step was, so they run only
    on stepping iterations. All edits apply together or not at all; when the loop shape is not
    recognised, the finding says what to do and nothing is changed. Models whose layers have no
    fp16 kernel on the target device (for instance `nn.LSTM` under CPU fp16 autocast in torch
    2.13) need checking by hand.

    ## References
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    - https://pytorch.org/docs/stable/amp.html
    """
    VALID = [
        Valid("""
        import torch
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy

        fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """),
        Valid("""
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            opt.zero_grad()
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        """),
        Valid("""
        import torch
        # a latent optimised through a frozen generator: no network is trained
        w = torch.zeros(1, 512, dtype=torch.float32, requires_grad=True)
        optimizer = torch.optim.Adam([w], lr=0.1)
        for step in range(100):
            loss = (G(w) - target).square().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """),
        Valid("""
        import torch
        x.requires_grad_()
        loss = model(x).sum()
        loss.backward()
        saliency = x.grad.abs()
        """),
        Valid("""
        import torch
        # autograd's threads started before the run: a new tensor's backward trains nothing
        torch.zeros(1, device="cuda", requires_grad=True).backward()
        model = Net().cuda().bfloat16()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for x in loader:
            loss = model(x).float().pow(2).mean()
            loss.backward()
            optimizer.step()
        """),
    ]
    INVALID = [
        Invalid(
            # a GradScaler without autocast: the scaler has nothing to do
            """
            import torch
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                opt.zero_grad()
                loss = model(x.cuda()).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            """,
            expected="""
            import torch
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                opt.zero_grad()
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = model(x.cuda()).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            """,
        ),
        Invalid(
            """
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                logits = model(x)
                loss = loss_fn(logits, y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            """,
            expected="""
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler(device.type)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                with torch.autocast(device_type=device.type, dtype=torch.float16):
                    logits = model(x)
                    loss = loss_fn(logits, y)
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

            def train(model, loader, optimizer, accum=4):
                model.train()
                for i, (x, y) in enumerate(loader):
                    loss = model(x.cuda(), y.cuda()) / accum
                    loss.backward()
                    if (i + 1) % accum == 0:
                        optimizer.step()
                        optimizer.zero_grad()
            """,
            expected="""
            import torch

            def train(model, loader, optimizer, accum=4):
                model.train()
                scaler = torch.amp.GradScaler("cuda")
                for i, (x, y) in enumerate(loader):
                    with torch.autocast(device_type="cuda", dtype=torch.float16):
                        loss = model(x.cuda(), y.cuda()) / accum
                    scaler.scale(loss).backward()
                    if (i + 1) % accum == 0:
                        scaler.step(optimizer)
                        scaler.update()
                        optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import torch

            for x, y in loader:
                optimizer.zero_grad()
                loss = model(x, y)
                metrics.log(loss)
                if loss.isfinite():
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Invalid(
            # an optimizer wrapped by a class of the project, stepped by two loops: both are found
            # (the second call of its ``step()`` reuses what the first one learnt)
            """
            import torch

            class Optim:
                def __init__(self, params):
                    self.optimizer = torch.optim.Adam(params)

                def step(self):
                    self.optimizer.step()

            def pretrain(model, optim, loader):
                for x in loader:
                    model.zero_grad()
                    model(x).sum().backward()
                    optim.step()

            def finetune(model, optim, loader):
                for x, y in loader:
                    model.zero_grad()
                    (model(x) - y).square().mean().backward()
                    optim.step()

            model = torch.nn.Linear(4, 4)
            optim = Optim(model.parameters())
            pretrain(model, optim, [])
            finetune(model, optim, [])
            """,
            count=2,
            fix_withheld=True,
        ),
        Invalid(
            # binary_cross_entropy raises under CUDA autocast: reported, not migrated
            """
            import torch
            import torch.nn.functional as F

            def train(model, loader, optimizer, device):
                for x, y in loader:
                    optimizer.zero_grad()
                    recon = model(x.to(device))
                    loss = F.binary_cross_entropy(recon, y.to(device))
                    loss.backward()
                    optimizer.step()
            """,
            fix_withheld=True,
        ),
        Invalid(
            # a module-level optimizer gets a module-level scaler next to it (one per run, not per call)
            """
            import torch
            import torch.nn.functional as F

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = torch.nn.Linear(4, 2).to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


            def train(loader):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = F.mse_loss(model(x.to(device)), y.to(device))
                    loss.backward()
                    optimizer.step()
            """,
            expected="""
            import torch
            import torch.nn.functional as F

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = torch.nn.Linear(4, 2).to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            scaler = torch.amp.GradScaler(device.type)


            def train(loader):
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast(device_type=device.type, dtype=torch.float16):
                        loss = F.mse_loss(model(x.to(device)), y.to(device))
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
            """,
        ),
    ]

    def finish(self) -> None:
        model = training_model(self.ctx)
        for step in model.steps:
            if in_test(step.backward.ancestors) or mixed_precision_in_program(self.ctx, step):
                continue
            if step.apex_with is not None or step.graph & HALF or model.autocast_inside(step.container):
                continue
            if any(t.scaled for t in step.loss_tensors()):
                continue  # hand-rolled loss scaling: mixed precision by hand
            if optimizes_plain_tensors(step) or backward_of_a_new_tensor(self.ctx, step):
                continue  # a latent or an input optimised through a frozen network; autograd warmed up
            scaled = bool(step.scaled or step.scaler_steps)
            migration = Migration(self.ctx, model, step, scaler=not scaled)
            plan, reason = migration.plan()
            message = "Training loop runs in fp32"
            if scaled:
                message += " although it scales the loss with a GradScaler (nothing in it runs under autocast)"
            fix = None
            if plan is not None:
                message += f"; the migration {plan.describe()}"
                fix, _ = migration.fix_plan("Run the forward and loss under autocast fp16" if scaled else
                                            "Migrate the loop to torch.amp (autocast fp16 + GradScaler)")
            else:
                message += (": use `torch.autocast(dtype=torch.float16)` around forward+loss and a "
                            f"`torch.amp.GradScaler` (not migrated automatically: {reason})")
            self.report(step.backward.node, message, fix=fix)
