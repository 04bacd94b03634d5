"""OR: the upgrade fails if EITHER the migration OR the config push is broken.

Factual run (``or_gate.jsonl``, outcome 0)::

    0 llm  plan            noise
    1 tool migrate_schema  {"ok": false}   resampled: broken with q = 0.2
    2 llm  review          noise
    3 tool push_config     {"ok": false}   resampled: broken with q = 0.2
    4 llm  announce        noise

The verifier reads the two operations directly: success iff both are ok.

Theory (q = 0.2):

* attribution: step 1 = 1 - (1 - (1 - q)^2) = (1 - q)^2 = 0.64; step 3 = 0 (with the recorded broken
  migration held, the run fails whatever the push does); steps 0, 2, 4 = 0.
* Point of Commitment = 1: the failure is inevitable from the first broken operation on.
* Shapley: ``v(S) = 1 - (1 - b1) * (1 - b3)`` with b_i = 1 if i in S else q; symmetric, so
  phi_1 = phi_3 = (1 - q)^2 / 2 = 0.32, the others 0; v(all) = 1, v(none) = 1 - (1 - q)^2 = 0.36.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

Q_BROKEN = 0.2


@resampler("llm")
def noise(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["OK.", "Fine.", "Go."])}


@resampler("tool", name="migrate_schema")
def migrate_schema(step: Step, ctx: RolloutContext) -> Any:
    return {"ok": ctx.rng.random() >= Q_BROKEN}


@resampler("tool", name="push_config")
def push_config(step: Step, ctx: RolloutContext) -> Any:
    return {"ok": ctx.rng.random() >= Q_BROKEN}


@verifier
def both_ok(trajectory: Trajectory) -> float:
    operations = [s for s in trajectory.steps if s.name in ("migrate_schema", "push_config")]
    return 1.0 if all(s.output.get("ok") for s in operations) else 0.0
