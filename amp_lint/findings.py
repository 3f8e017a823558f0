"""Findings and fixes as plain data: the interface between rules and reporters.

Nothing here knows about LibCST; reporters import only this module.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from amp_lint.source import SourceFile


class Severity(str, Enum):
    """How bad a finding is (see the rule catalog)."""

    ERROR = "error"
    WARNING = "warning"
    PERF = "perf"
    MIGRATION = "migration"

    @property
    def level(self) -> str:
        """The level every format with levels shows: ``error``, ``warning`` or ``note``."""
        return LEVELS[self]


#: The one severity -> level mapping, shared by every output format that has levels (SARIF's
#: ``level``; GitHub annotations, which spell ``note`` as ``notice``). A deprecated API warns at
#: run time and will break, so ``migration`` is a warning; ``perf`` is advice, a note.
LEVELS: Dict[Severity, str] = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.MIGRATION: "warning",
    Severity.PERF: "note",
}


class Applicability(str, Enum):
    """Whether a fix is applied by plain ``fix`` (safe) or only with ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Location:
    """A 1-based row and 1-based column, as ruff reports them."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) by ``content``."""

    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class Fix:
    """A fix as text edits against the original file."""

    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Related:
    """One step of a finding's evidence: ``message`` at ``filename:row`` (SARIF relatedLocations)."""

    filename: str
    row: int
    message: str
    #: in a notebook: the 1-based cell, ``row`` is then within it
    cell: Optional[int] = None


@dataclass
class Finding:
    """One reported hazard in one file."""

    code: str
    name: str
    severity: Severity
    message: str
    filename: str
    location: Location
    end_location: Location
    fix_applicability: Optional[Applicability] = None
    fix_title: Optional[str] = None
    fix: Optional[Fix] = None
    precision_context: Optional[str] = None
    confidence: str = "high"
    noqa_row: Optional[int] = None
    source_line: Optional[str] = field(default=None, repr=False)
    #: the chain that makes the value half: where it comes from, then the calls that carry it
    related: Tuple[Related, ...] = ()
    #: In a notebook: the 1-based cell (counting every cell, as Jupyter shows them); rows are
    #: then relative to the cell, as ruff reports them.
    cell: Optional[int] = None

    @property
    def url(self) -> str:
        from amp_lint import DOCS_URL

        return f"{DOCS_URL}/{self.code}.md"

    def fixable(self, unsafe_fixes: bool) -> bool:
        """True when ``amp-lint fix`` (with ``--unsafe-fixes`` if given) would fix this."""
        if self.fix_applicability is None:
            return False
        return self.fix_applicability is Applicability.SAFE or unsafe_fixes

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)


@dataclass
class FileReport:
    """The outcome for one file (what the cache keeps, minus ``source``)."""

    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    fixed: int = 0
    new_text: Optional[str] = None
    source: Optional["SourceFile"] = None
    #: something the user should know that is not an error (fixes that did not converge)
    warning: Optional[str] = None
