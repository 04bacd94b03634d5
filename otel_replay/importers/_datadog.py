"""Datadog's traces, decoded to `SpanRecord`s: APM span lists and LLM Observability span events.

Shapes read (``scripts/make_datadog_fixtures.py`` captures each from the real ddtrace):

* an APM trace, a list of spans ``{"trace_id", "span_id", "parent_id", "name", "resource",
  "service", "type", "start", "duration", "error", "meta", "metrics", "meta_struct"}``, and a list
  of such traces (what the agent's ``/v0.4/traces`` takes, its msgpack decoded to JSON);
* the agent's ``/v0.5/traces`` body decoded to JSON, ``[strings, traces]``: each span an array of
  12 values whose texts are indexes into ``strings``;
* LLM Observability span events: the payload ddtrace's LLM Observability writer sends, ``{"_dd.stage":
  "raw", "event_type": "span", "spans": [...]}``, a list of them (ddtrace 4 sends one per span), or
  a bare list of span events ``{"trace_id", "span_id", "parent_id", "name", "start_ns", "duration",
  "status", "meta", "metrics", "tags"}``.

Ids. APM ids are integers (JSON numbers, or their decimal text): 64 bits each, the trace id's high
64 bits in ``meta["_dd.p.tid"]`` (16 hex digits, on the first span of a trace's chunk; the others of
the chunk take it). Event ids are decimal text (``parent_id`` ``"undefined"`` on a root), the span ids
the APM spans' own; an event's trace is its APM trace (``_dd.apm_trace_id``) when it names one, so
the events and the APM trace of the same operations are one trace whose spans have the same ids
(given in one document, a span given both ways is one span, placed as its APM span with its
event's content; given in two files, they merge span by span, each span keeping its richer step;
never counted twice. The LLM Observability trace id is kept as ``datadog.llmobs.trace_id``). With LLM Observability on and an agent, ddtrace 4 sends each
event inside its APM span (``meta_struct._llmobs``): one span, read with the event's content.

Attributes. An APM span's ``meta`` and ``metrics`` are its attributes as they are (the LLM
integrations' ``_dd.llmobs.span_kind``, ``openai.request.model``, ``anthropic.request.model``,
``_dd.llmobs.input_tokens``, ``error.message`` ...), with ``datadog.resource``, ``datadog.span.type``
and the service as the resource's ``service.name``. What an LLM Observability span says is kept
under ``datadog.llmobs.`` (`NATIVE`): ``span.kind`` (llm, tool, agent, workflow, task, embedding,
retrieval), ``name``, ``ml_app``, ``session_id``, ``model_name``, ``model_provider``, ``metadata``,
``tool_definitions``, ``input.<key>`` and ``output.<key>`` for each key of its ``meta.input`` and
``meta.output`` (``value``, ``messages``, ``documents``, ``prompt`` ...), ``metrics.<key>``
(``input_tokens`` ...), ``error.message`` and ``error.type``, ``tags``, ``collection_errors`` (an
event ddtrace cut for its size, ``dropped_io``, keeps no ``input.value`` or ``output.value``: they
hold its note that they were dropped). Messages are kept as Datadog
writes them but for two spellings the message readers know: a tool call's ``tool_id`` is its ``id``,
and each of a message's ``tool_results`` is a tool message of its own (``{"role": "tool", "content",
"tool_call_id", "name"}``). The ``datadog`` and ``datadog-apm`` rows of
`otel_replay.importers._conventions` read these keys. What the table has no part for yet, a model
call's tool definitions and request parameters, is written as OTel GenAI's keys too
(``gen_ai.tool.definitions``, ``gen_ai.request.temperature`` ...), as the Langfuse reader does.

A value of the wrong type makes its span invalid: `TraceFormatError` naming its position
(``[0][3].span_id``, ``[2].spans[0].meta.input``) and the value, raised or, with ``skip_invalid``,
counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import STATUS_ERROR, SpanRecord, normalize_id
from otel_replay.importers._values import plain_attributes, text

FORMAT = "datadog"

Invalid = Callable[[TraceFormatError], None]

#: The prefix of what an LLM Observability span says natively (module docstring).
NATIVE = "datadog.llmobs."
#: ``meta.metadata`` keys that are a model call's request parameters.
_PARAMETERS = ("temperature", "max_tokens", "top_p", "top_k", "frequency_penalty", "seed")
#: The /v0.5/traces span array: its 12 fields in order.
_V05_FIELDS = (
    "service", "name", "resource", "trace_id", "span_id", "parent_id",
    "start", "duration", "error", "meta", "metrics", "type",
)  # fmt: skip
_APM_SHAPE = ("start", "duration", "resource", "service", "meta", "metrics")
_MAX_TIME = (1 << 63) - 1
#: What ddtrace says of an event whose input and output it dropped (over its size limit): their
#: values are then its note saying so, never read as the values.
_DROPPED = "dropped_io"
#: The scope of the spans read from LLM Observability events (an APM span's is ``ddtrace``).
_EVENTS = "ddtrace.llmobs"


# --- which documents are Datadog's ----------------------------------------------------------------


def is_datadog(document: Any) -> bool:
    """Whether a parsed JSON document is one of the shapes of the module docstring (by some item:
    the others are refused span by span)."""
    if _is_v05(document):
        return True
    if isinstance(document, dict):
        return _is_payload(document) or _is_apm_span(document) or _is_event(document)
    if not isinstance(document, list):
        return False
    for item in document:
        if _is_payload(item) or _is_apm_span(item) or _is_event(item):
            return True
        if isinstance(item, list) and any(_is_apm_span(span) for span in item):
            return True
    return False


def _is_payload(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("event_type") == "span"
        and isinstance(item.get("spans"), list)
    )


def _is_apm_span(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "span_id" in item
        and "trace_id" in item
        and "start_ns" not in item
        and "start" in item
        and sum(key in item for key in _APM_SHAPE) >= 3
    )


def _is_event(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "span_id" in item
        and "start_ns" in item
        and isinstance(item.get("meta"), dict)
    )


def _is_v05(document: Any) -> bool:
    return (
        isinstance(document, list)
        and len(document) == 2
        and isinstance(document[0], list)
        and bool(document[0])
        and document[0][0] == ""
        and all(isinstance(s, str) for s in document[0])
        and isinstance(document[1], list)
    )


# --- decoding -------------------------------------------------------------------------------------


def decode_datadog(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of a Datadog document; a span that cannot be decoded goes to ``invalid``
    (which raises, or records and skips it) with its position."""
    spans: list[tuple[str, str, Any]] = []  # (kind: apm | event, where, item)
    for where, item in _located(document, invalid):
        spans.append(("event" if _is_event(item) else "apm", where, item))
    high = _high_bits(item for kind, _, item in spans if kind == "apm")
    held: dict[tuple[str, str], SpanRecord] = {}
    decoded: list[SpanRecord] = []
    for order, (kind, where, item) in enumerate(spans):
        try:
            record = _event(item, order) if kind == "event" else _apm(item, high, order)
        except TraceFormatError as exc:
            at = f"{where}.{exc.where}" if exc.where else where
            invalid(TraceFormatError(exc.reason, where=at or None))
            continue
        same = held.setdefault((record.trace_id, record.span_id), record)
        if same is record:
            decoded.append(record)
        else:
            _join(same, record)
    yield from decoded


def _join(held: SpanRecord, other: SpanRecord) -> None:
    """One span given twice in a document, as its APM span and its LLM Observability event: one
    span, the APM span's place in the trace with the event's content."""
    if held.scope_name == other.scope_name:
        return  # the same span again: the first is kept
    apm, event = (held, other) if other.scope_name == _EVENTS else (other, held)
    held.parent_span_id = apm.parent_span_id or event.parent_span_id
    held.attributes = {**apm.attributes, **event.attributes}
    held.resource = apm.resource or event.resource
    if event.status_code == STATUS_ERROR or apm.status_code == STATUS_ERROR:
        held.status_code = STATUS_ERROR
        held.status_message = event.status_message or apm.status_message


def _located(document: Any, invalid: Invalid) -> Iterator[tuple[str, Any]]:
    """``(where, span)`` for each span of the document, in order; an item that is no span of any
    shape goes to ``invalid``."""
    if _is_v05(document):
        yield from _v05_spans(document, invalid)
        return
    if isinstance(document, dict):
        document, prefix = [document], None
    else:
        prefix = ""
    for i, item in enumerate(document):
        at = f"[{i}]" if prefix is not None else ""
        if _is_payload(item):
            for j, span in enumerate(item["spans"]):
                yield f"{at}.spans[{j}]" if at else f"spans[{j}]", span
        elif isinstance(item, list):
            for j, span in enumerate(item):
                yield f"{at}[{j}]", span
        elif isinstance(item, dict) and "span_id" in item:
            yield at, item
        else:
            invalid(
                TraceFormatError(
                    f"expected a Datadog span, a trace (a list of spans) or an LLM Observability "
                    f"payload, got {preview(item)}",
                    where=at or None,
                )
            )


def _v05_spans(document: list[Any], invalid: Invalid) -> Iterator[tuple[str, Any]]:
    strings, traces = document
    for i, trace in enumerate(traces):
        if not isinstance(trace, list):
            invalid(TraceFormatError(f"expected a trace (a list of spans), got {preview(trace)}",
                                     where=f"[1][{i}]"))  # fmt: skip
            continue
        for j, span in enumerate(trace):
            where = f"[1][{i}][{j}]"
            try:
                yield where, _v05_span(span, strings)
            except TraceFormatError as exc:
                invalid(TraceFormatError(exc.reason, where=f"{where}{exc.where or ''}"))


def _v05_span(span: Any, strings: list[str]) -> dict[str, Any]:
    """A /v0.5 span array as the /v0.4 span object it stands for."""
    if not isinstance(span, list) or len(span) != len(_V05_FIELDS):
        raise TraceFormatError(f"expected a span array of 12 values, got {preview(span)}")

    def string(index: Any, at: str) -> str:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(strings):
            raise TraceFormatError(
                f"expected an index into the {len(strings)} strings, got {preview(index)}",
                where=at,
            )
        return strings[index]

    item = dict(zip(_V05_FIELDS, span, strict=True))
    for position, key in enumerate(_V05_FIELDS):
        if key in ("service", "name", "resource", "type"):
            item[key] = string(item[key], f"[{position}]")
    for position, key in ((9, "meta"), (10, "metrics")):
        if not isinstance(item[key], dict):
            raise TraceFormatError(f"expected an object, got {preview(item[key])}",
                                   where=f"[{position}]")  # fmt: skip
        item[key] = {
            string(_index(k), f"[{position}].{k}"): (
                string(v, f"[{position}].{k}") if key == "meta" else v
            )
            for k, v in item[key].items()
        }
    return item


def _index(key: str) -> Any:
    return int(key) if isinstance(key, str) and key.isdigit() else key


def _high_bits(spans: Iterator[Any]) -> dict[int, int]:
    """The high 64 bits of each 128-bit trace, by its low 64 bits: ``meta["_dd.p.tid"]`` of the
    span of the chunk that carries it."""
    high: dict[int, int] = {}
    for span in spans:
        meta = span.get("meta") if isinstance(span, dict) else None
        tid = meta.get("_dd.p.tid") if isinstance(meta, dict) else None
        low = span.get("trace_id") if isinstance(span, dict) else None
        if isinstance(tid, str) and len(tid) == 16 and isinstance(low, (int, str)):
            try:
                high[_integer(low, "trace_id")] = int(tid, 16)
            except (TraceFormatError, ValueError):
                continue  # the span itself is refused, saying why
    return high


def _integer(value: Any, where: str) -> int:
    """A Datadog id: a JSON integer, or its decimal text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 40:
        return int(value)
    raise TraceFormatError(f"expected an integer id, got {preview(value)}", where=where)


def _id(value: Any, where: str, n_bytes: int = 8) -> str:
    if value is None:
        return ""
    return normalize_id(_integer(value, where), n_bytes, where, integers=True)


def _apm(item: Any, high: dict[int, int], order: int) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"expected a span object, got {preview(item)}")
    low = _integer(item.get("trace_id"), "trace_id")
    if not 0 <= low < 1 << 64:
        raise TraceFormatError(f"trace_id {preview(low)} does not fit in 64 bits",
                               where="trace_id")  # fmt: skip
    meta = _object(item.get("meta"), "meta")
    metrics = _object(item.get("metrics"), "metrics")
    attributes: dict[str, Any] = {}
    for key, value in meta.items():
        attributes[key] = _text(value, f"meta.{key}")
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TraceFormatError(f"expected a number, got {preview(value)}",
                                   where=f"metrics.{key}")  # fmt: skip
        # a whole float becomes the integer it is, where one can hold it; beyond, it stays the float
        whole = isinstance(value, float) and value.is_integer() and abs(value) < 2.0**63
        attributes[key] = int(value) if whole else value
    for key, name in (("resource", "datadog.resource"), ("type", "datadog.span.type")):
        if item.get(key) not in (None, ""):
            attributes[name] = _text(item[key], key)
    name = _text(item.get("name"), "name")
    llmobs = _object(item.get("meta_struct"), "meta_struct").get("_llmobs")
    failed = _flag(item.get("error"))
    message = attributes.get("error.message") or attributes.get("error.msg") or ""
    if llmobs is not None:
        if not isinstance(llmobs, dict):
            raise TraceFormatError(f"expected an object, got {preview(llmobs)}",
                                   where="meta_struct._llmobs")  # fmt: skip
        content, said = _llmobs(llmobs, where="meta_struct._llmobs.")
        attributes.update(content)
        message = message or said
    start = _time(item.get("start"), "start")
    service = item.get("service")
    return SpanRecord(
        trace_id=_id((high.get(low, 0) << 64) | low, "trace_id", 16),
        span_id=_id(item.get("span_id"), "span_id"),
        parent_span_id=_id(item.get("parent_id") or None, "parent_id"),
        name=name,
        kind=0,
        start_time_unix_nano=start,
        end_time_unix_nano=min(start + _time(item.get("duration"), "duration"), _MAX_TIME),
        attributes=plain_attributes(attributes, "meta"),
        status_code=STATUS_ERROR if failed else 0,
        status_message=str(message) if failed else "",
        resource={"service.name": _text(service, "service")} if service else {},
        scope_name="ddtrace",
        order=order,
    )


def _event(item: Any, order: int) -> SpanRecord:
    """An LLM Observability span event."""
    if not isinstance(item, dict):
        raise TraceFormatError(f"expected a span event object, got {preview(item)}")
    dd = _object(item.get("_dd"), "_dd")
    own = item.get("trace_id")
    trace = dd.get("apm_trace_id") or own
    if not isinstance(trace, str):
        raise TraceFormatError(f"expected a trace id as text, got {preview(trace)}",
                               where="trace_id")  # fmt: skip
    attributes, message = _llmobs(item, where="")
    if isinstance(own, str) and own != trace:
        attributes["datadog.llmobs.trace_id"] = own
    parent = item.get("parent_id")
    start = _time(item.get("start_ns"), "start_ns")
    failed = item.get("status") == "error"
    service = item.get("service") or _tag(item.get("tags"), "service")
    return SpanRecord(
        trace_id=normalize_id(trace, 16, "trace_id"),
        span_id=_id(item.get("span_id"), "span_id"),
        parent_span_id="" if parent in (None, "", "undefined") else _id(parent, "parent_id"),
        name=_text(item.get("name"), "name"),
        kind=0,
        start_time_unix_nano=start,
        end_time_unix_nano=min(start + _time(item.get("duration"), "duration"), _MAX_TIME),
        attributes=plain_attributes(attributes, "meta"),
        status_code=STATUS_ERROR if failed else 0,
        status_message=(_text(item.get("status_message"), "status_message") or message)
        if failed
        else "",
        resource={"service.name": service} if isinstance(service, str) and service else {},
        scope_name=_EVENTS,
        order=order,
    )


def _llmobs(data: dict[str, Any], where: str) -> tuple[dict[str, Any], str]:
    """The attributes of an LLM Observability span (an event, or ``meta_struct._llmobs``) and its
    error message."""
    meta = _object(data.get("meta"), f"{where}meta")
    metrics = _object(data.get("metrics"), f"{where}metrics")
    span = meta.get("span")
    kind = span.get("kind") if isinstance(span, dict) else meta.get("span.kind")
    if not isinstance(kind, str):
        raise TraceFormatError(f"expected a span kind as text, got {preview(kind)}",
                               where=f"{where}meta.span.kind")  # fmt: skip
    out: dict[str, Any] = {NATIVE + "span.kind": kind}
    for key in ("name", "ml_app", "session_id"):
        if isinstance(data.get(key), str) and data[key]:
            out[NATIVE + key] = data[key]
    for key in ("model_name", "model_provider", "metadata", "tool_definitions"):
        if meta.get(key) not in (None, "", {}, []):
            out[NATIVE + key] = meta[key]
    errors = data.get("collection_errors")
    if isinstance(errors, list) and all(isinstance(e, str) for e in errors) and errors:
        out[NATIVE + "collection_errors"] = list(errors)
    dropped = isinstance(errors, list) and _DROPPED in errors
    for which in ("input", "output"):
        value = _object(meta.get(which), f"{where}meta.{which}")
        for key, item in value.items():
            if dropped and key == "value":
                continue  # ddtrace's note that it dropped the value, not the value
            if key == "messages":
                item = _messages(item, f"{where}meta.{which}.messages")
            if item is not None:
                out[f"{NATIVE}{which}.{key}"] = item
    for key, count in metrics.items():
        if isinstance(count, (int, float)) and not isinstance(count, bool):
            out[f"{NATIVE}metrics.{key}"] = count
    tags = data.get("tags")
    if isinstance(tags, dict):
        tags = [f"{k}:{v}" for k, v in tags.items()]
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        out[NATIVE + "tags"] = list(tags)
    if isinstance(data.get("session_id"), str) and data["session_id"]:
        out["session.id"] = data["session_id"]
    _genai_extras(out, meta)
    error = meta.get("error")
    if not isinstance(error, dict):  # the older flat keys
        error = {"message": meta.get("error.message"), "type": meta.get("error.type")}
    for key in ("message", "type"):
        if isinstance(error.get(key), str) and error[key]:
            out[f"{NATIVE}error.{key}"] = error[key]
    return out, str(error.get("message") or error.get("type") or "")


def _genai_extras(out: dict[str, Any], meta: dict[str, Any]) -> None:
    """What the table of vocabularies has no part for yet, in OTel GenAI's keys (as the Langfuse
    reader writes them): a model call's tool definitions and request parameters."""
    definitions = meta.get("tool_definitions")
    if isinstance(definitions, list) and definitions:
        out["gen_ai.tool.definitions"] = [_definition(d) for d in definitions]
    settings = meta.get("metadata")
    if isinstance(settings, dict):
        for key in _PARAMETERS:
            value = settings.get(key)
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                out[f"gen_ai.request.{key}"] = value


def _messages(messages: Any, where: str) -> list[dict[str, Any]]:
    """Datadog's messages, a tool call's ``tool_id`` spelt ``id`` and each of a message's
    ``tool_results`` its own tool message ``{"role": "tool", "content", "tool_call_id", "name"}``
    (the shape the message readers know); everything else as Datadog wrote it."""
    if not isinstance(messages, list):
        raise TraceFormatError(f"expected a list of messages, got {preview(messages)}",
                               where=where)  # fmt: skip
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TraceFormatError(f"expected a message object, got {preview(message)}",
                                   where=f"{where}[{i}]")  # fmt: skip
        results = message.get("tool_results")
        kept = {k: v for k, v in message.items() if k != "tool_results"}
        calls = kept.get("tool_calls")
        if isinstance(calls, list):
            kept["tool_calls"] = [_call(c) for c in calls]
        if not isinstance(results, list) or not results or kept.get("content") or calls:
            out.append(kept)
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict):
                continue
            reply: dict[str, Any] = {"role": "tool", "content": result.get("result")}
            if isinstance(result.get("tool_id"), str) and result["tool_id"]:
                reply["tool_call_id"] = result["tool_id"]
            if isinstance(result.get("name"), str) and result["name"]:
                reply["name"] = result["name"]
            out.append(reply)
    return out


def _call(call: Any) -> Any:
    if not isinstance(call, dict) or "tool_id" not in call or "id" in call:
        return call
    return {("id" if k == "tool_id" else k): v for k, v in call.items()}


def _definition(definition: Any) -> Any:
    """A tool definition as GenAI writes one (``parameters``, not Datadog's ``schema``)."""
    if not isinstance(definition, dict):
        return definition
    out = {"type": "function", **{k: v for k, v in definition.items() if k != "schema"}}
    if "schema" in definition:
        out["parameters"] = definition["schema"]
    return out


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(f"expected an object, got {preview(value)}", where=where)
    return value


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TraceFormatError(f"expected text, got {preview(value)}", where=where)
    said: str = text(value, where)
    return said


def _time(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_TIME:
        raise TraceFormatError(
            f"expected nanoseconds (an integer 0 to 2**63 - 1), got {preview(value)}", where=where
        )
    return value


def _flag(value: Any) -> bool:
    return value not in (None, 0, False, "0", "")


def _tag(tags: Any, key: str) -> str | None:
    """A ``key:value`` tag's value."""
    if not isinstance(tags, list):
        return None
    prefix = f"{key}:"
    for tag in tags:
        if isinstance(tag, str) and tag.startswith(prefix):
            return tag[len(prefix) :] or None
    return None
