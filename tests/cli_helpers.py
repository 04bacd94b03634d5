"""Shared by the CLI tests: run a command against a store and check it ended as a user should see."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from otel_replay.cli import app

WIDE = {"COLUMNS": "250"}  # tables and messages are not wrapped: whole cells and lines compare


def invoke(runner: CliRunner, store: Path, *args: str) -> Result:
    """Run ``agent-replay ARGS --store STORE``; no exception may escape, no traceback be printed."""
    result = runner.invoke(app, [*args, "--store", str(store)], env=WIDE)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    return result


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def one_line_error(result: Result) -> str:
    """Exit 1 and exactly one line on stderr, starting ``error: ``; returns that line."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]
