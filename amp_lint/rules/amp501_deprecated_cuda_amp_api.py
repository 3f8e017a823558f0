"""AMP501 deprecated-cuda-amp-api."""
from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from amp_lint.data.deprecations import (
    AMP_REPLACEMENT_MODULES, COMPAT_FALLBACK_EXCEPTIONS, DEPRECATED_AMP_APIS, DEPRECATED_AMP_MODULES,
    DEPRECATIONS_SINCE, Deprecation,
)
from amp_lint.engine import codegen
from amp_lint.engine.fixes import CstFix
from amp_lint.findings import Applicability, Severity
from amp_lint.rules.base import Invalid, Rule, Valid


class DeprecatedCudaAmpApi(Rule):
    code = "AMP501"
    name = "deprecated-cuda-amp-api"
    severity = Severity.MIGRATION
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API"
    fix_applicability = Applicability.SAFE
    tokens = ("amp",)
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
        self.import_statements: List[cst.CSTNode] = []
        #: Below the deprecation there is nothing to report (or fix).
        self.active = ctx.settings.torch_at_least(DEPRECATIONS_SINCE)
        #: id(Try) -> whether its body uses the new API (computed on demand)
        self._new_api_in_body: Dict[int, bool] = {}
        #: ids of import statements that are compatibility fallbacks
        self.fallback_imports: Set[int] = set()

    def _deprecation(self, node: cst.BaseExpression) -> "tuple[Optional[str], Optional[Deprecation]]":
        """(qualified name, deprecation) of a reference, or (.., None) when there is nothing to report:
        not deprecated, torch-version below the deprecation, or compatibility code."""
        qualified = self.ctx.qualify(node)
        deprecation = DEPRECATED_AMP_APIS.get(qualified or "")
        if deprecation is None or not self.ctx.settings.torch_at_least(deprecation.deprecated_since):
            return qualified, None
        if self._in_fallback() or self._bound_by_fallback(node):
            return qualified, None
        return qualified, deprecation

    # -- compatibility code ------------------------------------------------------------------
    def _in_fallback(self) -> bool:
        """Whether the node being visited lies in an ``except`` branch that is a fallback for
        old torch: it catches what a missing API raises, and its ``try`` body uses the new API."""
        stack = self.ctx.stack
        for index in range(len(stack) - 2, 0, -1):
            handler = stack[index]
            if isinstance(handler, cst.ExceptHandler) and isinstance(stack[index - 1], cst.Try):
                if self._catches_missing_api(handler) and self._uses_new_api(stack[index - 1]):
                    return True
        return False

    def _bound_by_fallback(self, node: cst.BaseExpression) -> bool:
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        binding = self.ctx.names.bindings.get(root.value)
        return binding is not None and id(binding.node) in self.fallback_imports

    @staticmethod
    def _catches_missing_api(handler: cst.ExceptHandler) -> bool:
        if handler.type is None:
            return True  # a bare ``except:``
        types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for element in types:
            value = element.value if isinstance(element, cst.Element) else element
            name = value.attr.value if isinstance(value, cst.Attribute) else getattr(value, "value", None)
            if name in COMPAT_FALLBACK_EXCEPTIONS:
                return True
        return False

    def _uses_new_api(self, node: cst.Try) -> bool:
        known = self._new_api_in_body.get(id(node))
        if known is None:
            known = self._new_api_in_body[id(node)] = any(self._is_new_api(n) for n in _iter_subtree(node.body))
        return known

    def _is_new_api(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            from amp_lint.engine.names import module_name

            module = module_name(node.module)
            if module in AMP_REPLACEMENT_MODULES:
                return True
            if module == "torch" and not isinstance(node.names, cst.ImportStar):
                return any(getattr(a.name, "value", None) in ("amp", "autocast") for a in node.names)
            return False
        if isinstance(node, (cst.Attribute, cst.Name)):
            qualified = self.ctx.qualify(node) or ""
            return qualified == "torch.autocast" or qualified.split(".")[:2] == ["torch", "amp"]
        return False

    # -- calls and decorators --------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not self.active:
            return
        qualified, deprecation = self._deprecation(node.func)
        if deprecation is None:
            return
        self.handled.add(id(node.func))
        self._report(node, qualified, deprecation, self._call_fix(node, deprecation))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        target = node.decorator
        if isinstance(target, cst.Call) or not self.active:
            return
        qualified, deprecation = self._deprecation(target)
        if deprecation is None:
            return
        self.handled.add(id(target))
        fix = None
        if self._available(deprecation):
            fix = self._fix(target, codegen.call(self._func(deprecation, target), self._device_args(deprecation, [])), deprecation)
        self._report(target, qualified, deprecation, fix)

    # -- bare references ---------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._reference(node)

    def _reference(self, node: cst.BaseExpression) -> None:
        if not self.active or id(node) in self.handled:
            return
        if self.ctx.is_store(node):
            return
        parent = self.ctx.parent()
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # only the whole chain counts
        qualified, deprecation = self._deprecation(node)
        if deprecation is None:
            return
        self.report(
            node,
            f"`{qualified}` is deprecated; use `{deprecation.replacement}` with "
            f"{self._device_text(deprecation)} (a reference cannot be rewritten automatically)",
        )

    # -- imports -----------------------------------------------------------------------------
    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._import(node)

    def visit_Import(self, node: cst.Import) -> None:
        # ``import torch.cuda.amp as amp``: the alias is deprecated once nothing uses it.
        if any(alias.asname is not None for alias in node.names):
            self._import(node)

    def _import(self, node: cst.CSTNode) -> None:
        if not self.active:
            return
        if self._in_fallback():
            self.fallback_imports.add(id(node))
        else:
            self.import_statements.append(node)

    def finish(self) -> None:
        """Report deprecated imports that nothing in the file uses (after fixes, say)."""
        names = self.ctx.names
        for stmt in self.import_statements:
            assert isinstance(stmt, (cst.Import, cst.ImportFrom))
            if isinstance(stmt.names, cst.ImportStar):
                continue
            unused = []
            for binding in names.bindings_for_statement(stmt):
                deprecated = binding.qualified in DEPRECATED_AMP_APIS or binding.qualified in DEPRECATED_AMP_MODULES
                if deprecated and names.uses[binding.local] == 0:
                    unused.append(binding)
            if not unused:
                continue
            keep = [a for a in stmt.names if all(a is not b.alias for b in unused)]
            fix = CstFix("Remove the unused deprecated import", Applicability.SAFE)
            statement_line = self._statement_line(stmt)
            if not keep and statement_line is not None and len(statement_line.body) == 1:
                fix.remove(statement_line)
            elif keep:
                keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                parenthesised = isinstance(stmt, cst.ImportFrom) and stmt.lpar
                fix.replace(stmt, stmt.with_changes(names=keep, lpar=None, rpar=None) if len(keep) == 1 and parenthesised else stmt.with_changes(names=keep))
            else:
                fix = None
            listed = ", ".join(f"`{b.qualified}`" for b in unused)
            self.report(stmt, f"Unused import of deprecated {listed}", fix=fix)

    def _statement_line(self, stmt: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
        for line in _iter_statement_lines(self.ctx.module):
            if any(small is stmt for small in line.body):
                return line
        return None

    # -- fix construction --------------------------------------------------------------------
    def _available(self, deprecation: Deprecation) -> bool:
        return self.ctx.settings.torch_at_least(deprecation.available_since)

    def _device_text(self, deprecation: Deprecation) -> str:
        if deprecation.device_arg == "device_type":
            return f'`device_type="{deprecation.device}"`'
        return f'`"{deprecation.device}"` as first argument'

    def _report(self, node: cst.CSTNode, qualified: Optional[str], deprecation: Deprecation,
                fix: Optional[CstFix]) -> None:
        message = f"`{qualified}` is deprecated since torch {deprecation.deprecated_since}; use `{deprecation.replacement}`"
        if fix is None and not self._available(deprecation):
            message += (f" (needs torch >= {deprecation.available_since}; "
                        f"configured torch-version is {self.ctx.settings.torch_version})")
        self.report(node, message, fix=fix)

    def _func(self, deprecation: Deprecation, like: cst.BaseExpression) -> cst.BaseExpression:
        text, _ = self.ctx.reference(deprecation.replacement, like)
        return codegen.expr(text)

    def _device_args(self, deprecation: Deprecation, rest: List[cst.Arg]) -> List[cst.Arg]:
        device = codegen.string(deprecation.device)
        if deprecation.device_arg == "device_type":
            return rest + [codegen.keyword("device_type", device)]
        return [codegen.positional(device)] + rest

    def _call_fix(self, node: cst.Call, deprecation: Deprecation) -> Optional[CstFix]:
        if not self._available(deprecation):
            return None
        if any(arg.star == "*" for arg in node.args):
            return None  # positions after *args cannot be remapped safely
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
        new = codegen.call(self._func(deprecation, node.func), args, like=node)
        return self._fix(node, new, deprecation)

    def _fix(self, node: cst.CSTNode, new: cst.CSTNode, deprecation: Deprecation) -> CstFix:
        _, needed_import = self.ctx.reference(deprecation.replacement)
        return CstFix(
            f"Use `{deprecation.replacement}`",
            Applicability.SAFE,
            replacements=[(node, new)],
            add_imports=(needed_import,) if needed_import else (),
        )


def _iter_statement_lines(module: cst.Module):
    for node in _iter_subtree(module):
        if isinstance(node, cst.SimpleStatementLine):
            yield node


def _iter_subtree(node: cst.CSTNode):
    from amp_lint.engine.walker import iter_subtree

    return iter_subtree(node)
