"""`fork`'s moves and their rules as library functions (issue 22, part 3): `fork_move` from Python
makes the fork `agent-replay fork` makes, move for move; a move that breaks a rule is an
`InterventionError` naming the setting as a Python caller passes it, and the same error from the
command names its option; the built-in agent is chosen by `Driver` alike."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

import otel_replay.attribution
import otel_replay.replay
from otel_replay.cli._common import OPTIONS_NAMED_OTHERWISE
from otel_replay.errors import AgentError, InterventionError, settings_as_options
from otel_replay.model import Trajectory
from otel_replay.replay import Driver, Intervention, Move, MoveKind, fork_move, record
from otel_replay.replay._builtin import built_in_agent, chat_loop
from otel_replay.replay._moves import injection
from otel_replay.resamplers import load_registry
from otel_replay.resamplers._loading import load_object
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES
from tests.replay.resume_agents import counting

TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
AGENT = f"{ROOT / 'examples' / 'incident' / 'agent.py'}:investigate"
RUN = "e88b759131db6e32d8dcb35f94c662cd"  # the passing sample: turn, query_metrics, turn, ...
DEPLOYS = 3  # its list_deploys step, asked for by the model turn at 2


@pytest.fixture
def imported(runner: CliRunner, store_path: Path) -> Trajectory:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    with Store.open(store_path, read_only=True) as db:
        return db.get(RUN)


def _cli_fork(runner: CliRunner, store: Path, *args: str) -> Trajectory:
    made = orjson.loads(ok(invoke(runner, store, "fork", RUN, *args, "--json")).stdout)
    with Store.open(store, read_only=True) as db:
        return db.get(made["id"])


# (the command's options, the same move from Python, the step, the driver)
MOVES: list[tuple[list[str], Move, int, Driver]] = [
    (["--observe", "[]"], Move(MoveKind.OBSERVE, []), DEPLOYS, Driver.AUTO),
    (["--value", "[]"], Move(MoveKind.OUTPUT, []), DEPLOYS, Driver.AUTO),
    (["--observe-error", "503"], Move(MoveKind.OBSERVE_ERROR, "503"), DEPLOYS, Driver.TRACE),
    (["--fault", "timeout"], Move(MoveKind.FAULT, "timeout"), DEPLOYS, Driver.AUTO),
    (["--fault", "truncate"], Move("fault", "truncate"), DEPLOYS, Driver.TRACE),
    (
        ["--do", '{"arguments": {"service": "payments"}}'],
        Move(MoveKind.DO, {"arguments": {"service": "payments"}}),
        DEPLOYS,
        Driver.AUTO,
    ),
    (
        ["--do", '{"role": "assistant", "content": "Roll back v841."}'],
        Move(MoveKind.DO, {"role": "assistant", "content": "Roll back v841."}),
        2,
        Driver.AUTO,
    ),
    (
        ["--edit", '[{"op": "replace", "path": "/arguments/service", "value": "payments"}]'],
        Move("edit", [{"op": "replace", "path": "/arguments/service", "value": "payments"}]),
        DEPLOYS,
        Driver.AUTO,
    ),
    (["--swap-model", "big"], Move(MoveKind.SWAP_MODEL, "big"), 1, Driver.AUTO),
    (["--remove"], Move(MoveKind.REMOVE), DEPLOYS, Driver.AUTO),
    (["--remove"], Move(MoveKind.REMOVE), DEPLOYS, Driver.TRACE),
]


@pytest.mark.parametrize(
    ("options", "move", "at", "driver"), MOVES, ids=lambda v: v[0] if isinstance(v, list) else ""
)
def test_fork_move_from_python_makes_the_commands_fork(
    runner: CliRunner,
    store_path: Path,
    imported: Trajectory,
    options: list[str],
    move: Move,
    at: int,
    driver: Driver,
) -> None:
    by_command = _cli_fork(
        runner, store_path, "--at", str(at), *options, "--resamplers", TOOLS,
        "--driver", driver.value,
    )  # fmt: skip
    by_python = fork_move(imported, at, move, driver=driver, registry=load_registry([TOOLS]))
    assert by_python.id == by_command.id
    assert by_python.final_hash == by_command.final_hash
    assert by_python.metadata == by_command.metadata
    assert by_python.steps[at] != imported.steps[at] or move.kind is MoveKind.SWAP_MODEL


def test_fork_move_with_the_live_agent_makes_the_commands_fork(
    runner: CliRunner, store_path: Path
) -> None:
    made = ok(invoke(runner, store_path, "record", "--agent", AGENT, "--json")).stdout
    recorded = orjson.loads(made)["id"]
    by_command = orjson.loads(
        ok(invoke(runner, store_path, "fork", recorded, "--at", str(DEPLOYS), "--do",
                  '{"arguments": {"service": "payments"}}', "--agent", AGENT, "--json")).stdout
    )  # fmt: skip
    with Store.open(store_path, read_only=True) as db:
        run, stored = db.get(recorded), db.get(by_command["id"])
    move = Move(MoveKind.DO, {"arguments": {"service": "payments"}})
    forked = fork_move(run, DEPLOYS, move, agent=load_object(AGENT, "agent"))
    assert forked.id == stored.id and forked.final_hash == stored.final_hash
    assert forked.metadata["do_step"] == DEPLOYS == stored.metadata["do_step"]
    assert forked.steps[DEPLOYS].inputs["arguments"] == {"service": "payments"}


def test_injection_is_the_intervention_each_move_comes_down_to(imported: Trajectory) -> None:
    turn = imported.steps[2].output
    assert injection(imported, DEPLOYS, Move(MoveKind.OUTPUT, [])).intervention == (
        Intervention.observe([], None)
    )
    assert injection(imported, 2, Move(MoveKind.OUTPUT, turn)).intervention == (
        Intervention.do(turn)
    )
    do = injection(imported, DEPLOYS, Move(MoveKind.DO, {"arguments": {"service": "x"}}))
    assert (do.at, do.asked, do.asks_anew) == (2, DEPLOYS, True)
    (call,) = do.intervention.output["tool_calls"]
    assert (
        call["arguments"] == {"service": "x"}
        and call["id"] == (imported.steps[DEPLOYS].inputs["tool_call_id"])
    )
    fault = injection(imported, DEPLOYS, Move(MoveKind.FAULT, "empty")).intervention
    assert (fault.output, fault.move) == ([], "observe")
    parsed = injection(imported, DEPLOYS, Move.parse(MoveKind.OBSERVE, '{"a": 1}'))
    assert parsed.intervention == Intervention.observe({"a": 1}, None)


NOT_A_STEP = "at=9: e88b759131db6e32d8dcb35f94c662cd has steps 0..4"

# (id, step, move, driver, the library's message, the command's options)
BROKEN: list[tuple[str, int, Move, Driver, str, list[str]]] = [
    ("no-such-step", 9, Move(MoveKind.OBSERVE, []), Driver.AUTO, NOT_A_STEP,
     ["--at", "9", "--observe", "[]"]),
    # of two mistakes, the rules' first is the one said, as the command always did
    ("no-such-step-before-json", 9, Move.parse(MoveKind.OUTPUT, "no"), Driver.AUTO,
     NOT_A_STEP, ["--at", "9", "--value", "no"]),
    ("observe-a-turn", 2, Move.parse(MoveKind.OBSERVE, "no"), Driver.AUTO,
     "step 2 is a model turn: its output is the agent's action, so it is changed with do, not "
     "observe", ["--at", "2", "--observe", "no"]),
    ("not-json", DEPLOYS, Move.parse(MoveKind.DO, "no"), Driver.AUTO,
     "do='no' is not JSON: invalid literal, expected 'null'", ["--at", "3", "--do", "no"]),
    ("edit-not-json", DEPLOYS, Move.parse(MoveKind.EDIT, "[1"), Driver.AUTO,
     "edit='[1' is not JSON: unexpected end of data", ["--at", "3", "--edit", "[1"]),
    ("do-shape", DEPLOYS, Move.parse(MoveKind.DO, '{"args": 1}'), Driver.AUTO,
     'do on tool step 3 takes {"arguments": {...}}, got {"args": 1}',
     ["--at", "3", "--do", '{"args": 1}']),
    ("do-arguments", DEPLOYS, Move(MoveKind.DO, {"arguments": 5}), Driver.AUTO,
     'do on a tool step takes {"arguments": {...}}, got 5',
     ["--at", "3", "--do", '{"arguments": 5}']),
    ("do-needs-an-agent", DEPLOYS, Move(MoveKind.DO, {"arguments": {}}), Driver.TRACE,
     "do on a tool step asks the model's call anew: it needs agent, or a tool-calling run "
     "re-driven as its loop (not driver='trace')",
     ["--at", "3", "--do", '{"arguments": {}}', "--driver", "trace"]),
    ("unknown-fault", DEPLOYS, Move(MoveKind.FAULT, "gone"), Driver.AUTO,
     "unknown fault 'gone'; built-in faults: empty, error, timeout, truncate",
     ["--at", "3", "--fault", "gone"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("step", "move", "driver", "said", "options"),
    [case[1:] for case in BROKEN],
    ids=[case[0] for case in BROKEN],
)
def test_a_broken_rule_names_the_setting_and_the_command_names_its_option(
    runner: CliRunner,
    store_path: Path,
    imported: Trajectory,
    step: int,
    move: Move,
    driver: Driver,
    said: str,
    options: list[str],
) -> None:
    with pytest.raises(InterventionError) as caught:
        fork_move(imported, step, move, driver=driver)
    assert str(caught.value) == said
    with pytest.raises(InterventionError) as worded, settings_as_options(OPTIONS_NAMED_OTHERWISE):
        fork_move(imported, step, move, driver=driver)
    line = one_line_error(invoke(runner, store_path, "fork", RUN, *options))
    assert line == f"error: {worded.value}"
    assert "--" not in said and (said == str(worded.value)) == ("fault" in said)


def test_a_move_is_checked_when_it_is_made() -> None:
    with pytest.raises(InterventionError, match="'jump' is not a move; moves: output, do, obs"):
        Move("jump", 1)
    with pytest.raises(InterventionError, match="the fault move takes text, got 5"):
        Move(MoveKind.FAULT, 5)
    assert Move("observe-error", "503").kind is MoveKind.OBSERVE_ERROR


def test_the_built_in_agent_is_chosen_by_the_driver(imported: Trajectory) -> None:
    assert built_in_agent(imported, Driver.TRACE) is None
    loop = built_in_agent(imported, Driver.AUTO)
    assert loop is not None and loop.__qualname__ == "chat_loop(max_turns=6)"
    with pytest.raises(AgentError, match=r"^max_turns=0 must be at least 1$"):
        built_in_agent(imported, Driver.CHAT, max_turns=0)
    assert built_in_agent(imported, Driver.TRACE, max_turns=0) is None  # no loop, no limit
    tools_only = record(counting).trajectory  # no model turn: not a tool-calling chat
    assert built_in_agent(tools_only, Driver.AUTO) is None
    with pytest.raises(AgentError) as caught:
        built_in_agent(tools_only, Driver.CHAT)
    assert str(caught.value).endswith("; give the agent that ran it: agent='module:function'")
    with pytest.raises(AgentError) as worded, settings_as_options(OPTIONS_NAMED_OTHERWISE):
        chat_loop(tools_only)
    assert str(worded.value).endswith("; give the agent that ran it: --agent module:function")


def test_driver_lives_in_replay_and_attribution_still_offers_it() -> None:
    assert otel_replay.attribution.Driver is otel_replay.replay.Driver is Driver
    assert [d.value for d in Driver] == ["auto", "trace", "chat"]
