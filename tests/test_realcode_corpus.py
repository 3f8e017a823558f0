"""The real-code corpus (eval/realcode): well-formed labels, and a held-out split that nobody edits."""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = Path(__file__).resolve().parent.parent / "eval" / "realcode"
CODES = re.compile(r"^AMP\d{3}$")


def _files(split: str):
    return sorted((CORPUS / split).glob("*.toml"))


def heldout_digest() -> str:
    digest = hashlib.sha256()
    for path in _files("heldout"):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def test_heldout_is_frozen():
    """Edit the held-out labels and this fails: they measure only while nobody tunes on them."""
    assert (CORPUS / "HELDOUT.sha256").read_text().strip() == heldout_digest()


@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_labels_are_well_formed(split):
    files = _files(split)
    assert len(files) >= 15
    repos = set()
    for path in files:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert data["split"] == split, path.name
        assert re.fullmatch(r"[0-9a-f]{40}", data["commit"]), path.name
        assert path.name == data["repo"].replace("/", "__") + ".toml"
        assert data["precision_notes"].strip()
        repos.add(data["repo"])
        seen = set()
        for label in data["label"]:
            assert CODES.match(label["code"]), (path.name, label)
            assert label["verdict"] in ("hazard", "safe", "unsure"), (path.name, label)
            assert isinstance(label["line"], int) and label["line"] > 0
            assert re.fullmatch(r"[0-9a-f]{12}", label["line_sha1"]), (path.name, label)
            assert label["reason"].strip()
            key = (label["path"], label["line"], label["code"])
            assert key not in seen, (path.name, key)
            seen.add(key)
    assert len(repos) == len(files)


def test_splits_do_not_share_repositories():
    def repos(split):
        return {tomllib.loads(p.read_text(encoding="utf-8"))["repo"] for p in _files(split)}

    assert not repos("dev") & repos("heldout")


@pytest.mark.parametrize("name", ["unlabelled.toml", "unseen.toml"])
def test_triage_files_are_well_formed_and_outside_the_corpus(name):
    """The triaged and blindly hunted repositories (``--split unseen`` scores the hunts): every label
    names one of the file's repositories, none of which is in dev or heldout, and no line twice."""
    data = tomllib.loads((CORPUS / "triage" / name).read_text(encoding="utf-8"))
    repos = {r["repo"] for r in data["repository"]}
    assert len(repos) == len(data["repository"]) >= 10
    assert all(re.fullmatch(r"[0-9a-f]{40}", r["commit"]) for r in data["repository"])
    corpus = {tomllib.loads(p.read_text(encoding="utf-8"))["repo"] for s in ("dev", "heldout") for p in _files(s)}
    assert not repos & corpus
    seen = set()
    for label in data["label"]:
        assert label["repo"] in repos, label
        assert CODES.match(label["code"]), label
        assert label["verdict"] in ("hazard", "safe", "unsure"), label
        assert isinstance(label["line"], int) and label["line"] > 0
        assert re.fullmatch(r"[0-9a-f]{12}", label["line_sha1"]), label
        assert label["reason"].strip()
        key = (label["repo"], label["path"], label["line"], label["code"])
        assert key not in seen, key
        seen.add(key)
