"""The analysis's dtype of mixed-precision expressions agrees with what torch computes.

Each expression runs in real torch (CPU, float16 tensors) and is explained by the static analysis;
the analysis must include torch's dtype and may say half only where torch's result is half. These
are the type-promotion facts a wrong transfer function gets wrong: a float32 operand promotes
(``torch.cat``, ``torch.max(a, b)``, ``sum([...])``), a 0-dim float32 operand does not
(``h / f.sum()``, ``torch.tensor(1.0) * h``), explicit ``dtype=`` and casts decide; and under CPU
autocast to float16, which ops run in half and which in float32.

CUDA: ``tests/data/cuda_dtypes.json`` records what a GPU computed for these expressions and the
CUDA-specific ones below (outside autocast, and under ``torch.autocast("cuda")`` to float16 and to
bfloat16, whose op lists differ from the CPU's); the analysis is checked against that recording
everywhere, and on a machine with a GPU the recording is checked against the GPU. Re-record on a GPU
with ``python tests/test_transfer_vs_torch.py --record-cuda``.
"""
from __future__ import annotations

import dataclasses
import json
import runpy
import sys
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

#: the result-kind table (``amp_lint/data/ops.py`` ``RESULT_KINDS``): clamps promote with tensor
#: bounds, ``unique`` keeps the values' dtype, ``scalar_tensor``/``range`` default to float32
RESULT_KIND_EXPRESSIONS = [
    "torch.clamp(h, min=f)", "torch.clamp(h, f, f)", "h.clamp(min=f)", "h.clamp(max=f.sum())", "torch.clamp_max(h, f)",
    "h.clamp_min(f)", "torch.clip(h, min=f)", "h.clip(0, 1)", "torch.clamp(h, 0.0, 1.0)", "torch.clamp(h, min=f.sum())",
    "torch.unique(h)", "h.unique()", "torch.scalar_tensor(1)", "torch.range(0, 3)", "torch.arange(0, 1, 0.5)",
    "torch.arange(4)", "torch.linspace(0, 1, 4)", "torch.count_nonzero(h)", "torch.bincount(t)",
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


#: an einsum that contracts no index is a broadcast product and promotes a float16/float32 mix
#: (with a summed index the same mix raises); CPU only, so the CUDA recording needs no new entries
EINSUM_EXPRESSIONS = ['torch.einsum("ij,jk->ijk", h, f)', 'torch.einsum("i,j->ij", h[0], f[0])',
                      'torch.einsum("ij,jk->ijk", h, f.half())']


@pytest.mark.parametrize("expression", EINSUM_EXPRESSIONS)
def test_an_einsum_that_contracts_nothing_promotes_as_torch_does(tmp_path: Path, expression: str) -> None:
    _agrees(*_run(tmp_path, "einsum_probe.py", [expression], autocast=False)[expression])


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    return _run(tmp_path_factory.mktemp("probe"), "probe.py", EXPRESSIONS, autocast=False)


@pytest.fixture(scope="module")
def result_kind_results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    return _run(tmp_path_factory.mktemp("probe"), "kinds_probe.py", RESULT_KIND_EXPRESSIONS, autocast=False)


@pytest.fixture(scope="module")
def autocast_results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, tuple]:
    return _run(tmp_path_factory.mktemp("probe"), "autocast_probe.py", UNDER_CPU_AUTOCAST, autocast=True)


def _agrees(real: str, inferred: str) -> None:
    assert real in inferred, f"torch gives {real}, the analysis {inferred}"
    assert "float16" not in inferred or real == "float16", f"torch gives {real}, the analysis {inferred}"


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_analysis_agrees_with_torch(results: Dict[str, tuple], expression: str) -> None:
    _agrees(*results[expression])


@pytest.mark.parametrize("expression", RESULT_KIND_EXPRESSIONS)
def test_the_result_kinds_agree_with_torch(result_kind_results: Dict[str, tuple], expression: str) -> None:
    _agrees(*result_kind_results[expression])


@pytest.mark.parametrize("expression", UNDER_CPU_AUTOCAST)
def test_the_analysis_agrees_with_torch_under_cpu_autocast(autocast_results: Dict[str, tuple], expression: str) -> None:
    _agrees(*autocast_results[expression])


# -- CUDA: a recording made on a GPU, checked against the analysis everywhere ----------------------

#: ops whose CUDA autocast policy differs from the CPU one, and fills that overflow float16
ON_CUDA = [
    "torch.nn.functional.binary_cross_entropy(torch.sigmoid(f), (f > 0).float())",
    "torch.nn.functional.binary_cross_entropy_with_logits(f, (f > 0).float())",
    "torch.prod(f)", "f.cumprod(-1)", "torch.nn.functional.softplus(f)", "torch.nn.functional.smooth_l1_loss(f, f)",
    "torch.nn.functional.kl_div(f, f, reduction='batchmean')", "torch.nn.functional.nll_loss(f, t)",
    "torch.dist(f, f)", "torch.nn.functional.cosine_similarity(f, f)", "torch.cdist(f, f)",
    "torch.renorm(f, 2, 0, 1.0)", "torch.nn.functional.rms_norm(f, (4,))", "torch.acos(f.clamp(-1, 1))",
    "torch.log(f.abs() + 1)", "f.rsqrt()", "torch.reciprocal(f)", "torch.log1p(f.abs())", "torch.expm1(f)",
    "torch.sinh(f)", "torch.cosh(f)", "torch.tan(f)", "torch.erfinv(f.clamp(-0.5, 0.5))", "f.sum(-1)", "f.std(-1)",
    "f.norm()", "torch.mm(f, f).softmax(-1)", "torch.softmax(h, -1)", "torch.log_softmax(h, -1)", "torch.exp(h)",
    "h.pow(2)", "h.sum()", "h.mean(-1)", "torch.nn.functional.layer_norm(h, (4,))", "torch.mm(h, f)",
    "torch.mm(h, h)", "torch.cat([torch.mm(f, f), h])", "torch.mm(f, f) * h",
    "h.masked_fill(m, -1e9)", "torch.mm(f, f).masked_fill(m, -1e9)",
    "torch.mm(f, f).masked_fill(m, torch.finfo(f.dtype).min)", "torch.mm(f, f).masked_fill(m, float('-inf'))",
    "torch.mm(f, f).masked_fill(m, -65504.0)", "torch.mm(f, f).masked_fill(m, -7e4)",
    "torch.where(m, torch.mm(f, f), -1e9)", "torch.mm(f, f) + (m.float() * -1e9)", "torch.mm(f, f) - 1e9 * m",
    "torch.mm(f, f).new_tensor(-1e9)", "torch.full_like(torch.mm(f, f), -1e9)",
    "torch.nn.functional.scaled_dot_product_attention(h[None], h[None], h[None])",
    "torch.nn.functional.embedding(t, h)", "torch.nn.functional.linear(h, f)",
]
CUDA_EXPRESSIONS = list(dict.fromkeys(EXPRESSIONS + UNDER_CPU_AUTOCAST + ON_CUDA))
CUDA_RECORDING = Path(__file__).resolve().parent / "data" / "cuda_dtypes.json"
CUDA_MODES = {"plain": None, "autocast_float16": "torch.float16", "autocast_bfloat16": "torch.bfloat16"}
CUDA_PRELUDE = [
    "import torch",
    "h = torch.randn(4, 4, device='cuda').half()",
    "f = torch.randn(4, 4, device='cuda')",
    "m = torch.rand(4, 4, device='cuda') > 0.5",
    "t = torch.zeros(4, dtype=torch.long, device='cuda')",
]


def _measure_on_cuda(expressions: List[str], mode: str) -> Dict[str, str]:
    """Each expression's dtype on the GPU (``raises <Error>: <first line>`` when it raises)."""
    out = {}
    for expr in expressions:
        scope: dict = {}
        exec("\n".join(CUDA_PRELUDE), scope)
        try:
            if CUDA_MODES[mode] is None:
                value = eval(expr, scope)
            else:
                with torch.autocast("cuda", dtype=eval(CUDA_MODES[mode], scope)):
                    value = eval(expr, scope)
            out[expr] = str(value.dtype).replace("torch.", "")
        except Exception as exc:  # the recording keeps what raised, and how
            out[expr] = f"raises {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return out


def _recording() -> dict:
    return json.loads(CUDA_RECORDING.read_text(encoding="utf-8"))


def _explain_cuda(root: Path, mode: str, expressions: List[str]) -> Dict[str, str]:
    """The analysis's value of each expression, written under ``torch.autocast("cuda", ...)``."""
    head = CUDA_PRELUDE + ([] if CUDA_MODES[mode] is None else
                           [f"with torch.autocast('cuda', dtype={CUDA_MODES[mode]}):"])
    indent = "" if CUDA_MODES[mode] is None else "    "
    probe = root / f"cuda_{mode}.py"
    probe.write_text("\n".join(head + [f"{indent}v{i} = {e}" for i, e in enumerate(expressions)]) + "\n",
                     encoding="utf-8")
    settings = dataclasses.replace(Settings(), project_root=str(root))
    out = {}
    for i, expr in enumerate(expressions):
        explained = explain(str(probe), len(head) + 1 + i, [str(probe)], settings)
        values = {v["expression"]: v["value"] for c in explained.contexts for v in c.values}
        out[expr] = values.get(f"v{i}", "not explained")
    return out


@pytest.fixture(scope="module")
def cuda_results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, tuple]]:
    root = tmp_path_factory.mktemp("cuda_probe")
    recorded = _recording()["dtypes"]
    out = {}
    for mode, table in recorded.items():
        measured = [e for e, dtype in table.items() if not dtype.startswith("raises")]
        inferred = _explain_cuda(root, mode, measured)
        out[mode] = {e: (table[e], inferred[e]) for e in measured}
    return out


def test_the_cuda_recording_covers_the_expressions() -> None:
    recorded = _recording()
    assert set(recorded["dtypes"]) == set(CUDA_MODES)
    for table in recorded["dtypes"].values():
        assert list(table) == CUDA_EXPRESSIONS, "the expressions changed: re-record on a GPU (see the module docstring)"


@pytest.mark.parametrize("mode", sorted(CUDA_MODES))
def test_the_analysis_agrees_with_the_cuda_recording(cuda_results: Dict[str, Dict[str, tuple]], mode: str) -> None:
    disagree = []
    for expr, (real, inferred) in cuda_results[mode].items():
        dtypes = set(inferred.replace(",", " ").replace("|", " ").split()) & {"float16", "bfloat16", "float32",
                                                                              "float64", "int64", "bool"}
        if real not in dtypes or any(d != real for d in dtypes & {"float16", "bfloat16"}):
            disagree.append(f"{expr}: the GPU gives {real}, the analysis {inferred}")
    assert len(cuda_results[mode]) > 100 and disagree == []


def test_the_cuda_recording_shows_the_cuda_only_policies() -> None:
    """What differs from the CPU, as the recording saw it (the facts the analysis's CUDA rows encode)."""
    fp16 = _recording()["dtypes"]["autocast_float16"]
    for expr in ("torch.softmax(h, -1)", "torch.log_softmax(h, -1)", "torch.exp(h)", "h.pow(2)", "h.sum()",
                 "torch.nn.functional.layer_norm(h, (4,))"):
        assert fp16[expr] == "float32", expr  # CUDA autocast's fp32 list; the CPU's leaves them float16
    assert fp16["torch.mm(f, f)"] == "float16"
    assert fp16["torch.nn.functional.binary_cross_entropy(torch.sigmoid(f), (f > 0).float())"].startswith(
        "raises RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast")
    for expr in ("torch.mm(f, f).masked_fill(m, -1e9)", "torch.where(m, torch.mm(f, f), -1e9)"):
        assert "value cannot be converted to type c10::Half without overflow" in fp16[expr], expr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="measures on a GPU; elsewhere the recording stands in")
@pytest.mark.parametrize("mode", sorted(CUDA_MODES))
def test_the_cuda_recording_matches_this_gpu(mode: str) -> None:
    torch.manual_seed(0)
    measured = _measure_on_cuda(CUDA_EXPRESSIONS, mode)
    recorded = _recording()["dtypes"][mode]
    differ = {e: (recorded[e], measured[e]) for e in CUDA_EXPRESSIONS
              if recorded[e].split(":")[0] != measured[e].split(":")[0]}
    assert differ == {}


def _record_cuda() -> None:
    assert torch.cuda.is_available(), "recording needs a GPU"
    data = {"recorded_with": {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)},
            "dtypes": {mode: _measure_on_cuda(CUDA_EXPRESSIONS, mode) for mode in CUDA_MODES}}
    CUDA_RECORDING.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CUDA_RECORDING}: {len(CUDA_EXPRESSIONS)} expressions x {len(CUDA_MODES)} modes")


if __name__ == "__main__" and "--record-cuda" in sys.argv:
    _record_cuda()
