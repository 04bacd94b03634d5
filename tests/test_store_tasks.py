"""Each run's task, its first user message, kept in the run's row (schema version 7): shown by
``list`` when the terminal has room and by the viewer's run list, searched by ``--where task~…``
and by any bare word (issue 38: nothing found "the CAL-1003 run")."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import Step, StepKind, Store, Trajectory
from otel_replay.cli import app
from otel_replay.cli._common import console
from otel_replay.fleet._select import Selection
from otel_replay.store._connection import SCHEMA_VERSION, TASK_LENGTH
from otel_replay.transcript import task
from tests.cli_helpers import invoke, ok
from tests.test_store_migrations import _old_run, _version, _write_version_1


def _run(run_id: str, asked: object, outcome: float | None = 1.0) -> Trajectory:
    """A run whose model was first asked ``asked`` (a message's content, in any SDK's shape)."""
    messages = [
        {"role": "system", "content": "You book meetings."},
        {"role": "user", "content": asked},
    ]
    steps = [
        Step(StepKind.LLM, "chat", {"model": "m", "messages": messages}, {"content": "booked"}),
    ]
    return Trajectory.build(run_id, steps, outcome=outcome, metadata={"source": f"{run_id}.jsonl"})


TICKETS = [
    _run("run-a", "Book a room for ticket CAL-1003 on Monday", outcome=0.0),
    _run(
        "run-b",
        [{"type": "text", "text": "Ticket CAL-1004: "}, {"type": "text", "text": "move it"}],
    ),
    _run("run-c", "nothing about tickets"),
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with Store.open(path) as db:
        db.put_all(TICKETS)
    return path


def test_the_task_is_the_first_user_message_in_any_shape() -> None:
    assert [task(r.steps, r.metadata) for r in TICKETS] == [
        "Book a room for ticket CAL-1003 on Monday",
        "Ticket CAL-1004: move it",
        "nothing about tickets",
    ]
    # no model turn: the recorded input, else none
    tool = [Step(StepKind.TOOL, "t", {"arguments": {}}, 1)]
    assert task(tool, {"input": {"ticket": "CAL-1"}}) == '{"ticket":"CAL-1"}'
    assert task(tool, {}) is None


def test_where_task_and_bare_words_find_a_run_by_its_task(store: Path) -> None:
    with Store.open(store, read_only=True) as db:
        assert db.summary("run-a").task == "Book a room for ticket CAL-1003 on Monday"  # type: ignore[union-attr]
        assert [s.id for s in db.runs("task~CAL-1003")] == ["run-a"]
        assert sorted(s.id for s in db.runs("task~'CAL-100[34]'")) == ["run-a", "run-b"]
        assert [s.id for s in db.runs("cal-1003")] == ["run-a"]  # a bare word, any case
        assert [s.id for s in db.runs(search="CAL-1004")] == ["run-b"]  # the viewer's box
        assert db.count_runs("task~CAL and failed") == 1
        assert db.count_runs("task = 'nothing about tickets'") == 1
        # attribute --where reads the same field
        assert Selection(where="task~CAL-1003").runs(db) == ["run-a"]
    shown = ok(invoke(CliRunner(), store, "list", "--where", "task~CAL-1003", "--json")).stdout
    assert [(r["id"], r["task"]) for r in orjson.loads(shown)] == [
        ("run-a", "Book a room for ticket CAL-1003 on Monday")
    ]


def test_a_long_task_is_kept_to_its_first_characters(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as db:
        summary = db.put(_run("long", "CAL-9 " + "x" * 5000))
    assert summary.task is not None and len(summary.task) == TASK_LENGTH
    assert summary.task.startswith("CAL-9 x")


def test_list_shows_the_task_where_it_fits_and_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.db"
    with Store.open(store) as db:
        db.put_all([*TICKETS, _run("hostile", "line one\nline two \x1b[31mred[/] [bold]b")])
    runner = CliRunner()
    command = ["list", "--store", str(store)]
    monkeypatch.setattr(console, "_width", 200)  # the CLI's console reads COLUMNS once
    wide = runner.invoke(app, command)
    assert wide.exit_code == 0, wide.output
    lines = wide.stdout.splitlines()
    assert lines[1].rstrip("┃ ").endswith("task")
    row = next(line for line in lines if "hostile" in line)
    assert "line one line two \\x1b[31mred[/] [bold]b" in row  # one line, the escape shown
    assert "\x1b" not in wide.stdout
    assert all(len(line) <= 200 for line in lines)
    monkeypatch.setattr(console, "_width", 80)
    narrow = runner.invoke(app, command)
    assert narrow.exit_code == 0 and "task" not in narrow.stdout.splitlines()[1]


def test_migration_7_reads_each_stored_runs_task_and_a_reading_open_says_unknown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _write_version_1(path, _old_run(), used=False)
    with Store.open(path, read_only=True) as db:
        assert db.summary("old-run").task is None  # type: ignore[union-attr]
        assert db.count_runs("task~checkout") == 0  # unknown: admitted by none
        assert db.count_runs("checkout") == 0
    listed = CliRunner().invoke(app, ["list", "--store", str(path)], env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    assert _version(path) == 1
    with Store.open(path) as db:
        assert db.summary("old-run").task == "Why is checkout failing?"  # type: ignore[union-attr]
        assert [s.id for s in db.runs("task~checkout")] == ["old-run"]
    assert _version(path) == SCHEMA_VERSION
