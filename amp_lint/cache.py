"""The result cache: ``.amp_lint_cache/`` at the project root.

One index file per *configuration* (amp-lint version, a fingerprint of amp-lint's own code,
libcst's version, ``Settings.cache_key()`` and the output options that change findings), named
by a digest of all of them. Its entries are keyed by (root-relative path, kind) and hold a digest
and a value: the file's ``FileReport`` minus its source text (kind "report"), valid for a digest of
every file of the run (findings depend on the whole program). One more entry, ("<config files>",
"reads"), holds the digests of the config files the analysis read (see :mod:`amp_lint.runner`).

A hit needs the same bytes, the same path and the same configuration; anything else is a miss,
and the file is analysed again. Unreadable, truncated, foreign or tampered cache files are
ignored (a miss), never an error: the index is signed with an HMAC whose key lives in the
user's cache directory, outside the project, so a pickle committed into a repository is never
loaded. Writes are atomic (temp file + rename); concurrent runs at worst lose each other's
entries.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple

CACHE_DIR_NAME = ".amp_lint_cache"
STALE_DAYS = 30
FORMAT = 2  # 2: FileReport moved to amp_lint.findings
_MAGIC = b"amp-lint-cache\x00"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by amp-lint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)

EntryKey = Tuple[str, str]  # (root-relative posix path, kind)


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def _package_fingerprint() -> str:
    """Sizes and mtimes of amp-lint's own files: an edited rule invalidates the cache even
    when the version string stays the same (editable installs, development)."""
    package = Path(__file__).resolve().parent
    h = hashlib.blake2b(digest_size=16)
    for directory, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith((".py", ".toml", ".json", ".md")):
                continue
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            h.update(f"{os.path.relpath(path, package)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _libcst_version() -> str:
    """libcst's version, read without importing libcst (a run the cache answers never loads it)."""
    import importlib.util
    import re

    try:
        spec = importlib.util.find_spec("libcst")
        folder = os.path.dirname(spec.origin)  # type: ignore[union-attr, arg-type]
        with open(os.path.join(folder, "_version.py"), encoding="utf-8") as handle:
            found = re.search(r"""version\s*=\s*['"]([^'"]+)['"]""", handle.read())
    except (OSError, AttributeError, TypeError, ValueError, ImportError):  # pragma: no cover - other layouts
        return "unknown"
    return found.group(1) if found else "unknown"


def _secret() -> Optional[bytes]:
    """A per-user key for signing cache files (None: the cache is not used)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "amp-lint", "cache-secret")
    try:
        with open(path, "rb") as handle:
            key = handle.read()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        key = os.urandom(32)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".secret.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)  # first writer wins; never replace a key others already use
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        with open(path, "rb") as handle:
            key = handle.read()
        return key if len(key) >= 32 else None
    except OSError:
        return None


def config_digest(settings: Any, options_key: str) -> str:
    """Everything except the file itself that can change a file's report."""
    import amp_lint

    parts = [
        f"format={FORMAT}",
        f"amp-lint={amp_lint.__version__}",
        f"code={_package_fingerprint()}",
        f"libcst={_libcst_version()}",
        f"python={sys.version_info[0]}.{sys.version_info[1]}",
        f"settings={settings.cache_key()}",
        f"options={options_key}",
    ]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


class Cache:
    """Entries for one configuration under ``<root>/.amp_lint_cache``."""

    def __init__(self, root: str, settings: Any, options_key: str) -> None:
        self.root = Path(root)
        self.directory = self.root / CACHE_DIR_NAME
        self.digest = config_digest(settings, options_key)
        self.path = self.directory / f"{self.digest}.cache"
        self._key = _secret()
        self._entries: Dict[EntryKey, Tuple[str, Any]] = {}
        self._updates: Dict[EntryKey, Tuple[str, Any]] = {}
        self._loaded = False

    # -- reading ------------------------------------------------------------------------------
    def _load(self) -> None:
        self._loaded = True
        if self._key is None:
            return
        try:
            blob = self.path.read_bytes()
        except OSError:
            return
        self._entries = self._decode(blob)
        if self._entries:
            try:
                os.utime(self.path)  # in use: keep it from being pruned as stale
            except OSError:
                pass

    def _decode(self, blob: bytes) -> Dict[EntryKey, Tuple[str, Any]]:
        head = len(_MAGIC) + 32
        if self._key is None or len(blob) < head or not blob.startswith(_MAGIC):
            return {}
        mac, payload = blob[len(_MAGIC):head], blob[head:]
        if not hmac.compare_digest(mac, hmac.new(self._key, payload, hashlib.sha256).digest()):
            return {}
        try:
            data = pickle.loads(payload)
        except Exception:  # a cache file from another amp-lint, or damaged: a miss
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
            return {}
        return data["entries"]

    def get(self, key: EntryKey, digest: str) -> Optional[Any]:
        """The cached report of ``key`` if the file's bytes still hash to ``digest``."""
        if not self._loaded:
            self._load()
        entry = self._entries.get(key)
        if not isinstance(entry, tuple) or len(entry) != 2 or entry[0] != digest:
            return None
        return entry[1]

    # -- writing ------------------------------------------------------------------------------
    def put(self, key: EntryKey, digest: str, report: Any) -> None:
        self._updates[key] = (digest, report)

    def save(self, present: Iterable[EntryKey] = ()) -> None:
        """Merge this run's entries into the index and write it (errors are ignored).

        Entries of files that no longer exist are dropped; ``present`` lists keys known to exist.
        """
        if self._key is None or not self._updates:
            return
        try:
            self._ensure_directory()
            try:
                on_disk = self._decode(self.path.read_bytes())  # merge with concurrent runs
            except OSError:
                on_disk = {}
            known = set(present)
            merged: Dict[EntryKey, Tuple[str, Any]] = {}
            for key, entry in on_disk.items():
                if key in known or self._exists(key):
                    merged[key] = entry
            merged.update(self._updates)
            payload = pickle.dumps({"format": FORMAT, "entries": merged}, protocol=pickle.HIGHEST_PROTOCOL)
            mac = hmac.new(self._key, payload, hashlib.sha256).digest()
            fd, tmp = tempfile.mkstemp(dir=str(self.directory), prefix=".tmp-", suffix=".cache")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_MAGIC + mac + payload)
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            self._entries = merged
            self._updates = {}
            self._prune()
        except Exception:  # a read-only tree, a full disk, ...: run without a cache
            return

    def _prune(self) -> None:
        """Drop index files of other configurations (older amp-lint, other settings) unused for
        ``STALE_DAYS``: every write refreshes the mtime of the index in use."""
        cutoff = time.time() - STALE_DAYS * 86400
        for path in self.directory.glob("*.cache"):
            try:
                if path != self.path and path.stat().st_mtime < cutoff:
                    path.unlink()
            except OSError:
                pass

    def _exists(self, key: EntryKey) -> bool:
        relpath = key[0] if isinstance(key, tuple) and key and isinstance(key[0], str) else None
        if relpath is None:
            return False
        path = Path(relpath)
        return (path if path.is_absolute() else self.root / path).is_file()

    def _ensure_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(_CACHEDIR_TAG, encoding="utf-8")
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by amp-lint automatically.\n*\n", encoding="utf-8")
