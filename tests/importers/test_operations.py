"""Each rule of "one step per real operation", on spans made by the real OpenTelemetry SDK.

Every test builds the smallest trace that shows one shape, imports it, and asserts the step list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_replay import StepStatus, Trajectory, read_path
from tests.sdk import Recorder, dumps, encodings

OI = "openinference.span.kind"
ASK = [{"role": "user", "content": "Where is order A-1001?"}]


def _run(rec: Recorder, tmp_path: Path) -> Trajectory:
    (run,) = read_path(encodings(rec.spans(), tmp_path)["otlp-jsonl"])
    return run


def _steps(run: Trajectory) -> list[tuple[str, str]]:
    return [(s.kind.value, s.name) for s in run.steps]


def _messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattened message attributes."""
    attrs: dict[str, Any] = {}
    for i, message in enumerate(messages):
        base = f"{prefix}.{i}.message"
        attrs[f"{base}.role"] = message["role"]
        if "content" in message:
            attrs[f"{base}.content"] = message["content"]
        if "tool_call_id" in message:
            attrs[f"{base}.tool_call_id"] = message["tool_call_id"]
        for j, call in enumerate(message.get("tool_calls", [])):
            attrs[f"{base}.tool_calls.{j}.tool_call.id"] = call["id"]
            attrs[f"{base}.tool_calls.{j}.tool_call.function.name"] = call["name"]
            attrs[f"{base}.tool_calls.{j}.tool_call.function.arguments"] = dumps(call["arguments"])
    return attrs


def _llm(inputs: list[dict[str, Any]], output: dict[str, Any] | None) -> dict[str, Any]:
    attrs = {OI: "LLM", "llm.model_name": "m", **_messages("llm.input_messages", inputs)}
    if output is not None:
        attrs.update(_messages("llm.output_messages", [output]))
        attrs["llm.token_count.total"] = 10
    return attrs


CALL = {"id": "call_1", "name": "lookup_order", "arguments": {"order_id": "A-1001"}}
TURN = {"role": "assistant", "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'}
ANSWER = {"role": "assistant", "content": "It has shipped."}


def test_one_call_recorded_by_two_instrumentations_is_one_step(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span("ChatModel", _llm(ASK, ANSWER)):
            with rec.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}):
                pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m")]
    assert run.steps[0].inputs["messages"] == ASK  # read from the richer of the two spans


def test_a_tool_inside_a_tool_of_another_name_is_two_operations(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("research", {OI: "TOOL", "tool.name": "research"}):
        with rec.span("search", {OI: "TOOL", "tool.name": "search"}):
            pass
    assert _steps(_run(rec, tmp_path)) == [("tool", "search")]


def test_a_retrievals_embedding_is_part_of_it(tmp_path: Path) -> None:
    rec = Recorder()
    documents = {"retrieval.documents.0.document.content": "Refunds: ..."}
    with rec.span("retrieve", {OI: "RETRIEVER", "input.value": "refund policy", **documents}):
        with rec.span("embed", {OI: "EMBEDDING", "embedding.model_name": "e"}):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("retriever", "retrieve")]
    assert run.steps[0].output == [{"content": "Refunds: ..."}]


def test_an_embedding_straight_before_a_retrieval_is_its_query(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("pipeline", {OI: "CHAIN"}):
        text = {"embedding.embeddings.0.embedding.text": "refund policy"}
        with rec.span("embed", {OI: "EMBEDDING", **text}):
            pass
        with rec.span("retrieve", {OI: "RETRIEVER", "input.value": '{"query_embedding": [0.1]}'}):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("retriever", "retrieve")]
    assert run.steps[0].inputs["query"] == "refund policy"


def test_a_tools_retrieval_is_how_the_tool_worked(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("search_policies", {OI: "TOOL", "tool.name": "search_policies"}):
        with rec.span("retrieve", {OI: "RETRIEVER"}):
            pass
    assert _steps(_run(rec, tmp_path)) == [("tool", "search_policies")]


def test_a_span_that_prepares_a_model_call_is_not_a_call(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent step", {OI: "CHAIN"}):
        with rec.span("prepare", {OI: "LLM", "output.value": dumps(ASK)}):
            pass
        with rec.span("chat", _llm(ASK, ANSWER)):
            pass
    assert _steps(_run(rec, tmp_path)) == [("llm", "m")]


def test_a_model_call_that_kept_its_answer_as_text_is_a_call(tmp_path: Path) -> None:
    """A response shows wherever a vocabulary keeps one: LangSmith's ``gen_ai.completion`` text (a
    traced function returning a string, no token counts) is an answered call, never a span that
    only prepares the next one."""
    rec = Recorder()
    with rec.span("agent step", {"langsmith.span.kind": "chain"}):
        said = {"langsmith.span.kind": "llm", "gen_ai.prompt": dumps({"messages": ASK})}
        with rec.span("draft", {**said, "gen_ai.completion": "It has shipped."}):
            pass
        with rec.span("chat", _llm(ASK, ANSWER)):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "draft"), ("llm", "m")]
    assert run.steps[0].output == "It has shipped."


def test_a_failed_model_call_is_a_call(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent step", {OI: "CHAIN"}):
        with rec.span("chat", _llm(ASK, None), error=TimeoutError("model timed out")):
            pass
        with rec.span("chat", _llm(ASK, ANSWER)):
            pass
    assert _steps(_run(rec, tmp_path)) == [("llm", "m"), ("llm", "m")]


def test_tool_calls_only_the_conversation_shows_are_rebuilt(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span("chat", _llm(ASK, TURN)):
            pass
        with rec.span("chat", _llm([*ASK, TURN, RESULT], ANSWER)):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m"), ("tool", "lookup_order"), ("llm", "m")]
    tool = run.steps[1]
    assert tool.inputs == {"arguments": {"order_id": "A-1001"}, "tool_call_id": "call_1"}
    assert tool.output == {"status": "shipped"} and tool.span_id is None
    assert run.metadata["reconstructed_steps"] == [1]


def test_a_rebuilt_call_whose_result_reports_an_error_failed(tmp_path: Path) -> None:
    rec = Recorder()
    failure = dict(RESULT, content="Error: order service unavailable")
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span("chat", _llm(ASK, TURN)):
            pass
        with rec.span("chat", _llm([*ASK, TURN, failure], ANSWER)):
            pass
    tool = _run(rec, tmp_path).steps[1]
    assert (tool.status, tool.error) == (StepStatus.ERROR, "Error: order service unavailable")


def test_a_recorded_tool_step_is_paired_with_its_call_and_completed(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span("chat", _llm(ASK, TURN)):
            pass
        # the span kept the bare argument value and no call id; the conversation has both
        with rec.span(
            "lookup_order", {OI: "TOOL", "tool.name": "lookup_order", "input.value": "A-1001"}
        ):
            pass
        with rec.span("chat", _llm([*ASK, TURN, RESULT], ANSWER)):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m"), ("tool", "lookup_order"), ("llm", "m")]
    assert "reconstructed_steps" not in run.metadata
    tool = run.steps[1]
    assert tool.inputs == {"arguments": {"order_id": "A-1001"}, "tool_call_id": "call_1"}
    assert tool.output == {"status": "shipped"}


def test_an_earlier_sessions_turns_are_history_not_steps(tmp_path: Path) -> None:
    rec = Recorder()
    earlier = [{"role": "user", "content": "Hi"}, TURN, RESULT, ANSWER]
    with rec.span("chat", _llm([*earlier, *ASK], ANSWER)):
        pass
    assert _steps(_run(rec, tmp_path)) == [("llm", "m")]


def test_a_model_call_that_ran_the_whole_exchange_is_its_last_turn(tmp_path: Path) -> None:
    rec = Recorder()
    genai = {"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "g"}
    answered = {**genai, "gen_ai.response.finish_reasons": ("stop",)}
    with rec.span("generate_content g", answered):
        for name in ("lookup_order", "track_shipment"):
            rec.tick(100)  # a model call happens between the two tools
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
            with rec.span(f"execute_tool {name}", tool):
                pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [
        ("llm", "g"),
        ("tool", "lookup_order"),
        ("llm", "g"),
        ("tool", "track_shipment"),
        ("llm", "g"),
    ]
    assert run.metadata["reconstructed_steps"] == [0, 2]
    assert run.steps[0].output["tool_calls"][0]["name"] == "lookup_order"


def test_a_tool_span_named_after_the_method_is_named_after_the_tool(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span(
        "lookup_order.__call__", {OI: "TOOL", "input.value": '{"kwargs": {"order_id": "A"}}'}
    ):
        pass
    (step,) = _run(rec, tmp_path).steps
    assert (step.name, step.inputs["arguments"]) == ("lookup_order", {"order_id": "A"})


def test_an_openllmetry_retrieval_task_is_a_retrieval(tmp_path: Path) -> None:
    rec = Recorder()
    attrs = {
        "traceloop.span.kind": "task",
        "gen_ai.operation.name": "vector_db_retrieve",
        "traceloop.entity.input": dumps({"args": ["refund policy"], "kwargs": {}}),
        "traceloop.entity.output": dumps(["Refunds: ..."]),
    }
    with rec.span("search.task", attrs):
        pass
    (step,) = _run(rec, tmp_path).steps
    assert (step.kind.value, step.output) == ("retriever", ["Refunds: ..."])


def _side_by_side(rec: Recorder, first: dict[str, Any], second: dict[str, Any]) -> None:
    """Two spans under the current one that run at once without nesting (``second`` starts after
    ``first`` and ends before it)."""
    outer = rec.tracer.start_span("chat", attributes=first, start_time=rec.tick())
    inner = rec.tracer.start_span("chat.completions", attributes=second, start_time=rec.tick())
    inner.end(rec.tick())
    outer.end(rec.tick())


def test_one_call_recorded_by_two_spans_side_by_side_is_one_step(tmp_path: Path) -> None:
    rec = Recorder()
    with rec.span("agent", {OI: "AGENT"}):
        _side_by_side(rec, _llm(ASK, None), _llm(ASK, ANSWER))  # one kept no response
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m")]
    assert run.steps[0].output == ANSWER
    assert len({s.span_id for s in run.spans if s.role == "step"}) == 1


def test_two_calls_at_once_that_answered_differently_are_two_steps(tmp_path: Path) -> None:
    rec = Recorder()
    other = {"role": "assistant", "content": "It is on its way."}
    with rec.span("agent", {OI: "AGENT"}):
        _side_by_side(rec, _llm(ASK, ANSWER), _llm(ASK, other))  # a model sampled twice at once
    assert _steps(_run(rec, tmp_path)) == [("llm", "m"), ("llm", "m")]


def _tool_span(rec: Recorder) -> None:
    attrs = {OI: "TOOL", "tool.name": "lookup_order", "input.value": dumps(CALL["arguments"])}
    with rec.span("lookup_order", {**attrs, "output.value": RESULT["content"]}):
        pass


def test_a_model_call_whose_span_kept_no_output_is_the_turn_the_next_call_shows(
    tmp_path: Path,
) -> None:
    """Not a model call and a rebuilt turn beside it: the turn completes the span's step, and its
    tool step takes the call's id."""
    rec = Recorder()
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span(
            "chat", {OI: "LLM", "llm.model_name": "m", **_messages("llm.input_messages", ASK)}
        ):
            pass
        _tool_span(rec)
        with rec.span("chat", _llm([*ASK, TURN, RESULT], ANSWER)):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m"), ("tool", "lookup_order"), ("llm", "m")]
    assert "reconstructed_steps" not in run.metadata
    assert all(s.span_id for s in run.steps)
    (call,) = run.steps[0].output["tool_calls"]  # the turn the next call's input shows
    assert (call["id"], call["name"]) == ("call_1", "lookup_order")
    assert run.steps[1].inputs["tool_call_id"] == "call_1"


def test_a_turn_no_span_asked_for_is_rebuilt_beside_a_silent_call(tmp_path: Path) -> None:
    """A span without output whose request is not the one the turn answers (its input does not end
    where the turn begins) did not record that turn: the turn is rebuilt."""
    rec = Recorder()
    elsewhere = [{"role": "user", "content": "Summarise the ticket."}]
    with rec.span("agent", {OI: "AGENT"}):
        with rec.span("summary", {OI: "CHAIN"}):  # its own step of the agent: no preparation
            silent = {OI: "LLM", "llm.model_name": "m"}
            with rec.span("chat", {**silent, **_messages("llm.input_messages", elsewhere)}):
                pass
        _tool_span(rec)
        with rec.span("chat", _llm([*ASK, TURN, RESULT], ANSWER)):
            pass
    run = _run(rec, tmp_path)
    assert _steps(run) == [("llm", "m"), ("tool", "lookup_order"), ("llm", "m"), ("llm", "m")]
    assert run.metadata["reconstructed_steps"] == [2]
    assert run.steps[0].output is None
