"""``examples/incident/openai_app.py`` as the README runs it: the incident investigator written on the
OpenAI SDK with no agent-replay in it, recorded with ``--instrument openai`` against the example's
local model server, replayed with the server stopped, forked, and turned into a regression test."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from examples.incident import openai_server
from otel_replay.replay import uninstrument
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
                "--output",
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
