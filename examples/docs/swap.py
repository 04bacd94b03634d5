"""A failure the recorded model cannot recover from, and a stronger model can, up to a point.

Factual run (``swap.jsonl``, outcome 0; every model turn asked of ``small``)::

    0 llm  plan          noise
    1 tool read_config   {"timeout_s": 1}: the config really is wrong (resampled, the same)
    2 llm  decide        small copies the timeout it read; large sets 30 s with probability 0.9
    3 tool apply_config  applies the timeout of the latest decide in ctx.history
    4 llm  summarise     noise

The verifier: success iff the applied timeout is at least 10 s.

Theory (failure = outcome < 0.5):

* Re-run with the recorded model, nothing changes the outcome: every plan fails, no step matters.
* ``--swap-model large`` (every model turn a plan runs again asked of ``large``): swapping from step
  0, 1 or 2 re-runs ``decide`` with ``large`` and then ``apply_config``: P(fail) = 0.1. From step 3
  on, the recorded decision is applied: P(fail) = 1. Swap credit(i) = P(fail | large from the next
  step) − P(fail | large from i): step 2 = 1 − 0.1 = 0.9, every other step 0. The latest step from
  which ``large`` saves the run is step 2.
* Shapley under the swap: ``v(S) = 1`` if S holds step 2 or 3 (a held decision, or a held
  application of the old one), else 0.1. An OR over two players: phi_2 = phi_3 = 0.45, others 0;
  v(all) = 1, v(none) = 0.1.
* Repair at step 2 under the swap: any decision with ``timeout_s >= 10``; later steps re-run apply
  it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

STRONG = "large"
P_STRONG_RIGHT = 0.9
MIN_TIMEOUT_S = 10


def latest(history: Sequence[Step], name: str) -> Step | None:
    return next((s for s in reversed(history) if s.name == name), None)


@resampler("llm", name="plan")
def plan(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["Read the config.", "Check config."])}


@resampler("tool", name="read_config")
def read_config(step: Step, ctx: RolloutContext) -> Any:
    return {"timeout_s": 1}


@resampler("llm", name="decide")
def decide(step: Step, ctx: RolloutContext) -> Any:
    config = latest(ctx.history, "read_config")
    timeout_s = config.output.get("timeout_s") if config and isinstance(config.output, dict) else 1
    if step.inputs.get("model") == STRONG and ctx.rng.random() < P_STRONG_RIGHT:
        timeout_s = 30  # the stronger model sees that one second cannot be right
    return {"role": "assistant", "content": f"Set timeout_s={timeout_s}.", "timeout_s": timeout_s}


@resampler("tool", name="apply_config")
def apply_config(step: Step, ctx: RolloutContext) -> Any:
    decision = latest(ctx.history, "decide")
    return {"applied_timeout_s": decision.output.get("timeout_s") if decision else None}


@resampler("llm", name="summarise")
def summarise(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["Config applied.", "Done."])}


@verifier
def timeout_is_long_enough(trajectory: Trajectory) -> float:
    applied = latest(trajectory.steps, "apply_config")
    if applied is None or not isinstance(applied.output, dict):
        return 0.0
    timeout_s = applied.output.get("applied_timeout_s")
    return 1.0 if isinstance(timeout_s, int) and timeout_s >= MIN_TIMEOUT_S else 0.0
