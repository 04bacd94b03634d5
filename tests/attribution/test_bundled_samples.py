"""Every bundled sample run attributes with the bundled resample functions, whichever convention
recorded it (issue 22, part 2): a resample function reads a tool's result as the text the model was
sent, on OpenInference, GenAI and native runs alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT, SAMPLES

TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
CODE = ["--resamplers", TOOLS, "--success-if", "v841"]

OPENINFERENCE_FAIL = "ef2843ff74cff6a6b6dc0914faa30751"
GENAI_FAIL = "780c4b16a51059fa62b2bbd1c38dbe31"
FAILING = [OPENINFERENCE_FAIL, GENAI_FAIL, "incident-fail"]
# the passing runs, and the position of the deploy list that saved each (after a retry: 5)
PASSING = {
    "e88b759131db6e32d8dcb35f94c662cd": 3,
    "5bb584929dafe6bead21914625ee8c4c": 5,
    "6b9bb2f6535a7e07b6dffce8112d9d11": 3,
    "incident-pass": 3,
    "incident-pass-retry": 5,
}


@pytest.fixture
def samples(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    return store_path


def _attribute(runner: CliRunner, store: Path, *args: str) -> Any:
    return orjson.loads(ok(invoke(runner, store, "attribute", *args, *CODE, "--json")).stdout)


def test_the_store_holds_exactly_the_runs_attributed_here(runner: CliRunner, samples: Path) -> None:
    """A sample run added later must join the lists above, so that it is attributed too."""
    rows = orjson.loads(ok(invoke(runner, samples, "list", "--json")).stdout)
    assert {row["id"] for row in rows} == {*FAILING, *PASSING}


@pytest.mark.parametrize("run", FAILING)
def test_every_failing_sample_run_names_the_empty_deploy_list(
    runner: CliRunner, samples: Path, run: str
) -> None:
    report = _attribute(runner, samples, run)
    assert report["verdict"] == "culprit"
    assert report["steps"][report["point_of_commitment"]]["name"] == "list_deploys"


@pytest.mark.parametrize("run", sorted(PASSING))
def test_every_passing_sample_run_is_credited_to_its_deploy_list(
    runner: CliRunner, samples: Path, run: str
) -> None:
    report = _attribute(runner, samples, run, "--on-success", "credit")
    assert report["verdict"] == "no-failure"
    assert report["save_point"] == PASSING[run]
    assert report["steps"][PASSING[run]]["name"] == "list_deploys"


def test_the_readmes_fleet_command_attributes_every_failing_run(
    runner: CliRunner, samples: Path
) -> None:
    rows = _attribute(runner, samples, "--all-failing")
    assert sorted(row["id"] for row in rows) == sorted(FAILING)
    assert {row["status"] for row in rows} == {"done"}
    assert {row["verdict"] for row in rows} == {"culprit"}


SPY = """
import json

from examples.incident.model import respond
from examples.incident.world import list_deploys
from otel_replay import resampler

SEEN = {seen!r}


@resampler("llm")
def model(step, ctx):
    # what the README's resample function reads: the step's own messages, not a reading of them
    with open(SEEN, "a") as seen:
        for message in step.inputs["messages"]:
            if message.get("role") == "tool":
                shape = [type(message["content"]).__name__, message.get("name")]
                seen.write(json.dumps(shape) + "\\n")
    return respond(step.inputs["messages"])


@resampler("tool", name="list_deploys")
def deploys(step, ctx):
    return [] if ctx.rng.random() < 0.5 else list_deploys(**step.inputs["arguments"])
"""


@pytest.mark.parametrize("driver", ["chat", "trace"])
@pytest.mark.parametrize("run", [OPENINFERENCE_FAIL, GENAI_FAIL])
def test_a_resample_function_reads_every_tool_result_as_text(
    runner: CliRunner, samples: Path, tmp_path: Path, run: str, driver: str
) -> None:
    seen = tmp_path / "seen.jsonl"
    spy = tmp_path / "spy.py"
    spy.write_text(SPY.format(seen=str(seen)))
    ok(
        invoke(
            runner, samples, "attribute", run, "--resamplers", str(spy), "--success-if", "v841",
            "--driver", driver, "--rollouts", "20", "--json",
        )
    )  # fmt: skip
    shapes = {tuple(orjson.loads(line)) for line in seen.read_bytes().splitlines()}
    assert shapes == {
        ("str", "query_metrics"),
        ("str", "list_deploys"),
        ("str", "search_logs"),
    }
