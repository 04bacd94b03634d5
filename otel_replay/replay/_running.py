"""Running an agent function under a context: `run_agent` (and `arun_agent` on the caller's event
loop), with `current_context` the context while it runs, and agent-replay's own errors raised when
it returns (`otel_replay.replay._current` keeps that state)."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, cast

from otel_replay.errors import ReplayError
from otel_replay.replay._current import current, running
from otel_replay.replay._environment import patched
from otel_replay.replay._steps import AgentContext


def current_context() -> AgentContext | None:
    """The recording or replay context of the run under way here (None outside one)."""
    return cast("AgentContext | None", current())


async def _awaited(answer: Awaitable[Any]) -> Any:
    return await answer


#: `_takes_context` of the agents seen: an attribution calls the same agent in every rollout, and
#: reading its signature cost more than some of its rollouts' steps (a weak key: a caller's agent
#: is not kept alive by having run).
_TAKES_CONTEXT: weakref.WeakKeyDictionary[Callable[..., Any], bool] = weakref.WeakKeyDictionary()


def _takes_context(agent: Callable[..., Any]) -> bool:
    """Whether the agent is written for agent-replay: its first parameter is ``ctx``. An agent
    that is not (its model calls recorded by `otel_replay.instrument`) is called without it."""
    try:
        return _TAKES_CONTEXT[agent]
    except (KeyError, TypeError):  # not seen yet, or not weakly referable (nor hashable)
        pass
    takes = _first_parameter_is_ctx(agent)
    with suppress(TypeError):
        _TAKES_CONTEXT[agent] = takes
    return takes


def _first_parameter_is_ctx(agent: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(agent).parameters.values())
    except (TypeError, ValueError):
        return True
    return bool(parameters) and parameters[0].name == "ctx"


def run_agent(
    agent: Callable[..., Any], ctx: AgentContext, arguments: Any, *, sole: bool = False
) -> tuple[Any, str | None]:
    """Call ``agent(ctx, ...)`` (``agent(...)`` when its first parameter is not named ``ctx``); an
    ``async def`` agent runs on an event loop of its own (`arun_agent` runs it on the caller's).
    Return ``(answer, None)``, or ``(None, "Type: message")`` if it raised.

    ``arguments``: a JSON object becomes keyword arguments, anything else one positional argument,
    ``None`` none. While the agent runs, `current_context` is ``ctx``; what the agent raised is
    ``ctx.raised`` after. Errors of agent-replay itself (non-determinism, invalid output, the
    recording's own failure: ``ctx.failed``) propagate.

    ``sole``: the one agent the process runs (`record`, `replay`, `fork`, `resume`): a thread the
    agent's framework made without copying the context (a bare thread pool) finds ``ctx`` too.
    """
    with running(ctx, sole=sole) as pending, patched(agent):
        try:
            answer = _call(agent, ctx, arguments)
            if inspect.isawaitable(answer):  # an async agent: run on a loop of its own
                answer = asyncio.run(_awaited(answer))
        except Exception as exc:
            ctx.raised = exc
            ctx.close()
            return _failed(exc, pending, ctx)
    ctx.close()  # a thread the agent left running is no longer part of the run
    return _returned(answer, pending, ctx)


async def arun_agent(
    agent: Callable[..., Any], ctx: AgentContext, arguments: Any
) -> tuple[Any, str | None]:
    """`run_agent` on the running event loop: an ``async def`` agent is awaited there, so many
    rollouts share one loop (each task has its own `current_context`)."""
    with running(ctx) as pending, patched(agent):
        try:
            answer = _call(agent, ctx, arguments)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            ctx.raised = exc
            ctx.close()
            return _failed(exc, pending, ctx)
    ctx.close()
    return _returned(answer, pending, ctx)


def _call(agent: Callable[..., Any], ctx: AgentContext, arguments: Any) -> Any:
    head = (ctx,) if _takes_context(agent) else ()
    if arguments is None:
        return agent(*head)
    if isinstance(arguments, dict):
        return agent(*head, **arguments)
    return agent(*head, arguments)


def _failed(
    exc: Exception, pending: list[ReplayError], ctx: AgentContext
) -> tuple[Any, str | None]:
    """The agent raised: agent-replay's own errors propagate, the agent's is the run's end."""
    if ctx.failed is not None:  # the recording failed first: nothing after it is what it seems
        raise ctx.failed from exc
    if isinstance(exc, ReplayError):
        raise exc
    if pending:
        raise pending[0] from exc
    return None, f"{type(exc).__name__}: {exc}"


def _returned(answer: Any, pending: list[ReplayError], ctx: AgentContext) -> tuple[Any, str | None]:
    if ctx.failed is not None:
        raise ctx.failed
    if pending:  # the agent caught it, but the run is not what it seems
        raise pending[0]
    return answer, None
