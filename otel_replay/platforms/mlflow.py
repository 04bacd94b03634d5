"""MLflow both ways, through a tracking server's REST API: an experiment's traces read in as runs,
and an attribution's verdict written back as assessments (feedback) on the trace and its culprit's
span, so the verdict shows in MLflow's own trace view.

A server is named ``mlflow://HOST:PORT`` (port 5000 when left out), an experiment by its name or
id after it: ``mlflow://127.0.0.1:5000/support-agent``. Requests go over plain HTTP, with
``Authorization: Bearer`` and the token in ``MLFLOW_TRACKING_TOKEN`` when it is set, else Basic
credentials from ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (a server run with
``--app-name basic-auth``), as MLflow's own client sends them.

* **In**: `read_mlflow` finds the experiment (``GET /api/2.0/mlflow/experiments/get`` by id,
  ``get-by-name`` by name), pages through its traces (``POST /api/3.0/mlflow/traces/search``,
  `SEARCH_PAGE` a page, by page token), then asks for their spans `TRACES_PER_REQUEST` at a time
  (``GET /api/3.0/mlflow/traces/batchGet``). Each trace is decoded by the MLflow reader
  (`otel_replay.importers._mlflow`) and assembled by the same rules as a file. With ``since``,
  a trace is read when it ended at or after it (MLflow's search filters on a trace's start only,
  so the choice is made on the trace's start and duration): a trace that straddles the bound
  comes back whole. A trace still being logged (MLflow gives a trace's spans only once they are
  all in) is left out with a warning in the read's report. Everything is fetched before the first
  run is handed over, so a server that fails half way leaves nothing half imported; every answer
  is bounded (`platforms._http`) and each page said to ``progress``.
* **Out**: `annotate_mlflow` writes ``agent_replay.verdict`` on the trace (the verdict as value,
  the report's explanation as rationale, the Point of Commitment and the outcome in its metadata)
  and ``agent_replay.point_of_commitment`` on the culprit step's span (the verdict as value, the
  step, step name, its attribution and confidence interval in its metadata: a value is text, so
  that the MLflow reader, which takes numbers and true/false as scores, does not read them back
  into the run), source ``CODE`` ``agent-replay``. Attributing the run again updates them in place (``PATCH``);
  a Point of Commitment that moved to another span has the old span's assessment deleted and
  the new one created, since MLflow does not move an assessment to another span.
"""

from __future__ import annotations

import base64
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from otel_replay._web import checked_url, shown_url
from otel_replay.errors import AddressError, PlatformError, ReplayError, TraceFormatError
from otel_replay.importers import ReadOptions, TraceBuffer
from otel_replay.model import Trajectory
from otel_replay.platforms._http import (
    MAX_ANSWER_BYTES,
    MAX_PAGES,
    Held,
    JsonClient,
    NotFound,
    Pages,
)

__all__ = [
    "COMMITMENT_ASSESSMENT",
    "KEY_VARIABLE",
    "SCHEME",
    "SOURCE_ID",
    "VERDICT_ASSESSMENT",
    "Feedback",
    "MlflowAddress",
    "annotate_mlflow",
    "is_mlflow_url",
    "mlflow_feedback",
    "parse_mlflow_url",
    "read_mlflow",
]

SCHEME = "mlflow://"
KEY_VARIABLE = "MLFLOW_TRACKING_TOKEN"
USER_VARIABLE = "MLFLOW_TRACKING_USERNAME"
PASSWORD_VARIABLE = "MLFLOW_TRACKING_PASSWORD"
DEFAULT_PORT = 5000
#: Traces asked for in one page of the search (MLflow takes at most 500).
SEARCH_PAGE = 100
#: Traces whose spans are asked for in one request.
TRACES_PER_REQUEST = 10
#: The most pages of the trace search followed.
MAX_SEARCH_PAGES = MAX_PAGES
SOURCE_ID = "agent-replay"
VERDICT_ASSESSMENT = "agent_replay.verdict"
COMMITMENT_ASSESSMENT = "agent_replay.point_of_commitment"
_V3 = "/api/3.0/mlflow/traces"
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)s")
#: A protobuf timestamp in JSON: seconds to the second, 0 to 9 digits of fraction, UTC.
_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class MlflowAddress:
    """An MLflow tracking server (``host``, ``port``) and, for reading, one of its experiments
    (a name, or an id when it is all digits and an experiment has that id)."""

    host: str
    port: int
    experiment: str | None = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        experiment = "/" + urllib.parse.quote(self.experiment, safe="") if self.experiment else ""
        return f"{SCHEME}{self.host}:{self.port}{experiment}"


def is_mlflow_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_mlflow_url(url: str) -> MlflowAddress:
    """``mlflow://HOST[:PORT][/EXPERIMENT]``; anything else is a `ReplayError` saying the form
    (the address shown without its query). A port that is no number, or 0, and an address with a
    user name or password are refused."""
    form = "mlflow://HOST:PORT/EXPERIMENT (a name or an id; the port is 5000 when left out)"
    shown = shown_url(url)
    if not is_mlflow_url(url):
        raise AddressError(f"{shown!r} is not an MLflow address: expected {form}")
    try:
        parts = checked_url("http://" + url[len(SCHEME) :], "MLflow address", shown=shown)
    except ReplayError as exc:
        raise AddressError(f"{exc}; expected {form}") from None
    if parts.query or parts.fragment:
        raise AddressError(f"{shown!r} is not an MLflow address: expected {form}")
    experiment = urllib.parse.unquote(parts.path.strip("/")) or None
    if experiment is not None and "/" in experiment:
        raise AddressError(
            f"{shown!r}: an experiment named with '/' in it is written with %2F "
            f"({urllib.parse.quote(experiment, safe='')})"
        )
    assert parts.hostname is not None  # checked_url saw a host
    return MlflowAddress(parts.hostname, parts.port or DEFAULT_PORT, experiment)


def _client(address: MlflowAddress, key: str | None) -> JsonClient:
    """The client, with the token (``key``, else ``MLFLOW_TRACKING_TOKEN``) as Bearer, or else the
    user name and password in ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` as
    Basic credentials (MLflow's basic-auth server), as MLflow's own client sends them."""
    key = os.environ.get(KEY_VARIABLE) if key is None else key
    user, password = os.environ.get(USER_VARIABLE), os.environ.get(PASSWORD_VARIABLE)
    if not key and user and password is not None:
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        variables = f"{USER_VARIABLE} and {PASSWORD_VARIABLE}"
        return JsonClient(
            "MLflow", address.base, basic, variables, max_bytes=MAX_ANSWER_BYTES,
            scheme="Basic", secret="user name and password",
        )  # fmt: skip
    variables = f"{KEY_VARIABLE} (or {USER_VARIABLE} and {PASSWORD_VARIABLE})"
    return JsonClient(
        "MLflow", address.base, key or None, KEY_VARIABLE if key else variables,
        max_bytes=MAX_ANSWER_BYTES,
    )  # fmt: skip


def _experiment_id(client: JsonClient, experiment: str) -> str:
    """The id of the experiment named ``experiment`` (or with that id); a `ReplayError` naming the
    experiments there when there is none."""
    asked = "/api/2.0/mlflow/experiments/get"
    if experiment.isdigit():
        try:
            found = client.get(asked, [("experiment_id", experiment)], "the experiment")
            return _id_of(client, found, asked)
        except NotFound:
            pass  # a name made of digits
    asked = "/api/2.0/mlflow/experiments/get-by-name"
    try:
        found = client.get(asked, [("experiment_name", experiment)], "the experiment")
    except NotFound:
        names = _experiment_names(client)
        there = ", ".join(repr(n) for n in names[:20]) if names else "none"
        raise PlatformError(
            f"MLflow at {client.base} has no experiment {experiment!r} (its experiments: {there})"
        ) from None
    return _id_of(client, found, asked)


def _id_of(client: JsonClient, answer: Any, path: str) -> str:
    experiment = answer.get("experiment") if isinstance(answer, dict) else None
    found = experiment.get("experiment_id") if isinstance(experiment, dict) else None
    if not isinstance(found, str) or not found:
        raise PlatformError(f"MLflow at {client.base} answered {path} with no experiment")
    return found


def _experiment_names(client: JsonClient) -> list[str]:
    """The names of the first hundred experiments (one page)."""
    body = {"max_results": 100}
    page = client.post("/api/2.0/mlflow/experiments/search", (), body, "the experiments' names")
    found = page.get("experiments") if isinstance(page, dict) else None
    return [str(e.get("name")) for e in found or [] if isinstance(e, dict)]


def _ended_ns(info: Mapping[str, Any]) -> int | None:
    """When a trace ended (its ``request_time`` plus ``execution_duration``), in nanoseconds since
    the epoch; None when the server gave neither in a form read here."""
    started, took = info.get("request_time"), info.get("execution_duration")
    stamp = _TIMESTAMP.fullmatch(started) if isinstance(started, str) else None
    if stamp is None:
        return None
    try:
        moment = datetime.fromisoformat(stamp[1]).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    fraction = int((stamp[2] or "0").ljust(9, "0")[:9])
    seconds = _DURATION.fullmatch(took) if isinstance(took, str) else None
    duration = round(float(seconds[1]) * 1e9) if seconds else 0
    return int(moment.timestamp()) * 1_000_000_000 + fraction + duration


def _trace_ids(
    client: JsonClient,
    experiment_id: str,
    since_ns: int | None,
    progress: Progress,
    options: ReadOptions,
) -> list[str]:
    """The ids of the experiment's finished traces (ended at or after ``since_ns``), oldest first;
    those still being logged are left for a later import, and a warning says how many."""
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
    body: dict[str, Any] = {
        "locations": [location],
        "max_results": SEARCH_PAGE,
        "order_by": ["timestamp_ms ASC"],
    }
    pages = Pages(client, "the trace search", limit=MAX_SEARCH_PAGES)
    ids: list[str] = []
    running: list[str] = []
    while True:
        page = client.post(f"{_V3}/search", (), body, pages.this)
        infos = page.get("traces", []) if isinstance(page, dict) else None
        if not isinstance(infos, list):
            raise PlatformError(f"MLflow at {client.base} answered {pages.this} with no traces")
        for info in infos:
            trace_id = info.get("trace_id") if isinstance(info, dict) else None
            if not isinstance(trace_id, str) or not trace_id:
                raise PlatformError(
                    f"MLflow at {client.base} answered {pages.this} with a trace without an id"
                )
            ended = _ended_ns(info) if since_ns is not None else None
            if info.get("state") == "IN_PROGRESS":
                running.append(trace_id)
            elif since_ns is None or ended is None or ended >= since_ns:
                ids.append(trace_id)
        token = pages.turn(page.get("next_page_token"))
        progress(f"MLflow: {pages.count} page(s) of the trace search read, {len(ids)} trace(s)")
        if token is None:
            if running:
                options.report.warnings.append(
                    f"MLflow at {client.base}: {len(running)} trace(s) still being logged were "
                    f"left out (the first: {running[0]}); import again once they end"
                )
            return list(dict.fromkeys(ids))
        body["page_token"] = token


def _traces(
    client: JsonClient, trace_ids: list[str], progress: Progress, options: ReadOptions
) -> list[dict[str, Any]]:
    """The traces with their spans, as the server gives them, in the order of ``trace_ids``. A
    trace the server leaves out of its answer (MLflow gives only traces whose spans are all in:
    one still being written, or deleted since the search) is left out, and a warning names it."""
    found: list[dict[str, Any]] = []
    held = Held(client)
    for start in range(0, len(trace_ids), TRACES_PER_REQUEST):
        chunk = trace_ids[start : start + TRACES_PER_REQUEST]
        what = f"the spans of traces {start + 1} to {start + len(chunk)} of {len(trace_ids)}"
        answer = client.get(f"{_V3}/batchGet", [("trace_ids", t) for t in chunk], what)
        traces = answer.get("traces", []) if isinstance(answer, dict) else None
        if not isinstance(traces, list):
            raise PlatformError(f"MLflow at {client.base} answered {what} with no traces")
        by_id: dict[str, dict[str, Any]] = {}
        for trace in traces:
            info = trace.get("trace_info") if isinstance(trace, dict) else None
            trace_id = info.get("trace_id") if isinstance(info, dict) else None
            if isinstance(trace_id, str):
                by_id[trace_id] = trace
        missing = [t for t in chunk if t not in by_id]
        if missing:
            options.report.warnings.append(
                f"MLflow at {client.base} gave no spans for {len(missing)} trace(s) when asked "
                f"for {what} (the first: {missing[0]}): spans still being written, or the trace "
                "deleted since the search; left out, import again to take them"
            )
        found += [by_id[t] for t in chunk if t in by_id]
        held.add(what, sum(_span_count(t) for t in by_id.values()))
        progress(f"MLflow: the spans of {start + len(chunk)} of {len(trace_ids)} trace(s) read")
    return found


def _span_count(trace: dict[str, Any]) -> int:
    """The spans of a trace in a ``batchGet`` answer (``{"trace_info", "spans"}``)."""
    spans = trace.get("spans")
    return len(spans) if isinstance(spans, list) else 0


def read_mlflow(
    url: str,
    since_ns: int | None = None,
    options: ReadOptions | None = None,
    key: str | None = None,
    progress: Progress | None = None,
) -> Iterator[Trajectory]:
    """The runs of the experiment ``url`` names (``mlflow://HOST:PORT/EXPERIMENT``): every trace,
    or with ``since_ns`` every trace that ended at or after it, each whole. ``key``: the token
    (default: ``MLFLOW_TRACKING_TOKEN``); ``progress`` is told of each page read. A server that
    cannot be reached or answers out of bounds, or has no such experiment, raises `ReplayError`
    before any run is yielded."""
    address = parse_mlflow_url(url)
    if address.experiment is None:
        raise AddressError(f"{url!r} names no experiment: mlflow://HOST:PORT/EXPERIMENT")
    options = options or ReadOptions()
    said = progress or (lambda line: None)
    client = _client(address, key)
    experiment_id = _experiment_id(client, address.experiment)
    trace_ids = _trace_ids(client, experiment_id, since_ns, said, options)
    traces = _traces(client, trace_ids, said, options)
    from otel_replay.importers import MLFLOW_FORMAT, decode_mlflow_trace

    buffer = TraceBuffer(options, {"source": address.url, "format": MLFLOW_FORMAT})
    order = 0
    for number, trace in enumerate(traces, start=1):
        options.report.records += 1

        def invalid(error: TraceFormatError, number: int = number) -> None:
            where = f"trace {number} {error.where}" if error.where else f"trace {number}"
            options.invalid(TraceFormatError(error.reason, path=address.url, where=where))

        for span in decode_mlflow_trace(trace, invalid):
            span.order = order
            order += 1
            buffer.add(span, "untraced-mlflow")
    yield from buffer.drain()


@dataclass(frozen=True, slots=True)
class Feedback:
    """One assessment as MLflow takes it: on the trace, or on one of its spans (``span_id``)."""

    name: str
    value: str | float
    rationale: str
    metadata: Mapping[str, str]
    span_id: str | None = None

    def to_json(self, trace_id: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "trace_id": trace_id,
            "assessment_name": self.name,
            "source": {"source_type": "CODE", "source_id": SOURCE_ID},
            "feedback": {"value": self.value},
            "rationale": self.rationale,
            "metadata": dict(self.metadata),
        }
        if self.span_id is not None:
            body["span_id"] = self.span_id
        return body


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def mlflow_trace_id(trajectory: Trajectory) -> str:
    """The MLflow trace id of a run read from spans: ``tr-`` and its trace id in hex (what MLflow
    names the traces it writes); a run of no such id raises `ReplayError`."""
    if _TRACE_ID.fullmatch(trajectory.id):
        return "tr-" + trajectory.id
    if trajectory.id.startswith("tr-"):
        return trajectory.id
    raise PlatformError(
        f"run {trajectory.id} has no trace id MLflow could know it by (it was not read from "
        "spans), so there is no trace in MLflow to annotate"
    )


def mlflow_feedback(report: Mapping[str, Any], trajectory: Trajectory) -> list[Feedback]:
    """The assessments of an attribution report (the JSON `otel_replay.report` writes) on the trace
    of its run: on the Point of Commitment's span (when the verdict names one and the step has a
    span: a step rebuilt from the conversation has none, and the trace's assessment names it),
    and on the trace."""
    mlflow_trace_id(trajectory)  # a run MLflow cannot know is told before anything is written
    verdict = _text(report.get("verdict"))
    explanation = _text(report.get("explanation"))
    commitment = report.get("point_of_commitment")
    run = {"trajectory_id": trajectory.id, "mode": _text(report.get("mode")), "verdict": verdict}
    step = None
    if isinstance(commitment, int) and 0 <= commitment < len(trajectory.steps):
        step = trajectory.steps[commitment]
    found: list[Feedback] = []
    if step is not None and (step.span_id is None or not _SPAN_ID.fullmatch(step.span_id)):
        explanation = (
            f"{explanation} (step {commitment}, {step.name}, was rebuilt from the conversation: "
            "it has no span of its own)"
        ).lstrip()
    elif step is not None:
        rows = [s for s in report.get("steps") or [] if s.get("index") == commitment]
        row = rows[0] if rows else {}
        attribution = row.get("attribution")
        metadata = {**run, "step": str(commitment), "kind": step.kind.value}
        metadata |= {"step_name": step.name, "attribution": _text(attribution)}
        metadata |= {"ci_low": _text(row.get("ci_low")), "ci_high": _text(row.get("ci_high"))}
        if isinstance(attribution, (int, float)) and math.isfinite(attribution):
            metadata["attribution"] = repr(float(attribution))
        found.append(Feedback(COMMITMENT_ASSESSMENT, verdict, explanation, metadata, step.span_id))
    outcome = report.get("outcome")
    metadata = {**run, "point_of_commitment": _text(commitment), "outcome": _text(outcome)}
    found.append(Feedback(VERDICT_ASSESSMENT, verdict, explanation, metadata))
    return found


@dataclass(frozen=True, slots=True)
class Written:
    """An assessment written: its id, and whether one already there was updated."""

    feedback: Feedback
    assessment_id: str
    updated: bool


def annotate_mlflow(
    url: str, report: Mapping[str, Any], trajectory: Trajectory, key: str | None = None
) -> list[Written]:
    """Write `mlflow_feedback` to the MLflow at ``url`` (``mlflow://HOST:PORT``; an experiment
    after it is allowed and not needed: trace ids are unique on a server), updating the ones an
    earlier attribution wrote. A trace MLflow does not have raises `ReplayError` before anything
    is written."""
    address = parse_mlflow_url(url)
    feedback = mlflow_feedback(report, trajectory)
    trace_id = mlflow_trace_id(trajectory)
    client = _client(address, key)
    path = f"{_V3}/{urllib.parse.quote(trace_id, safe='')}"
    try:
        answer = client.get(path, (), "the trace's assessments")
    except NotFound:
        raise PlatformError(
            f"MLflow at {client.base} does not have trace {trace_id} (run {trajectory.id}): "
            "assessments go to the MLflow the run's trace was logged to"
        ) from None
    trace = answer.get("trace") if isinstance(answer, dict) else None
    info = trace.get("trace_info") if isinstance(trace, dict) else None
    earlier = [
        a
        for a in (info or {}).get("assessments") or []
        if isinstance(a, dict) and (a.get("source") or {}).get("source_id") == SOURCE_ID
    ]
    written: list[Written] = []
    for one in feedback:
        mine = [a for a in earlier if a.get("assessment_name") == one.name]
        same = next((a for a in mine if a.get("span_id") == one.span_id), None)
        for stale in mine:  # on another span (the culprit moved), or a second copy
            if stale is not same:
                client.delete(f"{path}/assessments/{stale['assessment_id']}", "a stale assessment")
        if same is not None:
            body = {
                "assessment": {**one.to_json(trace_id), "assessment_id": same["assessment_id"]},
                "update_mask": "feedback,rationale,metadata",
            }
            client.patch(f"{path}/assessments/{same['assessment_id']}", body, "an assessment")
            written.append(Written(one, str(same["assessment_id"]), True))
        else:
            created = client.post(
                f"{path}/assessments", (), {"assessment": one.to_json(trace_id)}, "an assessment"
            )
            made = created.get("assessment") if isinstance(created, dict) else None
            written.append(Written(one, _text((made or {}).get("assessment_id")), False))
    return written
