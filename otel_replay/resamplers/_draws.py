"""What built-in resample functions drew in one rollout, noted as they draw.

Whoever runs a rollout (the engine, a worker of another process) opens a log around it with
`drawing`; ``--tools recorded`` notes there which stored run each result it served came from, and
which calls its faults fallback answered. The log follows the rollout the way the agent's context
does (a ContextVar: per thread of execution and asyncio task), so rollouts on threads or on one
event loop each note their own; outside a log nothing is noted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import NamedTuple


class Call(NamedTuple):
    """A tool call as draws and reports name it: the tool, and its arguments as canonical JSON."""

    tool: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Draws:
    """What the built-in tool functions drew in one rollout: the run each recorded result came
    from, in draw order, and the calls nothing recorded that the faults fallback answered."""

    runs: tuple[str, ...] = ()
    faults: tuple[Call, ...] = ()


#: A rollout's draws when nothing was drawn (or nothing noted them).
NO_DRAWS = Draws()


@dataclass(slots=True)
class DrawLog:
    """The draws of the rollout under way (`drawing`)."""

    runs: list[str] = field(default_factory=list)
    faults: list[Call] = field(default_factory=list)

    def draws(self) -> Draws:
        return Draws(tuple(self.runs), tuple(self.faults))


# The log of the rollout under way, per thread of execution and asyncio task (as the agent's
# context is): rollouts on threads or on one event loop each note their own draws.
_LOG: ContextVar[DrawLog | None] = ContextVar("otel_replay_draws", default=None)


@contextmanager
def drawing() -> Iterator[DrawLog]:
    """Note the draws made while the block runs (one rollout) in the log it yields."""
    log = DrawLog()
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def noted_draw(run: str) -> None:
    """A result recorded in ``run`` was served to the rollout under way."""
    log = _LOG.get()
    if log is not None:
        log.runs.append(run)


def noted_fault(call: Call) -> None:
    """``call``, which nothing recorded, was answered by the faults fallback."""
    log = _LOG.get()
    if log is not None:
        log.faults.append(call)
