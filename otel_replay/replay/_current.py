"""Which context is current, per thread of execution and asyncio task: the context of the agent run
under way (what instrumented SDK calls and decorated tools record through), and the errors of
agent-replay itself raised inside it, which an agent's ``except Exception`` must not hide. The
state alone: `otel_replay.replay._running` runs agents under it.

A framework runs an agent's tools where it likes: on the agent's thread, in an asyncio task, on a
worker thread (``asyncio.to_thread`` copies the context, a bare ``ThreadPoolExecutor`` does not). A
thread that never had a context of its own sees the **sole run** of the process, when exactly one
is under way that says it may be found so (`record`, `replay`, `fork` and `resume` run one agent
at a time; attribution's rollouts, many at once, never do): a tool called there is a step of that
run, not a call nobody records. With several such runs at once, no run can claim the call: each
fails saying so, rather than let it run unrecorded. Environment reads (a clock, an id) follow only a context the
thread really has: a framework's own threads read the clock all the time."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from otel_replay.errors import AgentError, ReplayError

# Errors of agent-replay itself raised during the current `run_agent` (per thread of execution).
_FATAL: ContextVar[list[ReplayError] | None] = ContextVar("otel_replay_fatal", default=None)
# A thread (or task) that was never given a context: told apart from one where a context was
# taken away on purpose (`outside_the_agent` sets None).
_NEVER_SET = object()
# The context of the run under way (an `AgentContext`, which sits above this room). A ContextVar, so
# it follows the agent across `await` (asyncio tasks copy it when created); a thread the agent
# starts sees it when started with ``contextvars.copy_context().run``, and else the sole run.
_CURRENT: ContextVar[Any] = ContextVar("otel_replay_context", default=_NEVER_SET)
# The runs under way that a thread without a context may find (each with its pending errors): a
# tuple, replaced whole under the lock, so a reader never sees it half changed.
_SOLE: tuple[tuple[Any, list[ReplayError]], ...] = ()
_SOLE_LOCK = threading.Lock()
_PID = [os.getpid()]  # the process this module was loaded in (a context without a pid)
# Set while the context performs one of the agent's steps (its own bookkeeping, and the step's
# ``produce``): the clock reads and ids made meanwhile belong to that step, not to the agent
# (`otel_replay.replay._environment`).
_IN_STEP: ContextVar[bool] = ContextVar("otel_replay_in_step", default=False)


def current() -> Any:
    """The context of the run under way here (None outside one), else the sole run of the process
    (see above); `current_context` types it. A process forked from the one running the agent (a
    framework's worker process) inherits the run but is not where it is kept: its calls run as
    they would without agent-replay, never into a copy of the run or the parent's store."""
    ctx = _CURRENT.get()
    if ctx is not _NEVER_SET:
        return ctx if ctx is None or getattr(ctx, "pid", _PID[0]) == os.getpid() else None
    sole = _SOLE  # read once: a run may start or end meanwhile
    if sole and getattr(sole[0][0], "pid", _PID[0]) != os.getpid():
        return None  # a forked process: see above
    if len(sole) == 1:
        return sole[0][0]
    if sole:  # which run's is it? none can tell: each fails, rather than run it unrecorded
        error = AgentError(
            f"a call was made on a thread that carries no run's context while {len(sole)} runs "
            "are under way, so it cannot be told which run it belongs to, and it ran unrecorded; "
            "start the agent's threads with contextvars.copy_context().run (asyncio.to_thread "
            "does), or record one agent at a time"
        )
        for _, pending in sole:
            if not pending:
                pending.append(error)
    return None


def reading_agent() -> Any:
    """The context of the run under way here when the agent itself is running (not a step of it,
    nor a resample function): where an instrumented clock read or id is one of its steps. Only a
    context this thread or task was given: never the sole run."""
    if _IN_STEP.get():
        return None
    ctx = _CURRENT.get()
    return None if ctx is _NEVER_SET else ctx


class inside_a_step:  # lower case: a context manager, a class for the same reason as below
    """The block performs one step of the agent: what it reads of the environment is that step's."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _IN_STEP.set(True)

    def __exit__(self, *exc_info: object) -> None:
        _IN_STEP.reset(self._token)


def remember_fatal(error: ReplayError) -> ReplayError:
    """Remember an error of agent-replay itself raised inside the agent: `run_agent` raises it when
    the agent returns, even if the agent caught it. Returns ``error``, to be raised."""
    pending = _FATAL.get()
    if pending is None and _CURRENT.get() is _NEVER_SET:  # a thread that found the sole run
        sole = _SOLE
        pending = sole[0][1] if len(sole) == 1 else None
    if pending is not None and not pending:
        pending.append(error)
    return error


class outside_the_agent:  # lower case: used as the context manager it was
    """No context is current while the block runs: a resample function's own SDK calls (the
    built-in model one's) are its business, not steps of the agent. (A class, not a generator:
    it wraps every resample function a live rollout calls, and costs a third as much.)"""

    __slots__ = ("_outside",)

    def __enter__(self) -> None:
        self._outside = _CURRENT.set(None)

    def __exit__(self, *exc_info: object) -> None:
        _CURRENT.reset(self._outside)


@contextmanager
def running(ctx: Any, *, sole: bool = False) -> Iterator[list[ReplayError]]:
    """``ctx`` is the current context, and agent-replay's own errors are collected, meanwhile.
    ``sole``: threads without a context may find it (the one agent a command runs)."""
    pending: list[ReplayError] = []
    fatal = _FATAL.set(pending)
    running_here = _CURRENT.set(ctx)
    entry = (ctx, pending)
    global _SOLE
    if sole:
        with _SOLE_LOCK:
            _SOLE = (*_SOLE, entry)
    try:
        yield pending
    finally:
        if sole:
            with _SOLE_LOCK:
                _SOLE = tuple(e for e in _SOLE if e is not entry)
        _CURRENT.reset(running_here)
        _FATAL.reset(fatal)
