"""Butterfly confound: an early coin flip with the larger effect, and a later step that commits.

Factual run (``butterfly.jsonl``, outcome 0)::

    0 llm  read_ticket    noise
    1 llm  strategy       {"strategy": "aggressive"}   the butterfly: a coin, "cautious" with p = 0.5
    2 tool list_hosts     noise (shuffles the host list)
    3 llm  choose_action  {"action": "restart_all"}    <- Point of Commitment
    4 tool execute        executes the latest choose_action in ctx.history
    5 llm  summarise      noise

``choose_action`` re-decides from the strategy in ctx.history: after "cautious" it always drains one
host; after "aggressive" it restarts the whole pool with probability A = 0.8, else drains. The verifier:
success iff the executed action is "drain".

Theory:

* attribution: step 3 = 1 - A = 0.2; step 1 = A - A/2 = 0.4 (the LARGER raw effect, but with step 3
  recorded the run fails whatever step 1 did); steps 0, 2, 4, 5 = 0.
* Point of Commitment = 3 (not 1), verdict culprit.
* Shapley: ``v(S) = 1`` if S holds 3 or 4, else 0.8 if S holds 1, else 0.4. phi_1 = 2/15 ~ 0.1333,
  phi_3 = phi_4 = 7/30 ~ 0.2333, others 0; v(all) = 1, v(none) = 0.4.
* With a handful of rollouts the verdict must be inconclusive with a bracket holding step 3: step 3's
  0.2 cannot be told from zero, and no later step can be shown to lie inside the margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

P_CAUTIOUS = 0.5
P_RESTART_IF_AGGRESSIVE = 0.8


def latest(history: Sequence[Step], name: str) -> Step | None:
    return next((s for s in reversed(history) if s.name == name), None)


@resampler("llm", name="read_ticket")
def read_ticket(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["A leak on web-3.", "web-3 leaks."])}


@resampler("llm", name="strategy")
def strategy(step: Step, ctx: RolloutContext) -> Any:
    chosen = "cautious" if ctx.rng.random() < P_CAUTIOUS else "aggressive"
    return {"role": "assistant", "strategy": chosen}


@resampler("tool", name="list_hosts")
def list_hosts(step: Step, ctx: RolloutContext) -> Any:
    hosts = ["web-1", "web-2", "web-3"]
    ctx.rng.shuffle(hosts)
    return {"hosts": hosts}


@resampler("llm", name="choose_action")
def choose_action(step: Step, ctx: RolloutContext) -> Any:
    chosen = latest(ctx.history, "strategy")
    aggressive = chosen is not None and chosen.output.get("strategy") == "aggressive"
    restart = aggressive and ctx.rng.random() < P_RESTART_IF_AGGRESSIVE
    return {"role": "assistant", "action": "restart_all" if restart else "drain"}


@resampler("tool", name="execute")
def execute(step: Step, ctx: RolloutContext) -> Any:
    action = latest(ctx.history, "choose_action")
    return {"executed": action.output.get("action") if action else None}


@resampler("llm", name="summarise")
def summarise(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["Done.", "Remediated."])}


@verifier
def drained_one_host(trajectory: Trajectory) -> float:
    executed = latest(trajectory.steps, "execute")
    ok = executed is not None and executed.output == {"executed": "drain"}
    return 1.0 if ok else 0.0
