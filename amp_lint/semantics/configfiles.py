"""Configuration files a program loads by a known path (``OmegaConf.load("configs/model.yaml")``,
``yaml.safe_load(open(path))``, ``json.load(f)``): their content as values.

Config-driven code (latent-diffusion's ``instantiate_from_config(config.model)``, a model's width
or vocabulary in ``model.yaml``) builds its model from what such a file says. The files are read
from the project only (a path that leaves the project root is not read), at most
:data:`MAX_CONFIG_BYTES` each, and every read is remembered with a digest of the bytes read (or
"-" for a file that was not there), so that a cached result is only reused while they are the same.

YAML is read by a small reader of the subset configuration files use (block mappings and
sequences, flow ``[...]``/``{...}`` collections, plain and quoted scalars, comments), with
PyYAML's scalar types as OmegaConf reads them (``1e-4`` is a float there). What it does not read
(anchors, aliases, tags, OmegaConf ``${...}`` interpolations) is unknown; a file it cannot read
at all is unknown as a whole. It imports nothing outside the standard library.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

#: a config file larger than this is not read (a dataset or vocabulary, not a configuration)
MAX_CONFIG_BYTES = 256 * 1024
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


class _Unknown:
    """A value the reader does not know (an alias, a tag, an interpolation)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNREAD = _Unknown()


class YamlSubsetError(ValueError):
    """The text uses YAML this reader does not read."""


def read_config_text(text: str, suffix: str) -> Any:
    """The data of a config file's text (``UNREAD`` where it cannot be read)."""
    try:
        if suffix == ".json":
            return json.loads(text)
        return parse_yaml(text)
    except (ValueError, RecursionError):
        return UNREAD


# -- YAML subset -------------------------------------------------------------------------------
_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?$")
_BOOLS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}


def parse_yaml(text: str) -> Any:
    """The first document of ``text``."""
    lines: List[Tuple[int, str]] = []
    started = False
    for raw in text.splitlines():
        if raw.startswith("---"):
            if started:
                break  # a second document
            started = True
            rest = raw[3:].strip()
            if not rest or rest.startswith("#"):
                continue
            raw = rest
        if raw.startswith("..."):
            break
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlSubsetError("tab indentation")
        content = _strip_comment(raw).rstrip()
        if content.strip():
            started = True
            lines.append((len(content) - len(content.lstrip(" ")), content.strip()))
    if not lines:
        return None
    if lines[0][1].startswith(("{", "[")):  # a flow collection over several lines (JSON-style)
        return _flow(" ".join(text for _, text in lines))
    value, end = _block(lines, 0, lines[0][0])
    if end != len(lines):
        raise YamlSubsetError("text after the document's top level")
    return value


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _block(lines: List[Tuple[int, str]], start: int, indent: int) -> Tuple[Any, int]:
    """The block node whose lines start at ``start`` with indentation ``indent``."""
    text = lines[start][1]
    if text == "-" or text.startswith("- "):
        return _sequence(lines, start, indent)
    if _mapping_key(text) is not None:
        return _mapping(lines, start, indent)
    if start + 1 < len(lines) and lines[start + 1][0] > indent:
        raise YamlSubsetError("multi-line plain scalar")
    return _scalar(text), start + 1


def _mapping_key(text: str) -> Optional[Tuple[Any, str]]:
    """(key, rest) of a ``key: rest`` line, else None."""
    if text[0] in "'\"":
        close = text.find(text[0], 1)
        if close < 0 or not text[close + 1:].startswith(":"):
            return None
        rest = text[close + 2:]
        if rest and not rest.startswith(" "):
            return None
        return text[1:close], rest.strip()
    if text[0] in "[{&*!|>%@`?":
        return None
    match = re.match(r"([^:#]*?):( |$)", text)
    if match is None:
        return None
    key: Any = match.group(1).strip()
    if _INT.match(key):
        key = int(key.replace("_", ""))
    return key, text[match.end():].strip()


def _mapping(lines: List[Tuple[int, str]], start: int, indent: int) -> Tuple[Dict[Any, Any], int]:
    out: Dict[Any, Any] = {}
    i = start
    while i < len(lines) and lines[i][0] == indent:
        found = _mapping_key(lines[i][1])
        if found is None:
            break
        key, rest = found
        i += 1
        if rest and i < len(lines) and lines[i][0] > indent:
            # a block scalar (``|``), an anchored or tagged block (``&base``), a plain scalar
            # continued on the next lines: not read
            while i < len(lines) and lines[i][0] > indent:
                i += 1
            out[key] = UNREAD
        elif rest:
            out[key] = _scalar(rest)
        elif i < len(lines) and (lines[i][0] > indent or (lines[i][0] == indent and lines[i][1].startswith("-"))):
            out[key], i = _block(lines, i, lines[i][0])
        else:
            out[key] = None
    if i < len(lines) and lines[i][0] > indent:
        raise YamlSubsetError("bad indentation")
    return out, i


def _sequence(lines: List[Tuple[int, str]], start: int, indent: int) -> Tuple[List[Any], int]:
    out: List[Any] = []
    i = start
    while i < len(lines) and lines[i][0] == indent and (lines[i][1] == "-" or lines[i][1].startswith("- ")):
        rest = lines[i][1][1:].strip()
        if not rest:
            i += 1
            if i < len(lines) and lines[i][0] > indent:
                item, i = _block(lines, i, lines[i][0])
            else:
                item = None
            out.append(item)
            continue
        # ``- key: value`` opens a mapping whose further keys are indented to ``key``'s column
        column = indent + len(lines[i][1]) - len(rest)
        lines[i] = (column, rest)
        item, i = _block(lines, i, column)
        out.append(item)
    return out, i


def _scalar(text: str) -> Any:
    if text.startswith(("&", "*", "!")):
        return UNREAD
    if text.startswith("["):
        return _flow(text)
    if text.startswith("{"):
        return _flow(text)
    if text[0] in "'\"":
        if len(text) < 2 or text[-1] != text[0]:
            raise YamlSubsetError("unclosed quote")
        body = text[1:-1]
        value = body.replace("''", "'") if text[0] == "'" else _unescape(body)
        return UNREAD if "${" in value else value
    if "${" in text:
        return UNREAD
    lowered = text.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in _BOOLS:
        return _BOOLS[lowered]
    if _INT.match(text):
        return int(text.replace("_", ""))
    if lowered in (".inf", "+.inf"):
        return float("inf")
    if lowered == "-.inf":
        return float("-inf")
    if lowered == ".nan":
        return float("nan")
    if any(c.isdigit() for c in text) and _FLOAT.match(text):
        try:
            return float(text.replace("_", ""))
        except ValueError:
            return text
    return text


def _unescape(body: str) -> str:
    try:
        return json.loads('"' + body + '"')
    except ValueError:
        return body


def _flow(text: str) -> Any:
    value, end = _flow_value(text, 0)
    if text[end:].strip():
        raise YamlSubsetError("text after a flow collection")
    return value


def _flow_value(text: str, i: int) -> Tuple[Any, int]:
    i = _skip_spaces(text, i)
    if i >= len(text):
        raise YamlSubsetError("unfinished flow collection")
    opener = text[i]
    if opener in "[{":
        closer = "]" if opener == "[" else "}"
        items: List[Any] = []
        pairs: Dict[Any, Any] = {}
        i += 1
        while True:
            i = _skip_spaces(text, i)
            if i >= len(text):
                raise YamlSubsetError("unclosed flow collection")
            if text[i] == closer:
                return (items if opener == "[" else pairs), i + 1
            if opener == "{":
                key, i = _flow_scalar(text, i, ":")
                i = _skip_spaces(text, i)
                if i >= len(text) or text[i] != ":":
                    raise YamlSubsetError("flow mapping without ':'")
                value, i = _flow_value(text, i + 1)
                pairs[key] = value
            else:
                value, i = _flow_value(text, i)
                items.append(value)
            i = _skip_spaces(text, i)
            if i < len(text) and text[i] == ",":
                i += 1
            elif i >= len(text) or text[i] != closer:
                raise YamlSubsetError("bad flow collection")
    return _flow_scalar(text, i, ",]}")


def _flow_scalar(text: str, i: int, stops: str) -> Tuple[Any, int]:
    i = _skip_spaces(text, i)
    if i < len(text) and text[i] in "'\"":
        close = text.find(text[i], i + 1)
        if close < 0:
            raise YamlSubsetError("unclosed quote")
        return _scalar(text[i:close + 1]), close + 1
    j = i
    while j < len(text) and text[j] not in stops and not (text[j] == ":" and j + 1 < len(text) and text[j + 1] == " "
                                                           and ":" in stops):
        j += 1
    token = text[i:j].strip()
    if not token:
        raise YamlSubsetError("empty flow item")
    return _scalar(token), j


def _skip_spaces(text: str, i: int) -> int:
    while i < len(text) and text[i] == " ":
        i += 1
    return i


# -- reading files of the project ----------------------------------------------------------------
class ConfigFiles:
    """The config files of one analysis, read on demand from under ``root``."""

    def __init__(self, root: Optional[str]) -> None:
        self.root = Path(root).resolve() if root else None
        #: root-relative path -> digest of the bytes read ("-": not there, or not read)
        self.reads: Dict[str, str] = {}
        self._data: Dict[str, Any] = {}

    def load(self, path: str, near: Optional[str] = None) -> Any:
        """The data of the config file ``path`` (relative to the project root, else to the folder
        ``near`` (root-relative) of the code that loads it); ``UNREAD`` when it is not read."""
        if self.root is None or not path.endswith(CONFIG_SUFFIXES) or "\0" in path:
            return UNREAD
        candidates = [path] if os.path.isabs(path) else [path] + ([os.path.join(near, path)] if near else [])
        for candidate in candidates:
            relpath = self._inside(candidate)
            if relpath is None:
                continue
            if relpath in self._data:
                return self._data[relpath]
            data = self._read(relpath)
            if data is not UNREAD:
                return data
        return UNREAD

    def listing(self, folder: str, suffix: str) -> List[str]:
        """Root-relative paths of the files ending in ``suffix`` in the project folder ``folder``
        (root-relative, "" for the root), sorted. The listing is remembered as a read of
        ``<folder>/*<suffix>`` (:func:`current_digest` lists it again), so that a cached result
        is not reused once a file is added or removed there."""
        if self.root is None or "*" in folder or "*" in suffix:
            return []
        names = _names_in(self.root / folder, suffix)
        prefix = f"{folder}/" if folder else ""
        self.reads[f"{prefix}*{suffix}"] = digest_of("\n".join(names).encode("utf-8"))
        return [prefix + name for name in names]

    def _inside(self, path: str) -> Optional[str]:
        assert self.root is not None
        full = Path(os.path.normpath(os.path.join(str(self.root), path)))
        try:
            return full.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def _read(self, relpath: str) -> Any:
        assert self.root is not None
        full = self.root / relpath
        try:
            if not full.is_file() or full.stat().st_size > MAX_CONFIG_BYTES:
                self.reads[relpath] = "-"
                self._data[relpath] = UNREAD
                return UNREAD
            data = full.read_bytes()
        except OSError:
            self.reads[relpath] = "-"
            self._data[relpath] = UNREAD
            return UNREAD
        self.reads[relpath] = digest_of(data)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            self._data[relpath] = UNREAD
            return UNREAD
        value = read_config_text(text, full.suffix.lower())
        self._data[relpath] = value
        return value


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _names_in(folder: Path, suffix: str) -> List[str]:
    """Names of the files ending in ``suffix`` directly in ``folder``, sorted."""
    try:
        return sorted(entry.name for entry in os.scandir(folder) if entry.name.endswith(suffix) and entry.is_file())
    except OSError:
        return []


def current_digest(root: str, relpath: str) -> str:
    """The digest :class:`ConfigFiles` would record for ``relpath`` now (for ``<folder>/*<suffix>``,
    that of the folder's listing)."""
    folder, _, pattern = relpath.rpartition("/")
    if pattern.startswith("*"):
        return digest_of("\n".join(_names_in(Path(root) / folder, pattern[1:])).encode("utf-8"))
    full = Path(root) / relpath
    try:
        if not full.is_file() or full.stat().st_size > MAX_CONFIG_BYTES:
            return "-"
        return digest_of(full.read_bytes())
    except OSError:
        return "-"
