"""JSON Patch (RFC 6902) on a step's inputs, for the edit-context move (``fork --edit``).

Operations ``add``, ``remove``, ``replace``, ``move``, ``copy`` and ``test``, with paths as JSON
Pointers (RFC 6901: ``/messages/5``, ``~1`` for ``/`` and ``~0`` for ``~``, ``-`` for the end of an
array). The document is copied, never changed in place; an operation that cannot apply is an
`InterventionError` naming it and its path.
"""

from __future__ import annotations

import copy
from typing import Any

from otel_replay.errors import InterventionError
from otel_replay.hashing import canonical_json

_OPS = ("add", "remove", "replace", "move", "copy", "test")


def apply_patch(document: Any, patch: Any) -> Any:
    """``document`` with ``patch`` (a list of operations) applied, as a new value."""
    if not isinstance(patch, list):
        raise InterventionError(f"a JSON Patch is a list of operations, got {patch!r}")
    result = copy.deepcopy(document)
    for number, operation in enumerate(patch):
        result = _apply(result, operation, number)
    return result


def _apply(document: Any, operation: Any, number: int) -> Any:
    if not isinstance(operation, dict) or operation.get("op") not in _OPS:
        raise InterventionError(
            f"patch operation {number} must be an object with op one of {', '.join(_OPS)}: "
            f"{operation!r}"
        )
    op, path = operation["op"], _pointer(operation.get("path"), number, "path")
    try:
        if op == "test":
            if canonical_json(_get(document, path)) != canonical_json(operation.get("value")):
                raise InterventionError(f"patch operation {number} (test {_text(path)}) failed")
            return document
        if op == "remove":
            return _remove(document, path)
        if op in ("add", "replace"):
            if "value" not in operation:
                raise InterventionError(f"patch operation {number} ({op}) has no value")
            if op == "replace":
                _get(document, path)  # must exist
                document = _remove(document, path)
            return _add(document, path, copy.deepcopy(operation["value"]))
        source = _pointer(operation.get("from"), number, "from")
        value = copy.deepcopy(_get(document, source))
        if op == "move":
            document = _remove(document, source)
        return _add(document, path, value)
    except (KeyError, IndexError, ValueError, TypeError):
        raise InterventionError(
            f"patch operation {number} ({op} {_text(path)}) does not apply to the step's inputs"
        ) from None


def _pointer(raw: Any, number: int, field: str) -> list[str]:
    if not isinstance(raw, str) or (raw and not raw.startswith("/")):
        raise InterventionError(f"patch operation {number}: {field} {raw!r} is not a JSON Pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in raw.split("/")[1:]]


def _text(path: list[str]) -> str:
    return "/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in path)


def _get(document: Any, path: list[str]) -> Any:
    for part in path:
        document = document[_index(document, part)]
    return document


def _index(container: Any, part: str) -> Any:
    if isinstance(container, list):
        if not part.isdigit() or (len(part) > 1 and part.startswith("0")):
            raise IndexError(part)
        return int(part)
    if isinstance(container, dict):
        return part
    raise TypeError(part)


def _add(document: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1])
    last = path[-1]
    if isinstance(parent, list):
        position = len(parent) if last == "-" else _index(parent, last)
        if position > len(parent):
            raise IndexError(last)
        parent.insert(position, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise TypeError(last)
    return document


def _remove(document: Any, path: list[str]) -> Any:
    if not path:
        raise ValueError("the whole document")
    parent = _get(document, path[:-1])
    del parent[_index(parent, path[-1])]
    return document
