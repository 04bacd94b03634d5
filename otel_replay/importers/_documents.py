"""The one table of JSON document formats: which decoder reads a parsed JSON document.

Sniffing (`otel_replay.importers._sniff`) tells JSON from protobuf and native JSONL by the first bytes;
every JSON document (a whole file, or one line of JSON Lines) is then given to the first row of
`DOCUMENT_FORMATS` that claims it by its top-level shape. A row's decoder yields the same
`SpanRecord`s the OTLP decoder does, so every rule from spans to steps applies to all of them. A
document no row claims is refused: an OTLP logs or metrics request by the OTLP decoder, which says
what it is; log records as logs; any other saying what it looks like (its shape, from
`_lookalikes.describe`, and the family of `_lookalikes.FAMILIES` it is one of: a Datadog span list,
Chrome trace events, a chat completions request) and what to do (the ``--format`` that reads it, a
Collector receiver that makes OTLP of it, or that it holds no spans). The generic span readers
(span dumps, flat span lists) never claim a document of a named family: they would fail deep
inside it, at a value of a shape they do not read. A format given by name (``--format langfuse``)
picks its row, and a document that row does not claim is refused the same way.

`parse_document` parses the bytes with orjson; a document of a format whose ids may be JSON integers
and whose text holds an integer of 20 digits or more (which orjson turns into a float: a 128-bit id
would lose its low digits) is parsed again with Python's decoder, which keeps integers exact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import orjson

from otel_replay.errors import TraceFormatError
from otel_replay.importers._datadog import FORMAT as DATADOG
from otel_replay.importers._datadog import decode_datadog, is_datadog
from otel_replay.importers._flat import decode_flat_spans, is_flat_span_list, log_record_key
from otel_replay.importers._jaeger import JAEGER_FORMAT as JAEGER
from otel_replay.importers._jaeger import decode_jaeger, is_jaeger
from otel_replay.importers._langfuse import FORMAT as LANGFUSE
from otel_replay.importers._langfuse import decode_langfuse, is_langfuse
from otel_replay.importers._langsmith import FORMAT as LANGSMITH
from otel_replay.importers._langsmith import decode_langsmith, is_langsmith
from otel_replay.importers._lookalikes import (
    decode_span_dump,
    describe,
    is_span_dump,
    lookalike,
)
from otel_replay.importers._mlflow import MLFLOW_FORMAT as MLFLOW
from otel_replay.importers._mlflow import decode_mlflow, is_mlflow
from otel_replay.importers._otlp_json_decode import decode_request
from otel_replay.importers._phoenix import PHOENIX_FORMAT as PHOENIX_PAGE
from otel_replay.importers._phoenix import decode_phoenix_page, is_phoenix_page
from otel_replay.importers._spans import SpanRecord
from otel_replay.importers._zipkin import FORMAT as ZIPKIN
from otel_replay.importers._zipkin import decode_zipkin, is_zipkin

Invalid = Callable[[TraceFormatError], None]
Decode = Callable[[Any, Invalid], Iterator[SpanRecord]]


class DocumentFormat(NamedTuple):
    """A row: the format's name (what runs read from it carry as ``metadata.format``), whether a
    document is one of it, its decoder, and whether its ids may be JSON integers (then integers
    beyond 64 bits must be parsed exactly)."""

    name: str
    claims: Callable[[Any], bool]
    decode: Decode
    integer_ids: bool = False


_OTLP_ENVELOPES = ("resourceSpans", "resource_spans", "batches", "trace_requests")


def is_otlp_envelope(document: Any) -> bool:
    """An OTLP request, or an envelope around one (Tempo's ``trace``, oteltest's requests)."""
    if not isinstance(document, dict):
        return False
    if any(key in document for key in _OTLP_ENVELOPES):
        return True
    inner = document.get("trace")
    return isinstance(inner, dict) and is_otlp_envelope(inner)


def is_any_agent(document: Any) -> bool:
    """any-agent's trace: ``{"spans": [...], "final_output": ...}``."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("spans"), list)
        and "final_output" in document
    )


def decode_any_agent(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """The spans of an any-agent trace (Python SDK span objects: integer ids, ``parent`` as a
    context whose ids are null on the root). ``final_output`` is the agent's answer, not a score:
    it gives no outcome."""
    return decode_span_dump(document["spans"], invalid, where="spans")


def _generic(claims: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A generic span reader's claim: never a document of a family `_lookalikes.FAMILIES` names
    (a Datadog or Zipkin span list has a span's ids too, and was refused deep inside, at a value
    of a shape the generic reader does not read)."""
    return lambda document: claims(document) and lookalike(document) is None


#: In order: the first row that claims a document reads it.
DOCUMENT_FORMATS: tuple[DocumentFormat, ...] = (
    DocumentFormat("otlp-json", is_otlp_envelope, decode_request),
    DocumentFormat(LANGFUSE, is_langfuse, decode_langfuse),
    DocumentFormat(MLFLOW, is_mlflow, decode_mlflow),
    DocumentFormat(JAEGER, is_jaeger, decode_jaeger),
    DocumentFormat(ZIPKIN, is_zipkin, decode_zipkin),
    DocumentFormat(DATADOG, is_datadog, decode_datadog, integer_ids=True),
    DocumentFormat(LANGSMITH, is_langsmith, decode_langsmith),
    DocumentFormat("any-agent", is_any_agent, decode_any_agent, integer_ids=True),
    DocumentFormat(PHOENIX_PAGE, is_phoenix_page, decode_phoenix_page),
    DocumentFormat("span-dump", _generic(is_span_dump), decode_span_dump, integer_ids=True),
    DocumentFormat("flat-spans", _generic(is_flat_span_list), decode_flat_spans, integer_ids=True),
)

#: What a document no row claims is read as (its decoder names what is missing).
FALLBACK = DOCUMENT_FORMATS[0]
#: The formats a document can be given as by name, each read by its own row only.
FORMAT_NAMES = frozenset(row.name for row in DOCUMENT_FORMATS[1:])
#: Keys of OTLP documents that hold no traces: the OTLP decoder names what they are.
_OTLP_OTHER_SIGNALS = ("resourceLogs", "resource_logs", "resourceMetrics", "resource_metrics")


def reader_for(document: Any, only: str | None = None) -> tuple[str, Decode]:
    """The format name and decoder of a parsed JSON document: of the row named ``only`` (one of
    `FORMAT_NAMES`) when given, else of the first row that claims it. A document no row claims (or
    that the named row does not) gets a decoder that refuses it, saying why."""
    row = claiming_row(document, only)
    if row is not None:
        return row.name, row.decode
    if only is not None:
        return only, _refuse(
            _unclaimed(document, f"not a {only} document, the format it was given as", only)
        )
    logs = log_record_key(document)
    if logs is not None:
        return FALLBACK.name, _refuse(f"this is log records ({logs!r}), not traces")
    if isinstance(document, dict) and any(key in document for key in _OTLP_OTHER_SIGNALS):
        return FALLBACK.name, FALLBACK.decode
    return FALLBACK.name, _refuse(_unclaimed(document, "not a trace document"))


def claiming_row(document: Any, only: str | None = None) -> DocumentFormat | None:
    """The row that claims ``document`` (only the row named ``only``, when given), or None when
    none does."""
    rows = DOCUMENT_FORMATS if only is None else [r for r in DOCUMENT_FORMATS if r.name == only]
    return next((row for row in rows if row.claims(document)), None)


def _unclaimed(document: Any, what: str, only: str | None = None) -> str:
    """Why ``document`` is refused: ``what``, what it looks like (its shape, and the family of
    `_lookalikes.FAMILIES` it is one of) and what to do (the format that reads it, a Collector
    receiver that turns it into OTLP, or that it holds no spans)."""
    said = f"{what}: it is {describe(document)}"
    other = claiming_row(document) if only is not None else None
    if other is not None:
        return f"{said}; it reads as {other.name}: give --format {other.name}, or leave it out"
    family = lookalike(document)
    if family is None:
        return f"{said}; no reader takes this shape (the formats read: docs/importing.md)"
    if family.reader is not None and family.reader == only:
        return f"{said}; it looks like {family.name}, in a form the {only} reader does not take"
    return f"{said}; it looks like {family.name}: {family.advice(FORMAT_NAMES)}"


def _refuse(reason: str) -> Decode:
    def decode(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
        raise TraceFormatError(reason)

    return decode


#: A JSON number of 20 digits or more, which orjson cannot hold exactly (2**64 has 20 digits);
#: the same digits inside text cost only a second parse.
_LONG_INTEGER = re.compile(rb"[:\[,]\s*-?[0-9]{20}")


def parse_document(data: bytes, only: str | None = None) -> Any:
    """``data`` parsed as JSON, the integers of a format whose ids may be integers exact; raises
    `orjson.JSONDecodeError` when it is not JSON.

    Only those formats' documents are searched for long integers (OTLP's ids are text, and its
    integers beyond 64 bits are refused either way).
    """
    document = orjson.loads(data)
    row = claiming_row(document, only)
    if row is None or not row.integer_ids or _LONG_INTEGER.search(data) is None:
        return document
    del document
    return exact_json(data.decode("utf-8"))


def exact_json(text: str) -> Any:
    """``text`` parsed by Python's decoder (integers of any size kept exact)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceFormatError("JSON nested deeper than the reader follows") from None
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"malformed JSON: {exc.msg}", line=exc.lineno) from None
    except ValueError:  # an integer longer than Python converts (sys.set_int_max_str_digits)
        raise TraceFormatError("an integer with more digits than the reader converts") from None
