"""`assistant_message` reads what any producer wrote and never raises (hypothesis): every shape it
knows, with arbitrary values where the SDKs put theirs, gives the store's message shape or ``None``.
What real SDKs return is read in `tests/replay/test_instrument.py` (all 18 ways the test agents call
a model) and `tests/replay/test_openai_example.py`."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.messages import assistant_message

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
        assert reply["role"] == "assistant" or output.get("type") == "message"
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
