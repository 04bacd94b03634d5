"""``--tools simulate``: a lone incident attributed with no code. The scheduling assistant's failing
run is alone in its store, so ``--tools recorded`` can only hold the slot lookup that failed it
("cannot tell", naming that step); with the model server of ``--llm`` playing the tools (a server
that samples, as real ones do), the lookup is varied and named as the step the failure became
inevitable at. The report says which results were played and how many requests that took."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import Step, StepKind, Trajectory
from otel_replay.messages import tool_message
from otel_replay.resamplers._simulate import INSTRUCTIONS, result_of, tool_definitions
from tests.cli_helpers import invoke, ok

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_free_slots",
            "description": "The free slots of a person's calendar on a day.",
            "parameters": {
                "type": "object",
                "properties": {"email": {"type": "string"}, "date": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "book_meeting",
            "description": "Book a slot.",
            "parameters": {"type": "object", "properties": {"slot": {"type": "string"}}},
        },
    },
]
OPENING = [
    {"role": "system", "content": "You schedule meetings. Look the calendar up, then book."},
    {"role": "user", "content": "Book me a meeting with ana@example.com on 2026-12-07 (CAL-1003)."},
]
ARGUMENTS = {"email": "ana@example.com", "date": "2026-12-07"}
NO_SLOTS = "I found no free slot for ana@example.com on 2026-12-07."


def _lone_incident() -> Trajectory:
    """The calendar said there was no free slot (the incident); the assistant gave up."""
    ask = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "name": "get_free_slots", "arguments": ARGUMENTS}],
    }
    inputs = {"model": "scheduler", "tools": TOOLS}
    said = tool_message([], "get_free_slots", "call_1")
    return Trajectory.build(
        "cal-1003",
        [
            Step(StepKind.LLM, "scheduler", {**inputs, "messages": OPENING}, ask),
            Step(
                StepKind.TOOL,
                "get_free_slots",
                {"arguments": ARGUMENTS, "tool_call_id": "call_1"},
                [],
            ),
            Step(
                StepKind.LLM,
                "scheduler",
                {**inputs, "messages": [*OPENING, ask, said]},
                {"role": "assistant", "content": NO_SLOTS},
            ),
        ],
    )


class World:
    """The model server's rules: the assistant's turns, and (asked to play a tool) a calendar
    that samples its answer, as a real model does."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.played = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[0]["content"] == INSTRUCTIONS:
            return self._play(json.loads(messages[1]["content"]))
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            call = {"name": "get_free_slots", "arguments": json.dumps(ARGUMENTS)}
            return {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                         "function": call}]}  # fmt: skip
        last = json.loads(results[-1]["content"])
        if isinstance(last, dict) and "booked" in last:
            return {"role": "assistant", "content": f"Booked {last['booked']} with ana."}
        if isinstance(last, list) and last:
            call = {"name": "book_meeting", "arguments": json.dumps({"slot": last[0]})}
            return {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function",
                                                         "function": call}]}  # fmt: skip
        return {"role": "assistant", "content": NO_SLOTS}

    def _play(self, question: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.played += 1
            draw = self._random.random()
        if question["tool"] == "book_meeting":
            result: Any = {"booked": question["arguments"]["slot"]}
        else:  # the calendar: mostly free somewhere that day, sometimes full
            assert question["description"].startswith("The free slots")
            assert question["examples"] == [{"arguments": ARGUMENTS, "result": []}]
            result = [] if draw < 0.25 else [f"{question['arguments']['date']} 10:00"]
        return {"role": "assistant", "content": f"```json\n{json.dumps(result)}\n```"}


@pytest.fixture
def lone(tmp_path: Path, runner: CliRunner, store_path: Path) -> Path:
    runs = tmp_path / "cal.steps.jsonl"
    runs.write_bytes(orjson.dumps(_lone_incident().to_record()) + b"\n")
    ok(invoke(runner, store_path, "import", str(runs)))
    return store_path


def _attribute(runner: CliRunner, store: Path, url: str, tools: str, *more: str) -> dict[str, Any]:
    result = ok(
        invoke(runner, store, "attribute", "cal-1003", "--tools", tools, "--llm", "openai",
               "--llm-base-url", url, "--success-if", "Booked", "--seed", "3", "--json", *more)
    )  # fmt: skip
    return dict(orjson.loads(result.stdout))


def test_a_lone_incident_is_attributed_to_the_tool_the_model_plays(
    runner: CliRunner, lone: Path
) -> None:
    world = World(seed=11)
    with FakeModelServer(replying(world)) as server:
        held = _attribute(runner, lone, server.base_url, "recorded")
        assert world.played == 0
        page = lone.parent / "report.html"
        report = _attribute(runner, lone, server.base_url, "simulate", "--out", str(page))
    # recorded draws alone hold the lookup: nothing tells whether it mattered
    assert held["verdict"] == "cannot-tell"
    assert held["steps"][1]["varied"] is False
    assert "only this run's result for get_free_slots" in held["steps"][1]["variation"]
    assert "--tools simulate" in held["explanation"]
    # the model playing the calendar varies it: the failure became inevitable there
    assert report["verdict"] == "culprit", report["explanation"]
    assert report["point_of_commitment"] == 1 and report["steps"][1]["name"] == "get_free_slots"
    assert report["steps"][1]["varied"] is True
    assert "the model playing get_free_slots" in report["steps"][1]["variation"]
    simulated = report["evidence"]["simulated"]
    assert simulated["calls"] == world.played > 0  # every request that played a tool, counted
    assert {t["tool"] for t in simulated["tools"]} == {"get_free_slots", "book_meeting"}
    assert "played by the model" in report["explanation"]
    # the page says what varied each step: the model playing the tool, the built-in model
    html = page.read_text()
    assert "varied by the model playing get_free_slots" in html
    assert "varied by the built-in model, asked again" in html


def test_simulate_without_a_model_is_said_before_anything_runs(
    runner: CliRunner, lone: Path
) -> None:
    result = invoke(runner, lone, "attribute", "cal-1003", "--tools", "simulate",
                    "--success-if", "Booked")  # fmt: skip
    assert result.exit_code == 1
    assert "--tools simulate has a model play the tools" in result.stderr
    assert "--llm openai" in result.stderr


def test_what_the_model_is_told_of_a_tool_and_how_its_reply_is_read() -> None:
    told = tool_definitions(_lone_incident())
    assert told["get_free_slots"]["description"].startswith("The free slots")
    assert told["book_meeting"]["parameters"]["properties"] == {"slot": {"type": "string"}}
    assert result_of('```json\n["10:00"]\n```') == ["10:00"]
    assert result_of(' {"booked": "10:00"} ') == {"booked": "10:00"}
    assert result_of("the calendar is full") == "the calendar is full"


def test_a_reply_of_a_fence_and_many_blank_lines_is_read_at_once() -> None:
    """A model's reply is read in time linear in its length (issue 40): a fence, then 20,000 blank
    lines, took 12 s when a pattern around the fence's body backtracked through them. The time is
    this thread's processor time, which other work on the machine does not stretch."""
    started = time.thread_time()
    assert result_of("```json" + "\n" * 20_000 + "x") == "```json" + "\n" * 20_000 + "x"
    assert result_of("```" + "\n" * 20_000 + "[1]\n```") == [1]
    assert time.thread_time() - started < 3.0


def test_a_request_that_failed_is_counted_all_the_same() -> None:
    """A request to play a tool that failed may have been paid: it is counted, tokens unknown."""
    from otel_replay.resamplers._draws import drawing
    from otel_replay.resamplers._simulate import SimulatedTools

    class Down:
        def ask(self, model: str, system: str, user: str, responses: bool = False) -> Any:
            raise RuntimeError("http://127.0.0.1:9/v1 could not be reached")

    run = _lone_incident()
    tools = SimulatedTools(Down(), run)
    with drawing() as log, pytest.raises(RuntimeError, match="could not be reached"):
        tools.play(run.steps[1])
    assert [c.tool for c in log.simulated] == ["get_free_slots"]
    assert log.simulated_tokens == [None]
