"""The README's and docs/guarantees.md's promises each name the test that proves them: every test
they name exists, so a renamed or deleted test cannot leave a promise standing on nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PAGES = (ROOT / "README.md", ROOT / "docs" / "guarantees.md")
#: ``tests/x.py`` or ``tests/x.py::test_name``; a bare ``::test_name`` after one names a test of
#: the same file.
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def named_tests(text: str) -> list[tuple[str, str | None]]:
    """Each (file, test or None) a page names, bare ``::name`` read against the file before it."""
    found: list[tuple[str, str | None]] = []
    current: str | None = None
    for match in REFERENCE.finditer(text):
        file, test = match.groups()
        if file:
            current = file
        if current is None or not (file or test):
            continue
        found.append((current, test))
    return found


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def test_every_test_a_promise_names_exists() -> None:
    missing = []
    count = 0
    for page in PAGES:
        for file, test in named_tests(page.read_text()):
            count += 1
            path = ROOT / file
            if not path.is_file():
                missing.append(f"{page.name}: {file}")
            elif test is not None and test not in _tests_in(path):
                missing.append(f"{page.name}: {file}::{test}")
    assert missing == []
    assert count >= 20  # the pages were read: each promise names its test


def test_a_bare_name_is_read_against_the_file_before_it() -> None:
    text = "`tests/a.py::one`, `::two`; `tests/b.py`"
    assert named_tests(text) == [
        ("tests/a.py", "one"),
        ("tests/a.py", "two"),
        ("tests/b.py", None),
    ]
