"""One tool-result message, whoever builds it: `otel_replay.messages.tool_message` and
`otel_replay.transcript`, which builds a conversation from steps with it."""

from __future__ import annotations

from otel_replay.messages import conversation, message_text, shaped_results, tool_message
from otel_replay.model import Step, StepKind, StepStatus
from otel_replay.transcript import (
    calls_turn,
    compared_output,
    model_turn,
    rebuilt,
    said,
    tool_result,
)

OPENING = [{"role": "system", "content": "Investigate."}, {"role": "user", "content": "Why?"}]


def _tool(name: str, output: object, call_id: str | None = None, error: str | None = None) -> Step:
    inputs: dict[str, object] = {"arguments": {"service": "checkout"}}
    if call_id is not None:
        inputs["tool_call_id"] = call_id
    status = StepStatus.ERROR if error is not None else StepStatus.OK
    return Step(StepKind.TOOL, name, inputs, output, status, error)


def test_a_string_result_is_sent_as_it_is() -> None:
    assert tool_message("rainy, 57°F", "weather", "c1") == {
        "role": "tool",
        "content": "rainy, 57°F",
        "tool_call_id": "c1",
        "name": "weather",
    }
    assert tool_message('{"a": 1}')["content"] == '{"a": 1}'  # JSON text too: never re-encoded


def test_any_other_result_is_sent_as_its_compact_json_text() -> None:
    result = {"service": "checkout", "points": [{"t": "14:07", "value": 6.8}], "note": "é"}
    message = tool_message(result, "query_metrics", "c1")
    assert (
        message["content"]
        == '{"service":"checkout","points":[{"t":"14:07","value":6.8}],"note":"é"}'
    )
    assert tool_message([], "list_deploys")["content"] == "[]"
    assert tool_message(None, "noop")["content"] == "null"
    assert message_text(3) == "3" and message_text("3") == "3"


def test_a_failed_tool_step_says_its_error() -> None:
    failed = _tool("list_deploys", None, "c2", error="deploy API timed out")
    assert tool_result(failed) == {
        "role": "tool",
        "content": '{"error":"deploy API timed out"}',
        "tool_call_id": "c2",
        "name": "list_deploys",
    }


def test_a_call_without_an_id_gives_a_result_without_one() -> None:
    assert tool_message([], "list_deploys", None) == {
        "role": "tool",
        "content": "[]",
        "name": "list_deploys",
    }
    assert "tool_call_id" not in tool_result(_tool("list_deploys", []))
    assert tool_result(_tool("list_deploys", []), "c9")["tool_call_id"] == "c9"  # the call's id


def test_steps_say_their_turns_and_results() -> None:
    reply = {"role": "assistant", "content": "Done: v841.", "finish_reason": "stop"}
    assert said(Step(StepKind.LLM, "m", {}, reply)) is reply  # a reply in the store's shape
    assert model_turn({"verdict": "v841"}) == {"role": "assistant", "content": '{"verdict":"v841"}'}
    assert said(_tool("list_deploys", [{"version": "v841"}], "c1")) == tool_message(
        [{"version": "v841"}], "list_deploys", "c1"
    )
    with_id, without = _tool("query_metrics", {}, "c1"), _tool("list_deploys", [])
    assert calls_turn([with_id, without]) == {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "name": "query_metrics", "arguments": {"service": "checkout"}},
            {"name": "list_deploys", "arguments": {"service": "checkout"}},
        ],
    }


def test_a_conversation_is_rebuilt_from_steps() -> None:
    calls = [
        {"id": "c1", "name": "query_metrics", "arguments": {}},
        {"name": "list_deploys", "arguments": {}},  # a call without an id
    ]
    turn = {"role": "assistant", "content": None, "tool_calls": calls}
    steps = [
        Step(StepKind.LLM, "m", {"messages": OPENING}, turn),
        _tool("list_deploys", None, error="boom"),  # answers the call of its name, not the first
        Step(StepKind.RETRIEVER, "docs", {"input": "q"}, ["a doc"]),  # says nothing
        _tool("query_metrics", {"points": []}),
        Step(StepKind.LLM, "m", {}, None),  # a turn that did not answer says nothing
    ]
    assert rebuilt(OPENING, steps) == [
        *OPENING,
        turn,
        {"role": "tool", "content": '{"error":"boom"}', "name": "list_deploys"},
        {"role": "tool", "content": '{"points":[]}', "tool_call_id": "c1", "name": "query_metrics"},
    ]


def test_a_recorded_result_reads_in_the_one_shape() -> None:
    """What an instrumentation recorded (a GenAI result part's JSON value, no name) reads as the
    text the model was sent, named after the call it answers; a result already in that shape, or
    one whose content was not kept, is left as it is."""
    call = {"id": "c1", "name": "query_metrics", "arguments": {}}
    turn = {"role": "assistant", "tool_calls": [call]}
    shaped = {"role": "tool", "content": "[]", "tool_call_id": "c0", "name": "list_deploys"}
    unkept = {"role": "tool", "tool_call_id": "c1"}
    recorded = [
        *OPENING,
        shaped,
        turn,
        {"role": "tool", "content": {"a": [1]}, "tool_call_id": "c1"},
    ]
    out = shaped_results([*recorded, unkept])
    assert out[-2] == {
        "role": "tool",
        "content": '{"a":[1]}',
        "tool_call_id": "c1",
        "name": "query_metrics",
    }
    assert out[2] is shaped and out[3] is turn
    assert out[-1] == {**unkept, "name": "query_metrics"}
    assert recorded[-1]["content"] == {"a": [1]}  # nothing changed in place
    assert conversation({"messages": recorded})[-1] == out[-2]


def test_a_model_turn_is_compared_as_its_message_anything_else_as_it_is() -> None:
    completion = {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "v841"}}],
        "usage": {"total_tokens": 9},
    }
    message = {"role": "assistant", "content": "v841"}
    assert compared_output(StepKind.LLM, completion) == message
    assert compared_output(StepKind.LLM, message) is message
    for bare in ("v841", ["v841", "v840"], {"answer": "v841"}):  # no reply: as it is
        assert compared_output(StepKind.LLM, bare) is bare
    assert compared_output(StepKind.TOOL, completion) is completion  # a tool's result is no reply
