"""amp-lint runtime bootstrap: imported by ``site`` when an instrumented script starts.

``amp_lint.runtime.harness`` puts this directory first on ``PYTHONPATH``; everything else lives in
``amp_lint.runtime.instrument`` (which patches torch only once the script imports it). Another
``sitecustomize`` further down ``sys.path`` still runs, after this one.
"""
import os
import sys


def _boot() -> None:
    try:
        from amp_lint.runtime import instrument
    except ImportError:  # amp-lint not importable as installed: use the copy this file belongs to
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
        from amp_lint.runtime import instrument
    instrument.boot()


def _chain_other_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == here:
            continue
        candidate = os.path.join(entry or os.curdir, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as fh:
                code = compile(fh.read(), candidate, "exec")
            exec(code, {"__name__": "_amp_lint_chained_sitecustomize", "__file__": candidate})
            return


_boot()
try:
    _chain_other_sitecustomize()
except Exception as exc:  # never break the script under test
    sys.stderr.write("amp-lint: the chained sitecustomize failed: %s: %s\n" % (type(exc).__name__, exc))
