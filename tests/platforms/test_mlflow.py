"""MLflow both ways, against a real ``mlflow server`` (SQLite backend, a free loopback port): the shop's
support agent, traced by MLflow's own tracing (``mlflow.openai.autolog`` and ``@mlflow.trace``
tools, `tests/platforms/mlflow_agent.py` run in ``.mlflow-venv``) against the loopback fake model
server and order service, once with the order service up and once while it answers 503. Its
traces come back through ``import mlflow://`` as one step per operation; ``attribute --annotate
mlflow://`` writes the verdict as assessments that MLflow's REST API gives back with the trace.

The failures no real server gives on demand (a connection dropped half way, pages without end, an
answer too large) come from a stdlib stub on a loopback port (`tests.http_stub`)."""

from __future__ import annotations

import json
import shlex
import urllib.request
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from examples.fake_model_server import shop as shop_model
from otel_replay import ReadOptions, Trajectory
from otel_replay.platforms import mlflow as module
from otel_replay.platforms.mlflow import annotate_mlflow, parse_mlflow_url, read_mlflow
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES
from tests.http_stub import Asked, answer, stub
from tests.platforms import mlflow_server
from tests.platforms.conftest import serve_mlflow
from tests.platforms.mlflow_server import Mlflow
from tests.scenarios import shop
from tests.scenarios.order_service import OrderService

EXPERIMENT = "support-agent"
PASS_STEPS = [
    ("llm", "support-model"),
    ("tool", "lookup_order"),
    ("llm", "support-model"),
    ("tool", "get_refund_policy"),
    ("llm", "support-model"),
]
FAIL_STEPS = PASS_STEPS[:3]


@pytest.fixture(scope="module")
def models() -> Iterator[FakeModelServer]:
    with FakeModelServer(shop_model) as server:
        yield server


@pytest.fixture(scope="module")
def traced(mlflow: Mlflow, models: FakeModelServer) -> dict[str, str]:
    """The passing and the failing run of the agent in EXPERIMENT: their MLflow trace ids."""
    orders = OrderService()
    try:
        passing = mlflow.run_agent(EXPERIMENT, shop.QUESTION, models.base_url, orders.url)
        orders.down = True
        failing = mlflow.run_agent(EXPERIMENT, shop.QUESTION, models.base_url, orders.url)
    finally:
        orders.stop()
    return {"pass": passing, "fail": failing}


def _run_id(trace_id: str) -> str:
    return trace_id.removeprefix("tr-")


def _steps(run: Trajectory) -> list[tuple[str, str]]:
    return [(s.kind.value, s.name) for s in run.steps]


def _read(url: str, since_ns: int | None = None) -> dict[str, Trajectory]:
    return {t.id: t for t in read_mlflow(url, since_ns, ReadOptions())}


def _get(mlflow: Mlflow, path: str) -> Any:
    with urllib.request.urlopen(mlflow.base + path, timeout=30) as response:
        return json.loads(response.read())


def test_ci_installs_the_versions_the_tests_name() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert f"MLFLOW_VERSION={mlflow_server.VERSION}\n" in script
    assert f"MLFLOW_OPENAI_VERSION={mlflow_server.OPENAI_VERSION}\n" in script


def test_an_experiment_imports_as_one_step_per_operation(
    mlflow: Mlflow, traced: dict[str, str]
) -> None:
    read = _read(f"mlflow://{mlflow.address}/{EXPERIMENT}")
    passing, failing = read[_run_id(traced["pass"])], read[_run_id(traced["fail"])]
    assert len(read) == 2
    assert _steps(passing) == PASS_STEPS
    assert _steps(failing) == FAIL_STEPS
    lookup = failing.steps[1]
    assert lookup.inputs["arguments"] == {"order_id": "A-1001"}
    assert "order service unavailable (503)" in json.dumps(lookup.output)
    assert passing.steps[3].inputs["arguments"] == {"reason": "damaged"}
    assert failing.metadata["source"] == f"mlflow://{mlflow.address}/{EXPERIMENT}"
    # the experiment named by its id reads the same runs
    found = _get(mlflow, f"/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}")
    by_id = _read(f"mlflow://{mlflow.address}/{found['experiment']['experiment_id']}")
    assert {k: t.final_hash for k, t in by_id.items()} == {k: t.final_hash for k, t in read.items()}


def test_pages_and_batches_of_one_give_the_same_runs(
    mlflow: Mlflow, traced: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"mlflow://{mlflow.address}/{EXPERIMENT}"
    whole = _read(url)
    monkeypatch.setattr(module, "SEARCH_PAGE", 1)
    monkeypatch.setattr(module, "TRACES_PER_REQUEST", 1)
    said: list[str] = []
    options = ReadOptions()
    paged = {t.id: t for t in read_mlflow(url, None, options, progress=said.append)}
    assert {k: t.final_hash for k, t in paged.items()} == {
        k: t.final_hash for k, t in whole.items()
    }
    assert options.report.records == 2
    assert "MLflow: 3 page(s) of the trace search read, 2 trace(s)" in said
    assert said[-1] == "MLflow: the spans of 2 of 2 trace(s) read"


def test_since_takes_the_traces_that_ended_since(mlflow: Mlflow, traced: dict[str, str]) -> None:
    url = f"mlflow://{mlflow.address}/{EXPERIMENT}"
    info = _get(mlflow, f"/api/3.0/mlflow/traces/{traced['fail']}")["trace"]["trace_info"]
    ended = module._ended_ns(info)
    assert ended is not None
    assert sorted(_read(url, since_ns=ended - 1_000_000)) == [_run_id(traced["fail"])]
    assert _read(url, since_ns=ended + 1_000_000_000) == {}


def test_import_twice_adds_nothing_the_second_time(
    mlflow: Mlflow, traced: dict[str, str], runner: CliRunner, store_path: Path
) -> None:
    url = f"mlflow://{mlflow.address}/{EXPERIMENT}"
    first = ok(invoke(runner, store_path, "import", url))
    assert "imported 2 trajectories from 1 source" in first.stdout
    assert "2 added, 0 unchanged" in first.stdout
    again = json.loads(ok(invoke(runner, store_path, "import", url, "--json")).stdout)
    assert [(f["path"], f["skipped"]) for f in again] == [(url, [])]
    assert sorted((r["id"], r["steps"], r["result"]) for r in again[0]["trajectories"]) == sorted(
        [(_run_id(traced["pass"]), 5, "unchanged"), (_run_id(traced["fail"]), 3, "unchanged")]
    )
    resumed = json.loads(
        ok(invoke(runner, store_path, "import", url, "--since", "1h", "--json")).stdout
    )
    assert {r["result"] for r in resumed[0]["trajectories"]} == {"unchanged"}


def test_the_credentials_are_sent_and_missing_or_refused_ones_are_one_line(
    mlflow_auth: Mlflow,
    models: FakeModelServer,
    runner: CliRunner,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MLflow's basic-auth app: the agent logs with the admin's user name and password, and import
    sends them from the same variables MLflow's client reads."""
    orders = OrderService()
    try:
        mlflow_auth.run_agent("keyed", shop.QUESTION, models.base_url, orders.url)
    finally:
        orders.stop()
    url = f"mlflow://{mlflow_auth.address}/keyed"
    for name in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    missing = one_line_error(invoke(runner, store_path, "import", url))
    assert missing == (
        f"error: MLflow at http://{mlflow_auth.address} wants an API key (HTTP 401): set "
        "MLFLOW_TRACKING_TOKEN (or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD)"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", mlflow_server.ADMIN)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "not-the-password")
    refused = one_line_error(invoke(runner, store_path, "import", url))
    assert refused.startswith(
        f"error: MLflow at http://{mlflow_auth.address} refused the user name and password in "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (HTTP 401"
    )
    assert "not-the-password" not in refused
    assert _stored(store_path) == []
    assert mlflow_auth.password is not None
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", mlflow_auth.password)
    result = ok(invoke(runner, store_path, "import", url))
    assert "1 added" in result.stdout


def _assessments(mlflow: Mlflow, trace_id: str) -> list[dict[str, Any]]:
    info = _get(mlflow, f"/api/3.0/mlflow/traces/{trace_id}")["trace"]["trace_info"]
    found: list[dict[str, Any]] = info.get("assessments") or []
    return [a for a in found if a["source"]["source_id"] == "agent-replay"]


def test_annotate_writes_the_verdict_as_assessments_on_the_trace_and_the_culprit_span(
    mlflow: Mlflow,
    traced: dict[str, str],
    models: FakeModelServer,
    runner: CliRunner,
    store_path: Path,
) -> None:
    ok(invoke(runner, store_path, "import", f"mlflow://{mlflow.address}/{EXPERIMENT}"))
    failing = _run_id(traced["fail"])
    args = ["attribute", failing, "--tools", "recorded", "--llm", "openai"]
    args += ["--llm-base-url", models.base_url, "--success-if", shop.SUCCESS]
    args += ["--annotate", f"mlflow://{mlflow.address}", "--json"]
    result = ok(invoke(runner, store_path, *args))
    report = json.loads(result.stdout)
    assert (report["verdict"], report["point_of_commitment"]) == ("culprit", 1), report
    assert f"wrote 2 assessments in MLflow at http://{mlflow.address}:" in result.stderr
    with Store.open(store_path) as store:
        culprit = store.get(failing).steps[1]
    assert culprit.name == "lookup_order"
    found = _assessments(mlflow, traced["fail"])
    by_name = {a["assessment_name"]: a for a in found}
    assert sorted(by_name) == ["agent_replay.point_of_commitment", "agent_replay.verdict"]
    at_culprit, on_trace = (
        by_name["agent_replay.point_of_commitment"],
        by_name["agent_replay.verdict"],
    )
    assert at_culprit["span_id"] == culprit.span_id
    assert at_culprit["source"]["source_type"] == "CODE"
    assert at_culprit["feedback"]["value"] == "culprit"
    attribution = float(at_culprit["metadata"]["attribution"])
    assert attribution == pytest.approx(report["steps"][1]["attribution"])
    assert at_culprit["rationale"] == report["explanation"]
    assert (at_culprit["metadata"]["step"], at_culprit["metadata"]["step_name"]) == (
        "1",
        "lookup_order",
    )
    assert "span_id" not in on_trace
    assert on_trace["feedback"]["value"] == "culprit"
    assert on_trace["metadata"]["point_of_commitment"] == "1"
    # attributed again (--force), the same assessments are updated in place, not added
    again = ok(invoke(runner, store_path, *args, "--force"))
    assert "(2 updated)" in again.stderr
    after = _assessments(mlflow, traced["fail"])
    assert sorted(a["assessment_id"] for a in after) == sorted(a["assessment_id"] for a in found)
    # the trace's assessments are not its content: imported again, the run is unchanged
    reimported = json.loads(
        ok(
            invoke(
                runner, store_path, "import", f"mlflow://{mlflow.address}/{EXPERIMENT}", "--json"
            )
        ).stdout
    )
    assert {r["result"] for r in reimported[0]["trajectories"]} == {"unchanged"}


def test_a_point_of_commitment_that_moved_leaves_no_assessment_on_the_old_span(
    mlflow: Mlflow, traced: dict[str, str]
) -> None:
    """MLflow does not move an assessment to another span: the old one is deleted, the new one
    made, and the trace's own assessment is updated in place."""
    run = _read(f"mlflow://{mlflow.address}/{EXPERIMENT}")[_run_id(traced["pass"])]
    report: dict[str, Any] = {"verdict": "culprit", "explanation": "first", "outcome": 1.0}
    report["steps"] = [{"index": 1, "attribution": 0.5}, {"index": 3, "attribution": 0.75}]
    first = annotate_mlflow(f"mlflow://{mlflow.address}", {**report, "point_of_commitment": 1}, run)
    assert [(w.feedback.span_id, w.updated) for w in first] == [
        (run.steps[1].span_id, False),
        (None, False),
    ]
    moved = {**report, "point_of_commitment": 3, "explanation": "second"}
    second = annotate_mlflow(f"mlflow://{mlflow.address}/{EXPERIMENT}", moved, run)
    assert [(w.feedback.span_id, w.updated) for w in second] == [
        (run.steps[3].span_id, False),
        (None, True),
    ]
    found = {a["assessment_name"]: a for a in _assessments(mlflow, traced["pass"])}
    assert len(_assessments(mlflow, traced["pass"])) == 2
    at_step = found["agent_replay.point_of_commitment"]
    assert (at_step["span_id"], at_step["metadata"]["step_name"]) == (
        run.steps[3].span_id,
        "get_refund_policy",
    )
    assert at_step["metadata"]["attribution"] == "0.75"
    assert found["agent_replay.verdict"]["assessment_id"] == first[1].assessment_id
    assert found["agent_replay.verdict"]["rationale"] == "second"


def test_a_trace_mlflow_does_not_have_is_one_line(
    mlflow: Mlflow, runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    args = ["attribute", "ef2843ff", "--resamplers", str(ROOT / "examples/incident/tools.py")]
    args += ["--success-if", "v841", "--annotate", f"mlflow://{mlflow.address}"]
    result = invoke(runner, store_path, *args)
    assert result.exit_code == 1
    line = result.stderr.strip().splitlines()[-1]  # after what the attribution said
    assert line.startswith(
        f"error: MLflow at http://{mlflow.address} does not have trace tr-ef2843ff"
    )


def _stored(store_path: Path) -> list[str]:
    if not store_path.exists():
        return []
    with Store.open(store_path) as store:
        return sorted(s.id for s in store.summaries())


def test_addresses_are_checked_before_anything_is_asked(
    runner: CliRunner, store_path: Path
) -> None:
    assert "names no experiment" in one_line_error(
        invoke(runner, store_path, "import", "mlflow://127.0.0.1:5000")
    )
    assert "port is not a number" in one_line_error(
        invoke(runner, store_path, "import", "mlflow://127.0.0.1:x/e")
    )
    mistyped = ("attribute", "ef2843ff", "--success-if", "v841", "--annotate", "mlflow://h:x")
    assert "port is not a number" in one_line_error(invoke(runner, store_path, *mistyped))
    elsewhere = ("attribute", "ef2843ff", "--success-if", "v841", "--annotate", "mlfow://h:1")
    assert one_line_error(invoke(runner, store_path, *elsewhere)) == (
        "error: --annotate 'mlfow://h:1' is no platform: give phoenix://HOST:PORT or "
        "mlflow://HOST:PORT"
    )
    assert parse_mlflow_url("mlflow://example.org/my%20experiment").url == (
        "mlflow://example.org:5000/my%20experiment"
    )
    assert _stored(store_path) == []


def test_an_unknown_experiment_is_one_line_naming_those_there(
    mlflow: Mlflow, traced: dict[str, str], runner: CliRunner, store_path: Path
) -> None:
    line = one_line_error(invoke(runner, store_path, "import", f"mlflow://{mlflow.address}/nope"))
    assert line.startswith(f"error: MLflow at http://{mlflow.address} has no experiment 'nope'")
    assert f"'{EXPERIMENT}'" in line
    assert _stored(store_path) == []


@pytest.mark.platform  # starts a real MLflow of its own
def test_a_server_that_is_gone_is_one_line_and_the_store_is_untouched(
    tmp_path: Path, runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    before = _stored(store_path)
    folder = tmp_path / "mlflow"
    folder.mkdir()
    server: Generator[Mlflow, None, None] = serve_mlflow(folder)
    gone = next(server)
    server.close()  # the server stopped: its port answers nothing
    url = f"mlflow://{gone.address}/{EXPERIMENT}"
    line = one_line_error(invoke(runner, store_path, "import", url))
    assert line.startswith(f"error: cannot reach MLflow at http://{gone.address}: ")
    assert line.endswith("(asking for the experiment)")
    assert _stored(store_path) == before


def _json(status: str, value: object) -> bytes:
    return answer(status, json.dumps(value).encode(), Content_Type="application/json")


def _experiment(asked: Asked) -> bytes | None:
    if asked.path.startswith("/api/2.0/mlflow/experiments/get-by-name"):
        return _json("200 OK", {"experiment": {"experiment_id": "7", "name": "e"}})
    return None


def test_a_server_that_dies_half_way_leaves_the_store_as_it_was(
    runner: CliRunner, store_path: Path
) -> None:
    """The search's first page comes, then the connection is dropped without an answer."""
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    before = _stored(store_path)

    def respond(asked: Asked) -> bytes:
        if len([a for a in server.asked if "search" in a.path]) > 1:
            return b""  # dead
        page = {"traces": [{"trace_id": "tr-" + "1" * 32}], "next_page_token": "t1"}
        return _experiment(asked) or _json("200 OK", page)

    with stub(respond) as server:
        line = one_line_error(
            invoke(runner, store_path, "import", f"mlflow://127.0.0.1:{server.port}/e")
        )
    assert line.startswith(f"error: cannot reach MLflow at {server.url}: ")
    assert line.endswith("(asking for page 2 of the trace search)")
    assert _stored(store_path) == before


def test_a_trace_without_its_spans_yet_is_left_for_the_next_import(
    runner: CliRunner, store_path: Path
) -> None:
    """MLflow's batchGet leaves out a trace whose spans are not all in; the search marks one still
    being logged IN_PROGRESS. Both are left out with a warning; the finished ones import (the
    answers here are the MLflow fixtures the real server gave, `scripts/mlflow/run.py`)."""
    fixtures = ROOT / "tests" / "fixtures" / "platforms" / "mlflow"
    batch = json.loads((fixtures / "rest-batch-get.json").read_text())
    finished = [t["trace_info"]["trace_id"] for t in batch["traces"]]
    search = [{"trace_id": t, "state": "OK"} for t in [*finished, "tr-" + "a" * 32]]
    search.append({"trace_id": "tr-" + "b" * 32, "state": "IN_PROGRESS"})

    def respond(asked: Asked) -> bytes:
        if "/traces/search" in asked.path:
            return _json("200 OK", {"traces": search})
        return _experiment(asked) or _json("200 OK", batch)

    with stub(respond) as server:
        url = f"mlflow://127.0.0.1:{server.port}/e"
        result = ok(invoke(runner, store_path, "import", url, "--json"))
    (imported,) = json.loads(result.stdout)
    assert sorted(r["id"] for r in imported["trajectories"]) == sorted(_run_id(t) for t in finished)
    assert imported["warnings"] == [
        f"MLflow at {server.url}: 1 trace(s) still being logged were left out (the first: "
        f"tr-{'b' * 32}); import again once they end",
        f"MLflow at {server.url} gave no spans for 1 trace(s) when asked for the spans of traces "
        f"1 to 3 of 3 (the first: tr-{'a' * 32}): spans still being written, or the trace "
        "deleted since the search; left out, import again to take them",
    ]


def test_pages_without_end_stop_at_the_cap_naming_the_page(
    runner: CliRunner, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "MAX_SEARCH_PAGES", 5)

    def respond(asked: Asked) -> bytes:
        token = f"t{len(server.asked)}"  # a new token each time: no circle to notice
        return _experiment(asked) or _json("200 OK", {"traces": [], "next_page_token": token})

    with stub(respond) as server:
        line = one_line_error(
            invoke(runner, store_path, "import", f"mlflow://127.0.0.1:{server.port}/e")
        )
    assert line == (
        f"error: MLflow at {server.url} still had more after page 5 of the trace search, the "
        "most followed: gave up"
    )
    assert len(server.asked) == 6  # the experiment, then five pages
    assert _stored(store_path) == []


def test_an_answer_larger_than_the_cap_is_one_line_naming_it(
    runner: CliRunner, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = answer("200 OK", b"{}").replace(b"Content-Length: 2", b"Content-Length: 999999999")

    def respond(asked: Asked) -> bytes:
        return _experiment(asked) or declared

    with stub(respond) as server:
        url = f"mlflow://127.0.0.1:{server.port}/e"
        line = one_line_error(invoke(runner, store_path, "import", url))
    assert line == (
        f"error: MLflow at {server.url} answered page 1 of the trace search with more than "
        "256 MiB: gave up (is it the right address?)"
    )
    # an answer that says no length and runs on past the cap
    monkeypatch.setattr(module, "MAX_ANSWER_BYTES", 1000)
    chunk = b"400\r\n" + b" " * 1024 + b"\r\n"
    endless = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunk * 4
    )

    def streams(asked: Asked) -> bytes:
        return _experiment(asked) or endless

    with stub(streams) as server:
        line = one_line_error(
            invoke(runner, store_path, "import", f"mlflow://127.0.0.1:{server.port}/e")
        )
    assert line == (
        f"error: MLflow at {server.url} answered page 1 of the trace search with more than "
        "1000 bytes: gave up (is it the right address?)"
    )
    assert _stored(store_path) == []


def _readme_commands() -> list[list[str]]:
    """The commands of the "MLflow, both ways" block of docs/importing.md, without
    ``agent-replay``."""
    text = (ROOT / "docs" / "importing.md").read_text()
    block = text[text.index("## MLflow, both ways") :].split("```sh\n", 1)[1].split("```")[0]
    return [shlex.split(line.split("  #")[0])[1:] for line in block.strip().splitlines()]


def test_the_documented_commands_run_against_a_real_mlflow(
    mlflow: Mlflow,
    traced: dict[str, str],
    models: FakeModelServer,
    runner: CliRunner,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    commands = _readme_commands()
    assert [c[0] for c in commands] == ["import", "import", "attribute"]
    failing = _run_id(traced["fail"])
    for command in commands:
        args = [
            failing
            if a == "RUN"
            else a.replace("127.0.0.1:5000", mlflow.address).replace(
                "http://127.0.0.1:8000/v1", models.base_url
            )
            for a in command
        ]
        result = ok(invoke(runner, store_path, *args, "--json"))
        if "--since" in args:  # resumed: nothing new
            (imported,) = json.loads(result.stdout)
            assert {r["result"] for r in imported["trajectories"]} == {"unchanged"}
    names = sorted(a["assessment_name"] for a in _assessments(mlflow, traced["fail"]))
    assert names == ["agent_replay.point_of_commitment", "agent_replay.verdict"]
