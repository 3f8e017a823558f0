"""A cheap name check of a fixed module against the original (pyflakes' two questions).

* Names read that nothing binds: a read in any scope that resolves to the module (implicit or
  ``global``) and that no module-level binding, ``global`` assignment or builtin provides.
  Function locals, parameters, closures, class bodies and comprehension variables are resolved by
  Python's own :mod:`symtable`.
* Imports that nothing reads: an imported name that no scope reads and ``__all__`` does not
  list (``__future__`` imports excepted).

Only differences matter: a fix is refused when its result reads a name the original did not
leave unbound, or leaves an import unused that the original read. A module whose bindings are
dynamic (``from x import *``, ``globals()``, ``exec``, a module ``__getattr__``) has no reliable
answer to the first question, so unbound names are not checked there.
"""
from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set

#: Names every module may read without binding them.
MODULE_NAMES = frozenset({
    "__name__", "__file__", "__doc__", "__package__", "__spec__", "__loader__", "__builtins__",
    "__path__", "__annotations__", "__dict__", "__cached__", "__debug__",
})
BUILTINS = frozenset(dir(builtins)) | MODULE_NAMES
_DYNAMIC = ("globals", "locals", "vars", "exec", "__getattr__", "__builtins__")


@dataclass(frozen=True)
class NameFacts:
    """What the check compares: unbound reads (None when dynamic) and unused imports."""

    unbound: Optional[FrozenSet[str]]
    unused_imports: Dict[str, str] = field(default_factory=dict)  # bound name -> import statement


def _import_statement(node: ast.AST, alias: ast.alias) -> str:
    spelled = alias.name + (f" as {alias.asname}" if alias.asname else "")
    if isinstance(node, ast.ImportFrom):
        return f"from {'.' * node.level}{node.module or ''} import {spelled}"
    return f"import {spelled}"


def name_facts(text: str) -> Optional[NameFacts]:
    """The facts of ``text``, or None when Python cannot compile it."""
    try:
        tree = ast.parse(text)
        top = symtable.symtable(text, "<amp-lint>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    imports: Dict[str, str] = {}
    dynamic = False
    exported: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for alias in node.names:
                if alias.name == "*":
                    dynamic = True
                    continue
                bound = alias.asname or alias.name.split(".")[0]
                imports.setdefault(bound, _import_statement(node, alias))
        elif isinstance(node, ast.Name) and node.id in _DYNAMIC:
            dynamic = True
        elif isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            dynamic = True
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                exported.update(c.value for c in ast.walk(node.value)
                                if isinstance(c, ast.Constant) and isinstance(c.value, str))

    module_bound: Set[str] = set()
    global_reads: Set[str] = set()
    referenced: Set[str] = set()
    stack: List[symtable.SymbolTable] = [top]
    while stack:
        table = stack.pop()
        is_top = table is top
        for symbol in table.get_symbols():
            name = symbol.get_name()
            binds = symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace() or symbol.is_parameter()
            if symbol.is_referenced():
                referenced.add(name)
                if (is_top and not binds) or (not is_top and symbol.is_global()):
                    global_reads.add(name)
            if is_top and binds:
                module_bound.add(name)
            elif not is_top and symbol.is_declared_global() and symbol.is_assigned():
                module_bound.add(name)
        stack.extend(table.get_children())
    unbound = None if dynamic else frozenset(global_reads - module_bound - BUILTINS)
    unused = {name: stmt for name, stmt in imports.items() if name not in referenced and name not in exported}
    return NameFacts(unbound, unused)


def new_problems(before: Optional[NameFacts], after: Optional[NameFacts]) -> Dict[str, str]:
    """What ``after`` (a fixed module) has that ``before`` had not: item -> reason in a few words."""
    if before is None:
        return {}  # nothing to compare with
    if after is None:
        return {"compile": "the result does not compile"}
    out: Dict[str, str] = {}
    if before.unbound is not None and after.unbound is not None:
        for name in sorted(after.unbound - before.unbound):
            out[f"unbound:{name}"] = f"it would read `{name}`, which nothing binds"
    for name in sorted(set(after.unused_imports) - set(before.unused_imports)):
        out[f"unused:{name}"] = f"it would leave `{after.unused_imports[name]}` unused"
    return out


def describe(problems: Dict[str, str]) -> str:
    """The reasons of :func:`new_problems` as one phrase."""
    return "; ".join(problems.values())
