"""``fork`` speaks ``attribute``'s vocabulary: ``--tools recorded``, ``--llm openai``,
``--success-if`` / ``--fail-if``, on a run of a small support agent of a user's own (not the
bundled incident example), the model answered by a local OpenAI-compatible server; a step nothing
can re-run suggests both ways to resample it, and ``--llm openai`` with no server is said before
anything runs, the store left as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import Step, StepKind, StepStatus, Store, Trajectory
from otel_replay.messages import tool_message
from tests.cli_helpers import invoke, ok, one_line_error

TOOLS = [
    {
        "name": "lookup_order",
        "description": "An order's status.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "integer"}}},
    }
]
OPENING = [
    {"role": "system", "content": "You are a support agent. Check the order before answering."},
    {"role": "user", "content": "Is my order 42 eligible for a refund?"},
]
DELIVERED = {"order_id": 42, "status": "delivered", "days_since_delivery": 3}
ELIGIBLE = "Order 42 was delivered 3 days ago: it is eligible for a refund."
UNCHECKED = "I could not check order 42; please try again later."
RETRY = {
    "role": "assistant",
    "tool_calls": [{"id": "call_retry", "name": "lookup_order", "arguments": {"order_id": 42}}],
}


def _support_run(run_id: str, delivered: bool) -> Trajectory:
    """The agent looks the order up once, then answers from what the order service said."""
    call = {"id": f"call_{run_id}", "name": "lookup_order", "arguments": {"order_id": 42}}
    ask = {"role": "assistant", "tool_calls": [call]}
    inputs = {"model": "support-model", "tools": TOOLS, "parameters": {"temperature": 0.7}}
    if delivered:
        lookup = Step(
            StepKind.TOOL, "lookup_order", {"arguments": {"order_id": 42}, "tool_call_id": call["id"]},
            DELIVERED,
        )  # fmt: skip
        said = tool_message(DELIVERED, "lookup_order", call["id"])
    else:
        lookup = Step(
            StepKind.TOOL, "lookup_order", {"arguments": {"order_id": 42}, "tool_call_id": call["id"]},
            None, StepStatus.ERROR, "503 from the order service",
        )  # fmt: skip
        said = tool_message({"error": "503 from the order service"}, "lookup_order", call["id"])
    answer = {"role": "assistant", "content": ELIGIBLE if delivered else UNCHECKED}
    return Trajectory.build(
        run_id,
        [
            Step(StepKind.LLM, "support-model", {**inputs, "messages": OPENING}, ask),
            lookup,
            Step(
                StepKind.LLM, "support-model", {**inputs, "messages": [*OPENING, ask, said]}, answer
            ),
        ],
        outcome=1.0 if delivered else 0.0,
    )


def support_model(body: dict[str, Any]) -> dict[str, Any]:
    """The support agent's model: it answers from the order service's latest result."""
    last = next(m for m in reversed(body["messages"]) if m["role"] == "tool")
    return {
        "role": "assistant",
        "content": ELIGIBLE if "delivered" in last["content"] else UNCHECKED,
    }


@pytest.fixture
def support_store(tmp_path: Path, runner: CliRunner, store_path: Path) -> Path:
    runs = tmp_path / "support.steps.jsonl"
    runs.write_bytes(
        b"".join(
            orjson.dumps(run.to_record()) + b"\n"
            for run in (_support_run("support-pass", True), _support_run("support-fail", False))
        )
    )
    ok(invoke(runner, store_path, "import", str(runs)))
    return store_path


def _fork(runner: CliRunner, store_path: Path, *args: str) -> Trajectory:
    result = ok(invoke(runner, store_path, "fork", "support-fail", *args, "--json"))
    with Store.open(store_path) as db:
        return db.get(orjson.loads(result.stdout)["id"])


def test_fork_asks_the_model_and_scores_by_the_answer(
    runner: CliRunner, support_store: Path
) -> None:
    observed = orjson.dumps(DELIVERED).decode()
    with FakeModelServer(replying(support_model)) as server:
        forked = _fork(
            runner, support_store, "--at", "1", "--observe", observed, "--llm", "openai",
            "--llm-base-url", server.base_url, "--success-if", "eligible for a refund",
        )  # fmt: skip
    assert forked.outcome == 1.0 and forked.final_answer == ELIGIBLE
    (request,) = server.requests  # the one turn after the fork, asked with this fork's result
    assert request["model"] == "support-model" and "delivered" in request["messages"][-1]["content"]
    # without a model to ask, the turn after the fork is never served its recorded answer to
    # another question as if it were this one's: the fork says so, and stores nothing
    with Store.open(support_store, read_only=True) as db:
        before = db.count_runs()
    for scoring in (("--success-if", "eligible"), ("--fail-if", "could not check")):
        line = one_line_error(
            invoke(runner, support_store, "fork", "support-fail", "--at", "1",
                   "--observe", observed, *scoring)
        )  # fmt: skip
        assert "model turn 2 ('support-model')" in line and "answers another question" in line
        assert "--llm openai" in line and "--resamplers" in line
    with Store.open(support_store, read_only=True) as db:
        assert db.count_runs() == before


def test_fork_judges_the_answer_on_a_server_of_its_own(
    runner: CliRunner, support_store: Path
) -> None:
    def judge(body: dict[str, Any]) -> dict[str, Any]:
        answer = body["messages"][-1]["content"].split("The agent's final answer:\n", 1)[1]
        verdict = "yes" if "eligible" in answer else "no"
        return {"role": "assistant", "content": f'{{"verdict": "{verdict}", "reason": "read it"}}'}

    observed = orjson.dumps(DELIVERED).decode()
    question = "Did the agent say whether the order can be refunded?"
    with (
        FakeModelServer(replying(support_model)) as model,
        FakeModelServer(replying(judge)) as judging,
    ):
        llm = ["--llm", "openai", "--llm-base-url", model.base_url]
        judged = [
            "--judge",
            question,
            "--judge-base-url",
            judging.base_url,
            "--judge-model",
            "judge",
        ]
        forked = _fork(runner, support_store, "--at", "1", "--observe", observed, *llm, *judged)
    assert forked.outcome == 1.0 and forked.metadata["judge"]["verdict"] == "yes"
    assert len(model.requests) == 1 and len(judging.requests) == 1
    assert judging.requests[0]["model"] == "judge"
    assert "Is my order 42 eligible" in judging.requests[0]["messages"][-1]["content"]


def test_fork_draws_tool_results_the_store_recorded(runner: CliRunner, support_store: Path) -> None:
    """The agent retries the lookup: ``--tools recorded`` answers it with what the store holds for
    the same call (the 503 of one run, the delivered order of the other), the model goes on from
    that, and the outcome follows the draw."""
    retry = orjson.dumps(RETRY).decode()
    draws = []
    with FakeModelServer(replying(support_model)) as server:
        for seed in range(8):
            forked = _fork(
                runner, support_store, "--at", "2", "--do", retry, "--tools", "recorded",
                "--llm", "openai", "--llm-base-url", server.base_url, "--success-if", "eligible",
                "--seed", str(seed),
            )  # fmt: skip
            lookup = forked.steps[3]
            assert (lookup.kind, lookup.name) == (StepKind.TOOL, "lookup_order")
            drew = lookup.status is StepStatus.OK and lookup.output == DELIVERED
            assert drew or lookup.error == "503 from the order service"  # never a null result
            assert forked.outcome == (1.0 if drew else 0.0)
            draws.append(drew)
    assert True in draws and False in draws
    assert len(server.requests) == 8


def test_a_step_nothing_can_rerun_suggests_both_ways(
    runner: CliRunner, support_store: Path
) -> None:
    patch = '[{"op": "remove", "path": "/messages/0"}]'
    for driver in ("chat", "trace"):
        line = one_line_error(
            invoke(
                runner,
                support_store,
                "fork",
                "support-fail",
                "--at",
                "2",
                "--edit",
                patch,
                "--driver",
                driver,
            )
        )
        assert "--resamplers FILE" in line and "--tools recorded --llm openai" in line, line
    line = one_line_error(
        invoke(runner, support_store, "attribute", "support-fail", "--success-if", "x")
    )
    assert "--resamplers FILE" in line and "--tools recorded --llm openai" in line


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "command",
    [
        ["fork", "support-fail", "--at", "1", "--observe", "{}", "--llm", "openai"],
        [
            "attribute",
            "support-fail",
            "--tools",
            "recorded",
            "--llm",
            "openai",
            "--success-if",
            "x",
        ],
        [
            "attribute",
            "support-fail",
            "--tools",
            "recorded",
            "--llm",
            "openai",
            "--success-if",
            "x",
            "--dry-run",
        ],
        [
            "attribute",
            "--all-failing",
            "--tools",
            "recorded",
            "--llm",
            "openai",
            "--success-if",
            "x",
        ],
        ["attribute", "support-fail", "--tools", "recorded", "--judge", "Eligible?"],
    ],
    ids=["fork", "attribute", "dry-run", "many", "judge"],
)
def test_a_model_with_no_server_is_said_before_anything_runs(
    runner: CliRunner, support_store: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    before = {p.name: _digest(p) for p in support_store.parent.glob("store.db*")}
    line = one_line_error(invoke(runner, support_store, *command))
    assert "--llm-base-url URL" in line and "OPENAI_BASE_URL" in line and "OPENAI_API_KEY" in line
    assert ("--judge" if "--judge" in command else "--llm openai") in line
    assert {p.name: _digest(p) for p in support_store.parent.glob("store.db*")} == before
    with Store.open(support_store) as db:
        assert sorted(s.id for s in db.summaries()) == ["support-fail", "support-pass"]
