"""The record form of each value, and its copies: every field survives, in every place it travels."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from otel_replay import SpanNode, Step, StepKind, StepStatus, Store, TraceFormatError, Trajectory
from otel_replay.frame import STEP_SCHEMA, steps_frame
from otel_replay.model import STEP_FIELDS, TRAJECTORY_FIELDS

# Every field set to something other than its default, so a field a copy forgets shows.
FULL_STEP = Step(
    kind=StepKind.TOOL,
    name="list_deploys",
    inputs={"arguments": {"service": "checkout"}, "tool_call_id": "call_1"},
    output=[{"version": "v841"}],
    status=StepStatus.ERROR,
    error="TimeoutError: upstream",
    start_time_unix_nano=1_000,
    end_time_unix_nano=2_500,
    span_id="00f067aa0ba902b7",
    parent_span_id="53995c3f42cd8ad8",
    resamplable=False,
)
SPAN = SpanNode(
    span_id="00f067aa0ba902b7",
    parent_span_id="53995c3f42cd8ad8",
    name="list_deploys",
    role="step",
    start_time_unix_nano=1_000,
    end_time_unix_nano=2_500,
    status=StepStatus.ERROR,
    step_index=0,
)


def _run() -> Trajectory:
    second = dataclasses.replace(FULL_STEP, name="search_logs", status=StepStatus.OK, error=None)
    return Trajectory.build(
        "run-1",
        [FULL_STEP, second],
        outcome=0.0,
        metadata={"service": "checkout", "format": "jsonl"},
        spans=[SPAN],
    )


def test_a_steps_record_names_every_field() -> None:
    assert sorted(FULL_STEP.to_record()) == sorted(STEP_FIELDS)
    assert tuple(f.name for f in dataclasses.fields(Step)) == STEP_FIELDS


def test_a_step_survives_its_record_form() -> None:
    step = _run().steps[0]
    assert Step.from_record(step.to_record()) == step


def test_a_trajectory_survives_its_record_form() -> None:
    run = _run()
    record = run.to_record()
    assert tuple(record) == TRAJECTORY_FIELDS
    assert Trajectory.from_record(record) == run


def test_a_trajectory_survives_the_store(store_path: Path) -> None:
    run = _run()
    with Store.open(store_path) as store:
        store.put(run)
        assert store.get(run.id) == run


def test_every_step_field_is_a_frame_column(store_path: Path) -> None:
    with Store.open(store_path) as store:
        store.put(_run())
        frame = steps_frame(store)
    assert set(STEP_FIELDS) <= set(STEP_SCHEMA)
    row = frame.row(0, named=True)
    expected = _run().steps[0].to_record()
    assert {k: row[k] for k in ("span_id", "parent_span_id", "resamplable", "error")} == {
        k: expected[k] for k in ("span_id", "parent_span_id", "resamplable", "error")
    }


def test_with_result_changes_the_result_and_nothing_else() -> None:
    step = _run().steps[0]
    changed = step.with_result({"deploys": []}, StepStatus.OK, None)
    assert changed == dataclasses.replace(
        step, output={"deploys": []}, status=StepStatus.OK, error=None, hash=""
    )


def test_unlinked_leaves_its_place_in_the_chain() -> None:
    step = _run().steps[1]
    assert step.unlinked() == dataclasses.replace(step, index=-1, op_key="", hash="")
    assert Trajectory.build("again", [s.unlinked() for s in _run().steps]).final_hash == (
        _run().final_hash
    )


def _bad(**fields: Any) -> dict[str, Any]:
    return {"kind": "tool", "name": "t", **fields}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        pytest.param([], "step must be an object, got []", id="not-an-object"),
        pytest.param(_bad(kind="robot"), "step.kind = 'robot' is not a step kind", id="kind"),
        pytest.param(_bad(name=3), "step.name must be a string, got 3", id="name"),
        pytest.param(_bad(inputs=[1]), "step.inputs must be an object, got [1]", id="inputs"),
        pytest.param(_bad(status="fine"), "step.status = 'fine'; expected 'ok' or", id="status"),
        pytest.param(_bad(error=1), "step.error must be a string or null, got 1", id="error"),
        pytest.param(_bad(resamplable="yes"), "step.resamplable must be true or false", id="flag"),
        pytest.param(
            _bad(start_time_unix_nano=-1), "step.start_time_unix_nano = -1 is not a time", id="time"
        ),
        pytest.param(_bad(span_id=7), "step.span_id must be a string or null, got 7", id="span"),
        pytest.param(_bad(colour="red"), "unknown step field 'colour'; known: ", id="unknown"),
    ],
)
def test_a_bad_step_record_names_the_offending_value(record: Any, message: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        Step.from_record(record)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        pytest.param({"steps": []}, "'trajectory_id' must be a non-empty string", id="no-id"),
        pytest.param({"trajectory_id": "t", "steps": {}}, "'steps' must be a list", id="steps"),
        pytest.param(
            {"trajectory_id": "t", "steps": [], "outcome": "bad"},
            "'outcome' must be a number or null, got 'bad'",
            id="outcome",
        ),
        pytest.param(
            {"trajectory_id": "t", "steps": [], "spans": [{"name": "x"}]},
            "spans[0] must be an object with a 'span_id'",
            id="span",
        ),
        pytest.param(
            {"trajectory_id": "t", "steps": [{"kind": "tool"}]},
            "steps[0].name must be a string, got None",
            id="nested-step",
        ),
    ],
)
def test_a_bad_trajectory_record_names_the_offending_value(record: Any, message: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        Trajectory.from_record(record)
    assert message in str(caught.value)


def _turn(output: Any, status: StepStatus = StepStatus.OK) -> Step:
    return Step(StepKind.LLM, "m", {}, output, status, None if status is StepStatus.OK else "boom")


@pytest.mark.parametrize(
    ("outputs", "answer"),
    [
        pytest.param([{"role": "assistant", "content": "v841"}], "v841", id="one-turn"),
        pytest.param(
            [{"role": "assistant", "content": "first"}, {"role": "assistant", "content": "last"}],
            "last",
            id="the-last-answer",
        ),
        pytest.param(
            [
                {"role": "assistant", "content": "a"},
                {"role": "assistant", "tool_calls": [{"name": "t"}]},
            ],
            "a",
            id="a-turn-calling-tools-is-no-answer",
        ),
        pytest.param(
            [[{"role": "assistant", "content": "choice 0"}, {"role": "assistant", "content": "1"}]],
            "choice 0",
            id="several-choices",
        ),
        pytest.param(
            [
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ],
            "ab",
            id="text-parts",
        ),
        pytest.param([{"role": "assistant", "tool_calls": [{"name": "t"}]}], None, id="no-answer"),
    ],
)
def test_the_final_answer_is_the_last_turn_that_calls_no_tool(
    outputs: list[Any], answer: Any
) -> None:
    steps = [_turn(o) for o in outputs] + [Step(StepKind.TOOL, "t", {}, "result")]
    assert Trajectory.build("t", steps).final_answer == answer


def test_a_failed_model_call_gives_no_answer() -> None:
    run = Trajectory.build("t", [_turn({"content": "ok"}), _turn(None, StepStatus.ERROR)])
    assert run.final_answer == "ok"
