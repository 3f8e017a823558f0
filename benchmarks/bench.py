#!/usr/bin/env python3
"""Time amp-lint against the LibCST parse floor (and optionally TorchFix), side by side.

    python benchmarks/bench.py [PATHS...] [--runs 3] [--torchfix-python PATH]

PATHS default to the installed torch package's ``nn``, ``optim`` and ``amp`` sources. The
corpus is copied into a temporary directory (so one file can be touched and the cache lives
there), then every measurement runs once per round, in rounds, and the medians are reported:

* floor:        a fresh interpreter that imports libcst, reads and ``parse_module``s every file
* cold:         ``amp-lint check --no-cache --select ALL`` (the whole corpus is one program)
* warm:         ``amp-lint check --select ALL`` on the unchanged tree after a populating run
* one changed:  the same after appending a comment to one file
* pre-commit:   ``amp-lint check --no-cache --select ALL FILE`` on one file of the project (the corpus
                copy has a ``pyproject.toml``): the project is analysed as context, one file reported
* TorchFix:     ``<python> -m torchfix --select ALL -j1 .`` when ``--torchfix-python`` is given

Every command runs as a separate process, so interpreter start-up and imports count everywhere.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

FLOOR_SCRIPT = r"""
import sys, time, libcst
start = time.perf_counter()
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        libcst.parse_module(handle.read())
print(time.perf_counter() - start)
"""


def default_corpus() -> List[str]:
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("bench.py: torch is not installed; give PATHS to benchmark")
    base = Path(torch.__file__).resolve().parent
    return [str(base / name) for name in ("nn", "optim", "amp")]


def copy_corpus(paths: Sequence[str], into: Path) -> List[Path]:
    """Copy the .py files of ``paths`` under ``into/corpus``; return the copied files."""
    root = into / "corpus"
    files: List[Path] = []
    for raw in paths:
        src = Path(raw).resolve()
        dest_base = root / src.name
        suffix = 1
        while dest_base.exists():
            suffix += 1
            dest_base = root / f"{src.name}{suffix}"
        sources = [src] if src.is_file() else sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)
        for file in sources:
            dest = dest_base if src.is_file() else dest_base / file.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, dest)
            files.append(dest)
    return files


def timed(cmd: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None) -> Tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of the process and its workers, peak RSS in MiB, stdout)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=str(cwd), stdout=out, stderr=err, env=env)
        rss, cpu = 0, float("nan")
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            rss = int(usage.ru_maxrss / 1024)  # KiB on Linux
            cpu = usage.ru_utime + usage.ru_stime  # includes the reaped worker processes
        else:  # pragma: no cover - non-Unix
            proc.wait()
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode not in (0, 1):
            sys.exit(f"bench.py: {' '.join(cmd)} failed ({proc.returncode}):\n"
                     f"{err.read().decode(errors='replace')[-2000:]}")
        return wall, cpu, rss, out.read().decode(errors="replace")


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="corpus (default: installed torch's nn/optim/amp)")
    parser.add_argument("--runs", type=int, default=3, help="rounds; medians are reported (default 3)")
    parser.add_argument("--torchfix-python", help="python of a virtualenv with torchfix installed")
    parser.add_argument("--torchfix-runs", type=int, default=1, help="TorchFix rounds (default 1: it is slow)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary corpus copy")
    args = parser.parse_args(argv)

    import amp_lint
    from amp_lint import __version__
    corpus_paths = args.paths or default_corpus()
    tmp = Path(tempfile.mkdtemp(prefix="amp-lint-bench-"))
    try:
        files = copy_corpus(corpus_paths, tmp)
        if not files:
            sys.exit("bench.py: no .py files in the corpus")
        corpus = tmp / "corpus"
        (corpus / "pyproject.toml").write_text("[project]\nname = 'bench-corpus'\n")  # the project root
        # A frozen copy of amp-lint: edits to the working tree during the run change nothing.
        shutil.copytree(Path(amp_lint.__file__).resolve().parent, tmp / "src" / "amp_lint",
                        ignore=shutil.ignore_patterns("__pycache__"))
        env = dict(os.environ, TERM="dumb", PYTHONPATH=str(tmp / "src"))
        lines = sum(f.read_bytes().count(b"\n") for f in files)
        rels = [str(f.relative_to(corpus)) for f in files]
        touched = max(files, key=lambda f: f.stat().st_size)  # the worst case for one file
        amp = [sys.executable, "-m", "amp_lint", "check", "--isolated", "--select", "ALL", "--exit-zero",
               "--statistics", "--quiet"]
        commands: Dict[str, List[str]] = {
            "floor": [sys.executable, "-c", FLOOR_SCRIPT] + rels,
            "cold": amp + ["--no-cache", "."],
            "pre-commit": amp + ["--no-cache", str(touched.relative_to(corpus))],
        }
        warm_cmd = amp + ["."]
        names = list(commands) + ["warm", "one file changed"]
        wall: Dict[str, List[float]] = {name: [] for name in names}
        cpu: Dict[str, List[float]] = {name: [] for name in names}
        parse_only: List[float] = []
        peak_rss: Dict[str, int] = {}

        def record(name: str, cmd: List[str]) -> str:
            seconds, cpu_seconds, rss, out = timed(cmd, corpus, env)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
            peak_rss[name] = max(peak_rss.get(name, 0), rss)
            return out

        try:
            load = " (load average %.2f at start)" % os.getloadavg()[0]
        except (AttributeError, OSError):
            load = ""
        print(f"amp-lint {__version__}, Python {platform.python_version()}, {platform.machine()}, "
              f"{os.cpu_count()} cores{load}; corpus: {len(files)} files, {lines} lines "
              f"({', '.join(corpus_paths)})", file=sys.stderr)
        for round_ in range(args.runs):
            for name, cmd in commands.items():
                out = record(name, cmd)
                if name == "floor":
                    parse_only.append(float(out.strip().splitlines()[-1]))
            shutil.rmtree(corpus / ".amp_lint_cache", ignore_errors=True)
            timed(warm_cmd, corpus, env)  # populate
            record("warm", warm_cmd)
            with open(touched, "a", encoding="utf-8") as handle:
                handle.write(f"\n# amp-lint bench edit {round_}\n")
            record("one file changed", warm_cmd)
            print(f"round {round_ + 1}/{args.runs}: "
                  + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in wall.items()), file=sys.stderr)
        torchfix: List[Tuple[float, float]] = []
        if args.torchfix_python:
            for _ in range(args.torchfix_runs):
                result = timed([args.torchfix_python, "-m", "torchfix", "--select", "ALL", "-j1", "."], corpus,
                               dict(os.environ, TERM="dumb"))
                torchfix.append(result[:2])

        med = {name: statistics.median(values) for name, values in wall.items()}
        mcpu = {name: statistics.median(values) for name, values in cpu.items()}
        floor, cold = med["floor"], med["cold"]
        rows = [("LibCST `parse_module` floor (fresh interpreter, all files)", "floor", "1.00x", "1.00x")]
        rows.append(("amp-lint cold `--no-cache`", "cold", f"{fmt_ratio(cold / floor)} floor",
                     f"{fmt_ratio(mcpu['cold'] / mcpu['floor'])} floor"))
        for name, label in (("warm", "amp-lint warm (unchanged tree)"),
                            ("one file changed", "amp-lint, one file changed"),
                            ("pre-commit", "amp-lint on one file of the project, `--no-cache`")):
            rows.append((label, name, f"{100 * med[name] / cold:.1f}% of cold",
                         f"{100 * mcpu[name] / mcpu['cold']:.1f}% of cold"))
        print()
        print(f"Corpus: {len(files)} files, {lines} lines; {os.cpu_count()} cores{load}; median of {args.runs} "
              f"(bare parse alone, in-process: {statistics.median(parse_only):.2f} s; "
              f"peak RSS: floor {peak_rss.get('floor', 0)} MiB, cold {peak_rss.get('cold', 0)} MiB). "
              f"CPU = user+sys of the process.")
        print()
        print("| run | wall (s) | CPU (s) | wall ratio | CPU ratio |")
        print("| --- | ---: | ---: | --- | --- |")
        for label, name, ratio, cpu_ratio in rows:
            print(f"| {label} | {med[name]:.2f} | {mcpu[name]:.2f} | {ratio} | {cpu_ratio} |")
        if torchfix:
            tf_wall = statistics.median(w for w, _ in torchfix)
            tf_cpu = statistics.median(c for _, c in torchfix)
            print(f"| TorchFix `--select ALL -j1` | {tf_wall:.2f} | {tf_cpu:.2f} | "
                  f"amp-lint cold {fmt_ratio(tf_wall / cold)} faster | "
                  f"{fmt_ratio(tf_cpu / mcpu['cold'])} less CPU |")
        print()
        print("Reproduce: `" + " ".join(["python benchmarks/bench.py"] + list(args.paths)) + "`")
    finally:
        if args.keep:
            print(f"corpus kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
