"""The fix engine: fixes that would leave names unbound or imports unused are withheld (for every
rule), nested hazards reach a fixpoint in one run, and rounds that cannot converge say so."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence

import libcst as cst

from amp_lint.config import Settings
from amp_lint.engine.bindings import name_facts, new_problems
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixPlan
from amp_lint.engine.linter import MAX_FIX_ROUNDS, FixOutcome, ParsedFile, fix_files
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Rule

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = Settings(unsafe_fixes=True)


class _Synthetic(Rule):
    severity = Severity.WARNING
    summary = "synthetic"
    docs = ""
    fix_applicability = Applicability.SAFE


def _plan(build) -> FixPlan:
    return FixPlan("synthetic fix", Applicability.SAFE, build)


class AddDevice(_Synthetic):
    """``send(x)`` -> ``send(x, device)``: reads ``device``, bound or not."""

    code, name, tokens = "AMP901", "add-device", ("send",)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "send" and len(node.args) == 1:
            def build(fctx, node=node):
                call = fctx.node(node)
                args = [call.args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                        cst.Arg(cst.Name("device"))]
                return CstFix("Pass the device", Applicability.SAFE).replace(call, call.with_changes(args=args))

            self.report(node, "send without a device", fix=_plan(build))


class UseNew(_Synthetic):
    """``old.f()`` -> ``new.f()`` (adds ``import new``; ``import old`` may be left unused)."""

    code, name, tokens = "AMP902", "use-new", ("old.",)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id == "old":
            def build(fctx, value=node.value):
                fix = CstFix("Use new", Applicability.SAFE, add_imports=("new",))
                return fix.replace(fctx.node(value), cst.Name("new"))

            self.report(node, "old API", fix=_plan(build))


class DropUnusedOld(_Synthetic):
    """Removes ``import old`` once nothing reads ``old`` (a second fix that completes UseNew's)."""

    code, name, tokens = "AMP903", "drop-old", ("import old",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.imports: List[ast.Import] = []
        self.reads = 0

    def visit_Import(self, node: ast.Import) -> None:
        if [alias.name for alias in node.names] == ["old"]:
            self.imports.append(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "old":
            self.reads += 1

    def finish(self) -> None:
        for node in self.imports:
            if self.reads == 0:
                def build(fctx, node=node):
                    return CstFix("Remove it", Applicability.SAFE).remove(fctx.statement(fctx.node(node)))

                self.report(node, "unused import of old", fix=_plan(build))


class Forever(_Synthetic):
    """Every round finds ``grow(...)`` and wraps its argument once more: never converges."""

    code, name, tokens = "AMP904", "forever", ("grow",)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "grow":
            def build(fctx, call=node):
                arg = fctx.node(call).args[0]
                new = arg.with_changes(value=cst.parse_expression(f"[{fctx.code(arg.value)}]"))
                return CstFix("Wrap", Applicability.SAFE).replace(arg, new)

            self.report(node, "grow", fix=_plan(build))


def fix(text: str, rules: Sequence[type]) -> FixOutcome:
    return fix_files([ParsedFile.parse("m.py", "m.py", text, rules)], SETTINGS)


def test_name_facts_resolve_scopes() -> None:
    facts = name_facts(
        "import os\n"
        "def g(a, *, b=1):\n"
        "    global Z\n"
        "    Z = 1\n"
        "    return [i for i in range(a)] + [os, b, device, Z, len]\n"
        "class C:\n"
        "    x = 1\n"
        "    y = x + 1\n"
        "    def m(self):\n"
        "        return super().m(), y\n"
        "print(undefined_top, __file__, (w := 2), w)\n"
    )
    assert facts is not None
    assert facts.unbound == {"device", "y", "undefined_top"}
    assert facts.unused_imports == {}
    assert name_facts("from torch import *\nprint(anything)\n").unbound is None  # dynamic: unknown
    assert name_facts("import os, sys as s\n__all__ = ['s']\n").unused_imports == {"os": "import os"}
    before, after = name_facts("import a.b as c\nc.f()\n"), name_facts("import a.b as c\nimport a\na.f()\n")
    assert new_problems(before, after) == {"unused:c": "it would leave `import a.b as c` unused"}


def test_fix_reading_an_unbound_name_is_withheld() -> None:
    text = "def f(x):\n    return send(x)\n"
    outcome = fix(text, [AddDevice])
    assert outcome.texts == [text] and outcome.fixed == [0]
    [finding] = outcome.findings[0]
    assert finding.fix_title == "fix withheld: it would read `device`, which nothing binds"
    assert not finding.fixable(True) and finding.fix is None


def test_fix_reading_a_bound_name_is_applied() -> None:
    for text in ("def f(x, device):\n    return send(x)\n", "device = 'cuda'\nsend(1)\n",
                 "from cfg import device\nsend(1)\n"):
        outcome = fix(text, [AddDevice])
        assert outcome.fixed == [1] and ", device)" in outcome.texts[0], text
        assert outcome.findings == [[]]


def test_fix_leaving_an_import_unused_is_withheld() -> None:
    text = "import old\n\nold.f()\n"
    outcome = fix(text, [UseNew])
    assert outcome.texts == [text]
    [finding] = outcome.findings[0]
    assert finding.fix_title == "fix withheld: it would leave `import old` unused"


def test_a_later_fix_may_complete_an_earlier_one() -> None:
    """The check compares the final text with the original: a round that leaves ``import old``
    unused is fine when a later round removes it."""
    outcome = fix("import old\n\nold.f()\n", [UseNew, DropUnusedOld])
    assert outcome.texts == ["import new\n\nnew.f()\n"]
    assert outcome.findings == [[]] and outcome.converged


def test_withheld_fix_keeps_the_others() -> None:
    text = "import os\n\ndef f(x, device):\n    return send(x)\n\nsend(os)\n"
    outcome = fix(text, [AddDevice])
    assert outcome.texts == ["import os\n\ndef f(x, device):\n    return send(x, device)\n\nsend(os)\n"]
    [finding] = outcome.findings[0]
    assert finding.location.row == 6 and finding.fix_title.startswith("fix withheld: it would read `device`")


def test_only_the_files_at_fault_are_withheld() -> None:
    """Files fixed together: the one whose fix reads an unbound name keeps its text, the other
    is fixed."""
    good = ParsedFile.parse("a.py", "a.py", "device = 'cuda'\nsend(1)\n", [AddDevice])
    bad = ParsedFile.parse("b.py", "b.py", "send(2)\n", [AddDevice])
    outcome = fix_files([good, bad], SETTINGS)
    assert outcome.texts == ["device = 'cuda'\nsend(1, device)\n", "send(2)\n"]
    assert outcome.fixed == [1, 0]
    assert [f.fix_title for f in outcome.findings[1]] == ["fix withheld: it would read `device`, which nothing binds"]


def test_rounds_that_cannot_converge_say_so() -> None:
    outcome = fix("grow(1)\n", [Forever])
    assert not outcome.converged and outcome.unsettled == [0]
    assert outcome.fixed == [MAX_FIX_ROUNDS]
    assert outcome.texts[0] == "grow(" + "[" * MAX_FIX_ROUNDS + "1" + "]" * MAX_FIX_ROUNDS + ")\n"


def _nest(depth: int, func: str, inner: str = "x") -> str:
    for _ in range(depth):
        inner = f"{func}({inner})"
    # a learned value (a layer's output): AMP204 needs evidence that it can be large
    return (f'import torch\nimport torch.nn.functional as F\n\n'
            f'x = torch.nn.Linear(8, 8).cuda().half()(torch.randn(8, device="cuda").half())\ny = {inner}\n')


def _fix(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", "fix", "--unsafe-fixes", "--isolated", "--no-cache",
                           str(path)], capture_output=True, text=True, timeout=300, cwd=str(ROOT))


def test_deep_nest_reaches_the_fixpoint_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "deep.py"
    path.write_text(_nest(20, "torch.exp"))
    first = _fix(path)
    once = path.read_text()
    assert "warning" not in first.stderr, first.stderr
    assert once == _nest(20, "torch.exp", "x.float()")  # innermost first: one `.float()` is enough
    second = _fix(path)
    assert path.read_text() == once and "fixed" not in second.stderr


def test_deep_nest_that_needs_more_rounds_is_reported(tmp_path: Path) -> None:
    """When every level needs its own round, fix either converges or, past the round limit, says
    that the file did not converge instead of leaving it silently half-fixed."""
    path = tmp_path / "softmax.py"
    path.write_text(_nest(2 * MAX_FIX_ROUNDS, "F.softmax"))
    first = _fix(path)
    once = path.read_text()
    _fix(path)
    if path.read_text() != once:
        assert f"amp-lint: warning: {path}: fixes did not converge in {MAX_FIX_ROUNDS} rounds" in first.stderr, \
            first.stderr
    else:
        assert "warning" not in first.stderr


class DeclinedFix(_Synthetic):
    """``stale()``: a fix plan whose builder finds nothing to do (returns ``None``)."""

    code, name, tokens = "AMP905", "declined-fix", ("stale",)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "stale":
            self.report(node, "stale call", fix=_plan(lambda fctx: None))


def test_a_fix_the_builder_declines_is_not_claimed() -> None:
    """Where edits are built (JSON, SARIF, ``--diff``), a plan whose builder declines is no fix:
    the finding claims none, and its fix title says why, instead of advertising a fix ``fix`` skips."""
    from amp_lint.engine.linter import lint_text

    finding, = lint_text("a.py", "stale()\n", SETTINGS, [DeclinedFix], want_edits=True)
    assert finding.fix is None and finding.fix_applicability is None
    assert finding.fix_title == "no fix: `synthetic fix` could not be built here"
