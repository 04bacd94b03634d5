"""``jaeger://HOST:PORT/SERVICE``: the client of Jaeger's query API against a loopback server that
replays answers Jaeger wrote (`tests.platforms.jaeger_server`; no Jaeger server installs here, so
none runs in these tests): every trace of a service, whole, by searches split while their answer
is full; ``since``; the bounds (searches, traces, answer size) and failures as one line, with
nothing yielded (so nothing stored)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from otel_replay import ReadOptions, Store, read_path
from otel_replay.errors import ReplayError
from otel_replay.platforms._http import JsonClient
from otel_replay.platforms.jaeger import parse_jaeger_url, read_jaeger
from tests.cli_helpers import invoke, ok, one_line_error
from tests.platforms.jaeger_server import FIXTURES, serve

AGENT = FIXTURES / "support-agent.jaeger.json"
FAILING, PASSING = "06a3f5be62a9701b4279530735b8cfae", "8623121de0bbf37a94594d8b75673fca"
T0_US = 1_773_500_000_000_000  # the agent's first run starts then; the second a day later
NOW_NS = (T0_US + 3 * 86_400_000_000) * 1000


def _read(base: str, service: str = "support-agent", **options: object) -> list:  # type: ignore[type-arg]
    return list(read_jaeger(f"jaeger://{base}/{service}", now_ns=NOW_NS, **options))  # type: ignore[arg-type]


def test_every_trace_of_the_service_whole_as_the_file_reads() -> None:
    lines: list[str] = []
    with serve() as jaeger:
        runs = _read(jaeger.base, progress=lines.append)
    expected = {r.id: r.identity for r in read_path(AGENT)}
    assert {r.id: r.identity for r in runs} == expected
    assert {r.metadata["format"] for r in runs} == {"jaeger"}
    assert {r.metadata["source"] for r in runs} == {f"jaeger://{jaeger.base}/support-agent"}
    assert [p for p, _ in jaeger.asked] == ["/api/services", "/api/traces"]
    query = jaeger.asked[1][1]
    assert query["service"] == "support-agent" and query["start"] == "0"
    assert int(query["end"]) > T0_US and query["limit"] == "500"
    assert lines == ["2 traces of 'support-agent' fetched from Jaeger (1 search)"]


def test_since_asks_from_then() -> None:
    with serve() as jaeger:
        (run,) = _read(jaeger.base, since_ns=(T0_US + 43_200_000_000) * 1000)
    assert run.id == PASSING and run.outcome == 1.0
    assert jaeger.asked[1][1]["start"] == str(T0_US + 43_200_000_000)


def test_a_full_answer_splits_its_window_and_no_trace_is_missed() -> None:
    """One trace a search: every full answer is searched again in halves; each trace once."""
    with serve() as jaeger:
        runs = _read(jaeger.base, search_limit=1)
    assert sorted(r.id for r in runs) == [FAILING, PASSING]
    searches = [q for p, q in jaeger.asked if p == "/api/traces"]
    assert len(searches) > 2 and all(q["limit"] == "1" for q in searches)


@pytest.mark.parametrize(
    ("service", "trace_id", "spans"),
    [
        ("telemetrygen", "83a9efd15c1c98a977e0711cc93ee28b", 1),  # otlp2jaeger-out.json
        ("service-y", "00000000000000000000000000000001", 4),  # ui_01.json, a span of it
    ],
)
def test_jaeger_s_own_answers(service: str, trace_id: str, spans: int) -> None:
    with serve() as jaeger:
        (run,) = _read(jaeger.base, service)
    assert run.id == trace_id and len(run.spans) == spans


def test_a_service_that_is_not_there_names_the_services_that_are() -> None:
    with serve() as jaeger, pytest.raises(ReplayError) as caught:
        _read(jaeger.base, "billing")
    assert str(caught.value) == (
        f"Jaeger at http://{jaeger.base} has no service 'billing' (its services: service-x, "
        "service-y, support-agent, telemetrygen)"
    )


def test_the_bounds_give_up_in_one_line() -> None:
    with serve() as jaeger:
        with pytest.raises(ReplayError, match=r"holds more than 1 traces of 'support-agent'"):
            _read(jaeger.base, max_traces=1)
        with pytest.raises(ReplayError, match=r"still had more traces after 1 searches"):
            _read(jaeger.base, max_requests=1, search_limit=1)
        small = JsonClient(
            "Jaeger", f"http://{jaeger.base}", None, "JAEGER_API_KEY", max_bytes=4096
        )
        with pytest.raises(ReplayError) as caught:
            _read(jaeger.base, client=small)
    assert str(caught.value) == (
        f"Jaeger at http://{jaeger.base} answered search 1 of the traces of 'support-agent' with "
        "more than 4 KiB: gave up (is it the right address?)"
    )


def test_the_spans_held_until_the_runs_are_made_are_capped() -> None:
    with serve() as jaeger, pytest.raises(ReplayError) as caught:
        _read(jaeger.base, held=(1 << 30, 3))
    assert str(caught.value) == (
        f"Jaeger at http://{jaeger.base}: with search 1 of the traces of 'support-agent', the "
        "import would hold more than 3 spans before its runs are made, the most it holds: gave "
        "up (import less at a time: a shorter time with since)"
    )


def test_a_server_failing_half_way_yields_nothing() -> None:
    with serve(fail_after=1) as jaeger:
        reader = read_jaeger(f"jaeger://{jaeger.base}/support-agent", now_ns=NOW_NS, search_limit=1)
        with pytest.raises(ReplayError) as caught:
            next(reader)
    assert str(caught.value).startswith(f"Jaeger at http://{jaeger.base} answered HTTP 500")


def test_a_damaged_trace_is_located_or_skipped() -> None:
    traces = [t for t in _captured() if t["traceID"] == FAILING]
    traces[0]["spans"][1]["startTime"] = "yesterday"
    with serve(traces) as jaeger:
        with pytest.raises(ReplayError) as caught:
            _read(jaeger.base)
        message = str(caught.value)
        assert f"jaeger://{jaeger.base}/support-agent" in message
        assert "search 1 of the traces of 'support-agent', data[0].spans[1].startTime" in message
        options = ReadOptions(skip_invalid=True)
        (run,) = _read(jaeger.base, options=options)
    assert len(run.spans) == 4 and len(options.report.skipped) == 1


def test_nothing_listening_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ReplayError, match=rf"cannot reach Jaeger at http://127.0.0.1:{port}"):
        _read(f"127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("jaeger://", "Jaeger address"),
        ("jaeger://h:0/s", "Jaeger address"),
        ("jaeger://h/a/b", "a Jaeger service name has no '/'"),
        ("jaeger://h:16686/s?x=1", "is not a Jaeger address"),
    ],
)
def test_addresses(url: str, said: str) -> None:
    with pytest.raises(ReplayError, match=said):
        parse_jaeger_url(url)
    assert parse_jaeger_url("jaeger://example.org/svc").port == 16686


def _captured() -> list:  # type: ignore[type-arg]
    from tests.platforms.jaeger_server import captured_traces

    return captured_traces()


def test_the_replayed_answers_are_the_published_files(tmp_path: Path) -> None:
    """What the server hands out is the files' traces, unchanged."""
    assert {t["traceID"] for t in _captured()} == {
        FAILING,
        PASSING,
        "83a9efd15c1c98a977e0711cc93ee28b",
        "0000000000000001",
    }


def test_import_stores_the_runs_and_a_failure_stores_nothing(tmp_path: Path) -> None:
    """The command: every run stored (the failing run imported again from the file is unchanged);
    a server failing half way, or a service that is not there, is one line and the store as it
    was."""
    store = tmp_path / "store.db"
    runner = CliRunner()
    with serve() as jaeger:
        url = f"jaeger://{jaeger.base}/support-agent"
        listed = ok(invoke(runner, store, "import", url, "--json"))
        again = ok(invoke(runner, store, "import", str(AGENT), "--json"))
    assert [row["result"] for row in json.loads(listed.stdout)[0]["trajectories"]] == ["added"] * 2
    assert [row["result"] for row in json.loads(again.stdout)[0]["trajectories"]] == [
        "unchanged"
    ] * 2
    with Store.open(store) as db:
        before = db.counts()
    with serve(fail_after=0) as jaeger:
        line = one_line_error(
            invoke(runner, store, "import", f"jaeger://{jaeger.base}/support-agent")
        )
        assert line.startswith(f"error: Jaeger at http://{jaeger.base} answered HTTP 500")
        line = one_line_error(invoke(runner, store, "import", f"jaeger://{jaeger.base}/billing"))
        assert "has no service 'billing'" in line
    assert "names no service" in one_line_error(invoke(runner, store, "import", "jaeger://h:1"))
    with Store.open(store) as db:
        assert db.counts() == before
