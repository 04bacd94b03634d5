"""Canonical JSON and the content hashes built on it.

Canonical JSON = sorted keys, no insignificant whitespace, UTF-8, and only values that survive a JSON
round trip unchanged (no NaN/Infinity, no bytes, no sets, only string keys). It is the one serialization
behind every hash, the store and the reports.

* ``op_key(kind, name, inputs)`` — the idempotency key of an operation. Correlation ids that a model
  invents afresh on every run (``tool_call_id``) are not part of what the operation *is*, so they are
  left out.
* ``link_hash(previous, op_key, result_digest)`` — the Merkle link of a step; the last step's hash
  identifies the whole run. Timestamps and span ids never enter either.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from otel_replay.errors import CanonicalJSONError, preview

__all__ = [
    "CORRELATION_KEYS",
    "GENESIS",
    "MAX_DEPTH",
    "canonical_json",
    "check_json_value",
    "digest",
    "link_hash",
    "op_key",
    "result_digest",
]

#: How deeply JSON may nest (the serializer stops at 254 levels; no real trace comes near).
MAX_DEPTH = 200

#: The hash a trajectory's chain starts from.
GENESIS = "0" * 64

#: Input keys that correlate an operation with others but are not part of its content.
CORRELATION_KEYS = frozenset({"tool_call_id"})

_DUMPS_OPTIONS = orjson.OPT_SORT_KEYS


def check_json_value(value: Any, where: str = "value") -> None:
    """Raise `CanonicalJSONError` unless ``value`` is plain JSON that round-trips exactly.

    Accepted: ``dict`` with ``str`` keys, ``list``, ``str`` (valid UTF-8), ``int`` (64 bits), finite
    ``float``, ``bool``, ``None``, nested at most `MAX_DEPTH` levels.
    """
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 60 else path[:57] + "..."
            raise CanonicalJSONError(f"{shown} is nested deeper than {MAX_DEPTH} levels")
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise CanonicalJSONError(f"{path} = {item!r} is not valid UTF-8 text") from None
            continue
        if isinstance(item, int):
            if not -(1 << 63) <= item < (1 << 64):
                raise CanonicalJSONError(f"{path} = {item} does not fit in 64 bits")
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise CanonicalJSONError(f"{path} = {item!r} is not representable in JSON")
            continue
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise CanonicalJSONError(f"{path} has a non-string key {key!r}")
                stack.append((child, f"{path}.{key}", depth + 1))
            continue
        if isinstance(item, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
            continue
        raise CanonicalJSONError(
            f"{path} = {item!r} ({type(item).__name__}) does not survive a JSON round trip"
        )


def canonical_json(value: Any) -> bytes:
    """Serialize plain JSON data canonically (sorted keys, compact, UTF-8).

    The caller guarantees the value is plain JSON (see `check_json_value`); importers build values that
    are by construction. Integers beyond 64 bits and non-string keys still raise here.
    """
    try:
        return orjson.dumps(value, option=_DUMPS_OPTIONS)
    except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
        raise CanonicalJSONError(f"cannot serialize {preview(value, 80)}: {exc}") from None


def digest(data: bytes) -> str:
    """sha256 of ``data`` as lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def op_key(kind: str, name: str, inputs: dict[str, Any]) -> str:
    """The idempotency key of an operation: a hash of kind, name and canonical inputs."""
    if CORRELATION_KEYS.isdisjoint(inputs):
        content = inputs
    else:
        content = {k: v for k, v in inputs.items() if k not in CORRELATION_KEYS}
    return digest(canonical_json([kind, name, content]))


def result_digest(output: Any, status: str, error: str | None) -> str:
    """Hash of what an operation returned: its output, and whether (and how) it failed."""
    return digest(canonical_json([status, error, output]))


def link_hash(previous: str, key: str, result: str) -> str:
    """The Merkle link ``H(previous hash, op_key, H(result))``."""
    return digest(f"{previous}:{key}:{result}".encode("ascii"))
