"""Precision and recall of amp-lint's rules on the labelled evaluation set.

``eval/cases/<CODE>/*.py`` are snippets; a line that must be reported carries ``# expect: AMPxxx``
(several codes comma-separated). Every selected rule runs on every case, so a rule firing on
another rule's case (or on a look-alike safe case) counts as a false alarm; a finding matches an
expectation when code and line agree.

Usage: python eval/score.py [--rules AMP2,AMP3] [--preview] [--quiet]
Prints per rule: TP, FP, FN, precision, recall; then every miss and false alarm.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parent
if str(ROOT.parent) not in sys.path:
    sys.path.insert(0, str(ROOT.parent))

from amp_lint.config import Settings  # noqa: E402
from amp_lint.engine.linter import lint_text  # noqa: E402
from amp_lint.rules import ALL_RULES  # noqa: E402

CASES = ROOT / "cases"
MARKER = re.compile(r"#\s*expect:\s*(AMP\d{3}(?:\s*,\s*AMP\d{3})*)")

Hit = Tuple[str, int]  # (path, line)


@dataclass
class RuleScore:
    code: str
    tp: List[Hit] = field(default_factory=list)
    fp: List[Tuple[str, int, str]] = field(default_factory=list)
    fn: List[Hit] = field(default_factory=list)

    @property
    def precision(self) -> float:
        found = len(self.tp) + len(self.fp)
        return len(self.tp) / found if found else 1.0

    @property
    def recall(self) -> float:
        wanted = len(self.tp) + len(self.fn)
        return len(self.tp) / wanted if wanted else 1.0


def expectations(text: str) -> Set[Tuple[str, int]]:
    out = set()
    for row, line in enumerate(text.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            for code in match.group(1).split(","):
                out.add((code.strip(), row))
    return out


def case_files(root: Path = CASES) -> List[Path]:
    return sorted(root.glob("AMP*/*.py"))


def score(rule_prefixes: Sequence[str], preview: bool = False, root: Path = CASES) -> Dict[str, RuleScore]:
    rules = [r for r in ALL_RULES if any(r.code.startswith(p) for p in rule_prefixes)]
    codes = {r.code for r in rules}
    settings = Settings(preview=preview)
    scores = {code: RuleScore(code) for code in sorted(codes)}
    for path in case_files(root):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(root))
        wanted = {(c, row) for c, row in expectations(text) if c in codes}
        got: Dict[Tuple[str, int], str] = {}
        for finding in lint_text(rel, text, settings, rules):
            if finding.code in codes:
                got.setdefault((finding.code, finding.location.row), finding.message)
        for (code, row), message in got.items():
            if (code, row) in wanted:
                scores[code].tp.append((rel, row))
            else:
                scores[code].fp.append((rel, row, message))
        for code, row in wanted - set(got):
            scores[code].fn.append((rel, row))
    return scores


def report(scores: Dict[str, RuleScore], quiet: bool = False) -> str:
    lines = [f"{'rule':8} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}"]
    total = RuleScore("all")
    for code, s in scores.items():
        lines.append(f"{code:8} {len(s.tp):4} {len(s.fp):4} {len(s.fn):4} {s.precision:10.1%} {s.recall:8.1%}")
        total.tp += s.tp
        total.fp += s.fp
        total.fn += s.fn
    lines.append(f"{'all':8} {len(total.tp):4} {len(total.fp):4} {len(total.fn):4} "
                 f"{total.precision:10.1%} {total.recall:8.1%}")
    if not quiet:
        for code, s in scores.items():
            for rel, row in sorted(s.fn):
                lines.append(f"MISS        {code} {rel}:{row}")
            for rel, row, message in sorted(s.fp):
                lines.append(f"FALSE ALARM {code} {rel}:{row}  {message}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="AMP2,AMP3,AMP4", help="comma-separated codes or prefixes (default AMP2,AMP3,AMP4)")
    parser.add_argument("--preview", action="store_true", help="also count low-confidence findings")
    parser.add_argument("--quiet", action="store_true", help="only the table")
    args = parser.parse_args(argv)
    scores = score([p.strip().upper() for p in args.rules.split(",") if p.strip()], preview=args.preview)
    print(report(scores, quiet=args.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
