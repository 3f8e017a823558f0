"""The program being analysed: its source modules, how imports resolve, and what each
function and class is.

Imports resolve as Python would, from the file system rather than from where a run starts: an
absolute import is looked up from the importing script's own folder, the folders a file adds
with ``sys.path.insert(...)``, the project root and its ``src/``; relative imports from the
file's package. Whatever does not resolve to a file of the project is an external name
(``torch.nn``, ``transformers``), which the interpreter knows through its tables.
"""
from __future__ import annotations

import ast
import bisect
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from amp_lint.data.training import KNOWN_BY_NAME, MODELLED_LIBRARIES
from amp_lint.semantics.values import Value

Scope = ast.AST  # a Module, FunctionDef, AsyncFunctionDef or Lambda node


#: where a ``global`` or ``nonlocal`` statement may begin (a file with none has no declarations)
_DECLARATION = re.compile(r"(?:^|[;:])[ \t]*(?:global|nonlocal)[ \t\\]", re.MULTILINE)


@dataclass(eq=False)
class SourceModule:
    """One analysed file."""

    path: str  # as reported
    relpath: str  # posix path relative to the project root
    tree: ast.Module
    #: extra import roots (posix, relative to the project root) the file adds to sys.path
    extra_roots: Tuple[str, ...] = ()
    env: Dict[str, Value] = field(default_factory=dict)
    state: str = "new"  # new / running / done
    functions: List["FunctionInfo"] = field(default_factory=list)
    classes: List["ClassInfo"] = field(default_factory=list)
    #: line -> text, for evidence and messages (filled lazily from the source)
    source: Optional[str] = None
    #: module constants a top-level ``exec(...)``/``globals().update(...)`` may rebind (nanoGPT's
    #: ``exec(open('configurator.py').read())``): their values stay, but no branch is decided on them
    overridable: Set[str] = field(default_factory=set)
    #: memo of texts derived from this module's nodes (branch conditions), by kind and node id
    texts: Dict[Tuple[str, int], Any] = field(default_factory=dict, repr=False)

    @property
    def folder(self) -> str:
        parent = str(PurePosixPath(self.relpath).parent)
        return "" if parent == "." else parent

    @property
    def is_package(self) -> bool:
        return PurePosixPath(self.relpath).name == "__init__.py"

    @cached_property
    def is_script(self) -> bool:
        """Whether the file is meant to be run: it has an ``if __name__ == "__main__":`` block, or
        its top level loops (a training script written without one)."""
        return any(isinstance(stmt, ast.If) and is_main_guard(stmt.test)
                   or isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)) for stmt in self.tree.body)

    @cached_property
    def settled_fields(self) -> Set[Tuple[str, str]]:
        """(class, attribute) of each field whose value an object holds from its construction on:
        every ``self.<attribute> = ...`` in the class's body is in ``__init__`` or sets one constant
        (``self.qk_float = True``). A field a method sets otherwise (``self._is_parallel = True`` in
        a method a library calls), or that the file stores other than through ``self`` in a class
        (``model.flag = ...``, ``setattr``, an unpacking or loop target), is left out."""
        truths: Dict[Tuple[str, str], Optional[bool]] = {}
        outside_init: Set[Tuple[str, str]] = set()
        spoilt: Set[str] = set()

        def stores(node: ast.AST) -> Iterator[Tuple[ast.Attribute, Optional[ast.AST]]]:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute):
                        yield target, None if isinstance(node, ast.AugAssign) else node.value
                    else:
                        yield from ((sub, None) for sub in ast.walk(target) if isinstance(sub, ast.Attribute))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)):
                yield from ((sub, None) for sub in ast.walk(node.target) if isinstance(sub, ast.Attribute))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        yield from ((sub, None) for sub in ast.walk(item.optional_vars)
                                    if isinstance(sub, ast.Attribute))

        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                for method in node.body:
                    for sub in ast.walk(method):
                        for target, value in stores(sub):
                            if not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                                continue
                            key = (node.name, target.attr)
                            truth = bool(value.value) if isinstance(value, ast.Constant) else None
                            truths[key] = truth if truths.get(key, truth) == truth else None
                            if getattr(method, "name", None) != "__init__":
                                outside_init.add(key)
            for target, _ in stores(node):
                if not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                    spoilt.add(target.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                spoilt.add(str(node.args[1].value))
        return {key for key, truth in truths.items()
                if key[1] not in spoilt and (key not in outside_init or truth is not None)}

    @cached_property
    def imported_names(self) -> Set[str]:
        """Every name its import statements mention (modules, their parts, imported names)."""
        found: Set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.update(alias.name.split("."))
            elif isinstance(node, ast.ImportFrom):
                found.update((node.module or "").split("."))
                found.update(alias.name for alias in node.names)
        return found

    @cached_property
    def declaration_lines(self) -> Optional[List[int]]:
        """The lines where a ``global`` or ``nonlocal`` statement may begin, in order (None: the
        source is unknown, any line may)."""
        if self.source is None:
            return None
        return [self.source.count("\n", 0, m.start()) + 1 for m in _DECLARATION.finditer(self.source)]

    def may_declare(self, first: int, last: int) -> bool:
        """Whether a ``global`` or ``nonlocal`` statement may begin between lines ``first`` and ``last``."""
        lines = self.declaration_lines
        if lines is None:
            return True
        at = bisect.bisect_left(lines, first)
        return at < len(lines) and lines[at] <= last

    @property
    def name(self) -> str:
        parts = list(PurePosixPath(self.relpath).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    def line(self, row: int) -> str:
        """Source line ``row`` (1-based), "" when unknown."""
        lines = self.__dict__.get("_lines")
        if lines is None:
            lines = self.__dict__["_lines"] = (self.source or "").splitlines()
        return lines[row - 1] if 0 < row <= len(lines) else ""

    def segment(self, node: ast.AST, limit: int = 60) -> str:
        """Source text of ``node`` (shortened), for messages and evidence."""
        text = None
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if start is not None and end is not None and self.source is not None:
            first = self.line(start).encode()
            if start == end:
                text = first[node.col_offset:node.end_col_offset].decode(errors="replace")  # type: ignore[attr-defined]
            else:
                parts = [first[node.col_offset:].decode(errors="replace")]  # type: ignore[attr-defined]
                parts.extend(self.line(r) for r in range(start + 1, end))
                parts.append(self.line(end).encode()[:node.end_col_offset].decode(errors="replace"))  # type: ignore[attr-defined]
                text = "\n".join(parts)
        if text is None:
            try:
                text = ast.unparse(node)
            except Exception:  # pragma: no cover - defensive
                text = "..."
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."


class Closure:
    """The names a nested function reads from the functions around it: the environment of the
    call that ran its ``def``, then that function's own closure. The environment is shared, not
    copied, as Python's cells are: a name the enclosing call binds later, or a ``nonlocal`` store
    of the nested function, is seen by both."""

    __slots__ = ("env", "parent")

    def __init__(self, env: Dict[str, Value], parent: Optional["Closure"]) -> None:
        self.env = env
        self.parent = parent

    def find(self, name: str) -> Optional["Closure"]:
        """The innermost environment that binds ``name``."""
        scope: Optional[Closure] = self
        while scope is not None:
            if name in scope.env:
                return scope
            scope = scope.parent
        return None


@dataclass(eq=False)
class FunctionInfo:
    """A ``def`` (or lambda) of the program."""

    node: ast.AST
    module: SourceModule
    qualname: str
    cls: Optional["ClassInfo"] = None
    #: a nested function's closure from the last run of its ``def``: read when it is analysed
    #: without a :class:`FuncVal` that carries its own (on its own, as a method of a local class)
    closure: Optional[Closure] = None
    #: parameter -> the value its default expression had when the ``def`` ran (``nn.LayerNorm``,
    #: ``partial(nn.LayerNorm, eps=1e-6)``): defaults that are not literals (those are read statically)
    default_values: Dict[str, Value] = field(default_factory=dict)
    #: parameter -> the values a ``pytest.mark.parametrize`` decorator runs the test with
    parametrized: Dict[str, Value] = field(default_factory=dict)
    contexts: int = 0  # analyses run (one per distinct calling context)
    exact_contexts: int = 0  # own contexts given, past the widening, to calls a widened context did not cover
    #: of an ``__init__``: (field, parameter) of each parameter it keeps as it is (read once)
    kept_fields: Optional[Tuple[Tuple[str, str], ...]] = None

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")

    @cached_property
    def declared(self) -> Tuple[Set[str], Set[str]]:
        """The names its ``global`` and its ``nonlocal`` statements declare (its own scope only)."""
        globals_: Set[str] = set()
        nonlocals: Set[str] = set()
        node = self.node
        if not self.module.may_declare(node.lineno, getattr(node, "end_lineno", None) or node.lineno):
            return globals_, nonlocals
        for node in walk_scope(self.node):
            if isinstance(node, ast.Global):
                globals_.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                nonlocals.update(node.names)
        return globals_, nonlocals


@dataclass(eq=False)
class ClassInfo:
    """A ``class`` of the program: bases, methods, and what its instances hold."""

    node: ast.ClassDef
    module: SourceModule
    qualname: str
    bases: Tuple[Value, ...] = ()
    methods: Dict[str, FunctionInfo] = field(default_factory=dict)
    #: class-body assignments (class attributes, dataclass defaults)
    class_attrs: Dict[str, Value] = field(default_factory=dict)
    #: instance attributes: the join of every ``self.<name> = ...`` seen in its methods
    fields: Dict[str, Value] = field(default_factory=dict)
    #: bumped whenever a field's value changes: a summary that read older fields is analysed again
    field_version: int = 0
    is_module: bool = False
    #: fields of a dataclass stored after an instance was built (``cfg.vocab_size = 50304``):
    #: reads of them go to the class's join, not to the instance's own value
    stored_fields: Set[str] = field(default_factory=set)
    #: of a dataclass: its fields in ``dataclasses`` order (name -> declaration and declaring class)
    #: and those its ``__post_init__`` sets (read once, at its first instantiation)
    dataclass_layout: Optional[Tuple[Dict[str, Tuple[ast.AnnAssign, "ClassInfo"]], Set[str]]] = None

    @property
    def name(self) -> str:
        return self.node.name


class ModuleIndex:
    """Where each project file is, for import resolution (posix paths relative to the root)."""

    def __init__(self, modules: Sequence[SourceModule]) -> None:
        self.by_relpath: Dict[str, SourceModule] = {m.relpath: m for m in modules}
        self.folders = set()
        for rel in self.by_relpath:
            parts = PurePosixPath(rel).parts[:-1]
            for i in range(1, len(parts) + 1):
                self.folders.add("/".join(parts[:i]))

    def _lookup(self, root: str, dotted: str) -> Optional[object]:
        """A module or (namespace) package folder for ``dotted`` under ``root``."""
        rel = dotted.replace(".", "/")
        base = f"{root}/{rel}" if root else rel
        found = self.by_relpath.get(base + ".py") or self.by_relpath.get(base + "/__init__.py")
        if found is not None:
            return found
        if base in self.folders:
            return Namespace(base)
        return None

    def resolve_absolute(self, importer: SourceModule, dotted: str) -> Optional[object]:
        if dotted.split(".", 1)[0] in KNOWN_BY_NAME:
            return None  # the library, also where the repository vendors a copy
        vendored = self._vendored_roots(importer) if dotted.split(".", 1)[0] in MODELLED_LIBRARIES else set()
        for root in self.roots(importer):
            if root in vendored:
                continue  # a vendored copy of a library the analysis knows: that library
            found = self._lookup(root, dotted)
            if found is not None:
                return found
        return None

    def resolve_relative(self, importer: SourceModule, level: int, dotted: str) -> Optional[object]:
        package = importer.folder
        for _ in range(level - 1):
            package = str(PurePosixPath(package).parent) if package else ""
            package = "" if package == "." else package
        if not dotted:
            return self.by_relpath.get(f"{package}/__init__.py" if package else "__init__.py") or Namespace(package)
        return self._lookup(package, dotted)

    def _vendored_roots(self, importer: SourceModule) -> Set[str]:
        """The sub-project roots of :meth:`_setup_roots` that are no other kind of root: where a
        library the analysis knows is a vendored copy, not the package the scripts import."""
        return set(self._setup_roots(importer, self._base_roots(importer))) - set(self._package_roots(importer))

    def _setup_roots(self, importer: SourceModule, before: Sequence[str]) -> List[str]:
        """The folders above ``importer`` with a ``setup.py``, nearest first, that are not among the
        roots ``before``: a sub-project whose package its install puts on the path
        (``video/tools/train.py`` importing ``video/slowfast``)."""
        folder = importer.folder
        return [str(parent) for parent in PurePosixPath(folder).parents
                if folder and str(parent) != "." and str(parent) not in before
                and f"{parent}/setup.py" in self.by_relpath]

    def _base_roots(self, importer: SourceModule) -> List[str]:
        """The script's folder (or none, for a module of a package), ``sys.path`` folders it adds,
        the root and ``src``."""
        roots: List[str] = []
        folder = importer.folder
        own = folder if not folder or importer.is_script or (folder + "/__init__.py") not in self.by_relpath else None
        for root in (own, *importer.extra_roots, "", "src"):
            if root is not None and root not in roots:
                roots.append(root)
        return roots

    def roots(self, importer: SourceModule) -> List[str]:
        """Import roots for ``importer``, first match wins (script folder first, as Python). A
        module of a package that is not run as a script does not see its own folder: Python 3
        imports ``torch`` from ``pkg/utils/generation.py`` as the library, not ``pkg/utils/torch.py``."""
        roots = self._base_roots(importer)
        roots.extend(self._setup_roots(importer, roots))
        roots.extend(root for root in self._package_roots(importer) if root not in roots)
        return roots

    def _package_roots(self, importer: SourceModule) -> List[str]:
        """For a file inside a package, imported by its package name: the folders above the package."""
        found: List[str] = []
        folder = importer.folder
        while folder and (folder + "/__init__.py") in self.by_relpath:
            folder = str(PurePosixPath(folder).parent)
            folder = "" if folder == "." else folder
            found.append(folder)
        return found


@dataclass(frozen=True)
class Namespace:
    """A folder without ``__init__.py`` reached by an import (a namespace package)."""

    folder: str


def relpath_under(path: str, root: str) -> str:
    """Posix path of ``path`` relative to ``root`` (its basename when outside)."""
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # pragma: no cover - different drives on Windows
        rel = os.path.basename(path)
    if rel.startswith(".."):
        rel = os.path.basename(path)
    return PurePosixPath(*rel.split(os.sep)).as_posix()


def extra_roots(tree: ast.Module, relpath: str, source: Optional[str] = None) -> Tuple[str, ...]:
    """Folders a script adds to ``sys.path`` with ``sys.path.insert/append`` of a path built from
    ``__file__`` / ``os.path.dirname`` / ``..`` / literal folders (as posix paths under the root)."""
    out: List[str] = []
    folder = PurePosixPath(relpath).parent
    if source is not None and "sys.path" not in source:
        return ()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append") and _is_sys_path(node.func.value) and node.args):
            continue
        target = _path_expr(node.args[-1], folder)
        if target is not None:
            text = target.as_posix()
            text = "" if text == "." else text
            if not text.startswith("..") and text not in out:
                out.append(text)
    return tuple(out)


def _is_sys_path(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr == "path" and isinstance(expr.value, ast.Name) \
        and expr.value.id == "sys"


def _path_expr(expr: ast.AST, folder: PurePosixPath) -> Optional[PurePosixPath]:
    """Evaluate a path expression relative to the script's folder, where it is static."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        value = expr.value
        if value in (".", ""):
            return folder
        if not os.path.isabs(value):
            return _normalise(folder / value)
        return None
    if isinstance(expr, ast.Name) and expr.id == "__file__":
        return folder / "__file__"
    if isinstance(expr, ast.Call):
        func = ast.unparse(expr.func)
        if func in ("os.path.dirname", "dirname", "osp.dirname") and expr.args:
            inner = _path_expr(expr.args[0], folder)
            return inner.parent if inner is not None else None
        if func in ("os.path.abspath", "os.path.realpath", "osp.abspath", "abspath", "realpath",
                    "os.path.normpath", "str", "Path", "pathlib.Path") and expr.args:
            inner = _path_expr(expr.args[0], folder)
            return _normalise(inner) if inner is not None else None
        if func in ("os.path.join", "osp.join", "join") and expr.args:
            parts = [_path_expr(a, folder) if i == 0 else _literal(a) for i, a in enumerate(expr.args)]
            if parts[0] is None or any(p is None for p in parts[1:]):
                return None
            out = parts[0]
            for part in parts[1:]:
                out = out / part  # type: ignore[operator]
            return _normalise(out)  # type: ignore[arg-type]
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("resolve", "absolute"):
            return _path_expr(expr.func.value, folder)
    if isinstance(expr, ast.Attribute) and expr.attr == "parent":
        inner = _path_expr(expr.value, folder)
        return inner.parent if inner is not None else None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "parents":
        inner = _path_expr(expr.value.value, folder)
        if inner is not None and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
            for _ in range(expr.slice.value + 1):
                inner = inner.parent
            return inner
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        left = _path_expr(expr.left, folder)
        right = _literal(expr.right)
        if left is not None and right is not None:
            return _normalise(left / right)
    return None


def _literal(expr: ast.AST) -> Optional[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Attribute) and expr.attr == "pardir":
        return ".."
    return None


def _normalise(path: PurePosixPath) -> PurePosixPath:
    parts: List[str] = []
    for part in path.parts:
        if part == "__file__":
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            else:
                parts.append("..")
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def iter_scopes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every function and lambda node under ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


def is_main_guard(test: ast.AST) -> bool:
    """``__name__ == "__main__"``."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__"


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` (a function or module), not those of functions and classes nested in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
