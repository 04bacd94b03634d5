"""The write-once contract of the agent context: one function, recorded and replayed unchanged.

Record→replay identity of a seeded stochastic agent, per-position randomness (holding a step never
shifts later draws), non-determinism detection, outputs and inputs that are not JSON, failing
operations, resample functions in place of ``produce``, ``live_kinds``, faults, and ``diff``.
"""

from __future__ import annotations

import datetime
import functools
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from otel_replay import (
    CanonicalJSONError,
    ReplayError,
    RolloutContext,
    Step,
    StepKind,
    StepStatus,
    Store,
    Trajectory,
)
from otel_replay.errors import NonDeterminismError
from otel_replay.hashing import check_json_value
from otel_replay.replay import (
    AgentContext,
    Intervention,
    Plan,
    StepError,
    diff,
    fault,
    fork,
    record,
    replay,
    run_agent,
)
from otel_replay.replay._cassette import ReplayContext
from otel_replay.replay._faults import FAULTS
from otel_replay.replay._plan import HOLD, Action
from otel_replay.replay._steps import RecordingContext
from otel_replay.resamplers import Registry
from tests.replay.agents import (
    careful_clock_agent,
    charging,
    clock_agent,
    drawing,
    lists,
    polling,
    returning,
    stochastic,
    unhandled,
    without_produce,
    worldly,
)

CONTEXT_API = frozenset({"llm", "tool", "retrieve", "step", "rng"})


# --- one function, both contexts -----------------------------------------------------------------


class Spy:
    """Stands in for a context and notes every attribute the agent touches."""

    def __init__(self, inner: AgentContext) -> None:
        self._inner = inner
        self.touched: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name not in RUNNER_READS:
            self.touched.add(name)
        return getattr(self._inner, name)


#: What `run_agent` itself reads of the context when the agent is done (its failure; closing it).
RUNNER_READS = frozenset({"failed", "close", "pid"})


def test_one_function_runs_under_both_contexts_through_the_context_api_only() -> None:
    touched: set[str] = set()
    for seed in range(6):
        recording_spy = Spy(RecordingContext(seed))
        recorded_answer, error = run_agent(
            stochastic, cast(AgentContext, recording_spy), {"turns": 6}
        )
        assert error is None
        recorded = Trajectory.build("r", recording_spy._inner.ledger.steps)

        replay_spy = Spy(ReplayContext(recorded.steps, seed, on_miss="error"))
        replayed_answer, error = run_agent(stochastic, cast(AgentContext, replay_spy), {"turns": 6})
        assert error is None
        assert replayed_answer == recorded_answer
        replayed = Trajectory.build("r", replay_spy._inner.ledger.steps)
        assert replayed.final_hash == recorded.final_hash

        assert recording_spy.touched <= CONTEXT_API
        assert replay_spy.touched == recording_spy.touched
        touched |= recording_spy.touched
    assert touched == CONTEXT_API  # the stochastic agent exercises every part of the API


# --- record → replay identity --------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 2**40])
def test_seeded_stochastic_agent_replays_exactly(seed: int) -> None:
    recording = record(stochastic, arguments={"turns": 5}, seed=seed)
    assert recording.error is None
    original = recording.trajectory
    assert original.metadata["seed"] == seed

    result = replay(original, stochastic)
    assert result.nondeterminism is None
    assert result.identical
    assert result.diff.common == len(original.steps) == 5 * 2
    assert result.trajectory.final_hash == original.final_hash
    assert [s.hash for s in result.trajectory.steps] == [s.hash for s in original.steps]
    assert result.trajectory.metadata["answer"] == recording.answer


def test_recordings_depend_on_the_seed_and_only_on_it() -> None:
    hashes = [record(stochastic, seed=seed).trajectory.final_hash for seed in range(8)]
    assert len(set(hashes)) == len(hashes)
    assert record(stochastic, seed=3).trajectory.final_hash == hashes[3]


def test_a_stored_recording_replays_exactly(tmp_path: Path) -> None:
    recording = record(stochastic, arguments={"turns": 4}, seed=5)
    with Store.open(tmp_path / "store.db") as store:
        store.put_all([recording.trajectory])
        loaded = store.get(recording.trajectory.id)
    assert loaded.final_hash == recording.trajectory.final_hash
    result = replay(loaded, stochastic)
    assert result.identical
    assert result.trajectory.metadata["answer"] == recording.answer


def test_repeated_identical_calls_are_served_in_recorded_order() -> None:
    recording = record(polling)
    assert recording.answer == ["pending", "pending", "done"]
    assert len({s.op_key for s in recording.trajectory.steps}) == 1
    result = replay(recording.trajectory, polling)
    assert result.identical
    assert result.trajectory.metadata["answer"] == ["pending", "pending", "done"]


# --- holding a step never shifts later draws -----------------------------------------------------


@pytest.mark.parametrize("resampled", range(5))
def test_holding_steps_does_not_shift_the_draws_of_later_positions(resampled: int) -> None:
    seed = 12345
    recorded_calls: Counter[int] = Counter()
    recording = record(
        functools.partial(drawing, calls=recorded_calls), arguments={"steps": 5}, seed=seed
    )
    assert recorded_calls == Counter(range(5))
    original = recording.trajectory

    kept = set(range(5)) - {resampled}
    plan = Plan.coalition(5, kept, f"all-but-{resampled}")
    calls: Counter[int] = Counter()
    ctx = ReplayContext(original.steps, seed, plan=plan, on_miss="resample")
    answer, error = run_agent(functools.partial(drawing, calls=calls), ctx, {"steps": 5})
    assert error is None
    # the held steps were served (their produce, and the draws inside it, never ran) ...
    assert calls == Counter({resampled: 1})
    assert ctx.ledger.matched == list(range(5))
    assert ctx.ledger.diverged_at is None
    # ... and every position still saw the recording's numbers: between steps and inside produce
    assert answer == recording.answer
    assert Trajectory.build("x", ctx.ledger.steps).final_hash == original.final_hash


def test_fresh_randomness_starts_exactly_where_asked() -> None:
    recording = record(drawing, arguments={"steps": 5}, seed=1)
    ctx = ReplayContext(
        recording.trajectory.steps,
        1,
        on_miss="resample",
        fresh_seed=999,
        holds=lambda position: position < 3,  # the plan holds positions 0-2
    )
    answer, _ = run_agent(drawing, ctx, {"steps": 5})
    assert answer[:3] == recording.answer[:3]
    assert answer[3][0] != recording.answer[3][0]  # position 3 draws from the fresh stream
    assert ctx.ledger.diverged_at == 3


# --- non-determinism -----------------------------------------------------------------------------


def test_an_agent_reading_the_clock_is_caught_and_the_message_names_the_step() -> None:
    original = record(clock_agent).trajectory
    ctx = ReplayContext(original.steps, 0, on_miss="error")
    with pytest.raises(NonDeterminismError) as caught:
        run_agent(clock_agent, ctx, None)
    error = caught.value
    assert error.step_index == 1
    message = str(error)
    assert message.startswith("non-determinism at step 1: the agent called llm 'think'")
    nearest = message.splitlines()[1:]
    assert nearest, message
    assert nearest[0].strip() == "step 1 (llm 'think'): inputs differ in 'now'"
    assert all("'now'" in line for line in nearest if "'think'" in line)
    assert len(ctx.ledger.steps) == 1  # the probe before it replayed


def test_replay_reports_non_determinism_and_is_not_identical() -> None:
    original = record(clock_agent).trajectory
    result = replay(original, clock_agent)
    assert result.nondeterminism is not None
    assert result.nondeterminism.step_index == 1
    assert "inputs differ in 'now'" in str(result.nondeterminism)
    assert not result.identical
    assert result.diff.divergence == 1


def test_on_miss_resample_runs_the_call_live_and_marks_where_the_run_diverged() -> None:
    original = record(clock_agent).trajectory
    ctx = ReplayContext(original.steps, 0, on_miss="resample")
    answer, error = run_agent(clock_agent, ctx, None)
    assert error is None
    assert answer == [{"i": 0}, "ok", {"i": 1}, "ok", {"i": 2}, "ok"]
    assert ctx.ledger.diverged_at == 1
    assert ctx.ledger.matched == [0, None, 2, None, 4, None]
    assert [s.index for s in ctx.unconsumed()] == [1, 3, 5]


def test_non_determinism_is_reported_even_when_the_agent_catches_exception() -> None:
    """Agents often wrap calls in ``except Exception``; the replay must still say what happened."""
    original = record(careful_clock_agent).trajectory
    result = replay(original, careful_clock_agent)
    assert not result.identical
    assert result.nondeterminism is not None, "the non-determinism error was swallowed by the agent"
    assert result.nondeterminism.step_index == 1


def test_a_replay_that_runs_past_the_record_says_so() -> None:
    def short(ctx: AgentContext) -> None:
        ctx.tool("only", produce=lambda: 1, n=1)

    def longer(ctx: AgentContext) -> None:
        ctx.tool("only", produce=lambda: 1, n=1)
        ctx.tool("extra", produce=lambda: 2, n=2)

    original = record(short).trajectory
    with pytest.raises(
        NonDeterminismError,
        match=r"(?s)^non-determinism at step 1: .*every recorded call has been consumed",
    ):
        run_agent(longer, ReplayContext(original.steps, 0, on_miss="error"), None)


def test_on_miss_must_be_resample_or_error() -> None:
    with pytest.raises(ValueError, match="on_miss='ignore'"):
        ReplayContext((), 0, on_miss="ignore")


# --- outputs and inputs that are not JSON --------------------------------------------------------

NOT_JSON = [
    pytest.param(lambda: {1, 2}, id="set"),
    pytest.param(lambda: datetime.datetime(2026, 3, 14, 14, 7), id="datetime"),
    pytest.param(lambda: math.nan, id="nan"),
    pytest.param(lambda: {"rate": math.inf}, id="nested-inf"),
    pytest.param(lambda: (1, 2), id="tuple"),
    pytest.param(lambda: b"bytes", id="bytes"),
    pytest.param(lambda: {1: "one"}, id="int-key"),
    pytest.param(lambda: {(1, 2): "pair"}, id="tuple-key"),
    pytest.param(lambda: 2**64, id="int-beyond-64-bits"),
    pytest.param(lambda: ["\ud800"], id="lone-surrogate"),
]


@pytest.mark.parametrize("value", NOT_JSON)
def test_a_non_json_output_fails_at_record_time_naming_the_step(value: Callable[[], Any]) -> None:
    with pytest.raises(CanonicalJSONError, match=r"^step 1 \(tool 'b'\): output"):
        record(returning(value))


@pytest.mark.parametrize("value", NOT_JSON)
def test_lax_stores_a_lossy_copy_and_lists_the_step(value: Callable[[], Any]) -> None:
    recording = record(returning(value), lax=True)
    original = recording.trajectory
    assert recording.error is None
    assert original.metadata["lossy_steps"] == [1]
    assert len(original.steps) == 2
    check_json_value(original.steps[1].output)
    assert original.steps[1].status is StepStatus.OK
    # the agent saw the lossy copy while recording, so the run replays exactly
    assert recording.answer == original.steps[1].output
    assert replay(original, returning(value)).identical


def test_lax_copies_are_what_json_would_make_of_them() -> None:
    assert record(returning(lambda: {1: "one"}), lax=True).answer == {"1": "one"}
    assert record(returning(lambda: math.nan), lax=True).answer == "nan"
    assert record(returning(lambda: (1, 2)), lax=True).answer == [1, 2]
    assert record(returning(lambda: datetime.date(2026, 3, 14)), lax=True).answer == "2026-03-14"
    assert record(returning(lambda: {1, 2}), lax=True).answer == [1, 2]  # sorted: stable


def test_an_output_that_is_json_records_without_lossy_steps() -> None:
    recording = record(returning(lambda: {"ok": [1, 2.5, None, True, "x"]}))
    assert "lossy_steps" not in recording.trajectory.metadata


BAD_INPUTS = [
    pytest.param({"when": datetime.datetime(2026, 3, 14)}, "when", id="datetime"),
    pytest.param({"ids": {1, 2}}, "ids", id="set"),
    pytest.param({"score": math.nan}, "score", id="nan"),
    pytest.param({"blob": b"x"}, "blob", id="bytes"),
    pytest.param({"table": {1: "one"}}, "table", id="int-key"),
    pytest.param({"big": 2**64}, "big", id="int-beyond-64-bits"),
]


@pytest.mark.parametrize(("inputs", "key"), BAD_INPUTS)
@pytest.mark.parametrize("replaying", [False, True], ids=["recording", "replaying"])
def test_non_json_inputs_are_rejected_naming_the_step(
    inputs: dict[str, Any], key: str, replaying: bool
) -> None:
    produced: list[str] = []

    def operation(kind: str) -> Callable[[], str]:
        def produce() -> str:
            produced.append(kind)
            return "fine"

        return produce

    def agent(ctx: AgentContext) -> None:
        ctx.llm("m", produce=operation("llm"), prompt="hi")
        ctx.tool("b", produce=operation("tool"), **inputs)

    prefix = record(lambda ctx: ctx.llm("m", produce=lambda: "fine", prompt="hi")).trajectory
    ctx: AgentContext = (
        ReplayContext(prefix.steps, 0, on_miss="resample") if replaying else RecordingContext()
    )
    with pytest.raises(
        CanonicalJSONError, match=rf"^step 1 \(tool 'b'\): inputs\.arguments\.{key}"
    ):
        agent(ctx)
    assert "tool" not in produced  # rejected before the operation ran
    assert len(ctx.ledger.steps) == 1


@pytest.mark.parametrize(
    ("method", "reserved"),
    [("llm", "name"), ("tool", "name"), ("retrieve", "name"), ("step", "kind")],
)
def test_an_input_may_be_called_like_a_parameter_of_the_step_api(
    method: str, reserved: str
) -> None:
    """Tools take arguments called ``name`` (lookup_user(name=...)); inputs are the agent's, all."""
    ctx = RecordingContext()
    call = getattr(ctx, method)
    first = ("tool", "lookup_user") if method == "step" else ("lookup_user",)
    call(*first, produce=lambda: {"id": 7}, **{reserved: "alice"})
    (step,) = ctx.ledger.steps
    # tools keep their arguments under "arguments", model calls their parameters under "parameters"
    inputs = step.inputs.get("arguments", step.inputs.get("parameters", step.inputs))
    assert inputs == {reserved: "alice"}


# --- failing operations ----------------------------------------------------------------------------


def test_a_failing_produce_reaches_the_agent_as_step_error_live_and_on_replay() -> None:
    recording = record(charging, arguments={"amount": 40})
    original = recording.trajectory
    charge, apology = original.steps
    assert charge.status is StepStatus.ERROR
    assert charge.error == "ValueError: card declined for 40"
    assert charge.output is None
    assert apology.inputs == {  # model calls are stored in the shape importers give them
        "model": "apologise",
        "parameters": {"error": "ValueError: card declined for 40", "failed_step": 0},
    }
    assert recording.answer == "handled: sorry: ValueError: card declined for 40"
    assert recording.error is None

    result = replay(original, charging)
    assert result.identical
    assert result.trajectory.metadata["answer"] == recording.answer


def test_a_step_error_the_agent_does_not_handle_ends_the_run_in_both_contexts() -> None:
    recording = record(unhandled)
    assert recording.error == "StepError: ValueError: card declined for 1"
    assert recording.trajectory.metadata["agent_error"] == recording.error
    assert recording.trajectory.outcome == 0.0
    assert len(recording.trajectory.steps) == 2
    ctx = ReplayContext(recording.trajectory.steps, 0, on_miss="error")
    with pytest.raises(StepError) as caught:
        unhandled(ctx)
    assert caught.value.step_index == 1
    assert replay(recording.trajectory, unhandled).identical


def test_a_forced_failure_reaches_the_agent_as_step_error() -> None:
    original = record(lists).trajectory
    plan = Plan.intervene(len(original.steps), 1, Intervention.fail("boom"), then=HOLD)
    ctx = ReplayContext(original.steps, 0, plan=plan, on_miss="resample")
    answer, error = run_agent(lists, ctx, None)
    assert error is None
    assert answer == "failed"
    assert ctx.ledger.steps[1].status is StepStatus.ERROR
    assert ctx.ledger.steps[1].error == "boom"


# --- steps without produce -----------------------------------------------------------------------


def _lookup(step: Step, ctx: RolloutContext) -> Any:
    return {"key": step.inputs["arguments"]["key"], "draw": ctx.rng.random()}


def _writer(step: Step, ctx: RolloutContext) -> Any:
    return f"wrote {step.inputs['parameters']['prompt']} after {len(ctx.history)} steps"


def test_a_step_without_produce_uses_the_registered_resample_function() -> None:
    registry = Registry()
    registry.add_resampler("tool", _lookup, name="lookup")
    registry.add_resampler("llm", _writer)  # every llm step
    recording = record(without_produce, registry=registry, seed=4)
    lookup, writer = recording.trajectory.steps
    assert lookup.output["key"] == "k1"
    assert writer.output.startswith("wrote summarise {'key': 'k1', 'draw': ")
    assert writer.output.endswith("after 1 steps")
    assert record(without_produce, registry=registry, seed=4).answer == recording.answer
    assert record(without_produce, registry=registry, seed=5).answer != recording.answer
    # held steps are served: replay needs no resample function
    assert replay(recording.trajectory, without_produce).identical


def test_a_step_without_produce_or_resample_function_is_a_clear_error() -> None:
    with pytest.raises(ReplayError) as caught:
        record(without_produce)
    message = str(caught.value)
    assert not isinstance(caught.value, CanonicalJSONError)
    assert message.startswith("step 0 (tool 'lookup') has no produce= callable")
    assert "@resampler('tool', name='lookup')" in message


def test_a_resampled_step_without_produce_needs_a_resample_function_on_replay() -> None:
    registry = Registry()
    registry.add_resampler("tool", _lookup, name="lookup")
    registry.add_resampler("llm", _writer)
    original = record(without_produce, registry=registry).trajectory
    plan = Plan.coalition(2, {1}, "lookup")
    ctx = ReplayContext(original.steps, 0, plan=plan, on_miss="resample")
    with pytest.raises(ReplayError, match=r"step 0 \(tool 'lookup'\) has no produce="):
        run_agent(without_produce, ctx, None)


# --- live kinds ----------------------------------------------------------------------------------


def test_live_tools_run_for_real_while_model_turns_are_served() -> None:
    world: dict[str, Any] = {"status": "green"}
    calls: Counter[str] = Counter()
    agent = worldly(world, calls)
    original = record(agent).trajectory
    assert calls == Counter({"llm": 2, "tool": 1})

    calls.clear()
    assert replay(original, agent).identical
    assert calls == Counter()  # nothing ran

    assert replay(original, agent, live_kinds=(StepKind.TOOL,)).identical
    assert calls == Counter({"tool": 1})  # the tool ran, the model turns were served

    world["status"] = "red"  # the world moved on since the recording
    assert replay(original, agent).identical
    result = replay(original, agent, live_kinds=(StepKind.TOOL,))
    assert not result.identical
    assert result.diff.divergence == 1
    assert result.diff.differences == ("output",)
    assert result.trajectory.steps[1].output == {"status": "red"}
    assert result.nondeterminism is not None  # the model then saw a prompt the record lacks
    assert result.nondeterminism.step_index == 2


# --- faults ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "recorded", "expected"),
    [
        ("empty", [1, 2, 3], []),
        ("empty", {"a": 1}, {}),
        ("empty", "text", ""),
        ("empty", 42, None),
        ("truncate", [1, 2, 3, 4, 5], [1, 2]),
        ("truncate", {"c": 1, "a": 2, "b": 3, "d": 4}, {"c": 1, "a": 2}),
        ("truncate", "abcdef", "abc"),
        ("truncate", 42, 42),
    ],
)
def test_output_faults(name: str, recorded: Any, expected: Any) -> None:
    intervention = fault(name, recorded)
    assert intervention.action is Action.FORCE
    assert intervention.error is None
    assert intervention.output == expected
    assert type(intervention.output) is type(expected)


@pytest.mark.parametrize(("name", "needle"), [("error", "error"), ("timeout", "TimeoutError")])
def test_failure_faults(name: str, needle: str) -> None:
    intervention = fault(name, [1, 2])
    assert intervention.action is Action.FORCE
    assert intervention.error is not None
    assert intervention.error.startswith("injected fault")
    assert needle in intervention.error


def test_an_unknown_fault_names_the_built_in_ones() -> None:
    with pytest.raises(ReplayError, match=r"'flood'.*empty, error, timeout, truncate"):
        fault("flood", [])
    assert sorted(FAULTS) == ["empty", "error", "timeout", "truncate"]


@pytest.mark.parametrize(
    ("name", "answer", "step1"),
    [
        ("error", "failed", "injected fault: error"),
        ("timeout", "failed", "injected fault: TimeoutError: the operation timed out"),
        ("empty", "nothing", []),
        ("truncate", "2 items", ["a", "b"]),
    ],
)
def test_forking_a_live_agent_with_each_fault(name: str, answer: str, step1: Any) -> None:
    original = record(lists).trajectory
    forked = fork(original, 1, fault(name, original.steps[1].output), agent=lists)
    assert forked.metadata["answer"] == answer
    assert forked.metadata["forked_from"] == original.id
    assert forked.metadata["fork_at"] == 1
    injected = forked.steps[1]
    if isinstance(step1, str):
        assert injected.status is StepStatus.ERROR
        assert injected.error == step1
    else:
        assert injected.output == step1
    result = diff(original, forked)
    assert result.common == 1
    assert result.divergence == 1


def test_a_fork_without_agent_or_resamplers_holds_the_rest_and_flags_it_stale() -> None:
    original = record(lists).trajectory
    forked = fork(original, 1, Intervention.force([]))
    assert [s.output for s in forked.steps[2:]] == [s.output for s in original.steps[2:]]
    assert forked.metadata["stale_steps"] == [2, 3]


# --- diff ----------------------------------------------------------------------------------------


def test_diff_of_identical_runs() -> None:
    original = record(stochastic, seed=2).trajectory
    replayed = replay(original, stochastic).trajectory
    result = diff(original, replayed)  # span ids and timestamps differ: they never count
    assert original.steps[0].span_id is not None
    assert replayed.steps[0].span_id is None
    assert result.identical
    assert result.divergence is None
    assert result.common == len(original.steps)
    assert result.differences == ()


def test_diff_of_diverging_runs_names_the_first_difference() -> None:
    original = record(lists).trajectory
    forked = fork(original, 1, fault("truncate", original.steps[1].output), agent=lists)
    result = diff(original, forked)
    assert not result.identical
    assert result.common == 1
    assert result.differences == ("output",)
    left, right = result.step_pair()
    assert left is not None and right is not None
    assert (left.output, right.output) == (["a", "b", "c", "d"], ["a", "b"])
    # later steps differ in their inputs, and diff says which keys
    later = diff(Trajectory.build("l", original.steps[3:]), Trajectory.build("r", forked.steps[3:]))
    assert later.differences == ("inputs (count)", "output")


def test_diff_of_runs_of_different_length() -> None:
    original = record(lists).trajectory
    forked = fork(original, 1, fault("empty", original.steps[1].output), agent=lists)
    assert len(forked.steps) == 3 < len(original.steps) == 4
    shorter = Trajectory.build("short", original.steps[:2])
    result = diff(original, shorter)
    assert not result.identical
    assert result.divergence == 2
    assert result.differences == ("length",)
    left, right = result.step_pair()
    assert left is not None and left.name == "open"
    assert right is None
    assert diff(shorter, original).step_pair() == (None, original.steps[2])
