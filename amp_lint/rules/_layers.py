"""Shared helpers for the Tensor Core rules (AMP401/AMP402): layer constructors, their statically
known sizes (constant propagation by the analysis) and whether the layer ever runs in half."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple

from amp_lint.data.tensor_cores import EMBEDDING, GEMM_LAYERS, LM_HEAD_TARGETS, VOCAB_HINTS
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


def layer_dims(ctx: CheckContext, node: ast.Call) -> Iterator[LayerDim]:
    """The in/out size arguments of an nn.Linear/Conv*/Embedding constructor call."""
    observations = ctx.observations(node)
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
        yield LayerDim(node, qualified, role, expr, target, value, literal)


def _resolve(ctx: CheckContext, observations, expr: ast.AST) -> Tuple[Optional[int], Optional[ast.AST]]:
    values = [obs.value(expr) for obs in observations]
    numbers = {v.value for v in values if isinstance(v, Scalar) and isinstance(v.value, int)
               and not isinstance(v.value, bool)}
    if len(numbers) != 1 or not all(isinstance(v, Scalar) and v.value in numbers for v in values):
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
        return dim.role == "in" and any(h in text for h in VOCAB_HINTS)
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
