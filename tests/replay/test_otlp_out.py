"""``--otlp-endpoint URL`` (issue 24): fork, resume and ``attribute --keep-rollouts N`` send the runs
they make as OTLP/HTTP protobuf, to this project's own receiver (``serve``) and to a loopback
server that decodes what came with the real OTel protobuf messages; an endpoint down or refusing
is one error line naming the URL and the status, and the run is stored all the same."""

from __future__ import annotations

import dataclasses
import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from typer.testing import CliRunner, Result

from otel_replay import Store, Trajectory
from otel_replay.errors import ExportError, ReplayError
from otel_replay.otlp_encode import Destination, destination, send_otlp
from otel_replay.receiver._http import Receiver
from otel_replay.replay._tracing import run_spans
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT
from tests.http_stub import answer, stub

AGENT_FILE = ROOT / "examples" / "incident" / "agent.py"
SECRET = "sk-do-not-print-0123456789"
LIVE = ("--agent", f"{AGENT_FILE}:investigate", "--outcome", f"{AGENT_FILE}:outcome")


@dataclass
class Endpoint:
    """A loopback OTLP/HTTP server that keeps what it is sent and answers ``statuses`` in turn
    (then 200 with an empty ExportTraceServiceResponse)."""

    statuses: list[int] = field(default_factory=list)
    retry_after: str | None = "0"
    taken: bytes = b""  # the body of a 200 answer
    got: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self) -> list[ExportTraceServiceRequest]:
        """What came, decoded as OTLP/HTTP protobuf (gunzipped when it says it is gzip)."""
        decoded = []
        for _, headers, body in self.got:
            if headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            decoded.append(ExportTraceServiceRequest.FromString(body))
        return decoded


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.got.append((self.path, headers, body))
            status = state.statuses.pop(0) if state.statuses else 200
            answer = state.taken if status == 200 else f"no thanks ({status})".encode()
            self.send_response(status)
            self.send_header(
                "Content-Type", "application/x-protobuf" if status == 200 else "text/plain"
            )
            if status in (429, 503) and state.retry_after is not None:
                self.send_header("Retry-After", state.retry_after)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    state.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=state.server.serve_forever, daemon=True)
    serving.start()
    yield state
    state.server.shutdown()
    state.server.server_close()


@dataclass(frozen=True)
class Recorded:
    store: Path
    id: str
    at: int
    output: str


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The incident investigator recorded once; a fork of it hides deploy v841 from list_deploys."""
    store = tmp_path_factory.mktemp("otlp-out") / "store.db"
    run_id = ok(invoke(CliRunner(), store, "record", *LIVE)).stdout.strip().splitlines()[-1]
    with Store.open(store) as db:
        original = db.get(run_id)
    (at,) = [s.index for s in original.steps if s.name == "list_deploys"]
    deploys = [d for d in original.steps[at].output if d["version"] != "v841"]
    return Recorded(store, run_id, at, orjson.dumps(deploys).decode())


def _fork(recorded: Recorded, *options: str, env: dict[str, str] | None = None) -> Result:
    args = ["fork", recorded.id, "--at", str(recorded.at), "--value", recorded.output, *LIVE]
    return invoke(CliRunner(env=env), recorded.store, *args, *options)


def _forked_id(result: Result) -> str:
    return result.stdout.splitlines()[0].removeprefix("forked ")


def _load(store: Path, run_id: str) -> Trajectory:
    with Store.open(store, read_only=True) as db:
        return db.get(run_id)


def _content(run: Trajectory) -> list[tuple[Any, ...]]:
    """Each step's content; a tool call's correlation id left out (an import reads it from the
    model turn that asked for the call, a live agent's record may not hold it)."""
    return [
        (s.kind, s.name, {k: v for k, v in s.inputs.items() if k != "tool_call_id"}, s.output,
         s.status, s.error)
        for s in run.steps
    ]  # fmt: skip


def _attributes(span: Span) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind) if kind else None
    return values


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _root(request: ExportTraceServiceRequest) -> Span:
    (root,) = [s for s in _spans(request) if not s.parent_span_id]
    return root


# --- into this project's own receiver ----------------------------------------------------------


def test_a_fork_sent_to_serve_arrives_as_the_same_run(recorded: Recorded, tmp_path: Path) -> None:
    received = tmp_path / "received.db"
    receiver = Receiver(lambda: Store.open(received), "127.0.0.1", 0, flush_after=30.0)
    receiver.start()
    try:
        result = ok(_fork(recorded, "--otlp-endpoint", receiver.url))  # no path: /v1/traces
    finally:
        receiver.stop()
    forked = _load(recorded.store, _forked_id(result))
    assert f"sent {forked.id} to {receiver.url}/v1/traces ({len(forked.steps) + 1} spans)" in (
        result.stdout
    )
    with Store.open(received, read_only=True) as db:
        (summary,) = db.summaries()
        arrived = db.get(summary.id)
    assert _content(arrived) == _content(forked)
    assert arrived.identity == forked.identity
    assert arrived.outcome == forked.outcome == 0.0
    assert arrived.metadata["answer"] == forked.metadata["answer"]
    assert arrived.metadata["agent"] == forked.metadata["agent"]


# --- the body, decoded with the OTel protobuf messages -----------------------------------------


def test_the_spans_name_the_source_run_and_the_move_and_link_to_its_trace(
    recorded: Recorded, endpoint: Endpoint
) -> None:
    url = f"{endpoint.url}/custom/traces"  # a path: used as it is
    env = {"COLUMNS": "250", "OTEL_EXPORTER_OTLP_HEADERS": "x-project-name=from%20env,x-team=sre"}
    options = ["--otlp-endpoint", url, "--otlp-header", "x-project-name=counterfactuals"]
    result = ok(_fork(recorded, *options, "--otlp-compression", "gzip", env=env))
    forked = _load(recorded.store, _forked_id(result))
    original = _load(recorded.store, recorded.id)
    ((path, headers, _),) = endpoint.got
    assert path == "/custom/traces"
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["content-encoding"] == "gzip"
    assert headers["x-project-name"] == "counterfactuals"  # the option wins over the variable
    assert headers["x-team"] == "sre"
    (request,) = endpoint.requests()
    root = _root(request)
    said = _attributes(root)
    assert said["agent_replay.run_id"] == forked.id
    assert said["agent_replay.forked_from"] == recorded.id
    assert said["agent_replay.fork_at"] == recorded.at
    assert said["agent_replay.move"] == forked.metadata["move"]
    assert orjson.loads(said["agent_replay.injected"])["output"] == orjson.loads(recorded.output)
    assert said["agent_replay.outcome"] == 0.0
    (link,) = root.links
    assert link.trace_id.hex() == original.id  # a recorded run's id is its trace id
    (original_root,) = [n.span_id for n in original.spans if n.parent_span_id is None]
    assert link.span_id.hex() == original_root
    assert said["agent_replay.source_trace_id"] == original.id  # for backends that drop links
    assert said["agent_replay.source_span_id"] == original_root
    children = [s for s in _spans(request) if s.parent_span_id]
    assert [s.name for s in children] == [f"{s.kind.value} {s.name}" for s in forked.steps]
    assert all(s.trace_id == root.trace_id for s in _spans(request))


def test_the_same_run_sent_twice_is_the_same_trace(recorded: Recorded) -> None:
    forked_id = _forked_id(ok(_fork(recorded)))
    forked = _load(recorded.store, forked_id)
    first, again = run_spans(forked, now=10**18), run_spans(forked, now=2 * 10**18)
    assert first.trace_id == again.trace_id
    assert [s.span_id for s in _spans(first.request)] == [s.span_id for s in _spans(again.request)]
    assert first.trace_id != recorded.id


# --- an endpoint down or refusing --------------------------------------------------------------


def _count(store: Path) -> int:
    with Store.open(store, read_only=True) as db:
        return len(db.summaries())


def test_an_endpoint_down_is_one_line_and_the_fork_is_stored(
    recorded: Recorded, tmp_path: Path
) -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_address[1]}/v1/traces"
    closed.server_close()  # nothing listens there now
    before = _count(recorded.store)
    result = _fork(recorded, "--seed", "7", "--otlp-endpoint", url)
    line = one_line_error(result)
    assert line.startswith(f"error: could not reach the OTLP endpoint {url}: ")
    assert "refused" in line.lower()
    forked_id = _forked_id(result)
    assert line.endswith(f"; the fork {forked_id} stored, not sent")
    assert _count(recorded.store) == before + 1
    assert _load(recorded.store, forked_id).metadata["forked_from"] == recorded.id


def test_a_refusal_is_not_tried_again(recorded: Recorded, endpoint: Endpoint) -> None:
    endpoint.statuses = [400]
    result = _fork(recorded, "--otlp-endpoint", endpoint.url)
    line = one_line_error(result)
    url = f"{endpoint.url}/v1/traces"
    assert line.startswith(f"error: the OTLP endpoint {url} answered 400 Bad Request: no thanks")
    assert len(endpoint.got) == 1
    assert result.stdout.startswith("forked ")  # the fork is shown and stored all the same
    assert "sent " not in result.stdout


def test_busy_answers_are_tried_again_until_taken(recorded: Recorded, endpoint: Endpoint) -> None:
    endpoint.statuses = [503, 429]
    result = ok(_fork(recorded, "--otlp-endpoint", endpoint.url))
    assert len(endpoint.got) == 3
    assert f"sent {_forked_id(result)} to {endpoint.url}/v1/traces" in result.stdout


def test_an_endpoint_busy_to_the_end_is_an_error_after_the_retries(endpoint: Endpoint) -> None:
    endpoint.statuses = [503] * 10
    waited: list[float] = []
    request = ExportTraceServiceRequest()
    to = Destination(f"{endpoint.url}/v1/traces")
    with pytest.raises(ExportError) as raised:
        send_otlp(request, to, backoff=(0.5, 1.0, 2.0), sleep=waited.append)
    assert raised.value.status == 503 and raised.value.url == to.url
    assert str(raised.value).startswith(
        f"the OTLP endpoint {to.url} answered 503 Service Unavailable after 4 tries"
    )
    assert waited == [0.0, 0.0, 0.0] and len(endpoint.got) == 4  # Retry-After: 0 followed
    endpoint.retry_after, endpoint.statuses, waited[:] = None, [503] * 10, []
    with pytest.raises(ExportError):
        send_otlp(request, to, backoff=(0.5, 1.0, 2.0), sleep=waited.append)
    assert waited == [0.5, 1.0, 2.0]  # no Retry-After: the backoff


def test_the_endpoint_rule_and_the_header_variables() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20k1, x-a=1",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer k2",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
    }
    to = destination("http://collector:4318", ["x-b=2"], environ=env)
    assert to.url == "http://collector:4318/v1/traces"
    assert dict(to.headers) == {"authorization": "Bearer k2", "x-a": "1", "x-b": "2"}
    assert to.gzip
    assert destination("http://h:6006/", environ={}).url == "http://h:6006/v1/traces"
    assert destination("https://h/otlp/v1/traces?x=1", environ={}).url == (
        "https://h/otlp/v1/traces?x=1"
    )
    assert not destination("http://h", compression="none", environ=env).gzip
    traces_say = {**env, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}
    assert not destination("http://h", environ=traces_say).gzip  # the traces' own variable wins


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--otlp-endpoint", "localhost:4318"], "is not an http:// or https:// URL"),
        (["--otlp-endpoint", "http://h", "--otlp-header", "novalue"], "is not KEY=VALUE"),
        (["--otlp-endpoint", "http://h", "--otlp-compression", "zstd"], "is not gzip or none"),
    ],
)
def test_a_wrong_endpoint_option_stops_before_anything_runs(
    recorded: Recorded, options: list[str], message: str
) -> None:
    before = _count(recorded.store)
    assert message in one_line_error(_fork(recorded, "--seed", "9", *options))
    assert _count(recorded.store) == before


# --- resume and attribute --keep-rollouts ------------------------------------------------------


def test_a_resumed_run_is_sent_linked_to_the_run_it_resumes(
    tmp_path: Path, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.replay import resume_agents

    agent = ["--agent", "tests.replay.resume_agents:counting"]
    agent += ["--verifier", "tests.replay.resume_agents:outcome"]
    store = tmp_path / "store.db"
    monkeypatch.setenv(resume_agents.CRASH_AT, "4")
    resume_agents.RAN.clear()
    crashed = invoke(CliRunner(), store, "record", *agent, "--json")
    original_id = orjson.loads(crashed.stdout)["id"]
    monkeypatch.delenv(resume_agents.CRASH_AT)
    options = ["--otlp-endpoint", endpoint.url, "--json"]
    result = ok(invoke(CliRunner(), store, "resume", original_id, *agent, *options))
    done = orjson.loads(result.stdout)  # stdout stays the JSON record; the sent line is on stderr
    assert f"sent {done['id']} to {endpoint.url}/v1/traces (7 spans)" in result.stderr
    (request,) = endpoint.requests()
    root = _root(request)
    said = _attributes(root)
    assert said["agent_replay.run_id"] == done["id"]
    assert said["agent_replay.resumed_from"] == original_id
    assert said["agent_replay.frontier"] == 4
    (link,) = root.links
    assert link.trace_id.hex() == original_id
    assert [s.name for s in _spans(request) if s.parent_span_id] == [
        f"{s.kind.value} {s.name}" for s in _load(store, done["id"]).steps
    ]


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    store = tmp_path / "samples.db"
    ok(invoke(CliRunner(), store, "import", str(ROOT / "sample_traces")))
    return store


FAILED = "ef2843ff74cff6a6b6dc0914faa30751"  # the sample run that blamed the database
ATTRIBUTE = [
    "attribute", FAILED, "--resamplers", str(ROOT / "examples" / "incident" / "tools.py"),
    "--success-if", "v841", "--rollouts", "4",
]  # fmt: skip


def test_each_kept_rollout_is_its_own_trace_with_the_plan_it_rolled_out(
    samples: Path, endpoint: Endpoint
) -> None:
    options = ["--keep-rollouts", "2", "--otlp-endpoint", endpoint.url]
    result = ok(invoke(CliRunner(), samples, *ATTRIBUTE, *options))
    assert "inconclusive" in result.stdout  # 4 rollouts decide nothing, but they were made
    with Store.open(samples, read_only=True) as db:
        factual = db.get(FAILED)
        kept = [db.get(s.id) for s in db.summaries() if s.id.startswith("rollout-")]
    plans = {run.metadata["plan"] for run in kept}
    assert len(kept) == 2 * len(plans) and len(plans) == len(factual.steps) + 1
    assert "kept 16 rollouts of 8 plans in the store" in result.stdout
    requests = endpoint.requests()
    assert len(requests) == len(kept)
    roots = [_root(request) for request in requests]
    assert len({root.trace_id for root in roots}) == len(kept)  # a trace each
    (factual_root,) = [n.span_id for n in factual.spans if n.parent_span_id is None]
    by_id = {run.id: run for run in kept}
    for root, request in zip(roots, requests, strict=True):
        said = _attributes(root)
        run = by_id[said["agent_replay.run_id"]]
        assert f"sent {run.id} to {endpoint.url}/v1/traces" in result.stdout
        assert said["agent_replay.rollout_of"] == FAILED
        assert said["agent.name"] == factual.metadata["service"] == "incident-investigator"
        assert said["agent_replay.plan"] == run.metadata["plan"]
        assert said["agent_replay.plan_steps"] == run.metadata["plan_steps"]
        assert said["agent_replay.rollout"] in (0, 1)
        (link,) = root.links
        assert (link.trace_id.hex(), link.span_id.hex()) == (FAILED, factual_root)
        children = [s.name for s in _spans(request) if s.parent_span_id]
        assert children == [f"{s.kind.value} {s.name}" for s in run.steps]
    shown = ok(invoke(CliRunner(), samples, "diff", FAILED, kept[0].id)).stdout
    assert "first divergence at step" in shown  # a kept rollout is a run like any other


def test_kept_rollouts_are_stored_when_the_endpoint_refuses_them(
    samples: Path, endpoint: Endpoint
) -> None:
    endpoint.statuses = [401]
    options = ["--keep-rollouts", "1", "--otlp-endpoint", endpoint.url]
    result = invoke(CliRunner(), samples, *ATTRIBUTE, *options)
    line = one_line_error(result)
    assert line.startswith(
        f"error: the OTLP endpoint {endpoint.url}/v1/traces answered 401 Unauthorized"
    )
    assert len(endpoint.got) == 1  # the endpoint refused: the rest are not tried
    with Store.open(samples, read_only=True) as db:
        kept = [s.id for s in db.summaries() if s.id.startswith("rollout-")]
    assert len(kept) == 8
    unsent = line.split("; rollouts ")[1].removesuffix(" stored, not sent").split(", ")
    assert sorted(unsent) == sorted(kept)


def test_an_endpoint_without_rollouts_to_send_is_refused(samples: Path) -> None:
    result = invoke(CliRunner(), samples, *ATTRIBUTE, "--otlp-endpoint", "http://127.0.0.1:9")
    assert "--otlp-endpoint sends the rollouts --keep-rollouts N keeps" in one_line_error(result)


def _readme_commands() -> list[list[str]]:
    """The commands of the "Out as OTLP" block of docs/live-agents.md, as argument lists."""
    import shlex

    text = (ROOT / "docs" / "live-agents.md").read_text()
    block = text[text.index("## Out as OTLP") :].split("```sh\n")[1].split("```")[0]
    return [shlex.split(line)[1:] for line in block.strip().splitlines()]


def test_the_readmes_commands_send_into_the_project_they_name(
    samples: Path, endpoint: Endpoint
) -> None:
    commands = _readme_commands()
    assert [command[0] for command in commands] == ["fork", "attribute"]
    for command in commands:
        sent = len(endpoint.got)
        args = [endpoint.url if arg == "http://127.0.0.1:6006" else arg for arg in command]
        assert endpoint.url in args
        ok(invoke(CliRunner(), samples, *args))
        assert len(endpoint.got) > sent
    assert {headers["x-project-name"] for _, headers, _ in endpoint.got} == {"counterfactuals"}
    roots = [_attributes(_root(request)) for request in endpoint.requests()]
    assert roots[0]["agent_replay.forked_from"] == FAILED and roots[0]["agent_replay.fork_at"] == 3
    assert {root.get("agent_replay.rollout_of") for root in roots[1:]} == {FAILED}


def test_the_resource_attributes_variable_names_the_project(
    recorded: Recorded, endpoint: Endpoint
) -> None:
    env = {"COLUMNS": "250", "OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=cf"}
    ok(_fork(recorded, "--otlp-endpoint", endpoint.url, env=env))
    (request,) = endpoint.requests()
    (resource,) = [rs.resource for rs in request.resource_spans]
    said = {kv.key: kv.value.string_value for kv in resource.attributes}
    assert said["openinference.project.name"] == "cf"


def test_spans_the_endpoint_rejects_are_an_error(recorded: Recorded, endpoint: Endpoint) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    partial = ExportTracePartialSuccess(rejected_spans=2, error_message="spans too old")
    endpoint.taken = ExportTraceServiceResponse(partial_success=partial).SerializeToString()
    result = _fork(recorded, "--otlp-endpoint", endpoint.url)
    line = one_line_error(result)
    forked_id = _forked_id(result)
    assert line == (
        f"error: the OTLP endpoint {endpoint.url}/v1/traces took {forked_id} (200) but rejected "
        f"2 of its {len(_load(recorded.store, forked_id).steps) + 1} spans: spans too old"
    )


def test_an_otlp_servers_error_status_is_read_off_its_answer(tmp_path: Path) -> None:
    """This project's receiver answers a wrong path with a ``google.rpc.Status``: its message is
    what the error says."""
    receiver = Receiver(lambda: Store.open(tmp_path / "r.db"), "127.0.0.1", 0)
    receiver.start()
    try:
        with pytest.raises(ExportError) as raised:
            send_otlp(
                ExportTraceServiceRequest(), destination(f"{receiver.url}/v1/logs", environ={})
            )
    finally:
        receiver.stop()
    assert raised.value.status == 404
    message = str(raised.value)
    assert message.startswith(f"the OTLP endpoint {receiver.url}/v1/logs answered 404 Not Found: ")
    assert "/v1/traces" in message  # the receiver's own words, decoded from protobuf


def test_keeping_rollouts_changes_nothing_the_attribution_finds(samples: Path) -> None:

    from otel_replay.attribution import AttributionConfig, Strategy, attribute_stored
    from otel_replay.attribution._config import config_digest
    from otel_replay.resamplers import UserCode

    code = UserCode(
        resamplers=(str(ROOT / "examples" / "incident" / "tools.py"),), success_if="v841"
    )
    sweep = AttributionConfig(rollouts=4, strategy=Strategy.FIXED)
    plain, keeping = sweep, dataclasses.replace(sweep, keep_rollouts=3)
    assert config_digest(plain, code) == config_digest(keeping, code)  # the same question
    with Store.open(samples, read_only=True) as db:
        without, kept = (attribute_stored(db, FAILED, config, code) for config in (plain, keeping))
    assert without.kept == ()
    plans = {k.plan for k in kept.kept}
    assert len(plans) == 8  # the sweep's plans: one per step, and the record's own
    for plan in plans:  # the first rollouts of each, up to 3 (the record walked once is one)
        indices = [k.index for k in kept.kept if k.plan == plan]
        assert indices == list(range(len(indices))) and 1 <= len(indices) <= 3
    same = ("steps", "verdict", "point_of_commitment", "rollouts", "step_executions")
    assert [getattr(kept, name) for name in same] == [getattr(without, name) for name in same]
    assert {k.index for k in kept.kept} == {0, 1, 2}
    first = kept.kept[0]
    assert first.run.metadata["rollout_of"] == FAILED and first.run.metadata["plan"] == first.plan
    with pytest.raises(Exception, match="keep_rollouts=-1 must be 0 or more"):
        AttributionConfig(keep_rollouts=-1)


def test_a_made_run_is_laid_out_as_made_when_it_is_sent() -> None:
    """Held steps recorded a week ago and steps made now: one run, made now, each step keeping its
    duration and the pause before it, but not the week between the record and the fork."""
    from otel_replay.model import Step, StepKind
    from otel_replay.replay._tracing import MAX_GAP, laid_out

    second, week = 10**9, 7 * 24 * 3600
    times = [(10, 12), (13, 14), (week, week + 5), (None, None), (week + 6, week + 8)]
    steps = [
        Step(kind=StepKind.TOOL, name=f"t{i}", inputs={}, output=i,
             start_time_unix_nano=None if a is None else a * second,
             end_time_unix_nano=None if b is None else b * second)
        for i, (a, b) in enumerate(times)
    ]  # fmt: skip
    now = 10**19
    placed = laid_out(steps, now)
    spans = [(s.start_time_unix_nano, s.end_time_unix_nano) for s in placed]
    assert placed[-1].end_time_unix_nano == now
    durations = [(b or 0) - (a or 0) for a, b in spans]
    assert durations == [2 * second, 1 * second, 5 * second, 0, 2 * second]
    pauses = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
    assert pauses == [1 * second, 0, 0, 1 * second]  # the week is gone; the rest kept
    assert week * second > MAX_GAP


def test_rollouts_of_many_runs_are_not_kept(samples: Path) -> None:
    code = [
        "--resamplers",
        str(ROOT / "examples" / "incident" / "tools.py"),
        "--success-if",
        "v841",
    ]
    result = invoke(
        CliRunner(), samples, "attribute", "--all-failing", *code, "--keep-rollouts", "1"
    )
    assert "--keep-rollouts keeps the rollouts of one run: name one run" in one_line_error(result)


# --- redirects, answers that are no HTTP, and keys kept off the terminal -----------------------


def test_a_redirect_is_an_error_naming_where_and_nothing_follows_it(
    recorded: Recorded, endpoint: Endpoint
) -> None:
    moved_to = f"{endpoint.url}/v1/traces?token={SECRET}"
    with stub(lambda asked: answer("302 Found", Location=moved_to)) as old:
        result = _fork(recorded, "--otlp-endpoint", old.url, "--otlp-header", f"x-key={SECRET}")
    line = one_line_error(result)
    assert line == (
        f"error: the OTLP endpoint {old.url}/v1/traces answered 302, moved to "
        f"{endpoint.url}/v1/traces: give that URL; the fork {_forked_id(result)} stored, not sent"
    )
    assert endpoint.got == []  # no GET in its place, and the header did not go there
    assert [(a.method, a.headers["x-key"]) for a in old.asked] == [("POST", SECRET)]
    assert SECRET not in result.stdout + result.stderr and "sent " not in result.stdout


@pytest.mark.parametrize(
    "raw",
    [
        b"no http here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort",
    ],
    ids=["bad-status-line", "incomplete-read"],
)
def test_an_answer_that_is_no_http_is_an_export_error(raw: bytes) -> None:
    with stub(lambda asked: raw) as server:
        to = Destination(f"{server.url}/v1/traces?key={SECRET}")
        with pytest.raises(ExportError) as raised:
            send_otlp(ExportTraceServiceRequest(), to)
    assert str(raised.value).startswith(
        f"could not reach the OTLP endpoint {server.url}/v1/traces: "
    )
    assert SECRET not in str(raised.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--otlp-endpoint", "http://127.0.0.1:abc"], "the port is not a number from 1 to 65535"),
        (["--otlp-endpoint", "http://h:0"], "the port is not a number from 1 to 65535"),
        (["--otlp-endpoint", "http://[::1"], "is not a URL"),
        (["--otlp-endpoint", "http://a b:4318"], "has no host name a request can go to"),
        (["--otlp-endpoint", f"http://me:{SECRET}@h:4318"], "has a user name or password"),
        (["--otlp-endpoint", f"http://{SECRET}@h:4318"], "has a user name or password"),
        (
            ["--otlp-endpoint", f"h:4318?key={SECRET}"],
            "OTLP endpoint 'h:4318' is not an http:// or https:// URL",
        ),
        (
            [
                "--otlp-endpoint",
                "http://h",
                "--otlp-header",
                "x=1",
                "--otlp-header",
                f"auth {SECRET}",
            ],
            "header 2 is not KEY=VALUE",
        ),
    ],
)
def test_a_mistyped_endpoint_is_one_line_that_keeps_its_secrets(
    recorded: Recorded, options: list[str], message: str
) -> None:
    before = _count(recorded.store)
    result = _fork(recorded, "--seed", "11", *options)
    assert message in one_line_error(result)
    assert SECRET not in result.stdout + result.stderr
    assert _count(recorded.store) == before


def test_a_header_variables_entry_is_named_by_its_place_not_its_text() -> None:
    environ = {"OTEL_EXPORTER_OTLP_HEADERS": f"x-a=1,authorization Bearer {SECRET}"}
    with pytest.raises(ReplayError) as raised:
        destination("http://h", environ=environ)
    assert str(raised.value).startswith("entry 2 of OTEL_EXPORTER_OTLP_HEADERS is not KEY=VALUE")
    assert SECRET not in str(raised.value)


def test_an_endpoints_query_and_headers_are_not_shown(
    recorded: Recorded, endpoint: Endpoint
) -> None:
    url = f"{endpoint.url}/v1/traces?key={SECRET}"
    to = destination(url, [f"authorization=Bearer {SECRET}"], environ={})
    assert SECRET not in repr(to) and "authorization" in repr(to)
    result = ok(_fork(recorded, "--otlp-endpoint", url))
    assert f"sent {_forked_id(result)} to {endpoint.url}/v1/traces (" in result.stdout
    assert endpoint.got[0][0] == f"/v1/traces?key={SECRET}"  # sent as given
    endpoint.statuses = [400]
    refused = _fork(recorded, "--otlp-endpoint", url)
    assert one_line_error(refused).startswith(
        f"error: the OTLP endpoint {endpoint.url}/v1/traces answered 400"
    )
    assert SECRET not in result.stdout + result.stderr + refused.stdout + refused.stderr
