"""The ``amp-lint`` command: ``check``, ``fix``, ``rule``, ``explain``, ``verify``
and ``trace``.

Start-up imports only click: ``--version`` and ``--help`` answer at once. A command imports what
it needs (configuration, discovery, the runner with LibCST and the rules, the reporters) when it
runs; ``tests/test_cli_startup.py`` keeps it that way.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import click

from amp_lint import OUTPUT_FORMATS, __version__

if TYPE_CHECKING:
    from amp_lint.config import Settings
    from amp_lint.findings import FileReport

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
NO_FILES_WARNING = "No Python files found under the given path(s)"


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"amp-lint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _warn(message: str) -> None:
    click.echo(f"amp-lint: warning: {message}", err=True)


def _selectors(values: Sequence[str]) -> Tuple[str, ...]:
    out: List[str] = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)


def rule_metadata() -> dict:
    from amp_lint import DOCS_URL
    from amp_lint.reporters import RuleMeta
    from amp_lint.rules import ALL_RULES

    return {
        r.code: RuleMeta(r.code, r.name, r.severity.value, r.summary, f"{DOCS_URL}/{r.code}.md")
        for r in ALL_RULES
    }


class _Group(click.Group):
    def main(self, *args, **kwargs):  # type: ignore[override]
        # click's usage errors exit 2 already; make sure nothing else escapes as a traceback.
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
            # Without standalone mode click *returns* the code of an Exit (`_fail`, --help,
            # --version) instead of exiting; exit with it, or `python -m amp_lint` exits 0.
            sys.exit(result if isinstance(result, int) else 0)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(EXIT_ERROR)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="amp-lint")
def main() -> None:
    """amp-lint: find and fix FP16 / mixed-precision hazards in PyTorch code."""


def _common_options(func):
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, help="Rule codes or prefixes to enable (e.g. AMP3, ALL)."),
        click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
        click.option("--extend-select", multiple=True, help="Codes or prefixes to enable on top of the selection."),
        click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None,
                     help="Output format (default: concise; or $AMP_LINT_OUTPUT_FORMAT)."),
        click.option("-o", "--output-file", type=click.Path(dir_okay=False), envvar="AMP_LINT_OUTPUT_FILE",
                     help="Write the findings to this file instead of stdout (or $AMP_LINT_OUTPUT_FILE)."),
        click.option("--statistics", is_flag=True,
                     help="Show counts per rule instead of each finding (text, or JSON with --output-format json)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain."),
        click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing."),
        click.option("--show-fixes", is_flag=True, help="Show the fix of each finding."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
                     help="Also apply (or show as fixable) fixes that change numerics or architecture."),
        click.option("--preview/--no-preview", default=None,
                     help="Preview mode: preview rules, and low-confidence findings of the stable rules."),
        click.option("--exclude", multiple=True,
                     help="Patterns to exclude; replaces the configured and default excludes."),
        click.option("--extend-exclude", multiple=True, help="Patterns to exclude on top of the others."),
        click.option("--config", "config_file", type=click.Path(), help="Config file (pyproject.toml or amp-lint.toml)."),
        click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the cache."),
        click.option("--stdin-filename", help="Filename to report for source read from stdin (path '-')."),
        click.option("--force-exclude", is_flag=True, help="Apply exclusions to paths given explicitly too."),
        click.option("--show-settings", is_flag=True, help="Print the settings resolved for the first path and exit."),
        click.option("--show-files", is_flag=True, help="Print the files that would be checked and exit."),
        click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@main.command("check")
@_common_options
@click.option("--fix", is_flag=True, help="Apply safe fixes (same as `amp-lint fix`).")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments to the lines of the current findings.")
def check_command(fix: bool, add_noqa: bool, **kwargs) -> None:
    """Report mixed-precision hazards in PATHS (default: current directory)."""
    sys.exit(_run(fix=fix, add_noqa=add_noqa, **kwargs))


@main.command("fix")
@_common_options
def fix_command(**kwargs) -> None:
    """Apply fixes to PATHS (same as `amp-lint check --fix`)."""
    sys.exit(_run(fix=True, add_noqa=False, **kwargs))


def _config_start(paths: Sequence[str], stdin_filename: Optional[str]) -> Path:
    """Where the config search starts: the first checked path (as ruff), else the cwd."""
    first = stdin_filename if list(paths) in ([], ["-"]) else (paths[0] if paths else None)
    if not first or first == "-":
        return Path.cwd()
    path = Path(first)
    if path.is_dir():
        return path
    return path.parent if str(path.parent) else Path.cwd()


def _settings(config_file: Optional[str], isolated: bool, select, ignore, extend_select,
              unsafe_fixes: Optional[bool], preview: Optional[bool], start: Optional[Path] = None,
              exclude: Sequence[str] = (), extend_exclude: Sequence[str] = ()) -> "Tuple[Settings, Optional[Path]]":
    """(settings with the command line applied, the config file they came from)."""
    import dataclasses

    from amp_lint.config import load_settings, reserved_selector_warnings, with_cli_selection

    settings, path = load_settings(config_file, isolated, start or Path.cwd())
    configured = settings.select + settings.extend_select + settings.ignore + tuple(
        code for _, codes in settings.per_file_ignores for code in codes)
    for message in reserved_selector_warnings(configured + _selectors(select) + _selectors(extend_select)
                                              + _selectors(ignore)):
        _warn(message)
    # The CLI's selectors are a layer on top of the configured selection (ruff's semantics).
    settings = with_cli_selection(settings, _selectors(select), _selectors(extend_select), _selectors(ignore))
    changes: Dict[str, object] = {}
    if unsafe_fixes is not None:
        changes["unsafe_fixes"] = unsafe_fixes
    if preview is not None:
        changes["preview"] = preview
    if exclude:
        changes["exclude"] = _selectors(exclude)  # as ruff: replaces the configured and default list
    if extend_exclude:
        changes["extend_exclude"] = settings.extend_exclude + _selectors(extend_exclude)
    return dataclasses.replace(settings, **changes), path


def _run(*, paths, select, ignore, extend_select, output_format, output_file, statistics, exit_zero, diff,
         show_fixes, unsafe_fixes, preview, exclude, extend_exclude, config_file, isolated, no_cache,
         stdin_filename, force_exclude, show_settings, show_files, quiet, fix, add_noqa) -> int:
    from amp_lint.config import ConfigError
    from amp_lint.discovery import discover, is_excluded
    from amp_lint.reporters.statistics import STATISTICS_FORMATS

    fmt = output_format or os.environ.get("AMP_LINT_OUTPUT_FORMAT") or "concise"
    if fmt not in OUTPUT_FORMATS:
        raise _fail(f"unknown output format {fmt!r}")
    if statistics and fmt not in STATISTICS_FORMATS:
        raise _fail(f"--statistics supports the {', '.join(STATISTICS_FORMATS)} output formats, not {fmt!r}")
    if add_noqa and (fix or diff):
        raise _fail("--add-noqa cannot be combined with --fix or --diff")
    paths = list(paths) or ["."]
    if add_noqa and "-" in paths:
        raise _fail("--add-noqa edits files; it cannot read stdin ('-')")
    try:
        settings, config_path = _settings(config_file, isolated, select, ignore, extend_select, unsafe_fixes,
                                          preview, _config_start(paths, stdin_filename), exclude, extend_exclude)
        from amp_lint.runner import Selection

        selection = Selection.from_settings(settings)
    except ConfigError as exc:
        raise _fail(str(exc))
    if show_settings:
        click.echo(_settings_text(settings, config_path, selection, fmt, paths, stdin_filename), nl=False)
        return EXIT_CLEAN
    excludes = settings.exclude + settings.extend_exclude
    reports: List[FileReport] = []
    errors: List[Tuple[str, str]] = []
    skipped: List[Tuple[str, str]] = []
    stdin = paths == ["-"]
    if stdin:
        filename = stdin_filename or "-"
        if show_files:
            click.echo(filename)
            return EXIT_CLEAN
        data = sys.stdin.buffer.read()
        if stdin_filename and force_exclude and is_excluded(Path(filename), excludes, Path(settings.project_root)):
            if fix and not diff:  # an editor replaces its buffer by our stdout: hand it back unchanged
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            return EXIT_CLEAN
        from amp_lint.runner import RunOptions, process_stdin

        options = RunOptions(fix=fix, diff=diff, want_edits=_want_edits(fmt, show_fixes), cache=not no_cache)
        report = process_stdin(data, filename, selection, options)
        reports.append(report)
        if fix and not diff and report.source is not None:
            # Bytes, so the source's encoding, BOM and line endings survive the round trip (a
            # notebook the fix could not be written back to comes back unchanged).
            text = report.new_text if report.new_text is not None else report.source.text
            sys.stdout.flush()
            sys.stdout.buffer.write(report.source.encode(text))
            sys.stdout.flush()
    else:
        if "-" in paths:
            raise _fail("'-' (stdin) cannot be combined with other paths")
        files, errors = discover(paths, excludes, Path(settings.project_root), force_exclude=force_exclude,
                                 skipped=skipped)
        for path, message in errors:
            click.echo(f"amp-lint: error: {path}: {message}", err=True)
        for path, reason in skipped:
            _warn(f"{path}: skipped ({reason})")
        if show_files:
            for path in sorted(os.path.abspath(f) for f in files):
                click.echo(path)
            return EXIT_ERROR if errors else EXIT_CLEAN
        if not files and not errors:
            _warn(NO_FILES_WARNING)
            if not statistics and fmt not in ("concise", "full"):
                _write(_render([], fmt, settings, show_fixes=False), output_file, sys.stdout)
            return EXIT_CLEAN
        from amp_lint.project_scope import project_scope
        from amp_lint.runner import RunOptions, run

        options = RunOptions(fix=fix, diff=diff, want_edits=_want_edits(fmt, show_fixes), cache=not no_cache)
        scope = project_scope(paths, files, excludes, Path(settings.project_root))
        reports = run(files, selection, options, scope.context, scope.root)
    for report in reports:
        if report.error:
            errors.append((report.path, report.error))
            click.echo(f"amp-lint: error: {report.path}: {report.error}", err=True)
        elif report.warning:
            click.echo(f"amp-lint: warning: {report.path}: {report.warning}", err=True)
    if add_noqa:
        return _add_noqa(reports, had_errors=bool(errors), quiet=quiet)
    return _report(reports, fmt, settings, statistics=statistics, exit_zero=exit_zero, diff=diff,
                   show_fixes=show_fixes, quiet=quiet, fix=fix, errors=len(errors), skipped=len(skipped),
                   stdin_fix=fix and not diff and stdin, output_file=output_file)


def _want_edits(fmt: str, show_fixes: bool) -> bool:
    return fmt in ("json", "json-lines", "sarif") or show_fixes


def _render(findings: list, fmt: str, settings: "Settings", *, show_fixes: bool) -> str:
    from amp_lint.reporters import render

    # only SARIF describes the rules (importing them loads the engine, which a cached run skips)
    rules = rule_metadata() if fmt == "sarif" else None
    return render(findings, fmt, unsafe_fixes=settings.unsafe_fixes, show_fixes=show_fixes, rules=rules,
                  tool_version=__version__, root=settings.project_root)


def _write(text: str, output_file: Optional[str], stream) -> None:
    """Write the report to ``output_file`` (parents created) or to ``stream``."""
    if output_file is None:
        stream.write(text)
        stream.flush()
        return
    try:
        target = Path(output_file)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _fail(f"{output_file}: cannot write the output file: {exc.strerror or exc}")


def _report(reports: List[FileReport], fmt: str, settings: "Settings", *, statistics: bool, exit_zero: bool,
            diff: bool, show_fixes: bool, quiet: bool, fix: bool, errors: int, skipped: int, stdin_fix: bool,
            output_file: Optional[str]) -> int:
    from amp_lint.reporters import render_statistics, render_summary
    from amp_lint.runner import unified_diff

    findings = [f for r in reports for f in r.findings]
    fixed = sum(r.fixed for r in reports)
    out = sys.stderr if stdin_fix else sys.stdout
    if diff:
        patches = [unified_diff(r) for r in reports]
        _write("".join(patches), output_file, out)
        would_fix = sum(r.fixed for r in reports)
        if not quiet:
            click.echo(f"Would fix {would_fix} finding{'s' if would_fix != 1 else ''}.", err=True)
        if errors:
            return EXIT_ERROR
        return EXIT_CLEAN if exit_zero or not any(patches) else EXIT_FINDINGS
    if statistics:
        _write(render_statistics(findings, unsafe_fixes=settings.unsafe_fixes, fmt=fmt), output_file, out)
    else:
        _write(_render(findings, fmt, settings, show_fixes=show_fixes), output_file, out)
    # The errors above already say it all when no file could be checked.
    checked = any(r.error is None for r in reports)
    if not quiet and fmt in ("concise", "full") and (checked or not errors):
        fixable = sum(1 for f in findings if f.fixable(settings.unsafe_fixes))
        hidden = 0 if settings.unsafe_fixes else sum(1 for f in findings if f.fix_applicability is not None and not f.fixable(False))
        needs_unsafe = any(f.fixable(True) and not f.fixable(False) for f in findings) and settings.unsafe_fixes
        command = "amp-lint fix --unsafe-fixes" if needs_unsafe else "amp-lint fix"
        summary = render_summary(len(findings), fixable, fixed, unsafe_hidden=hidden, fix_command=command,
                                 not_checked=errors, skipped=skipped)
        click.echo(summary.rstrip("\n"), err=True)
    if errors:
        return EXIT_ERROR
    if exit_zero or not findings:
        return EXIT_CLEAN
    return EXIT_FINDINGS


def _add_noqa(reports: List[FileReport], *, had_errors: bool, quiet: bool) -> int:
    """Write ``# noqa`` directives for every finding of ``reports`` (except syntax errors)."""
    from amp_lint.add_noqa import add_noqa
    from amp_lint.discovery import PYTHON_SUFFIXES
    from amp_lint.data.catalog import SYNTAX_ERROR_CODE
    from amp_lint.source import SourceError, read_source, write_atomic

    added = 0
    failed = had_errors
    for report in reports:
        rows: Dict[int, set] = {}
        for finding in report.findings:
            if finding.code != SYNTAX_ERROR_CODE:
                rows.setdefault(finding.noqa_row or finding.location.row, set()).add(finding.code)
        if not rows:
            continue
        if not report.path.endswith(PYTHON_SUFFIXES):
            _warn(f"{report.path}: --add-noqa edits only .py and .pyi files")
            continue
        try:
            source = read_source(report.path)
            edit = add_noqa(source.text, rows)
            if edit.added:
                write_atomic(report.path, source.encode(edit.text))
        except (SourceError, OSError) as exc:
            click.echo(f"amp-lint: error: {report.path}: cannot add noqa directives: {exc}", err=True)
            failed = True
            continue
        added += edit.added
        for row, reason in edit.left:
            _warn(f"{report.path}:{row}: no noqa directive added: {reason}")
    if not quiet:
        click.echo(f"Added {added} noqa directive{'' if added == 1 else 's'}.", err=True)
    return EXIT_ERROR if failed else EXIT_CLEAN


def _settings_text(settings: "Settings", config_path: Optional[Path], selection, fmt: str, paths: Sequence[str],
                   stdin_filename: Optional[str]) -> str:
    """``--show-settings``: the resolved settings, as TOML-like ``key = value`` lines."""
    import json

    from amp_lint.cache import CACHE_DIR_NAME

    first = stdin_filename if paths == ["-"] and stdin_filename else paths[0]
    from amp_lint.data.catalog import SYNTAX_ERROR_CODE

    enabled = ([SYNTAX_ERROR_CODE] if selection.syntax_errors else []) + [rule.code for rule in selection.rules]

    def value(v: object) -> str:
        return json.dumps(list(v) if isinstance(v, tuple) else v)

    per_file = ", ".join(f"{json.dumps(pattern)} = {value(codes)}" for pattern, codes in settings.per_file_ignores)
    rows = [
        ("enabled-rules", enabled),
        ("select", settings.select),
        ("extend-select", settings.extend_select),
        ("ignore", settings.ignore),
        ("per-file-ignores", None),
        ("exclude", settings.exclude),
        ("extend-exclude", settings.extend_exclude),
        ("unsafe-fixes", settings.unsafe_fixes),
        ("preview", settings.preview),
        ("torch-version", settings.torch_version),
        ("device", settings.device),
        ("min-dim", settings.min_dim),
        ("output-format", fmt),
        ("cache-dir", os.path.join(os.path.abspath(settings.project_root), CACHE_DIR_NAME)),
    ]
    lines = [
        f"Resolved settings for: {json.dumps(first if first == '-' else os.path.abspath(first))}",
        f"Settings path: {json.dumps(str(config_path.resolve())) if config_path else 'none (defaults)'}",
        f"Project root: {json.dumps(os.path.abspath(settings.project_root))}",
        "",
    ]
    for key, val in rows:
        lines.append(f"{key} = {{{per_file}}}" if key == "per-file-ignores" else f"{key} = {value(val)}")
    return "\n".join(lines) + "\n"


@main.command("explain")
@click.argument("location")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None, help="Configuration file.")
@click.option("--isolated", is_flag=True, help="Ignore configuration files.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def explain_command(location: str, config_file: Optional[str], isolated: bool, output_format: str) -> None:
    """Show what the analysis infers for the expressions at FILE:LINE (a notebook's FILE:cell N:LINE),
    per context, with evidence. The program analysed is FILE's project, as for ``check FILE``."""
    import dataclasses
    import json

    from amp_lint.config import ConfigError
    from amp_lint.discovery import discover
    from amp_lint.explain import explain, render_text, to_json
    from amp_lint.project_scope import project_scope

    path, _, line = location.rpartition(":")
    cell = None
    head, _, cell_text = path.rpartition(":")
    if cell_text.startswith("cell ") and cell_text[5:].isdigit():  # ``nb.ipynb:cell 3:2``, as findings say
        path, cell = head, int(cell_text[5:])
    if not path or not line.isdigit():
        raise _fail(f"{location!r}: expected FILE:LINE (in a notebook also FILE:cell N:LINE)")
    if not Path(path).is_file():
        raise _fail(f"{path}: no such file")
    try:
        settings, _ = _settings(config_file, isolated, (), (), (), None, None, _config_start([path], None))
    except ConfigError as exc:
        raise _fail(str(exc))
    # the program ``check FILE`` analyses: the file's project (found from the file, not from the
    # working directory), else the settings' root where the file lies below it, else the file alone
    excludes = settings.exclude + settings.extend_exclude
    settings_root = Path(settings.project_root).resolve()
    scope = project_scope([path], [path], excludes, settings_root)
    if scope.root is not None:
        root, files = scope.root, [path, *scope.context]
    elif settings_root in Path(path).resolve().parents:
        root = str(settings_root)
        files, _ = discover([root], excludes, settings_root)
        if not any(Path(f).resolve() == Path(path).resolve() for f in files):
            files.append(path)
    else:
        root, files = str(Path(path).resolve().parent), [path]
    try:
        result = explain(path, int(line), files, dataclasses.replace(settings, project_root=root), cell)
    except ValueError as exc:
        raise _fail(str(exc))
    if output_format == "json":
        click.echo(json.dumps(to_json(result), indent=2))
    else:
        click.echo(render_text(result), nl=False)


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Show every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule_command(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain a rule (by code or name), or all rules with --all."""
    import json

    from amp_lint.data.catalog import CATALOG_BY_CODE
    from amp_lint.docs import SYNTAX_ERROR_PAGE
    from amp_lint.data.catalog import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME
    from amp_lint.rules import ALL_RULES, RESERVED_CODES, rule_for

    if show_all == bool(code):
        raise _fail("give a rule code (e.g. AMP301) or --all")
    syntax = {
        "code": SYNTAX_ERROR_CODE, "name": SYNTAX_ERROR_NAME, "severity": "error",
        "summary": "File that does not parse as Python", "fix": "none", "default_enabled": True,
        "explanation": SYNTAX_ERROR_PAGE,
    }
    key = (code or "").strip()
    reserved = [CATALOG_BY_CODE[c] for c in RESERVED_CODES if key.upper() == c or key == CATALOG_BY_CODE[c].name]
    if not show_all and reserved:
        entry = reserved[0]
        text = (f"{entry.code} ({entry.name}) is reserved for a planned rule that is not implemented yet; "
                f"selecting it is allowed and reports nothing.")
        if output_format == "json":
            click.echo(json.dumps({"code": entry.code, "name": entry.name, "reserved": True, "explanation": text},
                                  indent=2))
        else:
            click.echo(text)
        sys.exit(EXIT_CLEAN)
    if show_all:
        data = [syntax]
    elif key.upper() == SYNTAX_ERROR_CODE or key == SYNTAX_ERROR_NAME:
        data = [syntax]
    else:
        data = []
    if show_all or not data:
        try:
            rules = list(ALL_RULES) if show_all else [rule_for(key)]
        except KeyError:
            raise _fail(f"unknown rule {code!r}")
        data += [
            {
                "code": r.code,
                "name": r.name,
                "severity": r.severity.value,
                "summary": r.summary,
                "fix": r.fix_applicability.value if r.fix_applicability else "none",
                "default_enabled": r.default_enabled,
                "explanation": r.render_docs(),
            }
            for r in rules
        ]
    if output_format == "json":
        click.echo(json.dumps(data if show_all else data[0], indent=2))
    else:
        click.echo("\n".join(d["explanation"] for d in data), nl=False)
    sys.exit(EXIT_CLEAN)


# -- verify / trace: run the script (amp_lint.runtime, imported only here; torch only in the child) --

_RUNTIME_OPTIONS = [
    click.argument("script", required=False),
    click.argument("script_args", nargs=-1, type=click.UNPROCESSED),
    click.option("-m", "--module", help="Run a module (python -m MODULE) instead of a script."),
    click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
                 help="auto: CUDA when available, else the CPU in real float16 (CUDA autocast/GradScaler mapped)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed torch/random/numpy at import."),
]


def _runtime_options(func):
    for option in reversed(_RUNTIME_OPTIONS):
        func = option(func)
    return func


def _runtime_target(script: Optional[str], script_args: Sequence[str], module: Optional[str]):
    """The target named on the command line (``-m`` takes every positional as a script argument)."""
    import importlib.util

    from amp_lint.runtime.target import TargetError, resolve

    if module is not None and script is not None:
        script_args = (script, *script_args)
        script = None
    if importlib.util.find_spec("torch") is None:
        raise _fail("verify and trace run the script with torch, which is not installed: "
                    "pip install 'amp-lint[runtime]'")
    try:
        return resolve(script, module, script_args)
    except TargetError as exc:
        raise _fail(str(exc))


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        click.echo(f"amp-lint: {message}...", err=True)


def _runtime_error(message: Optional[str], tail: str) -> None:
    if message:
        click.echo(f"amp-lint: error: {message}", err=True)
    if tail:
        click.echo("--- the script's stderr (tail) ---\n" + tail, err=True)


@main.command("verify")
@_runtime_options
@click.option("--steps", type=click.IntRange(min=1), default=8, show_default=True,
              help="Stop each run after N optimizer steps (skipped steps count).")
@click.option("--rtol", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="Tolerance of the mean loss against the fp32 reference (relative).")
@click.option("--timeout", type=click.FloatRange(min=1), default=120, show_default=True,
              help="Wall-clock limit of each run, in seconds.")
@click.option("--no-fix", is_flag=True, help="Verify the script as it is (a migration made by hand): no rewrite.")
@click.option("--apply", is_flag=True, help="Write the rewrite to your files when it is verified.")
@click.option("-j", "--jobs", type=click.IntRange(min=1, max=3), default=1, show_default=True,
              help="Runs at a time.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def verify_command(script, script_args, module, device, seed, steps, rtol, timeout, no_fix, apply, jobs,
                   output_format) -> None:
    """Prove a mixed-precision migration by running it: SCRIPT [-- ARGS...] or -m MODULE [-- ARGS...].

    Runs the script, its `fix --unsafe-fixes` rewrite (in a temporary copy) and the rewrite with
    autocast and GradScaler forced off, for --steps steps each; prints a table per run and step and
    one verdict per check. Exit 0 verified, 1 a check failed, 2 error.
    """
    from amp_lint.runtime import verify as verifier

    target = _runtime_target(script, script_args, module)
    if apply and no_fix:
        raise _fail("--apply and --no-fix exclude each other")
    options = verifier.Options(steps=steps, rtol=rtol, device=device, timeout=timeout, seed=seed, no_fix=no_fix,
                               apply=apply, jobs=jobs)
    result = verifier.verify(target, options, progress=_progress)
    if output_format == "json":
        click.echo(verifier.render_json(result), nl=False)
    elif result.verdict != verifier.ERROR:
        click.echo(verifier.render_text(result), nl=False)
    if result.verdict == verifier.ERROR:
        _runtime_error(result.error, result.error_tail)
    sys.exit(result.exit_code)


@main.command("trace")
@_runtime_options
@click.option("--steps", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stop after N optimizer steps (0: run to the end).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True,
              help="Wall-clock limit of the run, in seconds.")
@click.option("--output-format", type=click.Choice(["text", "json", "sarif"]), default="text", show_default=True)
def trace_command(script, script_args, module, device, seed, steps, timeout, output_format) -> None:
    """Run SCRIPT [-- ARGS...] once and report what ran in low precision, by source line.

    Hazards get the static rules' codes and are matched with `check`'s findings: confirmed,
    runtime only (missed by the static analysis), not reached, not observed.
    Exit 0 no hazard, 1 hazards, 2 error.
    """
    from amp_lint.runtime import trace as tracer

    target = _runtime_target(script, script_args, module)
    options = tracer.Options(device=device, timeout=timeout, steps=steps, seed=seed)
    result = tracer.trace(target, options, progress=_progress)
    if output_format == "json":
        click.echo(tracer.render_json(result), nl=False)
    elif output_format == "sarif":
        click.echo(tracer.render_sarif(result, __version__), nl=False)
    elif result.run is not None and result.run.instrumentation.get("trace") is not None:
        click.echo(tracer.render_text(result), nl=False)
    _runtime_error(result.error, result.error_tail)
    sys.exit(result.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
