"""The analysis's dtype of mixed-precision expressions agrees with what torch computes.

Each expression runs in real torch (CPU, float16 tensors) and is explained by the static analysis;
the analysis must include torch's dtype and may say half only where torch's result is half. These
are the type-promotion facts a wrong transfer function gets wrong: a float32 operand promotes
(``torch.cat``, ``torch.max(a, b)``, ``sum([...])``), a 0-dim float32 operand does not
(``h / f.sum()``, ``torch.tensor(1.0) * h``), explicit ``dtype=`` and casts decide; and under CPU
autocast to float16, which ops run in half and which in float32.
"""
from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path
from typing import Dict, List

import pytest

from amp_lint.config import Settings
from amp_lint.explain import explain

torch = pytest.importorskip("torch")

PRELUDE = [
    "import torch",
    "torch.set_num_threads(1)",
    "h = torch.randn(4, 4).half()",
    "f = torch.randn(4, 4)",
    "m = torch.rand(4, 4) > 0.5",
    "t = torch.zeros(4, dtype=torch.long)",
]

EXPRESSIONS = [
    # promotion by a float32 operand with dimensions
    "torch.cat([h, f])", "torch.cat((f, h), dim=0)", "torch.stack([h, f])", "torch.cat([h.float(), f], -1)",
    "torch.min(h, f)", "torch.max(h, f)", "h.max(f)", "torch.minimum(h, f)", "torch.maximum(h, f)",
    "torch.where(m, h, f)", "torch.where(m, f, h)", "h + f", "f * h", "(h * f).sum(-1)", "sum([h, f])",
    "torch.sigmoid(h) * f", "f[:, 0] * h[:, 0]", "torch.addcmul(f, h, h)",
    # 0-dim float32 operands do not promote a float16 tensor with dimensions
    "h / f.sum()", "h * f.mean()", "torch.tensor(1.0) * h", "h - torch.sum(f)", "h.sum() + f",
    "h.mean() * f.sum()", "h * f.norm().float()",
    # ... but a stack of 0-dim tensors has a dimension
    "h[:2] * torch.stack([f.sum(), f.mean()])[:, None]", "h[0, :2] * torch.cat([f.sum()[None], f.mean()[None]])",
    "h * torch.ones(())", "h * torch.ones(1)", "h + torch.eye(4)",
    # Python scalars never promote
    "h * 2.0", "h + 1",
    # casts, explicit dtypes, factories
    "h.to(f.dtype)", "h.type_as(f)", "h.to(f)", "h.to(dtype=f.dtype)", "h.to(torch.float32)", "h.float().half()",
    "h.double().float()", "f.half().float()", "h.new_zeros(3)", "torch.zeros_like(h, dtype=torch.float32)",
    "torch.full_like(f, 1.0)", "f.new_tensor([1.0])", "torch.softmax(h, -1, dtype=torch.float32)",
    "torch.mean(h, dtype=torch.float32)", "h.sum(dtype=torch.float32)", "torch.sum(h, dim=-1, dtype=torch.float32)",
    "torch.cumsum(h, -1, dtype=torch.float32)",
    # ops on upcast operands
    "torch.matmul(h.float(), f)", "h.float() @ f", "torch.log_softmax(h.float(), -1)",
    "torch.nn.functional.cross_entropy(h.float(), t)", "torch.norm(h.float(), dim=-1)",
    "torch.bmm(h.float().unsqueeze(0), f.unsqueeze(0).transpose(1, 2))", "torch.exp(h).float()", "h.float().exp()",
    "torch.einsum('ij,ij->i', h.float(), f)", "torch.logsumexp(h.float(), -1)", "torch.min(h.float(), dim=-1)[0]",
    "h.max(dim=-1).values", "h.float().min(-1).values", "torch.sort(f, -1).values * h", "t[h.max(-1).indices]",
    # indexing keeps the dtype
    "torch.gather(f, 1, t.unsqueeze(1))", "torch.index_select(h, 0, t)", "h[t]", "h.masked_fill(m, 0.0)",
    "torch.clamp(h, min=0.0)", "torch.lerp(f, h.float(), 0.5)",
]


#: float32 operands under CPU autocast to float16 (its op lists differ from CUDA's)
UNDER_CPU_AUTOCAST = [
    "torch.mm(f, f)", "f @ f", "torch.matmul(f, f)", "torch.nn.functional.linear(f, f)", "torch.bmm(f[None], f[None])",
    "torch.addmm(f, f, f)", "torch.baddbmm(f[None], f[None], f[None])", "torch.einsum('ij,jk->ik', f, f)",
    "torch.nn.functional.conv1d(f[None], f[:, :, None])", "torch.mm(f, f) + f", "torch.cat([torch.mm(f, f), f])",
    "torch.mm(f, f).float()", "h.float() @ f",
    "torch.nn.functional.scaled_dot_product_attention(f[None], f[None], f[None])",
    "torch.softmax(f, -1)", "torch.log_softmax(f, -1)", "f.softmax(-1)",
    "torch.nn.functional.log_softmax(torch.mm(f, f), -1)",
    "torch.exp(f)", "f.pow(2)", "torch.sum(f)", "f.mean(-1)", "f.var(-1)", "torch.norm(f, dim=-1)",
    "torch.cumsum(f, -1)",
    "torch.logsumexp(f, -1)", "torch.nn.functional.layer_norm(f, (4,))", "torch.nn.functional.group_norm(f[None], 2)",
    "torch.nn.functional.normalize(f, dim=-1)", "torch.nn.functional.cross_entropy(f, t)",
    "torch.nn.functional.mse_loss(f, f)", "torch.nn.functional.gelu(f)", "torch.sigmoid(f)", "torch.topk(f, 2)[0]",
    "torch.nn.functional.embedding(t, f)",
]


def _run(root: Path, name: str, expressions: List[str], autocast: bool) -> Dict[str, tuple]:
    probe = root / name
    indent = "    " if autocast else ""
    head = PRELUDE + (["with torch.autocast('cpu', dtype=torch.float16):"] if autocast else [])
    lines = head + [f"{indent}v{i} = {expr}" for i, expr in enumerate(expressions)]
    probe.write_text("\n".join(lines) + "\n", encoding="utf-8")
    torch.set_num_threads(1)
    ran = runpy.run_path(str(probe))
    settings = dataclasses.replace(Settings(), project_root=str(root))
    out = {}
    for i, expr in enumerate(expressions):
        explained = explain(str(probe), len(head) + 1 + i, [str(probe)], settings)
        values = {v["expression"]: v["value"] for c in explained.contexts for v in c.values}
        out[expr] = (str(ran[f"v{i}"].dtype).replace("torch.", ""), values.get(f"v{i}", "not explained"))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    return _run(tmp_path_factory.mktemp("probe"), "probe.py", EXPRESSIONS, autocast=False)


@pytest.fixture(scope="module")
def autocast_results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    return _run(tmp_path_factory.mktemp("probe"), "autocast_probe.py", UNDER_CPU_AUTOCAST, autocast=True)


def _agrees(real: str, inferred: str) -> None:
    assert real in inferred, f"torch gives {real}, the analysis {inferred}"
    assert "float16" not in inferred or real == "float16", f"torch gives {real}, the analysis {inferred}"


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_analysis_agrees_with_torch(results: Dict[str, tuple], expression: str) -> None:
    _agrees(*results[expression])


@pytest.mark.parametrize("expression", UNDER_CPU_AUTOCAST)
def test_the_analysis_agrees_with_torch_under_cpu_autocast(autocast_results: Dict[str, tuple], expression: str) -> None:
    _agrees(*autocast_results[expression])
