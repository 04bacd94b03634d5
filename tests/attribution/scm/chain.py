"""Chain with one decisive step: a config read that came back wrong, copied down the chain.

Factual run (``chain.jsonl``, outcome 0)::

    0 llm  plan          noise: rephrases the plan, no effect on the outcome
    1 tool read_config   {"timeout_s": 1}          <- planted culprit
    2 tool audit_log     observed-only (no resample function): always served from the record
    3 llm  decide        copies the timeout of the latest read_config in ctx.history
    4 tool apply_config  applies the timeout of the latest decide in ctx.history
    5 llm  summarise     noise

Resampled, ``read_config`` returns ``{"timeout_s": 30}`` with probability 0.6, else the bad
``{"timeout_s": 1}``. The verifier: success iff the applied timeout is at least 10 s.

Theory (failure = outcome < 0.5; ``attribution(i) = P(fail | kept_i) - P(fail | ablate_from(i))``):

* attribution: step 1 = 1 - 0.4 = 0.6; steps 0, 3, 4, 5 = 0 (with step 1 held, the copies fail anyway).
* Point of Commitment = 1, verdict culprit.
* Shapley: ``v(S) = 1`` if S holds any of {1, 3, 4} (a held copy replays the bad timeout), else 0.4.
  An OR over three players: phi_1 = phi_3 = phi_4 = 0.6 / 3 = 0.2; phi_0 = phi_5 = 0;
  v(all) = 1, v(none) = 0.4.
* Repair at step 1: any output with ``timeout_s >= 10``; ``{"timeout_s": 30}`` (similarity 0.875 to the
  record) saves every rollout.
* ``chain_passing.jsonl`` is the same run with ``timeout_s = 30`` everywhere (outcome 1). Rescue
  credit: step 1 = P(fail | ablated) - P(fail | kept) = 0.4 - 0 = 0.4, the save point; others 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

GOOD_TIMEOUT_S = 30
BAD_TIMEOUT_S = 1
P_GOOD = 0.6
MIN_TIMEOUT_S = 10


def latest(history: Sequence[Step], name: str) -> Step | None:
    """The latest step called ``name`` in the counterfactual history."""
    return next((s for s in reversed(history) if s.name == name), None)


@resampler("llm", name="plan")
def plan(step: Step, ctx: RolloutContext) -> Any:
    wording = ctx.rng.choice(["Read the config first.", "Start from the config.", "Check config."])
    return {"role": "assistant", "content": wording}


@resampler("tool", name="read_config")
def read_config(step: Step, ctx: RolloutContext) -> Any:
    return {"timeout_s": GOOD_TIMEOUT_S if ctx.rng.random() < P_GOOD else BAD_TIMEOUT_S}


@resampler("llm", name="decide")
def decide(step: Step, ctx: RolloutContext) -> Any:
    config = latest(ctx.history, "read_config")
    timeout_s = (
        config.output.get("timeout_s") if config and isinstance(config.output, dict) else None
    )
    return {"role": "assistant", "content": f"Keep timeout_s={timeout_s}.", "timeout_s": timeout_s}


@resampler("tool", name="apply_config")
def apply_config(step: Step, ctx: RolloutContext) -> Any:
    decision = latest(ctx.history, "decide")
    timeout_s = decision.output.get("timeout_s") if decision else None
    return {"applied_timeout_s": timeout_s}


@resampler("llm", name="summarise")
def summarise(step: Step, ctx: RolloutContext) -> Any:
    return {
        "role": "assistant",
        "content": ctx.rng.choice(["Config applied.", "Done.", "Applied."]),
    }


@verifier
def timeout_is_long_enough(trajectory: Trajectory) -> float:
    applied = latest(trajectory.steps, "apply_config")
    if applied is None or not isinstance(applied.output, dict):
        return 0.0
    timeout_s = applied.output.get("applied_timeout_s")
    return 1.0 if isinstance(timeout_s, int) and timeout_s >= MIN_TIMEOUT_S else 0.0
