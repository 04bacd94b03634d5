"""Replayability: each run's verdict and what its record lacks, computed from the record alone, kept
by the store, shown by ``import``, ``list``, ``show`` and the viewer, checked by ``lint`` on trace
files, and refused with its reasons by ``attribute``, ``replay`` and ``fork``.

The traces are made by the real OpenTelemetry SDK (`tests.sdk.Recorder`), truncation by its own
attribute length limit (``SpanLimits(max_attribute_length=N)``); the corpora are read in place.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import SpanLimits
from typer.testing import CliRunner

from otel_replay import (
    ReplayabilityGap,
    ReplayabilityVerdict,
    Step,
    StepKind,
    Store,
    Trajectory,
    read_path,
    replayability,
)
from otel_replay.cli import app
from otel_replay.importers._capture import CAPTURES
from otel_replay.replayable import MIN_CUT_LENGTH
from otel_replay.viewer._pages import run_page
from tests.cli_helpers import WIDE, invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES
from tests.importers.test_fuzz import otlp_documents
from tests.sdk import Recorder, dumps, encodings

FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
Gap = ReplayabilityGap

SYSTEM = "You are the on-call assistant. " * 8  # 248 characters
QUESTION = "Checkout has failed since 14:00 for every user in eu-west; find out why and say. " * 2


def _messages(*pairs: tuple[str, str]) -> str:
    return dumps(
        [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs]
    )


def _agent_trace(
    directory: Path,
    *,
    limit: int | None = None,
    messages: bool = True,
    model_output: bool = True,
    tool_arguments: bool = True,
    tool_result: bool = True,
) -> Path:
    """One agent run as the OTel GenAI conventions write it, by the real SDK: a model call that
    asks for a tool, the tool, and the model's answer. What the instrumentation leaves out is
    chosen by the flags; ``limit`` is the SDK's attribute length limit."""
    recorder = Recorder(limits=None if limit is None else SpanLimits(max_attribute_length=limit))
    call = {
        "type": "tool_call",
        "id": "call_1",
        "name": "search_logs",
        "arguments": {"q": "checkout"},
    }
    logs = "14:00:02 payment-gateway timeout after 30000 ms (upstream eu-west-2 unreachable) " * 3
    with recorder.span("invoke_agent desk", {"gen_ai.operation.name": "invoke_agent"}):
        first: dict[str, str] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
        if messages:
            first["gen_ai.input.messages"] = _messages(("system", SYSTEM), ("user", QUESTION))
        if model_output:
            first["gen_ai.output.messages"] = dumps([{"role": "assistant", "parts": [call]}])
        with recorder.span("chat gpt-4o", first):
            pass
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_logs",
            "gen_ai.tool.call.id": "call_1",
        }
        if tool_arguments:
            tool["gen_ai.tool.call.arguments"] = dumps({"q": "checkout"})
        if tool_result:
            tool["gen_ai.tool.call.result"] = logs
        with recorder.span("execute_tool search_logs", tool):
            pass
        last: dict[str, str] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
        answer = "The payment gateway in eu-west-2 is unreachable: every checkout times out. " * 2
        if messages:
            last["gen_ai.input.messages"] = _messages(("system", SYSTEM), ("user", QUESTION))
        if model_output:
            last["gen_ai.output.messages"] = _messages(("assistant", answer))
        with recorder.span("chat gpt-4o", last):
            pass
    return encodings(recorder.spans(), directory)["otlp-jsonl"]


def _openinference_trace(directory: Path, limit: int | None) -> Path:
    """The same run as OpenInference writes it (each message's content its own attribute), by the
    real SDK with ``limit`` as its attribute length limit."""
    recorder = Recorder(limits=None if limit is None else SpanLimits(max_attribute_length=limit))
    logs = "14:00:02 payment-gateway timeout after 30000 ms (upstream eu-west-2 unreachable) " * 3
    answer = "The payment gateway in eu-west-2 is unreachable: every checkout times out. " * 2
    history = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUESTION,
    }
    with recorder.span("agent", {"openinference.span.kind": "AGENT"}):
        with recorder.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                **history,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_logs",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": dumps(
                    {"q": "checkout"}
                ),
            },
        ):
            pass
        with recorder.span(
            "search_logs",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "search_logs",
                "input.value": dumps({"q": "checkout"}),
                "input.mime_type": "application/json",
                "output.value": logs,
            },
        ):
            pass
        with recorder.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                **history,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
            },
        ):
            pass
    return encodings(recorder.spans(), directory)["otlp-jsonl"]


def _one(path: Path) -> Trajectory:
    (run,) = read_path(path)
    return run


def _gaps(run: Trajectory) -> list[tuple[int | None, Gap]]:
    return [(r.step, r.gap) for r in replayability(run).reasons]


# --- the verdict, from the record alone -----------------------------------------------------------


def test_a_whole_record_is_replayable(tmp_path: Path) -> None:
    run = _one(_agent_trace(tmp_path))
    assert [s.kind for s in run.steps] == [StepKind.LLM, StepKind.TOOL, StepKind.LLM]
    assert replayability(run).verdict is ReplayabilityVerdict.REPLAYABLE
    assert replayability(run).reasons == ()


def test_the_bundled_samples_are_replayable() -> None:
    verdicts = {
        (path.name, run.id): replayability(run).verdict.value
        for path in sorted(SAMPLES.iterdir())
        for run in read_path(path)
    }
    assert len(verdicts) == 11
    assert set(verdicts.values()) == {"replayable"}


def test_a_model_call_without_its_input_messages_cannot_be_asked_again(tmp_path: Path) -> None:
    run = _one(_agent_trace(tmp_path, messages=False))
    verdict = replayability(run)
    assert verdict.verdict is ReplayabilityVerdict.PARTIAL
    assert _gaps(run) == [(0, Gap.NO_MESSAGES), (2, Gap.NO_MESSAGES)]
    assert str(verdict.reasons[0]) == (
        "step 0 (llm gpt-4o): no input messages: the call cannot be asked again"
    )
    assert verdict.unserved(range(3)) == ()  # its output is there: it can still be served


def test_a_tool_call_without_arguments_or_result(tmp_path: Path) -> None:
    run = _one(_agent_trace(tmp_path / "a", tool_arguments=False, tool_result=False))
    # the arguments the span left out are completed from the model's call: only the result lacks
    assert run.steps[1].inputs["arguments"] == {"q": "checkout"}
    assert _gaps(run) == [(1, Gap.NO_RESULT)]
    verdict = replayability(run)
    assert verdict.verdict is ReplayabilityVerdict.PARTIAL
    assert [r.step for r in verdict.unserved(range(3))] == [1]
    unasked = _one(_agent_trace(tmp_path / "b", model_output=False, tool_arguments=False))
    assert (1, Gap.NO_ARGUMENTS) in _gaps(unasked)
    assert verdict.reasons[0].to_record() == {
        "step": 1,
        "kind": "tool",
        "name": "search_logs",
        "missing": "no-result",
        "detail": "no result recorded: it cannot be served",
    }


def test_a_run_with_nothing_to_rerun_or_serve_is_not_replayable(tmp_path: Path) -> None:
    path = _agent_trace(
        tmp_path, messages=False, model_output=False, tool_arguments=False, tool_result=False
    )
    verdict = replayability(_one(path))
    assert verdict.verdict is ReplayabilityVerdict.NOT_REPLAYABLE
    assert not verdict.attributable
    steps = Trajectory.build("empty", [])
    assert replayability(steps).verdict is ReplayabilityVerdict.NOT_REPLAYABLE


def test_the_sdk_attribute_length_limit_is_found_by_length_clustering(tmp_path: Path) -> None:
    """The SDK cuts every longer string attribute at exactly N characters and says nothing: the
    system prompt, the question, the tool's result and the answer all end at N."""
    limit = 120
    run = _one(_openinference_trace(tmp_path / "cut", limit))
    verdict = replayability(run)
    assert verdict.verdict is ReplayabilityVerdict.PARTIAL
    assert _gaps(run) == [
        (0, Gap.TRUNCATED_INPUT),
        (1, Gap.TRUNCATED_OUTPUT),
        (2, Gap.TRUNCATED_INPUT),
        (2, Gap.TRUNCATED_OUTPUT),
    ]
    assert str(verdict.reasons[0]) == (
        "step 0 (llm gpt-4o): inputs.messages[0].content cut at 120 characters (the attribute "
        "length limit: values of the run end at exactly that length, none longer)"
    )
    assert [r.step for r in verdict.unserved(range(3))] == [1, 2]
    # the same run without the limit has nothing cut
    whole = _one(_openinference_trace(tmp_path / "whole", None))
    assert replayability(whole).verdict is ReplayabilityVerdict.REPLAYABLE


def test_a_cut_json_attribute_leaves_the_messages_out(tmp_path: Path) -> None:
    """GenAI's messages are one JSON attribute: cut, it no longer reads as messages."""
    run = _one(_agent_trace(tmp_path, limit=120))
    assert _gaps(run) == [
        (0, Gap.NO_MESSAGES), (2, Gap.NO_MESSAGES), (2, Gap.NO_RESULT),
    ]  # fmt: skip


def test_one_long_value_alone_is_not_read_as_cut() -> None:
    text = "x" * 500
    steps = [
        Step(StepKind.TOOL, "t", {"arguments": {"q": "a"}}, text),
        Step(StepKind.TOOL, "t", {"arguments": {"q": "b"}}, text),  # the same string again
        Step(StepKind.TOOL, "t", {"arguments": {"q": "c"}}, "y" * (MIN_CUT_LENGTH - 1)),
        Step(StepKind.TOOL, "t", {"arguments": {"q": "d"}}, "z" * (MIN_CUT_LENGTH - 1)),
    ]
    assert replayability(Trajectory.build("r", steps)).reasons == ()
    steps.append(Step(StepKind.TOOL, "t", {"arguments": {"q": "e"}}, "w" * 500))
    assert _gaps(Trajectory.build("r", steps)) == [(0, Gap.TRUNCATED_OUTPUT), (1, Gap.TRUNCATED_OUTPUT), (4, Gap.TRUNCATED_OUTPUT)]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "the logs say timeout... [TRUNCATED]",
        "the logs say timeout [truncated 2048 chars]",
        "the logs say timeout…(truncated)",
        "the logs say timeout ... <1200 characters omitted>",
        "the logs say timeout...truncated",
    ],
)
def test_the_conventions_truncation_markers(text: str) -> None:
    run = Trajectory.build("r", [Step(StepKind.TOOL, "t", {"arguments": {}}, {"logs": text})])
    (reason,) = replayability(run).reasons
    assert reason.gap is Gap.TRUNCATED_OUTPUT
    assert reason.detail.startswith("output.logs cut: it ends with ")


def test_a_value_the_instrumentation_hid() -> None:
    steps = [
        Step(StepKind.LLM, "m", {"messages": [{"role": "user", "content": "__REDACTED__"}]}, "ok")
    ]
    assert _gaps(Trajectory.build("r", steps)) == [(0, Gap.HIDDEN_INPUT)]


def test_steps_rebuilt_from_the_conversation_are_named() -> None:
    run = next(iter(read_path(FRAMEWORKS / "anthropic.otlp.jsonl")))
    rebuilt = run.metadata["reconstructed_steps"]
    verdict = replayability(run)
    assert verdict.verdict is ReplayabilityVerdict.PARTIAL
    assert [r.step for r in verdict.reasons if r.gap is Gap.REBUILT] == rebuilt
    assert all(r.rerun and r.served for r in verdict.reasons)
    # which, and why: the raw SDK's loop runs its tools without a span
    assert {r.detail for r in verdict.reasons} == {
        "no span recorded this tool call: rebuilt from the model's call and the result a later "
        "model call was sent"
    }


def test_model_turns_no_span_recorded_say_so() -> None:
    """One span for a whole exchange: the model turns before its tools are rebuilt, and lint says
    that no span recorded them; a span that kept no output is no rebuilt turn."""
    run = next(iter(read_path(FRAMEWORKS / "google-genai.otlp.jsonl")))
    rebuilt = [r for r in replayability(run).reasons if r.gap is Gap.REBUILT]
    assert [r.step for r in rebuilt] == run.metadata["reconstructed_steps"] != []
    assert all(r.detail.startswith("no span recorded this model turn: ") for r in rebuilt)
    for silent in read_path(FRAMEWORKS / "openai-agents-openllmetry-alone.otlp.jsonl"):
        assert not [r for r in replayability(silent).reasons if r.gap is Gap.REBUILT]


# --- lint: trace files, nothing imported ----------------------------------------------------------

# frameworks whose runs are partial, and why: steps rebuilt from the conversation (the spans
# record no tool, or no model call), or messages whose content the instrumentation left out
PARTIAL_FRAMEWORKS = {
    "anthropic.otlp.jsonl": {Gap.REBUILT},
    "google-adk.otlp.jsonl": {Gap.REBUILT},
    "google-genai.otlp.jsonl": {Gap.REBUILT},
    "haystack.otlp.jsonl": {Gap.REBUILT, Gap.NO_RESULT},
    # the Agents SDK on Chat Completions: no model call's span keeps its output; each turn but the
    # last shows in the next call's input, the final answer nowhere
    "openai-agents-openllmetry-alone.otlp.jsonl": {Gap.NO_RESULT},
}


def _lint(runner: CliRunner, *args: str) -> tuple[int, list[dict[str, object]]]:
    result = runner.invoke(app, ["lint", "--json", *args], env=WIDE)
    assert "Traceback" not in result.output
    return result.exit_code, orjson.loads(result.stdout)


def test_lint_on_the_framework_corpus(runner: CliRunner) -> None:
    code, runs = _lint(runner, str(FRAMEWORKS))
    assert code == 0  # every run can be attributed
    by_file: dict[str, set[str]] = {}
    for run in runs:
        name = Path(str(run["path"])).name.replace(".otlp.pb", ".otlp.jsonl")
        for reason in run["reasons"]:  # type: ignore[attr-defined]
            by_file.setdefault(name, set()).add(reason["missing"])
    assert by_file == {k: {g.value for g in v} for k, v in PARTIAL_FRAMEWORKS.items()}
    assert len({r["path"] for r in runs}) == 36  # each framework as JSON and as protobuf


def test_lint_on_the_platform_corpus(runner: CliRunner, corpus: Path) -> None:
    code, runs = _lint(runner, str(corpus / "platforms"))
    assert code == 0
    verdicts = {(Path(str(r["path"])).name, r["trajectory_id"]): r["verdict"] for r in runs}
    assert set(verdicts.values()) == {"replayable", "partial"}
    # any-agent's LangChain and OpenAI traces record model calls without their input messages
    lacking = {
        Path(str(r["path"])).name
        for r in runs
        for reason in r["reasons"]  # type: ignore[attr-defined]
        if reason["missing"] == "no-input-messages"
    }
    assert {"LANGCHAIN_trace.json", "OPENAI_trace.json"} <= lacking


def test_lint_on_the_whole_corpus_names_the_plain_service_traces(
    runner: CliRunner, corpus: Path
) -> None:
    result = runner.invoke(app, ["lint", str(corpus / "jaeger")], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "no span is an operation a convention recognises" in result.stdout


def test_lint_exit_codes(runner: CliRunner, tmp_path: Path) -> None:
    whole = _agent_trace(tmp_path / "whole")
    partial = _agent_trace(tmp_path / "partial", messages=False)
    empty = _agent_trace(
        tmp_path / "empty", messages=False, model_output=False, tool_arguments=False,
        tool_result=False,
    )  # fmt: skip
    assert runner.invoke(app, ["lint", str(whole)]).exit_code == 0
    assert runner.invoke(app, ["lint", str(partial)]).exit_code == 0
    assert runner.invoke(app, ["lint", str(partial), "--fail-on", "partial"]).exit_code == 1
    failed = runner.invoke(app, ["lint", str(whole), str(empty)], env=WIDE)
    assert failed.exit_code == 1
    assert "not-replayable" in failed.stdout
    assert "step 1 (tool search_logs): no result recorded" in failed.stdout
    assert "1 replayable, 0 partial, 1 not-replayable" in failed.stdout
    bad = runner.invoke(app, ["lint", str(whole), "--fail-on", "sometimes"], env=WIDE)
    assert one_line_error(bad).startswith("error: --fail-on sometimes")


GEN_AI = next(c for c in CAPTURES if c.key == "gen-ai")


def test_lint_json(runner: CliRunner, tmp_path: Path) -> None:
    path = _agent_trace(tmp_path, tool_result=False)
    code, runs = _lint(runner, str(path))
    assert code == 0
    (run,) = runs
    assert run["path"] == str(path) and run["steps"] == 3 and run["verdict"] == "partial"
    assert run["reasons"] == [
        {
            "step": 1,
            "kind": "tool",
            "name": "search_logs",
            "missing": "no-result",
            "detail": "no result recorded: it cannot be served",
            # the span's GenAI attributes under a scope of no known instrumentation (issue 39)
            "instrumentation": "a GenAI instrumentation",
            "setting": GEN_AI.outputs,
        }
    ]


def test_lint_on_a_file_it_cannot_read_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": 3}')
    assert one_line_error(runner.invoke(app, ["lint", str(bad)], env=WIDE)).startswith("error: ")


LINT_FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@LINT_FUZZ
@given(document=otlp_documents)
def test_lint_never_tracebacks_on_hostile_input(tmp_path: Path, document: object) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(json.dumps(document).encode())
    result = CliRunner().invoke(app, ["lint", str(path)], env=WIDE)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 1)


@LINT_FUZZ
@given(
    values=st.lists(
        st.one_of(
            st.text(max_size=200),
            st.none(),
            st.integers(-(2**63), 2**63 - 1),
            st.dictionaries(st.text(max_size=5), st.text(max_size=80)),
        ),
        max_size=6,
    )
)
def test_replayability_never_raises_on_any_values(values: list[object]) -> None:
    steps = [
        Step(kind, "s", {"messages": [v]} if kind is StepKind.LLM else {"arguments": v}, v)
        for kind, v in zip([StepKind.LLM, StepKind.TOOL, StepKind.OTHER] * 2, values, strict=False)
    ]
    verdict = replayability(Trajectory.build("r", steps))
    assert verdict.to_record()["verdict"] in {v.value for v in ReplayabilityVerdict}


# --- the store, import, list, show, the viewer ----------------------------------------------------


def test_import_list_and_show_say_the_verdict(runner: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    path = _agent_trace(tmp_path / "t", tool_result=False)
    imported = ok(invoke(runner, store, "import", str(path)))
    assert "partial" in imported.stdout
    assert "1 partial (agent-replay show ID says what each lacks)" in imported.stdout
    rows = orjson.loads(ok(invoke(runner, store, "import", str(path), "--json")).stdout)
    assert rows[0]["trajectories"][0]["replayability"] == "partial"
    run_id = rows[0]["trajectories"][0]["id"]

    listed = ok(invoke(runner, store, "list"))
    assert "replayability" in listed.stdout and "partial" in listed.stdout
    assert (
        orjson.loads(ok(invoke(runner, store, "list", "--json")).stdout)[0]["replayability"]
        == "partial"
    )
    with Store.open(store, read_only=True) as db:
        assert db.summary(run_id).replayability == "partial"  # type: ignore[union-attr]
        assert [s.id for s in db.runs("replayability = partial")] == [run_id]
        assert db.count_runs("replayability = replayable") == 0
    chosen = ok(invoke(runner, store, "list", "--where", "replayability=partial", "--json"))
    assert [r["id"] for r in orjson.loads(chosen.stdout)] == [run_id]

    shown = ok(invoke(runner, store, "show", run_id))
    assert "replayability: partial" in shown.stdout
    assert "step 1 (tool search_logs): no result recorded: it cannot be served" in shown.stdout
    record = orjson.loads(ok(invoke(runner, store, "show", run_id, "--json")).stdout)
    assert record["replayability"]["verdict"] == "partial"
    assert record["replayability"]["reasons"][0]["missing"] == "no-result"


def test_the_viewer_shows_the_verdict_and_reasons_escaped(tmp_path: Path) -> None:
    steps = [
        Step(StepKind.TOOL, "<b>search</b>", {"arguments": {"q": 1}}, None),
        Step(StepKind.LLM, "m", {"messages": [{"role": "user", "content": "hi"}]}, "ok"),
    ]
    run = Trajectory.build("viewer-run", steps)
    with Store.open(tmp_path / "s.db") as db:
        db.put(run)
        html = run_page(db, "viewer-run")
    assert 'data-verdict="partial"' in html
    assert "step 0 (tool &lt;b&gt;search&lt;/b&gt;): no result recorded" in html
    assert "<b>search</b>" not in html


# --- refused where it matters ---------------------------------------------------------------------


def _stored(runner: CliRunner, store: Path, path: Path) -> str:
    rows = orjson.loads(ok(invoke(runner, store, "import", str(path), "--json")).stdout)
    return str(rows[0]["trajectories"][0]["id"])


def test_attribute_refuses_a_run_it_has_nothing_to_work_with(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    path = _agent_trace(
        tmp_path / "t", messages=False, model_output=False, tool_arguments=False,
        tool_result=False,
    )  # fmt: skip
    run_id = _stored(runner, store, path)
    line = one_line_error(
        invoke(runner, store, "attribute", run_id, "--success-if", "gateway", "--tools", "recorded")
    )
    assert line.startswith(f"error: run {run_id} cannot be attributed: not-replayable: step 0")


def test_replay_and_fork_refuse_to_serve_a_step_without_its_result(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    run_id = _stored(runner, store, _agent_trace(tmp_path / "t", tool_result=False))
    line = one_line_error(invoke(runner, store, "replay", run_id))
    assert line == (
        f"error: a replay of run {run_id} would serve steps its record cannot give: step 1 "
        "(tool search_logs): no result recorded: it cannot be served"
    )
    forked = one_line_error(invoke(runner, store, "fork", run_id, "--at", "2", "--fault", "empty"))
    assert forked.startswith(f"error: a fork of run {run_id} would serve steps")


def test_replay_warns_of_what_a_partial_run_lacks_before_it_starts(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    run_id = _stored(runner, store, _agent_trace(tmp_path / "t", messages=False))
    result = invoke(runner, store, "replay", run_id)
    warning, error = result.stderr.splitlines()
    assert warning == (
        f"warning: run {run_id}: the run's record is partial: step 0 (llm gpt-4o): no input "
        "messages: the call cannot be asked again; step 2 (llm gpt-4o): no input messages: the "
        "call cannot be asked again (agent-replay show lists all)"
    )
    assert error.startswith(f"error: {run_id} is not a tool-calling chat")  # as before


def test_a_run_whose_steps_were_only_rebuilt_is_not_warned_of(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(FRAMEWORKS / "anthropic.otlp.jsonl")))
    run = next(iter(read_path(FRAMEWORKS / "anthropic.otlp.jsonl")))
    result = invoke(runner, store, "replay", run.id)
    assert "warning" not in result.stderr
