"""A fleet at scale (issue 14, part 3): 1,000 imported failing runs of the incident investigator,
two culprits planted at known rates, attributed over a local Ray; ``blame`` recovers the rates
within its intervals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT, requires_ray

requires_ray()

RUNS = 1000


@pytest.mark.scale
def test_blame_over_a_fleet_attributed_on_ray_recovers_the_planted_rates(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.jsonl"
    made = subprocess.run(
        [sys.executable, "-m", "examples.incident.fleet", "--runs", str(RUNS), "--out", str(fleet)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    planted = orjson.loads(made.stdout)["planted"]
    ok(invoke(runner, store_path, "import", str(fleet)))
    tools = str(ROOT / "examples" / "incident" / "tools.py")
    rows = orjson.loads(
        ok(
            invoke(
                runner, store_path, "attribute", "--all-failing", "--resamplers", tools,
                "--success-if", "v841", "--executor", "ray", "--workers", "2", "--json",
            )
        ).stdout
    )  # fmt: skip
    assert len(rows) == RUNS and {row["status"] for row in rows} == {"done"}
    blamed = {
        r["name"]: r for r in orjson.loads(ok(invoke(runner, store_path, "blame", "--json")).stdout)
    }
    decided = blamed["list_deploys"]["decided_runs"]
    assert decided >= 0.95 * RUNS  # the planted culprits are found, nearly always
    for name, count in planted.items():
        row = blamed[name]
        assert row["share_low"] <= count / RUNS <= row["share_high"], (name, count, row)
    assert blamed["search_logs"]["commitments"] == 0
