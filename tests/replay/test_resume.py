"""Resume (issue 15, parts 6 and 7): ``record`` keeps each step as it completes, so a run killed or
crashed half-way is kept up to its last whole step, marked as ended early; ``resume`` serves those
steps (nothing of them runs again) and goes on live, recording a new run linked to the original."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.errors import ReplayError
from otel_replay.model import Trajectory
from otel_replay.replay import record, resume
from otel_replay.replay._resume import ended_early
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT
from tests.replay import resume_agents
from tests.replay.resume_agents import CRASH_AT, counting, outcome

AGENT = [
    "--agent",
    "tests.replay.resume_agents:counting",
    "--verifier",
    "tests.replay.resume_agents:outcome",
]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(CRASH_AT, raising=False)
    resume_agents.RAN.clear()
    yield


def ran() -> dict[int, int]:
    """The live runs of each step's operation, from the module as last loaded."""
    return dict(sys.modules["tests.replay.resume_agents"].RAN)


def test_the_ledger_is_handed_each_step_as_it_completes() -> None:
    seen: list[Trajectory] = []
    done = record(counting, ledger=seen.append)
    assert [len(run.steps) for run in seen] == [1, 2, 3, 4, 5, 6]
    assert len({run.id for run in seen}) == 1 and seen[0].id.startswith("partial-")
    assert all(ended_early(run) for run in seen)
    assert ended_early(done.trajectory) is None and done.answer == 150


def test_a_run_whose_agent_raised_resumes_from_its_last_step(
    runner: CliRunner, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CRASH_AT, "4")
    crashed = invoke(runner, store_path, "record", *AGENT, "--json")
    assert crashed.exit_code == 1 and "disk filled up before page 4" in crashed.stderr
    original = orjson.loads(crashed.stdout)
    assert original["steps"] == 4
    with Store.open(store_path, read_only=True) as db:
        assert [s.id for s in db.summaries()] == [original["id"]]  # the partial run was replaced
        assert "disk filled up" in (ended_early(db.get(original["id"])) or "")
    monkeypatch.delenv(CRASH_AT)  # the cause is fixed
    sys.modules["tests.replay.resume_agents"].RAN.clear()
    done = orjson.loads(
        ok(invoke(runner, store_path, "resume", original["id"], *AGENT, "--json")).stdout
    )
    assert done["frontier"] == 4 and done["served"] == 4 and done["steps"] == 6
    assert done["outcome"] == 1.0 and done["error"] is None
    assert ran() == {4: 1, 5: 1}  # steps 0-3 served from the record, never run again
    with Store.open(store_path, read_only=True) as db:
        run = db.get(done["id"])
        assert run.metadata["resumed_from"] == original["id"] and run.metadata["frontier"] == 4
        assert "agent_error" not in run.metadata and run.metadata["answer"] == 150
    shown = ok(invoke(runner, store_path, "diff", original["id"], done["id"])).stdout
    assert "steps 0..3 identical; first divergence at step 4" in shown  # the frontier
    again = invoke(runner, store_path, "resume", done["id"], *AGENT)
    assert "finished (its agent returned): there is nothing to resume" in one_line_error(again)


def test_a_recording_killed_between_steps_keeps_its_whole_steps_and_resumes(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "never"
    child = subprocess.Popen(
        [sys.executable, "-m", "otel_replay", "record", "--agent", "tests.replay.resume_agents:waiting",
         "--store", str(store_path)],
        cwd=ROOT, env={**os.environ, "AGENT_REPLAY_TEST_WAIT": str(gate)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline, steps = time.monotonic() + 60, 0
    while time.monotonic() < deadline and steps < 5:
        time.sleep(0.05)
        if store_path.exists():
            try:
                with Store.open(store_path, read_only=True) as db:
                    steps = max((s.n_steps for s in db.summaries()), default=0)
            except ReplayError:
                pass  # the store is being made
    child.send_signal(signal.SIGKILL)
    _, err = child.communicate(timeout=30)
    assert steps == 5, err
    with Store.open(store_path, read_only=True) as db:
        (kept,) = db.summaries()
        partial = db.get(kept.id)
    assert kept.id.startswith("partial-") and len(partial.steps) == 5
    assert ended_early(partial) == "the recording stopped before the agent returned"
    listed = ok(invoke(runner, store_path, "list")).stdout
    assert kept.id[:8] in listed
    done = orjson.loads(
        ok(
            invoke(runner, store_path, "resume", kept.id, "--agent",
                   "tests.replay.resume_agents:waiting", "--json")
        ).stdout
    )  # fmt: skip
    assert done["served"] == 5 and done["steps"] == 6 and ran() == {5: 1}
    # resumed without a verifier (no outcome, so the same content as its last partial run): the
    # stored run is the finished one, its answer kept, nothing left to resume
    with Store.open(store_path, read_only=True) as db:
        finished = db.get(done["id"])
    assert ended_early(finished) is None and "answer" in finished.metadata
    again = invoke(runner, store_path, "resume", done["id"], "--agent",
                   "tests.replay.resume_agents:waiting")  # fmt: skip
    assert "there is nothing to resume" in one_line_error(again)


def test_resume_from_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CRASH_AT, "2")
    crashed = record(counting).trajectory
    monkeypatch.delenv(CRASH_AT)
    done = resume(crashed, counting, outcome=outcome)
    assert (done.frontier, done.served, done.error) == (2, 2, None)
    assert done.trajectory.outcome == 1.0 and [
        s.output["page"] for s in done.trajectory.steps
    ] == list(range(6))
    with pytest.raises(ReplayError, match="nothing to resume"):
        resume(done.trajectory, counting)


def test_an_imported_run_cut_short_goes_on_as_its_loop(runner: CliRunner, store_path: Path) -> None:
    from tests.conftest import SAMPLES

    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    with Store.open(store_path) as db:
        whole = db.get("ef2843ff")
        cut = Trajectory.build(
            "cut-short",
            [s.unlinked() for s in whole.steps[:4]],  # model, metrics, model, deploys: no answer
            metadata={**whole.metadata, "source": "cut"},
        )
        db.put(cut)
    tools = str(ROOT / "examples" / "incident" / "tools.py")
    done = orjson.loads(
        ok(
            invoke(runner, store_path, "resume", "cut-short", "--resamplers", tools, "--json")
        ).stdout
    )
    assert done["frontier"] == 4 and done["served"] == 4 and done["steps"] > 4
    with Store.open(store_path, read_only=True) as db:
        resumed = db.get(done["id"])
    assert [(s.kind.value, s.name) for s in resumed.steps[:4]] == [
        (s.kind.value, s.name) for s in whole.steps[:4]
    ]
    assert resumed.final_answer  # the model's resample function answered the rest
    finished = invoke(runner, store_path, "resume", "ef2843ff", "--resamplers", tools)
    assert "nothing to resume" in one_line_error(finished)
