"""Settings: ``[tool.amp-lint]`` in pyproject.toml (or amp-lint.toml), overridden by the CLI.

Rule selection follows ruff: selectors are a code (``AMP301``), a prefix (``AMP3``) or ``ALL``;
for each code the most specific matching selector decides, and ``ignore`` wins a tie. Syntax
errors (AMP000) are reported whatever is selected, unless an ``ignore`` matches them.
"""
from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib


class ConfigError(Exception):
    """Bad configuration or selector; the message is one line naming the culprit."""


DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", "env", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".amp_lint_cache", "__pycache__", "__pypackages__", "build",
    "dist", "site-packages", "node_modules", "_build", "buck-out", ".eggs", ".ipynb_checkpoints",
)

DEVICES = ("cuda", "cpu", "xpu", "mps", "hip")

#: Codes on whatever is selected, like ruff's syntax errors: only an ``ignore`` turns them off
#: (the syntax-error code of :mod:`amp_lint.engine.linter`).
ALWAYS_SELECTED = ("AMP000",)


@dataclass(frozen=True)
class Settings:
    """Everything that changes what a run reports or rewrites."""

    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: Tuple[str, ...] = ()
    unsafe_fixes: bool = False
    preview: bool = False
    torch_version: str = "2.4"
    device: str = "cuda"
    min_dim: int = 128
    project_root: str = "."

    def torch_at_least(self, version: str) -> bool:
        return parse_version(self.torch_version) >= parse_version(version)

    def cache_key(self) -> str:
        """Everything that changes results, as one string (for the cache)."""
        return repr(tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "project_root"))


def parse_version(text: str) -> Tuple[int, ...]:
    parts = []
    for piece in str(text).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    if not parts:
        raise ConfigError(f"invalid torch-version {text!r}: expected e.g. \"2.4\"")
    return tuple(parts)


# -- selection --------------------------------------------------------------------------------

def _validate_selector(selector: str, known: Iterable[str], reserved: Iterable[str]) -> str:
    sel = selector.strip().upper()
    if sel == "ALL":
        return sel
    codes = list(known) + list(reserved)
    if not any(code.startswith(sel) for code in codes) or not sel.startswith("AMP"):
        raise ConfigError(f"unknown rule selector {selector!r} (expected a code like AMP301, a prefix like AMP3, or ALL)")
    return sel


def _specificity(selector: str, code: str) -> int:
    if selector == "ALL":
        return 0
    return len(selector) if code.startswith(selector) else -1


def enabled_codes(
    known: Dict[str, bool],
    select: Sequence[str],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    reserved: Iterable[str] = (),
) -> List[str]:
    """Codes enabled by the selectors. ``known`` maps code -> enabled by default."""
    reserved = list(reserved)
    sel = [_validate_selector(s, known, reserved) for s in select]
    ext = [_validate_selector(s, known, reserved) for s in extend_select]
    ign = [_validate_selector(s, known, reserved) for s in ignore]
    result = []
    for code, default_on in known.items():
        positive = -1
        if sel:
            positive = max((_specificity(s, code) for s in sel), default=-1)
        elif default_on:
            positive = 0
        positive = max([positive] + [_specificity(s, code) for s in ext])
        if code in ALWAYS_SELECTED:
            positive = max(positive, 0)
        # Off-by-default rules need an explicit, specific selector (not ALL or a short prefix).
        if not default_on and positive >= 0 and positive < len(code):
            explicit = [s for s in sel + ext if s == code]
            if not explicit:
                positive = -1
        negative = max((_specificity(s, code) for s in ign), default=-1)
        if positive >= 0 and positive > negative:
            result.append(code)
    return result


def _known_codes() -> Tuple[Dict[str, bool], Tuple[str, ...]]:
    """(code -> enabled by default, reserved codes) of the rule registry."""
    from amp_lint.data.catalog import ON_BY_DEFAULT, RESERVED_CODES

    return dict(ON_BY_DEFAULT), RESERVED_CODES


def reserved_selector_warnings(selectors: Iterable[str]) -> List[str]:
    """One message per selector that matches only reserved codes (planned rules): it is valid,
    but selects or ignores nothing yet. Unknown selectors are left to the validation."""
    known, reserved = _known_codes()
    out: List[str] = []
    for selector in selectors:
        sel = selector.strip().upper()
        if not sel or sel == "ALL" or any(code.startswith(sel) for code in known):
            continue
        matched = [code for code in reserved if code.startswith(sel)]
        if not matched:
            continue
        if matched == [sel]:
            from amp_lint.data.catalog import CATALOG_BY_CODE

            entry = CATALOG_BY_CODE.get(sel)
            name = f" ({entry.name})" if entry else ""
            message = f"{sel}{name} is reserved for a planned rule that is not implemented yet; it has no effect"
        else:
            message = (f"{sel} matches only reserved codes ({', '.join(matched)}) of planned rules that are not "
                       f"implemented yet; it has no effect")
        if message not in out:
            out.append(message)
    return out


def with_cli_selection(settings: Settings, select: Sequence[str] = (), extend_select: Sequence[str] = (),
                       ignore: Sequence[str] = ()) -> Settings:
    """``settings`` with the command line's selectors applied on top, as ruff layers them.

    The configuration's selection is resolved first; then ``--select`` replaces it entirely
    (the configured ``ignore``/``extend-select`` go with it), while ``--extend-select`` and
    ``--ignore`` alone add to or remove from it (the most specific CLI selector decides, ``ignore``
    winning a tie). The result is stored as explicit codes, so it no longer depends on order.
    """
    if not (select or extend_select or ignore):
        return settings
    known, reserved = _known_codes()
    if select:
        codes = set(enabled_codes(known, select, extend_select, ignore, reserved))
    else:
        codes = set(enabled_codes(known, settings.select, settings.extend_select, settings.ignore, reserved))
        ext = [_validate_selector(s, known, reserved) for s in extend_select]
        ign = [_validate_selector(s, known, reserved) for s in ignore]
        for code, default_on in known.items():
            positive = max((_specificity(s, code) for s in ext), default=-1)
            if not default_on and 0 <= positive < len(code):
                positive = -1  # off-by-default rules need their exact code
            negative = max((_specificity(s, code) for s in ign), default=-1)
            if positive >= 0 and positive > negative:
                codes.add(code)
            elif negative >= 0:
                codes.discard(code)
    # ``ignore = ALL`` turns everything off that is not selected by its exact code.
    return replace(settings, select=tuple(c for c in known if c in codes), extend_select=(), ignore=("ALL",))


def ignored_for_path(settings: Settings, relpath: str) -> Tuple[str, ...]:
    """Selectors from ``per-file-ignores`` whose pattern matches ``relpath``."""
    out: List[str] = []
    name = relpath.rsplit("/", 1)[-1]
    for pattern, codes in settings.per_file_ignores:
        if fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(name, pattern):
            out.extend(codes)
    return tuple(out)


# -- loading ----------------------------------------------------------------------------------

_LIST_KEYS = {"select", "ignore", "extend-select", "exclude", "extend-exclude"}
_SELECTOR_KEYS = {"select", "ignore", "extend-select"}
_KEYS = _LIST_KEYS | {"per-file-ignores", "unsafe-fixes", "preview", "torch-version", "device", "min-dim"}


def check_selectors(selectors: Iterable[str], where: str) -> None:
    """Raise ConfigError naming ``where`` for the first selector that matches no rule code."""
    known, reserved = _known_codes()
    for selector in selectors:
        try:
            _validate_selector(selector, known, reserved)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


def find_config(start: Path) -> Optional[Path]:
    """The nearest amp-lint.toml, or pyproject.toml with a [tool.amp-lint] table, at or above start."""
    start = start.resolve()
    for directory in [start] + list(start.parents):
        candidate = directory / "amp-lint.toml"
        if candidate.is_file():
            return candidate
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                if "amp-lint" in text:
                    return candidate  # broken, but meant for us: load_table names the error
                continue
            if "amp-lint" in data.get("tool", {}):
                return candidate
    return None


def load_table(path: Path) -> Dict[str, Any]:
    """The amp-lint table of a config file (raises ConfigError with a one-line reason)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {str(exc).splitlines()[0]}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("amp-lint", {})
    else:
        table = data.get("tool", {}).get("amp-lint", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.amp-lint] must be a table")
    return table


def settings_from_table(table: Dict[str, Any], path: Path, base: Settings = Settings()) -> Settings:
    """Validate a config table and fold it into ``base``."""
    changes: Dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}: [tool.amp-lint] {key}"
        if key not in _KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.amp-lint]")
        attr = key.replace("-", "_")
        if key in _LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: expected a list of strings")
            if key in _SELECTOR_KEYS:
                check_selectors(value, where)
            changes[attr] = tuple(value)  # like ruff, ``exclude`` replaces the defaults
        elif key == "per-file-ignores":
            if not isinstance(value, dict) or not all(
                isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
            ):
                raise ConfigError(f"{where}: expected a table of glob = [codes]")
            for pattern, codes in value.items():
                check_selectors(codes, f"{where} {pattern!r}")
            changes[attr] = tuple((k, tuple(v)) for k, v in value.items())
        elif key in ("unsafe-fixes", "preview"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false")
            changes[attr] = value
        elif key == "torch-version":
            if isinstance(value, float):
                # TOML 2.10 is the float 2.1: a version must be quoted to mean what it says.
                raise ConfigError(f"{where}: expected a quoted version string like \"2.4\", got the number {value!r}")
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise ConfigError(f"{where}: expected a version string like \"2.4\"")
            try:
                parse_version(str(value))
            except ConfigError:
                raise ConfigError(f"{where}: invalid version {value!r}") from None
            changes[attr] = str(value)
        elif key == "device":
            if value not in DEVICES:
                raise ConfigError(f"{where}: expected one of {', '.join(DEVICES)}")
            changes[attr] = value
        elif key == "min-dim":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{where}: expected a positive integer")
            changes[attr] = value
    changes["project_root"] = str(path.parent)
    return replace(base, **changes)


def load_settings(config: Optional[str], isolated: bool, start: Path) -> Tuple[Settings, Optional[Path]]:
    """Settings from ``--config``, else the nearest config file at or above ``start`` (none when
    ``--isolated``). Without a config file the project root is the working directory, as in ruff."""
    if isolated:
        return Settings(project_root=str(Path.cwd().resolve())), None
    path = Path(config) if config else find_config(start)
    if path is None:
        return Settings(project_root=str(Path.cwd().resolve())), None
    if config and not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    return settings_from_table(load_table(path), path), path
