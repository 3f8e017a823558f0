"""`amp-lint --version` and `--help` start fast: the CLI module imports only click at start-up.

No timing assertion (machines differ): what is checked is that the heavy modules (LibCST, the
rules, the runner, the reporters, the analysis) are not imported by these invocations. The
README's "Speed" section gives the measured start-up time.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = r"""
import json, sys
from amp_lint.cli import main
try:
    main(sys.argv[1:], prog_name="amp-lint")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

#: Modules that must not be imported to answer --version or --help.
HEAVY = ("libcst", "amp_lint.rules", "amp_lint.runner", "amp_lint.reporters", "amp_lint.engine",
         "amp_lint.analysis", "amp_lint.cache", "amp_lint.config", "amp_lint.discovery", "torch")


def _loaded(*args: str) -> "tuple[int, list]":
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["code"], data["modules"]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["check", "--help"], ["fix", "--help"],
                                  ["rule", "--help"]], ids=" ".join)
def test_startup_imports_no_heavy_module(args) -> None:
    code, modules = _loaded(*args)
    assert code == 0
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []


def test_the_probe_sees_heavy_imports_when_a_command_runs(tmp_path) -> None:
    """The check above can fail: a real command does import LibCST and the rules."""
    (tmp_path / "a.py").write_text("x = 1\n")
    code, modules = _loaded("check", "--isolated", "--no-cache", str(tmp_path / "a.py"))
    assert code == 0
    assert "libcst" in modules and "amp_lint.rules" in modules and "amp_lint.runner" in modules
