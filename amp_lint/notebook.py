"""Jupyter notebooks as one Python module, and back.

The code cells are joined into one module (so a model cast in cell 3 makes cell 7 half
precision), each cell preceded by a marker comment that finds it again after fixes have added
or removed lines. IPython syntax is masked so that the module parses: a line magic (``%time
f()``), a shell line (``!pip install x``), a help line (``obj?``) and their ``x = !cmd`` /
``x = %magic`` forms become ``pass`` / ``x = None`` with a comment naming the original line,
which is put back exactly. A cell magic (``%%bash``) hides its cell, except those whose body
is Python (``%%time``...), where only the first line is masked.

Writing back replaces only the ``source`` values of the code cells that changed, in the
original JSON text: indentation, key order, other cells, outputs, metadata, escaping and the
trailing newline stay byte for byte. A source stored as a list of lines stays a list.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from amp_lint.source import SourceError, SourceFile

NOTEBOOK_SUFFIX = ".ipynb"
#: Cell magics whose body is Python: only their first line is masked.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy", "python", "python3"})

_MARKER = "# amp-lint: notebook cell {index}"
_MARKER_RE = re.compile(r"^# amp-lint: notebook cell (\d+)$")
_MAGIC_TAG = "  # amp-lint: magic {index}"
_MASKED_RE = re.compile(r"^[ \t]*(?:pass|[\w.]+ = None)  # amp-lint: magic (\d+)$")
_ASSIGNED_MAGIC_RE = re.compile(r"^([ \t]*)([A-Za-z_][\w.]*)[ \t]*=[ \t]*[!%]")
_WS = re.compile(r"[ \t\n\r]*")
_ITEM_SEPARATOR = re.compile(r'(?<!\\)"(,\s*)"')  # between two strings of a list


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


@dataclass
class Cell:
    """A code cell as it enters the module."""

    index: int  # position among all cells, 0-based
    original: str  # the cell's source, as stored
    span: Tuple[int, int]  # where its ``source`` value lies in the JSON text
    as_list: bool  # stored as a list of lines
    hidden: bool = False  # a non-Python cell magic: not part of the module


@dataclass
class NotebookSource(SourceFile):
    """A notebook: ``text`` is the module made of its code cells; ``encode`` writes it back."""

    raw: str = ""
    cells: List[Cell] = field(default_factory=list)
    magics: List[str] = field(default_factory=list)
    ensure_ascii: bool = False

    def cell_map(self) -> "CellMap":
        return CellMap.of(self.text)

    def encode(self, text: str) -> bytes:  # type: ignore[override]
        """The notebook's bytes with the code cells of ``text`` (raises SourceError when the
        cells cannot be found again: a fix removed a marker or a masked line)."""
        if text == self.text:
            return self._bytes(self.raw)
        sources = split_cells(text)
        out, last = [], 0
        for cell in self.cells:
            if cell.hidden:
                continue
            if cell.index not in sources:
                raise SourceError(f"cannot write notebook: cell {cell.index + 1} was lost by the fix")
            new = self._unmask(sources.pop(cell.index), cell)
            if new == cell.original:
                continue
            out.append(self.raw[last:cell.span[0]])
            out.append(self._source_json(new, cell))
            last = cell.span[1]
        if sources:
            raise SourceError("cannot write notebook: the fix added code outside the cells")
        out.append(self.raw[last:])
        return self._bytes("".join(out))

    def _bytes(self, raw: str) -> bytes:
        return (b"\xef\xbb\xbf" if self.bom else b"") + raw.encode("utf-8")

    def code_of(self, text: str) -> Dict[int, str]:
        """Cell index -> the cell's source (magics restored) for a module text."""
        return {index: self._unmask(body, self.cells_by_index[index])
                for index, body in split_cells(text).items() if index in self.cells_by_index}

    @property
    def cells_by_index(self) -> Dict[int, Cell]:
        return {cell.index: cell for cell in self.cells}

    def _unmask(self, body: str, cell: Cell) -> str:
        lines = body.splitlines(keepends=True)
        for i, line in enumerate(lines):
            match = _MASKED_RE.match(line.rstrip("\r\n"))
            if match:
                index = int(match.group(1))
                if index >= len(self.magics):
                    raise SourceError("cannot write notebook: a masked IPython line was changed")
                ending = line[len(line.rstrip("\r\n")):]
                lines[i] = self.magics[index] + ending
        text = "".join(lines)
        if not cell.original.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        return text

    def _source_json(self, source: str, cell: Cell) -> str:
        dump = lambda s: json.dumps(s, ensure_ascii=self.ensure_ascii)  # noqa: E731
        if not cell.as_list:
            return dump(source)
        old = self.raw[cell.span[0]:cell.span[1]]
        lines = source.splitlines(keepends=True)
        match = re.match(r"\[(\s*)", old)
        inner = match.group(1) if match else ""
        closing = re.search(r"(\s*)\]$", old)
        close = closing.group(1) if closing else ""
        if not lines:
            return "[]"
        between = _ITEM_SEPARATOR.search(old) or _ITEM_SEPARATOR.search(self.raw)
        separator = between.group(1) if between else ("," + inner if inner else ", ")
        return "[" + inner + separator.join(dump(line) for line in lines) + close + "]"


@dataclass
class CellMap:
    """Module rows -> (cell number, row in the cell), from the markers of a module text."""

    starts: List[Tuple[int, int]]  # (first module row of the cell's code, 1-based cell number)

    @classmethod
    def of(cls, text: str) -> "CellMap":
        starts = []
        for row, line in enumerate(text.splitlines(), start=1):
            match = _MARKER_RE.match(line)
            if match:
                starts.append((row + 1, int(match.group(1)) + 1))
        return cls(starts)

    def row_of(self, cell: int, row: int) -> int:
        """The module row of ``row`` (1-based) in code cell ``cell`` (1-based), or ValueError."""
        for start, number in self.starts:
            if number == cell:
                return start + row - 1
        raise ValueError(f"no code cell {cell}")

    def where(self, row: int) -> str:
        """``cell N:ROW`` of a module row, as findings write it."""
        cell, within = self.locate(row)
        return f"cell {cell}:{within}"

    def locate(self, row: int) -> Tuple[int, int]:
        """(1-based cell number, 1-based row in that cell) of a module row."""
        cell, first = (self.starts[0][1], self.starts[0][0]) if self.starts else (1, 1)
        for start, number in self.starts:
            if start > row:
                break
            cell, first = number, start
        return cell, max(1, row - first + 1)


def split_cells(text: str) -> Dict[int, str]:
    """Cell index -> the lines below its marker, up to the next marker."""
    out: Dict[int, str] = {}
    current: Optional[int] = None
    lines: List[str] = []
    for line in text.splitlines(keepends=True):
        match = _MARKER_RE.match(line.rstrip("\r\n"))
        if match:
            if current is not None:
                out[current] = "".join(lines)
            elif "".join(lines).strip():
                out[-1] = "".join(lines)  # code above the first marker: not a cell
            current, lines = int(match.group(1)), []
        else:
            lines.append(line)
    if current is not None:
        out[current] = "".join(lines)
    return out


def _mask(source: str, magics: List[str]) -> str:
    """``source`` with its IPython lines replaced by placeholders (remembered in ``magics``)."""
    out: List[str] = []
    continued: Optional[str] = None  # the indentation of a magic continued by a backslash
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)] if continued is None else continued
        assigned = _ASSIGNED_MAGIC_RE.match(body) if continued is None else None
        ipython = (continued is not None or stripped.startswith(("%", "!"))
                   or (stripped.endswith("?") and not stripped.startswith("#")))
        if not (ipython or assigned):
            out.append(line)
            continue
        index = len(magics)
        magics.append(body)
        tag = _MAGIC_TAG.format(index=index)
        if assigned:
            out.append(f"{assigned.group(1)}{assigned.group(2)} = None{tag}{ending}")
        else:
            out.append(f"{indent}pass{tag}{ending}")
        continued = indent if body.endswith("\\") else None
    return "".join(out)


def _cell_sources(raw: str) -> List[Tuple[dict, Tuple[int, int]]]:
    """(cell, span of its ``source`` value in ``raw``) for every cell, read off the JSON text."""
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        return _WS.match(raw, i).end()  # type: ignore[union-attr]

    def members(i: int):
        """Yield (key, value start, value end) of the object starting at ``raw[i] == '{'``."""
        i = skip(i + 1)
        if raw[i] == "}":
            return
        while True:
            key, i = json.decoder.scanstring(raw, i + 1)  # type: ignore[attr-defined]
            i = skip(skip(i) + 1)  # the colon
            _, end = decoder.raw_decode(raw, i)
            yield key, i, end
            i = skip(end)
            if raw[i] == "}":
                return
            i = skip(i + 1)  # the comma

    out: List[Tuple[dict, Tuple[int, int]]] = []
    start = skip(0)
    for key, value_start, value_end in members(start):
        if key != "cells":
            continue
        i = skip(value_start + 1)
        while raw[i] != "]":
            cell, end = decoder.raw_decode(raw, i)
            span = (-1, -1)
            if isinstance(cell, dict):
                for cell_key, s, e in members(i):
                    if cell_key == "source":
                        span = (s, e)
            out.append((cell, span))
            i = skip(end)
            if raw[i] == ",":
                i = skip(i + 1)
    return out


def decode_notebook(path: str, data: bytes) -> NotebookSource:
    """The module of a notebook's code cells (raises SourceError with a one-line reason)."""
    try:
        raw = data.decode("utf-8-sig")
        notebook = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise SourceError(f"notebook is not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"invalid notebook JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SourceError("not a Jupyter notebook (no \"cells\" list)")
    language = (notebook.get("metadata") or {}).get("language_info", {}).get("name", "python")
    if isinstance(language, str) and language.lower() not in ("python", "python3", "ipython", ""):
        return NotebookSource(path=path, text="", raw=raw, bom=data.startswith(b"\xef\xbb\xbf"))
    try:
        found = _cell_sources(raw)
    except (ValueError, IndexError, json.JSONDecodeError):  # pragma: no cover - json.loads accepted it
        raise SourceError("invalid notebook JSON") from None
    cells: List[Cell] = []
    magics: List[str] = []
    parts: List[str] = []
    for index, (cell, span) in enumerate(found):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or span == (-1, -1):
            continue
        value = cell.get("source", "")
        as_list = isinstance(value, list)
        if as_list and not all(isinstance(line, str) for line in value):
            raise SourceError(f"cell {index + 1}: source is not text")
        source = "".join(value) if as_list else value
        if not isinstance(source, str):
            raise SourceError(f"cell {index + 1}: source is not text")
        first = source.lstrip().split("\n", 1)[0]
        hidden = first.startswith("%%") and first[2:].split(" ", 1)[0].strip() not in PYTHON_CELL_MAGICS
        cells.append(Cell(index, source, span, as_list, hidden))
        if hidden:
            continue
        body = _mask(source, magics)
        if body and not body.endswith("\n"):
            body += "\n"
        parts.append(_MARKER.format(index=index) + "\n" + body)
    ascii_only = all(ord(ch) < 128 for ch in raw)
    ensure_ascii = ascii_only and bool(re.search(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])", raw))
    return NotebookSource(path=path, text="".join(parts), bom=data.startswith(b"\xef\xbb\xbf"), raw=raw,
                          cells=cells, magics=magics, ensure_ascii=ensure_ascii)


def notebook_diff(source: NotebookSource, new_text: str, path: str) -> str:
    """Unified diffs of the changed cells (``a/nb.ipynb:cell 3``)."""
    from amp_lint.diff import unified_diff

    before = source.code_of(source.text)
    after = source.code_of(new_text)
    out: List[str] = []
    for index in sorted(before):
        if after.get(index) == before[index]:
            continue
        name = f"{path.lstrip('/')}:cell {index + 1}"
        for line in unified_diff(before[index].splitlines(keepends=True),
                                  after.get(index, "").splitlines(keepends=True),
                                  "a/" + name, "b/" + name):
            # A cell's last line has no newline: say so, as git does.
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def step_in_cell(step, cells: CellMap):
    """An evidence step (:class:`~amp_lint.findings.Related`) of a notebook, its row moved into its cell."""
    from amp_lint.findings import Related

    cell, row = cells.locate(step.row)
    return Related(step.filename, row, step.message, cell)


def to_cells(findings: Sequence, cells: CellMap) -> list:
    """``findings`` with rows relative to their cell and the cell number set (ruff's ``cell``),
    their evidence in the notebook too."""
    import dataclasses

    from amp_lint.findings import Edit, Fix, Location

    def move(loc: Location) -> Location:
        return Location(cells.locate(loc.row)[1], loc.column)

    out = []
    for finding in findings:
        if finding.cell is not None:
            out.append(finding)
            continue
        cell, row = cells.locate(finding.location.row)
        fix = finding.fix
        if fix is not None:
            fix = Fix(fix.applicability, fix.message,
                      tuple(Edit(e.content, move(e.location), move(e.end_location)) for e in fix.edits))
        noqa = cells.locate(finding.noqa_row)[1] if finding.noqa_row is not None else None
        related = tuple(step_in_cell(step, cells) if step.filename == finding.filename and step.cell is None else step
                        for step in finding.related)
        out.append(dataclasses.replace(finding, cell=cell, location=Location(row, finding.location.column),
                                       end_location=move(finding.end_location), fix=fix, noqa_row=noqa,
                                       related=related))
    return out
