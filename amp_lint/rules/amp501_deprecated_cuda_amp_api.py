"""AMP501 deprecated-cuda-amp-api."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

import libcst as cst

from amp_lint.data.deprecations import (
    AMP_REPLACEMENT_MODULES, COMPAT_FALLBACK_EXCEPTIONS, DEPRECATED_AMP_APIS, DEPRECATED_AMP_MODULES,
    DEPRECATIONS_SINCE, Deprecation,
)
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.values import Ext, options


class DeprecatedCudaAmpApi(Rule):
    code = "AMP501"
    name = "deprecated-cuda-amp-api"
    severity = Severity.MIGRATION
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API"
    fix_applicability = Applicability.SAFE
    tokens = ("cuda.amp", "cpu.amp", "import amp", "amp import", "amp as")
    docs = """
    ## What it does
    Finds calls, decorators, references and imports of `torch.cuda.amp.autocast`,
    `torch.cuda.amp.GradScaler`, `torch.cuda.amp.custom_fwd` / `custom_bwd` and
    `torch.cpu.amp.autocast` / `GradScaler`, however they are imported or aliased.

    ## Why is this bad?
    Since torch 2.4 these emit a `FutureWarning` on every call ("`torch.cuda.amp.autocast(args...)`
    is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.") and they will be
    removed. The device-generic `torch.amp` API takes the device type explicitly.

    ## Fix safety
    The fix is safe: it calls the replacement with the device the old API implied, passing the old
    positional arguments by keyword (the old order was `enabled, dtype, cache_enabled`; the new
    `autocast` takes `device_type` first). It is offered only when the configured `torch-version`
    has the replacement (`torch.amp.GradScaler` needs 2.3, `torch.amp.custom_fwd` 2.4). A bare
    reference such as `ac = torch.cuda.amp.autocast` is reported without a fix, since the
    replacement needs the device argument. Imports left unused by the fix are removed, including
    `import torch.cuda.amp as amp` once every `amp.` use is rewritten.

    Compatibility code is left alone: a deprecated call, reference or import inside an
    `except` branch (`ImportError`, `ModuleNotFoundError`, `AttributeError`, `TypeError`, `Exception`
    or a bare `except`) of a `try` whose body already uses the new `torch.amp` API is the fallback
    for old torch versions; rewriting it would break exactly the versions it exists for, so it is
    neither reported nor fixed (nor are uses of a name that such a fallback imports).

    ## Options
    `torch-version` (default "2.4"): below 2.4 nothing is deprecated yet, so the rule reports
    nothing; the fixes are also gated on it (see above).

    ## References
    - torch 2.13 `torch/cuda/amp/autocast_mode.py`, `torch/cuda/amp/grad_scaler.py` (deprecation warnings)
    - https://pytorch.org/docs/stable/amp.html
    """
    VALID = [
        Valid("""
        import torch
        with torch.amp.autocast("cuda", dtype=torch.float16):
            pass
        scaler = torch.amp.GradScaler("cuda")
        """),
        Valid("""
        from torch.amp import autocast
        with autocast("cpu"):
            pass
        """),
        Valid("""
        import torch
        with torch.autocast(device_type="cuda"):
            pass
        """),
        Valid("""
        def autocast():
            pass
        with autocast():
            pass
        """),
        Valid("""
        import torch
        try:
            scaler = torch.amp.GradScaler("cuda")
        except (AttributeError, TypeError):  # torch < 2.3
            scaler = torch.cuda.amp.GradScaler()
        """),
        Valid("""
        import torch
        try:
            from torch.amp import custom_fwd
            fwd = custom_fwd(device_type="cuda")
        except ImportError:
            from torch.cuda.amp import custom_fwd as fwd

        class F(torch.autograd.Function):
            @staticmethod
            @fwd
            def forward(ctx, x):
                return x
        """),
        Valid("""
        import torch
        try:
            with torch.autocast(device_type="cuda"):
                y = model(x)
        except Exception:
            with torch.cuda.amp.autocast():
                y = model(x)
        """),
        Valid("""
        import torch
        scaler = torch.cuda.amp.GradScaler()
        with torch.cuda.amp.autocast():
            pass
        """, settings={"torch_version": "2.3"}),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            scaler = torch.cuda.amp.GradScaler()
            with torch.cuda.amp.autocast():
                loss = model(x)
            """,
            expected="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            with torch.amp.autocast("cuda"):
                loss = model(x)
            """,
            count=2,
        ),
        Invalid(
            """
            import torch
            with torch.cuda.amp.autocast(False):
                pass
            """,
            expected="""
            import torch
            with torch.amp.autocast("cuda", enabled=False):
                pass
            """,
        ),
        Invalid(
            """
            import torch as T
            with T.cuda.amp.autocast(True, T.bfloat16):
                pass
            """,
            expected="""
            import torch as T
            with T.amp.autocast("cuda", enabled=True, dtype=T.bfloat16):
                pass
            """,
        ),
        Invalid(
            """
            from torch.cuda.amp import autocast, GradScaler
            scaler = GradScaler(enabled=True)
            with autocast(dtype=torch.float16):
                pass
            """,
            expected="""
            import torch
            scaler = torch.amp.GradScaler("cuda", enabled=True)
            with torch.amp.autocast("cuda", dtype=torch.float16):
                pass
            """,
            count=2,
        ),
        Invalid(
            """
            import torch
            from torch.cuda import amp
            with amp.autocast():
                pass
            """,
            expected="""
            import torch
            with torch.amp.autocast("cuda"):
                pass
            """,
        ),
        Invalid(
            """
            import torch
            class F(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd
                def forward(ctx, x):
                    return x
                @staticmethod
                @torch.cuda.amp.custom_bwd
                def backward(ctx, g):
                    return g
            """,
            expected="""
            import torch
            class F(torch.autograd.Function):
                @staticmethod
                @torch.amp.custom_fwd(device_type="cuda")
                def forward(ctx, x):
                    return x
                @staticmethod
                @torch.amp.custom_bwd(device_type="cuda")
                def backward(ctx, g):
                    return g
            """,
            count=2,
        ),
        Invalid(
            """
            import torch
            @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
            def f(x):
                return x
            """,
            expected="""
            import torch
            @torch.amp.custom_fwd(cast_inputs=torch.float32, device_type="cuda")
            def f(x):
                return x
            """,
        ),
        Invalid(
            """
            import torch
            with torch.cpu.amp.autocast(dtype=torch.bfloat16):
                pass
            """,
            expected="""
            import torch
            with torch.amp.autocast("cpu", dtype=torch.bfloat16):
                pass
            """,
        ),
        Invalid(
            """
            import torch
            ac = torch.cuda.amp.autocast
            """,
        ),
        Invalid(
            """
            import torch
            scaler = torch.cuda.amp.GradScaler(**amp_kwargs)
            """,
            expected="""
            import torch
            scaler = torch.amp.GradScaler("cuda", **amp_kwargs)
            """,
        ),
        Invalid(
            """
            import torch
            try:
                scaler = make_scaler()
            except (AttributeError, TypeError):
                scaler = torch.cuda.amp.GradScaler()
            """,
            expected="""
            import torch
            try:
                scaler = make_scaler()
            except (AttributeError, TypeError):
                scaler = torch.amp.GradScaler("cuda")
            """,
        ),
        Invalid(
            """
            import torch
            try:
                scaler = torch.amp.GradScaler("cuda")
            except ValueError:
                scaler = torch.cuda.amp.GradScaler(enabled=False)
            """,
            expected="""
            import torch
            try:
                scaler = torch.amp.GradScaler("cuda")
            except ValueError:
                scaler = torch.amp.GradScaler("cuda", enabled=False)
            """,
        ),
        Invalid(
            """
            import torch.cuda.amp as amp

            scaler = amp.GradScaler()
            with amp.autocast():
                pass
            """,
            expected="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            with torch.amp.autocast("cuda"):
                pass
            """,
            count=2,
        ),
        Invalid(
            """
            from torch.cuda.amp import autocast
            import os
            """,
            expected="""
            import os
            """,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.handled: Set[int] = set()
        self.imports: List[ast.AST] = []
        self.loads: Dict[str, int] = {}
        #: Below the deprecation there is nothing to report (or fix).
        self.active = ctx.settings.torch_at_least(DEPRECATIONS_SINCE)
        #: local names bound by imports inside compatibility fallbacks
        self.fallback_names: Set[str] = set()
        #: names assigned from something that mentions ``amp`` (``ac = torch.cuda.amp.autocast``)
        self.aliases: Set[str] = set()
        self._new_api: Dict[int, bool] = {}

    def deprecated(self, node: ast.AST) -> Optional[str]:
        """The deprecated API ``node`` stands for in some context it ran in (value-based: a
        parameter or local named ``autocast`` is not the import), unless it is compatibility code
        or the configured torch predates the deprecation."""
        if not self.active or self._in_fallback() or self._bound_by_fallback(node):
            return None
        for obs in self.ctx.observations(node):
            for option in options(obs.value(node)):
                if isinstance(option, Ext) and option.name in DEPRECATED_AMP_APIS and \
                        self.ctx.settings.torch_at_least(DEPRECATED_AMP_APIS[option.name].deprecated_since):
                    return option.name
        return None

    # -- compatibility code ------------------------------------------------------------------
    def _in_fallback(self) -> bool:
        """Whether the node being visited lies in an ``except`` branch that is a fallback for old
        torch: it catches what a missing API raises, and its ``try`` body uses the new API."""
        stack = self.ctx.stack
        for index in range(len(stack) - 2, 0, -1):
            handler, owner = stack[index], stack[index - 1]
            if isinstance(handler, ast.ExceptHandler) and isinstance(owner, ast.Try):
                if _catches_missing_api(handler) and self._uses_new_api(owner):
                    return True
        return False

    def _bound_by_fallback(self, node: ast.AST) -> bool:
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in self.fallback_names

    def _uses_new_api(self, node: ast.Try) -> bool:
        known = self._new_api.get(id(node))
        if known is None:
            known = self._new_api[id(node)] = any(self._is_new_api(n) for stmt in node.body for n in ast.walk(stmt))
        return known

    def _is_new_api(self, node: ast.AST) -> bool:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module in AMP_REPLACEMENT_MODULES:
                return True
            return node.module == "torch" and any(a.name in ("amp", "autocast") for a in node.names)
        if isinstance(node, (ast.Attribute, ast.Name)):
            for obs in self.ctx.facts.observations(node, self.ctx.scope):
                for option in options(obs.value(node)):
                    if isinstance(option, Ext) and (option.name == "torch.autocast"
                                                    or option.name.split(".")[:2] == ["torch", "amp"]):
                        return True
        return False

    # -- calls and decorators --------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        qualified = self.deprecated(node.func)
        if qualified is None:
            return
        self.handled.add(id(node.func))
        deprecation = DEPRECATED_AMP_APIS[qualified]
        plan = None
        if self._available(deprecation) and not any(isinstance(a, ast.Starred) for a in node.args):
            plan = FixPlan(f"Use `{deprecation.replacement}`", Applicability.SAFE,
                           lambda fctx: self._call_fix(fctx, node, deprecation))
        self._report(node, qualified, deprecation, plan)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for target in node.decorator_list:
            self.ctx.stack.append(target)  # the decorator is what is visited for the fallback check
            if isinstance(target, ast.Call):
                self.ctx.stack.pop()
                continue
            qualified = self.deprecated(target)
            self.ctx.stack.pop()
            if qualified is None:
                continue
            self.handled.add(id(target))
            deprecation = DEPRECATED_AMP_APIS[qualified]
            plan = None
            if self._available(deprecation):
                plan = FixPlan(f"Use `{deprecation.replacement}`", Applicability.SAFE,
                               lambda fctx, target=target, deprecation=deprecation: self._decorator_fix(
                                   fctx, target, deprecation))
            self._report(target, qualified, deprecation, plan)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # -- bare references ---------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._reference(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads[node.id] = self.loads.get(node.id, 0) + 1
        self._reference(node)

    def _reference(self, node: ast.AST) -> None:
        if id(node) in self.handled or not isinstance(getattr(node, "ctx", None), ast.Load):
            return
        name = node.attr if isinstance(node, ast.Attribute) else node.id  # type: ignore[attr-defined]
        if name not in _LAST_NAMES and name not in self.aliases:
            return  # cheap: only names that can end a deprecated reference
        parent = self.ctx.parent()
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return  # only the whole chain counts
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        qualified = self.deprecated(node)
        if qualified is None:
            return
        deprecation = DEPRECATED_AMP_APIS[qualified]
        self.report(
            node,
            f"`{qualified}` is deprecated; use `{deprecation.replacement}` with "
            f"{self._device_text(deprecation)} (a reference cannot be rewritten automatically)",
        )

    # -- imports -----------------------------------------------------------------------------
    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._import(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, (ast.Name, ast.Attribute, ast.IfExp)) and "amp" in ast.unparse(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.aliases.add(target.id)

    def visit_Import(self, node: ast.Import) -> None:
        # ``import torch.cuda.amp as amp``: the alias is deprecated once nothing uses it.
        if any(alias.asname is not None for alias in node.names):
            self._import(node)

    def _import(self, node: ast.AST) -> None:
        if not self.active:
            return
        if self._in_fallback():
            for alias in node.names:  # type: ignore[attr-defined]
                self.fallback_names.add(alias.asname or alias.name.split(".")[0])
        else:
            self.imports.append(node)

    def finish(self) -> None:
        """Report deprecated imports that nothing in the file uses (after fixes, say)."""
        for stmt in self.imports:
            unused = []
            for alias in stmt.names:  # type: ignore[attr-defined]
                if alias.name == "*":
                    continue
                if isinstance(stmt, ast.Import):
                    if alias.asname is None:
                        continue
                    qualified, local = alias.name, alias.asname
                else:
                    qualified = f"{stmt.module}.{alias.name}"  # type: ignore[attr-defined]
                    local = alias.asname or alias.name
                deprecated = qualified in DEPRECATED_AMP_APIS or qualified in DEPRECATED_AMP_MODULES
                if deprecated and self.loads.get(local, 0) == 0:
                    unused.append((alias, qualified))
            if not unused:
                continue
            listed = ", ".join(f"`{q}`" for _, q in unused)
            names = {a.name for a, _ in unused}
            plan = FixPlan("Remove the unused deprecated import", Applicability.SAFE,
                           lambda fctx, stmt=stmt, names=names: self._import_fix(fctx, stmt, names))
            self.report(stmt, f"Unused import of deprecated {listed}", fix=plan)

    @staticmethod
    def _import_fix(fctx: FixContext, stmt: ast.AST, names: Set[str]) -> Optional[CstFix]:
        node = fctx.node(stmt)
        if not isinstance(node, (cst.Import, cst.ImportFrom)) or isinstance(node.names, cst.ImportStar):
            return None
        keep = [a for a in node.names if cst.Module([]).code_for_node(a.name) not in names]
        fix = CstFix("Remove the unused deprecated import", Applicability.SAFE)
        line = fctx.statement(node)
        if not keep:
            if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
                return None
            fix.remove(line)
            return fix
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new = node.with_changes(names=keep)
        if len(keep) == 1 and isinstance(node, cst.ImportFrom) and node.lpar:
            new = new.with_changes(lpar=None, rpar=None)
        fix.replace(node, new)
        return fix

    # -- fix construction --------------------------------------------------------------------
    def _available(self, deprecation: Deprecation) -> bool:
        return self.ctx.settings.torch_at_least(deprecation.available_since)

    def _device_text(self, deprecation: Deprecation) -> str:
        if deprecation.device_arg == "device_type":
            return f'`device_type="{deprecation.device}"`'
        return f'`"{deprecation.device}"` as first argument'

    def _report(self, node: ast.AST, qualified: str, deprecation: Deprecation, plan: Optional[FixPlan]) -> None:
        message = f"`{qualified}` is deprecated since torch {deprecation.deprecated_since}; use `{deprecation.replacement}`"
        if plan is None and not self._available(deprecation):
            message += (f" (needs torch >= {deprecation.available_since}; "
                        f"configured torch-version is {self.ctx.settings.torch_version})")
        self.report(node, message, fix=plan)

    @staticmethod
    def _func(fctx: FixContext, deprecation: Deprecation, like: cst.BaseExpression) -> cst.BaseExpression:
        text, _ = fctx.reference(deprecation.replacement, like)
        return codegen.expr(text)

    @staticmethod
    def _device_args(deprecation: Deprecation, rest: List[cst.Arg]) -> List[cst.Arg]:
        device = codegen.string(deprecation.device)
        if deprecation.device_arg == "device_type":
            return rest + [codegen.keyword("device_type", device)]
        return [codegen.positional(device)] + rest

    def _decorator_fix(self, fctx: FixContext, target: ast.AST, deprecation: Deprecation) -> Optional[CstFix]:
        node = fctx.node(target)
        if node is None:
            return None
        new = codegen.call(self._func(fctx, deprecation, node), self._device_args(deprecation, []))
        return self._fix(fctx, node, new, deprecation)

    def _call_fix(self, fctx: FixContext, call_ast: ast.Call, deprecation: Deprecation) -> Optional[CstFix]:
        node = fctx.node(call_ast)
        if not isinstance(node, cst.Call):
            return None
        if deprecation.device_arg == "device_type" and any(
            a.keyword is not None and a.keyword.value == "device_type" for a in node.args
        ):
            return None
        rest: List[cst.Arg] = []
        position = 0
        for arg in node.args:
            if arg.keyword is None and not arg.star:
                if position >= len(deprecation.old_positional):
                    return None
                if deprecation.device_arg == "positional":
                    arg = codegen.as_keyword(arg, deprecation.old_positional[position])
                position += 1
            rest.append(arg)
        args = self._device_args(deprecation, rest)
        if deprecation.device_arg == "device_type" and len(args) > 1:
            # the device keyword goes last: it takes over the old last argument's trailing comma
            trailing = args[-2].comma
            args[-2] = args[-2].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            if isinstance(trailing, cst.Comma):
                args[-1] = args[-1].with_changes(comma=trailing)
        new = codegen.call(self._func(fctx, deprecation, node.func), args, like=node)
        return self._fix(fctx, node, new, deprecation)

    @staticmethod
    def _fix(fctx: FixContext, node: cst.CSTNode, new: cst.CSTNode, deprecation: Deprecation) -> CstFix:
        _, needed_import = fctx.reference(deprecation.replacement)
        return CstFix(
            f"Use `{deprecation.replacement}`",
            Applicability.SAFE,
            replacements=[(node, new)],
            add_imports=(needed_import,) if needed_import else (),
        )


#: The last name component of every deprecated API, and names bound to their modules.
_LAST_NAMES = frozenset({q.rsplit(".", 1)[-1] for q in DEPRECATED_AMP_APIS} | {"amp"})


def _catches_missing_api(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True  # a bare ``except:``
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for value in types:
        name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", None)
        if name in COMPAT_FALLBACK_EXCEPTIONS:
            return True
    return False
