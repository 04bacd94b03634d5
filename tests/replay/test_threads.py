"""Recording is transparent to the agent wherever its framework runs the tools: on worker threads
(``asyncio.to_thread``, a bare thread pool), many at once, with the durable ledger writing to a
real store from whichever thread completed a step. A failure of the recording itself never
reaches the agent's code: the run ends with `RecorderError`, and the store keeps no outcome."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from otel_replay.errors import RecorderError
from otel_replay.replay import record, replay
from otel_replay.replay._durable import DurableLedger
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.replay import thread_agents

AGENTS = Path(thread_agents.__file__)


def test_tools_on_worker_threads_are_recorded_and_the_agent_gets_what_it_would(
    store_path: Path,
) -> None:
    unrecorded = asyncio.run(thread_agents.to_thread_agent())
    with Store.open(store_path) as db, DurableLedger(db) as ledger:
        done = record(thread_agents.to_thread_agent, ledger=ledger.keep)
        assert ledger.kept_steps == 5  # every step kept as it completed, from its worker thread
        ledger.finish(done.trajectory)
        stored = db.get(done.trajectory.id)
    assert done.error is None
    assert done.answer == unrecorded  # the same answer as without agent-replay
    assert [s.name for s in stored.steps] == ["free_slots"] * 4 + ["book"]
    assert [s.index for s in stored.steps] == list(range(5))
    dates = sorted(s.inputs["arguments"]["date"] for s in stored.steps[1:4])
    assert dates == ["2026-12-08", "2026-12-09", "2026-12-10"]  # the parallel calls, all three
    assert replay(stored, thread_agents.to_thread_agent).identical


def test_a_bare_thread_pool_records_every_call_once_in_the_order_they_completed(
    store_path: Path,
) -> None:
    with Store.open(store_path) as db, DurableLedger(db) as ledger:
        done = record(thread_agents.pool_agent, ledger=ledger.keep)
        ledger.finish(done.trajectory)
    steps = done.trajectory.steps
    assert done.error is None and len(steps) == 24  # threads that never had a context: found
    assert [s.index for s in steps] == list(range(24))
    assert sorted(s.inputs["arguments"]["date"] for s in steps) == [
        f"2026-12-{day:02d}" for day in range(1, 25)
    ]
    ends = [s.end_time_unix_nano for s in steps]
    assert ends == sorted(ends)  # appended as they completed
    assert replay(done.trajectory, thread_agents.pool_agent).identical


def test_a_ledger_that_fails_on_a_worker_thread_stops_the_recording_not_the_agent() -> None:
    calls: list[int] = []

    def failing_ledger(run: object) -> None:
        calls.append(1)
        raise RuntimeError("the disk went away")

    with pytest.raises(RecorderError, match=r"recorder failed at step 0 .*the disk went away"):
        record(thread_agents.to_thread_agent, ledger=failing_ledger)
    assert calls == [1]  # stopped at once: nothing more handed to it


def test_the_recorders_own_failure_never_reaches_the_agent(store_path: Path) -> None:
    seen: list[object] = []

    def agent() -> object:
        answer = thread_agents.tripping_agent()
        seen.append(answer)
        return answer

    with Store.open(store_path) as db:
        with pytest.raises(RecorderError, match=r"step 1 \(tool 'odd_tool'\)"):
            with DurableLedger(db) as ledger:
                record(agent, ledger=ledger.keep)
        (left,) = db.summaries()
        kept = db.get(left.id)
    # the agent saw every tool answer as it would have without agent-replay
    assert seen == [{"seen": ["ok", "_Unreadable", "ok"]}]
    assert kept.outcome is None and "recorder failed" in kept.metadata["recorder_error"]
    assert len(kept.steps) == 1  # what was kept before the failure


def test_record_exits_1_on_a_recorder_failure_and_stores_no_outcome(
    store_path: Path,
) -> None:
    runner = CliRunner()
    result = invoke(
        runner,
        store_path,
        "record",
        "--agent",
        f"{AGENTS}:tripping_agent",
        "--success-if",
        "never",
    )
    line = one_line_error(result)
    assert "recorder failed at step 1" in line and "odd_tool" in line
    with Store.open(store_path, read_only=True) as db:
        (left,) = db.summaries()
        assert db.get(left.id).outcome is None
    listed = ok(invoke(runner, store_path, "list", "--where", "failed"))
    assert left.id not in listed.output
    # scoring never gives it the agent's outcome: what it holds is not what the agent did
    scored = ok(invoke(runner, store_path, "score", "--all", "--success-if", "never", "--json"))
    (said,) = json.loads(scored.stdout)
    assert said["status"] == "unfinished" and "the recorder failed" in said["error"]
    with Store.open(store_path, read_only=True) as db:
        assert db.get(left.id).outcome is None


def test_record_of_tools_on_worker_threads_through_the_cli(store_path: Path) -> None:
    runner = CliRunner()
    result = ok(invoke(runner, store_path, "record", "--agent", f"{AGENTS}:to_thread_agent"))
    assert "5 steps" in result.output
    with Store.open(store_path, read_only=True) as db:
        (run,) = db.summaries()
        assert len(db.get(run.id).steps) == 5


def test_a_run_resumed_from_a_recorder_failure_is_its_own(store_path: Path) -> None:
    from otel_replay.fleet._kept import unfinished
    from otel_replay.replay import resume
    from tests.replay.resume_agents import counting

    with Store.open(store_path) as db:
        kept: list[int] = []

        with pytest.raises(RecorderError), DurableLedger(db) as ledger:

            def failing_third(run: object) -> None:
                if len(kept) == 2:
                    raise RuntimeError("the disk went away")
                kept.append(1)
                ledger.keep(run)  # type: ignore[arg-type]

            record(counting, ledger=failing_third)
        (left,) = db.summaries()
        partial = db.get(left.id)
    assert "recorder failed at step 2" in (unfinished(partial) or "")
    done = resume(partial, counting)
    assert "recorder_error" not in done.trajectory.metadata
    assert unfinished(done.trajectory) is None and done.answer == 150


def test_two_recordings_at_once_fail_on_a_call_neither_can_claim() -> None:
    """Two agents recorded at once from Python, their tools on bare thread pools: a call on a
    thread without a context belongs to neither for sure, so both say so rather than run it
    unrecorded."""
    started = threading.Barrier(2)

    def agent() -> object:
        started.wait(timeout=10)  # both runs under way before either calls
        return thread_agents.pool_agent(calls=2, workers=2)

    errors: list[BaseException] = []

    def one() -> None:
        try:
            record(agent)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(errors) == 2
    assert all("cannot be told which run it belongs to" in str(e) for e in errors)


def test_a_thread_the_agent_left_running_adds_nothing_to_the_run(store_path: Path) -> None:
    """A tool call that finishes after the agent returned (a worker it did not wait for) runs as
    it would without agent-replay and is no step of the finished run."""
    go, finished = threading.Event(), threading.Event()

    def late() -> None:
        go.wait(timeout=10)
        thread_agents.free_slots(email="late@example.com", date="2026-12-31")
        finished.set()

    def agent() -> str:
        thread_agents.free_slots(email="ana@example.com", date="2026-12-07")
        # not waited for; it carries the run's context, as asyncio.to_thread's threads do
        threading.Thread(target=contextvars.copy_context().run, args=(late,)).start()
        return "done"

    with Store.open(store_path) as db, DurableLedger(db) as ledger:
        done = record(agent, ledger=ledger.keep)
        ledger.finish(done.trajectory)
        go.set()
        assert finished.wait(timeout=10)
        assert [s.id for s in db.summaries()] == [done.trajectory.id]  # no partial run again
    assert len(done.trajectory.steps) == 1


def test_a_forked_worker_process_calls_as_without_agent_replay(store_path: Path) -> None:
    """A process forked while the agent runs inherits the run, but the run is not kept there: its
    tool call runs as it would without agent-replay, never into a copy of the run or the parent's
    store (whose connection a child must not use)."""
    writers = store_path.parent / "writers"

    with Store.open(store_path) as db, DurableLedger(db) as ledger:

        def keep(run: object) -> None:  # notes which process wrote, where a child's note shows
            with writers.open("a") as noted:
                noted.write(f"{os.getpid()}\n")
            ledger.keep(run)  # type: ignore[arg-type]

        done = record(thread_agents.forking_agent, ledger=keep)
        ledger.finish(done.trajectory)
        assert [s.id for s in db.summaries()] == [done.trajectory.id]
    assert writers.read_text().split() == [str(os.getpid())]  # only this process wrote
    assert done.error is None and done.answer["exit"] == 0
    assert done.answer["theirs"] == ["2026-12-02 10:00 (cy@example.com)",
                                     "2026-12-02 14:00 (cy@example.com)"]  # fmt: skip
    assert [s.inputs["arguments"]["date"] for s in done.trajectory.steps] == ["2026-12-01"]
