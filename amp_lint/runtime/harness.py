"""Run a script in a subprocess, instrumented, and read back what it did with torch.amp.

``run_script(path, *args)`` (or ``run_script(None, *args, module="pkg.train")``) runs the script
with ``sys.executable`` and returns a :class:`RunResult`. The observation is made at run time, not
by reading the source: ``amp_lint/runtime/_site`` goes first on ``PYTHONPATH``, its
``sitecustomize`` loads :mod:`amp_lint.runtime.instrument` (see there for what is recorded), and
the record comes back as JSON in ``RunResult.instrumentation``.

Options: ``force_fp32`` (every autocast and GradScaler created disabled, ``.half()`` a no-op: the
fp32 reference of the same code), ``max_steps`` (stop after that many optimizer steps, skipped
ones included), ``skip_steps`` (step numbers on which ``scaler.step`` skips the optimizer, to
replay an fp16 run's skipped steps in its fp32 reference), ``device`` (``auto``/``cpu``/``cuda``; ``cpu`` also hides GPUs), ``trace``
(per-op records), ``seed`` (torch, ``random`` and numpy seeded when torch is imported; a script
that seeds itself wins), ``timeout`` (wall clock, seconds).
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from amp_lint.runtime import instrument

SITE_DIR = Path(__file__).resolve().parent / "_site"

# Kept under their old names for the tests written against tests/runtime/harness.py.
REPORT_ENV = instrument.REPORT_ENV
FORCE_FP32_ENV = instrument.FORCE_FP32_ENV

_FINAL_LOSS_RE = re.compile(r"^final_loss=(\S+)\s*$")


@dataclass
class RunResult:
    """What one instrumented run did."""

    returncode: int
    stdout: str
    stderr: str
    final_loss: Optional[float]
    instrumentation: Dict[str, Any] = field(default_factory=dict)
    argv: List[str] = field(default_factory=list)
    duration_s: float = 0.0
    timed_out: bool = False
    timeout_s: float = 0.0

    @property
    def stopped(self) -> bool:
        """The run was ended by the step limit (not by the script)."""
        return self.instrumentation.get("stopped_after_steps") is not None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def final_loss_lines(self) -> List[str]:
        return [ln for ln in self.stdout.splitlines() if ln.startswith("final_loss=")]

    @property
    def loss_is_finite(self) -> bool:
        return self.final_loss is not None and math.isfinite(self.final_loss)

    @property
    def steps(self) -> List[Dict[str, Any]]:
        """Per-step records: step, loss, micro_batches, skipped, scale, nonfinite."""
        return list(self.instrumentation.get("steps", []))

    def autocast_entries(self, device_type: Optional[str] = None, dtype: Optional[str] = None,
                         enabled: Optional[bool] = None) -> List[Dict[str, Any]]:
        """The recorded autocast kinds, filtered; dtype is e.g. "float16"."""
        out = []
        for entry in self.instrumentation.get("autocast", []):
            if device_type is not None and entry["device_type"] != device_type:
                continue
            if dtype is not None and entry["dtype"] != dtype.replace("torch.", ""):
                continue
            if enabled is not None and entry["enabled"] != enabled:
                continue
            out.append(entry)
        return out

    def stderr_tail(self, lines: int = 12) -> str:
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])

    def describe(self, tail: int = 3000) -> str:
        """A failure message: the command, return code, and the ends of the streams."""
        return (
            f"command: {' '.join(self.argv)}\nreturncode: {self.returncode}"
            f"{' (timed out)' if self.timed_out else ''}\n"
            f"--- stdout (tail) ---\n{self.stdout[-tail:]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-tail:]}"
        )


def parse_final_loss(stdout: str) -> Optional[float]:
    """The value of the last ``final_loss=<float>`` line, or None."""
    value = None
    for line in stdout.splitlines():
        m = _FINAL_LOSS_RE.match(line.strip())
        if m:
            try:
                value = float(m.group(1))
            except ValueError:
                value = None
    return value


def _pythonpath(*front: os.PathLike, extra: Optional[str] = None) -> str:
    parts = [str(p) for p in front]
    if extra:
        parts.append(extra)
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def run_script(
    path: Optional[os.PathLike],
    *args: str,
    module: Optional[str] = None,
    cwd: Optional[os.PathLike] = None,
    timeout: float = 120,
    env_extra: Optional[Mapping[str, str]] = None,
    force_fp32: bool = False,
    max_steps: Optional[int] = None,
    device: str = "auto",
    trace: bool = False,
    seed: Optional[int] = None,
    skip_steps: Sequence[int] = (),
) -> RunResult:
    """Run ``python path *args`` (or ``python -m module *args``) instrumented; see the module docstring.

    ``env_extra`` entries override the environment, except ``PYTHONPATH``, which is appended after
    the instrumentation directory.
    """
    if (path is None) == (module is None):
        raise ValueError("give a script path or a module, not both")
    with tempfile.TemporaryDirectory(prefix="amp_lint_rt_") as tmp:
        report = Path(tmp) / "report.json"
        env = dict(os.environ)
        extra = dict(env_extra or {})
        env["PYTHONPATH"] = _pythonpath(SITE_DIR, extra=extra.pop("PYTHONPATH", None))
        env.update(extra)
        env[instrument.REPORT_ENV] = str(report)
        env.pop(instrument.OWNER_ENV, None)
        for name, value in ((instrument.FORCE_FP32_ENV, "1" if force_fp32 else None),
                            (instrument.MAX_STEPS_ENV, str(max_steps) if max_steps else None),
                            (instrument.DEVICE_ENV, device),
                            (instrument.TRACE_ENV, "1" if trace else None),
                            (instrument.SEED_ENV, None if seed is None else str(seed)),
                            (instrument.SKIP_STEPS_ENV, ",".join(map(str, skip_steps)) or None)):
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        if device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("MKL_NUM_THREADS", "1")
        env.setdefault("PYTHONHASHSEED", "0")
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONSTARTUP", None)

        target = ["-m", module] if module is not None else [str(path)]
        argv = [sys.executable, *target, *map(str, args)]
        start = time.monotonic()
        timed_out = False
        try:
            proc = subprocess.run(argv, cwd=str(cwd) if cwd is not None else None, env=env,
                                  capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            timed_out = True
            returncode = -1
            stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        duration = time.monotonic() - start

        instrumentation: Dict[str, Any] = {}
        if report.exists():
            try:
                instrumentation = json.loads(report.read_text(encoding="utf-8"))
            except ValueError as exc:
                instrumentation = {"report_error": f"unreadable report: {exc}"}
        else:
            instrumentation = {"report_error": "no report written (killed, os._exit, or python -S?)"}

    return RunResult(
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        final_loss=parse_final_loss(stdout),
        instrumentation=instrumentation,
        argv=argv,
        duration_s=duration,
        timed_out=timed_out,
        timeout_s=timeout,
    )
