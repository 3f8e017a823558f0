"""The AMP migration codemod on the runnable training fixtures.

For each positive fixture: ``amp-lint fix --unsafe-fixes`` on a temp copy must give the
hand-written ``fixtures/training/expected`` file, re-lint clean of the training rules, and a second
``fix`` must change nothing. Negative fixtures must produce no finding of the training rules.

That the rewritten scripts train on the CPU in real float16 (CPU autocast + an enabled
``GradScaler("cpu")``) close to the fp32 run of the same code is checked by running them:
``tests/runtime/test_training_fixtures.py`` and ``test_verify.py`` read the session's
``amp-lint verify`` runs of these fixtures, whose rewrite is this codemod's output
(``test_verify.py::test_rewrite_is_the_expected_migration``).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amp_lint.config import Settings
from amp_lint.engine.linter import fix_text, lint_text
from amp_lint.rules import RULES_BY_CODE

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "training"
EXPECTED = FIXTURES / "expected"
TRAINING_RULES = "AMP001,AMP101,AMP102,AMP103,AMP104,AMP106,AMP502"
_RULES = [RULES_BY_CODE[code] for code in TRAINING_RULES.split(",")]

# name -> (original, expected, extra files copied next to it)
POSITIVE = {
    "fp32_cnn": ("fp32_cnn.py", "fp32_cnn.py", ()),
    "fp32_mlp": ("fp32_mlp.py", "fp32_mlp.py", ()),
    "gpt_accum_clip": ("gpt_accum_clip.py", "gpt_accum_clip.py", ()),
    "half_finetune": ("half_finetune.py", "half_finetune.py", ()),
    "apex_o1": ("apex_o1.py", "apex_o1.py", ()),
    "split_project": ("split_project/train.py", "split_project_train.py", ("split_project/builders.py",)),
    "gan_two_losses": ("gan_two_losses.py", "gan_two_losses.py", ()),
    "conditional_optimizer": ("conditional_optimizer.py", "conditional_optimizer.py", ()),
    "cpu_model": ("cpu_model.py", "cpu_model.py", ()),
    "fp16_flag": ("fp16_flag.py", "fp16_flag.py", ()),
}
NEGATIVE = ["inference_only.py", "bf16_autocast.py", "already_amp.py", "fairseq_style_fp16_optimizer.py",
            "accelerate_owned.py"]


def _amp_lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amp_lint", *args], capture_output=True, text=True, cwd=ROOT)


class _Migrated:
    """Every positive fixture fixed once, each a temp copy in a directory of its own."""

    def __init__(self, tmp: Path) -> None:
        self.paths = {}
        for name, (original, _, extra) in POSITIVE.items():
            directory = tmp / name
            directory.mkdir()
            for rel in (original, *extra):
                shutil.copy(FIXTURES / rel, directory / Path(rel).name)
            self.paths[name] = directory / Path(original).name
        self.fix_output = {
            name: _amp_lint("fix", "--unsafe-fixes", "--isolated", "--no-cache", "--select", TRAINING_RULES, str(path))
            for name, path in self.paths.items()
        }


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    return _Migrated(tmp_path_factory.mktemp("codemod"))


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_fix_gives_the_expected_file(migrated, name):
    out = migrated.fix_output[name]
    assert out.returncode in (0, 1), out.stderr
    expected = (EXPECTED / POSITIVE[name][1]).read_text(encoding="utf-8")
    assert migrated.paths[name].read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_fixed_file_relints_clean_and_refixes_to_itself(migrated, name):
    text = migrated.paths[name].read_text(encoding="utf-8")
    settings = Settings(unsafe_fixes=True)
    findings = lint_text(str(migrated.paths[name]), text, settings, _RULES)
    assert findings == [], [f"{f.code} {f.message}" for f in findings]
    again, applied = fix_text(str(migrated.paths[name]), text, settings, _RULES)
    assert again == text and applied == 0


@pytest.mark.parametrize("fixture", NEGATIVE)
def test_negative_fixtures_have_no_training_findings(fixture):
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    findings = lint_text(fixture, text, Settings(unsafe_fixes=True, preview=True), _RULES)
    assert findings == [], [f"{f.code} {f.message}" for f in findings]


def test_lstm_loop_is_reported_without_a_crashing_fix(tmp_path):
    """nn.LSTM has no fp16 training kernel under CPU autocast (see the fixture's docstring)."""
    copy = tmp_path / "lstm_tagger.py"
    shutil.copy(FIXTURES / "lstm_tagger.py", copy)
    out = _amp_lint("check", "--isolated", "--no-cache", "--select", TRAINING_RULES, "--output-format", "concise", str(copy))
    assert "AMP001" in out.stdout and "LSTM" in out.stdout, out.stdout
    _amp_lint("fix", "--unsafe-fixes", "--isolated", "--no-cache", "--select", TRAINING_RULES, str(copy))
    assert copy.read_text(encoding="utf-8") == (FIXTURES / "lstm_tagger.py").read_text(encoding="utf-8")


def test_two_losses_share_one_scaler_and_one_update():
    """GradScaler's rule for several losses and optimizers: one scaler, each optimizer steps through
    it, one update per iteration, after the last step."""
    text = (EXPECTED / "gan_two_losses.py").read_text(encoding="utf-8")
    assert text.count("torch.amp.GradScaler(") == 1
    assert text.count("scaler.step(opt_d)") == 1 and text.count("scaler.step(opt_g)") == 1
    assert text.count("scaler.update()") == 1
    assert text.index("scaler.step(opt_g)") < text.index("scaler.update()")


def test_scaler_created_where_every_branch_reaches_it():
    """The optimizer is built on one of two branches: the scaler goes after them, at the loop's level."""
    lines = (EXPECTED / "conditional_optimizer.py").read_text(encoding="utf-8").splitlines()
    (created,) = [line for line in lines if "torch.amp.GradScaler(" in line]
    loop = next(line for line in lines if line.lstrip().startswith("for step in"))
    assert len(created) - len(created.lstrip()) == len(loop) - len(loop.lstrip())


def test_cpu_only_script_gets_cpu_autocast_and_scaler():
    code = (EXPECTED / "cpu_model.py").read_text(encoding="utf-8").split('"""', 2)[2]  # after the docstring
    assert 'torch.amp.GradScaler("cpu")' in code and 'torch.autocast(device_type="cpu"' in code
    assert "cuda" not in code


def _sweep():
    import importlib.util

    spec = importlib.util.spec_from_file_location("amp_lint_migration_sweep", ROOT / "eval" / "migration_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_crossing_edit_check_sees_a_crossing():
    before = "def a():\n    x = 1\n\n\ndef b():\n    y = 2\n"
    after = "def a():\n    x = 3\n\n\ndef b():\n    y = 4\n"
    assert _sweep().crossing_edits(before, after) == []  # two edits, each inside its function
    assert _sweep().crossing_edits(before, "def a():\n    x = 3\n    y = 4\n") == ["lines 2-6"]


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_migration_edits_stay_inside_their_function(migrated, name):
    """Bounded edits: every changed block of lines lies in one function (or module-level code) of the original."""
    original = (FIXTURES / POSITIVE[name][0]).read_text(encoding="utf-8")
    fixed = migrated.paths[name].read_text(encoding="utf-8")
    assert fixed != original
    assert _sweep().crossing_edits(original, fixed) == []


@pytest.mark.runtime
def test_a_flag_that_cast_the_model_still_chooses_after_the_migration(migrated):
    """``if args.fp16: model.half()`` (an int flag): the rewrite's autocast and GradScaler take
    ``enabled=bool(args.fp16)``.
    Without the flag it trains exactly as the original did (fp32, same losses to the last digit); with
    it, the forward runs in float16 under autocast: losses differ from fp32, but stay close to it.
    On the GPU where torch sees one (CUDA autocast and scaler), else on the CPU in real float16."""
    import torch

    rewrite = migrated.paths["fp16_flag"]
    assert "enabled=bool(args.fp16)" in rewrite.read_text(encoding="utf-8")
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def losses(script: Path, *flags: str) -> list:
        run = subprocess.run([sys.executable, str(script), "--steps", "6", "--device", device, *flags],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert run.returncode == 0, run.stderr
        return [float(line.split("loss=")[1]) for line in run.stdout.splitlines() if "loss=" in line]

    fp32 = losses(FIXTURES / "fp16_flag.py")
    assert len(fp32) == 6 and losses(rewrite) == fp32
    amp = losses(rewrite, "--fp16", "1")
    assert amp != fp32 and all(abs(a - b) <= 0.01 * abs(b) for a, b in zip(amp, fp32)), (amp, fp32)
