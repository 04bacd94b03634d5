"""The intervention algebra's do and mock-observe (issue 15, parts 1 and 2), on the incident
investigator run live and on a recorded tool-calling run re-driven as its loop: what the agent
saw, what it did, the stored fork's steps, and the diff's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from examples.incident.world import list_deploys
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

AGENT_FILE = str(ROOT / "examples" / "incident" / "agent.py")
LIVE = ["--agent", f"{AGENT_FILE}:investigate", "--verifier", f"{AGENT_FILE}:outcome"]
DEPLOYS = 3  # the investigator's list_deploys step


@pytest.fixture
def recorded(runner: CliRunner, store_path: Path) -> str:
    """A passing run of the live investigator: it names deploy v841."""
    return orjson.loads(ok(invoke(runner, store_path, "record", *LIVE, "--json")).stdout)["id"]


def _fork(
    runner: CliRunner, store: Path, run: str, *move: str, extra: tuple[str, ...] = LIVE
) -> tuple[Any, Any]:  # type: ignore[assignment]
    made = orjson.loads(ok(invoke(runner, store, "fork", run, *move, *extra, "--json")).stdout)
    with Store.open(store, read_only=True) as db:
        return db.get(made["id"]), made["diff"]


def test_observe_keeps_the_call_and_changes_what_came_back(
    runner: CliRunner, store_path: Path, recorded: str
) -> None:
    forked, diff = _fork(runner, store_path, recorded, "--at", str(DEPLOYS), "--observe", "[]")
    step = forked.steps[DEPLOYS]
    assert step.name == "list_deploys" and step.inputs["arguments"] == {"service": "checkout"}
    assert step.output == [] and forked.metadata["move"] == "observe"
    assert forked.outcome == 0.0  # seeing no deploy, it blamed something else
    assert diff["first_divergence"] == DEPLOYS and diff["change"] == "observation changed"
    text = ok(invoke(runner, store_path, "diff", recorded, forked.id)).stdout
    assert f"first divergence at step {DEPLOYS} (output): observation changed" in text
    failed, _ = _fork(
        runner,
        store_path,
        recorded,
        "--at",
        str(DEPLOYS),
        "--observe-error",
        "503 from the deploy API",
    )
    assert failed.steps[DEPLOYS].error == "503 from the deploy API"
    assert failed.steps[DEPLOYS].inputs == forked.steps[DEPLOYS].inputs


def test_do_on_a_tool_step_asks_the_call_anew_and_the_tool_runs_on_it(
    runner: CliRunner, store_path: Path, recorded: str
) -> None:
    forked, diff = _fork(
        runner,
        store_path,
        recorded,
        "--at",
        str(DEPLOYS),
        "--do",
        '{"arguments": {"service": "payments"}}',
    )
    asked = forked.steps[DEPLOYS - 1]  # the model turn that asked for list_deploys
    (call,) = asked.output["tool_calls"]
    assert call["name"] == "list_deploys" and call["arguments"] == {"service": "payments"}
    step = forked.steps[DEPLOYS]
    assert step.inputs["arguments"] == {"service": "payments"}  # the agent called it so
    assert step.output == list_deploys("payments")  # and the world answered that call
    assert forked.metadata["move"] == "do" and forked.metadata["do_step"] == DEPLOYS
    assert diff["first_divergence"] == DEPLOYS - 1 and diff["change"] == "action changed"


def test_do_on_a_model_turn_forces_its_message(
    runner: CliRunner, store_path: Path, recorded: str
) -> None:
    answer = {"role": "assistant", "content": "Roll back deploy v841 of checkout."}
    with Store.open(store_path, read_only=True) as db:
        last = len(db.get(recorded).steps) - 1
    forked, diff = _fork(
        runner, store_path, recorded, "--at", str(last), "--do", orjson.dumps(answer).decode()
    )
    assert forked.steps[last].output == answer and forked.metadata["move"] == "do"
    assert diff["change"] == "action changed"
    line = one_line_error(
        invoke(runner, store_path, "fork", recorded, "--at", str(last), "--observe", "{}", *LIVE)
    )
    assert "model turn: its output is the agent's action" in line


def test_do_and_observe_on_a_recorded_run_re_driven_as_its_loop(
    runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    tools = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"))
    done, _ = _fork(
        runner,
        store_path,
        "5bb58492",
        "--at",
        "3",
        "--do",
        '{"arguments": {"service": "payments"}}',
        extra=tools,
    )
    # the tool's resample function got the new arguments (its flaky API may come back empty)
    assert done.steps[3].inputs["arguments"] == {"service": "payments"}
    assert done.steps[3].output in ([], list_deploys("payments"))
    seen, diff = _fork(runner, store_path, "5bb58492", "--at", "3", "--observe", "[]", extra=tools)
    assert seen.steps[3].output == [] and diff["change"] == "observation changed"
    walk = invoke(
        runner,
        store_path,
        "fork",
        "5bb58492",
        "--at",
        "3",
        "--do",
        '{"arguments": {}}',
        *tools,
        "--driver",
        "trace",
    )
    assert "needs --agent, or a tool-calling run re-driven as its loop" in one_line_error(walk)


def test_edit_removes_the_deploy_list_and_the_model_asks_for_it_again(
    runner: CliRunner, store_path: Path, recorded: str
) -> None:
    with Store.open(store_path, read_only=True) as db:
        run = db.get(recorded)
    last = len(run.steps) - 1  # the model turn that read the deploy list and answered
    messages = run.steps[last].inputs["messages"]
    assert messages[-1]["role"] == "tool" and messages[-1]["name"] == "list_deploys"
    patch = orjson.dumps([{"op": "remove", "path": f"/messages/{len(messages) - 1}"}]).decode()
    tools = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"))
    forked, diff = _fork(
        runner, store_path, recorded, "--at", str(last), "--edit", patch, extra=(*LIVE, *tools)
    )
    edited = forked.steps[last]
    assert edited.inputs["messages"] == messages[:-1]  # what the model saw
    (call,) = edited.output["tool_calls"]  # what it did: asked for the deploys again
    assert call["name"] == "list_deploys"
    assert forked.steps[last + 1].name == "list_deploys"
    assert forked.metadata["move"] == "edit" and diff["first_divergence"] == last
    assert diff["change"] == "context changed"
    bad = invoke(runner, store_path, "fork", recorded, "--at", str(last), "--edit",
                 '[{"op": "remove", "path": "/messages/99"}]', *LIVE)  # fmt: skip
    assert "patch operation 0 (remove /messages/99) does not apply" in one_line_error(bad)


def test_edit_on_a_recorded_run_re_driven_as_its_loop(runner: CliRunner, store_path: Path) -> None:
    """The imported sample: its last model turn saw the deploy list (the retry's result); taken
    out of that turn's conversation, the model (the incident example's, as a resample function)
    asks for the deploys again and the loop goes on from its answer."""
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    with Store.open(store_path, read_only=True) as db:
        run = db.get("5bb58492")
    last = len(run.steps) - 1
    messages = run.steps[last].inputs["messages"]
    assert messages[-1]["name"] == "list_deploys"
    patch = orjson.dumps([{"op": "remove", "path": f"/messages/{len(messages) - 1}"}]).decode()
    tools = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"))
    forked, diff = _fork(runner, store_path, "5bb58492", "--at", str(last), "--edit", patch,
                         extra=tools)  # fmt: skip
    edited = forked.steps[last]
    assert edited.inputs["messages"] == messages[:-1]  # what the model saw
    assert [c["name"] for c in edited.output["tool_calls"]] == ["list_deploys"]  # what it did
    assert [s.name for s in forked.steps[last + 1 :]] == ["list_deploys", run.steps[last].name]
    assert forked.metadata["move"] == "edit"
    assert diff["first_divergence"] == last and diff["change"] == "context changed"
    text = ok(invoke(runner, store_path, "diff", "5bb58492", forked.id)).stdout
    assert f"first divergence at step {last} (inputs (messages), output): context changed" in text


def test_swap_model_on_the_live_investigator(
    runner: CliRunner, store_path: Path, recorded: str
) -> None:
    """From step 2 on, every model turn of the running agent is asked of the swapped-in model
    through the model's resample function; turn 0 is served as recorded."""
    tools = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"))
    forked, diff = _fork(runner, store_path, recorded, "--from", "2", "--swap-model", "big",
                         extra=(*LIVE, *tools))  # fmt: skip
    with Store.open(store_path, read_only=True) as db:
        original = db.get(recorded)
    turns = [s for s in forked.steps if s.kind.value == "llm"]
    assert turns[0].inputs == original.steps[0].inputs  # served, as asked then
    assert [s.inputs["model"] for s in turns[1:]] == ["big"] * (len(turns) - 1)
    assert forked.outcome == 1.0  # the example's model answers alike under any name
    assert diff["first_divergence"] == 2 and diff["change"] == "model changed"
    assert forked.metadata["move"] == "swap-model"


def test_edit_in_the_trace_walk_runs_the_step_on_its_edited_inputs() -> None:
    from otel_replay.errors import InterventionError
    from otel_replay.replay import Intervention, fork
    from tests.attribution.models import CHAIN

    run, registry = CHAIN.trajectory(), CHAIN.registry()
    patch = [{"op": "replace", "path": "/arguments/service", "value": "payments"}]
    forked = fork(run, 1, Intervention.edit(patch), registry=registry, seed=1)
    assert forked.steps[1].inputs["arguments"] == {"service": "payments"}
    assert forked.steps[1].op_key != run.steps[1].op_key  # a new operation: run, not served
    assert forked.steps[1].output in ({"timeout_s": 30}, {"timeout_s": 1})
    with pytest.raises(InterventionError, match="through its resample function, and it has none"):
        fork(
            run,
            2,
            Intervention.edit([{"op": "add", "path": "/note", "value": 1}]),
            registry=registry,
        )


SWAP_RESAMPLERS = """
import os

from examples.incident.world import list_deploys, query_metrics, search_logs
from otel_replay.resamplers import ChatModelOptions, OpenAIChatModel, resampler

resampler("llm")(OpenAIChatModel(ChatModelOptions(base_url=os.environ["SWAP_TEST_URL"] + "/v1")))
resampler("tool", name="list_deploys")(lambda step, ctx: list_deploys(**step.inputs["arguments"]))
resampler("tool", name="query_metrics")(lambda step, ctx: query_metrics(**step.inputs["arguments"]))
resampler("tool", name="search_logs")(lambda step, ctx: search_logs(**step.inputs["arguments"]))
"""


def test_swap_model_asks_the_other_model_from_step_k_on_and_not_before(
    runner: CliRunner, store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeModelServer()  # the one fake model server; it keeps every request's body
    url = server.url

    def asked() -> set[str]:
        return {body["model"] for body in server.requests}

    try:
        monkeypatch.setenv("SWAP_TEST_URL", url)
        module = tmp_path / "swap_resamplers.py"
        module.write_text(SWAP_RESAMPLERS)
        ok(invoke(runner, store_path, "import", str(SAMPLES)))
        code = ("--resamplers", str(module))
        forked, diff = _fork(
            runner, store_path, "5bb58492", "--from", "2", "--swap-model", "gpt-swapped", extra=code
        )
        assert asked() == {"gpt-swapped"}  # nothing was asked of a model before step 2
        with Store.open(store_path, read_only=True) as db:
            original = db.get("5bb58492")
        served = [(s.op_key, s.output) for s in forked.steps[:2]]
        assert served == [(s.op_key, s.output) for s in original.steps[:2]]  # from the record
        assert forked.steps[2].inputs["model"] == "gpt-swapped"
        assert forked.metadata["move"] == "swap-model" and diff["first_divergence"] == 2
        assert diff["change"] == "model changed"
        server.requests.clear()
        from_start, _ = _fork(
            runner, store_path, "5bb58492", "--from", "0", "--swap-model", "gpt-swapped", extra=code
        )
        assert from_start.steps[0].inputs["model"] == "gpt-swapped"
        assert asked() == {"gpt-swapped"}
    finally:
        server.stop()


def test_swap_model_in_the_trace_walk() -> None:
    from otel_replay.replay import Intervention, fork
    from tests.attribution.models import CHAIN

    run, registry = CHAIN.trajectory(), CHAIN.registry()
    forked = fork(run, 3, Intervention.swap_model("m2"), registry=registry, seed=1)
    models = [s.inputs.get("model") for s in forked.steps if s.kind.value == "llm"]
    assert [s.index for s in run.steps if s.kind.value == "llm"] == [0, 3, 5]
    assert models == [run.steps[0].inputs.get("model"), "m2", "m2"]
