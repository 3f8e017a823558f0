"""The op data tables (``amp_lint/data/ops.py``) agree with the installed torch.

Facts the rules rest on that torch can answer itself: optimizer defaults and the position of
``eps`` (AMP302), which reductions take ``dtype=`` (the AMP203 fix writes it), which reductions
give a 0-dim tensor without ``dim`` (type promotion), which ops are bounded whatever their input
(AMP204's evidence), and that every ``torch.nn`` class a table names exists.
"""
from __future__ import annotations

import inspect
import warnings

import pytest

from amp_lint.data import ops

torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")


@pytest.mark.parametrize("name", sorted(ops.EPS_OPTIMIZERS))
def test_optimizer_eps_default_and_position(name: str) -> None:
    eps, index = ops.EPS_OPTIMIZERS[name]
    parameters = [p for p in inspect.signature(getattr(torch.optim, name).__init__).parameters.values()
                  if p.name != "self"]
    names = [p.name for p in parameters]
    assert parameters[names.index("eps")].default == eps and names.index("eps") == index


def test_only_the_optimizers_the_docs_name_take_fused() -> None:
    """AMP302's docs and the ops table say which optimizers accept ``fused=`` (kernels in fp32)."""
    takes = {name for name in ops.EPS_OPTIMIZERS
             if "fused" in inspect.signature(getattr(torch.optim, name).__init__).parameters}
    assert takes == {"Adam", "AdamW", "Adagrad"}


@pytest.mark.parametrize("op", sorted(ops.REDUCTIONS))
def test_reductions_that_take_dtype(op: str) -> None:
    function = getattr(torch, op, None) or getattr(torch.linalg, op)
    x = torch.randn(3, 4)
    try:
        result = function(x, -1, dtype=torch.float32) if op == "cumsum" else function(x, dtype=torch.float32)
        takes = result is not None
    except TypeError:
        takes = False
    assert takes == ops.REDUCTIONS[op]


@pytest.mark.parametrize("op", sorted(ops.FULL_REDUCTIONS))
def test_full_reductions_give_a_zero_dim_tensor(op: str) -> None:
    x = torch.randn(3, 4)
    assert getattr(torch, op)(x > 0 if op in ("all", "any") else x).dim() == 0


@pytest.mark.parametrize("op", sorted(ops.BOUNDED_OPS))
def test_bounded_ops_stay_small_on_huge_inputs(op: str) -> None:
    """|y| <= 6 (or NaN, out of an inverse trig's domain) for inputs of size 1e4: exp or a square of it
    cannot overflow float16."""
    torch.manual_seed(0)
    big = torch.randn(1000) * 1e4
    function = getattr(torch, op, None) or getattr(F, op)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op in ("atan2", "cosine_similarity"):
            result = function(big, big + 1, dim=0) if op == "cosine_similarity" else function(big, big + 1)
        elif op in ("softmax", "softmin", "normalize"):
            result = function(big, dim=0)
        else:
            result = function(big)
    values = result[~torch.isnan(result)]
    if not values.numel():  # all outside the domain: NaN, never large
        assert op in ("acos", "arccos", "asin", "arcsin")
        values = function(torch.rand(1000) * 2 - 1)
    assert float(values.abs().max()) <= 6.0


def test_every_nn_class_a_table_names_exists() -> None:
    names = set(ops.MODULE_OPS) | set(ops.BOUNDED_MODULES)
    assert names and all(isinstance(getattr(torch.nn, name, None), type) for name in names)
