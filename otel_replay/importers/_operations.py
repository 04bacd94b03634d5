"""Which spans are the operations of a trace: one step per real operation, whoever recorded it.

The base rule (DESIGN §2): the innermost recognised operation spans are steps; an operation that
contains another (an agent used as a tool) is structure. Five shapes break it, and are folded here:

* **One operation recorded twice.** An operation span whose only operation below it is one span of
  the same kind (for tools, the same tool) describes one operation seen twice — two instrumentations of one call (a framework's
  span around the SDK's own), or a framework's wrapper around the function it calls. One step, read
  from whichever span holds the richer content (`build_operation`).
* **An operation and its parts.** A retrieval that embeds its query (or reranks what it found) is the
  operation the agent performed; the embedding and reranking spans inside it are part of it. So is a
  retrieval, embedding or reranking inside a tool call: how the tool did its work. (A model call
  inside a tool is an agent used as a tool: structure, as above.)
* **A model call that ran a whole exchange.** A model-call span with response evidence that contains
  tool calls (and no other model call) ran the exchange itself, automatic function calling: its
  tools are steps, and the span is the exchange's last model turn, after them (the turns before are
  rebuilt by `otel_replay.importers._conversation`).
* **One operation recorded by two spans side by side.** Two operation spans of the same kind that
  run at once and hold the same operation (the same response; or the same request, one of them
  without the response: for tools the same tool, arguments and call) are two instrumentations of
  one call whose spans do not nest (`_without_duplicates`): one step.
* **A span that prepares a model call.** An llm span without response evidence (no output message,
  no token counts, no finish reason) beside a later llm span that has it, under the same parent, is
  the request being built, not a call: it is folded into the call it prepared. Unless the later
  call's input shows a model turn right after the earlier span's input: then the earlier span is a
  call that kept no response, and that turn is its output (`otel_replay.importers._conversation`). Likewise an
  embedding straight before a retrieval beside it is the retrieval's query encoding.

Each `Operation` becomes one step; its first recording span is the one that names it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_replay.importers._content import RESULT_KEYS, tool_content
from otel_replay.importers._conventions import VOCABULARIES, Part, sources, split_source
from otel_replay.importers._semconv import CONTAINER_ROLES, Spans
from otel_replay.importers._spans import STATUS_ERROR, SpanRecord
from otel_replay.messages import message_text
from otel_replay.model import Step, StepKind, StepStatus

#: Operations that are how another did its work when its span contains them: a retrieval embeds
#: its query and reranks what it found; a tool call may retrieve, embed or rerank.
PARTS_OF = {
    StepKind.RETRIEVER: frozenset({StepKind.EMBEDDING, StepKind.RERANKER}),
    StepKind.TOOL: frozenset({StepKind.RETRIEVER, StepKind.EMBEDDING, StepKind.RERANKER}),
}

#: Where a model's response shows, by the vocabulary table: its output messages (but a value any
#: span records as its output, which a span that only prepares a call has too) and its output or
#: total token counts, each source's key or a flattened list's prefix; and what no part of the
#: table names, a finish reason or a response id.
_RESPONSE_PARTS: tuple[Part, ...] = ("output_messages", "output_tokens", "total_tokens")
_ANY_OUTPUT = frozenset(s for row in VOCABULARIES for s in row.parts.get("output", ()))
_RESPONSE_SOURCES = [
    split_source(s)[0]  # the key a reader shapes
    for part in _RESPONSE_PARTS
    for s in sources(part)
    if s not in _ANY_OUTPUT and not s.startswith(("(", "event "))
]
_RESPONSE_PREFIXES = (
    "llm.finish_reason",
    "gen_ai.response.",
    *(key[: -len("*")] for key in _RESPONSE_SOURCES if key.endswith(".*")),
)
_RESPONSE_KEYS = frozenset(key for key in _RESPONSE_SOURCES if not key.endswith(".*"))
#: Span events that hold a response.
_RESPONSE_EVENTS = frozenset({"gen_ai.choice", "gen_ai.content.completion"})


@dataclass
class Operation:
    """The spans of one operation: those that record it (the naming span first) and those that are
    only part of it (a retrieval's embedding, the preparation of a model call). ``exchange`` lists
    the tool calls inside a model-call span that ran a whole exchange (automatic function calling):
    the span's step is the exchange's last model turn, and those tools came before it."""

    kind: StepKind
    records: list[int]
    parts: list[int]
    exchange: list[Operation] = field(default_factory=list)

    @property
    def head(self) -> int:
        return self.records[0]

    def spans(self) -> list[int]:
        return [*self.records, *self.parts]


def operations(
    spans: Spans,
    order: Sequence[int],
    parent: Sequence[int | None],
    kinds: dict[int, StepKind],
) -> list[Operation]:
    """The operations of a trace. ``order`` is the tree's pre-order, ``parent`` each span's parent
    position, ``kinds`` the step kind of each span a convention recognises as an operation."""
    nearest: list[int | None] = [None] * len(spans)  # the nearest operation span above each span
    for node in order:
        p = parent[node]
        nearest[node] = None if p is None else (p if p in kinds else nearest[p])
    below: dict[int, list[Operation]] = {i: [] for i in kinds}
    # how many tool operations in each hold nothing of their own: only those can be merges, so
    # a list without one is not looked through again at every operation span above it
    empty = dict.fromkeys(kinds, 0)
    found: list[Operation] = []
    for node in reversed(order):  # children before parents
        if node not in kinds:
            continue
        held, holding = below.pop(node), empty.pop(node)
        inner = without_result_merges(held, spans) if holding else held
        holding -= len(held) - len(inner)
        kind = kinds[node]
        made: Operation | None = None  # the one operation made here, when this span is one
        if not inner:
            made = Operation(kind, [node], [])
        elif all(_records_event_of(spans, kind, op) for op in inner):  # its lifecycle events
            records = [i for op in inner for i in op.records]
            made = Operation(kind, [node, *records], [i for op in inner for i in op.parts])
        elif len(inner) == 1 and _same_operation(spans, node, kind, inner[0]):  # recorded twice
            made = Operation(kind, [node, *inner[0].records], inner[0].parts)
        elif kind in PARTS_OF and all(op.kind in PARTS_OF[kind] for op in inner):
            made = Operation(kind, [node], [i for op in inner for i in op.spans()])
        elif kind is StepKind.LLM and _asked_for(spans, node, inner):  # the tools it asked for
            pending = [Operation(kind, [node], []), *inner]
        elif kind is StepKind.LLM and all(op.kind is StepKind.TOOL for op in inner):
            exchange = Operation(kind, [node], [], exchange=inner)
            pending = [*inner, exchange] if _answered(exchange, spans) else inner
        else:  # structure: what it contains stands on its own
            pending = inner
        if made is not None:
            pending, holding = [made], int(_holds_nothing(made, spans))
        up = nearest[node]
        if up is None:
            found.extend(pending)
        elif below[up]:
            below[up].extend(pending)
            empty[up] += holding
        else:  # taken as it is: a chain of spans does not copy what it holds at every level
            below[up], empty[up] = pending, holding
    found = _without_preparations(without_result_merges(found, spans), spans, parent)
    return _without_duplicates(found, spans)


def _without_duplicates(found: list[Operation], spans: Spans) -> list[Operation]:
    """``found`` with each operation that another one running at the same time records too
    (`_same_call`) folded into the one that started first: its spans become recordings of it.

    The earlier operations still running are kept by what `_same_call` asks of them (the request,
    whether they kept a response and which, the call id), so an operation is set only beside those
    that are the same call as it: a trace of many operations at once costs what its spans do, not
    their square."""
    timed = sorted(
        (op for op in found if not op.exchange and _timed(spans[op.head])),
        key=lambda op: (spans[op.head].start_time_unix_nano, spans[op.head].order),
    )
    folded: set[int] = set()
    running: dict[Hashable, deque[tuple[int, int, Operation]]] = {}  # (end, rank, first) by group
    for rank, other in enumerate(timed):
        step = spans.step(other.head, other.kind)
        request = _request(step)
        if request is None:
            continue
        start = spans[other.head].start_time_unix_nano
        answered = None if step.output is None else _frozen(step.output)
        call_id = step.inputs.get("tool_call_id") if request[0] in _CALLS else None
        call_id = call_id if isinstance(call_id, str) else None
        ids: list[Hashable] = ["any"] if call_id is None else [("id", call_id), "no id"]
        outputs = [("answered",)] if answered is None else [("silent",), ("output", answered)]
        first: tuple[int, int, Operation] | None = None
        for group in [(request, *output, by) for output in outputs for by in ids]:
            queue = running.get(group)
            while queue and queue[0][0] <= start:  # it ended before ``other`` began
                queue.popleft()
            if queue and (first is None or queue[0][1] < first[1]):
                first = queue[0]
        if first is not None and _same_call(spans.step(first[2].head, first[2].kind), step):
            first[2].records.extend(other.records)
            first[2].parts.extend(other.parts)
            folded.add(other.head)
            continue
        end = max(spans[i].end_time_unix_nano for i in other.records)
        kept = [("silent",)] if answered is None else [("answered",), ("output", answered)]
        own: Hashable = "no id" if call_id is None else ("id", call_id)
        for group in [(request, *output, by) for output in kept for by in ("any", own)]:
            running.setdefault(group, deque()).append((end, rank, other))
    return [op for op in found if op.head not in folded] if folded else found


#: Kinds whose steps `_same_call` tells apart by their call ids.
_CALLS = frozenset({StepKind.TOOL, StepKind.RETRIEVER})


def _request(step: Step) -> tuple[Any, ...] | None:
    """What two steps `_same_call` takes for one call both send (None: a step no other is the same
    call as): the kind, and the tool and its arguments, or the input messages."""
    if step.kind in (StepKind.TOOL, StepKind.RETRIEVER):
        asked = {k: v for k, v in step.inputs.items() if k != "tool_call_id"}
        return (step.kind, step.name, _frozen(asked)) if asked else None
    messages = step.inputs.get("messages")
    return (step.kind, _frozen(messages)) if messages else None


def _frozen(value: Any) -> Hashable:
    """A JSON value as a hashable value equal to another's exactly when the values are equal."""
    if isinstance(value, dict):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    scalar: Hashable = value
    return scalar


def _same_call(a: Step, b: Step) -> bool:
    """Whether two steps of one kind, recorded at the same time, are one call: the same request
    (input messages for a model call; tool, arguments and call id for a tool), and the same
    response where both kept one (a model sampled twice at once answers twice). When neither kept
    a response nothing tells two identical requests at once from one: two steps."""
    if a.output is None and b.output is None:
        return False
    if a.output is not None and b.output is not None and a.output != b.output:
        return False
    if a.kind in (StepKind.TOOL, StepKind.RETRIEVER):
        ids = a.inputs.get("tool_call_id"), b.inputs.get("tool_call_id")
        if all(isinstance(i, str) for i in ids) and ids[0] != ids[1]:
            return False
        asked = {k: v for k, v in a.inputs.items() if k != "tool_call_id"}
        return (
            a.name == b.name
            and bool(asked)
            and asked == {k: v for k, v in b.inputs.items() if k != "tool_call_id"}
        )
    messages = a.inputs.get("messages")
    return bool(messages) and messages == b.inputs.get("messages")


def _timed(span: SpanRecord) -> bool:
    return 0 < span.start_time_unix_nano <= span.end_time_unix_nano


def _asked_for(spans: Spans, node: int, inner: list[Operation]) -> bool:
    """Whether the tool calls inside an llm span are the ones its own response asked for: then the
    span is that one model call, and its tools ran after it (some frameworks end the model call's
    span only once the tools it asked for have run), not a call that ran a whole exchange.

    The response's tool calls must name every tool span inside, each as often as it ran, and the
    span's input must hold no result of those tools since the user last spoke (a span whose input
    holds their results saw them run before it: it ran the exchange)."""
    if not inner or any(op.kind is not StepKind.TOOL for op in inner):
        return False
    step = spans.step(node, StepKind.LLM)
    ran = sorted(spans.step(op.head, StepKind.TOOL).name for op in inner)
    history = step.inputs.get("messages")
    history = [m for m in history if isinstance(m, dict)] if isinstance(history, list) else []
    spoke = [i for i, m in enumerate(history) if m.get("role") == "user"]
    since = history[(spoke[-1] if spoke else -1) + 1 :]
    if any(m.get("role") == "tool" and m.get("name") in ran for m in since):
        return False  # its input already holds those tools' results: it came after them
    output = step.output
    messages = output if isinstance(output, list) else [output]
    asked = sorted(
        str(call.get("name"))
        for message in messages
        if isinstance(message, dict)
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    )
    return asked == ran


#: Names of the spans some frameworks emit for one event in an operation's life (it started, made
#: progress, succeeded, failed, finished), inside the operation's own span.
_LIFECYCLE_EVENTS = frozenset(
    {"start", "started", "update", "progress", "success", "error", "failure", "finish", "end"}
)


def _records_event_of(spans: Spans, kind: StepKind, inner: Operation) -> bool:
    """Whether an operation inside an operation span of the same kind is a span recording one
    lifecycle event of it (named after the event: start, update, success, error, finish): then it
    is the enclosing operation, its failure that operation's failure."""
    return (
        inner.kind is kind
        and not inner.exchange
        and all(spans[i].name.strip().lower() in _LIFECYCLE_EVENTS for i in inner.records)
    )


def without_result_merges(ops: list[Operation], spans: Spans) -> list[Operation]:
    """``ops`` without the tool spans that only merge the results of parallel tool calls.

    When one response asks for several tools at once, some frameworks record, after the calls'
    own spans, one more tool span that gathers their results for the next model call: it holds no
    arguments and no result of its own, and starts as two or more tool spans beside it end. That is
    bookkeeping, not an operation."""
    tools = [op for op in ops if op.kind is StepKind.TOOL]
    if len(tools) < 3:
        return ops
    ended: list[tuple[int, int]] = []  # (end, position in ``tools``) of each tool, in that order
    merges = set()
    for op in tools:
        if not _holds_nothing(op, spans):
            continue
        if not ended:
            ended = sorted((spans[o.head].end_time_unix_nano, k) for k, o in enumerate(tools))
        if _gathers(spans[op.head], ended, tools, spans):
            merges.add(op.head)
    return [op for op in ops if op.head not in merges] if merges else ops


def _holds_nothing(op: Operation, spans: Spans) -> bool:
    """Whether an operation is one tool span, not failed, with no arguments and no result."""
    span = spans[op.head]
    if op.kind is not StepKind.TOOL or len(op.records) != 1 or span.status_code == STATUS_ERROR:
        return False
    step = spans.step(op.head, StepKind.TOOL)
    return step.inputs.get("arguments") in (None, {}, "") and step.output is None


def _gathers(
    span: SpanRecord, ended: list[tuple[int, int]], tools: list[Operation], spans: Spans
) -> bool:
    """Whether ``span`` starts as a group of two or more tool spans ends (calls run back to back:
    each starts within `_GATHERED_NS` of the previous end). ``ended`` is every tool's end and
    position, in order."""
    group, start = 0, span.start_time_unix_nano
    at = bisect.bisect_right(ended, (start, len(tools)))  # the tools that ended before it began
    while at > 0 and group < 2:
        at -= 1
        other = spans[tools[ended[at][1]].head]
        if start - other.end_time_unix_nano > _GATHERED_NS:
            break
        group, start = group + 1, other.start_time_unix_nano
    return group >= 2


#: Tool spans of one group run back to back: each starts within this long of the previous one's end
#: (far less than a model call between them takes), and so does the span gathering their results.
_GATHERED_NS = 20_000_000


def tools_by_result(
    spans: Spans, roles: Sequence[tuple[str, str]], kinds: dict[int, StepKind]
) -> dict[int, StepKind]:
    """A span no convention claims that holds a tool's result (a tool message naming the call it
    answers) for a call a model span in the trace asked for is that tool call: ``kinds`` with
    such spans added as tools. Frameworks that run tools inside a plain span record them so."""
    requested: set[str] | None = None
    found = dict(kinds)
    for i, span in enumerate(spans):
        if roles[i][0] != "span" or not any(key in span.attributes for key in RESULT_KEYS):
            continue
        call_id = tool_content(span)[1].get("tool_call_id")
        if not isinstance(call_id, str):
            continue
        if requested is None:
            requested = _requested_calls(spans, kinds)
        if call_id in requested:
            found[i] = StepKind.TOOL
    return found


#: Attributes that name the model a span called.
_MODEL_KEYS = ("ai.model.id", "gen_ai.request.model", "llm.model_name", "embedding.model_name")
#: Attributes only an embedding call's response sets: the vectors.
_EMBEDDING_KEYS = ("ai.embedding", "ai.embeddings", "embedding.embeddings")


def lone_model_calls(
    spans: Spans, roots: Sequence[int], roles: Sequence[tuple[str, str]]
) -> list[Operation]:
    """In a trace with no operation span, the top-level container spans that record a whole model
    call themselves (they name the model and hold its response: vectors for an embedding) are
    that call. A convention that wraps each call in a container around the request it sends
    (the call's own span) is otherwise read as structure, and the call lost when only the wrapper
    was exported."""
    found = []
    for i in roots:
        attrs = spans[i].attributes
        if roles[i][0] not in CONTAINER_ROLES or not any(key in attrs for key in _MODEL_KEYS):
            continue
        if any(key.startswith(_EMBEDDING_KEYS) for key in attrs):
            found.append(Operation(StepKind.EMBEDDING, [i], []))
        elif _answered(Operation(StepKind.LLM, [i], []), spans):
            found.append(Operation(StepKind.LLM, [i], []))
    return found


def _requested_calls(spans: Spans, kinds: dict[int, StepKind]) -> set[str]:
    """The ids of the tool calls the model spans of a trace asked for."""
    ids: set[str] = set()
    for i, kind in kinds.items():
        if kind is not StepKind.LLM:
            continue
        output = spans.step(i, kind).output
        for message in output if isinstance(output, list) else [output]:
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    ids.add(call["id"])
    return ids


def _same_operation(spans: Spans, outer: int, kind: StepKind, inner: Operation) -> bool:
    if inner.kind is not kind:
        return False
    if kind is not StepKind.TOOL:  # no need to read the content: only tools compare names
        return True
    return same_operation(spans.step(outer, kind), spans.step(inner.head, kind))


def same_operation(outer: Step, inner: Step) -> bool:
    """Whether an operation and the one operation inside it are the same call: the same kind, and
    for tools the same tool (an agent used as a tool that calls one tool is two operations)."""
    return outer.kind is inner.kind and (
        outer.kind is not StepKind.TOOL or outer.name == inner.name
    )


def _without_preparations(
    found: list[Operation], spans: Spans, parent: Sequence[int | None]
) -> list[Operation]:
    """Fold, among operations side by side under one parent, each llm operation without response
    evidence into the llm call after it, and an embedding straight before a retrieval (the query's
    encoding) into that retrieval."""
    siblings: dict[int | None, list[Operation]] = {}
    for op in found:
        siblings.setdefault(parent[op.head], []).append(op)
    folded: set[int] = set()
    for members in siblings.values():
        members.sort(key=lambda op: (spans[op.head].start_time_unix_nano, spans[op.head].order))
        llm_calls = [op for op in members if op.kind is StepKind.LLM]
        for current, following in itertools.pairwise(llm_calls):
            if (
                _prepares(current, spans)
                and _answered(following, spans)
                and _prepared_for(current, following, spans)
                and not _turn_shown(current, following, spans)
            ):
                following.parts.extend(current.spans())
                folded.add(current.head)
        for current, following in itertools.pairwise(members):
            if current.kind is StepKind.EMBEDDING and following.kind is StepKind.RETRIEVER:
                following.parts.extend(current.spans())
                folded.add(current.head)
    return [op for op in found if op.head not in folded]


def _prepares(op: Operation, spans: Spans) -> bool:
    """An llm operation that neither answered nor failed: the request being built."""
    return not _answered(op, spans) and all(
        spans[i].status_code != STATUS_ERROR for i in op.records
    )


def _prepared_for(current: Operation, following: Operation, spans: Spans) -> bool:
    """Whether the later call's input holds what the earlier span built (the messages of its input,
    else of its output); a span that shows no message is taken to build it, one whose messages the
    call was not sent built something else (it is a call of its own that kept no response)."""
    built = spans.step(current.head, StepKind.LLM)
    held = built.inputs.get("messages")
    if not isinstance(held, list) or not held:
        held = built.output if isinstance(built.output, list) else [built.output]
    said = [_said(m) for m in held if isinstance(m, dict) and "role" in m]
    if not said:
        return True
    sent = spans.step(following.head, StepKind.LLM).inputs.get("messages")
    shown = {_said(m) for m in sent if isinstance(m, dict)} if isinstance(sent, list) else set()
    return all(message in shown for message in said)


def _said(message: dict[str, Any]) -> tuple[str, str]:
    """A message as who said what, to find it in another call's input."""
    return str(message.get("role")), message_text(message.get("content"))


def _turn_shown(current: Operation, following: Operation, spans: Spans) -> bool:
    """Whether the later call's input shows a model turn right after the earlier one's input: the
    earlier span is a call whose span kept no response (its turn is that one), not a preparation."""
    asked = spans.step(current.head, StepKind.LLM).inputs.get("messages")
    later = spans.step(following.head, StepKind.LLM).inputs.get("messages")
    if not isinstance(asked, list) or not isinstance(later, list) or not asked:
        return False
    if len(later) <= len(asked) or later[: len(asked)] != asked:
        return False
    turn = later[len(asked)]
    return isinstance(turn, dict) and turn.get("role") in ("assistant", "model")


def _answered(op: Operation, spans: Spans) -> bool:
    """Whether a span recording an llm operation carries evidence of a model's response (where a
    vocabulary keeps one: `_RESPONSE_KEYS`, `_RESPONSE_PREFIXES`, `_RESPONSE_EVENTS`)."""
    for i in op.records:
        attrs = spans[i].attributes
        # exact keys first: a span resending a long history has hundreds of attributes
        if not _RESPONSE_KEYS.isdisjoint(attrs):
            return True
        if any(key.startswith(_RESPONSE_PREFIXES) for key in attrs):
            return True
        if any(e.name in _RESPONSE_EVENTS for e in spans[i].events):
            return True
    return False


def build_operation(spans: Spans, op: Operation) -> tuple[Step, int]:
    """The step of one operation and the span it was read from: the richest of the steps its
    recording spans give (the naming span's when they tie); a failure any of them recorded fails it.
    """
    candidates = [(spans.step(i, op.kind), i) for i in op.records]
    step, source = max(candidates, key=lambda candidate: richness(candidate[0]))
    if op.kind is StepKind.RETRIEVER and "query" not in step.inputs:
        step = _with_query(step, [spans.step(i, StepKind.EMBEDDING) for i in op.parts])
    if step.status is StepStatus.OK:
        failed = next((c for c, _ in candidates if c.status is StepStatus.ERROR), None)
        if failed is not None:
            step = step.with_result(step.output, StepStatus.ERROR, failed.error)
    return step, source


def _with_query(step: Step, encodings: list[Step]) -> Step:
    """A retrieval whose span lost its query (a vector in its place) takes it from the embedding
    that encoded it."""
    for encoding in encodings:
        texts = encoding.inputs.get("texts")
        if isinstance(texts, list) and len(texts) == 1 and isinstance(texts[0], str):
            inputs = {"query": texts[0], **step.inputs}
            return dataclasses.replace(step, inputs=inputs)
    return step


def richness(step: Step) -> tuple[bool, int, int]:
    """How much of the operation a step holds: an output, input messages, then input size."""
    messages = step.inputs.get("messages")
    return (
        step.output is not None,
        len(messages) if isinstance(messages, list) else 0,
        len(step.inputs),
    )
