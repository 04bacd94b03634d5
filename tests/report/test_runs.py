"""The JSON records of replay, fork, resume and diff results (`otel_replay.report`), built from
Python, are what the commands' ``--json`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.replay import Move, MoveKind, diff, fork_move, replay
from otel_replay.replay._builtin import chat_loop
from otel_replay.report._runs import diff_record, fork_record, replay_record
from otel_replay.resamplers import load_registry
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT, SAMPLES

TOOLS = str(ROOT / "examples" / "incident" / "tools.py")


def _printed(record: dict[str, Any]) -> Any:
    return orjson.loads(orjson.dumps(record))  # tuples as lists, floats as the command prints them


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    return store_path


def _json(runner: CliRunner, store: Path, *args: str) -> Any:
    return orjson.loads(ok(invoke(runner, store, *args, "--json")).stdout)


def test_diff_record_is_what_diff_prints(runner: CliRunner, store: Path) -> None:
    printed = _json(runner, store, "diff", "e88b7591", "780c4b16")
    with Store.open(store, read_only=True) as db:
        left, right = db.get("e88b7591"), db.get("780c4b16")
    record = diff_record(diff(left, right))
    assert _printed(record) == printed
    assert record["first_divergence"] == 0 and record["identical"] is False


def test_replay_record_is_what_replay_prints(runner: CliRunner, store: Path) -> None:
    printed = _json(runner, store, "replay", "ef2843ff")
    with Store.open(store, read_only=True) as db:
        original = db.get("ef2843ff")
    record = replay_record(replay(original, chat_loop(original)))
    assert _printed(record) == printed
    assert record["identical"] is True and record["diff"] is None and record["recorded"] is False


def test_fork_record_is_what_fork_prints(runner: CliRunner, store: Path) -> None:
    printed = _json(runner, store, "fork", "e88b7591", "--at", "3", "--observe", "[]",
                    "--resamplers", TOOLS)  # fmt: skip
    with Store.open(store, read_only=True) as db:
        original = db.get("e88b7591")
    forked = fork_move(original, 3, Move(MoveKind.OBSERVE, []), registry=load_registry([TOOLS]))
    record = fork_record(forked, diff(original, forked))
    step = ("start_time_unix_nano", "end_time_unix_nano")  # the fork's steps ran just now
    for made in (record, printed):
        for key in step:
            made["diff"]["right_step"].pop(key)
    assert _printed(record) == printed
    assert record["id"] == forked.id and record["diff"]["change"] == "observation changed"
