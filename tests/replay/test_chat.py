"""The chat-loop driver: imported tool-calling runs re-driven as the loop they were, no agent code."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from otel_replay import (
    Registry,
    RolloutContext,
    Step,
    StepFailed,
    Trajectory,
    assistant_message,
    conversation,
    read_path,
)
from otel_replay.messages import tool_message
from otel_replay.model import StepKind
from otel_replay.replay import Plan, replay
from otel_replay.replay._chat import chat_agent, chat_driver, chat_record
from otel_replay.replay._live import agent_driver
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
RESAMPLERS = str(ROOT / "examples" / "incident" / "tools.py")
V841 = {
    "author": "mlopez",
    "commit": "9f3c2e1",
    "deployed_at": "2026-03-14T14:02:00Z",
    "service": "checkout",
    "version": "v841",
}


def _chats(path: Path) -> list[Trajectory]:
    return [run for run in read_path(path) if chat_record(run) is not None]


@pytest.mark.parametrize(
    "path",
    [
        SAMPLES / "incident.otlp.jsonl",  # OpenInference
        SAMPLES / "incident-genai.otlp.jsonl",  # OTel GenAI
        # Google ADK 2's instrumentation rewrites one span per agent invocation on each model call:
        # the last call's output keeps earlier calls' tool calls beside its answer, a loop no model ran
        *sorted(p for p in FRAMEWORKS.glob("*.otlp.jsonl") if p.name != "google-adk.otlp.jsonl"),
    ],
    ids=lambda p: p.name.removesuffix(".otlp.jsonl"),
)
def test_an_unmodified_chat_replays_identically(path: Path) -> None:
    for run in _chats(path):
        result = replay(run, chat_agent(chat_record(run)))  # type: ignore[arg-type]
        assert result.identical, (run.id, result.diff.differences, result.nondeterminism)


def test_every_chat_of_the_samples_and_the_corpus_is_recognised() -> None:
    assert len(_chats(SAMPLES / "incident.otlp.jsonl")) == 3
    recognised = {p.name: len(_chats(p)) for p in FRAMEWORKS.glob("*.otlp.jsonl")}
    # DSPy's model answers in text fields, not tool calls; Haystack's retrieval run calls no tool;
    # BeeAI's agent ends each run with a tool no model turn asked for (its own final_answer)
    assert recognised.pop("dspy.otlp.jsonl") == 0
    assert recognised.pop("haystack.otlp.jsonl") == 2
    assert recognised.pop("beeai.otlp.jsonl") == 0
    # the runs with two tool calls in one response: a chat where that response is one message; the
    # Agents SDK on the Responses API through OpenLLMetry records it as two output messages, not
    # read as one turn here (on Chat Completions, and through LangSmith, it is one message)
    for name in (
        "google-adk",
        "google-adk-1",
        "langsmith-otel",
        "openai-agents",
        "openai-agents-openllmetry-alone",
    ):
        assert recognised.pop(f"{name}.otlp.jsonl") == 4, name
    assert set(recognised.values()) == {3}


def test_a_tool_resample_function_sees_the_call_of_this_rollout() -> None:
    (failing,) = [r for r in read_path(SAMPLES / "incident.otlp.jsonl") if r.id.startswith("ef28")]
    asked: list[dict[str, Any]] = []

    def model(step: Step, ctx: RolloutContext) -> Any:
        call = {"id": "call_x", "name": "search_logs", "arguments": {"service": "payments"}}
        if not any(s.kind.value == "tool" for s in ctx.history):
            return {"role": "assistant", "tool_calls": [call]}
        return {"role": "assistant", "content": "done"}

    def logs(step: Step, ctx: RolloutContext) -> Any:
        asked.append(step.inputs["arguments"])
        return []

    registry = Registry()
    registry.add_resampler("llm", model)
    registry.add_resampler("tool", logs, name="search_logs")
    drive = agent_driver(failing, chat_agent(chat_record(failing)), registry, 0)  # type: ignore[arg-type]
    rollout = drive(Plan.ablate_from(len(failing.steps), 0), 0)
    assert asked == [{"service": "payments"}]  # the new call's arguments, not the record's
    assert [s.name for s in rollout.trajectory.steps][-2:] == [
        "search_logs",
        "rule-based-investigator",
    ]
    assert rollout.trajectory.steps[-1].output == {"role": "assistant", "content": "done"}


@pytest.fixture
def samples(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    ok(invoke(runner, store_path, "import", str(FRAMEWORKS / "dspy.otlp.jsonl")))
    return store_path


def test_replay_without_an_agent_re_drives_the_loop(runner: CliRunner, samples: Path) -> None:
    result = ok(invoke(runner, samples, "replay", "ef2843ff"))
    assert result.stdout.startswith("identical (7 steps")
    dspy = [
        r.id
        for r in read_path(FRAMEWORKS / "dspy.otlp.jsonl")
        if r.metadata.get("root_span") == "support run pass"
    ]
    line = one_line_error(invoke(runner, samples, "replay", dspy[0]))
    assert "is not a tool-calling chat" in line and "--agent" in line


def _fork(runner: CliRunner, store: Path, run: str, output: Any, *more: str) -> dict[str, Any]:
    result = ok(
        invoke(
            runner, store, "fork", run, "--at", "3", "--value", json.dumps(output),
            "--resamplers", RESAMPLERS, "--json", *more,
        )
    )  # fmt: skip
    diff = json.loads(result.stdout)["diff"]
    return {**diff["right"], "structure": diff["structure"]}


def test_a_fork_follows_the_model(runner: CliRunner, samples: Path) -> None:
    # without v841 the passing run searches the logs, blames the database and fails: 7 steps
    searched = ["tool search_logs", "llm rule-based-investigator"]
    assert {k: v for k, v in _fork(runner, samples, "e88b7591", []).items() if k != "id"} == {
        "outcome": 0.0,
        "outcome_source": "fork",  # scored by the verifier the fork was made with
        "steps": 7,
        "structure": [{"only_in": "right", "steps": [5, 6], "operations": searched}],
    }
    # with it the failing run answers at once: the walk would have run 7 steps, the model stops at 5
    assert {k: v for k, v in _fork(runner, samples, "ef2843ff", [V841]).items() if k != "id"} == {
        "outcome": 1.0,
        "outcome_source": "fork",
        "steps": 5,
        "structure": [{"only_in": "left", "steps": [5, 6], "operations": searched}],
    }


def test_attribution_through_the_loop_names_list_deploys(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    out = tmp_path / "chat.json"
    ok(
        invoke(
            runner, samples, "attribute", "ef2843ff", "--resamplers", RESAMPLERS, "--driver",
            "chat", "--rollouts", "64", "--out", str(out),
        )
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report["point_of_commitment"] == 3 and report["config"]["driver"].startswith("chat:")
    assert "--driver chat" in report["config"]["rerun"]


def test_the_loop_stops_at_its_turn_limit(runner: CliRunner, samples: Path) -> None:
    fork = _fork(runner, samples, "e88b7591", [], "--max-turns", "2")
    assert fork["steps"] == 4  # two model turns and the tool calls they made
    line = one_line_error(
        invoke(
            runner, samples, "fork", "e88b7591", "--at", "3", "--value", "[]", "--max-turns", "0"
        )
    )
    assert "--max-turns 0 must be at least 1" in line


def _with_retrieval() -> Trajectory:
    """ask → model calls lookup → tool → a retrieval between turns → model answers."""
    from otel_replay import StepKind

    ask = [{"role": "user", "content": "Where is A-1001?"}]
    call = {"id": "c1", "name": "lookup", "arguments": {"order": "A-1001"}}
    turn = {"role": "assistant", "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "content": '"shipped"'}
    return Trajectory.build(
        "with-retrieval",
        [
            Step(StepKind.LLM, "m", {"model": "m", "messages": ask}, turn),
            Step(
                StepKind.TOOL,
                "lookup",
                {"arguments": call["arguments"], "tool_call_id": "c1"},
                "shipped",
            ),
            Step(StepKind.RETRIEVER, "policies", {"query": "late"}, ["Refunds: ..."]),
            Step(
                StepKind.LLM,
                "m",
                {"model": "m", "messages": [*ask, turn, result]},
                {"role": "assistant", "content": "Shipped."},
            ),
        ],
    )


def test_a_step_between_turns_keeps_its_place_on_and_off_the_record() -> None:
    run = _with_retrieval()
    record = chat_record(run)
    assert record is not None and [len(e) for e in record.extras] == [1, 0]
    assert replay(run, chat_agent(record)).identical
    registry = Registry()
    registry.add_resampler("tool", lambda step, ctx: "lost", name="lookup")
    registry.add_resampler("llm", lambda step, ctx: {"role": "assistant", "content": "Sorry."})
    found = chat_driver(run, registry, 0)  # the retrieval has no resample function: held
    assert found is not None
    steps = found[0](Plan.ablate_from(4, 1), 0).trajectory.steps  # the lookup answers otherwise
    assert [(s.kind.value, s.name) for s in steps] == [
        ("llm", "m"), ("tool", "lookup"), ("retriever", "policies"), ("llm", "m"),
    ]  # fmt: skip
    assert steps[1].output == "lost" and steps[3].output == {
        "role": "assistant",
        "content": "Sorry.",
    }


def _corpus_registry() -> Registry:
    """A model that follows the record while its conversation is the record's and answers at
    once otherwise; tools that answer as recorded, or fail, or answer otherwise (from ``ctx.rng``)."""
    registry = Registry()

    def model(step: Step, ctx: RolloutContext) -> Any:
        if ctx.recorded is not None and ctx.rng.random() < 0.7:
            return ctx.recorded.output  # asks for the next tool, whatever it was sent
        return {"role": "assistant", "content": f"Done after {len(ctx.history)} steps."}

    def tool(step: Step, ctx: RolloutContext) -> Any:
        draw = ctx.rng.random()
        if draw < 0.2:
            raise StepFailed("timed out")
        if draw < 0.5 or ctx.recorded is None:
            return {"asked": step.inputs.get("arguments"), "n": round(draw, 3)}
        return ctx.recorded.output

    registry.add_resampler("llm", model)
    registry.add_resampler("tool", tool)
    return registry


def test_a_turn_off_the_record_sends_the_conversation_so_far() -> None:
    """Each model call off the record is sent the previous call's conversation, its reply and the
    tools' results (as `tool_message` writes them, failures as ``{"error": ...}``), in order: what
    the loop puts together only when such a turn comes, checked against the steps it took."""
    (run,) = [r for r in read_path(FRAMEWORKS / "langgraph.otlp.jsonl") if r.id.startswith("2579")]
    found = chat_driver(run, _corpus_registry(), 3)
    assert found is not None
    checked = 0
    for start in range(len(run.steps)):
        for index in range(25):
            steps = found[0](Plan.ablate_from(len(run.steps), start), index).trajectory.steps
            turns = [i for i, s in enumerate(steps) if s.kind is StepKind.LLM]
            for previous, turn in itertools.pairwise(turns):
                if any(steps[turn].inputs is s.inputs for s in run.steps):
                    continue  # on the record: sent its recorded inputs
                reply = assistant_message(steps[previous].output)
                assert reply is not None
                results = [
                    tool_message(
                        s.output if s.error is None else {"error": s.error},
                        call.get("name"),
                        call.get("id"),
                    )
                    for call, s in zip(reply["tool_calls"], steps[previous + 1 : turn], strict=True)
                ]
                expected = [*conversation(steps[previous].inputs), reply, *results]
                assert steps[turn].inputs["messages"] == expected
                checked += 1
    assert checked > 50
