"""LangSmith's runs, decoded to `SpanRecord`s: run trees, the API's run lists, the SDK's batch
ingest payloads and feedback.

Shapes read (a run is the same object in all of them):

* a run tree: a run (``id``, ``run_type``, ``name``, ``inputs``, ``outputs``, ``error``,
  ``start_time``/``end_time`` as ISO text, ``extra.metadata``, ``events``, ``trace_id``,
  ``parent_run_id``, ``dotted_order``) with its children nested under ``child_runs``;
* a list of runs, bare or as ``POST /runs/query`` answers it: ``{"runs": [...], "cursors": ...}``;
* the SDK's batch ingest payload ``{"post": [...], "patch": [...]}`` (``POST /runs/batch``, and
  the multipart endpoint's parts put back together): a run posted when it starts and patched with
  its outputs, error and end time when it ends is ONE span, its fields merged by run id, the
  patch's where both have one;
* feedback: one feedback object (``{"run_id", "trace_id", "key", "score"}``, what the SDK posts
  to ``/feedback``) or a list of them;
* and JSON Lines of any of these. A run's post and patch, or a run and its feedback, on different
  lines are one span too: the span buffer merges what a later delivery of a span id adds
  (`otel_replay.importers._buffer`).

Ids: a run's trace id is its ``trace_id`` UUID's 32 hex digits (the same as LangSmith's own
OpenTelemetry export gives it); its span id is the first 8 bytes of the sha256 of its id's 32 hex
digits (LangSmith's export takes the UUID's first 8 bytes, which UUID v7 runs started in the same
millisecond share). An id that is not a UUID is hashed the same way (its trace id: the first 16
bytes of the sha256 of its text). A run without ``parent_run_id`` takes its parent from
``dotted_order`` (``<time>Z<uuid>`` segments joined by dots, the root's first: the segment before
its own names its parent), else from the tree it is nested in; without ``trace_id`` its trace is
the first segment's, else its tree's root. Runs are given in ``dotted_order`` order (start times
along the path, so a pre-order of the tree), ties by their place in the document.

Attributes, named as LangSmith's OpenTelemetry export names them, so a run read here and the same
run exported through OpenTelemetry are read by one vocabulary: ``langsmith.span.kind`` (the run
type), ``langsmith.trace.name`` (its name), ``langsmith.span.id``, ``langsmith.trace.id``,
``langsmith.span.parent_id`` and ``langsmith.span.dotted_order`` (as written),
``langsmith.trace.session_id``/``session_name`` (the project), ``langsmith.span.tags``,
``langsmith.metadata.<key>`` (``extra.metadata``: ``ls_model_name``, ``ls_provider``, …),
``gen_ai.prompt`` (the inputs object) and ``gen_ai.completion`` (the outputs object; a value the
SDK wrapped as ``{"output": value}`` unwrapped), ``gen_ai.request.model``, ``gen_ai.system``,
``gen_ai.usage.input_tokens``/``output_tokens`` (the outputs' ``usage_metadata`` or the API run's
token counts), ``gen_ai.response.id`` and ``gen_ai.response.finish_reasons`` (an OpenAI response
among the outputs), ``gen_ai.tool.definitions`` (an llm run's ``tools``), and for tool runs
``gen_ai.tool.name`` and ``gen_ai.tool.call.id`` (``extra.tool_call_id`` or the metadata's).

A run with ``error`` set is a failed operation (status ERROR, the error its message), not a failed
run: only a failed root run fails its run, as an OTLP root span's error status does. The outcome is
feedback: each feedback key of a run (``feedback_stats`` of an API run, its average; a feedback
object, its ``score``, a boolean as 1 or 0) is ``langsmith.feedback.<key>`` on that run's span. A
key named ``outcome`` on the root run is the run's outcome; any other key becomes one when named
(``--outcome-attribute langsmith.feedback.correctness``): evaluation feedback such as helpfulness is
not a run's success.

A value of the wrong type makes its run invalid: `TraceFormatError` naming its position
(``post[2].start_time``, ``child_runs[1].inputs``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import STATUS_ERROR, SpanEvent, SpanRecord
from otel_replay.importers._values import plain_attributes, plain_value, read_time, text

FORMAT = "langsmith"

Invalid = Callable[[TraceFormatError], None]

_UUID = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
#: The keys of the SDK's batch ingest payload.
_BATCH_KEYS = frozenset({"post", "patch"})
#: Keys only a run (not a span of another format) has, one of which a run must have.
_RUN_KEYS = ("run_type", "dotted_order", "child_runs", "parent_run_id")
#: Outputs keys of a model's response that say it answered.
_USAGE_KEYS = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))


def is_langsmith(document: Any) -> bool:
    """Whether a parsed JSON document is one of LangSmith's shapes (module docstring)."""
    if isinstance(document, list):
        return bool(document) and all(_is_run(i) or _is_feedback(i) for i in document)
    if not isinstance(document, dict):
        return False
    if document.keys() and document.keys() <= _BATCH_KEYS:
        return all(
            isinstance(document[k], list) and all(isinstance(r, dict) and "id" in r for r in v)
            for k, v in document.items()
        )
    runs = document.get("runs")
    if isinstance(runs, list) and set(document) <= {"runs", "cursors"}:
        return all(_is_run(run) for run in runs)
    return _is_run(document) or _is_feedback(document)


def _is_run(item: Any) -> bool:
    return isinstance(item, dict) and "id" in item and any(key in item for key in _RUN_KEYS)


def _is_feedback(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "run_id" in item
        and isinstance(item.get("key"), str)
        and ("score" in item or "value" in item)
        and "run_type" not in item
    )


def decode_langsmith(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of a LangSmith document; a run that cannot be decoded goes to ``invalid``
    (which raises, or records and skips it) with its position."""
    runs: dict[str, tuple[str, dict[str, Any], _Context]] = {}
    feedback: list[tuple[str, Any]] = []
    for where, item, context in _items(document, invalid):
        if _is_feedback(item) and not _is_run(item):
            feedback.append((where, item))
            continue
        if not isinstance(item, dict):
            invalid(TraceFormatError(f"expected a LangSmith run, got {preview(item)}", where=where))
            continue
        key = str(item.get("id"))
        if key in runs:  # posted, then patched: the patch's fields win where it has one
            first_where, first, first_context = runs[key]
            merged = {**first, **{k: v for k, v in item.items() if v is not None}}
            runs[key] = (first_where, merged, first_context)
        else:
            runs[key] = (where, item, context)
    spans: dict[str, SpanRecord] = {}  # by span id
    for order, (where, run, context) in enumerate(runs.values()):
        try:
            span = _span(run, context, order)
            spans[span.span_id] = span
        except TraceFormatError as exc:
            inner = f"{where}.{exc.where}" if exc.where and where else exc.where or where
            invalid(TraceFormatError(exc.reason, where=inner or None))
    for where, item in feedback:
        try:
            _give_feedback(item, spans, len(runs))
        except TraceFormatError as exc:
            inner = f"{where}.{exc.where}" if exc.where and where else exc.where or where
            invalid(TraceFormatError(exc.reason, where=inner or None))
    ordered = sorted(spans.values(), key=lambda s: (_dotted(s), s.order))
    for order, span in enumerate(ordered):
        span.order = order
        yield span


class _Context:
    """Where a run was found in a tree: its enclosing run's id and its tree root's."""

    __slots__ = ("parent", "root")

    def __init__(self, parent: Any = None, root: Any = None) -> None:
        self.parent, self.root = parent, root


def _items(document: Any, invalid: Invalid) -> Iterator[tuple[str, Any, _Context]]:
    """``(where, run or feedback, context)`` for each object the document holds, trees walked."""
    if isinstance(document, list):
        top = [(f"[{i}]", item) for i, item in enumerate(document)]
    elif document.keys() and document.keys() <= _BATCH_KEYS:
        top = [
            (f"{k}[{i}]", r) for k in ("post", "patch") for i, r in enumerate(document.get(k, []))
        ]
    elif isinstance(document.get("runs"), list) and not _is_run(document):
        top = [(f"runs[{i}]", run) for i, run in enumerate(document["runs"])]
    else:
        top = [("", document)]
    for where, item in top:
        yield from _tree(where, item, _Context(), invalid)


def _tree(
    where: str, item: Any, context: _Context, invalid: Invalid
) -> Iterator[tuple[str, Any, _Context]]:
    yield where, item, context
    children = item.get("child_runs") if isinstance(item, dict) else None
    if not children:
        return
    at = f"{where}.child_runs" if where else "child_runs"
    if not isinstance(children, list):
        invalid(TraceFormatError(f"expected a list of runs, got {preview(children)}", where=at))
        return
    inner = _Context(item.get("id"), context.root if context.root is not None else item.get("id"))
    for i, child in enumerate(children):
        yield from _tree(f"{at}[{i}]", child, inner, invalid)


def _span(run: dict[str, Any], context: _Context, order: int) -> SpanRecord:
    run_id = _text(run.get("id"), "id")
    if not run_id:
        raise TraceFormatError("a run without an id", where="id")
    path = _path(run.get("dotted_order"))
    parent = run.get("parent_run_id")
    if parent is None:
        parent = path[-2] if len(path) > 1 else context.parent
    trace = run.get("trace_id")
    if trace is None:
        trace = path[0] if path else context.root if context.root is not None else run_id
    error = run.get("error")
    if error is not None and not isinstance(error, str):
        raise TraceFormatError(f"error must be text, got {preview(error)}", where="error")
    start = read_time(run.get("start_time"), "start_time")
    return SpanRecord(
        trace_id=trace_id(_text(trace, "trace_id"), "trace_id"),
        span_id=span_id(run_id),
        parent_span_id=span_id(_text(parent, "parent_run_id")) if parent else "",
        name=_text(run.get("name"), "name"),
        kind=0,
        start_time_unix_nano=start,
        end_time_unix_nano=read_time(run.get("end_time"), "end_time"),
        attributes=_stored(_attributes(run, run_id, parent, trace)),
        status_code=STATUS_ERROR if error else 0,
        status_message=error or "",
        events=_events(run.get("events")),
        order=order,
    )


#: The run's field each attribute is read from, to name it when its value cannot be stored.
_FIELDS = {"gen_ai.prompt": "inputs", "gen_ai.completion": "outputs"}


def _stored(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes as values that can be stored; `TraceFormatError` naming the run's field
    whose value cannot be (an integer beyond 64 bits, a lone surrogate, too deep)."""
    stored = {}
    for key, value in attributes.items():
        field = _FIELDS.get(key) or key.replace("langsmith.metadata.", "extra.metadata.", 1)
        stored[text(key, field)] = plain_value(value, field)
    return stored


def _path(dotted: Any) -> list[str]:
    """The run ids along a ``dotted_order`` (``<time>Z<uuid>`` segments), root first."""
    if dotted is None or dotted == "":
        return []
    if not isinstance(dotted, str):
        raise TraceFormatError(
            f"dotted_order must be text, got {preview(dotted)}", where="dotted_order"
        )
    ids = []
    for segment in dotted.split("."):
        found = _UUID.search(segment, segment.find("Z") + 1)
        if found is None:
            raise TraceFormatError(
                f"dotted_order segment {preview(segment)} holds no run id (<time>Z<uuid>)",
                where="dotted_order",
            )
        ids.append(found[0])
    return ids


def _dotted(span: SpanRecord) -> str:
    dotted = span.attributes.get("langsmith.span.dotted_order")
    return dotted if isinstance(dotted, str) else ""


def _attributes(run: dict[str, Any], run_id: str, parent: Any, trace: Any) -> dict[str, Any]:
    run_type = run.get("run_type")
    attributes: dict[str, Any] = {"langsmith.span.id": run_id, "langsmith.trace.id": str(trace)}
    if isinstance(run_type, str):
        attributes["langsmith.span.kind"] = run_type
    named = {
        "langsmith.trace.name": run.get("name"),
        "langsmith.span.parent_id": None if parent is None else str(parent),
        "langsmith.span.dotted_order": run.get("dotted_order"),
        "langsmith.trace.session_id": run.get("session_id"),
        "langsmith.trace.session_name": run.get("session_name"),
    }
    attributes.update({k: v for k, v in named.items() if v is not None and v != ""})
    tags = run.get("tags")
    if isinstance(tags, list) and tags:
        attributes["langsmith.span.tags"] = ", ".join(str(tag) for tag in tags)
    extra = _object(run.get("extra"), "extra")
    metadata = _object(extra.get("metadata"), "extra.metadata")
    for key, value in metadata.items():
        if value is not None:
            attributes[f"langsmith.metadata.{key}"] = value
    inputs, outputs = run.get("inputs"), _unwrapped(run.get("outputs"))
    if inputs is not None and inputs != {}:
        attributes["gen_ai.prompt"] = inputs
    if outputs is not None:
        attributes["gen_ai.completion"] = outputs
    if run_type == "llm":
        attributes.update(_model(run, metadata, extra, inputs, outputs))
    if run_type == "tool":
        if isinstance(run.get("name"), str):
            attributes["gen_ai.tool.name"] = run["name"]
        call_id = extra.get("tool_call_id") or metadata.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            attributes["gen_ai.tool.call.id"] = call_id
    for key, stats in _object(run.get("feedback_stats"), "feedback_stats").items():
        score = stats.get("avg") if isinstance(stats, dict) else None
        if isinstance(score, (int, float)):
            attributes[f"langsmith.feedback.{key}"] = score
    return attributes


def _model(
    run: dict[str, Any],
    metadata: dict[str, Any],
    extra: dict[str, Any],
    inputs: Any,
    outputs: Any,
) -> dict[str, Any]:
    """What an llm run says of the model call: model, provider, tools, usage, response id."""
    found: dict[str, Any] = {}
    params = extra.get("invocation_params")
    params = params if isinstance(params, dict) else {}
    model = metadata.get("ls_model_name") or params.get("model") or params.get("model_name")
    if not model and isinstance(inputs, dict):
        model = inputs.get("model")
    if isinstance(model, str) and model:
        found["gen_ai.request.model"] = model
    if isinstance(metadata.get("ls_provider"), str):
        found["gen_ai.system"] = metadata["ls_provider"]
    tools = inputs.get("tools") if isinstance(inputs, dict) else None
    tools = tools if isinstance(tools, list) else params.get("tools")
    if isinstance(tools, list) and tools:
        found["gen_ai.tool.definitions"] = tools
    generation = _generation(outputs)
    usage = _first_object(
        outputs,
        generation.get("usage_metadata"),
        outputs.get("usage") if isinstance(outputs, dict) else None,
    )
    usage = usage if usage is not None else run
    for (key, other), name in zip(_USAGE_KEYS, ("input_tokens", "output_tokens"), strict=True):
        count = usage.get(key, usage.get(other))
        if isinstance(count, int) and not isinstance(count, bool):
            found[f"gen_ai.usage.{name}"] = count
    if isinstance(outputs, dict):
        response = generation.get("response_metadata")
        response = response if isinstance(response, dict) else outputs
        if isinstance(response.get("id"), str):
            found["gen_ai.response.id"] = response["id"]
        choices = outputs.get("choices")
        reasons = [
            c["finish_reason"]
            for c in (choices if isinstance(choices, list) else [response])
            if isinstance(c, dict) and isinstance(c.get("finish_reason"), str)
        ]
        if reasons:
            found["gen_ai.response.finish_reasons"] = reasons
    return found


def _generation(outputs: Any) -> dict[str, Any]:
    """The message of a LangChain chat model's first generation (``{"generations": [[{"message":
    {"lc": 1, "kwargs": {...}}}]]}``), its serialised fields: where LangChain keeps the usage and
    the response's id and finish reason. Empty for any other outputs."""
    generations = outputs.get("generations") if isinstance(outputs, dict) else None
    first = generations[0] if isinstance(generations, list) and generations else None
    first = first[0] if isinstance(first, list) and first else first
    message = first.get("message") if isinstance(first, dict) else None
    fields = message.get("kwargs") if isinstance(message, dict) else None
    return fields if isinstance(fields, dict) else {}


def _first_object(outputs: Any, *others: Any) -> dict[str, Any] | None:
    """The outputs' ``usage_metadata`` (the SDK's wrappers), else the first of ``others`` that is
    an object."""
    given = outputs.get("usage_metadata") if isinstance(outputs, dict) else None
    return next((o for o in (given, *others) if isinstance(o, dict)), None)


def _unwrapped(outputs: Any) -> Any:
    """A run's outputs: the SDK records a function's value that is not an object as
    ``{"output": value}``; that value, else the object as it is (None when there are none)."""
    if isinstance(outputs, dict) and set(outputs) == {"output"}:
        return outputs["output"]
    return None if outputs == {} else outputs


def _events(raw: Any) -> list[SpanEvent]:
    """A run's events (``{"name", "time", "kwargs"}``), streamed tokens among them."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TraceFormatError(f"events must be a list, got {preview(raw)}", where="events")
    events = []
    for i, event in enumerate(raw):
        if not isinstance(event, dict):
            raise TraceFormatError(f"expected an event, got {preview(event)}", where=f"events[{i}]")
        name = event.get("name")
        kwargs = event.get("kwargs")
        events.append(
            SpanEvent(
                name if isinstance(name, str) else "",
                read_time(event.get("time"), "time", f"events[{i}]"),
                plain_attributes(kwargs if isinstance(kwargs, dict) else {}, f"events[{i}]"),
            )
        )
    return events


def _give_feedback(item: dict[str, Any], spans: dict[str, SpanRecord], order: int) -> None:
    """Put a feedback's score on its run's span: the run's, when the document holds it, else a
    span of the run's own id carrying only the score (the buffer merges it into the run's)."""
    key = item["key"]
    score = item.get("score")
    if isinstance(score, bool):
        score = 1.0 if score else 0.0
    if not isinstance(score, (int, float)):
        return  # a categorical value or a comment: no score to give
    run_id = _text(item.get("run_id"), "run_id")
    if not run_id:
        raise TraceFormatError("feedback without a run_id", where="run_id")
    span = spans.get(span_id(run_id))
    if span is None:
        trace = item.get("trace_id") or run_id  # feedback on a root run names its trace so
        span = spans[span_id(run_id)] = SpanRecord(
            trace_id=trace_id(_text(trace, "trace_id"), "trace_id"),
            span_id=span_id(run_id),
            parent_span_id="",
            name="",
            kind=0,
            start_time_unix_nano=0,
            end_time_unix_nano=0,
            attributes={},
            order=order,
        )
    span.attributes[f"langsmith.feedback.{key}"] = score


def trace_id(raw: str, where: str) -> str:
    """A trace id: a UUID's 32 hex digits, or any other text hashed to 16 bytes."""
    if not raw:
        raise TraceFormatError("a run without a trace id", where=where)
    if _UUID.fullmatch(raw):
        return raw.replace("-", "").lower()
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def span_id(raw: str) -> str:
    """A run's span id: the first 8 bytes of the sha256 of its UUID's 32 hex digits (or of its
    text, when it is not a UUID)."""
    text = raw.replace("-", "").lower() if _UUID.fullmatch(raw) else raw
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TraceFormatError(f"expected text, got {preview(value)}", where=where)
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(f"expected an object, got {preview(value)}", where=where)
    return value
