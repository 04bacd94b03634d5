"""A model call whose span records the SDK's request and response themselves (as MLflow, LangSmith
and plain ``@traced`` wrappers do) comes in with its messages, model, tools and parameters, in the
one message shape, whichever API the request was for."""

from __future__ import annotations

from pathlib import Path

from anthropic.types import Message as AnthropicMessage
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from otel_replay.importers.otlp_json import read_otlp_json
from otel_replay.model import StepKind
from tests.sdk import Recorder, dumps, encodings

TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
}


def _llm_step(tmp_path: Path, request: dict[str, object], response: dict[str, object]):  # type: ignore[no-untyped-def]
    recorder = Recorder()
    with recorder.span("run", {"agent_replay.outcome": 1.0}):
        with recorder.span(
            "call",
            {
                "openinference.span.kind": "LLM",
                "input.value": dumps(request),
                "input.mime_type": "application/json",
                "output.value": dumps(response),
                "output.mime_type": "application/json",
            },
        ):
            pass
    (run,) = read_otlp_json(encodings(recorder.spans(), tmp_path)["otlp-jsonl"])
    (step,) = run.steps
    assert step.kind is StepKind.LLM
    return step


def test_a_chat_completions_request_and_response(tmp_path: Path) -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "lookup_order",
                                    "arguments": '{"order_id":"A"}',
                                },
                            }
                        ],
                    },
                }
            ],
        }
    )
    request = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "where is A?"}],
        "tools": [TOOL],
        "temperature": 0.2,
        "stream": False,
    }
    step = _llm_step(tmp_path, request, completion.model_dump(mode="json"))
    assert step.name == "gpt-4o"
    assert step.inputs["messages"] == [{"role": "user", "content": "where is A?"}]
    assert step.inputs["tools"][0]["name"] == "lookup_order"
    assert step.inputs["parameters"] == {"temperature": 0.2}
    assert step.output["tool_calls"] == [
        {"id": "call_1", "name": "lookup_order", "arguments": {"order_id": "A"}}
    ]


def test_an_anthropic_request_keeps_its_system_and_reads_its_reply(tmp_path: Path) -> None:
    reply = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {"type": "text", "text": "Looking it up."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "lookup_order",
                    "input": {"order_id": "A"},
                },
            ],
        }
    )
    request = {
        "model": "claude-sonnet-4-5",
        "system": "You are a support agent.",
        "messages": [{"role": "user", "content": "where is A?"}],
        "max_tokens": 512,
    }
    step = _llm_step(tmp_path, request, reply.model_dump(mode="json"))
    assert [m["role"] for m in step.inputs["messages"]] == ["system", "user"]
    assert step.inputs["parameters"] == {"max_tokens": 512}
    assert step.output["content"] == "Looking it up."
    assert step.output["tool_calls"][0]["arguments"] == {"order_id": "A"}


def test_a_responses_api_request_and_response(tmp_path: Path) -> None:
    response = Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "gpt-4.1",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_9",
                    "name": "lookup_order",
                    "arguments": '{"order_id":"A"}',
                    "status": "completed",
                }
            ],
        }
    )
    request = {"model": "gpt-4.1", "instructions": "Be brief.", "input": "where is A?"}
    step = _llm_step(tmp_path, request, response.model_dump(mode="json"))
    assert step.inputs["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "where is A?"},
    ]
    assert step.output["tool_calls"][0]["id"] == "call_9"
