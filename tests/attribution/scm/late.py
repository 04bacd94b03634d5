"""Late pivot: the decisive step is the last resamplable one, followed by an observed-only step.

Factual run (``late.jsonl``, outcome 0)::

    0 llm  plan       noise (the ``llm`` wildcard resampler)
    1 tool search     {"fresh": false}   fresh docs with p = 0.5
    2 tool audit_log  observed-only
    3 llm  think      noise (the ``llm`` wildcard resampler)
    4 llm  answer     "... us-east-1."   <- Point of Commitment (a name-specific resampler, which
                                            must win over the wildcard)
    5 tool notify     observed-only, after the last resamplable step

``answer`` reads the latest search in ctx.history: with fresh docs it answers right (eu-west-1) with
probability 0.8, with stale docs 0.4. The verifier: success iff the answer names eu-west-1.

Theory:

* attribution: step 4 = 1 - 0.6 = 0.4; step 1 = 0.6 - (0.5 * 0.2 + 0.5 * 0.6) = 0.2; steps 0, 3 = 0.
* Point of Commitment = 4, verdict culprit; steps 2 and 5 are never named.
* Shapley: ``v(S) = 1`` if S holds 4, else 0.6 if S holds 1, else 0.4. phi_4 = 0.5, phi_1 = 0.1,
  phi_0 = phi_3 = 0; v(all) = 1, v(none) = 0.4.
* With a handful of rollouts the verdict must be inconclusive with a bracket holding step 4.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

RIGHT = "eu-west-1"
WRONG = "us-east-1"
P_FRESH = 0.5
P_RIGHT = {True: 0.8, False: 0.4}  # by freshness of the docs the answer reads


@resampler("llm")
def chatter(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["Hmm.", "Let me see.", "Noted."])}


@resampler("tool", name="search")
def search(step: Step, ctx: RolloutContext) -> Any:
    fresh = ctx.rng.random() < P_FRESH
    return {"docs": ["runbook-2024.md" if fresh else "runbook-2019.md"], "fresh": fresh}


@resampler("llm", name="answer")
def answer(step: Step, ctx: RolloutContext) -> Any:
    docs = next((s for s in reversed(ctx.history) if s.name == "search"), None)
    fresh = bool(docs and docs.output.get("fresh"))
    region = RIGHT if ctx.rng.random() < P_RIGHT[fresh] else WRONG
    return {"role": "assistant", "content": f"The billing database is in {region}."}


@verifier
def names_the_right_region(trajectory: Trajectory) -> float:
    final = next((s for s in trajectory.steps if s.name == "answer"), None)
    ok = final is not None and RIGHT in str(final.output.get("content", ""))
    return 1.0 if ok else 0.0
