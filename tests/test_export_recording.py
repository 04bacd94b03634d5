"""``export --format pytest``: the recording beside the test is what it replays, so one edited
after the export (its steps no longer match the hashes they were exported with) fails the test,
naming the step, instead of replaying what was never recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from typer.testing import CliRunner

from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

RECORDED = ROOT / "examples" / "docs" / "recorded-openai.jsonl"  # the OpenAI SDK agent's run
AGENT = f"{ROOT / 'examples' / 'incident' / 'openai_app.py'}:main"


def _pytest(test: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_recording_edited_after_the_export_fails_its_test(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(RECORDED)))
    test = tmp_path / "test_incident.py"
    ok(invoke(runner, store_path, "export", "eb3cb3f0", "--format", "pytest", "--agent", AGENT,
              "--out", str(test)))  # fmt: skip
    replayed = _pytest(test)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    recording = test.with_suffix(".jsonl")
    (run,) = [orjson.loads(line) for line in recording.read_bytes().splitlines()]
    last = run["steps"][-1]
    last["output"]["content"] = "Root cause: edited by hand."
    recording.write_bytes(orjson.dumps(run) + b"\n")

    edited = _pytest(test)

    assert edited.returncode == 1, edited.stdout + edited.stderr
    said = " ".join(edited.stdout.split())
    assert (
        f"EditedContentError: {recording}:1: run {run['trajectory_id']!r}: step {last['index']} "
        f"{last['name']!r} no longer matches its stored hash: its content was edited after export"
    ) in said, edited.stdout
