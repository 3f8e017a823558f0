"""The precision analysis (amp_lint/semantics): what it infers about values, asked through
``amp-lint explain``'s API. Each test is a failure class of the first release's analysis (values
that did not flow through returns, calls, effects or factories; unknown read as fp32;
path-insensitive joins; casts in chains; apex; autocast-or-nullcontext; dtype tables; inherited
methods) written as a small program and the facts it must yield.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from amp_lint.config import Settings
from amp_lint.explain import explain

ROOT = Path(__file__).resolve().parents[1]


def values_at(tmp_path: Path, files: Dict[str, str], target: str, marker: str) -> List[Dict[str, str]]:
    """{expression: value} of each context of the line of ``target`` holding ``marker``."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    source = (tmp_path / target).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, 1) if marker in text)
    settings = dataclasses.replace(Settings(), project_root=str(tmp_path))
    result = explain(str(tmp_path / target), line, [str(tmp_path / n) for n in files], settings)
    return [{v["expression"]: v["value"] for v in context.values} for context in result.contexts]


def value_of(tmp_path: Path, files: Dict[str, str], target: str, marker: str, expression: str) -> List[str]:
    """The value of ``expression`` on the marked line, one per context it ran in."""
    return [ctx[expression] for ctx in values_at(tmp_path, files, target, marker) if expression in ctx]


def one(tmp_path: Path, code: str, marker: str, expression: str) -> List[str]:
    return value_of(tmp_path, {"m.py": code}, "m.py", marker, expression)


def _line_of(code: str, marker: str) -> int:
    """The line of ``code`` (as ``_codes`` writes it) holding ``marker``."""
    return next(i for i, text in enumerate(textwrap.dedent(code).lstrip("\n").splitlines(), 1) if marker in text)


def _codes_in_project(tmp_path: Path, files: Dict[str, str], select: str) -> List[str]:
    """``path:line: CODE`` of each finding of ``amp-lint check --select select`` run in a project
    of ``files`` (relative paths), sorted."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                             "--select", select, "--output-format", "json", "."],
                            capture_output=True, text=True, cwd=tmp_path)
    assert "internal error" not in result.stderr, result.stderr  # an analysis bug hides findings
    return sorted(f"{Path(f['filename']).resolve().relative_to(tmp_path.resolve()).as_posix()}:"
                  f"{f['location']['row']}: {f['code']}" for f in json.loads(result.stdout or "[]"))


def _codes(tmp_path: Path, code: str) -> List[str]:
    """``line: CODE`` of each finding of ``amp-lint check`` on ``code`` (as ``m.py``)."""
    (tmp_path / "m.py").write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                             "--output-format", "json", str(tmp_path / "m.py")], capture_output=True, text=True)
    return [f"{f['location']['row']}: {f['code']}" for f in json.loads(result.stdout or "[]")]


# -- values flow through calls -------------------------------------------------------------------
def test_return_values_flow_to_callers(tmp_path: Path) -> None:
    code = """
    import torch
    def make_half(x):
        return x.half()
    a = make_half(torch.randn(3))  # <-
    """
    assert one(tmp_path, code, "# <-", "a") == ["tensor float16"]


def test_parameters_take_their_call_sites_values(tmp_path: Path) -> None:
    code = """
    import torch
    def attend(q):
        return q.softmax(-1)  # <-
    attend(torch.randn(3).half())
    attend(torch.randn(3))
    """
    assert sorted(one(tmp_path, code, "# <-", "q")) == ["tensor float16", "tensor float32"]


def test_in_place_casts_inside_a_callee_reach_the_caller(tmp_path: Path) -> None:
    code = """
    import torch.nn as nn
    def cast_model(m):
        m.half()
    net = nn.Linear(4, 4)
    cast_model(net)
    net  # <-
    """
    assert one(tmp_path, code, "# <-", "net") == ["module torch.nn.Linear with float16 parameters"]


def test_factories_and_imported_classes(tmp_path: Path) -> None:
    files = {
        "models.py": """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)
            def forward(self, x):
                return self.proj(x)
        def build():
            return Net().half()
        """,
        "train.py": """
        from models import build
        model = build()  # <-
        """,
    }
    assert value_of(tmp_path, files, "train.py", "# <-", "model") == ["module Net with float16 parameters"]


def test_a_model_picked_by_name_from_a_module_is_one_of_what_it_defines(tmp_path: Path) -> None:
    files = {
        "zoo/encoders.py": """
        import torch.nn as nn
        from zoo.blocks import Block
        class Tiny(nn.Module):
            def __init__(self, width=16):
                super().__init__()
                self.proj = nn.Linear(width, width)
            def forward(self, x):
                return self.proj(x).log_softmax(-1)  # <- forward
        def tiny_wide(**kw):
            return Tiny(width=64, **kw)
        def _private_helper():
            return 3
        """,
        "zoo/blocks.py": """
        class Block:
            pass
        """,
        "run.py": """
        import torch
        from zoo import encoders
        net = encoders.__dict__[opts.name]().half()
        other = getattr(encoders, opts.name)()
        x = torch.randn(2, 16).half()
        net(x)  # <- picked
        """,
    }
    assert value_of(tmp_path, files, "run.py", "# <- picked", "net") == ["module Tiny with float16 parameters"]
    assert value_of(tmp_path, files, "run.py", "other = ", "getattr(encoders, opts.name)") == [
        "classval | funcval"]
    found = value_of(tmp_path, files, "zoo/encoders.py", "# <- forward", "self.proj(x).log_softmax(-1)")
    assert any(v.startswith("tensor float16") for v in found)


def test_from_pretrained_with_a_half_dtype(tmp_path: Path) -> None:
    code = """
    import torch
    from transformers import AutoModel
    lm = AutoModel.from_pretrained("gpt2", torch_dtype=torch.float16)
    h = lm(ids)  # <-
    """
    assert one(tmp_path, code, "# <-", "h") == ["tensor float16"]


def test_a_half_dtype_chosen_against_auto_or_none_holds_under_its_condition(tmp_path: Path) -> None:
    """``torch_dtype=torch.float16 if args.fp16 else "auto"`` (or ``else None``): the model is half
    only when the flag holds, and the findings say so. (Before, the string or None on the other side
    was no dtype, so the half cast read as unconditional.)"""
    code = """
    import argparse
    import torch
    from transformers import AutoModelForCausalLM
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    lm = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16 if args.fp16 else "auto")
    opt = torch.optim.AdamW(lm.parameters(), lr=1e-5)
    loss = lm(ids, labels=ids).loss
    loss.backward()  # <-
    opt.step()
    """
    for other in ('"auto"', "None"):
        variant = code.replace('"auto")', other + ")")
        (tmp_path / "m.py").write_text(textwrap.dedent(variant).lstrip("\n"), encoding="utf-8")
        result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                                 "--output-format", "json", str(tmp_path / "m.py")], capture_output=True, text=True)
        findings = {f["code"]: f["message"] for f in json.loads(result.stdout)}
        assert "AMP101" in findings and findings["AMP101"].endswith("(when `args.fp16`)"), (other, findings)


def test_inherited_and_super_methods_run_with_the_subclass_instance(tmp_path: Path) -> None:
    code = """
    import torch
    import torch.nn as nn
    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
        def forward(self, x):
            return self.proj(x).softmax(-1)  # <-
    class Child(Base):
        def forward(self, x):
            return super().forward(x) * 2
    Child().half()(torch.randn(2, 8).half())
    """
    found = one(tmp_path, code, "# <-", "self.proj(x)")
    assert "tensor float16" in found and all(v.startswith("tensor float16") for v in found)


def test_autograd_function_apply_runs_its_static_forward(tmp_path: Path) -> None:
    code = """
    import torch
    from torch.autograd import Function
    from torch.amp import custom_fwd

    class ScaledExp(Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            y = (x * scale).exp()  # <- plain
            return y
        @staticmethod
        def backward(ctx, g):
            return g, None

    class Fp32Exp(Function):
        @staticmethod
        @custom_fwd(device_type="cuda", cast_inputs=torch.float32)
        def forward(ctx, x):
            return x.exp()  # <- fp32
        @staticmethod
        def backward(ctx, g):
            return g

    h = torch.randn(4, 4).half()
    a = ScaledExp.apply(h, 2.0)
    b = Fp32Exp.apply(h)
    """
    assert one(tmp_path, code, "# <- plain", "y") == ["tensor float16"]
    assert one(tmp_path, code, "# <- fp32", "x.exp()") == ["tensor float32"]
    assert one(tmp_path, code, "a = ", "a") == ["tensor float16"]


# -- context limits and late facts -----------------------------------------------------------------
def test_a_field_set_after_a_method_ran_reaches_that_method_again(tmp_path: Path) -> None:
    """A wrapper's forward analysed for one wrapped class is analysed again once the wrapper has
    wrapped another: its summary read ``self.module``, which changed since."""
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Wrapper(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module.half()

        def forward(self, x):
            return self.module(x)

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x).float()

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)

    def run(model, x):
        return model(x)

    x = torch.randn(4, 8).half()
    scores = run(Wrapper(Scorer()), x)
    tags = run(Wrapper(Tagger()), x)
    loss = F.cross_entropy(tags, torch.zeros(4, dtype=torch.long))
    """
    assert _codes(tmp_path, code) == ["35: AMP202"]


def test_the_leading_items_of_a_display_with_a_starred_tail_stay_known(tmp_path: Path) -> None:
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x, *mems):
            h = self.proj(x)
            hidden = [h for _ in mems]
            return (h.float(), *hidden)

    model = Body().half()
    logits, *rest = model(torch.randn(4, 8).half())  # <-
    first = model(torch.randn(4, 8).half())[0]  # <1
    a, b, *c = (torch.randn(2).half(), torch.randn(2), torch.randn(2))  # <2
    loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))
    """
    assert one(tmp_path, code, "# <-", "logits") == ["tensor float32"]
    assert one(tmp_path, code, "# <1", "first") == ["tensor float32"]
    assert one(tmp_path, code, "# <2", "b") == ["tensor float32"]
    assert one(tmp_path, code, "# <2", "c") == ["seq"]
    assert _codes(tmp_path, code) == []


# -- unknown is unknown ----------------------------------------------------------------------------
def test_unknown_values_are_not_float32(tmp_path: Path) -> None:
    code = """
    import torch
    u = load_something()
    v = u.softmax(-1)  # <-
    """
    assert one(tmp_path, code, "# <-", "v") == ["unknown"]


def test_an_unknown_value_softmaxed_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\nu = load()\nv = torch.softmax(u, -1)\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--select", "ALL",
                             str(tmp_path / "m.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_a_one_operand_einsum_is_a_permutation_not_a_learned_product(tmp_path: Path) -> None:
    """AMP204 wants a learned value: an einsum of two operands (listed or in a list) is a product,
    one of a single operand only moves its axes."""
    code = """
    import torch
    a = torch.randn(4, 8).half()
    b = torch.randn(8, 4).half()
    p = torch.einsum("ij->ji", a).exp()
    q = torch.einsum("ij,jk->ik", [a, b]).exp()
    r = torch.einsum("ij,jk->ik", a, b).exp()
    """
    assert _codes(tmp_path, code) == ["5: AMP204", "6: AMP204"]


def test_an_unlisted_torch_function_of_a_model_or_an_unknown_is_no_tensor(tmp_path: Path) -> None:
    code = """
    import torch
    net = torch.nn.Linear(4, 4)
    a = torch.backend_tuner.optimize(net, dtype=torch.float16)  # <- model
    b = torch.backend_tuner.optimize(load(), dtype=torch.float16)  # <- unknown
    c = torch.backend_tuner.make(3, 4, dtype=torch.float16)  # <- sizes
    """
    assert one(tmp_path, code, "# <- model", "a") == ["unknown"]
    assert one(tmp_path, code, "# <- unknown", "b") == ["unknown"]
    assert one(tmp_path, code, "# <- sizes", "c")[0].startswith("tensor float16")


# -- torch functions ------------------------------------------------------------------------------
@pytest.mark.parametrize("line,expected", [
    ("e = torch.einsum('ij,jk->ik', a, a)", "tensor float16"),
    ("e = torch.eye(3, dtype=torch.float16)", "tensor float16"),
    ("e = sum(t for t in [a, a])", "tensor float16"),
    ("e = torch.randn(3).half().float()", "tensor float32"),
    ("e = a.to(torch.float32).half()", "tensor float16"),
    ("e = torch.Tensor(4, 8)", "tensor float32"),  # the legacy constructor: sizes, default float dtype
    ("e = torch.Tensor([1, 2])", "tensor float32"),  # data too: never inferred like torch.tensor
    # a float16 and a float32 operand of an op that needs one dtype raise in torch: one of the two is
    # known imprecisely, so either dtype (promotion, which would say float32, does not happen)
    ("e = a @ torch.randn(3, 3)", "tensor float16 or float32"),
    ("e = torch.bmm(a[None], torch.ones(1, 3, 3))", "tensor float16 or float32"),
    ("e = a + torch.randn(3, 3)", "tensor float32"),  # an elementwise op promotes
])
def test_torch_functions_and_cast_chains(tmp_path: Path, line: str, expected: str) -> None:
    code = f"""
    import torch
    a = torch.randn(3, 3).half()
    {line}  # <-
    """
    assert one(tmp_path, code, "# <-", "e") == [expected]


def test_in_place_arithmetic_keeps_the_target_dtype(tmp_path: Path) -> None:
    code = """
    import torch
    a = torch.randn(3).half()
    b = torch.randn(3)
    b += a
    b  # <-
    """
    assert one(tmp_path, code, "# <-", "b") == ["tensor float32"]


def test_einsum_under_autocast_is_lowered(tmp_path: Path) -> None:
    code = """
    import torch
    a = torch.randn(3, 3)
    with torch.autocast("cuda", dtype=torch.float16):
        e = torch.einsum("ij,jk->ik", a, a)  # <-
    """
    assert one(tmp_path, code, "# <-", "e") == ["tensor float16"]


def test_layers_appended_to_a_module_list_are_its_children(tmp_path: Path) -> None:
    """``self.layers = nn.ModuleList()`` then ``self.layers.append(Block())`` in a loop (and
    ``extend``): iterating the list yields the blocks, cast with their owner."""
    code = """
    import torch
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.fc(x)
    class Head(Block):
        pass
    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList()
            for _ in range(n):
                self.layers.append(Block())
            self.layers.extend([Head()])
        def forward(self, x):
            for layer in self.layers:
                x = layer(x)  # <-
            return x
    Net(3).half()(torch.randn(2, 8).half())
    """
    assert set(one(tmp_path, code, "# <-", "layer")) == {
        "module Block with float16 parameters | module Head with float16 parameters"}


def test_a_factory_of_many_heads_keeps_every_class(tmp_path: Path) -> None:
    """A builder whose branches return one of seven model classes (GLM's ``get_model``): the value
    keeps each class (a union of kinds stops at six, modules count as one kind up to a dozen), so
    ``model.half()`` after it runs every head's forward in half."""
    heads = "\n".join(f"""
    class Head{i}(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return torch.log_softmax(self.fc(x), -1)  # <- {i}
    """ for i in range(7))
    branches = "\n".join(f"""
        {"if" if i == 0 else "elif"} kind == {i}:
            model = Head{i}()""" for i in range(7))
    code = f"""
    import sys
    import torch
    import torch.nn as nn
    {heads}
    def get_model(kind):
        model = None
        {branches}
        model.half()
        return model
    get_model(len(sys.argv))(torch.randn(2, 8).half())
    """
    for i in range(7):
        assert any(v.startswith("tensor float16") for v in one(tmp_path, code, f"# <- {i}", "self.fc(x)")), i


def test_an_in_place_cast_of_one_of_several_models_casts_each(tmp_path: Path) -> None:
    """``model.half()`` as a statement on a name that holds one of several models casts every one
    (each option's in-place change is joined, not the last option's alone); a wrapper that
    registers ``module.half()`` then runs the children of a ModuleList built from a comprehension
    of either layer class in half."""
    code = """
    import sys
    import torch
    import torch.nn as nn
    class LayerA(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.fc(x)  # <- a
    class LayerB(LayerA):
        def forward(self, x):
            return self.fc(x)  # <- b
    def make_layer(deep):
        return LayerB() if deep else LayerA()
    class Stack(nn.Module):
        def __init__(self, deep):
            super().__init__()
            self.layers = nn.ModuleList([make_layer(deep) for _ in range(2)])
        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
    class Other(Stack):
        pass
    class Wrapper(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.add_module("module", module)
        def forward(self, x):
            return self.module(x)
    model = Stack(len(sys.argv) > 1) if len(sys.argv) > 2 else Other(len(sys.argv) > 3)
    model.half()
    Wrapper(model)(torch.randn(2, 8))
    """
    for marker in ("# <- a", "# <- b"):
        assert one(tmp_path, code, marker, "self.fc(x)") and all(
            v.startswith("tensor float16") for v in one(tmp_path, code, marker, "self.fc(x)")), marker


# -- flow sensitivity -----------------------------------------------------------------------------
def test_branches_join_and_keep_their_condition(tmp_path: Path) -> None:
    code = """
    import torch
    c = torch.randn(3)
    if args.fp16:
        c = c.half()
    c  # <-
    """
    assert one(tmp_path, code, "# <-", "c") == ["tensor float16 or float32"]
    contexts = explain_json(tmp_path, "m.py", "# <-")
    (because,) = contexts[0]["values"][0]["because"]
    assert "(when `args.fp16`)" in because


def test_the_else_branch_of_the_flag_is_not_half(tmp_path: Path) -> None:
    code = """
    import torch
    model = torch.nn.Linear(4, 4)
    if args.fp16:
        model.half()
    out = model(torch.randn(2, 4))
    if args.fp16:
        pass
    else:
        out  # <-
    if not args.fp16:
        out  # <- not
    """
    assert one(tmp_path, code, "# <-", "out") == ["tensor float32"]
    assert one(tmp_path, code, "# <- not", "out") == ["tensor float32"]


def test_a_test_that_excludes_the_cast_condition_drops_the_half_evidence(tmp_path: Path) -> None:
    code = """
    import torch
    encoder = torch.nn.Linear(4, 4)
    if cfg.mode == "inference" and cfg.device == "cuda":
        encoder.half()
    if cfg.mode == "train":
        encoder  # <- train
    elif cfg.mode in ("eval", "inference"):
        encoder  # <- eval
    else:
        encoder  # <- other
    if cfg.mode != "inference":
        encoder  # <- not
    """
    assert one(tmp_path, code, "# <- train", "encoder") == ["module torch.nn.Linear with float32 parameters"]
    assert one(tmp_path, code, "# <- eval", "encoder")[0].startswith(
        "module torch.nn.Linear with float16 or float32 parameters")
    assert one(tmp_path, code, "# <- other", "encoder") == ["module torch.nn.Linear with float32 parameters"]
    assert one(tmp_path, code, "# <- not", "encoder") == ["module torch.nn.Linear with float32 parameters"]


def test_an_else_branch_cast_holds_when_the_test_is_false(tmp_path: Path) -> None:
    code = """
    import torch
    enc = torch.nn.Linear(4, 4)
    if args.train_encoder:
        pass
    else:
        enc.half()
    enc  # <-
    """
    contexts = explain_json(tmp_path, "m.py", "# <-", code)
    (because,) = contexts[0]["values"][0]["because"]
    assert "(when `not args.train_encoder`)" in because


_ONE_PATH_AUTOCAST = """
import torch

def epoch(model, criterion, loader, optimizer, use_amp=False):
    for x, y in loader:
        if use_amp:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
        else:
            loss = criterion(model(x), y)
        BACKWARD
        optimizer.step()

model = torch.nn.Linear(4, 4).cuda()
epoch(model, torch.nn.functional.mse_loss, [], torch.optim.SGD(model.parameters(), lr=0.1),
      use_amp=torch.cuda.is_available())
"""


@pytest.mark.parametrize("backward, expected", [
    ("if use_amp:\n            pass\n        else:\n            loss.backward()", None),  # the fp32 path only
    ("loss.backward()", "(when `use_amp`)"),  # both paths: half when use_amp
])
def test_a_loss_under_autocast_on_one_path_is_conditional(tmp_path: Path, backward: str, expected) -> None:
    """``if use_amp: with autocast(): loss = ...``: a backward in the ``else`` of ``if use_amp:`` is not an
    fp16 one (AMP102 stays silent), and one after the join says when it is."""
    (tmp_path / "train.py").write_text(_ONE_PATH_AUTOCAST.replace("BACKWARD", backward))
    run = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select", "AMP102",
                          "--output-format", "concise", "train.py"], cwd=tmp_path, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if "AMP102" in line]
    if expected is None:
        assert lines == []
    else:
        assert len(lines) == 1 and lines[0].endswith(expected)


def test_loops_reach_a_fixpoint(tmp_path: Path) -> None:
    code = """
    import torch
    w = torch.randn(3)
    for _ in range(3):
        w  # <-
        w = w.half()
    """
    assert one(tmp_path, code, "# <-", "w") == ["tensor float16 or float32"]


# -- precision set up by configuration ---------------------------------------------------------------
def test_dtype_chosen_from_a_table(tmp_path: Path) -> None:
    code = """
    import torch
    DT = {"fp16": torch.float16, "fp32": torch.float32}[args.precision]
    z = torch.zeros(3, dtype=DT)  # <-
    """
    assert one(tmp_path, code, "# <-", "z") == ["tensor float16 or float32"]


def test_autocast_or_nullcontext_forks_both_ways(tmp_path: Path) -> None:
    code = """
    import torch
    from contextlib import nullcontext
    net = torch.nn.Linear(4, 4)
    ctx = torch.autocast("cuda", dtype=torch.float16) if args.amp else nullcontext()
    with ctx:
        y = net(torch.randn(2, 4))  # <-
    """
    assert sorted(one(tmp_path, code, "# <-", "y")) == ["tensor float16", "tensor float32"]


def test_apex_o2_casts_the_model_and_keeps_master_weights(tmp_path: Path) -> None:
    code = """
    import torch
    from apex import amp
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.Adam(model.parameters())
    model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
    model  # <-
    """
    assert one(tmp_path, code, "# <-", "model") == ["module torch.nn.Linear with float16 parameters"]
    (tmp_path / "m.py").write_text((tmp_path / "m.py").read_text() + "for x in data:\n"
                                   "    loss = model(x).float().sum()\n"
                                   "    with amp.scale_loss(loss, optimizer) as scaled:\n"
                                   "        scaled.backward()\n    optimizer.step()\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--select",
                             "AMP101,AMP102,AMP302", str(tmp_path / "m.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout  # O2 keeps fp32 master weights and scales the loss


def test_apex_o2_returns_float32_outputs_from_a_half_forward(tmp_path: Path) -> None:
    """apex O2/O3 patch the initialised model's forward: floating inputs are cast to float16 and the
    outputs to float32. Inside the forward the activations are half (its softmax is a finding); a
    loss on the outputs is float32, also where the flag that runs apex is off (a plain fp32 model)."""
    code = """
    import sys
    import torch
    import torch.nn.functional as F
    from torch import nn
    from apex import amp
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            h = self.fc(x)
            return h, F.softmax(h, dim=-1)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    if len(sys.argv) > 1:
        model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
    logits, probs = model(torch.randn(2, 8))
    loss = F.cross_entropy(logits, torch.tensor([1, 2]))
    with amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    """
    assert [c for c in _codes(tmp_path, code) if not c.endswith("AMP502")] == ["12: AMP201"]
    values = values_at(tmp_path, {"m.py": code}, "m.py", "logits, probs = model(")[0]
    assert values["logits"] == "tensor float32" and values["probs"] == "tensor float32"
    linear = """
    import torch
    from apex import amp
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.Adam(model.parameters())
    model, optimizer = amp.initialize(model, optimizer, opt_level="O3")
    y = model(torch.randn(2, 8))  # <-
    """
    assert one(tmp_path, linear, "# <-", "y") == ["tensor float32"]
    # outputs cast to the dtype asked for: not taken as float32
    [asked] = one(tmp_path, linear.replace('"O3")', '"O3", cast_model_outputs=torch.float16)'), "# <-", "y")
    assert "float16" in asked


def test_apex_over_a_list_of_models_at_a_level_chosen_at_run_time(tmp_path: Path) -> None:
    """``amp.initialize([a, b], opt, opt_level="O%d" % args.level)``: each model of the list is
    initialised; at a level known only at run time it is apex-O1 patched or, at O2/O3, cast to
    float16 under that condition (positive evidence, as a cast under ``if args.fp16:`` is), so a
    loss computed inside its forward is a finding that names the condition. Before, a list of
    models was left as it was and a level of unknown text cast nothing."""
    code = """
    import argparse
    import torch
    import torch.nn.functional as F
    from torch import nn
    from apex import amp
    class Ranker(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(16, 64)
        def forward(self, x, labels):
            return F.nll_loss(F.log_softmax(self.head(x).float(), -1), labels), self.head(x).sum()
    class Job:
        PARTS = ("ranker", "helper")
        def __init__(self, level):
            self.ranker, self.helper = Ranker(), Ranker()
            self.opt = torch.optim.SGD(self.ranker.parameters(), lr=0.1)
            parts = [getattr(self, name) for name in self.PARTS]
            parts, self.opt = amp.initialize(parts, self.opt, opt_level="O%d" % level)
            for name, part in zip(self.PARTS, parts):
                setattr(self, name, part)
        def run(self, x, y):
            loss, total = self.ranker(x, y)
            with amp.scale_loss(loss, self.opt) as scaled:
                scaled.backward()
    parser = argparse.ArgumentParser()
    parser.add_argument("--level", type=int, default=1)
    Job(parser.parse_args().level).run(torch.randn(2, 16), torch.tensor([0, 1]))
    """
    (tmp_path / "m.py").write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                             "--output-format", "json", str(tmp_path / "m.py")], capture_output=True, text=True)
    found = [f for f in json.loads(result.stdout) if f["code"] != "AMP502"]
    assert [(f["location"]["row"], f["code"]) for f in found] == [(11, "AMP203")]
    assert "in ('O2', 'O3')" in found[0]["message"]
    # a known level: O1 patches (no cast), O0 leaves the model float32
    for level in ("O0", "O1"):
        known = code.replace('opt_level="O%d" % level', f'opt_level="{level}"')
        assert [c for c in _codes(tmp_path, known) if not c.endswith("AMP502")] == []


def test_deepspeed_casts_the_engine_where_its_config_enables_fp16(tmp_path: Path) -> None:
    """``deepspeed.initialize(..., config=...)``: a config (a dict in the code, or a file by its
    path) with ``"fp16": {"enabled": true}`` makes DeepSpeed cast the model, so the engine's forward
    runs in float16 (a hand-written softmax in it is a finding; the engine scales the loss, so
    ``engine.backward`` is none). A config named only on the command line (``--deepspeed_config``)
    is taken from the DeepSpeed configs shipped beside the script, under the condition that the
    run names that file. A config that enables neither leaves the model as it was."""
    model = """
    import torch
    from torch import nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
        def forward(self, x):
            return torch.softmax(self.fc(x), dim=-1)
    """
    train = """
    import argparse
    import deepspeed
    import torch
    from net import Net
    parser = argparse.ArgumentParser()
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    model = Net()
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters()CONFIG)
    for step in range(10):
        loss = engine(torch.randn(4, 16)).float().sum()
        engine.backward(loss)
        engine.step()
    """
    fp16 = '{"train_batch_size": 8, "fp16": {"enabled": true}}'

    def codes(config_arg: str, files: Dict[str, str]) -> List[str]:
        for name, text in {"net.py": model, "train.py": train.replace("CONFIG", config_arg), **files}.items():
            (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                                 "--output-format", "json", "."], capture_output=True, text=True, cwd=tmp_path)
        return [f"{Path(f['filename']).name}:{f['location']['row']}: {f['code']} {f['message']}"
                for f in json.loads(result.stdout or "[]")]

    in_code = codes(', config={"fp16": {"enabled": True}}', {})
    assert [c.split(" ")[0] + " " + c.split(" ")[1] for c in in_code] == ["net.py:8: AMP201"]
    assert codes(', config="ds.json"', {"ds.json": fp16})[0].startswith("net.py:8: AMP201")
    [shipped] = codes("", {"ds.json": fp16})
    assert shipped.startswith("net.py:8: AMP201") and "DeepSpeed config is ds.json`" in shipped
    assert codes("", {"ds.json": '{"train_batch_size": 8, "fp16": {"enabled": false}}'}) == []
    assert codes(', config="ds.json"', {"ds.json": '{"bf16": {"enabled": true}}'})[0].startswith("net.py:8: AMP201")
    (tmp_path / "ds.json").unlink()
    assert codes("", {"other.json": '{"fp16": {"enabled": true}}'}) == []  # not a DeepSpeed config


def test_apex_on_one_branch_does_not_protect_a_value_another_branch_made_half(tmp_path: Path) -> None:
    """``if args.backend == "apex":`` initialises apex O1, ``elif args.backend == "torch":`` opens an
    autocast region for the forward only: a loss taken after that region closes runs in float16 in
    the run where the region made it, and apex's patches, set up only in the other run, do not
    reach it (AMP202, under the region's condition). Conditions that can both hold leave apex's
    patches in force; a loss inside the region is protected by it."""
    code = """
    import contextlib
    import torch
    import torch.nn.functional as F
    from torch import nn
    from apex import amp

    def evaluate(net, batches, region):
        for images, labels in batches:
            with region():
                scores = net(images)
            loss = F.cross_entropy(scores, labels)  # <-
            print(loss.item())

    def run(args):
        net = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10)).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        region = contextlib.nullcontext
        if args.backend == "apex":
            net, opt = amp.initialize(net, opt, opt_level="O1")
        elif args.backend == "torch":
            region = torch.autocast
        evaluate(net, [(torch.randn(8, 32).cuda(), torch.zeros(8, dtype=torch.long).cuda())], region)
    """
    def amp202(text: str) -> str:
        (tmp_path / "m.py").write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                               "AMP202", str(tmp_path / "m.py")], capture_output=True, text=True).stdout

    found = amp202(code)
    assert f"m.py:{_line_of(code, '# <-')}:" in found and "(outside autocast)" in found, found
    assert 'when `args.backend == "torch"`' in found, found
    assert amp202(code.replace('elif args.backend == "torch":', 'if args.autocast:')) == ""
    inside = code.replace("                scores = net(images)\n            loss",
                          "                scores = net(images)\n                loss")
    assert inside != code and amp202(inside) == ""


def test_apex_o1_patches_torch_for_what_its_model_returns(tmp_path: Path) -> None:
    """apex O1 patches torch's functions for the whole process: a softmax or a sum taken outside
    the model, in a helper, on what an O1 model returned (float16 from its linear layers) runs in
    float32. Before, only the model's own forward ran as under O1, so an opt level chosen at run
    time (O1 one of the choices) gave findings on the helper's log_softmax and sum."""
    code = """
    import argparse
    import torch
    import torch.nn.functional as F
    from torch import nn
    from apex import amp
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.c = nn.Linear(8, 8), nn.Linear(8, 8)
        def forward(self, x, y):
            return self.q(x), self.c(y)
    def scores_of(model, x, y):
        q, c = model(x, y)
        return F.log_softmax(torch.matmul(q, c.t()), dim=1)
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true")
    parser.add_argument("--level", default="O1")
    args = parser.parse_args()
    model = Pair()
    optimizer = torch.optim.Adam(model.parameters())
    if args.fp16:
        model, optimizer = amp.initialize(model, optimizer, opt_level=args.level)
    loss = scores_of(model, torch.randn(2, 8), torch.randn(2, 8)).sum()
    with amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    """
    assert [c for c in _codes(tmp_path, code) if not c.endswith("AMP502")] == []
    [scores] = value_of(tmp_path, {"m.py": code}, "m.py", "return F.log_softmax", "torch.matmul(q, c.t())")
    assert "float16" in scores  # the matmul is half under O1; its softmax is float32
    [probs] = value_of(tmp_path, {"m.py": code}, "m.py", "return F.log_softmax",
                       "F.log_softmax(torch.matmul(q, c.t()), dim=1)")
    assert "float16" not in probs


def test_fabric_setup_casts_at_a_true_precision_and_returns_float32(tmp_path: Path) -> None:
    """Lightning Fabric's ``setup``: at ``"bf16-true"`` the model is cast (its forward runs in
    bfloat16: a hand-written softmax there is a finding; AdamW built before over its parameters
    trains them in bfloat16: AMP101 at the ``setup`` call), and its outputs come back as float32
    (a softmax on them is none). At ``"bf16-mixed"`` the forward runs under autocast and the
    outputs are float32 too. Before, ``setup`` returned an unknown value: nothing of it was seen."""
    code = """
    import lightning as L
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
        def forward(self, x):
            h = self.fc(x)
            return h * F.softmax(h, dim=-1)
    def main(precision: str = "PRECISION"):
        fabric = L.Fabric(accelerator="cuda", precision="PRECISION")
        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model, optimizer = fabric.setup(model, optimizer)
        for step in range(10):
            out = model(torch.randn(4, 16))
            loss = F.log_softmax(out, dim=-1).mean()
            fabric.backward(loss)
            optimizer.step()
    if __name__ == "__main__":
        main()
    """
    true = code.replace("PRECISION", "bf16-true")
    assert sorted(_codes(tmp_path, true)) == sorted([f"{_line_of(true, 'fabric.setup(')}: AMP101",
                                                    f"{_line_of(true, 'return h * F.softmax')}: AMP201"])
    [out] = value_of(tmp_path, {"m.py": true}, "m.py", "out = model(", "out")
    assert out == "tensor float32"
    mixed = code.replace("PRECISION", "bf16-mixed")
    assert _codes(tmp_path, mixed) == []
    [out] = value_of(tmp_path, {"m.py": mixed}, "m.py", "out = model(", "out")
    assert out == "tensor float32"


def test_a_function_run_from_the_command_line_takes_its_defaults_and_literal_choices(tmp_path: Path) -> None:
    """``CLI(train)`` (jsonargparse; also ``fire.Fire``, ``typer.run``, ``tyro.cli``) calls ``train``
    with the command line's values: a ``Literal[...]`` parameter is one of its choices and a string
    parameter is its default unless the user says otherwise, so Fabric's ``"bf16-true"`` is one run the
    script makes: AMP101 where ``setup_module`` casts the model trained by SGD, reached through
    ``fabric.launch(fit, ...)`` (before, ``train`` and ``fit`` were analysed with unknown arguments)."""
    code = """
    from typing import Literal, Optional
    import lightning as L
    import torch
    from jsonargparse import CLI
    from torch import nn
    def fit(fabric, steps):
        model = fabric.setup_module(nn.Linear(32, 32))
        optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
        for _ in range(steps):
            fabric.backward(model(torch.randn(8, 32)).square().mean())
            optimizer.step()
    def train(steps: int = 10, precision: PRECISION):
        fabric = L.Fabric(devices=1, precision=precision)
        fabric.launch(fit, steps)
    if __name__ == "__main__":
        CLI(train)
    """
    for annotation in ('str = "bf16-true"', 'Optional[Literal["bf16-true", "32-true"]] = None'):
        text = code.replace("PRECISION", annotation)
        assert _codes(tmp_path, text) == [f"{_line_of(text, 'model = fabric.setup_module')}: AMP101"], annotation
    text = code.replace("PRECISION", 'Literal["bf16-mixed", "32-true"] = "32-true"')
    assert _codes(tmp_path, text) == []


def test_fabric_backward_at_16_true_is_an_unscaled_backward(tmp_path: Path) -> None:
    """``fabric.backward(loss)`` of a Fabric at ``"16-true"`` scales nothing (no GradScaler in its
    half plugin): AMP102 there, beside AMP101 at ``setup``; at ``"16-mixed"`` Fabric scales the loss
    and at ``"bf16-true"`` none is needed (before, a framework's backward was never a backward)."""
    code = """
    import lightning as L
    import torch
    from torch import nn
    def finetune(precision):
        fabric = L.Fabric(devices=1, precision=precision)
        model = fabric.setup(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)))
        optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.01))
        for _ in range(100):
            loss = model(torch.randn(16, 64)).logsumexp(-1).mean()
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    finetune("PRECISION")
    """
    true16 = code.replace("PRECISION", "16-true")
    assert sorted(_codes(tmp_path, true16)) == sorted([f"{_line_of(true16, 'model = fabric.setup(')}: AMP101",
                                                       f"{_line_of(true16, 'fabric.backward(loss)')}: AMP102"])
    assert _codes(tmp_path, code.replace("PRECISION", "16-mixed")) == []
    assert [c for c in _codes(tmp_path, code.replace("PRECISION", "bf16-true")) if "AMP102" in c] == []


def test_an_optimizer_a_model_keeps_trains_its_parameters_cast_later(tmp_path: Path) -> None:
    """A model that builds its own optimizer in ``__init__`` (``self.optim = Adam(self.parameters())``)
    and is cast in place afterwards (``net = net.half()`` under a flag): the optimizer, stepped through
    the model's field, now trains float16 parameters: AMP101 at the cast, AMP302 at the optimizer
    whose default eps rounds to 0 (before, only optimizers held in local names were seen)."""
    code = """
    import sys
    import torch
    from torch import nn
    class Critic(nn.Module):
        def __init__(self, lr=2e-4):
            super().__init__()
            self.body = nn.Linear(32, 1)
            self.optim = torch.optim.Adam(self.parameters(), lr=lr)
        def forward(self, x):
            return self.body(x)
    def main(half):
        net = Critic().cuda()
        if half:
            net = net.half()
        for _ in range(5):
            net.optim.zero_grad()
            score = net(torch.randn(8, 32).cuda().half()).float().mean()
            score.backward()
            net.optim.step()
    main(sys.argv[1] == "half")
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, 'net = net.half()')}: AMP101" in codes
    assert f"{_line_of(code, 'self.optim = torch.optim.Adam')}: AMP302" in codes


def test_a_model_module_named_by_a_flag_default_is_imported(tmp_path: Path) -> None:
    """``config = vars(parser.parse_args())`` is the flags as a dict; ``__import__(config["arch"])``
    imports the default's module (the run the script makes unless told otherwise), and
    ``Net(**config)`` passes each known flag, also when the dict later got keys nobody knows (before,
    the module was unknown and nothing it builds was seen)."""
    files = {
        "resnetlike.py": """
            import torch
            from torch import nn
            class Net(nn.Module):
                def __init__(self, width=64, eps=1e-3, **kwargs):
                    super().__init__()
                    self.fc = nn.Linear(width, width)
                    self.eps = eps
                def forward(self, x):
                    h = self.fc(x)
                    return h / (h.norm(dim=-1, keepdim=True) + self.eps)
            """,
        "train.py": """
            import argparse
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--arch", type=str, default="resnetlike")
            parser.add_argument("--eps", type=float, default=1e-8)
            parser.add_argument("--half", action="store_true")
            def run(config):
                for key in ["data", "logs"]:
                    config[f"{key}_root"] = "/tmp/" + key
                module = __import__(config["arch"])
                net = module.Net(**config).cuda()
                if config["half"]:
                    net = net.half()
                return net(torch.randn(2, 64).cuda().half())
            run(vars(parser.parse_args()))
            """,
    }
    assert "resnetlike.py:10: AMP302" in _codes_in_project(tmp_path, files, "AMP302")


def test_an_optimizer_picked_by_name_from_torch_optim_is_an_optimizer(tmp_path: Path) -> None:
    """``getattr(torch.optim, name)(params)`` and ``getattr(__import__("torch.optim", fromlist=[name]),
    name)`` build an optimizer of a class nobody knows over the half model's parameters: AMP101 at the
    cast, and AMP102 at the unscaled backward (before, the optimizer was unknown and the pure-half
    training went unreported). Its ``eps`` is not known, so no AMP302."""
    code = """
    import sys
    import torch
    from torch import nn
    def make_optimizer(name, params):
        if "." in name:
            module_name, class_name = name.rsplit(".", 1)
        else:
            module_name, class_name = "torch.optim", name
        module = __import__(module_name, fromlist=[class_name])
        return getattr(module, class_name)(params, lr=1e-3)
    encoder = nn.Linear(16, 16).half()
    head = nn.Linear(16, 4).half()
    opt_a = getattr(torch.optim, sys.argv[1])(encoder.parameters(), lr=1e-3)
    opt_b = make_optimizer(sys.argv[2], head.parameters())
    for _ in range(3):
        head(encoder(torch.randn(2, 16).half())).float().sum().backward()
        opt_a.step()
        opt_b.step()
    """
    assert sorted(_codes(tmp_path, code)) == [f"{_line_of(code, 'encoder = nn.Linear')}: AMP101",
                                              f"{_line_of(code, 'head = nn.Linear')}: AMP101",
                                              f"{_line_of(code, '.backward()')}: AMP102"]


def test_a_loss_cast_up_keeps_the_evidence_of_its_half_graph(tmp_path: Path) -> None:
    """``loss = out.float().pow(2).mean()`` on a model cast to half under ``--fp16``: the loss is
    float32 but its gradients run through the half model. The upcast keeps where that half came
    from, so the unscaled backward is an AMP102 finding under that condition; before, ``.float()``
    dropped the origin and the backward was no finding."""
    code = """
    import argparse
    import torch
    from torch import nn
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    model = nn.Linear(8, 8)
    if args.fp16:
        model.half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        out = model(torch.randn(4, 8))
        loss = out.float().pow(2).mean()
        loss.backward()
        optimizer.step()
    """
    (tmp_path / "m.py").write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                             "AMP102", "--output-format", "json", str(tmp_path / "m.py")], capture_output=True, text=True)
    [found] = json.loads(result.stdout)
    assert found["location"]["row"] == _line_of(code, "loss.backward()") and "`args.fp16`" in found["message"]


def test_a_vendored_apex_is_the_library_from_inside_and_from_above(tmp_path: Path) -> None:
    """A repository that ships its own copy of apex (``apex/amp/...``): ``from apex import amp`` is
    still NVIDIA apex (AMP502; O2's master weights), whether the run starts in the repository, where
    ``apex`` resolves to the copy, or in the folder above it."""
    repo = tmp_path / "repo"
    (repo / "apex" / "amp").mkdir(parents=True)
    (repo / "apex" / "__init__.py").write_text("from . import amp\n", encoding="utf-8")
    (repo / "apex" / "amp" / "__init__.py").write_text(
        "def initialize(models, optimizers=None, opt_level='O1'):\n    return models, optimizers\n", encoding="utf-8")
    (repo / "train.py").write_text(textwrap.dedent("""
    import torch
    from apex import amp
    model = torch.nn.Linear(8, 8).cuda()
    optimizer = torch.optim.Adam(model.parameters(), eps=1e-8)
    model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
    for x in loader:
        loss = model(x).float().sum()
        with amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
        optimizer.step()
    """).lstrip(), encoding="utf-8")

    def findings(cwd: Path, target: str) -> List[str]:
        out = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                              "--output-format", "json", target], capture_output=True, text=True, cwd=cwd)
        return sorted(f"{Path(f['filename']).name}:{f['location']['row']}: {f['code']}" for f in json.loads(out.stdout))

    inside = findings(repo, ".")
    assert inside == findings(tmp_path, "repo")
    assert inside == ["train.py:5: AMP502", "train.py:8: AMP502"]  # no AMP302: O2 keeps fp32 master weights


def test_apex_o1_runs_the_forward_as_autocast_would(tmp_path: Path) -> None:
    code = """
    import torch
    from apex import amp
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.Adam(model.parameters())
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    y = model(torch.randn(2, 8))  # <-
    """
    assert one(tmp_path, code, "# <-", "y") == ["tensor float16"]


def test_a_parameter_named_autocast_is_not_the_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent("""
    import torch
    from torch.cuda.amp import autocast

    def run(model, x, autocast=None):
        with autocast():
            return model(x)
    """).lstrip(), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "amp_lint", "fix", "--isolated", "--select", "AMP501", str(path)],
                   capture_output=True, text=True, check=False)
    text = path.read_text(encoding="utf-8")
    assert "    with autocast():\n" in text  # the parameter, not the import: untouched


# -- explain and evidence ---------------------------------------------------------------------------
def explain_json(tmp_path: Path, target: str, marker: str, code: str = "") -> list:
    if code:
        (tmp_path / target).write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    source = (tmp_path / target).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(source, 1) if marker in text)
    result = subprocess.run([sys.executable, "-m", "amp_lint", "explain", f"{tmp_path / target}:{line}",
                             "--output-format", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["contexts"]


def test_explain_cli_text_shows_call_path_and_evidence(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent("""
    import torch
    def attend(q):
        return q.softmax(-1)
    x = torch.randn(3).half()
    attend(x)
    """).lstrip(), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "explain", "m.py:3"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "m.py:5 calls `attend`" in result.stdout
    assert "because m.py:4: cast to half: `torch.randn(3).half()`" in result.stdout


def test_explain_reads_a_file_as_check_does(tmp_path: Path) -> None:
    """A UTF-8 BOM (or a declared encoding) is decoded as ``check`` decodes it, not refused."""
    code = "import torch\n# caf\xe9\nx = torch.randn(3).half()\ny = x.softmax(-1)\n"
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + code.encode("utf-8"))
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + code.encode("latin-1"))
    for name, line in (("bom.py", 4), ("latin.py", 5)):
        result = subprocess.run([sys.executable, "-m", "amp_lint", "explain", f"{name}:{line}"], capture_output=True,
                                text=True, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "x.softmax(-1)" in result.stdout and "tensor float16" in result.stdout


def test_explain_analyses_the_files_project_not_the_working_directory(tmp_path: Path) -> None:
    """Run from outside the project, ``explain`` still reads the script that casts in another folder."""
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    (project / "pkg").mkdir(parents=True)
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (project / "pkg" / "attn.py").write_text("def attend(q):\n    return q.softmax(-1)\n")
    (project / "train.py").write_text("import torch\nfrom pkg.attn import attend\nattend(torch.randn(3).half())\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "explain", "../proj/pkg/attn.py:2"],
                            capture_output=True, text=True, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "train.py:3 calls `attend`" in result.stdout and "tensor float16" in result.stdout


@pytest.mark.parametrize("target,message", [
    ("missing.py:1", "no such file"),
    ("m.py", "FILE:LINE"),
    ("m.py:x", "FILE:LINE"),
])
def test_explain_cli_bad_target_is_one_line_error(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "m.py").write_text("import torch\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "explain", target], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_findings_carry_evidence_across_files(tmp_path: Path) -> None:
    (tmp_path / "attn.py").write_text("def attend(q):\n    return q.softmax(-1)\n")
    (tmp_path / "train.py").write_text("import torch\nfrom attn import attend\nattend(torch.randn(3).half())\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--select", "AMP201",
                             "--output-format", "json", "."], capture_output=True, text=True, cwd=tmp_path)
    (finding,) = json.loads(result.stdout)
    assert finding["filename"].endswith("attn.py")
    assert [(Path(e["filename"]).name, e["row"]) for e in finding["evidence"]] == [("train.py", 3), ("train.py", 3)]
    assert finding["evidence"][0]["message"].startswith("cast to half")



def test_evidence_of_a_module_handed_on_says_its_forward_ran_from_the_cast(tmp_path: Path) -> None:
    """A half model the program only hands on (``deploy(Net().half())``) has its forward run with
    unknown inputs from the cast: the chain says so instead of claiming the cast line calls it."""
    (tmp_path / "net.py").write_text(textwrap.dedent("""
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.fc(x).log_softmax(-1)
    """).lstrip())
    (tmp_path / "deploy.py").write_text("from net import Net\ndef deploy(m):\n    pass\ndeploy(Net().half())\n")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--select", "AMP201",
                             "--output-format", "json", "."], capture_output=True, text=True, cwd=tmp_path)
    (finding,) = json.loads(result.stdout)
    assert [(Path(e["filename"]).name, e["row"], e["message"]) for e in finding["evidence"]][1:] == [
        ("deploy.py", 4, "runs `Net.forward` of the module cast here (inputs unknown)")]


# -- architecture ------------------------------------------------------------------------------------
def test_semantics_depends_on_no_rule_engine_or_reporter() -> None:
    """The analysis is a layer below the rules: it imports data tables and itself only."""
    for path in sorted((ROOT / "amp_lint" / "semantics").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("amp_lint"):
                assert node.module.startswith(("amp_lint.semantics", "amp_lint.data")), (path.name, node.module)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("amp_lint") or alias.name.startswith(
                        ("amp_lint.semantics", "amp_lint.data")), (path.name, alias.name)


def test_rules_ask_the_facts_api_and_never_the_interpreter() -> None:
    """Rules only ask questions: they import no interpreter and read no ``.interpreter`` state, so
    what the analysis keeps inside can change without a rule noticing."""
    for path in sorted((ROOT / "amp_lint" / "rules").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module != "amp_lint.semantics.interpreter", path.name
            if isinstance(node, ast.Attribute):
                assert node.attr != "interpreter", (path.name, node.lineno)


def test_forward_of_a_half_module_used_only_through_other_methods_is_a_guess(tmp_path: Path) -> None:
    """``model.half()`` then ``model.inference(x)``: the training-only ``forward`` is analysed as a
    guess, so what only it shows is low confidence (hidden unless ``--preview``); a half module the
    program never calls (a library model handed elsewhere) is analysed as it would run."""
    model = textwrap.dedent("""
    import torch.nn as nn
    import torch.nn.functional as F
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(64, 64)
        def forward(self, x):
            return F.log_softmax(self.proj(x), dim=-1)
        def inference(self, x):
            return self.proj(x).argmax(-1)
    """)
    (tmp_path / "net.py").write_text(model, encoding="utf-8")
    (tmp_path / "infer.py").write_text("from net import Net\nnet = Net().half()\nnet.inference(x)\n")

    def check(*extra: str) -> str:
        return subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--select", "AMP201",
                               *extra, "."], capture_output=True, text=True, cwd=tmp_path).stdout

    assert "AMP201" not in check()
    assert "net.py:9:16: AMP201" in check("--preview")
    (tmp_path / "infer.py").write_text("from net import Net\nnet = Net().half()\n")
    assert "net.py:9:16: AMP201" in check()


def test_findings_do_not_depend_on_the_hash_seed():
    """Joins keep their members in the order they joined: which cast a finding names (of a model built
    on either branch) must not follow string hashes or ids, which change from run to run."""
    import os

    outputs = set()
    for seed in ("1", "2", "3"):
        run = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select", "ALL",
                              "--preview", "--exit-zero", "--output-format", "full", "fixtures"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, PYTHONHASHSEED=seed))
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout)
    assert len(outputs) == 1 and "AMP101" in outputs.pop()


# -- branches behind constants ---------------------------------------------------------------------
def test_branch_behind_a_constant_flag_is_not_taken(tmp_path: Path) -> None:
    """A module constant, a constant every caller of this context passes, or a default the call
    leaves out (``fallback=False``: False in that call) decides the branch; an outside flag does not."""
    code = """
    import sys
    import torch
    EXPORT_HALF = False
    def project(x, halve, fallback=False):
        if EXPORT_HALF:
            x = x.half()
        if halve:
            x = x.bfloat16()
        if fallback:
            x = x.double()
        return x  # <-
    project(torch.randn(3), False)
    project(torch.randn(3), len(sys.argv) > 1)
    """
    assert one(tmp_path, code, "# <-", "x") == ["tensor float32", "tensor bfloat16 or float32"]


def test_a_half_test_on_an_argument_nobody_passes_is_no_evidence(tmp_path: Path) -> None:
    """A benchmark helper no one calls casts each layer to half only ``if ... and inp.dtype is
    torch.float16``: with no caller, nothing is known of ``inp`` and that test is false (as for an
    activation of unknown dtype), and an ``and`` with one false bool operand is false, so the
    helper's layers are not half. A caller passing a half input decides it the other way (one
    passing an unknown config stays undecided: the test below)."""
    code = """
    import torch
    def timing(inp, layers, warm=True):
        for layer in layers:
            layer = layer.half() if warm and callable(layer) and inp.dtype is torch.float16 else layer
            out = layer(inp)  # <-
        return out
    """
    assert one(tmp_path, code, "# <-", "layer") == ["unknown"]
    called = code + "timing(torch.randn(2, 4).half(), [torch.nn.Linear(4, 4)])\n"
    assert one(tmp_path, called, "# <-", "layer") == ["module torch.nn.Linear with float16 parameters"]


def test_the_default_dtype_set_by_torch_makes_later_models_and_factories_half(tmp_path: Path) -> None:
    """``torch.set_default_dtype(torch.float16)`` (or ``set_default_tensor_type`` with a half tensor
    type) makes the parameters of modules built after it in that scope, and float factories, half;
    what was built before stays float32, and setting float32 back ends it."""
    code = """
    import torch
    from torch import nn
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.out = nn.Linear(16, 4)
        def forward(self, h):
            return self.out(h).log_softmax(-1)
    before = Head()
    torch.set_default_dtype(torch.float16)
    head, noise = Head(), torch.randn(3, 16)
    plain = nn.Linear(16, 16)
    torch.set_default_dtype(torch.float32)
    after = Head()
    before, head, noise, plain, after  # <-
    """
    assert [one(tmp_path, code, "# <-", name)[0] for name in ("before", "head", "noise", "plain", "after")] == [
        "module Head with float32 parameters", "module Head with float16 parameters", "tensor float16",
        "module torch.nn.Linear with float16 parameters", "module Head with float32 parameters"]
    built = code.replace("torch.set_default_dtype(torch.float16)", "torch.set_default_tensor_type(torch.cuda.HalfTensor)")
    assert one(tmp_path, built + "head(noise)\n", "# <-", "head") == ["module Head with float16 parameters"]
    assert _codes(tmp_path, built + "head(noise)\n") == ["8: AMP201"]


def test_not_of_a_flag_the_call_passes_decides_the_branch(tmp_path: Path) -> None:
    """jukebox-style ``forward(self, x, fp16=False, fp16_out=False)`` ending in ``if not fp16_out:
    x = x.float()``: ``not`` of a flag whose value the call passes is decided like the flag itself.
    A call passing ``fp16_out=False`` gets float32 back, so the loss on it is no finding; one passing
    ``True`` gets half. A call leaving ``fp16_out`` out gets its default, False, as Python gives it
    (before, a left-out flag was undecided and the loss a finding); a function no call reaches
    (an entry point whose flags a command line sets) keeps its flags undecided."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
        def forward(self, x, fp16=False, fp16_out=False):
            if fp16:
                x = x.half()
            x = self.proj(x)
            if not fp16_out:
                x = x.float()
            return x
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = Body().half()
        def forward(self, x, t):
            return F.cross_entropy(self.body(x, fp16=True, fp16_out=False), t)
    Head()(torch.randn(2, 8), torch.zeros(2, dtype=torch.long))
    """
    assert _codes(tmp_path, code) == []
    assert _codes(tmp_path, code.replace("fp16_out=False), t)", "fp16_out=True), t)")) == ["20: AMP202"]
    assert _codes(tmp_path, code.replace(", fp16_out=False), t)", "), t)")) == []
    left_out = code.replace(", fp16_out=False), t)", "), t)")
    values = value_of(tmp_path, {"m.py": left_out}, "m.py", "if not fp16_out:", "fp16_out")
    assert "scalar False" in values  # the call's context
    assert "scalar" in values  # the run with no caller: a flag of unknown value


def test_a_constant_the_script_may_rebind_decides_no_branch(tmp_path: Path) -> None:
    """nanoGPT's configurator: after a top-level ``exec(...)`` (or ``globals().update``) any module
    constant may hold a value from the command line, so a branch on one is taken both ways; a
    constant bound after it decides again."""
    code = """
    import torch
    profile = False
    exec(open("configurator.py").read())
    DOUBLE = False
    x = torch.randn(3)
    if profile:
        x = x.half()
    if DOUBLE:
        x = x.double()
    x  # <-
    """
    assert one(tmp_path, code, "# <-", "x") == ["tensor float16 or float32"]
    assert one(tmp_path, code.replace('exec(open("configurator.py").read())', "pass"), "# <-", "x") == [
        "tensor float32"]


def test_a_cast_back_to_the_callers_half_is_no_evidence_of_half(tmp_path: Path) -> None:
    """A kernel wrapper that runs in fp32 and casts its result back only when its input was half
    (``if x.dtype == torch.float16: ...; if was_half: y = y.half()``) makes nothing half: with an
    input of unknown dtype the half path is not taken; with a half input it is, and with a float32
    input it is decided false."""
    code = """
    import torch
    def fused_op(inp):
        was_half = False
        if inp.dtype == torch.float16:
            was_half = True
            inp = inp.float()
        out = torch.tanh(inp)
        if was_half:
            out = out.half()
        return out
    def also(inp):
        if inp.dtype not in (torch.float16, torch.bfloat16):
            return inp
        return inp.float().exp().to(inp.dtype)
    u = fused_op(torch.randn(3, dtype=pick_dtype()))
    h = fused_op(torch.randn(3).half())
    f = fused_op(torch.randn(3))
    v = also(torch.randn(3, dtype=pick_dtype()))
    w = also(torch.randn(3))
    u, h, f, v, w  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")[0]
    assert values["u"] == "unknown" or "16" not in values["u"], values["u"]
    assert values["h"] == "tensor float16"
    assert values["f"] == "tensor float32"
    assert "16" not in values["v"], values["v"]
    assert values["w"] == "tensor float32"


def test_a_cast_back_in_a_forward_whose_input_is_unknown_or_maybe_a_number(tmp_path: Path) -> None:
    """A layer that computes in float32 and casts back only when its input was half (``was_half =
    inp.dtype == torch.float16`` ... ``if was_half: out = out.half()``) makes nothing half where the
    input of its ``forward`` is of unknown value (a chain of layers applied to a loader's batch)
    or may be a tensor or a Python number (a number has no ``dtype``): before, the cast back was
    taken as a half cast under ``was_half``, and the layer after it reported a float16 reduction.
    A plain function's argument of unknown value may still be a config (the test below)."""
    code = """
    import torch
    from torch import nn
    class Stat(nn.Module):
        def forward(self, h):
            centred = h - h.mean(1, keepdim=True)
            return centred.pow(2).mean(1, keepdim=True)
    class Restoring(nn.Module):
        def __init__(self):
            super().__init__()
            self.stat = Stat()
        def forward(self, inp, scale=1.0):
            was_half = inp.dtype == torch.float16
            if was_half:
                inp = inp.float()
            out = inp * scale
            if was_half:
                out = out.half()
            return self.stat(out)
    def chain(layers, x):
        for layer in layers:
            x = layer(x)
        return x
    def main(loader, offset):
        layers = [Restoring(), Restoring()]
        for batch in loader:
            chain(layers, batch)
        chain(layers, torch.randn(4, 8) if offset else 3.0)
    """
    assert _codes(tmp_path, code) == []


def test_a_cast_in_another_program_is_no_evidence_in_this_one(tmp_path: Path) -> None:
    """Two scripts share a wrapper class that keeps the model in a field a method sets: the inference
    script wraps a model cast to half, the training script an fp32 one. The field joins both, but the
    two programs share no objects at run time: the training run's exp of the model's output is not
    half, nor its loss at ``.backward()``. Before, the inference script's cast showed up in the
    training run as AMP204 and AMP102. A training script that imports the other one, or that
    makes something half itself, keeps it."""
    lib = """
    import torch
    from torch import nn
    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.fc(x)
    class Runner:
        def attach(self, net):
            self.net = net
            return self
        def sample(self, x):
            return self.net(x).argmax(-1)
        def loss(self, x):
            return torch.exp(self.net(x)).mean()
    """
    infer = """
    import torch
    from lib import Runner, Scorer
    def main():
        runner = Runner().attach(Scorer().cuda().half())
        print(runner.sample(torch.randn(2, 8).cuda().half()))
    if __name__ == "__main__":
        main()
    """
    train = """
    import torch
    from lib import Runner, Scorer
    def main():
        runner = Runner().attach(Scorer().cuda())
        opt = torch.optim.SGD(runner.net.parameters(), lr=0.1)
        for _ in range(3):
            loss = runner.loss(torch.randn(2, 8).cuda())
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        main()
    """

    def codes(files: Dict[str, str]) -> List[str]:
        for name, text in files.items():
            (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                                 "--select", "AMP102,AMP2", "--output-format", "json", str(tmp_path)],
                                capture_output=True, text=True)
        return sorted(f"{Path(f['filename']).name}:{f['location']['row']}: {f['code']}"
                      for f in json.loads(result.stdout or "[]"))

    assert codes({"lib.py": lib, "infer.py": infer, "train.py": train}) == []
    # the training script imports the inference one: its casts may run in this program
    imports = train.replace("from lib import Runner, Scorer", "from lib import Runner, Scorer\n    import infer")
    assert codes({"train.py": imports}) == ["lib.py:16: AMP204", "train.py:9: AMP102"]
    # ... also where the program is run by a launcher that imports the training script, which
    # imports the inference one (the launcher's run reaches it through the training script)
    launcher = """
    import train
    if __name__ == "__main__":
        train.main()
    """
    assert "lib.py:16: AMP204" in codes({"train.py": imports.replace('if __name__ == "__main__":\n        main()', ""),
                                         "launch.py": launcher})
    # ... and so does one that makes something half itself: a summary shared by equal calls may
    # name the other program's cast for its own, so the evidence is kept there
    casting = train.replace("runner = Runner().attach(Scorer().cuda())", "runner = Runner().attach(Scorer().cuda())\n"
                            "        noise = torch.randn(2, 8).cuda().half()")
    assert codes({"train.py": casting})[:1] == ["lib.py:16: AMP204"]


def test_top_level_scripts_are_programs_and_a_promotion_keeps_the_half_evidence(tmp_path: Path) -> None:
    """Two scripts written without a ``__main__`` block (their top level loops) share a wrapper
    whose layer keeps its last output in a field: one trains through a DeepSpeed fp16 engine, the
    other in float32. The field joins both runs, so the float32 script's loss has float16 in its
    graph after a concatenation promotes it; that evidence keeps the DeepSpeed script's origin
    through the promotion and the float32 layer after it, and
    a script that neither imports nor is that script does not take it as its own (before: AMP102
    on the float32 script's ``.backward()``, naming no cast). The fp16 run's loss stays a finding."""
    files = {
        "pkg/__init__.py": "",
        "pkg/wrap.py": """
            import torch
            from torch import nn
            import torch.nn.functional as F
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(64, 256)
                    self.head = nn.Linear(256, 256)
                    self.memory = None
                def forward(self, x):
                    h = self.proj(x)
                    if self.memory is not None:
                        h = torch.cat([h, self.memory], dim=0)
                    self.memory = h
                    return self.head(h)
            class LossWrapper(nn.Module):
                def __init__(self, net):
                    super().__init__()
                    self.net = net
                def forward(self, x, y):
                    return F.cross_entropy(self.net(x), y)
            """,
        "fp16/train.py": """
            import deepspeed
            from pkg.wrap import LossWrapper, Net
            model = LossWrapper(Net())
            engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                           config={"fp16": {"enabled": True}})
            for x, y in []:
                loss = engine(x, y)
                engine.backward(loss)
                engine.step()
            """,
        "fp32/train.py": """
            import torch
            from pkg.wrap import LossWrapper, Net
            model = LossWrapper(Net())
            opt = torch.optim.Adam(model.parameters())
            for x, y in []:
                loss = model(x, y)
                loss.backward()
                opt.step()
            """,
    }
    assert _codes_in_project(tmp_path, files, "AMP1,AMP2") == ["pkg/wrap.py:21: AMP202"]


def test_a_dtype_test_on_a_config_of_unknown_value_stays_undecided(tmp_path: Path) -> None:
    """``cfg.dtype == torch.float16`` reads an unknown object, maybe a config, not an activation:
    the branch that casts the model to half may run, and its softmax is found."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return F.softmax(self.fc(x), -1)
    def main(cfg):
        model = Net()
        if cfg.dtype == torch.float16:
            model = model.half()
        return model(torch.randn(2, 8).to(cfg.dtype))
    main(load_config())
    """
    assert _codes(tmp_path, code) == ["9: AMP201"]


def test_a_module_that_tests_its_own_weights_for_half_may_run_in_half(tmp_path: Path) -> None:
    """``if self.weight.dtype == torch.float16: x = x.to(torch.float16)`` in a module whose cast
    state is unknown stays undecided: the module is written to run cast to half, so the value may be
    half under that condition (unlike a test on the caller's activation, above)."""
    code = """
    import torch
    from torch import nn
    class Norm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
        def forward(self, x):
            x = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True))
            if self.weight.dtype == torch.float16:
                x = x.to(torch.float16)
            x  # <-
            return self.weight * x
    """
    values = value_of(tmp_path, {"m.py": code}, "m.py", "# <-", "x")
    assert values and all("float16" in value and "float32" in value for value in values), values


def test_a_branch_on_a_default_no_caller_passes_is_not_taken(tmp_path: Path) -> None:
    """``if labels is not None:`` in the forward of a half model that every call of the program
    leaves without labels is dead: the call sites decide it, and so does the run of the half
    model's forward (seeded with unknown inputs), which keeps the defaults no call passes."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)
        def forward(self, x, labels=None):
            logits = self.fc(x)
            if labels is not None:
                return F.cross_entropy(logits, labels)
            return logits
    model = Head().half()
    out = model(torch.randn(2, 8).half())
    loss = F.cross_entropy(out.float(), torch.tensor([1, 2]))
    """
    assert _codes(tmp_path, code) == []
    passes = code.replace("out = model(torch.randn(2, 8).half())",
                          "out = model(torch.randn(2, 8).half(), torch.tensor([1, 2]))")
    assert _codes(tmp_path, passes) == ["11: AMP202"]


def test_keywords_forwarded_by_a_wrapper_are_the_ones_its_callers_pass(tmp_path: Path) -> None:
    """``**kwargs`` forwarded by a wrapper holds what its callers passed (after ``pop``), so the
    wrapped forward's defaults still decide its branches; a call with ``**`` of unknown content
    may pass anything."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Wrapper(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner.half()
        def forward(self, *inputs, **kwargs):
            kwargs.pop("verbose", None)
            return self.inner(*inputs, **kwargs)
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)
        def forward(self, x, mask=None, labels=None):
            logits = self.fc(x)
            if labels is not None:
                return F.cross_entropy(logits, labels)
            return logits
    model = Wrapper(Tagger())
    out = model(torch.randn(2, 8).half(), mask=None, verbose=True)
    """
    assert _codes(tmp_path, code) == []
    unknown = code.replace("mask=None, verbose=True)", "**options)")
    assert _codes(tmp_path, unknown) == ["18: AMP202"]
    popped = code.replace('kwargs.pop("verbose", None)', 'kwargs.update(extra)')
    assert _codes(tmp_path, popped) == ["18: AMP202"]


def test_a_none_test_on_a_module_global_stays_undecided(tmp_path: Path) -> None:
    """A module global that is None at the top level may be set by a function through ``global``:
    ``x is None`` read in a function is not decided by the top-level value, while a local's is."""
    code = """
    import torch
    _GROUP = None
    def init():
        global _GROUP
        _GROUP = torch.randn(3).half()
    def group():
        g = _GROUP is None
        g  # <-
        return _GROUP
    def local(labels=None):
        l = labels is None
        l  # <-
    init()
    group()
    local()
    """
    assert value_of(tmp_path, {"m.py": code}, "m.py", "g  # <-", "g") == ["scalar"]
    assert value_of(tmp_path, {"m.py": code}, "m.py", "l  # <-", "l") == ["scalar True"]


def test_a_dict_key_never_stored_is_not_another_keys_value(tmp_path: Path) -> None:
    """``batch["mask"] = mask.half()`` on a dict whose other keys are unknown does not make
    ``batch["ids"]`` half: a constant key reads its own value, or the values stored under unknown keys."""
    code = """
    import torch
    def load(keys):
        out = {}
        for key in keys:
            out[key] = torch.zeros(3, dtype=torch.int64)
        return out
    batch = load(["ids", "mask"])
    batch["mask"] = batch["mask"].float().half()
    ids, mask = batch["ids"], batch["mask"]
    ids, mask  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")[0]
    assert values["ids"] == "tensor int64", values
    assert values["mask"] == "tensor float16", values


def test_a_dict_handed_to_user_code_may_hold_new_keys(tmp_path: Path) -> None:
    """``cfg.get("half")`` of a key a literal dict lacks is None, unless the dict went to user code
    that may store it (``fill(cfg)``), or was built from a mapping of unknown keys."""
    code = """
    import torch
    def fill(cfg):
        cfg["half"] = True
    cfg, plain, merged = {}, {"lr": 0.1}, dict(load())
    fill(cfg)
    cfg.get("half"), plain.get("half"), merged.get("half")  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")[0]
    assert values['cfg.get("half")'] == "unknown", values
    assert values['plain.get("half")'] == "scalar", values  # None
    assert values['merged.get("half")'] == "unknown", values


def test_a_parameter_list_child_of_a_half_model_is_half(tmp_path: Path) -> None:
    """Indexing (or iterating) a ParameterList/ModuleList of a module cast to half reads the
    children in half, as reading a field of it does."""
    code = """
    import torch
    from torch import nn
    class Proj(nn.Module):
        def __init__(self):
            super().__init__()
            self.projs = nn.ParameterList()
            self.projs.append(nn.Parameter(torch.randn(4, 4)))
        def forward(self, x):
            p = self.projs[0]
            for q in self.projs:
                q  # <-
            return x @ p
    model = Proj().half()
    model(torch.randn(2, 4).half())
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert any(ctx.get("q") == "tensor float16" for ctx in values), values


# -- code no run reaches ---------------------------------------------------------------------------
_HEADS = """
import torch
import torch.nn as nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x.half())

class TaggingHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x):
        return torch.log_softmax(self.encoder(x), -1)  # <- tagging

class RankingHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x):
        return torch.log_softmax(self.encoder(x), -1)  # <- ranking
"""


def test_a_head_no_code_names_is_not_run_when_its_module_is_in_use(tmp_path: Path) -> None:
    """A class nothing names, next to classes another file builds, is code no run reaches: its
    methods are not analysed with unknown arguments (their findings would be about dead code)."""
    files = {"heads.py": _HEADS, "train.py": "import torch\nfrom heads import TaggingHead\nTaggingHead()(torch.randn(2, 8))\n"}
    assert value_of(tmp_path, files, "heads.py", "# <- ranking", "self.encoder(x)") == []
    assert value_of(tmp_path, files, "heads.py", "# <- tagging", "self.encoder(x)") == ["tensor float16 or float32"]


def test_classes_of_a_module_no_file_uses_are_library_code(tmp_path: Path) -> None:
    files = {"heads.py": _HEADS}
    assert value_of(tmp_path, files, "heads.py", "# <- ranking", "self.encoder(x)") == ["tensor float16 (or unknown)"]


def test_a_stale_summary_met_at_the_depth_limit_answers_as_it_is(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary that went stale (a field it read changed) is re-analysed only where the analysis
    can go deeper: at the depth limit it answers as it is, every time it is met there."""
    from amp_lint.engine.linter import ParsedFile, analyse
    from amp_lint.semantics import interpreter

    monkeypatch.setattr(interpreter, "MAX_DEPTH", 2)
    code = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Wrapper(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    def outer(w, x):
        return middle(w, x)

    def middle(w, x):
        return w(x)

    def other(w, x):
        return inner(w, x)

    def inner(w, x):
        return w(x)

    x = torch.randn(2, 2)
    first = Wrapper(nn.Linear(2, 2))
    first(x)
    second = Wrapper(nn.ReLU())
    outer(first, x)
    other(first, x)
    """)
    (tmp_path / "m.py").write_text(code, encoding="utf-8")
    settings = dataclasses.replace(Settings(), project_root=str(tmp_path))
    parsed = [ParsedFile.parse(str(tmp_path / "m.py"), "m.py", code, [])]
    assert analyse(parsed, settings).errors == []


# -- registries: classes stored by decorators, plugin modules loaded by name ------------------
_REGISTRY = """
ARCHS = {}


def register_arch(name):
    def add(cls):
        ARCHS[name] = cls
        return cls
    return add


def build(name, *args):
    return ARCHS[name](*args)
"""

_PLUGIN = """
import torch
from zoo.registry import register_arch


@register_arch("{name}")
class {cls}(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = torch.nn.Linear(width, width)

    def forward(self, x):
        h = self.body(x)  # <- {name}
        return h.{op}
"""

_ZOO_INIT = """
import importlib
import os


def load_all(folder, package):
    for file in sorted(os.listdir(folder)):
        if file.endswith(".py") and not file.startswith("_"):
            importlib.import_module(package + "." + file[:-3])


load_all(os.path.dirname(__file__), "zoo")
"""

_APP = """
import argparse
import torch
import zoo
from zoo.registry import build


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="wide")
    args = parser.parse_args()
    model = build(args.arch, 64).half()
    print(model(torch.randn(2, 64).half()))


main()
"""


def _zoo_files() -> Dict[str, str]:
    return {"app.py": _APP, "zoo/__init__.py": _ZOO_INIT, "zoo/registry.py": _REGISTRY,
            "zoo/narrow.py": _PLUGIN.format(name="narrow", cls="Narrow", op="softmax(-1)"),
            "zoo/wide.py": _PLUGIN.format(name="wide", cls="Wide", op="sum()")}


def test_a_registry_object_filled_by_decorators_is_read_by_a_configured_name(tmp_path: Path) -> None:
    """An mmcv-style ``Registry`` instance: a decorator (a ``partial`` of its ``add`` method) stores
    each builder in the instance's dict, under the name given or the function's ``__name__``, and
    ``BUILDERS.get(kind)`` with a name from the command line is one of the builders stored. The
    half head it builds is then found."""
    files = {
        "detect/__init__.py": "from . import heads\n",
        "detect/registry.py": """
        from functools import partial


        class Registry:
            def __init__(self, name):
                self.name = name
                self._items = dict()

            def get(self, key):
                return self._items.get(key)

            def add(self, fn, name=None):
                if name is None:
                    name = fn.__name__
                self._items[name] = fn
                return fn

            def register(self, name=None):
                return partial(self.add, name=name)


        BUILDERS = Registry("builders")
        """,
        "detect/heads.py": """
        import torch.nn as nn
        from detect.registry import BUILDERS


        @BUILDERS.register()
        def half_head(width):
            return nn.Linear(width, width).half()
        """,
        "train.py": """
        import sys
        import torch
        from detect.registry import BUILDERS


        def main(kind):
            build = BUILDERS.get(kind)
            head = build(16)
            scores = head(torch.randn(4, 16).half())
            return scores.softmax(-1)


        main(sys.argv[1])
        """,
    }
    assert _codes_in_project(tmp_path, files, "AMP201") == ["train.py:10: AMP201"]


def test_a_registry_filled_by_class_decorators_in_plugin_modules_is_read_by_name(tmp_path: Path) -> None:
    """``build(args.arch)`` reads a dict that ``@register_arch`` fills in modules the package loads
    with ``importlib.import_module(package + "." + name)`` in a loop: the script's model may be any
    registered class, so each one's forward runs on the half model (before, the plugin modules ran
    only after the script, the decorators were not applied, and the model was unknown)."""
    files = _zoo_files()
    for plugin in ("wide", "narrow"):
        values = value_of(tmp_path, files, f"zoo/{plugin}.py", f"# <- {plugin}", "h")
        assert values and all(v.startswith("tensor float16") for v in values), values
    assert sorted(_project_codes(tmp_path)) == ["zoo/narrow.py:13: AMP201", "zoo/wide.py:13: AMP203"]


def test_a_cache_of_tensors_in_a_module_dict_keeps_each_call_apart(tmp_path: Path) -> None:
    """A function storing tensors in a module's dict (a cache keyed by dtype) is not a registry: the
    float32 call does not read the float16 call's tensor."""
    code = """
    import torch
    _BASIS = {}
    def basis(x):
        key = str(x.dtype) + "_" + str(x.device)
        if key not in _BASIS:
            _BASIS[key] = torch.ones(4, 4, dtype=x.dtype)
        return _BASIS[key] @ x
    a = basis(torch.randn(4, 4).half())
    b = basis(torch.randn(4, 4))  # <-
    """
    assert one(tmp_path, code, "# <-", "b") == ["tensor float32 (or unknown)"]


def test_unpacking_skips_the_none_a_loader_may_return(tmp_path: Path) -> None:
    """``out, tok = load(path)`` where ``load`` returns a pair or None: unpacking None raises, so
    the targets get the pair's items (before, the None made both unknown)."""
    code = """
    import sys
    import torch
    def load(path):
        if path.endswith(".bin"):
            return None
        return torch.randn(2, 4).half(), "tok"
    def main(path):
        out, tok = load(path)  # <-
        return out
    main(sys.argv[1])
    """
    assert one(tmp_path, code, "# <-", "out") == ["tensor float16"]


def test_a_widened_context_does_not_answer_a_call_without_half_arguments(tmp_path: Path) -> None:
    """Past its exact contexts a function is analysed once for the join of further calls' arguments.
    A call whose own argument carries no half evidence is not answered by that widened context when
    the join holds other calls' half tensors: their half result would be false evidence here (before,
    the unknown batch of ``run`` came out float16 "because" of a cast at a call elsewhere)."""
    code = """
    import sys
    import torch
    def scale(x, k):
        return x * k
    a1 = scale(torch.randn(2).half(), 1)
    a2 = scale(torch.randn(2).half(), 2)
    a3 = scale(torch.randn(2).half(), 3)
    a4 = scale(torch.randn(2).half(), 4)
    a5 = scale(torch.randn(2).half(), 5)
    a6 = scale(torch.randn(2).half(), 6)
    a7 = scale(torch.randn(2).half(), 7)
    a8 = scale(torch.randn(2).half(), 8)
    a9 = scale(torch.load(sys.argv[1]), 9)
    a10 = scale(torch.randn(2).half(), 10)
    a11 = scale(torch.randn(2).half(), 11)
    a12 = scale(torch.randn(2).half(), 12)
    def run(batch):
        out = scale(batch, 100)  # <-
        return out
    run(torch.load(sys.argv[2]))
    """
    assert one(tmp_path, code, "# <-", "out") == ["unknown"]


def test_a_registry_of_many_classes_keeps_each_class(tmp_path: Path) -> None:
    """A registry of nine architectures read with a key from the command line may hold any of the
    nine classes: each is built and its forward runs on the half model (before, a union of more
    than six classes became unknown and the model was lost)."""
    heads = "\n".join(f"""
    @register("arch{i}")
    class Arch{i}(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)
        def forward(self, x):
            return self.proj(x){".softmax(-1)  # <- softmax" if i == 4 else ""}
    """ for i in range(9))
    code = f"""
    import sys
    import torch
    ARCHS = {{}}
    def register(name):
        def add(cls):
            ARCHS[name] = cls
            return cls
        return add
    {textwrap.indent(textwrap.dedent(heads), "    ").strip()}
    def main(arch):
        model = ARCHS[arch]().half()
        return model(torch.randn(2, 8).half())
    main(sys.argv[1])
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, '# <- softmax')}: AMP201"]


def test_a_nested_function_reads_names_two_closures_out(tmp_path: Path) -> None:
    """``make_caster(dtype)(scale)`` returns ``apply``, which reads ``scale`` from the function
    around it and ``dtype`` from the one around that: its result is float16 (before, a nested
    function saw only the function just around it, and ``dtype`` was unknown)."""
    code = """
    import sys
    import torch
    def make_caster(dtype):
        def with_scale(scale):
            def apply(x):
                return x.to(dtype) * scale
            return apply
        return with_scale
    to_half = make_caster(torch.float16)(2.0)
    y = to_half(torch.randn(4))  # <-
    """
    assert one(tmp_path, code, "# <-", "y") == ["tensor float16"]


def test_a_global_statement_makes_a_functions_store_reach_the_module(tmp_path: Path) -> None:
    """``global model`` in a setup function: the half model it builds is the module's ``model``,
    read by a request handler no call reaches (analysed on its own); ``nonlocal`` likewise reaches
    the enclosing call's name. Before, both stores stayed local to the function and the handler's
    model was the module's ``None``."""
    code = """
    import torch
    model = None
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)
        def forward(self, x):
            return self.proj(x)
    def setup():
        global model
        model = Net().half()
    def handle(request):
        scores = model(torch.randn(2, 8).half())  # <- handle
        return scores
    def make_counter():
        seen = torch.zeros(4)
        def add(x):
            nonlocal seen
            seen = x.half() * 2
        add(torch.ones(4))
        total = seen  # <- nonlocal
        return total
    setup()
    make_counter()
    """
    assert one(tmp_path, code, "# <- handle", "scores") == ["tensor float16 (or unknown)"]  # or None: not set up
    assert one(tmp_path, code, "# <- nonlocal", "total") == ["tensor float16 or float32"]


def test_a_global_statement_on_the_line_of_its_def_is_seen(tmp_path: Path) -> None:
    """A file is searched once for ``global``/``nonlocal`` statements before any function's body
    is walked for them (:attr:`SourceModule.may_declare`): one written after ``:`` on its ``def``'s
    line, in a file whose other mentions of the word are names and comments (``global_step``),
    still reaches the module."""
    code = """
    import torch
    model = None
    global_step = 0  # the global step
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)
        def forward(self, x):
            return self.proj(x)
    def setup(): global model; model = Net().half()
    def handle(request):
        scores = model(torch.randn(2, 8).half())  # <- handle
        return scores
    setup()
    """
    assert one(tmp_path, code, "# <- handle", "scores") == ["tensor float16 (or unknown)"]


def test_joining_into_a_union_merges_as_a_join_of_all_its_members_would() -> None:
    """A join into a union takes the union's members as they are only where no two of them could
    merge (:func:`values._settled`): a registry's classes stay linear to join, and a union of a
    known and an unknown string (which a join of its own left apart) is merged again in full."""
    from amp_lint.semantics.values import F16, UNKNOWN, Coll, Scalar, Tensor, Union, _settled, _union, join, options

    known_a, known_b, any_str = Scalar("str", "a"), Scalar("str", "b"), Scalar("str")
    unsettled = _union([known_a, known_b, any_str])  # ``a`` absorbs ``any_str``; ``b`` stays beside it
    assert isinstance(unsettled, Union) and _settled(unsettled) == 0
    assert join(unsettled, UNKNOWN) == _union(options(unsettled) + (UNKNOWN,))
    assert set(options(join(unsettled, Scalar("int", 1)))) == {any_str, Scalar("int", 1)}
    settled = _union([known_a, Tensor(F16), Coll(UNKNOWN)])  # one of each kind: none merges
    assert _settled(settled) == 3
    assert options(join(settled, any_str)) == options(_union(options(settled) + (any_str,))) \
        == (any_str, Tensor(F16), Coll(UNKNOWN))


def test_a_namespace_of_many_attributes_reads_each_by_name() -> None:
    """An argparse namespace of hundreds of options reads an option through an index built on
    first read; a few attributes are searched in place."""
    from amp_lint.semantics.values import Scalar, obj

    many = obj("namespace", **{f"opt{i}": Scalar("int", i) for i in range(300)})
    assert many.get("opt7") == Scalar("int", 7) and many.get("opt299") == Scalar("int", 299)
    assert many.get("missing") is None
    few = obj("namespace", fp16=Scalar("bool", True))
    assert few.get("fp16") == Scalar("bool", True) and few.get("bf16") is None
    assert hash(many) == hash(obj("namespace", **{f"opt{i}": Scalar("int", i) for i in range(300)}))


def test_a_list_grown_in_a_loop_yields_what_was_appended(tmp_path: Path) -> None:
    """``outs = []`` then ``outs.append(model(b))`` in a loop: after the loop the list is the empty
    list or the appended outputs, and ``torch.cat(outs)`` (or iterating it) gives the half outputs;
    the empty list yields nothing (before, the join of the two made the elements unknown)."""
    code = """
    import sys
    import torch
    net = torch.nn.Linear(8, 8).half()
    def predict(batches):
        outs = []
        for b in batches:
            outs.append(net(b.half()))
        logits = torch.cat(outs, dim=0)  # <- cat
        for row in outs:
            peak = row.max()  # <- iterate
        return logits
    predict(sys.argv)
    """
    assert one(tmp_path, code, "# <- cat", "logits") == ["tensor float16"]
    assert one(tmp_path, code, "# <- iterate", "peak") == ["tensor float16 (or unknown), 0-dim"]


def test_a_method_called_on_what_may_be_none_continues_with_the_other_options(tmp_path: Path) -> None:
    """``x.to(dtype=torch.float32)`` where ``x`` may be None (a script that passes no input on one
    path): None has no ``.to``, so the call raises there and the result is the float32 tensor only
    (before, the None made it "float32 (or unknown)", and an unknown operand never promotes a half
    one: ``x + half_skip`` came out float16)."""
    code = """
    import sys
    import torch
    def embed(x, skip):
        x = x.to(dtype=torch.float32)  # <-
        return x + skip
    out = embed(None if sys.argv[1] else torch.randn(2, 8), torch.randn(2, 8).half())
    """
    assert one(tmp_path, code, "# <-", "x.to(dtype=torch.float32)") == ["tensor float32"]


def test_arithmetic_with_a_module_or_none_option_takes_the_other_options(tmp_path: Path) -> None:
    """``x.to(torch.float32)`` of an unknown ``x`` may be a module or a tensor; adding a half tensor
    to a module raises, so the sum is the float32 tensor's (before, the module option made it
    "float32 (or unknown)", and the unknown part lets the next half operand win: an unknown
    operand never promotes a half one)."""
    code = """
    import sys
    import torch
    def head(x, bias):
        x = x.to(torch.float32)
        y = x + bias  # <-
        return y
    head(torch.load(sys.argv[1]), torch.zeros(8).half())
    """
    assert one(tmp_path, code, "# <-", "y") == ["tensor float32"]


def test_a_list_registry_filled_by_a_helper_function_holds_every_appended_instance(tmp_path: Path) -> None:
    """``register(cls)`` appends ``cls()`` to a module's list (a chooser of model loaders): the list
    holds each registered loader, so the one chosen by a loop over it loads the half model (before,
    the append changed only the helper's own frame and the global list stayed empty)."""
    code = """
    import torch
    from transformers import AutoModelForCausalLM
    LOADERS = []
    def register(cls):
        LOADERS.append(cls())
    class Plain:
        def match(self, path):
            return True
        def load(self, path, kwargs):
            return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    class Seq2Seq(Plain):
        def match(self, path):
            return "t5" in path
    register(Seq2Seq)
    register(Plain)
    def pick(path):
        for loader in LOADERS:
            if loader.match(path):
                return loader
        raise ValueError(path)
    def main(path):
        model = pick(path).load(path, {"torch_dtype": torch.float16})
        probs = torch.softmax(model(torch.tensor([[1, 2]])).logits, dim=-1)  # <-
    main("x")
    """
    assert one(tmp_path, code, "# <-", "probs") == ["tensor float16"]


def test_a_registry_of_many_instances_dispatches_a_method_to_each(tmp_path: Path) -> None:
    """A module's list filled with instances of nine project classes (more than a plain join keeps):
    a method called on the one a loop picks runs each class's override, so the override that loads
    the model in half is seen (before, the instances past six collapsed to unknown)."""
    classes = "\n".join(
        f"""
    class Reader{i}(Base):
        def match(self, name):
            return name == "r{i}"
    register(Reader{i})""" for i in range(8))
    code = """
    import sys
    import torch
    from transformers import AutoModel
    READERS = []
    def register(cls):
        READERS.append(cls())
    class Base:
        def match(self, name):
            return False
        def open(self, name):
            return AutoModel.from_pretrained(name), "tokenizer"
    class HalfReader(Base):
        def match(self, name):
            return name.endswith("-fp16")
        def open(self, name):
            return AutoModel.from_pretrained(name, torch_dtype=torch.float16), "tokenizer"
    register(HalfReader)
    """ + classes + """
    def choose(name):
        for reader in READERS:
            if reader.match(name):
                return reader
        raise KeyError(name)
    def main(name):
        model, tokenizer = choose(name).open(name)
        hidden = model(torch.tensor([[3, 4]])).last_hidden_state
        weights = hidden.softmax(-1)  # <-
    main(sys.argv[1])
    """
    assert one(tmp_path, code, "# <-", "weights") == ["tensor float16 or float32"]


def test_unpacking_a_value_that_may_be_unknown_keeps_what_the_known_options_give(tmp_path: Path) -> None:
    """``model, tok = load(name)`` where ``load`` returns a pair or something unknown: each target
    gets the pair's item, "or unknown" (before, the unknown option made both targets unknown)."""
    code = """
    import sys
    import torch
    import mystery
    def load(name):
        if name == "half":
            return torch.randn(2, 2).half(), "tok"
        return mystery.load(name)
    def main(name):
        out, tok = load(name)  # <-
        return out
    main(sys.argv[1])
    """
    assert one(tmp_path, code, "# <-", "out") == ["tensor float16 (or unknown)"]


def test_a_dtype_test_narrows_the_tested_tensor_in_each_branch(tmp_path: Path) -> None:
    """``if x.dtype == torch.float16: x = x.float()`` on a value that may be half leaves no half
    path: the else branch runs only for the other dtypes (before, the join kept float16 there)."""
    code = """
    import sys
    import torch
    import torch.nn as nn
    def upcast_if_half(scores):
        if scores.dtype != torch.float16:
            return scores
        return scores.float()
    net = nn.Linear(4, 4)
    if sys.argv[1] == "fp16":
        net = net.half()
    weights = upcast_if_half(net(torch.randn(2, 4)))  # <-
    """
    assert one(tmp_path, code, "# <-", "weights") == ["tensor float32"]


def test_a_type_test_on_a_copy_of_a_tensor_narrows_the_tensor(tmp_path: Path) -> None:
    """A conversion helper tests a copy (``checked = value``, or ``value.data``) against the legacy
    half tensor types and casts the original: in the other branch the original is not half."""
    code = """
    import sys
    import torch
    import torch.nn as nn
    HALF = (torch.HalfTensor, torch.cuda.HalfTensor)
    def to_float(value):
        checked = value
        if isinstance(checked, nn.Parameter):
            checked = value.data
        if isinstance(checked, HALF):
            value = value.float()
        return value
    net = nn.Linear(4, 4)
    if sys.argv[1] == "fp16":
        net = net.half()
    out = to_float(net(torch.randn(2, 4)))  # <-
    """
    assert one(tmp_path, code, "# <-", "out") == ["tensor float32"]


def test_a_test_of_a_dtype_kept_in_a_name_narrows_the_tensor_it_came_from(tmp_path: Path) -> None:
    """``dt = gram.dtype`` then ``if dt in (torch.float16, torch.bfloat16): gram = gram.float()``
    (a kernel that upcasts and later casts back): in the other branch ``gram`` is not half, so the
    division with a tiny eps runs in float32 on every path. Not where the tensor is bound again
    between the two statements, nor where the name is bound twice."""
    code = """
    import sys
    import torch
    import torch.nn as nn

    def normalise(gram, eps=1e-15):
        dt = gram.dtype
        if dt in (torch.float16, torch.bfloat16):
            gram = gram.float()
        out = gram / (gram.sum(-1, keepdim=True) + eps)  # <-
        return out.to(dt)

    def rebound(gram, other):
        dt = gram.dtype
        gram = other
        if dt in (torch.float16, torch.bfloat16):
            gram = gram.float()
        return gram  # <-

    net = nn.Linear(4, 4)
    if sys.argv[1] == "fp16":
        net = net.half()
    h = net(torch.randn(2, 4))
    normalise(h @ h.T)
    rebound(h, net(torch.randn(2, 4)))
    """
    assert one(tmp_path, code, "+ eps)  # <-", "gram") == ["tensor float32"]
    assert one(tmp_path, code, "return gram  # <-", "gram") == ["tensor float16 or float32"]


def test_square_under_cuda_autocast_runs_as_pow_in_float32(tmp_path: Path) -> None:
    """``torch.square`` has no kernel of its own: it decomposes into ``pow``, which CUDA autocast
    runs in float32, so a hand-written norm's mean of squares is no AMP203 there. On the CPU, where
    ``pow`` is unlisted, it stays half."""
    code = """
    import torch
    proj = torch.nn.Linear(8, 8)
    x = torch.randn(2, 8)
    with torch.autocast("cuda", dtype=torch.float16):
        h = proj(x)
        var = torch.square(h - h.mean(-1, keepdim=True)).mean(-1)  # <-
    with torch.autocast("cpu", dtype=torch.float16):
        g = proj(x)
        cpu_var = g.square().mean(-1)  # <- cpu
    """
    assert one(tmp_path, code, "mean(-1)  # <-", "var") == ["tensor float32"]
    assert one(tmp_path, code, "# <- cpu", "cpu_var") == ["tensor float16"]


def test_a_copy_made_in_a_nested_function_is_no_alias_of_the_tested_tensor(tmp_path: Path) -> None:
    """Only the function's own ``checked = value`` makes a dtype test on ``checked`` hold for
    ``value``: the same assignment inside a nested function is another variable."""
    code = """
    import sys
    import torch
    import torch.nn as nn
    def keep(value, other):
        def note(value):
            checked = value
            return checked
        checked = other
        if checked.dtype == torch.float16:
            return checked.float()
        return value
    net = nn.Linear(4, 4)
    if sys.argv[1] == "fp16":
        net = net.half()
    out = keep(net(torch.randn(2, 4)), net(torch.randn(2, 4)))  # <-
    """
    assert one(tmp_path, code, "# <-", "out") == ["tensor float16 or float32"]


def test_a_list_of_tensors_appended_by_a_function_stays_local_to_the_call(tmp_path: Path) -> None:
    """Appending a tensor to a module's list inside a function is no registry: a later float32 call
    does not read the half tensor of an earlier call."""
    code = """
    import torch
    SEEN = []
    def remember(x):
        SEEN.append(x * 2)
        return SEEN[-1]
    a = remember(torch.randn(4).half())
    b = remember(torch.randn(4))  # <-
    """
    assert one(tmp_path, code, "# <-", "b") == ["tensor float32"]


def _project_codes(tmp_path: Path) -> List[str]:
    """``relpath:line: CODE`` of each finding of ``amp-lint check`` on the project at ``tmp_path``."""
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                             "--output-format", "json", "."], capture_output=True, text=True, cwd=tmp_path)
    return [f"{Path(f['filename']).resolve().relative_to(tmp_path.resolve()).as_posix()}:{f['location']['row']}: "
            f"{f['code']}" for f in json.loads(result.stdout or "[]")]


def test_a_cast_to_a_dtype_nobody_knows_is_no_evidence_of_half(tmp_path: Path) -> None:
    """``h.to(targets.dtype)`` where ``targets`` is unknown casts to an unknown dtype: the half
    input is no evidence that the result is half (``h.to(device)`` keeps its dtype)."""
    code = """
    import torch
    def loss(targets, device, wanted_dtype):
        h = torch.randn(4).half()
        a = h.to(targets.dtype)
        b = h.to(dtype=wanted_dtype)
        c = h.to(device)
        return a, b, c  # <-
    """
    ctx = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [(c["a"], c["b"], c["c"]) for c in ctx] == [("tensor of unknown dtype", "tensor of unknown dtype",
                                                        "tensor float16")]


def test_a_half_receiver_past_the_context_limit_keeps_its_own_context(tmp_path: Path) -> None:
    """A method called in more contexts than the analysis keeps apart is widened by joining its
    arguments; a half model's call after a sweep of float32 calls is not answered by the float32
    calls' summary (before, the widened float32 result answered it and the softmax was missed)."""
    calls = ", ".join(f"scorer(x, {t / 10})" for t in range(5, 19))
    code = f"""
    import torch
    import torch.nn.functional as F
    from torch import nn
    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 16)
        def forward(self, x, temperature):
            return F.log_softmax(self.proj(x) / temperature, dim=-1)
    scorer = Scorer()
    x = torch.randn(4, 16)
    sweep = [{calls}]
    fast = Scorer().half()
    print(fast(x.half(), 2.0))
    """
    assert _codes(tmp_path, code) == ["9: AMP201"]


def test_a_tensor_method_of_what_may_be_a_model_is_not_a_submodule(tmp_path: Path) -> None:
    """``x.float()`` of an unknown ``x`` may be a model or a tensor; ``.pow`` of it is no submodule
    of a model (whose output would take the autocast dtype): the mean of squares of the float32
    tensor is float32 inside autocast (before: a false AMP203)."""
    code = """
    import torch
    from torch import nn
    from data import load_features
    class ScaleNorm(nn.Module):
        def _normalise(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)  # <-
        def forward(self, x):
            return self._normalise(x.float()).type_as(x)
    def evaluate(norm, features):
        with torch.autocast("cuda", dtype=torch.float16):
            return norm(features)
    print(evaluate(ScaleNorm(), load_features()))
    """
    assert _codes(tmp_path, code) == []
    assert one(tmp_path, code, "# <-", "x.pow(2).mean(-1, keepdim=True)") == ["tensor float32 (or unknown)"]


def test_a_call_its_saturated_widened_context_does_not_cover_gets_a_context_of_its_own(tmp_path: Path) -> None:
    """Past the widening limit, a call whose arguments the widened context does not cover is analysed
    in its own context (while the function has some left): the last config's dtype is float16, not
    the widened float32 configs' dtype (before: their summary answered) nor unknown."""
    classes = "\n".join(f"class Config{i}:\n    dtype = torch.float32" for i in range(13))
    calls = "\n".join(f"d{i} = pick(Config{i}())" for i in range(13))
    code = f"""
import torch
def pick(config):
    return config.dtype
{classes}
class Config13:
    dtype = torch.float16
{calls}
d13 = pick(Config13())
x = torch.randn(4).to(d13)  # <-
"""
    assert one(tmp_path, code, "# <-", "d13") == ["dtype float16"]


def _codes_of_files_in_order(tmp_path: Path, files: Dict[str, str], order: List[str]) -> List[str]:
    """``path:line: CODE`` of ``amp-lint check`` given the files of a project as paths in ``order``."""
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache",
                             "--output-format", "json", *order], capture_output=True, text=True, cwd=tmp_path)
    assert "internal error" not in result.stderr, result.stderr
    return sorted(f"{Path(f['filename']).name}:{f['location']['row']}: {f['code']}"
                  for f in json.loads(result.stdout or "[]"))


def _helper_called_from_everywhere() -> Dict[str, str]:
    """A helper called with forty kinds of record by one script and once with half scores by another."""
    kinds = "\n".join(f"class Record{i}:\n    pass\n" for i in range(40))
    calls = "\n".join(f"weights{i} = pooling.attend(Record{i}())" for i in range(40))
    return {
        "pooling.py": """
            import torch
            def attend(scores):
                return torch.softmax(scores, dim=-1)
            """,
        "a_sweep.py": f"import pooling\n\n{kinds}\n{calls}\n",
        "z_half.py": """
            import torch
            import pooling
            scores = torch.randn(4, 8).half()
            weights = pooling.attend(scores)
            """,
    }


def test_findings_do_not_depend_on_the_order_the_files_are_given_in(tmp_path: Path) -> None:
    """The modules run in one order, whatever order the files were named in: which calls reach a
    helper first decides how its contexts widen (before, naming the half script first found the
    softmax and naming it last did not)."""
    files = _helper_called_from_everywhere()
    first = _codes_of_files_in_order(tmp_path, files, ["z_half.py", "a_sweep.py", "pooling.py"])
    last = _codes_of_files_in_order(tmp_path, files, ["a_sweep.py", "pooling.py", "z_half.py"])
    assert first == last


def test_a_model_made_half_under_a_flag_is_no_model_where_the_flag_is_false(tmp_path: Path) -> None:
    """Where ``use_apex`` is false, the model apex initialised under ``if use_apex:`` is not there:
    only the float32 model of the other path is (before, it stayed as a model of unknown dtype whose
    patched forward still cast its inputs to half)."""
    code = """
    import sys
    import torch
    from apex import amp
    from torch import nn
    def fit(use_apex: bool):
        net = nn.Linear(16, 4).cuda()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        if use_apex:
            net, optimizer = amp.initialize(net, optimizer, opt_level="O2")
        if not use_apex:
            scores = net(torch.randn(2, 16))  # <-
        return net
    fit(sys.argv[1] == "apex")
    """
    assert one(tmp_path, code, "# <-", "net") == ["module torch.nn.Linear with float32 parameters"]


def test_a_layer_whose_parameter_data_is_set_to_half_computes_in_half(tmp_path: Path) -> None:
    """``block.proj.weight.data = block.proj.weight.data.half()``: the layer owning the parameter
    now holds half weights and computes in half (a store into a field is a weak update: float32 stays
    possible). Before, the store was ignored."""
    code = """
    import torch
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
        def forward(self, x):
            return self.proj(x)
    block = Block()
    block.proj.weight.data = block.proj.weight.data.half()
    out = block.proj(torch.randn(2, 8).half())  # <-
    """
    assert one(tmp_path, code, "# <-", "block.proj") == ["module torch.nn.Linear with float16 or float32 parameters"]


def test_a_converter_run_by_module_apply_casts_the_model(tmp_path: Path) -> None:
    """``net.apply(to_fp16)`` with a converter that casts every layer it is given leaves the model
    computing in half, as ``net.half()`` would; the evidence names the apply call. A converter that
    only initialises weights casts nothing, and one that converts only some kinds of layer
    (``if isinstance(layer, nn.Linear):``) casts only those. (Before, apply's effects were lost.)"""
    code = """
    import torch
    import torch.nn as nn
    def to_fp16(layer):
        layer.weight.data = layer.weight.data.to(torch.float16)
    def linear_to_fp16(layer):
        if isinstance(layer, nn.Linear):
            layer.half()
    def init_weights(layer):
        if isinstance(layer, nn.Linear):
            layer.weight.data.normal_(0.0, 0.02)
    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.fc(x)
    def make(half):
        net = Scorer()
        net.apply(init_weights)
        net.apply(linear_to_fp16)
        if half:
            net.apply(to_fp16)
        return net
    net = make(True)
    feats = torch.randn(3, 8)
    scores = net(feats.to(net.fc.weight.dtype))  # <-
    """
    assert one(tmp_path, code, "# <-", "net") == ["module Scorer with float16 parameters"]
    net = next(v for v in explain_json(tmp_path, "m.py", "# <-")[0]["values"] if v["expression"] == "net")
    assert any("`net.apply(to_fp16)`" in because for because in net["because"]), net
    assert one(tmp_path, code.replace("make(True)", "make(False)"), "# <-", "net") == [
        "module Scorer with float16 parameters in its Linear layers"]
    assert one(tmp_path, code.replace("make(True)", "make(False)").replace("net.apply(linear_to_fp16)", ""),
               "# <-", "net") == ["module Scorer with float32 parameters"]


def test_a_converter_of_some_kinds_of_layer_casts_only_those(tmp_path: Path) -> None:
    """A ``model.apply`` converter that casts the weights of linear and conv layers only (CLIP's
    ``convert_weights`` shape): those layers, and the containers and user modules holding them,
    compute in half; a LayerNorm, an embedding and a module's own ``nn.Parameter`` keep float32.
    The model's parameters are trained without master weights (AMP101 at the apply call), and the
    loss on its half logits is reported. (Before, a converter that cast only some kinds of layer
    cast nothing.)"""
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def weights_to_half(mod):
        if not isinstance(mod, (nn.Conv1d, nn.Linear)):
            return
        mod.weight.data = mod.weight.data.half()
        if mod.bias is not None:
            mod.bias.data = mod.bias.data.half()

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(nn.Linear(32, 32), nn.GELU())
            self.ln = nn.LayerNorm(32)
            self.temperature = nn.Parameter(torch.ones([]))
            self.out = nn.Linear(32, 5)

        def forward(self, feats):
            normed = self.ln(feats)  # <- norm
            hidden = self.blocks(normed.to(self.out.weight.dtype))  # <- blocks
            scale = self.temperature.exp()  # <- own parameter
            return self.out(hidden) * scale.item()

    clf = Classifier()
    clf.apply(weights_to_half)
    opt = torch.optim.SGD(clf.parameters(), lr=0.1)
    logits = clf(torch.randn(4, 32))  # <- call
    loss = F.cross_entropy(logits, torch.randint(0, 5, (4,)))  # <- loss
    loss.backward()
    opt.step()
    """
    # the forward runs twice: called by the script, and as the half model's own (inputs unknown)
    assert set(one(tmp_path, code, "# <- norm", "self.ln")) == {"module torch.nn.LayerNorm with float32 parameters"}
    assert set(one(tmp_path, code, "# <- norm", "normed")) == {"tensor float32", "tensor float32 (or unknown)"}
    assert set(one(tmp_path, code, "# <- blocks", "self.blocks")) == {
        "module torch.nn.Sequential with float16 parameters in its Conv1d, Linear layers"}
    assert set(one(tmp_path, code, "# <- blocks", "hidden")) == {"tensor float16"}
    assert set(one(tmp_path, code, "# <- own parameter", "self.temperature")) == {"tensor float32, 0-dim"}
    assert one(tmp_path, code, "# <- call", "clf") == [
        "module Classifier with float16 parameters in its Conv1d, Linear layers"]
    assert one(tmp_path, code, "# <- loss", "logits") == ["tensor float16"]
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, 'clf.apply(')}: AMP101" in codes, codes
    assert f"{_line_of(code, '# <- loss')}: AMP202" in codes, codes
    # converted on one path only: the join keeps which layers the cast may have reached
    flagged = code.replace("clf.apply(weights_to_half)", "if sys.argv[1:]:\n        clf.apply(weights_to_half)")
    flagged = flagged.replace("import torch\n", "import sys\n    import torch\n", 1)
    assert one(tmp_path, flagged, "# <- call", "clf") == [
        "module Classifier with float16 or float32 parameters in its Conv1d, Linear layers"]
    assert set(one(tmp_path, flagged, "# <- own parameter", "self.temperature")) == {"tensor float32, 0-dim"}


def test_a_function_picked_by_name_from_many_is_each_of_them(tmp_path: Path) -> None:
    """A dispatcher returning one of seven functions (``get_activation_fn(name)`` style) gives the
    union of them, and calling it runs each: the project function among them sees the half
    input. (Before, a union of more than six values became unknown.)"""
    code = """
    import sys
    import torch
    import torch.nn as nn
    def squared_mean(x):
        return x.pow(2).mean(-1)
    def first_token(x):
        return x[..., 0]
    def pick_pool(kind):
        if kind == "max":
            return torch.amax
        elif kind == "mean":
            return torch.mean
        elif kind == "sum":
            return torch.sum
        elif kind == "lse":
            return torch.logsumexp
        elif kind == "first":
            return first_token
        elif kind == "norm":
            return torch.linalg.vector_norm
        elif kind == "sq":
            return squared_mean
        raise ValueError(kind)
    proj = nn.Linear(64, 64).half()
    pool = pick_pool(sys.argv[1])  # <-
    pooled = pool(proj(torch.randn(4, 64, dtype=torch.float16)))
    """
    assert one(tmp_path, code, "# <-", "pool") == [
        "ext | ext | ext | ext | funcval | ext | funcval"]
    assert "5: AMP203" in _codes(tmp_path, code)


def test_a_dtype_test_on_a_model_narrows_its_parameters(tmp_path: Path) -> None:
    """``if model.dtype != torch.float32: model = model.to(dtype=torch.float32)`` leaves a float32
    model on both paths: in the else branch the test says its parameters are float32 (before, the
    half it might have been loaded in stayed there)."""
    code = """
    import sys
    import torch
    from transformers import AutoModel
    dtype = torch.float16 if sys.argv[1] == "fp16" else torch.float32
    encoder = AutoModel.from_pretrained(sys.argv[2], torch_dtype=dtype)
    if encoder.dtype != torch.float32:
        encoder = encoder.to(dtype=torch.float32)
    encoder  # <-
    """
    assert one(tmp_path, code, "# <-", "encoder") == ["module transformers.AutoModel with float32 parameters"]


# -- other libraries' tensor functions, namedtuples, imports inside packages -----------------------
def test_einops_reshapes_keep_the_dtype_and_its_layer_runs_in_a_sequential(tmp_path: Path) -> None:
    """``rearrange``/``repeat`` reorder a tensor in its own dtype, and ``einops.einsum`` is torch's
    einsum with the pattern last (before, each returned an unknown value, hiding the half scores)."""
    code = """
    import torch
    import torch.nn as nn
    import einops
    from einops import rearrange, repeat
    from einops.layers.torch import Rearrange
    q = torch.randn(2, 16, 64, dtype=torch.float16)
    heads = rearrange(q, "b n (h d) -> b h n d", h=4)
    tiled = repeat(q, "b n d -> b r n d", r=2)
    scores = einops.einsum(heads, heads, "b h i d, b h j d -> b h i j")
    patches = nn.Sequential(Rearrange("b c h w -> b (h w) c"), nn.LayerNorm(8)).half()
    tokens = patches(torch.randn(1, 8, 4, 4).half())
    heads, tiled, scores, tokens  # <-
    """
    found = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["heads"] for ctx in found] == ["tensor float16"]
    assert [ctx["tiled"] for ctx in found] == ["tensor float16"]
    assert [ctx["scores"] for ctx in found] == ["tensor float16"]
    assert [ctx["tokens"] for ctx in found] == ["tensor float16"]


def test_a_namedtuple_output_keeps_its_fields(tmp_path: Path) -> None:
    code = """
    import collections
    import torch
    import torch.nn as nn

    Output = collections.namedtuple("Output", "logits hidden")

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.out = nn.Linear(16, 100)

        def forward(self, h):
            return Output(logits=self.out(h), hidden=h)

    head = Head().half()
    result = head(torch.randn(4, 16).half())
    logits = result.logits  # <-
    first, second = result
    """
    assert one(tmp_path, code, "# <-", "logits") == ["tensor float16"]
    assert one(tmp_path, code, "first, second", "first") == ["tensor float16"]


def test_a_layer_with_half_weights_outputs_half_whatever_its_input_is_known_as(tmp_path: Path) -> None:
    """Outside autocast a layer's input must match its weights: weights known to be float16 make
    the output float16 even where the input is a union the analysis cannot narrow."""
    code = """
    import sys
    import torch
    import torch.nn as nn
    head = nn.Linear(64, 1000, dtype=torch.float16)
    h = torch.randn(2, 64, dtype=torch.float16) if len(sys.argv) > 1 else [1.0] * 64
    logits = head(h)  # <-
    """
    assert one(tmp_path, code, "# <-", "logits") == ["tensor float16"]


def test_a_package_module_imports_the_library_not_a_sibling_of_the_same_name(tmp_path: Path) -> None:
    """Python 3 has no implicit relative imports: ``import torch`` in ``pkg/sampling.py`` is the
    library even beside ``pkg/torch.py`` (a helpers module); a script in a plain folder still
    imports its siblings first."""
    files = {
        "pkg/__init__.py": "",
        "pkg/torch.py": """
        import torch
        def autocast_off():
            return torch.autocast("cuda", enabled=False)
        """,
        "pkg/sampling.py": """
        import torch
        def sample(logits):
            probs = torch.softmax(logits, dim=-1)  # <-
            return torch.multinomial(probs, 1)
        sample(torch.randn(2, 50).half())
        """,
        "tools/helpers.py": "SCALE = 2\n",
        "tools/run.py": """
        import helpers
        factor = helpers.SCALE  # <-
        """,
    }
    assert value_of(tmp_path, files, "pkg/sampling.py", "# <-", "probs") == ["tensor float16"]
    assert value_of(tmp_path, files, "tools/run.py", "# <-", "factor") == ["scalar 2"]


def test_functools_partial_calls_its_function_with_the_bound_arguments(tmp_path: Path) -> None:
    """``partial(torch.autocast, device_type=..., dtype=...)`` used as ``with amp_autocast():`` is an
    autocast region, and ``partial(FSDP, mixed_precision=...)(model)`` wraps the model as FSDP
    would (before, a partial object was unknown, and so was everything it made)."""
    code = """
    from contextlib import suppress
    from functools import partial
    import sys
    import torch
    import torch.nn as nn
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision

    amp_autocast = partial(torch.autocast, device_type="cuda", dtype=torch.float16)
    wrap = partial(FSDP, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16), use_orig_params=True)
    net = wrap(nn.Linear(8, 8))
    with amp_autocast():
        y = nn.Linear(8, 8)(torch.randn(2, 8))
    y, net  # <-
    """
    found = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["y"] for ctx in found] == ["tensor float16"]
    assert [ctx["net"] for ctx in found] == ["module torch.nn.Linear with bfloat16 parameters"]


def test_a_default_that_is_a_class_or_a_partial_is_what_the_def_saw(tmp_path: Path) -> None:
    """``norm_layer=partial(nn.LayerNorm, eps=1e-6)`` and ``act=nn.GELU`` defaults are the objects
    their expressions were when the ``def`` ran (before, a default that is not a literal was unknown,
    and so was every layer built from it)."""
    code = """
    from functools import partial
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, dim, norm_layer=partial(nn.LayerNorm, eps=1e-6), act=nn.GELU):
            super().__init__()
            self.norm = norm_layer(dim)  # <-
            self.act = act()

    Block(64)
    """
    found = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["self.norm"] for ctx in found] == ["module torch.nn.LayerNorm with float32 parameters"]


def test_a_typing_named_tuple_class_is_a_tuple_with_named_fields(tmp_path: Path) -> None:
    code = """
    from typing import NamedTuple, Optional
    import torch

    class Scores(NamedTuple):
        logits: torch.Tensor
        mask: Optional[torch.Tensor] = None

    out = Scores(torch.randn(2, 5).half(), mask=torch.ones(2, 5, dtype=torch.bool))
    logits, mask = out.logits, out[1]  # <-
    """
    found = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["logits"] for ctx in found] == ["tensor float16"]
    assert [ctx["mask"] for ctx in found] == ["tensor bool"]


def test_what_no_grad_computes_carries_no_half_graph_to_a_later_backward(tmp_path: Path) -> None:
    """Features computed under ``torch.inference_mode()`` and fp16 autocast, then upcast and fed to
    an fp32 probe: the probe's loss has no gradient path through half ops (before, AMP102 asked for
    a GradScaler). Without the no-grad block the backward does run through the half features."""
    code = """
    import torch
    import torch.nn as nn
    backbone = nn.Linear(32, 32).cuda()
    probe = nn.Linear(32, 10).cuda()
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)

    @torch.no_grad()
    def embed(x):
        with torch.autocast("cuda", dtype=torch.float16):
            return backbone(x)

    for step in range(10):
        x = torch.randn(8, 32, device="cuda")
        with torch.inference_mode():
            with torch.autocast("cuda", dtype=torch.float16):
                feats = backbone(x)
        loss = nn.functional.cross_entropy(probe(feats.float()), torch.zeros(8, dtype=torch.long, device="cuda"))
        loss.backward()  # <-
        loss2 = nn.functional.cross_entropy(probe(embed(x).float()), torch.zeros(8, dtype=torch.long, device="cuda"))
        loss2.backward()
        opt.step()
    """
    assert "AMP102" not in " ".join(_codes(tmp_path, code))
    assert "AMP102" in " ".join(_codes(tmp_path, code.replace("with torch.inference_mode():", "if True:")))


def test_an_int_switch_of_argparse_is_chosen_at_run_time(tmp_path: Path) -> None:
    """``--amp`` with ``type=int, default=0`` (a 0/1 switch): its default is not its value, so
    ``autocast(enabled=bool(args.amp))`` is a region that may be on, not one that is off."""
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=768)
    args = parser.parse_args()
    model = torch.nn.Linear(args.hidden, args.hidden)
    with torch.autocast("cuda", dtype=torch.float16, enabled=bool(args.amp)):
        out = model(torch.randn(4, args.hidden))  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert any(ctx.get("out", "").startswith("tensor float16") for ctx in values), values
    assert one(tmp_path, code, "# <-", "args.hidden") == ["scalar 768"] * len(values)


def test_a_loop_over_the_parameters_that_casts_each_casts_the_module(tmp_path: Path) -> None:
    """``for p in model.parameters(): p.data = p.data.half()`` (and over ``named_parameters()``) casts
    the module as ``model.half()`` would; a store under a test in the loop (``if "norm" not in
    name:``) casts only some parameters and is not read as a cast of the module."""
    code = """
    import torch
    a = torch.nn.Linear(8, 8)
    for p in a.parameters():
        p.data = p.data.half()
    b = torch.nn.Linear(8, 8)
    for name, p in b.named_parameters():
        p.data = p.data.to(torch.float16)
    c = torch.nn.Linear(8, 8)
    for name, p in c.named_parameters():
        if "bias" not in name:
            p.data = p.data.half()
    d = torch.nn.Linear(8, 8)
    for p in d.parameters():
        p.requires_grad = False
    print(a, b, c, d)  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["a"] for ctx in values] == ["module torch.nn.Linear with float16 parameters"]
    assert [ctx["b"] for ctx in values] == ["module torch.nn.Linear with float16 parameters"]
    assert [ctx["c"] for ctx in values] == ["module torch.nn.Linear with float32 parameters"]
    assert [ctx["d"] for ctx in values] == ["module torch.nn.Linear with float32 parameters"]


def test_a_loop_over_the_layers_that_casts_each_casts_the_module(tmp_path: Path) -> None:
    """``for m in model.modules(): m.half()`` casts the model as ``model.apply`` of the loop's body
    would, also where the body keeps norms in float32 by a test of the project's own norm class
    (a layer of another kind is never one), and inside ``__init__`` on ``self``; ``self.half()`` in
    ``__init__`` builds the instance cast. A loop that casts only under a test nobody decides, or
    that breaks out, casts nothing."""
    code = """
    import torch
    import torch.nn as nn

    class GhostNorm(nn.BatchNorm1d):
        pass

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 16)
            self.norm = GhostNorm(16)
            for layer in self.modules():
                if isinstance(layer, GhostNorm):
                    layer.float()
                else:
                    layer.half()

    class Halved(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 16)
            self.half()

    a = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
    for m in a.modules():
        m.half()
    b = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
    for m in b.children():
        if m.training:
            m.half()
    c = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
    for m in c.modules():
        m.half()
        break
    t = Tower()
    h = Halved()
    print(a, b, c, t, h)  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["a"] for ctx in values] == ["module torch.nn.Sequential with float16 parameters"]
    assert [ctx["b"] for ctx in values] == ["module torch.nn.Sequential with float32 parameters"]
    assert [ctx["c"] for ctx in values] == ["module torch.nn.Sequential with float32 parameters"]
    [tower] = [ctx["t"] for ctx in values]  # every kind of layer but the norm the test keeps float32
    assert tower.startswith("module Tower with float16 parameters in its ") and tower.endswith(" layers")
    kinds = tower[len("module Tower with float16 parameters in its "):-len(" layers")].split(", ")
    assert "Linear" in kinds and "BatchNorm2d" in kinds and "BatchNorm1d" not in kinds
    assert [ctx["h"] for ctx in values] == ["module Halved with float16 parameters"]
    trained = code.replace("print(a, b, c, t, h)  # <-", """
    opt = torch.optim.SGD(t.parameters(), lr=0.1)
    loss = t.proj(torch.randn(4, 16)).pow(2).mean()
    loss.backward()
    opt.step()
    """)
    assert _codes_in_project(tmp_path, {"m.py": trained}, "AMP101") == ["m.py:16: AMP101"]


def test_a_constructor_that_casts_its_argument_in_place_casts_the_callers_model(tmp_path: Path) -> None:
    """``__init__`` casting a module it is given (``inner.half()``) changes the caller's module, as
    any function's in-place cast of an argument does, while what ``__init__`` does to ``self`` goes
    to the instance built."""
    code = """
    import torch.nn as nn

    class Wrapper(nn.Module):
        def __init__(self, inner):
            super().__init__()
            inner.half()
            self.inner = inner

    inner = nn.Linear(8, 8)
    w = Wrapper(inner)
    print(inner, w)  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["inner"] for ctx in values] == ["module torch.nn.Linear with float16 parameters"]
    assert [ctx["w"] for ctx in values] == ["module Wrapper with float32 parameters"]


def test_an_entry_point_nobody_calls_runs_the_factory_its_parameter_defaults_to(tmp_path: Path) -> None:
    """A library's entry point that no code of the project calls (``def fit(..., build=build_half)``)
    is analysed with unknown arguments, except a parameter whose default is a function or class of
    the project: a caller who leaves it out runs that, so the model it builds is trained there."""
    files = {
        "kit/__init__.py": "",
        "kit/nets.py": """
        import torch.nn as nn

        def build_half():
            net = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))
            return net.half()
        """,
        "kit/loop.py": """
        import torch
        import torch.nn.functional as F
        from kit.nets import build_half

        def fit(batches, lr=0.1, build=build_half):
            model = build()
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            for x, y in batches:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
        """,
    }
    assert _codes_in_project(tmp_path, files, "AMP101,AMP202") == ["kit/loop.py:9: AMP202", "kit/nets.py:5: AMP101"]


def test_a_loop_else_runs_only_when_the_loop_ends_without_break(tmp_path: Path) -> None:
    """``for ...: if found: net = ...; break`` then ``else: raise`` (a lookup that fails loudly): the
    code after the loop is reached by the breaks. Before, the ``else`` ran after every exit, so a
    raising ``else`` made the rest of the function unreachable and its casts unseen."""
    code = """
    import torch
    def build(names):
        for name in names:
            if name.startswith("tiny"):
                net = torch.nn.Linear(8, 8)
                break
        else:
            raise ValueError("no model")
        net.half()
        return net
    def count(items):
        n = 0
        for item in items:
            n = torch.zeros(2)
        else:
            n = torch.zeros(2, dtype=torch.int64)
        return n
    net = build(["tiny"])
    n = count([1, 2])
    print(net, n)  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["net"] for ctx in values] == ["module torch.nn.Linear with float16 parameters"]
    assert [ctx["n"] for ctx in values] == ["tensor int64"]  # a loop without break always runs its else


def test_a_converter_applied_to_a_model_nobody_knows_casts_its_layers(tmp_path: Path) -> None:
    """``model.apply(to_half)`` on a model from a factory the analysis cannot see (a class looked up
    by name in a module imported at run time): a converter that casts the layers it is given makes
    that model half in those layers, and a model trained after it is a half model (AMP101). Before,
    the converter's cast was lost on an unknown receiver; ``model.half()`` on one was already seen."""
    code = """
    import importlib
    import torch
    from torch import nn
    def to_half(layer):
        if isinstance(layer, (nn.Linear, nn.Conv1d)):
            layer.weight.data = layer.weight.data.half()
    def load(kind):
        return getattr(importlib.import_module("zoo." + kind), "Model")()
    model = load("small")
    model.apply(to_half)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(model)  # <-
    for batch in []:
        loss = model(batch).sum()
        loss.backward()
        opt.step()
    """
    assert one(tmp_path, code, "# <-", "model") == ["module a model with float16 parameters in its Conv1d, Linear layers"]
    assert "10: AMP101" in _codes(tmp_path, code)  # at the apply call
    # what such a model returns is not known: its float32 embeddings may feed the half layers
    outputs = code.replace("print(model)  # <-", "a, b = model(x), model.encoder(x)  # <-")
    assert one(tmp_path, outputs, "# <-", "a") == ["unknown"]
    assert one(tmp_path, outputs, "# <-", "b") == ["unknown"]
    every_layer = outputs.replace("if isinstance(layer, (nn.Linear, nn.Conv1d)):", "if True:")
    assert one(tmp_path, every_layer, "# <-", "a")[0].startswith("tensor float16")
    assert one(tmp_path, every_layer, "# <-", "b")[0].startswith("tensor float16")
    initialiser = code.replace("layer.weight.data = layer.weight.data.half()", "layer.weight.data.normal_(0.0, 0.02)")
    assert one(tmp_path, initialiser, "# <-", "model") == ["unknown"]
    assert not [c for c in _codes(tmp_path, initialiser) if c.endswith("AMP101")]


def test_a_helper_that_casts_the_model_it_is_given_is_reported_at_each_call(tmp_path: Path) -> None:
    """``to_half(model)``, a function of the project casting its argument, is the caller's cast: AMP101
    is reported at the call that casts the trained model, not inside the helper, and the call that
    casts a model only evaluated is not reported. The message names the model and the helper, and the
    fix is withheld with a reason the user can act on. (Before, one finding sat on the helper's own
    ``model.half()``, whichever call trained.)"""
    code = """
    import torch
    def to_half(net):
        net.half()
    teacher = torch.nn.Linear(8, 8)
    to_half(teacher)  # teacher
    student = torch.nn.Linear(8, 8)
    to_half(student)  # student
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for x in []:
        with torch.no_grad():
            target = teacher(x)
        loss = (student(x) - target).float().pow(2).mean()
        loss.backward()
        opt.step()
    """
    codes = [c for c in _codes(tmp_path, code) if c.endswith("AMP101")]
    assert codes == [f"{_line_of(code, '# student')}: AMP101"]
    (tmp_path / "m.py").write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select", "AMP101",
                          str(tmp_path / "m.py")], capture_output=True, text=True).stdout
    assert "`student` is cast to float16 by `to_half`" in out, out
    assert "the model is cast inside `to_half`" in out, out


def test_a_model_cast_at_several_places_keeps_each_cast(tmp_path: Path) -> None:
    """A model made half on either of two branches (each its own cast), then cast again under a
    third test, and trained: every cast is a cast of the trained parameters, so AMP101 reports each
    of them. Before, a join of two half models of one class kept one cast (the last path's) and the
    others went unreported."""
    code = """
    import torch
    def train(kind, small, bf16, batches):
        if kind == "wide":
            model = torch.nn.Linear(64, 64).half()  # wide
        else:
            model = torch.nn.Linear(64, 64).to(torch.float16)  # narrow
        if bf16:
            model.bfloat16()  # bf16
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in batches:
            loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()
    """
    codes = [c for c in _codes(tmp_path, code) if c.endswith("AMP101")]
    assert codes == [f"{_line_of(code, marker)}: AMP101" for marker in ("# wide", "# narrow", "# bf16")]
    # a cast on a path that freezes the model (``requires_grad_(False)``) makes no trained parameter half
    frozen = """
    import torch
    def train(tune_encoder, batches):
        encoder = torch.nn.Linear(64, 64)
        if tune_encoder:
            encoder.half()  # tuned
        else:
            encoder.half()  # frozen
            encoder.requires_grad_(False)
        opt = torch.optim.SGD(encoder.parameters(), lr=0.1)  # steps nothing where it is frozen
        for x in batches:
            loss = encoder(x).float().pow(2).mean()
            loss.backward()
            opt.step()
    """
    codes = [c for c in _codes(tmp_path, frozen) if c.endswith("AMP101")]
    assert codes == [f"{_line_of(frozen, '# tuned')}: AMP101"]


def test_a_module_dict_names_its_children(tmp_path: Path) -> None:
    """``nn.ModuleDict({"encoder": ..., "head": ...})`` (nanoGPT's ``self.transformer``, a student /
    teacher dict): ``d.head`` and ``d["head"]`` are that child, following the dict's cast, and its
    ``keys()`` / ``items()`` name them. Before, a child read by name was unknown, so nothing the
    model computed through it was seen."""
    code = """
    import torch
    from torch import nn
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.parts = nn.ModuleDict({"encoder": nn.Linear(8, 8), "head": nn.Embedding(10, 8)})
        def forward(self, x):
            return self.parts.encoder(x), self.parts["head"]
    tower = Tower().half()
    h, head = tower(torch.randn(2, 8).half())
    names = list(tower.parts.keys())
    print(h, head, names)  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["h"] for ctx in values] == ["tensor float16"]
    assert [ctx["head"] for ctx in values] == ["module torch.nn.Embedding with float16 parameters"]


def test_a_loop_over_a_module_dicts_items_runs_once_per_child(tmp_path: Path) -> None:
    """``for k, m in self.nets.items(): self.nets[k] = wrap(m)`` replaces each child by its wrapped
    self (FSDP with a float16 ``MixedPrecision`` here): a loop over a few known items that hold
    modules runs its body once per item, and a store under a key replaces that child. Before, the
    loop joined the children (one unknown key) and the store was lost, so the children stayed
    float32 and the float16 loss went unseen."""
    code = """
    import torch
    from torch import nn
    import torch.nn.functional as F
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.nets = nn.ModuleDict({"body": nn.Linear(8, 8), "proj": nn.Linear(8, 4)})
        def shard(self):
            policy = MixedPrecision(param_dtype=torch.float16)
            for k, m in self.nets.items():
                self.nets[k] = FSDP(m, mixed_precision=policy)
        def forward(self, x):
            logits = self.nets.proj(self.nets.body(x))
            return F.log_softmax(logits, dim=-1)  # <-
    pair = Pair()
    pair.shard()
    out = pair(torch.randn(2, 8))
    """
    assert one(tmp_path, code, "# <-", "logits")[0].startswith("tensor float16")
    assert f"{_line_of(code, '# <-')}: AMP201" in _codes(tmp_path, code)


def test_explain_names_every_place_a_model_was_cast(tmp_path: Path) -> None:
    """``amp-lint explain`` gives each cast a model carries as evidence (the first, then the others
    joined into it), not only one, and no call path as a reason where the value has no origin."""
    code = """
    import torch
    def build(wide, bf16):
        if wide:
            model = torch.nn.Linear(4, 4).half()
        else:
            model = torch.nn.Linear(4, 4).to(torch.float16)
        if bf16:
            model.bfloat16()
        print(model)  # <-
    """
    contexts = explain_json(tmp_path, "m.py", "# <-", code)
    model = next(v for v in contexts[0]["values"] if v["expression"] == "model")
    lines = sorted(int(because.split(":")[1]) for because in model["because"])
    assert lines == [_line_of(code, ".half()"), _line_of(code, "to(torch.float16)"), _line_of(code, "bfloat16()")]
    picked = """
    import torch
    def pick(name):
        dtype = {"half": torch.float16, "full": torch.float32}[name]
        return dtype  # <-
    pick(input())
    """
    contexts = explain_json(tmp_path, "m.py", "# <-", picked)
    dtype = next(v for v in contexts[0]["values"] if v["expression"] == "dtype")
    assert dtype["value"] == "dtype float16 or float32" and dtype["because"] == []  # not "m.py:5: calls `pick`"


def test_an_optimizer_over_parameters_joined_from_two_casts_reports_each_cast(tmp_path: Path) -> None:
    """Parameters filtered out of ``list(model.named_parameters())`` by a comprehension are one joined
    tensor: where the model is one of two models, each made half at its own place, both casts reach
    the optimizer and each is reported (AMP101). Before, the joined tensor kept one origin and the
    other cast went unseen."""
    code = """
    import torch
    from torch import nn
    def shrink(net):
        net.half()
    def make(kind):
        if kind == "wide":
            net = nn.Sequential(nn.Linear(8, 32), nn.Linear(32, 8))
            net = net.to(torch.float16)  # wide
        else:
            net = nn.Sequential(nn.Linear(8, 8))
            shrink(net)  # narrow
        return net
    net = make(input())
    pairs = list(net.named_parameters())
    weights = [w for name, w in pairs if "bias" not in name and w.requires_grad]
    opt = torch.optim.SGD([{"params": weights}], lr=0.1)
    for x in []:
        net(x).float().sum().backward()
        opt.step()
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, '# wide')}: AMP101" in codes
    assert f"{_line_of(code, '# narrow')}: AMP101" in codes


def test_a_model_of_a_class_nobody_knows_cast_under_a_flag_keeps_the_flag(tmp_path: Path) -> None:
    """``net = registry_lookup(name)()`` (a class nobody knows) then ``if precision == "fp16":
    to_half(net)``: the cast holds under the test, so a GradScaler made only under another value of
    the same flag does not meet half gradients (no AMP106), and AMP101 says when. Before, a model of
    unknown class gave the cast no condition: AMP106 was reported on the scaler of the amp mode."""
    code = """
    import importlib
    import torch
    def to_half(net):
        def cast(layer):
            if isinstance(layer, torch.nn.Linear):
                layer.weight.data = layer.weight.data.half()
        net.apply(cast)
    def make(name, precision):
        net = getattr(importlib.import_module("zoo"), name)()
        if precision == "fp16":
            to_half(net)  # cast
        return net
    precision = input()
    net = make("Tower", precision)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler() if precision == "amp" else None  # scaler
    for x in []:
        loss = net(x).float().sum()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, '# cast')}: AMP101" in codes
    assert not [c for c in codes if c.endswith("AMP106")]
    (tmp_path / "m.py").write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP101", str(tmp_path / "m.py")], capture_output=True, text=True).stdout
    assert 'when `precision == "fp16"`' in text


def test_a_converter_casts_the_parameters_it_names_besides_its_layers(tmp_path: Path) -> None:
    """A converter run by ``model.apply`` that casts linear layers and, by name, a module's own
    parameters (``for key in ("readout", ...): getattr(layer, key)``, then ``.data = ....half()``)
    leaves those parameters half too: ``h @ self.readout`` is float16 and its softmax is reported.
    Before, the named parameter stayed float32 and the product was float16 or float32."""
    code = """
    import torch
    from torch import nn
    import torch.nn.functional as F
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.readout = nn.Parameter(torch.randn(8, 4))
        def forward(self, x):
            h = self.fc(x)
            return F.softmax(h @ self.readout, dim=-1)  # <-
    def shrink(net):
        def visit(layer):
            if isinstance(layer, nn.Linear):
                layer.weight.data = layer.weight.data.half()
            for key in ("readout", "temperature"):
                value = getattr(layer, key, None)
                if value is not None:
                    value.data = value.data.half()
        net.apply(visit)
    enc = Encoder()
    shrink(enc)
    out = enc(torch.randn(2, 8).half())
    """
    assert one(tmp_path, code, "# <-", "h @ self.readout")[0] == "tensor float16"
    assert f"{_line_of(code, '# <-')}: AMP201" in _codes(tmp_path, code)


def test_freezing_a_value_that_may_be_a_model_or_a_tensor_keeps_the_model_frozen(tmp_path: Path) -> None:
    """``enc.requires_grad_(False)`` where ``enc`` (from a loader nobody sees, cast by ``.to(dtype)``)
    may be a model or a tensor: the model's option is frozen, and the tensor's option (which leaves
    the name alone) does not undo it. So the cast on the frozen path is not reported as trained
    (AMP101), whether the optimizer takes ``enc.parameters()`` or a list of them. Before, the name
    was rebound to the model's change joined with the value before it, and the freeze was lost."""
    code = """
    import torch
    from loaders import load_encoder, opts
    enc = load_encoder()
    if opts.tune:
        enc.to(torch.float16)  # tuned
        enc.requires_grad_(opts.tune_all)
    else:
        enc.to(torch.float16)  # frozen
        enc.requires_grad_(False)
    opt = torch.optim.AdamW(enc.parameters(), lr=1e-4)
    opt2 = torch.optim.AdamW(list(enc.parameters()), lr=1e-4)
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, '# tuned')}: AMP101" in codes
    assert f"{_line_of(code, '# frozen')}: AMP101" not in codes


def test_a_zero_dim_parameter_yields_to_half_features_in_promotion(tmp_path: Path) -> None:
    """``nn.Parameter(torch.ones([]) * np.log(10.0))`` is a 0-dim float32 tensor (``np.log`` of a
    number is a number): multiplying float16 features by it keeps them float16, as torch's type
    promotion does, so the cross-entropy on those logits runs in float16 (AMP202). Before, the
    parameter lost its 0-dim mark (and ``np.log(...)`` was unknown): the logits were float32."""
    code = """
    import numpy as np
    import torch
    from torch import nn
    import torch.nn.functional as F
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.temp = nn.Parameter(torch.ones([]) * np.log(10.0))
        def forward(self, a, b):
            logits = self.temp.exp() * a @ b.t()
            return F.cross_entropy(logits, torch.arange(a.shape[0]))  # <-
    head = Head()
    features = torch.randn(4, 8).half()
    loss = head(features, features.flip(0))
    """
    assert one(tmp_path, code, "# <-", "logits") == ["tensor float16"]
    assert f"{_line_of(code, '# <-')}: AMP202" in _codes(tmp_path, code)


def test_map_calls_its_function_on_each_item(tmp_path: Path) -> None:
    """``q, k, v = map(lambda t: rearrange(t, ...), (q, k, v))`` calls the lambda on each item, so
    each keeps its own dtype and the float16 attention's softmax is reported; ``map(torch.sigmoid,
    (x, y))`` likewise, and ``filter`` keeps the iterable's elements. Before, ``map`` and ``filter``
    returned unknown values: the attention was unknown and nothing was reported."""
    code = """
    import torch
    from einops import rearrange
    def attend(q, k, v, heads):
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=heads), (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k)
        attn = sim.softmax(dim=-1)  # <- softmax
        return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
    x = torch.randn(2, 4, 16).half()
    y = torch.randn(2, 4, 16)
    out = attend(x, x, y, 4)
    a, b = map(torch.sigmoid, (x, y))  # <- map
    kept = list(filter(lambda t: t.requires_grad, [y, y.double()]))
    first = kept[0]  # <- kept
    """
    assert f"{_line_of(code, '# <- softmax')}: AMP201" in _codes(tmp_path, code)
    assert one(tmp_path, code, "# <- map", "a") == ["tensor float16"]
    assert one(tmp_path, code, "# <- map", "b") == ["tensor float32"]
    assert one(tmp_path, code, "# <- kept", "first") == ["tensor float32 or float64"]


def test_a_field_cast_under_a_flag_is_not_half_where_the_flag_is_false(tmp_path: Path) -> None:
    """``if args.fp16: self.model = model.half()`` in ``__init__``: the field holds a cast made under
    the test, so where a method later tests the same flag through ``self.args.fp16`` and goes on only
    when it is false (``if self.args.fp16: return ...``), the model it reads is not half and the
    optimizer built there is no AMP101. An optimizer built whatever the flag still is, with the
    condition. Before, a field stored in a branch carried no condition and ``self.args.fp16`` was
    another flag than ``args.fp16``."""
    code = """
    import torch
    from setup import parse_args
    class Trainer:
        def __init__(self, args, model):
            self.args = args
            if args.fp16:
                self.model = model.half()  # cast
            else:
                self.model = model
        def build(self):
            if self.args.fp16:
                return None
            return torch.optim.SGD(self.model.parameters(), lr=0.1)
    trainer = Trainer(parse_args(), torch.nn.Linear(8, 8))
    opt = trainer.build()
    """
    assert not [c for c in _codes(tmp_path, code) if c.endswith("AMP101")]
    both = code + "other = torch.optim.SGD(trainer.model.parameters(), lr=0.1)\n"
    (tmp_path / "m.py").write_text(textwrap.dedent(both).lstrip("\n"), encoding="utf-8")
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP101", str(tmp_path / "m.py")], capture_output=True, text=True).stdout
    assert f"m.py:{_line_of(code, '# cast')}:" in text and "(when `args.fp16`)" in text


def test_a_cast_where_the_requires_grad_flag_is_false_is_not_a_trained_cast(tmp_path: Path) -> None:
    """``unet.requires_grad_(tune)`` with a flag known only at run time, then ``if not tune:
    unet.to(torch.float16)``: that cast is made only where the model is frozen, so an optimizer
    over its parameters does not train it (no AMP101 there); a cast on a path where it may be
    trained still is. Before, the frozen path's cast was reported too."""
    code = """
    import torch
    from setup import parse_args
    args = parse_args()
    unet = torch.nn.Sequential(torch.nn.Linear(8, 8))
    tune = args.lr != 0
    unet.requires_grad_(tune)
    if not tune:
        unet.to(torch.float16)  # frozen cast
    elif args.full_fp16:
        unet.to(torch.float16)  # trained cast
    opt = torch.optim.AdamW(filter(lambda p: p.requires_grad, unet.parameters()), lr=1e-4)
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, '# trained cast')}: AMP101" in codes
    assert f"{_line_of(code, '# frozen cast')}: AMP101" not in codes


def test_a_comprehension_over_a_known_tuple_keeps_its_length(tmp_path: Path) -> None:
    """``[move(o) for o in args]`` over a tuple of known length is a list of as many items, each
    ``move`` of its own item, and ``isinstance(args, (list, tuple))`` is true of such a tuple. A
    wrapper that halves its positional inputs with such a recursive helper and calls the wrapped
    module with ``*moved`` then passes exactly the caller's arguments: a ``target=None`` that no
    caller passes stays None, and the loss under ``if target is not None:`` is not reached. Before,
    the comprehension was a list of unknown length and the starred call could bind any parameter."""
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    def move(obj):
        if isinstance(obj, dict):
            return {k: move(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [move(o) for o in obj]
        return obj.half()
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
        def forward(self, feats, lengths=None, target=None):
            out = self.proj(feats)
            if target is not None:
                return F.mse_loss(out, target)  # <- loss
            return out
    class Runner(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net.half()
        def forward(self, *args, **kw):
            return self.net(*move(args), **kw)
    runner = Runner(Net())
    scores = runner(torch.randn(3, 8), lengths=None)
    a, b = [t.half() for t in (torch.randn(2), torch.randn(2, dtype=torch.float64))]  # <- pair
    is_seq = isinstance((a, b), (list, tuple))  # <- probe
    """
    assert not any(line.endswith("AMP202") for line in _codes(tmp_path, code))
    assert one(tmp_path, code, "# <- pair", "b") == ["tensor float16"]
    assert one(tmp_path, code, "# <- probe", "is_seq") == ["scalar True"]
    assert one(tmp_path, code, "# <- loss", "target") == []


def test_a_model_built_from_a_config_file_by_its_target_string(tmp_path: Path) -> None:
    """``create("configs/vae.yaml")`` loads the YAML with OmegaConf, and a helper imports the class
    its ``target:`` names (``"pkg.models.Decoder".rsplit(".", 1)``, ``importlib.import_module``,
    ``getattr``) and calls it with ``**params``: the model is that class, built with the file's
    numbers, so its softmax is reported where the script casts the model to half. A second script
    whose ``--config`` default names the other file, read through ``f"{args.config}"``, builds the
    other class. Before, the file was not read and the model stayed unknown."""
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": """
        import torch.nn as nn
        class Decoder(nn.Module):
            def __init__(self, width=8, heads=2):
                super().__init__()
                self.proj = nn.Linear(width, width)
            def forward(self, x):
                return self.proj(x).softmax(-1)  # <- softmax
        class Plain(nn.Module):
            def __init__(self, width=8):
                super().__init__()
                self.proj = nn.Linear(width, width)
            def forward(self, x):
                return self.proj(x)  # <- plain
        """,
        "pkg/util.py": """
        import importlib
        from omegaconf import OmegaConf
        def obj_from_str(string):
            module, cls = string.rsplit(".", 1)
            return getattr(importlib.import_module(module, package=None), cls)
        def build(config):
            if not "target" in config:
                if config == "__none__":
                    return None
                raise KeyError("target")
            return obj_from_str(config["target"])(**config.get("params", dict()))
        def create(path):
            config = OmegaConf.load(path)
            return build(config.model)
        """,
        "configs/vae.yaml": """
        model:
          target: pkg.models.Decoder   # the decoder
          params:
            width: 64
            heads: 4
        """,
        "configs/plain.yaml": """
        model:
          target: pkg.models.Plain
          params: {width: 32}
        """,
        "sample.py": """
        import torch
        from pkg.util import create
        model = create("configs/vae.yaml").half()  # <- model
        out = model(torch.randn(2, 64).half())
        """,
        "train.py": """
        import argparse
        import torch
        from omegaconf import OmegaConf
        from pkg.util import build
        parser = argparse.ArgumentParser()
        parser.add_argument("--config", type=str, default="configs/plain.yaml")
        args = parser.parse_args()
        config = OmegaConf.load(f"{args.config}")
        net = build(config.model)  # <- net
        """,
    }
    assert value_of(tmp_path, files, "sample.py", "# <- model", "model") == ["module Decoder with float16 parameters"]
    assert value_of(tmp_path, files, "train.py", "# <- net", "net") == ["module Plain with float32 parameters"]
    assert set(value_of(tmp_path, files, "pkg/models.py", "# <- softmax", "self.proj(x).softmax(-1)")) == {
        "tensor float16"}
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                             "AMP201", "--output-format", "json", "."], cwd=tmp_path, capture_output=True, text=True)
    assert [(Path(f["filename"]).relative_to(tmp_path).as_posix(), f["code"])
            for f in json.loads(result.stdout)] == [("pkg/models.py", "AMP201")]


def test_string_methods_and_tests_on_known_values_are_decided(tmp_path: Path) -> None:
    """Known strings keep their text through methods and f-strings, and tests of known keys and
    values are decided: ``key in config`` of a dict with known keys, ``not`` of a decided test, a
    dict compared with a string."""
    code = """
    name = "a.b.Cls"
    module, cls = name.rsplit(".", 1)
    joined = "/".join(["configs", f"{cls}-{2}.yaml"])  # <- joined
    config = {"target": name}
    has = "target" in config  # <- has
    lacks = not "params" not in config  # <- lacks
    same = config == "target"  # <- same
    """
    assert one(tmp_path, code, "# <- joined", "joined") == ["scalar 'configs/Cls-2.yaml'"]
    assert one(tmp_path, code, "# <- has", "has") == ["scalar True"]
    assert one(tmp_path, code, "# <- lacks", "lacks") == ["scalar False"]
    assert one(tmp_path, code, "# <- same", "same") == ["scalar False"]


def test_a_field_set_on_a_local_config_is_that_instances_own(tmp_path: Path) -> None:
    """``cfg = Config(); cfg.vocab_size = 100`` changes the instance ``cfg`` holds: another instance
    of the dataclass keeps its own vocabulary (before, the store made every instance read the join
    of the class's field: 32000 or 100 in a script that never set it)."""
    code = """
    from dataclasses import dataclass
    @dataclass
    class Config:
        vocab_size: int = 32000
        width: int = 512
    def toy():
        cfg = Config()
        cfg.vocab_size = 100
        return cfg.vocab_size  # <- toy
    def real():
        cfg = Config(width=1024)
        return cfg.vocab_size  # <- real
    toy()
    real()
    """
    assert one(tmp_path, code, "# <- toy", "cfg.vocab_size") == ["scalar 100"]
    assert one(tmp_path, code, "# <- real", "cfg.vocab_size") == ["scalar 32000"]


def test_a_dataclass_with_a_base_and_a_post_init_keeps_its_own_fields(tmp_path: Path) -> None:
    """A dataclass that extends another dataclass and has a ``__post_init__`` keeps, per instance,
    the fields its base declares and those ``__post_init__`` does not set: a toy config's vocabulary
    of 100 is not the adapter config's (before, neither had fields of its own and both read the
    class's join, 32000 or 100); what ``__post_init__`` sets is still read from the class."""
    code = """
    from dataclasses import dataclass
    from typing import ClassVar, Optional
    @dataclass
    class BaseConfig:
        vocab_size: int = 32000
        padded: Optional[int] = None
        registry: ClassVar[dict] = {}
        def __post_init__(self):
            if self.padded is None:
                self.padded = self.vocab_size + 64 - self.vocab_size % 64
    @dataclass
    class AdapterConfig(BaseConfig):
        prompt_length: int = 10
    def toy():
        cfg = BaseConfig()
        cfg.vocab_size = 100
        return cfg
    def adapter():
        cfg = AdapterConfig(prompt_length=4)
        return cfg.vocab_size, cfg.prompt_length  # <-
    toy()
    adapter()
    """
    assert one(tmp_path, code, "# <-", "cfg.vocab_size") == ["scalar 32000"]
    assert one(tmp_path, code, "# <-", "cfg.prompt_length") == ["scalar 4"]


def test_a_conditional_cast_used_as_a_statement_casts_the_model_on_its_branch(tmp_path: Path) -> None:
    """``net.half() if half else net.float()`` as a statement casts ``net`` in place where ``half``
    holds (an ``if`` of its two arms): the evaluation's softmax on the detector's output is float16
    under ``half`` (before, the expression's value was dropped and the model stayed float32)."""
    code = """
    import sys
    import torch
    from torch import nn
    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Conv2d(16, 32, 1)
        def forward(self, x):
            return self.head(x)
    def evaluate(net, images, half):
        net.half() if half else net.float()
        images = images.half() if half else images.float()
        scores = net(images).softmax(1)
        return scores
    evaluate(Detector(), torch.randn(1, 16, 8, 8), sys.argv[1] == "half")
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'scores = net(images)')}: AMP201"]
    [net] = one(tmp_path, code, "scores = net(images)", "net")
    assert net == "module Detector with float16 or float32 parameters"


def test_a_half_processor_a_library_calls_runs_its_own_call(tmp_path: Path) -> None:
    """A module whose class defines its own ``__call__`` (an attention processor the pipeline
    calls) cast to float16 and handed to a library: its ``__call__`` runs with its half layers
    (before, only ``forward`` ran for a half module)."""
    code = """
    import torch
    from diffusers import UNet2DConditionModel
    from torch import nn
    class KeyProcessor(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.to_k = nn.Linear(dim, dim)
        def __call__(self, attn, hidden_states, context=None):
            keys = self.to_k(context)
            return keys.softmax(dim=-1)
    class Adapter:
        def __init__(self, unet):
            self.unet = unet
        def install(self):
            procs = {name: KeyProcessor(64).to("cuda", dtype=torch.float16) for name in self.unet.attn_processors}
            self.unet.set_attn_processor(procs)
    Adapter(UNet2DConditionModel.from_pretrained("sd-model", subfolder="unet")).install()
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'keys.softmax')}: AMP201"]


def test_a_field_stored_unknown_in_a_function_reads_back_unknown_there(tmp_path: Path) -> None:
    """A run whose argument is unknown stores an unknown value in ``self.log_scale``; reading it back
    in that function gives that unknown, not the join of the field over every run (where an autocast
    caller's run made it half: before, ``exp`` there was a float16 "outside autocast")."""
    code = """
    import sys
    import torch
    class Scaled:
        def __init__(self, stats):
            self.loc, self.log_scale = stats.unbind(0)
            self.scale = torch.exp(self.log_scale)  # <-
    def summarise(stats):
        return Scaled(stats)
    with torch.autocast("cuda"):
        a = summarise(torch.nn.Linear(4, 8)(torch.randn(2, 4)).view(2, 2, 4))
    b = summarise(torch.load(sys.argv[1]))
    """
    assert sorted(one(tmp_path, code, "# <-", "self.log_scale")) == ["tensor float16", "unknown"]
    assert not [c for c in _codes(tmp_path, code) if c.endswith("AMP204")]


def test_a_field_read_after_its_store_in_a_function_is_the_value_stored(tmp_path: Path) -> None:
    """``self.logvar = clamp(...)`` then ``exp(self.logvar)`` in the same method reads what was just
    stored, not the join of every store of every run: a caller running under autocast made the
    field float16 in its run, and another caller's float32 run read it back as half (an AMP204
    "outside autocast" that does not exist). A method no caller is seen to call, reading a field
    that only an autocast region elsewhere made half, is no evidence either: its autocast state is
    unknown. A store on one branch only is joined with the field after the branch."""
    code = """
    import torch
    class Posterior:
        def __init__(self, moments, flag):
            self.mean, self.logvar = torch.chunk(moments, 2, dim=1)
            self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
            self.std = torch.exp(0.5 * self.logvar)  # <- std
            if flag:
                self.mean = self.mean.double()
            self.centered = self.mean - 1.0  # <- after-branch
        def kl(self):
            return torch.sum(torch.pow(self.mean, 2) + self.std, dim=1)  # <- kl
        def reset(self, flag):
            if flag:
                self.std = torch.zeros(2, dtype=torch.float64)
            return self.std  # <- reset
    def encode(x):
        return Posterior(x, bool(x.sum() > 0))
    with torch.autocast("cuda"):
        first = encode(torch.nn.Linear(4, 8)(torch.randn(2, 4)))
    second = encode(torch.randn(2, 8))
    """
    assert one(tmp_path, code, "# <- std", "self.logvar") == ["tensor float16", "tensor float32"]
    assert sorted(one(tmp_path, code, "# <- after-branch", "self.mean")) == [
        "tensor float16 or float64", "tensor float32 or float64"]
    assert one(tmp_path, code, "# <- reset", "self.std") == ["tensor float32 or float64"]
    assert not [c for c in _codes(tmp_path, code) if c.endswith(("AMP203", "AMP204"))]


def test_getattr_of_one_of_a_few_known_names_is_either_attribute(tmp_path: Path) -> None:
    """``getattr(self, "encoder" if shared else "decoder")``: a choice between known strings stays a
    choice between them (their join kept each text), so ``getattr`` reads either field. Before,
    the join was a string of unknown text and the module unknown."""
    code = """
    import torch.nn as nn
    class Enc(nn.Module):
        def forward(self, x):
            return x
    class Dec(nn.Module):
        def forward(self, x):
            return x
    class Runner:
        def __init__(self, shared):
            self.encoder = Enc()
            self.decoder = Dec().half()
            self.shared = shared
        def step(self, x):
            name = "encoder" if self.shared else "decoder"
            net = getattr(self, name)  # <- net
            return net(x)
    runner = Runner(shared=bool(input()))
    out = runner.step(1)
    """
    assert one(tmp_path, code, "# <- net", "net") == [
        "module Enc with float32 parameters | module Dec with float16 parameters"]
    assert one(tmp_path, code, "# <- net", "name") == ["scalar 'encoder' | scalar 'decoder'"]


def test_layer_sizes_a_test_file_builds_are_not_the_configuration(tmp_path: Path) -> None:
    """``tests/test_block.py`` builds a toy ``Block(width=145)`` in half: its misaligned Linear is
    the test's choice, not the configuration the project trains, so AMP402 does not report it; the
    training script's ``Block(width=300)`` is reported, with where it was built."""
    files = {
        "pkg/__init__.py": "",
        "pkg/block.py": """
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.proj = nn.Linear(width, 4 * width)
            def forward(self, x):
                return self.proj(x)
        """,
        "tests/test_block.py": """
        import torch
        from pkg.block import Block
        def test_block():
            block = Block(width=145).half()
            assert block(torch.randn(2, 145).half()).shape == (2, 580)
        """,
        "train.py": """
        import torch
        from pkg.block import Block
        block = Block(width=300).half()
        out = block(torch.randn(2, 300).half())
        """,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                             "AMP402", "--output-format", "json", "."], cwd=tmp_path, capture_output=True, text=True)
    messages = [f["message"] for f in json.loads(result.stdout)]
    assert len(messages) == 1 and "300" in messages[0] and "145" not in messages[0] and "580" not in messages[0]


def test_a_comparison_of_known_strings_is_decided_and_of_a_command_line_string_is_not(tmp_path: Path) -> None:
    """``if backend == "naive":`` where ``backend`` is a default no caller overrides compares known
    texts: the branch is decided, and a softmax only that branch runs is not reached. A string read
    from the command line (``args.backend``, whose default the user may override) keeps both
    branches."""
    code = """
    import argparse
    import torch
    def mix(q, backend="fused"):
        if backend == "naive":
            return q.softmax(-1)  # <- naive
        return q
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="fused")
    args = parser.parse_args()
    x = torch.randn(2, 3).half()
    a = mix(x)
    chosen = args.backend == "naive"  # <- chosen
    """
    assert one(tmp_path, code, "# <- naive", "q") == []
    assert one(tmp_path, code, "# <- chosen", "chosen") == ["scalar"]
    assert not any(c.endswith("AMP201") for c in _codes(tmp_path, code))


def test_each_dataclass_instance_keeps_the_fields_it_was_built_with(tmp_path: Path) -> None:
    """``Cfg(width=96)`` and ``Cfg()`` are two configurations: each keeps its own ``width`` (the
    one passed, else the field's literal default), so a layer built from each gets its own size
    (AMP402 checks each). A field stored after the instance was built, through the local name
    that holds it, is that instance's. Before, every instance read the join of all of them (an
    unknown number)."""
    code = """
    import torch.nn as nn
    from dataclasses import dataclass
    @dataclass
    class Cfg:
        width: int = 100
        depth: int = 2
    class Net(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.proj = nn.Linear(cfg.width, cfg.width)  # <- proj
    small = Net(Cfg(width=96))
    default = Net(Cfg())
    later = Cfg(depth=3)
    later.depth = 4
    depth = later.depth  # <- depth
    """
    assert sorted(one(tmp_path, code, "# <- proj", "cfg.width")) == ["scalar 100", "scalar 96"]
    assert one(tmp_path, code, "# <- depth", "depth") == ["scalar 4"]


def test_a_method_called_on_the_receiver_ends_the_read_back_of_its_fields(tmp_path: Path) -> None:
    """``self.scale = nn.Parameter(...)`` then ``self.half()``: the module's own method may change
    its fields (here its cast makes the parameter half), so ``self.scale`` is read through the module
    again, not as the value stored before the call."""
    code = """
    import torch
    import torch.nn as nn
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(4))
            kept = self.scale  # <- before
            self.half()
            after = self.scale  # <- after
    head = Head()
    """
    assert one(tmp_path, code, "# <- before", "kept") == ["tensor float32"]
    assert one(tmp_path, code, "# <- after", "after") != ["tensor float32"]


def test_a_sequential_of_named_pairs_runs_its_layers(tmp_path: Path) -> None:
    """``nn.Sequential(OrderedDict([("conv", ...), ...]))``, with pairs from a comprehension
    added: its layers run in order on the input, so the weight-standardised convolution of a
    model cast to half computes its variance in half (AMP203). Before, such a Sequential held no
    known layers and its output was unknown."""
    code = """
    from collections import OrderedDict
    import torch
    from torch import nn
    class StdConv(nn.Conv2d):
        def forward(self, x):
            var, mean = torch.var_mean(self.weight, dim=[1, 2, 3], keepdim=True)
            return nn.functional.conv2d(x, (self.weight - mean) / var.sqrt(), self.bias)
    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.root = nn.Sequential(OrderedDict([("conv", StdConv(3, 8, 3)), ("act", nn.ReLU())]))
            self.body = nn.Sequential(OrderedDict(
                [("unit1", nn.Conv2d(8, 8, 1))] + [(f"unit{i}", nn.Conv2d(8, 8, 1)) for i in range(n)]))
        def forward(self, x):
            return self.body(self.root(x))
    def main():
        net = Net(2).cuda().half()
        y = net(torch.randn(1, 3, 8, 8).cuda().half())  # out
    main()
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'var_mean')}: AMP203"]
    assert one(tmp_path, code, "# out", "y") == ["tensor float16"]


def test_a_sequential_of_a_list_built_in_a_loop_runs_each_kind_of_layer(tmp_path: Path) -> None:
    """``nn.Sequential(*blocks)`` where ``blocks`` grew in a loop: each layer is one of the kinds
    appended, and calling it runs each candidate, so under CUDA autocast the head's output is a
    float16 Linear output and its batch variance is computed in float16 (AMP203). Before, the
    call of a layer that was one of several returned an unknown value."""
    code = """
    import torch
    from torch import nn
    def head(widths):
        blocks = []
        for a, b in zip(widths[:-1], widths[1:]):
            blocks.append(nn.Linear(a, b))
            blocks.append(nn.GELU())
            blocks.append(nn.Dropout(0.1))
        return nn.Sequential(*blocks)
    class Probe(nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder
            self.head = head([768, 512, 128])
        def forward(self, x):
            z = self.head(self.encoder(x))  # out
            return z.var(dim=0).mean()
    def fit(encoder, batches):
        probe = Probe(encoder).cuda()
        for x in batches:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = probe(x)
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'z.var')}: AMP203"]
    assert "float16" in one(tmp_path, code, "# out", "z")[-1]


def test_an_einsum_that_sums_no_index_promotes_like_a_product(tmp_path: Path) -> None:
    """``torch.einsum("bd,dn->bdn", half, float)`` contracts nothing: torch computes it as a
    broadcast product, which promotes to float32 (measured, torch 2.13), so the exp of it runs
    in float32. With a summed index the same mix raises, so either dtype stays possible there.
    Before, both were taken for a matmul of mismatched operands (float16 or float32), and the
    exp of the outer product was reported (AMP204)."""
    code = """
    import torch
    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 16)
            self.log_decay = torch.nn.Parameter(torch.zeros(16, 8))
        def forward(self, x):
            dt = self.proj(x)
            decay = -torch.exp(self.log_decay.float())
            outer = torch.einsum("bd,dn->bdn", dt, decay)  # outer
            mixed = torch.einsum("bd,dn->bn", dt, decay)  # summed
            return torch.exp(outer)
    step = Step().half()
    y = step(torch.randn(2, 16).half())
    """
    assert _codes(tmp_path, code) == []
    assert one(tmp_path, code, "# outer", "outer")[-1] == "tensor float32"
    assert "float16" in one(tmp_path, code, "# summed", "mixed")[-1]


def test_a_half_model_used_only_through_its_own_methods_runs_its_forward_as_a_guess(tmp_path: Path) -> None:
    """``model.half()`` in a demo whose only use of ``model`` is its own ``generate`` method, called
    from a callback nothing in the file runs: the training ``forward`` (a loss on the head's
    float16 logits) is a guess, low confidence, shown only in preview. Before, the callback was
    not run when the forward was, so the forward counted as the program's own call (AMP202).
    Printing or saving the model hands it to nothing that runs it; where the file hands the model
    on (``evaluate(model)``), its forward is run as the program's."""
    code = """
    import torch
    from torch import nn
    import ui

    class Captioner(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(64, 1000)
            self.criterion = nn.CrossEntropyLoss()
        def forward(self, feats, labels):
            return self.criterion(self.head(feats), labels)
        @torch.no_grad()
        def generate(self, feats):
            return self.head(feats).argmax(-1)

    model = Captioner().cuda()
    model.half()
    model.eval()
    print(model)
    torch.save(model, "captioner.pt")

    def on_click(feats):
        return model.generate(feats.half())

    demo = ui.Interface(fn=on_click)
    """
    assert _codes(tmp_path, code) == []
    handed = code.replace("demo = ui.Interface(fn=on_click)", "demo = ui.Interface(fn=on_click)\n    ui.evaluate(model)")
    assert _codes(tmp_path, handed) == [f"{_line_of(code, 'self.criterion(')}: AMP202"]


def test_a_half_model_a_loader_returns_is_used_as_its_callers_use_it(tmp_path: Path) -> None:
    """``prepare(net, path, dtype)`` casts its own ``net`` and returns it; the only caller calls the
    model's ``synthesize``. The loader's other ``net`` (the one it passes in) is another value, and
    returning the model hands it to callers whose uses the run sees: the training ``forward`` is a
    guess (hidden, low confidence). Where a caller hands the model to a library (``serving.start``),
    its forward runs as the program's (AMP202)."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    import serving


    class Vocoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(80, 80)

        def forward(self, mel, target):
            return F.mse_loss(self.proj(mel), target)

        @torch.no_grad()
        def synthesize(self, mel):
            return self.proj(mel).tanh()


    def prepare(net, path, dtype):
        net = net.to(dtype)
        net.load_state_dict(torch.load(path))
        return net


    def load(path):
        net = Vocoder()
        return prepare(net, path, torch.float16)


    def main():
        vocoder = load("vocoder.pt")
        print(vocoder.synthesize(torch.randn(4, 80).half()))


    if __name__ == "__main__":
        main()
    """
    assert _codes(tmp_path, code) == []
    served = code.replace("        print(vocoder.synthesize(torch.randn(4, 80).half()))\n",
                          "        print(vocoder.synthesize(torch.randn(4, 80).half()))\n        serving.start(vocoder)\n")
    assert served != code and _codes(tmp_path, served) == [f"{_line_of(code, 'F.mse_loss(')}: AMP202"]


def test_features_gathered_from_every_rank_are_the_features_given(tmp_path: Path) -> None:
    """``dist.all_gather(out, z)`` fills ``out`` with every rank's ``z`` (it was a list of zeros), and
    ``torch.distributed.nn.all_gather(z)`` returns them: under CUDA autocast the gathered projections
    are a Linear's float16 outputs, so their batch variance is computed in float16 (AMP203). Before,
    the list kept the zeros it was made of (no layer's values) and the functional gather was unknown."""
    code = """
    import torch
    import torch.distributed as dist
    import torch.distributed.nn
    def gather(z):
        out = [torch.zeros_like(z) for _ in range(dist.get_world_size())]
        dist.all_gather(out, z)
        return torch.cat(out)
    class Whitening(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(512, 2048)
        def forward(self, x, y):
            a = gather(self.proj(x))
            b = torch.cat(torch.distributed.nn.all_gather(self.proj(y)))
            return a.var(dim=0).mean() + b.var(dim=0).mean()
    def fit(model, batches):
        model = model.cuda()
        for x, y in batches:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x, y)
    fit(Whitening(), [])
    """
    line = _line_of(code, "a.var(")
    assert _codes(tmp_path, code) == [f"{line}: AMP203", f"{line}: AMP203"]


def test_a_test_parametrized_over_dtypes_runs_the_code_in_each(tmp_path: Path) -> None:
    """``@pytest.mark.parametrize("dtype, amp", [(torch.float32, False), pytest.param(torch.float16,
    True)])``: pytest runs the test with each listed value, so the norm it casts ``.to(dtype)`` runs
    in float16 on one of them and its hand-written mean of squares is reported in the library file
    (the test file's own lines are not checked by the numerics rules). Before, the parameters of a
    test nothing calls were unknown."""
    files = {
        "pkg/__init__.py": "",
        "pkg/norm.py": """
            import torch
            class RMSNorm(torch.nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = torch.nn.Linear(dim, dim)
                    self.weight = torch.nn.Parameter(torch.ones(dim))
                def forward(self, x):
                    h = self.proj(x)
                    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        """,
        "tests/test_norm.py": """
            import pytest
            import torch
            from pkg.norm import RMSNorm

            @pytest.mark.parametrize("dtype, amp", [(torch.float32, False), pytest.param(torch.float16, True)])
            def test_norm(dtype, amp):
                norm = RMSNorm(64).to(dtype)
                y = norm(torch.randn(2, 64, dtype=dtype))
                assert y.dtype == dtype
        """,
    }
    assert _codes_in_project(tmp_path, files, "AMP203") == ["pkg/norm.py:9: AMP203"]


def test_a_plugin_imported_by_a_name_of_its_package_is_one_of_its_modules(tmp_path: Path) -> None:
    """``importlib.import_module(f"pkg.models.{args.model}")``: the module imported is one of the
    package's modules, so the class the script takes from it (``module.Net()``) and casts to half
    runs its softmax in half (AMP201 in each candidate that defines one). Before, the module was
    unknown and nothing after it was analysed."""
    files = {
        "pkg/__init__.py": "",
        "pkg/models/__init__.py": "",
        "pkg/models/small.py": """
            import torch
            from torch import nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                def forward(self, x):
                    return torch.softmax(self.fc(x), dim=-1)
            """,
        "pkg/models/tiny.py": """
            from torch import nn
            class Other(nn.Module):
                def forward(self, x):
                    return x
            """,
        "run.py": """
            import argparse
            import importlib
            import torch
            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--model", default="small")
                args = parser.parse_args()
                module = importlib.import_module(f"pkg.models.{args.model}")
                net = module.Net().cuda().half()
                print(net(torch.randn(2, 8).cuda().half()))
            if __name__ == "__main__":
                main()
            """,
    }
    # more modules than a union of other values keeps (six): a package of plugins keeps them all
    files.update({f"pkg/models/variant{i}.py": f"WIDTH = {8 * (i + 1)}\n" for i in range(6)})
    assert _codes_in_project(tmp_path, files, "AMP2") == ["pkg/models/small.py:8: AMP201"]


def test_the_else_branch_does_not_run_in_a_state_the_then_branch_entered(tmp_path: Path) -> None:
    """``if args.apex: amp.initialize(..., opt_level="O1"); train_apex(...) else: train_plain(...)``:
    apex's patches hold for the rest of a run that initialised it, not in the other branch, so the
    float32 training loop of the else-branch is no AMP102 finding (before, it ran in apex O1's state).
    After the ``if``, the state holds on, under the then-branch's test."""
    code = """
    import argparse
    import torch
    from apex import amp
    def train_apex(model, optimizer, loader):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            with amp.scale_loss(loss, optimizer) as scaled:
                scaled.backward()
            optimizer.step()
    def train_plain(model, optimizer, loader):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--apex", action="store_true")
        args = parser.parse_args()
        model = torch.nn.Linear(8, 8).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.apex:
            model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            train_apex(model, optimizer, [])
        else:
            train_plain(model, optimizer, [])
        after = model(torch.randn(2, 8).cuda())  # after
    if __name__ == "__main__":
        main()
    """
    assert [c for c in _codes(tmp_path, code) if "AMP5" not in c] == []  # (AMP502: apex itself)
    assert one(tmp_path, code, "# after", "after") == ["tensor float16"]
    (context,) = explain_json(tmp_path, "m.py", "# after")
    (because,) = next(v["because"] for v in context["values"] if v["expression"] == "after")
    assert "amp.initialize" in because and "(when `args.apex`)" in because


_TIMM_MODELS = """
import torch.nn as nn
from timm.models.registry import register_model


class Mixer(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.qk = nn.Linear(64, 64)
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        scores = self.qk(x) @ x.transpose(-2, -1)
        probs = scores.softmax(dim=-1)  # <- probs
        return self.head(probs @ x)


@register_model
def mixer_tiny(pretrained=False, **kwargs):
    return Mixer(**kwargs)
"""

_TIMM_APP = """
import argparse
import torch
from timm.models import create_model
import zoo_models  # registers the project's models with timm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mixer_tiny")
    args = parser.parse_args()
    net = create_model({model}, pretrained=False, num_classes=10, checkpoint_path="").cuda().half()
    with torch.no_grad():
        print(net(torch.randn(2, 16, 64, device="cuda").half()))


if __name__ == "__main__":
    main()
"""


def test_timm_create_model_builds_the_model_the_project_registered(tmp_path: Path) -> None:
    """``create_model(args.model)`` of timm builds the function the project registered with timm's
    ``@register_model`` under that name (or, for a name read from the command line, any registered one): the
    model is a known class, so its forward runs on the half model (before, the library call gave an
    unknown value and nothing ran). A name the project did not register is one of timm's own
    models: unknown, as before."""
    line = _line_of(_TIMM_MODELS, "# <- probs")
    for model in ('"mixer_tiny"', "args.model"):
        files = {"zoo_models.py": _TIMM_MODELS, "app.py": _TIMM_APP.format(model=model)}
        values = value_of(tmp_path, files, "zoo_models.py", "# <- probs", "probs")
        assert values and all(v.startswith("tensor float16") for v in values), values
        assert _codes_in_project(tmp_path, files, "AMP201") == [f"zoo_models.py:{line}: AMP201"]
    files = {"zoo_models.py": _TIMM_MODELS, "app.py": _TIMM_APP.format(model='"resnet50"')}
    assert _codes_in_project(tmp_path, files, "AMP201") == []


def test_params_appended_to_a_param_group_dict_are_what_its_optimizer_trains(tmp_path: Path) -> None:
    """``group["params"].append(p)`` over ``net.named_parameters()`` fills the list the dict holds,
    so ``SGD(**group)`` trains the half parameters with no master weights (before, the list stayed
    empty and the optimizer's parameters were unknown)."""
    code = """
    import torch
    import torch.nn as nn

    def param_groups(network):
        decay = {"params": [], "lr": 0.1, "momentum": 0.9}
        no_decay = {"params": [], "lr": 0.1}
        for name, p in network.named_parameters():
            if "bias" in name:
                no_decay["params"].append(p)
            else:
                decay["params"].append(p)
        return decay, no_decay

    def main():
        net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).cuda()
        net.half()  # <- cast
        decay, no_decay = param_groups(net)
        opt = torch.optim.SGD(**decay)
        for _ in range(10):
            x = torch.randn(8, 32, device="cuda").half()
            loss = net(x).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()

    main()
    """
    line = _line_of(code, "# <- cast")
    assert _codes_in_project(tmp_path, {"train.py": code}, "AMP101") == [f"train.py:{line}: AMP101"]


_LIGHTNING_SCRIPT = """
import lightning as L
from model import Net

if __name__ == "__main__":
    trainer = L.Trainer(precision="16-mixed")
    trainer.fit(Net())
"""

_PLAIN_SCRIPT = """
import torch
import torch.nn.functional as F
from model import Net

model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(100):
    x = torch.randn(8, 32)
    loss = F.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()  # <- loop
    opt.step()
"""

_NET = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        return self.fc(x)
"""


def test_a_framework_of_one_script_does_not_own_the_precision_of_another(tmp_path: Path) -> None:
    """A repository of several programs: Lightning's mixed precision set up in one script's
    ``__main__`` block does not train the plain fp32 loop of another script, which AMP001 reports
    (before, any framework anywhere silenced AMP001 in every file). Set up at a module's top level
    outside such a block, where an import would run it, it still counts for every program."""
    files = {"model.py": _NET, "fit_lightning.py": _LIGHTNING_SCRIPT, "plain.py": _PLAIN_SCRIPT}
    line = _line_of(_PLAIN_SCRIPT, "# <- loop")
    assert _codes_in_project(tmp_path, files, "AMP001") == [f"plain.py:{line}: AMP001"]
    files["fit_lightning.py"] = _LIGHTNING_SCRIPT.replace('if __name__ == "__main__":\n', "if True:\n")
    assert _codes_in_project(tmp_path, files, "AMP001") == []


_ACCELERATE_SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = self.fc(x)
        spread = h.var(dim=-1, keepdim=True)  # <- spread
        return self.head(h / (spread + 1e-5).sqrt())


def main(mixed):
    accelerator = Accelerator(mixed_precision=mixed)
    model = accelerator.prepare(Net())
    x = torch.randn(8, 64, device="cuda"){cast}
    out = model(x)
    loss = F.cross_entropy(out, torch.randint(0, 10, (8,), device="cuda"))  # <- loss
    accelerator.backward(loss)


main({mixed})
"""


def test_a_model_accelerate_prepared_runs_under_autocast_and_returns_float32(tmp_path: Path) -> None:
    """``accelerator.prepare(model)`` with ``mixed_precision="fp16"`` wraps the model's forward in
    autocast and casts its outputs to float32 (Accelerate's ``prepare_model``): the variance of a
    GEMM output inside the forward is float16 (AMP203), the loss on the output is float32 (before,
    the prepared model ran in float32 throughout). With the mixed precision not known here, a
    float32 model's outputs are float32 either way, even on half inputs (before: float16)."""
    code = _ACCELERATE_SCRIPT.format(mixed='"fp16"', cast="")
    files = {"train.py": code}
    assert value_of(tmp_path, files, "train.py", "# <- spread", "spread") == ["tensor float16"]
    assert value_of(tmp_path, files, "train.py", "# <- loss", "out") == ["tensor float32"]
    assert _codes_in_project(tmp_path, files, "AMP2") == [f"train.py:{_line_of(code, '# <- spread')}: AMP203"]
    code = _ACCELERATE_SCRIPT.format(mixed="input()", cast=".half()")
    files = {"train.py": code}
    assert value_of(tmp_path, files, "train.py", "# <- loss", "out") == ["tensor float32"]
    assert _codes_in_project(tmp_path, files, "AMP202") == []


def test_apex_ddp_and_timm_split_bn_return_the_module_they_wrap(tmp_path: Path) -> None:
    """apex's ``DistributedDataParallel(model)`` runs the model's forward, and timm's
    ``convert_splitbn_model(model, n)`` returns the model: the half model stays known through
    them, so the loss on its output is float16 (before, both gave an unknown value)."""
    code = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from apex.parallel import DistributedDataParallel as ApexDDP
    from timm.models import convert_splitbn_model

    def main(distributed, split_bn):
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).cuda().half()
        if split_bn:
            model = convert_splitbn_model(model, 2)
        if distributed:
            model = ApexDDP(model, delay_allreduce=True)
        out = model(torch.randn(8, 64, device="cuda").half())
        return F.cross_entropy(out, torch.randint(0, 10, (8,), device="cuda"))  # <- loss

    main(True, True)
    """
    assert one(tmp_path, code, "# <- loss", "out") == ["tensor float16"]


_VARIANCE_BRANCHES = """
import torch
import torch.nn as nn


def log_variance(net, x, learned):
    out = net(x)
    if learned:
        logvar = out.float() * 0.5
    else:
        logvar = {fixed}
    return torch.exp(logvar)  # <- exp


net = nn.Linear(8, 8).cuda().half()
log_variance(net, torch.randn(4, 8, device="cuda").half(), input() == "learned")
"""


def test_a_half_value_no_layer_made_joined_with_a_float32_layer_output_is_no_overflow_evidence(
        tmp_path: Path) -> None:
    """The join of a float32 layer output (one branch) and the float16 ``zeros_like`` of another is
    half only where no layer made it: its exp cannot overflow, and AMP204 stays silent (before, the
    join was "learned" and "half" together and was reported). Where the float16 branch is itself a
    layer output, it is reported."""
    code = _VARIANCE_BRANCHES.format(fixed="torch.zeros_like(out)")
    assert _codes_in_project(tmp_path, {"m.py": code}, "AMP204") == []
    code = _VARIANCE_BRANCHES.format(fixed="out")
    assert _codes_in_project(tmp_path, {"m.py": code}, "AMP204") == [f"m.py:{_line_of(code, '# <- exp')}: AMP204"]


def test_a_loop_whose_call_opens_an_autocast_region_is_no_fp32_loop(tmp_path: Path) -> None:
    """A linear probe trained on features that a frozen backbone computes under ``torch.autocast``
    inside its wrapper's forward: the program has mixed precision, so AMP001 does not report the
    probe's loop (before, only autocast regions written in the loop itself counted)."""
    code = """
    import torch
    import torch.nn as nn

    class Features(nn.Module):
        def __init__(self, backbone):
            super().__init__()
            self.backbone = backbone

        def forward(self, x):
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
                return self.backbone(x).float()

    def main(loader):
        features = Features(nn.Linear(64, 64).cuda())
        probe = nn.Linear(64, 10).cuda()
        opt = torch.optim.SGD(probe.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(probe(features(x)), y)
            opt.zero_grad()
            loss.backward()  # <- backward
            opt.step()

    main([])
    """
    assert _codes_in_project(tmp_path, {"probe.py": code}, "AMP001") == []
    plain = code.replace(', torch.autocast("cuda", dtype=torch.float16)', "")
    assert _codes_in_project(tmp_path, {"probe.py": plain}, "AMP001") == \
        [f"probe.py:{_line_of(plain, '# <- backward')}: AMP001"]


_CACHED_FEATURES = """
import torch
import torch.nn as nn


def extract(backbone, images):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return backbone(images).float()


def main(images, labels):
    backbone = nn.Linear(64, 64).cuda()
    feats = extract(backbone, images)
    probe = nn.Linear(64, 10).cuda()
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for step in range(100):
        loss = nn.functional.cross_entropy(probe(feats), labels)
        opt.zero_grad()
        loss.backward()  # <- backward
        opt.step()


if __name__ == "__main__":
    main(torch.randn(8, 64, device="cuda"), torch.zeros(8, dtype=torch.long, device="cuda"))
"""


def test_a_program_that_opens_an_autocast_region_anywhere_has_no_fp32_loop(tmp_path: Path) -> None:
    """AMP001 is for loops of programs with no mixed precision anywhere: features extracted once
    under autocast, then a probe trained in float32 on them, is such a program's deliberate fp32
    loop (before, only autocast regions the loop itself ran counted). The same loop in another
    script of the repository, with no autocast, is reported."""
    plain = _CACHED_FEATURES.replace(', torch.autocast("cuda", dtype=torch.bfloat16)', "")
    files = {"probe_cached.py": _CACHED_FEATURES, "probe_plain.py": plain}
    assert _codes_in_project(tmp_path, files, "AMP001") == \
        [f"probe_plain.py:{_line_of(plain, '# <- backward')}: AMP001"]


def test_a_partial_binding_star_args_joins_with_another_partial(tmp_path: Path) -> None:
    """``functools.partial(f, *extra)`` on one branch and ``functools.partial(f, 1)`` on the other:
    the ``*extra`` is bound as an unknown collection, so the joined partial still calls ``act`` on
    the half output (before, it stood in the bound arguments as a Star, which is no value: here the
    call gave an unknown value, and in safari's files the join raised, leaving them unanalysed)."""
    code = """
    import functools
    import torch
    import torch.nn as nn

    def act(x, *rest):
        return torch.relu(x)

    def build(extra, flag):
        fn = functools.partial(act, *extra) if flag else functools.partial(act, 1)
        net = nn.Linear(8, 8).cuda().half()
        out = fn(net(torch.randn(2, 8, device="cuda").half()))
        return torch.softmax(out, dim=-1)  # <- softmax

    build((1, 2), input() == "y")
    """
    assert _codes_in_project(tmp_path, {"m.py": code}, "AMP201") == \
        [f"m.py:{_line_of(code, '# <- softmax')}: AMP201"]


def test_a_loaded_dict_cast_in_a_loop_over_its_keys_holds_half_tensors(tmp_path: Path) -> None:
    """A state dict of unknown content cast key by key (``for name in names: w[name] = w[name].half()``
    after ``names = list(w.keys())``) holds half tensors under every key, also where a method reads it
    back from the field the local was bound to (``w = self.weights``)."""
    code = """
    import torch

    class Decoder:
        def __init__(self, path):
            self.weights = torch.load(path)
            w = self.weights
            names = list(w.keys())
            for name in names:
                if name.endswith(".bias"):
                    continue
                w[name] = w[name].to(torch.float16)

        def step(self, token):
            w = self.weights
            h = w["embed"][token]
            return h  # <-

    Decoder("ckpt.pt").step(3)
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["h"] for ctx in values] == ["tensor float16"]


@pytest.mark.parametrize("loop", [
    "for key, value in state.items():\n    state[key] = value.half()",
    "for key in state:\n    state[key] = state[key].half()",
])
def test_a_local_state_dict_cast_over_its_keys_reads_back_half(tmp_path: Path, loop: str) -> None:
    """A loop may run no time: after it the dict may also be the one loaded, of unknown content."""
    code = "import torch\nstate = torch.load('ckpt.pt')\n" + loop + "\nlogits = state['head']  # <-\n"
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["logits"] for ctx in values] == ["tensor float16 (or unknown)"]


def test_a_store_under_keys_of_another_container_leaves_an_unknown_dict_unknown(tmp_path: Path) -> None:
    """Keys of ``other`` say nothing about which keys ``state`` holds; nor does a loop over a range
    (an index into a tensor)."""
    code = """
    import torch
    state = torch.load("ckpt.pt")
    other = torch.load("other.pt")
    buf = torch.load("buf.pt")
    for key in other.keys():
        state[key] = other[key].half()
    for i in range(4):
        buf[i] = buf[i].half()
    print(state["head"], buf[0])  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [(ctx['state["head"]'], ctx["buf[0]"]) for ctx in values] == [("unknown", "unknown")]


#: a model whose ``forward`` (an ``exp``, AMP204 in float16) the services below never call: they
#: call its ``infer``
_HALF_VOCODER = """
    import torch
    from torch import nn

    class Vocoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 16)
        def forward(self, x):
            return torch.exp(self.proj(x))
        def infer(self, x):
            return self.proj(x).tanh()
"""


def test_a_half_model_kept_in_a_field_and_used_only_through_a_method_runs_its_forward_as_a_guess(
        tmp_path: Path) -> None:
    """``self.net = self.net.half()`` in a service class whose only use of ``self.net`` is its own
    ``infer`` method: the forward is a guess, as for a model bound to a name. The uses read are those
    of the field ``self.net``, not every ``self.method()`` call of the service; where the service
    calls ``self.net(x)``, the forward is the program's own."""
    code = _HALF_VOCODER + """
    class Service:
        def __init__(self):
            self.net = Vocoder()
            self.net = self.net.half()
        def run(self, x):
            return self.net.infer(x)
        def warm_up(self):
            return self.run(torch.randn(2, 16).half())

    svc = Service()
    print(svc.run(torch.randn(2, 16).half()))
    """
    assert _codes(tmp_path, code) == []
    called = code.replace("return self.net.infer(x)", "return self.net(x)")
    assert _codes(tmp_path, called) == [f"{_line_of(code, 'torch.exp(')}: AMP204"]


def test_a_buffer_that_may_be_none_casts_with_its_module(tmp_path: Path) -> None:
    """``register_buffer("bias", mask)`` where ``mask`` is a tensor on one branch and None on the
    other (a window mask only shifted blocks have): the tensor is a buffer, cast with the module."""
    code = """
    import torch
    from torch import nn
    import settings

    class Window(nn.Module):
        def __init__(self, shifted):
            super().__init__()
            self.qk = nn.Linear(32, 32)
            if shifted:
                bias = torch.zeros(16, 16)
            else:
                bias = None
            self.register_buffer("bias", bias)

        def forward(self, x):
            scores = self.qk(x) @ x.transpose(-1, -2)
            if self.bias is not None:
                scores = scores + self.bias
            return scores  # <-

    Window(settings.SHIFTED).half()(torch.randn(16, 32).half())
    """
    values = [ctx["scores"] for ctx in values_at(tmp_path, {"m.py": code}, "m.py", "# <-")]
    assert values[0] == "tensor float16" and not any("float32" in value for value in values), values


def test_a_batch_of_unknown_kind_given_to_an_apex_o2_model_may_be_a_half_tensor(tmp_path: Path) -> None:
    """apex O2 patches the model's forward to cast its floating inputs to float16: an input from a
    data loader (of unknown kind) is float16 there if it is a floating tensor, so an elementwise loss
    against the model's output and its full sum are float16 (AMP203: a sum over an image batch)."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    from apex import amp

    class Autoencoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec = nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, img):
            err = F.mse_loss(self.dec(img), img, reduction="none")
            return err.sum() / img.numel()

    model = Autoencoder().cuda()
    opt = torch.optim.AdamW(model.parameters())
    model, opt = amp.initialize(model, opt, opt_level="O2")
    for img in loader:
        loss = model(img)
        with amp.scale_loss(loss, opt) as scaled:
            scaled.backward()
        opt.step()
    """
    codes = _codes(tmp_path, code)
    assert f"{_line_of(code, 'err.sum()')}: AMP203" in codes
    values = values_at(tmp_path, {"m.py": code}, "m.py", "err = F.mse_loss(")
    assert any("tensor float16" in ctx["img"] for ctx in values), values


def test_an_elementwise_loss_of_a_learned_output_is_a_learned_value(tmp_path: Path) -> None:
    """``F.l1_loss(target, out, reduction="none")`` is as large as the layer output ``out`` (its
    second input): its full sum can overflow float16 as the output's own can."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, noisy, clean):
            residual = F.l1_loss(clean, self.body(noisy), reduction="none")
            return residual.sum()

    net = Denoiser().half()
    net(torch.randn(4, 3, 64, 64).half(), torch.randn(4, 3, 64, 64).half())
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'F.l1_loss(')}: AMP202",
                                      f"{_line_of(code, 'residual.sum()')}: AMP203"]


def test_a_dict_built_from_pairs_a_comprehension_makes_holds_their_values(tmp_path: Path) -> None:
    """``dict([(key, AdamW(...)) for key, params in groups.items()])``: the keys are not known, the
    values are, and a lookup by any key (``optims["disc"]``) reads one of them."""
    code = """
    import torch
    from torch.optim import AdamW

    def build(groups):
        return dict([(key, AdamW(params, lr=1e-4)) for key, params in groups.items()])

    nets = {"gen": torch.nn.Linear(4, 4), "disc": torch.nn.Linear(4, 1)}
    optims = build({name: nets[name].parameters() for name in nets})
    disc = optims["disc"]  # <-
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["disc"] for ctx in values] == ["optimizer torch.optim.AdamW"]


def test_a_timm_model_is_built_from_the_registrations_the_program_imports(tmp_path: Path) -> None:
    """Two model files register models with timm, one for each script; the fine-tuning script imports
    only its own: ``create_model(args.model)`` builds one of those, not a model the other script's
    file registered (under the same name or another)."""
    other = _TIMM_MODELS.replace("Mixer", "Probe").replace("mixer_tiny", "probe_tiny").replace(
        "probs = scores.softmax(dim=-1)  # <- probs", "probs = scores.softmax(dim=-1)  # <- other")
    other += "\n\n@register_model\ndef mixer_tiny(pretrained=False, **kwargs):\n    return Probe(**kwargs)\n"
    files = {"zoo_models.py": _TIMM_MODELS, "analysis/probe_models.py": other,
             "app.py": _TIMM_APP.format(model="args.model")}
    assert _codes_in_project(tmp_path, files, "AMP201") == [
        f"zoo_models.py:{_line_of(_TIMM_MODELS, '# <- probs')}: AMP201"]


def test_a_deepspeed_config_the_program_writes_is_the_one_its_engine_reads(tmp_path: Path) -> None:
    """``create_ds_config(args)`` sets ``args.deepspeed_config`` to a path and writes a dict with
    ``"fp16": {"enabled": True}`` there as JSON; ``deepspeed.initialize(args=args, ...)`` reads that
    file: the engine casts the model to float16 (a softmax in its forward is a finding). A written
    config that enables neither half leaves the model as it was."""
    code = """
    import json
    import os
    import deepspeed
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
        def forward(self, x):
            return torch.softmax(self.fc(x), dim=-1)

    def create_ds_config(args):
        args.deepspeed_config = os.path.join(args.output_dir, "deepspeed_config.json")
        with open(args.deepspeed_config, "w") as writer:
            config = {"train_batch_size": args.batch_size, "fp16": {"enabled": True, "loss_scale": 0}}
            writer.write(json.dumps(config, indent=2))

    def main(args):
        create_ds_config(args)
        model = Net()
        engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
        for step in range(10):
            loss = engine(torch.randn(4, 16)).float().sum()
            engine.backward(loss)
            engine.step()
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'torch.softmax(')}: AMP201"]
    assert _codes(tmp_path, code.replace('"enabled": True', '"enabled": False')) == []


def test_an_object_made_where_the_other_path_left_none_excludes_that_path(tmp_path: Path) -> None:
    """``if args.deepspeed: step = None`` (and DeepSpeed's fp16 engine) ``else: step = ScaledStep()``
    (a project class around a GradScaler, over a float32 model): where ``step`` is not None the
    model is not DeepSpeed's, so the gradient norms it takes are of float32 parameters (no AMP203);
    where it is None the engine's float16 loss stays a finding (AMP202)."""
    code = """
    import deepspeed
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(64, 64)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))


    class ScaledStep:
        def __init__(self):
            self.scaler = torch.amp.GradScaler("cuda")

        def __call__(self, loss, optimizer, parameters):
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(optimizer)
            norms = [p.grad.detach().norm() for p in parameters if p.grad is not None]
            total = torch.stack(norms).norm()  # <-
            self.scaler.step(optimizer)
            self.scaler.update()
            optimizer.zero_grad()
            return total


    def fit(model, optimizer, batches, step):
        for x, y in batches:
            if step is None:
                loss = F.cross_entropy(model(x.half()), y)
                model.backward(loss)
                model.step()
            else:
                with torch.autocast("cuda"):
                    loss = F.cross_entropy(model(x), y)
                step(loss, optimizer, model.parameters())


    def main(args):
        model = Net().cuda()
        if args.deepspeed:
            step = None
            model, optimizer, _, _ = deepspeed.initialize(
                model=model, model_parameters=model.parameters(),
                config={"train_batch_size": 8, "fp16": {"enabled": True}})
        else:
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            step = ScaledStep()
        fit(model, optimizer, [(torch.randn(8, 64).cuda(), torch.zeros(8, dtype=torch.long).cuda())], step)
    """
    assert _codes(tmp_path, code) == [f"{_line_of(code, 'loss = F.cross_entropy(model(x.half()), y)')}: AMP202"]


def test_an_indexed_layer_of_a_loaded_half_model_is_half(tmp_path: Path) -> None:
    """``model.transformer.h[k]`` of a checkpoint loaded in float16 (a library class, its layers
    unknown by name): the indexed layer is a submodule with the model's cast, as its attributes
    are, so the weights of its ``nn.Linear`` layers are float16 and the mean squared distance of
    loaded features (of unknown dtype) to them is a finding (AMP203)."""
    code = """
    import torch
    from torch import nn
    from transformers import AutoModelForCausalLM

    def probe(model, feats):
        blocks = model.transformer.h
        for k in range(len(blocks)):
            block = blocks[k]  # <-
            linears = {n: m for n, m in block.named_modules() if isinstance(m, nn.Linear)}
            for name, layer in linears.items():
                print(name, (feats - layer.weight).pow(2).mean())

    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16)
    probe(model, torch.load("features.pt"))
    """
    assert one(tmp_path, code, "# <-", "block") == ["module a model with float16 parameters"]
    assert _codes(tmp_path, code) == [f"{_line_of(code, '.pow(2).mean()')}: AMP203"]


def test_unpacking_a_slice_of_a_module_list_gives_its_layers(tmp_path: Path) -> None:
    """``inner, outer = self.stages[k:k + 2]`` in a loop over a ``ModuleList``'s indices: each name
    is one of the list's layers, cast with their model, so a softmax in a layer of a model cast
    to half is a finding."""
    code = """
    import torch
    from torch import nn

    class Mixer(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.score = nn.Linear(width, width)

        def forward(self, h):
            weights = self.score(h).softmax(dim=-1)
            return weights * h

    class Stack(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.stages = nn.ModuleList([Mixer(width) for _ in range(2 * depth)])

        def forward(self, h):
            for k in range(0, len(self.stages), 2):
                inner, outer = self.stages[k:k + 2]  # <-
                h = outer(inner(h))
            return h

    net = Stack(32, 3).half()
    print(net(torch.randn(4, 32, dtype=torch.float16)))
    """
    assert set(one(tmp_path, code, "# <-", "inner")) == {"module Mixer with float16 parameters"}
    assert _codes(tmp_path, code) == [f"{_line_of(code, '.softmax(')}: AMP201"]


def test_a_wrapper_instance_keeps_the_model_it_was_given(tmp_path: Path) -> None:
    """A plain class that keeps the model it is given (``self.net = net``) and calls it: the
    sampling script wraps a half model, the training script a float32 one. Each wrapper calls its
    own model, so the training loop is found in fp32 (AMP001) whatever order the files are
    analysed in; the class's field, the join of both, made the training loss half when the
    sampling script ran first."""
    files = {
        "diffusion.py": """
        import torch


        class Wrapped:
            def __init__(self, net, scale):
                self.net = net
                self.scale = scale

            def __call__(self, x, t):
                return self.net(x, t * self.scale)


        class Diffusion:
            def wrap(self, net):
                return Wrapped(net, 1000)

            def loss(self, net, x0, t):
                out = self.wrap(net)(x0 + torch.randn_like(x0), t)
                return ((out - x0) ** 2).mean()

            def sample(self, net, shape, dtype):
                x = torch.randn(shape, dtype=dtype)
                for step in range(10):
                    x = self.wrap(net)(x, torch.full((shape[0],), step, dtype=dtype))
                return x
        """,
        "model.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 16)

            def forward(self, x, t):
                return self.fc(x) * t[:, None]
        """,
        "sample.py": """
        import torch
        from diffusion import Diffusion
        from model import Net

        if __name__ == "__main__":
            net = Net().half()
            print(Diffusion().sample(net, (2, 16), torch.float16))
        """,
        "train.py": """
        import torch
        from diffusion import Diffusion
        from model import Net

        if __name__ == "__main__":
            net = Net()
            opt = torch.optim.AdamW(net.parameters())
            diffusion = Diffusion()
            for x0 in torch.randn(100, 2, 16):
                loss = diffusion.loss(net, x0, torch.rand(2))
                loss.backward()
                opt.step()
                opt.zero_grad()
        """,
    }
    line = _line_of(files["train.py"], "loss.backward()")
    assert _codes_in_project(tmp_path, files, "AMP001") == [f"train.py:{line}: AMP001"]


def test_a_weights_dict_an_instance_fills_with_half_tensors_reads_back_half(tmp_path: Path) -> None:
    """``self.params = {}`` then ``self.params[name] = t.to(dtype)`` over a loaded checkpoint's keys,
    ``dtype`` picked from a precision string: the field's dict holds those tensors, so a method that
    reads ``self.params["head"]`` multiplies by a float16 (or, for "bf16", bfloat16) weight."""
    code = """
    import torch

    class Runner:
        def __init__(self, path, precision):
            dtype = torch.float16 if precision == "fp16" else torch.bfloat16
            raw = torch.load(path)
            self.params = {}
            for name in list(raw.keys()):
                self.params[name] = raw[name].t().to(dtype)

        def logits(self, h):
            head = self.params["head"]
            return h @ head  # <-

    Runner("model.pth", "fp16").logits(torch.randn(4, 8))
    """
    values = values_at(tmp_path, {"m.py": code}, "m.py", "# <-")
    assert [ctx["head"] for ctx in values] == ["tensor float16"]


def test_a_half_model_given_to_a_project_function_that_only_keeps_a_cache_on_it_is_not_handed_on(
        tmp_path: Path) -> None:
    """``memoized(self.net, key, fn, x)`` where ``memoized`` only reads and sets a cache attribute on
    its first argument and calls ``fn``: the model is not handed to code that runs its forward, so
    its forward, which the program never calls, is a guess (low confidence, shown in preview only).
    Where the helper calls the model it is given, the forward is the program's own."""
    code = _HALF_VOCODER + """
    def memoized(owner, key, fn, *inputs):
        cache = getattr(owner, "_memo", None)
        if cache is None:
            cache = {}
            setattr(owner, "_memo", cache)
        return fn(*inputs)

    class Service:
        def __init__(self):
            self.net = Vocoder()
            self.net = self.net.half()
        def run(self, x):
            return memoized(self.net, "infer", lambda t: self.net.infer(t), x)

    print(Service().run(torch.randn(2, 16).half()))
    """
    assert _codes(tmp_path, code) == []
    calling = code.replace("return fn(*inputs)", "return owner(*inputs)")
    assert _codes(tmp_path, calling) == [f"{_line_of(code, 'torch.exp(')}: AMP204"]


def test_models_a_plugin_loop_of_the_program_registers_are_among_those_it_builds(tmp_path: Path) -> None:
    """The program imports one model file and a package whose ``__init__`` imports each module of
    its folder by name (``importlib.import_module("plugins." + name)``): the models both register are
    among those ``create_model(args.model)`` builds."""
    other = _TIMM_MODELS.replace("Mixer", "Probe").replace("mixer_tiny", "probe_tiny").replace(
        "# <- probs", "# <- other")
    plugins = """
    import importlib
    import os

    for name in sorted(os.listdir(os.path.dirname(__file__))):
        if name.endswith(".py") and not name.startswith("_"):
            importlib.import_module("plugins." + name[:-3])
    """
    app = _TIMM_APP.format(model="args.model").replace("import zoo_models", "import zoo_models\nimport plugins")
    files = {"zoo_models.py": _TIMM_MODELS, "plugins/__init__.py": plugins, "plugins/probe.py": other,
             "app.py": app}
    assert _codes_in_project(tmp_path, files, "AMP201") == [
        f"plugins/probe.py:{_line_of(other, '# <- other')}: AMP201",
        f"zoo_models.py:{_line_of(_TIMM_MODELS, '# <- probs')}: AMP201"]


def test_a_scaler_tested_by_class_where_a_string_stands_in_for_it(tmp_path: Path) -> None:
    """``scaling = "off"``, then ``scaling = GradScaler()`` and an autocast factory under one flag;
    the step tests ``not isinstance(scaling, GradScaler)``: the branch where it is no scaler runs
    where the flag is false, so its plain ``backward()`` meets no autocast (no AMP102). A class
    test that says nothing of the scaler (``isinstance(scaling, dict)``) refutes nothing. Before,
    a string in place of the scaler and a class test left the flag's condition unrefuted."""
    code = """
    import contextlib
    import torch
    def train(net, opt, batches, half):
        region, scaling = contextlib.nullcontext, "off"
        if half:
            region = torch.autocast
            scaling = torch.amp.GradScaler("cuda")
        for x, y in batches:
            with region("cuda"):
                cost = torch.nn.functional.l1_loss(net(x), y)
            if not isinstance(scaling, CLASS):
                cost.backward()  # plain
                opt.step()
            else:
                scaling.scale(cost).backward()
                scaling.step(opt)
                scaling.update()
    net = torch.nn.Linear(4, 4)
    train(net, torch.optim.SGD(net.parameters(), lr=0.1), [], input() == "y")
    """
    line = f"{_line_of(code, '# plain')}: AMP102"
    assert line not in _codes(tmp_path, code.replace("CLASS", "torch.amp.GradScaler"))
    assert line in _codes(tmp_path, code.replace("CLASS", "dict"))


def test_the_program_runs_before_its_tests(tmp_path: Path) -> None:
    """Test files run after the program's own files: a test module that calls a helper with forty
    kinds of record does not spend the helper's contexts before the training script calls it with
    half scores (before, ``tests/`` sorted before ``train.py`` and the softmax was not found)."""
    kinds = "\n".join(f"class Sample{i}:\n    pass\n" for i in range(40))
    calls = "\n".join(f"normed{i} = ops.normalise(Sample{i}())" for i in range(40))
    files = {
        "ops.py": """
            import torch
            def normalise(logits):
                return torch.log_softmax(logits, dim=-1)  # <-
            """,
        "tests/test_ops.py": f"import ops\n\n{kinds}\n{calls}\n",
        "train.py": """
            import torch
            import ops
            logits = torch.randn(4, 8).to(torch.float16)
            normed = ops.normalise(logits)
            """,
    }
    assert "ops.py:3: AMP201" in _codes_in_project(tmp_path, files, "AMP201")


def test_a_causal_lm_loaded_in_its_checkpoint_dtype_is_half(tmp_path: Path) -> None:
    """``XForCausalLM.from_pretrained(name, torch_dtype="auto")`` loads the dtype its checkpoint was
    stored in, float16 or bfloat16 for the causal language models on the Hub: a loss on its logits
    outside autocast is reported, and the message says where the dtype comes from. "auto" on
    another class (GPT-2's ``GPT2LMHeadModel``, stored in float32) is no evidence. Before, "auto"
    was read as float32 everywhere."""
    code = """
    import sys
    import torch
    from transformers import CLASS
    model = CLASS.from_pretrained(sys.argv[1], torch_dtype="auto")
    ids = torch.randint(0, 100, (1, 16))
    logits = model(ids).logits
    nll = torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:])  # <-
    """
    line = f"{_line_of(code, '# <-')}: AMP202"
    assert line in _codes(tmp_path, code.replace("CLASS", "MistralForCausalLM"))
    assert line not in _codes(tmp_path, code.replace("CLASS", "GPT2LMHeadModel"))
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP202", str(tmp_path / "m.py")], capture_output=True, text=True).stdout
    assert "checkpoint" not in text  # the last file checked is GPT-2's: nothing to say
    (tmp_path / "m.py").write_text(textwrap.dedent(code.replace("CLASS", "MistralForCausalLM")).lstrip("\n"))
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP202", str(tmp_path / "m.py")], capture_output=True, text=True).stdout
    assert "its checkpoint's float16 or bfloat16" in text


def test_lightning_runs_the_training_step_under_the_trainers_precision(tmp_path: Path) -> None:
    """``Trainer(precision="16-mixed").fit(model)`` runs the model's ``training_step`` under CUDA
    autocast: a ``-1e9`` fill of the float16 scores (which raises there) and a misaligned layer
    that computes in float16 are reported; at ``"32-true"`` neither is, and at a precision nobody
    knows (or with a DeepSpeed strategy, which casts the model instead) the hook is left to the
    analysis of code nobody calls. Before, ``training_step`` was only analysed as code nobody
    calls, with no autocast."""
    code = """
    import lightning as L
    import torch
    from torch import nn
    class Tagger(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(256, 1001)  # layer
        def training_step(self, batch, batch_idx):
            x, y, pad = batch
            scores = self.body(x).masked_fill(pad, -1e9)  # fill
            return nn.functional.cross_entropy(scores, y)
        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters())
    trainer = L.Trainer(precision=PRECISION, max_epochs=1, strategy=STRATEGY)
    trainer.fit(Tagger(), train_dataloaders=None)
    """
    expected = [f"{_line_of(code, '# layer')}: AMP402", f"{_line_of(code, '# fill')}: AMP301"]

    def run(precision: str, strategy: str = '"ddp"') -> List[str]:
        return sorted(_codes(tmp_path, code.replace("PRECISION", precision).replace("STRATEGY", strategy)))

    assert run('"16-mixed"') == sorted(expected)
    assert run('"32-true"') == []
    assert run("input()") == []
    # DeepSpeed casts the model to half instead of running autocast: not modelled, left alone
    assert run('"16-mixed"', '"deepspeed_stage_2"') == []


def test_an_accelerator_launched_with_a_shipped_deepspeed_config_runs_the_model_in_half(tmp_path: Path) -> None:
    """``Accelerator()`` whose precision the code leaves to ``accelerate launch --config_file``, in a
    project that ships an accelerate config running DeepSpeed in float16: under that config the
    prepared model is DeepSpeed's float16 model, so a loss on its logits outside autocast is
    reported (naming the config), while the AdamW built before ``prepare`` trains DeepSpeed's
    float32 master weights (no AMP101/AMP302). A shipped config without DeepSpeed (autocast,
    float32 outputs) or an Accelerator given its precision in the code says nothing of the kind.
    Before, the launcher's precision was not looked at."""
    config = """
        compute_environment: LOCAL_MACHINE
        distributed_type: KIND
        mixed_precision: fp16
        num_processes: 8
        """
    train = """
        import torch
        from accelerate import Accelerator
        from torch import nn
        accelerator = Accelerator(ARGS)
        model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 1000))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model, optimizer = accelerator.prepare(model, optimizer)
        for ids in []:
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
            accelerator.backward(loss)
            optimizer.step()
        """

    def run(kind: str, args: str = "") -> List[str]:
        files = {"configs/accelerate/launch.yaml": config.replace("KIND", kind),
                 "train.py": train.replace("ARGS", args)}
        return _codes_in_project(tmp_path, files, "AMP1,AMP2,AMP3")

    assert run("DEEPSPEED") == ["train.py:10: AMP202"]
    # beside a bfloat16 config listed first, the finding names the float16 one
    (tmp_path / "configs/accelerate/a_bf16.yaml").write_text(
        textwrap.dedent(config.replace("KIND", "DEEPSPEED").replace("fp16", "bf16")), encoding="utf-8")
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP202", "."], capture_output=True, text=True, cwd=tmp_path).stdout
    assert "the run's accelerate config is configs/accelerate/launch.yaml" in text
    (tmp_path / "configs/accelerate/a_bf16.yaml").unlink()
    assert run("MULTI_GPU") == []
    assert run("DEEPSPEED", 'mixed_precision="no"') == []
    text = subprocess.run([sys.executable, "-m", "amp_lint", "check", "--isolated", "--no-cache", "--select",
                           "AMP202", "."], capture_output=True, text=True, cwd=tmp_path).stdout
    assert "configs/accelerate/launch.yaml" not in text  # the last run gave its precision in the code


def test_an_engine_with_master_weights_stays_apart_from_the_plain_model_in_a_field(tmp_path: Path) -> None:
    """A field that holds the float32 model and, after ``deepspeed.initialize``, DeepSpeed's float16
    engine (which keeps float32 master weights) holds both, apart: an optimizer built later over
    its parameters trains float32 masters (no AMP302). Where the field gets a plain ``.half()``
    model instead, AMP302 is reported. Before, the two joined into one model of float16 or
    float32 parameters without master weights."""
    code = """
    import deepspeed
    import torch
    from torch import nn
    class Runner:
        def __init__(self):
            self.net = nn.Linear(64, 64)
        def to_engine(self):
            self.net = ENGINE
        def fresh_optimizer(self):
            return torch.optim.Adam(self.net.parameters(), lr=1e-4)  # <-
    runner = Runner()
    runner.to_engine()
    opt = runner.fresh_optimizer()
    """
    line = f"{_line_of(code, '# <-')}: AMP302"
    engine = 'deepspeed.initialize(model=self.net, config={"fp16": {"enabled": True}})[0]'
    assert line not in _codes(tmp_path, code.replace("ENGINE", engine))
    assert line in _codes(tmp_path, code.replace("ENGINE", "self.net.half()"))


def test_flags_the_program_asserts_exclusive_separate_apex_from_native_autocast(tmp_path: Path) -> None:
    """``assert not (args.apex and args.native)``: apex O1 (set up under ``args.apex``) does not
    protect a loss on what a native autocast region (``args.native``) made half, so the loss
    outside the region is reported. Without the assertion the two flags may both hold, and apex's
    patched loss would run in float32 there: nothing is reported."""
    code = """
    import argparse
    import contextlib
    import torch
    from apex import amp
    parser = argparse.ArgumentParser()
    parser.add_argument("--apex", action="store_true")
    parser.add_argument("--native", action="store_true")
    args = parser.parse_args()
    ASSERTION
    net = torch.nn.Linear(8, 4).cuda()
    region = contextlib.nullcontext
    if args.native:
        region = torch.cuda.amp.autocast
    if args.apex:
        net = amp.initialize(net, opt_level="O1")
    for x, y in []:
        with region():
            out = net(x)
        loss = torch.nn.functional.cross_entropy(out, y)  # <-
    """
    line = f"{_line_of(code, '# <-')}: AMP202"
    assert line in _codes(tmp_path, code.replace("ASSERTION", "assert not (args.apex and args.native)"))
    assert line in _codes(tmp_path, code.replace("ASSERTION", "assert not args.apex or not args.native"))
    assert line not in _codes(tmp_path, code.replace("ASSERTION", "pass"))


def test_a_layer_named_in_a_config_and_built_by_eval_is_a_model_of_no_known_class(tmp_path: Path) -> None:
    """``m = eval(name)`` of a layer name read from a model YAML (YOLO's ``parse_model``) is one of
    the project's module classes: what it builds is a model of no known class, which computes in its
    own dtype once the whole model is cast to half. ``eval`` of a known name is that name."""
    files = {
        "blocks.py": """
        import torch.nn as nn
        class Conv(nn.Module):
            def __init__(self, c1, c2):
                super().__init__()
                self.conv = nn.Conv2d(c1, c2, 3)
            def forward(self, x):
                return self.conv(x)
        """,
        "model.py": """
        import yaml
        import torch
        import torch.nn as nn
        from blocks import *
        def parse_model(spec):
            layers = []
            for name, args in spec["layers"]:
                m = eval(name) if isinstance(name, str) else name
                layers.append(m(*args))
            return nn.Sequential(*layers)
        class Net(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.model = parse_model(yaml.safe_load(open(cfg)))
                self.act = eval("nn.SiLU")()
            def forward(self, x):
                for m in self.model:
                    x = m(x)
                return x, [x]
        def validate(model, loader, half):
            model.half() if half else model.float()
            for im, y in loader:
                im = im.half() if half else im.float()
                preds, train_out = model(im)
                loss = torch.nn.functional.cross_entropy(train_out[0], y)  # <-
        validate(Net("net.yaml").cuda(), [], True)
        """,
    }
    values = value_of(tmp_path, files, "model.py", "# <-", "train_out[0]")
    assert values and all("tensor float16" in v for v in values), values
    assert value_of(tmp_path, files, "model.py", "self.act = ", "self.act") == [
        "module torch.nn.SiLU with float32 parameters"]
    assert f"model.py:{_line_of(files['model.py'], '# <-')}: AMP202" in _codes_in_project(tmp_path, files, "AMP202")


def test_a_model_cast_to_half_and_back_in_one_statement_stays_float32(tmp_path: Path) -> None:
    """``model.half().float()`` (YOLO's "pre-reduce anchor precision"): each cast is in place, so
    ``model`` holds float32 after the statement, not the half in between."""
    code = """
    import torch
    model = torch.nn.Linear(4, 4).cuda()
    model.half().float()
    out = model(torch.randn(2, 4).cuda())  # <-
    """
    assert one(tmp_path, code, "# <-", "model") == ["module torch.nn.Linear with float32 parameters"]
    # a cast at the end of a chain of in-place methods changes the name too
    chained = code.replace("model.half().float()", "model.cuda().half()")
    assert [v.split("\n")[0] for v in one(tmp_path, chained, "# <-", "model")] == [
        "module torch.nn.Linear with float16 parameters"]


def test_parameters_cast_back_to_float32_in_a_loop_make_the_model_float32(tmp_path: Path) -> None:
    """CLIP's ``convert_models_to_fp32``: ``p.data = p.data.float()`` over every parameter undoes a
    helper's cast to half, so the GradScaler made under the same flag is given float32 gradients
    (no AMP106). The unscaled backwards on the branches where the flag keeps the model half are
    steps of their own, in pure float16 (AMP102), though a flag, not the scaler's presence,
    separates them from the scaled one."""
    code = """
    import torch
    import torch.nn as nn
    from torch.cuda.amp import GradScaler, autocast
    def convert_weights(model):
        def to_half(layer):
            if isinstance(layer, nn.Linear):
                layer.weight.data = layer.weight.data.half()
        model.apply(to_half)
    def convert_models_to_fp32(model):
        for p in model.parameters():
            p.data = p.data.float()
    def train(model, optimizer, scaler, loader, args):
        for x, y in loader:
            optimizer.zero_grad()
            if args.accum_freq == 1:
                if args.precision == "amp":
                    with autocast():
                        loss = torch.nn.functional.cross_entropy(model(x), y)
                        scaler.scale(loss).backward()
                        scaler.step(optimizer)
                    scaler.update()
                else:
                    loss = torch.nn.functional.cross_entropy(model(x), y)  # <-
                    loss.backward()
                    optimizer.step()
            else:
                with autocast(enabled=(args.precision == "amp")):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                if args.precision == "amp":
                    scaler.scale(loss).backward()
                else:
                    loss.backward()
                if args.precision == "amp":
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
    def main(args, loader):
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
        convert_weights(model)
        if args.precision == "amp" or args.precision == "fp32":
            convert_models_to_fp32(model)
        model.cuda()
        if args.precision == "fp16":
            convert_weights(model)
        optimizer = torch.optim.AdamW(model.parameters(), eps=1e-6)
        scaler = GradScaler() if args.precision == "amp" else None
        train(model, optimizer, scaler, loader, args)
    if __name__ == "__main__":
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--precision", default="amp")
        main(parser.parse_args(), [])
    """
    codes = _codes(tmp_path, code)
    assert not any(c.endswith("AMP106") for c in codes), codes
    assert f"{_line_of(code, '# <-') + 1}: AMP102" in codes
    assert sum(c.endswith("AMP102") for c in codes) == 2, codes  # and the accumulation branch's


def test_unpacking_a_value_that_is_a_tensor_or_a_tuple_takes_the_tuples_items(tmp_path: Path) -> None:
    """``forward`` returns one tensor on an early return and a triple at its end: unpacking the
    call into three names gives each the items (and the rows of the tensor), not unknown; a tuple
    of another length, or a list of unknown length beside it, leaves the rest known."""
    code = """
    import torch
    class Clip(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = torch.nn.Linear(8, 8)
            self.scale = torch.nn.Parameter(torch.ones([]))
        def forward(self, image, text=None):
            if text is None:
                return self.visual(image)
            if image is None:
                return text, None
            return self.visual(image), self.visual(text), self.scale.exp()
    model = Clip().cuda().half()
    image_features, text_features, logit_scale = model(torch.randn(2, 8).cuda().half(), 1)  # <-
    """
    assert one(tmp_path, code, "# <-", "image_features") == ["tensor float16"]
    assert one(tmp_path, code, "# <-", "text_features") == ["tensor float16"]


def test_a_vector_divided_by_its_own_norm_holds_no_large_values(tmp_path: Path) -> None:
    """``x /= x.norm(dim=-1, keepdim=True)`` scales to unit length: the norm of the mean of such
    rows cannot overflow, so it is not reported as a whole-tensor norm in half (AMP203); the norm
    of the raw features is."""
    code = """
    import torch
    model = torch.nn.Linear(512, 512).cuda().half()
    def class_weights(batches):
        out = []
        for x in batches:
            emb = model(x)
            RAW
            emb /= emb.norm(dim=-1, keepdim=True)
            mean = emb.mean(dim=0)
            mean /= mean.norm()  # <-
            out.append(mean)
        return out
    class_weights([torch.randn(4, 512).cuda().half()])
    """
    line = f"{_line_of(code, '# <-')}: AMP203"
    assert line not in _codes(tmp_path, code.replace("RAW", "pass"))
    assert line in _codes(tmp_path, code.replace("RAW", "pass").replace(
        "emb /= emb.norm(dim=-1, keepdim=True)", "emb = emb * 2"))


def test_a_float32_autocast_region_runs_the_listed_ops_in_float32(tmp_path: Path) -> None:
    """``torch.autocast("cuda", dtype=torch.float32)`` around a model whose own bfloat16 region
    makes its logits: the ``log_softmax`` after that inner region runs in the outer float32
    autocast, in float32 (not reported); called where no autocast is open, it runs in bfloat16."""
    code = """
    import torch
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 100)
        def forward(self, x):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = self.proj(x)
            return logits.log_softmax(-1)  # <-
    head = Head().cuda()
    def score(x):
        with torch.autocast("cuda", dtype=torch.float32):
            return head(x)
    score(torch.randn(2, 16).cuda())
    OUTSIDE
    """
    line = f"{_line_of(code, '# <-')}: AMP201"
    assert one(tmp_path, code.replace("OUTSIDE", ""), "# <-", "logits.log_softmax(-1)") == ["tensor float32"]
    assert line not in _codes(tmp_path, code.replace("OUTSIDE", ""))
    assert line in _codes(tmp_path, code.replace("OUTSIDE", "head(torch.randn(2, 16).cuda())"))


def test_a_converter_that_reads_data_of_a_named_layer_raises_and_casts_nothing(tmp_path: Path) -> None:
    """CLIP's ``convert_weights`` casts ``attr.data`` of the attributes it names (``text_projection``),
    a parameter in CLIP. Where the model's ``text_projection`` is a layer (CLAP's ``nn.Sequential``),
    ``.data`` raises AttributeError: nothing is cast and no finding rests on that cast."""
    code = """
    import torch
    import torch.nn as nn
    def convert_weights(model):
        def to_fp16(l):
            if isinstance(l, (nn.Conv1d, nn.Linear)):
                l.weight.data = l.weight.data.half()
            for name in ["text_projection", "proj"]:
                if hasattr(l, name):
                    attr = getattr(l, name)
                    if attr is not None:
                        attr.data = attr.data.half()
        model.apply(to_fp16)
    class Clap(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(8, 8)
            PROJECTION
        def forward(self, x):
            return self.encoder(x)
    model = Clap().cuda()
    convert_weights(model)
    out = model(torch.randn(2, 8).cuda())
    loss = torch.nn.functional.cross_entropy(out, torch.zeros(2, dtype=torch.long).cuda())  # <-
    """
    line = f"{_line_of(code, '# <-')}: AMP202"
    assert line in _codes(tmp_path, code.replace("PROJECTION", "self.text_projection = nn.Parameter(torch.randn(8, 8))"))
    assert line not in _codes(tmp_path, code.replace("PROJECTION", "self.text_projection = nn.Sequential(nn.Linear(8, 8))"))


def test_a_loss_module_on_logits_of_unknown_dtype_is_no_integer_tensor(tmp_path: Path) -> None:
    """``nn.CrossEntropyLoss()(logits, labels)``: the loss takes the logits' floating dtype; the
    class-index target (int64) takes no part, so unknown logits give a loss of unknown dtype, not
    an int64 one (float half logits give a half loss)."""
    code = """
    import torch
    criterion = torch.nn.CrossEntropyLoss()
    def step(logits):
        labels = torch.arange(4).cuda()
        return criterion(logits, labels)  # <-
    step(UNKNOWN_LOGITS)
    step(torch.randn(4, 10).cuda().half())
    """
    values = one(tmp_path, code.replace("UNKNOWN_LOGITS", "load_logits()"), "# <-", "criterion(logits, labels)")
    assert values and all("int64" not in v for v in values), values
    assert any(v.startswith("tensor float16") for v in values), values


_D2_HEADS = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from detectron2.modeling import META_ARCH_REGISTRY


@META_ARCH_REGISTRY.register()
class KeypointNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Conv2d(3, 17, 1)

    def forward(self, batched_inputs):
        images = torch.stack([item["image"] for item in batched_inputs])
        heat = self.proj(images).flatten(2)
        spread = heat.abs().amax(dim=-1, keepdim=True)
        score = heat / (spread + 1e-9)  # <- score
        return {"loss": F.l1_loss(score, torch.zeros_like(score))}
"""

_D2_TRAIN = """
from detectron2.engine import AMPTrainer, SimpleTrainer, create_ddp_model
from detectron2.modeling import build_model
import heads  # registers KeypointNet


def run(cfg, loader, opt_builder):
    net = create_ddp_model(build_model(cfg))
    trainer_cls = AMPTrainer if cfg.SOLVER.AMP.ENABLED else SimpleTrainer
    trainer = trainer_cls(net, loader, opt_builder(net){precision})
    trainer.train(0, 100)
"""


def test_detectron2_amp_trainer_runs_the_registered_model_under_autocast(tmp_path: Path) -> None:
    """detectron2's ``build_model(cfg)`` builds a class the project registered with
    ``@META_ARCH_REGISTRY.register()``, and ``AMPTrainer(model, ...)`` runs its forward under CUDA
    autocast to its ``precision`` (float16 unless given). Before, the library's builder gave an
    unknown value and the model's forward ran only with unknown inputs: nothing was found."""
    line = _line_of(_D2_HEADS, "# <- score")
    files = {"heads.py": _D2_HEADS, "train.py": _D2_TRAIN.format(precision="")}
    values = value_of(tmp_path, files, "heads.py", "# <- score", "spread")
    assert any(v.startswith("tensor float16") for v in values), values
    assert _codes_in_project(tmp_path, files, "AMP302") == [f"heads.py:{line}: AMP302"]
    # bfloat16 represents 1e-9: nothing to report; SimpleTrainer alone runs in float32
    files["train.py"] = _D2_TRAIN.format(precision=", precision=torch.bfloat16").replace(
        "from detectron2.engine", "import torch\nfrom detectron2.engine")
    values = value_of(tmp_path, files, "heads.py", "# <- score", "spread")
    assert any(v.startswith("tensor bfloat16") for v in values), values
    assert _codes_in_project(tmp_path, files, "AMP302") == []
    files["train.py"] = _D2_TRAIN.format(precision="").replace("AMPTrainer if cfg.SOLVER.AMP.ENABLED else ", "")
    assert _codes_in_project(tmp_path, files, "AMP302") == []
    # the model passed by keyword
    files["train.py"] = _D2_TRAIN.format(precision="").replace("trainer_cls(net, loader,", "trainer_cls(model=net, data_loader=loader, optimizer=")
    assert _codes_in_project(tmp_path, files, "AMP302") == [f"heads.py:{line}: AMP302"]


def test_or_of_a_known_scalar_is_that_operand(tmp_path: Path) -> None:
    """``hidden = hidden or width`` is ``hidden`` where it is a known truthy number and ``width``
    where it is None: the operand Python returns, not the join of both. Before, a size passed as
    ``int(dim * 8 / 3)`` through such a default became a number of no known value, and AMP402 missed
    the misaligned layer."""
    code = """
    import torch
    import torch.nn as nn

    class GatedFFN(nn.Module):
        def __init__(self, width, inner=None, outer=None):
            super().__init__()
            inner = inner or width
            outer = outer or width
            self.gate = nn.Linear(width, inner)  # <- gate
            self.down = nn.Linear(inner, outer)

        def forward(self, x):
            return self.down(torch.sigmoid(self.gate(x)) * x)

    ffn = GatedFFN(768, inner=int(768 * 8 / 3)).cuda().half()
    ffn(torch.randn(4, 768, device="cuda", dtype=torch.float16))
    """
    assert one(tmp_path, code, "# <- gate", "inner") == ["scalar 2048"]
    code = code.replace("int(768 * 8 / 3)", "int(1000 * 8 / 3)").replace("768", "1000")
    assert one(tmp_path, code, "# <- gate", "inner") == ["scalar 2666"]
    line = _line_of(code, "# <- gate")
    found = [c for c in _codes(tmp_path, code) if c.endswith("AMP402")]
    assert found == [f"{line}: AMP402", f"{line + 1}: AMP402"], found


def test_a_field_set_to_a_constant_decides_its_branch(tmp_path: Path) -> None:
    """``if self.upcast:`` where the object's run set ``self.upcast = True`` (in ``__init__``, or
    to that constant wherever the class sets it): only that branch runs, so the float32 scores of ``q.float() @ k.float()`` reach the softmax (before, both branches
    ran and the half scores of the other made a false AMP201). A field of no known value, or one a
    method of the class sets to something else, still runs both."""
    code = """
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.qk = nn.Linear(dim, 2 * dim)
            self.upcast = FLAG

        def forward(self, x):
            q, k = self.qk(x).chunk(2, dim=-1)
            if self.upcast:
                scores = q.float() @ k.float().transpose(-2, -1)
            else:
                scores = q @ k.transpose(-2, -1)
            return scores.softmax(dim=-1).type_as(x)  # <- softmax

    net = Attention(64).cuda().half()
    net(torch.randn(2, 8, 64, device="cuda", dtype=torch.float16))
    """
    def softmax_findings(flag: str) -> List[str]:
        return [c for c in _codes(tmp_path, code.replace("FLAG", flag)) if c.endswith("AMP201")]
    line = _line_of(code, "# <- softmax")
    assert softmax_findings("True") == []
    assert softmax_findings("False") == [f"{line}: AMP201"]
    assert softmax_findings("torch.cuda.is_available()") == [f"{line}: AMP201"]
    # a test of another object's attribute is decided as before (``typing.TYPE_CHECKING`` is False)
    guarded = code.replace("        if self.upcast:", "        if typing.TYPE_CHECKING:").replace(
        "    import torch\n", "    import typing\n    import torch\n", 1).replace(
        "q.float() @ k.float().transpose(-2, -1)", "SWAP").replace(
        "q @ k.transpose(-2, -1)", "q.float() @ k.float().transpose(-2, -1)").replace("SWAP", "q @ k.transpose(-2, -1)")
    assert [c for c in _codes(tmp_path, guarded.replace("FLAG", "True")) if c.endswith("AMP201")] == []
    # set in ``__init__`` from a parameter the call leaves at its default: that value
    with_parameter = code.replace("def __init__(self, dim):", "def __init__(self, dim, upcast=True):")
    assert [c for c in _codes(tmp_path, with_parameter.replace("FLAG", "upcast")) if c.endswith("AMP201")] == []
    # a method that sets the field otherwise (one a library calls, which nothing here runs): undecided
    code = code.replace("        def forward(self, x):",
                        "        def __replicated__(self):\n            self.upcast = False\n\n        def forward(self, x):")
    assert softmax_findings("True") == [f"{line + 3}: AMP201"]


_PLUGIN_NET = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.score = nn.Linear(width, NUM)

    def forward(self, x):
        return self.score(x).softmax(dim=-1)  # <- softmax
"""

_PLUGIN_APP = """
import argparse
import importlib
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    name = ARCH
    Net = importlib.import_module(f"nets.{name}").Net
    net = Net().cuda().half()
    with torch.no_grad():
        print(net(torch.randn(2, 64, device="cuda", dtype=torch.float16)))


if __name__ == "__main__":
    main()
"""


def test_a_class_of_a_module_imported_by_a_chosen_name(tmp_path: Path) -> None:
    """``importlib.import_module(f"nets.{name}").Net``: where ``name`` is one of a few known strings
    the f-string is each of its texts and the module each of those; where it is chosen at run time,
    the module is any of the package's and ``.Net`` is any of their ``Net`` classes. Before, a union
    of module names made the f-string unknown, and an attribute of a union of modules was unknown:
    the model's class was lost."""
    files = {"nets/__init__.py": "", "nets/small.py": _PLUGIN_NET.replace("NUM", "16"),
             "nets/large.py": _PLUGIN_NET.replace("NUM", "1000"), "nets/wide.py": _PLUGIN_NET.replace("NUM", "32")}
    for i in range(6):  # more modules than a union of values holds: a registry of them
        files[f"nets/plain{i}.py"] = _PLUGIN_NET.replace("NUM", "64").replace(".softmax(dim=-1)", "")
    line = _line_of(_PLUGIN_NET, "# <- softmax")
    for arch in ('"small" if args.tiny else "large"', "args.arch"):
        files["app.py"] = _PLUGIN_APP.replace("ARCH", arch)
        values = value_of(tmp_path, files, "nets/large.py", "# <- softmax", "self.score(x).softmax(dim=-1)")
        assert any(v.startswith("tensor float16") for v in values), (arch, values)
        found = _codes_in_project(tmp_path, files, "AMP201")
        expected = ["nets/large.py", "nets/small.py"] + (["nets/wide.py"] if arch == "args.arch" else [])
        assert found == [f"{path}:{line}: AMP201" for path in expected], (arch, found)


_TIMM_BUILT = """
import torch
import torch.nn as nn
from timm.models import build_model_with_cfg, register_model


class Mixer(nn.Module):
    def __init__(self, width=64, classes=10, **kwargs):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        gates = self.proj(x).softmax(dim=-1)  # <- gates
        return self.head(x * gates)


@register_model
def mixer_small(pretrained=False, **kwargs):
    return build_model_with_cfg(Mixer, "mixer_small", pretrained, pretrained_filter_fn=None, width=96, **kwargs)
"""

_TIMM_TRAIN = """
import argparse
import torch
from apex import amp
from timm.models import create_model
import zoo

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet50")
args = parser.parse_args()
model = create_model(args.model, num_classes=10).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
for x, y in [(torch.randn(8, 96).cuda(), torch.randint(0, 10, (8,)).cuda())]:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    with amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    optimizer.step()
"""


def test_timm_build_model_with_cfg_builds_the_class_it_is_given(tmp_path: Path) -> None:
    """timm's ``build_model_with_cfg(cls, variant, pretrained, ..., **kwargs)`` is ``cls(**kwargs)``
    without the keywords it keeps for loading weights. Before, the helper's result was unknown, so a
    model a project registers through it (``create_model(args.model)``) ran no forward, and the
    Tensor ``softmax`` apex O1 leaves in float16 was missed."""
    files = {"zoo.py": _TIMM_BUILT, "train.py": _TIMM_TRAIN}
    line = _line_of(_TIMM_BUILT, "# <- gates")
    values = value_of(tmp_path, files, "zoo.py", "# <- gates", "gates")
    assert any(v.startswith("tensor float16") for v in values), values
    assert _codes_in_project(tmp_path, files, "AMP201") == [f"zoo.py:{line}: AMP201"]
    # the functional softmax apex O1 patched to float32: nothing to report
    files["zoo.py"] = _TIMM_BUILT.replace("self.proj(x).softmax(dim=-1)", "torch.nn.functional.softmax(self.proj(x), dim=-1)")
    assert _codes_in_project(tmp_path, files, "AMP201") == []


def test_a_join_of_equal_unions_keeps_the_half_evidence_of_both(tmp_path: Path) -> None:
    """An output that is float16 under apex O1 on one path and under native autocast on another,
    joined after ``with amp_autocast():`` (``suppress`` or ``autocast``), keeps both reasons it is
    half. The two sides were equal as values (a tensor or a tuple of tensors), so the join kept
    the first side's evidence only; the apex path's loss is patched to float32 and the native
    path's loss, computed outside autocast, was missed."""
    code = """
    import argparse
    from contextlib import suppress
    import torch
    import torch.nn as nn
    from apex import amp

    parser = argparse.ArgumentParser()
    parser.add_argument("--amp-impl", default="native")
    args = parser.parse_args()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(32, 32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            h = self.body(x)
            return self.head(h), h

    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    amp_autocast = suppress
    if args.amp_impl == "apex":
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    elif args.amp_impl == "native":
        amp_autocast = torch.cuda.amp.autocast

    def evaluate(model, batches, criterion, amp_autocast=suppress):
        for x, y in batches:
            with amp_autocast():
                out = model(x)
            if isinstance(out, tuple):
                out = out[0]
            loss = criterion(out, y)  # <- loss
            print(loss.item())

    evaluate(model, [(torch.randn(4, 32).cuda(), torch.randint(0, 10, (4,)).cuda())], nn.CrossEntropyLoss(),
             amp_autocast=amp_autocast)
    """
    line = _line_of(code, "# <- loss")
    assert _codes_in_project(tmp_path, {"train.py": code}, "AMP202") == [f"train.py:{line}: AMP202"]
    # the loss inside the autocast block: float32 on both paths
    inside = code.replace("""                out = model(x)
            if isinstance(out, tuple):
                out = out[0]
            loss = criterion(out, y)  # <- loss""", """                out = model(x)
                loss = criterion(out[0], y)""")
    assert inside != code
    assert _codes_in_project(tmp_path, {"train.py": inside}, "AMP202") == []


def test_a_feature_test_of_native_autocast_holds(tmp_path: Path) -> None:
    """``if getattr(torch.cuda.amp, "autocast") is not None: has_native_amp = True`` in a ``try``
    whose handler catches ``AttributeError``: the torch this tool describes has native autocast, so
    the flag is True and a script that prefers native AMP never reaches its apex branch. Before,
    the handler's path kept the flag unknown, and a Tensor ``softmax`` apex O1 would have left in
    float16 was reported for a run that never initialises apex."""
    code = """
    import torch
    import torch.nn as nn
    try:
        from apex import amp
        has_apex = True
    except ImportError:
        has_apex = False

    has_native_amp = False
    try:
        if getattr(torch.cuda.amp, "autocast") is not None:
            has_native_amp = True
    except AttributeError:
        pass

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(16, 16)

        def forward(self, x):
            return x * self.score(x).softmax(-1)  # <- weights

    model = Pool().cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    use_amp = None
    if has_native_amp:
        use_amp = "native"
    elif has_apex:
        use_amp = "apex"
    if use_amp == "apex":
        model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp == "native")
    for x in [torch.randn(4, 16).cuda()]:
        with torch.cuda.amp.autocast(enabled=use_amp == "native"):
            loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    line = _line_of(code, "# <- weights")
    assert _codes_in_project(tmp_path, {"train.py": code}, "AMP201") == []
    # a feature test that can fail (an attribute torch does not have) keeps both paths
    other = code.replace('getattr(torch.cuda.amp, "autocast")', 'getattr(torch.cuda.amp, "fast_autocast")')
    assert _codes_in_project(tmp_path, {"train.py": other}, "AMP201") == [f"train.py:{line}: AMP201"]


def test_a_deepspeed_config_a_builder_may_return(tmp_path: Path) -> None:
    """``build_ds_config(cfg)`` that returns a dict enabling fp16, or gives up (``return
    NotImplemented``) for an optimizer it does not know: DeepSpeed may run with that dict, which
    casts the model to float16. Before, a config of several possible values counted as none."""
    code = """
    import sys
    import deepspeed
    import torch
    import torch.nn as nn

    def build_ds_config(opt_name, lr):
        if opt_name != "adamw":
            return NotImplemented
        return {"train_micro_batch_size_per_gpu": 8,
                "optimizer": {"type": "AdamW", "params": {"lr": lr}},
                "fp16": {"enabled": True, "loss_scale": 0}}

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(1000, 64)
            self.out = nn.Linear(64, 1000)

        def forward(self, tokens):
            return self.out(torch.tanh(self.embed(tokens)))

    net = TinyLM()
    engine, optimizer, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(),
                                                   config=build_ds_config(sys.argv[1], 1e-3))
    for x, y in [(torch.randint(0, 1000, (8,)).cuda(), torch.randint(0, 1000, (8,)).cuda())]:
        loss = nn.functional.cross_entropy(engine(x), y)  # <- loss
        engine.backward(loss)
        engine.step()
    """
    line = _line_of(code, "# <- loss")
    assert _codes_in_project(tmp_path, {"train.py": code}, "AMP202") == [f"train.py:{line}: AMP202"]
    # the same builder giving a config that enables no half precision, with float32 inputs
    fp32 = code.replace('"fp16": {"enabled": True, "loss_scale": 0}', '"fp16": {"enabled": False}')
    assert fp32 != code
    assert _codes_in_project(tmp_path, {"train.py": fp32}, "AMP202") == []


_FVCORE_MODELS = """
import torch
import torch.nn as nn
from fvcore.common.registry import Registry

ARCH_REGISTRY = Registry("ARCH")


@ARCH_REGISTRY.register()
class ClipAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qk = nn.Linear(64, 128)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        with torch.cuda.amp.autocast(enabled=False):
            return (q @ k.transpose(-2, -1)).softmax(dim=-1)  # <- scores
{others}

def build_model(cfg):
    return ARCH_REGISTRY.get(cfg.MODEL.NAME)(cfg).cuda()
"""

_FVCORE_OTHER = """

@ARCH_REGISTRY.register()
class Plain{n}(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return self.fc(x)
"""

_FVCORE_TRAIN = """
import torch
from models import build_model
from config import get_cfg

cfg = get_cfg()
model = build_model(cfg)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
for x in [torch.randn(8, 16, 64).cuda()]:
    with torch.cuda.amp.autocast():
        loss = model(x).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""


def test_a_project_fvcore_registry_builds_what_it_registered(tmp_path: Path) -> None:
    """A project's own fvcore ``Registry``: ``@ARCH_REGISTRY.register()`` stores a class and
    ``ARCH_REGISTRY.get(cfg.MODEL.NAME)(cfg)`` builds it (any of them, the name being the config's),
    however many there are. Before, ``get`` gave an unknown value, so the model the training loop
    runs under autocast was never reached, and the float16 scores fed into a region where autocast
    is off were missed. More than twelve models built at one place were also dropped as unknown."""
    line = _line_of(_FVCORE_MODELS, "# <- scores")
    config = "def get_cfg():\n    return load_yaml_somehow()\n"
    for count in (1, 14):
        others = "".join(_FVCORE_OTHER.format(n=n) for n in range(count))
        files = {"models.py": _FVCORE_MODELS.format(others=others), "train.py": _FVCORE_TRAIN, "config.py": config}
        assert _codes_in_project(tmp_path, files, "AMP201") == [f"models.py:{line}: AMP201"], count
    # the scores cast to float32 in the region: nothing to report
    files["models.py"] = files["models.py"].replace("(q @ k.transpose(-2, -1))", "(q.float() @ k.float().transpose(-2, -1))")
    assert _codes_in_project(tmp_path, files, "AMP201") == []


def test_an_accelerate_config_that_names_a_deepspeed_config_file(tmp_path: Path) -> None:
    """An accelerate config running DeepSpeed with its precision in the DeepSpeed config file it
    names (``deepspeed_config: {deepspeed_config_file: ...}``, no ``mixed_precision``): the model
    the launched ``Accelerator`` prepares is DeepSpeed's float16 model where that file enables fp16,
    the path being relative to the folder the run starts from. Before, only ``mixed_precision`` was
    read, so the loss on the float16 logits was missed."""
    launch = """
        compute_environment: LOCAL_MACHINE
        deepspeed_config:
          deepspeed_config_file: configs/accelerate/deepspeed/ds_zero2.json
          zero3_init_flag: false
        distributed_type: DEEPSPEED
        num_processes: 4
        """
    deepspeed = '{"fp16": {"enabled": ENABLED}, "zero_optimization": {"stage": 2}, "train_batch_size": "auto"}'
    train = """
        import torch
        from accelerate import Accelerator
        from torch import nn
        accelerator = Accelerator(gradient_accumulation_steps=2)
        model = nn.Sequential(nn.Embedding(512, 64), nn.Linear(64, 512))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model, optimizer = accelerator.prepare(model, optimizer)
        for ids in []:
            scores = model(ids)
            loss = nn.functional.cross_entropy(scores.flatten(0, 1), ids.flatten())  # <- loss
            accelerator.backward(loss)
            optimizer.step()
        """
    line = _line_of(train, "# <- loss")

    def run(enabled: str) -> List[str]:
        files = {"cls/configs/accelerate/zero2.yaml": launch,
                 "cls/configs/accelerate/deepspeed/ds_zero2.json": deepspeed.replace("ENABLED", enabled),
                 "cls/train.py": train}
        return _codes_in_project(tmp_path, files, "AMP202")

    assert run("true") == [f"cls/train.py:{line}: AMP202"]
    assert run("false") == []


def test_a_script_imports_the_package_of_the_sub_project_it_belongs_to(tmp_path: Path) -> None:
    """``video/tools/train.py`` importing ``vidnet`` from ``video/vidnet``, beside
    ``video/setup.py``: installing the sub-project puts its package on the path, so the import
    is that package, also in a run from the repository's root. Before, only the script's folder,
    the root and ``src`` were import roots: the model was unknown and its float16 softmax missed."""
    model = """
    import torch
    import torch.nn as nn

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(32, 32)

        def forward(self, x):
            return (x * self.score(x).softmax(-1)).sum(1)  # <- weights
    """
    train = """
    import torch
    from vidnet.model import Pool

    model = Pool().cuda().half()
    print(model(torch.randn(4, 8, 32, device="cuda", dtype=torch.float16)))
    """
    line = _line_of(model, "# <- weights")
    files = {"video/setup.py": "from setuptools import setup\nsetup(name='vidnet')\n",
             "video/vidnet/__init__.py": "", "video/vidnet/model.py": model, "video/tools/train.py": train}
    assert _codes_in_project(tmp_path, files, "AMP201") == [f"video/vidnet/model.py:{line}: AMP201"]
    # without the setup.py the folder above is no import root
    (tmp_path / "video/setup.py").unlink()
    del files["video/setup.py"]
    assert _codes_in_project(tmp_path, files, "AMP201") == []
