"""Many runs (issue 14, part 2): choosing runs, attributing them with each report kept, skipping
what is answered, going on after an interruption, blame across the reports, contrastive pairs."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

from otel_replay.errors import ReplayError
from otel_replay.fleet import Selection
from otel_replay.fleet._select import parse_since
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
CODE = ["--resamplers", TOOLS, "--success-if", "v841"]
FAILING = {"ef2843ff74cff6a6b6dc0914faa30751", "incident-fail", "780c4b16a51059fa62b2bbd1c38dbe31"}


def test_since_takes_a_date_or_an_age() -> None:
    now = 1_800_000_000 * 10**9
    assert parse_since("24h", now) == now - 24 * 3600 * 10**9
    assert parse_since("2026-03-14") == 1_773_446_400 * 10**9
    with pytest.raises(ReplayError, match="neither a date"):
        parse_since("yesterday")


@pytest.fixture
def samples(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    return store_path


def test_selection_chooses_runs_newest_first(samples: Path) -> None:
    with Store.open(samples, read_only=True) as db:
        failing = Selection(failing=True).runs(db)
        assert set(failing) == FAILING
        starts = [db.summary(run).start_time_unix_nano for run in failing]  # type: ignore[union-attr]
        assert starts == sorted(starts, reverse=True)
        assert Selection(failing=True, limit=2).runs(db) == failing[:2]
        assert Selection(ids=("ef2843ff", "incident-fail", "ef28")).runs(db) == [
            "ef2843ff74cff6a6b6dc0914faa30751",
            "incident-fail",
        ]
        assert Selection(where="outcome >= 0.5 and source ~ steps").runs(db) == [
            "incident-pass-retry",
            "incident-pass",
        ]


def _many(runner: CliRunner, store: Path, *args: str) -> list[dict[str, Any]]:
    result = invoke(runner, store, "attribute", *args, *CODE, "--json")
    rows: list[dict[str, Any]] = orjson.loads(result.stdout)
    return rows


def _unanswerable(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    """A failing run the example's functions cannot resample: its metrics query asks for a host,
    which the example's ``query_metrics`` does not take (the function raises)."""
    call = {"id": "c1", "name": "query_metrics", "arguments": {"host": "db-1"}}
    opening = [{"role": "user", "content": "Why is checkout failing?"}]
    turn = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "name": "query_metrics", "content": "{}"}
    steps = [
        {"kind": "llm", "name": "m", "inputs": {"messages": opening}, "output": turn},
        {"kind": "tool", "name": "query_metrics", "inputs": {"arguments": call["arguments"]}},
        {
            "kind": "llm",
            "name": "m",
            "inputs": {"messages": [*opening, turn, result]},
            "output": {"role": "assistant", "content": "No idea."},
        },
    ]
    path = tmp_path / "unanswerable.jsonl"
    path.write_bytes(
        orjson.dumps({"trajectory_id": "unanswerable", "outcome": 0.0, "steps": steps})
    )
    ok(invoke(runner, store, "import", str(path)))


def test_many_runs_are_attributed_kept_and_skipped_when_asked_again(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    _unanswerable(runner, samples, tmp_path)
    where = "outcome < 0.5 and source ~ 'otlp.jsonl$|unanswerable'"
    rows = _many(runner, samples, "--where", where, "--repair")
    by_id = {row["id"]: row for row in rows}
    genai = "780c4b16a51059fa62b2bbd1c38dbe31"
    assert set(by_id) == {"ef2843ff74cff6a6b6dc0914faa30751", genai, "unanswerable"}
    assert by_id["ef2843ff74cff6a6b6dc0914faa30751"]["point_of_commitment"] == 3
    assert (
        by_id[genai]["point_of_commitment"] == 3
    )  # the GenAI run reads like its OpenInference twin
    # a run whose resample function raises: one line, and the batch goes on
    assert by_id["unanswerable"]["status"].startswith("error: ")
    assert "query_metrics" in by_id["unanswerable"]["status"]
    with Store.open(samples, read_only=True) as db:
        assert db.report_counts() == {"ef2843ff74cff6a6b6dc0914faa30751": 1, genai: 1}
    again = _many(runner, samples, "ef2843ff", "incident-fail", "--repair")
    assert [row["status"] for row in again] == ["skipped: already answered", "done"]
    forced = _many(runner, samples, "ef2843ff", "--where", "steps > 0", "--repair", "--force")
    assert {row["status"] for row in forced} >= {"done"}
    with Store.open(samples, read_only=True) as db:  # the same question: one report per run
        assert db.report_counts()["ef2843ff74cff6a6b6dc0914faa30751"] == 1


def test_outputs_for_one_run_are_refused_for_many(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    line = one_line_error(
        invoke(
            runner, samples, "attribute", "--all-failing", *CODE, "--out", str(tmp_path / "r.json")
        )
    )
    assert "--out, --dry-run and --annotate are for one run" in line
    annotating = ("--all-failing", *CODE, "--annotate", "phoenix://127.0.0.1:6006")
    assert "--annotate are for one run" in one_line_error(
        invoke(runner, samples, "attribute", *annotating)
    )
    assert "name a run" in one_line_error(invoke(runner, samples, "attribute", *CODE))
    assert "no stored run matches" in one_line_error(
        invoke(runner, samples, "attribute", "--where", "steps > 99", *CODE)
    )


def test_an_interrupted_batch_goes_on_where_it_stopped(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.jsonl"
    subprocess.run(
        [sys.executable, "-m", "examples.incident.fleet", "--runs", "40", "--out", str(fleet)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    store = tmp_path / "store.db"
    command = [
        sys.executable,
        "-m",
        "otel_replay",
        "attribute",
        "--all-failing",
        *CODE,
        "--store",
        str(store),
    ]
    subprocess.run(
        [sys.executable, "-m", "otel_replay", "import", str(fleet), "--store", str(store)],
        check=True,
        capture_output=True,
    )
    child = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    kept = 0
    while time.monotonic() < deadline and kept < 3:
        time.sleep(0.05)
        with Store.open(store, read_only=True) as db:
            kept = sum(db.report_counts().values())
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    with Store.open(store, read_only=True) as db:
        first = sum(db.report_counts().values())
    assert child.returncode == 130, err
    assert "interrupted" in err and "goes on from there" in err and 3 <= first < 40
    assert "Traceback" not in err
    done = subprocess.run(
        [*command, "--json"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    statuses = [row["status"] for row in orjson.loads(done.stdout)]
    assert statuses.count("skipped: already answered") == first
    assert statuses.count("done") == 40 - first


def test_blame_adds_the_reports_up(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    assert "no stored report" in one_line_error(invoke(runner, samples, "blame"))
    ok(invoke(runner, samples, "attribute", "ef2843ff", "incident-fail", *CODE, "--repair"))
    # a passing run's credit report (which step saved it) is not a failure to blame
    ok(invoke(runner, samples, "attribute", "5bb58492", *CODE, "--on-success", "credit"))
    rows = orjson.loads(ok(invoke(runner, samples, "blame", "--json")).stdout)
    top = rows[0]
    assert (top["kind"], top["name"], top["shape"]) == ("tool", "list_deploys", "service")
    assert top["commitments"] == 2 and top["decided_runs"] == 2 and top["share"] == 1.0
    assert top["repairs"] == 2 and top["repair_success"] > 0.9
    assert 0 < top["share_low"] < 1.0
    table = ok(invoke(runner, samples, "blame")).stdout
    assert "list_deploys(service)" in table and "blame over 2 decided runs" in table
    csv_out, parquet_out = tmp_path / "blame.csv", tmp_path / "blame.parquet"
    ok(invoke(runner, samples, "blame", "--out", str(csv_out)))
    ok(invoke(runner, samples, "blame", "--out", str(parquet_out), "--where", "source ~ steps"))
    with csv_out.open() as handle:
        assert next(csv.DictReader(handle))["name"] == "list_deploys"
    only_steps = pl.read_parquet(parquet_out)
    assert only_steps["decided_runs"][0] == 1  # incident-fail alone
    assert "writes .parquet or .csv" in one_line_error(
        invoke(runner, samples, "blame", "--out", str(tmp_path / "b.txt"))
    )


def test_an_inconclusive_run_counts_as_inconclusive_not_as_blame(
    runner: CliRunner, samples: Path
) -> None:
    ok(invoke(runner, samples, "attribute", "ef2843ff", *CODE, "--budget", "40"))
    ok(invoke(runner, samples, "attribute", "incident-fail", *CODE))
    rows = {
        r["name"]: r for r in orjson.loads(ok(invoke(runner, samples, "blame", "--json")).stdout)
    }
    deploys = rows["list_deploys"]
    assert (
        deploys["decided_runs"] == 1
        and deploys["commitments"] == 1
        and deploys["inconclusive"] == 1
    )
    assert deploys["estimated"] == 1  # the inconclusive run's estimate is not in the mean


def test_pairs_of_the_repaired_runs(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    ok(invoke(runner, samples, "attribute", "ef2843ff", *CODE, "--repair"))
    ok(invoke(runner, samples, "attribute", "incident-fail", *CODE))  # no repair: no pair
    out = tmp_path / "pairs.jsonl"
    ok(invoke(runner, samples, "export", "--format", "pairs", "--out", str(out)))
    (pair,) = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert pair["run_id"] == "ef2843ff74cff6a6b6dc0914faa30751" and pair["step_index"] == 3
    assert pair["rejected"] == [
        {
            "role": "tool",
            "name": "list_deploys",
            "content": "[]",
            "tool_call_id": pair["rejected"][0]["tool_call_id"],
        }
    ]
    assert "v841" in pair["chosen"][0]["content"] and pair["chosen"][0]["role"] == "tool"
    assert pair["prompt"][0]["role"] == "system"
    last = pair["prompt"][-1]  # the model turn that asked for list_deploys
    assert last["role"] == "assistant" and last["tool_calls"][0]["name"] == "list_deploys"
    assert pair["chosen_success_rate"] > 0.9 and pair["rejected_success_rate"] < 0.1
    assert os.path.getsize(out) > 0


def test_a_later_report_without_a_repair_does_not_hide_an_earlier_ones(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, samples, "attribute", "ef2843ff", *CODE, "--repair"))
    ok(invoke(runner, samples, "attribute", "ef2843ff", *CODE, "--rollouts", "8"))  # asked later
    with Store.open(samples, read_only=True) as db:
        kept = db.reports(db.resolve("ef2843ff"))
        assert [k["report"]["repair"] is None for k in kept] == [True, False]  # newest first
    out = tmp_path / "pairs.jsonl"
    result = ok(
        invoke(runner, samples, "export", "ef2843ff", "--format", "pairs", "--out", str(out))
    )
    (pair,) = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert pair["run_id"] == "ef2843ff74cff6a6b6dc0914faa30751" and pair["step_index"] == 3
    assert "wrote 1 pair" in result.stderr and "no pair for" not in result.stderr


def test_runs_asked_for_without_a_pair_are_named_with_why(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, samples, "attribute", "ef2843ff", *CODE, "--repair"))
    ok(invoke(runner, samples, "attribute", "incident-fail", *CODE))
    out = tmp_path / "pairs.jsonl"
    result = ok(
        invoke(
            runner, samples, "export", "ef2843ff", "incident-fail", "--format", "pairs",
            "--out", str(out),
        )
    )  # fmt: skip
    assert len(out.read_bytes().splitlines()) == 1
    assert (
        "no pair for incident-fail: no report of it searched for a repair (`attribute ID "
        "--repair` searches one)" in result.stderr
    )


def test_no_pair_at_all_is_an_error_naming_each_run_and_writes_nothing(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pairs.jsonl"
    line = one_line_error(invoke(runner, samples, "export", "--format", "pairs", "--out", str(out)))
    assert line == (
        "error: no pair to export: no run in the store has a repair; 8 runs "
        "(5bb584929dafe6bead21914625ee8c4c, 6b9bb2f6535a7e07b6dffce8112d9d11, "
        "780c4b16a51059fa62b2bbd1c38dbe31, …): no attribution report is kept (`attribute ID "
        "--repair` keeps one)"
    )
    ok(invoke(runner, samples, "attribute", "incident-fail", *CODE))
    ok(invoke(runner, samples, "attribute", "incident-fail", *CODE, "--repair", "--budget", "40"))
    line = one_line_error(
        invoke(runner, samples, "export", "incident-fail", "--format", "pairs", "--out", str(out))
    )
    assert line == (
        "error: no pair to export: no run asked for has a repair; incident-fail: no repair was "
        "found (no repair search: there is no Point of Commitment to repair)"
    )
    assert not out.exists() and list(tmp_path.glob("*pairs*")) == []
    result = invoke(runner, samples, "export", "incident-fail", "--format", "pairs")
    assert result.exit_code == 1 and result.stdout == ""  # nor on standard output
