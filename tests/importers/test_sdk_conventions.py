"""Real OpenTelemetry SDK spans → every encoding → our importers → the exact steps a person expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode

from otel_replay import StepKind, StepStatus, Trajectory, read_path
from tests.sdk import Recorder, dumps, encodings

ENCODINGS = ["otlp-jsonl", "otlp-json-pretty", "generic-json-printer", "proto-body", "proto-stream"]


def _openinference_run() -> Recorder:
    rec = Recorder()
    with rec.span(
        "investigate", {"openinference.span.kind": "AGENT", "input.value": "why?"}
    ) as root:
        with rec.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.invocation_parameters": dumps({"temperature": 0.2}),
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "You investigate incidents.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "checkout is failing",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "list_deploys",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": dumps(
                    {"service": "checkout"}
                ),
                "input.value": dumps({"messages": "raw request, ignored"}),
                "input.mime_type": "application/json",
            },
        ):
            pass
        with rec.span(
            "list_deploys",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "list_deploys",
                "tool.id": "call_1",
                "input.value": dumps({"service": "checkout"}),
                "input.mime_type": "application/json",
            },
            error=TimeoutError("deploy API timed out"),
        ):
            # plumbing inside a tool is folded into the tool step, never a step of its own
            with rec.span("HTTP GET", {"http.method": "GET"}):
                pass
        with rec.span(
            "search_logs",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "search_logs",
                "input.value": dumps({"query": "error"}),
                "input.mime_type": "application/json",
                "output.value": "no matching lines",
                "output.mime_type": "text/plain",
            },
        ):
            pass
        with rec.span(
            "retrieve",
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": "runbook for checkout",
                "retrieval.documents.0.document.id": "rb-1",
                "retrieval.documents.0.document.content": "restart the pods",
                "retrieval.documents.0.document.score": 0.9,
            },
        ):
            pass
        with rec.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "checkout is failing",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "The database is at fault.",
            },
        ):
            pass
        root.set_attribute("agent_replay.outcome", 0.0)
    return rec


def _only(trajectories: list[Trajectory]) -> Trajectory:
    assert len(trajectories) == 1
    return trajectories[0]


@pytest.fixture(scope="module")
def openinference_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return encodings(_openinference_run().spans(), tmp_path_factory.mktemp("oi"))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_openinference_steps(openinference_files: dict[str, Path], encoding: str) -> None:
    run = _only(list(read_path(openinference_files[encoding])))
    assert run.outcome == 0.0
    assert [(s.kind, s.name, s.status) for s in run.steps] == [
        (StepKind.LLM, "gpt-4o", StepStatus.OK),
        (StepKind.TOOL, "list_deploys", StepStatus.ERROR),
        (StepKind.TOOL, "search_logs", StepStatus.OK),
        (StepKind.RETRIEVER, "retrieve", StepStatus.OK),
        (StepKind.LLM, "gpt-4o", StepStatus.OK),
    ]
    first, tool, logs, retrieve, last = run.steps
    assert first.inputs == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You investigate incidents."},
            {"role": "user", "content": "checkout is failing"},
        ],
        "parameters": {"temperature": 0.2},
    }
    assert first.output == {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_1", "name": "list_deploys", "arguments": {"service": "checkout"}}
        ],
    }
    assert tool.inputs == {"arguments": {"service": "checkout"}, "tool_call_id": "call_1"}
    assert tool.output is None
    assert tool.error == "deploy API timed out"
    assert logs.inputs == {"arguments": {"query": "error"}}
    assert logs.output == "no matching lines"  # text/plain stays a string
    assert retrieve.inputs == {"input": "runbook for checkout"}
    assert retrieve.output == [{"id": "rb-1", "content": "restart the pods", "score": 0.9}]
    assert last.output == {"role": "assistant", "content": "The database is at fault."}
    assert run.metadata["service"] == "test-agent"
    assert run.metadata["root_span"] == "investigate"
    roles = {s.name: s.role for s in run.spans}
    assert roles["investigate"] == "agent" and roles["HTTP GET"] == "span"


def test_every_encoding_gives_the_same_run(openinference_files: dict[str, Path]) -> None:
    runs = {name: _only(list(read_path(path))) for name, path in openinference_files.items()}
    hashes = {name: run.final_hash for name, run in runs.items()}
    assert len(set(hashes.values())) == 1, hashes
    ids = {run.id for run in runs.values()}
    assert len(ids) == 1 and len(ids.pop()) == 32  # hex trace id, also from base64 input


def _genai_run(rec: Recorder, *, deprecated: bool) -> None:
    with rec.span("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent"}) as root:
        chat: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.request.temperature": 0.7,
        }
        if deprecated:  # OpenLLMetry ≤ 0.4: indexed prompt/completion attributes
            chat.update(
                {
                    "gen_ai.prompt.0.role": "user",
                    "gen_ai.prompt.0.content": "Where is order A-1?",
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.finish_reason": "tool_calls",
                    "gen_ai.completion.0.tool_calls.0.id": "c1",
                    "gen_ai.completion.0.tool_calls.0.name": "lookup_order",
                    "gen_ai.completion.0.tool_calls.0.arguments": dumps({"order_id": "A-1"}),
                }
            )
        else:
            chat.update(
                {
                    "gen_ai.system_instructions": dumps([{"type": "text", "content": "Be brief."}]),
                    "gen_ai.input.messages": dumps(
                        [
                            {
                                "role": "user",
                                "parts": [{"type": "text", "content": "Where is order A-1?"}],
                            }
                        ]
                    ),
                    "gen_ai.output.messages": dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {
                                        "type": "tool_call",
                                        "id": "c1",
                                        "name": "lookup_order",
                                        "arguments": {"order_id": "A-1"},
                                    }
                                ],
                                "finish_reason": "tool_calls",
                            }
                        ]
                    ),
                }
            )
        with rec.span("chat gpt-4o-mini", chat):
            pass
        with rec.span(
            "execute_tool lookup_order",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.arguments": dumps({"order_id": "A-1"}),
                "gen_ai.tool.call.result": dumps({"status": "shipped"}),
            },
        ):
            pass
        root.set_status(Status(StatusCode.ERROR, "agent gave up"))


@pytest.mark.parametrize("deprecated", [False, True], ids=["genai-current", "genai-indexed"])
@pytest.mark.parametrize("encoding", ["otlp-jsonl", "proto-stream", "generic-json-printer"])
def test_genai_steps(tmp_path: Path, deprecated: bool, encoding: str) -> None:
    rec = Recorder()
    _genai_run(rec, deprecated=deprecated)
    run = _only(list(read_path(encodings(rec.spans(), tmp_path)[encoding])))
    assert run.outcome == 0.0  # no outcome attribute; the root's ERROR status means failure
    llm, tool = run.steps
    assert (llm.kind, llm.name, tool.kind, tool.name) == (
        StepKind.LLM,
        "gpt-4o-mini",
        StepKind.TOOL,
        "lookup_order",
    )
    expected_messages = [{"role": "user", "content": "Where is order A-1?"}]
    if not deprecated:
        expected_messages.insert(0, {"role": "system", "content": "Be brief."})
    assert llm.inputs == {
        "model": "gpt-4o-mini",
        "messages": expected_messages,
        "parameters": {"temperature": 0.7},
    }
    assert llm.output == {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "name": "lookup_order", "arguments": {"order_id": "A-1"}}],
        "finish_reason": "tool_calls",
    }
    assert tool.inputs == {"arguments": {"order_id": "A-1"}, "tool_call_id": "c1"}
    assert tool.output == {"status": "shipped"}


def test_dialects_on_one_span_prefer_the_richer(tmp_path: Path) -> None:
    """LangSmith writes gen_ai.operation.name=chain on LLM runs; its own kind wins. Traceloop tools
    carry their payload in traceloop.entity.*. OpenLIT puts content in span events."""
    rec = Recorder()
    with rec.span("RunnableSequence.workflow", {"traceloop.span.kind": "workflow"}):
        with rec.span(
            "ChatOpenAI",
            {
                "langsmith.span.kind": "llm",
                "gen_ai.operation.name": "chain",
                "langsmith.metadata.ls_model_name": "gpt-4o",
                "gen_ai.prompt": dumps(
                    {
                        "messages": [
                            [
                                {
                                    "lc": 1,
                                    "type": "constructor",
                                    "id": ["langchain", "schema", "messages", "HumanMessage"],
                                    "kwargs": {"content": "hi"},
                                }
                            ]
                        ]
                    }
                ),
            },
        ):
            pass
        with rec.span(
            "get_weather.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_weather",
                "traceloop.entity.input": dumps({"city": "Paris"}),
                "traceloop.entity.output": dumps(dumps({"sky": "rainy"})),  # double-encoded
            },
        ):
            pass
        with rec.span(
            "openai.chat", {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4"}
        ) as s:
            s.add_event(
                "gen_ai.content.prompt",
                {"gen_ai.prompt": dumps([{"role": "user", "content": "q"}])},
            )
            s.add_event(
                "gen_ai.content.completion",
                {"gen_ai.completion": dumps([{"role": "assistant", "content": "a"}])},
            )
    run = _only(list(read_path(encodings(rec.spans(), tmp_path)["otlp-jsonl"])))
    langsmith, traceloop, openlit = run.steps
    assert (langsmith.kind, langsmith.name) == (StepKind.LLM, "gpt-4o")
    assert langsmith.inputs["messages"] == [{"role": "user", "content": "hi"}]
    assert (traceloop.kind, traceloop.name) == (StepKind.TOOL, "get_weather")
    assert traceloop.inputs == {"arguments": {"city": "Paris"}}
    assert traceloop.output == {"sky": "rainy"}
    assert openlit.inputs["messages"] == [{"role": "user", "content": "q"}]
    assert openlit.output == {"role": "assistant", "content": "a"}
    assert run.outcome is None


def test_plain_service_trace_yields_its_leaves(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("GET /checkout"):
        with rec.span("SELECT orders", {"db.system": "postgresql"}):
            pass
        with rec.span("POST /payments", {"http.method": "POST"}):
            pass
    run = _only(list(read_path(encodings(rec.spans(), tmp_path)["proto-body"])))
    assert [(s.kind, s.name) for s in run.steps] == [
        (StepKind.OTHER, "SELECT orders"),
        (StepKind.OTHER, "POST /payments"),
    ]
    assert run.steps[0].inputs == {"db.system": "postgresql"}


def test_agent_used_as_a_tool_is_structure(tmp_path: Path) -> None:
    """A recognised operation that contains another is not a step; the innermost ones are."""
    rec = Recorder()
    with rec.span("root", {"openinference.span.kind": "AGENT"}):
        with rec.span("research", {"openinference.span.kind": "TOOL", "tool.name": "research"}):
            with rec.span("inner", {"openinference.span.kind": "LLM", "llm.model_name": "m"}):
                pass
    run = _only(list(read_path(encodings(rec.spans(), tmp_path)["otlp-jsonl"])))
    assert [(s.kind, s.name) for s in run.steps] == [(StepKind.LLM, "m")]


def test_python_console_exporter_dump(tmp_path: Path) -> None:
    """Pretty objects back to back, 0x-hex ids, ISO times, and an Infinity literal: still a run."""
    rec = Recorder()
    with rec.span("agent", {"openinference.span.kind": "AGENT", "agent_replay.outcome": 1.0}):
        with rec.span(
            "lookup",
            {"openinference.span.kind": "TOOL", "tool.name": "lookup", "budget": float("inf")},
        ):
            pass
    path = tmp_path / "console.txt"
    path.write_text("".join(span.to_json() + "\n" for span in rec.spans()))
    assert "Infinity" in path.read_text()
    run = _only(list(read_path(path)))
    assert run.outcome == 1.0
    assert run.metadata["format"] == "span-dump"
    (step,) = run.steps
    assert (step.kind, step.name) == (StepKind.TOOL, "lookup")
    (recorded,) = [s for s in rec.spans() if s.name == "lookup"]
    assert recorded.start_time is not None
    assert step.start_time_unix_nano == recorded.start_time // 1000 * 1000  # ISO: µs precision


def test_phoenix_span_json_with_nested_attributes(tmp_path: Path) -> None:
    span = {
        "name": "ChatCompletion",
        "context": {
            "trace_id": "8d4e1f6a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
            "span_id": "0x0123456789abcdef",
        },
        "span_kind": "LLM",
        "parent_id": None,
        "start_time": "2026-01-01T00:00:00+00:00",
        "end_time": "2026-01-01T00:00:01+00:00",
        "status_code": "OK",
        "attributes": {
            "llm": {
                "model_name": "gpt-4o",
                "input_messages": [{"message": {"role": "user", "content": "hi"}}],
            }
        },
        "events": [],
    }
    path = tmp_path / "phoenix.json"
    path.write_text(dumps([span]))
    run = _only(list(read_path(path)))
    (step,) = run.steps
    assert (step.kind, step.name) == (StepKind.LLM, "gpt-4o")
    assert step.inputs["messages"] == [{"role": "user", "content": "hi"}]
    assert run.id == "8d4e1f6a2b3c4d5e8f90a1b2c3d4e5f6"
