"""``agent-replay`` through Typer's CliRunner: import, list, show, export (JSONL round trip, Parquet)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner, Result

import otel_replay
from otel_replay import Store, Trajectory, read_path
from otel_replay.cli import app
from otel_replay.hashing import GENESIS, link_hash, op_key, result_digest, stored_key
from tests.conftest import SAMPLES

WIDE = {"COLUMNS": "250"}  # tables are not truncated, so whole cells can be compared

#: The columns of the step table (``steps_frame`` and ``export --format parquet``), in order.
STEP_COLUMNS = [
    "trajectory_id",
    "index",
    "kind",
    "name",
    "status",
    "error",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "duration_ms",
    "span_id",
    "parent_span_id",
    "resamplable",
    "op_key",
    "hash",
    "outcome",
    "source",
    "inputs",
    "output",
]


def _invoke(runner: CliRunner, *args: str, store: Path | None = None) -> Result:
    full = [*args, *(["--store", str(store)] if store is not None else [])]
    result = runner.invoke(app, full, env=WIDE)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def _ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def _native_steps_file(path: Path) -> None:
    """Two small runs in the native JSONL format: one whole-trajectory line, one run as step lines."""
    lines: list[dict[str, Any]] = [
        {
            "trajectory_id": "native-pass",
            "outcome": 1.0,
            "metadata": {"note": "hand written"},
            "steps": [
                {
                    "kind": "llm",
                    "name": "planner",
                    "inputs": {"messages": [{"role": "user", "content": "find the cause"}]},
                    "output": {"role": "assistant", "content": "ok"},
                },
                {
                    "kind": "tool",
                    "name": "search_logs",
                    "inputs": {"arguments": {"q": "error"}},
                    "output": ["pool exhausted"],
                },
            ],
        },
        {
            "trajectory_id": "native-fail",
            "kind": "tool",
            "name": "list_deploys",
            "inputs": {"arguments": {"service": "checkout"}},
            "output": None,
            "status": "error",
            "error": "deploy API timed out",
        },
        {"trajectory_id": "native-fail", "outcome": 0.0},
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    """A directory as users have them: an OTLP JSON Lines export, a native JSONL file, a README."""
    directory = tmp_path / "traces"
    directory.mkdir()
    shutil.copy(SAMPLES / "incident.otlp.jsonl", directory)
    _native_steps_file(directory / "runs.steps.jsonl")
    (directory / "README.md").write_text("Exported from the staging collector.\n")
    return directory


def _expected(directory: Path) -> dict[str, tuple[Trajectory, Path]]:
    """What the library reads from each trace file of ``directory``, by trajectory id."""
    return {t.id: (t, path) for path in sorted(directory.glob("*.jsonl")) for t in read_path(path)}


@pytest.fixture
def sample_store(runner: CliRunner, store_path: Path) -> Path:
    """A store holding every bundled sample trace."""
    _ok(_invoke(runner, "import", str(SAMPLES), "--json", store=store_path))
    return store_path


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("│┃").split("│")]


def _rows(output: str, first_column: Sequence[str]) -> dict[str, list[str]]:
    """Table rows of ``output`` keyed by their first cell, for the first cells asked for."""
    rows = {}
    for line in output.splitlines():
        if line.startswith("│"):
            cells = _cells(line)
            if cells[0] in first_column:
                rows[cells[0]] = cells
    return rows


# --- help and import -------------------------------------------------------------------------------


def test_help_lists_the_commands(runner: CliRunner) -> None:
    result = _ok(_invoke(runner, "--help"))
    for command in ("import", "list", "show", "export"):
        assert re.search(rf"│ {command}\b", result.stdout), command


def test_import_directory_prints_summary_table(
    runner: CliRunner, store_path: Path, trace_dir: Path
) -> None:
    expected = _expected(trace_dir)
    assert len(expected) == 5

    result = _ok(_invoke(runner, "import", str(trace_dir), store=store_path))

    rows = _rows(result.stdout, list(expected))
    assert set(rows) == set(expected)
    for trajectory_id, (trajectory, path) in expected.items():
        _, steps, outcome, source, status = rows[trajectory_id]  # all replayable: no column
        assert steps == str(len(trajectory.steps))
        assert outcome == ("—" if trajectory.outcome is None else f"{trajectory.outcome:g}")
        assert source.endswith(path.name)
        assert status == "added"
    assert "5 added" in result.stdout
    assert "README" not in result.output
    assert "replayab" not in result.stdout


def test_import_json_reports_each_file(
    runner: CliRunner, store_path: Path, trace_dir: Path
) -> None:
    expected = _expected(trace_dir)

    result = _ok(_invoke(runner, "import", str(trace_dir), "--json", store=store_path))

    reports = orjson.loads(result.stdout)
    assert [Path(r["path"]).name for r in reports] == ["incident.otlp.jsonl", "runs.steps.jsonl"]
    for report in reports:
        assert report["skipped"] == [] and report["warnings"] == []
        for row in report["trajectories"]:
            trajectory, path = expected[row["id"]]
            assert Path(row["source"]).name == path.name == Path(report["path"]).name
            assert row["steps"] == len(trajectory.steps)
            assert row["outcome"] == trajectory.outcome
            assert row["final_hash"] == trajectory.final_hash
            assert row["result"] == "added"
    assert sorted(row["id"] for r in reports for row in r["trajectories"]) == sorted(expected)


# --- list and show ---------------------------------------------------------------------------------


def test_list_shows_every_trajectory(runner: CliRunner, sample_store: Path) -> None:
    with Store.open(sample_store) as db:
        summaries = db.summaries()
    assert len(summaries) >= 5

    table = _ok(_invoke(runner, "list", store=sample_store))
    as_json = _ok(_invoke(runner, "list", "--json", store=sample_store))

    rows = _rows(table.stdout, [s.id for s in summaries])
    assert list(rows) == [s.id for s in reversed(summaries)]  # newest run first
    assert all(s.start_time_unix_nano is not None for s in summaries)  # so exactly reversed
    summaries = summaries[::-1]
    for s in summaries:
        assert rows[s.id][1] == str(s.n_steps)
    assert orjson.loads(as_json.stdout) == [
        {"id": s.id, "steps": s.n_steps, "outcome": s.outcome, "final_hash": s.final_hash,
         "source": s.source, "format": s.format, "replayability": s.replayability,
         "outcome_source": s.outcome_source, "task": s.task}
        for s in summaries
    ]  # fmt: skip


def _failing_run(store_path: Path) -> Trajectory:
    with Store.open(store_path) as db:
        (failing,) = [
            s
            for s in db.summaries()
            if s.outcome == 0.0 and Path(s.source or "").name == "incident.otlp.jsonl"
        ]
        return db.get(failing.id)


def _unique_prefix(store_path: Path, trajectory_id: str) -> str:
    with Store.open(store_path) as db:
        ids = [s.id for s in db.summaries()]
    for length in range(4, len(trajectory_id)):
        prefix = trajectory_id[:length]
        if [i for i in ids if i.startswith(prefix)] == [trajectory_id]:
            return prefix
    raise AssertionError(f"no unique prefix for {trajectory_id}")


def test_show_prefix_prints_the_step_table(runner: CliRunner, sample_store: Path) -> None:
    trajectory = _failing_run(sample_store)
    prefix = _unique_prefix(sample_store, trajectory.id)

    result = _ok(_invoke(runner, "show", prefix, store=sample_store))

    assert trajectory.id in result.stdout
    header = next(line for line in result.stdout.splitlines() if line.startswith("┃"))
    assert _cells(header.replace("┃", "│"))[:4] == ["#", "kind", "name", "status"]
    rows = _rows(result.stdout, [str(s.index) for s in trajectory.steps])
    assert [tuple(rows[str(s.index)][1:4]) for s in trajectory.steps] == [
        (s.kind.value, s.name, s.status.value) for s in trajectory.steps
    ]


def test_show_json_prints_the_whole_trajectory(runner: CliRunner, sample_store: Path) -> None:
    trajectory = _failing_run(sample_store)
    listed = orjson.loads(_ok(_invoke(runner, "list", "--json", store=sample_store)).stdout)

    result = _ok(_invoke(runner, "show", trajectory.id[:12], "--json", store=sample_store))

    record = orjson.loads(result.stdout)
    assert record["trajectory_id"] == trajectory.id
    assert record["outcome"] == 0.0
    assert record["final_hash"] == next(r["final_hash"] for r in listed if r["id"] == trajectory.id)
    steps = record["steps"]
    assert [s["index"] for s in steps] == list(range(len(trajectory.steps)))
    assert any(s["kind"] == "llm" and s["inputs"].get("messages") for s in steps)
    assert any(s["kind"] == "tool" and s["output"] is not None for s in steps)
    # the printed inputs and outputs are the very ones the hash chain was computed from
    previous = GENESIS
    for step in steps:
        assert step["op_key"] == op_key(step["kind"], step["name"], step["inputs"])
        previous = link_hash(  # the chain names the stored bytes: its key is the stored inputs'
            previous,
            stored_key(step["kind"], step["name"], step["inputs"]),
            result_digest(step["output"], step["status"], step["error"]),
        )
        assert step["hash"] == previous, step["index"]
    assert record["final_hash"] == previous


@pytest.mark.parametrize("query", ["0000dead", "[/]"], ids=["unknown-id", "markup-like-id"])
def test_show_unknown_id_is_one_line_error(
    query: str, runner: CliRunner, sample_store: Path
) -> None:
    result = _invoke(runner, "show", query, store=sample_store)

    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert repr(query) in lines[0]
    assert result.stdout == ""


def test_show_ambiguous_prefix_lists_the_candidates(
    runner: CliRunner, store_path: Path, trace_dir: Path
) -> None:
    _ok(_invoke(runner, "import", str(trace_dir), "--json", store=store_path))

    result = _invoke(runner, "show", "native", store=store_path)

    assert result.exit_code == 1
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert "native-pass" in line and "native-fail" in line


# --- export ----------------------------------------------------------------------------------------


def _chains(store_path: Path) -> dict[str, tuple[list[str], str, float | None]]:
    """Per trajectory: its step hashes, final hash and outcome."""
    with Store.open(store_path) as db:
        return {
            s.id: ([step.hash for step in db.get(s.id).steps], s.final_hash, s.outcome)
            for s in db.summaries()
        }


def test_export_jsonl_round_trip_keeps_every_hash(
    runner: CliRunner, sample_store: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "all.steps.jsonl"
    _ok(_invoke(runner, "export", "--format", "jsonl", "--out", str(exported), store=sample_store))
    fresh = tmp_path / "fresh.db"

    _ok(_invoke(runner, "import", str(exported), "--json", store=fresh))

    original = _chains(sample_store)
    assert len(exported.read_bytes().splitlines()) == len(original)
    assert _chains(fresh) == original


def test_export_one_trajectory_to_stdout_round_trips(
    runner: CliRunner, sample_store: Path, tmp_path: Path
) -> None:
    trajectory = _failing_run(sample_store)

    result = _ok(
        _invoke(runner, "export", trajectory.id[:8], "--format", "jsonl", store=sample_store)
    )

    lines = result.stdout_bytes.splitlines()
    assert len(lines) == 1
    assert orjson.loads(lines[0])["trajectory_id"] == trajectory.id
    exported = tmp_path / "one.jsonl"
    exported.write_bytes(result.stdout_bytes)
    fresh = tmp_path / "fresh.db"
    _ok(_invoke(runner, "import", str(exported), "--json", store=fresh))
    with Store.open(fresh) as db:
        again = db.get(trajectory.id)
    assert [s.hash for s in again.steps] == [s.hash for s in trajectory.steps]
    assert again.final_hash == trajectory.final_hash
    assert again.outcome == trajectory.outcome
    assert [(s.inputs, s.output) for s in again.steps] == [
        (s.inputs, s.output) for s in trajectory.steps
    ]


def test_export_parquet_has_one_row_per_step(
    runner: CliRunner, sample_store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "steps.parquet"

    _ok(_invoke(runner, "export", "--format", "parquet", "--out", str(out), store=sample_store))

    frame = pl.read_parquet(out)
    with Store.open(sample_store) as db:
        summaries = db.summaries()
        in_memory = otel_replay.steps_frame(db)
    failing = _failing_run(sample_store)
    assert frame.columns == STEP_COLUMNS
    assert frame.height == sum(s.n_steps for s in summaries)
    # export orders runs oldest first, steps_frame by id: the same rows either way
    by_step = ["trajectory_id", "index"]
    assert frame.sort(by_step).equals(in_memory.sort(by_step))
    rows = frame.filter(pl.col("trajectory_id") == failing.id).sort("index")
    assert rows["hash"].to_list() == [s.hash for s in failing.steps]
    assert rows["kind"].to_list() == [s.kind.value for s in failing.steps]
    assert [orjson.loads(text) for text in rows["inputs"]] == [s.inputs for s in failing.steps]
    assert [orjson.loads(text) for text in rows["output"]] == [s.output for s in failing.steps]
    assert set(rows["outcome"].to_list()) == {0.0}


def test_steps_frame_selects_trajectories(sample_store: Path) -> None:
    with Store.open(sample_store) as db:
        summaries = db.summaries()
        chosen = [summaries[0].id, summaries[-1].id]
        frame = otel_replay.steps_frame(db, chosen)
    assert frame.columns == STEP_COLUMNS
    assert set(frame["trajectory_id"].to_list()) == set(chosen)
    assert frame.height == summaries[0].n_steps + summaries[-1].n_steps
    durations = frame.filter(pl.col("duration_ms").is_not_null())
    assert (durations["duration_ms"] >= 0).all()


def test_export_parquet_without_out_is_an_error(runner: CliRunner, sample_store: Path) -> None:
    result = _invoke(runner, "export", "--format", "parquet", store=sample_store)

    assert result.exit_code == 1
    assert "--out" in result.stderr
    assert result.stdout == ""
