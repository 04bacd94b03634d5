"""The issue's three experiments through Typer's CliRunner, with the incident investigator:
record (it blames deploy v841), replay (identical), fork with ``list_deploys`` missing v841 (it
searches the logs and blames the database) — plus diff, faults, errors and ``attribute --agent``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from otel_replay import StepStatus, Store, Trajectory
from tests.cli_helpers import invoke, ok, one_line_error

ROOT = Path(__file__).resolve().parents[2]
AGENT_FILE = ROOT / "examples" / "incident" / "agent.py"
INVESTIGATE = f"{AGENT_FILE}:investigate"
OUTCOME = f"{AGENT_FILE}:outcome"
TEST_AGENTS = Path(__file__).resolve().parent / "agents.py"
#: Run the investigator live and score it.
LIVE = ("--agent", INVESTIGATE, "--outcome", OUTCOME)


def _last_line(result: Result) -> str:
    return result.stdout.strip().splitlines()[-1]


def _load(store: Path, trajectory_id: str) -> Trajectory:
    with Store.open(store) as db:
        return db.get(trajectory_id)


def _count(store: Path) -> int:
    with Store.open(store) as db:
        return len(db.summaries())


def _step_named(trajectory: Trajectory, name: str) -> int:
    (index,) = [s.index for s in trajectory.steps if s.name == name]
    return index


@dataclass(frozen=True)
class Recorded:
    store: Path
    id: str
    otlp: Path
    output: str


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """The incident investigator, recorded once through the CLI (with its spans as OTLP JSON)."""
    folder = tmp_path_factory.mktemp("incident")
    store, otlp = folder / "store.db", folder / "spans.json"
    result = ok(invoke(CliRunner(), store, "record", *LIVE, "--otlp-out", str(otlp)))
    yield Recorded(store, _last_line(result), otlp, result.stdout)


# --- experiment 1: record ------------------------------------------------------------------------


def test_record_prints_the_id_and_stores_a_run_that_blames_v841(recorded: Recorded) -> None:
    trajectory = _load(recorded.store, recorded.id)
    assert trajectory.id == recorded.id
    assert f"recorded {recorded.id}: 5 steps, outcome 1" in recorded.output
    assert trajectory.outcome == 1.0
    assert trajectory.metadata["agent"] == INVESTIGATE
    answer = trajectory.metadata["answer"]
    assert "v841" in answer
    assert answer == trajectory.steps[-1].output["content"]
    assert answer.startswith("Root cause: deploy v841 of checkout")
    assert [s.name for s in trajectory.steps if s.kind.value == "tool"] == [
        "query_metrics",
        "list_deploys",
    ]


def test_record_writes_otlp_json_that_import_accepts(recorded: Recorded, tmp_path: Path) -> None:
    request = orjson.loads(recorded.otlp.read_bytes())
    (resource,) = request["resourceSpans"]
    spans = [span for scope in resource["scopeSpans"] for span in scope["spans"]]
    assert len(spans) == 1 + 5  # the agent's root span and one per step
    assert {span["traceId"] for span in spans} == {recorded.id}

    other = tmp_path / "other.db"
    result = ok(invoke(CliRunner(), other, "import", str(recorded.otlp)))
    assert "1 added" in result.stdout
    imported, original = _load(other, recorded.id), _load(recorded.store, recorded.id)
    assert [(s.kind, s.name) for s in imported.steps] == [(s.kind, s.name) for s in original.steps]
    assert [s.output for s in imported.steps] == [s.output for s in original.steps]
    assert imported.outcome == 1.0


def test_an_exported_recording_replays_after_import_elsewhere(
    recorded: Recorded, tmp_path: Path
) -> None:
    """Last night's run, shipped as OTLP and imported on a laptop, re-executes hash for hash."""
    laptop = tmp_path / "laptop.db"
    runner = CliRunner()
    ok(invoke(runner, laptop, "import", str(recorded.otlp)))
    result = invoke(runner, laptop, "replay", recorded.id, "--agent", INVESTIGATE)
    assert result.exit_code == 0, result.stdout
    assert result.stdout.startswith("identical (5 steps, hash")


# --- experiment 2: replay ------------------------------------------------------------------------


@pytest.mark.parametrize("live", [[], ["--live", "tool"]], ids=["served", "live-tools"])
def test_replay_is_identical(recorded: Recorded, live: list[str]) -> None:
    result = ok(
        invoke(CliRunner(), recorded.store, "replay", recorded.id, "--agent", INVESTIGATE, *live)
    )
    final_hash = _load(recorded.store, recorded.id).final_hash
    assert result.stdout.strip() == f"identical (5 steps, hash {final_hash[:16]})"


def test_replay_of_an_agent_that_became_non_deterministic_fails(tmp_path: Path) -> None:
    runner, store = CliRunner(), tmp_path / "store.db"
    agent = f"{TEST_AGENTS}:clock_agent"
    trajectory_id = _last_line(ok(invoke(runner, store, "record", "--agent", agent)))
    result = invoke(runner, store, "replay", trajectory_id, "--agent", agent)
    assert result.exit_code == 1
    assert "non-determinism at step 1" in result.stdout
    assert "step 1 (llm 'think'): inputs differ in 'now'" in result.stdout


# --- experiment 3: fork --------------------------------------------------------------------------


def _fork_without_v841(recorded: Recorded) -> tuple[Result, int, list[dict[str, Any]]]:
    original = _load(recorded.store, recorded.id)
    at = _step_named(original, "list_deploys")
    deploys = [d for d in original.steps[at].output if d["version"] != "v841"]
    assert len(deploys) == len(original.steps[at].output) - 1
    output = orjson.dumps(deploys).decode()
    fork = ["fork", recorded.id, "--at", str(at), "--value", output, *LIVE]
    result = ok(invoke(CliRunner(), recorded.store, *fork))
    return result, at, deploys


def test_fork_without_v841_takes_the_log_branch_and_blames_the_database(
    recorded: Recorded,
) -> None:
    result, at, deploys = _fork_without_v841(recorded)
    first = result.stdout.splitlines()[0]
    assert first.startswith("forked ")
    forked_id = first.removeprefix("forked ")
    original, forked = _load(recorded.store, recorded.id), _load(recorded.store, forked_id)

    assert f"steps 0..{at - 1} identical; first divergence at step {at} (output)" in result.stdout
    assert re.search(r"│ step\s+│ tool list_deploys\s+│ tool list_deploys\s+│", result.stdout)

    assert forked.steps[at].output == deploys
    assert [s.hash for s in forked.steps[:at]] == [s.hash for s in original.steps[:at]]
    assert "search_logs" in [s.name for s in forked.steps]
    assert len(forked.steps) > len(original.steps)
    assert forked.outcome == 0.0
    answer = forked.metadata["answer"]
    assert answer.startswith("Root cause: the database")
    assert "v841" not in answer
    assert forked.metadata["forked_from"] == original.id
    assert re.search(r"│ steps\s+│ 5\s+│ 7\s+│", result.stdout)
    # each outcome with where it came from: the recording's verifier, the fork's
    assert re.search(r"│ outcome\s+│ 1 \(record\)\s+│ 0 \(fork\)\s+│", result.stdout)


def test_diff_text_and_json_agree(recorded: Recorded) -> None:
    fork_result, at, _ = _fork_without_v841(recorded)
    forked_id = fork_result.stdout.splitlines()[0].removeprefix("forked ")
    runner = CliRunner()
    text = ok(invoke(runner, recorded.store, "diff", recorded.id, forked_id)).stdout
    record = orjson.loads(
        ok(invoke(runner, recorded.store, "diff", recorded.id, forked_id, "--json")).stdout
    )
    assert record["identical"] is False
    assert record["first_divergence"] == record["common_prefix"] == at
    assert record["differences"] == ["output"]
    assert record["left_step"]["name"] == record["right_step"]["name"] == "list_deploys"
    assert (record["left"]["steps"], record["right"]["steps"]) == (5, 7)
    assert (record["left"]["outcome"], record["right"]["outcome"]) == (1.0, 0.0)
    differences = ", ".join(record["differences"])
    assert record["change"] == "observation changed"  # the same call, another answer
    assert text.splitlines()[0] == (
        f"steps 0..{at - 1} identical; first divergence at step {at} ({differences}): "
        "observation changed"
    )
    assert re.search(
        rf"│ steps\s+│ {record['left']['steps']}\s+│ {record['right']['steps']}\s+│", text
    )

    same = orjson.loads(
        ok(invoke(runner, recorded.store, "diff", recorded.id, recorded.id, "--json")).stdout
    )
    assert same["identical"] is True
    assert same["first_divergence"] is None
    same_text = ok(invoke(runner, recorded.store, "diff", recorded.id, recorded.id)).stdout
    assert same_text.strip() == "identical: 5 steps, same hashes"


@pytest.mark.parametrize(
    ("fault", "step", "steps", "outcome"),
    [
        # a failed call: the model retries once, the retry is not on the cassette and runs live
        ("error", {"status": "error", "error": "injected fault: error"}, 7, 1.0),
        (
            "timeout",
            {"status": "error", "error": "injected fault: TimeoutError: the operation timed out"},
            7,
            1.0,
        ),
        ("empty", {"status": "ok", "output": []}, 7, 0.0),  # no deploys: the log branch
        ("truncate", {"status": "ok", "versions": ["v841"]}, 5, 1.0),  # the newest half survives
    ],
)
def test_fork_with_each_built_in_fault(
    recorded: Recorded, fault: str, step: dict[str, Any], steps: int, outcome: float
) -> None:
    runner = CliRunner()
    at = _step_named(_load(recorded.store, recorded.id), "list_deploys")
    args = ["fork", recorded.id, "--at", str(at), "--fault", fault]
    result = ok(invoke(runner, recorded.store, *args, *LIVE))
    assert f"first divergence at step {at}" in result.stdout
    as_json = orjson.loads(ok(invoke(runner, recorded.store, *args, *LIVE, "--json")).stdout)
    assert as_json["id"] in result.stdout  # the same fork: same id
    assert as_json["diff"]["first_divergence"] == at
    forked = _load(recorded.store, as_json["id"])
    injected = forked.steps[at]
    assert injected.status is StepStatus(step["status"])
    if "error" in step:
        assert injected.error == step["error"]
    if "output" in step:
        assert injected.output == step["output"]
    if "versions" in step:
        assert [d["version"] for d in injected.output] == step["versions"]
    assert len(forked.steps) == steps
    assert forked.outcome == outcome


# --- errors: one line, exit 1, nothing stored ----------------------------------------------------


ERRORS = [
    pytest.param(["record", "--agent", "nope_agent_module:run"], "nope_agent_module", id="unknown-agent-module"),
    pytest.param(["record", "--agent", "/nowhere/agent.py:run"], "/nowhere/agent.py", id="missing-agent-file"),
    pytest.param(["replay", "<ID>", "--agent", f"{AGENT_FILE}:nothing"], "has no attribute 'nothing'", id="unknown-agent-function"),
    pytest.param(["record", "--agent", INVESTIGATE, "--input", "{bad"], "--input '{bad' is not JSON", id="input-not-json"),
    pytest.param(["fork", "<ID>", "--at", "3", "--value", "{bad", "--agent", INVESTIGATE], "--value '{bad' is not JSON", id="output-not-json"),
    pytest.param(["fork", "<ID>", "--at", "3", "--agent", INVESTIGATE], "give exactly one of --do, --observe, --observe-error, --edit, --swap-model", id="neither-output-nor-fault"),
    pytest.param(["fork", "<ID>", "--at", "3", "--value", "[]", "--fault", "error"], "give exactly one of --do, --observe, --observe-error, --edit, --swap-model", id="both-output-and-fault"),
    pytest.param(["fork", "<ID>", "--at", "5", "--value", "[]"], "--at 5: <ID> has steps 0..4", id="at-past-the-end"),
    pytest.param(["fork", "<ID>", "--at=-1", "--value", "[]"], "--at -1: <ID> has steps 0..4", id="at-negative"),
    pytest.param(["fork", "<ID>", "--at", "3", "--fault", "flood"], "unknown fault 'flood'; built-in faults: empty, error, timeout, truncate", id="unknown-fault"),
    pytest.param(["replay", "no-such-run", "--agent", INVESTIGATE], "no-such-run", id="unknown-run"),
    pytest.param(["record", "--agent", f"{TEST_AGENTS}:set_output"], "step 1 (tool 'b'): output = {1, 2} (set)", id="output-not-json-at-record"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needle"), ERRORS)
def test_errors_are_one_line_and_exit_1(recorded: Recorded, args: list[str], needle: str) -> None:
    before = _count(recorded.store)
    result = invoke(CliRunner(), recorded.store, *[a.replace("<ID>", recorded.id) for a in args])
    line = one_line_error(result)
    assert needle.replace("<ID>", recorded.id) in line
    assert _count(recorded.store) == before


def test_an_agent_that_cannot_be_loaded_is_named_as_the_agent(tmp_path: Path) -> None:
    line = one_line_error(
        invoke(CliRunner(), tmp_path / "s.db", "record", "--agent", "nope_agent_module:run")
    )
    assert "--agent" in line, line  # not "resampler module": the user passed no resamplers


def test_record_lax_stores_a_lossy_copy_and_warns(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    agent = f"{TEST_AGENTS}:set_output"
    result = ok(invoke(CliRunner(), store, "record", "--agent", agent, "--lax"))
    assert "warning: step 1's output was not JSON; stored a lossy copy" in result.stdout
    trajectory = _load(store, _last_line(result))
    assert trajectory.metadata["lossy_steps"] == [1]
    assert trajectory.steps[1].output == [1, 2]  # a set: sorted, so the copy is stable


# --- attribution with the live agent -------------------------------------------------------------


def test_attribute_with_the_agent_names_the_list_deploys_step(tmp_path: Path) -> None:
    runner, store, report = CliRunner(), tmp_path / "store.db", tmp_path / "report.json"
    result = ok(invoke(runner, store, "record", *LIVE, "--input", '{"flaky": 0.3}', "--seed", "3"))
    trajectory_id = _last_line(result)
    failing = _load(store, trajectory_id)
    assert failing.outcome == 0.0, "seed 3 no longer makes the flaky deploy API fail"
    at = _step_named(failing, "list_deploys")
    assert failing.steps[at].output == []
    assert "database" in failing.metadata["answer"]

    scoring = ["--verifier", OUTCOME, "--rollouts", "64", "--out", str(report)]
    attribute = ["attribute", trajectory_id, "--agent", INVESTIGATE, *scoring]
    result = ok(invoke(runner, store, *attribute))
    assert (
        f"culprit: The failure became inevitable at step {at} (tool list_deploys)" in result.stdout
    )
    (marked,) = [
        line for line in result.stdout.splitlines() if "◀" in line and "list_deploys" in line
    ]
    assert marked.split()[0] == str(at)
    data = orjson.loads(report.read_bytes())
    assert data["verdict"] == "culprit"
    assert data["point_of_commitment"] == at
