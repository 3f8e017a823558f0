"""Run check/fix over many files as one program: read, parse, analyse once, check or fix, write back.

The precision analysis needs the whole program (a cast in ``train.py`` makes ``model.py`` half),
so every file given is parsed and analysed together; reports then come per file. ``fix`` runs in
project-wide rounds (:func:`amp_lint.engine.linter.fix_files`). A run on some files of a project
(pre-commit) reads the project's other files as *context* (:mod:`amp_lint.project_scope`): part
of the program, never reported on or fixed. A notebook enters as the module of its code cells;
its findings are moved into their cells at the end (:mod:`amp_lint.notebook`).

The cache (``.amp_lint_cache/``) keeps each file's report, keyed by a digest of every file of the
run, context included (paths and bytes, in any order), and the configuration, and holds only while
the config files the analysis read (``OmegaConf.load("configs/model.yaml")``, see
:mod:`amp_lint.semantics.configfiles`) are unchanged: an unchanged tree is answered from the
cache, and any change re-analyses the program. (Parses are not cached:
unpickling an ``ast`` costs more than parsing the file again; for the same reason there are no
worker processes.)
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple, Type

from amp_lint.cache import Cache, content_digest
from amp_lint.config import Settings, enabled_codes, ignored_for_path
from amp_lint.data.catalog import ON_BY_DEFAULT, RESERVED_CODES, SYNTAX_ERROR_CODE
from amp_lint.findings import FileReport, Finding
from amp_lint.source import SourceError, SourceFile, decode_source, write_atomic

if TYPE_CHECKING:  # the engine (LibCST, the analysis, the rules) loads only when a file is analysed:
    # a run the cache answers whole never imports it
    from amp_lint.engine.linter import ParsedFile
    from amp_lint.rules.base import Rule


@dataclass
class RunOptions:
    """What the CLI asked for beyond the settings."""

    fix: bool = False
    diff: bool = False
    want_edits: bool = False
    #: Read and write ``.amp_lint_cache/`` at the project root.
    cache: bool = False

    @property
    def keep_source(self) -> bool:
        """Reports keep their source text only when a diff or the fixed text needs it."""
        return self.fix or self.diff


class Selection:
    """The enabled rules, and per-file ignores applied on top. The rule classes are imported on
    first use: the codes come from the catalog."""

    def __init__(self, settings: Settings, rules: "Optional[List[Type[Rule]]]" = None, syntax_errors: bool = True,
                 codes: Optional[FrozenSet[str]] = None) -> None:
        self.settings = settings
        self.syntax_errors = syntax_errors
        self._rules = rules
        self.codes = frozenset(r.code for r in rules) if rules is not None else (codes or frozenset())

    @classmethod
    def from_settings(cls, settings: Settings) -> "Selection":
        codes = set(enabled_codes({SYNTAX_ERROR_CODE: True, **ON_BY_DEFAULT}, settings.select,
                                  settings.extend_select, settings.ignore, RESERVED_CODES))
        return cls(settings, None, SYNTAX_ERROR_CODE in codes, frozenset(codes - {SYNTAX_ERROR_CODE}))

    @property
    def rules(self) -> "List[Type[Rule]]":
        if self._rules is None:
            from amp_lint.rules import ALL_RULES

            self._rules = [r for r in ALL_RULES if r.code in self.codes and (self.settings.preview or not r.preview)]
        return self._rules

    def for_path(self, relpath: str) -> "tuple[List[Type[Rule]], bool]":
        ignored = ignored_for_path(self.settings, relpath)
        if not ignored:
            return self.rules, self.syntax_errors
        known = {SYNTAX_ERROR_CODE: True, **{code: True for code in ON_BY_DEFAULT}}
        off = set(enabled_codes(known, ["ALL"], [], [], RESERVED_CODES)) - set(
            enabled_codes(known, ["ALL"], [], ignored, RESERVED_CODES)
        )
        return [r for r in self.rules if r.code not in off], self.syntax_errors and SYNTAX_ERROR_CODE not in off


def relative_to_root(path: str, root: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix().lstrip("/")


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None


@dataclass
class _Input:
    """One file of the run: its report (errors go there), bytes, decoded source and parse."""

    report: FileReport
    #: a file of the project read only for the analysis: not reported on, never fixed
    context: bool = False
    data: Optional[bytes] = None
    source: Optional[SourceFile] = None
    parsed: Optional[ParsedFile] = None
    digest: Optional[str] = None

    def decode(self) -> None:
        """Decode the bytes read (a failure is the report's error)."""
        if self.data is None or self.source is not None or self.report.error is not None:
            return
        try:
            self.source = decode_source(self.report.path, self.data)
        except SourceError as exc:
            self.report.error = str(exc)
        self.data = None


def _parse(source: SourceFile, relpath: str, selection: Selection) -> "ParsedFile":
    from amp_lint.engine.linter import ParsedFile

    rules, syntax = selection.for_path(relative_to_root(source.path, selection.settings.project_root))
    return ParsedFile.parse(source.path, relpath, source.text, rules, syntax)


def run(paths: Sequence[str], selection: Selection, options: RunOptions, context: Sequence[str] = (),
        root: Optional[str] = None) -> List[FileReport]:
    """Reports for ``paths`` in order, the files analysed as one program.

    ``context``: the other files of the project (see :mod:`amp_lint.project_scope`), analysed
    with ``paths`` as one program but neither reported on nor fixed. ``root``: the directory
    module names are relative to (default: the settings' project root).
    """
    settings = selection.settings
    root = root or settings.project_root
    cache = Cache(settings.project_root, settings, _options_key(options)) if options.cache and paths else None
    inputs: List[_Input] = []
    for path in [*paths, *context]:
        item = _Input(FileReport(path=path), context=len(inputs) >= len(paths))
        inputs.append(item)
        try:
            item.data = _read_bytes(path)
            item.digest = content_digest(item.data)
        except SourceError as exc:
            item.report.error = str(exc)
    given = inputs[:len(paths)]
    project = _project_digest(inputs, root)
    if cache is not None and _config_files_unchanged(cache.get(_CONFIG_READS, project), root):
        cached = [cache.get(_cache_key(i, settings), project) for i in given]
        # a fix with nothing fixable is a check: the cached reports answer it too
        if all(isinstance(c, FileReport) for c in cached) and not (
                (options.fix or options.diff) and any(f.fixable(settings.unsafe_fixes)
                                                      for c in cached for f in c.findings)):  # type: ignore
            out = [_respelled(c, i.report.path) for c, i in zip(cached, given)]  # type: ignore[arg-type]
            if options.keep_source:
                for report, item in zip(out, given):
                    item.decode()
                    report.source = item.source
            return out
    with _fewer_collections():
        _analyse_and_report(inputs, selection, options, cache, project, root)
    return [i.report for i in given]


def _respelled(report: FileReport, path: str) -> FileReport:
    """A cached report for ``path`` as this run spells it (``./a.py`` or ``a.py``)."""
    if report.path == path:
        return dataclasses.replace(report)
    findings = [dataclasses.replace(f, filename=path) if f.filename == report.path else f for f in report.findings]
    return dataclasses.replace(report, path=path, findings=findings)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """No cyclic garbage collection during a run. The analysis allocates millions of short-lived
    values while the syntax trees and recorded values of the whole program stay alive, and each
    collection re-scans them: on microsoft/LoRA (815 files) collections took a third of the CPU time
    even with the parsed trees frozen and a 50,000-allocation threshold (user 27-30 s, 18-19 s
    with collection off; peak memory 736 MB and 784 MB). What the run allocates is nearly all
    acyclic and freed by reference counting; the collector runs again when the run ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _analyse_and_report(inputs: List["_Input"], selection: Selection, options: RunOptions,
                        cache: Optional[Cache], project: str, root: str) -> None:
    from amp_lint.engine.linter import fix_files, lint_files

    settings = selection.settings
    config_reads: Dict[str, str] = {}
    for item in inputs:
        item.decode()
        if item.source is not None:
            item.parsed = _parse(item.source, relative_to_root(item.source.path, root), selection)
    live = [i for i in inputs if i.parsed is not None]
    parsed = [i.parsed for i in live]
    errors: List[Tuple[str, int, str]] = []
    if options.fix or options.diff:
        outcome = fix_files(parsed, settings, options.want_edits,  # type: ignore[arg-type]
                            only=[n for n, item in enumerate(live) if not item.context])
        for item, text, fixed, findings in zip(live, outcome.texts, outcome.fixed, outcome.findings):
            item.report.findings = findings
            item.report.fixed = fixed
            assert item.source is not None
            if text != item.source.text:
                _fixed_text(item, text, write=not options.diff)
        errors.extend(outcome.errors)
        for index in outcome.unsettled:
            live[index].report.warning = not_converged_warning()
    else:
        # Context files' findings are cached for later runs, except with fix edits (they cost a
        # LibCST parse each): then only the given files get findings.
        only = {n for n, item in enumerate(live) if not item.context} if options.want_edits else None
        for item, findings in zip(live, lint_files(parsed, settings, options.want_edits, errors, only,  # type: ignore
                                                   config_reads)):
            item.report.findings = findings
    for item in live:
        assert item.source is not None
        item.report.findings = in_cells(item.source, item.report.new_text or item.source.text,
                                        item.report.findings)
    _evidence_in_cells(live)
    by_relpath = {i.parsed.relpath: i for i in live if i.parsed is not None}
    for relpath, line, description in errors:
        item = by_relpath.get(relpath)
        if item is not None and item.report.warning is None:
            where = f" (line {line})" if line else ""
            item.report.warning = (f"internal error in the analysis{where}, its code was left unanalysed: "
                                   f"{description}; please report it")
    for item in inputs:
        if options.keep_source:
            item.report.source = item.source
    if cache is not None:
        if not (options.fix or options.diff):
            for item in inputs:
                if item.report.error is None and not (item.context and options.want_edits):
                    cache.put(_cache_key(item, settings), project, dataclasses.replace(item.report, source=None))
            cache.put(_CONFIG_READS, project, config_reads)
        cache.save(present=[_cache_key(i, settings) for i in inputs] + [_CONFIG_READS])


def not_converged_warning() -> str:
    """The warning for a file whose fixes still changed it when the rounds ran out."""
    from amp_lint.engine.linter import MAX_FIX_ROUNDS

    return (f"fixes did not converge in {MAX_FIX_ROUNDS} rounds; running `amp-lint fix` again would "
            "change the file further")


def _fixed_text(item: "_Input", text: str, write: bool) -> None:
    """Record (and, when ``write``, atomically write) a file's fixed text; a notebook whose cells
    the fix cannot be put back into is left as it was, with an error."""
    assert item.source is not None
    try:
        data = item.source.encode(text)
    except SourceError as exc:
        item.report.error, item.report.fixed = str(exc), 0
        return
    item.report.new_text = text
    if write:
        try:
            write_atomic(item.source.path, data)
        except OSError as exc:
            item.report.error = f"cannot write fixed file: {exc.strerror or exc}"


def in_cells(source: SourceFile, text: str, findings: List[Finding]) -> List[Finding]:
    """A notebook's findings (rows of the module ``text`` made of its cells) moved into their
    cells; other files' findings as they are."""
    from amp_lint.notebook import NotebookSource

    if not isinstance(source, NotebookSource) or not findings:
        return findings
    from amp_lint.notebook import CellMap, to_cells

    return to_cells(findings, CellMap.of(text))


def _evidence_in_cells(items: Sequence["_Input"]) -> None:
    """Evidence steps that point into a notebook from another file's finding, moved into their
    cells (``nb.ipynb:cell 2:1``, not the row of the module made of its cells)."""
    from amp_lint.notebook import CellMap, NotebookSource, step_in_cell

    maps = {item.source.path: CellMap.of(item.report.new_text or item.source.text)
            for item in items if isinstance(item.source, NotebookSource)}
    if not maps:
        return
    for item in items:
        for index, finding in enumerate(item.report.findings):
            related = tuple(step_in_cell(step, maps[step.filename]) if step.cell is None and step.filename in maps
                            else step for step in finding.related)
            if related != finding.related:
                item.report.findings[index] = dataclasses.replace(finding, related=related)


#: the cache entry of the config files the analysis read (``OmegaConf.load("model.yaml")``): the
#: cached reports hold while each still has the digest it had
_CONFIG_READS = ("<config files>", "reads")


def _config_files_unchanged(reads: object, root: str) -> bool:
    """Whether every config file the cached run read is as it was (False: no such record)."""
    if not isinstance(reads, dict):
        return False
    if not reads:
        return True
    from amp_lint.semantics.configfiles import current_digest  # small; only where configs were read

    return all(current_digest(root, relpath) == digest for relpath, digest in reads.items())


def _cache_key(item: "_Input", settings: Settings) -> Tuple[str, str]:
    return relative_to_root(item.report.path, settings.project_root), "report"


def _options_key(options: RunOptions) -> str:
    return f"want_edits={bool(options.want_edits)}"


def _project_digest(inputs: Sequence[_Input], root: str) -> str:
    """A digest of every file of the run (path and bytes, in any order): any change invalidates
    every report. A run on some files of a project and one on all of them share it."""
    digest = hashlib.blake2b(digest_size=16)
    for relpath, content in sorted((relative_to_root(item.report.path, root), item.digest or "-")
                                   for item in inputs):
        digest.update(relpath.encode() + b"\0" + content.encode() + b"\0")
    return digest.hexdigest()


def process_source(source: SourceFile, selection: Selection, options: RunOptions) -> FileReport:
    """Check (and fix, if asked) one decoded source on its own; writes nothing."""
    from amp_lint.engine.linter import ParsedFile, fix_files, lint_files

    settings = selection.settings
    relpath = relative_to_root(source.path, settings.project_root)
    rules, syntax = selection.for_path(relpath)
    parsed = ParsedFile.parse(source.path, relpath, source.text, rules, syntax)
    report = FileReport(path=source.path, source=source)
    if options.fix or options.diff:
        outcome = fix_files([parsed], settings, options.want_edits)
        report.findings, report.fixed = outcome.findings[0], outcome.fixed[0]
        if outcome.unsettled:
            report.warning = not_converged_warning()
        if outcome.texts[0] != source.text:
            item = _Input(report, source=source)
            _fixed_text(item, outcome.texts[0], write=False)
    else:
        report.findings = lint_files([parsed], settings, options.want_edits)[0]
    report.findings = in_cells(source, report.new_text or source.text, report.findings)
    return report


def process_path(path: str, selection: Selection, options: RunOptions) -> FileReport:
    """Read, check/fix and (for ``fix`` without ``--diff``) atomically write one file."""
    return run([path], selection, options)[0]


def process_stdin(data: bytes, filename: str, selection: Selection, options: RunOptions) -> FileReport:
    try:
        source = decode_source(filename, data)
    except SourceError as exc:
        return FileReport(path=filename, error=str(exc))
    return process_source(source, selection, options)


def unified_diff(report: FileReport) -> str:
    """The fix of one file as a unified diff (a notebook: one diff per changed cell)."""
    if report.new_text is None or report.source is None:
        return ""
    from amp_lint.notebook import NotebookSource, notebook_diff

    if isinstance(report.source, NotebookSource):
        return notebook_diff(report.source, report.new_text, report.path)
    from amp_lint.diff import unified_diff as diff

    return "".join(
        diff(
            report.source.text.splitlines(keepends=True),
            report.new_text.splitlines(keepends=True),
            fromfile="a/" + report.path.lstrip("/"),
            tofile="b/" + report.path.lstrip("/"),
        )
    )
