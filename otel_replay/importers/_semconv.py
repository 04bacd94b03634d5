"""Semantic conventions → what a span is, and the step it becomes.

`recognise` names a span's role by the first convention that claims it (FORMATS.md §6 order:
OpenInference, Langfuse, LangSmith, OTel GenAI, OpenLLMetry/Traceloop, Vercel AI SDK, Pydantic AI names,
attribute heuristics). Roles are step kinds (``llm``, ``tool``, ...), containers (``agent``, ``chain``) or
``span`` (unrecognised plumbing). `build_step` then reads the step's content from the *richest* source
present, whichever convention wrote it: structured messages beat raw ``input.value`` text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_replay.importers._content import llm_content, other_content, tool_content
from otel_replay.importers._spans import STATUS_ERROR, SpanRecord
from otel_replay.model import Step, StepKind, StepStatus

CONTAINER_ROLES = frozenset({"agent", "chain"})
#: roles that are steps (``other`` only where a span says so: `_by_agent_replay`)
STEP_KINDS = {k.value: k for k in StepKind}
#: what agent-replay's own spans say of an ``other`` step (`otel_replay.replay._tracing` writes it)
AGENT_REPLAY_KIND = "agent_replay.step.kind"
AGENT_REPLAY_NAME = "agent_replay.step.name"

_OPENINFERENCE = {
    "llm": "llm",
    "tool": "tool",
    "retriever": "retriever",
    "reranker": "reranker",
    "embedding": "embedding",
    "guardrail": "guardrail",
    "agent": "agent",
}
_LANGFUSE = {
    "generation": "llm",
    "tool": "tool",
    "retriever": "retriever",
    "embedding": "embedding",
    "guardrail": "guardrail",
    "agent": "agent",
}
_LANGSMITH = {"llm": "llm", "tool": "tool", "retriever": "retriever", "embedding": "embedding"}
_GENAI = {
    "chat": "llm",
    "call_llm": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "completion": "llm",
    "realtime_inference": "llm",
    "embeddings": "embedding",
    "retrieval": "retriever",
    "search_memory": "retriever",
    "vector_db_retrieve": "retriever",  # OpenLLMetry's retrieval tasks
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
}
_TRACELOOP = {"tool": "tool", "agent": "agent"}
_REQUEST_TYPES = {
    "chat": "llm",
    "completion": "llm",
    "embedding": "embedding",
    "rerank": "reranker",
}

Recogniser = Callable[[dict[str, Any], str], "str | None"]


def _by_agent_replay(attrs: dict[str, Any], name: str) -> str | None:
    """A step agent-replay recorded as ``other`` (a clock read, ``ctx.step("other", ...)``),
    which its span also calls an OpenInference ``CHAIN``."""
    return "other" if attrs.get(AGENT_REPLAY_KIND) == StepKind.OTHER.value else None


def _by_openinference(attrs: dict[str, Any], name: str) -> str | None:
    kind = attrs.get("openinference.span.kind")
    if not isinstance(kind, str):
        return None
    return _OPENINFERENCE.get(kind.lower(), "chain")


def _by_langfuse(attrs: dict[str, Any], name: str) -> str | None:
    kind = attrs.get("langfuse.observation.type")
    return _LANGFUSE.get(kind.lower(), "chain") if isinstance(kind, str) else None


def _by_langsmith(attrs: dict[str, Any], name: str) -> str | None:
    kind = attrs.get("langsmith.span.kind")
    return _LANGSMITH.get(kind.lower(), "chain") if isinstance(kind, str) else None


def _by_genai(attrs: dict[str, Any], name: str) -> str | None:
    operation = attrs.get("gen_ai.operation.name")
    return _GENAI.get(operation.lower(), "chain") if isinstance(operation, str) else None


def _by_traceloop(attrs: dict[str, Any], name: str) -> str | None:
    request_type = attrs.get("llm.request.type")
    if isinstance(request_type, str):
        return _REQUEST_TYPES.get(request_type.lower(), "llm")
    kind = attrs.get("traceloop.span.kind")
    return _TRACELOOP.get(kind.lower(), "chain") if isinstance(kind, str) else None


def _by_vercel(attrs: dict[str, Any], name: str) -> str | None:
    operation = attrs.get("ai.operationId")
    if not isinstance(operation, str):
        return None
    if operation == "ai.toolCall":
        return "tool"
    if ".doEmbed" in operation:
        return "embedding"
    if ".do" in operation:
        return "llm"
    return "agent"


def _by_span_name(attrs: dict[str, Any], name: str) -> str | None:
    if name == "running tool":
        return "tool"
    if name in ("agent run", "running tools"):
        return "agent" if name == "agent run" else "chain"
    return None


def _by_heuristics(attrs: dict[str, Any], name: str) -> str | None:
    if any(k in attrs for k in ("gen_ai.tool.name", "tool.name", "gen_ai.tool.call.id")):
        return "tool"
    if any(
        k in attrs
        for k in (
            "gen_ai.request.model",
            "gen_ai.input.messages",
            "llm.model_name",
            "gen_ai.prompt",
        )
    ) or any(k.startswith(("gen_ai.prompt.", "llm.input_messages.")) for k in attrs):
        return "llm"
    return None


_RECOGNISERS: tuple[tuple[str, Recogniser], ...] = (
    ("agent-replay", _by_agent_replay),
    ("openinference", _by_openinference),
    ("langfuse", _by_langfuse),
    ("langsmith", _by_langsmith),
    ("genai", _by_genai),
    ("traceloop", _by_traceloop),
    ("vercel", _by_vercel),
    ("pydantic-ai", _by_span_name),
    ("heuristic", _by_heuristics),
)


def recognise(span: SpanRecord) -> tuple[str, str]:
    """Return ``(role, convention)`` for a span; ``("span", "")`` when no convention claims it."""
    attrs = span.attributes
    for convention, recogniser in _RECOGNISERS:
        role = recogniser(attrs, span.name)
        if role is not None:
            return role, convention
    return "span", ""


def is_placeholder(span: SpanRecord) -> bool:
    """Logfire's pending-span placeholders duplicate the real span; they are never steps."""
    return span.attributes.get("logfire.span_type") == "pending_span"


def build_step(span: SpanRecord, kind: StepKind) -> Step:
    """The step a recognised operation span (or, for plain traces, a leaf span) becomes."""
    reported: str | None = None
    if kind is StepKind.LLM:
        name, inputs, output = llm_content(span)
    elif kind is StepKind.TOOL:
        name, inputs, output, reported = tool_content(span)
    else:
        name, inputs, output = other_content(span, kind)
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


def step_status(span: SpanRecord) -> tuple[StepStatus, str | None]:
    """ERROR status, ``error.type`` or Langfuse's ERROR level fail a step; an ``exception`` event
    only when it escaped (handled exceptions are recorded too). The message comes from the status,
    else the exception event."""
    attrs = span.attributes
    exception = next((e for e in span.events if e.name == "exception"), None)
    failed = (
        span.status_code == STATUS_ERROR
        or "error.type" in attrs
        or str(attrs.get("langfuse.observation.level", "")).upper() == "ERROR"
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
        message = attrs.get("langfuse.observation.status_message") or attrs.get("error.type")
    return StepStatus.ERROR, None if message is None else _without_traceback(str(message))


def _without_traceback(message: str) -> str:
    """An error message without the Python traceback some instrumentations append to it."""
    head, marker, _ = message.partition("Traceback (most recent call last)")
    return head.rstrip() or message if marker else message
