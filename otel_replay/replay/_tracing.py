"""A recorded run as real OpenTelemetry spans (OpenInference attributes), through the OTel SDK.

The spans carry the steps' own timestamps, so an exported recording looks like any other agent trace:
``record --otlp-out FILE`` writes it, and ``import`` reads it back. A run agent-replay made (a fork,
a resumed run, a rollout) goes out the same way (`run_spans`), its root span naming the run it came
from and linked to that run's trace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.model import Step, StepStatus, Trajectory
from otel_replay.otlp_encode import spans_to_request
from otel_replay.otlp_spans import (
    MADE_ATTRIBUTES,
    lineage_attributes,
    recording_attributes,
    span_id_of,
    step_attributes,
    trace_id_of,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    from otel_replay.otlp_encode import Destination, Sent


@dataclass(frozen=True, slots=True)
class RecordedSpans:
    trace_id: str
    request: ExportTraceServiceRequest


def emit_spans(
    steps: Sequence[Step],
    *,
    agent_name: str,
    arguments: Any,
    answer: Any,
    outcome: float | None,
    started: int,
    ended: int,
    error: str | None = None,
    seed: int = 0,
    agent_spec: str = "",
    made: Mapping[str, Any] | None = None,
    also: Mapping[str, Any] | None = None,
    links: Sequence[tuple[int, int, Mapping[str, Any]]] = (),
    ids: IdGenerator | None = None,
) -> RecordedSpans:
    """Emit the run's spans with the SDK and return them encoded as one OTLP request. ``made``:
    how the run was made (its metadata's ``instrument``, ``verifier``, ``redact``), carried on the
    root span as ``agent_replay.*`` so an exported recording remembers it after import. ``also``:
    more attributes of the root span; ``links``: its links, ``(trace id, span id, attributes)``;
    ``ids``: where trace and span ids come from (default the SDK's random ones)."""
    # The SDK is imported here, not at module level: only `record` needs it, and every CLI
    # command would otherwise pay for it at start-up.
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

    exporter = InMemorySpanExporter()
    resource = Resource.create({"service.name": agent_name})
    provider = TracerProvider(resource=resource, id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("otel_replay.record")
    root_attributes: dict[str, Any] = {"openinference.span.kind": "AGENT", "agent.name": agent_name}
    # what `replay` needs to re-run the agent, so an exported recording replays after import
    root_attributes.update(
        recording_attributes(
            arguments=arguments,
            answer=answer,
            outcome=outcome,
            seed=seed,
            agent_spec=agent_spec,
            made=made,
        )
    )
    root_attributes.update(also or {})
    linked = [
        Link(SpanContext(trace_id, span_id, True, TraceFlags(TraceFlags.SAMPLED)), dict(said))
        for trace_id, span_id, said in links
    ]
    root = tracer.start_span(
        agent_name, attributes=root_attributes, start_time=started, links=linked
    )
    context = trace.set_span_in_context(root)
    for step in steps:
        span = tracer.start_span(
            f"{step.kind.value} {step.name}",
            context=context,
            attributes=step_attributes(step),
            start_time=step.start_time_unix_nano or started,
        )
        if step.status is StepStatus.ERROR:
            span.set_status(Status(StatusCode.ERROR, step.error or "failed"))
        span.end(end_time=step.end_time_unix_nano or started)
    if error is not None:
        root.set_status(Status(StatusCode.ERROR, error))
    root.end(end_time=ended)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    trace_id = format(root.get_span_context().trace_id, "032x")
    return RecordedSpans(trace_id, spans_to_request(spans))


def _named_ids(run_id: str) -> IdGenerator:
    """Trace and span ids derived from a run's id (an SDK ``IdGenerator``): the same run sent
    twice is the same trace, and a run sent later links to it without having kept its ids."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class NamedIds(IdGenerator):
        spans = 0

        def generate_trace_id(self) -> int:
            return trace_id_of(run_id)

        def generate_span_id(self) -> int:
            self.spans += 1
            return span_id_of(run_id, self.spans - 1)

    return NamedIds()


#: The longest pause between two steps a made run's spans keep, in nanoseconds: a longer one is
#: the time between the record and the run made from it, not the agent's.
MAX_GAP = 60 * 10**9


def laid_out(steps: Sequence[Step], now: int) -> list[Step]:
    """``steps`` placed in time as a run made now: in their order, each keeping its duration and
    the pause before it (up to `MAX_GAP`; a step without times takes none), the last ending at
    ``now``. A fork's held steps were recorded long ago; the run made from them was made when it
    is sent, and a trace stretched back to the record would be filed there."""
    spans: list[tuple[int, int]] = []  # (pause before, duration)
    before: int | None = None
    for step in steps:
        start, end = step.start_time_unix_nano, step.end_time_unix_nano
        pause = start - before if start and before is not None else 0
        spans.append(
            (pause if 0 <= pause <= MAX_GAP else 0, max(0, end - start) if start and end else 0)
        )
        before = end or start or before
    clock = now - sum(pause + duration for pause, duration in spans)
    placed = []
    for step, (pause, duration) in zip(steps, spans, strict=True):
        clock += pause
        placed.append(
            dataclasses.replace(
                step, start_time_unix_nano=clock, end_time_unix_nano=clock + duration
            )
        )
        clock += duration
    return placed


def run_spans(
    run: Trajectory,
    *,
    source: Trajectory | None = None,
    also: Mapping[str, Any] | None = None,
    now: int | None = None,
) -> RecordedSpans:
    """``run``, a run agent-replay made (a fork, a resumed run, a rollout), as the spans `record`
    emits, with ids derived from its id. Its root span also carries ``agent_replay.run_id``, the
    lineage in its metadata (`LINEAGE_ATTRIBUTES`: the run it came from, the step and move of a
    fork, the frontier of a resumed run) and ``also``, and links to ``source``'s root span, the run
    it came from (its trace and span id also as ``agent_replay.source_trace_id`` and
    ``source_span_id``). The spans are laid out to end at ``now`` (`laid_out`; default: the clock's
    time)."""
    meta = run.metadata
    now = time.time_ns() if now is None else now
    steps = laid_out(run.steps, now)
    started = (steps[0].start_time_unix_nano if steps else None) or now
    lineage, links = lineage_attributes(run, source)
    agent = str(meta.get("agent") or "")
    name = str(meta.get("service") or agent.rpartition(":")[2] or "agent")
    return emit_spans(
        steps,
        agent_name=name,
        arguments=meta.get("input"),
        answer=meta.get("answer"),
        outcome=run.outcome,
        started=started,
        ended=now,
        error=meta.get("agent_error"),
        seed=seed if isinstance(seed := meta.get("seed"), int) else 0,
        agent_spec=agent,
        made={key: meta[key] for key in MADE_ATTRIBUTES if key in meta},
        also={**lineage, **(also or {})},
        links=links,
        ids=_named_ids(run.id),
    )


def send_run(
    run: Trajectory,
    to: Destination | str,
    *,
    source: Trajectory | None = None,
    also: Mapping[str, Any] | None = None,
) -> Sent:
    """Send ``run`` (`run_spans`: linked to ``source``, with ``also`` on its root span) to an
    OTLP/HTTP endpoint: ``to``, a `otel_replay.otlp_encode.Destination` or a URL (then with the
    ``OTEL_EXPORTER_OTLP_*`` headers and compression). Raises
    `otel_replay.errors.ExportError` when the endpoint cannot be reached or refuses it."""
    from otel_replay.otlp_encode import destination, send_otlp

    where = destination(to) if isinstance(to, str) else to
    return send_otlp(run_spans(run, source=source, also=also).request, where)
