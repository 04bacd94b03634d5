"""Spans of one trace → one `Trajectory`.

Invariants: every span lands in exactly one tree (orphans and spans caught in parent cycles become roots);
steps are the innermost spans a convention recognises as an operation, ordered by start time with ties
broken by tree order; unrecognised spans never become steps unless the trace has no recognised operation
at all, in which case its leaf spans become ``other`` steps so every OTLP trace imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_replay.importers._capture import step_instrumentation
from otel_replay.importers._conversation import reconstruct
from otel_replay.importers._exported import exported_steps, rebuilt_positions
from otel_replay.importers._nesting import nested_in_tools
from otel_replay.importers._operations import (
    Operation,
    build_operation,
    lone_model_calls,
    operations,
    tools_by_result,
)
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._semconv import (
    STEP_KINDS,
    Spans,
    is_placeholder,
    recognise,
)
from otel_replay.importers._spans import STATUS_ERROR, SpanRecord, maybe_json
from otel_replay.importers._usage import span_usage
from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory

_SESSION_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "langsmith.trace.session_id",
    "langfuse.session.id",
)


def _sibling_key(span: SpanRecord) -> tuple[int, int, str, int]:
    dotted = span.attributes.get("langsmith.span.dotted_order")
    return (
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        dotted if isinstance(dotted, str) else "",
        span.order,
    )


def _tree(
    spans: Sequence[SpanRecord], parent: list[int | None]
) -> tuple[list[int], list[int], list[int | None]]:
    """Return (pre-order of span positions, root positions, parent position of each span), from
    the parent position of each span."""
    parent = list(parent)
    children: list[list[int]] = [[] for _ in spans]
    for i, p in enumerate(parent):
        if p is not None:
            children[p].append(i)
    for kids in children:
        kids.sort(key=lambda k: _sibling_key(spans[k]))
    roots = sorted(
        (i for i, p in enumerate(parent) if p is None), key=lambda k: _sibling_key(spans[k])
    )
    order: list[int] = []
    seen = [False] * len(spans)

    def walk(start: int) -> None:
        stack = [start]
        while stack:
            node = stack.pop()
            if seen[node]:
                continue
            seen[node] = True
            order.append(node)
            stack.extend(reversed(children[node]))

    for root in roots:
        walk(root)
    # Spans in a parent cycle (A→B→A) are unreachable from any root: break each cycle at its earliest span.
    for i in sorted(range(len(spans)), key=lambda k: _sibling_key(spans[k])):
        if not seen[i]:
            parent[i] = None
            roots.append(i)
            walk(i)
    return order, roots, parent


def assemble(
    trajectory_id: str,
    spans: Sequence[SpanRecord],
    options: ReadOptions,
    metadata: dict[str, Any],
) -> Trajectory:
    """Build the trajectory of one trace. ``metadata`` (source, format) is extended, not replaced."""
    spans = Spans(s for s in spans if not is_placeholder(s))
    roles = [recognise(s) for s in spans]
    order, roots, parent = _tree(spans, nested_in_tools(spans, roles))
    position = {node: rank for rank, node in enumerate(order)}
    kinds: dict[int, StepKind] = {
        i: STEP_KINDS[roles[i][0]] for i in order if roles[i][0] in STEP_KINDS
    }
    kinds = tools_by_result(spans, roles, kinds)
    exported = exported_steps(spans)  # agent-replay's own export: its steps as they were stored
    found = [] if exported else operations(spans, order, parent, kinds)
    found = found or ([] if exported else lone_model_calls(spans, roots, roles))
    exchanges: dict[int, list[int]] = {}
    usage: dict[str, dict[str, int]] = {}
    if exported:
        built = exported
        usage = {
            step.span_id: counts
            for step, i in exported
            if step.span_id and (counts := span_usage(spans[i].attributes))
        }
    elif found:
        # a model call that ran a whole exchange is its last turn: it comes after its tools
        found.sort(key=lambda op: (_when(spans[op.head], op.exchange != []), position[op.head]))
        built = [build_operation(spans, op) for op in found]
        at = {op.head: k for k, op in enumerate(found)}
        exchanges = {
            at[op.head]: sorted(at[t.head] for t in op.exchange) for op in found if op.exchange
        }
        usage = _token_usage(spans, found, built)
    else:  # plain service trace: its leaves are the operations
        has_child = {p for p in parent if p is not None}
        leaves = sorted(
            (i for i in order if i not in has_child),
            key=lambda i: (spans[i].start_time_unix_nano, position[i]),
        )
        built = [(spans.step(i, StepKind.OTHER), i) for i in leaves]
    steps, rebuilt, placed = (
        ([step for step, _ in built], rebuilt_positions(spans, built), list(range(len(built))))
        if exported
        else reconstruct([step for step, _ in built], exchanges)
    )
    # the span each step was read from is drawn as the step; the others keep what they were taken for
    step_index = {source: placed[k] for k, (_, source) in enumerate(built)}

    present = {s.span_id for s in spans if s.span_id}
    root = _main_root(spans, roots)
    meta = dict(metadata)
    meta.update(_describe(spans, roots, root, roles))
    if rebuilt:
        meta["reconstructed_steps"] = rebuilt
    if usage:
        meta["token_usage"] = usage
    written = step_instrumentation(spans, step_index)  # what lint names a gap's setting by
    if written:
        meta["instrumentation"] = written
    return Trajectory.build(
        trajectory_id,
        steps,
        outcome=_outcome(root, options) if root is not None else None,
        metadata=meta,
        spans=[
            SpanNode(
                span_id=spans[i].span_id or f"#{spans[i].order}",
                parent_span_id=_parent_id(spans, parent, i, present),
                name=spans[i].name,
                role="step" if i in step_index else roles[i][0],
                start_time_unix_nano=spans[i].start_time_unix_nano or None,
                end_time_unix_nano=spans[i].end_time_unix_nano or None,
                status=StepStatus.ERROR if spans[i].status_code == STATUS_ERROR else StepStatus.OK,
                step_index=step_index.get(i),
            )
            for i in order
        ],
    )


def _token_usage(
    spans: Sequence[SpanRecord], found: Sequence[Operation], built: Sequence[tuple[Step, int]]
) -> dict[str, dict[str, int]]:
    """The tokens each model call's spans record (the span the step was read from first, then
    the operation's other recordings), by the step's span id (`otel_replay.importers._usage`)."""
    usage: dict[str, dict[str, int]] = {}
    for op, (step, source) in zip(found, built, strict=True):
        if step.kind is not StepKind.LLM or step.span_id is None:
            continue
        for i in [source, *(r for r in op.records if r != source)]:
            counts = span_usage(spans[i].attributes)
            if counts:
                usage[step.span_id] = counts
                break
    return usage


def _when(span: SpanRecord, ends: bool) -> int:
    return span.end_time_unix_nano if ends else span.start_time_unix_nano


def _parent_id(
    spans: Sequence[SpanRecord], parent: list[int | None], i: int, present: set[str]
) -> str | None:
    """The parent shown in the span tree: the resolved one; for an orphan its missing parent's id
    (another file may bring that parent: see `merge_partial`); None for roots and broken cycles."""
    p = parent[i]
    if p is not None:
        return spans[p].span_id or f"#{spans[p].order}"
    raw = spans[i].parent_span_id
    return raw if raw and raw not in present else None


def _main_root(spans: Sequence[SpanRecord], roots: list[int]) -> SpanRecord | None:
    """The trace's root: a span with no parent at all, else (partial export) the earliest top span."""
    true_roots = [spans[i] for i in roots if not spans[i].parent_span_id]
    if true_roots:
        return true_roots[0]
    return spans[roots[0]] if roots else None


def _outcome(root: SpanRecord, options: ReadOptions) -> float | None:
    report = options.report
    report.roots += 1
    if options.outcome_attribute is not None:
        if options.outcome_attribute in root.attributes:
            report.outcome_roots += 1
        elif len(report.root_attributes) < 50:
            report.root_attributes.update(list(root.attributes)[:50])
    for key in options.outcome_keys():
        if key not in root.attributes:
            continue
        value = root.attributes[key]
        try:
            score = float(value)  # booleans count: true = 1.0 (success)
        except (TypeError, ValueError):
            options.report.warnings.append(
                f"outcome attribute {key!r} on span {root.name!r} is not a number: {value!r}"
            )
            continue
        if score == score and abs(score) != float("inf"):
            return score
    if root.status_code == STATUS_ERROR and not root.parent_span_id:
        return 0.0  # only a true root speaks for the run; a partial export's top span does not
    return None


def _recording(root: SpanRecord) -> dict[str, Any]:
    """A run recorded by ``agent-replay record`` carries what replaying it needs on its root span
    (its input, seed and agent, and how it was made: the SDKs, the verifier, the redact patterns)."""
    attrs = root.attributes
    seed = attrs.get("agent_replay.seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        return {}
    found: dict[str, Any] = {"seed": seed, "input": maybe_json(attrs.get("agent_replay.input"))}
    if isinstance(attrs.get("agent_replay.agent"), str):
        found["agent"] = attrs["agent_replay.agent"]
    if isinstance(attrs.get("agent_replay.verifier"), str):
        found["verifier"] = attrs["agent_replay.verifier"]
    for key in ("instrument", "redact"):  # lists of strings: the SDKs, the patterns
        value = attrs.get(f"agent_replay.{key}")
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            found[key] = list(value)
    if "output.value" in attrs:
        found["answer"] = maybe_json(attrs["output.value"])
    return found


def _describe(
    spans: Sequence[SpanRecord],
    roots: list[int],
    root: SpanRecord | None,
    roles: list[tuple[str, str]],
) -> dict[str, Any]:
    meta: dict[str, Any] = {"spans": len(spans)}
    if root is not None:
        meta["root_span"] = root.name
        service = root.resource.get("service.name")
        if isinstance(service, str):
            meta["service"] = service
        for key in _SESSION_KEYS:
            if isinstance(root.attributes.get(key), str):
                meta["session"] = root.attributes[key]
                break
        if isinstance(root.attributes.get("user.id"), str):
            meta["user"] = root.attributes["user.id"]
        meta.update(_recording(root))
    conventions = sorted({c for _, c in roles if c})
    if conventions:
        meta["conventions"] = conventions
    if len(roots) > 1:
        meta["roots"] = len(roots)
    return meta
