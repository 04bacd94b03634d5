"""One trace, two files: the Collector rotates its output and batches spans, so a trace's spans can
arrive in different files. `merge_partial` joins two trajectories built from parts of one trace
(`otel_replay.ingest` decides when).

Steps and spans are matched by span id (a span both parts hold keeps the richer of its two steps:
Datadog's APM trace and its LLM Observability events record one operation twice); a step whose
span turns out to contain another step's span (it looked innermost only because its child was in
the other file) becomes structure; steps are ordered again by start time. The outcome known from
either part wins (the part holding the root).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from otel_replay.hashing import canonical_json
from otel_replay.importers._conversation import reconstruct
from otel_replay.importers._operations import PARTS_OF, richness, same_operation
from otel_replay.model import SpanNode, Step, StepKind, Trajectory
from otel_replay.redaction import patterns_of, with_patterns

#: Formats whose trajectories are built from spans (and so can be joined by span id).
_SPAN_FORMATS = frozenset(
    {
        "otlp-json",
        "otlp-jsonl",
        "otlp-proto",
        "otlp-proto-stream",
        "span-dump",
        "otlp-http",
        "any-agent",
        "phoenix-otlp",
        "flat-spans",
        "langfuse",
        "jaeger",
        "zipkin",
        "langsmith",
        "datadog",
        "mlflow",
    }
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
    turns: list[Step] = []  # model turns rebuilt inside an exchange span (see below)
    when: dict[int, int] = {}  # sort time of each step
    for part in (existing.steps, new.steps):
        following = 0
        for step in reversed(part):  # a rebuilt step sorts just before the recorded step after it
            following = step.start_time_unix_nano or following
            when[id(step)] = following
        for step, after in zip(part, [*part[1:], None], strict=True):
            if step.span_id is not None:  # a span both parts hold keeps its richer step
                held = steps.get(step.span_id)
                if held is None or richness(step) > richness(held):
                    steps[step.span_id] = step
            elif _exchange_turn(step, after):
                turns.append(step)
    contained = _contained(steps, parent)
    recorded = [steps[key] for key in steps if key not in contained]
    ordered = sorted(
        [*recorded, *_distinct(turns)], key=lambda s: (when[id(s)], s.span_id is not None, s.index)
    )
    # what the conversation shows is rebuilt from the whole trace, not from either part
    kept, _, _ = reconstruct(ordered)
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
    patterns = with_patterns(patterns_of(existing), patterns_of(new))
    if patterns:  # both parts' redact patterns, once each: the whole run is redacted with them
        metadata["redact"] = patterns
    usage = {**_usage(new), **_usage(existing)}  # by span id: each part's model calls
    usage = {span: counts for span, counts in usage.items() if any(s.span_id == span for s in kept)}
    if usage:
        metadata["token_usage"] = usage
    else:
        metadata.pop("token_usage", None)
    rebuilt = [i for i, step in enumerate(kept) if step.span_id is None]
    if rebuilt:
        metadata["reconstructed_steps"] = rebuilt
    else:
        metadata.pop("reconstructed_steps", None)
    outcome = existing.outcome if existing.outcome is not None else new.outcome
    return Trajectory.build(
        existing.id,
        [s.unlinked() for s in kept],
        outcome=outcome,
        metadata=metadata,
        spans=nodes,
    )


def _usage(part: Trajectory) -> dict[str, Any]:
    found = part.metadata.get("token_usage")
    return found if isinstance(found, dict) else {}


def _contained(steps: dict[str, Step], parent: dict[str, str | None]) -> set[str]:
    """Steps that, once both parts are in, turn out to be inside another step's span, folded by the
    rules of `otel_replay.importers._operations`: one operation recorded twice keeps its richer
    step, an operation keeps its parts' steps out, anything else containing steps is structure.

    A step's span holds the steps below it by the recorded parents. Each span's steps below are
    counted once, children before parents, rather than walked up from every step (which cost a
    deep trace the square of its spans); a span in a parent cycle (A→B→A) is above every span
    that reaches the cycle, itself included."""
    tree = _Ancestry(steps, parent)
    dropped: set[str] = set()
    for outer, step in steps.items():
        if outer in tree.cycle:  # it holds every step reaching its cycle, itself among them
            dropped.add(outer)  # (alone: the same operation as itself; else more than its parts)
            continue
        count, kinds = tree.count.get(outer, 0), tree.kinds.get(outer, set())
        if not count:
            continue
        inner = tree.below(outer) if count == 1 or kinds <= PARTS_OF.get(step.kind, set()) else []
        if count == 1 and same_operation(step, steps[inner[0]]):
            dropped.add(min((outer, inner[0]), key=lambda i: richness(steps[i])))
        elif kinds <= PARTS_OF.get(step.kind, set()):
            dropped.update(inner)
        else:
            dropped.add(outer)
    return dropped


class _Ancestry:
    """The spans by their recorded parents: each parent cycle's spans (``cycle``: span → the
    cycle's first span found), and for every other span the number and the kinds of the steps
    below it (``count``, ``kinds``), spans of a cycle laid out as roots."""

    def __init__(self, steps: dict[str, Step], parent: dict[str, str | None]) -> None:
        self.steps = steps
        nodes = list(dict.fromkeys([*parent, *(p for p in parent.values() if p), *steps]))
        up = {node: parent.get(node) for node in nodes}
        self.cycle: dict[str, str] = {}
        done: set[str] = set()
        for start in nodes:
            path: list[str] = []
            walking: set[str] = set()
            node: str | None = start
            while node is not None and node not in done and node not in walking:
                walking.add(node)
                path.append(node)
                node = up[node]
            if node is not None and node in walking:
                for member in path[path.index(node) :]:
                    self.cycle[member] = node
            done.update(path)
        self.children: dict[str, list[str]] = {}
        roots = []
        for node in nodes:
            p = None if node in self.cycle else up[node]
            if p is None:
                roots.append(node)
            else:
                self.children.setdefault(p, []).append(node)
        order: list[str] = []
        stack = roots
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(self.children.get(node, ()))
        self.count: dict[str, int] = {}
        self.kinds: dict[str, set[StepKind]] = {}
        for node in reversed(order):  # children before parents
            p = None if node in self.cycle else up[node]
            if p is None:
                continue
            count = self.count.get(node, 0) + (node in steps)
            if count:
                self.count[p] = self.count.get(p, 0) + count
                kinds = self.kinds.setdefault(p, set())
                kinds |= self.kinds.get(node, set())
                if node in steps:
                    kinds.add(steps[node].kind)

    def below(self, node: str) -> list[str]:
        """The steps below ``node`` (a span in no cycle)."""
        found: list[str] = []
        stack = list(self.children.get(node, ()))
        while stack:
            current = stack.pop()
            if current in self.steps:
                found.append(current)
            stack.extend(self.children.get(current, ()))
        return found


def _exchange_turn(step: Step, after: Step | None) -> bool:
    """A rebuilt model turn of an exchange span: a span-less llm step followed by a tool step a span
    recorded (the conversation cannot rebuild it again: the exchange's span does not show it)."""
    return (
        step.kind is StepKind.LLM
        and after is not None
        and after.span_id is not None
        and after.kind is StepKind.TOOL
    )


def _distinct(steps: list[Step]) -> list[Step]:
    seen: set[bytes] = set()
    distinct = []
    for step in steps:
        key = canonical_json([step.name, step.inputs, step.output])
        if key not in seen:
            seen.add(key)
            distinct.append(step)
    return distinct


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
