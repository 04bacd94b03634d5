"""The agent's own functions as steps: ``@otel_replay.tool`` (its arguments the tool's arguments) and
``@otel_replay.step("retriever", "docs")``. Inside a recording or a replay (`current_context`) a call
is one step through the context; outside one the function is called and nothing more. An ``async
def`` function is awaited through `AgentContext.acall`, so its record is served without awaiting
it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from otel_replay.model import StepKind
from otel_replay.replay._running import current_context
from otel_replay.replay._steps import shaped_inputs
from otel_replay.replay._values import as_sent

F = TypeVar("F", bound=Callable[..., Any])


def step(kind: StepKind | str, name: str | None = None) -> Callable[[F], F]:
    """Make a function one step of kind ``kind`` (named ``name``, else after the function): its
    keyword arguments are the step's inputs (a tool's ``arguments``), its return value the output."""
    step_kind = StepKind(kind)

    def decorate(function: F) -> F:
        called = name or function.__name__
        signature = inspect.signature(function)

        def inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return shaped_inputs(
                step_kind, called, {k: as_sent(v) for k, v in bound.arguments.items()}
            )

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                ctx = current_context()
                if ctx is None:
                    return await function(*args, **kwargs)
                return await ctx.acall(
                    step_kind,
                    called,
                    inputs(args, kwargs),
                    produce=lambda: function(*args, **kwargs),
                )

            return cast(F, awaited)

        @functools.wraps(function)
        def performed(*args: Any, **kwargs: Any) -> Any:
            ctx = current_context()
            if ctx is None:
                return function(*args, **kwargs)
            return ctx.call(
                step_kind, called, inputs(args, kwargs), produce=lambda: function(*args, **kwargs)
            )

        return cast(F, performed)

    return decorate


def tool(function: F | None = None, *, name: str | None = None) -> Any:
    """``@tool`` or ``@tool(name="search")``: the function is a tool step (see `step`)."""
    if function is None:
        return step(StepKind.TOOL, name)
    return step(StepKind.TOOL, name)(function)
