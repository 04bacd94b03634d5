"""MLflow's traces, decoded to `SpanRecord`s: what its tracing SDK writes and what its REST API answers.

Shapes read:

* MLflow 3's ``Trace.to_json()`` / ``to_dict()``: ``{"info": {...}, "data": {"spans": [...]}}``,
  each span OTel-shaped (``trace_id``, ``span_id``, ``parent_span_id`` as base64, or hex;
  ``start_time_unix_nano``, ``end_time_unix_nano``, ``status: {code, message}``, ``events``) with
  ``attributes`` whose every value is JSON text (``mlflow.spanType`` is ``"\\"LLM\\""``); a JSON list
  of such traces, or one a line (JSON Lines);
* the v3 REST API's traces: ``{"trace": {"trace_info", "spans"}}`` (``GET
  /api/3.0/mlflow/traces/get``) and ``{"traces": [{"trace_info", "spans"}]}`` (``batchGet``), spans
  in OTLP's protobuf JSON (snake_case, attributes as key/value lists of typed values holding the
  values themselves, not their JSON text). A trace info without spans (a search page, ``GET
  /api/3.0/mlflow/traces/{id}``) is refused, naming where its spans are;
* MLflow 2's ``Trace.to_json()``: spans with their ids in a ``context`` (``0x`` hex),
  ``parent_id``, ``start_time``/``end_time`` and ``status_code``, an info with ``request_id``,
  ``timestamp_ms``, ``status`` and ``request_metadata`` (read as MLflow 3 reads them back).

What the decoder leaves for the vocabulary table (`otel_replay.importers._conventions`, row
``mlflow``): every attribute under its own key, its value decoded from its JSON text
(``mlflow.spanType`` ``"CHAT_MODEL"``, ``mlflow.spanInputs`` the function's arguments or the SDK's
request as an object, ``mlflow.spanOutputs`` the result or the SDK's response, ``mlflow.llm.model``,
``mlflow.chat.tokenUsage``, ``mlflow.chat.tools``, ``mlflow.spanFunctionName``,
``mlflow.traceRequestId``). An ``mlflow.*`` value that is not JSON text makes its span invalid
(MLflow always writes JSON); another instrumentation's value that is not JSON is kept as it is.

From the trace's info, on its root span: ``mlflow.trace.id`` (``tr-...``), ``session.id`` and
``user.id`` (``mlflow.trace.session`` and ``mlflow.trace.user`` of its metadata), and the
assessments. The trace's ``state`` (``OK``, ``ERROR``) is how its root span ended, not a score: an
``ERROR`` state fails a root span whose status is unset, and a failed root gives the run the outcome
0.0 as any trace's does. The outcome rule: each valid feedback whose value is true or false, a
number, or MLflow's judges' ``yes``/``no`` (read as true/false) goes on the root span as
``mlflow.assessment.<name>`` (the latest of a name; a feedback given to one span goes on that span);
the one named ``outcome`` is the run's outcome (``mlflow.assessment.outcome``, among the default
outcome attributes), and any other is chosen with ``--outcome-attribute mlflow.assessment.<name>``.
Expectations (ground truth) and feedback that holds an error are not verdicts: they are left out.

A value of the wrong type makes its span invalid: `TraceFormatError` naming its position
(``data.spans[2].attributes.mlflow.spanInputs``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import STATUS_ERROR, STATUS_UNSET, SpanRecord, normalize_id
from otel_replay.importers._values import any_attributes, events, plain_attributes, read_time
from otel_replay.importers._values import status as read_status

MLFLOW_FORMAT = "mlflow"

Invalid = Callable[[TraceFormatError], None]

#: Keys an MLflow trace info carries (MLflow 3's ``trace_id``, MLflow 2's ``request_id``).
_INFO_KEYS = (
    "trace_id",
    "trace_location",
    "request_time",
    "state",
    "request_id",
    "experiment_id",
    "timestamp_ms",
    "execution_time_ms",
)
#: MLflow's judges rate as ``yes`` or ``no`` (``CategoricalRating``).
_RATINGS = {"yes": True, "no": False}


def is_mlflow(document: Any) -> bool:
    """Whether a parsed JSON document is one of MLflow's shapes (module docstring): a trace, a list
    of traces, or a REST answer holding traces or trace infos."""
    if isinstance(document, list):
        return any(_is_trace(item) for item in document)
    if not isinstance(document, dict):
        return False
    if _is_trace(document) or _is_rest_trace(document):
        return True
    inner = document.get("trace")
    if isinstance(inner, dict) and _is_rest_trace(inner):
        return True
    traces = document.get("traces")
    return isinstance(traces, list) and any(
        _is_rest_trace(item) or _is_info(item) for item in traces
    )


def _is_info(item: Any) -> bool:
    return isinstance(item, dict) and sum(key in item for key in _INFO_KEYS) >= 2


def _is_trace(item: Any) -> bool:
    """``Trace.to_dict()``: an ``info`` and (when it is whole) ``data``, nothing else."""
    return isinstance(item, dict) and _is_info(item.get("info")) and set(item) <= {"info", "data"}


def _is_rest_trace(item: Any) -> bool:
    return isinstance(item, dict) and _is_info(item.get("trace_info"))


def decode_mlflow(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of an MLflow document, numbered in order; a span (or trace) that cannot be
    decoded goes to ``invalid`` (which raises, or records and skips it) with its position."""
    order = 0
    for where, trace in _traces(document):
        try:
            for span in decode_mlflow_trace(trace, invalid, where=where, first_order=order):
                order += 1
                yield span
        except TraceFormatError as exc:
            invalid(exc)


def _traces(document: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(document, list):
        yield from ((f"[{i}]", item) for i, item in enumerate(document))
    elif isinstance(document.get("trace"), dict):
        yield "trace", document["trace"]
    elif isinstance(document.get("traces"), list):
        yield from ((f"traces[{i}]", item) for i, item in enumerate(document["traces"]))
    else:
        yield "", document


def decode_mlflow_trace(
    trace: Any, invalid: Invalid, where: str = "", first_order: int = 0
) -> Iterator[SpanRecord]:
    """Yield the spans of one MLflow trace: ``Trace.to_dict()`` (``{"info", "data"}``) or the REST
    API's (``{"trace_info", "spans"}``), the trace's info on its root span (module docstring). A
    trace that is neither, or has no spans to read, raises `TraceFormatError` at ``where``; a span
    that cannot be decoded goes to ``invalid`` with its position."""

    def at(key: str) -> str:
        return f"{where}.{key}" if where else key

    if _is_trace(trace):
        info, data = trace["info"], trace.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("spans"), list):
            raise TraceFormatError(
                f"expected the trace's spans as a list in 'data', got {preview(data)}",
                where=at("data.spans" if isinstance(data, dict) else "data"),
            )
        spans, prefix, rest = data["spans"], at("data.spans"), False
    elif _is_rest_trace(trace):
        info, spans, prefix, rest = trace["trace_info"], trace.get("spans"), at("spans"), True
        if spans is None:
            raise TraceFormatError(_without_spans(info), where=at("trace_info"))
        if not isinstance(spans, list):
            raise TraceFormatError(f"expected a list, got {preview(spans)}", where=prefix)
    elif _is_info(trace):
        raise TraceFormatError(_without_spans(trace), where=where or None)
    else:
        raise TraceFormatError(
            f"expected an MLflow trace ('info' and 'data', or 'trace_info' and 'spans'), got "
            f"{preview(trace)}",
            where=where or None,
        )
    decoded: list[SpanRecord] = []
    for i, item in enumerate(spans):
        try:
            decoded.append(_span(item, rest, first_order + len(decoded)))
        except TraceFormatError as exc:
            inner = f"{prefix}[{i}].{exc.where}" if exc.where else f"{prefix}[{i}]"
            invalid(TraceFormatError(exc.reason, where=inner))
    try:
        _give(decoded, info)
    except TraceFormatError as exc:
        info_key = "trace_info" if rest else "info"
        invalid(TraceFormatError(exc.reason, where=at(f"{info_key}.{exc.where}")))
    yield from decoded


def _without_spans(info: dict[str, Any]) -> str:
    trace_id = info.get("trace_id", info.get("request_id"))
    return (
        f"MLflow trace {preview(trace_id)} comes without its spans (a trace info, as a search "
        "page or GET /api/3.0/mlflow/traces/{id} gives it): GET "
        "/api/3.0/mlflow/traces/get?trace_id=ID or Trace.to_json() gives the trace whole"
    )


def _span(item: Any, rest: bool, order: int) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"expected a span object, got {preview(item)}")
    name = item.get("name")
    if not isinstance(name, str):
        raise TraceFormatError(
            f"expected the span's name as text, got {preview(name)}", where="name"
        )
    raw = item.get("attributes")
    if rest or isinstance(raw, list):
        attributes = any_attributes(raw, "attributes")
    else:
        attributes = _json_attributes(raw)
    code, message = read_status(item)
    context = item.get("context")
    if context is not None:  # MLflow 2: the ids in a context, 0x-hex, and times without units
        if not isinstance(context, dict):
            raise TraceFormatError(f"expected an object, got {preview(context)}", where="context")
        ids = (
            _id(context, "trace_id", 16, at="context."),
            _id(context, "span_id", 8, at="context."),
            _id(item, "parent_id", 8, required=False),
        )
        times = (_time(item, "start_time"), _time(item, "end_time"))
    else:
        ids = (
            _id(item, "trace_id", 16),
            _id(item, "span_id", 8),
            _id(item, "parent_span_id", 8, required=False),
        )
        times = (_time(item, "start_time_unix_nano"), _time(item, "end_time_unix_nano"))
    return SpanRecord(
        trace_id=ids[0],
        span_id=ids[1],
        parent_span_id=ids[2],
        name=name,
        kind=0,
        start_time_unix_nano=times[0],
        end_time_unix_nano=times[1],
        attributes=plain_attributes(attributes, "attributes"),
        status_code=code,
        status_message=message,
        events=events(item),
        order=order,
    )


def _id(item: dict[str, Any], key: str, n_bytes: int, required: bool = True, at: str = "") -> str:
    raw = item.get(key)
    try:
        value = normalize_id(raw, n_bytes, key)
    except TraceFormatError as exc:
        raise TraceFormatError(exc.reason, where=at + key) from None
    if required and not value:
        raise TraceFormatError(f"the span has no {key}", where=at + key)
    return value


def _time(item: dict[str, Any], key: str) -> int:
    value = item.get(key)
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 19:
        value = int(value)  # protobuf JSON writes 64-bit integers as text
    if value is None:
        raise TraceFormatError(f"the span has no {key}", where=key)
    return read_time(value, key, where=key)


def _json_attributes(raw: Any) -> dict[str, Any]:
    """``Span.to_dict()``'s attributes: each value the JSON text of the value; MLflow's own must
    be, another instrumentation's that is not JSON stays as it is."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TraceFormatError(
            f"attributes must be an object, got {preview(raw)}", where="attributes"
        )
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(value, str):
            decoded[key] = value
            continue
        found = _json_value(value)
        if found is _NOT_JSON and str(key).startswith("mlflow."):
            raise TraceFormatError(
                f"not JSON text, as MLflow writes every attribute: {preview(value)}",
                where=f"attributes.{key}",
            )
        decoded[key] = value if found is _NOT_JSON else found
    return decoded


_NOT_JSON: Any = object()


def _json_value(text: str) -> Any:
    """The value JSON ``text`` holds, or `_NOT_JSON`. Python's encoder, which MLflow uses, writes
    NaN and Infinity and integers of any size, which orjson refuses: those are read by Python's
    decoder (a non-finite number is kept as the text OTLP JSON uses, an integer beyond 64 bits is
    refused where the value is stored)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return _NOT_JSON


def _give(spans: list[SpanRecord], info: dict[str, Any]) -> None:
    """Put what the trace's info says on its root span (and a span's own feedback on that span)."""
    present = {span.span_id for span in spans}
    roots = [s for s in spans if not s.parent_span_id or s.parent_span_id not in present]
    on_root, on_span = _info_attributes(info)
    for root in roots[:1]:
        for key, value in on_root.items():
            root.attributes.setdefault(key, value)
        state = info.get("state", info.get("status"))
        if state == "ERROR" and root.status_code == STATUS_UNSET:
            root.status_code = STATUS_ERROR
    for span in spans:
        span.attributes.update(on_span.get(span.span_id, {}))


def _info_attributes(info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    on_root: dict[str, Any] = {}
    trace_id = info.get("trace_id", info.get("request_id"))
    if isinstance(trace_id, str) and trace_id:
        on_root["mlflow.trace.id"] = trace_id
    metadata = info.get("trace_metadata", info.get("request_metadata"))
    if isinstance(metadata, dict):
        for key, attribute in (
            ("mlflow.trace.session", "session.id"),
            ("mlflow.trace.user", "user.id"),
        ):
            value = metadata.get(key)
            if isinstance(value, str) and value:
                on_root[attribute] = value
    on_span: dict[str, dict[str, Any]] = {}
    assessments = info.get("assessments")
    if assessments is not None and not isinstance(assessments, list):
        raise TraceFormatError(f"expected a list, got {preview(assessments)}", where="assessments")
    dated = [(_stamp(a), j, a) for j, a in enumerate(assessments or []) if isinstance(a, dict)]
    for _, j, assessment in sorted(dated, key=lambda d: (d[0], d[1])):
        found = _verdict(assessment)
        if found is None:
            continue
        name, value = found
        key = f"mlflow.assessment.{name}"
        target = assessment.get("span_id")
        if isinstance(target, str) and target:
            span_id = normalize_id(target, 8, f"assessments[{j}].span_id")
            on_span.setdefault(span_id, {})[key] = value
        else:
            on_root[key] = value
    return plain_attributes(on_root, "trace_metadata"), on_span


def _stamp(assessment: dict[str, Any]) -> str:
    stamp = assessment.get("last_update_time", assessment.get("create_time"))
    return stamp if isinstance(stamp, str) else ""


def _verdict(assessment: dict[str, Any]) -> tuple[str, Any] | None:
    """A valid feedback's name and value (true/false, a number, or a judge's yes/no as true/false),
    or None for anything else (an expectation, an error, a label, an overridden feedback)."""
    name = assessment.get("assessment_name", assessment.get("name"))
    feedback = assessment.get("feedback")
    if not isinstance(name, str) or not name or not isinstance(feedback, dict):
        return None
    if assessment.get("valid") is False or feedback.get("error") is not None:
        return None
    value = feedback.get("value")
    if isinstance(value, str):
        value = _RATINGS.get(value.strip().lower())
    if isinstance(value, bool) or (
        isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
    ):
        return name, value
    return None
