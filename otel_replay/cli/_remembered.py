"""What the commands that run a recorded run's agent again share (``replay``, ``fork``,
``resume``, ``export --format pytest``): the SDKs and the verifier the run was recorded with,
unless ``--instrument`` / ``--verifier`` name others (``none``: none); and an agent that raised,
said on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_replay.cli._common import load_agent, print_error
from otel_replay.model import Trajectory

if TYPE_CHECKING:
    from otel_replay.replay import AgentRaised, Verifying

#: What ``--instrument`` and ``--verifier`` take to mean none at all (not the run's own).
NONE = "none"


def sdks_given(text: str | None) -> tuple[str, ...] | None:
    """``--instrument SDKS`` as a list; ``none``: an empty one; not given: None (the run's own)."""
    if text is None:
        return None
    if text.strip().lower() == NONE:
        return ()
    return tuple(name.strip() for name in text.split(",") if name.strip())


def sdks_for(run: Trajectory, text: str | None) -> tuple[str, ...]:
    """The SDKs an agent re-running ``run`` is served through: ``--instrument``'s, else those
    the run was recorded through."""
    from otel_replay.replay import instrumented_with

    given = sdks_given(text)
    return instrumented_with(run) if given is None else given


def agent_for(run: Trajectory, spec: str, instrument: str | None) -> Any:
    """The ``--agent`` function, with the SDKs it is served through (`sdks_for`) instrumented
    first."""
    return load_agent(spec, ",".join(sdks_for(run, instrument)) or None)


def verifier_given(spec: str | None) -> Verifying:
    """``--verifier``: the function it names; ``none``: None; not given: the run's own."""
    from otel_replay.replay import AS_RECORDED
    from otel_replay.resamplers import load_object

    if spec is None:
        return AS_RECORDED
    if spec.strip().lower() == NONE:
        return None
    function: Verifying = load_object(spec, "--verifier")
    return function


def recorded_unless_none(spec: str | None) -> Verifying:
    """The verifier when no option names one: none for ``--verifier none``, else the run's own."""
    from otel_replay.replay import AS_RECORDED

    return None if spec is not None and spec.strip().lower() == NONE else AS_RECORDED


def spec_given(spec: str | None) -> str:
    """What ``--verifier`` names, kept in the new run's metadata ("" for none or the run's own)."""
    return "" if spec is None or spec.strip().lower() == NONE else spec


def say_raised(raised: AgentRaised, then: str, again: str = "") -> None:
    """One line on stderr: how the agent raised (``again``: " again"), what became of the run."""
    print_error(f"{raised}{again}; {then}")
