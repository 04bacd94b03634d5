"""One deep or wide trace costs what its spans do (issue 40, item 4).

Spans come from the real OpenTelemetry SDK, written with `otel_replay.otlp_encode`. Nothing here is
timed: memory is compared between N and 4N spans (a ratio, whatever the machine), and work is
counted (steps built per span, pairs of operations compared), so each test fails on a quadratic
importer and passes on a linear one on any machine.
"""

from __future__ import annotations

import json
import random
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from otel_replay.importers import _merge, _operations, _semconv, read_path
from otel_replay.importers._nesting import nested_in_tools
from otel_replay.importers._operations import PARTS_OF, richness, same_operation
from otel_replay.importers._spans import SpanRecord
from otel_replay.model import Step, StepKind
from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request
from tests.sdk import Recorder

OI = "openinference.span.kind"


def _llm(k: int) -> dict[str, Any]:
    return {
        OI: "LLM",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": f"question {k}",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": f"answer {k}",
    }


def _tool(k: int) -> dict[str, Any]:
    return {
        OI: "TOOL",
        "tool.name": "lookup",
        "input.value": json.dumps({"q": k}),
        "output.value": f"r{k}",
    }


def chain(
    n: int, level: Callable[[int], dict[str, Any]], leaf: bool = False
) -> tuple[ReadableSpan, ...]:
    """A parent chain of ``n`` spans (each the child of the one before), an llm call at the bottom;
    with ``leaf``, each level also holds a tool call beside the next level."""
    rec = Recorder()
    context = None
    opened = []
    for k in range(n):
        attributes = _llm(k) if k == n - 1 else level(k)
        span = rec.tracer.start_span(
            f"s{k}", context=context, attributes=attributes, start_time=rec.tick(1)
        )
        context = trace.set_span_in_context(span)
        opened.append(span)
        if leaf:
            rec.tracer.start_span(
                f"t{k}", context=context, attributes=_tool(k), start_time=rec.tick(1)
            ).end(end_time=rec.tick(1))
    for span in reversed(opened):
        span.end(end_time=rec.tick(1))
    return rec.spans()


def wide_at_once(n: int) -> tuple[ReadableSpan, ...]:
    """``n`` tool calls under one root, all running at once, sending the same request (some with
    no arguments at all) and none keeping a result: no two are one call."""
    rec = Recorder()
    root = rec.tracer.start_span("root", attributes={OI: "AGENT"}, start_time=rec.tick(1))
    context = trace.set_span_in_context(root)
    for k in range(n):
        arguments = "{}" if k % 3 else '{"q": 1}'
        attributes = {OI: "TOOL", "tool.name": "lookup", "input.value": arguments}
        rec.tracer.start_span(
            f"s{k}", context=context, attributes=attributes, start_time=rec.clock + 1
        ).end(end_time=rec.clock + 10**9)
    root.end(end_time=rec.tick(2000))
    return rec.spans()


def write(spans: Sequence[ReadableSpan], path: Path) -> Path:
    path.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(spans))))
    return path


def peak_bytes(path: Path) -> int:
    tracemalloc.start()
    try:
        runs = list(read_path(path))
        assert len(runs) == 1
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def tools_every_tenth(k: int) -> dict[str, Any]:
    return _tool(k) if k % 10 == 5 else {OI: "CHAIN"}


def test_a_deep_chain_with_operations_at_several_depths_takes_memory_linear_in_its_spans(
    tmp_path: Path,
) -> None:
    small = peak_bytes(write(chain(1_500, tools_every_tenth), tmp_path / "small.json"))
    large = peak_bytes(write(chain(6_000, tools_every_tenth), tmp_path / "large.json"))
    # 4x the spans: linear is about 4x; the importer that asked every tool about every container
    # (each with the set of its ancestors) took about 12x here, and 16x as traces grow
    assert large / small < 7, (small, large)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many steps are built from spans, and how many pairs of operations are compared as
    possibly one call, while the real functions run."""
    counts = {"built": 0, "compared": 0}
    build_step, same_call = _semconv.build_step, _operations._same_call

    def building(*args: Any) -> Any:
        counts["built"] += 1
        return build_step(*args)

    def comparing(*args: Any) -> bool:
        counts["compared"] += 1
        return same_call(*args)

    for module in (_semconv, _operations):
        monkeypatch.setattr(module, "build_step", building, raising=False)
    monkeypatch.setattr(_operations, "_same_call", comparing)
    return counts


def test_operations_inside_operations_build_each_spans_step_once(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    spans = chain(1_000, _llm, leaf=True)  # 2,000 operations, each level holding all below it
    (run,) = read_path(write(spans, tmp_path / "nested.json"))
    # a model call holding others is structure: the tools are steps, and the innermost call
    assert sum(step.kind.value == "tool" for step in run.steps) == 1_000
    assert counted["built"] <= 3 * len(spans), counted


def test_many_operations_at_once_are_not_compared_in_pairs(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    spans = wide_at_once(3_000)
    (run,) = read_path(write(spans, tmp_path / "wide.json"))
    assert len(run.steps) == 3_000  # none is one call with another
    assert counted["compared"] <= len(spans), counted
    assert counted["built"] <= 3 * len(spans), counted


def test_a_chain_deeper_than_the_recursion_limit_imports(tmp_path: Path) -> None:
    """Five times Python's recursion limit deep: any recursion over the chain fails here (the scale
    tier reads one of 100,000 spans)."""
    depth = 5 * sys.getrecursionlimit()
    spans = chain(depth, lambda k: _tool(k) if k % 1000 == 5 else {})
    (run,) = read_path(write(spans, tmp_path / "deep.json"))
    assert len(run.spans) == depth
    assert [step.kind.value for step in run.steps] == ["llm"]


@pytest.mark.scale
def test_a_chain_of_100000_spans_imports_without_recursion(tmp_path: Path) -> None:
    spans = chain(100_000, lambda k: _tool(k) if k % 1000 == 5 else {})
    (run,) = read_path(write(spans, tmp_path / "deep.json"))
    assert len(run.spans) == 100_000
    assert [step.kind.value for step in run.steps] == ["llm"]


def _nested_by_asking_every_tool(
    spans: Sequence[SpanRecord], roles: Sequence[tuple[str, str]]
) -> list[int | None]:
    """The rule as first written: every container asks every tool, each with its ancestors."""
    by_id = {s.span_id: i for i, s in reversed(list(enumerate(spans)))}
    parent: list[int | None] = []
    for i, span in enumerate(spans):
        p = by_id.get(span.parent_span_id) if span.parent_span_id else None
        parent.append(None if p == i else p)

    def timed(s: SpanRecord) -> bool:
        return 0 < s.start_time_unix_nano <= s.end_time_unix_nano

    def ancestors(i: int) -> set[int]:
        found: set[int] = set()
        p = parent[i]
        while p is not None and p not in found and p != i:
            found.add(p)
            p = parent[p]
        return found

    tools = [i for i, (role, _) in enumerate(roles) if role == "tool" and timed(spans[i])]
    moved = list(parent)
    for i, (role, _) in enumerate(roles):
        if role not in ("agent", "chain") or parent[i] is None or not timed(spans[i]):
            continue
        holders = [
            t
            for t in tools
            if t != i
            and spans[t].start_time_unix_nano <= spans[i].start_time_unix_nano
            and spans[i].end_time_unix_nano <= spans[t].end_time_unix_nano
            and parent[i] in ancestors(t)
            and i not in ancestors(t)
        ]
        innermost = [t for t in holders if not any(t in ancestors(o) for o in holders)]
        if len(innermost) == 1:
            moved[i] = innermost[0]
    return moved


@pytest.mark.parametrize("seed", range(300))
def test_containers_are_nested_in_tools_as_asking_every_tool_would(seed: int) -> None:
    """Random span forests, parent cycles and untimed spans included."""
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    spans, roles = [], []
    for i in range(n):
        start = rng.choice([0, *range(1, 8)])
        end = start + rng.choice([-1, 0, 1, 2, 4, 8])
        parent = rng.choice(["", "f" * 16, *(f"{k + 1:016x}" for k in range(n))])
        spans.append(
            SpanRecord("1" * 32, f"{i + 1:016x}", parent, f"s{i}", 1, start, end, {}, order=i)
        )
        roles.append((rng.choice(["tool", "tool", "agent", "chain", "span", "llm"]), ""))
    assert nested_in_tools(spans, roles) == _nested_by_asking_every_tool(spans, roles)


def _contained_by_walking_up(steps: dict[str, Any], parent: dict[str, str | None]) -> set[str]:
    """`_merge._contained` as first written: each step walks up its ancestors."""
    below: dict[str, list[str]] = {}
    for span_id in steps:
        seen: set[str] = set()
        current = parent.get(span_id)
        while current is not None and current not in seen:
            seen.add(current)
            if current in steps:
                below.setdefault(current, []).append(span_id)
            current = parent.get(current)
    dropped: set[str] = set()
    for outer, inner in below.items():
        kinds = [steps[i].kind for i in inner]
        if len(inner) == 1 and same_operation(steps[outer], steps[inner[0]]):
            dropped.add(min((outer, inner[0]), key=lambda i: richness(steps[i])))
        elif all(kind in PARTS_OF.get(steps[outer].kind, ()) for kind in kinds):
            dropped.update(inner)
        else:
            dropped.add(outer)
    return dropped


@pytest.mark.parametrize("seed", range(300))
def test_steps_inside_steps_of_two_parts_are_found_as_walking_up_finds_them(seed: int) -> None:
    """Random span forests, parent cycles and parents no part holds included."""
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    names = [f"s{i}" for i in range(n)]
    parent = {name: rng.choice([None, "gone", *names]) for name in names}
    kinds = [StepKind.TOOL, StepKind.RETRIEVER, StepKind.EMBEDDING, StepKind.LLM, StepKind.RERANKER]
    steps = {
        name: Step(
            rng.choice(kinds),
            rng.choice(["a", "b"]),
            {"k": rng.randint(0, 2)},
            rng.choice([None, 1]),
        )
        for name in [*names, "gone"]
        if rng.random() < 0.6
    }
    assert _merge._contained(steps, parent) == _contained_by_walking_up(steps, parent)


def test_joining_two_parts_of_a_trace_looks_at_each_step_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace whose 1,000 tool calls are each recorded twice (a wrapper and the call), the
    wrappers in one file and the calls in another: each wrapper is compared with its call once."""
    rec = Recorder()
    root = rec.tracer.start_span("root", attributes={OI: "AGENT"}, start_time=rec.tick(1))
    for k in range(1_000):
        context = trace.set_span_in_context(root)
        outer = rec.tracer.start_span(
            f"w{k}", context=context, attributes=_tool(k), start_time=rec.tick(1)
        )
        rec.tracer.start_span(
            f"c{k}",
            context=trace.set_span_in_context(outer),
            attributes=_tool(k),
            start_time=rec.tick(1),
        ).end(end_time=rec.tick(1))
        outer.end(end_time=rec.tick(1))
    root.end(end_time=rec.tick(1))
    spans = rec.spans()
    wrappers = [s for s in spans if not s.name.startswith("c")]
    calls = [s for s in spans if s.name.startswith("c")]
    (first,) = read_path(write(wrappers, tmp_path / "wrappers.json"))
    (second,) = read_path(write(calls, tmp_path / "calls.json"))
    compared = 0
    same = _merge.same_operation

    def comparing(*args: Any) -> bool:
        nonlocal compared
        compared += 1
        return same(*args)

    monkeypatch.setattr(_merge, "same_operation", comparing)
    merged = _merge.merge_partial(first, second)
    assert len(merged.steps) == 1_000
    assert compared <= 1_000, compared
