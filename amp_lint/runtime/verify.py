"""``amp-lint verify``: run a script, its mixed-precision rewrite, and the rewrite in fp32, then judge.

Three short instrumented runs (:mod:`amp_lint.runtime.harness`), each stopped after ``steps``
optimizer steps: ``original`` (the script as it is), ``amp`` (what ``amp-lint fix --unsafe-fixes``
makes of it, run from a temporary mirror; the user's files are touched only with ``apply``) and
``fp32-ref`` (the rewrite with every autocast and GradScaler forced off, skipping the optimizer
on the steps the ``amp`` run's GradScaler skipped, so that the loss comparison measures precision
rather than the loss scale's warm-up). The checks read the
``amp`` run, and the ``fp32-ref`` run where they compare:

* ``runs``: the rewrite runs (to the step limit or its end);
* ``autocast``: every matmul-like op of the training forward ran under an enabled autocast;
* ``scaler``: an enabled GradScaler, every backward through ``scale``, every step through
  ``scaler.step`` and an ``update`` before the same optimizer steps again (several optimizers
  share one update per iteration), clipping only after ``unscale_`` (n/a for bfloat16);
* ``loss``: the mean loss over the steps within ``rtol`` of the fp32 reference;
* ``finite``: no inf/NaN in the loss, the gradients of a taken step or the parameters;
* ``update``: every parameter that the fp32 reference updates changes.

With ``no_fix`` the script itself is the ``amp`` run (a migration made by hand).
"""
from __future__ import annotations

import concurrent.futures
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from amp_lint.runtime import harness
from amp_lint.runtime import target as targets
from amp_lint.runtime.target import Target

PASS, FAIL, NA, NOT_RUN = "pass", "fail", "n/a", "not checked"
VERIFIED, FAILED, ERROR = "verified", "failed", "error"
EXIT_CODES = {VERIFIED: 0, FAILED: 1, ERROR: 2}

#: (name, the one-line claim a check makes)
CHECKS: Tuple[Tuple[str, str], ...] = (
    ("runs", "the {subject} runs"),
    ("autocast", "autocast covers the forward"),
    ("scaler", "scaler protocol complete"),
    ("loss", "loss within rtol={rtol:g} of the fp32 reference"),
    ("finite", "no non-finite values"),
    ("update", "parameters update"),
)


@dataclass
class Options:
    steps: int = 8
    rtol: float = 0.05
    device: str = "auto"
    timeout: float = 120.0
    seed: Optional[int] = 0
    no_fix: bool = False
    apply: bool = False
    jobs: int = 1
    env: Dict[str, str] = field(default_factory=dict)


@dataclass
class Check:
    name: str
    title: str
    status: str
    detail: str


@dataclass
class Verdict:
    """The outcome of ``verify``: a verdict, the checks, the runs and what the rewrite changed."""

    target: Target
    options: Options
    verdict: str = ERROR
    error: Optional[str] = None
    error_tail: str = ""
    checks: List[Check] = field(default_factory=list)
    runs: Dict[str, harness.RunResult] = field(default_factory=dict)
    changed: List[str] = field(default_factory=list)
    #: path -> the bytes the rewrite gave it (what ``--apply`` writes)
    rewrites: Dict[str, bytes] = field(default_factory=dict)
    fixes: int = 0
    applied: bool = False
    notes: List[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def verify(target: Target, options: Options, progress: Optional[Callable[[str], None]] = None) -> Verdict:
    """Run the three runs and the checks; never raises for a script that fails to run."""
    say = progress or (lambda message: None)
    result = Verdict(target, options)
    with tempfile.TemporaryDirectory(prefix="amp_lint_verify_") as tmp:
        amp_target = target
        if not options.no_fix:
            from amp_lint.runtime.static import rewrite

            files = [str(p) for p in targets.local_files(target)]
            changed, result.fixes, errors = rewrite(files, start=target.root)
            for message in errors:
                result.notes.append(f"not rewritten: {message}")
            result.changed = sorted(changed)
            result.rewrites = dict(changed)
            if changed:
                amp_target = targets.mirror(target, changed, Path(tmp) / "rewrite")
        same = amp_target is target
        plan = [("amp", amp_target, False), ("fp32-ref", amp_target, True)]
        if not same:
            plan.insert(0, ("original", target, False))
        result.runs = _run_all(plan, options, say)

    original = result.runs.get("original")
    if original is not None and targets.failure(original) and targets.environmental(original):
        return _error(result, "original", original)
    amp = result.runs["amp"]
    if targets.failure(amp) and (same or targets.environmental(amp)):
        return _error(result, "amp" if not same else "script", amp)
    if not targets.failure(amp) and not amp.instrumentation.get("steps_total"):
        if "report_error" in amp.instrumentation or not amp.instrumentation.get("instrumented"):
            result.error = "the script never imported torch (nothing to verify)"
        else:
            result.error = "no optimizer step ran: nothing to verify (is this a training script?)"
        return result
    ref = result.runs["fp32-ref"]
    if targets.failure(ref) and not targets.failure(amp):
        return _error(result, "fp32-ref", ref)
    result.checks = run_checks(amp, ref, options, subject="rewrite" if not same else "script")
    result.verdict = VERIFIED if all(c.status in (PASS, NA) for c in result.checks) else FAILED
    if options.apply:
        _apply(result)
    return result


def _run_all(plan, options: Options, say: Callable[[str], None]) -> Dict[str, harness.RunResult]:
    """The runs in order (``original`` and ``amp`` side by side with ``jobs`` > 1); the reference
    last, skipping the steps the ``amp`` run's GradScaler skipped."""

    def one(item, skip=()) -> harness.RunResult:
        label, tgt, force = item
        say(f"running {label} ({options.steps} steps)")
        kw = tgt.run_kwargs()
        return harness.run_script(kw.pop("path"), *tgt.args, **kw, timeout=options.timeout, force_fp32=force,
                                  max_steps=options.steps, device=options.device, seed=options.seed,
                                  env_extra=_env(options, rewritten=label != "original"), skip_steps=skip)

    first, ref = plan[:-1], plan[-1]
    runs: Dict[str, harness.RunResult] = {}
    if options.jobs > 1 and len(first) > 1:
        with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
            runs.update(zip([p[0] for p in first], pool.map(one, first)))
    else:
        for item in first:
            runs[item[0]] = one(item)
            if item[0] == "original" and targets.failure(runs[item[0]]) and targets.environmental(runs[item[0]]):
                return runs  # the other runs would fail the same way
    original, amp = runs.get("original"), runs["amp"]
    if original is not None and targets.failure(original) and targets.environmental(original):
        return runs
    if not targets.failure(amp) and not amp.instrumentation.get("steps_total"):
        return runs  # no training step: nothing to compare with a reference
    skipped = [s["step"] for s in amp.steps if s.get("skipped")]
    runs[ref[0]] = one(ref, skipped)
    return runs


def _env(options: Options, rewritten: bool) -> Dict[str, str]:
    env = dict(options.env)
    if rewritten:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # no .pyc of rewritten modules in the user's __pycache__
    return env


def _error(result: Verdict, label: str, run: harness.RunResult) -> Verdict:
    result.error = f"{label} run failed: {targets.failure(run)}"
    result.error_tail = run.stderr_tail()
    result.verdict = ERROR
    return result


def _apply(result: Verdict) -> None:
    if result.verdict != VERIFIED or not result.changed:
        if result.changed:
            result.notes.append("--apply: not applied (the rewrite is not verified)")
        return
    from amp_lint.source import write_atomic

    for path, data in result.rewrites.items():
        write_atomic(path, data)
    result.applied = True


# -- checks --------------------------------------------------------------------------------------

def _n(count: int, word: str) -> str:
    """``1 step`` / ``2 steps``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _site(site: Optional[Dict[str, Any]]) -> str:
    if not site:
        return ""
    return f" (first at {targets.display_path(site['file'])}:{site['line']})"


def run_checks(amp: harness.RunResult, ref: harness.RunResult, options: Options, subject: str = "rewrite") -> List[Check]:
    """The checks of the ``amp`` run (``subject``: "rewrite", or "script" when it is run as it is)."""
    titles = {name: title.format(rtol=options.rtol, subject=subject) for name, title in CHECKS}
    a, r = amp.instrumentation, ref.instrumentation
    failed = targets.failure(amp)
    if failed:
        checks = [Check("runs", titles["runs"], FAIL, failed)]
        return checks + [Check(n, titles[n], NOT_RUN, f"the {subject} did not run") for n, _ in CHECKS[1:]]
    steps = a.get("steps_total", 0)
    how = f"stopped after {_n(steps, 'step')}" if amp.stopped else f"ran to its end ({_n(steps, 'step')})"
    checks = [Check("runs", titles["runs"], PASS, f"{how}, {amp.duration_s:.1f} s")]
    for name, func in (("autocast", _check_autocast), ("scaler", _check_scaler)):
        status, detail = func(a)
        checks.append(Check(name, titles[name], status, detail))
    status, detail = _check_loss(amp, ref, options.rtol)
    checks.append(Check("loss", titles["loss"], status, detail))
    status, detail = _check_finite(amp)
    checks.append(Check("finite", titles["finite"], status, detail))
    status, detail = _check_update(a, r)
    checks.append(Check("update", titles["update"], status, detail))
    return checks


def _low_dtypes(a: Dict[str, Any]) -> List[str]:
    return sorted({k.split(":", 1)[1] for k in a.get("forward", {}).get("dtypes", {})})


def _check_autocast(a: Dict[str, Any]) -> Tuple[str, str]:
    fwd = a.get("forward", {})
    inside, outside, off = fwd.get("autocast", 0), fwd.get("outside", 0), fwd.get("disabled_region", 0)
    if not any(e["enabled"] for e in a.get("autocast", [])):
        return FAIL, "autocast was never entered (enabled)"
    total = inside + outside + off
    if outside:
        return FAIL, (f"{outside} of {total} matmul-like ops of the training forward ran outside autocast"
                      f"{_site(fwd.get('first_outside'))}")
    if not inside:
        return FAIL, "autocast was entered, but no matmul-like op of a training forward ran inside it"
    kinds = ", ".join(f"{k.replace(':', ' ')}" for k in sorted(fwd.get("dtypes", {})))
    extra = f"; {off} in regions with autocast deliberately disabled" if off else ""
    mapped = " (the script's CUDA autocast, run on the CPU)" if a.get("device", {}).get("mapped") else ""
    return PASS, f"{inside} of {total} matmul-like ops of the training forward ran under autocast ({kinds}){mapped}{extra}"


def _check_scaler(a: Dict[str, Any]) -> Tuple[str, str]:
    enabled = [s for s in a.get("scalers", []) if s.get("enabled")]
    low = _low_dtypes(a)
    outside = set(a.get("forward", {}).get("outside_dtypes", {}))
    if not enabled and "float16" not in low and "float16" not in outside:
        if low:
            return NA, f"{'/'.join(low)} autocast needs no loss scaling"
        return NA, "nothing ran in float16 (no loss to scale)"
    calls = a.get("scaler_enabled_calls", {})
    backward, scaled = a.get("backward_calls", 0), a.get("scaled_backward_calls", 0)
    problems: List[str] = []
    if not enabled:
        problems.append(f"no enabled GradScaler was created: {backward} backward calls on float16 losses went unscaled"
                        f"{_site(a.get('first_unscaled_backward'))}")
    else:
        if backward > scaled:
            problems.append(f"{backward - scaled} of {backward} backward calls did not go through scaler.scale"
                            f"{_site(a.get('first_unscaled_backward'))}")
        if a.get("direct_optimizer_steps"):
            problems.append(f"optimizer.step() was called directly {a['direct_optimizer_steps']} times, bypassing "
                            f"scaler.step{_site(a.get('first_direct_optimizer_step'))}")
        if not calls.get("step"):
            problems.append("scaler.step was never called")
        elif a.get("scaler_steps_without_update") or not calls.get("update"):
            problems.append(f"an optimizer stepped through the scaler again before scaler.update() "
                            f"({calls.get('update', 0)} updates for {calls['step']} scaler.step calls)")
        if a.get("clip_while_scaled"):
            problems.append(f"clip_grad_norm_ ran {a['clip_while_scaled']} times on still-scaled gradients, before "
                            f"scaler.unscale_{_site(a.get('first_clip_while_scaled'))}")
    if problems:
        return FAIL, "; ".join(problems)
    devices = ", ".join(sorted({s["device"] for s in enabled}))
    clip = ""
    if a.get("clip_grad_norm_calls"):
        clip = f", clipping after unscale_ ({a.get('clip_after_unscale', 0)} times)"
    return PASS, (f"GradScaler({devices}): {scaled} scaled backward calls, {calls.get('step', 0)} scaler.step + "
                  f"update{clip}; {_n(a.get('skipped_steps', 0), 'step')} skipped, final scale {a.get('final_scale')}")


def _losses(run: harness.RunResult) -> List[float]:
    return [s["loss"] for s in run.steps if s.get("loss") is not None]


def _check_loss(amp: harness.RunResult, ref: harness.RunResult, rtol: float) -> Tuple[str, str]:
    la, lr = _losses(amp), _losses(ref)
    if not la or not lr:
        return FAIL, "no loss was observed (nothing was backpropagated?)"
    n = min(len(la), len(lr))
    ma, mr = sum(la[:n]) / n, sum(lr[:n]) / n
    if not math.isfinite(ma) or not math.isfinite(mr):
        return FAIL, f"mean loss over {n} steps is {ma:g} (fp32 reference {mr:g})"
    rel = abs(ma - mr) / max(abs(mr), 1e-12)
    status = PASS if rel <= rtol else FAIL
    replayed = ref.instrumentation.get("replayed_skips", 0)
    note = f" (the reference skipped the same {_n(replayed, 'step')})" if replayed else ""
    return status, f"mean loss over {n} steps {ma:.6g} vs {mr:.6g} in fp32: {rel:.2%} apart{note}"


def _check_finite(amp: harness.RunResult) -> Tuple[str, str]:
    bad = [(s["step"], s["nonfinite"]) for s in amp.steps if s.get("nonfinite")]
    if bad:
        step, what = bad[0]
        return FAIL, f"inf/NaN in the {' and '.join(what)} at step {step}" + (
            f" (and {len(bad) - 1} later steps)" if len(bad) > 1 else "")
    skipped = sum(1 for s in amp.steps if s.get("skipped"))
    note = f"; {_n(skipped, 'step')} skipped by the scaler (inf/NaN gradients, as loss scaling expects)" if skipped else ""
    return PASS, f"loss, gradients and parameters finite at every step{note}"


def _check_update(a: Dict[str, Any], r: Dict[str, Any]) -> Tuple[str, str]:
    pa, pr = a.get("params") or {}, r.get("params") or {}
    if not pa.get("checked"):
        return (NA, pa["reason"]) if pa.get("reason") else (FAIL, "no optimizer step ran")
    if not pa.get("changed"):
        return FAIL, f"none of the {pa.get('total', 0)} parameters changed ({_n(a.get('skipped_steps', 0), 'step')} skipped)"
    never = [n for n in pa.get("unchanged", []) if n not in set(pr.get("unchanged", []))]
    if never:
        shown = ", ".join(never[:5]) + (f" and {len(never) - 5} more" if len(never) > 5 else "")
        return FAIL, f"{len(never)} parameters never changed, though they do in fp32: {shown}"
    same = len(pa.get("unchanged", []))
    note = f" ({same} unchanged in fp32 too)" if same else ""
    return PASS, f"{pa['changed']} of {pa['total']} parameters changed{note}"


# -- output --------------------------------------------------------------------------------------

def _fmt(value: Any, spec: str = ".6g") -> str:
    if value is None:
        return "-"
    return format(value, spec)


def table_rows(result: Verdict) -> List[Dict[str, Any]]:
    rows = []
    for label, run in result.runs.items():
        scaled = any(s.get("enabled") for s in run.instrumentation.get("scalers", []))
        for s in run.steps:
            rows.append({"run": label, "step": s["step"], "loss": s.get("loss"),
                         "scale": s.get("scale") if scaled else None,
                         "skipped": s.get("skipped") if scaled else None, "nonfinite": s.get("nonfinite", []),
                         "replayed_skip": bool(s.get("skipped")) and not scaled})
    return rows


def render_table(result: Verdict) -> List[str]:
    """One row per step, a loss column per run (scale and skipped beside a run with a GradScaler)."""
    rows = table_rows(result)
    if not rows:
        return []
    labels = list(dict.fromkeys(r["run"] for r in rows))
    scaled = [label for label in labels if any(r["scale"] is not None for r in rows if r["run"] == label)]
    by_key = {(r["run"], r["step"]): r for r in rows}
    header = ["step"]
    for label in labels:
        header.append(f"{label} loss")
        if label in scaled:
            prefix = f"{label} " if len(scaled) > 1 else ""
            header += [f"{prefix}scale", f"{prefix}skipped"]
    header.append("non-finite")
    body = []
    for step in sorted({r["step"] for r in rows}):
        cells = [str(step)]
        bad = []
        for label in labels:
            row = by_key.get((label, step))
            loss = _fmt(row["loss"], ".6f") if row else ""
            if row and label not in scaled and row["replayed_skip"]:
                loss += " (skip)"
            cells.append(loss)
            if label in scaled:
                skipped = "" if row is None or row["skipped"] is None else ("yes" if row["skipped"] else "no")
                cells += [_fmt(row["scale"], "g") if row else "", skipped]
            if row and row["nonfinite"]:
                bad.append(f"{label}: {', '.join(row['nonfinite'])}")
        cells.append("; ".join(bad) or "-")
        body.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) if i < len(header) - 1 else h for i, (h, w) in enumerate(zip(header, widths)))]
    for cells in body:
        out.append("  ".join(c.rjust(w) if i < len(cells) - 1 else c for i, (c, w) in enumerate(zip(cells, widths))))
    return out


def render_text(result: Verdict) -> str:
    opts, tgt = result.options, result.target
    lines = [f"amp-lint verify {tgt.shown}{' -- ' + ' '.join(tgt.args) if tgt.args else ''}"]
    device = _device_line(result)
    if opts.no_fix:
        rewrite = "none (--no-fix: the script is checked as it is)"
    elif result.changed:
        files = ", ".join(targets.display_path(p) for p in result.changed)
        rewrite = f"{result.fixes} fix{'es' if result.fixes != 1 else ''} in {files}" + (
            " (applied)" if result.applied else "")
    else:
        rewrite = "no change (the script is checked as it is)"
    lines.append(f"device: {device}; steps: {opts.steps}; rewrite: {rewrite}")
    for note in result.notes:
        lines.append(f"note: {note}")
    table = render_table(result)
    if table:
        lines += [""] + table
    for label, run in result.runs.items():
        failed = targets.failure(run)
        if failed and label == "original":
            lines.append(f"note: the original run failed: {failed}")
    if result.checks:
        lines.append("")
        for check in result.checks:
            lines.append(f"{check.status.upper():<11} {check.title}: {check.detail}")
    lines.append("")
    if result.verdict == ERROR:
        lines.append(f"error: {result.error}")
    else:
        failed = [c.name for c in result.checks if c.status == FAIL]
        lines.append(VERIFIED if not failed else f"FAILED: {', '.join(failed)}")
    return "\n".join(lines) + "\n"


def _device_line(result: Verdict) -> str:
    for run in result.runs.values():
        dev = run.instrumentation.get("device") or {}
        if dev.get("used"):
            if dev["used"] == "cpu":
                why = "no CUDA here" if not dev.get("cuda_available") and result.options.device != "cpu" else "--device cpu"
                return f"cpu, real float16 ({why})"
            return "cuda"
    return result.options.device


def to_json(result: Verdict) -> Dict[str, Any]:
    runs = {}
    for label, run in result.runs.items():
        inst = run.instrumentation
        runs[label] = {
            "argv": run.argv[1:], "returncode": run.returncode, "duration_s": round(run.duration_s, 3),
            "timed_out": run.timed_out, "failure": targets.failure(run), "stopped": run.stopped,
            "steps": run.steps, "optimizer_steps": inst.get("optimizer_steps"),
            "skipped_steps": inst.get("skipped_steps"), "autocast": inst.get("autocast", []),
            "scalers": inst.get("scalers", []), "scaler_calls": inst.get("scaler_calls", {}),
            "forward": inst.get("forward"), "params": inst.get("params"), "device": inst.get("device"),
        }
    return {
        "target": result.target.shown, "args": list(result.target.args), "verdict": result.verdict,
        "exit_code": result.exit_code, "error": result.error,
        "options": {"steps": result.options.steps, "rtol": result.options.rtol, "device": result.options.device,
                    "no_fix": result.options.no_fix},
        "rewrite": {"changed": [targets.display_path(p) for p in result.changed], "fixes": result.fixes,
                    "applied": result.applied},
        "checks": [{"name": c.name, "title": c.title, "status": c.status, "detail": c.detail} for c in result.checks],
        "runs": runs, "notes": result.notes,
    }


def render_json(result: Verdict) -> str:
    return json.dumps(to_json(result), indent=2, default=str) + "\n"
