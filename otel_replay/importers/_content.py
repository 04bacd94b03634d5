"""What goes into a step's ``name``, ``inputs`` and ``output``, read from the richest source present.

LLM steps: ``inputs = {"model", "messages", "parameters", "tools"}`` and ``output`` = the output message
(a list when there are several choices); a tool's result in ``messages`` is in
`otel_replay.messages.tool_message`'s shape (its content the text the model was sent). Tool steps:
``inputs = {"arguments", "tool_call_id"}`` and the parsed result. Retrieval, embedding, reranker and guardrail steps: ``{"input": ...}`` plus their
documents. Plain spans (``other``): their attributes. Absent keys are omitted, never ``null``.
"""

from __future__ import annotations

from typing import Any

from otel_replay.importers._conventions import Part, sources, split_source
from otel_replay.importers._messages import flattened_messages, normalize_messages, unflatten
from otel_replay.importers._replies import (
    REQUEST_PARAMETERS,
    one_or_many,
    reply_of,
    sdk_request,
)
from otel_replay.importers._spans import SpanRecord, is_json_mime, maybe_json
from otel_replay.messages import conversation, shaped_results
from otel_replay.model import StepKind

_MISSING: Any = object()


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return _MISSING


def _io_value(attrs: dict[str, Any], which: str) -> Any:
    """OpenInference ``input.value``/``output.value``, decoded when the mime type (or the text) is JSON."""
    value = attrs.get(f"{which}.value")
    if value is None:
        return _MISSING
    mime = attrs.get(f"{which}.mime_type")
    if mime is not None and not is_json_mime(mime):
        return value
    return maybe_json(value)


def _event_attribute(span: SpanRecord, event_name: str, key: str) -> Any:
    for event in span.events:
        if event.name == event_name and key in event.attributes:
            return event.attributes[key]
    return _MISSING


# --- LLM -------------------------------------------------------------------------------------------


def _read(span: SpanRecord, part: Part, vocabulary: str) -> Any:
    """The first value a span holds for a part (see `otel_replay.importers._conventions`), or
    `_MISSING`."""
    for source in sources(part, vocabulary):
        value = _source_value(span, source)
        if value is not _MISSING:
            return value
    return _MISSING


def _source_value(span: SpanRecord, source: str) -> Any:
    """What one plain source holds: an attribute (a ``*.value`` decoded by its mime type), or an
    attribute of an event (``event NAME: key``)."""
    if source.startswith("event "):
        name, _, key = source[len("event ") :].partition(": ")
        return _event_attribute(span, name, key)
    key, reader = split_source(source)
    if key.endswith(".value"):
        return _io_value(span.attributes, key[: -len(".value")])
    value = _first(span.attributes, key)
    if reader == "langsmith outputs)" and value is not _MISSING:
        value = _unwrapped_outputs(maybe_json(value))
    return value


def _unwrapped_outputs(outputs: Any) -> Any:
    """LangSmith's outputs object: a value that is not an object is kept as ``{"output": value}``
    (by its SDK, and so in its OpenTelemetry export); that value."""
    if isinstance(outputs, dict) and set(outputs) == {"output"}:
        return outputs["output"]
    return outputs


def _input_messages(span: SpanRecord, vocabulary: str = "") -> list[dict[str, Any]]:
    attrs = span.attributes
    for source in sources("input_messages", vocabulary):
        key, reader = split_source(source)
        if source.endswith(".*"):
            messages = flattened_messages(attrs, key[: -len(".*")])
        elif reader == "messages events)":
            messages = _event_messages(span)
        elif reader == "genai messages)":
            messages = _genai_messages(attrs, key)
        elif reader == "vercel prompt)":
            messages = normalize_messages(_vercel_prompt(attrs.get(key)))
        else:
            raw = _source_value(span, source)
            messages = [] if raw is _MISSING else normalize_messages(raw)
        if messages:
            return messages
    return []


def _genai_messages(attrs: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """OTel GenAI's input messages, its system instructions (kept apart) first."""
    messages = normalize_messages(attrs.get(key))
    system = maybe_json(attrs.get("gen_ai.system_instructions")) if messages else None
    if system:
        parts = system if isinstance(system, list) else [system]
        messages.insert(0, *normalize_messages([{"role": "system", "parts": parts}]))
    return messages


def _vercel_prompt(raw: Any) -> Any:
    """The Vercel AI SDK's call-level prompt, ``{"system", "prompt"}`` or ``{"system", "messages"}``,
    as messages (the system text first, a bare prompt as the user's message)."""
    prompt = maybe_json(raw)
    if not isinstance(prompt, dict):
        return prompt
    messages: list[Any] = []
    if isinstance(prompt.get("system"), str):
        messages.append({"role": "system", "content": prompt["system"]})
    if isinstance(prompt.get("messages"), list):
        messages.extend(prompt["messages"])
    elif isinstance(prompt.get("prompt"), str):
        messages.append({"role": "user", "content": prompt["prompt"]})
    elif isinstance(prompt.get("prompt"), list):
        messages.extend(prompt["prompt"])
    return messages or None


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_messages(span: SpanRecord) -> list[dict[str, Any]]:
    """GenAI v1.28–v1.36 message events routed onto the span as span events."""
    raw: list[dict[str, Any]] = []
    for event in span.events:
        role = _EVENT_ROLES.get(event.name)
        if role is None:
            continue
        body = dict(event.attributes)
        body.setdefault("role", role)
        if role == "tool" and "id" in body:
            body.setdefault("tool_call_id", body["id"])
        raw.append(body)
    return normalize_messages(raw)


def _output_messages(span: SpanRecord, vocabulary: str = "") -> Any:
    attrs = span.attributes
    for source in sources("output_messages", vocabulary):
        key, reader = split_source(source)
        if source.endswith(".*"):
            messages = flattened_messages(attrs, key[: -len(".*")])
        elif reader == "messages)":
            messages = normalize_messages(attrs.get(key))
        elif reader == "choice events)":
            messages = _choice_messages(span)
        elif reader == "vercel response)":
            if any(k in attrs for k in _VERCEL_RESPONSE):
                return _vercel_output(attrs)
            continue
        else:
            raw = _source_value(span, source)
            if raw is not _MISSING:
                return reply_of(maybe_json(raw))
            continue
        if messages:
            return one_or_many(messages)
    return None


_VERCEL_RESPONSE = ("ai.response.text", "ai.response.toolCalls", "ai.response.object")


def _choice_messages(span: SpanRecord) -> list[dict[str, Any]]:
    """OTel GenAI's ``gen_ai.choice`` events, one message each."""
    choices = [e.attributes for e in span.events if e.name == "gen_ai.choice"]
    return normalize_messages(
        [dict(c.get("message", c), finish_reason=c.get("finish_reason")) for c in choices]
    )


def _vercel_output(attrs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    if attrs.get("ai.response.text"):
        out["content"] = attrs["ai.response.text"]
    elif isinstance(attrs.get("ai.response.object"), str):  # generateObject: the object's JSON
        out["content"] = attrs["ai.response.object"]
    calls = maybe_json(attrs.get("ai.response.toolCalls"))
    if isinstance(calls, list) and calls:
        out["tool_calls"] = normalize_messages([{"tool_calls": calls}])[0].get("tool_calls", [])
    reason = attrs.get("ai.response.finishReason")
    if isinstance(reason, str):
        out["finish_reason"] = reason
    return out


_PARAMETER_KEYS = (
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "choice.count",
)


def _parameters(attrs: dict[str, Any]) -> dict[str, Any]:
    params = maybe_json(attrs.get("llm.invocation_parameters"))
    if isinstance(params, dict):
        return params
    found = {
        key: attrs[f"gen_ai.request.{key}"]
        for key in _PARAMETER_KEYS
        if f"gen_ai.request.{key}" in attrs
    }
    if not found:
        found = {
            key[len("ai.settings.") :]: v
            for key, v in attrs.items()
            if key.startswith("ai.settings.")
        }
    if not found:  # the Langfuse SDK's record of them (its callback handlers keep only this)
        given = maybe_json(attrs.get("langfuse.observation.model_parameters"))
        if isinstance(given, dict):
            found = {key: value for key, value in given.items() if value is not None}
    return found


def _flat_tool(tool: Any) -> Any:
    """OpenAI nests a tool's definition under ``function``; GenAI writes it flat. Store it flat."""
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        return {**{k: v for k, v in tool.items() if k != "function"}, **tool["function"]}
    return tool


def _tools(attrs: dict[str, Any]) -> list[Any]:
    return [_flat_tool(t) for t in _tool_definitions(attrs)]


def _tool_definitions(attrs: dict[str, Any]) -> list[Any]:
    tools = [
        maybe_json(t.get("tool", {}).get("json_schema"))
        for t in unflatten(attrs, "llm.tools")
        if isinstance(t, dict)
    ]
    if tools:
        return tools
    definitions = maybe_json(attrs.get("gen_ai.tool.definitions"))
    if isinstance(definitions, list):
        return definitions
    functions = unflatten(attrs, "llm.request.functions")
    if functions:
        return functions
    vercel = attrs.get("ai.prompt.tools")
    return [maybe_json(t) for t in vercel] if isinstance(vercel, list) else []


def llm_content(span: SpanRecord, vocabulary: str = "") -> tuple[str, dict[str, Any], Any]:
    """A model call's name (its model), ``{"model", "messages" | "input", "parameters",
    "tools"}`` and output message(s), read first from ``vocabulary``'s keys (the convention that
    recognised the span), then from every other's."""
    attrs = span.attributes
    model = _read(span, "model", vocabulary)
    inputs: dict[str, Any] = {}
    if model is not _MISSING:
        inputs["model"] = model
    messages = _input_messages(span, vocabulary)
    params = _parameters(attrs)
    tools = _tools(attrs)
    request = _request(span, vocabulary)
    if request is not None:  # the SDK request itself, recorded as the span's input
        said = normalize_messages(conversation(request))
        if not messages:
            messages = said
        elif said and said[0]["role"] == "system" and messages[0].get("role") != "system":
            messages.insert(0, said[0])  # Anthropic's system, the Responses API's instructions
        if model is _MISSING and isinstance(request.get("model"), str):
            model = inputs["model"] = request["model"]
        defined = request.get("tools")
        if not tools and isinstance(defined, list):
            tools = [_flat_tool(tool) for tool in defined if isinstance(tool, dict)]
        if not params and "model" in request:
            params = {k: v for k, v in request.items() if k in REQUEST_PARAMETERS}
    if messages:
        inputs["messages"] = shaped_results(messages)  # a tool's result as the text it was sent
    else:
        raw = _read(span, "input", vocabulary)
        if raw is not _MISSING:
            inputs["input"] = maybe_json(raw)
    if params:
        inputs["parameters"] = params
    if tools:
        inputs["tools"] = tools
    name = model if isinstance(model, str) else span.name
    return name, inputs, _with_finish_reason(_output_messages(span, vocabulary), attrs)


def _request(span: SpanRecord, vocabulary: str) -> dict[str, Any] | None:
    """The span's raw input when it is a model request as an SDK takes it, else None."""
    raw = _read(span, "input", vocabulary)
    return None if raw is _MISSING else sdk_request(maybe_json(raw))


def _with_finish_reason(output: Any, attrs: dict[str, Any]) -> Any:
    """Many producers record the finish reason beside the message rather than in it."""
    if not isinstance(output, dict) or "finish_reason" in output or "role" not in output:
        return output
    reason = attrs.get("llm.finish_reason")
    if reason is None:
        reasons = attrs.get("gen_ai.response.finish_reasons")
        reason = reasons[0] if isinstance(reasons, list) and len(reasons) == 1 else None
    return output if not isinstance(reason, str) else {**output, "finish_reason": reason}


# --- tools -----------------------------------------------------------------------------------------


#: Where a span records a tool's result, whichever convention wrote it (`tool_content` reads them).
RESULT_KEYS = tuple(split_source(source)[0] for source in sources("result"))


def tool_content(
    span: SpanRecord, vocabulary: str = ""
) -> tuple[str, dict[str, Any], Any, str | None]:
    """A tool call's name, ``{"arguments", "tool_call_id"}``, result, and the error its result
    reports (a framework that catches a tool's exception hands it back as a failed result), read
    first from ``vocabulary``'s keys, then from every other's."""
    name = _read(span, "tool_name", vocabulary)
    inputs: dict[str, Any] = {}
    arguments = _read(span, "arguments", vocabulary)
    if arguments is not _MISSING:
        inputs["arguments"] = _call_arguments(maybe_json(arguments))
    call_id = _read(span, "tool_call_id", vocabulary)
    if isinstance(call_id, str):
        inputs["tool_call_id"] = call_id
    result = _read(span, "result", vocabulary)
    output, envelope_id, error = _tool_result(None if result is _MISSING else maybe_json(result))
    if envelope_id is not None:
        inputs.setdefault("tool_call_id", envelope_id)
    return (name if isinstance(name, str) else _callable_name(span.name)), inputs, output, error


def _call_arguments(value: Any) -> Any:
    """A traced method's recorded call (``{"args": [], "kwargs": {...}, ...}``: the bound signature,
    not the tool's arguments) as the keyword arguments the tool was called with; anything else as it
    is."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("kwargs"), dict)
        and not value.get("args")
        and ("args" in value or set(value) == {"kwargs"})
    ):
        return value["kwargs"]
    return value


def _tool_result(value: Any) -> tuple[Any, str | None, str | None]:
    """``(result, call id, error)`` out of a framework's tool-output object, when the span recorded
    one (a tool message ``{content, tool_call_id, status}``, possibly serialised by LangChain, or a
    tool output ``{raw_output, tool_name, is_error}``); else the value itself."""
    if not isinstance(value, dict):
        return value, None, None
    body = value
    if isinstance(value.get("kwargs"), dict) and value.get("lc"):  # LangChain's serialisation
        body = value["kwargs"]
    elif value.get("type") == "tool" and isinstance(value.get("data"), dict):
        body = value["data"]
    if "tool_call_id" in body and "content" in body:
        content = maybe_json(body["content"])
        call_id = body["tool_call_id"] if isinstance(body["tool_call_id"], str) else None
        if body.get("status") == "error":
            return None, call_id, content if isinstance(content, str) else str(content)
        return content, call_id, None
    if "raw_output" in body and "tool_name" in body and "is_error" in body:
        if body["is_error"] is True:
            return None, None, str(body.get("raw_output") or body.get("content") or "failed")
        return body["raw_output"], None, None
    return value, None, None


#: Method names a framework appends when it names a tool's span after the method it traced.
_METHOD_SUFFIXES = (".__call__", ".forward", ".__acall__")


def _callable_name(span_name: str) -> str:
    """A tool's name from a span named after the method that ran it (``lookup_order.__call__``)."""
    for suffix in _METHOD_SUFFIXES:
        if span_name.endswith(suffix) and len(span_name) > len(suffix):
            return span_name[: -len(suffix)]
    return span_name


# --- everything else -------------------------------------------------------------------------------


def _documents(attrs: dict[str, Any], prefix: str) -> list[Any]:
    docs = []
    for item in unflatten(attrs, prefix):
        doc = item.get("document", item) if isinstance(item, dict) else item
        if isinstance(doc, dict) and "metadata" in doc:
            doc = dict(doc, metadata=maybe_json(doc["metadata"]))
        docs.append(doc)
    return docs


def _vercel_embeddings(attrs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The Vercel AI SDK's embedded values and their vectors: ``ai.value``/``ai.embedding`` for one,
    ``ai.values``/``ai.embeddings`` (lists of JSON text) for many."""
    values = attrs.get("ai.values", [attrs["ai.value"]] if "ai.value" in attrs else [])
    vectors = attrs.get("ai.embeddings", [attrs["ai.embedding"]] if "ai.embedding" in attrs else [])
    values = maybe_json(values) if isinstance(values, str) else values
    vectors = maybe_json(vectors) if isinstance(vectors, str) else vectors
    return (
        [maybe_json(v) for v in values] if isinstance(values, list) else [],
        [maybe_json(v) for v in vectors] if isinstance(vectors, list) else [],
    )


def other_content(
    span: SpanRecord, kind: StepKind, vocabulary: str = ""
) -> tuple[str, dict[str, Any], Any]:
    """A retrieval's, embedding's, reranking's or guardrail's name, inputs and output, read first
    from ``vocabulary``'s keys; a plain span's attributes as the inputs of an ``other`` step."""
    attrs = span.attributes
    said = _read(span, "step_name", vocabulary)
    if kind is StepKind.OTHER and isinstance(said, str):  # an other step agent-replay recorded
        given, returned = _io_value(attrs, "input"), _io_value(attrs, "output")
        return (
            said,
            given if isinstance(given, dict) else {},
            None if returned is _MISSING else returned,
        )
    if kind is StepKind.OTHER:
        return span.name, dict(attrs), None
    inputs: dict[str, Any] = {}
    model = _read(span, "model", vocabulary)
    if model is not _MISSING:
        inputs["model"] = model
    query = _first(attrs, "reranker.query", "gen_ai.retrieval.query.text")
    raw_input = _read(span, "input", vocabulary)
    raw_input = raw_input if raw_input is _MISSING else maybe_json(raw_input)
    if (
        query is _MISSING
        and isinstance(raw_input, dict)
        and isinstance(raw_input.get("query"), str)
    ):
        query = raw_input["query"]  # the retriever's keyword arguments, recorded whole
    if query is not _MISSING:
        inputs["query"] = query
    elif raw_input is not _MISSING:
        inputs["input"] = raw_input
    output: Any = None
    if kind is StepKind.RETRIEVER:
        output = _documents(attrs, "retrieval.documents") or maybe_json(
            attrs.get("gen_ai.retrieval.documents")
        )
        if not output:
            found = _read(span, "output", vocabulary)
            found = found if found is _MISSING else maybe_json(found)
            if isinstance(found, dict) and isinstance(found.get("documents"), list):
                found = found["documents"]  # {"documents": [...], "count": n}
            output = None if found is _MISSING else found
    elif kind is StepKind.RERANKER:
        documents = _documents(attrs, "reranker.input_documents")
        if documents:
            inputs["documents"] = documents
        if "reranker.top_k" in attrs:
            inputs["top_k"] = attrs["reranker.top_k"]
        output = _documents(attrs, "reranker.output_documents")
    elif kind is StepKind.EMBEDDING:
        embeddings = [
            e.get("embedding", e)
            for e in unflatten(attrs, "embedding.embeddings")
            if isinstance(e, dict)
        ]
        texts = [e["text"] for e in embeddings if isinstance(e, dict) and "text" in e]
        if texts:  # the texts themselves beat an input recorded as one string (often a repr)
            inputs.pop("input", None)
            inputs["texts"] = texts
        vectors = [e["vector"] for e in embeddings if isinstance(e, dict) and "vector" in e]
        output = vectors or None
        if not texts and not vectors:
            texts, vectors = _vercel_embeddings(attrs)
            if texts:
                inputs.pop("input", None)
                inputs["texts"] = texts
            output = vectors or None
    if not output:
        value = _io_value(attrs, "output")
        output = None if value is _MISSING else value
    return span.name, inputs, output
