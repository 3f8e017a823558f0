"""The Rule base class: a rule's code, name, docs, examples and visitor live in one file.

Examples are the tests (Fixit's idea): every ``INVALID`` example must produce the rule's code
(and, when ``expected`` is given, fix to exactly that text); every ``VALID`` one must not.
The same examples render the "Example" / "Use instead" sections of the docs.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional, Tuple

import ast

from amp_lint.data.catalog import CATALOG_BY_CODE
from amp_lint.engine.checker import RawFinding
from amp_lint.findings import Applicability, Severity
from amp_lint.semantics.facts import Evidence, Observation
from amp_lint.semantics.values import Value

if TYPE_CHECKING:
    from amp_lint.engine.checker import CheckContext
    from amp_lint.engine.fixing import FixPlan


@dataclass
class Valid:
    """Code on which the rule must stay silent."""

    code: str
    settings: Dict[str, Any] = field(default_factory=dict)
    filename: str = "example.py"

    def __post_init__(self) -> None:
        self.code = textwrap.dedent(self.code).lstrip("\n")


@dataclass
class Invalid:
    """Code on which the rule must fire ``count`` times; ``expected`` is the text after ``fix``
    (``fix_withheld``: the rule fires but offers no fix here, so ``fix`` leaves the code as it is)."""

    code: str
    expected: Optional[str] = None
    count: int = 1
    settings: Dict[str, Any] = field(default_factory=dict)
    unsafe_fixes: bool = True
    filename: str = "example.py"
    fix_withheld: bool = False

    def __post_init__(self) -> None:
        self.code = textwrap.dedent(self.code).lstrip("\n")
        if self.fix_withheld:
            self.expected = self.code
        elif self.expected is not None:
            self.expected = textwrap.dedent(self.expected).lstrip("\n")


DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Options", "References")


class Rule:
    """Base class for rules. Subclasses set the class attributes and define visit_/leave_ methods."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    #: Markdown with the sections ``What it does``, ``Why is this bad?``, ``Fix safety``,
    #: ``References`` (and optionally ``Options``). Example/Use instead come from the examples.
    docs: ClassVar[str]
    #: The best fix this rule can offer (None: the message says what to do).
    fix_applicability: ClassVar[Optional[Applicability]] = None
    #: Prefilter: the rule can only fire in a file containing one of these substrings.
    tokens: ClassVar[Tuple[str, ...]] = ()
    #: From the catalog's ``on_by_default`` (set for each rule class as it is defined).
    default_enabled: ClassVar[bool] = True
    #: A preview rule runs only in preview mode (``--preview`` / ``preview = true``), as in ruff.
    preview: ClassVar[bool] = False
    #: Not run on test files (``test_*.py``, ``*_test.py``, ``conftest.py``, ``tests/``): their toy
    #: models run in half on purpose, with values and gradients of size one.
    skips_test_files: ClassVar[bool] = False
    VALID: ClassVar[List[Valid]] = []
    INVALID: ClassVar[List[Invalid]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        entry = CATALOG_BY_CODE.get(cls.__dict__.get("code", ""))
        if entry is not None:
            cls.default_enabled = entry.on_by_default

    def __init__(self, ctx: "CheckContext") -> None:
        self.ctx = ctx

    def report(
        self,
        node: ast.AST,
        message: str,
        *,
        fix: Optional["FixPlan"] = None,
        fix_title: Optional[str] = None,
        precision_context: Optional[str] = None,
        confidence: str = "high",
        evidence: Tuple[Evidence, ...] = (),
    ) -> None:
        """Record a finding at ``node`` (its start is the reported location)."""
        self.ctx.add(RawFinding(self, node, message, fix, fix_title or (fix.title if fix else None),
                                precision_context, confidence, tuple(evidence)))

    def report_hazard(self, node: ast.AST, hazards: List["Hazard"], fix: Optional["FixPlan"] = None) -> None:
        """Report the most telling of ``hazards`` (one per observation that found one), if any."""
        if not hazards:
            return
        best = min(hazards, key=lambda h: (h.low, h.conditional, h.observation.context_free))
        message = best.message
        if best.condition and best.condition not in message:
            message += f" (when `{best.condition}`)"
        self.report(node, message, fix=fix, precision_context=best.label,
                    confidence="low" if best.low else "high", evidence=best.observation.evidence(best.value))

    # -- documentation --------------------------------------------------------------------
    @classmethod
    def doc_example(cls) -> Tuple[Optional[str], Optional[str]]:
        """(example, use instead): the first INVALID example with a fix and its fixed text."""
        for example in cls.INVALID:
            if example.expected is not None:
                return example.code, example.expected
        if cls.INVALID:
            return cls.INVALID[0].code, (cls.VALID[0].code if cls.VALID else None)
        return None, None

    @classmethod
    def render_docs(cls) -> str:
        """The rule's full documentation (what ``amp-lint rule CODE`` prints)."""
        fix = {
            None: "Fix is not available.",
            Applicability.SAFE: "Fix is always available (safe).",
            Applicability.UNSAFE: "Fix is sometimes available (unsafe: needs `--unsafe-fixes`).",
        }[cls.fix_applicability]
        sections = _split_sections(cls.docs)
        example, instead = cls.doc_example()
        if example is not None:
            sections["Example"] = f"```python\n{example.rstrip()}\n```"
        if instead is not None:
            sections["Use instead"] = f"```python\n{instead.rstrip()}\n```"
        out = [f"# {cls.name} ({cls.code})", "", f"Severity: {cls.severity.value}. {fix}", ""]
        if cls.preview:
            out += ["This rule is in preview: it runs only with `--preview` (or `preview = true`).", ""]
        if not cls.default_enabled:
            out += ["This rule is off by default; enable it with `--extend-select " + cls.code + "`.", ""]
        if cls.skips_test_files:
            out += ["Test files (`test_*.py`, `*_test.py`, `conftest.py`, files under `tests/`) are not checked "
                    "by this rule: their toy models run in half on purpose, with values of size one.", ""]
        for title in DOC_SECTIONS:
            if title in sections:
                heading = "Use instead:" if title == "Use instead" else f"## {title}"
                out += [heading, sections[title].strip(), ""]
        return "\n".join(out).rstrip() + "\n"


def _split_sections(markdown: str) -> Dict[str, str]:
    sections: Dict[str, str] = {}
    current: Optional[str] = None
    lines: List[str] = []
    for line in textwrap.dedent(markdown).strip().splitlines():
        if line.startswith("## "):
            if current is not None:
                sections[current] = "\n".join(lines)
            current, lines = line[3:].strip(), []
        else:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines)
    unknown = set(sections) - set(DOC_SECTIONS)
    if unknown:
        raise ValueError(f"unknown doc sections {sorted(unknown)}")
    return sections


@dataclass
class Hazard:
    """What one observation says about a site: the message, the precision context label, and the
    value whose half dtype is the evidence."""

    observation: Observation
    message: str
    label: str
    value: Optional[Value] = None
    low: bool = False

    def __post_init__(self) -> None:
        origin = self.observation.record.autocast_origin if self.observation.autocast else None
        if origin is not None and origin.kind == "autocast_guess":
            self.low = True  # the autocast's dtype was not visible: half is a guess
        if self.observation.speculative:
            self.low = True  # only the guessed forward of a half module reaches it

    @property
    def condition(self) -> Optional[str]:
        origin = self.observation.unprotected_origin(self.value)
        if origin is not None:  # half where the context's autocast state is not in force
            return origin.condition
        for option in getattr(self.value, "options", (self.value,)) if self.value is not None else ():
            origin = getattr(option, "origin", None) or origin
        if origin is None:
            origin = self.observation.record.autocast_origin if self.observation.autocast else None
        return origin.condition if origin is not None else None

    @property
    def conditional(self) -> bool:
        return self.condition is not None


def find_arg(call: ast.Call, keyword: str, position: Optional[int] = None) -> Optional[ast.expr]:
    """The expression passed as ``keyword=`` or at ``position`` (0-based) of ``call``.

    A ``*args`` at or before ``position`` makes positions unknowable, so None is returned for them.
    """
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is None:
        return None
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if index == position:
            return arg
    return None
