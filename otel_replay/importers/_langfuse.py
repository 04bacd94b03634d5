"""Langfuse's JSON, decoded to `SpanRecord`s: what its UI exports and what its public API returns.

Shapes read (the observation and trace objects are the same in all of them):

* the UI's export of one trace: ``{"trace": {...}, "observations": [...]}`` (the top-level list is
  the full one; the trace's own ``observations`` repeat them with their metadata stripped);
* ``GET /api/public/traces/{id}``: a trace holding its observations and scores;
* the paged lists ``{"data": [...], "meta": {"page", "limit", "totalItems", "totalPages"}}`` of
  ``GET /api/public/traces`` and ``GET /api/public/observations`` (``meta: {"cursor"}`` in v2, whose
  observations carry ``metadata`` as an object), and one observation or trace per line (the batch
  exports' JSON Lines).

An observation is one span: its ``id`` is the span id (an OTel span id when the trace came in as
OpenTelemetry, else any text, hashed to one), ``parentObservationId`` the parent, ``startTime`` and
``endTime`` ISO times, ``level: ERROR`` with ``statusMessage`` its error status. Its ``metadata`` (a
JSON string, or an object) keeps the OTel span's attributes under ``attributes``, every value as
text: arrays of plain values are read back as arrays, token and usage counts as numbers. Langfuse
removes the attributes it lifted into ``input``, ``output``, ``model`` and the usage, so they are put
back as the Langfuse SDK's own attributes (``langfuse.observation.input`` …, which the step readers
know), and where the span's convention reads them from attributes of its own (the Vercel AI SDK's
``ai.*`` attributes, a GenAI choice event) there too. The observation ``type`` is
``langfuse.observation.type`` (a plain ``SPAN`` says nothing). Observations Langfuse's own SDKs and
callback handlers made (no OTel attributes at all) become spans the same way.

The trace's user, session and scores go on its top-level observations: ``user.id``, ``session.id``,
``langfuse.score.<name>`` (a score given to one observation goes on that one). A score is the run's
outcome only when it is named so (``--outcome-attribute langfuse.score.<name>``, or a score named
``outcome``): evaluation scores such as toxicity or hallucination are not a run's success.

A value of the wrong type makes its observation invalid: `TraceFormatError` naming its position
(``observations[2].startTime``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import (
    STATUS_ERROR,
    SpanEvent,
    SpanRecord,
    normalize_id,
    parse_json_text,
)
from otel_replay.importers._values import plain_attributes, plain_value, read_time

FORMAT = "langfuse"

_HEX = re.compile(r"[0-9a-fA-F]+")
#: Attribute keys whose text Langfuse made of a number: token and usage counts.
_COUNT_KEY = re.compile(r"(token|usage)", re.IGNORECASE)
_INTEGER = re.compile(r"-?[0-9]{1,18}")
#: Observation types that say what an operation is (a plain SPAN or EVENT says nothing).
_SILENT_TYPES = frozenset({"SPAN", "EVENT"})
#: The ``meta`` keys of the public API's paged lists.
_PAGING_KEYS = ("totalItems", "totalPages", "cursor")

Invalid = Callable[[TraceFormatError], None]


def is_langfuse(document: Any) -> bool:
    """Whether a parsed JSON document is one of Langfuse's shapes (module docstring)."""
    if not isinstance(document, dict):
        return False
    if isinstance(document.get("trace"), dict) and isinstance(document.get("observations"), list):
        return True
    meta, data = document.get("meta"), document.get("data")
    if isinstance(data, list) and isinstance(meta, dict):  # paged by number, or by cursor (v2)
        return any(key in meta for key in _PAGING_KEYS) or any(
            _is_observation(item) or _is_trace(item) for item in data
        )
    return _is_trace(document) or _is_observation(document)


def _is_trace(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "traceId" not in item
        and isinstance(item.get("observations"), list)
        and ("timestamp" in item or "projectId" in item)
    )


def _is_observation(item: Any) -> bool:
    return isinstance(item, dict) and "traceId" in item and "startTime" in item and "type" in item


def decode_langfuse(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of a Langfuse document; an observation that cannot be decoded goes to
    ``invalid`` (which raises, or records and skips it) with its position."""
    order = 0
    for where, trace, observations in _traces(document, invalid):
        for span in _trace_spans(where, trace, observations, invalid, order):
            order += 1
            yield span


def _traces(
    document: dict[str, Any], invalid: Invalid
) -> Iterator[tuple[str, dict[str, Any] | None, list[tuple[str, Any]]]]:
    """``(where, trace, [(where, observation)])`` for each trace the document holds."""
    if isinstance(document.get("trace"), dict) and isinstance(document.get("observations"), list):
        observations = [(f"observations[{i}]", o) for i, o in enumerate(document["observations"])]
        yield "trace", document["trace"], observations
        return
    if isinstance(document.get("data"), list):
        items = [(f"data[{i}]", item) for i, item in enumerate(document["data"])]
    else:
        items = [("", document)]
    loose: list[tuple[str, Any]] = []
    for where, item in items:
        if _is_observation(item):
            loose.append((where, item))
        elif _is_trace(item):
            yield where, item, _inner(where, item, invalid)
        else:
            invalid(
                TraceFormatError(
                    f"expected a Langfuse trace or observation, got {preview(item)}",
                    where=where or None,
                )
            )
    if loose:
        yield "", None, loose


def _inner(where: str, trace: dict[str, Any], invalid: Invalid) -> list[tuple[str, Any]]:
    """A trace's own observations; a trace of a list, which names them by id only, is refused."""
    prefix = f"{where}.observations" if where else "observations"
    inner = trace["observations"]
    if inner and all(isinstance(o, str) for o in inner):
        invalid(
            TraceFormatError(
                f"trace {preview(trace.get('id'))} names its {len(inner)} observation(s) by id "
                "only (a trace list): GET /api/public/traces/{id} or /api/public/observations "
                "gives them",
                where=prefix,
            )
        )
        return []
    return [(f"{prefix}[{i}]", o) for i, o in enumerate(inner)]


def _trace_spans(
    where: str,
    trace: dict[str, Any] | None,
    observations: list[tuple[str, Any]],
    invalid: Invalid,
    first_order: int,
) -> Iterator[SpanRecord]:
    decoded: list[SpanRecord] = []
    for order, (at, item) in enumerate(observations, start=first_order):
        try:
            decoded.append(_observation(item, trace, order))
        except TraceFormatError as exc:
            inner = f"{at}.{exc.where}" if exc.where else at
            invalid(TraceFormatError(exc.reason, where=inner or None))
    if trace is not None:
        try:
            context = _trace_attributes(trace)
            if not observations:
                decoded.append(_trace_as_span(trace, first_order))
        except TraceFormatError as exc:
            inner = f"{where}.{exc.where}" if exc.where else where
            invalid(TraceFormatError(exc.reason, where=inner or None))
            yield from decoded  # the observations stand without the trace's attributes
            return
        _give(decoded, context)
    yield from decoded


def _give(
    spans: list[SpanRecord], context: tuple[dict[str, Any], dict[str, dict[str, Any]]]
) -> None:
    """Put the trace's attributes on its top-level spans, scores of one observation on it."""
    on_trace, on_observation = context
    present = {s.span_id for s in spans}
    for span in spans:
        if not span.parent_span_id or span.parent_span_id not in present:
            for key, value in on_trace.items():
                span.attributes.setdefault(key, value)
        span.attributes.update(on_observation.get(span.span_id, {}))


def _trace_attributes(trace: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    on_trace: dict[str, Any] = {}
    for key, attribute in (("userId", "user.id"), ("sessionId", "session.id")):
        value = trace.get(key)
        if isinstance(value, str) and value:
            on_trace[attribute] = value
    tags = trace.get("tags")
    if isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags):
        on_trace["langfuse.trace.tags"] = list(tags)
    on_observation: dict[str, dict[str, Any]] = {}
    scores = trace.get("scores")
    if scores is not None and not isinstance(scores, list):
        raise TraceFormatError(f"expected a list, got {preview(scores)}", where="scores")
    for j, score in sorted(enumerate(scores or []), key=lambda s: _score_time(s[1])):
        if not isinstance(score, dict):
            continue  # a trace list names its scores by id
        name, value = score.get("name"), _score_value(score)
        if not isinstance(name, str) or not name or value is None:
            continue
        target = score.get("observationId")
        if isinstance(target, str) and target:
            on_observation.setdefault(_span_id(target, f"scores[{j}].observationId"), {})[
                f"langfuse.score.{name}"
            ] = value
        else:
            on_trace[f"langfuse.score.{name}"] = value
    return plain_attributes(on_trace, "trace"), on_observation


def _score_time(score: Any) -> str:
    stamp = score.get("timestamp") if isinstance(score, dict) else None
    return stamp if isinstance(stamp, str) else ""


def _score_value(score: dict[str, Any]) -> Any:
    """A numeric or boolean score's number; a categorical score's label."""
    value = score.get("value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value if score.get("dataType") != "CATEGORICAL" else score.get("stringValue", value)
    label = score.get("stringValue")
    return label if isinstance(label, str) and label else None


def _trace_as_span(trace: dict[str, Any], order: int) -> SpanRecord:
    """A trace without observations (Langfuse's first SDKs made such): one span of its own."""
    trace_id = _trace_id(trace.get("id"), "id")
    attributes: dict[str, Any] = {}
    for key in ("input", "output"):
        if trace.get(key) is not None:
            attributes[f"langfuse.trace.{key}"] = trace[key]
    start = read_time(trace.get("timestamp"), "timestamp")
    latency = trace.get("latency")
    seconds = latency if isinstance(latency, (int, float)) and 0 < latency < 1e9 else 0
    end = start + int(seconds * 1e9)
    return SpanRecord(
        trace_id=trace_id,
        span_id=trace_id[:16],
        parent_span_id="",
        name=_text(trace.get("name"), "name"),
        kind=0,
        start_time_unix_nano=start,
        end_time_unix_nano=min(end, (1 << 63) - 1),
        attributes=plain_attributes(attributes, "input"),
        order=order,
    )


def _observation(item: Any, trace: dict[str, Any] | None, order: int) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"expected an observation object, got {preview(item)}")
    metadata = _metadata(item.get("metadata"))
    raw_attributes = metadata.pop("attributes", None)
    if raw_attributes is not None and not isinstance(raw_attributes, dict):
        raise TraceFormatError(
            f"attributes must be an object, got {preview(raw_attributes)}",
            where="metadata.attributes",
        )
    attributes = {key: _typed(key, value) for key, value in (raw_attributes or {}).items()}
    resource = metadata.pop("resourceAttributes", None)
    scope = metadata.pop("scope", None)
    for key, value in metadata.items():
        attributes.setdefault(f"langfuse.observation.metadata.{key}", value)
    kind = item.get("type")
    if not isinstance(kind, str):
        raise TraceFormatError(f"observation type must be text, got {preview(kind)}", where="type")
    if kind.upper() not in _SILENT_TYPES:
        attributes.setdefault("langfuse.observation.type", kind.lower())
    given, definitions = _definitions(item.get("input"))
    if definitions:
        attributes.setdefault("gen_ai.tool.definitions", definitions)
    lifted = {
        "langfuse.observation.input": given,
        "langfuse.observation.output": item.get("output"),
        "langfuse.observation.model.name": item.get("model"),
        "langfuse.observation.model_parameters": item.get("modelParameters") or None,
        "langfuse.observation.usage_details": item.get("usageDetails") or None,
    }
    for key, value in lifted.items():
        if value is not None:
            attributes.setdefault(key, value)
    events = _put_back(attributes, item.get("input"), item.get("output"))
    trace_id = item.get("traceId")
    if trace_id is None and trace is not None:
        trace_id = trace.get("id")
    level = item.get("level")
    message = item.get("statusMessage")
    failed = isinstance(level, str) and level.upper() == "ERROR"
    start = read_time(item.get("startTime"), "startTime")
    end = read_time(item.get("endTime"), "endTime") if item.get("endTime") is not None else start
    return SpanRecord(
        trace_id=_trace_id(trace_id, "traceId"),
        span_id=_span_id(item.get("id"), "id"),
        parent_span_id=_span_id(item.get("parentObservationId"), "parentObservationId"),
        name=_text(item.get("name"), "name"),
        kind=0,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=plain_attributes(attributes, "metadata.attributes"),
        status_code=STATUS_ERROR if failed else 0,
        status_message=_text(message, "statusMessage") if failed and message else "",
        events=events,
        resource=plain_attributes(resource if isinstance(resource, dict) else {}, "metadata"),
        scope_name=_scope_name(scope),
        order=order,
    )


def _metadata(raw: Any) -> dict[str, Any]:
    """An observation's metadata: a JSON object, or (exports) its text."""
    if raw is None or raw == "":
        return {}
    value = parse_json_text(raw) if isinstance(raw, str) else raw
    if isinstance(value, dict):
        return dict(value)
    if isinstance(raw, str):
        return {"text": raw}  # metadata a user gave as text: kept as it is
    raise TraceFormatError(f"metadata must be an object, got {preview(raw)}", where="metadata")


def _typed(key: str, value: Any) -> Any:
    """An attribute value Langfuse turned into text, as the span had it: arrays of plain values
    (OTel's array attributes) as arrays, token and usage counts as numbers; other text as is."""
    if not isinstance(value, str):
        return value
    if value.startswith("[") and value.endswith("]"):
        items = parse_json_text(value)
        if isinstance(items, list) and all(
            item is None or isinstance(item, (str, int, float, bool)) for item in items
        ):
            return items
    if _COUNT_KEY.search(key) and _INTEGER.fullmatch(value):
        return int(value)
    return value


def _put_back(attributes: dict[str, Any], given: Any, answer: Any) -> list[SpanEvent]:
    """Put ``input`` and ``output`` back where the span's own convention reads them, when Langfuse
    removed them: the Vercel AI SDK's ``ai.*`` attributes, a GenAI choice event."""
    operation = attributes.get("ai.operationId")
    if isinstance(operation, str):
        _vercel(attributes, operation, given, answer)
        return []
    body = _decoded(answer)
    recorded = any(k.startswith(("gen_ai.output.", "gen_ai.completion")) for k in attributes)
    if isinstance(body, dict) and body.get("event.name") == "gen_ai.choice" and not recorded:
        return [SpanEvent("gen_ai.choice", 0, plain_attributes(body, "output"))]
    return []


def _vercel(attributes: dict[str, Any], operation: str, given: Any, answer: Any) -> None:
    if operation == "ai.toolCall":
        _put(attributes, "ai.toolCall.args", given)
        _put(attributes, "ai.toolCall.result", answer)
        return
    embeds = operation.startswith("ai.embed")
    many = operation.startswith("ai.embedMany") or operation.endswith(".doEmbed")
    if embeds:
        _put(attributes, "ai.values" if many else "ai.value", given)
        _put(attributes, "ai.embeddings" if many else "ai.embedding", answer)
        return
    _put(attributes, "ai.prompt.messages" if ".do" in operation else "ai.prompt", given)
    decoded = _decoded(answer)
    if isinstance(decoded, list) and all(
        isinstance(c, dict) and "toolCallId" in c for c in decoded
    ):
        _put(attributes, "ai.response.toolCalls", answer)
    elif operation.startswith("ai.generateObject") or operation.startswith("ai.streamObject"):
        _put(attributes, "ai.response.object", answer)
    else:
        _put(attributes, "ai.response.text", answer)


def _definitions(given: Any) -> tuple[Any, list[Any]]:
    """A model call's input without the tool definitions Langfuse's LangChain handler lists among
    its messages (``role: tool`` messages whose content is a function definition), and those."""
    messages = _decoded(given)
    if not isinstance(messages, list):
        return given, []
    definitions = [
        m["content"]
        for m in messages
        if isinstance(m, dict)
        and m.get("role") == "tool"
        and "tool_call_id" not in m
        and isinstance(m.get("content"), dict)
        and m["content"].get("type") == "function"
    ]
    if not definitions:
        return given, []
    kept = [m for m in messages if not (isinstance(m, dict) and m.get("content") in definitions)]
    return kept, definitions


def _put(attributes: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and key not in attributes:
        attributes[key] = value


def _decoded(value: Any) -> Any:
    return parse_json_text(value) if isinstance(value, str) else value


def _trace_id(raw: Any, where: str) -> str:
    """A trace id: an OTel one (32 hex digits), a UUID, or any other text, hashed to 16 bytes."""
    if raw is None or raw == "":
        return ""
    if not isinstance(raw, str):
        raise TraceFormatError(f"trace id must be text, got {preview(raw)}", where=where)
    try:
        return normalize_id(raw, 16, where)
    except TraceFormatError:
        return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _span_id(raw: Any, where: str) -> str:
    """An observation id: an OTel span id (16 hex digits), or any other text (the UUIDs Langfuse's
    own SDKs make) hashed to 8 bytes, the same for the observation and its children."""
    if raw is None or raw == "":
        return ""
    if not isinstance(raw, str):
        raise TraceFormatError(f"observation id must be text, got {preview(raw)}", where=where)
    if len(raw) == 16 and _HEX.fullmatch(raw):
        return raw.lower()
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TraceFormatError(f"expected text, got {preview(value)}", where=where)
    text: str = plain_value(value, where)
    return text


def _scope_name(scope: Any) -> str:
    name = scope.get("name") if isinstance(scope, dict) else None
    return name if isinstance(name, str) else ""
