"""Lint and fix a set of files as one program.

1. Parse each file with Python's ``ast`` (a syntax error is one AMP000 finding; the file is skipped).
2. Run the precision analysis once over all parsed files (:mod:`amp_lint.semantics`): cross-file
   facts need the whole program.
3. Walk each file's rules (:mod:`amp_lint.engine.checker`); turn raw findings into findings with
   positions, suppressions and, when wanted, the text edit of their fix.

``fix`` runs in rounds over the whole set: check, build every file's fixes with LibCST, apply the
non-overlapping ones, keep only text that re-parses, and check again, until nothing changes (or
:data:`MAX_FIX_ROUNDS`). Only text that parses is ever returned.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from amp_lint.config import Settings
from amp_lint.data.paths import is_test_file
from amp_lint.engine.bindings import NameFacts, describe, name_facts, new_problems
from amp_lint.engine.checker import CheckContext, RawFinding, node_range, walk
from amp_lint.engine.fixes import CstFix, apply_fixes, choose_compatible, local_edits, text_edit
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.engine.noqa import Suppressions, parse_suppressions
from amp_lint.data.catalog import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME
from amp_lint.findings import Applicability, Edit, Finding, Fix, Location, Related, Severity
from amp_lint.semantics.configfiles import ConfigFiles
from amp_lint.semantics.facts import Facts
from amp_lint.semantics.interpreter import DEBUG, Interpreter
from amp_lint.semantics.program import SourceModule, extra_roots

MAX_FIX_ROUNDS = 10


@dataclass(eq=False)
class ParsedFile:
    """One file ready for analysis: its text, tree (None on a syntax error) and rules."""

    path: str
    relpath: str
    text: str
    rules: List[type]
    syntax_check: bool = True
    tree: Optional[ast.Module] = None
    syntax_error: Optional[Finding] = None
    suppressions: Suppressions = field(default_factory=Suppressions)

    @classmethod
    def parse(cls, path: str, relpath: str, text: str, rules: Sequence[type], syntax_check: bool = True) -> "ParsedFile":
        parsed = cls(path, relpath, text, list(rules), syntax_check)
        parsed.suppressions = parse_suppressions(text)
        try:
            parsed.tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            parsed.syntax_error = syntax_error_finding(path, text, exc)
        except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, pathological nesting
            parsed.syntax_error = syntax_error_finding(path, text, SyntaxError(str(exc).splitlines()[0]))
        return parsed


def active_rules(text: str, rules: Sequence[type]) -> List[type]:
    """The prefilter: rules whose declared tokens occur in the text (no tokens: always)."""
    return [r for r in rules if not r.tokens or any(tok in text for tok in r.tokens)]


def syntax_error_finding(path: str, text: str, exc: SyntaxError) -> Finding:
    """AMP000 at the parse error, with Python's own message."""
    row, col = exc.lineno or 1, exc.offset or 1
    lines = text.splitlines()
    row = max(1, min(row, len(lines) or 1))
    line = lines[row - 1] if lines else ""
    loc = Location(row, max(1, col))
    return Finding(SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, Severity.ERROR, f"SyntaxError: {exc.msg}", path, loc, loc,
                   noqa_row=None, source_line=line)


# -- analysis ----------------------------------------------------------------------------------------
@dataclass
class Analysis:
    """The analysed program: its modules (one per parsed file, in order) and the facts."""

    modules: Dict[int, SourceModule]
    facts: Facts

    @property
    def errors(self) -> List[Tuple[str, int, str]]:
        """Internal errors of the analysis and the rules (path, line, description)."""
        return self.facts.errors

    @property
    def config_reads(self) -> Dict[str, str]:
        """The config files the analysis read: root-relative path -> digest ("-": not there)."""
        return self.facts.interpreter.configs.reads


def project_root_of(modules: Iterable[SourceModule]) -> Optional[str]:
    """The folder module names are relative to: a module's path less its relative path."""
    for module in modules:
        path = Path(os.path.abspath(module.path)).as_posix()
        if module.relpath and path.endswith("/" + module.relpath) and not module.relpath.startswith("_/"):
            return path[: -len(module.relpath) - 1] or "/"
    return None


def analyse(files: Sequence[ParsedFile], settings: Settings) -> Analysis:
    modules: Dict[int, SourceModule] = {}
    taken = set()
    for index, parsed in enumerate(files):
        if parsed.tree is None:
            continue
        relpath = parsed.relpath
        while relpath in taken:  # two files outside the root with one name
            relpath = "_/" + relpath
        taken.add(relpath)
        module = SourceModule(parsed.path, relpath, parsed.tree, extra_roots(parsed.tree, relpath, parsed.text))
        module.source = parsed.text
        modules[index] = module
    interpreter = Interpreter(list(modules.values()), device=settings.device,
                              configs=ConfigFiles(project_root_of(modules.values()) or settings.project_root))
    interpreter.run()
    return Analysis(modules, Facts(interpreter))


def check(files: Sequence[ParsedFile], settings: Settings, analysis: Optional[Analysis] = None
          ) -> Tuple[Analysis, Dict[int, List[RawFinding]]]:
    """Raw findings of every file (index -> findings)."""
    analysis = analysis or analyse(files, settings)
    out: Dict[int, List[RawFinding]] = {}
    for index, parsed in enumerate(files):
        module = analysis.modules.get(index)
        if module is None or parsed.suppressions.file_all:
            out[index] = []
            continue
        rules = active_rules(parsed.text, parsed.rules)
        if is_test_file(module.relpath):
            rules = [rule for rule in rules if not rule.skips_test_files]
        ctx = CheckContext(module, settings, analysis.facts)
        if rules:
            try:
                walk(ctx, [rule(ctx) for rule in rules])
            except Exception as exc:  # a rule bug must not end the run: this file's findings so far stand
                if DEBUG:
                    raise
                analysis.errors.append((module.relpath, 0, f"{type(exc).__name__}: {exc}"))
        out[index] = ctx.findings
    return analysis, out


def reportable(raws: Sequence[RawFinding], parsed: ParsedFile, module: SourceModule,
               settings: Settings) -> List[RawFinding]:
    """Raw findings that are reported: not suppressed, and low-confidence ones only in preview mode."""
    out = []
    for raw in raws:
        if raw.confidence == "low" and not settings.preview:
            continue
        row = getattr(raw.node, "lineno", 1)
        if parsed.suppressions.suppresses(raw.rule.code, row):
            continue
        out.append(raw)
    return out


def findings_of(parsed: ParsedFile, module: Optional[SourceModule], raws: Sequence[RawFinding], settings: Settings,
                want_edits: bool, paths: Dict[str, str], withheld: Optional["Withheld"] = None,
                index: int = 0) -> List[Finding]:
    """Reported findings of a checked file (sorted), with fix edits when ``want_edits``; a
    finding whose fix the fix rounds withheld has none, and its fix title says why."""
    if module is None:
        if parsed.syntax_error is not None and parsed.syntax_check:
            return [parsed.syntax_error]
        return []
    out: List[Finding] = []
    fctx: Optional[FixContext] = None
    for raw in reportable(raws, parsed, module, settings):
        row, col, end_row, end_col = node_range(module, raw.node)
        fix = None
        plan = raw.fix
        fix_title = raw.fix_title
        reason = withheld.reason(index, module, raw) if plan is not None and withheld is not None else None
        if reason is not None:
            plan, fix_title = None, f"fix withheld: {reason}"
        elif plan is not None and want_edits:
            if fctx is None:
                fctx = _fix_context(parsed.text)
            built = _build(plan, fctx) if fctx is not None else None
            if built is not None:
                fix = Fix(plan.applicability, plan.title, _edits(built, fctx))  # type: ignore[arg-type]
            else:  # the builder declined: claim no fix rather than one `fix` would not make
                plan, fix_title = None, f"no fix: `{plan.title}` could not be built here"
        related = tuple(Related(paths.get(e.path, e.path), e.line, e.message) for e in raw.evidence)
        out.append(Finding(
            code=raw.rule.code, name=raw.rule.name, severity=raw.rule.severity, message=raw.message,
            filename=parsed.path, location=Location(row, col + 1), end_location=Location(end_row, end_col + 1),
            fix_applicability=plan.applicability if plan else None, fix_title=fix_title, fix=fix,
            precision_context=raw.precision_context, confidence=raw.confidence, noqa_row=row,
            source_line=module.line(row), related=related,
        ))
    out.sort(key=lambda f: f.sort_key())
    return out


def _edits(fix: CstFix, fctx: FixContext) -> Tuple[Edit, ...]:
    """The text edits of one fix: from the replaced nodes alone where it only replaces
    expressions, else from a render of the whole module with this fix."""
    edits = local_edits(fix, fctx.module, fctx.text, fctx.positions)
    if edits is None:
        edit = text_edit(fctx.text, apply_fixes(fctx.module, [fix]))
        edits = (edit,) if edit else ()
    return edits


def _fix_context(text: str) -> Optional[FixContext]:
    """The CST of ``text`` for building fixes. Older LibCST (1.0) cannot parse a file whose lines
    end in both ``\\r\\n`` and ``\\n``; there such a file is fixed with every line ending in its
    most common ending (what black does), so its fixed text has one line ending. Newer LibCST parses
    it, and every line keeps its ending."""
    try:
        return FixContext(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        uniform = uniform_newlines(text)
        if uniform == text:
            return None
        try:
            return FixContext(uniform)
        except (cst.ParserSyntaxError, RecursionError, ValueError):
            return None


def uniform_newlines(text: str) -> str:
    """``text`` with every line ending in its most common line ending (``\\r\\n`` or ``\\n``)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    if not crlf or not lf:
        return text
    lines = text.replace("\r\n", "\n")
    return lines.replace("\n", "\r\n") if crlf > lf else lines


def _build(plan, fctx: FixContext):
    try:
        return plan.build(fctx)
    except (cst.ParserSyntaxError, ValueError, TypeError, AttributeError, KeyError, IndexError):
        return None  # a fix that cannot be built is no fix; the finding still stands


def lint_files(files: Sequence[ParsedFile], settings: Settings, want_edits: bool = False,
               errors: Optional[List[Tuple[str, int, str]]] = None,
               only: Optional[Collection[int]] = None,
               config_reads: Optional[Dict[str, str]] = None) -> List[List[Finding]]:
    """The findings of each file (of the indexes in ``only``; the others are read for context and
    get none), analysed together; internal errors, if any, go to ``errors``, and the config files
    the analysis read (root-relative path -> digest) to ``config_reads``."""
    analysis, raws = check(files, settings)
    if errors is not None:
        errors.extend(analysis.errors)
    if config_reads is not None:
        config_reads.update(analysis.config_reads)
    paths = {m.relpath: m.path for m in analysis.modules.values()}
    return [findings_of(parsed, analysis.modules.get(i), raws.get(i, []), settings, want_edits, paths)
            if only is None or i in only else []
            for i, parsed in enumerate(files)]


# -- fixing ----------------------------------------------------------------------------------------
#: Rounds that fix nested hazards of one rule innermost first (later rounds take nested wrappers
#: together, so that a deep nest still converges).
INNERMOST_ROUNDS = MAX_FIX_ROUNDS // 2
#: Times the rounds start over with more fixes withheld before the files still at fault are
#: left unfixed.
MAX_WITHHOLD_ROUNDS = 5

FixKey = Tuple[str, str]  # (rule code, source of the flagged node): one fix across rounds


def fix_key(module: SourceModule, raw: RawFinding) -> FixKey:
    return raw.rule.code, module.segment(raw.node, limit=1 << 30)


@dataclass
class Withheld:
    """Fixes the name check refused, per file: by fix (reason), or every fix of a file that
    still had a name problem after :data:`MAX_WITHHOLD_ROUNDS` (reason)."""

    fixes: Dict[int, Dict[FixKey, str]] = field(default_factory=dict)
    files: Dict[int, str] = field(default_factory=dict)

    def reason(self, index: int, module: SourceModule, raw: RawFinding) -> Optional[str]:
        """Why the fix of ``raw`` was withheld (None: it was not)."""
        if index in self.files:
            return self.files[index]
        keys = self.fixes.get(index)
        return keys.get(fix_key(module, raw)) if keys else None


@dataclass
class FixOutcome:
    texts: List[str]
    fixed: List[int]
    findings: List[List[Finding]]
    #: indexes of the files that still had fixes to apply when the rounds ran out
    unsettled: List[int] = field(default_factory=list)
    errors: List[Tuple[str, int, str]] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return not self.unsettled


@dataclass
class _Pass:
    """A round's fixes of one file that introduced name problems, kept for blaming them."""

    text: str  # the file before the round
    applied: List[Tuple[FixKey, FixPlan]]
    introduced: Dict[str, str]  # problem -> reason, relative to ``text``


@dataclass
class _Rounds:
    current: List[ParsedFile]
    fixed: List[int]
    analysis: Analysis
    raws: Dict[int, List[RawFinding]]
    unsettled: List[int]
    passes: Dict[int, List[_Pass]]
    #: file index -> name problems its final text has that its original had not
    problems: Dict[int, Dict[str, str]]


def fix_files(files: Sequence[ParsedFile], settings: Settings, want_edits: bool = False,
              only: Optional[Sequence[int]] = None) -> FixOutcome:
    """Fix ``files`` (or only the indexes in ``only``, the rest read for context and given no
    findings) in rounds.

    Each fixed file's names are checked against its original (:mod:`amp_lint.engine.bindings`):
    when the result reads a name nothing binds or leaves an import unused, the fixes that caused
    it are withheld (their findings say why) and the rounds start over without them.
    """
    allowed = set(range(len(files))) if only is None else set(only)
    withheld = Withheld()
    attempts = 0
    while True:
        rounds = _fix_rounds(files, settings, allowed - set(withheld.files), withheld)
        if not rounds.problems:
            break
        attempts += 1
        blamed = _blame(rounds) if attempts <= MAX_WITHHOLD_ROUNDS else {}
        for index, keys in blamed.items():
            withheld.fixes.setdefault(index, {}).update(keys)
        if not blamed:  # still at fault: leave those files as they are
            for index, problems in rounds.problems.items():
                withheld.files[index] = describe(problems)
    analysis, raws = rounds.analysis, rounds.raws
    paths = {m.relpath: m.path for m in analysis.modules.values()}
    findings = [findings_of(parsed, analysis.modules.get(i), raws.get(i, []), settings, want_edits, paths,
                            withheld, i) if i in allowed else []
                for i, parsed in enumerate(rounds.current)]
    return FixOutcome([p.text for p in rounds.current], rounds.fixed, findings, rounds.unsettled,
                      list(analysis.errors))


def _fix_rounds(files: Sequence[ParsedFile], settings: Settings, allowed: Set[int], withheld: Withheld) -> _Rounds:
    """Check, apply every allowed file's compatible fixes, check again, until nothing changes or
    :data:`MAX_FIX_ROUNDS` (one more round only looks whether fixes were left)."""
    current = list(files)
    fixed = [0] * len(files)
    original: Dict[int, Optional[NameFacts]] = {}
    facts: Dict[int, Optional[NameFacts]] = {}  # of the current text, once a file changed
    passes: Dict[int, List[_Pass]] = {}
    unsettled: List[int] = []
    analysis, raws = check(current, settings)
    for round_ in range(MAX_FIX_ROUNDS + 1):
        changed = False
        for index in sorted(allowed):
            parsed = current[index]
            module = analysis.modules.get(index)
            if module is None:
                continue
            candidates = [raw for raw in reportable(raws.get(index, []), parsed, module, settings)
                          if raw.fix is not None
                          and (raw.fix.applicability is Applicability.SAFE or settings.unsafe_fixes)
                          and withheld.reason(index, module, raw) is None]
            if not candidates:
                continue
            kinds = [raw.rule.code for raw in candidates] if round_ < INNERMOST_ROUNDS else None
            result = apply_plans(parsed.text, [raw.fix for raw in candidates], kinds)  # type: ignore[misc]
            if result is None:
                continue
            if round_ == MAX_FIX_ROUNDS:
                unsettled.append(index)  # the rounds ran out with fixes still to apply
                continue
            new_text, chosen = result
            new = ParsedFile.parse(parsed.path, parsed.relpath, new_text, parsed.rules, parsed.syntax_check)
            if new.tree is None:  # pragma: no cover - apply_plans checked it parses
                continue
            if index not in facts:
                original[index] = facts[index] = name_facts(parsed.text)
            new_facts = name_facts(new_text)
            introduced = new_problems(facts[index], new_facts)
            if introduced:
                applied = [(fix_key(module, candidates[i]), candidates[i].fix) for i in chosen]
                passes.setdefault(index, []).append(_Pass(parsed.text, applied, introduced))  # type: ignore[arg-type]
            facts[index] = new_facts
            current[index] = new
            fixed[index] += len(chosen)
            changed = True
        if not changed:
            break
        analysis, raws = check(current, settings)
    problems = {}
    for index in passes:
        found = new_problems(original[index], facts[index])
        if found:
            problems[index] = found
    return _Rounds(current, fixed, analysis, raws, unsettled, passes, problems)


def _blame(rounds: _Rounds) -> Dict[int, Dict[FixKey, str]]:
    """The fixes that introduced each file's remaining problems, with their reasons: in the last
    round that introduced a problem, the fixes that introduce it alone (or, when only their
    combination does, all of that round's fixes)."""
    out: Dict[int, Dict[FixKey, str]] = {}
    for index, problems in rounds.problems.items():
        blamed = out.setdefault(index, {})
        remaining = dict(problems)
        for step in reversed(rounds.passes.get(index, [])):
            introduced = {k: v for k, v in step.introduced.items() if k in remaining}
            if not introduced:
                continue
            start = name_facts(step.text)
            fctx = _fix_context(step.text)
            found = False
            for key, plan in step.applied:
                built = _build(plan, fctx) if fctx is not None else None
                if built is None:
                    continue
                alone = new_problems(start, name_facts(apply_fixes(fctx.module, [built])))  # type: ignore[union-attr]
                mine = {k: v for k, v in alone.items() if k in introduced}
                if mine:
                    blamed[key] = describe(mine)
                    found = True
            if not found:
                for key, _plan in step.applied:
                    blamed[key] = describe(introduced)
            for k in introduced:
                remaining.pop(k, None)
            if not remaining:
                break
    return {index: keys for index, keys in out.items() if keys}


def apply_plans(text: str, plans: Sequence[FixPlan], kinds: Optional[Sequence[str]] = None
                ) -> Optional[Tuple[str, List[int]]]:
    """Apply the non-overlapping fixes of ``plans`` to ``text``: (new text, indexes of the plans
    applied), or None when nothing applies or the result would not parse. With ``kinds`` (one
    per plan), nested fixes of one kind are applied innermost first (see ``choose_compatible``)."""
    fctx = _fix_context(text)
    if fctx is None:
        return None
    built: List[Tuple[int, CstFix]] = []
    for index, plan in enumerate(plans):
        fix = _build(plan, fctx)
        if fix is not None:
            built.append((index, fix))
    fixes = [fix for _, fix in built]
    chosen = choose_compatible(fixes, [kinds[i] for i, _ in built] if kinds is not None else None)
    if not chosen:
        return None
    new_text = apply_fixes(fctx.module, chosen)
    if new_text == text:
        return None
    try:
        cst.parse_module(new_text)
        compile(new_text, "<fixed>", "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except (cst.ParserSyntaxError, SyntaxError, RecursionError, ValueError):
        return None
    ids = {id(fix) for fix in chosen}
    return new_text, [index for index, fix in built if id(fix) in ids]


# -- one text --------------------------------------------------------------------------------------
def lint_text(path: str, text: str, settings: Settings, rules: Sequence[type], *, syntax_check: bool = True,
              want_edits: bool = False) -> List[Finding]:
    """All findings of ``text`` alone (a syntax error is one AMP000 finding)."""
    parsed = ParsedFile.parse(path, _basename(path), text, rules, syntax_check)
    return lint_files([parsed], settings, want_edits)[0]


def fix_text(path: str, text: str, settings: Settings, rules: Sequence[type]) -> Tuple[str, int]:
    """(new text, number of fixes applied) for ``text`` alone. Only text that parses is returned."""
    parsed = ParsedFile.parse(path, _basename(path), text, rules)
    if parsed.tree is None:
        return text, 0
    outcome = fix_files([parsed], settings)
    return outcome.texts[0], outcome.fixed[0]


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1] or "stdin.py"
