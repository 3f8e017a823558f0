"""AMP101 half-model-training."""
from __future__ import annotations

from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class HalfModelTraining(Rule):
    code = "AMP101"
    name = "half-model-training"
    severity = Severity.ERROR
    summary = "Model cast wholesale to fp16/bf16 and trained without fp32 master weights"
    fix_applicability = Applicability.UNSAFE
    tokens = ("half", "float16", "bfloat16")
    requires = ("training",)
    docs = """
    ## What it does
    Finds a module cast wholesale to half precision (`model.half()`, `.bfloat16()`,
    `.to(torch.float16)`, `.to(dtype=...)`, `from_pretrained(..., torch_dtype=torch.float16)`)
    whose parameters are then optimized by a standard optimizer (`torch.optim.*` or an
    optimizer-building function) in a training loop. Wrappers that keep fp32 master weights
    (apex O2, fairseq `FP16Optimizer`, DeepSpeed fp16, Kahan-summation optimizers) and
    inference-only casts (no optimizer over those parameters) are not reported.

    ## Why is this bad?
    Without fp32 master weights every update `lr * grad` is rounded to the parameter's
    precision: updates smaller than half a unit in the last place (fp16: 2^-11 of the weight,
    bf16: 2^-8) are lost, so training stalls or drifts; fp16 gradients also underflow without
    loss scaling, and Adam's `eps=1e-8` is 0 in fp16. `torch.autocast` keeps the parameters in
    fp32 and still runs the matmuls in half precision.

    ## Fix safety
    The fix is unsafe (it changes numerics and memory use): it removes the casts of the model
    and of the loop's inputs, wraps forward + loss in `torch.autocast(..., dtype=<the cast's
    dtype>)` and, for float16, adds a `torch.amp.GradScaler` routed through backward/step/update
    exactly as AMP001 does. The cast removal and the scaler come in one fix: a GradScaler over
    still-fp16 parameters raises "Attempting to unscale FP16 gradients". Checkpoints saved by the
    fixed script hold fp32 weights.

    ## References
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    - Micikevicius et al., "Mixed Precision Training", ICLR 2018 (fp32 master weights)
    """
    VALID = [
        Valid("""
        import torch
        model = Net().cuda().half().eval()
        with torch.no_grad():
            out = model(x.cuda().half())
        """),
        Valid("""
        import torch
        model = Net().cuda().half()
        optimizer = FP16Optimizer(model.parameters(), torch.optim.AdamW, lr=1e-3)
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x.cuda().half()), y.cuda())
            optimizer.backward(loss)
            optimizer.step()
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            model.half()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
            for x, y in loader:
                x = x.to(device).half()
                optimizer.zero_grad()
                loss = loss_fn(model(x), y.to(device))
                loss.backward()
                optimizer.step()
            """,
            expected="""
            import torch

            device = torch.device("cuda")
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
            scaler = torch.amp.GradScaler(device.type)
            for x, y in loader:
                x = x.to(device)
                optimizer.zero_grad()
                with torch.autocast(device_type=device.type, dtype=torch.float16):
                    loss = loss_fn(model(x), y.to(device))
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            import torch

            model = Net().cuda().to(torch.bfloat16)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x.cuda())
                loss = loss_fn(out, y.cuda())
                loss.backward()
                optimizer.step()
            """,
            expected="""
            import torch

            model = Net().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    out = model(x.cuda())
                    loss = loss_fn(out, y.cuda())
                loss.backward()
                optimizer.step()
            """,
        ),
    ]

    def finish(self) -> None:
        training = self.ctx.analyses["training"]
        if training.has_master_weights() or not training.loops:
            return
        optimized = training.optimized_models()
        loops = [loop for loop in training.loops if not loop.scaled and loop.apex_with is None]
        for cast in training.model_casts():
            optimizer = optimized.get(cast.target)
            if optimizer is None or optimizer.kind not in ("standard", "builder"):
                continue
            fix, reason = None, "no training loop over this model was recognised"
            if len(loops) == 1:
                fix, reason = training.migration(
                    loops[0], title=f"Keep the model in fp32 and use autocast({cast.dtype})"
                    + (" + GradScaler" if cast.dtype == "float16" else ""),
                    dtype=cast.dtype, remove_casts=True)
            message = (f"`{cast.target}` is cast to {cast.dtype} and trained by `{optimizer.name}` without fp32 master "
                       f"weights; keep it in fp32 and use `torch.autocast`"
                       + (" with a `torch.amp.GradScaler`" if cast.dtype == "float16" else ""))
            if fix is None:
                message += f" (not migrated automatically: {reason})"
            self.report(cast.call, message, fix=fix, precision_context="PURE_FP16" if cast.dtype == "float16" else "PURE_BF16")
