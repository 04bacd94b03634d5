"""Recording agents that were not written for agent-replay: their model SDKs, patched.

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

``instrument("time", "uuid")`` records the clock and fresh ids an agent reads, patched only while
an agent runs (`otel_replay.replay._environment`).

How responses become JSON and back is `otel_replay.replay._sdk_shapes`; the agent's own functions
are made steps by `otel_replay.replay._decorators`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from otel_replay._extras import install_command
from otel_replay.errors import MissingExtraError, SettingError
from otel_replay.model import StepKind
from otel_replay.replay import _environment
from otel_replay.replay._running import current_context
from otel_replay.replay._sdk_shapes import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, SdkApi
from otel_replay.replay._steps import shaped_inputs
from otel_replay.replay._values import as_sent

#: What a request carries that is not the call itself: transport, and secrets.
_TRANSPORT = frozenset({"extra_headers", "extra_query", "timeout", "stream"})
#: The SDKs' "not given" sentinels (their helpers pass every parameter, most of them unset).
_UNSET = frozenset({"Omit", "NotGiven"})
_PATCHED: dict[str, tuple[Any, str, Any]] = {}  # "module.Class.create" -> (class, name, original)
_INSTRUMENTED: set[str] = set()  # the SDKs `instrument` patched (until `uninstrument`)


def instrument(*sdks: str) -> None:
    """Patch the named SDKs (``"openai"``, ``"anthropic"``) so their model calls are recorded and
    replayed, and with ``"time"`` and ``"uuid"`` the clock and fresh ids an agent reads
    (``time.time``, ``time.time_ns``, ``datetime.datetime.now`` and ``utcnow``; ``uuid.uuid4``:
    patched only while an agent runs, each call one ``other`` step); calling it again changes
    nothing."""
    for sdk in sdks:
        if sdk not in _SDKS:
            raise SettingError(
                f"cannot instrument {sdk!r}: agent-replay instruments {', '.join(map(repr, _SDKS))}"
            )
        _SDKS[sdk]()
        _INSTRUMENTED.add(sdk)


def instrumented() -> tuple[str, ...]:
    """The SDKs instrumented in this process now, by name (what `record` keeps with a run)."""
    return tuple(sorted(_INSTRUMENTED))


def uninstrument() -> None:
    """Put every patched method back."""
    for owner, name, original in _PATCHED.values():
        setattr(owner, name, original)
    _PATCHED.clear()
    _INSTRUMENTED.clear()
    _environment.unwant()


def _instrument_openai() -> None:
    try:
        from openai.resources.chat.completions import AsyncCompletions, Completions
        from openai.resources.responses import AsyncResponses, Responses
    except ImportError:
        raise MissingExtraError(
            f"instrumenting openai needs the openai package: {install_command('openai')}"
        ) from None
    _patch(Completions, "create", OPENAI_CHAT, asynchronous=False)
    _patch(AsyncCompletions, "create", OPENAI_CHAT, asynchronous=True)
    _patch(Responses, "create", OPENAI_RESPONSES, asynchronous=False)
    _patch(AsyncResponses, "create", OPENAI_RESPONSES, asynchronous=True)
    for owner, api in (
        (Completions, OPENAI_CHAT),
        (AsyncCompletions, OPENAI_CHAT),
        (Responses, OPENAI_RESPONSES),
        (AsyncResponses, OPENAI_RESPONSES),
    ):
        _patch_with(owner, "parse", _parser(api))


def _instrument_anthropic() -> None:
    try:
        from anthropic.resources.messages import AsyncMessages, Messages
    except ImportError:
        raise MissingExtraError(
            f"instrumenting anthropic needs the anthropic package: {install_command('anthropic')}"
        ) from None
    _patch(Messages, "create", ANTHROPIC, asynchronous=False)
    _patch(AsyncMessages, "create", ANTHROPIC, asynchronous=True)
    _patch_with(Messages, "stream", _helper(ANTHROPIC))
    _patch_with(AsyncMessages, "stream", _helper(ANTHROPIC))


def _patch(owner: Any, name: str, api: SdkApi, *, asynchronous: bool) -> None:
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


def _helper(api: SdkApi) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
                        return api.assemble([as_sent(item) async for item in await request])

                    output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
                    if inspect.getcoroutinestate(request) == inspect.CORO_CREATED:
                        request.close()  # served from the record: the request is never sent
                    return _AReplayed(api.items(output))

                setattr(manager, slot, served())
                return manager

            def replayed() -> _Replayed:
                def produce() -> Any:
                    return api.assemble([as_sent(item) for item in request()])

                output = ctx.call(StepKind.LLM, model, inputs, produce=produce)
                return _Replayed(api.items(output))

            setattr(manager, slot, replayed)
            return manager

        return stream

    return wrap


def _parser(api: SdkApi) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
                        return as_sent(await self._post(path, options=sent, **rest))

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
                    return as_sent(self._post(path, options=sent, **rest))

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
        k: as_sent(v)
        for k, v in kwargs.items()
        if k not in _TRANSPORT and k != "model" and type(v).__name__ not in _UNSET
    }
    return model, shaped_inputs(StepKind.LLM, model, call)


#: The header both SDKs' ``with_raw_response`` and ``with_streaming_response`` set on a call: its
#: answer is the HTTP response, parsed when the caller asks (``.parse()``), not the parsed object.
#: OpenAI's ``with_raw_response`` says ``true`` (a response that parses at once); Anthropic's says
#: ``raw``, and both SDKs' ``with_streaming_response`` ``stream`` (an async client's parse is
#: awaited).
_RAW_RESPONSE = "x-stainless-raw-response"


def _raw_kind(kwargs: dict[str, Any]) -> str | None:
    """How the call asked for its HTTP response (``true``, ``raw``, ``stream``), or None: the
    parsed object, as ``create`` gives it."""
    headers = kwargs.get("extra_headers")
    if not isinstance(headers, dict):
        return None
    for key, value in headers.items():
        if str(key).lower() == _RAW_RESPONSE and value in ("true", "raw", "stream"):
            return str(value)
    return None


def _served_raw(served: Any, answered: list[Any], awaited: bool) -> Any:
    """The raw response the caller asked for: the served object (a completion, or a stream of the
    recorded items, which a live response's own stream could not be after recording read it to
    its end) behind ``parse()``, with the live response's headers when the call was made."""
    headers = getattr(answered[0], "headers", {}) if answered else {}
    return (_ARawServed if awaited else _RawServed)(served, headers)


def _wrapped(original: Callable[..., Any], api: SdkApi) -> Callable[..., Any]:
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))
        raw = _raw_kind(kwargs) is not None
        answered: list[Any] = []  # the raw HTTP response of a call made live

        def produce() -> Any:
            response = original(self, **kwargs)
            if raw:  # the step is the parsed response; the caller gets the raw one it asked for
                answered.append(response)
                response = response.parse()
            return (
                api.assemble([as_sent(item) for item in response])
                if streaming
                else as_sent(response)
            )

        output = ctx.call(StepKind.LLM, model, inputs, produce=produce)
        if answered and not streaming:
            return answered[0]  # its parse() gives what was recorded, parsed once already
        served = _Replayed(api.items(output)) if streaming else api.completion(output)
        return _served_raw(served, answered, awaited=False) if raw else served

    return create


def _awrapped(
    original: Callable[..., Awaitable[Any]], api: SdkApi
) -> Callable[..., Awaitable[Any]]:
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if ctx is None or args:
            return await original(self, *args, **kwargs)
        model, inputs = _request(kwargs)
        streaming = bool(kwargs.get("stream"))
        kind = _raw_kind(kwargs)
        raw = kind is not None
        answered: list[Any] = []  # the raw HTTP response of a call made live

        async def produce() -> Any:
            response = await original(self, **kwargs)
            if raw:  # parsed as the caller would
                answered.append(response)
                response = response.parse()
                if inspect.isawaitable(response):
                    response = await response
            if streaming:
                return api.assemble([as_sent(item) async for item in response])
            return as_sent(response)

        output = await ctx.acall(StepKind.LLM, model, inputs, produce=produce)
        if answered and not streaming:
            return answered[0]  # its parse() gives what was recorded, parsed once already
        served = _AReplayed(api.items(output)) if streaming else api.completion(output)
        if not raw:
            return served
        return _served_raw(served, answered, awaited=kind in ("raw", "stream"))

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


class _RawServed:
    """What ``with_raw_response`` / ``with_streaming_response`` answer with when the record serves
    the call (no HTTP response was had: no headers) or a streamed one was recorded (its headers
    kept): ``parse()`` gives the recorded response as the SDK's object, or a stream of its items;
    it closes, in ``with`` too, as a response does."""

    status_code = 200
    request_id = None

    def __init__(self, parsed: Any, headers: Any = None) -> None:
        self._parsed = parsed
        self.headers = headers if headers is not None else {}
        self.http_response = _NoResponse()

    def parse(self, **_: Any) -> Any:
        return self._parsed

    def close(self) -> None:
        return None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _ARawServed(_RawServed):
    """`_RawServed` for an async client whose raw response parses when awaited."""

    async def parse(self, **_: Any) -> Any:
        return self._parsed

    async def close(self) -> None:  # type: ignore[override]
        return None

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
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


_SDKS: dict[str, Callable[[], None]] = {
    "openai": _instrument_openai,
    "anthropic": _instrument_anthropic,
    "time": lambda: _environment.want("time"),
    "uuid": lambda: _environment.want("uuid"),
}
