"""Recording agents that were not written for agent-replay: a patched model SDK, decorated tools.

`instrument("openai")` wraps the OpenAI SDK's chat completions (``client.chat.completions.create``
on `OpenAI` and `AsyncOpenAI` clients, streaming included). Inside a recording or a replay (the
context `run_agent` sets, `current_context`), each call is one llm step named after its model: its
inputs the request in the recorded shape (``model``, ``messages``, ``tools``, ``parameters``; never the
client's key or headers), its output the response as JSON. A stream is read to its end when it is
recorded; its output is the assembled completion with the chunks it came in (``chunks``), and the
agent is handed a stream of those same chunks, recording and replaying alike. Under replay a held
call is served from the record with no network; a call the record does not hold is the usual
`NonDeterminismError`. Outside a recording or replay the SDK runs untouched.

`tool` and `step` make one of the agent's own functions a step: ``@otel_replay.tool`` (its keyword
arguments the tool's arguments) and ``@otel_replay.step("retriever", "docs")``; outside a recording
or replay they call the function and nothing more. An ``async def`` function is awaited under the
context's `AgentContext.acall`, so its record is served without awaiting it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar, cast

from otel_replay.errors import ReplayError
from otel_replay.model import StepKind
from otel_replay.replay._agent import _shape, current_context

F = TypeVar("F", bound=Callable[..., Any])

#: What a request carries that is not the call itself: transport, and secrets.
_TRANSPORT = frozenset({"extra_headers", "extra_query", "timeout", "stream"})
_PATCHED: dict[str, tuple[Any, str, Any]] = {}  # "module.Class.create" -> (class, name, original)


def instrument(*sdks: str) -> None:
    """Patch the named SDKs (``"openai"``) so their model calls are recorded and replayed; calling
    it again changes nothing."""
    for sdk in sdks:
        if sdk != "openai":
            raise ReplayError(f"cannot instrument {sdk!r}: agent-replay instruments 'openai'")
        _instrument_openai()


def uninstrument() -> None:
    """Put every patched method back."""
    for owner, name, original in _PATCHED.values():
        setattr(owner, name, original)
    _PATCHED.clear()


def _instrument_openai() -> None:
    try:
        from openai.resources.chat.completions import AsyncCompletions, Completions
    except ImportError:
        raise ReplayError(
            "instrumenting openai needs the openai package: pip install 'otel-replay[openai]'"
        ) from None
    _patch(Completions, "create", _openai_create)
    _patch(AsyncCompletions, "create", _openai_acreate)


def _patch(owner: Any, name: str, wrapper: Callable[[Any], Any]) -> None:
    key = f"{owner.__module__}.{owner.__qualname__}.{name}"
    if key in _PATCHED:
        return
    original = getattr(owner, name)
    _PATCHED[key] = (owner, name, original)
    setattr(owner, name, functools.wraps(original)(wrapper(original)))


# --- OpenAI chat completions ------------------------------------------------------------------------


def _request(kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The step's name (the model) and inputs, in the shape importers give model calls."""
    model = str(kwargs.get("model", "model"))
    call = {k: _json(v) for k, v in kwargs.items() if k not in _TRANSPORT and k != "model"}
    return model, _shape(StepKind.LLM, model, call)


def _json(value: Any) -> Any:
    """SDK objects (a message the agent appended from a response) as the JSON they were sent as."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def _openai_create(original: Callable[..., Any]) -> Callable[..., Any]:
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))

        def produce() -> Any:
            response = original(self, **kwargs)
            return _assembled(list(response)) if streaming else _json(response)

        output = ctx.call(StepKind.LLM, model, inputs, produce=produce)
        return _chunks(output) if streaming else _completion(output)

    return create


def _openai_acreate(original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return await original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))

        async def produce() -> Any:
            response = await original(self, **kwargs)
            if streaming:
                return _assembled([chunk async for chunk in response])
            return _json(response)

        output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
        return _achunks(output) if streaming else _completion(output)

    return create


def _completion(output: Any) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(output)


def _assembled(chunks: list[Any]) -> dict[str, Any]:
    """A stream's chunks as the completion they add up to, with the chunks themselves."""
    dumped = [_json(chunk) for chunk in chunks]
    first = dumped[0] if dumped else {}
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in dumped:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            into = choices.setdefault(
                choice.get("index", 0),
                {"index": choice.get("index", 0), "message": {"role": "assistant"}},
            )
            delta, message = choice.get("delta") or {}, into["message"]
            if delta.get("content"):
                message["content"] = message.get("content", "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                while len(calls) <= call.get("index", 0):
                    calls.append({"type": "function", "function": {"name": "", "arguments": ""}})
                slot = calls[call.get("index", 0)]
                slot["id"] = call.get("id") or slot.get("id", "")
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                into["finish_reason"] = choice["finish_reason"]
    completion: dict[str, Any] = {
        "id": first.get("id", ""),
        "object": "chat.completion",
        "created": first.get("created", 0),
        "model": first.get("model", ""),
        "choices": [choices[i] for i in sorted(choices)],
        "chunks": dumped,
    }
    if usage is not None:
        completion["usage"] = usage
    for choice in completion["choices"]:
        choice.setdefault("finish_reason", "stop")
        choice["message"].setdefault("content", None)
    return completion


def _chunks(output: Any) -> Iterator[Any]:
    from openai.types.chat import ChatCompletionChunk

    for chunk in output.get("chunks") or []:
        yield ChatCompletionChunk.model_validate(chunk)


async def _achunks(output: Any) -> AsyncIterator[Any]:
    for chunk in _chunks(output):
        yield chunk


# --- the agent's own functions ------------------------------------------------------------------------


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
            return _shape(step_kind, called, {k: _json(v) for k, v in bound.arguments.items()})

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
