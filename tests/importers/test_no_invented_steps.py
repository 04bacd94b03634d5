"""No step without a span: every framework fixture imports as exactly the operations its scenario
performed, however its instrumentation recorded them.

For each run of each fixture in ``tests/fixtures/frameworks/``:

* every step was read from a span, except the steps listed as rebuilt (and those have no span);
* no two steps are one operation: no span gives two steps, no tool call is answered by two steps,
  no model turn is two steps;
* the model-call steps are as many as the model requests the fake server answered, and the tool
  steps (with the retrievals an agent ran as tools or pipeline steps) as many as the tools run.

What was performed is the tally the harness writes on each run's root span
(``agent_replay.scenario.model_requests``, ``agent_replay.scenario.tool_executions``, see
``scripts/frameworks/harness.py``). Fixtures generated before the harness wrote it carry none; for
them the tally is derived from the scenario's fixed behaviour in `USUAL` and `DIFFERENT` below.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_replay import Trajectory
from otel_replay.hashing import canonical_json
from tests.importers.test_frameworks import EXPECTED, FIXTURES, _runs

#: (model requests, tools run) of each run of the scenario as the fake model's policy drives it:
#: ``pass`` looks the order up, tracks it, checks the policy and answers; ``tool-error`` fails the
#: lookup and apologises; ``retrieval`` searches the policies and answers; ``parallel`` asks for two
#: tools in its first response, then tracks the shipment and answers.
USUAL = {"pass": (4, 3), "tool-error": (2, 1), "retrieval": (2, 1), "parallel": (3, 3)}


def _one_more_tool(runs: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    return {run: (calls, tools + 1) for run, (calls, tools) in runs.items()}


#: Fixtures without a tally whose framework performs other operations than `USUAL` says.
DIFFERENT: dict[str, dict[str, tuple[int, int]]] = {
    # the framework runs its own final_answer tool once the model has answered
    "beeai": _one_more_tool(USUAL),
    # ReAct: a last turn calls the `finish` pseudo-tool, then one more call extracts the answer;
    # the retrieval run is a pipeline: one dspy.Retrieve, one model call
    "dspy": {"pass": (5, 4), "tool-error": (3, 2), "retrieval": (1, 1)},
    # the retrieval run is a pipeline: the retriever, then one model call
    "haystack": {**USUAL, "retrieval": (1, 1)},
    # the model's last turn calls the final_answer tool rather than answering in text
    "smolagents": _one_more_tool(USUAL),
}


def _tallies(name: str) -> dict[str, tuple[int, int]]:
    """The tally the harness wrote on each run's root span, by run name (empty: none written)."""
    found: dict[str, tuple[int, int]] = {}
    for line in (FIXTURES / f"{name}.otlp.jsonl").read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                    calls = attrs.get("agent_replay.scenario.model_requests")
                    tools = attrs.get("agent_replay.scenario.tool_executions")
                    if calls is not None and tools is not None:
                        run = span["name"].removeprefix("support run ")
                        found[run] = (int(calls["intValue"]), int(tools["intValue"]))
    return found


def _performed(name: str) -> dict[str, tuple[int, int]]:
    tallies = _tallies(name)
    if tallies:
        return tallies
    return {run: DIFFERENT.get(name, USUAL)[run] for run in EXPECTED[name]}


def _invented(run: Trajectory) -> list[str]:
    """What in ``run`` is not one step per recorded operation."""
    rebuilt = set(run.metadata.get("reconstructed_steps", []))
    found = [
        f"step {s.index} ({s.kind.value} {s.name}): "
        + ("rebuilt, yet has a span" if s.index in rebuilt else "no span and not marked rebuilt")
        for s in run.steps
        if (s.span_id is None) != (s.index in rebuilt)
    ]
    spans = [s.span_id for s in run.steps if s.span_id is not None]
    found += [
        f"span {span} gives two steps" for span in sorted(set(spans)) if spans.count(span) > 1
    ]
    calls = [
        s.inputs["tool_call_id"]
        for s in run.steps
        if s.kind.value in ("tool", "retriever") and isinstance(s.inputs.get("tool_call_id"), str)
    ]
    found += [f"call {call} answered twice" for call in sorted(set(calls)) if calls.count(call) > 1]
    turns = [canonical_json(_turn(s.output)) for s in run.steps if s.kind.value == "llm"]
    turns = [t for t in turns if t != b"null"]
    found += ["one model turn is two steps" for t in sorted(set(turns)) if turns.count(t) > 1]
    return found


def _turn(output: Any) -> Any:
    """A model turn without its message ids (a response item's id is not part of what was said)."""
    if isinstance(output, list):
        return [_turn(o) for o in output]
    if isinstance(output, dict):
        return {k: _turn(v) for k, v in output.items() if k != "id"}
    return output


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_steps_are_the_operations_performed(name: str) -> None:
    runs = _runs(name)
    performed = _performed(name)
    assert sorted(performed) == sorted(runs)
    for run_name, (requests, tools) in performed.items():
        run = runs[run_name]
        assert _invented(run) == [], run_name
        kinds = [s.kind.value for s in run.steps]
        assert kinds.count("llm") == requests, run_name
        assert kinds.count("tool") + kinds.count("retriever") == tools, run_name


def test_the_regenerated_fixtures_carry_their_tally() -> None:
    """The fixtures generated since the harness counts what it served hold its tally, and it is
    the usual scenario's (the test above reads it rather than the table)."""
    for name in (
        "langsmith-otel",
        "openai-agents-openllmetry-alone",
        "openai-agents-openllmetry-streamed",
    ):
        assert _tallies(name) == USUAL, name
