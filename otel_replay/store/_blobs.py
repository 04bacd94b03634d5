"""Reading the store's JSON: every blob (a run's metadata and span tree, a step's inputs, output and
messages) and every kept report is decoded here (`stored_json`), so a store whose bytes were damaged
(a disk fault, an edit with sqlite3) is the one damaged-store error (`damaged`), which the command
line prints as one line and the viewer as a page, never a traceback.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import orjson

from otel_replay.errors import StoreError, preview


def damaged(reason: str) -> StoreError:
    """The one error of a store whose content cannot be read (a page SQLite finds bad, a blob that
    holds no JSON): what is wrong, and how to save what the store still holds."""
    return StoreError(
        f"the store cannot be read ({reason}): it may be damaged; `sqlite3 STORE .recover | "
        "sqlite3 NEW.db` saves what it can, or import the traces again into a new store"
    )


def stored_json(data: object, what: str) -> Any:
    """The JSON value a blob (or a kept report) holds, ``what`` naming it: every read of the store's
    JSON goes through here, so a blob damaged into something else is `damaged`, never a
    traceback."""
    if isinstance(data, (bytes, str)):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise damaged(f"{what} is not JSON: {exc}") from None
    raise damaged(f"{what} is not JSON but {'NULL' if data is None else type(data).__name__}")


def stored_json_bytes(data: object, what: str) -> bytes:
    """The JSON text a blob holds, as it is (checked with `stored_json`, not rebuilt)."""
    if isinstance(data, str):
        data = data.encode()
    stored_json(data, what)  # raises unless ``data`` is bytes holding JSON
    return cast(bytes, data)


def read_inputs(db: sqlite3.Connection, data: bytes, layout: int) -> dict[str, Any]:
    """A step's inputs from their blob: whole (layout 0), or a shell whose ``messages`` are the
    digests of one blob each (layout 1)."""
    inputs = stored_json(data, "a step's inputs")
    if not isinstance(inputs, dict) or (
        layout == 1 and not isinstance(inputs.get("messages"), list)
    ):
        raise damaged("a step's inputs are not a JSON object of the store's shape")
    if layout == 1:
        inputs["messages"] = [
            stored_json(load_blob(db, str(d)), f"blob {preview(d)}") for d in inputs["messages"]
        ]
    return inputs


def load_blob(db: sqlite3.Connection, blob_digest: str) -> bytes:
    row = db.execute("SELECT data FROM blobs WHERE digest = ?", (blob_digest,)).fetchone()
    if row is None:
        raise StoreError(f"the store is missing blob {blob_digest}")
    data: bytes = row[0]
    return data
