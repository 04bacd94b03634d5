"""Semantic conventions → what a span is, and the step it becomes.

`recognise` names a span's role by the first row of the vocabulary table that claims it
(`otel_replay.importers._conventions`). Roles are step kinds (``llm``, ``tool``, ...), containers
(``agent``, ``chain``) or ``span`` (unrecognised plumbing). `build_step` then reads the step's content
from the recognising vocabulary's keys first, then every other's; structured messages beat raw
``input.value`` text.
"""

from __future__ import annotations

from collections.abc import Iterable

from otel_replay.importers._content import llm_content, other_content, tool_content
from otel_replay.importers._conventions import fails, recognised, sources
from otel_replay.importers._spans import STATUS_ERROR, SpanRecord
from otel_replay.model import Step, StepKind, StepStatus

CONTAINER_ROLES = frozenset({"agent", "chain"})
#: roles that are steps (``other`` only where a span says so: agent-replay's own spans)
STEP_KINDS = {k.value: k for k in StepKind}


def recognise(span: SpanRecord) -> tuple[str, str]:
    """Return ``(role, convention)`` for a span; ``("span", "")`` when no convention claims it."""
    return recognised(span.attributes, span.name) or ("span", "")


def is_placeholder(span: SpanRecord) -> bool:
    """Logfire's pending-span placeholders duplicate the real span; they are never steps."""
    return span.attributes.get("logfire.span_type") == "pending_span"


def build_step(span: SpanRecord, kind: StepKind) -> Step:
    """The step a recognised operation span (or, for plain traces, a leaf span) becomes."""
    reported: str | None = None
    vocabulary = recognise(span)[1]
    if kind is StepKind.LLM:
        name, inputs, output = llm_content(span, vocabulary)
    elif kind is StepKind.TOOL:
        name, inputs, output, reported = tool_content(span, vocabulary)
    else:
        name, inputs, output = other_content(span, kind, vocabulary)
    status, error = step_status(span)
    if reported is not None and status is StepStatus.OK:
        status, error = StepStatus.ERROR, reported
    return Step(
        kind=kind,
        name=name,
        inputs=inputs,
        output=output,
        status=status,
        error=error,
        start_time_unix_nano=span.start_time_unix_nano or None,
        end_time_unix_nano=span.end_time_unix_nano or None,
        span_id=span.span_id or None,
        parent_span_id=span.parent_span_id or None,
    )


class Spans(list[SpanRecord]):
    """The spans of one trace, each one's step built once per kind (`build_step`): the rules that
    fold operations read a span's step several times (`otel_replay.importers._operations`), and
    building it again each time made a trace's cost grow with its depth times its spans."""

    def __init__(self, spans: Iterable[SpanRecord] = ()) -> None:
        super().__init__(spans)
        self._steps: dict[tuple[int, StepKind], Step] = {}

    def step(self, i: int, kind: StepKind) -> Step:
        """The step span ``i`` becomes as an operation of ``kind``."""
        step = self._steps.get((i, kind))
        if step is None:
            step = self._steps[(i, kind)] = build_step(self[i], kind)
        return step


def step_status(span: SpanRecord) -> tuple[StepStatus, str | None]:
    """An ERROR status or what a vocabulary says of failure (`otel_replay.importers._conventions`:
    OTel GenAI's ``error.type``, Langfuse's ERROR level) fail a step; an ``exception`` event only
    when it escaped (handled exceptions are recorded too). The message comes from the status, else
    the exception event, else the vocabularies' error messages."""
    attrs = span.attributes
    exception = next((e for e in span.events if e.name == "exception"), None)
    failed = (
        span.status_code == STATUS_ERROR
        or fails(attrs)
        or (
            exception is not None
            and str(exception.attributes.get("exception.escaped")).lower() == "true"
        )
    )
    if not failed:
        return StepStatus.OK, None
    message = span.status_message or None
    if message is None and exception is not None:
        kind = exception.attributes.get("exception.type")
        text = exception.attributes.get("exception.message")
        message = ": ".join(str(p) for p in (kind, text) if p) or None
    if message is None:
        message = next(
            (attrs[key] for key in sources("error_message") if attrs.get(key)),
            None,
        )
    return StepStatus.ERROR, None if message is None else _without_traceback(str(message))


def _without_traceback(message: str) -> str:
    """An error message without the Python traceback some instrumentations append to it."""
    head, marker, _ = message.partition("Traceback (most recent call last)")
    return head.rstrip() or message if marker else message
