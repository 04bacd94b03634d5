"""Model requests and replies as the SDKs write them, when a span records the SDK's own objects
(MLflow, LangSmith, traced wrappers, an instrumentation's raw input or output): a provider's
response read as the reply in the one message shape (an OpenAI chat completion's choices, a
Responses API response, an Anthropic message, a LangChain ``LLMResult``, a list of messages or of
tool calls), and a request told by its shape.
"""

from __future__ import annotations

from typing import Any

from otel_replay.importers._messages import normalize_messages
from otel_replay.messages import assistant_message

#: The sampling and tool-use parameters an SDK request may carry (what a resampled call sends too).
REQUEST_PARAMETERS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "stop",
        "stop_sequences",
        "seed",
        "n",
        "frequency_penalty",
        "presence_penalty",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning",
        "reasoning_effort",
    }
)


def sdk_request(value: Any) -> dict[str, Any] | None:
    """``value`` when it is a model request as an SDK takes it (``messages``, or the Responses
    API's ``input`` beside a ``model``), else None."""
    if not isinstance(value, dict):
        return None
    chat = isinstance(value.get("messages"), list)
    responses = "model" in value and isinstance(value.get("input"), (list, str))
    return value if chat or responses else None


def one_or_many(messages: list[dict[str, Any]]) -> Any:
    return messages[0] if len(messages) == 1 else messages


def reply_of(value: Any) -> Any:
    """A raw provider response as its reply message (a list when it holds several): an OpenAI
    chat completion's choices, one assistant message, a turn of only tool calls, a list of messages,
    a LangChain ``LLMResult``, a Responses API response or an Anthropic message; anything else as
    it is."""
    if isinstance(value, dict) and isinstance(value.get("choices"), list) and value["choices"]:
        choices = [
            dict(c.get("message") or {}, finish_reason=c.get("finish_reason"))
            for c in value["choices"]
            if isinstance(c, dict)
        ]
        return one_or_many(normalize_messages(choices))
    if isinstance(value, dict) and value.get("role") == "assistant":  # one message, as it is
        return normalize_messages([value])[0]
    if isinstance(value, list) and value and all(_is_function_call(v) for v in value):
        return normalize_messages([{"role": "assistant", "tool_calls": value}])[0]
    if isinstance(value, list):
        messages = normalize_messages(value)
        if messages and len(messages) == len(value):
            return one_or_many(messages)
    if isinstance(value, dict) and isinstance(value.get("generations"), list):
        return _generations(value["generations"], value)
    if isinstance(value, dict) and (value.get("object") == "response" or "stop_reason" in value):
        reply = assistant_message(value)  # a Responses API response, an Anthropic message
        if reply is not None:
            return normalize_messages([reply])[0]
    return value


def _generations(generations: list[Any], value: Any) -> Any:
    """A LangChain ``LLMResult`` (``{"generations": [[{"message" | "text", "generation_info"}]]}``,
    one list per prompt) as its reply: each generation's message (or its text as the assistant's),
    the finish reason from its ``generation_info``; the result as it is when it holds none."""
    first = generations[0] if generations else None
    replies: list[dict[str, Any]] = []
    for generation in first if isinstance(first, list) else generations:
        if not isinstance(generation, dict):
            continue
        message = generation.get("message")
        if not isinstance(message, dict):
            text = generation.get("text")
            message = {"role": "assistant", "content": text} if isinstance(text, str) else None
        if message is None:
            continue
        read = normalize_messages([message])
        if not read:
            continue
        reply = read[0]
        info = generation.get("generation_info")
        reason = info.get("finish_reason") if isinstance(info, dict) else None
        if isinstance(reason, str):
            reply.setdefault("finish_reason", reason)
        replies.append(reply)
    return one_or_many(replies) if replies else value


def _is_function_call(value: Any) -> bool:
    """A tool call on its own (a model turn recorded as just the calls it made): OpenAI's, or
    ``{"tool.name", "tool.args"}``."""
    return isinstance(value, dict) and (
        (value.get("type") == "function" and isinstance(value.get("function"), dict))
        or isinstance(value.get("tool.name"), str)
    )
