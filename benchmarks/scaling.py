"""How the phases of ``amp-lint check`` grow with the size of the repository.

The precision analysis is whole-program (the project phase): it must stay a small share of a run as
repositories grow. This script checks growing slices of one large corpus (by default the installed
torch package: its first 125, 250, 500 and 1,000 Python files in path order, so that packages stay
whole) and times, each in a fresh interpreter, the three phases of a cold run: parsing every file,
the project phase (the interpreter over the whole program) and the rules (one traversal per file,
and the findings). It prints each phase's share of the run and how it grows from one size to the
next; read the shares and growth factors, not the seconds (these machines are shared and noisy).

    python benchmarks/scaling.py [--sizes 125,250,500,1000] [ROOT]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

DEFAULT_SIZES = (125, 250, 500, 1000)


def corpus_files(root: Path) -> List[Path]:
    """The Python files under ``root`` in path order (tests and generated stubs included)."""
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def default_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("error: torch is not installed; pass a corpus folder")
    return Path(spec.origin).parent


def measure(paths: Sequence[str], root: str) -> Dict[str, float]:
    """Seconds of each phase of a cold check of ``paths`` (run in this interpreter)."""
    import dataclasses
    import gc

    from amp_lint.config import Settings
    from amp_lint.engine.linter import ParsedFile, analyse, check, findings_of
    from amp_lint.rules import ALL_RULES
    from amp_lint.source import decode_source

    gc.disable()  # as the runner does during a run
    settings = dataclasses.replace(Settings(), project_root=root)
    rules = [r for r in ALL_RULES if not r.preview]
    start = time.perf_counter()
    parsed = []
    lines = 0
    for path in paths:
        source = decode_source(path, Path(path).read_bytes())
        lines += source.text.count("\n")
        parsed.append(ParsedFile.parse(path, os.path.relpath(path, root), source.text, rules, True))
    parse_done = time.perf_counter()
    analysis = analyse(parsed, settings)
    analyse_done = time.perf_counter()
    _, raws = check(parsed, settings, analysis)
    paths_by_rel = {m.relpath: m.path for m in analysis.modules.values()}
    findings = sum(len(findings_of(p, analysis.modules.get(i), raws.get(i, []), settings, False, paths_by_rel))
                   for i, p in enumerate(parsed))
    rules_done = time.perf_counter()
    return {"files": len(paths), "lines": lines, "findings": findings, "errors": len(analysis.errors),
            "parse": parse_done - start, "project": analyse_done - parse_done, "rules": rules_done - analyse_done}


def _child(paths_file: str, root: str) -> int:
    paths = Path(paths_file).read_text(encoding="utf-8").splitlines()
    print(json.dumps(measure(paths, root)))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", help="corpus folder (default: the installed torch package)")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="file counts, ascending")
    parser.add_argument("--child", nargs=2, metavar=("PATHS_FILE", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(*args.child)
    root = Path(args.root) if args.root else default_root()
    files = corpus_files(root)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not files or sizes[-1] > len(files):
        raise SystemExit(f"error: {root} has {len(files)} Python files, fewer than {sizes[-1]}")
    rows = []
    listing = Path(os.environ.get("TMPDIR", "/tmp")) / f"amp-lint-scaling-{os.getpid()}.txt"
    try:
        for size in sizes:
            listing.write_text("\n".join(str(p) for p in files[:size]), encoding="utf-8")
            out = subprocess.run([sys.executable, __file__, "--child", str(listing), str(root)],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"{size} files measured", file=sys.stderr)
    finally:
        listing.unlink(missing_ok=True)
    print(f"Corpus: {root} (slices of its {len(files)} Python files in path order); one cold run per size.\n")
    print("| files | lines | findings | parse (s) | project phase (s) | rules (s) | project share | project growth |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    previous = None
    for row in rows:
        total = row["parse"] + row["project"] + row["rules"]
        growth = "-" if previous is None else (
            f"x{row['project'] / previous['project']:.2f} for x{row['files'] / previous['files']:.1f} files, "
            f"x{row['lines'] / previous['lines']:.2f} lines")
        print(f"| {row['files']} | {row['lines']} | {row['findings']} | {row['parse']:.2f} | {row['project']:.2f} | "
              f"{row['rules']:.2f} | {row['project'] / total:.0%} | {growth} |")
        previous = row
    print("\nReproduce: `python benchmarks/scaling.py`")
    failed = [row for row in rows if row["errors"]]
    for row in failed:  # a crashing analysis is fast: its times would mean nothing
        print(f"error: {row['errors']} internal analysis errors at {row['files']} files", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
