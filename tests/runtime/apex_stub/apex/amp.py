"""Stub of ``apex.amp`` (see ``apex/__init__.py``): same call shapes, no-op behaviour."""
import contextlib

IS_AMP_LINT_STUB = True


def initialize(models, optimizers=None, enabled=True, opt_level="O1", **kwargs):
    """Like apex: returns ``models`` or ``(models, optimizers)``, here unchanged."""
    if optimizers is None:
        return models
    return models, optimizers


@contextlib.contextmanager
def scale_loss(loss, optimizers, loss_id=0, model=None, delay_unscale=False, delay_overflow_check=False):
    """Yield the "scaled" loss; the stub's scale is 1.0."""
    yield loss * 1.0


def master_params(optimizer):
    """Yield every parameter the optimizer holds, group by group."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            yield p


def state_dict(destination=None):
    return {} if destination is None else destination


def load_state_dict(state_dict):
    return None
