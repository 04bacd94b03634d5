"""A stored run as one OTLP trace (``export --format otlp-json|otlp-proto``), `run_request`.

* A root span (the run: ``agent_replay.run_id``, ``agent_replay.outcome``, ``agent_replay.task``,
  ``service.name`` on the resource) and a span per step, in OpenInference's and OTel GenAI's
  attributes (`otel_replay.otlp_spans`), a failed step's span with an error status and message.
* An imported run keeps its trace id, its spans' ids, names, times and tree (its structure spans
  as spans with no convention's attributes, an agent or chain span as OpenInference's); a run
  agent-replay made (recorded, forked, resumed) gets ids derived from its id and each step's
  position (`otel_replay.otlp_spans.span_id_of`: the ids ``--otlp-endpoint`` gives it too) and
  times from its steps.
* A fork or a resumed run links to its source's root span and to the step it was made at, and
  names both in attributes (some backends drop links).
* A kept attribution report, when given, is written on the root (``agent_replay.verdict``,
  ``agent_replay.point_of_commitment``, ``agent_replay.explanation``) and on the culprit step's
  span (``agent_replay.verdict``, ``agent_replay.point_of_commitment``,
  ``agent_replay.attribution`` and its interval ``agent_replay.ci_low``/``ci_high``).

Each step's span also carries the step's own record
(`otel_replay.importers._exported.RECORD_ATTRIBUTE`: index, kind, name, inputs, output, status,
error as JSON), which the importer reads back as the step, so an exported run imports here to the
same content whichever conventions its content fits; a step the first import rebuilt from the
conversation is marked so (`REBUILT_ATTRIBUTE`) and comes back without a span of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from otel_replay.hashing import digest
from otel_replay.importers import REBUILT_ATTRIBUTE, RECORD_ATTRIBUTE
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.otlp_spans import (
    MADE_ATTRIBUTES,
    genai_attributes,
    lineage_attributes,
    recording_attributes,
    span_id_of,
    step_attributes,
    trace_id_of,
)
from otel_replay.transcript import task

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

__all__ = ["run_request", "step_span_of"]

_SPAN_ID = re.compile("[0-9a-f]{16}")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _node_id(run_id: str, given: str) -> int:
    """A span id of an imported run's tree: its own when it is one (16 hex digits, not all 0),
    else one derived from it."""
    if _SPAN_ID.fullmatch(given) and int(given, 16):
        return int(given, 16)
    return int(digest(f"node:{run_id}:{given}".encode())[:16], 16) or 1


def step_span_of(run: Trajectory, index: int) -> int:
    """The span id of step ``index`` of ``run`` as `run_request` writes it."""
    return _step_ids(run)[index]


def _step_ids(run: Trajectory) -> list[int]:
    ids: list[int] = []
    taken: set[int] = set()
    for step in run.steps:
        given = step.span_id
        mine = _node_id(run.id, given) if given else span_id_of(run.id, step.index + 1)
        if mine in taken:  # two steps read from one span: the second gets its own
            mine = span_id_of(run.id, step.index + 1)
        taken.add(mine)
        ids.append(mine)
    return ids


@dataclass(frozen=True, slots=True)
class _Span:
    """One span to write: its ids, times, and what it says."""

    span_id: int
    parent: int | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    error: str | None = None  # the status message of a failed span ("" : failed, no message)
    client: bool = False


def run_request(
    run: Trajectory,
    *,
    source: Trajectory | None = None,
    report: Mapping[str, Any] | None = None,
) -> ExportTraceServiceRequest:
    """``run`` as one OTLP trace (the module docstring says what it holds): linked to ``source``
    (the run it was forked or resumed from, when the store has it), with ``report`` (a kept
    attribution report) on its root and culprit step."""
    trace_id = trace_id_of(run.id)
    step_ids = _step_ids(run)
    usage = run.metadata.get("token_usage")
    usage = usage if isinstance(usage, dict) else {}
    spans, root = _structure(run)
    rebuilt = run.metadata.get("reconstructed_steps") or []
    nodes = {node.step_index: node for node in run.spans if node.step_index is not None}
    for step, span_id in zip(run.steps, step_ids, strict=True):
        node = nodes.get(step.index)
        attributes = {
            **step_attributes(step),
            **genai_attributes(step, usage.get(step.span_id or "")),
            RECORD_ATTRIBUTE: _json(_record(step)),
        }
        if step.index in rebuilt:
            attributes[REBUILT_ATTRIBUTE] = True
        parent = root.span_id
        if node is not None and node.parent_span_id is not None:
            parent = _node_id(run.id, node.parent_span_id)
        spans.append(
            _Span(
                span_id,
                parent,
                node.name if node is not None else f"{step.kind.value} {step.name}",
                step.start_time_unix_nano or 0,
                step.end_time_unix_nano or 0,
                attributes,
                (step.error or "") if step.status is StepStatus.ERROR else None,
                step.kind in (StepKind.LLM, StepKind.EMBEDDING),
            )
        )
    _verdict(report, run, step_ids, root.attributes, spans)
    links = _links(run, source, root.attributes)
    return _encoded(trace_id, _timed(run, spans), links, _service(run))


def _record(step: Step) -> dict[str, Any]:
    """What of a step its span carries as JSON (times and ids are the span's own)."""
    record = step.to_record()
    return {
        key: record[key]
        for key in ("index", "kind", "name", "inputs", "output", "status", "error", "resamplable")
    }


def _structure(run: Trajectory) -> tuple[list[_Span], _Span]:
    """The root span and the structure spans of ``run``'s tree (not its steps')."""
    meta = run.metadata
    nodes = [node for node in run.spans if node.step_index is None]
    tops = [node for node in run.spans if node.parent_span_id is None]
    root_attributes: dict[str, Any] = {"openinference.span.kind": "AGENT"}
    if run.outcome is not None:
        root_attributes["agent_replay.outcome"] = run.outcome
    said = task(run.steps, meta)
    if said is not None:
        root_attributes["agent_replay.task"] = said
    if "input" in meta:  # made by running its agent: what replaying it needs
        seed = meta.get("seed")
        root_attributes.update(
            recording_attributes(
                arguments=meta.get("input"),
                answer=meta.get("answer"),
                outcome=run.outcome,
                seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else 0,
                agent_spec=str(meta.get("agent") or ""),
                made={key: meta[key] for key in MADE_ATTRIBUTES if key in meta},
            )
        )
    spans: list[_Span] = []
    if len(tops) == 1 and tops[0].step_index is None:  # the run's own root
        top = tops[0]
        root = _Span(
            _node_id(run.id, top.span_id),
            None,
            top.name,
            top.start_time_unix_nano or 0,
            top.end_time_unix_nano or 0,
            root_attributes,
            "" if top.status is StepStatus.ERROR else None,
        )
        nodes.remove(top)
    else:  # a root made for it: its top spans (or its steps) hang from it
        agent = str(meta.get("agent") or "")
        name = str(meta.get("service") or agent.rpartition(":")[2] or "agent")
        root = _Span(span_id_of(run.id, 0), None, name, 0, 0, root_attributes)
    spans.append(root)
    kinds = {"agent": "AGENT", "chain": "CHAIN"}
    for node in nodes:
        attributes = {"openinference.span.kind": kinds[node.role]} if node.role in kinds else {}
        spans.append(
            _Span(
                _node_id(run.id, node.span_id),
                root.span_id
                if node.parent_span_id is None
                else _node_id(run.id, node.parent_span_id),
                node.name,
                node.start_time_unix_nano or 0,
                node.end_time_unix_nano or 0,
                attributes,
                "" if node.status is StepStatus.ERROR else None,
            )
        )
    return spans, root


def _timed(run: Trajectory, spans: list[_Span]) -> list[_Span]:
    """``spans`` with times where they have none: a span without times starts where the one
    before it ended (takes no time), and a root made for the run covers all of it."""
    cursor = min((s.start for s in spans if s.start), default=0)
    placed: list[_Span] = []
    for span in spans:
        start = span.start or cursor
        end = max(span.end or start, start)
        cursor = max(cursor, end)
        placed.append(_replace(span, start, end))
    root = placed[0]
    if not spans[0].start and not spans[0].end:  # a root made for the run (or without times)
        earliest = min((s.start for s in placed[1:]), default=root.start)
        latest = max((s.end for s in placed), default=root.end)
        placed[0] = _replace(root, earliest, latest)
    return placed


def _replace(span: _Span, start: int, end: int) -> _Span:
    return _Span(
        span.span_id,
        span.parent,
        span.name,
        start,
        end,
        span.attributes,
        span.error,
        span.client,
    )


def _verdict(
    report: Mapping[str, Any] | None,
    run: Trajectory,
    step_ids: Sequence[int],
    root: dict[str, Any],
    spans: list[_Span],
) -> None:
    """A kept report's verdict on the root's attributes and its culprit step's."""
    if report is None:
        return
    verdict = str(report.get("verdict"))
    root["agent_replay.verdict"] = verdict
    explanation = report.get("explanation")
    if isinstance(explanation, str) and explanation:
        root["agent_replay.explanation"] = explanation
    at = report.get("point_of_commitment")
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(run.steps):
        return
    root["agent_replay.point_of_commitment"] = at
    rows = [row for row in report.get("steps") or [] if row.get("index") == at]
    row = rows[0] if rows else {}
    step = next(s for s in spans if s.span_id == step_ids[at])
    step.attributes["agent_replay.verdict"] = verdict
    step.attributes["agent_replay.point_of_commitment"] = True
    for key in ("attribution", "ci_low", "ci_high"):
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            step.attributes[f"agent_replay.{key}"] = float(value)


def _links(
    run: Trajectory, source: Trajectory | None, root: dict[str, Any]
) -> list[tuple[int, int, dict[str, Any]]]:
    """The root's lineage attributes (`lineage_attributes`), and its links: to the source's root
    span and to the source's step the run was made at (a fork's step, a resumed run's frontier)."""
    lineage, links = lineage_attributes(run, source)
    root.update(lineage)
    at = run.metadata.get("fork_at", run.metadata.get("frontier"))
    if source is not None and isinstance(at, int) and 0 <= at < len(source.steps):
        said = {"agent_replay.link": "source_step", "agent_replay.step": at}
        links.append((trace_id_of(source.id), step_span_of(source, at), said))
        root["agent_replay.source_step_span_id"] = format(step_span_of(source, at), "016x")
    return links


def _service(run: Trajectory) -> str:
    meta = run.metadata
    agent = str(meta.get("agent") or "")
    return str(meta.get("service") or agent.rpartition(":")[2] or "agent")


def _encoded(
    trace_id: int,
    spans: Sequence[_Span],
    links: Sequence[tuple[int, int, dict[str, Any]]],
    service: str,
) -> ExportTraceServiceRequest:
    """``spans`` (the root first) as SDK spans, encoded as the SDK's exporters would."""
    # the SDK is imported here: only an export needs it
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    from otel_replay.otlp_encode import spans_to_request

    flags = TraceFlags(TraceFlags.SAMPLED)
    resource = Resource({"service.name": service})
    scope = InstrumentationScope("otel_replay.export")
    made = []
    for span in spans:
        parent = None if span.parent is None else SpanContext(trace_id, span.parent, False, flags)
        made.append(
            ReadableSpan(
                span.name,
                context=SpanContext(trace_id, span.span_id, False, flags),
                parent=parent,
                resource=resource,
                attributes=span.attributes,
                links=[Link(SpanContext(t, s, False, flags), dict(said)) for t, s, said in links]
                if span.parent is None
                else (),
                kind=SpanKind.CLIENT if span.client else SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR, span.error or None)
                if span.error is not None
                else Status(StatusCode.UNSET),
                start_time=span.start,
                end_time=span.end,
                instrumentation_scope=scope,
            )
        )
    return spans_to_request(made)
