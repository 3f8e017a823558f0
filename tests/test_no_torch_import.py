"""`check` and `fix` never import torch (a pre-commit hook must not need it), nor the runtime package
of `verify`/`trace`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import sys
from click.testing import CliRunner
from amp_lint.cli import main
runner = CliRunner()
for args in (["check", "--no-cache", "--isolated", "--select", "ALL", sys.argv[1]],
             ["fix", "--diff", "--unsafe-fixes", "--no-cache", "--isolated", sys.argv[1]]):
    result = runner.invoke(main, args)
    assert result.exit_code in (0, 1), result.output
print("torch imported:", "torch" in sys.modules)
print("runtime imported:", any(name.startswith("amp_lint.runtime") for name in sys.modules))
"""


def test_check_and_fix_do_not_import_torch():
    out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "fixtures")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "torch imported: False" in out.stdout
    assert "runtime imported: False" in out.stdout
