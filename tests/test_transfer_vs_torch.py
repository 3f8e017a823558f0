"""The analysis's dtype of mixed-precision expressions agrees with what torch computes.

Each expression runs in real torch (CPU, float16 tensors) and is explained by the static analysis;
the analysis must include torch's dtype and may say half only where torch's result is half. These
are the type-promotion facts a wrong transfer function gets wrong: a float32 operand promotes
(``torch.cat``, ``torch.max(a, b)``, ``sum([...])``), a 0-dim float32 operand does not
(``h / f.sum()``, ``torch.tensor(1.0) * h``), explicit ``dtype=`` and casts decide.
"""
from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path
from typing import Dict

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
    # indexing keeps the dtype
    "torch.gather(f, 1, t.unsqueeze(1))", "torch.index_select(h, 0, t)", "h[t]", "h.masked_fill(m, 0.0)",
    "torch.clamp(h, min=0.0)", "torch.lerp(f, h.float(), 0.5)",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    root = tmp_path_factory.mktemp("probe")
    probe = root / "probe.py"
    lines = PRELUDE + [f"v{i} = {expr}" for i, expr in enumerate(EXPRESSIONS)]
    probe.write_text("\n".join(lines) + "\n", encoding="utf-8")
    torch.set_num_threads(1)
    ran = runpy.run_path(str(probe))
    settings = dataclasses.replace(Settings(), project_root=str(root))
    out = {}
    for i, expr in enumerate(EXPRESSIONS):
        explained = explain(str(probe), len(PRELUDE) + 1 + i, [str(probe)], settings)
        values = {v["expression"]: v["value"] for c in explained.contexts for v in c.values}
        out[expr] = (str(ran[f"v{i}"].dtype).replace("torch.", ""), values.get(f"v{i}", "not explained"))
    return out


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_analysis_agrees_with_torch(results: Dict[str, tuple], expression: str) -> None:
    real, inferred = results[expression]
    assert real in inferred, f"torch gives {real}, the analysis {inferred}"
    assert "float16" not in inferred or real == "float16", f"torch gives {real}, the analysis {inferred}"
