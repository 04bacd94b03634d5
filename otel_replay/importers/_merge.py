"""One trace, two files: the Collector rotates its output and batches spans, so a trace's spans can
arrive in different files. `merge_partial` joins two trajectories built from parts of one trace
(`otel_replay.ingest` decides when).

Steps and spans are matched by span id; a step whose span turns out to contain another step's span
(it looked innermost only because its child was in the other file) becomes structure; steps are
ordered again by start time. The outcome known from either part wins (the part holding the root).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from otel_replay.model import SpanNode, Step, Trajectory

#: Formats whose trajectories are built from spans (and so can be joined by span id).
_SPAN_FORMATS = frozenset(
    {"otlp-json", "otlp-jsonl", "otlp-proto", "otlp-proto-stream", "span-dump"}
)


def built_from_spans(format: str | None) -> bool:
    """Whether a trajectory whose metadata names ``format`` was built from spans (OTLP, span dumps):
    then a trace id names one trace, and `merge_partial` can join its parts."""
    return format in _SPAN_FORMATS


def merge_partial(existing: Trajectory, new: Trajectory) -> Trajectory:
    """``existing`` and ``new`` (parts of one trace) as one trajectory; merging a part that is
    already in gives ``existing`` again."""
    spans: dict[str, SpanNode] = {s.span_id: s for s in existing.spans}
    for span in new.spans:
        spans.setdefault(span.span_id, span)
    parent = {s.span_id: s.parent_span_id for s in spans.values()}
    steps: dict[str, Step] = {}
    loose: list[Step] = []
    for step in (*existing.steps, *new.steps):
        if step.span_id is None:
            loose.append(step)
        else:
            steps.setdefault(step.span_id, step)
    # a step whose span is an ancestor of another step's span is structure, not a step
    ancestors: set[str] = set()
    for span_id in steps:
        seen: set[str] = set()
        current = parent.get(span_id)
        while current is not None and current not in seen:
            seen.add(current)
            ancestors.add(current)
            current = parent.get(current)
    kept = [s for key, s in steps.items() if key not in ancestors] + loose
    kept.sort(key=lambda s: (s.start_time_unix_nano or 0, s.index))
    index_of = {s.span_id: i for i, s in enumerate(kept) if s.span_id is not None}
    nodes = [
        dataclasses.replace(
            node,
            step_index=index_of.get(node.span_id),
            role="step"
            if node.span_id in index_of
            else (node.role if node.role != "step" else "span"),
        )
        for node in _tree_order(spans)
    ]
    metadata: dict[str, Any] = {**new.metadata, **existing.metadata}
    sources = [existing.metadata.get("sources") or [existing.metadata.get("source")]]
    metadata["sources"] = sorted({*sources[0], new.metadata.get("source")} - {None})
    metadata["spans"] = len(nodes)
    outcome = existing.outcome if existing.outcome is not None else new.outcome
    return Trajectory.build(
        existing.id,
        [s.unlinked() for s in kept],
        outcome=outcome,
        metadata=metadata,
        spans=nodes,
    )


def _tree_order(spans: dict[str, SpanNode]) -> list[SpanNode]:
    """Parents before children, siblings by start time (the order trajectories keep spans in)."""
    children: dict[str | None, list[SpanNode]] = {}
    for node in spans.values():
        key = node.parent_span_id if node.parent_span_id in spans else None
        children.setdefault(key, []).append(node)
    for group in children.values():
        group.sort(key=lambda n: n.start_time_unix_nano or 0)
    ordered: list[SpanNode] = []
    stack = list(reversed(children.get(None, [])))
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        if node.span_id in seen:
            continue
        seen.add(node.span_id)
        ordered.append(node)
        stack.extend(reversed(children.get(node.span_id, [])))
    ordered.extend(n for n in spans.values() if n.span_id not in seen)  # cycles: keep them all
    return ordered
