"""What built-in resample functions drew in one rollout, noted as they draw.

Whoever runs a rollout (the engine, a worker of another process) opens a log around it with
`drawing`; ``--tools recorded`` notes there which stored run each result it served came from, and
which calls its faults fallback answered, and every call it answered (`noted_free`: nothing was
called, so nothing was paid); the built-in model notes the tokens each of its calls used, as the
server reported them (`noted_tokens`); the drivers note every call the rollout makes, as they make
it (`DrawLog.called`: a resample function's, or a live agent's own), so what a rollout that an
error ended had spent by then is known too. The log follows the rollout the way the agent's context
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
    """What the built-in resample functions drew in one rollout: the run each recorded result
    came from, in draw order, the calls nothing recorded that the faults fallback answered, how
    many calls ``--tools recorded`` answered in all (``free``: drawn, held as recorded, or failed
    as faults), the tokens of each model call the built-in model made that its server counted
    (``tokens``, in call order), and the calls the rollout made (``calls``: resample-function
    calls and a live agent's own, of them the model calls by the recorded step each stood in for,
    ``model_steps``, None for a call the record does not hold)."""

    runs: tuple[str, ...] = ()
    faults: tuple[Call, ...] = ()
    free: int = 0
    tokens: tuple[int, ...] = ()
    calls: int = 0
    model_steps: tuple[int | None, ...] = ()
    #: the tool calls a model played (``--tools simulate``), each one request of the model
    #: server, and the tokens each used as the server counted them (None: it did not say)
    simulated: tuple[Call, ...] = ()
    simulated_tokens: tuple[int | None, ...] = ()


#: A rollout's draws when nothing was drawn (or nothing noted them).
NO_DRAWS = Draws()


@dataclass(slots=True)
class DrawLog:
    """The draws of the rollout under way (`drawing`)."""

    runs: list[str] = field(default_factory=list)
    faults: list[Call] = field(default_factory=list)
    free: int = 0
    tokens: list[int] = field(default_factory=list)
    calls: int = 0
    model_steps: list[int | None] = field(default_factory=list)
    simulated: list[Call] = field(default_factory=list)
    simulated_tokens: list[int | None] = field(default_factory=list)

    @property
    def noted(self) -> bool:
        """Whether anything was noted (a rollout that noted nothing keeps `NO_DRAWS`)."""
        return bool(
            self.runs or self.faults or self.free or self.tokens or self.calls or self.simulated
        )

    def called(self, model: bool, stands_for: int | None) -> None:
        """The rollout makes a call (a model call when ``model``, standing in for the recorded
        step ``stands_for``; None: a call the record does not hold). Noted before the call is
        made, so a call under way when an error ended the rollout is counted: it was paid."""
        self.calls += 1
        if model:
            self.model_steps.append(stands_for)

    def unanswered(self, model: bool, stands_for: int | None) -> None:
        """The call just noted (`called`) was answered by nothing (`UnservableError`): nothing
        was called for it, so it is not counted."""
        self.calls -= 1
        if model:
            at = len(self.model_steps) - 1 - self.model_steps[::-1].index(stands_for)
            del self.model_steps[at]

    def draws(self) -> Draws:
        return Draws(
            tuple(self.runs),
            tuple(self.faults),
            self.free,
            tuple(self.tokens),
            self.calls,
            tuple(self.model_steps),
            tuple(self.simulated),
            tuple(self.simulated_tokens),
        )


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


def current_log() -> DrawLog | None:
    """The log of the rollout under way here (None: none), for a context that notes the calls of
    a rollout whose agent may make them on threads of its own."""
    return _LOG.get()


def noted_call(model: bool, stands_for: int | None) -> None:
    """The rollout under way makes a call (`DrawLog.called`)."""
    log = _LOG.get()
    if log is not None:
        log.called(model, stands_for)


def noted_unanswered(model: bool, stands_for: int | None) -> None:
    """The call just noted was answered by nothing (`DrawLog.unanswered`)."""
    log = _LOG.get()
    if log is not None:
        log.unanswered(model, stands_for)


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


def noted_free() -> None:
    """The call under way was answered without calling anything (``--tools recorded``)."""
    log = _LOG.get()
    if log is not None:
        log.free += 1


def noted_simulation(call: Call, tokens: int | None) -> None:
    """A model played the tool ``call`` (one request of its server, ``tokens`` as it counted
    them; None: it did not say)."""
    log = _LOG.get()
    if log is not None:
        log.simulated.append(call)
        log.simulated_tokens.append(tokens)


def noted_tokens(tokens: int) -> None:
    """The model call just made used ``tokens`` (input and output), as its server counted them."""
    log = _LOG.get()
    if log is not None:
        log.tokens.append(tokens)
