"""A LangGraph agent on ``ChatAnthropic`` (issue 38, part 6), its sync tools run by LangGraph's
``ToolNode`` on worker threads, against the local fake Messages server (fresh ids on every
response). Traced by the real OpenInference LangChain instrumentor into the OTel SDK and sent by
the OTLP/HTTP exporter to ``agent-replay serve``, its runs import as replayable, and the run the
shipping outage failed is attributed to the tracking tool with no code: ``--llm anthropic`` asks
the model again in the Messages API, ``--tools recorded`` draws the tool's results from the other
runs. Recorded with ``record --instrument anthropic`` (LangChain calls
``messages.with_raw_response.create``), it answers as it does without agent-replay and replays
identically. Exported as a pytest test, the recorded run passes wherever the test is moved inside
its project; the imported run is refused at once, saying why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from examples import fake_model_server
from examples.fake_model_server import FakeModelServer
from otel_replay.model import StepKind, Trajectory
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error

try:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.scenarios import langgraph_agent
    from tests.scenarios.served import traced_to_serve
except ImportError:  # the test extra has them; under CI their absence is a failure
    import os

    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph or its instrumentor is not installed (the test extra)",
                allow_module_level=True)  # fmt: skip

FAKE = fake_model_server
AGENT = f"{Path(langgraph_agent.__file__)}:support"
QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
SUCCESS = "qualifies for a refund"
DOWN = [False, True, False, False]  # the second run meets the shipping outage


@pytest.fixture
def models() -> Iterator[FakeModelServer]:
    with FakeModelServer() as serving:
        yield serving


@pytest.fixture
def server(models: FakeModelServer) -> str:
    return models.url


def _traced(store: Path, url: str) -> list[str]:
    """The agent run once per entry of `DOWN`, traced by OpenInference and sent over OTLP/HTTP to
    ``serve``; the stored runs' ids in the order they ran."""
    answers, ids = traced_to_serve(
        store,
        LangChainInstrumentor(),
        "support-graph",
        lambda: [langgraph_agent.support(QUESTION, url, down) for down in DOWN],
    )
    assert answers == [FAKE.APOLOGY if down else FAKE.FINAL_ANSWER for down in DOWN]
    return ids


def _stored(store: Path, run_id: str) -> Trajectory:
    with Store.open(store, read_only=True) as db:
        return db.get(run_id)


def test_traced_runs_import_and_the_outage_is_attributed_to_its_tool_with_no_code(
    server: str, models: FakeModelServer, store_path: Path
) -> None:
    runner = CliRunner()
    ids = _traced(store_path, server)
    assert len(ids) == len(DOWN)
    listed = json.loads(ok(invoke(runner, store_path, "list", "--json")).stdout)
    assert {row["replayability"] for row in listed} == {"replayable"}
    failing = _stored(store_path, ids[1])
    assert [(s.kind.value, s.name) for s in failing.steps] == [
        ("llm", "support-claude"), ("tool", "lookup_order"), ("llm", "support-claude"),
        ("tool", "track_shipment"), ("llm", "support-claude"),
    ]  # fmt: skip
    # traces carry no outcome: scored, exactly the outage's run fails
    ok(invoke(runner, store_path, "score", "--all", "--success-if", SUCCESS))
    failed = json.loads(
        ok(invoke(runner, store_path, "list", "--where", "failed", "--json")).stdout
    )
    assert [row["id"] for row in failed] == [ids[1]]
    no_code = ["--llm", "anthropic", "--llm-base-url", server, "--tools", "recorded"]
    many = ok(invoke(runner, store_path, "attribute", "--all-failing", *no_code, "--success-if",
                     SUCCESS, "--json"))  # fmt: skip
    rows = json.loads(many.stdout)
    assert [(r["id"], r["status"], r["verdict"], r["step"]) for r in rows] == [
        (ids[1], "done", "culprit", "tool track_shipment")
    ]

    before = len(models.paths)
    result = ok(
        invoke(runner, store_path, "attribute", ids[1], "--llm", "anthropic", "--llm-base-url",
               server, "--tools", "recorded", "--success-if", SUCCESS, "--workers", "4", "--json")
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["verdict"] == "culprit"
    assert report["point_of_commitment"] == 3
    assert report["steps"][3]["name"] == "track_shipment" and report["steps"][3]["significant"]
    # every turn re-asked in the Messages API, each request counted in the report
    assert set(models.paths[before:]) == {"/v1/messages"}
    assert report["cost"]["model_calls"] + report["cost"]["left_out"]["model_calls"] == len(
        models.paths[before:]
    )

    # the what-if with no code: the tracking tool answers, the model asked again goes on
    answered = json.dumps(langgraph_agent.SHIPMENT)
    forked = ok(
        invoke(runner, store_path, "fork", ids[1], "--at", "3", "--observe", answered, "--llm",
               "anthropic", "--llm-base-url", server, "--tools", "recorded", "--success-if",
               SUCCESS, "--json")
    )  # fmt: skip
    fork = _stored(store_path, json.loads(forked.stdout)["id"])
    assert fork.outcome == 1.0
    assert [s.name for s in fork.steps[4:]] == [
        "support-claude",
        "search_policies",
        "support-claude",
    ]


def test_the_outage_alone_in_its_store_cannot_be_told_from_the_record(
    server: str, store_path: Path, tmp_path: Path
) -> None:
    """Alone in its store, the tracking tool's one recorded result cannot vary it: cannot tell,
    naming that step, never 'no effect'."""
    runner = CliRunner()
    ids = _traced(store_path, server)
    alone = tmp_path / "alone.db"
    exported = tmp_path / "incident.jsonl"
    ok(invoke(runner, store_path, "export", ids[1], "--out", str(exported)))
    ok(invoke(runner, alone, "import", str(exported)))
    result = ok(
        invoke(runner, alone, "attribute", ids[1], "--llm", "anthropic", "--llm-base-url", server,
               "--tools", "recorded", "--success-if", SUCCESS, "--json")
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["verdict"] == "cannot-tell"
    tracking = report["steps"][3]
    assert tracking["name"] == "track_shipment" and tracking["varied"] is False
    assert "track_shipment" in report["explanation"]
    assert not any(step.get("no_effect") for step in report["steps"] if step["kind"] == "tool")


def _recorded(store: Path, url: str, agent: str, shipping_down: bool) -> Trajectory:
    inputs = json.dumps({"question": QUESTION, "base_url": url, "shipping_down": shipping_down})
    result = ok(
        invoke(CliRunner(), store, "record", "--agent", agent, "--instrument", "anthropic",
               "--input", inputs)
    )  # fmt: skip
    return _stored(store, result.output.strip().splitlines()[-1])


@pytest.mark.parametrize("shipping_down", [False, True], ids=["answers", "apologises"])
def test_recording_the_graph_changes_nothing_it_does(
    server: str, store_path: Path, shipping_down: bool
) -> None:
    without = langgraph_agent.support(QUESTION, server, shipping_down)
    langgraph_agent.TOOL_THREADS.clear()
    run = _recorded(store_path, server, AGENT, shipping_down)
    assert run.metadata["answer"] == without
    assert without == (FAKE.APOLOGY if shipping_down else FAKE.FINAL_ANSWER)
    assert "agent_error" not in run.metadata and "recorder_error" not in run.metadata
    kinds = [(s.kind, s.name) for s in run.steps]
    tools = [name for kind, name in kinds if kind is StepKind.TOOL]
    assert tools == ["lookup_order", "track_shipment"] + (
        [] if shipping_down else ["search_policies"]
    )
    assert len(run.steps) == 2 * len(tools) + 1
    assert any(name != "MainThread" for name in langgraph_agent.TOOL_THREADS)
    # the model steps are the Messages API responses LangChain parsed from the raw response
    models = [s for s in run.steps if s.kind is StepKind.LLM]
    assert all(s.output["type"] == "message" for s in models)
    replayed = ok(invoke(CliRunner(), store_path, "replay", run.id))
    assert "identical" in replayed.output
    linted = ok(invoke(CliRunner(), store_path, "lint", run.id))
    assert "1 replayable" in linted.output


def _pytest(test: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
    return subprocess.run(command, cwd=test.parent, capture_output=True, text=True, timeout=300)


def test_the_recorded_run_exported_as_a_test_still_passes_once_moved(
    server: str, store_path: Path, tmp_path: Path
) -> None:
    """A project of its own: the agent in ``agents/``, the test exported to ``tests/``, then moved
    two folders down: it finds the agent from the project's root."""
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "support"\n')
    agent_file = project / "agents" / "support_graph.py"
    shutil.copy(langgraph_agent.__file__, agent_file)
    run = _recorded(store_path, server, f"{agent_file}:support", True)
    test = project / "tests" / "test_outage.py"
    test.parent.mkdir()
    ok(invoke(CliRunner(), store_path, "export", run.id, "--format", "pytest", "--agent",
              f"{agent_file}:support", "--out", str(test)))  # fmt: skip
    assert 'AGENT = "agents/support_graph.py:support"' in test.read_text()
    moved = project / "tests" / "regressions" / "outages"
    moved.mkdir(parents=True)
    for written in (test, test.with_suffix(".jsonl")):
        written.rename(moved / written.name)
    passed = _pytest(moved / test.name)
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout + passed.stderr


def test_an_imported_run_is_refused_as_a_test_at_once_saying_why(
    server: str, store_path: Path, tmp_path: Path
) -> None:
    ids = _traced(store_path, server)
    out = tmp_path / "test_outage.py"
    result = invoke(CliRunner(), store_path, "export", ids[1], "--format", "pytest", "--agent",
                    AGENT, "--out", str(out))  # fmt: skip
    line = one_line_error(result)
    assert ids[1] in line and "imported from a trace (otlp-http)" in line
    assert "agent-replay record" in line
    assert not out.exists() and not out.with_suffix(".jsonl").exists()
