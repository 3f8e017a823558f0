"""Config files read where a program loads them by a known path (amp_lint/semantics/configfiles):
the YAML subset reader, JSON, and what is not read."""
from __future__ import annotations

import textwrap
from pathlib import Path

from amp_lint.semantics.configfiles import MAX_CONFIG_BYTES, UNREAD, ConfigFiles, current_digest, parse_yaml


def test_the_yaml_reader_reads_what_model_configs_use() -> None:
    text = textwrap.dedent("""
    # a latent-diffusion style config
    model:
      base_learning_rate: 1.0e-4
      target: ldm.models.diffusion.ddpm.LatentDiffusion   # the class
      params:
        use_fp16: True
        eps: 1e-8
        channel_mult: [ 1, 2, 4, 4 ]
        name: "unet # not a comment"
        quoted: 'it''s'
        nothing: null
        empty:
        flow: {a: 1, b: [x, 'y, z']}
        blocks:
          - target: a.B
            params:
              dim: 64
          - plain
        keys:
        - 8
        - -3
        0: zero
    """)
    assert parse_yaml(text) == {"model": {
        "base_learning_rate": 1.0e-4,
        "target": "ldm.models.diffusion.ddpm.LatentDiffusion",
        "params": {
            "use_fp16": True, "eps": 1e-8, "channel_mult": [1, 2, 4, 4], "name": "unet # not a comment",
            "quoted": "it's", "nothing": None, "empty": None, "flow": {"a": 1, "b": ["x", "y, z"]},
            "blocks": [{"target": "a.B", "params": {"dim": 64}}, "plain"], "keys": [8, -3], 0: "zero",
        },
    }}


def test_what_the_reader_does_not_read_is_unknown_not_guessed() -> None:
    text = textwrap.dedent("""
    base: &base
      dim: 64
    copy: *base
    dim: ${model.dim}
    size: !!python/tuple [1, 2]
    notes: |
      several
      lines
    """)
    data = parse_yaml(text)
    assert data["base"] is UNREAD and data["copy"] is UNREAD and data["dim"] is UNREAD
    assert data["size"] is UNREAD and data["notes"] is UNREAD
    # a JSON-style document over several lines is one flow collection; the second document is not read
    assert parse_yaml('{\n  "layers": 12,\n  "vocab": [50257]\n}\n') == {"layers": 12, "vocab": [50257]}
    assert parse_yaml("a: 1\n---\na: 2\n") == {"a": 1}


def test_config_files_are_read_inside_the_project_only_and_remembered(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "model.yaml").write_text("model:\n  dim: 64\n", encoding="utf-8")
    (root / "scripts").mkdir()
    (root / "scripts" / "local.json").write_text('{"vocab_size": 50257}', encoding="utf-8")
    (root / "big.yaml").write_text("a: 1\n" + "#" * MAX_CONFIG_BYTES, encoding="utf-8")
    (tmp_path / "outside.yaml").write_text("a: 1\n", encoding="utf-8")
    files = ConfigFiles(str(root))
    assert files.load("configs/model.yaml") == {"model": {"dim": 64}}
    assert files.load("./local.json", near="scripts") == {"vocab_size": 50257}  # next to the loading code
    assert files.load("../outside.yaml") is UNREAD
    assert files.load("big.yaml") is UNREAD
    assert files.load("missing.yaml") is UNREAD
    assert files.load("train.py") is UNREAD  # not a config file
    assert files.reads["configs/model.yaml"] == current_digest(str(root), "configs/model.yaml") != "-"
    assert files.reads["missing.yaml"] == "-" and files.reads["big.yaml"] == "-"
    assert "../outside.yaml" not in files.reads
