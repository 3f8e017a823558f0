"""Generated input: hypothesmith programs and mutated PyTorch snippets.

Properties, on every program Python compiles: no traceback, exit 0 or 1, the fixed text
parses, and a second fix changes nothing. Bounded (few examples, derandomised so that CI is
repeatable) to run in well under 30 s on 2 cores.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, List

import pytest
from click.testing import CliRunner

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from amp_lint.cli import main  # noqa: E402
from amp_lint.rules import ALL_RULES  # noqa: E402


def _bounded(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])

SNIPPETS: List[str] = [example.code for rule in ALL_RULES for example in rule.INVALID]


def _amp(*args: str, source: str) -> "tuple[int, str]":
    result = CliRunner().invoke(main, [*args, "--isolated", "--no-cache", "--select", "ALL", "--stdin-filename", "fuzz.py", "-"],
                                input=source.encode("utf-8"), catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout_bytes.decode("utf-8")  # .stdout would turn \r\n into \n


def check_properties(source: str) -> None:
    try:
        compile(source, "fuzz.py", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        assume(False)
    code, _ = _amp("check", source=source)
    assert code in (0, 1)
    code, fixed = _amp("fix", "--unsafe-fixes", source=source)
    assert code in (0, 1)
    compile(fixed, "fixed.py", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)  # still parses
    assert _amp("fix", "--unsafe-fixes", source=fixed)[1] == fixed  # idempotent


# -- mutations of real snippets ------------------------------------------------------------------
def _crlf(code: str, data) -> str:
    return code.replace("\r\n", "\n").replace("\n", "\r\n")


def _tabs(code: str, data) -> str:
    return re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), code, flags=re.MULTILINE)


def _unicode_names(code: str, data) -> str:
    names = sorted(set(re.findall(r"\b(model|scores|x|loss|optimizer|mask|logits|att|y|net)\b", code)))
    if not names:
        return code
    name = data.draw(st.sampled_from(names))
    new = data.draw(st.sampled_from(["modèle", "σ", "données_ñ", "モデル", "x_ʹ"]))
    return re.sub(rf"\b{name}\b", new, code)


def _indent(code: str) -> str:
    return "".join("    " + line if line.strip() else line for line in code.splitlines(keepends=True))


def _in_async_function(code: str, data) -> str:
    return "async def main():\n" + _indent(code) + "    await something()\n"


def _decorated(code: str, data) -> str:
    return "import functools\n\n@functools.lru_cache(maxsize=None)\n@torch.no_grad()\ndef wrapped(a, /, *args, b=1, **kw):\n" + _indent(code) + "    return None\n"


def _in_class(code: str, data) -> str:
    return "class Holder:\n" + _indent(code) + "    pass\n"


def _tail(code: str, data) -> str:
    extra = data.draw(st.sampled_from([
        "if (n := len([1, 2])) > 1:\n    print(f\"{n!r:>{n}} {{braces}} {'é'}\")\n",
        "match x:\n    case [a, *rest] if a:\n        y = torch.exp(a)\n    case {'k': v}:\n        pass\n    case _:\n        pass\n",
        "async def gen():\n    async with lock:\n        async for item in stream:\n            yield item.half().softmax(-1)\n",
        "z = [t.masked_fill(t > 0, -1e9) for t in (x.half(), x) if t is not None]\n",
        "lam = lambda q, k=-1e9: q.half().masked_fill(q > 0, k)\n",
        "try:\n    pass\nexcept* ValueError:\n    pass\n",
    ]))
    return code + ("" if code.endswith("\n") else "\n") + extra


def _deep_nest(code: str, data) -> str:
    depth = data.draw(st.integers(min_value=1, max_value=25))
    func = data.draw(st.sampled_from(["torch.exp", "torch.softmax", "torch.log_softmax", "F.softmax"]))
    inner = "x"
    for _ in range(depth):
        inner = f"{func}({inner}{', -1' if 'softmax' in func else ''})"
    return code + ("" if code.endswith("\n") else "\n") + f"deep = {inner}\n"


MUTATIONS: List[Callable] = [_crlf, _tabs, _unicode_names, _in_async_function, _decorated, _in_class, _tail, _deep_nest]


@_bounded(50)
@given(st.data())
def test_mutated_pytorch_snippets(data) -> None:
    code = data.draw(st.sampled_from(SNIPPETS))
    for mutation in data.draw(st.lists(st.sampled_from(MUTATIONS), max_size=3)):
        code = mutation(code, data)
    check_properties(code)


try:
    import hypothesmith
except ImportError:  # pragma: no cover - in the `test` extra
    hypothesmith = None


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed (pip install -e '.[test]')")
def test_generated_programs() -> None:
    @_bounded(25)
    @given(hypothesmith.from_grammar())
    def generated(source: str) -> None:
        check_properties(source)

    generated()
