"""The project phase: decide cross-file precision contexts from per-file summaries.

Each file's precision analysis leaves a small summary on its report (``report.findings.summary``,
see :class:`amp_lint.engine.linter.Findings`): its classes (children = module classes built in
``__init__``, and the entry contexts seen locally), its imports (relative ones included), the
wholesale casts and autocast calls of *imported* classes (``model = GPT(cfg).half()`` in
train.py), and its *conditional findings*: hazards inside a class's methods that hold only if
the class runs in some context the file itself does not show.

:func:`resolve_project` builds the project index from those summaries (no file is parsed
again, and summaries come out of the cache with their reports), propagates entry contexts from
the seeds through the submodule graph across files, and turns the conditional findings whose
condition holds into ordinary findings on their files' reports.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

#: Order in which a finding picks its context (same as the analysis: pure casts first).
from amp_lint.analysis.precision import PRIORITY, merge_entry

ClassKey = Tuple[str, str]  # (module dotted name, class name)


def module_name(path: str, root: str) -> Tuple[str, bool]:
    """(dotted module name of ``path`` under ``root``, whether it is a package ``__init__``)."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path(root).resolve())
    except ValueError:
        rel = Path(p.name)
    parts = list(rel.with_suffix("").parts)
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


class ProjectIndex:
    """Classes, imports and seeds of every analysed file."""

    def __init__(self) -> None:
        self.modules: Dict[str, dict] = {}  # module -> summary
        self.packages: Set[str] = set()
        self.entries: Dict[ClassKey, Dict[int, Tuple[bool, bool]]] = {}

    def add(self, module: str, is_package: bool, summary: dict) -> None:
        self.modules[module] = summary
        if is_package:
            self.packages.add(module)

    # -- name resolution ------------------------------------------------------------------------
    def _find_module(self, name: str) -> Optional[str]:
        if name in self.modules:
            return name
        # the analysed root may sit above or below the import root: match on a dotted suffix
        matches = [m for m in self.modules if m.endswith("." + name) or name.endswith("." + m)]
        return matches[0] if len(matches) == 1 else None

    def absolute(self, module: str, level: int, target: str) -> str:
        if not level:
            return target
        package = module if module in self.packages else module.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{target}" if package and target else (package or target)

    def resolve_class(self, module: str, name: str, depth: int = 0) -> Optional[ClassKey]:
        """The defining (module, class) of ``name`` as seen from ``module`` (follows re-exports)."""
        if depth > 8:
            return None
        found = self._find_module(module)
        if found is None:
            return self._by_package(module, name)
        summary = self.modules[found]
        head, _, rest = name.partition(".")
        if not rest and head in summary.get("classes", {}):
            return found, head
        imports = summary.get("imports", {})
        if head in imports:
            level, source, imported = imports[head]
            if imported:  # from source import imported
                base = self.absolute(found, level, source)
                if rest:
                    return self.resolve_class(f"{base}.{imported}", rest, depth + 1)
                target = self.resolve_class(base, imported, depth + 1)
                if target is None:  # ``from pkg import module`` then ``module.Class``
                    return None
                return target
            return self.resolve_class(source, rest, depth + 1) if rest else None  # import x.y as z
        if found in self.packages and not rest:
            return self._by_package(found, name)
        if rest:  # ``pkg.module.Class`` through a plain ``import pkg``
            return self.resolve_class(f"{found}.{head}" if found else head, rest, depth + 1) or \
                self.resolve_class(head, rest, depth + 1)
        return None

    def _by_package(self, package: str, name: str) -> Optional[ClassKey]:
        """A re-export we could not follow (the ``__init__`` was not analysed): the one class of
        that name defined in the package's modules."""
        if "." in name:
            return None
        hits = [m for m, s in self.modules.items()
                if (m.startswith(package + ".") or m.endswith("." + package) or ("." + package + ".") in m)
                and name in s.get("classes", {})]
        return (hits[0], name) if len(hits) == 1 else None

    def resolve_reference(self, module: str, reference: str) -> Optional[ClassKey]:
        """A class reference recorded by the analysis: ``rel:Name`` / a qualified ``pkg.Name`` /
        a local name."""
        if reference.startswith("rel:"):
            return self.resolve_class(module, reference[4:])
        summary = self.modules.get(module, {})
        if reference in summary.get("classes", {}):
            return module, reference
        root = reference.split(".")[0]
        if root in summary.get("imports", {}):
            # qualified by the file's import table (``from model import GPT`` -> "model.GPT")
            mod, _, name = reference.rpartition(".")
            return self.resolve_class(mod, name) or self.resolve_class(module, reference)
        mod, _, name = reference.rpartition(".")
        return self.resolve_class(mod, name) if mod else None

    # -- propagation ------------------------------------------------------------------------
    def add_entry(self, key: ClassKey, index: int, conditional: bool, low: bool) -> bool:
        return merge_entry(self.entries.setdefault(key, {}), index, conditional, low)

    def propagate(self) -> None:
        for module, summary in self.modules.items():
            for name, info in summary.get("classes", {}).items():
                for index, (cond, low) in info.get("entries", {}).items():
                    self.add_entry((module, name), index, cond, low)
            for reference, index, cond, low in summary.get("seeds", []):
                key = self.resolve_reference(module, reference)
                if key is not None:
                    self.add_entry(key, index, cond, low)
        children: Dict[ClassKey, List[ClassKey]] = {}
        for module, summary in self.modules.items():
            for name, info in summary.get("classes", {}).items():
                kids = []
                for child in info.get("children", []):
                    key = self.resolve_class(module, child)
                    if key is not None and key != (module, name):
                        kids.append(key)
                children[(module, name)] = kids
        changed = True
        rounds = 0
        while changed and rounds < 100:
            changed = False
            rounds += 1
            for parent, kids in children.items():
                for index, (cond, low) in list(self.entries.get(parent, {}).items()):
                    for kid in kids:
                        changed |= self.add_entry(kid, index, cond, low)


def build_index(summaries: Sequence[Tuple[object, Optional[dict]]], root: str) -> Tuple[ProjectIndex, Dict[int, str]]:
    """The propagated index of (report, summary) pairs, and each report's module name."""
    index = ProjectIndex()
    where: Dict[int, str] = {}
    for report, summary in summaries:
        if summary is None:
            continue
        module, is_package = module_name(report.path, root)  # type: ignore[attr-defined]
        index.add(module, is_package, summary)
        where[id(report)] = module
    index.propagate()
    return index, where


@dataclasses.dataclass
class ProjectContext:
    """What the other files of the project say about each module's classes: handed to the
    analysis of a file being fixed (``ctx.project``), so cross-file findings get their fixes."""

    root: str
    entries: Dict[str, Dict[str, Dict[int, Tuple[bool, bool]]]]  # module -> class -> contexts

    def entries_for(self, path: str) -> Dict[str, Dict[int, Tuple[bool, bool]]]:
        return self.entries.get(module_name(path, self.root)[0], {})


def project_context(reports: Sequence, root: str) -> ProjectContext:
    """The cross-file contexts of every class, from checked reports' summaries."""
    index, _ = build_index([(r, _summary(r)) for r in reports], root)
    entries: Dict[str, Dict[str, Dict[int, Tuple[bool, bool]]]] = {}
    for (module, cls), table in index.entries.items():
        entries.setdefault(module, {})[cls] = dict(table)
    return ProjectContext(root, entries)


def _summary(report) -> Optional[dict]:
    return getattr(getattr(report, "findings", None), "summary", None)


def resolve_project(reports: Sequence, root: str = ".", preview: bool = False) -> List:
    """Turn the conditional findings that hold across the project into findings (in place).

    Called once after every file was analysed (check and fix runs alike); returns ``reports``.
    """
    summaries = [(r, _summary(r)) for r in reports]
    if not any(s and s.get("conditional") for _, s in summaries):
        return list(reports)
    index, where = build_index(summaries, root)
    for report, summary in summaries:
        if not summary or not summary.get("conditional"):
            continue
        module = where[id(report)]
        added = []
        for finding, condition in summary["conditional"]:
            entries = index.entries.get((module, condition.cls), {})
            for i in PRIORITY:
                if i in entries and i in condition.options:
                    conditional, low = entries[i]
                    message, label = condition.options[i]
                    if conditional and "when fp16 is enabled" not in message:
                        message += " (when fp16 is enabled)"
                    confidence = "low" if (low or condition.low) else "high"
                    if confidence == "low" and not preview:
                        break
                    added.append(dataclasses.replace(finding, message=message, precision_context=label,
                                                     confidence=confidence))
                    break
        if added:
            merged = type(report.findings)(sorted(list(report.findings) + added, key=lambda f: f.sort_key()))
            merged.summary = summary
            report.findings = merged
    return list(reports)


def project_findings(paths: Iterable[str], root: str, rules, settings) -> Dict[str, list]:
    """Convenience for tests and tools: lint ``paths`` and resolve the project (path -> findings)."""
    from amp_lint.engine.linter import FileReport, lint_text

    reports = []
    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        reports.append(FileReport(path=path, findings=lint_text(path, text, settings, rules)))
    resolve_project(reports, root, settings.preview)
    return {r.path: r.findings for r in reports}
