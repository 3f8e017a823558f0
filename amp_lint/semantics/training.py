"""Training steps, read off the analysis: which ``.backward()`` is a loss's backward, what its loss
went through, which optimizer steps, scaler calls, clipping and zero_grad belong to its loop.

Everything is recognised by value, not by name: a loss is a tensor, an optimizer is an object built
by a ``torch.optim`` class (or a master-weight wrapper), a scaler is a ``GradScaler``. The model
knows no rule; rules ask it questions (AMP001, AMP101-106) and the migration codemod reads it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from amp_lint.data import training as trainingdata
from amp_lint.semantics.facts import Facts, Observation
from amp_lint.semantics.interpreter import presence_subject
from amp_lint.semantics.torch_api import unscaled_fp16_fabric
from amp_lint.semantics.values import (
    APEX_O1_ORIGIN, F16, UNKNOWN, Ext, Method, Obj, Tensor, Value, options,
)

LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Call names that can be a training-protocol event (a cheap filter before asking the facts).
_EVENT_NAMES = frozenset({"backward", "step", "zero_grad", "scale", "unscale_", "update"}
                         | {n.rsplit(".", 1)[-1] for n in trainingdata.CLIP_FUNCTIONS} | trainingdata.CLIP_METHODS)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Event:
    """One call of the training protocol: ``kind`` in backward, step, scaler_step, update, unscale,
    clip, zero_grad, scale."""

    kind: str
    node: ast.Call
    ancestors: Tuple[ast.AST, ...]
    receiver: Optional[ast.AST] = None
    observations: List[Observation] = field(default_factory=list)

    @property
    def position(self) -> Tuple[int, int]:
        return self.node.lineno, self.node.col_offset

    def values(self, node: Optional[ast.AST]) -> List[Value]:
        return [obs.value(node) for obs in self.observations] if node is not None else []


@dataclass
class TrainingStep:
    """A loss's backward and the optimizer steps after it in the same loop (or function)."""

    backward: Event
    backwards: List[Event]
    loss: ast.AST
    scaled: bool
    container: Optional[ast.AST]  # the innermost loop, else the function holding the backward
    loop: Optional[ast.AST]
    function: Optional[ast.AST]
    steps: List[Event] = field(default_factory=list)
    #: calls that step an optimizer inside (``optimizer.step_and_update_lr()``)
    steps_via: List[Event] = field(default_factory=list)
    scaler_steps: List[Event] = field(default_factory=list)
    updates: List[Event] = field(default_factory=list)
    unscales: List[Event] = field(default_factory=list)
    clips: List[Event] = field(default_factory=list)
    zero_grads: List[Event] = field(default_factory=list)
    apex_with: Optional[ast.With] = None
    #: the scaled backwards on the other branch of an ``if`` (``if scaler is not None:
    #: scaler.scale(loss).backward() else: loss.backward()``), where this backward is unscaled
    siblings: List[Event] = field(default_factory=list)

    def loss_tensors(self) -> List[Tensor]:
        out = []
        for obs in self.backward.observations:
            for option in options(obs.value(self.loss)):
                if isinstance(option, Tensor):
                    out.append(option)
        return out

    @property
    def graph(self) -> int:
        """Half dtypes the loss's graph went through (over every context)."""
        low = 0
        for tensor in self.loss_tensors():
            low |= tensor.low_graph
        return low

    @property
    def in_autocast(self) -> bool:
        return any(obs.autocast for obs in self.backward.observations)

    def optimizers(self) -> List[Obj]:
        out: List[Obj] = []
        for event in self.steps:
            for value in event.values(event.receiver):
                for option in options(value):
                    if isinstance(option, Obj) and option.kind == "optimizer" and option not in out:
                        out.append(option)
        for event in self.scaler_steps:
            if event.node.args:
                for value in event.values(event.node.args[0]):
                    for option in options(value):
                        if isinstance(option, Obj) and option.kind == "optimizer" and option not in out:
                            out.append(option)
        return out


def _kind(value: Value) -> Optional[str]:
    for option in options(value):
        if isinstance(option, Obj):
            return option.kind
    return None


def is_optimizer(value: Value) -> bool:
    return any(isinstance(o, Obj) and o.kind == "optimizer" for o in options(value))


def is_scaler(value: Value) -> bool:
    return any(isinstance(o, Obj) and o.kind == "grad_scaler" for o in options(value))


def may_be_scaler(value: Value) -> bool:
    """A GradScaler, or a value the analysis does not know (a scaler handed in by a caller it does
    not see): ``x.scale(loss).backward()`` on it is no evidence that nothing scales the loss."""
    return is_scaler(value) or any(o is UNKNOWN for o in options(value))


def is_tensor(value: Value) -> bool:
    return any(isinstance(o, Tensor) for o in options(value))


def _ancestors(chain: Optional[tuple]) -> Tuple[ast.AST, ...]:
    """The nodes of a (node, parent chain) link, outermost first, the node itself last."""
    out: List[ast.AST] = []
    while chain is not None:
        out.append(chain[0])
        chain = chain[1]
    return tuple(reversed(out))


def half_through(tensors: Iterable[Tensor], by_autocast: bool) -> bool:
    """Whether one of ``tensors`` went through float16 ops that an autocast-like region made
    (``by_autocast``), or that a cast of a model or a tensor made (not ``by_autocast``)."""
    return any(t.low_graph & F16 and t.origin is not None and (t.origin.kind in AUTOCAST_ORIGIN_KINDS) == by_autocast
               for t in tensors)


def _half_by_a_cast(event: Event, loss: ast.AST) -> bool:
    """The loss of the backward ``event`` went through float16 ops of a model or tensor cast to half
    (not of an autocast region, whose flag is the one that picks the scaled branch)."""
    return half_through((o for obs in event.observations for o in options(obs.value(loss)) if isinstance(o, Tensor)),
                        by_autocast=False)


#: origin kinds of half values an autocast-like region made (not a cast of a model or a tensor)
AUTOCAST_ORIGIN_KINDS = frozenset({"autocast", "autocast_guess", "framework", APEX_O1_ORIGIN})


class TrainingModel:
    """The training steps of one file."""

    def __init__(self, tree: ast.Module, facts: Facts) -> None:
        self.tree = tree
        self.facts = facts
        self.events: List[Event] = []
        #: id of every node -> its scope (the function, lambda or module it runs in)
        self.scopes: Dict[int, ast.AST] = {}
        self._collect()
        self.steps = self._steps()

    # -- collection --------------------------------------------------------------------------------
    def _collect(self) -> None:
        scopes = self.scopes
        # ancestors as a linked chain (node, parent chain), made a tuple only for events
        todo: List[Tuple[ast.AST, Optional[tuple], ast.AST]] = [(self.tree, None, self.tree)]
        while todo:
            node, parents, scope = todo.pop()
            chain = (node, parents)
            scopes[id(node)] = scope
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                recorded = name in _EVENT_NAMES and self._event(node, _ancestors(chain), scope)
                if not recorded and self.facts.steps_an_optimizer(node):
                    # a call that steps an optimizer inside: a scheduling wrapper's
                    # ``step_and_update_lr()``, or the ``step()`` of a project class that wraps one
                    self.events.append(Event("step_via", node, _ancestors(chain) + (node,),
                                             func.value if isinstance(func, ast.Attribute) else None,
                                             list(self.facts.observations(node, scope))))
            inner = node if isinstance(node, (*FUNCTIONS, ast.Lambda)) else scope
            for field_name in node._fields:
                value = getattr(node, field_name, None)
                child_scope = inner if field_name == "body" else scope
                if isinstance(value, ast.AST):
                    todo.append((value, chain, child_scope))
                elif isinstance(value, list):
                    for item in reversed(value):
                        if isinstance(item, ast.AST):
                            todo.append((item, chain, child_scope))
        self.events.sort(key=lambda e: e.position)
        # an unknown ``x.step()`` is an optimizer step when the same ``x`` also ``zero_grad()``s in
        # that function (schedulers have no zero_grad, models no argument-less step)
        zeroed = {(id(self.scopes.get(id(e.node))), ast.unparse(e.receiver)) for e in self.events
                  if e.kind == "zero_grad" and e.receiver is not None}
        self.events = [e for e in self.events if e.kind != "step" or any(
            is_optimizer(obs.value(e.receiver)) for obs in e.observations) or (
            id(self.scopes.get(id(e.node))), ast.unparse(e.receiver)) in zeroed]

    def _event(self, node: ast.Call, ancestors: Tuple[ast.AST, ...], scope: ast.AST) -> bool:
        """Record the protocol event ``node`` is, if it is one (whether it was)."""
        func = node.func
        observations = self.facts.observations(node, scope)
        if not observations:
            return False
        name = func.attr if isinstance(func, ast.Attribute) else None
        receiver = func.value if isinstance(func, ast.Attribute) else None
        kind: Optional[str] = None
        if self._is_clip(node, observations):
            kind = "clip"
        elif name is not None and receiver is not None:
            values = [obs.value(receiver) for obs in observations]
            if name == "backward" and (any(is_tensor(v) for v in values) or (
                    not node.args and all(v is UNKNOWN for v in values))):
                kind = "backward"
            elif name == "backward" and len(node.args) == 1 and any(unscaled_fp16_fabric(v) for v in values):
                # ``fabric.backward(loss)`` at "16-true": a plain backward of ``loss``
                kind, receiver = "backward", node.args[0]
            elif name == "step" and not node.args and not node.keywords and (
                    any(is_optimizer(v) for v in values) or all(v is UNKNOWN for v in values)):
                kind = "step"  # an unknown receiver counts when it also zero_grad()s (checked below)
            elif any(is_scaler(v) for v in values):
                kind = {"step": "scaler_step", "update": "update", "unscale_": "unscale", "scale": "scale"}.get(name)
            elif name == "zero_grad":
                kind = "zero_grad"
        if kind is not None:
            self.events.append(Event(kind, node, ancestors, receiver, observations))
        return kind is not None

    def _is_clip(self, node: ast.Call, observations: Sequence[Observation]) -> bool:
        for obs in observations:
            for option in options(obs.value(node.func)):
                if isinstance(option, Ext) and option.name in trainingdata.CLIP_FUNCTIONS:
                    return True
                if isinstance(option, Method) and option.name in trainingdata.CLIP_METHODS:
                    return True
        return False

    def trained_models(self) -> List[str]:
        """Texts of the expressions whose ``.parameters()`` an optimizer of this file is built over:
        whatever their value, they are the modules being trained (``model`` in
        ``SGD(model.parameters())``, also for a model from a factory the analysis cannot see)."""
        out: List[str] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("train", "eval") and not node.args \
                    and isinstance(func.value, (ast.Name, ast.Attribute)):
                text = ast.unparse(func.value)  # ``model.train()``: an nn.Module by use
                if text not in out:
                    out.append(text)
                continue
            if not any(is_optimizer(obs.value(node)) for obs in self.observations(node)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                        and sub.func.attr in ("parameters", "named_parameters"):
                    text = ast.unparse(sub.func.value)
                    if text not in out:
                        out.append(text)
        return out

    def autocast_inside(self, container: Optional[ast.AST]) -> int:
        """Half dtypes of the autocast regions code inside ``container`` ran in (0: none)."""
        out = 0
        for node in ast.walk(container if container is not None else self.tree):
            if isinstance(node, ast.Call):
                for obs in self.observations(node):
                    state = obs.state
                    if state is not None:
                        out |= state[1]
        return out

    def scope_of(self, node: ast.AST) -> ast.AST:
        return self.scopes.get(id(node), self.tree)

    def observations(self, node: ast.AST):
        return self.facts.observations(node, self.scope_of(node))

    # -- steps ---------------------------------------------------------------------------------------
    def _steps(self) -> List[TrainingStep]:
        out: List[TrainingStep] = []
        claimed: Dict[int, TrainingStep] = {}
        for event in self.events:
            if event.kind != "backward":
                continue
            receiver = event.receiver
            assert receiver is not None
            loss, scaled = receiver, False
            if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
                    and receiver.func.attr == "scale" and receiver.args:
                if any(may_be_scaler(obs.value(receiver.func.value)) for obs in event.observations):
                    loss, scaled = receiver.args[0], True
            apex_with = self._apex_with(event)
            if apex_with is not None:
                scaled = True
                loss = apex_with.items[0].context_expr.args[0]  # type: ignore[attr-defined]
            function = _innermost(event.ancestors, FUNCTIONS)
            # the innermost loop (or function) that steps after the backward: an accumulation loop
            # around the backward alone steps in the loop around it
            step = None
            for container in _containers(event.ancestors):
                key = id(container) if container is not None else id(self.tree)
                if key in claimed:
                    owner = claimed[key]
                    if owner.scaled and not scaled and all(_exclusive(event.ancestors, b.ancestors)
                                                           for b in owner.backwards) \
                            and (self._on_scaler_presence(event, owner.backward)
                                 or _half_by_a_cast(event, loss)):
                        # the other branch of ``if scaler is not None: scaler.scale(loss).backward()
                        # else: loss.backward()``: a step of its own, with the same optimizer steps;
                        # also where a flag separates them and this branch's loss went through a
                        # model cast to half (``if args.precision == "amp": ... else: loss.backward()``
                        # with ``convert_weights(model)`` under ``args.precision == "fp16"``)
                        loop = container if isinstance(container, LOOPS) else None
                        own = self._collect_step(event, loss, scaled, container, loop, function, apex_with)
                        own.siblings = list(owner.backwards)
                        out.append(own)
                        step = own
                        break
                    owner.backwards.append(event)
                    step = owner
                    break
                loop = container if isinstance(container, LOOPS) else None
                candidate = self._collect_step(event, loss, scaled, container, loop, function, apex_with)
                if candidate.steps or candidate.scaler_steps or candidate.steps_via:
                    step = candidate
                    break
            if step is None or key in claimed:
                continue
            last = max(e.position for e in step.steps + step.scaler_steps + step.steps_via)
            step.clips = [c for c in step.clips if c.position < last]
            claimed[key] = step
            out.append(step)
        return out

    def _on_scaler_presence(self, event: Event, other: Event) -> bool:
        """Whether the ``if`` that separates two backwards tests a GradScaler's presence (``if
        scaler is not None:``, ``if scaler:``), not a flag (``if args.fp16:``, whose other branch
        the flag's evidence already leaves out)."""
        branch = _separating_if(event.ancestors, other.ancestors)
        subject = presence_subject(branch.test) if branch is not None else None
        return subject is not None and any(is_scaler(obs.value(subject[0]))
                                           for obs in event.observations + other.observations)

    def _collect_step(self, event: Event, loss: ast.AST, scaled: bool, container: Optional[ast.AST],
                      loop: Optional[ast.AST], function: Optional[ast.AST],
                      apex_with: Optional[ast.With]) -> TrainingStep:
        """The protocol events in ``container`` around the backward ``event``."""
        scope = container if container is not None else self.tree
        step = TrainingStep(event, [event], loss, scaled, container, loop, function, apex_with=apex_with)
        for other in self.events:
            if other.kind == "backward" or not _within(other.ancestors, scope):
                continue
            if _exclusive(other.ancestors, event.ancestors):
                continue
            if other.kind == "unscale":
                step.unscales.append(other)
            elif other.kind == "zero_grad":
                step.zero_grads.append(other)
            elif other.kind != "scale" and other.position > event.position:
                {"step": step.steps, "scaler_step": step.scaler_steps, "update": step.updates,
                 "clip": step.clips, "step_via": step.steps_via}[other.kind].append(other)
        return step

    def apex_scaled(self, event: Event) -> bool:
        """Whether the backward ``event`` runs on a loss apex's ``amp.scale_loss`` scaled."""
        return self._apex_with(event) is not None

    def _apex_with(self, event: Event) -> Optional[ast.With]:
        """``with amp.scale_loss(loss, opt) as scaled: scaled.backward()``: the with statement."""
        receiver = event.receiver
        for ancestor in reversed(event.ancestors):
            if isinstance(ancestor, ast.With) and isinstance(receiver, ast.Name):
                for item in ancestor.items:
                    call = item.context_expr
                    target = item.optional_vars
                    if isinstance(call, ast.Call) and isinstance(target, ast.Name) and target.id == receiver.id \
                            and call.args:
                        for obs in event.observations:
                            for option in options(obs.value(call.func)):
                                if isinstance(option, Ext) and option.name == "apex.amp.scale_loss":
                                    return ancestor
        return None


def _containers(ancestors: Sequence[ast.AST]) -> List[Optional[ast.AST]]:
    """The loops around the last node, innermost first, up to its function (which comes last; None
    at module level)."""
    out: List[Optional[ast.AST]] = []
    for node in reversed(ancestors[:-1]):
        if isinstance(node, LOOPS):
            out.append(node)
        elif isinstance(node, FUNCTIONS):
            out.append(node)
            return out
    out.append(None)
    return out


def _innermost(ancestors: Sequence[ast.AST], types: tuple) -> Optional[ast.AST]:
    for node in reversed(ancestors[:-1]):
        if isinstance(node, types):
            return node
    return None


def _within(ancestors: Sequence[ast.AST], scope: ast.AST) -> bool:
    return any(a is scope for a in ancestors)


def _separating_if(a: Sequence[ast.AST], b: Sequence[ast.AST]) -> Optional[ast.If]:
    """The ``if`` whose body holds one of two calls (by their ancestors) and whose ``else`` the
    other (None where none does)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x is not y:
            parent = a[i - 1] if i else None
            if isinstance(parent, ast.If):
                in_body_x = any(s is x for s in parent.body)
                in_body_y = any(s is y for s in parent.body)
                in_else_x = any(s is x for s in parent.orelse)
                in_else_y = any(s is y for s in parent.orelse)
                if (in_body_x and in_else_y) or (in_else_x and in_body_y):
                    return parent
            return None
    return None


def _exclusive(a: Sequence[ast.AST], b: Sequence[ast.AST]) -> bool:
    """True when the two calls lie in different branches of one ``if``/``else``: never both run."""
    return _separating_if(a, b) is not None
    return False
