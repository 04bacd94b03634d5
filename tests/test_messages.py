"""`assistant_message` and `conversation` read what any producer wrote and never raise
(hypothesis): every shape they know, with arbitrary values where the SDKs put theirs, gives the
store's message shape (or ``None``, or no conversation).
What real SDKs return is read in `tests/replay/test_instrument.py` (all 18 ways the test agents call
a model) and `tests/replay/test_openai_example.py`."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.messages import assistant_message, conversation

leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
kinds = st.sampled_from(["message", "function_call", "text", "tool_use", "output_text", "refusal"])
parts = st.fixed_dictionaries(
    {"type": kinds},
    optional={"text": values, "refusal": values, "name": values, "arguments": values,
              "input": values, "id": values, "call_id": values, "content": values},
)  # fmt: skip
calls = st.fixed_dictionaries(
    {"id": values},
    optional={"function": st.fixed_dictionaries({}, optional={"name": values, "arguments": values}),
              "name": values, "arguments": values},
)  # fmt: skip
chat_message = st.fixed_dictionaries(
    {"role": st.just("assistant") | values},
    optional={"content": values | st.lists(parts, max_size=3), "tool_calls": values | st.lists(calls, max_size=3)},
)  # fmt: skip
produced = st.one_of(
    values,
    chat_message,
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({}, optional={"message": chat_message | values}), max_size=2)}),
    st.fixed_dictionaries({"object": st.just("response"), "output": st.lists(parts | values, max_size=3)}),
    st.fixed_dictionaries({"type": st.just("message"), "role": values, "content": st.lists(parts | values, max_size=3)}),
    st.lists(chat_message, max_size=2),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(produced)
def test_anything_a_producer_wrote_reads_as_a_message_or_none(output: Any) -> None:
    reply = assistant_message(output)
    assert reply is None or isinstance(reply, dict)
    if reply is not None and reply is not output and not isinstance(output, list):
        assert reply["role"] == "assistant"
        assert "content" in reply
        for call in reply.get("tool_calls") or []:
            assert set(call) == {"id", "name", "arguments"}


def test_a_message_in_the_store_shape_is_returned_as_it_is() -> None:
    stored = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "name": "f", "arguments": {}}],
    }
    assert assistant_message(stored) is stored
    assert assistant_message([stored]) is stored
    assert assistant_message("just text") is None and assistant_message({"rows": 3}) is None


def test_wire_arguments_are_read_as_json_and_kept_as_text_when_they_are_not() -> None:
    wired = {
        "role": "assistant",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{not json"}},
            {"id": "c", "type": "function", "function": {"name": "h", "arguments": ""}},
        ],
    }
    assert assistant_message(wired) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "name": "f", "arguments": {"x": 1}},
            {"id": "b", "name": "g", "arguments": "{not json"},
            {"id": "c", "name": "h", "arguments": {}},
        ],
    }


blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "image"])},
    optional={"text": values, "id": values, "name": values, "input": values,
              "tool_use_id": values, "content": values | st.lists(parts, max_size=2)},
)  # fmt: skip
turns = st.one_of(
    values,
    chat_message,
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]) | values, "content": st.lists(blocks | values, max_size=3)}),
)  # fmt: skip
items = st.one_of(
    values,
    parts,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function_call", "function_call_output", "message", "reasoning"])},
        optional={"role": values, "content": values | st.lists(parts, max_size=2), "call_id": values,
                  "name": values, "arguments": values, "output": values},
    ),
)  # fmt: skip
call_inputs = st.fixed_dictionaries(
    {},
    optional={"messages": st.lists(turns, max_size=4) | values, "input": st.lists(items, max_size=4) | values,
              "system": values | st.lists(blocks, max_size=2), "instructions": values,
              "parameters": st.dictionaries(st.sampled_from(["input", "system", "instructions", "x"]), values | st.lists(items, max_size=3))},
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(call_inputs)
def test_any_inputs_read_as_a_conversation_of_messages(inputs: dict[str, Any]) -> None:
    said = conversation(inputs)
    assert isinstance(said, list) and all(isinstance(m, dict) for m in said)
    assert said == [] or any(m.get("role") != "system" for m in said)
    results = [m.get("content") for m in said if m.get("role") == "tool"]
    assert all(c is None or isinstance(c, str) for c in results)  # a result is text (or not kept)
    assert conversation(inputs) == said  # nothing read is changed in place


def test_a_responses_input_and_an_anthropic_turn_read_as_chat_messages() -> None:
    responses = {
        "parameters": {
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Where is A-1?"}]},
                {"type": "function_call", "call_id": "c1", "name": "find", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "track", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "found"},
                {"type": "function_call_output", "call_id": "c2", "output": {"late": True}},
            ],
        }
    }
    assert conversation(responses) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is A-1?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "name": "find", "arguments": {}},
                {"id": "c2", "name": "track", "arguments": {}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "found"},
        {"role": "tool", "tool_call_id": "c2", "name": "track", "content": '{"late":true}'},
    ]
    anthropic = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "find", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "found"}, {"type": "text", "text": "and?"}]},
        ],
    }  # fmt: skip
    assert conversation(anthropic) == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t", "name": "find", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "t", "name": "find", "content": "found"},
        {"role": "user", "content": "and?"},
    ]  # fmt: skip
