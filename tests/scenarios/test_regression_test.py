"""The failing run exported as the regression test of its fix (issue 23, parts 1 and 3): ``export
FAIL --format pytest --expect pass`` writes a test that serves the tools from the record and asks
the model live, then asks the verifier whether the run now succeeds.

Run against the agent as it is, the test fails, and for the reason it should: the recorded
``lookup_order`` says 503, the agent does nothing about it, and the verifier scores the run 0 (not a
`NonDeterminismError` over the fresh tool-call ids the live model returned).

Run against the agent as fixed (`fixed_agents`: a lookup the service answered 503 is asked once
more), it passes. The first lookup is served its recorded 503 (the world the run failed in); the
retry is a call the record does not hold, so it runs live, against the order service, which is up
again (the outage is over by the time the fix is tested); ``get_refund_policy``, which the failing
run never called, runs live too; every model call is live. The test file is the same both times but
for the agent it names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from tests.cli_helpers import ok
from tests.conftest import ROOT
from tests.scenarios.order_service import OrderService
from tests.scenarios.runs import VERIFIER, Agent, agent_replay, passing_and_failing


def _pytest(test: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_exported_failing_run_passes_once_fixed_and_fails_while_not(
    runner: CliRunner,
    store_path: Path,
    tmp_path: Path,
    agent: Agent,
    models: FakeModelServer,
    orders: OrderService,
) -> None:
    _, failing = passing_and_failing(runner, store_path, agent, models, orders)

    def export(folder: str, spec: str) -> Path:
        out = tmp_path / folder / "test_outage.py"
        out.parent.mkdir()
        command = ["export", failing, "--format", "pytest", *agent.flags(spec), "--expect", "pass"]
        ok(agent_replay(runner, store_path, *command, "--verifier", VERIFIER, "--out", str(out)))
        return out

    broken, fixed = export("broken", agent.spec), export("fixed", agent.fixed)
    differing = set(broken.read_text().splitlines()) ^ set(fixed.read_text().splitlines())
    assert {line.split(" = ")[0] for line in differing} == {"AGENT"}

    asked = orders.requests
    still_broken = _pytest(broken)
    said = still_broken.stdout + still_broken.stderr
    assert still_broken.returncode == 1 and "1 failed" in said, said
    assert "NonDeterminismError" not in said, said  # it failed for its own reason:
    assert "the verifier scores the replayed run 0" in said, said
    assert orders.requests == asked  # the lookup was served from the record

    now_fixed = _pytest(fixed)
    said = now_fixed.stdout + now_fixed.stderr
    assert now_fixed.returncode == 0 and "1 passed" in said, said
    assert orders.requests == asked + 1  # the retry, live
