"""What ``verify``/``trace`` run: a script or a module, its local files, a rewritten mirror, and
one-line explanations of why a run failed."""
from __future__ import annotations

import ast
import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from amp_lint.runtime.harness import RunResult
from amp_lint.runtime.instrument import EXIT_NO_CUDA

#: Import closures stop after this many files (a script inside a huge source tree).
MAX_LOCAL_FILES = 300


class TargetError(Exception):
    """The script or module cannot be found (a user error: one line, exit 2)."""


@dataclass(frozen=True)
class Target:
    """``python SCRIPT ARGS`` or ``python -m MODULE ARGS``, started in ``cwd``."""

    file: Path  #: the file that runs (the script, or the module's file)
    args: Tuple[str, ...]
    cwd: Path
    module: Optional[str] = None
    #: What the user typed, for messages.
    shown: str = ""

    @property
    def root(self) -> Path:
        """The directory imports resolve against: the script's, or the cwd for ``-m``."""
        return self.cwd if self.module else self.file.parent

    def run_kwargs(self) -> dict:
        """``harness.run_script`` arguments: (path, *args) plus keywords."""
        if self.module:
            return {"path": None, "module": self.module, "cwd": self.cwd}
        return {"path": self.file, "module": None, "cwd": self.cwd}


def resolve(script: Optional[str], module: Optional[str], args: Sequence[str], cwd: Optional[Path] = None) -> Target:
    """The target named on the command line; raises :class:`TargetError` when it does not exist."""
    cwd = (cwd or Path.cwd()).resolve()
    if (script is None) == (module is None):
        raise TargetError("give a SCRIPT or -m MODULE (not both)")
    if module is not None:
        if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", module):
            raise TargetError(f"{module!r} is not a module name")
        base = cwd.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__main__.py"):
            if candidate.is_file():
                return Target(candidate, tuple(args), cwd, module, f"-m {module}")
        raise TargetError(f"module {module!r} not found under {cwd} (looked for {base}.py and {base}/__main__.py)")
    path = (cwd / script).resolve()
    if not path.exists():
        raise TargetError(f"{script}: no such file")
    if path.is_dir():
        raise TargetError(f"{script}: is a directory (give the training script)")
    return Target(path, tuple(args), cwd, None, script)


def local_files(target: Target) -> List[Path]:
    """The target's file and the local modules it imports, transitively (read statically).

    Modules resolve against the target's root (and packages relative to their importer), as
    Python's ``sys.path[0]`` does; anything installed is not followed.
    """
    root = target.root
    seen: Dict[Path, None] = {}
    queue = [target.file.resolve()]
    while queue and len(seen) < MAX_LOCAL_FILES:
        path = queue.pop()
        if path in seen:
            continue
        seen[path] = None
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    queue.extend(_module_files(root, alias.name.split(".")))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = path.parent
                    for _ in range(node.level - 1):
                        base = base.parent
                    parts = (node.module or "").split(".") if node.module else []
                    queue.extend(_module_files(base, parts, package_ok=True))
                    for alias in node.names:
                        queue.extend(_module_files(base, parts + [alias.name]))
                elif node.module:
                    parts = node.module.split(".")
                    queue.extend(_module_files(root, parts))
                    for alias in node.names:
                        queue.extend(_module_files(root, parts + [alias.name]))
    return [p for p in seen if _under(p, root)]


def _module_files(base: Path, parts: List[str], package_ok: bool = False) -> List[Path]:
    """Files importing ``parts`` from ``base`` executes: package ``__init__``s and the module."""
    out: List[Path] = []
    if not parts or not all(parts):
        init = base / "__init__.py"
        return [init.resolve()] if package_ok and init.is_file() else []
    for i in range(1, len(parts) + 1):
        package = base.joinpath(*parts[:i])
        init = package / "__init__.py"
        if init.is_file():
            out.append(init.resolve())
        elif i == len(parts) and package.with_suffix(".py").is_file():
            out.append(package.with_suffix(".py").resolve())
        elif not package.is_dir():
            break
    return out


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def mirror(target: Target, changed: Dict[str, bytes], dest: Path) -> Target:
    """The target run from ``dest``: the rewritten files written there, every other entry of its
    root a symlink to the original (data files, other modules), ``__pycache__`` left out."""
    root = target.root.resolve()
    changed_paths = {Path(p).resolve(): data for p, data in changed.items()}
    _mirror_dir(root, dest, changed_paths)
    if target.module:
        return replace(target, cwd=dest, file=dest / target.file.resolve().relative_to(root))
    return replace(target, file=dest / target.file.name)


def _mirror_dir(src: Path, dst: Path, changed: Dict[Path, bytes]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for child in sorted(src.iterdir()):
        if child.name == "__pycache__":
            continue
        target = dst / child.name
        resolved = child.resolve()
        if resolved in changed and not child.is_symlink():
            target.write_bytes(changed[resolved])
        elif child.is_dir() and not child.is_symlink() and any(_under(p, child) for p in changed):
            _mirror_dir(child, target, changed)
        else:
            try:
                os.symlink(child, target, target_is_directory=child.is_dir())
            except OSError:  # no symlinks here (Windows without the privilege): copy instead
                if child.is_dir():
                    _mirror_dir(child, target, changed)
                else:
                    shutil.copy2(child, target)


# -- why a run failed ----------------------------------------------------------------------------

_CUDA_PATTERNS = (
    "Torch not compiled with CUDA enabled", "Found no NVIDIA driver", "No CUDA GPUs are available",
    "no CUDA-capable device", "CUDA driver version is insufficient", "Attempting to deserialize object on a CUDA",
    "CUDA is not available",
)
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b:?.*)$")


def last_exception(result: RunResult) -> Optional[str]:
    """The ``Type: message`` line of the traceback the script died with, if any."""
    for line in reversed(result.stderr.rstrip().splitlines()):
        m = _EXCEPTION_LINE.match(line.strip())
        if m:
            return m.group(1)
    return result.instrumentation.get("uncaught_exception")


def failure(result: RunResult) -> Optional[str]:
    """None when the run ended normally (or at the step limit); else why, in one line."""
    if result.timed_out:
        return f"timed out after {result.timeout_s:g} s (raise --timeout, or lower --steps)"
    if result.returncode == 0:
        return None
    if result.returncode == EXIT_NO_CUDA:
        return "--device cuda was given, but CUDA is not available here"
    exc = last_exception(result) or f"exited with status {result.returncode}"
    if any(p in result.stderr for p in _CUDA_PATTERNS):
        return (f"the script needs CUDA and there is none here ({exc}); give it a CPU device "
                "(e.g. `-- --device cpu`) or run on a GPU")
    m = re.search(r"FileNotFoundError: .*?No such file or directory: '([^']*)'", result.stderr)
    if m:
        return f"missing file {m.group(1)!r} (data the script reads?): run from the directory it expects, or pass its path"
    m = re.search(r"ModuleNotFoundError: No module named '([^']*)'", result.stderr)
    if m:
        return f"the script imports {m.group(1)!r}, which is not installed ({exc})"
    return exc


def environmental(result: RunResult) -> bool:
    """The run failed for a reason outside the code (time, device, files, packages)."""
    if result.timed_out or result.returncode == EXIT_NO_CUDA:
        return True
    text = result.stderr
    return any(p in text for p in _CUDA_PATTERNS) or "FileNotFoundError" in text or "ModuleNotFoundError" in text


def display_path(path: str, cwd: Optional[Path] = None) -> str:
    """``path`` relative to the cwd when it is below it."""
    try:
        return str(Path(path).resolve().relative_to((cwd or Path.cwd()).resolve()))
    except ValueError:
        return str(path)
