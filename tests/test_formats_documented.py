"""Every format the importer reads is a row of the formats table of docs/importing.md (issue 39),
so a new reader cannot land undocumented: each row of `DOCUMENT_FORMATS` and each ``--format``
name, with an example command that a runnable block of the page runs (tests/test_docs_commands.py
runs it) on a file the repository ships.
"""

from __future__ import annotations

import re

from otel_replay.importers import Format
from otel_replay.importers._documents import DOCUMENT_FORMATS
from tests.conftest import ROOT
from tests.docs_pages import read_page

PAGE = ROOT / "docs" / "importing.md"
_MARKER = "<!-- formats:"
_ROW = re.compile(r"^\| `(?P<name>[a-z0-9-]+)`[^|]*\|(?P<rest>.*)\|\s*$")
_EXAMPLE = re.compile(r"`(agent-replay [^`]+)`\s*$")


def _table() -> dict[str, list[str]]:
    """Each format name of the table, with its rows' example commands."""
    text = PAGE.read_text()
    start = text.index(_MARKER)
    rows: dict[str, list[str]] = {}
    lines = text[start:].splitlines()[3:]  # the marker, the header and its rule
    for line in lines:
        if not line.startswith("|"):
            break
        row = _ROW.match(line)
        assert row is not None, f"a row of the formats table names no format: {line}"
        example = _EXAMPLE.search(row["rest"].rstrip(" |"))
        assert example is not None, f"the row of {row['name']} has no example command: {line}"
        rows.setdefault(row["name"], []).append(example[1])
    return rows


def test_every_reader_and_format_name_has_a_row() -> None:
    table = _table()
    names = {row.name for row in DOCUMENT_FORMATS} | {f.value for f in Format} - {"auto"}
    missing = sorted(names - set(table))
    assert not missing, (
        f"formats the importer reads that docs/importing.md's table lacks: {missing}"
    )
    unknown = sorted(set(table) - names)
    assert not unknown, f"rows of the table no reader has: {unknown}"


def test_every_example_is_run_by_the_page() -> None:
    page = read_page(PAGE, "docs/importing.md")
    run = {
        c.text.split("#")[0].strip() for block in page.blocks if block.runs for c in block.commands
    }
    for name, examples in _table().items():
        for example in examples:
            assert example in run, f"{name}'s example `{example}` is in no runnable block"
