"""Views that page (issue 26): a store of 5,000 seeded runs, asked for pages of runs by the store's
API, by ``agent-replay list`` and by the viewer, each page checked against the whole store sorted
and filtered in Python.

The filter language is the one every ``--where`` reads (the store's, which the fleet selects
through), so every condition here is checked against a test of each run written in Python.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from benchmarks.many_runs import build_store
from otel_replay.model import is_failure
from otel_replay.store import Store
from otel_replay.store._connection import SCHEMA_VERSION
from otel_replay.store._query import QueryError
from otel_replay.store._trajectories import TrajectorySummary
from otel_replay.viewer._run_list import PAGE_SIZE
from otel_replay.viewer._server import Viewer, answer
from tests.cli_helpers import invoke, ok, one_line_error

RUNS = 5000
Condition = Callable[[TrajectorySummary], bool]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("paging") / "store.db", RUNS, seed=26)


@pytest.fixture(scope="module")
def everything(store: Path) -> list[TrajectorySummary]:
    with Store.open(store, read_only=True) as db:
        return db.summaries()


def _key(column: str) -> Callable[[TrajectorySummary], Any]:
    """A run's value for an order, unknowns as the smallest (as the store sorts them)."""
    read = {
        "start": lambda s: s.start_time_unix_nano,
        "steps": lambda s: s.n_steps,
        "outcome": lambda s: s.outcome,
    }[column]
    return lambda s: (read(s) is not None, read(s) or 0, s.id)


ORDERS = {  # --sort: (key, descending)
    None: ("start", True),
    "newest": ("start", True),
    "oldest": ("start", False),
    "steps": ("steps", True),
    "steps:asc": ("steps", False),
    "outcome": ("outcome", False),
    "outcome:desc": ("outcome", True),
}


def _sorted(runs: list[TrajectorySummary], sort: str | None) -> list[str]:
    if sort in ("id", "id:desc"):
        return sorted((s.id for s in runs), reverse=sort == "id:desc")
    column, descending = ORDERS[sort]
    return [s.id for s in sorted(runs, key=_key(column), reverse=descending)]


# --- the store's API --------------------------------------------------------------------------------


def test_the_store_holds_what_the_builder_wrote(everything: list[TrajectorySummary]) -> None:
    assert len(everything) == RUNS
    assert any(s.start_time_unix_nano is None for s in everything)  # unknowns are exercised
    assert any(s.outcome is None for s in everything)
    assert len({s.n_steps for s in everything}) > 5


@pytest.mark.parametrize("sort", [*ORDERS, "id", "id:desc"])
def test_pages_follow_each_order_by_offset_and_by_cursor(
    store: Path, everything: list[TrajectorySummary], sort: str | None
) -> None:
    expected = _sorted(everything, sort)
    with Store.open(store, read_only=True) as db:
        assert [s.id for s in db.runs(sort=sort, limit=50)] == expected[:50]
        assert [s.id for s in db.runs(sort=sort, limit=50, offset=4980)] == expected[4980:]
        # walking by cursor from any run gives the runs after it in that order
        for at in (0, 1234, 4998, 4999):
            after = [s.id for s in db.runs(sort=sort, limit=30, after=expected[at])]
            assert after == expected[at + 1 : at + 31], at
        assert [s.id for s in db.runs(sort=sort)] == expected  # no limit: all of them


def test_an_order_with_no_start_time_puts_those_runs_last_going_down(store: Path) -> None:
    with Store.open(store, read_only=True) as db:
        newest = list(db.runs())
    timed = [s.start_time_unix_nano is not None for s in newest]
    assert timed == sorted(timed, reverse=True)  # every timed run before every untimed one


def _outcome(s: TrajectorySummary) -> float:
    """The run's outcome, NaN when it has none (which no ``<``, ``<=``, ``>`` or ``>=`` admits)."""
    return float("nan") if s.outcome is None else s.outcome


WHERES: dict[str, Condition] = {  # each filter, and a test of one run saying what it admits
    "outcome < 0.5": lambda s: _outcome(s) < 0.5,
    "outcome < 0.5 and steps >= 8": lambda s: _outcome(s) < 0.5 and s.n_steps >= 8,
    "outcome != 1": lambda s: s.outcome is not None and s.outcome != 1,
    "steps = 2": lambda s: s.n_steps == 2,
    "steps == 12 and format = langfuse": lambda s: s.n_steps == 12 and s.format == "langfuse",
    "format != jsonl": lambda s: s.format is not None and s.format != "jsonl",
    "source ~ 'batch-0[37]'": lambda s: re.search("batch-0[37]", s.source or "") is not None,
    "id ~ ^ab": lambda s: s.id.startswith("ab"),
    "steps > 3 and steps <= 5 and outcome >= 0.5": lambda s: (
        3 < s.n_steps <= 5 and _outcome(s) >= 0.5
    ),
    "start > 1793700000000000000": lambda s: (s.start_time_unix_nano or 0) > 1793700000000000000,
}


@pytest.mark.parametrize("where", WHERES)
def test_a_filter_picks_what_python_picks_and_counts_them(
    store: Path, everything: list[TrajectorySummary], where: str
) -> None:
    expected = _sorted([s for s in everything if WHERES[where](s)], None)
    assert 0 < len(expected) < RUNS, "a filter that picks nothing (or all) checks nothing"
    with Store.open(store, read_only=True) as db:
        assert db.count_runs(where) == len(expected)
        assert [s.id for s in db.runs(where, limit=40)] == expected[:40]
        assert [s.id for s in db.runs(where, offset=len(expected) - 7)] == expected[-7:]


EXTENSIONS: dict[str, Condition] = {
    "failed": lambda s: is_failure(s.outcome) is True,
    "passed": lambda s: is_failure(s.outcome) is False,
    "unknown": lambda s: s.outcome is None,
    "failed steps > 6": lambda s: is_failure(s.outcome) is True and s.n_steps > 6,
    "id^a1": lambda s: s.id.startswith("a1"),
    "BATCH-07": lambda s: "batch-07" in (s.source or "").lower(),  # a word: id or source, any case
    "format=otlp-json": lambda s: s.format == "otlp-json",
}


@pytest.mark.parametrize("where", EXTENSIONS)
def test_the_views_own_terms(store: Path, everything: list[TrajectorySummary], where: str) -> None:
    expected = _sorted([s for s in everything if EXTENSIONS[where](s)], "steps")
    assert 0 < len(expected) < RUNS
    with Store.open(store, read_only=True) as db:
        assert db.count_runs(where) == len(expected)
        assert [s.id for s in db.runs(where, "steps", limit=25)] == expected[:25]


def test_values_are_parameters_never_sql(store: Path) -> None:
    with Store.open(store, read_only=True) as db:
        assert db.count_runs('id = "x\' OR 1=1 --"') == 0
        assert db.count_runs('source = "\') OR 1=1 --"') == 0
        assert db.count_runs(search="%") == 0  # a search's % and _ are themselves
        assert db.count_runs(search="batch_0") == 0
        assert db.count_runs(search="batch-0") > 0
        assert db.count_runs("id^*") == 0 and db.count_runs("id^[") == 0  # GLOB's own too


@pytest.mark.parametrize(
    ("where", "part"),
    [
        ("colour = red", "no field 'colour'"),
        ("steps > many", "steps is a number, got 'many'"),
        ("source ~ '('", "'(' is not a regular expression"),
        ("steps^1", "^ (starts with) is for text fields"),
        ("outcome <", "cannot read 'outcome <'"),  # the condition, not its last character
        ("failed task ~ 'unclosed", 'cannot read "task ~ \'unclosed"'),
        ("steps > nan", "steps is a number, got 'nan'"),
    ],
)
def test_a_filter_it_cannot_read_names_the_part(store: Path, where: str, part: str) -> None:
    with Store.open(store, read_only=True) as db:
        with pytest.raises(QueryError, match=re.escape(part)):
            db.count_runs(where)
        with pytest.raises(QueryError, match=re.escape(part)):
            db.runs(where)


# --- agent-replay list --------------------------------------------------------------------------------


def _table_ids(output: str) -> list[str]:
    return [line.split("│")[1].strip() for line in output.splitlines() if line.startswith("│")]


def test_list_shows_the_newest_fifty_and_says_how_to_go_on(
    runner: CliRunner, store: Path, everything: list[TrajectorySummary]
) -> None:
    newest = _sorted(everything, None)
    shown = ok(invoke(runner, store, "list"))
    assert _table_ids(shown.stdout) == newest[:50]
    assert "showing 50 of 5,000 runs (1–50, newest first); --offset 50 for the next" in shown.stdout
    last = ok(invoke(runner, store, "list", "--offset", "4990"))
    assert _table_ids(last.stdout) == newest[4990:]
    assert "showing 10 of 5,000 runs (4,991–5,000, newest first)" in last.stdout
    assert "for the next" not in last.stdout  # the last page
    after = ok(invoke(runner, store, "list", "--after", newest[99], "--limit", "5"))
    assert _table_ids(after.stdout) == newest[100:105]
    assert f"--after {newest[104]} for the next" in after.stdout


def test_list_filters_and_sorts_as_the_store_does(
    runner: CliRunner, store: Path, everything: list[TrajectorySummary]
) -> None:
    expected = _sorted([s for s in everything if is_failure(s.outcome)], "steps:asc")
    listed = ok(invoke(runner, store, "list", "--where", "failed", "--sort", "steps:asc",
                       "--limit", "7"))  # fmt: skip
    assert _table_ids(listed.stdout) == expected[:7]
    assert f"showing 7 of {len(expected):,} runs" in listed.stdout


def test_list_json_streams_every_run_in_the_shape_it_always_had(
    runner: CliRunner, store: Path, everything: list[TrajectorySummary]
) -> None:
    result = ok(invoke(runner, store, "list", "--json", "--all"))
    rows = orjson.loads(result.stdout)
    by_id = {s.id: s for s in everything}
    assert [r["id"] for r in rows] == _sorted(everything, None)
    for row in rows[:100]:
        s = by_id[row["id"]]
        assert row == {"id": s.id, "steps": s.n_steps, "outcome": s.outcome,
                       "final_hash": s.final_hash, "source": s.source, "format": s.format,
                       "replayability": s.replayability,
                       "outcome_source": s.outcome_source, "task": s.task}  # fmt: skip
    # byte for byte what indenting the whole list at once prints
    assert (
        result.stdout
        == orjson.dumps(rows, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
    )
    assert result.stderr == ""  # every run shown: no footer
    page = ok(invoke(runner, store, "list", "--json", "--limit", "3", "--offset", "10"))
    assert [r["id"] for r in orjson.loads(page.stdout)] == _sorted(everything, None)[10:13]
    assert "showing 3 of 5,000 runs" in page.stderr  # for people, beside the JSON
    none = ok(invoke(runner, store, "list", "--json", "--where", "steps > 99"))
    assert none.stdout == "[]\n"


def test_list_all_is_every_row_of_the_table(runner: CliRunner, store: Path) -> None:
    shown = ok(invoke(runner, store, "list", "--all"))
    assert len(_table_ids(shown.stdout)) == RUNS
    assert shown.stdout.rstrip().endswith("5000 runs (newest first)")


@pytest.mark.parametrize("args", [["--all", "--json"], ["--all"]], ids=["json", "table"])
def test_a_reader_that_stops_early_is_no_error(store: Path, args: list[str]) -> None:
    """``agent-replay list --all --json | head``: the pipe closes long before 5,000 runs are
    written; the command stops quietly (exit 1, as Python's own programs on a closed pipe), with
    nothing on stderr: no "Broken pipe", no traceback."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "AGENT_REPLAY_STORE": str(store)}
    command = [sys.executable, "-m", "otel_replay", "list", *args]
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(200)
        process.stdout.close()
        error = process.stderr.read().decode()
        code = process.wait(timeout=60)
    assert error == ""
    assert code == 1


@pytest.mark.parametrize(
    ("args", "part"),
    [
        (["--where", "colour = red"], "--where 'colour = red': no field 'colour'"),
        (["--where", "steps>x"], "--where 'steps>x': steps is a number, got 'x'"),
        (["--sort", "size"], "--sort 'size': there is no order 'size'"),
        (["--sort", "steps:up"], "the direction is asc or desc, not 'up'"),
        (["--after", "nosuchrun"], "no trajectory id starts with 'nosuchrun'"),
    ],
)
def test_a_bad_where_or_sort_is_one_line_and_exit_1(
    runner: CliRunner, store: Path, args: list[str], part: str
) -> None:
    for json in ([], ["--json"]):
        result = invoke(runner, store, "list", *args, *json)
        assert part in one_line_error(result)
        assert result.stdout == ""


# --- the viewer ---------------------------------------------------------------------------------------


def _page_ids(html: str) -> list[str]:
    return re.findall(r'<a class="mono" href="/run/([^"]+)">', html)


def test_the_viewer_answers_a_page_of_runs_of_the_same_size_at_any_store_size(
    store: Path, everything: list[TrajectorySummary]
) -> None:
    newest = _sorted(everything, None)
    first = answer(store, "/")
    assert first.status == 200 and len(first.html.encode()) < 200_000
    assert _page_ids(first.html) == newest[:PAGE_SIZE]
    assert (
        "showing 1–50 of 5,000 runs" in first.html and 'rel="next" href="/?offset=50"' in first.html
    )
    last = answer(store, "/?offset=4950")
    assert _page_ids(last.html) == newest[4950:] and 'class="off">next' in last.html


def test_the_viewer_filters_sorts_and_searches_in_the_store(
    store: Path, everything: list[TrajectorySummary]
) -> None:
    expected = _sorted(
        [s for s in everything if s.n_steps > 10 and is_failure(s.outcome)], "steps:asc"
    )
    page = answer(store, "/?where=steps+%3E+10&outcome=failed&sort=steps%3Aasc")
    assert page.status == 200
    assert _page_ids(page.html) == expected[:PAGE_SIZE]
    assert f"of {len(expected):,} runs that match" in page.html
    searched = answer(store, "/?q=BATCH-07")
    found = [s for s in everything if "batch-07" in (s.source or "")]
    assert f"of {len(found):,} runs" in searched.html


def test_a_filter_the_viewer_cannot_read_is_400_with_the_form(store: Path) -> None:
    bad = answer(store, "/?where=colour+%3D+red")
    assert bad.status == 400 and "no field &#x27;colour&#x27;" in bad.html
    assert 'value="colour = red"' in bad.html  # the form keeps what was asked, to mend it
    assert answer(store, "/?sort=size").status == 400


def test_a_run_page_offers_the_newest_runs_not_every_run(
    store: Path, everything: list[TrajectorySummary]
) -> None:
    newest = _sorted(everything, None)
    shown = answer(store, f"/run/{newest[3]}")
    assert shown.status == 200 and len(shown.html.encode()) < 100_000
    offered = re.findall(r'<option value="([^"]+)">', shown.html)
    assert offered == [i for i in newest[:51] if i != newest[3]][:50]
    by_id = {s.id: s for s in everything}
    contrast = re.findall(r'href="/diff/[^/]+/([^"]+)"', shown.html)
    assert len(contrast) == 8
    assert all(
        is_failure(by_id[i].outcome) != is_failure(by_id[newest[3]].outcome) for i in contrast
    )


@pytest.fixture(scope="module")
def viewer(store: Path) -> Iterator[Viewer]:
    with Viewer(store, "127.0.0.1", 0) as running:
        yield running


def test_paging_in_the_browser(
    viewer: Viewer, browser_page: Any, everything: list[TrajectorySummary]
) -> None:
    page = browser_page
    newest = _sorted(everything, None)
    page.goto(f"{viewer.url}/")
    rows = page.locator("#runs tbody tr a.mono")
    assert rows.all_text_contents() == newest[:PAGE_SIZE]
    page.click("nav.pages >> nth=0 >> a[rel=next]")
    page.wait_for_url("**/?offset=50")
    assert rows.all_text_contents() == newest[50:100]

    # the form asks the store: every matching run of the store, not of the page
    page.fill("#filter-where", "steps >= 11")
    page.select_option("#filter-outcome", "passed")
    page.select_option("#sort", "steps")
    page.click("#run-query button[type=submit]")
    page.wait_for_url("**/?*where=*")
    expected = _sorted(
        [s for s in everything if s.n_steps >= 11 and is_failure(s.outcome) is False], "steps"
    )
    assert rows.all_text_contents() == expected[:PAGE_SIZE]
    assert f"of {len(expected):,} runs" in page.locator("#page-place").inner_text()
    page.click("nav.pages >> nth=0 >> a[rel=last]")
    page.wait_for_load_state()
    last = (len(expected) - 1) // PAGE_SIZE * PAGE_SIZE
    assert rows.all_text_contents() == expected[last:]
    assert page.locator("#filter-where").input_value() == "steps >= 11"  # the question is kept


def test_a_store_before_the_indexes_pages_read_only_and_gains_them_when_written(
    tmp_path: Path,
) -> None:
    path = build_store(tmp_path / "old.db", 300, seed=3)
    with sqlite3.connect(path) as db:  # as version 3 left it: no indexes for the views
        for name in INDEXES:
            db.execute(f"DROP INDEX {name}")
        db.execute("PRAGMA user_version=3")
    db.close()
    before = path.read_bytes()
    with Store.open(path, read_only=True) as store:
        everything = store.summaries()
        assert [s.id for s in store.runs("failed", "steps", limit=20)] == _sorted(
            [s for s in everything if is_failure(s.outcome)], "steps"
        )[:20]
    assert path.read_bytes() == before  # a reading open scans, and changes nothing
    Store.open(path).close()
    with sqlite3.connect(path) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert names >= set(INDEXES)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    db.close()


INDEXES = ("trajectories_by_start", "trajectories_by_steps", "trajectories_by_outcome")
