"""What a file's path says about it: the test files of a project.

pytest collects ``test_*.py`` and ``*_test.py`` files and reads ``conftest.py``; projects keep
tests under ``tests/`` or ``test/`` (pytest docs, "Conventions for Python test discovery").
"""
from __future__ import annotations

import re

#: ``test_*.py``, ``*_test.py``, ``conftest.py``, or any file under a ``test/`` or ``tests/`` folder
TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$|(^|/)tests?/")


def is_test_file(relpath: str) -> bool:
    """A pytest/unittest file by its path: ``test_*.py``, ``*_test.py``, ``conftest.py``, under ``tests/``."""
    return bool(TEST_FILE.search(relpath.replace("\\", "/")))
