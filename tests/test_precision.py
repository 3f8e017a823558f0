"""The precision analysis: contexts, autocast regions, wholesale casts and local dataflow.

A probe rule records, for every ``probe(expr)`` call, the dtype vector of ``expr`` and whether
the analysis would report a hazard there in the function's resolved entry contexts.
"""
from __future__ import annotations

import textwrap
from typing import Dict, List, Optional

import libcst as cst
import pytest

from amp_lint.analysis.precision import CONTEXTS, PrecisionAnalysis, is_half, per_context
from amp_lint.config import Settings
from amp_lint.engine.linter import lint_text, parse, run_rules
from amp_lint.findings import Severity
from amp_lint.rules import RULES_BY_CODE
from amp_lint.rules.base import Rule


class Probe(Rule):
    code = "AMP999"
    name = "probe"
    severity = Severity.WARNING
    summary = "test probe"
    docs = ""
    requires = ("precision",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            prec: PrecisionAnalysis = self.ctx.analyses["precision"]
            values = prec.value(node.args[0].value)
            messages = per_context(prec, lambda c, i: f"{values[i]}" if is_half(values[i]) else None)
            prec.report_when(self, node, messages)


def analyse(code: str, **settings) -> List[Dict[str, Optional[str]]]:
    """(message = the half dtype, precision_context, confidence) of every probe that is half."""
    text = textwrap.dedent(code).lstrip("\n")
    findings = lint_text("t.py", text, Settings(preview=True, **settings), [Probe])
    return [{"line": f.location.row, "dtype": f.message, "context": f.precision_context,
             "confidence": f.confidence} for f in findings]


def contexts(code: str, **settings) -> Dict[int, str]:
    return {f["line"]: f["context"] for f in analyse(code, **settings)}


def test_explicit_half_tensors_and_upcasts():
    found = contexts("""
        import torch
        x = torch.randn(4).half()
        y = torch.randn(4, dtype=torch.float16)
        probe(x)
        probe(y)
        probe(x.float())
        probe(x.to(torch.float32))
        probe(x.to(dtype=torch.float32))
        z = torch.randn(4)
        probe(z.type_as(x))
        probe(z.to(x.dtype))
        probe(z)
        probe(x + z)
        probe(x * 2.0)
    """)
    # half values outside autocast are reported as PURE_FP16 (tensors cast or created in half)
    assert found == {4: "PURE_FP16", 5: "PURE_FP16", 10: "PURE_FP16", 11: "PURE_FP16", 14: "PURE_FP16"}


@pytest.mark.parametrize("with_line,context", [
    ('torch.autocast("cpu", dtype=torch.float16)', "AUTOCAST_FP16"),
    ('torch.autocast(device_type="cpu")', "AUTOCAST_BF16"),
    ('torch.amp.autocast("cpu", torch.float16)', "AUTOCAST_FP16"),
    ("torch.cpu.amp.autocast()", "AUTOCAST_BF16"),
    ('torch.autocast("cuda")', "AUTOCAST_FP16"),
    ("torch.cuda.amp.autocast()", "AUTOCAST_FP16"),
    ('torch.autocast("cuda", dtype=torch.bfloat16)', "AUTOCAST_BF16"),
])
def test_autocast_regions_lower_matmul(with_line, context):
    found = analyse(f"""
        import torch
        a = torch.randn(4, 4)
        with {with_line}:
            probe(a @ a)
            probe(a)
    """)
    assert [(f["line"], f["context"]) for f in found] == [(4, context)]


def test_autocast_via_alias_variable_and_decorator():
    found = contexts("""
        import torch
        from torch.cuda.amp import autocast as ac
        a = torch.randn(4, 4)
        with ac():
            probe(a @ a)
        region = torch.autocast("cpu", dtype=torch.float16)
        with region:
            probe(torch.mm(a, a))

        @torch.autocast("cpu", dtype=torch.float16)
        def f(x):
            probe(x @ x)
    """)
    assert found == {5: "AUTOCAST_FP16", 8: "AUTOCAST_FP16", 12: "AUTOCAST_FP16"}


def test_device_and_dtype_through_variables():
    found = contexts("""
        import torch
        device_type = "cpu"
        amp_dtype = torch.float16
        a = torch.randn(4, 4)
        with torch.autocast(device_type, dtype=amp_dtype):
            probe(torch.softmax(a @ a, -1))
    """)
    assert found == {6: "AUTOCAST_FP16"}  # CPU autocast leaves softmax in the input dtype


def test_cuda_and_cpu_autocast_differ_on_fp32_list():
    found = contexts("""
        import torch
        a = torch.randn(4, 4)
        with torch.autocast("cuda"):
            probe(torch.exp(a @ a))
            probe((a @ a).sum())
            probe((a @ a).mean())
            probe(torch.nn.functional.cross_entropy(a @ a, a))
        with torch.autocast("cpu", dtype=torch.float16):
            probe(torch.exp(a @ a))
            probe(torch.nn.functional.cross_entropy(a @ a, a))
    """)
    assert found == {6: "AUTOCAST_FP16", 9: "AUTOCAST_FP16"}


def test_enabled_false_opens_fp32_region_but_tensors_keep_dtype():
    found = contexts("""
        import torch
        a = torch.randn(4, 4)
        with torch.autocast("cuda"):
            h = a @ a
            with torch.autocast("cuda", enabled=False):
                probe(h)
                probe(h.float() @ a)
                probe(a @ a)
    """)
    assert found == {6: "PURE_FP16"}


def test_wholesale_cast_puts_class_forward_in_pure_fp16():
    found = analyse("""
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x):
                probe(x)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.blocks = nn.ModuleList([Block() for _ in range(2)])
                probe(torch.zeros(3))

            def forward(self, x):
                probe(x)
                probe(x.float())

        model = Model().to(torch.float16)
    """)
    assert [(f["line"], f["context"]) for f in found] == [(6, "PURE_FP16"), (16, "PURE_FP16")]


@pytest.mark.parametrize("cast", [
    "model.half()", "model = model.to(torch.half)", "model.to(device, torch.float16)",
    "model.to(dtype=torch.float16)", "model.type(torch.HalfTensor)", "model = model.cuda().half().eval()",
])
def test_cast_spellings(cast):
    found = contexts(f"""
        import torch
        import torch.nn as nn
        class M(nn.Module):
            def forward(self, x):
                probe(x)
        model = M()
        {cast}
    """)
    assert found == {5: "PURE_FP16"}


def test_bfloat16_cast_and_from_pretrained():
    found = contexts("""
        import torch
        from transformers import AutoModel
        model = AutoModel.from_pretrained("bert-base-uncased", torch_dtype=torch.float16)
        probe(model(x).last_hidden_state)
        other = AutoModel.from_pretrained("bert-base-uncased")
        probe(other(x).last_hidden_state)
    """)
    assert found == {4: "PURE_FP16"}
    found = analyse("""
        import torch
        import torch.nn as nn
        class M(nn.Module):
            def forward(self, x):
                probe(x)
        m = M().bfloat16()
    """)
    assert [(f["line"], f["context"]) for f in found] == [(5, "PURE_BF16")]


def test_conditional_cast_says_when_fp16_is_enabled():
    found = analyse("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class M(nn.Module):
            def forward(self, x):
                return F.softmax(x, dim=-1)
        model = M()
        if args.fp16:
            model.half()
    """)
    assert found == []  # the probe is not used; use AMP201 directly
    text = textwrap.dedent("""
        import torch.nn as nn
        import torch.nn.functional as F
        class M(nn.Module):
            def forward(self, x):
                return F.softmax(x, dim=-1)
        model = M()
        if args.fp16:
            model.half()
    """).lstrip("\n")
    findings = lint_text("t.py", text, Settings(), [RULES_BY_CODE["AMP201"]])
    assert len(findings) == 1 and "when fp16 is enabled" in findings[0].message
    assert findings[0].precision_context == "PURE_FP16"


def test_instance_called_under_autocast_and_call_edges():
    found = contexts("""
        import torch
        import torch.nn as nn
        def helper(s):
            probe(s)
        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(8, 24)
            def forward(self, x):
                q = self.qkv(x)
                helper(q)
                probe(q)
                probe(x)
        attn = Attn()
        with torch.autocast("cpu", dtype=torch.float16):
            y = attn(torch.randn(2, 8))
    """)
    # ``helper`` runs under autocast too, but argument dtypes are not propagated into callees
    # (its parameter is taken as an fp32 input there): only ``q`` inside forward is known fp16.
    assert found == {12: "AUTOCAST_FP16"}


def test_uncertain_autocast_dtype_is_low_confidence():
    found = analyse("""
        import torch
        a = torch.randn(4, 4)
        with torch.autocast("cuda", dtype=get_dtype()):
            probe(a @ a)
    """)
    assert [(f["line"], f["confidence"]) for f in found] == [(4, "low")]
    findings = lint_text("t.py", textwrap.dedent("""
        import torch
        a = torch.randn(4, 4)
        with torch.autocast("cpu", dtype=get_dtype()):
            s = torch.softmax(a @ a, dim=-1)
    """).lstrip("\n"), Settings(), [RULES_BY_CODE["AMP201"]])
    assert findings == []  # low confidence is only shown with --preview


def test_integer_like_names_are_not_half():
    found = contexts("""
        import torch.nn as nn
        class M(nn.Module):
            def forward(self, hidden, attention_mask, input_ids):
                probe(attention_mask)
                probe(input_ids)
                probe(hidden)
        m = M().half()
    """)
    assert found == {6: "PURE_FP16"}


def test_summary_lists_classes_and_casts_for_the_project_phase():
    text = textwrap.dedent("""
        import torch.nn as nn
        from model import GPT
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
        gpt = GPT(cfg).half()
    """).lstrip("\n")
    ctx = run_rules("t.py", text, parse(text), Settings(), [Probe])
    summary = ctx.analyses["precision"].summary
    assert "Head" in summary["classes"]
    assert summary["classes"]["Head"]["submodules"] == {"proj": "torch.nn.Linear"}
    assert ("model.GPT", "f16") in summary["casts"]
    assert summary["imports"]["GPT"] == (0, "model", "GPT")


def test_contexts_table_is_complete():
    labels = {c.label for c in CONTEXTS}
    assert labels == {"FP32", "AUTOCAST_FP16", "AUTOCAST_BF16", "PURE_FP16", "PURE_BF16"}


# -- across files -------------------------------------------------------------------------------
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
NUMERICS = ("AMP201", "AMP202", "AMP203", "AMP204", "AMP301", "AMP302", "AMP303")


def _expected(project: Path):
    out = set()
    for line in (project / "expected.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        location, code = line.rsplit(":", 1)
        path, row = location.rsplit(":", 1)
        if code.strip() in NUMERICS:
            out.add((path, int(row), code.strip()))
    return out


def _check(project: Path, *extra: str):
    proc = subprocess.run(
        [sys.executable, "-m", "amp_lint", "check", "--select", ",".join(NUMERICS), "--output-format", "json",
         "--exit-zero", "--isolated", *extra, "."], cwd=project, capture_output=True, text=True, timeout=300)
    findings = json.loads(proc.stdout)
    # JSON filenames are absolute, as ruff writes them.
    return {(Path(f["filename"]).relative_to(project.resolve()).as_posix(), f["location"]["row"], f["code"])
            for f in findings}, findings


@pytest.mark.parametrize("project", sorted(p for p in PROJECTS.iterdir() if (p / "expected.txt").exists()),
                         ids=lambda p: p.name)
def test_project_findings_match_expected(project: Path):
    got, findings = _check(project, "--no-cache")
    assert got == _expected(project)
    assert all(f["precision_context"] for f in findings)


def test_project_phase_with_workers_and_cache(tmp_path: Path):
    import shutil

    project = tmp_path / "gpt_pkg"
    shutil.copytree(PROJECTS / "gpt_pkg", project)
    first, _ = _check(project, "-j", "2")
    second, _ = _check(project, "-j", "2")  # every file from the cache: summaries come with the reports
    assert first == second == _expected(PROJECTS / "gpt_pkg")


def test_cast_in_another_file_reaches_submodule_forward(tmp_path: Path):
    from amp_lint.analysis.project import project_findings

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .net import Net\n")
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Head(nn.Module):
            def forward(self, x):
                return F.log_softmax(x, dim=-1)
    """).lstrip("\n"))
    (tmp_path / "pkg" / "net.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        from .layers import Head
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()
            def forward(self, x):
                return self.head(x)
    """).lstrip("\n"))
    (tmp_path / "run.py").write_text("from pkg import Net\nnet = Net()\nif args.fp16:\n    net.half()\n")
    paths = [str(tmp_path / p) for p in ("pkg/__init__.py", "pkg/layers.py", "pkg/net.py", "run.py")]
    found = project_findings(paths, str(tmp_path), [RULES_BY_CODE["AMP201"]], Settings())
    layer = found[str(tmp_path / "pkg" / "layers.py")]
    assert [(f.code, f.location.row, f.precision_context) for f in layer] == [("AMP201", 5, "PURE_FP16")]
    assert "when fp16 is enabled" in layer[0].message
    # without run.py nothing casts Net: silent
    found = project_findings(paths[:3], str(tmp_path), [RULES_BY_CODE["AMP201"]], Settings())
    assert all(not v for v in found.values())


def test_cast_to_a_dtype_chosen_by_a_flag_is_conditional():
    text = textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class M(nn.Module):
            def forward(self, x):
                return F.log_softmax(x, dim=-1)
        dtype = torch.float16 if args.fp16 else torch.float32
        model = M().to(dtype)
    """).lstrip("\n")
    (finding,) = lint_text("t.py", text, Settings(), [RULES_BY_CODE["AMP201"]])
    assert finding.precision_context == "PURE_FP16" and finding.message.endswith("(when fp16 is enabled)")


def test_known_safe_patterns_are_silent():
    text = textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from fairseq import utils

        class Attn(nn.Module):
            def forward(self, scores, logits):
                a = utils.softmax(scores, dim=-1, onnx_trace=False)
                b = F.softmax(scores.float(), dim=-1).type_as(scores)
                c = F.log_softmax(logits, dim=-1, dtype=torch.float32)
                d = scores.masked_fill(scores > 0, torch.finfo(scores.dtype).min)
                e = F.layer_norm(scores, scores.shape[-1:], eps=1e-12)
                return a, b, c, d, e

        attn = Attn().half()
    """).lstrip("\n")
    rules = [RULES_BY_CODE[c] for c in NUMERICS]
    assert lint_text("t.py", text, Settings(preview=True), rules) == []
