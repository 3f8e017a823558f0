"""Shared helpers for the tensor-core rules (AMP401/AMP402): finding layer constructors and
their statically known sizes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple

import libcst as cst

from amp_lint.analysis.constants import ConstantTable
from amp_lint.data.tensor_cores import EMBEDDING, GEMM_LAYERS, LM_HEAD_TARGETS, VOCAB_HINTS
from amp_lint.engine.context import FileContext
from amp_lint.rules.base import find_arg


@dataclass
class LayerDim:
    """One size argument of a layer constructor."""

    call: cst.Call
    layer: str  # qualified constructor name
    role: str  # "in" or "out"
    expr: cst.BaseExpression
    params: Dict[str, cst.BaseExpression]
    target: str  # text of the assignment target, "" when none


def layer_dims(ctx: FileContext, node: cst.Call) -> Iterator[LayerDim]:
    """The in/out size arguments of an nn.Linear/Conv*/Embedding constructor call."""
    qualified = ctx.qualify(node.func)
    if qualified is None:
        return
    if qualified == EMBEDDING:
        names: Tuple[str, str] = ("num_embeddings", "embedding_dim")
    elif qualified in GEMM_LAYERS:
        names = GEMM_LAYERS[qualified]
    else:
        return
    constants: ConstantTable = ctx.analyses["constants"]
    params = constants.scope_snapshot()
    target = assignment_target(ctx)
    for position, (role, param) in enumerate(zip(("in", "out"), names)):
        arg = find_arg(node, param, position)
        if arg is not None:
            yield LayerDim(node, qualified, role, arg.value, params, target)


def assignment_target(ctx: FileContext) -> str:
    for ancestor in reversed(ctx.stack[:-1]):
        if isinstance(ancestor, cst.Assign):
            return ctx.code(ancestor.targets[0].target)
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)):
            return ""
    return ""


def is_vocab_dim(ctx: FileContext, dim: LayerDim) -> bool:
    """A vocabulary-sized dim: the out size of an LM head, or an embedding's row count."""
    text = ctx.code(dim.expr).lower()
    if dim.layer == EMBEDDING:
        return dim.role == "in" and any(h in text for h in VOCAB_HINTS)
    if dim.role != "out" or not dim.layer.endswith("Linear"):
        return False
    target = dim.target.lower().rsplit(".", 1)[-1]
    return any(h in text for h in VOCAB_HINTS) or any(target == t or target.endswith(t) for t in LM_HEAD_TARGETS)


def resolve(ctx: FileContext, dim: LayerDim) -> Optional[Tuple[int, Optional[cst.Integer]]]:
    constants: ConstantTable = ctx.analyses["constants"]
    return constants.resolve(dim.expr, dim.params)
