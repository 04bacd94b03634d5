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

A count is kept as the number it is, so it must be one every place a count goes can hold: OTLP's
``intValue`` (an export writes it back so), SQLite and the store's JSON hold 64-bit integers, so a
count is 0 to 2**63 - 1. A span whose count is beyond that (``"18446744073709551616"``, or ``1e30``
as JSON's number) cannot be imported as it is: `check_counts` refuses it as the span's error when
the span is read, where the reader can say its file and line, and `span_usage` refuses it again
for a caller that did not check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._conventions import Part, sources, split_source
from otel_replay.importers._spans import SpanRecord, maybe_json

#: The largest count kept: OTLP's ``intValue`` and SQLite's integers are signed 64 bits.
MAX_COUNT = (1 << 63) - 1

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
            count = _count(_value(attributes, source), source)
            if count is not None:
                found[name] = count
                break
    return found


def check_counts(span: SpanRecord) -> None:
    """Raise `TraceFormatError` naming the span, the attribute and its value when any place a
    vocabulary keeps a token count holds a whole number beyond `MAX_COUNT` (not only the one
    `span_usage` would read first: a later part of the span may bring another)."""
    for _, part in _COUNTS:
        for source in sources(part):
            try:
                _count(_value(span.attributes, source), source)
            except TraceFormatError as exc:
                raise TraceFormatError(
                    exc.reason, where=f"span {preview(span.name)} ({span.span_id or 'no id'})"
                ) from None


def _value(attributes: Mapping[str, Any], source: str) -> Any:
    """A count's value: an attribute, or a field of a usage object (``key (usage: field)``, as
    Langfuse keeps ``{"input": n, "output": m, "total": t}``)."""
    key, reader = split_source(source)
    if not reader.startswith("usage: "):
        return attributes.get(key)
    details = maybe_json(attributes.get(key))
    field = reader.removeprefix("usage: ").rstrip(")")
    return details.get(field) if isinstance(details, dict) else None


def _count(value: Any, source: str) -> int | None:
    """A token count: a whole number, 0 or more (Langfuse's text made a number again); None for
    anything else. `TraceFormatError` for a whole number beyond `MAX_COUNT`, ``source`` named."""
    given = value
    if isinstance(value, str):
        digits = value.strip()
        if not (digits.isascii() and digits.isdecimal()):
            return None
        value = int(digits) if len(digits) <= 19 else MAX_COUNT + 1  # int() has a digit limit
    elif isinstance(value, float) and value.is_integer():
        value = int(value) if value <= MAX_COUNT else MAX_COUNT + 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    if value > MAX_COUNT:
        shown = preview(given) if not isinstance(given, int) else f"of {given.bit_length()} bits"
        raise TraceFormatError(
            f"token count {shown} in {source} is beyond what can be kept (0 to 2**63 - 1)"
        )
    return value
