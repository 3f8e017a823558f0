"""AMP101 half-model-training."""
from __future__ import annotations

import ast
from typing import Dict, Tuple

from amp_lint.data.training import FABRIC_TRUE_PRECISION
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._training import migration_plan, training_model
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.torch_api import node_key, param_origins
from amp_lint.semantics.values import BF16, F16, HALF, Origin, Scalar, Seq


class HalfModelTraining(Rule):
    code = "AMP101"
    skips_test_files = True
    name = "half-model-training"
    severity = Severity.ERROR
    summary = "Model cast wholesale to fp16/bf16 and trained without fp32 master weights"
    fix_applicability = Applicability.UNSAFE
    tokens = ("half", "float16", "bfloat16", "precision")
    docs = """
    ## What it does
    Finds a module cast wholesale to half precision (`model.half()`, `.bfloat16()`,
    `.to(torch.float16)`, `.to(dtype=...)`, `from_pretrained(..., torch_dtype=torch.float16)`,
    built after `torch.set_default_dtype(torch.bfloat16)`, or converted layer by layer by
    `model.apply(convert)`, also where `convert` casts only its linear and conv layers as CLIP's
    `convert_weights` does; reported at that call, without a fix; a function of the project that
    casts the model it is given, `convert_weights_to_fp16(model)`, is reported at each call that
    casts a trained model, not inside the function, also without a fix; a model cast at several
    places, such as loaded in float16 on either of two branches and cast again on a third path, is
    reported at each, also where its parameters reach the optimizer filtered through a list or a
    comprehension, except a cast on a path that freezes the model with `requires_grad_(False)`,
    or made only where the flag of its `requires_grad_(flag)` is false: `if not flag: m.to(dtype)`)
    whose parameters an optimizer is then built over, anywhere in the program (the cast in one
    file, the optimizer in another counts), or cast in place after an optimizer over its parameters
    was built, also one the model keeps in a field (`self.optim = Adam(self.parameters())`), when
    that optimizer then steps (`.half()` converts the very tensors the optimizer holds; a cast for
    export after training is not reported). It follows the parameters by dataflow, so a cast that
    is undone (`model.half().float()`), an optimizer over fp32 master copies of the parameters,
    and optimizers handed to a wrapper that keeps fp32 master weights (apex O2, fairseq
    `FP16Optimizer`, DeepSpeed, Kahan-summation optimizers) are not reported, nor are
    inference-only casts (no optimizer over those parameters). Pure low-precision training owned
    by Lightning (`precision="bf16-true"` / `"16-true"`) is reported at the `Trainer`.

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
    exactly as AMP001 does. A cast made only under a flag (`if args.fp16: model.half()`,
    `torch_dtype=torch.float16 if args.fp16 else None`) gives both `enabled=bool(args.fp16)`, so the
    flag still chooses: without it the script trains in fp32 as before. Where that flag cannot be read
    at the loop (another function, or rebound after the cast), or the cast takes its dtype from a
    variable (`.to(dtype)`, which may be float32 on some runs), there is no fix. The cast removal
    and the scaler come in one fix: a GradScaler over still-fp16 parameters raises "Attempting to
    unscale FP16 gradients". Checkpoints saved by the fixed script hold fp32 weights.

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
        model = Net().cuda()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x.cuda()), y.cuda()).backward()
            optimizer.step()
        model.half()
        torch.save(model.state_dict(), "model_fp16.pt")
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
        Valid("""
        # Lightning mixed precision: fp32 parameters, autocast around the forward ("bf16" is
        # Lightning 1.x's name for "bf16-mixed")
        import lightning as L
        import torch
        def main():
            fabric = L.Fabric(accelerator="cuda", precision="bf16-mixed")
            model = torch.nn.Linear(64, 64)
            optimizer = torch.optim.AdamW(model.parameters())
            model, optimizer = fabric.setup(model, optimizer)
            for x, y in loader:
                fabric.backward(torch.nn.functional.mse_loss(model(x), y))
                optimizer.step()
            trainer = L.Trainer(precision="bf16")
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            torch.set_default_dtype(torch.bfloat16)
            model = torch.nn.Linear(64, 64)
            torch.set_default_dtype(torch.float32)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
        ),
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
        Invalid(
            """
            import torch

            def train(model, loader, pure_fp16):
                params = []
                params.extend(model.parameters())
                optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
                if pure_fp16:
                    model.half()
                for x, y in loader:
                    optimizer.zero_grad()
                    loss_fn(model(x.cuda().half()), y.cuda()).backward()
                    optimizer.step()

            train(torch.nn.Linear(16, 4).cuda(), loader, pure_fp16=True)
            """,
        ),
        Invalid(
            """
            import sys
            import torch

            encoder = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
            train_encoder = sys.argv[1] == "train"
            dtype = torch.float16 if sys.argv[2] == "fp16" else torch.float32
            if not train_encoder:
                encoder.to(dtype)  # frozen: cast for inference
            params = []
            if train_encoder:
                params.append({"params": list(encoder.parameters()), "lr": 1e-4})
            optimizer = torch.optim.AdamW(params)
            if sys.argv[2] == "fp16":
                encoder.to(dtype)  # the trained encoder, cast after the optimizer took its parameters
            for x, y in loader:
                torch.nn.functional.mse_loss(encoder(x.to(dtype)), y).backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import argparse
            import torch
            from transformers import AutoModelForCausalLM

            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true")
            args = parser.parse_args()
            model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16 if args.fp16 else None)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            for batch in loader:
                loss = model(**batch).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            expected="""
            import argparse
            import torch
            from transformers import AutoModelForCausalLM

            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true")
            args = parser.parse_args()
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            scaler = torch.amp.GradScaler("cuda", enabled=bool(args.fp16))
            for batch in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=bool(args.fp16)):
                    loss = model(**batch).loss
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true")
            args = parser.parse_args()
            dtype = torch.float16 if args.fp16 else torch.float32
            model = torch.nn.Linear(16, 16).to(dtype)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import torch

            device, dtype = torch.device("cuda"), torch.float16
            model = Net().to(device, dtype)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-4)
            for x, y in loader:
                loss = loss_fn(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            expected="""
            import torch

            device, dtype = torch.device("cuda"), torch.float16
            model = Net().to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-4)
            scaler = torch.amp.GradScaler(device.type)
            for x, y in loader:
                with torch.autocast(device_type=device.type, dtype=torch.float16):
                    loss = loss_fn(model(x.to(device)), y.to(device))
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import torch
            model = torch.nn.Linear(16, 16, dtype=torch.float16).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.cuda().half()), y.cuda())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            expected="""
            import torch
            model = torch.nn.Linear(16, 16).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
        ),
        Invalid(
            """
            import torch

            def to_half(net):
                net.half()

            teacher = torch.nn.Linear(16, 16).cuda()
            to_half(teacher)
            student = torch.nn.Linear(16, 16).cuda()
            to_half(student)
            optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
            for x, y in loader:
                with torch.no_grad():
                    target = teacher(x.cuda().half())
                loss = torch.nn.functional.mse_loss(student(x.cuda().half()).float(), target.float())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            fix_withheld=True,
        ),
        Invalid(
            """
            import lightning as L
            import torch
            def main(lr: float = 3e-4):
                fabric = L.Fabric(accelerator="cuda", precision="bf16-true")
                model = torch.nn.Linear(64, 64)
                optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
                model, optimizer = fabric.setup(model, optimizer)
                for x, y in loader:
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    fabric.backward(loss)
                    optimizer.step()
                    optimizer.zero_grad()
            if __name__ == "__main__":
                from jsonargparse import CLI
                CLI(main)
            """,
        ),
        Invalid(
            """
            import lightning as L
            def main(model, data):
                trainer = L.Trainer(accelerator="gpu", precision="bf16-true")
                trainer.fit(model, data)
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        key = node_key(self.ctx.module.relpath, node)
        trained = self._trained().get(key)
        if trained is not None:
            self._report_cast(node, trained)
        precision = next((kw.value.value for kw in node.keywords if kw.arg == "precision"
                          and isinstance(kw.value, ast.Constant)), None)
        dtype = FABRIC_TRUE_PRECISION.get(precision) if isinstance(precision, str) else None
        if dtype is not None:
            # read here, in the call's own scope: a ``Trainer(...)`` inside ``main()`` resolves there
            name = self.ctx.qualified(node.func) or ""
            # (Fabric's own cast is its ``fabric.setup(model, ...)``, reported there as a cast)
            if name.split(".")[0] in ("lightning", "pytorch_lightning", "lightning_fabric") \
                    and not name.endswith("Fabric"):
                self.report(node, "Lightning trains in pure low precision here (parameters and optimizer state "
                                  "in half, no fp32 master weights); use `precision=\"bf16-mixed\"` or "
                                  "`\"16-mixed\"`", precision_context="PURE_FP16" if dtype == "float16" else "PURE_BF16")

    def _trained(self) -> Dict[Tuple[str, int, int, int, int], Origin]:
        """Origins (cast sites) of half parameters that an optimizer without master weights trains."""
        cache = getattr(self, "_cache", None)
        if cache is None:
            cache = self._cache = self.ctx.facts.half_trained_casts()
        return cache

    def _report_cast(self, node: ast.Call, origin: Origin) -> None:
        default = origin.kind == "default_dtype"  # ``torch.set_default_dtype(torch.bfloat16)`` before the model
        dtype = "bfloat16" if self._dtype(node.args[0] if default and node.args else node) == BF16 else "float16"
        fix, reason = None, "no training loop over this model was recognised in this file"
        if self.ctx.facts.cast_after_optimizer(origin):
            reason = "the optimizer was built before the cast"
        scaler = " with a `torch.amp.GradScaler`" if dtype == "float16" else ""
        if default:
            reason = "the default dtype is set here; build the model in float32"
            message = (f"modules built after `{self.ctx.segment(node, 50)}` have {dtype} parameters and are trained "
                       f"without fp32 master weights; build them in float32 and use `torch.autocast`{scaler}")
        else:
            steps = [s for s in training_model(self.ctx).steps if not s.scaled and s.apex_with is None
                     and any(_trains(o, origin) for o in s.optimizers())]
            if len(steps) == 1:
                fix, reason = migration_plan(
                    self.ctx, steps[0], f"Keep the model in fp32 and use autocast({dtype})"
                    + (" + GradScaler" if dtype == "float16" else ""), dtype=dtype, remove_casts=True,
                    enabled=(origin.condition, node) if origin.condition else None)
            func = node.func
            if origin.kind in ("helper_cast", "framework") and node.args:  # ``to_half(model)``, ``fabric.setup(model)``
                cast = f"`{self.ctx.segment(node.args[0], 40)}` is cast to {dtype} by `{self.ctx.segment(func, 40)}`"
            else:
                cast = f"`{self.ctx.segment(func.value if isinstance(func, ast.Attribute) else node, 40)}` is cast to {dtype}"
            message = (f"{cast} and trained without fp32 master weights; keep it in fp32 and use "
                       f"`torch.autocast`{scaler}")
        if origin.condition:
            message += f" (when `{origin.condition}`)"
        if fix is None:
            message += f" (not migrated automatically: {reason})"
        self.report(node, message, fix=fix, precision_context="PURE_FP16" if dtype == "float16" else "PURE_BF16")

    def _dtype(self, node: ast.expr) -> int:
        """The half dtype of the cast ``node`` (or of the dtype a default-dtype call is given)."""
        for obs in self.ctx.observations(node):
            value = obs.value(node)
            if isinstance(value, Seq) and value.items:  # ``model, optimizer = fabric.setup(model, optimizer)``
                value = value.items[0]
            for option in getattr(value, "options", (value,)):
                cast = getattr(option, "cast", 0) or getattr(option, "dtypes", 0)
                if cast & HALF:
                    return cast & HALF
        return F16

def _trains(optimizer, origin: Origin) -> bool:
    return any(found.key == origin.key for found in param_origins(optimizer.get("params") or Scalar("other")))
