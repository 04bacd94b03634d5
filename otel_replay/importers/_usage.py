"""The tokens a model call's span says it used, as every convention records them.

A model call's price is its tokens, and the span of the call is the only record of them: the
conventions spell them differently (OTel GenAI's ``gen_ai.usage.input_tokens``, its deprecated
``prompt_tokens``, OpenInference's ``llm.token_count.prompt``, OpenLLMetry's ``llm.usage.*``, the
Vercel AI SDK's ``ai.usage.*``, Langfuse's ``usage_details``). What is read is kept in the run's
metadata (``token_usage``, keyed by the step's span id, so merging the parts of a trace keeps it),
never in the step: a count is no part of what the operation was or answered, and two recordings of
one call that differ only in it are the same run. A count a span does not give is left out, never
taken as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.importers._spans import maybe_json

#: Where each convention puts a call's input, output and total tokens, looked up in this order.
_INPUT = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
)
_OUTPUT = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
_TOTAL = (
    "llm.token_count.total",
    "gen_ai.usage.total_tokens",
    "llm.usage.total_tokens",
    "ai.usage.totalTokens",
)
#: Langfuse's usage object: ``{"input": n, "output": m, "total": t}``.
_LANGFUSE = "langfuse.observation.usage_details"


def span_usage(attributes: Mapping[str, Any]) -> dict[str, int]:
    """The token counts a span records (``input_tokens``, ``output_tokens``, ``total_tokens``,
    whichever it gives; empty when it gives none)."""
    found: dict[str, int] = {}
    for name, keys in (
        ("input_tokens", _INPUT),
        ("output_tokens", _OUTPUT),
        ("total_tokens", _TOTAL),
    ):
        for key in keys:
            count = _count(attributes.get(key))
            if count is not None:
                found[name] = count
                break
    details = maybe_json(attributes.get(_LANGFUSE))
    if isinstance(details, dict):
        for name, key in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("total_tokens", "total"),
        ):
            count = _count(details.get(key))
            if count is not None:
                found.setdefault(name, count)
    return found


def _count(value: Any) -> int | None:
    """A token count: a whole number, 0 or more (Langfuse's text made a number again)."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
