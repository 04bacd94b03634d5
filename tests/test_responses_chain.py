"""A Responses API run whose calls continue each other (``previous_response_id``): each call sends
only what is new, the server keeps the rest. The conversation of a call is read through the chain
(the call that made the response it continues, that response's reply, then its own input), so a
turn is asked again with all of it; a call whose chain leads to a response the run does not hold
is one that cannot be asked again, and the replayability verdict says so."""

from __future__ import annotations

from typing import Any

from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replayable import ReplayabilityVerdict, replayability
from otel_replay.resamplers._openai import rebuild_messages, response_items
from otel_replay.transcript import chained

INSTRUCTIONS = "You are a support agent."
USER = {"role": "user", "content": "Where is order A-1001?"}


def _response(response_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": response_id, "object": "response", "model": "m", "output": output}


def _run() -> Trajectory:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
            "arguments": '{"order_id": "A-1001"}'}  # fmt: skip
    answer = {"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "It has shipped."}]}  # fmt: skip
    output = {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"status": "shipped"}',
    }
    return Trajectory.build(
        "chained",
        [
            Step(
                StepKind.LLM,
                "m",
                {"model": "m", "parameters": {"input": [USER], "instructions": INSTRUCTIONS}},
                _response("resp_1", [call]),
            ),
            Step(
                StepKind.TOOL,
                "lookup",
                {"arguments": {"order_id": "A-1001"}, "tool_call_id": "call_1"},
                {"status": "shipped"},
            ),
            Step(
                StepKind.LLM,
                "m",
                {
                    "model": "m",
                    "parameters": {
                        "input": [output],
                        "instructions": INSTRUCTIONS,
                        "previous_response_id": "resp_1",
                    },
                },
                _response("resp_2", [answer]),
            ),
        ],
    )


def test_a_call_that_continues_a_response_has_the_whole_conversation() -> None:
    run = _run()
    said = chained(run.steps[2], run.steps[:2])
    assert said is not None
    assert [m["role"] for m in said] == ["system", "user", "assistant", "tool"]  # said once each
    assert said[2]["tool_calls"][0]["name"] == "lookup"
    assert said[3]["tool_call_id"] == "call_1"
    # asked again, the turn is sent all of it (no previous response the server may not hold)
    instructions, items = response_items(rebuild_messages(run.steps[2], list(run.steps[:2])))
    assert instructions == INSTRUCTIONS
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    assert replayability(run).verdict is ReplayabilityVerdict.REPLAYABLE


def test_a_chain_to_a_response_the_run_does_not_hold_cannot_be_asked_again() -> None:
    run = _run()
    cut = Trajectory.build("cut", list(run.steps[1:]))  # the first call is not in the record
    assert chained(cut.steps[1], cut.steps[:1]) is None
    found = replayability(cut)
    assert found.verdict is ReplayabilityVerdict.PARTIAL
    assert any("continues response resp_1" in r.detail for r in found.reasons)
