"""Span dumps that look like OTLP JSON but are not (docs/importing.md, "What it reads"), decoded to
`SpanRecord`s:

* JS SDK ``ReadableSpan`` arrays: ``spanContext.traceId``, ``[seconds, nanos]`` hrtime tuples,
  ``attributes`` as a plain object;
* Python SDK ``ConsoleSpanExporter`` / ``span.to_json()`` objects, pretty-printed back to back:
  ``context.trace_id`` as ``0x``-hex, ISO-8601 times, ``status.status_code`` names, ``parent_id``;
* Arize Phoenix span JSON: the same shape with ``span_kind``, the status at the top (``status_code``,
  ``status_message``) and possibly nested attributes; a list of spans, or an object of named span
  lists (a page of its REST API is one: ``{"data": [...], "next_cursor": ...}``);
* any-agent's spans: the Python shape with integer ids and ``parent`` as a context object.

A value of the wrong type, a time outside 1970 to 2262, or an attribute that could not be stored
(an integer beyond 64 bits, a lone surrogate, nesting deeper than `MAX_DEPTH`) makes the span invalid:
`TraceFormatError` naming its position (``[2].startTime``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterator
from typing import Any, NamedTuple

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import SpanRecord, normalize_id
from otel_replay.importers._values import (
    KINDS,
    attributes,
    enum_value,
    events,
    first,
    items,
    parent_of,
    read_time,
    resource,
    status,
    text,
)


def is_span_dump(document: Any) -> bool:
    spans = items(document)
    return bool(spans) and all(
        isinstance(s, dict) and ("spanContext" in s or "context" in s) for s in spans
    )


def decode_span_dump(
    document: Any, invalid: Callable[[TraceFormatError], None], where: str = ""
) -> Iterator[SpanRecord]:
    """Yield the spans of a dump; a span that cannot be decoded goes to ``invalid`` (which raises,
    or records and skips it) with its position (``[3].startTime``, after ``where``: the key that
    holds the list in an envelope)."""
    for order, item in enumerate(items(document)):
        try:
            if not isinstance(item, dict):
                raise TraceFormatError(f"a span must be an object, got {preview(item)}")
            yield _decode(item, order)
        except TraceFormatError as exc:
            at = f"{where}[{order}]"
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def _decode(item: dict[str, Any], order: int) -> SpanRecord:
    key, context = first(item, ("spanContext", "context"))
    if context is None:
        context = {}
    elif not isinstance(context, dict):
        raise TraceFormatError(f"span context must be an object, got {preview(context)}", where=key)
    trace_id = context.get("traceId", context.get("trace_id"))
    span_id = context.get("spanId", context.get("span_id"))
    parent = parent_of(item)
    attrs = attributes(item.get("attributes"), "attributes")
    span_kind = item.get("span_kind")  # Phoenix span JSON names the OpenInference kind here
    if isinstance(span_kind, str) and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = text(span_kind, "span_kind")
    code, message = status(
        item, otlp=False
    )  # Phoenix span JSON keeps it at the top: status_code, ..._message
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where="name")
    return SpanRecord(
        trace_id=normalize_id(trace_id, 16, "traceId", integers=True),
        span_id=normalize_id(span_id, 8, "spanId", integers=True),
        parent_span_id=normalize_id(parent, 8, "parentSpanId", integers=True),
        name=text(name or "", "name"),
        kind=enum_value(item.get("kind"), KINDS, "kind"),
        start_time_unix_nano=_time(item, ("startTime", "start_time")),
        end_time_unix_nano=_time(item, ("endTime", "end_time")),
        attributes=attrs,
        status_code=code,
        status_message=message,
        events=events(item, otlp=False),
        resource=resource(item.get("resource"), otlp=False),
        order=order,
    )


def _time(item: dict[str, Any], keys: tuple[str, ...]) -> int:
    key, value = first(item, keys)
    return read_time(value, key)


def concatenated_objects(text: str) -> list[Any] | None:
    """JSON objects written back to back (the Python console exporter's output), or None.

    Python's own decoder is used because these dumps may hold ``Infinity`` and ``NaN``.
    """
    decoder = json.JSONDecoder()
    objects: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return objects
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        except RecursionError:
            raise TraceFormatError(
                "JSON nested deeper than the reader follows", offset=position
            ) from None
        except ValueError:  # an integer longer than Python converts (sys.set_int_max_str_digits)
            raise TraceFormatError(
                "an integer with more digits than the reader converts", offset=position
            ) from None
        objects.append(value)


# --- documents no reader claims: what they look like, and what to do -----------------------------

#: What a refusal says of a document that holds no spans at all.
NO_SPANS = "this holds no spans"
#: What to do with spans of a tool whose own format no reader takes.
AT_SOURCE = (
    "export the spans as OTLP where the application makes them (an OTLP file exporter, or "
    "`agent-replay serve` as its endpoint)"
)
_NO_STEPS = (
    "this holds no spans (a model call's messages, not a run's trace); record the agent with "
    "`agent-replay record`, or trace it with an OpenTelemetry GenAI instrumentation and import "
    "the OTLP it exports"
)


def _collector(receiver: str) -> str:
    return (
        f"send it through the OpenTelemetry Collector with the {receiver} receiver and export OTLP"
    )


class Family(NamedTuple):
    """A kind of document that is not a trace this reads, or that only its own row reads: what a
    refusal calls it, the paths that show a document is one (all of them hold), the ``--format``
    that reads it once a row does, and what to do otherwise.

    A path is ``/``-separated: a key, ``[]`` (the first item of a list; ``key[]`` is both),
    and, last, ``key=value`` (a text value), ``key^=prefix``, ``prefix*`` (any key that starts so)
    or ``!key`` (no such key)."""

    name: str
    paths: tuple[str, ...]
    otherwise: str
    reader: str | None = None

    def matches(self, document: Any) -> bool:
        return all(_holds(document, path) for path in self.paths)

    def advice(self, readers: Collection[str]) -> str:
        """What to do: the format that reads it, when one of ``readers`` does, else `otherwise`."""
        if self.reader is not None and self.reader in readers:
            return f"give --format {self.reader}"
        return self.otherwise


#: In order: the first family whose paths all hold names a document. The spans of the tools a row
#: reads (or soon will) come first, so a generic span reader never takes them for its own.
FAMILIES: tuple[Family, ...] = (
    Family("a Jaeger trace (the UI's download, the query API's answer)",
           ("data[]/traceID", "data[]/spans"),
           "no reader for Jaeger's JSON here: Jaeger's API v3 (/api/v3/traces) answers OTLP JSON",
           "jaeger"),
    Family("a Jaeger API v3 answer (OTLP JSON under 'result')", ("result/resourceSpans",),
           "import the object under 'result' (jq .result)", "jaeger"),
    Family("a Zipkin v1 span list", ("[]/traceId", "[]/id", "[]/binaryAnnotations"),
           _collector("zipkin")),  # the zipkin reader takes v2 only
    Family("a Zipkin v2 span list", ("[]/traceId", "[]/id", "[]/!spanId"),
           _collector("zipkin"), "zipkin"),
    Family("an MLflow trace (Trace.to_json())", ("info", "data/spans"), AT_SOURCE, "mlflow"),
    Family("a list of MLflow traces", ("[]/info", "[]/data/spans"), AT_SOURCE, "mlflow"),
    Family("a LangSmith run tree", ("run_type", "inputs"), AT_SOURCE, "langsmith"),
    Family("a list of LangSmith runs", ("[]/run_type", "[]/inputs"), AT_SOURCE, "langsmith"),
    Family("a LangSmith batch ingest payload", ("post[]/run_type",), AT_SOURCE, "langsmith"),
    Family("Datadog LLM Observability spans", ("[]/span_id", "[]/start_ns", "[]/meta"),
           AT_SOURCE, "datadog"),
    Family("a Datadog LLM Observability payload", ("spans[]/span_id", "spans[]/meta"),
           AT_SOURCE, "datadog"),
    Family("Datadog LLM Observability span events", ("[]/event_type=span", "[]/spans"),
           AT_SOURCE, "datadog"),
    Family("a Datadog APM span list", ("[]/trace_id", "[]/span_id", "[]/meta"),
           _collector("datadog"), "datadog"),
    Family("a Datadog APM trace payload (a list of traces, each a span list)",
           ("[][]/trace_id", "[][]/span_id", "[][]/meta"), _collector("datadog"), "datadog"),
    Family("an AWS X-Ray segment", ("trace_id^=1-", "id", "start_time"), _collector("awsxray")),
    Family("AWS X-Ray segments", ("[]/trace_id^=1-", "[]/id"), _collector("awsxray")),
    Family("an AWS X-Ray BatchGetTraces answer", ("Traces[]/Segments[]/Document",),
           "send the segments through the OpenTelemetry Collector with the awsxray receiver "
           "and export OTLP"),
    Family("Honeycomb events", ("[]/trace.trace_id", "[]/trace.span_id"), AT_SOURCE),
    Family("a New Relic Trace API payload", ("[]/spans[]/trace.id",), AT_SOURCE),
    Family("New Relic spans", ("spans[]/trace.id",), AT_SOURCE),
    Family("an Elastic APM transaction", ("transaction/trace_id",), AT_SOURCE),
    Family("an Elastic APM span", ("span/trace_id", "span/transaction_id"), AT_SOURCE),
    Family("an Elastic APM metadata record", ("metadata/service/agent",), NO_SPANS),
    Family("Elastic APM documents", ("hits/hits[]/_source/trace/id",), AT_SOURCE),
    Family("a Sentry transaction", ("type=transaction", "contexts/trace/trace_id"), AT_SOURCE),
    Family("Chrome trace events (a profiler timeline)", ("traceEvents",), NO_SPANS),
    Family("Chrome trace events (a profiler timeline)", ("[]/ph", "[]/ts", "[]/pid"), NO_SPANS),
    Family("an HTTP archive (HAR)", ("log/entries",), NO_SPANS),
    Family("a Prometheus query answer (metrics)", ("status", "data/resultType"), NO_SPANS),
    Family("LangChain callback events (astream_events)", ("[]/event", "[]/run_id"), _NO_STEPS),
    Family("an OpenAI chat completions request", ("model", "messages"), _NO_STEPS),
    Family("an OpenAI chat completion", ("object^=chat.completion", "choices"), _NO_STEPS),
    Family("an OpenAI Responses API answer", ("object=response", "output"), _NO_STEPS),
    Family("an Anthropic Messages answer", ("type=message", "role", "content"), _NO_STEPS),
    Family("a chat transcript", ("messages[]/role",), _NO_STEPS),
    Family("a chat transcript", ("[]/role", "[]/content"), _NO_STEPS),
    Family("a JSON Schema", ("$schema",), NO_SPANS),
    Family("a JSON Schema", ("$defs",), NO_SPANS),
    Family("one span's GenAI attributes without the span (no ids, name or times)",
           ("gen_ai.*", "!name", "!span_id", "!spanId"),
           "export the span itself (OTLP) rather than its attributes"),
    Family("one span's OpenInference attributes without the span (no ids, name or times)",
           ("llm.*", "!name", "!span_id", "!spanId"),
           "export the span itself (OTLP) rather than its attributes"),
)  # fmt: skip


def lookalike(document: Any) -> Family | None:
    """The first family of `FAMILIES` ``document`` is one of, or None. Asked of every document a
    generic span reader claims (each line of a flat span file), so the families whose first key
    the document lacks are passed over without reading their paths."""
    if isinstance(document, dict):
        candidates = _BY_KEY.get(None, ())
        found = [f for k in document if isinstance(k, str) for f in _BY_KEY.get(k, ())]
    elif isinstance(document, list) and document:
        head = document[0]
        keys = head if isinstance(head, dict) else {"[]": None} if isinstance(head, list) else {}
        candidates = _BY_ITEM_KEY.get(None, ())
        found = [f for k in keys if isinstance(k, str) for f in _BY_ITEM_KEY.get(k, ())]
    else:
        return None
    chosen = sorted({*candidates, *found}, key=_ORDER.__getitem__)
    return next((family for family in chosen if family.matches(document)), None)


def _index(in_items: bool) -> dict[str | None, tuple[Family, ...]]:
    """The families by the key their first path needs at the top (of the document, or of its
    first item): None for those no single key tells."""
    index: dict[str | None, list[Family]] = {}
    for family in FAMILIES:
        steps = _steps(family.paths[0])
        if (steps[0] == "[]") != in_items:
            continue
        step = steps[1] if in_items and len(steps) > 1 else steps[0] if not in_items else None
        key: str | None = None
        if step is not None and not step.startswith("!") and not step.endswith("*"):
            key = step.split("^=", 1)[0].split("=", 1)[0]
        index.setdefault(key, []).append(family)
    return {k: tuple(v) for k, v in index.items()}


@functools.cache
def _steps(path: str) -> tuple[str, ...]:
    """A family's path as the steps `_holds` takes: keys, ``[]`` for a list's first item."""
    steps: list[str] = []
    for segment in path.split("/"):
        lists = 0
        while segment.endswith("[]"):
            segment = segment[:-2]
            lists += 1
        if segment:
            steps.append(segment)
        steps.extend(["[]"] * lists)
    return tuple(steps)


def _holds(document: Any, path: str) -> bool:
    steps = _steps(path)
    node = document
    for i, step in enumerate(steps):
        if step == "[]":
            if not isinstance(node, list) or not node:
                return False
            node = node[0]
            continue
        if not isinstance(node, dict):
            return False
        if i < len(steps) - 1:
            if step not in node:
                return False
            node = node[step]
        else:
            return _last(node, step)
    return True


def _last(node: dict[str, Any], step: str) -> bool:
    if step.startswith("!"):
        return step[1:] not in node
    if step.endswith("*"):
        return any(isinstance(k, str) and k.startswith(step[:-1]) for k in node)
    if "^=" in step:
        key, prefix = step.split("^=", 1)
        return isinstance(node.get(key), str) and node[key].startswith(prefix)
    if "=" in step:
        key, value = step.split("=", 1)
        return node.get(key) == value
    return step in node


_ORDER = {family: i for i, family in enumerate(FAMILIES)}
_BY_KEY = _index(in_items=False)
_BY_ITEM_KEY = _index(in_items=True)

#: How many keys a description names, and how many items of a list it reads for them.
_SHOWN_KEYS = 8
_READ_ITEMS = 50


def describe(document: Any) -> str:
    """What a JSON document looks like, in a few words: ``a JSON array of 12 objects with keys
    'trace_id', 'span_id', 'parent_id', 'meta' and 7 more`` (keys and values escaped)."""
    if isinstance(document, dict):
        return f"a JSON object with {_key_list(document)}" if document else "an empty JSON object"
    if isinstance(document, list):
        n = len(document)
        if not n:
            return "an empty JSON array"
        head = document[:_READ_ITEMS]
        if all(isinstance(item, dict) for item in head):
            keys: dict[str, None] = {}
            for item in head:
                keys.update(dict.fromkeys(item))
            return f"a JSON array of {_count(n, 'object')} with {_key_list(keys)}"
        if all(isinstance(item, list) for item in head):
            return f"a JSON array of {_count(n, 'array')}, the first {describe(document[0])}"
        return f"a JSON array of {_count(n, 'value')}, the first {_scalar(document[0])}"
    return _scalar(document)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _key_list(keys: Any) -> str:
    listed = list(keys)
    shown = ", ".join(preview(key, 40) for key in listed[:_SHOWN_KEYS])
    more = len(listed) - _SHOWN_KEYS
    return (
        ("key " if len(listed) == 1 else "keys ")
        + shown
        + (f" and {more} more" if more > 0 else "")
    )


def _scalar(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return describe(value)
    kind = {str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")
    return f"a JSON {kind} {preview(value, 40)}" if value is not None else "JSON null"


#: Files that are not JSON nor protobuf, told by their first bytes.
TEXT_FAMILIES: tuple[tuple[bytes, str, str], ...] = (
    (b"# HELP ", "a Prometheus metrics exposition", NO_SPANS),
    (b"# TYPE ", "a Prometheus metrics exposition", NO_SPANS),
    (b"SQLite format 3\x00", "an SQLite database",
     "import reads trace files; a store is opened with --store"),
    (b"PK\x03\x04", "a zip archive", "unpack it and import the trace files inside"),
    (b"<", "XML or HTML", NO_SPANS),
)  # fmt: skip


def text_lookalike(head: bytes) -> str | None:
    """What a file that is neither JSON nor protobuf is, from its first bytes, and what to do."""
    start = head.lstrip()
    for prefix, name, advice in TEXT_FAMILIES:
        if start.startswith(prefix):
            return f"it looks like {name}: {advice}"
    return None
