"""AMP201 softmax-in-fp16."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

import libcst as cst

from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._numerics import PROJECT_TOKENS, callee_name, half_of, module_class, stand_in, tensor_receiver
from amp_lint.rules.base import Hazard, Invalid, Rule, Valid, find_arg
from amp_lint.semantics.facts import Observation
from amp_lint.semantics.values import Tensor

_FUNCS = {
    "torch.softmax": "softmax", "torch.log_softmax": "log_softmax", "torch.nn.functional.softmax": "softmax",
    "torch.nn.functional.log_softmax": "log_softmax", "torch.special.softmax": "softmax",
    "torch.special.log_softmax": "log_softmax", "torch.Tensor.softmax": "softmax",
    "torch.Tensor.log_softmax": "log_softmax",
}
_MODULES = {"torch.nn.Softmax": "softmax", "torch.nn.LogSoftmax": "log_softmax"}


class SoftmaxInFp16(Rule):
    code = "AMP201"
    skips_test_files = True
    name = "softmax-in-fp16"
    severity = Severity.WARNING
    summary = "softmax / log_softmax computed in half precision"
    fix_applicability = Applicability.UNSAFE
    tokens = ("softmax", "Softmax") + PROJECT_TOKENS
    docs = """
    ## What it does
    Finds `softmax` / `log_softmax` (functional, `torch.`, Tensor method, `nn.Softmax` /
    `nn.LogSoftmax` modules) whose input is float16/bfloat16 where nothing upcasts it: in a module
    cast wholesale with `.half()` / `.to(torch.float16)`, on tensors cast to half explicitly, or
    under **CPU** autocast (which, unlike CUDA autocast, does not put softmax on its fp32 list).

    ## Why is this bad?
    Under CUDA autocast softmax runs in float32 (autocast's `fp32_set_opt_dtype` policy). Outside it
    the kernel runs in the input dtype, and the damage depends on the device. The CPU kernel rounds
    the normaliser `max + log(sum(exp(x - max)))` to float16 (3 significant digits), so
    log-probabilities of confident tokens collapse to 0 or are off by tens of percent. The CUDA
    kernel accumulates in float32 and rounds only its output: the values keep 3 significant
    digits, and probabilities below about 3e-8 (half float16's smallest subnormal) round to 0,
    whose log is `-inf`.
    Fairseq-style `softmax(x.float())` and `softmax(x, dtype=torch.float32)` are silent.

    apex O1 (`amp.initialize(..., opt_level="O1")`) patched only `torch.nn.functional.softmax` and
    `log_softmax` (which `nn.Softmax` calls) to float32: `torch.softmax(x)` and `x.softmax(-1)` on a
    float16 activation under O1 run in float16 and are reported.

    ## Fix safety
    The fix computes in float32 and casts back: `F.softmax(x, dim=d, dtype=torch.float32).type_as(x)`
    (the call's form is kept: `x.softmax(-1)` becomes `x.softmax(-1, dtype=torch.float32).type_as(x)`,
    a module call `self.softmax(x)` becomes `self.softmax(x.float()).type_as(x)`). It is unsafe: it
    changes numerics (for the better) and costs memory for the fp32 intermediate.

    ## References
    - PyTorch docs, Autocast Op Reference (softmax and log_softmax autocast to float32 on CUDA; the CPU
      list leaves them in the input dtype): https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - pytorch/pytorch `aten/src/ATen/autocast_mode.h` (CUDA `fp32_set_opt_dtype` list) and
      `aten/src/ATen/autocast_mode.cpp` (CPU registrations):
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h
      https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp
    - Measured with torch 2.13.0 (CPU): under `torch.autocast("cpu", dtype=torch.float16)`, `softmax`
      and `log_softmax` of a float16 tensor return float16
    - Measured: `fixtures/numerics/AMP201_logprobs_log_softmax.py` is 77 % off its float32 result on
      the CPU (torch 2.13.0) and 0.2 % off on an NVIDIA H100 (torch 2.11.0+cu130), where the CUDA
      kernel's float32 accumulation leaves only the output rounding
    - https://pytorch.org/docs/stable/amp.html#autocast-op-reference
    - NVIDIA/apex `apex/amp/lists/functional_overrides.py` (softmax, log_softmax on
      `torch.nn.functional`) and `torch_overrides.py` / `tensor_overrides.py` (neither lists them)
    """
    VALID = [
        Valid("""
        import torch
        import torch.nn.functional as F
        x = torch.randn(4, 8).half()
        p = F.softmax(x.float(), dim=-1)
        q = F.softmax(x, dim=-1, dtype=torch.float32)
        """),
        Valid("""
        import torch
        import torch.nn.functional as F
        def f(q, k):
            with torch.autocast("cuda", dtype=torch.float16):
                return F.softmax(q @ k.transpose(-2, -1), dim=-1)
        """),
        Valid("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attn(nn.Module):
            def forward(self, x):
                return F.softmax(x, dim=-1)
        model = Attn()
        """),
        Valid("""
        import torch
        import torch.nn.functional as F
        from apex import amp

        # apex O1 patched torch.nn.functional.softmax to run in float32
        class Attn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.qk = torch.nn.Linear(64, 128)

            def forward(self, x):
                q, k = self.qk(x).chunk(2, dim=-1)
                return F.softmax(q @ k.transpose(-2, -1), dim=-1)

        model = Attn().cuda()
        optimizer = torch.optim.Adam(model.parameters())
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
        for x in loader:
            loss = model(x).sum()
            with amp.scale_loss(loss, optimizer) as scaled:
                scaled.backward()
            optimizer.step()
        """),
        Valid("""
        import torch
        from fairseq import utils
        x = torch.randn(4, 8).half()
        p = utils.softmax(x, dim=-1, onnx_trace=False)
        """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(64, 1024)

                def forward(self, h):
                    logits = self.proj(h)
                    return F.log_softmax(logits, dim=-1)

            head = Head().half()
            """,
            expected="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(64, 1024)

                def forward(self, h):
                    logits = self.proj(h)
                    return F.log_softmax(logits, dim=-1, dtype=torch.float32).type_as(logits)

            head = Head().half()
            """,
        ),
        Invalid(
            """
            import torch
            x = torch.randn(2, 8, dtype=torch.float16)
            y = x.softmax(-1)
            """,
            expected="""
            import torch
            x = torch.randn(2, 8, dtype=torch.float16)
            y = x.softmax(-1, dtype=torch.float32).type_as(x)
            """,
        ),
        Invalid(
            """
            import torch
            def attend(q, k):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    scores = q @ k.transpose(-2, -1)
                    return torch.softmax(scores, dim=-1)
            """,
            expected="""
            import torch
            def attend(q, k):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    scores = q @ k.transpose(-2, -1)
                    return torch.softmax(scores, dim=-1, dtype=torch.float32).type_as(scores)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(64, 8)
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, x):
                    scores = self.score(x)
                    return self.softmax(scores)
            attn = Attn().to(torch.float16)
            """,
            expected="""
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(64, 8)
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, x):
                    scores = self.score(x)
                    return self.softmax(scores.float()).type_as(scores)
            attn = Attn().to(torch.float16)
            """,
        ),
        Invalid(
            """
            import torch
            from apex import amp

            # apex O1 patched torch.nn.functional.softmax, not the Tensor method
            class Attn(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = torch.nn.Linear(64, 128)

                def forward(self, x):
                    q, k = self.qk(x).chunk(2, dim=-1)
                    scores = q @ k.transpose(-2, -1)
                    return scores.softmax(-1)

            model = Attn().cuda()
            optimizer = torch.optim.Adam(model.parameters())
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            for x in loader:
                loss = model(x).sum()
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
                optimizer.step()
            """,
            expected="""
            import torch
            from apex import amp

            # apex O1 patched torch.nn.functional.softmax, not the Tensor method
            class Attn(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = torch.nn.Linear(64, 128)

                def forward(self, x):
                    q, k = self.qk(x).chunk(2, dim=-1)
                    scores = q @ k.transpose(-2, -1)
                    return scores.softmax(-1, dtype=torch.float32).type_as(scores)

            model = Attn().cuda()
            optimizer = torch.optim.Adam(model.parameters())
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            for x in loader:
                loss = model(x).sum()
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
                optimizer.step()
            """,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        callee = self.ctx.callee(node)
        method = isinstance(node.func, ast.Attribute) and node.func.attr in ("softmax", "log_softmax")
        if not (callee.names & _FUNCS.keys() or callee.modules & _MODULES.keys() or (method and callee.tensor_method)):
            return
        hazards: List[Hazard] = []
        found: List[Tuple[Observation, Tensor]] = []
        site: Optional[Tuple[str, ast.AST, str]] = None
        for obs in self.ctx.observations(node):
            matched = self._match(obs, node)
            if matched is None:
                continue
            kind, source, form = matched
            if find_arg(node, "dtype", 3 if form == "function" else 2) is not None:
                return
            tensor = half_of(obs, source)
            functional = form == "module" or (callee_name(obs, node) or "").startswith("torch.nn.functional.")
            if tensor is None or obs.keeps_in_fp32(kind, tensor, functional):
                continue
            site = matched
            found.append((obs, tensor))
            hazards.append(Hazard(obs, f"`{kind}` runs {obs.where(tensor)}; compute it in float32 and cast "
                                       "back", obs.label(tensor.dtypes, tensor), tensor))
        if site is None:
            return
        kind, source, form = site
        back = stand_in(source, found)
        plan = None
        if back is not None:
            plan = FixPlan("Compute the softmax in float32 and cast back", Applicability.UNSAFE,
                           lambda fctx: self._fix(fctx, node, back, form))
        self.report_hazard(node, hazards, fix=plan)

    def _match(self, obs: Observation, node: ast.Call) -> Optional[Tuple[str, ast.AST, str]]:
        """(softmax or log_softmax, its input, call form) when ``node`` is a softmax here."""
        name = callee_name(obs, node)
        if name in _FUNCS:
            source = find_arg(node, "input", 0)
            return (_FUNCS[name], source, "function") if source is not None else None
        cls = module_class(obs, node)
        if cls in _MODULES and node.args:
            return _MODULES[cls], node.args[0], "module"
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("softmax", "log_softmax"):
            receiver = tensor_receiver(obs, node)
            if receiver is not None:
                return node.func.attr, receiver, "method"
        return None

    def _fix(self, fctx: FixContext, node: ast.Call, back: ast.AST, form: str) -> Optional[CstFix]:
        call = fctx.node(node)
        back_node = fctx.node(back)
        if not isinstance(call, cst.Call) or back_node is None:
            return None
        back_expr = cst.parse_expression(fctx.code(back_node))
        f32, imports = fctx.torch_ref("torch.float32")
        fix = CstFix("Compute the softmax in float32 and cast back", Applicability.UNSAFE, add_imports=imports)
        if form == "module":
            args = list(call.args)
            args[0] = args[0].with_changes(value=codegen.method_call(args[0].value, "float"))
            new: cst.BaseExpression = call.with_changes(args=args)
        else:
            new = codegen.call(call.func, list(call.args) + [codegen.keyword("dtype", f32)], like=call)
        fix.replace(call, codegen.method_call(new, "type_as", [cst.Arg(back_expr)]))
        return fix
