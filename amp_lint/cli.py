"""The ``amp-lint`` command: ``check``, ``fix``, ``rule``, ``verify`` and ``trace``."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from amp_lint import __version__
from amp_lint.config import ConfigError, Settings, load_settings, with_cli_selection
from amp_lint.discovery import discover, is_excluded
from amp_lint.engine.linter import FileReport
from amp_lint.reporters import FORMATS, RuleMeta, render, render_statistics, render_summary
from amp_lint.rules import ALL_RULES, rule_for
from amp_lint.runner import RunOptions, Selection, default_jobs, process_stdin, run, unified_diff

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"amp-lint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _selectors(values: Sequence[str]) -> Tuple[str, ...]:
    out: List[str] = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)


def rule_metadata() -> dict:
    from amp_lint import DOCS_URL

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
        click.option("--output-format", type=click.Choice(FORMATS), default=None,
                     help="Output format (default: concise)."),
        click.option("--statistics", is_flag=True, help="Show counts per rule instead of each finding."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain."),
        click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing."),
        click.option("--show-fixes", is_flag=True, help="Show the fix of each finding."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
                     help="Also apply (or show as fixable) fixes that change numerics or architecture."),
        click.option("--preview", is_flag=True, default=None, help="Also report low-confidence findings."),
        click.option("--config", "config_file", type=click.Path(), help="Config file (pyproject.toml or amp-lint.toml)."),
        click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the cache."),
        click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores)."),
        click.option("--stdin-filename", help="Filename to report for source read from stdin (path '-')."),
        click.option("--force-exclude", is_flag=True, help="Apply exclusions to paths given explicitly too."),
        click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@main.command("check")
@_common_options
@click.option("--fix", is_flag=True, help="Apply safe fixes (same as `amp-lint fix`).")
def check_command(fix: bool, **kwargs) -> None:
    """Report mixed-precision hazards in PATHS (default: current directory)."""
    sys.exit(_run(fix=fix, **kwargs))


@main.command("fix")
@_common_options
def fix_command(**kwargs) -> None:
    """Apply fixes to PATHS (same as `amp-lint check --fix`)."""
    sys.exit(_run(fix=True, **kwargs))


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
              unsafe_fixes: Optional[bool], preview: Optional[bool], start: Optional[Path] = None) -> Settings:
    settings, _ = load_settings(config_file, isolated, start or Path.cwd())
    # The CLI's selectors are a layer on top of the configured selection (ruff's semantics).
    settings = with_cli_selection(settings, _selectors(select), _selectors(extend_select), _selectors(ignore))
    changes = {}
    if unsafe_fixes is not None:
        changes["unsafe_fixes"] = unsafe_fixes
    if preview:
        changes["preview"] = True
    return dataclasses.replace(settings, **changes)


def _run(*, paths, select, ignore, extend_select, output_format, statistics, exit_zero, diff, show_fixes,
         unsafe_fixes, preview, config_file, isolated, no_cache, jobs, stdin_filename, force_exclude, quiet,
         fix) -> int:
    fmt = output_format or os.environ.get("AMP_LINT_OUTPUT_FORMAT") or "concise"
    if fmt not in FORMATS:
        raise _fail(f"unknown output format {fmt!r}")
    try:
        settings = _settings(config_file, isolated, select, ignore, extend_select, unsafe_fixes, preview,
                             _config_start(paths, stdin_filename))
        selection = Selection.from_settings(settings)
    except ConfigError as exc:
        raise _fail(str(exc))
    want_edits = fmt in ("json", "json-lines", "sarif") or show_fixes
    options = RunOptions(fix=fix, diff=diff, want_edits=want_edits, jobs=jobs or default_jobs(),
                         cache=not no_cache, progress=True)
    paths = list(paths) or ["."]
    reports: List[FileReport] = []
    errors: List[Tuple[str, str]] = []
    if paths == ["-"]:
        filename = stdin_filename or "-"
        data = sys.stdin.buffer.read()
        if stdin_filename and force_exclude and is_excluded(Path(filename), settings.exclude + settings.extend_exclude, Path(settings.project_root)):
            if fix and not diff:  # an editor replaces its buffer by our stdout: hand it back unchanged
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            return EXIT_CLEAN
        report = process_stdin(data, filename, selection, options)
        reports.append(report)
        if fix and not diff and report.error is None and report.source is not None:
            # Bytes, so the source's encoding, BOM and line endings survive the round trip.
            text = report.new_text if report.new_text is not None else report.source.text
            sys.stdout.flush()
            sys.stdout.buffer.write(report.source.encode(text))
            sys.stdout.flush()
    else:
        if "-" in paths:
            raise _fail("'-' (stdin) cannot be combined with other paths")
        files, errors = discover(paths, settings.exclude + settings.extend_exclude, Path(settings.project_root),
                                 force_exclude=force_exclude)
        reports = run(files, selection, options)
    for path, message in errors:
        click.echo(f"amp-lint: error: {path}: {message}", err=True)
    for report in reports:
        if report.error:
            errors.append((report.path, report.error))
            click.echo(f"amp-lint: error: {report.path}: {report.error}", err=True)
    return _report(reports, fmt, settings, statistics=statistics, exit_zero=exit_zero, diff=diff,
                   show_fixes=show_fixes, quiet=quiet, fix=fix, had_errors=bool(errors),
                   stdin_fix=fix and not diff and paths == ["-"])


def _report(reports: List[FileReport], fmt: str, settings: Settings, *, statistics: bool, exit_zero: bool,
            diff: bool, show_fixes: bool, quiet: bool, fix: bool, had_errors: bool, stdin_fix: bool) -> int:
    findings = [f for r in reports for f in r.findings]
    fixed = sum(r.fixed for r in reports)
    out = sys.stderr if stdin_fix else sys.stdout
    if diff:
        patches = [unified_diff(r) for r in reports]
        out.write("".join(patches))
        would_fix = sum(r.fixed for r in reports)
        if not quiet:
            click.echo(f"Would fix {would_fix} finding{'s' if would_fix != 1 else ''}.", err=True)
        if had_errors:
            return EXIT_ERROR
        return EXIT_CLEAN if exit_zero or not any(patches) else EXIT_FINDINGS
    if statistics:
        out.write(render_statistics(findings, unsafe_fixes=settings.unsafe_fixes))
    else:
        out.write(render(findings, fmt, unsafe_fixes=settings.unsafe_fixes, show_fixes=show_fixes,
                         rules=rule_metadata(), tool_version=__version__))
    if not quiet and fmt in ("concise", "full") and (findings or fixed or not had_errors):
        fixable = sum(1 for f in findings if f.fixable(settings.unsafe_fixes))
        hidden = 0 if settings.unsafe_fixes else sum(1 for f in findings if f.fix_applicability is not None and not f.fixable(False))
        needs_unsafe = any(f.fixable(True) and not f.fixable(False) for f in findings) and settings.unsafe_fixes
        command = "amp-lint fix --unsafe-fixes" if needs_unsafe else "amp-lint fix"
        click.echo(render_summary(len(findings), fixable, fixed, unsafe_hidden=hidden, fix_command=command).rstrip("\n"),
                   err=True)
    if had_errors:
        return EXIT_ERROR
    if exit_zero or not findings:
        return EXIT_CLEAN
    return EXIT_FINDINGS


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Show every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule_command(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain a rule (by code or name), or all rules with --all."""
    if show_all == bool(code):
        raise _fail("give a rule code (e.g. AMP301) or --all")
    try:
        rules = list(ALL_RULES) if show_all else [rule_for(code or "")]
    except KeyError:
        raise _fail(f"unknown rule {code!r}")
    if output_format == "json":
        data = [
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
        click.echo(json.dumps(data if show_all else data[0], indent=2))
    else:
        click.echo("\n".join(r.render_docs() for r in rules), nl=False)
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
