"""Recording agents that were not written for agent-replay: patched model SDKs, decorated tools.

`instrument("openai", "anthropic")` wraps the SDKs' model calls: OpenAI chat completions and
responses (``client.chat.completions.create``, ``client.responses.create``) and Anthropic messages
(``client.messages.create``), on sync and async clients, streaming included. Inside a recording or a
replay (the context `run_agent` sets, `current_context`), each call is one llm step named after its
model: its inputs the request in the recorded shape (``model``, ``messages``, ``tools``,
``parameters``; never the client's key or headers, which are not part of the request's arguments),
its output the response as JSON. A stream is read to its end when it is recorded; its output is the
message it adds up to with the chunks or events it came in (``chunks``), and the agent is handed a
stream of those same chunks, recording and replaying alike, so both see the same objects. Under
replay a held call is served from the record with no network; a call the record does not hold is
the usual `NonDeterminismError`. Outside a recording or replay the SDK runs untouched. The streaming
helpers (``client.messages.stream``, ``client.chat.completions.stream``, ``client.responses.stream``)
record the same step as ``create(..., stream=True)``, and the structured-output helpers
(``client.chat.completions.parse``, ``client.responses.parse``) the same step as ``create``, the SDK
parsing the recorded response. (``client.responses.stream(response_id=...)`` resumes a response
already made, not a model call: it is not recorded.)

`tool` and `step` make one of the agent's own functions a step: ``@otel_replay.tool`` (its arguments
the tool's arguments) and ``@otel_replay.step("retriever", "docs")``; outside a recording or replay
they call the function and nothing more. An ``async def`` function is awaited through the context's
`AgentContext.acall`, so its record is served without awaiting it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import orjson

from otel_replay.errors import ReplayError
from otel_replay.model import StepKind
from otel_replay.replay._agent import _shape, current_context
from otel_replay.resamplers import wire_tool_calls

F = TypeVar("F", bound=Callable[..., Any])

#: What a request carries that is not the call itself: transport, and secrets.
_TRANSPORT = frozenset({"extra_headers", "extra_query", "timeout", "stream"})
#: The SDKs' "not given" sentinels (their helpers pass every parameter, most of them unset).
_UNSET = frozenset({"Omit", "NotGiven"})
_PATCHED: dict[str, tuple[Any, str, Any]] = {}  # "module.Class.create" -> (class, name, original)


def instrument(*sdks: str) -> None:
    """Patch the named SDKs (``"openai"``, ``"anthropic"``) so their model calls are recorded and
    replayed; calling it again changes nothing."""
    for sdk in sdks:
        if sdk not in _SDKS:
            raise ReplayError(
                f"cannot instrument {sdk!r}: agent-replay instruments {', '.join(map(repr, _SDKS))}"
            )
        _SDKS[sdk]()


def uninstrument() -> None:
    """Put every patched method back."""
    for owner, name, original in _PATCHED.values():
        setattr(owner, name, original)
    _PATCHED.clear()


@dataclass(frozen=True, slots=True)
class _Api:
    """How one SDK method's responses become JSON and back: ``response`` the response type, ``item``
    the type of a stream's items, ``assemble`` a stream's items into the output, ``sdk`` the
    package whose lenient parser (the one it reads the wire with) builds the objects again."""

    sdk: str
    response: Callable[[], Any]
    item: Callable[[], Any]
    assemble: Callable[[list[dict[str, Any]]], dict[str, Any]]
    #: A resample function's answer (a message in the importers' shape: ``role``, ``content``,
    #: ``tool_calls`` of ``{id, name, arguments}``) as this API's response, and as its stream.
    answered: Callable[[dict[str, Any]], dict[str, Any]]
    streamed: Callable[[dict[str, Any]], list[dict[str, Any]]]

    def _build(self, kind: Any, value: Any) -> Any:
        construct = importlib.import_module(f"{self.sdk}._models").construct_type
        return construct(type_=kind, value=value)

    def completion(self, output: Any) -> Any:
        """The response the agent gets: as recorded, or a resample function's answer made one."""
        if _is_message(output):
            output = self.answered(output)
        return self._build(self.response(), output)

    def items(self, output: Any) -> list[Any]:
        """The stream the agent gets: the recorded chunks, or a resample function's answer as a
        stream (each part of it in one piece)."""
        chunks = self.streamed(output) if _is_message(output) else output.get("chunks") or []
        return [self._build(self.item(), chunk) for chunk in chunks]


def _is_message(output: Any) -> bool:
    """A resample function's answer (the importers' message shape), not a response as an API
    sent it (which the record holds for a call made live)."""
    return (
        isinstance(output, dict)
        and output.get("role") == "assistant"
        and "id" not in output
        and "chunks" not in output
    )


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def _openai_wire_message(message: dict[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = wire_tool_calls(message.get("tool_calls"))
    if calls:
        wire["tool_calls"] = calls
    return wire


def _openai_finish(message: dict[str, Any]) -> str:
    reason = message.get("finish_reason")
    return reason if isinstance(reason, str) else ("tool_calls" if _calls(message) else "stop")


def _openai_chat_answered(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-resampled",
        "object": "chat.completion",
        "created": 0,
        "model": str(message.get("model") or ""),
        "choices": [
            {
                "index": 0,
                "message": _openai_wire_message(message),
                "finish_reason": _openai_finish(message),
            }
        ],
    }


def _openai_chat_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as one chunk carrying the whole message (a stream may be cut anywhere)."""
    delta = _openai_wire_message(message)
    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta.get("tool_calls", []))]
    if not delta["tool_calls"]:
        del delta["tool_calls"]
    return [
        {
            "id": "chatcmpl-resampled",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": str(message.get("model") or ""),
            "choices": [{"index": 0, "delta": delta, "finish_reason": _openai_finish(message)}],
        }
    ]


def _openai_responses_answered(message: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(
            {
                "type": "message",
                "id": "msg_resampled",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for i, call in enumerate(_calls(message)):
        call_id = str(call.get("id") or f"call_{i}")
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": call.get("name"),
                "arguments": _arguments(call),
                "status": "completed",
            }
        )
    return {
        "id": "resp_resampled",
        "object": "response",
        "created_at": 0,
        "model": str(message.get("model") or ""),
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def _openai_responses_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of the answer: created, each item added, its text or arguments in one delta,
    done, completed."""
    whole = _openai_responses_answered(message)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**whole, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(whole["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "function_call":
            arguments = item["arguments"]
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                },
                {"type": "response.function_call_arguments.delta", **at, "delta": arguments},
                {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
            ]
        else:
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            at_part = {**at, "content_index": 0}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": [], "status": "in_progress"},
                },
                {"type": "response.content_part.added", **at_part, "part": part},
                {"type": "response.output_text.delta", **at_part, "delta": text, "logprobs": []},
                {"type": "response.output_text.done", **at_part, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **at_part, "part": {**part, "text": text}},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": whole})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _anthropic_answered(message: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    for i, call in enumerate(_calls(message)):
        arguments = call.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{i}",
                "name": call.get("name"),
                "input": arguments if isinstance(arguments, dict) else {},
            }
        )
    return {
        "id": "msg_resampled",
        "type": "message",
        "role": "assistant",
        "model": str(message.get("model") or ""),
        "content": content,
        "stop_reason": "tool_use" if _calls(message) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _anthropic_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of the answer: the message started, each block opened, filled in one delta and
    closed, the stop reason, the end."""
    whole = _anthropic_answered(message)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**whole, "content": [], "stop_reason": None}}
    ]
    for index, block in enumerate(whole["content"]):
        opened: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": opened},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 0},
        },
        {"type": "message_stop"},
    ]
    return events


def _instrument_openai() -> None:
    try:
        from openai.resources.chat.completions import AsyncCompletions, Completions
        from openai.resources.responses import AsyncResponses, Responses
    except ImportError:
        raise ReplayError(
            "instrumenting openai needs the openai package: pip install 'otel-replay[openai]'"
        ) from None
    _patch(Completions, "create", _OPENAI_CHAT, asynchronous=False)
    _patch(AsyncCompletions, "create", _OPENAI_CHAT, asynchronous=True)
    _patch(Responses, "create", _OPENAI_RESPONSES, asynchronous=False)
    _patch(AsyncResponses, "create", _OPENAI_RESPONSES, asynchronous=True)
    for owner, api in (
        (Completions, _OPENAI_CHAT),
        (AsyncCompletions, _OPENAI_CHAT),
        (Responses, _OPENAI_RESPONSES),
        (AsyncResponses, _OPENAI_RESPONSES),
    ):
        _patch_with(owner, "parse", _parser(api))


def _instrument_anthropic() -> None:
    try:
        from anthropic.resources.messages import AsyncMessages, Messages
    except ImportError:
        raise ReplayError(
            "instrumenting anthropic needs the anthropic package: "
            "pip install 'otel-replay[anthropic]'"
        ) from None
    _patch(Messages, "create", _ANTHROPIC, asynchronous=False)
    _patch(AsyncMessages, "create", _ANTHROPIC, asynchronous=True)
    _patch_with(Messages, "stream", _helper(_ANTHROPIC))
    _patch_with(AsyncMessages, "stream", _helper(_ANTHROPIC))


def _patch(owner: Any, name: str, api: _Api, *, asynchronous: bool) -> None:
    key = f"{owner.__module__}.{owner.__qualname__}.{name}"
    if key in _PATCHED:
        return
    original = getattr(owner, name)
    _PATCHED[key] = (owner, name, original)
    wrap = _awrapped if asynchronous else _wrapped
    setattr(owner, name, functools.wraps(original)(wrap(original, api)))


def _patch_with(owner: Any, name: str, wrapper: Callable[[Any], Any]) -> None:
    key = f"{owner.__module__}.{owner.__qualname__}.{name}"
    if key not in _PATCHED:
        original = getattr(owner, name)
        _PATCHED[key] = (owner, name, original)
        setattr(owner, name, functools.wraps(original)(wrapper(original)))


def _helper(api: _Api) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A streaming helper that does not go through ``create`` (Anthropic's
    ``client.messages.stream(...)``): the SDK's own manager, its request swapped for the recorded
    step, which is the same step as ``create(..., stream=True)`` (a helper is not part of the
    call). OpenAI's ``client.chat.completions.stream(...)`` calls ``create`` itself, so it is
    recorded there."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            ctx = current_context()
            if ctx is None or args:
                return original(self, *args, **kwargs)
            manager = original(self, **kwargs)
            slot = f"_{type(manager).__name__}__api_request"
            request = getattr(manager, slot)
            model, inputs = _request(kwargs)
            if inspect.iscoroutine(request):  # an async client's manager awaits its request

                async def served() -> _AReplayed:
                    async def produce() -> Any:
                        return api.assemble([_json(item) async for item in await request])

                    output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
                    if inspect.getcoroutinestate(request) == inspect.CORO_CREATED:
                        request.close()  # served from the record: the request is never sent
                    return _AReplayed(api.items(output))

                setattr(manager, slot, served())
                return manager

            def replayed() -> _Replayed:
                def produce() -> Any:
                    return api.assemble([_json(item) for item in request()])

                output = ctx.call(StepKind.LLM, model, inputs, produce=produce)
                return _Replayed(api.items(output))

            setattr(manager, slot, replayed)
            return manager

        return stream

    return wrap


def _parser(api: _Api) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """OpenAI's structured-output helpers (``client.chat.completions.parse``,
    ``client.responses.parse``) post their request themselves and parse the response after. The post
    is the recorded step, the same step as ``create`` with the same arguments: its output the
    response as the API sent it (a model resampler's answer has that shape too). The SDK's own
    parser, handed to the post with the request, then reads the response, recorded or served, so
    the agent gets the SDK's parsed objects either way."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(original):

            async def aparse(self: Any, *args: Any, **kwargs: Any) -> Any:
                ctx = current_context()
                if ctx is None or args:
                    return await original(self, *args, **kwargs)
                model, inputs = _request(kwargs)

                async def post(path: str, *, options: dict[str, Any], **rest: Any) -> Any:
                    parse, sent = _post_parser(options)

                    async def produce() -> Any:
                        return _json(await self._post(path, options=sent, **rest))

                    output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
                    return parse(api.completion(output))

                return await original(_Posting(self, post), **kwargs)

            return aparse

        def parse(self: Any, *args: Any, **kwargs: Any) -> Any:
            ctx = current_context()
            if ctx is None or args:
                return original(self, *args, **kwargs)
            model, inputs = _request(kwargs)

            def post(path: str, *, options: dict[str, Any], **rest: Any) -> Any:
                parse, sent = _post_parser(options)

                def produce() -> Any:
                    return _json(self._post(path, options=sent, **rest))

                return parse(api.completion(ctx.call(StepKind.LLM, model, inputs, produce=produce)))

            return original(_Posting(self, post), **kwargs)

        return parse

    return wrap


def _post_parser(options: dict[str, Any]) -> tuple[Callable[[Any], Any], dict[str, Any]]:
    """A request's options without their parser (the post returns the response as sent), and the
    parser."""
    parse = options.get("post_parser")
    sent = {k: v for k, v in options.items() if k != "post_parser"}
    return (parse if callable(parse) else lambda response: response), sent


class _Posting:
    """An SDK resource whose ``_post`` is the recorded step: what a parse helper is handed in place
    of its resource; anything else it reads is the resource's own."""

    def __init__(self, resource: Any, post: Callable[..., Any]) -> None:
        self._resource = resource
        self._post = post

    def __getattr__(self, name: str) -> Any:
        return getattr(self._resource, name)


def _request(kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The step's name (the model) and inputs, in the shape importers give model calls."""
    model = str(kwargs.get("model", "model"))
    call = {
        k: _json(v)
        for k, v in kwargs.items()
        if k not in _TRANSPORT and k != "model" and type(v).__name__ not in _UNSET
    }
    return model, _shape(StepKind.LLM, model, call)


def _json(value: Any) -> Any:
    """SDK objects (a message the agent appended from a response) as the JSON they were sent as."""
    if isinstance(value, type):  # a response format given as a model class: its schema
        schema = getattr(value, "model_json_schema", None)
        return {"name": value.__name__, "schema": schema()} if callable(schema) else value.__name__
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def _wrapped(original: Callable[..., Any], api: _Api) -> Callable[..., Any]:
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))

        def produce() -> Any:
            response = original(self, **kwargs)
            return (
                api.assemble([_json(item) for item in response]) if streaming else _json(response)
            )

        output = ctx.call(StepKind.LLM, model, inputs, produce=produce)
        return _Replayed(api.items(output)) if streaming else api.completion(output)

    return create


def _awrapped(original: Callable[..., Awaitable[Any]], api: _Api) -> Callable[..., Awaitable[Any]]:
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return await original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))

        async def produce() -> Any:
            response = await original(self, **kwargs)
            if streaming:
                return api.assemble([_json(item) async for item in response])
            return _json(response)

        output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
        return _AReplayed(api.items(output)) if streaming else api.completion(output)

    return create


class _NoResponse:
    """What a served stream says of its HTTP response: there was none, no request having been
    sent. The SDKs' stream helpers only read its headers (request ids) and close it."""

    status_code = 200
    headers: dict[str, str] = {}  # noqa: RUF012 (read-only: nothing writes it)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _Replayed:
    """A stream of recorded chunks, used as the SDK's stream is (iterated, or in ``with``)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self.response = _NoResponse()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __enter__(self) -> _Replayed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


class _AReplayed:
    """`_Replayed` for ``async for`` and ``async with``."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self.response = _NoResponse()

    async def __aiter__(self) -> AsyncIterator[Any]:
        for item in self._items:
            yield item

    async def __aenter__(self) -> _AReplayed:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def close(self) -> None:
        return None


def _openai_chat_assembled(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat stream's chunks as the completion they add up to, with the chunks themselves."""
    first = chunks[0] if chunks else {}
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
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
        "chunks": chunks,
    }
    if usage is not None:
        completion["usage"] = usage
    for choice in completion["choices"]:
        choice.setdefault("finish_reason", "stop")
        choice["message"].setdefault("content", None)
    return completion


def _openai_responses_assembled(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A responses stream's events: the response its last event carries, with the events."""
    final: dict[str, Any] = next(
        (e["response"] for e in reversed(events) if isinstance(e.get("response"), dict)), {}
    )
    return {**final, "chunks": events}


def _anthropic_assembled(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A messages stream's events as the message they add up to, with the events themselves."""
    message: dict[str, Any] = {"content": []}
    partial: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = {**event.get("message", {}), "content": []}
        elif kind == "content_block_start":
            message["content"].append(dict(event.get("content_block", {})))
        elif kind == "content_block_delta":
            index, delta = event.get("index", 0), event.get("delta", {})
            block = message["content"][index]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + delta.get("partial_json", "")
        elif kind == "content_block_stop" and event.get("index", 0) in partial:
            message["content"][event["index"]]["input"] = orjson.loads(
                partial[event["index"]] or "{}"
            )
        elif kind == "message_delta":
            message.update(event.get("delta", {}))
            if "usage" in event:
                message["usage"] = {**message.get("usage", {}), **event["usage"]}
    return {**message, "chunks": events}


def _type(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


_OPENAI_CHAT = _Api(
    "openai",
    _type("openai.types.chat", "ChatCompletion"),
    _type("openai.types.chat", "ChatCompletionChunk"),
    _openai_chat_assembled,
    _openai_chat_answered,
    _openai_chat_streamed,
)
_OPENAI_RESPONSES = _Api(
    "openai",
    _type("openai.types.responses", "Response"),
    _type("openai.types.responses", "ResponseStreamEvent"),
    _openai_responses_assembled,
    _openai_responses_answered,
    _openai_responses_streamed,
)
_ANTHROPIC = _Api(
    "anthropic",
    _type("anthropic.types", "Message"),
    _type("anthropic.types", "RawMessageStreamEvent"),
    _anthropic_assembled,
    _anthropic_answered,
    _anthropic_streamed,
)
_SDKS: dict[str, Callable[[], None]] = {
    "openai": _instrument_openai,
    "anthropic": _instrument_anthropic,
}


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
