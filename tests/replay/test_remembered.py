"""Issue 23, parts 3, 4 and 7: a run remembers how it was made (the SDKs it was recorded through,
its verifier, its redact patterns), and the commands that run its agent again use them; an agent
that raised is said (the step, the exception), exit 1; forking twice keeps both forks; a resumed run
says afresh how it ended. The agent is a refund desk of a user's own (`tests.replay.desk_agent`) on
the real ``openai`` SDK, its model the local fake server, which the tests stop to make it fail."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from examples import fake_model_server
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import AgentRaised, fork, record, replay, resume, uninstrument
from otel_replay.replay._instrument import instrumented
from otel_replay.replay._plan import Intervention
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.replay import desk_agent

DESK = "tests.replay.desk_agent"
AGENT = ["--agent", f"{DESK}:main"]
VERIFIER = f"{DESK}:refunded"
QUESTION = "Is my late order A-1001 refundable? My token is tok-5521."
LOST = orjson.dumps({"error": "order service unavailable (503)"}).decode()


FAKE = fake_model_server


class Model:
    """The fake model server, started and stopped at will (same port: the record names it)."""

    def __init__(self) -> None:
        self.running: Any = None
        self.port = 0
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.running, _ = FAKE.serve(self.port)
        self.port = self.running.server_address[1]

    def stop(self) -> None:
        if self.running is not None:
            self.running.shutdown()
            self.running.server_close()
            self.running = None


@pytest.fixture
def model() -> Iterator[Model]:
    uninstrument()  # nothing instrumented but what a command (or the record) asks for
    server = Model()
    try:
        yield server
    finally:
        server.stop()
        uninstrument()


def _json(result: Any) -> Any:
    return orjson.loads(result.stdout)


def _record(runner: CliRunner, store: Path, model: Model, *options: str) -> str:
    """``record`` the desk with ``--instrument openai`` against the model: the run's id."""
    arguments = orjson.dumps({"question": QUESTION, "base_url": model.url}).decode()
    recorded = _json(
        ok(
            invoke(runner, store, "record", *AGENT, "--instrument", "openai", "--input",
                   arguments, *options, "--json")
        )
    )  # fmt: skip
    assert recorded["steps"] == 5 and recorded["raised"] is None
    uninstrument()  # what follows must not lean on this process having instrumented the SDK
    return str(recorded["id"])


def _stored(store: Path, run_id: str) -> Trajectory:
    with Store.open(store, read_only=True) as db:
        return db.get(run_id)


def test_the_record_remembers_its_sdks_verifier_and_redact_patterns(
    model: Model, runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    otlp = tmp_path / "run.json"
    options = ("--verifier", VERIFIER, "--redact", r"tok-\d+", "--otlp-out", str(otlp))
    run = _stored(store_path, _record(runner, store_path, model, *options))
    assert run.metadata["instrument"] == ["openai"] and run.metadata["verifier"] == VERIFIER
    assert run.metadata["redact"] == [r"tok-\d+"] and run.outcome == 1.0
    assert b"tok-5521" not in otlp.read_bytes()  # the pattern is kept, never what it matched
    # the exported spans carry it too: imported elsewhere, the run still remembers
    other = tmp_path / "other.db"
    ok(invoke(runner, other, "import", str(otlp)))
    (imported,) = [_stored(other, s.id) for s in Store.open(other, read_only=True).summaries()]
    made = {k: imported.metadata.get(k) for k in ("instrument", "verifier", "redact")}
    assert made == {"instrument": ["openai"], "verifier": VERIFIER, "redact": [r"tok-\d+"]}


def test_code_an_imported_trace_names_is_never_imported_unasked(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """A trace is untrusted input: a verifier its metadata names is not loaded by a fork of it
    (even one claiming to be a recording), only when the user gives it."""
    marker = tmp_path / "imported"
    planted = tmp_path / "planted.py"
    planted.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef score(run):\n    return 1.0\n")
    run = Trajectory.build(
        "shared-run",
        [Step(StepKind.TOOL, "lookup", {"arguments": {"id": "A-1"}}, {"status": "lost"})],
        outcome=0.0,
        metadata={"source": "record", "verifier": f"{planted}:score"},
    )
    traces = tmp_path / "shared.jsonl"
    traces.write_bytes(orjson.dumps(run.to_record()) + b"\n")
    ok(invoke(runner, store_path, "import", str(traces)))
    forked = _json(
        ok(invoke(runner, store_path, "fork", "shared-run", "--at", "0", "--observe", "{}",
                  "--json"))
    )  # fmt: skip
    assert not marker.exists() and forked["diff"]["right"]["outcome"] is None
    exported = invoke(runner, store_path, "export", "shared-run", "--format", "pytest", *AGENT,
                      "--expect", "pass", "--out", str(tmp_path / "test_shared.py"))  # fmt: skip
    assert exported.exit_code == 1 and "--expect pass needs --verifier" in exported.stderr
    given = ("fork", "shared-run", "--at", "0", "--observe", "[]", "--verifier", f"{planted}:score")
    assert (
        _json(ok(invoke(runner, store_path, *given, "--json")))["diff"]["right"]["outcome"] == 1.0
    )
    assert marker.exists()


def test_attribute_re_runs_the_agent_through_the_sdks_the_run_was_recorded_through(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--verifier", VERIFIER)
    model.stop()  # every model call the rollouts make is served from the record, or said
    assert instrumented() == ()
    invoke(runner, store_path, "attribute", run_id, *AGENT, "--tools", "recorded",
           "--verifier", VERIFIER, "--rollouts", "2", "--json")  # fmt: skip
    assert instrumented() == ("openai",)


def test_replay_without_repeating_instrument_is_identical_and_a_crash_is_said(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--redact", r"tok-\d+")
    model.stop()  # every model call must come from the record
    assert instrumented() == ()
    again = invoke(runner, store_path, "replay", run_id, *AGENT, "--json")
    assert again.exit_code == 0, again.output
    assert _json(again)["identical"] is True and _json(again)["raised"] is None
    assert "identical (5 steps" in ok(invoke(runner, store_path, "replay", run_id, *AGENT)).stdout
    # told not to instrument, the SDK goes to the network, which is down: said, exit 1
    uninstrument()
    bare = invoke(runner, store_path, "replay", run_id, *AGENT, "--instrument", "none")
    assert bare.exit_code == 1
    assert (
        "diverged: the agent raised at step 0 (recorded: 5 steps, then it returned)" in bare.stdout
    )
    assert (
        "error: the agent raised APIConnectionError: Connection error. (at step 0, before any "
        "recorded step); the replay ends there" in bare.stderr
    )
    shown = _json(invoke(runner, store_path, "replay", run_id, *AGENT, "--instrument", "none",
                         "--json"))  # fmt: skip
    assert shown["identical"] is False and shown["replayed_steps"] == 0
    assert shown["raised_as_recorded"] is False
    assert shown["raised"] == {
        "step": 0,
        "type": "APIConnectionError",
        "message": "Connection error.",
        "failed": None,
    }


def test_replay_from_python_instruments_the_sdks_the_run_was_recorded_through(
    model: Model,
) -> None:
    from otel_replay import instrument

    instrument("openai")
    recording = record(desk_agent.main, arguments={"question": QUESTION, "base_url": model.url})
    assert recording.trajectory.metadata["instrument"] == ["openai"]
    uninstrument()
    model.stop()
    assert replay(recording.trajectory, desk_agent.main).identical
    uninstrument()
    result = replay(recording.trajectory, desk_agent.main, instrument=())
    assert not result.identical and result.raised is not None
    assert result.raised.type == "APIConnectionError" and result.raised.step == 0
    assert "APIConnectionError" in result.verdict and "at step 0" in result.verdict


def test_fork_with_the_server_down_exits_1_naming_the_exception(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--verifier", VERIFIER)
    model.stop()
    # step 1 (lookup_order) answers otherwise: the model is asked live at step 2, and is down
    move = ("fork", run_id, "--at", "1", "--observe", LOST, *AGENT)
    said = invoke(runner, store_path, *move)
    assert said.exit_code == 1
    assert (
        "the agent raised StepError: APIConnectionError: Connection error. "
        "(at step 2: llm 'desk-model' failed); the fork is stored as fork-" in said.stderr
    )
    printed = invoke(runner, store_path, *move, "--json")
    assert printed.exit_code == 1 and "APIConnectionError" in printed.stderr
    shown = _json(printed)
    assert shown["raised"] == {
        "step": 2,
        "type": "StepError",
        "message": "APIConnectionError: Connection error.",
        "failed": "llm 'desk-model'",
    }
    forked = _stored(store_path, shown["id"])  # a crash is evidence: the fork is stored
    assert forked.metadata["agent_error_step"] == 2 and len(forked.steps) == 3
    assert AgentRaised.of(forked) == AgentRaised(
        2, "StepError", "APIConnectionError: Connection error.", "llm 'desk-model'"
    )


def test_a_fork_is_scored_with_the_verifier_its_run_was_scored_with(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--verifier", VERIFIER)
    move = ("fork", run_id, "--at", "1", "--observe", LOST, *AGENT)
    text = ok(invoke(runner, store_path, *move)).stdout
    assert f"scored with {VERIFIER}, as {run_id} was" in text
    forked = _stored(store_path, text.split()[1])
    assert forked.outcome == 0.0 and forked.metadata["verifier"] == VERIFIER  # the apology
    assert "agent_error" not in forked.metadata and forked.metadata["instrument"] == ["openai"]
    unscored = _json(ok(invoke(runner, store_path, *move, "--verifier", "none", "--json")))
    assert unscored["diff"]["right"]["outcome"] is None
    # from Python too: the recorded verifier, unless told otherwise
    original = _stored(store_path, run_id)
    observed = Intervention.observe(orjson.loads(LOST))
    assert fork(original, 1, observed, agent=desk_agent.main).outcome == 0.0
    assert fork(original, 1, observed, agent=desk_agent.main, outcome=None).outcome is None


def test_forking_twice_with_the_same_move_keeps_both_forks(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--verifier", VERIFIER)
    move = ("fork", run_id, "--at", "1", "--observe", LOST, *AGENT, "--json")
    first = _json(ok(invoke(runner, store_path, *move)))
    assert first["earlier"] is None and first["same_as_earlier"] is False
    # the same move, the same outcome: that run, not stored twice
    same = _json(ok(invoke(runner, store_path, *move)))
    assert same["id"] == first["id"] and same["same_as_earlier"] is True
    # the same move scored otherwise: a second fork beside the first, which is kept
    other = ok(invoke(runner, store_path, *move[:-1], "--verifier", f"{DESK}:lenient"))
    assert f"again: the earlier fork {first['id']}, made the same way, is kept" in other.stdout
    second = other.stdout.split()[1]
    assert second == f"{first['id']}-2"
    with Store.open(store_path, read_only=True) as db:
        outcomes = {s.id: s.outcome for s in db.summaries() if s.id.startswith("fork-")}
    assert outcomes == {first["id"]: 0.0, second: 1.0}
    assert _stored(store_path, second).metadata["verifier"] == f"{DESK}:lenient"
    assert _stored(store_path, first["id"]).metadata["verifier"] == VERIFIER
    third = _json(ok(invoke(runner, store_path, *move, "--verifier", "none")))
    assert third["id"] == f"{first['id']}-3" and third["earlier"] == second


def test_resume_with_the_server_down_says_so_and_a_resumed_run_says_how_it_ended(
    model: Model, runner: CliRunner, store_path: Path
) -> None:
    model.stop()  # the first model call fails: recorded up to there
    arguments = orjson.dumps({"question": QUESTION, "base_url": model.url}).decode()
    crashed = invoke(runner, store_path, "record", *AGENT, "--instrument", "openai", "--input",
                     arguments, "--verifier", VERIFIER, "--json")  # fmt: skip
    assert crashed.exit_code == 1
    assert "(at step 0: llm 'desk-model' failed); recorded up to there" in crashed.stderr
    run_id = _json(crashed)["id"]
    uninstrument()
    still = invoke(runner, store_path, "resume", run_id, *AGENT, "--json")
    assert still.exit_code == 1 and "APIConnectionError: Connection error." in still.stderr
    assert "again; resume-" in still.stderr and _json(still)["raised"]["step"] == 0
    model.start()
    uninstrument()
    done = _json(ok(invoke(runner, store_path, "resume", run_id, *AGENT, "--json")))
    # the failed call runs again (the server is back); scored with the recorded verifier
    assert done["frontier"] == 0 and done["steps"] == 5 and done["outcome"] == 1.0
    assert done["raised"] is None
    resumed = _stored(store_path, done["id"])
    meta = resumed.metadata
    assert meta["resumed_from"] == run_id and meta["frontier"] == 0 and meta["source"] == "resume"
    assert not {"ended_early", "agent_error", "agent_error_step"} & set(meta)
    assert meta["instrument"] == ["openai"] and meta["verifier"] == VERIFIER


def test_a_resumed_run_is_kept_as_it_goes_as_a_resumed_run(model: Model) -> None:
    from otel_replay import instrument

    instrument("openai")
    arguments = {"question": QUESTION, "base_url": model.url}
    model.stop()
    crashed = record(desk_agent.main, arguments=arguments, outcome=desk_agent.refunded)
    assert crashed.raised == AgentRaised(
        0, "StepError", "APIConnectionError: Connection error.", "llm 'desk-model'"
    )
    assert crashed.trajectory.metadata["verifier"] == VERIFIER  # named by its module
    model.start()
    kept: list[Trajectory] = []
    done = resume(crashed.trajectory, desk_agent.main, ledger=kept.append)
    assert done.raised is None and done.trajectory.outcome == 1.0
    assert [len(run.steps) for run in kept] == [1, 2, 3, 4, 5]
    for run in kept:  # a resumed run killed half-way is still one, and says where it came from
        assert run.id == done.trajectory.id and run.metadata["source"] == "resume"
        assert run.metadata["resumed_from"] == crashed.trajectory.id
        assert run.metadata["frontier"] == 0 and "agent_error" not in run.metadata
        assert run.metadata["ended_early"]


@pytest.mark.scenario  # an exported test run by a pytest of its own
def test_the_pytest_export_uses_the_recorded_sdks_and_verifier(
    model: Model, runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    run_id = _record(runner, store_path, model, "--verifier", VERIFIER)
    identical, passing = tmp_path / "test_desk.py", tmp_path / "test_desk_fixed.py"
    export = ("export", run_id, "--format", "pytest", *AGENT)
    ok(invoke(runner, store_path, *export, "--out", str(identical)))
    ok(invoke(runner, store_path, *export, "--expect", "pass", "--out", str(passing)))
    assert 'INSTRUMENT = ("openai",)' in identical.read_text()
    assert f'VERIFIER = "{VERIFIER}"' in passing.read_text()

    def pytest(test: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert pytest(passing).returncode == 0  # the model live, the server up: a success
    model.stop()
    served = pytest(identical)  # no network: every call served through the recorded SDK
    assert served.returncode == 0, served.stdout + served.stderr
    down = pytest(passing)  # the model live and down: the test fails naming the exception
    assert down.returncode == 1
    assert "the agent raised StepError: APIConnectionError: Connection error." in down.stdout
    missing = invoke(
        runner, store_path, *export, "--expect", "pass", "--verifier", "none",
        "--out", str(passing),
    )  # fmt: skip
    assert missing.exit_code == 1 and "--expect pass needs --verifier" in missing.stderr


def test_a_run_scored_by_its_answer_is_forked_resumed_and_exported_so(
    model: Model, runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """``--success-if`` is a verifier too: the record keeps its pattern (data, not code), and a
    fork, a resumed run and the exported test score with it."""
    run_id = _record(runner, store_path, model, "--success-if", "qualifies for a refund")
    run = _stored(store_path, run_id)
    assert run.outcome == 1.0 and "verifier" not in run.metadata
    assert run.metadata["answer_verifier"] == {
        "success_if": "qualifies for a refund",
        "fail_if": None,
    }
    forked = _json(
        ok(invoke(runner, store_path, "fork", run_id, "--at", "1", "--observe", LOST, *AGENT,
                  "--json"))
    )  # fmt: skip
    assert forked["diff"]["right"]["outcome"] == 0.0  # the apology does not match
    kept = _stored(store_path, forked["id"])
    assert kept.metadata["answer_verifier"] == run.metadata["answer_verifier"]
    passing = tmp_path / "test_desk_answer.py"
    export = ("export", run_id, "--format", "pytest", *AGENT, "--expect", "pass")
    ok(invoke(runner, store_path, *export, "--out", str(passing)))
    assert '"success_if": "qualifies for a refund"' in passing.read_text()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(passing)]
    ran = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
