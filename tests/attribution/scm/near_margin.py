"""A culprit just past the margin, after a real one: where a decision rule that spends its error
carelessly names the wrong step (issue 10).

Factual run (``near_margin.jsonl``, outcome 0)::

    0 llm  plan     noise
    1 tool migrate  {"ok": false}   resampled: broken with q = 0.3
    2 llm  review   noise
    3 llm  chat     noise
    4 tool deploy   {"ok": false}   resampled: never broken
    5 llm  monitor  {"alarm": u}    resampled: u uniform on [0, 1)

The run fails if the deploy is broken, or if the migration is broken and the monitor's alarm is
below 0.89 (the recorded alarm, 0.0, is).

Theory (margin 0.1):

* step 5: kept and resampled both have migrate and deploy broken: 1 - 1 = 0.
* step 4: kept (deploy broken) fails always; resampled, the broken migration fails 89 % of the time:
  attribution 0.11, just past the margin. It is the Point of Commitment.
* step 3, 2, 0: 0 (noise; the outcome reads only migrate, deploy and monitor).
* step 1: kept fails 0.89; resampled fails 0.3 * 0.89 = 0.267: attribution 0.623.

Naming step 1, 2 or 3 (or 0) is wrong: either a step with no effect passed the "matters" test, or
step 4, beyond the margin, passed the "no effect" test.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

Q_BROKEN = 0.3
ALARM_FAILS_BELOW = 0.89


@resampler("llm")
def noise(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": ctx.rng.choice(["OK.", "Fine.", "Go."])}


@resampler("llm", name="monitor")
def monitor(step: Step, ctx: RolloutContext) -> Any:
    return {"role": "assistant", "content": "Watching.", "alarm": ctx.rng.random()}


@resampler("tool", name="migrate")
def migrate(step: Step, ctx: RolloutContext) -> Any:
    return {"ok": ctx.rng.random() >= Q_BROKEN}


@resampler("tool", name="deploy")
def deploy(step: Step, ctx: RolloutContext) -> Any:
    return {"ok": True}


@verifier
def released(trajectory: Trajectory) -> float:
    by_name = {s.name: s for s in trajectory.steps}
    deploy_broken = not by_name["deploy"].output.get("ok")
    migrate_broken = not by_name["migrate"].output.get("ok")
    alarm = by_name["monitor"].output.get("alarm", 0.0)
    return 0.0 if deploy_broken or (migrate_broken and alarm < ALARM_FAILS_BELOW) else 1.0
