"""The user's path end to end, against a real Phoenix: a failing run lives in the user's Phoenix
project; ``import phoenix://`` brings it into the store, ``fork --otlp-endpoint`` sends the
counterfactual into a project of its own, and importing that project back gives the fork the store
holds, linked to the run it was forked from."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from examples.incident import investigate
from otel_replay import Store, Trajectory
from otel_replay.errors import ReplayError
from otel_replay.platforms.phoenix import read_phoenix
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.platforms.phoenix_server import Phoenix

ORIGIN, FORKS = "roundtrip-origin", "roundtrip-forks"
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")


def _content(run: Trajectory) -> list[tuple[Any, ...]]:
    """Each step's content; a tool call's correlation id left out (an import reads it from the
    model turn that asked for the call, a fork's record may not hold it)."""
    return [
        (s.kind, s.name, {k: v for k, v in s.inputs.items() if k != "tool_call_id"}, s.output,
         s.status, s.error)
        for s in run.steps
    ]  # fmt: skip


def _arrived(url: str, count: int) -> list[Trajectory]:
    """The runs of a project once Phoenix has stored ``count`` of them (it inserts a moment after
    it answers the export)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            runs = list(read_phoenix(url))
        except ReplayError:  # the project appears with its first span
            runs = []
        if len(runs) >= count or time.monotonic() > deadline:
            return runs
        time.sleep(0.3)


def test_a_fork_sent_to_phoenix_comes_back_as_the_fork(phoenix: Phoenix, tmp_path: Path) -> None:
    # a run of its own: Phoenix files a trace id under the first project it arrives in
    failing = investigate("openinference", 104, {"list_deploys": "empty"})
    phoenix.send(failing.spans, ORIGIN)
    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", f"phoenix://{phoenix.address}/{ORIGIN}"))
    with Store.open(store, read_only=True) as db:
        (summary,) = db.summaries()
        original = db.get(summary.id)
    (at,) = [s.index for s in original.steps if s.name == "list_deploys"]
    deploys = '[{"version": "v841", "deployed_at": "2026-03-14T14:02:00Z"}]'

    args = ["fork", original.id, "--at", str(at), "--observe", deploys, "--resamplers", TOOLS]
    send = ["--otlp-endpoint", phoenix.base, "--otlp-header", f"x-project-name={FORKS}"]
    forked = ok(invoke(CliRunner(), store, *args, *send))
    fork_id = forked.stdout.splitlines()[0].removeprefix("forked ")
    assert f"sent {fork_id} to {phoenix.base}/v1/traces" in forked.stdout
    with Store.open(store, read_only=True) as db:
        fork = db.get(fork_id)
    assert fork.steps[at].output == orjson.loads(deploys)

    phoenix.wait_for(FORKS, len(fork.steps) + 1)  # the steps' spans and the run's root
    (back,) = _arrived(f"phoenix://{phoenix.address}/{FORKS}", 1)
    assert _content(back) == _content(fork)
    assert back.identity == fork.identity
    assert back.outcome == fork.outcome
    # the root span says which run it is and which run it was forked from, at which step
    spans = _root_attributes(phoenix, back.id)
    assert spans["agent_replay.run_id"] == fork_id
    assert spans["agent_replay.forked_from"] == original.id
    assert int(spans["agent_replay.fork_at"]) == at
    # the original's project is untouched: the counterfactual opens beside it, not in it
    assert [r.id for r in _arrived(f"phoenix://{phoenix.address}/{ORIGIN}", 1)] == [original.id]


def _root_attributes(phoenix: Phoenix, trace_id: str) -> dict[str, Any]:
    """The root span's attributes of a trace in FORKS, as Phoenix's REST API gives them."""
    url = f"{phoenix.base}/v1/projects/{FORKS}/spans/otlpv1?trace_id={trace_id}&parent_id=null"
    with urllib.request.urlopen(url, timeout=10) as response:
        (root,) = json.loads(response.read())["data"]
    values: dict[str, Any] = {}
    for item in root["attributes"]:
        value = item["value"]
        values[item["key"]] = next((v for v in value.values() if v is not None), None)
    return values
