"""Built-in faults for ``fork --fault NAME`` and ``sweep --faults``: what a flaky dependency does
to a step; and `fault`, which makes one's intervention, or (given only a name) registers a
user-defined fault, as `otel_replay.resampler` registers a resample function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from otel_replay.errors import InterventionError, RegistrationError
from otel_replay.replay._plan import Intervention
from otel_replay.resamplers import FAILURES, current_registry

F = TypeVar("F", bound=Callable[..., Any])

#: `fault` given a name alone: the decorator form
_NAME_ONLY: Any = object()


def _empty(output: Any) -> Any:
    if isinstance(output, list):
        return []
    if isinstance(output, dict):
        return {}
    if isinstance(output, str):
        return ""
    return None


def _truncate(output: Any) -> Any:
    """Keep the first half: of a list's items, a dict's keys (in recorded order), a string's text."""
    if isinstance(output, list):
        return output[: len(output) // 2]
    if isinstance(output, dict):
        keys = list(output)[: len(output) // 2]
        return {k: output[k] for k in keys}
    if isinstance(output, str):
        return output[: len(output) // 2]
    return output


FAULTS: dict[str, Callable[[Any], Intervention]] = {
    "error": lambda output: Intervention.fail(FAILURES["error"]),
    "timeout": lambda output: Intervention.fail(FAILURES["timeout"]),
    "empty": lambda output: Intervention.force(_empty(output)),
    "truncate": lambda output: Intervention.force(_truncate(output)),
}


@overload
def fault(name: str) -> Callable[[F], F]: ...


@overload
def fault(name: str, recorded_output: Any) -> Intervention: ...


def fault(name: str, recorded_output: Any = _NAME_ONLY) -> Intervention | Callable[[F], F]:
    """The intervention that injects the built-in fault ``name`` into a step that returned
    ``recorded_output``; or, given ``name`` alone, a decorator registering a user-defined fault
    for ``sweep --faults name`` into the current registry (as `otel_replay.resampler` does)::

        @fault("stale")
        def stale(step: Step) -> Any:  # the output the step returns instead
            return {"deploys": [], "cached_at": "2026-01-01"}

    A fault function takes the recorded step and returns what it returns instead, or raises
    (or returns) `otel_replay.StepFailed` to make it fail; it is called once per step it is
    injected at, when the sweep is planned, so it draws nothing at random."""
    if recorded_output is _NAME_ONLY:
        if not isinstance(name, str):  # a bare @fault: the function came as the name
            raise RegistrationError(
                f"@fault needs the fault's name, as in @fault('stale'); got {name!r}"
            )
        return current_registry().fault(name)
    make = FAULTS.get(name)
    if make is None:
        raise InterventionError(
            f"unknown fault {name!r}; built-in faults: {', '.join(sorted(FAULTS))}"
        )
    return make(recorded_output)
