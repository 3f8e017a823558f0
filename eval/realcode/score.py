"""Score amp-lint on the real-code corpus: whole-repository runs against the labelled lines.

Usage:
    python eval/realcode/score.py --split dev [--repo owner/name] [--details] [--unlabelled]
    python eval/realcode/score.py --split heldout            # totals only (the split is frozen)
    python eval/realcode/score.py --split unseen [--details] # the blind hunts of triage/unseen.toml

Each labelled repository must be available as a git directory (a mirror: ``<mirrors>/<owner>+<name>/repo``,
``--mirrors``, default ``$AMP_LINT_MIRRORS`` or ``/work/.mirror``); it is exported at the labelled commit
into ``--workdir`` and checked whole (cross-file), as a user would run ``amp-lint check .`` at its root,
with every implemented rule selected (AMP001 included). A finding matches a label when path, line and
code agree. ``hazard`` label found: true positive; missed: false negative. A finding on a ``safe``
label: false positive. Findings on unlabelled lines are counted apart (``--unlabelled`` lists them,
for triage); ``unsure`` labels and labels whose line changed (hash mismatch) are not scored.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from amp_lint.semantics.configfiles import CONFIG_SUFFIXES, MAX_CONFIG_BYTES  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAMILIES = ("AMP0", "AMP1", "AMP2", "AMP3", "AMP4", "AMP5")


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    unlabelled: int = 0

    @property
    def precision(self) -> Optional[float]:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> Optional[float]:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class RepoResult:
    repo: str
    seconds: float
    tallies: Dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    details: List[str] = field(default_factory=list)
    unlabelled: List[str] = field(default_factory=list)
    stale: int = 0


def export(repo: str, commit: str, mirrors: Path, workdir: Path) -> Path:
    """The repository's tree at ``commit`` under ``workdir`` (exported once)."""
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"{repo}: no mirror at {git_dir} (fetch it first)")
    target = workdir / f"{repo.replace('/', '+')}@{commit[:12]}"
    marker = target / ".exported"
    if marker.exists():
        if "configs" not in marker.read_text().split():  # exported before config files were taken
            _export_files(git_dir, commit, target, CONFIG_SUFFIXES)
            marker.write_text(commit + "\nconfigs")
        return target
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit], capture_output=True)
    if archive.returncode == 0:
        tar = target / ".archive.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as handle:
            handle.extractall(target)
        tar.unlink()
    else:  # some snapshots miss blobs of large data files: export the Python and config files one by one
        _export_files(git_dir, commit, target, (".py",) + CONFIG_SUFFIXES)
    marker.write_text(commit + "\nconfigs")
    return target


def _export_files(git_dir: Path, commit: str, target: Path, suffixes: Tuple[str, ...]) -> None:
    """The files of ``commit`` whose names end with ``suffixes``, one by one (config files, which
    the analysis reads where a program loads them by a known path, up to MAX_CONFIG_BYTES)."""
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", commit],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    for line in listing:
        meta, _, name = line.partition("\t")
        parts = meta.split()
        if len(parts) < 4 or parts[1] != "blob" or not name.endswith(suffixes):
            continue
        if not name.endswith(".py") and (not parts[3].isdigit() or int(parts[3]) > MAX_CONFIG_BYTES):
            continue
        path = target / name
        if path.exists():
            continue
        blob = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{name}"], capture_output=True)
        if blob.returncode == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob.stdout)


#: the analysis's internal errors met while scoring (each leaves a file unanalysed: the figures
#: are then incomplete, and the scorer says so)
INTERNAL_ERRORS: List[str] = []


def check(root: Path):
    """Findings of ``amp-lint check --select ALL`` over the repository root, as (path, row, code, message)."""
    from amp_lint.config import Settings
    from amp_lint.discovery import discover
    from amp_lint.runner import RunOptions, Selection, run

    settings = Settings(select=("ALL", "AMP001"), project_root=str(root))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        files, _ = discover(["."], settings.exclude, root)
        reports = run(files, Selection.from_settings(settings), RunOptions())
    finally:
        os.chdir(cwd)
    out = []
    for report in reports:
        if report.warning and "internal error" in report.warning:
            INTERNAL_ERRORS.append(report.warning)
        for finding in report.findings:
            out.append((Path(finding.filename).as_posix().lstrip("./") if finding.filename.startswith("./")
                        else Path(finding.filename).as_posix(), finding.location.row, finding.code, finding.message))
    return out


def family(code: str) -> str:
    return code[:4]


def score_repo(data: dict, mirrors: Path, workdir: Path) -> RepoResult:
    root = export(data["repo"], data["commit"], mirrors, workdir)
    started = time.perf_counter()
    findings = check(root)
    result = RepoResult(data["repo"], time.perf_counter() - started)
    found: Dict[Tuple[str, int, str], str] = {(p, r, c): m for p, r, c, m in findings}
    labelled = set()
    for label in data["label"]:
        key = (label["path"], label["line"], label["code"])
        labelled.add(key)
        if label["verdict"] == "unsure":
            continue
        path = root / label["path"]
        try:
            line = path.read_text(encoding="utf-8", errors="replace").splitlines()[label["line"] - 1]
        except (OSError, IndexError):
            line = None
        if line is None or hashlib.sha1(line.strip().encode()).hexdigest()[:12] != label["line_sha1"]:
            result.stale += 1
            continue
        tally = result.tallies[family(label["code"])]
        hit = key in found
        if label["verdict"] == "hazard":
            if hit:
                tally.tp += 1
                result.details.append(f"TP {label['code']} {key[0]}:{key[1]}")
            else:
                tally.fn += 1
                result.details.append(f"FN {label['code']} {key[0]}:{key[1]}  ({label['reason'][:90]})")
        elif hit:
            tally.fp += 1
            result.details.append(f"FP {label['code']} {key[0]}:{key[1]}  {found[key][:100]}")
    for path, row, code, message in findings:
        if (path, row, code) not in labelled:
            result.tallies[family(code)].unlabelled += 1
            result.unlabelled.append(f"{code} {path}:{row}  {message[:110]}")
    return result


def _repositories(split: str) -> List[dict]:
    """Each repository of ``split`` with its labels: one file per repository for dev and heldout;
    for ``unseen``, the repositories and labels of ``triage/unseen.toml`` (blind hunts)."""
    if split != "unseen":
        return [tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted((HERE / split).glob("*.toml"))]
    data = tomllib.loads((HERE / "triage" / "unseen.toml").read_text(encoding="utf-8"))
    return [dict(repo=r["repo"], commit=r["commit"], label=[lab for lab in data["label"] if lab["repo"] == r["repo"]])
            for r in data["repository"]]


def _ratio(value: Optional[float]) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout", "unseen"), default="dev")
    parser.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
    parser.add_argument("--mirrors", default=os.environ.get("AMP_LINT_MIRRORS", "/work/.mirror"))
    parser.add_argument("--workdir", default=os.environ.get("AMP_LINT_CORPUS_WORKDIR", "/tmp/amp-lint-corpus"))
    parser.add_argument("--details", action="store_true", help="each TP/FP/FN (not for heldout)")
    parser.add_argument("--unlabelled", action="store_true", help="list findings on unlabelled lines (not for heldout)")
    args = parser.parse_args(argv)
    if args.split == "heldout" and (args.details or args.unlabelled or args.repo):
        parser.error("the held-out split reports totals only: tuning on it would stop it measuring")
    totals: Dict[str, Tally] = defaultdict(Tally)
    stale = 0
    for data in _repositories(args.split):
        if args.repo and data["repo"] not in args.repo:
            continue
        result = score_repo(data, Path(args.mirrors), Path(args.workdir))
        stale += result.stale
        for name, tally in result.tallies.items():
            total = totals[name]
            total.tp += tally.tp
            total.fp += tally.fp
            total.fn += tally.fn
            total.unlabelled += tally.unlabelled
        if args.split != "heldout":
            line = " ".join(f"{f}xx {t.tp}/{t.fp}/{t.fn}" for f, t in sorted(result.tallies.items()))
            print(f"{result.repo:50s} {result.seconds:6.1f}s  {line}")
            for detail in result.details if args.details else ():
                print("    " + detail)
            for item in result.unlabelled if args.unlabelled else ():
                print("    ? " + item)
    print()
    print(f"{'family':8s} {'TP':>4s} {'FP':>4s} {'FN':>4s} {'unlab':>6s}  precision  recall")
    for name in FAMILIES:
        t = totals.get(name)
        if t is None:
            continue
        print(f"{name}xx   {t.tp:4d} {t.fp:4d} {t.fn:4d} {t.unlabelled:6d}  {_ratio(t.precision):>9s}  {_ratio(t.recall)}")
    if stale:
        print(f"({stale} labels not scored: their line changed)")
    if INTERNAL_ERRORS:
        print(f"({len(INTERNAL_ERRORS)} analysis internal errors: files left unanalysed, figures incomplete;"
              " AMP_LINT_DEBUG=1 raises them)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
