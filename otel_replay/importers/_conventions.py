"""The one table of span vocabularies: how each semantic convention says what a span is, and where it
keeps a step's parts.

Each `Vocabulary` row is data. Its ``role`` rule names a span's role (a step kind such as ``llm`` or
``tool``, a container ``agent`` or ``chain``) from one attribute (or the span's name); its parts
(`Part`) list, in its own order of preference, the attributes that hold a step's name, model, tool
call id, arguments, result, raw input and output, messages, token counts and error. Supporting a
new vocabulary is a new row here: `otel_replay.importers._semconv` recognises spans by walking the
rows, `otel_replay.importers._content` and `otel_replay.importers._usage` read a part through
`sources`, and the docs' "From spans to steps" table is made from the rows (`markdown_table`,
checked by ``tests/importers/test_conventions.py``).

How a part is read: the row that recognised the span is asked first, then every row in table order,
so a span that mixes vocabularies (an OpenLLMetry span carrying OTel GenAI keys) reads its own
vocabulary's keys first and the others after. For messages a structured source (a flattened list
``llm.input_messages.*``, a JSON message list, message events) beats raw text, whichever row holds
it: all rows' structured sources are asked before any row's raw ones.

A source is an attribute key, written with a suffix that says how it is read:

* ``key``: the attribute's value (JSON text is decoded where a JSON value is expected; a
  ``*.value`` key honours its sibling ``*.mime_type``, as OpenInference writes them);
* ``prefix.*``: a list flattened into indexed keys (``llm.input_messages.0.message.role``);
* ``event NAME: key``: an attribute of the span's first event named NAME;
* ``key (READER)``: a value one named reader of `otel_replay.importers._content` shapes first
  (the Vercel AI SDK's prompt object, for instance).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal, get_args

#: The parts of a step a vocabulary can say where it keeps.
Part = Literal[
    "model",
    "tool_name",
    "step_name",
    "tool_call_id",
    "arguments",
    "result",
    "input",
    "output",
    "input_messages",
    "output_messages",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "error_message",
]
PARTS: tuple[Part, ...] = get_args(Part)
#: Parts whose sources are messages: structured sources are asked before raw ones across rows.
MESSAGE_PARTS = frozenset({"input_messages", "output_messages"})
#: A role rule's key that means the span's name rather than an attribute.
SPAN_NAME = "(span name)"


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """One semantic convention.

    ``kind_key`` is the attribute whose value names the span's role (`SPAN_NAME`: the span's name;
    empty: the row names no role by a value, only by ``marks``). ``roles`` maps that value, lower
    case, to a role, in order; a pattern with ``*`` matches as a shell pattern. A value no pattern
    matches gets ``otherwise`` (None: the row does not claim the span). ``marks`` name a role by
    the presence of a key (``prefix.*``: of any key under it), for spans that carry a
    vocabulary's keys without its kind. ``failed`` lists ``(key, value)`` pairs that fail a step
    (value None: the key's presence). ``parts`` says where each part lives.
    """

    name: str
    title: str
    kind_key: str = ""
    roles: tuple[tuple[str, str], ...] = ()
    otherwise: str | None = "chain"
    marks: tuple[tuple[str, str], ...] = ()
    failed: tuple[tuple[str, str | None], ...] = ()
    parts: Mapping[Part, tuple[str, ...]] = field(default_factory=dict)

    def role(self, attributes: Mapping[str, Any], span_name: str) -> str | None:
        """The role this vocabulary gives a span, or None when it does not claim it."""
        if self.kind_key:
            value = span_name if self.kind_key == SPAN_NAME else attributes.get(self.kind_key)
            if isinstance(value, str):
                said = value.lower()
                for pattern, role in self.roles:
                    if said == pattern or ("*" in pattern and fnmatchcase(said, pattern)):
                        return role
                return self.otherwise
        for key, role in self.marks:
            if key.endswith(".*"):
                prefix = key[:-1]
                if any(k.startswith(prefix) for k in attributes):
                    return role
            elif key in attributes:
                return role
        return None

    def fails(self, attributes: Mapping[str, Any]) -> bool:
        """Whether a span's attributes say its operation failed, in this vocabulary."""
        for key, value in self.failed:
            if key not in attributes:
                continue
            if value is None or str(attributes[key]).upper() == value:
                return True
        return False


_STEP_ROLES = (
    ("llm", "llm"),
    ("tool", "tool"),
    ("retriever", "retriever"),
    ("reranker", "reranker"),
    ("embedding", "embedding"),
    ("guardrail", "guardrail"),
    ("agent", "agent"),
)
#: Datadog's LLM span kinds (``workflow``, ``task``: any other, a container).
_DATADOG_ROLES = (
    ("llm", "llm"),
    ("tool", "tool"),
    ("retrieval", "retriever"),
    ("embedding", "embedding"),
    ("agent", "agent"),
)

#: In order: the first row whose role rule claims a span names its role.
VOCABULARIES: tuple[Vocabulary, ...] = (
    Vocabulary(
        "agent-replay",
        "agent-replay's own spans",
        kind_key="agent_replay.step.kind",
        roles=(("other", "other"),),
        otherwise=None,
        parts={"step_name": ("agent_replay.step.name",)},
    ),
    Vocabulary(
        "openinference",
        "OpenInference",
        kind_key="openinference.span.kind",
        roles=_STEP_ROLES,
        parts={
            "model": ("llm.model_name", "embedding.model_name", "reranker.model_name"),
            "tool_name": ("tool.name",),
            "tool_call_id": ("tool.id", "tool_call.id"),
            "arguments": ("input.value",),
            "result": ("output.value",),
            "input": ("input.value",),
            "output": ("output.value",),
            "input_messages": ("llm.input_messages.*", "input.value"),
            "output_messages": ("llm.output_messages.*", "output.value"),
            "input_tokens": ("llm.token_count.prompt",),
            "output_tokens": ("llm.token_count.completion",),
            "total_tokens": ("llm.token_count.total",),
        },
    ),
    Vocabulary(
        "langfuse",
        "Langfuse",
        kind_key="langfuse.observation.type",
        roles=(
            ("generation", "llm"),
            ("tool", "tool"),
            ("retriever", "retriever"),
            ("embedding", "embedding"),
            ("guardrail", "guardrail"),
            ("agent", "agent"),
        ),
        failed=(("langfuse.observation.level", "ERROR"),),
        parts={
            "model": ("langfuse.observation.model.name",),
            "arguments": ("langfuse.observation.input",),
            "result": ("langfuse.observation.output",),
            "input": ("langfuse.observation.input",),
            "output": ("langfuse.observation.output",),
            "input_messages": ("langfuse.observation.input",),
            "output_messages": ("langfuse.observation.output",),
            "input_tokens": ("langfuse.observation.usage_details (usage: input)",),
            "output_tokens": ("langfuse.observation.usage_details (usage: output)",),
            "total_tokens": ("langfuse.observation.usage_details (usage: total)",),
            "error_message": ("langfuse.observation.status_message",),
        },
    ),
    Vocabulary(
        "mlflow",
        "MLflow tracing",
        kind_key="mlflow.spanType",
        roles=(
            ("llm", "llm"),
            ("chat_model", "llm"),
            ("tool", "tool"),
            ("retriever", "retriever"),
            ("reranker", "reranker"),
            ("embedding", "embedding"),
            ("guardrail", "guardrail"),
            ("agent", "agent"),
            ("chain", "chain"),
            ("parser", "chain"),
            ("memory", "chain"),
            ("workflow", "chain"),
            ("task", "chain"),
            ("evaluator", "chain"),
        ),
        otherwise=None,  # UNKNOWN: a function traced without a type says nothing of its role
        parts={
            "model": ("mlflow.llm.model",),
            "arguments": ("mlflow.spanInputs",),
            "result": ("mlflow.spanOutputs",),
            "input": ("mlflow.spanInputs",),
            "output": ("mlflow.spanOutputs",),
            "input_messages": ("mlflow.spanInputs",),
            "output_messages": ("mlflow.spanOutputs",),
            "input_tokens": ("mlflow.chat.tokenUsage (usage: input_tokens)",),
            "output_tokens": ("mlflow.chat.tokenUsage (usage: output_tokens)",),
            "total_tokens": ("mlflow.chat.tokenUsage (usage: total_tokens)",),
        },
    ),
    Vocabulary(
        "langsmith",
        "LangSmith",
        kind_key="langsmith.span.kind",
        roles=(
            ("llm", "llm"),
            ("tool", "tool"),
            ("retriever", "retriever"),
            ("embedding", "embedding"),
            ("prompt", "chain"),
            ("parser", "chain"),
        ),
        parts={
            "model": ("langsmith.metadata.ls_model_name", "gen_ai.request.model"),
            "tool_name": ("gen_ai.tool.name",),
            "tool_call_id": ("gen_ai.tool.call.id",),
            "arguments": ("gen_ai.prompt",),
            "result": ("gen_ai.completion (langsmith outputs)",),
            "input": ("gen_ai.prompt",),
            "input_messages": ("gen_ai.prompt",),
            "output_messages": ("gen_ai.completion",),
            "input_tokens": ("gen_ai.usage.input_tokens",),
            "output_tokens": ("gen_ai.usage.output_tokens",),
        },
    ),
    Vocabulary(
        "datadog",
        "Datadog LLM Observability",
        kind_key="datadog.llmobs.span.kind",
        roles=_DATADOG_ROLES,
        failed=(("datadog.llmobs.error.type", None),),
        parts={
            "model": ("datadog.llmobs.model_name",),
            "tool_name": ("datadog.llmobs.name",),
            "arguments": ("datadog.llmobs.input.value",),
            "result": ("datadog.llmobs.output.value",),
            "input": ("datadog.llmobs.input.value", "datadog.llmobs.input.documents"),
            "output": ("datadog.llmobs.output.value", "datadog.llmobs.output.documents"),
            "input_messages": (
                "datadog.llmobs.input.messages (messages)",
                "datadog.llmobs.input.value",
            ),
            "output_messages": (
                "datadog.llmobs.output.messages (messages)",
                "datadog.llmobs.output.value",
            ),
            "input_tokens": ("datadog.llmobs.metrics.input_tokens",),
            "output_tokens": ("datadog.llmobs.metrics.output_tokens",),
            "total_tokens": ("datadog.llmobs.metrics.total_tokens",),
            "error_message": ("datadog.llmobs.error.message",),
        },
    ),
    Vocabulary(
        "datadog-apm",
        "Datadog APM (ddtrace's LLM integrations)",
        kind_key="_dd.llmobs.span_kind",
        roles=_DATADOG_ROLES,
        parts={
            "model": (
                "openai.request.model",
                "anthropic.request.model",
                "_dd.llmobs.model_name",
                "openai.response.model",
            ),
            "input_tokens": ("_dd.llmobs.input_tokens",),
            "output_tokens": ("_dd.llmobs.output_tokens",),
            "total_tokens": ("_dd.llmobs.total_tokens",),
            "error_message": ("error.message",),
        },
    ),
    Vocabulary(
        "genai",
        "OTel GenAI",
        kind_key="gen_ai.operation.name",
        roles=(
            ("chat", "llm"),
            ("call_llm", "llm"),
            ("text_completion", "llm"),
            ("generate_content", "llm"),
            ("completion", "llm"),
            ("realtime_inference", "llm"),
            ("embeddings", "embedding"),
            ("retrieval", "retriever"),
            ("search_memory", "retriever"),
            ("vector_db_retrieve", "retriever"),  # OpenLLMetry's retrieval tasks
            ("execute_tool", "tool"),
            ("invoke_agent", "agent"),
            ("create_agent", "agent"),
        ),
        failed=(("error.type", None),),
        parts={
            "model": ("gen_ai.request.model", "gen_ai.response.model"),
            "tool_name": ("gen_ai.tool.name",),
            "tool_call_id": ("gen_ai.tool.call.id",),
            "arguments": ("gen_ai.tool.call.arguments", "gen_ai.tool.args"),
            "input": ("gen_ai.prompt",),
            "result": ("gen_ai.tool.call.result", "gen_ai.output"),
            "input_messages": (
                "gen_ai.prompt.*",
                "gen_ai.input.messages (genai messages)",
                "gen_ai.prompt",
                "event gen_ai.content.prompt: gen_ai.prompt",
                "(messages events)",
            ),
            "output_messages": (
                "gen_ai.completion.*",
                "gen_ai.output.messages (messages)",
                "(choice events)",
                "gen_ai.completion",
                "event gen_ai.content.completion: gen_ai.completion",
                "gen_ai.output",
            ),
            "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
            "total_tokens": ("gen_ai.usage.total_tokens",),
            "error_message": ("error.type",),
        },
    ),
    Vocabulary(
        "openllmetry",
        "OpenLLMetry (model calls)",
        kind_key="llm.request.type",
        roles=(
            ("chat", "llm"),
            ("completion", "llm"),
            ("embedding", "embedding"),
            ("rerank", "reranker"),
        ),
        otherwise="llm",
        parts={
            "model": ("llm.request.model",),
            "input_messages": ("llm.prompts.*",),
            "output_messages": ("llm.completions.*",),
            "input_tokens": ("llm.usage.prompt_tokens",),
            "output_tokens": ("llm.usage.completion_tokens",),
            "total_tokens": ("llm.usage.total_tokens",),
        },
    ),
    Vocabulary(
        "traceloop",
        "OpenLLMetry (Traceloop spans)",
        kind_key="traceloop.span.kind",
        roles=(("tool", "tool"), ("agent", "agent")),
        parts={
            "tool_name": ("traceloop.entity.name",),
            "arguments": ("traceloop.entity.input",),
            "result": ("traceloop.entity.output",),
            "input": ("traceloop.entity.input", "gen_ai.task.input"),
            "output": ("traceloop.entity.output", "gen_ai.task.output"),
            "input_messages": ("traceloop.entity.input",),
            "output_messages": ("traceloop.entity.output",),
        },
    ),
    Vocabulary(
        "vercel",
        "Vercel AI SDK",
        kind_key="ai.operationId",
        roles=(("ai.toolcall", "tool"), ("*.doembed*", "embedding"), ("*.do*", "llm")),
        otherwise="agent",
        parts={
            "model": ("ai.model.id",),
            "tool_name": ("ai.toolCall.name",),
            "tool_call_id": ("ai.toolCall.id",),
            "arguments": ("ai.toolCall.args",),
            "result": ("ai.toolCall.result",),
            "input_messages": ("ai.prompt.messages", "ai.prompt (vercel prompt)"),
            "output_messages": ("ai.response.* (vercel response)",),
            "input_tokens": ("ai.usage.inputTokens", "ai.usage.promptTokens"),
            "output_tokens": ("ai.usage.outputTokens", "ai.usage.completionTokens"),
            "total_tokens": ("ai.usage.totalTokens",),
        },
    ),
    Vocabulary(
        "pydantic-ai",
        "Pydantic AI (span names)",
        kind_key=SPAN_NAME,
        roles=(("running tool", "tool"), ("agent run", "agent"), ("running tools", "chain")),
        otherwise=None,
        parts={"arguments": ("tool_arguments",), "result": ("tool_response",)},
    ),
    Vocabulary(
        "heuristic",
        "any span with these keys",
        otherwise=None,
        marks=(
            ("gen_ai.tool.name", "tool"),
            ("tool.name", "tool"),
            ("gen_ai.tool.call.id", "tool"),
            ("gen_ai.request.model", "llm"),
            ("gen_ai.input.messages", "llm"),
            ("llm.model_name", "llm"),
            ("gen_ai.prompt", "llm"),
            ("gen_ai.prompt.*", "llm"),
            ("llm.input_messages.*", "llm"),
        ),
        parts={"arguments": ("input",), "result": ("output",)},
    ),
)

BY_NAME: Mapping[str, Vocabulary] = {row.name: row for row in VOCABULARIES}


def recognised(attributes: Mapping[str, Any], span_name: str) -> tuple[str, str] | None:
    """``(role, vocabulary name)`` of the first row that claims a span, or None."""
    for row in VOCABULARIES:
        role = row.role(attributes, span_name)
        if role is not None:
            return role, row.name
    return None


def is_structured(source: str) -> bool:
    """A message source that holds messages as messages (a flattened list, a message list, message
    events, a response object), not a raw input or output value."""
    return source.endswith((".*", "messages)", "events)", "response)"))


def sources(part: Part, first: str = "") -> Iterator[str]:
    """Where ``part`` may be, in the order it is looked for: the row named ``first`` (the span's
    own vocabulary) and then every row in table order; for messages, every structured source
    before any raw one. A source met twice is given once."""
    own = BY_NAME.get(first)
    rows = [own] if own is not None and own.kind_key else []  # keys alone are a last resort
    rows += [row for row in VOCABULARIES if row is not own or not rows]
    seen: set[str] = set()
    tiers = (True, False) if part in MESSAGE_PARTS else (None,)
    for tier in tiers:
        for row in rows:
            for source in row.parts.get(part, ()):
                if source in seen or (tier is not None and is_structured(source) != tier):
                    continue
                seen.add(source)
                yield source


def split_source(source: str) -> tuple[str, str]:
    """A source's key and the reader it names, with its closing parenthesis (``key (reader)``, or
    ``(reader)`` alone with no key); the reader is empty for a plain key."""
    if source.startswith("("):
        return "", source[1:]
    key, _, reader = source.partition(" (")
    return key, reader


def fails(attributes: Mapping[str, Any]) -> bool:
    """Whether any vocabulary says a span's operation failed."""
    return any(row.fails(attributes) for row in VOCABULARIES)


def markdown_table() -> str:
    """The table of vocabularies as Markdown, for the docs' "From spans to steps"."""
    lines = [
        "| vocabulary | role from | roles | name, model | tool call id, arguments, result "
        "| input, output, messages | tokens | failed when |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in VOCABULARIES:
        if row.kind_key:
            said = "the span's name" if row.kind_key == SPAN_NAME else f"`{row.kind_key}`"
            roles = ", ".join(f"`{value}` → {role}" for value, role in row.roles)
            if row.otherwise:
                roles += f"; any other → {row.otherwise}"
        else:
            said = "keys present"
            roles = ", ".join(f"`{key}` → {role}" for key, role in row.marks)
        failed = ", ".join(
            f"`{key}`" + ("" if value is None else f" = {value}") for key, value in row.failed
        )
        cells = [
            row.title,
            said,
            roles,
            _keys(row, "step_name", "tool_name", "model"),
            _keys(row, "tool_call_id", "arguments", "result"),
            _keys(row, "input", "output", "input_messages", "output_messages"),
            _keys(row, "input_tokens", "output_tokens", "total_tokens"),
            failed or "·",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _keys(row: Vocabulary, *parts: Part) -> str:
    found: list[str] = []
    for part in parts:
        for source in row.parts.get(part, ()):
            if source not in found:
                found.append(source)
    return ", ".join(f"`{source}`" for source in found) or "·"
