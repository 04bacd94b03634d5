"""The tokens a model call's span says it used, as every convention records them.

A model call's price is its tokens, and the span of the call is the only record of them: the
conventions spell them differently (OTel GenAI's ``gen_ai.usage.input_tokens``, its deprecated
``prompt_tokens``, OpenInference's ``llm.token_count.prompt``, OpenLLMetry's ``llm.usage.*``, the
Vercel AI SDK's ``ai.usage.*``, Langfuse's ``usage_details``): the vocabulary table
(`otel_replay.importers._conventions`) says where each keeps them. What is read is kept in the run's
metadata (``token_usage``, keyed by the step's span id, so merging the parts of a trace keeps it),
never in the step: a count is no part of what the operation was or answered, and two recordings of
one call that differ only in it are the same run. A count a span does not give is left out, never
taken as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.importers._conventions import Part, sources
from otel_replay.importers._spans import maybe_json

#: The usage parts of the vocabulary table, by the name a count is kept under.
_COUNTS: tuple[tuple[str, Part], ...] = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("total_tokens", "total_tokens"),
)


def span_usage(attributes: Mapping[str, Any]) -> dict[str, int]:
    """The token counts a span records (``input_tokens``, ``output_tokens``, ``total_tokens``,
    whichever it gives; empty when it gives none), looked for where the vocabularies of
    `otel_replay.importers._conventions` keep them, in table order."""
    found: dict[str, int] = {}
    for name, part in _COUNTS:
        for source in sources(part):
            count = _count(_value(attributes, source))
            if count is not None:
                found[name] = count
                break
    return found


def _value(attributes: Mapping[str, Any], source: str) -> Any:
    """A count's value: an attribute, or a field of a usage object (``key (usage: field)``, as
    Langfuse keeps ``{"input": n, "output": m, "total": t}``)."""
    key, _, reader = source.partition(" (usage: ")
    if not reader:
        return attributes.get(key)
    details = maybe_json(attributes.get(key))
    return details.get(reader.rstrip(")")) if isinstance(details, dict) else None


def _count(value: Any) -> int | None:
    """A token count: a whole number, 0 or more (Langfuse's text made a number again)."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
