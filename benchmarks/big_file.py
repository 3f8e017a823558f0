"""One large file with many findings: does `check` and `fix --diff` grow with the file, or faster?

Generates files of N and 10*N lines from a repeated, real-looking snippet (half-precision
attention scores filled with -1e9, a deprecated GradScaler: one AMP301 and one AMP501 finding
per 10 lines), runs each command in a fresh interpreter and prints its CPU time and peak memory,
and the ratio of the large run to the small one. Linear growth shows a ratio near 10.

    python benchmarks/big_file.py            # 5,000 and 50,000 lines
    python benchmarks/big_file.py --lines 2000 --only check
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SNIPPET = '''
def attention_{i}(q, k, mask):
    """Scores in half precision; the mask fill overflows float16."""
    scores = (q.half() @ k.half().transpose(-2, -1)) / 8.0
    scores = scores.masked_fill(mask == 0, -1e9)
    return scores


scaler_{i} = torch.cuda.amp.GradScaler()

'''
HEADER = "import torch\n\n"

MEASURE = r"""
import resource, sys, time, io, contextlib
from amp_lint.cli import main
start = time.process_time()
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
elapsed = time.process_time() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, len(out.getvalue()))
"""

COMMANDS = {
    "check": ["check"],
    "check json (fix edits)": ["check", "--output-format", "json"],
    "fix --diff": ["check", "--diff", "--unsafe-fixes"],
}


def make(lines: int) -> str:
    count = max(1, (lines - HEADER.count("\n")) // SNIPPET.count("\n"))
    return HEADER + "".join(SNIPPET.format(i=i) for i in range(count))


def measure(path: Path, args: list) -> "tuple[float, int]":
    proc = subprocess.run([sys.executable, "-c", MEASURE, *args, "--isolated", "--no-cache", str(path)],
                          capture_output=True, text=True, check=True)
    seconds, mib, _ = proc.stdout.split()
    return float(seconds), int(mib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5000, help="lines of the small file (the large one has 10x)")
    parser.add_argument("--only", action="append", choices=list(COMMANDS), help="run only these commands")
    args = parser.parse_args()
    commands = {name: COMMANDS[name] for name in (args.only or COMMANDS)}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (1, 10):
            path = Path(tmp) / f"big_{scale}.py"
            path.write_text(make(args.lines * scale))
            for name, command in commands.items():
                results[(name, scale)] = measure(path, command)
    print(f"{'command':<24} {'lines':>7} {'cpu s':>8} {'peak MiB':>9}")
    for name in commands:
        for scale in (1, 10):
            seconds, mib = results[(name, scale)]
            print(f"{name:<24} {args.lines * scale:>7} {seconds:>8.2f} {mib:>9}")
        small, large = results[(name, 1)], results[(name, 10)]
        print(f"{'':<24} {'ratio':>7} {large[0] / small[0]:>8.1f}x {large[1] / small[1]:>8.1f}x  (10x the lines)")
    print(json.dumps({f"{n}@{s}": v for (n, s), v in results.items()}))


if __name__ == "__main__":
    main()
