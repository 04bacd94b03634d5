"""``fork --remove`` (issue 29, part 4): the step never happened, the run goes on without it; the
same fork from Python (`fork_move` with `MoveKind.REMOVE`, `fork` with `REMOVE`), under the live
agent, the tool-calling loop and the walk, and the rules' errors as for the other moves."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.errors import InterventionError
from otel_replay.messages import conversation
from otel_replay.model import StepKind, Trajectory
from otel_replay.replay import Driver, Move, MoveKind, diff, fork, fork_move, record
from otel_replay.replay._plan import REMOVE
from otel_replay.resamplers import load_registry
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES
from tests.replay.clock_agents import ticket

TICKET = "tests.replay.clock_agents:ticket"
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
PASSING = "e88b759131db6e32d8dcb35f94c662cd"  # turn, query_metrics, turn, list_deploys, turn


def _names(run: Trajectory) -> list[str]:
    return [step.name for step in run.steps]


def test_fork_remove_on_a_recorded_agent_leaves_the_step_out_and_goes_on(
    runner: CliRunner, store_path: Path
) -> None:
    made = ok(invoke(runner, store_path, "record", "--agent", TICKET, "--json")).stdout
    run_id = orjson.loads(made)["id"]
    said = ok(
        invoke(runner, store_path, "fork", run_id, "--at", "4", "--remove", "--agent", TICKET,
               "--json")
    ).stdout  # fmt: skip
    printed = orjson.loads(said)
    assert (printed["at"], printed["move"]) == (4, "remove")
    with Store.open(store_path, read_only=True) as db:
        run, forked = db.get(run_id), db.get(printed["id"])
    assert _names(run) == ["ctx.now", "ctx.uuid", "ctx.random", "owner", "load", "ctx.now",
                           "ctx.uuid", "file"]  # fmt: skip
    # "load" never happened: the agent got None for it and filed the ticket all the same
    assert _names(forked) == ["ctx.now", "ctx.uuid", "ctx.random", "owner", "ctx.now",
                              "ctx.uuid", "file"]  # fmt: skip
    assert forked.steps[6].inputs == {"arguments": {"owner": "ana", "load": None}}
    assert forked.metadata["move"] == "remove" and forked.metadata["fork_at"] == 4
    by_python = fork(run, 4, REMOVE, agent=ticket)
    assert by_python.id == forked.id and by_python.identity == forked.identity
    assert by_python.id == fork_move(run, 4, Move(MoveKind.REMOVE), agent=ticket).id
    shown = ok(invoke(runner, store_path, "fork", run_id, "--at", "4", "--remove", "--agent",
                      TICKET)).stdout  # fmt: skip
    assert "first divergence at step 4" in shown


def test_fork_remove_of_a_tool_call_in_the_loop_leaves_it_out_of_the_conversation(
    runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    said = ok(invoke(runner, store_path, "fork", PASSING, "--at", "3", "--remove", "--resamplers",
                     TOOLS, "--json")).stdout  # fmt: skip
    with Store.open(store_path, read_only=True) as db:
        run, forked = db.get(PASSING), db.get(orjson.loads(said)["id"])
    assert diff(run, forked).common == 3  # the steps before it held
    asked = forked.steps[3]
    assert asked.kind is StepKind.LLM  # the next model turn, asked without the deploy list
    messages = conversation(asked.inputs)
    said_by_tools = [m for m in messages if m.get("role") == "tool"]
    assert [m.get("name") for m in said_by_tools] == ["query_metrics"]
    calls = [c.get("name") for m in messages for c in m.get("tool_calls") or []]
    assert "list_deploys" not in calls
    walked = fork_move(run, 3, Move(MoveKind.REMOVE), driver=Driver.TRACE,
                       registry=load_registry([TOOLS]))  # fmt: skip
    assert [s.index for s in walked.steps] == [0, 1, 2, 3] and _names(walked) == [
        n for i, n in enumerate(_names(run)) if i != 3
    ]


def test_removing_a_model_turn_from_the_loop_is_refused(
    runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    with Store.open(store_path, read_only=True) as db:
        run = db.get(PASSING)
    with pytest.raises(InterventionError) as caught:
        fork_move(run, 2, Move(MoveKind.REMOVE))
    assert str(caught.value) == (
        "remove on model turn 2: the tool-calling loop's next step is what that turn asked for, "
        "so it has nothing to go on from; remove a tool step, change the turn with do, or walk "
        "the record (driver='trace')"
    )
    line = one_line_error(invoke(runner, store_path, "fork", PASSING, "--at", "2", "--remove"))
    assert line == (
        "error: --remove on model turn 2: the tool-calling loop's next step is what that turn "
        "asked for, so it has nothing to go on from; remove a tool step, change the turn with "
        "--do, or walk the record (--driver trace)"
    )
    walked = fork_move(run, 2, Move(MoveKind.REMOVE), driver=Driver.TRACE)
    assert len(walked.steps) == len(run.steps) - 1


def test_remove_takes_no_value_and_is_one_move_among_the_others(
    runner: CliRunner, store_path: Path
) -> None:
    with pytest.raises(InterventionError, match="the remove move takes no value, got 5"):
        Move(MoveKind.REMOVE, 5)
    recorded = record(ticket).trajectory
    assert (
        fork_move(recorded, 3, Move.parse(MoveKind.REMOVE, None), agent=ticket).metadata["move"]
        == "remove"
    )
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    both = invoke(runner, store_path, "fork", PASSING, "--at", "1", "--remove", "--fault", "error")
    assert "give exactly one of" in one_line_error(both) and "--remove" in both.stderr
