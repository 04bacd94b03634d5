"""The receiver's one writer: spans in, runs out, one store transaction per request.

SQLite has one writer, and a connection belongs to the thread that opened it, so every store access
happens on one thread (`Intake`), fed by a queue. A request's spans are grouped by trace. A trace
already stored takes them as another part (`otel_replay.ingest` merges it, as it merges a trace
split across files). A trace whose root span is among its spans so far is built and stored. Any
other keeps its spans in the store, out of sight, until its root arrives, or until it has been
quiet for ``flush_after`` seconds (a root that never comes: the run is built from what there is,
and a later part merges into it). The request's answer waits for its commit: nothing is
acknowledged that is not in the store. With ``redact`` patterns (`Intake.redacting`, ``serve
--redact``), a request's spans are redacted as they arrive, before any is kept, waiting or built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from otel_replay.errors import ReplayError
from otel_replay.importers import SpanEvent, SpanRecord, assemble_trace, span_bytes, span_from_bytes
from otel_replay.ingest import Ingested, ingest_one
from otel_replay.redaction import Redactor
from otel_replay.store import Store

T = TypeVar("T")

#: How often the writer looks for traces that have been quiet for ``flush_after``.
FLUSH_CHECK_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class Stored:
    """What one request, or one flush, changed: the runs stored or merged into, and the traces
    still waiting for their root span."""

    runs: tuple[Ingested, ...]
    waiting: int


class Intake:
    """The thread that owns the store (``open_store`` opens it, on that thread). ``on_stored``
    hears of every run stored or changed (from requests and flushes alike), on the writer thread."""

    def __init__(
        self,
        open_store: Callable[[], Store],
        source: str,
        flush_after: float,
        on_stored: Callable[[Ingested], None] | None = None,
        on_trouble: Callable[[str], None] | None = None,
    ) -> None:
        self._open_store = open_store
        self._source = source
        self._flush_after_ns = int(flush_after * 1e9)
        self._on_stored = on_stored
        self._on_trouble = on_trouble
        self._jobs: queue.Queue[tuple[Callable[[Store], Any], Future[Any]] | None] = queue.Queue()
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="agent-replay-writer")
        self._scrub = Redactor(())
        self._outcome_attribute: str | None = None

    def scoring(self, outcome_attribute: str | None) -> None:
        """Read each run's outcome from the root-span attribute ``outcome_attribute`` (``serve
        --outcome-attribute``, as ``import`` reads it), before `start`; None: the usual ones."""
        self._outcome_attribute = outcome_attribute

    def redacting(self, patterns: Sequence[str]) -> None:
        """Redact every run received with ``patterns`` (`otel_replay.redaction`), before `start`:
        each span as it arrives, and each run built (its metadata keeps the patterns)."""
        self._scrub = Redactor(patterns)

    @property
    def scrub(self) -> Redactor:
        """The patterns every run received is redacted with (none: a redactor that changes
        nothing); what an answer quotes of a request is redacted with them too."""
        return self._scrub

    def start(self) -> None:
        """Open the store on the writer thread; raises what opening it raised."""
        self._thread.start()
        self._ready.result()

    def stop(self) -> Stored:
        """Build every trace still waiting (a later part will merge into it), close the store."""
        flushed = self._submit(lambda store: self._flush(store, None))
        self._jobs.put(None)
        self._thread.join()
        return flushed.result()

    def receive(self, spans: Sequence[SpanRecord], untraced: str) -> Stored:
        """Store one request's spans (spans with no trace id form the trace ``untraced``), and
        return once they are committed; raises what the store raised."""
        return self._submit(lambda store: self._receive(store, spans, untraced)).result()

    def _submit(self, job: Callable[[Store], T]) -> Future[T]:
        done: Future[T] = Future()
        self._jobs.put((job, done))
        return done

    def _run(self) -> None:
        try:
            store = self._open_store()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while True:
                try:
                    item = self._jobs.get(timeout=FLUSH_CHECK_SECONDS)
                except queue.Empty:
                    self._timed_flush(store)
                    continue
                if item is None:
                    return
                job, done = item
                try:
                    done.set_result(job(store))
                except BaseException as exc:  # the request hears of it; the writer goes on
                    done.set_exception(exc)
        finally:
            store.close()

    def _receive(self, store: Store, spans: Sequence[SpanRecord], untraced: str) -> Stored:
        traces: dict[str, list[SpanRecord]] = {}
        if self._scrub:  # before a span waiting for its root is kept anywhere
            spans = [_redacted(span, self._scrub) for span in spans]
        for span in spans:
            traces.setdefault(span.trace_id or untraced, []).append(span)
        runs = []
        now = time.time_ns()
        with store.transaction():
            stored = store.stored(traces)
            waiting = store.pending([t for t in traces if t not in stored])
            for trace_id, arrived in traces.items():
                if trace_id in stored:  # another part of a stored run
                    runs.append(self._store(store, trace_id, arrived))
                    continue
                kept = waiting.get(trace_id, [])
                everything = [*map(span_from_bytes, kept), *arrived]
                if any(not span.parent_span_id for span in everything):  # the root is here
                    runs.append(self._store(store, trace_id, everything))
                    if kept:
                        store.drop_pending(trace_id)
                else:
                    store.keep_pending(trace_id, map(span_bytes, arrived), now)
            still = len(store.pending_traces())
        return self._heard(runs, still)

    def _timed_flush(self, store: Store) -> None:
        """Build the traces that have been quiet long enough, no request waiting on it: a trace
        that cannot be built (its spans hold what no run can: deterministic, so trying again would
        fail again) is dropped and said; any other failure (the disk, the store) is said and the
        traces wait for the next flush. The writer goes on either way: every later request would
        hang without it."""
        try:
            self._flush(store, time.time_ns() - self._flush_after_ns, dropping=True)
        except Exception as exc:
            self._trouble(f"waiting traces not stored yet, tried again later: {exc}")

    def _trouble(self, line: str) -> None:
        if self._on_trouble is not None:
            self._on_trouble(line)

    def _flush(self, store: Store, quiet_since_ns: int | None, dropping: bool = False) -> Stored:
        """Build the traces quiet since ``quiet_since_ns`` (every waiting trace, with None)."""
        runs = []
        with store.transaction():
            quiet = store.pending_traces(quiet_since_ns)
            for trace_id, kept in store.pending(quiet).items():
                try:
                    runs.append(
                        self._store(store, trace_id, [span_from_bytes(data) for data in kept])
                    )
                except ReplayError as exc:  # what the spans hold, not the store's state
                    if not dropping:
                        raise
                    self._trouble(f"trace {trace_id} dropped: it cannot be stored: {exc}")
                store.drop_pending(trace_id)
            waiting = len(store.pending_traces())
        return self._heard(runs, waiting)

    def _store(self, store: Store, trace_id: str, spans: Sequence[SpanRecord]) -> Ingested:
        run = assemble_trace(trace_id, spans, self._source, self._outcome_attribute)
        return ingest_one(store, run, redact=self._scrub.patterns)

    def _heard(self, runs: list[Ingested], waiting: int) -> Stored:
        if self._on_stored is not None:
            for run in runs:
                self._on_stored(run)
        return Stored(tuple(runs), waiting)


def _redacted(span: SpanRecord, scrub: Redactor) -> SpanRecord:
    """``span`` with every string it carries redacted (its ids and times are no text)."""
    return dataclasses.replace(
        span,
        name=scrub.text(span.name),
        attributes=scrub(span.attributes),
        status_message=scrub.text(span.status_message),
        events=[
            SpanEvent(scrub.text(e.name), e.time_unix_nano, scrub(e.attributes))
            for e in span.events
        ],
        resource=scrub(span.resource),
    )


def untraced_id(body: bytes) -> str:
    """The run id of a request's spans that carry no trace id: one run per request body."""
    return "untraced-" + hashlib.sha256(body).hexdigest()[:16]
