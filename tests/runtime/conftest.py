"""Session-wide runs of ``verify`` and ``trace``: each case runs once, whatever number of tests read it.

Tests ask for ``verified(name)`` / ``traced(name)``; on first use each fixture starts every case that
the collected tests name (through their ``case`` parameter or a ``cases(...)`` marker), two at a time
(``AMP_LINT_RUNTIME_JOBS`` overrides), and keeps the results for the session.
"""
from __future__ import annotations

import concurrent.futures
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterable

import pytest

from amp_lint.runtime import trace as tracer
from amp_lint.runtime import verify as verifier
from amp_lint.runtime.target import resolve
from runtime_cases import MODULE_ARGS, MODULE_CASE, RUNTIME, STEPS, TRACE_CASES, TRAINING, VERIFY_CASES

def _jobs() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return int(os.environ.get("AMP_LINT_RUNTIME_JOBS", "0")) or max(1, min(2, cpus))


def _wanted(session: pytest.Session, known: Iterable[str]) -> list:
    known = set(known)
    names = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("case") in known:
            names.append(callspec.params["case"])
        marker = item.get_closest_marker("cases")
        if marker is not None:
            names.extend(n for n in marker.args if n in known)
    return list(dict.fromkeys(names))


class _Cache:
    """Computes each case once (thread-safe), prefetching the wanted ones in parallel."""

    def __init__(self, compute: Callable[[str], Any]) -> None:
        self.compute = compute
        self.results: Dict[str, Any] = {}
        self.locks: Dict[str, threading.Lock] = {}
        self.guard = threading.Lock()

    def get(self, name: str) -> Any:
        with self.guard:
            lock = self.locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self.results:
                self.results[name] = self.compute(name)
        return self.results[name]

    def prefetch(self, names: list) -> None:
        if len(names) > 1 and _jobs() > 1:
            with concurrent.futures.ThreadPoolExecutor(max_workers=_jobs()) as pool:
                list(pool.map(self.get, names))


@pytest.fixture(scope="session")
def verified(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """``verified(name)``: the :class:`amp_lint.runtime.verify.Verdict` of a case."""
    module_dir = tmp_path_factory.mktemp("verify_module")

    def compute(name: str) -> verifier.Verdict:
        if name == MODULE_CASE:
            shutil.copytree(RUNTIME / "csv_regression", module_dir / "csv_regression",
                            ignore=shutil.ignore_patterns("__pycache__"))
            target = resolve(None, "csv_regression.train", MODULE_ARGS, module_dir)
            options = verifier.Options(steps=STEPS, apply=True)
        else:
            script, extra = VERIFY_CASES[name]
            target = resolve(str(TRAINING / script), None, ())
            options = verifier.Options(steps=STEPS, **extra)
        return verifier.verify(target, options)

    cache = _Cache(compute)
    cache.prefetch(_wanted(request.session, list(VERIFY_CASES) + [MODULE_CASE]))
    return cache.get


@pytest.fixture(scope="session")
def module_copy(verified) -> Path:
    """The copy of fixtures/runtime that the module case ran in (and applied its rewrite to)."""
    verdict = verified(MODULE_CASE)
    return verdict.target.cwd


@pytest.fixture(scope="session")
def traced(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """``traced(name)``: the :class:`amp_lint.runtime.trace.TraceResult` of a case."""

    def compute(name: str) -> tracer.TraceResult:
        return tracer.trace(resolve(str(TRACE_CASES[name]), None, ()), tracer.Options())

    cache = _Cache(compute)
    cache.prefetch(_wanted(request.session, TRACE_CASES))
    return cache.get
