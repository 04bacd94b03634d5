"""Built-in faults for ``fork --fault NAME``: what a flaky dependency does to a step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_replay.errors import InterventionError
from otel_replay.replay._plan import Intervention
from otel_replay.resamplers._faults import FAILURES


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


def fault(name: str, recorded_output: Any) -> Intervention:
    """The intervention that injects fault ``name`` into a step that returned ``recorded_output``."""
    make = FAULTS.get(name)
    if make is None:
        raise InterventionError(
            f"unknown fault {name!r}; built-in faults: {', '.join(sorted(FAULTS))}"
        )
    return make(recorded_output)
