"""Arize Phoenix both ways, through its REST API: a project's spans read in as runs, and an
attribution's verdict written back as span annotations, so the culprit shows in Phoenix's own UI.

A server is named ``phoenix://HOST:PORT`` (port 6006 when left out), a project by its name after it:
``phoenix://127.0.0.1:6006/my-project``. Requests go over plain HTTP, with ``Authorization: Bearer``
and the key in ``PHOENIX_API_KEY`` when it is set.

* **In**: `read_phoenix` pages through ``GET /v1/projects/{project}/spans/otlpv1`` (1,000 spans a
  page, by cursor) and hands the spans to the same assembly as files (`otel_replay.importers`), so
  every rule of span to step applies. With ``since``, Phoenix filters on each span's start, so a trace
  that began before the bound comes back in part: the spans of every trace seen that started before
  it are then asked for by trace id, and every trace comes back whole. Everything is fetched before
  the first run is handed over: a server that fails half way leaves nothing half imported. The spans
  of the project (since the bound) are held in memory while they are fetched, as a JSON file's are.
* **Out**: `annotate_phoenix` posts ``/v1/span_annotations?sync=true`` (``annotator_kind`` CODE,
  identifier ``agent-replay``, so a run attributed again updates its annotations in place): on the
  Point of Commitment's span the verdict as label, the step's attribution as score and the report's
  explanation; on the run's root span the verdict, with the run's outcome as score.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from otel_replay._web import checked_url, shown_url
from otel_replay.errors import AddressError, PlatformError, ReplayError, TraceFormatError, setting
from otel_replay.importers import (
    PHOENIX_FORMAT,
    ReadOptions,
    SpanRecord,
    TraceBuffer,
    decode_phoenix_page,
)
from otel_replay.model import Trajectory
from otel_replay.platforms._http import (
    MAX_ANSWER_BYTES,
    MAX_HELD_BYTES,
    MAX_HELD_SPANS,
    Held,
    JsonClient,
    NotFound,
    Pages,
)

__all__ = [
    "ANNOTATION_IDENTIFIER",
    "COMMITMENT_ANNOTATION",
    "KEY_VARIABLE",
    "SCHEME",
    "VERDICT_ANNOTATION",
    "Annotation",
    "PhoenixAddress",
    "annotate_phoenix",
    "is_phoenix_url",
    "parse_phoenix_url",
    "phoenix_annotations",
    "read_phoenix",
]

SCHEME = "phoenix://"
KEY_VARIABLE = "PHOENIX_API_KEY"
DEFAULT_PORT = 6006
#: The most spans Phoenix returns in one page.
PAGE_SIZE = 1000
#: Trace ids asked for in one request when the parts of traces before ``since`` are fetched.
_TRACES_PER_REQUEST = 50
ANNOTATION_IDENTIFIER = "agent-replay"
COMMITMENT_ANNOTATION = "agent_replay.point_of_commitment"
VERDICT_ANNOTATION = "agent_replay.verdict"
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, slots=True)
class PhoenixAddress:
    """A Phoenix server (``host``, ``port``) and, for reading, one of its projects."""

    host: str
    port: int
    project: str | None = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        project = "/" + urllib.parse.quote(self.project, safe="") if self.project else ""
        return f"{SCHEME}{self.host}:{self.port}{project}"


def is_phoenix_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_phoenix_url(url: str) -> PhoenixAddress:
    """``phoenix://HOST[:PORT][/PROJECT]``; anything else is a `ReplayError` saying the form, which
    shows the address without its query (`otel_replay._web.shown_url`). A port that is no number,
    or 0, and an address with a user name or password are refused."""
    form = "phoenix://HOST:PORT/PROJECT (the port is 6006 when left out)"
    shown = shown_url(url)
    if not is_phoenix_url(url):
        raise AddressError(f"{shown!r} is not a Phoenix address: expected {form}")
    http = "http://" + url[len(SCHEME) :]
    try:
        parts = checked_url(http, "Phoenix address", shown=shown)
    except ReplayError as exc:
        raise AddressError(f"{exc}; expected {form}") from None
    if parts.query or parts.fragment:
        raise AddressError(f"{shown!r} is not a Phoenix address: expected {form}")
    project = urllib.parse.unquote(parts.path.strip("/")) or None
    if project is not None and ("/" in project or "?" in project or "#" in project):
        raise AddressError(f"{shown!r}: a Phoenix project name has no '/', '?' or '#'")
    assert parts.hostname is not None  # checked_url saw a host
    return PhoenixAddress(parts.hostname, parts.port or DEFAULT_PORT, project)


#: Told of each page read: one line saying how far the reading is.
Progress = Callable[[str], None]


def _client(
    address: PhoenixAddress, key: str | None, max_bytes: int = MAX_ANSWER_BYTES
) -> JsonClient:
    key = os.environ.get(KEY_VARIABLE) if key is None else key
    cap = setting("max_record_bytes")  # a page is one record
    return JsonClient(
        "Phoenix", address.base, key or None, KEY_VARIABLE, max_bytes=max_bytes, cap=cap
    )


def _project_path(address: PhoenixAddress) -> str:
    assert address.project is not None
    return "/v1/projects/" + urllib.parse.quote(address.project, safe="")


def _check_project(client: JsonClient, address: PhoenixAddress) -> None:
    """A `ReplayError` naming the projects there when ``address.project`` is not one of them."""
    try:
        client.get(_project_path(address))
    except NotFound:
        names = _project_names(client)
        there = ", ".join(names[:20]) if names else "none"
        raise PlatformError(
            f"Phoenix at {client.base} has no project {address.project!r} (its projects: {there})"
        ) from None


def _project_names(client: JsonClient) -> list[str]:
    """The first hundred or so project names, page by page; an answer that is no page of
    projects, or a cursor given twice, raises `ReplayError`."""
    names: list[str] = []
    pages = Pages(client, "/v1/projects", "cursor")
    cursor: str | None = None
    while True:
        params = [("limit", "100")] + ([("cursor", cursor)] if cursor else [])
        page = client.get("/v1/projects", params, pages.this)
        if not isinstance(page, dict) or not isinstance(page.get("data") or [], list):
            raise PlatformError(
                f"Phoenix at {client.base} answered /v1/projects with no project page"
            )
        names.extend(str(p.get("name")) for p in page.get("data") or [] if isinstance(p, dict))
        cursor = pages.turn(page.get("next_cursor"))
        if not cursor or len(names) >= 100:
            return names


def _iso(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc).replace(microsecond=rest // 1000)
    return moment.isoformat()


def read_phoenix(
    url: str,
    since_ns: int | None = None,
    options: ReadOptions | None = None,
    key: str | None = None,
    *,
    progress: Progress | None = None,
    held: tuple[int, int] = (MAX_HELD_BYTES, MAX_HELD_SPANS),
) -> Iterator[Trajectory]:
    """The runs of the project ``url`` names (``phoenix://HOST:PORT/PROJECT``): every trace, or with
    ``since_ns`` every trace with a span started at or after it, each whole. ``key`` is the API key
    (default: ``PHOENIX_API_KEY``); ``progress`` is told of each page read. A page is one record:
    it holds at most the options' ``max_record_bytes``, and the pages held until the runs are made
    at most ``held`` (bytes, spans). A server that cannot be reached, refuses the key, has no such
    project or passes a bound raises `ReplayError` before any run is yielded."""
    address = parse_phoenix_url(url)
    if address.project is None:
        raise AddressError(f"{url!r} names no project: phoenix://HOST:PORT/PROJECT")
    options = options or ReadOptions()
    client = _client(address, key, options.max_record_bytes)
    _check_project(client, address)
    spans_path = _project_path(address) + "/spans/otlpv1"
    fetched = _Fetched(address.url, options, Held(client, *held), progress or (lambda line: None))
    base = [("limit", str(PAGE_SIZE))]
    fetched.pages(client, spans_path, base + ([("start_time", _iso(since_ns))] if since_ns else []))
    if since_ns is not None:
        trace_ids = sorted(fetched.trace_ids)
        for start in range(0, len(trace_ids), _TRACES_PER_REQUEST):
            chunk = trace_ids[start : start + _TRACES_PER_REQUEST]
            earlier = [("end_time", _iso(since_ns)), *(("trace_id", t) for t in chunk)]
            fetched.pages(client, spans_path, base + earlier)
    yield from fetched.runs()


class _Fetched:
    """The spans fetched so far, and the runs they make once every page is in."""

    def __init__(self, source: str, options: ReadOptions, held: Held, progress: Progress) -> None:
        self._source = source
        self._options = options
        self._held = held
        self._progress = progress
        self._spans: list[SpanRecord] = []
        self._pages = 0
        self.trace_ids: set[str] = set()

    def pages(self, client: JsonClient, path: str, params: Sequence[tuple[str, str]]) -> None:
        cursor: str | None = None
        pages = Pages(client, path, "cursor")
        while True:
            asked = [*params, *([("cursor", cursor)] if cursor else [])]
            page = client.get(path, asked, pages.this)
            if not isinstance(page, dict) or not isinstance(page.get("data"), list):
                raise PlatformError(f"Phoenix at {client.base} answered {path} with no span page")
            self._pages += 1
            self._options.report.records += 1
            before = len(self._spans)
            for span in decode_phoenix_page(page, self._invalid(self._pages)):
                self._spans.append(span)
                self.trace_ids.add(span.trace_id)
            self._held.add(pages.this, len(self._spans) - before)
            self._progress(
                f"Phoenix: {self._pages} page(s) of spans read, {len(self._spans)} span(s) of "
                f"{len(self.trace_ids)} trace(s)"
            )
            cursor = pages.turn(page.get("next_cursor"))
            if not cursor:
                return

    def _invalid(self, page: int) -> Any:
        def invalid(error: TraceFormatError) -> None:
            where = f"page {page} {error.where}" if error.where else f"page {page}"
            self._options.invalid(TraceFormatError(error.reason, path=self._source, where=where))

        return invalid

    def runs(self) -> Iterator[Trajectory]:
        """The runs, oldest first: Phoenix sends the newest span first, so the spans are turned
        back into the order they arrived in (the last tie-breaker between steps)."""
        metadata = {"source": self._source, "format": PHOENIX_FORMAT}  # the pages a file holds
        buffer = TraceBuffer(self._options, metadata)
        for order, span in enumerate(reversed(self._spans)):
            span.order = order
            buffer.add(span, "untraced-phoenix")
        self._spans = []
        yield from buffer.drain()


@dataclass(frozen=True, slots=True)
class Annotation:
    """One span annotation as Phoenix takes it (``result``: label, score, explanation)."""

    span_id: str
    name: str
    label: str
    score: float | None
    explanation: str
    metadata: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "span_id": self.span_id,
            "name": self.name,
            "annotator_kind": "CODE",
            "identifier": ANNOTATION_IDENTIFIER,
            "result": {"label": self.label, "score": self.score, "explanation": self.explanation},
            "metadata": dict(self.metadata),
        }


def _root_span(trajectory: Trajectory) -> str | None:
    ids = {span.span_id for span in trajectory.spans}
    for span in trajectory.spans:
        if span.parent_span_id is None or span.parent_span_id not in ids:
            return span.span_id if _SPAN_ID.fullmatch(span.span_id) else None
    return None


def phoenix_annotations(report: Mapping[str, Any], trajectory: Trajectory) -> list[Annotation]:
    """The annotations of an attribution report (the JSON `otel_replay.report` writes) on the spans
    of its run: the Point of Commitment's step span (when the verdict names one and the step has a
    span: a step rebuilt from the conversation has none, and the root span's explanation names it),
    and the root span. A run whose spans are not known (not read from spans) raises `ReplayError`."""
    verdict = str(report.get("verdict"))
    explanation = str(report.get("explanation") or "")
    commitment = report.get("point_of_commitment")
    run = {"trajectory_id": trajectory.id, "mode": report.get("mode"), "verdict": verdict}
    annotations: list[Annotation] = []
    root = _root_span(trajectory)
    if root is None:
        raise PlatformError(
            f"run {trajectory.id} has no root span with a span id (it was not read from spans), "
            "so there is no span in Phoenix to annotate"
        )
    step = None
    if isinstance(commitment, int) and 0 <= commitment < len(trajectory.steps):
        step = trajectory.steps[commitment]
    if step is not None and (step.span_id is None or not _SPAN_ID.fullmatch(step.span_id)):
        # a step rebuilt from the conversation has no span of its own: the root span names it
        explanation = (
            f"{explanation} (step {commitment}, {step.name}, was rebuilt from the conversation: "
            "it has no span of its own)"
        ).lstrip()
        step = None
    if step is not None and step.span_id is not None:
        rows = [s for s in report.get("steps") or [] if s.get("index") == commitment]
        row = rows[0] if rows else {}
        attribution = row.get("attribution")
        annotations.append(
            Annotation(
                step.span_id,
                COMMITMENT_ANNOTATION,
                verdict,
                attribution if isinstance(attribution, (int, float)) else None,
                explanation,
                {
                    **run,
                    "step": commitment,
                    "kind": step.kind.value,
                    "step_name": step.name,
                    "ci_low": row.get("ci_low"),
                    "ci_high": row.get("ci_high"),
                },
            )
        )
    outcome = report.get("outcome")
    annotations.append(
        Annotation(
            root,
            VERDICT_ANNOTATION,
            verdict,
            outcome if isinstance(outcome, (int, float)) else None,
            explanation,
            {**run, "point_of_commitment": commitment},
        )
    )
    return annotations


def annotate_phoenix(
    url: str, report: Mapping[str, Any], trajectory: Trajectory, key: str | None = None
) -> list[Annotation]:
    """Write `phoenix_annotations` to the Phoenix at ``url`` (``phoenix://HOST:PORT``; a project
    after it is allowed and not needed: span ids are unique across projects); return them. Spans
    Phoenix does not have raise `ReplayError`, and nothing is written."""
    address = parse_phoenix_url(url)
    annotations = phoenix_annotations(report, trajectory)
    client = _client(address, key)
    body = {"data": [a.to_json() for a in annotations]}
    try:
        client.post("/v1/span_annotations", [("sync", "true")], body)
    except NotFound as exc:
        raise PlatformError(
            f"Phoenix at {client.base} does not have the spans of run {trajectory.id} "
            f"({exc.detail or 'span not found'}): annotations go to the Phoenix the run's spans "
            "were sent to"
        ) from None
    return annotations
