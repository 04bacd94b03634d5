"""The store: idempotent imports, cross-format dedup, one transaction per file, schema versions,
deduplicated blobs, id prefixes, the ``AGENT_REPLAY_STORE`` variable, and surviving ``kill -9``."""

from __future__ import annotations

import gzip
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner, Result

from otel_replay import (
    NotFoundError,
    Step,
    StepKind,
    Store,
    StoreError,
    TraceFormatError,
    Trajectory,
    read_path,
)
from otel_replay.cli import _import_run as cli_import
from otel_replay.cli import app
from otel_replay.importers import otlp_json, otlp_proto
from otel_replay.ingest import ingest
from otel_replay.otlp_encode import (
    spans_to_request,
    write_otlp_json_lines,
    write_otlp_proto_stream,
)
from otel_replay.store._connection import SCHEMA_VERSION
from otel_replay.store._trajectories import TrajectorySummary
from tests.conftest import SAMPLES
from tests.sdk import Recorder, dumps, encodings

SAMPLE_FILES = sorted(p.name for p in SAMPLES.iterdir() if p.is_file())

# --- helpers ---------------------------------------------------------------------------------------


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _trajectory_record(
    trajectory_id: str, steps: list[dict[str, Any]], outcome: float | None = 1.0
) -> dict[str, Any]:
    return {"trajectory_id": trajectory_id, "outcome": outcome, "metadata": {}, "steps": steps}


def _tool_step(arguments: dict[str, Any], output: Any) -> dict[str, Any]:
    return {
        "kind": "tool",
        "name": "search_logs",
        "inputs": {"arguments": arguments},
        "output": output,
    }


def _import(runner: CliRunner, store: Path, *paths: Path, json: bool = True) -> Result:
    result = runner.invoke(
        app, ["import", *map(str, paths), "--store", str(store), *(["--json"] if json else [])]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def _results(result: Result) -> list[str]:
    """The per-trajectory outcome ("added", "unchanged", ...) of an ``import --json``."""
    assert result.exit_code == 0, result.output
    return [
        row["result"] for report in orjson.loads(result.stdout) for row in report["trajectories"]
    ]


class State(NamedTuple):
    counts: dict[str, int]
    summaries: list[TrajectorySummary]
    listing: str


def _state(runner: CliRunner, store: Path) -> State:
    with Store.open(store) as db:
        counts, summaries = db.counts(), db.summaries()
    listing = runner.invoke(app, ["list", "--json", "--store", str(store)])
    assert listing.exit_code == 0, listing.output
    return State(counts, summaries, listing.stdout)


def _copy(name: str, directory: Path, *, compress: bool = False) -> Path:
    source = SAMPLES / name
    if not compress:
        return Path(shutil.copy(source, directory / name))
    target = directory / f"{name}.gz"
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


# --- idempotence and dedup -------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_reimporting_a_file_changes_nothing(
    name: str, runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = _copy(name, tmp_path)
    first = _results(_import(runner, store_path, path))
    assert first and set(first) == {"added"}
    before = _state(runner, store_path)

    again = _results(_import(runner, store_path, path))

    assert again == ["unchanged"] * len(first)
    assert _state(runner, store_path) == before


@pytest.mark.parametrize(
    ("first", "second", "compress_second"),
    [
        ("incident.otlp.jsonl", "incident.otlp.pb", False),
        ("incident.otlp.pb", "incident.otlp.jsonl", False),
        ("incident.otlp.jsonl", "incident.otlp.jsonl", True),
        ("incident.otlp.pb", "incident.otlp.pb", True),
    ],
    ids=["jsonl-then-proto", "proto-then-jsonl", "jsonl-then-gzip", "proto-then-gzip"],
)
def test_same_runs_in_another_encoding_dedupe(
    first: str,
    second: str,
    compress_second: bool,
    runner: CliRunner,
    store_path: Path,
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first_path = _copy(first, tmp_path / "a")
    second_path = _copy(second, tmp_path / "b", compress=compress_second)
    added = _results(_import(runner, store_path, first_path))
    assert set(added) == {"added"}
    before = _state(runner, store_path)

    again = _import(runner, store_path, second_path)

    assert _results(again) == ["unchanged"] * len(added)
    assert _state(runner, store_path).counts == before.counts
    assert [(s.id, s.final_hash) for s in _state(runner, store_path).summaries] == [
        (s.id, s.final_hash) for s in before.summaries
    ]


def _sdk_run() -> Recorder:
    """One OpenInference agent run (LLM call, tool call, answer) from the real SDK."""
    rec = Recorder()
    with rec.span("agent", {"openinference.span.kind": "AGENT", "agent_replay.outcome": 0.0}):
        with rec.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "stand-in",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "why is checkout failing?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "checking the logs",
            },
        ):
            pass
        with rec.span(
            "search_logs",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "search_logs",
                "input.value": dumps({"query": "error"}),
                "input.mime_type": "application/json",
                "output.value": dumps([{"level": "ERROR", "message": "pool exhausted"}]),
                "output.mime_type": "application/json",
            },
        ):
            pass
    return rec


def test_sdk_spans_in_every_encoding_dedupe(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    paths = encodings(_sdk_run().spans(), tmp_path / "encoded")
    first = paths.pop("otlp-jsonl")
    assert _results(_import(runner, store_path, first)) == ["added"]
    before = _state(runner, store_path)

    rest = _import(runner, store_path, *paths.values())

    assert _results(rest) == ["unchanged"] * len(paths)
    assert _state(runner, store_path).counts == before.counts


def test_known_trajectory_followed_by_a_new_one_in_another_file(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """A file that repeats a stored run (now under another path) and adds a new one."""
    known = _trajectory_record("known", [_tool_step({"q": "a"}, 1)])
    new = _trajectory_record("new", [_tool_step({"q": "b"}, 2)])
    old_file = tmp_path / "monday.steps.jsonl"
    old_file.write_bytes(_jsonl([known]))
    grown_file = tmp_path / "week.steps.jsonl"
    grown_file.write_bytes(_jsonl([known, new]))
    assert _results(_import(runner, store_path, old_file)) == ["added"]

    result = _import(runner, store_path, grown_file)

    assert _results(result) == ["unchanged", "added"]
    with Store.open(store_path) as db:
        assert [s.id for s in db.summaries()] == ["known", "new"]
        stored = db.get("new")
    assert stored.steps[0].inputs == {"arguments": {"q": "b"}}
    assert stored.metadata["source"] == str(grown_file)


# --- one transaction per file ----------------------------------------------------------------------


def _native_failing_late(path: Path) -> None:
    good = [_trajectory_record(f"late-{i}", [_tool_step({"i": i}, i)]) for i in range(5)]
    path.write_bytes(_jsonl(good) + b'{"trajectory_id": "late-5", "kind": "nonsense"}\n')


def _sdk_requests() -> list[ExportTraceServiceRequest]:
    rec = Recorder()
    for run in range(4):
        with rec.span("agent", {"openinference.span.kind": "AGENT"}):
            with rec.span("tool", {"openinference.span.kind": "TOOL", "tool.name": f"t{run}"}):
                pass
    spans = rec.spans()
    return [spans_to_request(spans[i : i + 2]) for i in range(0, len(spans), 2)]


def _otlp_jsonl_failing_late(path: Path) -> None:
    write_otlp_json_lines(_sdk_requests(), path)
    with open(path, "ab") as out:
        out.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}\n')


def _proto_stream_failing_late(path: Path) -> None:
    write_otlp_proto_stream(_sdk_requests(), path)
    with open(path, "ab") as out:
        out.write(b"\x00\x00\x00\x06\x0a\xff\xff\xff\xff\xff")


@pytest.mark.parametrize(
    ("name", "write", "streams"),
    [
        ("late.steps.jsonl", _native_failing_late, False),
        ("late.otlp.jsonl", _otlp_jsonl_failing_late, True),
        ("late.otlp.pb", _proto_stream_failing_late, True),
    ],
    ids=["native-jsonl", "otlp-jsonl-streamed", "proto-stream-streamed"],
)
def test_file_failing_late_leaves_store_exactly_as_before(
    name: str,
    write: Callable[[Path], None],
    streams: bool,
    runner: CliRunner,
    store_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed = tmp_path / "seed.steps.jsonl"
    seed.write_bytes(_jsonl([_trajectory_record("seed", [_tool_step({"i": 0}, 0)])]))
    assert _results(_import(runner, store_path, seed)) == ["added"]
    before = _state(runner, store_path)
    path = tmp_path / name
    write(path)
    # Streaming (what large files get) hands whole traces to the store before the file ends, so
    # the failure happens after trajectories were written inside the file's transaction.
    monkeypatch.setattr(otlp_json, "TWO_PASS_THRESHOLD_BYTES", 0)
    monkeypatch.setattr(otlp_proto, "TWO_PASS_THRESHOLD_BYTES", 0)
    handed_over: list[str] = []

    def counting_read_path(*args: Any, **kwargs: Any) -> Iterator[Trajectory]:
        for trajectory in read_path(*args, **kwargs):
            handed_over.append(trajectory.id)
            yield trajectory

    monkeypatch.setattr(cli_import, "read_path", counting_read_path)

    result = _import(runner, store_path, path)

    assert result.exit_code == 1
    assert str(path) in result.stderr
    if streams:
        assert handed_over, "no trajectory reached the store before the error"
    assert _state(runner, store_path) == before


def _built(trajectory_id: str, n_steps: int) -> Trajectory:
    steps = [Step(StepKind.TOOL, "t", {"i": i}, output=i) for i in range(n_steps)]
    return Trajectory.build(trajectory_id, steps, outcome=1.0)


@pytest.mark.parametrize("write", [Store.put_all, ingest], ids=["put_all", "ingest"])
def test_writes_are_all_or_nothing(
    store_path: Path, write: Callable[[Store, Iterator[Trajectory]], object]
) -> None:
    def failing_late() -> Iterator[Trajectory]:
        yield _built("one", 2)
        yield _built("two", 3)
        raise TraceFormatError("record 3 is broken", path="x.jsonl", line=3)

    with Store.open(store_path) as db:
        db.put_all([_built("kept", 1)])
        before = (db.counts(), db.summaries())
        with pytest.raises(TraceFormatError, match="record 3"):
            write(db, failing_late())
        assert (db.counts(), db.summaries()) == before
        stored = ingest(db, [_built("one", 2), _built("two", 3)])
        assert [(s.summary.id, s.result.value) for s in stored] == [
            ("one", "added"),
            ("two", "added"),
        ]
        assert db.counts()["steps"] == 1 + 2 + 3


# --- refusing what is not our store ----------------------------------------------------------------


def _newer_store(path: Path) -> None:
    Store.open(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()


def _foreign_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('keep me')")
    db.commit()
    db.close()


def _text_file(path: Path) -> None:
    path.write_text("these are my notes, not a database\n" * 40)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [(_newer_store, "99"), (_foreign_sqlite, "not an agent-replay store"), (_text_file, "not")],
    ids=["schema-version-99", "foreign-sqlite", "not-sqlite"],
)
def test_store_that_is_not_ours_is_refused_and_left_alone(
    make: Callable[[Path], None], fragment: str, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "elsewhere.db"
    make(path)
    before = path.read_bytes()

    with pytest.raises(StoreError) as raised:
        Store.open(path)
    assert str(path) in str(raised.value)
    assert fragment in str(raised.value)

    listed = runner.invoke(app, ["list", "--store", str(path)])
    assert listed.exit_code == 1
    assert isinstance(listed.exception, SystemExit)
    assert [line for line in listed.stderr.splitlines() if line.strip()] == [
        f"error: {raised.value}"
    ]
    assert path.read_bytes() == before, "refusing a file must not modify it"


def test_schema_version_is_recorded(store_path: Path) -> None:
    Store.open(store_path).close()
    db = sqlite3.connect(store_path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


# --- blobs -----------------------------------------------------------------------------------------


def _blob_count(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> int:
    path = tmp_path / f"{name}.steps.jsonl"
    path.write_bytes(_jsonl(records))
    with Store.open(tmp_path / f"{name}.db") as db:
        db.put_all(read_path(path))
        return db.counts()["blobs"]


_HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You investigate incidents. " * 40},
    {"role": "user", "content": "checkout error rate is above 5% " * 20},
]


@pytest.mark.parametrize(
    "inputs",
    [{"arguments": {"query": "error OR warn " * 100}}, {"model": "m", "messages": _HISTORY}],
    ids=["tool-arguments", "llm-messages"],
)
def test_identical_inputs_are_stored_once(inputs: dict[str, Any], tmp_path: Path) -> None:
    def run(i: int) -> dict[str, Any]:
        step = {"kind": "llm", "name": "m", "inputs": inputs, "output": f"answer {i}"}
        return _trajectory_record(f"run-{i}", [step])

    one = _blob_count(tmp_path, "one", [run(0)])
    five = _blob_count(tmp_path, "five", [run(i) for i in range(5)])

    assert five - one == 4  # each further run adds its own output and nothing else
    with Store.open(tmp_path / "five.db") as db:
        assert db.get("run-3").steps[0].inputs == inputs


def test_growing_history_costs_the_same_per_turn_however_long(tmp_path: Path) -> None:
    """An agent resends its whole history on every call; storage per turn must not grow with it."""

    def conversation(turns: int) -> dict[str, Any]:
        messages = list(_HISTORY)
        steps: list[dict[str, Any]] = []
        for turn in range(turns):
            steps.append({"kind": "llm", "name": "m", "inputs": {"messages": list(messages)},
                          "output": {"role": "assistant", "content": f"step {turn} " * 30}})  # fmt: skip
            messages.append(steps[-1]["output"])
        return _trajectory_record("conversation", steps)

    short = [_blob_count(tmp_path, f"short{n}", [conversation(n)]) for n in (2, 3)]
    long = [_blob_count(tmp_path, f"long{n}", [conversation(n)]) for n in (20, 21)]

    assert long[1] - long[0] == short[1] - short[0]
    assert long[1] - long[0] < 20


# --- ids -------------------------------------------------------------------------------------------


IDS = ("a1b2", "a1b2c3", "a1c9", "b7", "under_score", "underXscore", "x%y", "xzy")


@pytest.fixture
def ids_store(store_path: Path) -> Iterator[Store]:
    with Store.open(store_path) as db:
        db.put_all(_built(i, 1) for i in IDS)
        yield db


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("a1c", "a1c9"),
        ("a1b2", "a1b2"),
        ("a1b2c", "a1b2c3"),
        ("b", "b7"),
        ("x%", "x%y"),
        ("under_", "under_score"),
    ],
    ids=[
        "unique-prefix",
        "exact-beats-longer",
        "longer",
        "one-letter",
        "percent-is-literal",
        "underscore-is-literal",
    ],
)
def test_resolve_finds_one_trajectory(ids_store: Store, query: str, expected: str) -> None:
    assert ids_store.resolve(query) == expected
    assert ids_store.get(query).id == expected


def test_resolve_lists_the_matches_of_an_ambiguous_prefix(ids_store: Store) -> None:
    with pytest.raises(NotFoundError) as raised:
        ids_store.resolve("a1")
    for match in ("a1b2", "a1b2c3", "a1c9"):
        assert match in str(raised.value)
    assert "b7" not in str(raised.value)


@pytest.mark.parametrize(
    "query",
    ["zz", "a_", "under%e", "%", "b7-"],
    ids=[
        "no-match",
        "underscore-is-no-wildcard",
        "percent-is-no-wildcard",
        "lone-percent",
        "longer-than-id",
    ],
)
def test_resolve_refuses_an_unknown_id(ids_store: Store, query: str) -> None:
    with pytest.raises(NotFoundError) as raised:
        ids_store.resolve(query)
    message = str(raised.value)
    assert repr(query) in message
    rest = message.replace(repr(query), "").replace(str(ids_store.path), "")
    assert not [i for i in IDS if i in rest], f"an unknown id must not match: {message}"
    assert isinstance(raised.value, LookupError)


# --- where the store lives -------------------------------------------------------------------------


def test_cli_uses_agent_replay_store_variable(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    chosen = tmp_path / "elsewhere" / "runs.db"
    env = {"AGENT_REPLAY_STORE": str(chosen)}
    trace = _copy("incident.otlp.jsonl", tmp_path)

    imported = runner.invoke(app, ["import", str(trace), "--json"], env=env)
    listed = runner.invoke(app, ["list", "--json"], env=env)
    overridden = runner.invoke(app, ["list", "--json", "--store", str(tmp_path / "x.db")], env=env)

    assert imported.exit_code == 0, imported.output
    with Store.open(chosen) as db:
        ids = [s.id for s in db.runs()]  # newest first, as `list` shows them
    assert len(ids) == len(_results(imported)) > 0
    assert [row["id"] for row in orjson.loads(listed.stdout)] == ids
    # --store wins over the variable; a reading command does not create the store it names
    assert (
        overridden.exit_code == 1
        and f"there is no store at {tmp_path / 'x.db'}" in overridden.stderr
    )
    assert not (tmp_path / "x.db").exists()
    assert not (tmp_path / ".agent-replay").exists()


def test_cli_default_store_is_in_the_working_directory(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_REPLAY_STORE", raising=False)
    trace = _copy("incident.otlp.jsonl", tmp_path)

    result = runner.invoke(app, ["import", str(trace), "--json"], env={"AGENT_REPLAY_STORE": None})

    assert result.exit_code == 0, result.output
    with Store.open(tmp_path / ".agent-replay" / "store.db") as db:
        assert db.counts()["trajectories"] == len(_results(result))


# --- kill -9 in the middle of an import ------------------------------------------------------------


def _many_runs(path: Path, n_runs: int) -> None:
    with open(path, "wb") as out:
        for i in range(n_runs):
            steps = [
                {"kind": "llm", "name": "m", "output": f"a{i}-{j}",
                 "inputs": {"prompt": f"run {i} turn {j} " + "context " * 30}}
                for j in range(4)
            ]  # fmt: skip
            out.write(orjson.dumps(_trajectory_record(f"bulk-{i:05d}", steps)) + b"\n")


def test_killed_import_leaves_only_whole_trajectories(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.steps.jsonl"
    seed.write_bytes(_jsonl([_trajectory_record("seed", [_tool_step({"i": 0}, 0)] * 3)]))
    assert _results(_import(runner, store_path, seed)) == ["added"]
    n_runs = 4000
    big = tmp_path / "big.steps.jsonl"
    _many_runs(big, n_runs)
    wal = store_path.with_name(store_path.name + "-wal")

    process = subprocess.Popen(
        [sys.executable, "-m", "otel_replay", "import", str(big), "--store", str(store_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        # kill once the import is writing (its uncommitted pages reach the WAL), or after 1.5 s
        while time.monotonic() - started < 1.5 and process.poll() is None:
            if wal.exists() and wal.stat().st_size > 256 * 1024:
                break
            time.sleep(0.005)
        killed_mid_import = process.poll() is None
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()

    with Store.open(store_path) as db:
        summaries = db.summaries()
        ids = {s.id for s in summaries}
        assert ids in ({"seed"}, {"seed"} | {f"bulk-{i:05d}" for i in range(n_runs)})
        if killed_mid_import:
            assert ids == {"seed"}
        for summary in summaries:
            rows = list(db.iter_step_rows([summary.id]))
            assert len(rows) == summary.n_steps, summary.id
        assert db.counts()["steps"] == sum(s.n_steps for s in summaries)
    check = sqlite3.connect(store_path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        check.close()

    again = _import(runner, store_path, big)
    assert set(_results(again)) <= {"added", "unchanged"}
    with Store.open(store_path) as db:
        assert db.counts()["trajectories"] == n_runs + 1
        assert len(db.get("bulk-03999").steps) == 4
