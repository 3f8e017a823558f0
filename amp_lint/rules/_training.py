"""Shared pieces of the training-recipe rules (AMP001, AMP101-106, AMP502's migration)."""
from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set, Tuple

from amp_lint.data import ops as opdata
from amp_lint.engine.checker import CheckContext
from amp_lint.engine.fixing import FixPlan
from amp_lint.rules._migration import Migration
from amp_lint.semantics.training import TrainingModel, TrainingStep
from amp_lint.semantics.values import UNKNOWN, Coll, Obj, Seq, Tensor, Value, element, options


def training_model(ctx: CheckContext) -> TrainingModel:
    """The file's training model, built once per check and shared by the rules."""
    model = getattr(ctx, "_training_model", None)
    if model is None:
        model = TrainingModel(ctx.tree, ctx.facts)
        ctx._training_model = model  # type: ignore[attr-defined]
    return model


def in_test(ancestors: Sequence[ast.AST]) -> bool:
    """Inside a pytest/unittest test (``def test_*``, ``class Test*``)."""
    for node in ancestors:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            return True
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return True
    return False


def programs_of(step: TrainingStep) -> Optional[Set[str]]:
    """The files whose run reaches ``step`` (a repository of several scripts: each its own program);
    a step at a file's top level runs in that file's program. None where some analysis reached it
    with no caller (a function nothing calls): any program may run it."""
    entries: Set[str] = set()
    for obs in step.backward.observations:
        if obs.record.stack:
            entries.add(obs.record.stack[0].path)
        elif isinstance(obs.record.scope, ast.Module):
            entries.add(obs.record.module.relpath)
        else:
            return None
    return entries


def mixed_precision_in_program(ctx: CheckContext, step: TrainingStep) -> bool:
    """Whether the programs that run ``step`` have mixed precision elsewhere: a framework that owns it
    (the DeepSpeed of one script does not train the plain loop of another), or an autocast region
    they open anywhere (features extracted under autocast for a probe trained in float32). A step
    no one program is known to run may be run by any: only frameworks count for it."""
    entries = programs_of(step)
    if entries is None:
        return bool(ctx.facts.frameworks())
    return bool(ctx.facts.frameworks(entries)) or bool(entries & ctx.facts.autocast_programs())


def backward_of_a_new_tensor(ctx: CheckContext, step: TrainingStep) -> bool:
    """``torch.empty(1, requires_grad=True).backward()``: the backward of a tensor a factory has just
    made (warming autograd up before the run) goes through no network and trains nothing."""
    node = step.backward.node
    receiver = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Call):
        return False
    return any(name.startswith("torch.") and opdata.RESULT_KINDS.get(name[len("torch."):]) in _NEW_TENSOR_KINDS
               for name in ctx.callee(receiver).names)


#: how the torch functions that make a tensor from sizes or data type their result (:data:`ops.RESULT_KINDS`)
_NEW_TENSOR_KINDS = frozenset({opdata.FACTORY, opdata.FACTORY_INT, opdata.INFER})


def optimizes_plain_tensors(step: TrainingStep) -> bool:
    """Whether every optimizer the step steps is known to optimise tensors built by the script
    (a latent, an input for saliency) and no module parameter: no network is trained."""
    seen = False
    for event in step.steps:
        for value in event.values(event.receiver):
            for option in options(value):
                if not (isinstance(option, Obj) and option.kind == "optimizer"):
                    return False
                if not _plain_tensors(option.get("params")):
                    return False
                seen = True
    return seen


def _plain_tensors(params: Optional[Value]) -> bool:
    """A list of tensors none of which may be a module parameter, one at least of known dtype."""
    known = False
    for option in options(params) if params is not None else ():
        if not isinstance(option, (Seq, Coll)):
            return False
        for item in options(element(option)):
            if item is UNKNOWN:
                continue  # buffers of a model we cannot see, say; a parameter would say so
            if not isinstance(item, Tensor) or item.param:
                return False
            known = known or bool(item.dtypes)
    return known


def migration_plan(ctx: CheckContext, step: TrainingStep, title: str, **options) -> Tuple[Optional[FixPlan], str]:
    return Migration(ctx, training_model(ctx), step, **options).fix_plan(title)


def apex_migration(ctx: CheckContext) -> Tuple[Optional[FixPlan], str]:
    """The one fix migrating the file's apex loop to torch.amp, or (None, why not)."""
    model = training_model(ctx)
    steps = [s for s in model.steps if s.apex_with is not None]
    if len(steps) != 1:
        return None, "no single training loop with `amp.scale_loss` was recognised"
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "opt_level" and isinstance(kw.value, ast.Constant) and kw.value.value == "O0":
                    return None, '`opt_level="O0"` is plain fp32; remove apex and keep `loss.backward()`'
    return migration_plan(ctx, steps[0], "Migrate apex.amp to torch.amp (autocast fp16 + GradScaler)", apex=True)
