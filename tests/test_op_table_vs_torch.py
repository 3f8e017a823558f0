"""Every row of the autocast op table (``amp_lint/data/ops.py`` ``OPS``) agrees with torch.

Each op gets one probe expression, run on a float32 and on a float16 operand under autocast. The
table says per device whether autocast runs the op in lower precision (``lower``: half out, whatever
the input), in float32 (``fp32``: float32 out, even from a half input) or leaves it alone (``None``
and ``promote``: the input's dtype out). The CPU columns are measured here, live, under
``torch.autocast("cpu")`` to float16 and to bfloat16; the CUDA column against a recording made on a
GPU (``tests/data/cuda_op_table.json``, made with torch 2.11 on an H200: rows newer than the
recording's torch, ``CUDA_SINCE``, are read as unlisted), which is compared with the GPU itself
where one is present.
A probe that raises (an op without a half kernel on that device) says nothing about the table.

Re-record on a GPU with ``python tests/test_op_table_vs_torch.py --record-cuda``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

import pytest

from amp_lint.data.ops import CUDA_SINCE, DECOMPOSED_OPS, FP32, LOWER, OPS

torch = pytest.importorskip("torch")

#: One probe per table row; ``{x}`` is a 4x4 operand of the dtype under test, ``T`` four long zeros.
PROBES: Dict[str, str] = {
    "matmul": "torch.matmul({x}, {x})", "__matmul__": "{x} @ {x}", "mm": "torch.mm({x}, {x})",
    "bmm": "torch.bmm({x}[None], {x}[None])", "baddbmm": "torch.baddbmm({x}[None], {x}[None], {x}[None])",
    "addmm": "torch.addmm({x}, {x}, {x})", "addbmm": "torch.addbmm({x}, {x}[None], {x}[None])",
    "linear": "F.linear({x}, {x})", "conv1d": "F.conv1d({x}[None], {x}[:, :, None])",
    "conv2d": "F.conv2d({x}[None, None], {x}[None, None])",
    "conv3d": "F.conv3d({x}[None, None, None], {x}[None, None, None])",
    "conv_transpose1d": "F.conv_transpose1d({x}[None], {x}[:, :, None])",
    "conv_transpose2d": "F.conv_transpose2d({x}[None, None], {x}[None, None])",
    "conv_transpose3d": "F.conv_transpose3d({x}[None, None, None], {x}[None, None, None])",
    "conv_tbc": "torch.conv_tbc({x}[None], {x}[None], {x}[0])", "prelu": "F.prelu({x}, {x}[0, :1])",
    "scaled_dot_product_attention": "F.scaled_dot_product_attention({x}[None], {x}[None], {x}[None])",
    "einsum": "torch.einsum('ij,jk->ik', {x}, {x})", "vecdot": "torch.linalg.vecdot({x}, {x})",
    "mv": "torch.mv({x}, {x}[0])", "addmv": "torch.addmv({x}[0], {x}, {x}[0])",
    "addr": "torch.addr({x}, {x}[0], {x}[0])", "chain_matmul": "torch.chain_matmul({x}, {x})",
    "multi_dot": "torch.linalg.multi_dot([{x}, {x}])",
    "softmax": "torch.softmax({x}, -1)", "log_softmax": "torch.log_softmax({x}, -1)", "softmin": "F.softmin({x}, -1)",
    "exp": "torch.exp({x})", "expm1": "torch.expm1({x})", "log": "torch.log({x}.abs() + 1)",
    "log2": "torch.log2({x}.abs() + 1)", "log10": "torch.log10({x}.abs() + 1)", "log1p": "torch.log1p({x}.abs())",
    "reciprocal": "torch.reciprocal({x})", "rsqrt": "torch.rsqrt({x}.abs() + 1)",
    "acos": "torch.acos({x}.clamp(-1, 1))", "asin": "torch.asin({x}.clamp(-1, 1))", "cosh": "torch.cosh({x})",
    "sinh": "torch.sinh({x})", "tan": "torch.tan({x})", "erfinv": "torch.erfinv({x}.clamp(-0.5, 0.5))",
    "pow": "torch.pow({x}, 2)", "__pow__": "{x} ** 2", "__rpow__": "2 ** {x}", "softplus": "F.softplus({x})",
    "layer_norm": "F.layer_norm({x}, (4,))", "rms_norm": "F.rms_norm({x}, (4,))",
    "group_norm": "F.group_norm({x}[None], 2)", "normalize": "F.normalize({x}, dim=-1)",
    "norm": "torch.norm({x}, dim=-1)", "vector_norm": "torch.linalg.vector_norm({x}, dim=-1)",
    "matrix_norm": "torch.linalg.matrix_norm({x})", "frobenius_norm": "torch.frobenius_norm({x}, dim=(0, 1))",
    "nuclear_norm": "torch.nuclear_norm({x})", "renorm": "torch.renorm({x}, 2, 0, 1.0)",
    "dist": "torch.dist({x}, {x})", "pdist": "F.pdist({x})", "sum": "torch.sum({x})",
    "cumsum": "torch.cumsum({x}, -1)", "cumprod": "torch.cumprod({x}, -1)", "logsumexp": "torch.logsumexp({x}, -1)",
    "cosine_similarity": "F.cosine_similarity({x}, {x})",
    "interpolate": "F.interpolate({x}[None], scale_factor=2.0)", "upsample": "F.upsample({x}[None], scale_factor=2.0)",
    "cross_entropy": "F.cross_entropy({x}, T)", "nll_loss": "F.nll_loss({x}, T)", "mse_loss": "F.mse_loss({x}, {x})",
    "l1_loss": "F.l1_loss({x}, {x})", "smooth_l1_loss": "F.smooth_l1_loss({x}, {x})",
    "huber_loss": "F.huber_loss({x}, {x})", "kl_div": "F.kl_div({x}, {x}, reduction='batchmean')",
    "poisson_nll_loss": "F.poisson_nll_loss({x}, {x}.abs())",
    "hinge_embedding_loss": "F.hinge_embedding_loss({x}, {x}.sign())",
    "margin_ranking_loss": "F.margin_ranking_loss({x}[0], {x}[1], {x}[2].sign())",
    "cosine_embedding_loss": "F.cosine_embedding_loss({x}, {x}, {x}.new_ones(4))",
    "soft_margin_loss": "F.soft_margin_loss({x}, {x}.sign())", "multi_margin_loss": "F.multi_margin_loss({x}, T)",
    "multilabel_margin_loss": "F.multilabel_margin_loss({x}, T.expand(4, 4).contiguous())",
    "triplet_margin_loss": "F.triplet_margin_loss({x}, {x}, {x})",
    "binary_cross_entropy": "F.binary_cross_entropy(torch.sigmoid({x}), ({x} > 0).to({x}.dtype))",
    "binary_cross_entropy_with_logits": "F.binary_cross_entropy_with_logits({x}, ({x} > 0).to({x}.dtype))",
    "prod": "torch.prod({x})", "cdist": "torch.cdist({x}, {x})",
    "ctc_loss": "F.ctc_loss({x}[:, None], T[None, :2] + 1, (4,), (2,))",
    "addcmul": "torch.addcmul({x}, {x}, {x})", "addcdiv": "torch.addcdiv({x}, {x}, {x}.abs() + 1)",
    "atan2": "torch.atan2({x}, {x})", "cross": "torch.linalg.cross({x}[:, :3], {x}[:, :3])",
    "dot": "torch.dot({x}[0], {x}[0])", "tensordot": "torch.tensordot({x}, {x}, dims=1)",
    "bilinear": "F.bilinear({x}, {x}, {x}[None])", "cat": "torch.cat([{x}, {x}])", "stack": "torch.stack([{x}, {x}])",
}
INPUTS = {"float32": "f", "float16": "h"}
AUTOCAST_DTYPES = ("float16", "bfloat16")
CUDA_RECORDING = Path(__file__).resolve().parent / "data" / "cuda_op_table.json"


def measure(device: str) -> Dict[str, Dict[str, str]]:
    """``{autocast dtype: {"op|input dtype": result dtype or "raises ..."}}`` on ``device``."""
    import warnings

    import torch.nn.functional as F

    torch.manual_seed(0)
    out: Dict[str, Dict[str, str]] = {}
    for autocast_dtype in AUTOCAST_DTYPES:
        table = out[autocast_dtype] = {}
        for op, probe in PROBES.items():
            for input_dtype, name in INPUTS.items():
                scope = {"torch": torch, "F": F, "T": torch.zeros(4, dtype=torch.long, device=device),
                         "f": torch.randn(4, 4, device=device), "h": torch.randn(4, 4, device=device).half()}
                try:
                    with warnings.catch_warnings(), torch.autocast(device, dtype=getattr(torch, autocast_dtype)):
                        warnings.simplefilter("ignore")
                        value = eval(probe.format(x=name), scope)
                    table[f"{op}|{input_dtype}"] = str(value.dtype).replace("torch.", "")
                except Exception as exc:  # kept, with its kind: an op with no half kernel here
                    table[f"{op}|{input_dtype}"] = f"raises {type(exc).__name__}"
    return out


def expected(policy: Optional[str], autocast_dtype: str, input_dtype: str) -> str:
    """The dtype the table's policy for an op predicts from an input of ``input_dtype``."""
    if policy == LOWER:
        return autocast_dtype
    if policy == FP32:
        return "float32"
    return input_dtype  # not touched by autocast (``promote`` only matters between operands)


def release(version: str) -> Tuple[int, int]:
    """``(2, 11)`` of ``"2.11.0+cu130"``."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def disagreements(measured: Dict[str, Dict[str, str]], column: int,
                  version: Optional[str] = None) -> Dict[str, str]:
    """Rows of ``OPS`` whose ``column`` (0: CUDA, 1: CPU) predicts another dtype than ``measured``
    (made with torch ``version``: a CUDA row newer than it is read as unlisted)."""
    out = {}
    for autocast_dtype, table in measured.items():
        for op, policies in OPS.items():
            policy = policies[column]
            if column == 0 and version is not None and op in CUDA_SINCE and release(version) < CUDA_SINCE[op]:
                policy = None
            for input_dtype in INPUTS:
                real = table[f"{op}|{input_dtype}"]
                want = expected(policy, autocast_dtype, input_dtype)
                if not real.startswith("raises") and real != want:
                    out[f"{op} on {input_dtype} under autocast({autocast_dtype})"] = f"torch {real}, table {want}"
    return out


@pytest.fixture(scope="module")
def on_cpu() -> Dict[str, Dict[str, str]]:
    torch.set_num_threads(1)
    return measure("cpu")


def test_every_row_of_the_table_has_a_probe() -> None:
    assert set(PROBES) == set(OPS) and set(CUDA_SINCE) <= set(OPS)


def test_each_decomposed_op_has_no_kernel_nor_autocast_rule_of_its_own() -> None:
    """``DECOMPOSED_OPS`` take the row of the op they run as: torch's dispatcher (the CPU build
    registers the CUDA autocast rules too) has only a ``CompositeImplicitAutograd`` kernel for them
    and no autocast rule, while the op they decompose into has its own CUDA autocast rule."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for op, target in DECOMPOSED_OPS.items():
        assert target in OPS and op not in OPS
        assert has(f"aten::{op}", "CompositeImplicitAutograd")
        assert not has(f"aten::{op}", "AutocastCUDA") and not has(f"aten::{op}", "AutocastCPU")
        assert not has(f"aten::{op}", "CPU")
    assert has("aten::pow.Tensor_Scalar", "AutocastCUDA")


def test_the_recording_shows_what_the_cpu_does_not() -> None:
    """The CUDA facts that differ from the CPU, as the GPU computed them: softmax and exp in float32
    from a half input, ``mv`` in half from a float32 one; and torch 2.11 left ``rms_norm`` unlisted."""
    recorded = json.loads(CUDA_RECORDING.read_text(encoding="utf-8"))
    fp16 = recorded["dtypes"]["float16"]
    assert fp16["softmax|float16"] == fp16["exp|float16"] == fp16["sum|float16"] == "float32"
    assert fp16["mv|float32"] == fp16["addr|float32"] == "float16"
    if release(recorded["recorded_with"]["torch"]) < CUDA_SINCE["rms_norm"]:
        assert fp16["rms_norm|float16"] == "float16"


def test_the_cpu_column_matches_cpu_autocast(on_cpu: Dict[str, Dict[str, str]]) -> None:
    ran = sum(not v.startswith("raises") for table in on_cpu.values() for v in table.values())
    assert ran > 300 and disagreements(on_cpu, 1) == {}


def test_the_cuda_column_matches_the_recording() -> None:
    recorded = json.loads(CUDA_RECORDING.read_text(encoding="utf-8"))
    measured, version = recorded["dtypes"], recorded["recorded_with"]["torch"]
    assert sorted(measured) == sorted(AUTOCAST_DTYPES)
    assert all(set(table) == {f"{op}|{d}" for op in PROBES for d in INPUTS} for table in measured.values()), \
        "the probes changed: re-record on a GPU (see the module docstring)"
    ran = sum(not v.startswith("raises") for table in measured.values() for v in table.values())
    assert ran > 300 and disagreements(measured, 0, version) == {}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="measures on a GPU; elsewhere the recording stands in")
def test_the_recording_matches_this_gpu() -> None:
    recorded = json.loads(CUDA_RECORDING.read_text(encoding="utf-8"))["dtypes"]
    assert measure("cuda") == recorded


def _record_cuda() -> None:
    assert torch.cuda.is_available(), "recording needs a GPU"
    data = {"recorded_with": {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)},
            "dtypes": measure("cuda")}
    CUDA_RECORDING.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CUDA_RECORDING}: {len(PROBES)} ops x {len(INPUTS)} inputs x {len(AUTOCAST_DTYPES)} autocast dtypes")
    print(json.dumps(disagreements(data["dtypes"], 0, torch.__version__), indent=1))


if __name__ == "__main__" and "--record-cuda" in sys.argv:
    _record_cuda()
