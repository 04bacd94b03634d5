"""``--json`` on every command that prints a result (issue 11, item 25): standard output then holds
one JSON document a program can parse, and nothing else; messages for people go to standard error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from otel_replay.cli import app
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT, SAMPLES

AGENT = str(ROOT / "examples" / "incident" / "agent.py")
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
IMPORTED = "ef2843ff"  # the failing run of the incident sample


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    return store_path


def _timeless(report: dict[str, Any]) -> dict[str, Any]:
    report["cost"].pop("wall_seconds")
    return report


def _json(result: Result) -> Any:
    """Standard output is one JSON document (orjson refuses anything around it)."""
    return orjson.loads(result.stdout)


@pytest.mark.parametrize(
    "command", ["import", "list", "show", "attribute", "record", "replay", "fork", "diff"]
)
def test_every_command_that_prints_a_result_takes_json(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--json " in result.stdout


def test_attribute_json_is_the_report_alone(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    args = [
        "attribute",
        IMPORTED,
        "--resamplers",
        TOOLS,
        "--success-if",
        "v841",
        "--rollouts",
        "20",
    ]
    printed = _json(ok(invoke(runner, store, *args, "--json")))
    assert printed["trajectory_id"].startswith(IMPORTED) and "steps" in printed
    # `--out -` is the report on standard output too, without the table mixed in (before: both)
    dashed = _json(ok(invoke(runner, store, *args, "--out", "-")))
    assert _timeless(dashed) == _timeless(printed)
    out = tmp_path / "report.json"
    both = ok(invoke(runner, store, *args, "--json", "--out", str(out)))
    assert _json(both) == orjson.loads(out.read_bytes())
    assert "report written to" in both.stderr


def test_record_replay_fork_and_diff_speak_json(runner: CliRunner, store_path: Path) -> None:
    outcome = f"{AGENT}:outcome"
    recorded = _json(
        ok(invoke(runner, store_path, "record", "--agent", f"{AGENT}:investigate",
                  "--verifier", outcome, "--json"))
    )  # fmt: skip
    assert recorded["error"] is None and recorded["steps"] > 0 and recorded["lossy_steps"] == []
    replayed = _json(
        ok(invoke(runner, store_path, "replay", recorded["id"], "--agent", f"{AGENT}:investigate",
                  "--json"))
    )  # fmt: skip
    assert replayed["identical"] is True and replayed["recorded"] is True
    assert replayed["steps"] == replayed["replayed_steps"] == recorded["steps"]
    forked = _json(
        ok(invoke(runner, store_path, "fork", recorded["id"], "--at", "3", "--value", "[]",
                  "--agent", f"{AGENT}:investigate", "--verifier", outcome, "--json"))
    )  # fmt: skip
    compared = _json(ok(invoke(runner, store_path, "diff", recorded["id"], forked["id"], "--json")))
    assert compared == forked["diff"]


def test_a_replay_that_diverges_is_json_and_exit_1(runner: CliRunner, store: Path) -> None:
    result = invoke(runner, store, "replay", IMPORTED, "--agent", f"{AGENT}:investigate", "--json")
    assert result.exit_code == 1
    replayed = _json(result)
    assert replayed["identical"] is False and replayed["recorded"] is False
    assert replayed["nondeterminism"] and replayed["nondeterminism_step"] == 0
