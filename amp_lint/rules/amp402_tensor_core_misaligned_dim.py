"""AMP402 tensor-core-misaligned-dim."""
from __future__ import annotations

import ast
from typing import List

from amp_lint.data.tensor_cores import ALIGNMENT, EMBEDDING, round_up
from amp_lint.engine.fixing import FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._layers import LayerDim, is_vocab_dim, layer_dims, runs_in_half, sizes_text
from amp_lint.rules.amp401_unpadded_vocab import _replace_literal
from amp_lint.rules.base import Invalid, Rule, Valid


class TensorCoreMisalignedDim(Rule):
    code = "AMP402"
    name = "tensor-core-misaligned-dim"
    severity = Severity.PERF
    summary = "Linear/Conv dimension not a multiple of 8"
    fix_applicability = Applicability.UNSAFE
    tokens = ("Linear", "Conv")
    docs = """
    ## What it does
    Finds `nn.Linear` and `nn.Conv*d` layers whose input or output size is statically known,
    at least `min-dim` (default 128), and not a multiple of 8. Vocabulary-sized heads are
    AMP401's business and are not reported here. When the calls that build the layer give it
    different known sizes (one factory per model size, an argparse default and a self-test),
    each size is checked, and the message says where a misaligned one was set or built. Sizes
    that only a test file gives (a toy model built in `tests/`) are not the configuration the
    project runs and are not checked.

    ## Why is this bad?
    In fp16/bf16 the layer's GEMM runs on Tensor Cores most efficiently when M, N and K are
    multiples of 8 elements (16 bytes); with cuBLAS < 11 misalignment disabled Tensor Cores
    entirely, and newer libraries still run slower kernels. Small dims (the 3 input channels of
    an image) are left alone: they cost little and cannot be changed.

    ## Fix safety
    A size written as a literal in the call is reported without a fix: changing one layer's
    width breaks the next layer. When the size comes from one named constant, argparse default or
    config default, `--unsafe-fixes` rounds that definition up to a multiple of 8, which resizes
    every layer that shares it; it changes the architecture and checkpoint shapes.

    ## Options
    `min-dim` (default 128).

    ## References
    - https://docs.nvidia.com/deeplearning/performance/dl-performance-fully-connected/index.html
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
    """
    VALID = [
        Valid("""
        from torch import nn
        layer = nn.Linear(768, 3072)
        conv = nn.Conv2d(3, 64, 3)
        """),
        Valid("""
        import torch.nn as nn
        small = nn.Linear(100, 10).half()
        """),
        Valid("""
        # an fp32 layer does not use Tensor Cores (by default): alignment does not matter there
        import torch.nn as nn
        proj = nn.Linear(768, 1500)
        """),
        Valid("""
        import torch.nn as nn
        layer = nn.Linear(300, 512)
        """, settings={"min_dim": 512}),
        Valid("""
        # the factories disagree on the width, but every width they pick is aligned
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.proj = nn.Linear(width, 2 * width)
            def forward(self, x):
                return self.proj(x)
        BUILDERS = {"small": lambda: Head(256), "large": lambda: Head(1024)}
        def run(name, x):
            with torch.autocast("cuda"):
                return BUILDERS[name]()(x)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch.nn as nn
            proj = nn.Linear(768, 1500).half()
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            HIDDEN = 300
            mlp = nn.Sequential(nn.Linear(512, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 512))
            mlp.half()
            """,
            count=2,
            expected="""
            import torch.nn as nn
            HIDDEN = 304
            mlp = nn.Sequential(nn.Linear(512, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 512))
            mlp.half()
            """,
        ),
        Invalid(
            """
            # one configuration (the 14-pixel patches) gives 14 * 14 * 3 = 588 outputs
            import torch
            import torch.nn as nn
            class PatchDecoder(nn.Module):
                def __init__(self, patch=16, channels=3, width=512):
                    super().__init__()
                    self.to_pixels = nn.Linear(width, patch * patch * channels)
                def forward(self, x):
                    return self.to_pixels(x)
            def decoder_p16():
                return PatchDecoder(patch=16)
            def decoder_p14():
                return PatchDecoder(patch=14)
            FACTORIES = {"p16": decoder_p16, "p14": decoder_p14}
            def train(name, x):
                model = FACTORIES[name]()
                with torch.autocast("cuda"):
                    return model(x)
            """,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.dims: List[LayerDim] = []

    def visit_Call(self, node: ast.Call) -> None:
        for dim in layer_dims(self.ctx, node):
            if dim.layer != EMBEDDING and not is_vocab_dim(self.ctx, dim):
                self.dims.append(dim)

    def finish(self) -> None:
        min_dim = self.ctx.settings.min_dim
        for dim in self.dims:
            misaligned = dim.misaligned(ALIGNMENT, min_dim)
            if not misaligned or not runs_in_half(self.ctx, dim):
                continue
            plan = None
            literal = dim.literal
            if dim.value is not None and literal is not None and literal is not dim.expr:
                target = round_up(dim.value, ALIGNMENT)
                title = f"Round the shared size up to {target}"
                plan = FixPlan(title, Applicability.UNSAFE,
                               lambda fctx, literal=literal, target=target, title=title: _replace_literal(
                                   fctx, literal, target, title))
            layer = dim.layer.rsplit(".", 1)[-1]
            sizes, suggested = sizes_text(misaligned, lambda size: round_up(size, ALIGNMENT))
            self.report(
                dim.call,
                f"{layer} {dim.role}put size {sizes} is not a multiple of {ALIGNMENT}; "
                f"Tensor Core GEMMs run slower (use {suggested})",
                fix=plan,
            )
