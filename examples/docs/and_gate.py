"""AND: the release breaks production only if BOTH safety checks miss the bug.

Factual run (``and_gate.jsonl``, outcome 0)::

    0 llm  plan            noise
    1 tool canary_check    {"caught": false}   resampled: misses with q = 0.2
    2 llm  review          noise
    3 tool rollback_guard  {"caught": false}   resampled: misses with q = 0.2
    4 llm  announce        noise

The verifier reads the two checks directly: success iff either caught the bug.

Theory (q = 0.2):

* attribution: step 3 = 1 - q = 0.8; step 1 = q - q^2 = 0.16; steps 0, 2, 4 = 0.
* Point of Commitment = 3: the failure is inevitable only once the second check has missed too.
* Shapley: ``v(S) = (1 if 1 in S else q) * (1 if 3 in S else q)``; symmetric in 1 and 3, so
  phi_1 = phi_3 = (1 - q^2) / 2 = 0.48, the others 0; v(all) = 1, v(none) = q^2 = 0.04.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

Q_MISS = 0.2


@resampler("llm")
def noise(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["OK.", "Fine.", "Go."])}


@resampler("tool", name="canary_check")
def canary_check(step: Step, ctx: RolloutContext) -> Any:
    return {"caught": ctx.rng.random() >= Q_MISS}


@resampler("tool", name="rollback_guard")
def rollback_guard(step: Step, ctx: RolloutContext) -> Any:
    return {"caught": ctx.rng.random() >= Q_MISS}


@verifier
def bug_caught(trajectory: Trajectory) -> float:
    checks = [s for s in trajectory.steps if s.name in ("canary_check", "rollback_guard")]
    return 1.0 if any(s.output.get("caught") for s in checks) else 0.0
