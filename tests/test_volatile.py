"""Volatile fields are correlation data, not content (issue 23, part 1): a model server's response
ids, tool-call ids, ``created`` and ``system_fingerprint`` are recorded and shown, never compared.
Calls match the record, and runs compare, up to a consistent renaming of their ids; the Merkle hash
still names the stored bytes, and `Trajectory.identity` names the content beside it."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from examples.fake_model_server import FakeModelServer
from otel_replay.hashing import content_form, op_key, stored_key
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import diff, record, replay, uninstrument
from tests.replay.test_instrument import FAKE, QUESTION, support_agent

# --- one call: its op_key ------------------------------------------------------------------------


def _chat(call_id: str, response_id: str = "chatcmpl-1") -> tuple[dict[str, Any], dict[str, Any]]:
    """A chat-completions turn quoting tool call ``call_id``, and the response it got."""
    inputs = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "where is A-1001?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"id": "A-1001"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": '{"status": "shipped"}'},
        ],
    }
    output = {
        "id": response_id,
        "created": 1_767_225_600,
        "system_fingerprint": "fp_1",
        "choices": [{"message": {"role": "assistant", "content": "It shipped."}}],
    }
    return inputs, output


def _claude(tool_use_id: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": tool_use_id, "name": "lookup", "input": {"id": "A-1001"}}
    result = {"type": "tool_result", "tool_use_id": tool_use_id, "content": "shipped"}
    return {
        "model": "claude",
        "messages": [
            {"role": "user", "content": "where is A-1001?"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
    }


def _responses(call_id: str, previous: str) -> dict[str, Any]:
    items = [
        {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "lookup",
         "arguments": '{"id": "A-1001"}'},
        {"type": "function_call_output", "call_id": call_id, "output": "shipped"},
    ]  # fmt: skip
    return {"model": "m", "parameters": {"input": items, "previous_response_id": previous}}


def test_a_model_call_matches_whatever_ids_the_server_gave() -> None:
    assert op_key("llm", "m", _chat("call_AAA")[0]) == op_key("llm", "m", _chat("call_BBB")[0])
    assert op_key("llm", "c", _claude("toolu_1")) == op_key("llm", "c", _claude("toolu_2"))
    assert op_key("llm", "m", _responses("call_1", "resp_1")) == op_key(
        "llm", "m", _responses("call_2", "resp_2")
    )
    # the stored bytes still differ: the Merkle link is made of them
    assert stored_key("llm", "m", _chat("call_AAA")[0]) != stored_key(
        "llm", "m", _chat("call_BBB")[0]
    )


def test_a_conversation_quoting_another_call_is_another_call() -> None:
    inputs, _ = _chat("call_AAA")
    crossed = copy.deepcopy(inputs)
    crossed["messages"][2]["tool_call_id"] = "call_OTHER"  # the result answers some other call
    assert op_key("llm", "m", crossed) != op_key("llm", "m", inputs)


def test_tool_arguments_and_content_are_never_taken_for_ids() -> None:
    for kind in ("tool", "llm"):
        one = {"arguments": {"id": "A-1001"}}
        other = {"arguments": {"id": "B-2002"}}
        assert op_key(kind, "lookup", one) != op_key(kind, "lookup", other)
    a, b = _claude("toolu_1"), _claude("toolu_1")
    b["messages"][1]["content"][0]["input"] = {"id": "B-2002"}  # a tool_use block's arguments
    assert op_key("llm", "c", a) != op_key("llm", "c", b)
    # a user step's own "id" input is content: only model calls have volatile fields
    assert op_key("other", "fetch", {"id": "x"}) != op_key("other", "fetch", {"id": "y"})


def test_clocks_and_fingerprints_are_left_out_and_the_value_is_never_changed() -> None:
    _, output = _chat("call_1")
    kept = copy.deepcopy(output)
    assert content_form(output) == {"id": "#0", "choices": output["choices"]}
    assert output == kept
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert content_form(plain) is plain  # nothing volatile: the value itself, no copy


IDS = st.text(alphabet="abcdefghijklmnop0123456789_", min_size=1, max_size=12)


@given(st.lists(IDS, min_size=1, max_size=6, unique=True), st.data())
def test_any_consistent_renaming_keeps_the_op_key_and_a_swap_does_not(
    ids: list[str], data: st.DataObject
) -> None:
    """A conversation calling one tool per id, each answered: renamed by any one-to-one map it is
    the same call; with two answers' ids exchanged it is not."""

    def conversation(names: list[str], answers: list[str]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i, (asked, answered) in enumerate(zip(names, answers, strict=True)):
            call = {"id": asked, "name": "t", "arguments": {"n": i}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "content": str(i), "tool_call_id": answered})
        return {"model": "m", "messages": messages}

    renamed = data.draw(st.lists(IDS, min_size=len(ids), max_size=len(ids), unique=True))
    key = op_key("llm", "m", conversation(ids, ids))
    assert op_key("llm", "m", conversation(renamed, renamed)) == key
    if len(ids) >= 2:
        swapped = [ids[1], ids[0], *ids[2:]]
        assert op_key("llm", "m", conversation(ids, swapped)) != key


# --- whole runs: diff and identity ---------------------------------------------------------------


def _run(run_id: str, call_id: str, response_id: str, answer: str) -> Trajectory:
    inputs, output = _chat(call_id, response_id)
    asked = {"id": response_id, "choices": [{"message": {"role": "assistant", "content": None,
             "tool_calls": inputs["messages"][1]["tool_calls"]}}]}  # fmt: skip
    first = {"model": "m", "messages": inputs["messages"][:1]}
    output["choices"][0]["message"]["content"] = answer
    steps = [
        Step(StepKind.LLM, "m", first, asked),
        Step(StepKind.TOOL, "lookup", {"arguments": {"id": "A-1001"}, "tool_call_id": call_id},
             {"status": "shipped"}),
        Step(StepKind.LLM, "m", inputs, output),
    ]  # fmt: skip
    return Trajectory.build(run_id, steps)


def test_two_runs_differing_only_in_ids_are_identical_in_content() -> None:
    one = _run("one", "call_AAA", "chatcmpl-1", "It shipped.")
    two = _run("two", "call_BBB", "chatcmpl-9", "It shipped.")
    assert one.final_hash != two.final_hash  # the stored bytes differ
    assert one.identity == two.identity
    assert diff(one, two).identical
    later = _run("three", "call_CCC", "chatcmpl-5", "It is lost.")
    found = diff(one, later)
    assert (found.divergence, found.differences) == (2, ("output",))
    assert later.identity != one.identity


def test_runs_whose_ids_are_not_one_renaming_of_the_other_differ() -> None:
    one = _run("one", "call_AAA", "chatcmpl-1", "It shipped.")
    same_ids = _run("two", "call_AAA", "call_AAA", "It shipped.")  # response id = the call's id
    assert diff(one, same_ids).divergence == 0


# --- the real SDK against a server that makes fresh ids ------------------------------------------


def test_two_recordings_of_an_unmodified_agent_compare_identical_and_replay() -> None:
    """The real ``openai`` client against the fake server (fresh ids on every response): two
    recordings of the same conversation are the same content, one's record replays the other."""
    import otel_replay

    otel_replay.instrument("openai")
    server = FakeModelServer()
    try:
        arguments = {"question": QUESTION, "base_url": server.url}
        one = record(support_agent, arguments=arguments).trajectory
        two = record(support_agent, arguments=arguments).trajectory
    finally:
        server.stop()
    try:
        ids = [s.output["id"] for s in (one.steps[0], two.steps[0])]
        assert ids[0] != ids[1] and all(i.startswith("chatcmpl-") for i in ids)
        assert one.final_hash != two.final_hash and one.identity == two.identity
        assert diff(one, two).identical
        assert [s.op_key for s in one.steps] == [s.op_key for s in two.steps]
        again = replay(one, support_agent)
        assert again.identical and again.answer == FAKE.FINAL_ANSWER
    finally:
        uninstrument()
