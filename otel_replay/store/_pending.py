"""Spans the receiver holds for traces whose root span has not come (table ``pending_spans``),
until their run is built: the receiver's own room, written only by it, on its writer thread."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from otel_replay.store._connection import Connected, chunks


class PendingSpans(Connected):
    """The receiver's waiting spans (`otel_replay.store.Store` is one, with the other rooms)."""

    def keep_pending(self, trace_id: str, spans: Iterable[bytes], received_ns: int) -> None:
        """Keep spans of ``trace_id`` until its run is built (inside `transaction`)."""
        self._db.executemany(
            "INSERT INTO pending_spans (trace_id, received_at_unix_nano, span) VALUES (?, ?, ?)",
            ((trace_id, received_ns, span) for span in spans),
        )

    def pending(self, trace_ids: Collection[str]) -> dict[str, list[bytes]]:
        """The spans kept for each of ``trace_ids`` that has any, in the order they arrived."""
        kept: dict[str, list[bytes]] = {}
        if not self._has("pending_spans"):
            return kept
        for chunk in chunks(list(trace_ids)):
            rows = self._db.execute(
                "SELECT trace_id, span FROM pending_spans WHERE trace_id IN "
                f"({','.join('?' * len(chunk))}) ORDER BY rowid",
                chunk,
            )
            for row in rows:
                kept.setdefault(str(row["trace_id"]), []).append(bytes(row["span"]))
        return kept

    def drop_pending(self, trace_id: str) -> None:
        """Forget the spans kept for ``trace_id`` (inside `transaction`): its run is stored."""
        self._db.execute("DELETE FROM pending_spans WHERE trace_id = ?", (trace_id,))

    def pending_traces(self, quiet_since_ns: int | None = None) -> list[str]:
        """Traces with spans kept, oldest first; with ``quiet_since_ns``, only those that received
        nothing since."""
        if not self._has("pending_spans"):
            return []
        rows = self._db.execute(
            "SELECT trace_id, max(received_at_unix_nano) AS last FROM pending_spans "
            "GROUP BY trace_id HAVING ? IS NULL OR last < ? ORDER BY min(rowid)",
            (quiet_since_ns, quiet_since_ns),
        )
        return [str(row["trace_id"]) for row in rows]
