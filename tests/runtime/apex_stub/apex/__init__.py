"""A minimal stand-in for NVIDIA apex, for amp-lint's runtime tests only.

It exists so that ORIGINAL (pre-migration) training fixtures that do
``from apex import amp`` can be imported and run on a machine without apex.
It does no mixed precision at all: ``amp.initialize`` returns its arguments
unchanged, ``amp.scale_loss`` yields ``loss * 1.0`` and ``amp.master_params``
yields the optimizer's parameters. The runtime harness puts it on PYTHONPATH
only when asked (``run_script(..., with_apex_stub=True)``).
"""

IS_AMP_LINT_STUB = True

from . import amp  # noqa: E402,F401  (real apex also exposes ``apex.amp``)
