"""``examples/incident/openai_app.py`` as the README runs it: the incident investigator written on the
OpenAI SDK with no agent-replay in it, recorded with ``--instrument openai`` against the example's
local model server, replayed with the server stopped, forked, and turned into a regression test."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from examples.incident import openai_server
from otel_replay.model import StepStatus
from otel_replay.replay import uninstrument
from otel_replay.resamplers._openai import rebuild_messages
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

APP = f"{ROOT / 'examples' / 'incident' / 'openai_app.py'}:main"
VERIFIER = f"{ROOT / 'examples' / 'incident' / 'agent.py'}:outcome"


@pytest.fixture
def model() -> Iterator[tuple[object, str]]:
    server, url = openai_server.serve()
    try:
        yield server, url
    finally:
        server.shutdown()
        server.server_close()
        uninstrument()


def _record(runner: CliRunner, store: Path, agent: list[str], url: str) -> dict[str, Any]:
    """``record`` the investigator against the model server at ``url``: the command's summary."""
    summary: dict[str, Any] = orjson.loads(
        ok(
            invoke(runner, store, "record", *agent, "--input",
                   orjson.dumps({"base_url": url}).decode(), "--json")
        ).stdout
    )  # fmt: skip
    return summary


@pytest.mark.scenario  # the whole story, its exported test run by a pytest of its own
def test_the_openai_sdk_investigator_records_replays_forks_and_becomes_a_test(
    model: tuple[object, str], runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    server, url = model
    agent = ["--agent", APP, "--instrument", "openai"]
    recorded = orjson.loads(
        ok(
            invoke(
                runner,
                store_path,
                "record",
                *agent,
                "--input",
                orjson.dumps({"base_url": url}).decode(),
                "--verifier",
                VERIFIER,
                "--json",
            )
        ).stdout
    )
    assert recorded["steps"] == 5 and recorded["outcome"] == 1.0
    run_id = recorded["id"]
    # the deploy list comes back empty: the investigator, live from there, no longer finds v841
    forked = orjson.loads(
        ok(
            invoke(
                runner,
                store_path,
                "fork",
                run_id,
                "--at",
                "3",
                "--value",
                "[]",
                *agent,
                "--verifier",
                VERIFIER,
                "--json",
            )
        ).stdout
    )
    assert forked["diff"]["first_divergence"] == 3 and forked["diff"]["right"]["outcome"] == 0.0
    # the fork failed; attributing it re-runs the unmodified agent: the emptied deploy list is it
    fork_id = forked["diff"]["right"]["id"]
    report = orjson.loads(
        ok(
            invoke(
                runner,
                store_path,
                "attribute",
                fork_id,
                *agent,
                "--verifier",
                VERIFIER,
                "--json",
            )
        ).stdout
    )
    assert report["point_of_commitment"] == 3 and report["config"]["driver"].startswith("agent:")
    test = tmp_path / "test_incident.py"
    ok(
        invoke(
            runner, store_path, "export", run_id, "--format", "pytest", *agent, "--out", str(test)
        )
    )
    server.shutdown()  # type: ignore[attr-defined]
    replayed = invoke(runner, store_path, "replay", run_id, *agent, "--json")
    assert replayed.exit_code == 0 and orjson.loads(replayed.stdout)["identical"] is True
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_swap_model_on_the_unmodified_agent_asks_the_server_for_the_other_model_from_k_on(
    model: tuple[object, str],
    runner: CliRunner,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fork --swap-model and attribute --swap-model with the built-in model resampler (--llm
    openai): the local server is asked for the swapped-in model for every model turn from step K
    on, and for nothing before."""
    _, url = model
    asked: list[str] = []
    answer = openai_server.answer
    monkeypatch.setattr(
        openai_server,
        "answer",
        lambda request: asked.append(request.body["model"]) or answer(request),
    )
    agent = ["--agent", APP, "--instrument", "openai", "--verifier", VERIFIER]
    recorded = _record(runner, store_path, agent, url)
    assert set(asked) == {openai_server.MODEL_NAME} and len(asked) == 3  # turns 0, 2 and 4
    asked.clear()
    llm = ["--llm", "openai", "--llm-base-url", url]
    made = orjson.loads(
        ok(
            invoke(runner, store_path, "fork", recorded["id"], "--from", "2", "--swap-model",
                   "gpt-strong", *agent, *llm, "--json")
        ).stdout
    )  # fmt: skip
    assert asked == ["gpt-strong", "gpt-strong"]  # turns 2 and 4; turn 0 served from the record
    diff = made["diff"]
    assert diff["first_divergence"] == 2 and diff["change"] == "model changed"
    assert diff["right"]["outcome"] == 1.0  # the rule-based model answers alike under any name
    # edit-context through the same path: the deploy list taken out of turn 4's conversation,
    # the server asked on the edited one, and the SDK agent handed its answer: it asks again
    with Store.open(store_path, read_only=True) as db:
        messages = db.get(recorded["id"]).steps[4].inputs["messages"]
    assert messages[-1]["role"] == "tool"
    patch = [{"op": "remove", "path": f"/messages/{len(messages) - 1}"}]
    edited = orjson.loads(
        ok(
            invoke(runner, store_path, "fork", recorded["id"], "--at", "4", "--edit",
                   orjson.dumps(patch).decode(), *agent, *llm, "--json")
        ).stdout
    )  # fmt: skip
    with Store.open(store_path, read_only=True) as db:
        steps = db.get(edited["id"]).steps
    assert steps[4].inputs["messages"] == messages[:-1]
    assert [c["name"] for c in steps[4].output["tool_calls"]] == ["list_deploys"]
    assert steps[5].name == "list_deploys" and edited["diff"]["change"] == "context changed"
    failing = orjson.loads(
        ok(
            invoke(runner, store_path, "fork", recorded["id"], "--at", "3", "--observe", "[]",
                   *agent, "--json")
        ).stdout
    )["id"]  # fmt: skip
    asked.clear()
    report = orjson.loads(
        ok(
            invoke(runner, store_path, "attribute", failing, "--swap-model", "gpt-other",
                   *agent, *llm, "--strategy", "fixed", "--rollouts", "2", "--json")
        ).stdout
    )  # fmt: skip
    assert asked and set(asked) == {"gpt-other"}  # every turn run again, asked of it
    assert report["mode"] == "swap-model" and report["swap"]["model"] == "gpt-other"


def test_a_recorded_sdk_run_is_shown_and_attributed_without_its_agent(
    model: tuple[object, str], runner: CliRunner, store_path: Path
) -> None:
    """The record keeps the SDK's responses, and reads like an imported run: `show` gives each
    turn's words and calls, and a failed fork is attributed with the README's resample functions
    and `--success-if`, no agent and no server, re-driven as its tool-calling loop."""
    server, url = model
    agent = ["--agent", APP, "--instrument", "openai", "--verifier", VERIFIER]
    recorded = _record(runner, store_path, agent, url)
    failing = orjson.loads(
        ok(
            invoke(runner, store_path, "fork", recorded["id"], "--at", "3", "--observe", "[]",
                   *agent, "--json")
        ).stdout
    )["id"]  # fmt: skip
    server.shutdown()  # type: ignore[attr-defined]
    with Store.open(store_path, read_only=True) as db:
        run = db.get(failing)
    assert run.steps[0].output["object"] == "chat.completion"  # as the SDK got it
    # a turn after a changed step hears the conversation rebuilt from the run: in messages
    changed = [*run.steps[:3], run.steps[3].with_result([{"version": "v9"}], StepStatus.OK, None)]
    heard = rebuild_messages(run.steps[4], changed)
    assert [m["role"] for m in heard] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert heard[4]["tool_calls"][0]["name"] == "list_deploys" and "v9" in heard[5]["content"]
    shown = ok(invoke(runner, store_path, "show", recorded["id"], "--json")).stdout
    assert '"chatcmpl-' in shown  # the record holds the response as it came back
    table = ok(invoke(runner, store_path, "show", recorded["id"])).stdout
    assert "chatcmpl" not in table and "checkout. → query_metrics(" in table
    tools = str(ROOT / "examples" / "incident" / "tools.py")
    report = orjson.loads(
        ok(
            invoke(runner, store_path, "attribute", failing, "--resamplers", tools,
                   "--success-if", "v841", "--repair", "--json")
        ).stdout
    )  # fmt: skip
    assert report["config"]["driver"].startswith("chat")
    assert report["point_of_commitment"] == 3
    assert report["repair"]["move"] == "observe" and report["repair"]["step_index"] == 3
