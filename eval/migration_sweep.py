#!/usr/bin/env python3
"""Run the AMP migration on real repositories and check what it wrote.

    python eval/migration_sweep.py [--split dev] [--workdir /tmp/amp-lint-corpus] [--repo owner/name ...]

For each repository of the real-code corpus (exported at its labelled commit, as ``realcode/score.py``
does), a copy is fixed with ``amp-lint fix --unsafe-fixes --extend-select AMP001`` (the migration is
AMP001/AMP101/AMP102's fix), and every file the fix changed is checked:

* it compiles;
* pyflakes reports no undefined name that the original did not have;
* every changed block of lines lies inside one function, or in module-level code, of the original
  (no edit spans a function boundary);
* a second ``fix`` changes nothing.

Findings of the migration's rules that came without a fix are listed with the reason the report
gives (``fix withheld: ...`` or the message), so every refused migration is accounted for. Needs
``pyflakes`` (``pip install pyflakes``); not part of the test suite (it needs the corpus mirrors).
"""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "realcode"))
import score as realcode  # noqa: E402  (eval/realcode/score.py: export())

MIGRATION_CODES = {"AMP001", "AMP101", "AMP102"}


def amp_lint(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", *args], cwd=str(cwd), capture_output=True,
                          text=True, timeout=1800)


def undefined_names(source: str, filename: str) -> Counter:
    """pyflakes' undefined names of ``source`` (name -> count)."""
    from pyflakes import api, messages, reporter

    class Collect(reporter.Reporter):
        def __init__(self) -> None:
            super().__init__(None, None)
            self.names: Counter = Counter()

        def flake(self, message) -> None:  # type: ignore[override]
            if isinstance(message, messages.UndefinedName):
                self.names[message.message_args[0]] += 1

        def syntaxError(self, *args) -> None:  # type: ignore[override]
            self.names["<syntax error>"] += 1

        def unexpectedError(self, *args) -> None:  # type: ignore[override]
            self.names["<error>"] += 1

    collect = Collect()
    api.check(source, filename, collect)
    return collect.names


def function_spans(source: str) -> List[Tuple[int, int]]:
    """(first, last) line of every function of ``source``, innermost last."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans.append((first, node.end_lineno or node.lineno))
    return spans


def owner(line: int, spans: List[Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    """The innermost function containing ``line`` (None: module level)."""
    inside = [span for span in spans if span[0] <= line <= span[1]]
    return min(inside, key=lambda s: s[1] - s[0]) if inside else None


def crossing_edits(before: str, after: str) -> List[str]:
    """Changed blocks of lines whose first and last original lines belong to different functions."""
    spans = function_spans(before)
    out = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        first, last = i1 + 1, max(i1 + 1, i2)  # 1-based; an insertion sits before line i1+1
        if owner(first, spans) != owner(last, spans):
            out.append(f"lines {first}-{last}")
    return out


def refusals(root: Path) -> List[str]:
    """Migration findings with no fix, and why."""
    result = amp_lint(["check", "--unsafe-fixes", "--extend-select", "AMP001", "--no-cache", "--exit-zero",
                       "--output-format", "json", "."], root)
    out = []
    for finding in json.loads(result.stdout or "[]"):
        if finding["code"] in MIGRATION_CODES and finding.get("fix") is None:
            reason = finding.get("fix_title") or finding["message"]
            out.append(f"{Path(finding['filename']).relative_to(root)}:{finding['location']['row']} "
                       f"{finding['code']} {reason}")
    return out


def sweep_repo(data: dict, mirrors: Path, workdir: Path) -> Dict[str, object]:
    exported = realcode.export(data["repo"], data["commit"], mirrors, workdir)
    with tempfile.TemporaryDirectory(prefix="amp-lint-sweep-") as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(exported, root, symlinks=True, ignore=shutil.ignore_patterns(".git", ".exported"))
        originals = {p: p.read_bytes() for p in root.rglob("*.py") if p.is_file() and not p.is_symlink()}
        refused = refusals(root)
        amp_lint(["fix", "--unsafe-fixes", "--extend-select", "AMP001", "--no-cache", "."], root)
        changed = [p for p, text in originals.items() if p.read_bytes() != text]
        problems: List[str] = []
        migrated = 0
        for path in changed:
            rel = str(path.relative_to(root))
            before, after = originals[path].decode("utf-8", "replace"), path.read_text("utf-8", "replace")
            if "GradScaler" in after and "GradScaler" not in before:
                migrated += 1
            try:
                compile(after, rel, "exec", dont_inherit=True)
            except SyntaxError as exc:
                problems.append(f"{rel}: does not compile: {exc}")
                continue
            new = undefined_names(after, rel) - undefined_names(before, rel)
            if new:
                problems.append(f"{rel}: new undefined names {sorted(new)}")
            for block in crossing_edits(before, after):
                problems.append(f"{rel}: an edit crosses a function boundary ({block})")
        snapshot = {p: p.read_bytes() for p in originals}
        amp_lint(["fix", "--unsafe-fixes", "--extend-select", "AMP001", "--no-cache", "."], root)
        again = [str(p.relative_to(root)) for p in originals if snapshot[p] != p.read_bytes()]
        problems += [f"{rel}: a second fix changed it" for rel in again]
    return {"repo": data["repo"], "changed": len(changed), "migrated": migrated, "problems": problems,
            "refused": refused}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="dev", choices=["dev", "heldout"])
    parser.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    parser.add_argument("--mirrors", type=Path, default=Path(os.environ.get("AMP_LINT_MIRRORS", "/work/.mirror")))
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "amp-lint-corpus")
    args = parser.parse_args(argv)
    totals: Counter = Counter()
    for path in sorted((HERE / "realcode" / args.split).glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if args.repo and data["repo"] not in args.repo:
            continue
        result = sweep_repo(data, args.mirrors, args.workdir)
        totals.update(repos=1, changed=result["changed"], migrated=result["migrated"],
                      problems=len(result["problems"]), refused=len(result["refused"]))
        print(f"{result['repo']:45} files changed {result['changed']:3}  migrated {result['migrated']:3}  "
              f"problems {len(result['problems'])}  refused {len(result['refused'])}")
        for line in result["problems"]:
            print("    PROBLEM", line)
        for line in result["refused"]:
            print("    refused", line)
    print(f"\n{totals['repos']} repositories: {totals['changed']} files changed, {totals['migrated']} migrated "
          f"to GradScaler, {totals['problems']} problems, {totals['refused']} migration findings without a fix")
    return 1 if totals["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
