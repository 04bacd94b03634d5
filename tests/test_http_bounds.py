"""Every HTTP client of the package is bounded, against hostile loopback servers: a status line
whose headers never end, a body trickling in a byte at a time, an endless body, an endless error
body and a server that never answers are each given up within the deadline or at the size cap,
with one line naming the URL (without its query) and the limit hit. Each case runs the client in
a thread: a client that is not bounded fails the test rather than hanging it. The test waits
`PATIENCE`, far past every deadline here, so a busy machine does not fail it: the message names
the limit that stopped the client."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.errors import ExportError, ReplayError, VerifierError
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.otlp_encode import Destination, destination, send_otlp
from otel_replay.platforms._http import JsonClient
from otel_replay.resamplers._anthropic import AnthropicMessagesModel
from otel_replay.resamplers._judge import Judge, JudgeOptions
from otel_replay.resamplers._openai import ChatModelOptions, ModelSource, OpenAIChatModel
from tests.hostile_http import (
    endless_body,
    hostile,
    redirect_loop,
    silent,
    trickled_body,
    trickled_headers,
    within,
)

SECRET = "sk-do-not-print-0123456789"
PATIENCE = 120.0  # seconds a test waits before it calls the client unbounded


def _phoenix(url: str, deadline: float = 300.0) -> JsonClient:
    return JsonClient("Phoenix", url, SECRET, "PHOENIX_API_KEY", deadline=deadline)


def test_headers_that_never_end_are_given_up_at_the_deadline() -> None:
    with hostile(trickled_headers) as server:
        raised = within(
            PATIENCE, lambda: _phoenix(server.url, 1.5).get("/v1/projects", what="page 1")
        )
    assert isinstance(raised, ReplayError)
    assert str(raised) == f"Phoenix at {server.url} took more than 1.5 s to answer page 1: gave up"


def test_a_body_trickling_in_is_given_up_at_the_deadline() -> None:
    with hostile(trickled_body) as server:
        raised = within(
            PATIENCE, lambda: _phoenix(server.url, 1.5).get("/v1/projects", what="page 1")
        )
    assert str(raised) == f"Phoenix at {server.url} took more than 1.5 s to answer page 1: gave up"


def test_a_server_that_never_answers_is_given_up_at_the_deadline() -> None:
    with hostile(silent) as server:
        raised = within(
            PATIENCE, lambda: _phoenix(server.url, 1).get("/v1/projects", what="page 1")
        )
    assert str(raised) == f"Phoenix at {server.url} took more than 1 s to answer page 1: gave up"


def test_an_endless_error_body_is_read_no_further_than_its_start() -> None:
    with hostile(endless_body("500 Internal Server Error")) as server:
        raised = within(PATIENCE, lambda: _phoenix(server.url).get("/v1/projects"))
    assert isinstance(raised, ReplayError)
    assert str(raised).startswith(f"Phoenix at {server.url} answered HTTP 500: [[[")
    assert len(str(raised)) < 300


def _request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(name="step")
    return request


def _to(url: str) -> Destination:
    return Destination(f"{url}/v1/traces?token={SECRET}")


def test_an_otlp_endpoint_answering_an_endless_body_is_given_up_at_the_size_cap() -> None:
    with hostile(endless_body()) as server:
        raised = within(PATIENCE, lambda: send_otlp(_request(), _to(server.url), backoff=()))
    assert isinstance(raised, ExportError)
    assert str(raised) == (
        f"the OTLP endpoint {server.url}/v1/traces answered with more than 16 MiB: gave up"
    )


@pytest.mark.parametrize("behave", [trickled_headers, trickled_body, silent])
def test_an_otlp_endpoint_that_takes_too_long_is_given_up_at_the_deadline(behave: object) -> None:
    with hostile(behave) as server:  # type: ignore[arg-type]
        raised = within(
            PATIENCE, lambda: send_otlp(_request(), _to(server.url), deadline=1.5, backoff=())
        )
    assert isinstance(raised, ExportError)
    assert str(raised) == (
        f"the OTLP endpoint {server.url}/v1/traces took more than 1.5 s to answer: gave up"
    )


def test_the_otlp_timeout_variable_is_the_whole_answers_deadline() -> None:
    environ = {"OTEL_EXPORTER_OTLP_TIMEOUT": "9000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500"}
    with hostile(trickled_headers) as server:
        to = destination(f"{server.url}/v1/traces?token={SECRET}", environ=environ)
        raised = within(PATIENCE, lambda: send_otlp(_request(), to, backoff=()))
    assert isinstance(raised, ExportError)
    assert str(raised) == (
        f"the OTLP endpoint {server.url}/v1/traces took more than 1.5 s to answer: gave up"
    )


def _answered(answer: str) -> Trajectory:
    opening = [{"role": "user", "content": "Is the deploy out?"}]
    return Trajectory.build(
        "judged-run",
        [Step(StepKind.LLM, "m", {"model": "m", "messages": opening}, {"content": answer})],
        outcome=0.0,
    )


@pytest.mark.parametrize("behave", [trickled_headers, trickled_body, silent])
def test_the_judge_is_given_up_at_its_deadline(behave: object) -> None:
    pytest.importorskip("openai")
    with hostile(behave) as server:  # type: ignore[arg-type]
        options = JudgeOptions("Right?", base_url=f"{server.url}/v1", timeout_s=1.5, max_retries=0)
        judge = Judge(options)
        raised = within(PATIENCE, lambda: judge(_answered("It is out.")))
        judge.close()
    assert isinstance(raised, VerifierError)
    assert str(raised) == (f"the judge: {server.url}/v1 took more than 1.5 s to answer: gave up")


def test_a_model_server_answering_an_endless_body_is_given_up_at_the_size_cap() -> None:
    pytest.importorskip("openai")
    with hostile(endless_body()) as server:
        model = OpenAIChatModel(ChatModelOptions(base_url=f"{server.url}/v1", max_retries=0))
        raised = within(PATIENCE, lambda: model.ask("m", "You are a tool.", "Look it up."))
        model.close()
    assert str(raised) == f"{server.url}/v1 answered with more than 32 MiB: gave up"


@pytest.mark.parametrize("behave", [trickled_headers, endless_body()])
def test_the_anthropic_client_is_bounded(behave: object) -> None:
    pytest.importorskip("anthropic")
    with hostile(behave) as server:  # type: ignore[arg-type]
        options = ChatModelOptions(
            base_url=server.url, timeout_s=1.5, max_retries=0, source=ModelSource.ANTHROPIC
        )
        model = AnthropicMessagesModel(options)
        raised = within(PATIENCE, lambda: model.ask("m", "You are a tool.", "Look it up."))
        model.close()
    limit = (
        "took more than 1.5 s to answer"
        if behave is trickled_headers
        else ("answered with more than 32 MiB")
    )
    assert str(raised) == f"{server.url} {limit}: gave up"


def test_a_redirect_loop_is_one_line_for_every_client() -> None:
    pytest.importorskip("openai")
    with hostile(redirect_loop) as server:
        otlp = within(PATIENCE, lambda: send_otlp(_request(), _to(server.url), backoff=()))
        judge = Judge(JudgeOptions("Right?", base_url=f"{server.url}/v1", max_retries=0))
        judged = within(PATIENCE, lambda: judge(_answered("It is out.")))
        judge.close()
        phoenix = within(PATIENCE, lambda: _phoenix(server.url).get("/v1/projects"))
    assert str(otlp) == (
        f"the OTLP endpoint {server.url}/v1/traces answered 302, moved to {server.url}/v1/traces: "
        "give that URL"
    )
    assert isinstance(judged, VerifierError)
    assert str(judged).startswith(f"the judge: {server.url}/v1 answered 302")
    assert str(phoenix) == (
        f"Phoenix at {server.url} answered 302, moved to {server.url}/v1/projects: give that URL"
    )
    assert len(server.asked) == 3  # each asked once, no redirect followed
    assert not any(SECRET in str(said) for said in (otlp, judged, phoenix))


def test_a_model_server_behind_the_environments_proxy_is_bounded_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("openai")
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with hostile(trickled_headers) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        options = ChatModelOptions(
            base_url="http://models.invalid/v1", timeout_s=1.5, max_retries=0
        )
        model = OpenAIChatModel(options)
        raised = within(PATIENCE, lambda: model.ask("m", "You are a tool.", "Look it up."))
        model.close()
    assert str(raised) == "http://models.invalid/v1 took more than 1.5 s to answer: gave up"
    assert [asked.path for asked in proxy.asked] == ["http://models.invalid/v1/chat/completions"]


def test_an_otlp_timeout_that_is_no_number_is_one_line() -> None:
    with pytest.raises(ReplayError) as raised:
        destination("http://127.0.0.1:4318", environ={"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})
    assert str(raised.value) == (
        "OTEL_EXPORTER_OTLP_TIMEOUT='soon' is not a number of milliseconds above 0"
    )
