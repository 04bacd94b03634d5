"""Canonical JSON and the content hashes built on it.

Canonical JSON = sorted keys, no insignificant whitespace, UTF-8, and only values that survive a JSON
round trip unchanged (no NaN/Infinity, no bytes, no sets, only string keys). It is the one serialization
behind every hash, the store and the reports.

* ``op_key(kind, name, inputs)`` — the idempotency key of an operation, what matches a call against
  the record. It is a hash of the operation's *content*: the correlation ids a model server makes
  afresh on every response are not part of what the operation is (below).
* ``stored_key(kind, name, inputs)`` and ``link_hash(previous, key, result_digest)`` — the Merkle
  link of a step, over the inputs as stored; the last step's hash identifies the whole run, byte for
  byte. Timestamps and span ids never enter it.

**Volatile fields are correlation data, not content.** A model server answers every request with a
fresh response id, a fresh id for each tool call it asks for (which later messages then quote), the
time it was made (``created``) and the build that made it (``system_fingerprint``). Two runs that
asked the same things and got the same answers differ in all of those. `content_form` is a value
with them taken out: clock fields dropped, and every id (a string under one of `ID_KEYS`) replaced
by its rank among the ids seen so far (``"#0"``, ``"#1"``, …), so two values are the same content
when one is the other with its ids consistently renamed: the first id in one is the first id in the
other. A model call's op_key is the content of its inputs (the ids its conversation quotes, ranked
in that call alone); `otel_replay.model.Trajectory.identity` and ``diff`` rank ids across a whole
run. Tool arguments (``arguments``, a ``tool_use`` block's ``input``) and tool definitions are what
the model chose or was offered, never searched for ids.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from otel_replay.errors import CanonicalJSONError, preview

__all__ = [
    "CLOCK_KEYS",
    "CORRELATION_KEYS",
    "GENESIS",
    "ID_KEYS",
    "MAX_DEPTH",
    "canonical_json",
    "check_json_value",
    "content_form",
    "digest",
    "link_hash",
    "op_key",
    "operation_keys",
    "result_digest",
    "stored_key",
]

#: How deeply JSON may nest (the serializer stops at 254 levels; no real trace comes near).
MAX_DEPTH = 200

#: The hash a trajectory's chain starts from.
GENESIS = "0" * 64

#: Input keys that correlate an operation with others but are not part of its content.
CORRELATION_KEYS = frozenset({"tool_call_id"})

#: Keys whose string value is an id a server makes afresh: a response's or a message item's
#: (``id``), a tool call's and the references to it (``tool_call_id``, Anthropic's
#: ``tool_use_id``, the Responses API's ``call_id`` and ``item_id``), a previous response's.
ID_KEYS = frozenset(
    {"id", "tool_call_id", "tool_use_id", "call_id", "item_id", "previous_response_id"}
)

#: Keys that say when or by which build a response was made: left out of content.
CLOCK_KEYS = frozenset({"created", "created_at", "system_fingerprint"})

#: Keys whose value is content as it stands (tool arguments, tool definitions): never searched for
#: ids. ``input`` is one only when it is an object (a ``tool_use`` block's arguments); the Responses
#: API's ``input``, a list of items, is searched.
_OPAQUE_KEYS = frozenset({"arguments", "input", "tools"})
_MARKED = ID_KEYS | CLOCK_KEYS | _OPAQUE_KEYS

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


def content_form(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with its volatile fields taken out: `CLOCK_KEYS` dropped, each id (a string under
    one of `ID_KEYS`) replaced by its rank in ``names`` (``"#0"`` for the first id met, the same
    rank wherever the same id is met again). ``names`` carries the ranking from one value to the
    next (a run's steps in order); a fresh one ranks this value alone. Keys are visited in sorted
    order, lists in theirs, so the ranking does not depend on how a dict happens to be ordered.
    ``value`` itself is returned when it holds nothing volatile, and is never changed."""
    return _content(value, {} if names is None else names)


def _content(value: Any, names: dict[str, str]) -> Any:
    # hot: every model call of a rollout is keyed, so one pass per container, and a sort only of
    # the few keys that matter when there are two or more of them
    kind = type(value)
    if kind is list:
        copied: list[Any] | None = None
        for i, item in enumerate(value):
            if type(item) is dict or type(item) is list:
                new = _content(item, names)
                if new is not item:
                    if copied is None:
                        copied = list(value)
                    copied[i] = new
        return value if copied is None else copied
    if kind is not dict:
        return value
    found: list[str] | None = None
    for key, item in value.items():
        if key in _MARKED:
            if type(item) is dict or type(item) is list:
                if key in CLOCK_KEYS or key in ID_KEYS:
                    continue
                if key in _OPAQUE_KEYS and (key != "input" or type(item) is dict):
                    continue
            elif key in ID_KEYS and type(item) is not str:
                continue
        elif type(item) is not dict and type(item) is not list:
            continue
        if found is None:
            found = [key]
        else:
            found.append(key)
    if found is None:
        return value
    if len(found) > 1:
        found.sort()
    copy = dict(value)
    changed = False
    for key in found:
        item = value[key]
        if key in CLOCK_KEYS and type(item) is not dict and type(item) is not list:
            del copy[key]
            changed = True
            continue
        if key in ID_KEYS and type(item) is str:
            new = names.get(item)
            if new is None:
                new = names[item] = f"#{len(names)}"
        else:
            new = _content(item, names)
        if new is not item:
            copy[key] = new
            changed = True
    return copy if changed else value


def _uncorrelated(inputs: dict[str, Any]) -> dict[str, Any]:
    if CORRELATION_KEYS.isdisjoint(inputs):
        return inputs
    return {k: v for k, v in inputs.items() if k not in CORRELATION_KEYS}


def op_key(kind: str, name: str, inputs: dict[str, Any]) -> str:
    """The idempotency key of an operation: a hash of kind, name and the content of its inputs
    (correlation ids left out; a model call's conversation up to a renaming of its ids)."""
    return operation_keys(kind, name, inputs)[0]


def stored_key(kind: str, name: str, inputs: dict[str, Any]) -> str:
    """The key a step's Merkle link is made of: kind, name and the inputs as stored (correlation
    ids left out), so the chain names the recorded bytes."""
    return digest(canonical_json([kind, name, _uncorrelated(inputs)]))


def operation_keys(kind: str, name: str, inputs: dict[str, Any]) -> tuple[str, str]:
    """``(op_key, stored_key)`` of an operation, the work shared: one hash when its inputs hold
    nothing volatile."""
    stored = _uncorrelated(inputs)
    key = digest(canonical_json([kind, name, stored]))
    if kind != "llm":
        return key, key
    content = _content(stored, {})
    if content is stored:
        return key, key
    return digest(canonical_json([kind, name, content])), key


def result_digest(output: Any, status: str, error: str | None) -> str:
    """Hash of what an operation returned: its output, and whether (and how) it failed."""
    return digest(canonical_json([status, error, output]))


def link_hash(previous: str, key: str, result: str) -> str:
    """The Merkle link ``H(previous hash, op_key, H(result))``."""
    return digest(f"{previous}:{key}:{result}".encode("ascii"))
