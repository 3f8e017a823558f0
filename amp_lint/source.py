"""Reading and writing source files without losing encoding, BOM or line endings."""
from __future__ import annotations

import codecs
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

_CODING_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class SourceError(Exception):
    """A file that cannot be read as Python source; the message is one line."""


@dataclass
class SourceFile:
    """The decoded text of one file and how to write it back byte-for-byte."""

    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


def declared_encoding(data: bytes) -> str:
    """The PEP 263 encoding of ``data`` (first two lines), default utf-8."""
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING_RE.match(line)
        if match:
            return match.group(1).decode("ascii")
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return "utf-8"


def decode_source(path: str, data: bytes) -> SourceFile:
    """Decode file bytes as Python source (a notebook: the module of its code cells, see
    :mod:`amp_lint.notebook`), raising SourceError with a one-line reason."""
    if path.endswith(".ipynb"):
        from amp_lint.notebook import decode_notebook

        return decode_notebook(path, data)
    if b"\x00" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes)")
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8):]
    encoding = "utf-8" if bom else declared_encoding(data)
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(f"not valid {encoding} (byte {exc.start}): declare the file's encoding") from None
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom)


def read_source(path: str) -> SourceFile:
    """Read one file from disk."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    return decode_source(path, data)


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically, keeping the file's permission bits.

    A symlink is written through: its target is replaced and the link stays a link.
    """
    target = Path(os.path.realpath(path))
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".amp-lint.tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
