"""``--judge QUESTION``: the real ``openai`` client asks a local OpenAI-compatible server (a rule on
the final answer decides its verdict) whether a run's answer meets the question; each distinct
answer is judged once per attribution, its calls are counted apart from resample-function calls,
and the verdict and its reason are kept with the run."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import (
    PluginLoadError,
    RegistrationError,
    Registry,
    Step,
    StepKind,
    Store,
    Trajectory,
    VerifierError,
)
from otel_replay._extras import install_command
from otel_replay.attribution import AttributionConfig, Driver, Strategy, attribute
from otel_replay.report import REPORT_SCHEMA, build_report
from otel_replay.resamplers import Judge, JudgeOptions, UserCode
from otel_replay.resamplers._judge import read_verdict, task_of
from tests.cli_helpers import invoke, ok, one_line_error

QUESTION = "Did the agent name the deploy that caused the incident?"
TASK = "Which deploy broke checkout?"
FOUND = "Deploy v841 broke it."
NOT_FOUND = "No deploy found."
CALL = {"id": "call_1", "name": "list_deploys", "arguments": {}}
ASK = {"role": "assistant", "tool_calls": [CALL]}

# the rollouts' resample functions: the deploy list is found half of the time, and the model
# answers from it: every rollout ends with one of two answers
RESAMPLERS = f"""
from otel_replay import resampler


@resampler("tool", name="list_deploys")
def deploys(step, ctx):
    return [{{"version": "v841"}}] if ctx.rng.random() < 0.5 else []


@resampler("llm")
def model(step, ctx):
    tools = [s for s in ctx.history if s.kind.value == "tool"]
    if not tools:
        return {ASK!r}
    return {{"role": "assistant", "content": {FOUND!r} if tools[-1].output else {NOT_FOUND!r}}}
"""


def verdict_rule(body: dict[str, Any]) -> dict[str, Any]:
    """A judge that says yes exactly when the final answer names v841, with its reason."""
    prompt = body["messages"][-1]["content"]
    answer = prompt.split("The agent's final answer:\n", 1)[1]
    verdict = "yes" if "v841" in answer else "no"
    reason = "it names v841" if verdict == "yes" else "it names no deploy"
    return {
        "role": "assistant",
        "content": orjson.dumps({"verdict": verdict, "reason": reason}).decode(),
    }


@pytest.fixture
def judge_server() -> Iterator[FakeModelServer]:
    with FakeModelServer(replying(verdict_rule)) as server:
        yield server


def _run(answer: str = NOT_FOUND, run_id: str = "coin-run") -> Trajectory:
    opening = [{"role": "user", "content": TASK}]
    result = {"role": "tool", "tool_call_id": "call_1", "name": "list_deploys", "content": "[]"}
    return Trajectory.build(
        run_id,
        [
            Step(StepKind.LLM, "m", {"model": "m", "messages": opening}, ASK),
            Step(StepKind.TOOL, "list_deploys", {"arguments": {}, "tool_call_id": "call_1"}, []),
            Step(
                StepKind.LLM,
                "m",
                {"model": "m", "messages": [*opening, ASK, result]},
                {"role": "assistant", "content": answer},
            ),
        ],
        outcome=0.0,
    )


def _registry(judge: Judge) -> Registry:
    registry = Registry()
    namespace: dict[str, Any] = {}
    with registry.collecting():
        exec(compile(RESAMPLERS, "resamplers.py", "exec"), namespace)
    registry.replace_verifier(judge)
    return registry


def _judge(server: FakeModelServer, **options: Any) -> Judge:
    return Judge(JudgeOptions(QUESTION, base_url=server.base_url, model="judge", **options))


def test_the_judge_scores_the_final_answer_and_says_why(judge_server: FakeModelServer) -> None:
    judge = _judge(judge_server)
    assert judge(_run(FOUND)) == 1.0 and judge(_run(NOT_FOUND)) == 0.0
    verdict = judge.verdict(_run(FOUND))
    assert verdict is not None
    assert (verdict.verdict, verdict.reason, verdict.model) == ("yes", "it names v841", "judge")
    first = judge_server.requests[0]
    assert first["model"] == "judge" and first["temperature"] == 0
    prompt = first["messages"][-1]["content"]
    assert QUESTION in prompt and TASK in prompt and FOUND in prompt
    assert len(judge_server.requests) == 2  # the third verdict was kept, not asked again
    judge.close()


def test_a_run_without_a_final_answer_fails_unasked(judge_server: FakeModelServer) -> None:
    asking = Trajectory.build("asking", [Step(StepKind.LLM, "m", {"messages": []}, ASK)])
    assert _judge(judge_server)(asking) == 0.0
    assert judge_server.requests == []


def test_one_judge_call_per_distinct_answer_and_the_cost_counts_them(
    judge_server: FakeModelServer,
) -> None:
    """Twenty rollouts on four threads end in two answers: two calls at the server, however the
    rollouts interleave, and the report counts them apart from resample-function calls."""
    judge = _judge(judge_server)
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=10, workers=4, driver=Driver.TRACE)
    result = attribute(_run(), _registry(judge), config)
    assert len(judge_server.requests) == 2
    assert result.judge is not None and result.judge.calls == 2
    said = {t.verdict.answer: (t.verdict.verdict, t.verdict.reason) for t in result.judge.verdicts}
    assert said == {FOUND: ("yes", "it names v841"), NOT_FOUND: ("no", "it names no deploy")}
    # every scored run reached one of the two: the recorded run and each rollout
    assert sum(t.runs for t in result.judge.verdicts) == result.rollouts + 1
    report = build_report(result, config)
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["cost"]["judge_calls"] == 2
    assert report["cost"]["step_executions"] == result.step_executions  # a separate count
    assert report["judge"]["question"] == QUESTION
    assert {v["answer"]: v["verdict"] for v in report["judge"]["verdicts"]} == {
        FOUND: "yes",
        NOT_FOUND: "no",
    }
    assert report["config"]["verifier"].startswith("builtin.judge(")


@pytest.mark.parametrize(
    ("reply", "verdict", "reason"),
    [
        ('{"verdict": "yes", "reason": "names it"}', "yes", "names it"),
        ('```json\n{"verdict": "NO", "reason": "vague"}\n```', "no", "vague"),
        ('Here is my verdict: {"verdict": "Yes.", "reason": "r"} as asked', "yes", "r"),
        ('{"verdict": false, "reason": "no deploy"}', "no", "no deploy"),
        ("Yes - it names v841.", "yes", "it names v841."),
        ("no", "no", ""),
    ],
    ids=["json", "fenced", "in-prose", "boolean", "first-word", "bare"],
)
def test_replies_are_read_leniently(reply: str, verdict: str, reason: str) -> None:
    assert read_verdict(reply) == (verdict, reason)


@pytest.mark.parametrize(
    "reply",
    ['{"verdict": "maybe", "reason": "unsure"}', "It depends on the deploy.", ""],
    ids=["not-yes-or-no", "prose", "empty"],
)
def test_a_reply_that_is_no_verdict_is_an_error_naming_it(reply: str) -> None:
    with pytest.raises(VerifierError, match="not a verdict") as caught:
        read_verdict(reply)
    assert repr(reply) in str(caught.value)


def test_the_task_is_the_first_user_message_else_the_recorded_input() -> None:
    assert task_of(_run()) == TASK
    recorded = Trajectory.build(
        "r", [Step(StepKind.TOOL, "t", {"arguments": {}}, 1)], metadata={"input": {"n": 1}}
    )
    assert task_of(recorded) == '{"n":1}'


def test_no_server_and_no_client_are_said(
    monkeypatch: pytest.MonkeyPatch, judge_server: FakeModelServer
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(RegistrationError, match="OPENAI_BASE_URL") as caught:
        UserCode(judge=JudgeOptions(QUESTION)).registry()
    assert "llm_base_url=URL" in str(caught.value) and "OPENAI_API_KEY" in str(caught.value)
    judge = _judge(judge_server)
    monkeypatch.setitem(sys.modules, "openai", None)  # the optional extra is not installed
    hint = f"judge needs the openai client: {install_command('openai')}"  # for this copy
    with pytest.raises(PluginLoadError, match=re.escape(hint)):
        judge(_run(FOUND))


# --- the commands ----------------------------------------------------------------------------------


@pytest.fixture
def coin_store(tmp_path: Path, runner: CliRunner, store_path: Path) -> Path:
    """A store holding the run, and its resample functions beside it (``r.py``)."""
    runs = tmp_path / "coin.steps.jsonl"
    runs.write_bytes(orjson.dumps(_run().to_record()) + b"\n")
    (tmp_path / "r.py").write_text(RESAMPLERS)
    ok(invoke(runner, store_path, "import", str(runs)))
    return tmp_path


def _judged(server: FakeModelServer, url: str = "--judge-base-url") -> list[str]:
    """The options of a judge on ``server``, named by ``url``: the judge's own option, or the
    model's server (``--llm-base-url``), which the judge asks too unless told otherwise."""
    return ["--judge", QUESTION, url, server.base_url, "--judge-model", "judge"]


def _attribute(coin_store: Path, *options: str) -> list[str]:
    return ["attribute", "coin-run", "--resamplers", str(coin_store / "r.py"), *options]


def test_attribute_judges_in_the_parent_of_a_process_pool(
    runner: CliRunner, store_path: Path, coin_store: Path, judge_server: FakeModelServer
) -> None:
    """Rollouts made in worker processes come back to be scored: one cache, two calls."""
    pool = ["--executor", "process", "--workers", "2", "--json"]
    options = [*_judged(judge_server), "--driver", "trace", "--rollouts", "6", *pool]
    result = ok(invoke(runner, store_path, *_attribute(coin_store, *options)))
    report = orjson.loads(result.stdout)
    assert report["cost"]["judge_calls"] == report["judge"]["calls"] == 2
    assert len(judge_server.requests) == 2
    rerun = report["config"]["rerun"]
    assert f"--judge-base-url {judge_server.base_url}" in rerun and "--judge-model judge" in rerun
    options = [*_judged(judge_server, "--llm-base-url"), "--driver", "trace", "--rollouts", "6"]
    table = ok(invoke(runner, store_path, *_attribute(coin_store, *options, "--seed", "1")))
    assert "judge: 2 model calls for 2 distinct answers" in table.stdout
    assert "yes" in table.stdout and "it names v841" in table.stdout


def test_a_reply_that_is_no_verdict_stops_the_attribution_naming_it(
    runner: CliRunner, store_path: Path, coin_store: Path
) -> None:
    unsure = {"role": "assistant", "content": "It is hard to say."}
    with FakeModelServer(replying(lambda body: unsure)) as server:
        options = _attribute(coin_store, *_judged(server), "--rollouts", "2")
        line = one_line_error(invoke(runner, store_path, *options))
    assert "It is hard to say." in line and "not a verdict" in line


def test_fork_keeps_the_verdict_with_the_run(
    runner: CliRunner, store_path: Path, coin_store: Path, judge_server: FakeModelServer
) -> None:
    move = ["--at", "1", "--observe", '[{"version": "v841"}]', "--driver", "trace"]
    code = ["--resamplers", str(coin_store / "r.py"), *_judged(judge_server), "--json"]
    result = ok(invoke(runner, store_path, "fork", "coin-run", *move, *code))
    with Store.open(store_path) as db:
        forked = db.get(orjson.loads(result.stdout)["id"])
    assert forked.outcome == 1.0
    assert forked.metadata["judge"] == {
        "question": QUESTION,
        "answer": FOUND,
        "verdict": "yes",
        "reason": "it names v841",
        "model": "judge",
    }
    assert len(judge_server.requests) == 1


def test_record_keeps_the_verdict_with_the_run(
    runner: CliRunner, store_path: Path, tmp_path: Path, judge_server: FakeModelServer
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "def main(ctx, task='Which deploy broke checkout?'):\n"
        "    messages = [{'role': 'user', 'content': task}]\n"
        f"    answer = {{'role': 'assistant', 'content': {NOT_FOUND!r}}}\n"
        "    return ctx.llm('m', produce=lambda: answer, messages=messages)['content']\n"
    )
    result = ok(
        invoke(
            runner,
            store_path,
            "record",
            "--agent",
            f"{agent}:main",
            *_judged(judge_server),
            "--json",
        )
    )
    run_id = orjson.loads(result.stdout)["id"]
    with Store.open(store_path) as db:
        recorded = db.get(run_id)
    assert recorded.outcome == 0.0
    assert recorded.metadata["judge"]["verdict"] == "no"
    assert recorded.metadata["judge"]["reason"] == "it names no deploy"
    assert TASK in judge_server.requests[0]["messages"][-1]["content"]
