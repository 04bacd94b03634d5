"""What is recorded of a value: a plain-JSON copy (or an error naming what is not JSON), a lossy
copy for ``--lax`` (redaction of the text that must not be stored is `otel_replay.redaction`)."""

from __future__ import annotations

import math
from typing import Any

import orjson

from otel_replay.errors import CanonicalJSONError
from otel_replay.hashing import check_json_value


def plain_json(value: Any, where: str) -> Any:
    """A deep copy of ``value`` through JSON, or `CanonicalJSONError` if it is not plain JSON."""
    check_json_value(value, where)
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONDecodeError) as exc:  # beyond 64 bits, lone surrogates
        raise CanonicalJSONError(f"{where} cannot be stored as JSON: {exc}") from None


def lossy(value: Any) -> Any:
    """The closest plain-JSON value: containers converted, sets sorted (stable across processes),
    non-finite floats and oversized integers as text, dates and the like as orjson writes them,
    anything else as its ``repr``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_lossy_key(k): lossy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [lossy(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((lossy(v) for v in value), key=repr)
    try:  # dates, UUIDs, enums, dataclasses: orjson knows a JSON form
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return repr(value)


def _lossy_key(key: Any) -> str:
    return lossy(key) if isinstance(key, str) else repr(key)


def as_sent(value: Any) -> Any:
    """SDK objects (a message the agent appended from a response) as the JSON they were sent as."""
    if isinstance(value, type):  # a response format given as a model class: its schema
        schema = getattr(value, "model_json_schema", None)
        return {"name": value.__name__, "schema": schema()} if callable(schema) else value.__name__
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {str(k): as_sent(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_sent(v) for v in value]
    return value
