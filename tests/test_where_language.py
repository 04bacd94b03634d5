"""One filter language behind every ``--where`` (issue 41, part 3).

Each example of the language's page (docs/many-runs.md, "The filter language": a new example
there is run here with no change to this file) chooses the same runs through ``list``,
``attribute``, ``blame`` and the viewer's run list, on two real stores: the sample traces (an
incident agent) and runs of other agents (the framework fixtures: a refund desk). A filter none
of them can read is the same one line from every command that takes ``--where``, the store
untouched.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.fleet import blame
from otel_replay.store import Store
from otel_replay.viewer._run_list import PAGE_SIZE, run_list_page
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

PAGE = ROOT / "docs" / "many-runs.md"
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
#: What each store holds, and the code that attributes its failing runs: the incident example's
#: functions, and a verifier that agrees with the outcomes the traces hold (so a passing run is
#: set aside, not attributed). The refund desk's steps are not the incident's: some of its runs
#: are attributed (a report kept for blame to add up), the others are a row saying why.
STORES: dict[str, tuple[list[Path], list[str]]] = {
    "samples": ([SAMPLES], ["--resamplers", TOOLS, "--success-if", "v841"]),
    "frameworks": (
        [FRAMEWORKS / f"{name}.otlp.jsonl" for name in ("langsmith-otel", "google-adk", "dspy",
                                                       "haystack", "beeai")],
        ["--resamplers", TOOLS, "--fail-if", "could not look up"],
    ),
}  # fmt: skip


def documented_examples() -> list[str]:
    """The filters the language's section lists after "Examples": one bullet each, the filter
    its first code span."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## The filter language\n", 1)[1].split("\n## ", 1)[0]
    listed = section.split("\nExamples", 1)[1].split("\n\n", 2)[1]
    examples = [re.match(r"\* `([^`]+)`: ", line) for line in listed.splitlines()]
    assert all(examples), listed  # every line of the list is an example
    return [found[1] for found in examples if found]


EXAMPLES = documented_examples()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store of each kind, as imported."""
    stores = {}
    for name, (files, _) in STORES.items():
        stores[name] = tmp_path_factory.mktemp(name) / "store.db"
        ok(invoke(CliRunner(), stores[name], "import", *map(str, files)))
    return stores


@pytest.fixture(scope="module", params=list(STORES))
def kept(
    request: pytest.FixtureRequest,
    imported: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[str]]:
    """A store of one kind, its failing runs attributed once (each report kept), its runs without
    an outcome left so; and the code that attributes its runs."""
    code = STORES[request.param][1]
    path = _copy(imported[request.param], tmp_path_factory.mktemp("kept") / "store.db")
    # exit 1 when a run cannot be attributed: its row says why, the others' reports are kept
    invoke(CliRunner(), path, "attribute", "--where", "outcome < 0.5", *code)
    with Store.open(path, read_only=True) as db:
        assert db.report_counts(), "blame would have no report to add up"
    return path, code


def _listed(runner: CliRunner, store: Path, where: str) -> list[str]:
    rows = orjson.loads(
        ok(invoke(runner, store, "list", "--where", where, "--all", "--json")).stdout
    )
    return [row["id"] for row in rows]


def _copy(store: Path, to: Path) -> Path:
    """A copy of ``store`` for a command that writes (attribute scores runs without an outcome)."""
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(to)) as copy:
        source.backup(copy)
    return to


def _blame_rows(store: Path, runs: list[str]) -> list[dict[str, Any]]:
    """What ``blame --json`` prints for exactly ``runs``, from the library."""
    with Store.open(store, read_only=True) as db:
        table = blame(db, runs)
    rows: list[dict[str, Any]] = orjson.loads(orjson.dumps(table.to_dicts()))  # NaN: null
    return rows


def test_the_page_lists_examples_of_every_form() -> None:
    assert len(EXAMPLES) >= 12
    joined = " ".join(EXAMPLES)
    for form in ("failed", "passed", "unknown", "^", "~", "!=", "<=", ">=", " and ", " AND ", "'"):
        assert form in joined, form


def test_each_example_chooses_some_runs_and_not_every_run(imported: dict[str, Path]) -> None:
    """Across the two stores no example is idle: each picks some run of one store and leaves out
    some run of one (the checks below compare selections, which a filter choosing nothing, or
    everything, everywhere would pass whatever it meant)."""
    some: set[str] = set()
    not_all: set[str] = set()
    for path in imported.values():
        with Store.open(path, read_only=True) as db:
            total = db.count_runs()
            picked = {where: db.count_runs(where) for where in EXAMPLES}
        some |= {where for where, n in picked.items() if n > 0}
        not_all |= {where for where, n in picked.items() if n < total}
    assert set(EXAMPLES) - some == set() and set(EXAMPLES) - not_all == set()


@pytest.mark.parametrize("where", EXAMPLES)
def test_each_example_chooses_the_same_runs_in_every_command(
    kept: tuple[Path, list[str]], where: str, tmp_path: Path
) -> None:
    store, code = kept
    runner = CliRunner()
    listed = _listed(runner, store, where)
    assert len(listed) <= PAGE_SIZE  # the viewer's first page holds them all

    with Store.open(store, read_only=True) as db:  # the viewer's run list, its where box
        page = run_list_page(db, urlencode({"where": where}))
    assert set(re.findall(r'href="/run/([^"]+)"', page)) == set(listed)

    expected = _blame_rows(store, listed)
    blamed = invoke(runner, store, "blame", "--where", where, "--json")
    if expected:
        assert orjson.loads(ok(blamed).stdout) == expected
    else:  # none of the runs chosen has a report
        assert "no stored report to add up" in one_line_error(blamed)

    copy = _copy(store, tmp_path / "store.db")
    attributed = invoke(runner, copy, "attribute", "--where", where, *code, "--json")
    if not listed:
        assert "no stored run matches" in one_line_error(attributed)
        return
    assert attributed.exit_code in (0, 1), attributed.output  # 1: a run it could not attribute
    rows = orjson.loads(attributed.stdout)
    assert sorted(row["id"] for row in rows) == sorted(listed)


BAD = [
    ("colour = red", "no field 'colour'"),
    ("steps > many", "steps is a number, got 'many'"),
    ("failed source ~ '('", "'(' is not a regular expression"),
    (r"id~(a)\1", "is not a regular expression: backreferences"),
    ("outcome <", "cannot read 'outcome <'"),
    ("steps^1", "^ (starts with) is for text fields"),
    ("passed task ~ 'unclosed", 'cannot read "task ~ \'unclosed"'),
    ("id^ef28 " * 101, "the filter has too many conditions (at most 100)"),
]
#: Every command that takes --where, with what else it needs to read it.
COMMANDS = {
    "list": [],
    "lint": [],
    "score": ["--success-if", "v841"],
    "attribute": ["--resamplers", TOOLS, "--success-if", "v841"],
    "sweep": ["--resamplers", TOOLS, "--success-if", "v841", "--faults", "empty"],
    "blame": [],
}


def test_every_command_that_takes_where_is_one_of_these() -> None:
    from typer.main import get_command

    from otel_replay.cli import app

    group = get_command(app)
    taking = {
        name
        for name, command in getattr(group, "commands", {}).items()
        if any("--where" in param.opts for param in command.params)
    }
    assert taking == set(COMMANDS)


@pytest.mark.parametrize(("where", "says"), BAD)
def test_a_filter_no_command_can_read_is_the_same_line_from_each(
    store_path: Path, runner: CliRunner, where: str, says: str
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    with Store.open(store_path, read_only=True) as db:
        before = db.summaries()
    lines = {
        name: one_line_error(invoke(runner, store_path, name, "--where", where, *args))
        for name, args in COMMANDS.items()
    }
    assert says in lines["list"] and lines["list"].startswith("error: --where")
    assert lines == dict.fromkeys(COMMANDS, lines["list"])
    with Store.open(store_path, read_only=True) as db:
        assert db.summaries() == before and not db.report_counts()
