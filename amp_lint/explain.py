"""``amp-lint explain FILE:LINE``: what the analysis knows about the expressions on one line.

For every context the line ran in (a calling context of its function, an autocast branch), it
prints the call path that led there, the autocast state, and each expression's inferred value with
the evidence for a half dtype: where it came from (a cast, an autocast region, an explicit dtype)
and the calls that carried it. Users check a finding with it; developers debug the analysis.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from amp_lint.config import Settings
from amp_lint.engine.linter import ParsedFile, analyse
from amp_lint.notebook import CellMap
from amp_lint.semantics.facts import Observation, describe
from amp_lint.semantics.values import dtype_label, options
from amp_lint.source import SourceError, read_source

_SKIP = (ast.Constant, ast.Starred, ast.Slice, ast.keyword, ast.JoinedStr, ast.FormattedValue)


@dataclass
class Context:
    """One context the line ran in."""

    path: List[str]
    autocast: Optional[str]
    context_free: bool
    values: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class Explanation:
    path: str
    line: int
    source: str
    contexts: List[Context]
    #: in a notebook: the 1-based code cell, ``line`` is then the row within it
    cell: Optional[int] = None


def explain(target: str, line: int, files: Sequence[str], settings: Settings,
            cell: Optional[int] = None) -> Explanation:
    """Analyse ``files`` (the program ``target`` belongs to) and explain ``target:line`` (in a
    notebook, ``line`` of code cell ``cell`` when given, else of the module made of its cells)."""
    parsed: List[ParsedFile] = []
    index = None
    root = Path(settings.project_root)
    wanted = Path(target).resolve()
    for path in files:
        try:
            text = read_source(path).text  # the file's own encoding, a BOM dropped, as `check` reads it
        except SourceError:
            continue
        try:
            rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = Path(path).name
        if Path(path).resolve() == wanted:
            index = len(parsed)
        parsed.append(ParsedFile.parse(path, rel, text, []))
    if index is None or parsed[index].tree is None:
        raise ValueError(f"{target}: not a Python file that parses")
    cells = {p.relpath: CellMap.of(p.text) for p in parsed if p.relpath.endswith(".ipynb")}
    if cell is not None:
        if parsed[index].relpath not in cells:
            raise ValueError(f"{target}: not a notebook (give FILE:LINE)")
        line = cells[parsed[index].relpath].row_of(cell, line)
    analysis = analyse(parsed, settings)
    module = analysis.modules[index]
    facts = analysis.facts
    nodes = _on_line(module.tree, line)
    contexts: Dict[int, Context] = {}

    def at(path: str, row: int) -> str:  # ``nb.ipynb:cell 2:1`` in a notebook, else ``path:row``
        return f"{path}:{cells[path].where(row)}" if path in cells else f"{path}:{row}"

    for node, scope in nodes:
        for obs in facts.observations(node, scope):
            key = id(obs.record)
            ctx = contexts.get(key)
            if ctx is None:
                ctx = contexts[key] = _context(obs, at)
            ctx.values.append(_value(module.segment(node, 70), obs, node, at))
    source = module.line(line).strip()
    if parsed[index].relpath in cells:
        cell, line = cells[parsed[index].relpath].locate(line)
    return Explanation(target, line, source, list(contexts.values()), cell)


def _on_line(tree: ast.Module, line: int):
    """(expression, its scope) for the expressions starting on ``line``, in source order."""
    out = []
    todo = [(tree, tree)]
    while todo:
        node, scope = todo.pop()
        if isinstance(node, ast.expr) and getattr(node, "lineno", None) == line and not isinstance(node, _SKIP):
            out.append((node, scope))
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
        for name in node._fields:
            value = getattr(node, name, None)
            child_scope = inner if name == "body" else scope
            if isinstance(value, ast.AST):
                todo.append((value, child_scope))
            elif isinstance(value, list):
                todo.extend((v, child_scope) for v in value if isinstance(v, ast.AST))
    out.sort(key=lambda item: (item[0].col_offset, -(item[0].end_col_offset or 0)))
    return out


def _context(obs: Observation, at: Callable[[str, int], str]) -> Context:
    record = obs.record
    state = record.state
    autocast = None
    if state is not None:
        device = {"cpu": "CPU autocast", "apex": "apex O1"}.get(state[0], "CUDA autocast")
        autocast = f"{device} ({dtype_label(state[1])})"
    path = [f"{at(site.path, site.line)} {site.describe()}" for site in record.stack]
    return Context(path, autocast, record.context_free)


def _value(text: str, obs: Observation, node: ast.AST, at: Callable[[str, int], str]) -> Dict[str, Any]:
    value = obs.value(node)
    evidence = []
    if any(getattr(o, "dtypes", 0) & 12 or getattr(o, "cast", 0) & 12 for o in options(value)):
        evidence = [f"{at(e.path, e.line)}: {e.message}" for e in obs.origin_evidence(value)]
    return {"expression": text, "value": describe(value), "because": evidence}


def render_text(explanation: Explanation) -> str:
    where = f"cell {explanation.cell}:{explanation.line}" if explanation.cell is not None else explanation.line
    lines = [f"{explanation.path}:{where}: {explanation.source}"]
    if not explanation.contexts:
        lines.append("  not reached by the analysis (no code path runs this line)")
    for number, ctx in enumerate(explanation.contexts, 1):
        where = "no caller seen (analysed with unknown arguments)" if ctx.context_free else (
            " -> ".join(ctx.path) if ctx.path else "module top level")
        lines.append("")
        lines.append(f"context {number} of {len(explanation.contexts)}: {ctx.autocast or 'no autocast'}; {where}")
        width = min(max((len(v["expression"]) for v in ctx.values), default=10), 50)
        seen = set()
        for item in ctx.values:
            key = (item["expression"], item["value"])
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"  {item['expression']:<{width}}  {item['value']}")
            for because in item["because"]:
                lines.append(f"  {'':<{width}}    because {because}")
    return "\n".join(lines) + "\n"


def to_json(explanation: Explanation) -> Dict[str, Any]:
    return {
        "filename": explanation.path, "cell": explanation.cell, "line": explanation.line, "source": explanation.source,
        "contexts": [
            {"call_path": c.path, "autocast": c.autocast, "context_free": c.context_free, "values": c.values}
            for c in explanation.contexts
        ],
    }
