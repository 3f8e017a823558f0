"""Shared helpers for the Tensor Core rules (AMP401/AMP402): layer constructors, their statically
known sizes (constant propagation by the analysis) and whether the layer ever runs in half."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from amp_lint.data.paths import is_test_file
from amp_lint.data.tensor_cores import EMBEDDING, GEMM_LAYERS, LM_HEAD_TARGETS, NOT_VOCAB_HINTS, VOCAB_HINTS
from amp_lint.engine.checker import CheckContext
from amp_lint.rules._numerics import callee_name
from amp_lint.rules.base import find_arg
from amp_lint.semantics.values import Scalar


@dataclass
class LayerDim:
    """One size argument of a layer constructor."""

    call: ast.Call
    layer: str  # qualified constructor name
    role: str  # "in" or "out"
    expr: ast.AST
    target: str  # text of the assignment target, "" when none
    value: Optional[int]  # the size, when every context agrees on one
    literal: Optional[ast.AST]  # the literal defining it, when it is one literal of this file
    #: the sizes contexts disagree on (a factory per configuration), each with the call site that
    #: built the layer with it (``models.py:240``); empty when ``value`` is known or nothing is
    per_context: Tuple[Tuple[int, str], ...] = ()

    def sizes(self) -> Set[int]:
        """Every known size: the agreed one, or those the contexts disagree on."""
        return {self.value} if self.value is not None else {size for size, _ in self.per_context}

    def misaligned(self, alignment: int, floor: int = 1) -> List[Tuple[int, str]]:
        """The known sizes (with where, "" when every context agrees) that are at least ``floor``
        and not a multiple of ``alignment``."""
        sizes = [(self.value, "")] if self.value is not None else list(self.per_context)
        return [(size, where) for size, where in sizes if size >= floor and size % alignment]


def layer_dims(ctx: CheckContext, node: ast.Call) -> Iterator[LayerDim]:
    """The in/out size arguments of an nn.Linear/Conv*/Embedding constructor call, as the program
    builds it: the sizes of a toy model a test file builds (``Mamba2(d_model=64)`` in
    ``tests/``) are not the user's configuration."""
    observations = [obs for obs in ctx.observations(node) if not is_test_file(obs.entry_path)]
    names = {callee_name(obs, node) for obs in observations}
    if len(names) != 1:
        return
    qualified = names.pop()
    if qualified == EMBEDDING:
        params: Tuple[str, str] = ("num_embeddings", "embedding_dim")
    elif qualified in GEMM_LAYERS:
        params = GEMM_LAYERS[qualified]
    else:
        return
    target = assignment_target(ctx)
    for position, (role, param) in enumerate(zip(("in", "out"), params)):
        expr = find_arg(node, param, position)
        if expr is None:
            continue
        value, literal = _resolve(ctx, observations, expr)
        per_context = () if value is not None else _per_context(observations, expr)
        yield LayerDim(node, qualified, role, expr, target, value, literal, per_context)


def sizes_text(sizes: List[Tuple[int, str]], suggest: Callable[[int], int]) -> Tuple[str, str]:
    """``"588 (built at m.py:240) or 500"`` for misaligned sizes with where each came from, and the
    suggested sizes (``"592 or 504"``)."""
    found = " or ".join(f"{size} ({where})" if where else str(size) for size, where in sizes)
    return found, " or ".join(str(suggest(size)) for size, _ in sizes)


def _size(value: Any) -> Optional[int]:
    if isinstance(value, Scalar) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value
    return None


def _per_context(observations, expr: ast.AST) -> Tuple[Tuple[int, str], ...]:
    """The distinct sizes the contexts calling the constructor with known arguments give, each
    with where the first such context got it: the literal defining it (an argparse default), else
    the call that built the layer with it (the factory that picks it)."""
    found: Dict[int, str] = {}
    for obs in observations:
        value = obs.value(expr)
        size = _size(value)
        if size is None or size in found:
            continue
        if value.site is not None and hasattr(value.site[1], "lineno"):
            found[size] = f"set at {value.site[0]}:{value.site[1].lineno}"
        elif obs.record.stack:
            found[size] = f"built at {obs.record.stack[-1].path}:{obs.record.stack[-1].line}"
        else:
            found[size] = ""
    return tuple(sorted(found.items())) if len(found) > 1 else ()


def _resolve(ctx: CheckContext, observations, expr: ast.AST) -> Tuple[Optional[int], Optional[ast.AST]]:
    values = [obs.value(expr) for obs in observations]
    numbers = {_size(v) for v in values} - {None}
    if len(numbers) != 1 or not all(_size(v) in numbers for v in values):
        return None, None
    sites = {id(v.site[1]) if v.site else None for v in values if isinstance(v, Scalar)}
    site: Any = values[0].site if isinstance(values[0], Scalar) else None
    literal = site[1] if site and len(sites) == 1 and site[0] == ctx.module.relpath else None
    return numbers.pop(), literal


def assignment_target(ctx: CheckContext) -> str:
    for ancestor in reversed(ctx.stack[:-1]):
        if isinstance(ancestor, ast.Assign):
            return ctx.segment(ancestor.targets[0], 200)
        if isinstance(ancestor, (ast.stmt,)):
            return ""
    return ""


def is_vocab_dim(ctx: CheckContext, dim: LayerDim) -> bool:
    """A vocabulary-sized dim: the out size of an LM head, or an embedding's row count."""
    text = ctx.segment(dim.expr, 200).lower()
    if dim.layer == EMBEDDING:
        named = (text + " " + dim.target.lower())
        return dim.role == "in" and any(h in text for h in VOCAB_HINTS) and not any(h in named for h in NOT_VOCAB_HINTS)
    if dim.role != "out" or not dim.layer.endswith("Linear"):
        return False
    target = dim.target.lower().rsplit(".", 1)[-1]
    return any(h in text for h in VOCAB_HINTS) or any(target == t or target.endswith(t) for t in LM_HEAD_TARGETS)


def runs_in_half(ctx: CheckContext, dim: LayerDim) -> bool:
    """Tensor Cores matter only where the layer computes in fp16/bf16 (fp32 matmuls do not use them
    by default): the layer built here is cast to half or called under autocast somewhere."""
    return ctx.facts.runs_in_half(dim.call)


def weight_owners(expr: ast.AST) -> List[str]:
    """``self.emb`` for ``self.emb.weight``, also through ``.T``, ``.t()``, ``transpose(...)``."""
    owners: List[str] = []
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Attribute):
            if node.attr == "weight":
                owners.append(ast.unparse(node.value))
            else:
                todo.append(node.value)
        elif isinstance(node, ast.Call):
            todo.append(node.func)
            todo.extend(node.args)
    return owners
