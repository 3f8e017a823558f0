"""How much slower ``amp-lint trace`` runs a script than plain ``python``.

For each script: a plain run and a traced run (``amp_lint.runtime.harness.run_script(trace=True)``),
one after the other, ``--repeat`` times; prints the median CPU time (user+sys of the child: steadier
than wall time on a shared machine) and wall time of each, and their ratio.

    python benchmarks/trace_overhead.py                     # the numerics and training fixtures
    python benchmarks/trace_overhead.py SCRIPT [SCRIPT...]  # your own (run with no arguments)
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from amp_lint.runtime.harness import run_script

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = (
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "fixtures" / "numerics").glob("AMP*.py"))
    + [f"fixtures/training/expected/{name}.py" for name in ("fp32_mlp", "gpt_accum_clip", "half_finetune")]
    + ["fixtures/training/half_finetune.py"]
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def plain(script: str) -> Tuple[float, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cpu, wall = _children_cpu(), time.monotonic()
    subprocess.run([sys.executable, script], cwd=ROOT, env=env, capture_output=True)
    return _children_cpu() - cpu, time.monotonic() - wall


def traced(script: str) -> Tuple[float, float]:
    cpu, wall = _children_cpu(), time.monotonic()
    result = run_script(ROOT / script, cwd=ROOT, trace=True)
    if result.instrumentation.get("trace") is None:
        raise SystemExit(f"{script}: no trace record\n{result.stderr[-2000:]}")
    return _children_cpu() - cpu, time.monotonic() - wall


def main(argv: Sequence[str] = ()) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv or None)
    rows: List[Tuple[str, float, float, float, float]] = []
    for script in args.scripts:
        p, t = [], []
        for _ in range(args.repeat):
            p.append(plain(script))
            t.append(traced(script))
        pc, pw = statistics.median(x[0] for x in p), statistics.median(x[1] for x in p)
        tc, tw = statistics.median(x[0] for x in t), statistics.median(x[1] for x in t)
        rows.append((script, pc, tc, pw, tw))
        print(f"{script}: cpu {pc:.2f} -> {tc:.2f} s ({tc / pc:.2f}x), wall {pw:.2f} -> {tw:.2f} s ({tw / pw:.2f}x)",
              flush=True)
    print("\n| script | plain cpu (s) | traced cpu (s) | ratio | plain wall (s) | traced wall (s) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for script, pc, tc, pw, tw in rows:
        print(f"| `{script}` | {pc:.2f} | {tc:.2f} | {tc / pc:.2f}x | {pw:.2f} | {tw:.2f} | {tw / pw:.2f}x |")


if __name__ == "__main__":
    main()
