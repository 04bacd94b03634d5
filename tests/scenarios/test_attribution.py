"""The no-code attribution of the failing run (issue 23, part 2): ``attribute FAIL --tools recorded
--llm openai --llm-base-url … --success-if 'eligible for a refund'``, with no agent and no
resample functions of the user's. The rollouts redraw ``lookup_order`` from what the store recorded
for that call (the failing run's 503, the passing run's order); a rollout that drew the order goes on
to call ``get_refund_policy``, a call the failing run never made, whose result the store holds from
the passing run. Whatever it draws, no model may ever be handed ``null`` as a tool's result.

``--llm`` speaks chat completions only (``openai``, any OpenAI-compatible server), so the turns the
anthropic-recorded run resamples are asked of the same fake server's chat-completions API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from otel_replay.store import Store
from tests.cli_helpers import ok
from tests.scenarios import shop
from tests.scenarios.order_service import OrderService
from tests.scenarios.runs import Agent, agent_replay, passing_and_failing


def test_the_no_code_attribution_names_the_lookup_and_never_hands_a_model_null(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    _, failing = passing_and_failing(runner, store_path, agent, models, orders)
    recorded = len(models.requests)
    command = ["attribute", failing, "--tools", "recorded", "--llm", "openai"]
    command += ["--llm-base-url", models.base_url, "--success-if", shop.SUCCESS, "--json"]
    report = orjson.loads(ok(agent_replay(runner, store_path, *command)).stdout)
    asked = set(models.paths[recorded:])
    assert asked == {"/v1/chat/completions"}  # the resampled turns, whichever SDK recorded the run
    results = models.tool_results(since=recorded)
    nulls = [r for r in results if r is None or str(r).strip() in ("null", "None", "")]
    assert not nulls, f"{len(nulls)} of the {len(results)} tool results handed over were null"
    # the refund policy the failing run never asked for: the passing run's result, drawn from the store
    assert any(_json(r).get("refundable") is True for r in results)
    with Store.open(store_path) as db:
        lookup = next(s.index for s in db.get(failing).steps if s.name == "lookup_order")
    assert report["verdict"] != "inconclusive", report["explanation"]
    assert report["point_of_commitment"] == lookup == 1, report["explanation"]


def _json(text: Any) -> dict[str, Any]:
    """A tool result's JSON object, or an empty one."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
