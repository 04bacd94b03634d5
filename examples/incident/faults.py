"""A user-defined fault for ``agent-replay sweep``: a cache that serves yesterday's answer.

Load it beside the resample functions: ``agent-replay sweep ID --resamplers
examples/incident/tools.py --resamplers examples/incident/faults.py --faults stale``. A fault
function takes the recorded step and returns what the step returns instead, or raises
`StepFailed` to make it fail; it is called once per step it is injected at.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, StepFailed, fault


@fault("stale")
def stale(step: Step) -> Any:
    """The deploy list without its newest deploy (the cache missed it); any other call fails as
    an expired cache entry."""
    if isinstance(step.output, list) and step.output:
        return step.output[1:]
    raise StepFailed("stale cache: the entry expired")
