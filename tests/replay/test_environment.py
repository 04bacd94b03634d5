"""Time and ids at the edge (issue 29, part 3): ``ctx.now()``, ``ctx.uuid()``, ``ctx.random()`` and
``record --instrument time,uuid`` record what an agent reads of its environment as ``other`` steps
and serve it on replay, hash for hash; the values are no part of a run's content (two recordings
at other times are the same run to `diff` and `Trajectory.identity`) and no attribution candidate;
a fork reads them as recorded before its step and afresh after it, a resumed run before its
frontier and afresh after it."""

from __future__ import annotations

import datetime
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

import otel_replay
from otel_replay import Registry, Trajectory
from otel_replay.attribution import AttributionConfig, Strategy, attribute
from otel_replay.model import StepKind
from otel_replay.replay import (
    Intervention,
    _environment,
    diff,
    fork,
    record,
    replay,
    resume,
    uninstrument,
)
from otel_replay.replay._live import agent_driver
from otel_replay.replay._plan import REMOVE
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok
from tests.replay.clock_agents import CRASH, aticket, coin, heads, ticket

READS = ["ctx.now", "ctx.uuid", "ctx.random"]  # steps 0-2 of `ticket`


@pytest.fixture
def clean() -> Iterator[None]:
    yield
    uninstrument()


def _names(run: Trajectory) -> list[str]:
    return [step.name for step in run.steps]


def test_ctx_now_uuid_random_are_recorded_as_other_steps_and_replay_hash_identical() -> None:
    recording = record(ticket)
    run = recording.trajectory
    assert _names(run) == [*READS, "owner", "load", "ctx.now", "ctx.uuid", "file"]
    reads = [s for s in run.steps if s.kind is StepKind.OTHER]
    assert [s.index for s in reads] == [0, 1, 2, 5, 6] and all(s.reads_environment for s in reads)
    answer = recording.answer
    assert [s.output for s in reads] == [
        answer["opened"], answer["id"], answer["jitter"], answer["filed"], answer["receipt"]
    ]  # fmt: skip
    assert abs(answer["opened"] - time.time()) < 60 and uuid.UUID(answer["id"]).version == 4
    assert 0.0 <= answer["jitter"] < 1.0
    time.sleep(0.01)  # the clock moves on: the replay is served the recorded time, not now
    again = replay(run, ticket)
    assert again.identical, again.verdict
    assert again.trajectory.final_hash == run.final_hash
    assert [s.hash for s in again.trajectory.steps] == [s.hash for s in run.steps]
    assert again.answer == answer


def test_async_twins_record_and_replay_hash_identical() -> None:
    recording = record(aticket)
    run = recording.trajectory
    assert _names(run) == [*READS, "owner", "ctx.now"]
    again = replay(run, aticket)
    assert again.identical and again.trajectory.final_hash == run.final_hash
    assert again.answer == recording.answer


def test_two_recordings_at_other_times_are_the_same_run() -> None:
    first = record(ticket).trajectory
    time.sleep(0.01)
    second = record(ticket).trajectory
    assert first.steps[0].output != second.steps[0].output  # other times, other ids
    assert first.steps[1].output != second.steps[1].output
    assert first.final_hash != second.final_hash  # the stored bytes differ ...
    assert first.identity == second.identity  # ... what happened does not
    compared = diff(first, second)
    assert compared.identical and compared.divergence is None


def test_diff_still_sees_a_read_that_is_not_made() -> None:
    run = record(ticket).trajectory
    forked = fork(run, 1, REMOVE, agent=ticket)
    compared = diff(run, forked)
    assert not compared.identical and compared.common == 1  # the id read is gone: structure


def test_attribution_does_not_list_environment_reads_as_candidates() -> None:
    for seed in range(50):
        failing = record(coin, seed=seed, outcome=heads).trajectory
        if failing.outcome == 0.0:
            break
    else:
        raise AssertionError("no failing seed")
    assert _names(failing) == ["ctx.now", "flip", "ctx.uuid"]
    registry = Registry()
    registry.set_verifier(heads)
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=40)
    result = attribute(failing, registry, config, driver=agent_driver(failing, coin, registry, 0))
    candidates = [s.index for s in result.steps if s.resamplable]
    assert candidates == [1]  # the coin flip; the clock and the id are the world
    assert [s.index for s in result.steps if s.attribution is not None] == [1]
    assert result.point_of_commitment == 1


def test_a_fork_reads_the_environment_as_recorded_before_its_step_and_afresh_after() -> None:
    run = record(ticket).trajectory
    time.sleep(0.01)
    forked = fork(run, 3, Intervention.observe({"owner": "bo"}), agent=ticket)
    assert _names(forked) == _names(run)
    before, after = forked.steps[:3], forked.steps[5:7]
    assert [s.output for s in before] == [s.output for s in run.steps[:3]]
    assert forked.steps[5].output > run.steps[5].output  # the fork's clock: when it was made
    assert after[1].output != run.steps[6].output  # a fresh id
    assert forked.metadata["served_after_fork"] == []  # read afresh, not served


def test_a_resumed_run_reads_the_environment_as_recorded_before_its_frontier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CRASH, "1")
    crashed = record(ticket).trajectory
    monkeypatch.delenv(CRASH)
    assert _names(crashed) == [*READS, "owner", "load"]
    done = resume(crashed, ticket)
    run = done.trajectory
    assert (done.frontier, done.served) == (5, 5)
    assert [s.output for s in run.steps[:5]] == [s.output for s in crashed.steps]
    assert _names(run)[5:] == ["ctx.now", "ctx.uuid", "file"]
    assert run.steps[5].output >= crashed.steps[0].output
    assert done.answer["opened"] == crashed.steps[0].output


UNMODIFIED = '''
    import datetime
    import time
    import uuid
    from datetime import datetime as clock
    from time import time_ns

    def main(order: str = "A-1"):
        """An agent not written for agent-replay: it reads the clock and makes ids itself."""
        started = time.time()
        request = uuid.uuid4()
        today = datetime.datetime.now()
        stamped = clock.now(datetime.timezone.utc)
        nanos = time_ns()
        return {"order": order, "started": started, "request": str(request),
                "today": today.isoformat(), "stamped": stamped.isoformat(), "nanos": nanos}
'''


def test_record_instrument_time_uuid_replays_an_unmodified_agent_identically(
    runner: CliRunner, store_path: Path, tmp_path: Path, clean: None
) -> None:
    agent = tmp_path / "stamping.py"
    agent.write_text(textwrap.dedent(UNMODIFIED))
    spec = f"{agent}:main"
    made = invoke(
        runner, store_path, "record", "--agent", spec, "--instrument", "time,uuid", "--json"
    )
    run_id = orjson.loads(ok(made).stdout)["id"]
    assert time.time is _environment._ORIGINAL_TIME  # put back when the run ended
    assert datetime.datetime is _environment._ORIGINAL_DATETIME
    assert uuid.uuid4 is _environment._ORIGINAL_UUID4
    with Store.open(store_path, read_only=True) as db:
        run = db.get(run_id)
    assert _names(run) == [
        "time.time",
        "uuid.uuid4",
        "datetime.now",
        "datetime.now",
        "time.time_ns",
    ]
    assert all(s.reads_environment for s in run.steps) and run.metadata["instrument"] == [
        "time", "uuid"
    ]  # fmt: skip
    answer = run.metadata["answer"]
    started, request, today, stamped, nanos = (s.output for s in run.steps)
    assert answer["started"] == started and answer["request"] == request
    assert answer["today"] == datetime.datetime.fromtimestamp(today).isoformat()
    assert answer["stamped"] == (
        datetime.datetime.fromtimestamp(stamped, datetime.timezone.utc).isoformat()
    )
    assert answer["nanos"] == nanos and isinstance(nanos, int)
    uninstrument()  # the replay instruments what the run was recorded through, by itself
    time.sleep(0.01)
    replayed = invoke(runner, store_path, "replay", run_id, "--agent", spec, "--json")
    said = orjson.loads(ok(replayed).stdout)
    assert said["identical"] is True, said
    again = invoke(
        runner, store_path, "record", "--agent", spec, "--instrument", "time,uuid", "--json"
    )
    other = orjson.loads(ok(again).stdout)["id"]
    assert "identical" in ok(invoke(runner, store_path, "diff", run_id, other)).stdout


def test_reads_inside_a_step_belong_to_it_and_other_threads_are_untouched(clean: None) -> None:
    seen: list[float] = []

    def stamping(ctx: otel_replay.replay.AgentContext) -> float:
        # the tool reads the clock itself (an SDK's retry timer, say): that read is the step's
        ctx.tool("slow", produce=lambda: time.time() > 0)
        elsewhere = threading.Thread(target=lambda: seen.append(time.time()))
        elsewhere.start()
        elsewhere.join()
        return time.time()

    otel_replay.instrument("time")
    recording = record(stamping)
    run = recording.trajectory
    assert _names(run) == ["slow", "time.time"]  # nor the other thread's read
    assert run.steps[1].output == recording.answer and len(seen) == 1
    assert replay(run, stamping).identical


def test_an_exported_recording_imports_with_its_reads_and_replays_identically(
    runner: CliRunner, tmp_path: Path
) -> None:
    spec, spans = "tests.replay.clock_agents:ticket", tmp_path / "run.json"
    recorded_in, imported_in = tmp_path / "a.db", tmp_path / "b.db"
    made = invoke(
        runner, recorded_in, "record", "--agent", spec, "--otlp-out", str(spans), "--json"
    )
    run_id = orjson.loads(ok(made).stdout)["id"]
    ok(invoke(runner, imported_in, "import", str(spans)))
    with Store.open(recorded_in, read_only=True) as db:
        recorded = db.get(run_id)
    with Store.open(imported_in, read_only=True) as db:
        imported = db.get(run_id)
    assert [(s.kind, s.name, s.inputs, s.output) for s in imported.steps] == [
        (s.kind, s.name, s.inputs, s.output) for s in recorded.steps
    ]  # the clock reads among the tool calls, as recorded
    assert imported.final_hash == recorded.final_hash
    said = orjson.loads(ok(invoke(runner, imported_in, "replay", run_id, "--agent", spec,
                                  "--json")).stdout)  # fmt: skip
    assert said["identical"] is True, said


def test_runs_on_several_threads_share_the_patches_and_the_last_puts_them_back(
    clean: None,
) -> None:
    started, go = threading.Barrier(4), threading.Event()

    def waiting() -> float:
        started.wait()  # every run under way, the patches applied by all four
        go.wait()
        return time.time()

    otel_replay.instrument("time")
    recordings: list[otel_replay.replay.Recording] = []
    threads = [
        threading.Thread(target=lambda: recordings.append(record(waiting))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    while len(_environment._APPLIED) == 0:
        time.sleep(0.001)
    assert time.time is not _environment._ORIGINAL_TIME
    go.set()
    for thread in threads:
        thread.join()
    assert time.time is _environment._ORIGINAL_TIME and not _environment._APPLIED
    assert len(recordings) == 4
    for recording in recordings:
        (read,) = recording.trajectory.steps
        assert read.name == "time.time" and read.output == recording.answer
