"""Stores written by an earlier schema: a writing open migrates them in one transaction, a reading
open reads them as they are and leaves the file byte-for-byte alone, and a newer schema is refused.

The fixture writes a store the way version 1 wrote it, from that version's own DDL (copied here,
not imported: the package's schema moves on, this file must not), with the tables it created on
first use (the receiver's ``pending_spans``, the kept reports) or without them, and the op_keys
versions 1 and 2 made (a model call's over its conversation's tool-call ids as recorded; version 3
compares conversations up to a renaming of those ids).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import Step, StepKind, Store, StoreError, Trajectory
from otel_replay.cli import app
from otel_replay.hashing import stored_key
from otel_replay.ingest import ingest
from otel_replay.store import _connection as store_connection
from otel_replay.store._connection import SCHEMA_VERSION
from otel_replay.store._trajectories import content_digest

# --- a store as version 1 wrote it ----------------------------------------------------------------

VERSION_1 = """
CREATE TABLE blobs (
    digest TEXT PRIMARY KEY,
    data   BLOB NOT NULL
);
CREATE TABLE trajectories (
    id                    TEXT PRIMARY KEY,
    outcome               REAL,
    n_steps               INTEGER NOT NULL,
    final_hash            TEXT NOT NULL,
    content_digest        TEXT NOT NULL,
    metadata_digest       TEXT NOT NULL REFERENCES blobs(digest),
    spans_digest          TEXT NOT NULL REFERENCES blobs(digest),
    source                TEXT,
    format                TEXT,
    start_time_unix_nano  INTEGER,
    imported_at_unix_nano INTEGER NOT NULL
);
CREATE TABLE steps (
    trajectory_id        TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
    idx                  INTEGER NOT NULL,
    kind                 TEXT NOT NULL,
    name                 TEXT NOT NULL,
    inputs_digest        TEXT NOT NULL REFERENCES blobs(digest),
    inputs_layout        INTEGER NOT NULL,
    output_digest        TEXT NOT NULL REFERENCES blobs(digest),
    status               TEXT NOT NULL,
    error                TEXT,
    start_time_unix_nano INTEGER,
    end_time_unix_nano   INTEGER,
    span_id              TEXT,
    parent_span_id       TEXT,
    resamplable          INTEGER NOT NULL,
    op_key               TEXT NOT NULL,
    hash                 TEXT NOT NULL,
    PRIMARY KEY (trajectory_id, idx)
) WITHOUT ROWID;
CREATE INDEX steps_by_op_key ON steps(op_key);
"""

# what version 1 created on first use, still at user_version 1
VERSION_1_ON_FIRST_USE = """
CREATE TABLE IF NOT EXISTS pending_spans (
    trace_id              TEXT NOT NULL,
    received_at_unix_nano INTEGER NOT NULL,
    span                  BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_by_trace ON pending_spans(trace_id);
CREATE TABLE IF NOT EXISTS reports (
    trajectory_id        TEXT NOT NULL,
    config_digest        TEXT NOT NULL,
    created_at_unix_nano INTEGER NOT NULL,
    verdict              TEXT,
    report               BLOB NOT NULL,
    PRIMARY KEY (trajectory_id, config_digest)
);
CREATE TABLE IF NOT EXISTS report_steps (
    trajectory_id  TEXT NOT NULL,
    config_digest  TEXT NOT NULL,
    idx            INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    name           TEXT NOT NULL,
    shape          TEXT NOT NULL,
    verdict        TEXT,
    attribution    REAL,
    ci_low         REAL,
    ci_high        REAL,
    commitment     INTEGER NOT NULL,
    repaired       INTEGER NOT NULL,
    repair_success REAL,
    newest         INTEGER NOT NULL,
    PRIMARY KEY (trajectory_id, config_digest, idx)
) WITHOUT ROWID;
"""

OLD_REPORT = {"trajectory_id": "old-run", "verdict": "culprit", "note": "kept by version 1"}
OLD_SPAN = b'{"span_id": "s1", "trace_id": "t-waiting"}'


def _old_run() -> Trajectory:
    history = [
        {"role": "system", "content": "You investigate incidents."},
        {"role": "user", "content": "Why is checkout failing?"},
    ]
    call = {"id": "call_7f3a", "name": "search_logs", "arguments": {"q": "error"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    answered = {"role": "tool", "content": '["timeout"]', "tool_call_id": "call_7f3a"}
    steps = [
        Step(StepKind.LLM, "chat", {"model": "m", "messages": history}, asked),
        Step(StepKind.TOOL, "search_logs", {"arguments": {"q": "error"}}, ["timeout"]),
        Step(
            StepKind.LLM,
            "chat",
            {"model": "m", "messages": [*history, asked, answered]},
            {"content": "the search timed out"},
        ),
    ]
    return Trajectory.build("old-run", steps, outcome=0.0, metadata={"source": "old.jsonl"})


def _blob(db: sqlite3.Connection, value: Any) -> str:
    data = orjson.dumps(value)
    key = hashlib.sha256(data).hexdigest()
    db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (key, data))
    return key


def _insert(db: sqlite3.Connection, table: str, **row: Any) -> None:
    names = ", ".join(row)
    db.execute(
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values())
    )


def _write_version_1(path: Path, run: Trajectory, used: bool) -> None:
    """``run`` in a store as version 1 wrote it; ``used``: with the tables it made on first use,
    a report kept and a span waiting."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA page_size=16384")
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(VERSION_1 + "PRAGMA user_version=1;")
    db.execute("BEGIN")
    _insert(
        db,
        "trajectories",
        id=run.id,
        outcome=run.outcome,
        n_steps=len(run.steps),
        final_hash=run.final_hash,
        content_digest=content_digest(run),
        metadata_digest=_blob(db, run.metadata),
        spans_digest=_blob(db, []),
        source=run.metadata["source"],
        imported_at_unix_nano=1,
    )
    for step in run.steps:
        inputs, layout = step.inputs, 0
        if len(step.inputs.get("messages", ())) >= 2:  # each message its own blob
            inputs = dict(step.inputs, messages=[_blob(db, m) for m in step.inputs["messages"]])
            layout = 1
        _insert(
            db,
            "steps",
            trajectory_id=run.id,
            idx=step.index,
            kind=step.kind.value,
            name=step.name,
            inputs_digest=_blob(db, inputs),
            inputs_layout=layout,
            output_digest=_blob(db, step.output),
            status=step.status.value,
            resamplable=int(step.resamplable),
            op_key=_version_1_key(step),
            hash=step.hash,
        )
    db.execute("COMMIT")
    if used:
        db.executescript(VERSION_1_ON_FIRST_USE)
        db.execute(
            "INSERT INTO reports VALUES ('old-run', 'q1', 5, 'culprit', ?)",
            (orjson.dumps(OLD_REPORT),),
        )
        db.execute(
            "INSERT INTO report_steps VALUES "
            "('old-run', 'q1', 1, 'tool', 'search_logs', 'q', 'culprit', 0.8, 0.6, 0.9, 1, 0, NULL, 1)"
        )
        db.execute("INSERT INTO pending_spans VALUES ('t-waiting', 7, ?)", (OLD_SPAN,))
    db.close()


def _version_1_key(step: Step) -> str:
    """The op_key versions 1 and 2 stored: over the inputs as recorded (ids and all), the key the
    Merkle link is still made of."""
    return stored_key(step.kind.value, step.name, step.inputs)


def _stored_keys(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT op_key FROM steps ORDER BY idx")]
    finally:
        db.close()


def test_the_old_run_has_a_model_call_whose_op_key_version_3_makes_anew() -> None:
    run = _old_run()
    assert [_version_1_key(s) == s.op_key for s in run.steps] == [True, True, False]


def _version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def _shape(path: Path) -> list[tuple[Any, ...]]:
    """The store's tables and indexes, with each table's columns."""
    db = sqlite3.connect(path)
    try:
        objects = db.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        ).fetchall()
        return [(*row, db.execute(f"PRAGMA table_info({row[1]})").fetchall()) for row in objects]
    finally:
        db.close()


# --- a writing open migrates ----------------------------------------------------------------------


@pytest.mark.parametrize("used", [False, True], ids=["as-created", "with-first-use-tables"])
def test_a_writing_open_migrates_a_version_1_store(tmp_path: Path, used: bool) -> None:
    path, run = tmp_path / "old.db", _old_run()
    _write_version_1(path, run, used)

    with Store.open(path) as db:
        assert db.get("old-run") == run
        assert [i.result.value for i in ingest(db, [run])] == ["unchanged"]
        kept = db.reports("old-run")
        assert [k["report"] for k in kept] == ([OLD_REPORT] if used else [])
        assert db.decided_runs() == (1 if used else 0)
        assert db.pending(["t-waiting"]) == ({"t-waiting": [OLD_SPAN]} if used else {})
        # the tables version 1 made on first use are there, and take what they are given
        with db.transaction():
            db.keep_pending("t-new", [b"{}"], 9)
        assert db.pending_traces() == [*(["t-waiting"] if used else []), "t-new"]
        db.keep_report("old-run", "q2", orjson.dumps({"verdict": None}), None)
        assert db.report_counts() == {"old-run": 2 if used else 1}

    assert _version(path) == SCHEMA_VERSION
    assert _stored_keys(path) == [s.op_key for s in run.steps]  # version 3's, in the file
    Store.open(tmp_path / "new.db").close()
    assert _shape(path) == _shape(tmp_path / "new.db")  # migrated = created at the latest


def test_a_failed_migration_leaves_the_store_at_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    _write_version_1(path, _old_run(), used=False)
    broken = "CREATE TABLE half_done (a);\nCREATE TABLE blobs (a);\n"  # blobs exists: it fails
    monkeypatch.setattr(store_connection, "MIGRATIONS", (*store_connection.MIGRATIONS, broken))
    monkeypatch.setattr(store_connection, "SCHEMA_VERSION", SCHEMA_VERSION + 1)

    with pytest.raises(StoreError, match=r"cannot open store .*: table blobs already exists"):
        Store.open(path)

    monkeypatch.undo()
    assert _version(path) == 1
    assert "half_done" not in {row[1] for row in _shape(path)}
    with Store.open(path, read_only=True) as db:
        assert [s.id for s in db.summaries()] == ["old-run"]


# --- a reading open reads it as it is -------------------------------------------------------------


@pytest.mark.parametrize("used", [False, True], ids=["as-created", "with-first-use-tables"])
def test_a_reading_open_reads_a_version_1_store_and_changes_nothing(
    tmp_path: Path, used: bool
) -> None:
    path, run = tmp_path / "old.db", _old_run()
    _write_version_1(path, run, used)
    before = path.read_bytes()

    with Store.open(path, read_only=True) as db:
        assert db.get("old-run") == run  # the model call's op_key made afresh as it is read
        assert [r["op_key"] for r in db.iter_step_rows()] == [s.op_key for s in run.steps]
        assert [k["report"] for k in db.reports("old-run")] == ([OLD_REPORT] if used else [])
        assert db.report_counts() == ({"old-run": 1} if used else {})
        assert [r for r, _ in db.newest_reports()] == (["old-run"] if used else [])
        assert db.reported("q1") == ({"old-run"} if used else set())
        assert len(db.blame_sums()) == (1 if used else 0)
        assert db.pending_traces() == (["t-waiting"] if used else [])
        assert db.pending(["t-waiting"]) == ({"t-waiting": [OLD_SPAN]} if used else {})

    runner = CliRunner()
    for command in (["list"], ["show", "old-run"], ["export", "old-run", "--format", "jsonl"]):
        shown = runner.invoke(app, [*command, "--store", str(path)])
        assert shown.exit_code == 0, shown.output
        assert "old-run" in shown.stdout
    blamed = runner.invoke(app, ["blame", "--json", "--store", str(path)])
    if used:
        assert blamed.exit_code == 0, blamed.output
        assert orjson.loads(blamed.stdout)[0]["name"] == "search_logs"
    else:
        assert blamed.exit_code == 1 and "no stored report" in blamed.stderr

    assert path.read_bytes() == before
    assert _stored_keys(path) == [_version_1_key(s) for s in run.steps]
    wal = Path(f"{path}-wal")  # a reader of a WAL file may make it (and -shm), never write to it
    assert not wal.exists() or wal.stat().st_size == 0
    assert _version(path) == 1


# --- version 5: each run's replayability in its row ----------------------------------------------


def test_migration_5_judges_each_stored_run_and_a_reading_open_says_unknown(
    tmp_path: Path,
) -> None:
    """The verdict ``list`` shows is in the row from version 5 on: a migration computes it for the
    runs stored before; a reading open of an older store reads it as unknown (``?``)."""
    whole, lacking = tmp_path / "whole.db", tmp_path / "lacking.db"
    _write_version_1(whole, _old_run(), used=False)
    old = _old_run()
    tool = old.steps[1]
    run = Trajectory.build(
        old.id,
        [old.steps[0], Step(tool.kind, tool.name, tool.inputs, None), old.steps[2]],
        outcome=old.outcome,
        metadata=old.metadata,
    )  # the tool step recorded no result
    _write_version_1(lacking, run, used=False)

    with Store.open(lacking, read_only=True) as db:
        assert db.summary("old-run").replayability is None  # type: ignore[union-attr]
        assert db.count_runs("replayability = partial") == 0  # unknown: admitted by none
        assert [s.id for s in db.runs("replayability != partial")] == []
    listed = CliRunner().invoke(app, ["list", "--store", str(lacking)], env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    assert "│ ?" in listed.stdout
    assert _version(lacking) == 1

    with Store.open(whole) as db:
        assert db.summary("old-run").replayability == "replayable"  # type: ignore[union-attr]
    with Store.open(lacking) as db:
        assert db.summary("old-run").replayability == "partial"  # type: ignore[union-attr]
        assert [s.replayability for s in db.runs()] == ["partial"]
    assert _version(lacking) == SCHEMA_VERSION


# --- version 6: where each run's outcome came from ------------------------------------------------


def test_migration_6_names_each_stored_outcome_s_source_and_a_reading_open_says_unknown(
    tmp_path: Path,
) -> None:
    """A run stored before version 6 got its outcome from its trace or its recording (nothing
    scored a stored run before): the migration says which, and a reading open reads it as unknown.
    A score stored afterwards names its own source and changes no hash."""
    traced, recorded = tmp_path / "traced.db", tmp_path / "recorded.db"
    old = _old_run()
    _write_version_1(recorded, old, used=False)
    _write_version_1(
        traced,
        Trajectory.build(old.id, old.steps, outcome=0.0,
                         metadata={"source": "t.otlp.jsonl", "format": "otlp-jsonl"}),
        used=False,
    )  # fmt: skip
    with Store.open(traced, read_only=True) as db:
        assert db.summary("old-run").outcome_source is None  # type: ignore[union-attr]
    assert _version(traced) == 1

    with Store.open(recorded) as db:
        assert db.summary("old-run").outcome_source == "record"  # type: ignore[union-attr]
    with Store.open(traced) as db:
        assert db.summary("old-run").outcome_source == "trace"  # type: ignore[union-attr]
        before = db.summary("old-run")
        db.set_outcome("old-run", 1.0, "verifier:checks.ok")
        after = db.summary("old-run")
        assert after is not None and before is not None
        assert (after.outcome, after.outcome_source) == (1.0, "verifier:checks.ok")
        assert after.final_hash == before.final_hash
        assert after.content_digest == content_digest(db.get("old-run"))
        assert db.get("old-run").metadata["outcome_source"] == "verifier:checks.ok"
    assert _version(traced) == SCHEMA_VERSION


# --- a newer store is refused ---------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True], ids=["writing", "reading"])
def test_a_store_of_a_newer_version_is_refused_naming_both(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "newer.db"
    Store.open(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    before = path.read_bytes()

    with pytest.raises(StoreError) as raised:
        Store.open(path, read_only=read_only)

    assert str(raised.value) == (
        f"{path} has schema version {SCHEMA_VERSION + 1}, newer than this agent-replay "
        f"understands ({SCHEMA_VERSION}); upgrade agent-replay"
    )
    assert path.read_bytes() == before


# --- every migration runs again over a store that has it ------------------------------------------


def _contents(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in a stable order."""
    db = sqlite3.connect(path)
    try:
        tables = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        db.close()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_every_migration_runs_again_over_a_store_that_has_it(tmp_path: Path, version: int) -> None:
    """A store at the latest version whose ``user_version`` was set back to ``version`` (a tool, a
    hand, an older copy of the file's header) takes the migrations after it again and is the same
    store: the same tables, indexes, columns and rows; then it is written to as any other."""
    path = tmp_path / "store.db"
    with Store.open(path) as db:
        ingest(db, [_old_run()])
        db.keep_report("old-run", "q1", orjson.dumps(OLD_REPORT), "culprit")
        with db.transaction():
            db.keep_pending("t-waiting", [OLD_SPAN], 7)
    shape, contents = _shape(path), _contents(path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()

    with Store.open(path) as store:
        added = _old_run().steps
        ingest(store, [Trajectory.build("new-run", added, outcome=1.0)])

    assert _version(path) == SCHEMA_VERSION
    assert _shape(path) == shape
    after = _contents(path)
    new = {t: [r for r in rows if r not in contents[t]] for t, rows in after.items()}
    assert {t: [r for r in rows if r in contents[t]] for t, rows in after.items()} == contents
    assert {t for t, rows in new.items() if rows} <= {"trajectories", "steps", "blobs"}
    with Store.open(path, read_only=True) as store:
        assert sorted(s.id for s in store.summaries()) == ["new-run", "old-run"]
        assert store.get("old-run") == _old_run()
