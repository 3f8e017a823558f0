"""``amp-lint trace``: run a script once, op by op, and report what really ran in low precision.

The run is instrumented by :mod:`amp_lint.runtime.instrument` in trace mode (per-op records keyed
by op and user source line, sampled numerics, the user lines that ran). :func:`classify` turns the
records into hazards with the static rules' codes:

* AMP201 softmax/log_softmax, AMP202 a loss, AMP203 a reduction (a mean only of squares, a sum
  not of ``exp``: as the static rules) with a float16 result;
* AMP204 ``exp``-family on inputs above 0 or a power >= 2 (not feeding a reduction) in float16;
* AMP301/AMP303 a fill value that overflows float16 (raised "cannot be converted ... without
  overflow", or silently -inf); AMP303 when the value is another dtype's ``finfo`` extreme;
* AMP302 an eps that rounds to 0 in float16 where it meets float16 values (an ``add``, a
  ``normalize``, or an optimizer's eps over float16 parameters, at its construction line);
* ``nonfinite``: inf/NaN that first appeared in an op with finite inputs, and ``underflow``: a
  product, quotient, power or reciprocal of nonzero operands that came out 0 (outside optimizer
  steps), where no coded hazard on the same line explains them.

Each is then matched with ``check``'s findings for the same files on (file, statement, code):
**confirmed**, **runtime only** (the static analysis missed it), and for static findings also
**not reached** (the line never ran) or **not observed** (it ran; the hazard did not show).
"""
from __future__ import annotations

import ast
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from amp_lint.data import numerics
from amp_lint.data import ops as opdata
from amp_lint.runtime import harness
from amp_lint.runtime import target as targets
from amp_lint.runtime.target import Target

RUNTIME_CODES = ("AMP201", "AMP202", "AMP203", "AMP204", "AMP301", "AMP302", "AMP303")
NONFINITE = "nonfinite"
UNDERFLOW = "underflow"
CONFIRMED, RUNTIME_ONLY, NOT_REACHED, NOT_OBSERVED = "confirmed", "runtime only", "not reached", "not observed"
#: Values a ``torch.finfo`` of a wider dtype produces (AMP303 when they meet float16).
_FINFO_EXTREMES = (numerics.FP32_MAX, numerics.BF16_MAX, sys.float_info.max)


@dataclass
class Options:
    device: str = "auto"
    timeout: float = 300.0
    steps: int = 0
    seed: Optional[int] = 0
    env: Dict[str, str] = field(default_factory=dict)


@dataclass
class Hazard:
    """A hazard seen at run time, at a user source line."""

    code: str
    path: str
    line: int
    function: str
    ops: List[str]
    message: str
    calls: int
    first_step: Optional[int]
    status: str = RUNTIME_ONLY
    static_line: Optional[int] = None
    static_low_confidence: bool = False

    @property
    def shown_line(self) -> int:
        return self.static_line or self.line


@dataclass
class StaticResult:
    path: str
    line: int
    code: str
    message: str
    status: str
    low_confidence: bool = False


@dataclass
class TraceResult:
    target: Target
    options: Options
    run: Optional[harness.RunResult] = None
    hazards: List[Hazard] = field(default_factory=list)
    static: List[StaticResult] = field(default_factory=list)
    error: Optional[str] = None
    error_tail: str = ""
    crash: Optional[str] = None

    @property
    def exit_code(self) -> int:
        if self.error:
            return 2
        return 1 if self.hazards else 0


def trace(target: Target, options: Options, progress: Optional[Callable[[str], None]] = None) -> TraceResult:
    """Run ``target`` once with per-op tracing, classify, and cross-reference the static findings."""
    say = progress or (lambda message: None)
    result = TraceResult(target, options)
    say("running the script with op tracing")
    kw = target.run_kwargs()
    run = harness.run_script(kw.pop("path"), *target.args, **kw, timeout=options.timeout, trace=True,
                             max_steps=options.steps or None, device=options.device, seed=options.seed,
                             env_extra=options.env)
    result.run = run
    record = run.instrumentation.get("trace")
    failed = targets.failure(run)
    if not isinstance(record, dict):
        result.error = f"run failed: {failed}" if failed else "the script never imported torch (nothing to trace)"
        result.error_tail = run.stderr_tail()
        return result
    result.hazards = classify(record, stepped=bool(run.instrumentation.get("steps_total")))
    if failed:
        raised = [h for h in result.hazards if h.code in ("AMP301", "AMP303") and "raised" in h.message]
        if raised and not targets.environmental(run):
            result.crash = f"{failed} (at {targets.display_path(raised[0].path)}:{raised[0].line}: {raised[0].code})"
        else:
            result.error = f"run failed: {failed}"
            result.error_tail = run.stderr_tail()
    say("checking the traced files statically")
    files = _traced_files(target, record)
    cross_reference(result, files)
    return result


def _traced_files(target: Target, record: Dict[str, Any]) -> List[str]:
    files = {str(p) for p in targets.local_files(target)}
    files.update(f for f in record.get("lines", {}) if f.endswith(".py") and Path(f).is_file())
    return sorted(str(Path(f).resolve()) for f in files)


# -- classification ------------------------------------------------------------------------------

def _base(op: str) -> str:
    return op[:-1] if op.endswith("_") and not op.startswith("__") else op


def _is_finfo_extreme(value: float) -> bool:
    return any(math.isclose(abs(value), extreme, rel_tol=1e-6) for extreme in _FINFO_EXTREMES)


def _where(rec: Dict[str, Any]) -> str:
    states = [s for s in rec.get("autocast", []) if s != "off"]
    if states:
        return "under autocast " + ", ".join(s.replace(":", " ") for s in states)
    return "outside autocast"


def _power_limit(exponent: float) -> float:
    if exponent == 2:
        return numerics.FP16_SQUARE_OVERFLOW
    if exponent == 3:
        return numerics.FP16_CUBE_OVERFLOW
    return numerics.FP16_MAX ** (1.0 / exponent)




def classify(record: Dict[str, Any], stepped: bool = False) -> List[Hazard]:
    """Hazards from the per-op records of one traced run (see the module docstring).

    ``stepped``: the run took optimizer steps (messages then say at which step things happened).
    """
    found: Dict[Tuple[str, int, str], Hazard] = {}

    def _step(rec: Dict[str, Any]) -> str:
        """", step N" in runs that step an optimizer (step 1 is everything before the first step)."""
        return f", step {rec['nonfinite_step']}" if stepped and rec.get("nonfinite_step") else ""

    def _nonfinite_note(rec: Dict[str, Any]) -> str:
        if not rec.get("nonfinite_new"):
            return ""
        return f"; inf/NaN first appeared here (inputs finite{_step(rec)})"
    ops = record.get("ops", [])

    def add(code: str, rec: Dict[str, Any], message: str) -> None:
        key = (rec["file"], rec["line"], code)
        hazard = found.get(key)
        if hazard is None:
            found[key] = Hazard(code, rec["file"], rec["line"], rec.get("function", ""), [rec["op"]], message,
                                rec.get("calls", 0), rec.get("first_step"))
        else:
            if rec["op"] not in hazard.ops:
                hazard.ops.append(rec["op"])
                hazard.message += f"; {message}"
            hazard.calls += rec.get("calls", 0)

    eps_optimizers: Dict[str, Dict[str, Any]] = {}
    for opt in record.get("optimizers", []):
        tiny = [e for e in opt.get("eps", []) if numerics.underflows(e, "f16")]
        if "float16" in opt.get("param_dtypes", []) and tiny and not opt.get("fused") and opt.get("file"):
            eps_optimizers[opt["key"]] = opt
            note = ""
            if opt.get("params_nonfinite_step"):
                note = f"; parameters were inf/NaN after step {opt['params_nonfinite_step']}"
            add("AMP302", {"file": opt["file"], "line": opt["line"], "op": opt["class"], "calls": opt["steps"],
                           "first_step": 1, "function": ""},
                f"{opt['class']}(eps={numerics.format_number(tiny[0])}) stepped float16 parameters "
                f"{opt['steps']} times: eps is 0 in float16{note}")

    squares_at: Dict[Tuple[str, int], List[Dict[str, Any]]] = {}
    for rec in ops:
        if _base(rec["op"]) in opdata.POWER_OPS:
            squares_at.setdefault((rec["file"], rec["line"]), []).append(rec)

    leftovers: List[Dict[str, Any]] = []
    for rec in ops:
        op, base = rec["op"], _base(rec["op"])
        out16 = "float16" in rec.get("out", [])
        where = _where(rec)
        if rec.get("fill_value") is not None:
            value = rec["fill_value"]
            code = "AMP303" if _is_finfo_extreme(value) else "AMP301"
            what = (f"raised \"{rec['raised']}\"" if rec.get("raised") else "the value became inf silently")
            shown = numerics.format_number(value)
            if math.isclose(abs(value), numerics.FP32_MAX, rel_tol=1e-6):
                shown += f" (torch.finfo(torch.float32).{'min' if value < 0 else 'max'})"
            add(code, rec, f"`{op}` filled a float16 tensor with {shown} "
                           f"(float16 max {numerics.format_number(numerics.FP16_MAX)}): {what}")
        elif base in opdata.SOFTMAX_OPS and out16:
            add("AMP201", rec, f"`{op}` ran in float16 {where}{_nonfinite_note(rec)}")
        elif base in opdata.LOSSES and out16:
            add("AMP202", rec, f"`{op}` ran in float16 {where}{_nonfinite_note(rec)}")
        elif base in opdata.REDUCTIONS and out16:
            fed_by = rec.get("fed_by", [])
            if base == "mean" and "square" not in fed_by:
                continue  # a plain mean accumulates in fp32 and cannot exceed its largest input
            if base == "sum" and "exp" in fed_by:
                continue  # hand-written softmax: AMP204 reports the exp
            what = "mean of squares" if "square" in fed_by and base == "mean" else f"`{op}`"
            note = _nonfinite_note(rec)
            for square in squares_at.get((rec["file"], rec["line"]), []):
                if square.get("nonfinite_new"):
                    note += (f"; the square overflowed to inf (|x| up to "
                             f"{numerics.format_number(square.get('max_abs_in') or 0)}{_step(square)})")
            add("AMP203", rec, f"{what} ran in float16 {where}{note}")
        elif base in opdata.EXP_OPS and out16 and (rec.get("max_in") or 0) > 0:
            add("AMP204", rec, f"`{op}` ran in float16 {where} on inputs up to {rec['max_in']:.4g} (overflows "
                               f"above {numerics.FP16_EXP_OVERFLOW:.2f}){_nonfinite_note(rec)}")
        elif base in opdata.POWER_OPS and out16 and (rec.get("exponent") or 0) >= 2:
            if rec.get("feeds"):
                continue  # a square feeding a reduction: AMP203 reports it
            exponent = rec["exponent"]
            add("AMP204", rec, f"x**{exponent:g} ran in float16 {where} on |x| up to "
                               f"{(rec.get('max_abs_in') or 0):.4g} (overflows above {_power_limit(exponent):.4g})"
                               f"{_nonfinite_note(rec)}")
        elif rec.get("eps") is not None:
            if rec.get("in_optimizer") in eps_optimizers:
                continue  # the optimizer's own eps: reported at its construction line
            add("AMP302", rec, f"eps {numerics.format_number(rec['eps'])} meets float16 values in `{op}`: "
                               f"it rounds to 0{_nonfinite_note(rec)}")
        elif rec.get("nonfinite_new") or (rec.get("zeros_new") and not rec.get("in_optimizer")):
            leftovers.append(rec)

    coded_lines = {(h.path, h.line) for h in found.values()}
    for rec in leftovers:
        opt = eps_optimizers.get(rec.get("in_optimizer") or "")
        if opt is not None:
            hazard = found[(opt["file"], opt["line"], "AMP302")]
            if "first appeared" not in hazard.message:
                hazard.message += f"; inf/NaN first appeared in its update (`{rec['op']}`{_step(rec)})"
            continue
        if (rec["file"], rec["line"]) in coded_lines:
            continue
        dtypes = "/".join(rec.get("out", [])) or "?"
        if rec.get("nonfinite_new"):
            add(NONFINITE, rec, f"inf/NaN first appeared in `{rec['op']}` ({dtypes} {_where(rec)}; inputs finite"
                                f"{_step(rec)})")
        else:
            add(UNDERFLOW, rec, f"`{rec['op']}` flushed results of nonzero {dtypes} operands to 0 ({_where(rec)}; up "
                                f"to {rec['max_zero_fraction']:.1%} of the result)")
    return sorted(found.values(), key=lambda h: (h.path, h.line, h.code))


# -- cross-reference with the static findings ----------------------------------------------------

class _Statements:
    """Maps a line to the first line of the innermost statement holding it (headers only for
    compound statements), so a runtime line and a static row of one statement compare equal."""

    def __init__(self) -> None:
        self._maps: Dict[str, Dict[int, Tuple[int, int]]] = {}

    def _map(self, path: str) -> Dict[int, Tuple[int, int]]:
        if path not in self._maps:
            spans: Dict[int, Tuple[int, int]] = {}
            try:
                tree = ast.parse(Path(path).read_bytes(), filename=path)
            except (OSError, SyntaxError, ValueError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if not isinstance(node, ast.stmt):
                    continue
                body = getattr(node, "body", None)
                end = (body[0].lineno - 1) if isinstance(body, list) and body else (node.end_lineno or node.lineno)
                end = max(end, node.lineno)
                for line in range(node.lineno, end + 1):
                    spans[line] = (node.lineno, end)  # ast.walk is outer-first: inner statements win
            self._maps[path] = spans
        return self._maps[path]

    def start(self, path: str, line: int) -> int:
        return self._map(path).get(line, (line, line))[0]

    def span(self, path: str, line: int) -> Tuple[int, int]:
        return self._map(path).get(line, (line, line))


def cross_reference(result: TraceResult, files: Sequence[str]) -> None:
    """Set each hazard's status and list the static findings of ``files`` with theirs."""
    from amp_lint.runtime.static import static_findings

    record = result.run.instrumentation.get("trace", {}) if result.run else {}
    executed = {str(Path(f).resolve()): set(lines) for f, lines in record.get("lines", {}).items()}
    statements = _Statements()
    findings = static_findings(files, RUNTIME_CODES, start=result.target.root) if files else []
    static_keys: Dict[Tuple[str, int, str], Any] = {}
    for f in findings:
        path = str(Path(f.path).resolve())
        static_keys.setdefault((path, statements.start(path, f.line), f.code), f)
    matched = set()
    for hazard in result.hazards:
        path = str(Path(hazard.path).resolve())
        key = (path, statements.start(path, hazard.line), hazard.code)
        f = static_keys.get(key)
        if f is not None:
            hazard.status = CONFIRMED
            hazard.static_line = f.line
            hazard.static_low_confidence = f.low_confidence
            matched.add(key)
    for key, f in sorted(static_keys.items(), key=lambda kv: kv[0]):
        path = key[0]
        if key in matched:
            status = CONFIRMED
        else:
            start, end = statements.span(path, f.line)
            ran = executed.get(path, set())
            status = NOT_OBSERVED if any(start <= line <= end for line in ran) else NOT_REACHED
        result.static.append(StaticResult(f.path, f.line, f.code, f.message, status, f.low_confidence))


# -- output --------------------------------------------------------------------------------------

def _rel(path: str) -> str:
    return targets.display_path(path)


def _hazard_line(h: Hazard) -> str:
    status = h.status + (" (static: --preview only)" if h.static_low_confidence else "")
    return f"{_rel(h.path)}:{h.shown_line}: {h.code} [{status}] {h.message}"


def render_text(result: TraceResult) -> str:
    tgt = result.target
    lines = [f"amp-lint trace {tgt.shown}{' -- ' + ' '.join(tgt.args) if tgt.args else ''}"]
    run = result.run
    if run is not None:
        rec = run.instrumentation.get("trace") or {}
        dev = run.instrumentation.get("device") or {}
        device = "cpu, real float16 (no CUDA here)" if dev.get("used") == "cpu" else (dev.get("used") or "?")
        lines.append(f"device: {device}; ran {run.duration_s:.1f} s, exit status {run.returncode}; "
                     f"{rec.get('calls', 0)} torch calls, {rec.get('checked', 0)} checked numerically")
    only = [h for h in result.hazards if h.status == RUNTIME_ONLY]
    if only:
        lines += ["", f"RUNTIME ONLY: {len(only)} hazard{'s' if len(only) != 1 else ''} the static analysis missed:"]
        lines += [f"  {_hazard_line(h)}" for h in only]
    confirmed = [h for h in result.hazards if h.status != RUNTIME_ONLY]
    if confirmed:
        lines += ["", "runtime hazards confirming static findings:"]
        lines += [f"  {_hazard_line(h)}" for h in confirmed]
    others = [s for s in result.static if s.status != CONFIRMED]
    if others:
        lines += ["", "static findings the run did not confirm:"]
        for s in others:
            lines.append(f"  {_rel(s.path)}:{s.line}: {s.code} [{s.status}] {s.message}")
    if result.crash:
        lines += ["", f"the script crashed on a hazard: {result.crash}"]
    counts = {status: sum(1 for s in result.static if s.status == status)
              for status in (CONFIRMED, NOT_REACHED, NOT_OBSERVED)}
    lines += ["", (f"{len(result.hazards)} runtime hazard{'s' if len(result.hazards) != 1 else ''} "
                   f"({len(confirmed)} confirmed, {len(only)} runtime only); static findings: "
                   f"{counts[CONFIRMED]} confirmed, {counts[NOT_REACHED]} not reached, "
                   f"{counts[NOT_OBSERVED]} not observed")]
    if result.error:
        lines.append(f"error: {result.error}")
    return "\n".join(lines) + "\n"


def to_json(result: TraceResult) -> Dict[str, Any]:
    run = result.run
    rec = (run.instrumentation.get("trace") if run else None) or {}
    return {
        "target": result.target.shown, "args": list(result.target.args), "exit_code": result.exit_code,
        "error": result.error, "crash": result.crash,
        "run": None if run is None else {"argv": run.argv[1:], "returncode": run.returncode,
                                          "duration_s": round(run.duration_s, 3), "failure": targets.failure(run),
                                          "device": run.instrumentation.get("device"),
                                          "calls": rec.get("calls"), "checked": rec.get("checked")},
        "hazards": [{"code": h.code, "filename": _rel(h.path), "line": h.shown_line, "runtime_line": h.line,
                     "function": h.function, "status": h.status, "message": h.message, "ops": h.ops,
                     "calls": h.calls, "first_step": h.first_step,
                     "static_low_confidence": h.static_low_confidence} for h in result.hazards],
        "static": [{"code": s.code, "filename": _rel(s.path), "line": s.line, "status": s.status,
                    "message": s.message, "low_confidence": s.low_confidence} for s in result.static],
        "ops": [dict(op, file=_rel(op["file"])) for op in rec.get("ops", [])],
        "optimizers": rec.get("optimizers", []),
    }


def render_json(result: TraceResult) -> str:
    return json.dumps(to_json(result), indent=2, default=str) + "\n"


def render_sarif(result: TraceResult, tool_version: str) -> str:
    """The runtime hazards as SARIF results (the status in each result's properties)."""
    from amp_lint import DOCS_URL
    from amp_lint.findings import Finding, Location, Severity
    from amp_lint.reporters import RuleMeta
    from amp_lint.reporters import sarif
    from amp_lint.rules import ALL_RULES

    by_code = {r.code: r for r in ALL_RULES}
    metas: Dict[str, RuleMeta] = {}
    findings: List[Finding] = []
    for h in result.hazards:
        rule = by_code.get(h.code)
        if rule is not None:
            name, severity, summary = rule.name, rule.severity, rule.summary
            url = f"{DOCS_URL}/{h.code}.md"
        else:
            name, severity, summary = {
                NONFINITE: ("non-finite-first-appears", Severity.ERROR, "inf/NaN first appeared in this op"),
                UNDERFLOW: ("underflow-to-zero", Severity.WARNING, "nonzero operands gave 0 in low precision"),
            }[h.code]
            url = f"{DOCS_URL}/README.md"
        metas[h.code] = RuleMeta(h.code, name, severity.value, summary, url)
        loc = Location(h.shown_line, 1)
        findings.append(Finding(h.code, name, severity, f"[{h.status}] {h.message}", _rel(h.path), loc, loc))
    findings.sort(key=Finding.sort_key)
    log = sarif.build(findings, rules=metas, tool_version=tool_version)
    by_key = {(_rel(h.path), h.shown_line, h.code): h for h in result.hazards}
    for res, finding in zip(log["runs"][0]["results"], findings):
        hazard = by_key[(finding.filename, finding.location.row, finding.code)]
        res["properties"].update({"runtime_status": hazard.status, "ops": hazard.ops, "calls": hazard.calls})
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
