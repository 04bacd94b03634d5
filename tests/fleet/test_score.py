"""Every run can have an outcome (issue 38, item 4): runs that arrive as traces carry none (the
root span has status OK and no score), ``score`` gives them one with a verifier and keeps where it
came from, ``attribute --all-failing`` then picks exactly the failing ones, an attribution keeps
the outcome it computed, and ``serve --outcome-attribute`` reads a score as ``import`` does.

The runs are a booking agent's, made by the real OpenTelemetry SDK with OpenInference's
attributes and written as OTLP (or sent by the SDK's OTLP/HTTP exporter to ``serve``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import Store, UserCode, score_runs
from otel_replay.errors import NotFoundError, VerifierError
from otel_replay.fleet import Selection
from otel_replay.importers import read_path
from otel_replay.ingest import IngestResult, ingest
from otel_replay.otlp_encode import spans_to_request, write_otlp_json_lines
from otel_replay.report._page import esc
from otel_replay.store._trajectories import summarize
from otel_replay.viewer._compare import diff_page
from otel_replay.viewer._pages import run_page
from otel_replay.viewer._run_list import run_list_page
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT
from tests.sdk import Recorder, dumps

#: The runs: the slots the calendar tool returned, and the answer the model gave.
RUNS = [
    ("2026-03-14", "10:00, 11:00", "Booked 10:00 with Ada."),
    ("2026-03-15", "[]", "Sorry, there is no free slot."),
    ("2026-03-16", "09:30", "Booked 09:30 with Ada."),
    ("2026-03-17", "error: calendar unavailable", "I could not reach the calendar."),
    ("2026-03-18", "14:00", "Booked 14:00 with Ada."),
]
FAILING = {1, 3}  # the runs whose answer does not say Booked
SOURCE = "verifier:builtin.success_if('Booked')"
QUICK = ["--tools", "recorded", "--driver", "trace", "--rollouts", "4"]


def _booking_run(rec: Recorder, date: str, slots: str, answer: str, score: float | None) -> None:
    """One run of the agent: it asks for the free slots, the tool answers, the model answers."""
    asked = [
        ("system", "You book meetings."),
        ("user", f"Book a meeting with Ada on {date}."),
    ]
    inputs = {
        f"llm.input_messages.{i}.message.{key}": value
        for i, (role, content) in enumerate(asked)
        for key, value in (("role", role), ("content", content))
    }
    root_attributes: dict[str, str | float] = {
        "openinference.span.kind": "AGENT",
        "input.value": asked[1][1],
    }
    if score is not None:
        root_attributes["booking.ok"] = score
    with rec.span("scheduler", root_attributes):
        with rec.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                **inputs,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": f"call_{date}",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_free_slots",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": dumps(
                    {"email": "ada@example.com"}
                ),
            },
        ):
            pass
        with rec.span(
            "get_free_slots",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_free_slots",
                "tool.id": f"call_{date}",
                "input.value": dumps({"email": "ada@example.com"}),
                "input.mime_type": "application/json",
                "output.value": slots,
                "output.mime_type": "text/plain",
            },
        ):
            pass
        with rec.span(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                **inputs,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
            },
        ):
            pass


def _traces(path: Path) -> Path:
    rec = Recorder(service="scheduler")
    for date, slots, answer in RUNS:
        _booking_run(rec, date, slots, answer, None)
    write_otlp_json_lines([spans_to_request(rec.spans())], path)
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    return _traces(tmp_path / "scheduler.otlp.jsonl")


@pytest.fixture
def store(runner: CliRunner, tmp_path: Path, traces: Path) -> Path:
    """A store of the five runs as imported: none has an outcome."""
    path = tmp_path / "store.db"
    ok(invoke(runner, path, "import", str(traces)))
    return path


def _ids(store: Path) -> list[str]:
    """The runs' ids, in the order `RUNS` made them."""
    with Store.open(store, read_only=True) as db:
        return [s.id for s in sorted(db.summaries(), key=lambda s: s.start_time_unix_nano or 0)]


def _failing(store: Path) -> set[str]:
    ids = _ids(store)
    return {ids[i] for i in FAILING}


def _outcomes(store: Path) -> dict[str, tuple[float | None, str | None]]:
    with Store.open(store, read_only=True) as db:
        return {s.id: (s.outcome, s.outcome_source) for s in db.summaries()}


def _listed(runner: CliRunner, store: Path, *args: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = orjson.loads(
        ok(invoke(runner, store, "list", "--json", *args)).stdout
    )
    return rows


def _reported(store: Path) -> set[str]:
    with Store.open(store, read_only=True) as db:
        return {run for run in _ids(store) if db.reports(run)}


def test_imported_runs_have_no_outcome_until_scored(runner: CliRunner, store: Path) -> None:
    assert set(_outcomes(store).values()) == {(None, None)}
    assert _listed(runner, store, "--where", "failed") == []

    scored = ok(invoke(runner, store, "score", "--all", "--success-if", "Booked"))
    assert "scored 5 runs (2 failing), skipped 0 runs with an outcome already" in scored.stdout

    failing = _failing(store)
    assert {row["id"] for row in _listed(runner, store, "--where", "failed")} == failing
    assert _outcomes(store) == {
        run: (0.0 if run in failing else 1.0, SOURCE) for run in _ids(store)
    }
    rows = {row["id"]: row for row in _listed(runner, store)}
    assert {row["outcome_source"] for row in rows.values()} == {SOURCE}
    table = ok(invoke(runner, store, "list")).stdout
    assert table.count("0 verifier") == 2 and table.count("1 verifier") == 3
    shown = ok(invoke(runner, store, "show", sorted(failing)[0])).stdout
    assert f"outcome 0 (failed) from {SOURCE}" in shown
    record = orjson.loads(ok(invoke(runner, store, "show", sorted(failing)[0], "--json")).stdout)
    assert (record["outcome"], record["outcome_source"]) == (0.0, SOURCE)
    with Store.open(store, read_only=True) as db:
        page = run_page(db, sorted(failing)[0])
        listing = run_list_page(db)
        compared = diff_page(db, *sorted(failing))
    assert f"outcome 0 failed from <span class='mono'>{esc(SOURCE)}</span>" in page
    assert listing.count(f'title="{esc(SOURCE)}">verifier</span>') == len(RUNS)
    assert compared.count(f"outcome 0 failed from {esc(SOURCE)}") == 2
    compared = orjson.loads(ok(invoke(runner, store, "diff", *sorted(failing), "--json")).stdout)
    assert compared["left"]["outcome_source"] == compared["right"]["outcome_source"] == SOURCE


def test_scoring_changes_no_hash_and_a_trace_imported_again_keeps_its_score(
    runner: CliRunner, store: Path, traces: Path
) -> None:
    with Store.open(store, read_only=True) as db:
        before = {s.id: (s.final_hash, db.get(s.id).identity) for s in db.summaries()}
    ok(invoke(runner, store, "score", "--all", "--success-if", "Booked"))
    with Store.open(store) as db:
        after = {s.id: (s.final_hash, db.get(s.id).identity) for s in db.summaries()}
        assert after == before
        for summary in db.summaries():  # the stored digest is the one the run read back makes
            assert summarize(db.get(summary.id)).content_digest == summary.content_digest
        again = ingest(db, read_path(traces))
    assert {i.result for i in again} == {IngestResult.UNCHANGED}
    failing = _failing(store)
    assert _outcomes(store) == {
        run: (0.0 if run in failing else 1.0, SOURCE) for run in _ids(store)
    }


def test_scored_runs_are_skipped_unless_forced(runner: CliRunner, store: Path) -> None:
    ids = _ids(store)
    ok(invoke(runner, store, "score", ids[0], ids[1], "--success-if", "Booked"))
    listed = orjson.loads(
        ok(invoke(runner, store, "score", "--all", "--fail-if", "Sorry", "--json")).stdout
    )
    assert [(row["id"], row["status"]) for row in listed] == [
        (run, "skipped" if run in ids[:2] else "scored") for run in _newest_first(store)
    ]
    # --fail-if Sorry passes run 3 (the calendar was unreachable): a verifier's own judgement
    assert _outcomes(store)[ids[3]] == (1.0, "verifier:builtin.fail_if('Sorry')")
    assert _outcomes(store)[ids[1]] == (0.0, SOURCE)

    forced = orjson.loads(
        ok(
            invoke(runner, store, "score", ids[3], "--success-if", "Booked", "--force", "--json")
        ).stdout
    )
    assert forced == [
        {
            "id": ids[3],
            "status": "rescored",
            "outcome": 0.0,
            "outcome_source": SOURCE,
            "before": 1.0,
            "before_source": "verifier:builtin.fail_if('Sorry')",
            "error": None,
        }
    ]
    assert _outcomes(store)[ids[3]] == (0.0, SOURCE)


def _newest_first(store: Path) -> list[str]:
    return list(reversed(_ids(store)))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nosuchrun", "--success-if", "Booked"], "no trajectory id starts with 'nosuchrun'"),
        (["--all"], "nothing to score runs with"),
        (["--success-if", "Booked"], "name runs (ID...), or choose them with --where"),
        (["--where", "steps >", "--success-if", "Booked"], "cannot read 'steps >'"),
        (["--all", "--success-if", "("], "--success-if '(' is not a regular expression"),
        (["--all", "--success-if", "B", "--judge", "ok?"], "both say how to score a run"),
        (["--where", "steps > 99", "--success-if", "B"], "no stored run matches the selection"),
    ],
)
def test_bad_input_is_one_line_and_the_store_is_untouched(
    runner: CliRunner, store: Path, args: list[str], says: str
) -> None:
    before = store.read_bytes(), _outcomes(store)
    line = one_line_error(invoke(runner, store, "score", *args))
    assert says in line
    assert (store.read_bytes(), _outcomes(store)) == before


def test_the_python_api_scores_and_says_what_it_did(store: Path) -> None:
    ids = _ids(store)
    code = UserCode(success_if="Booked")
    with Store.open(store) as db:
        with pytest.raises(NotFoundError):
            score_runs(db, ["nosuchrun"], code)
        with pytest.raises(VerifierError, match="nothing to score runs with"):
            score_runs(db, ids, UserCode())
        done = score_runs(db, Selection(where="steps > 0"), code)
        assert {(s.id, s.status.value, s.outcome, s.failed) for s in done} == {
            (run, "scored", 0.0 if i in FAILING else 1.0, i in FAILING) for i, run in enumerate(ids)
        }
        assert {s.status.value for s in score_runs(db, ids, code)} == {"skipped"}


def test_all_failing_after_score_attributes_exactly_the_failing_runs(
    runner: CliRunner, store: Path
) -> None:
    ok(invoke(runner, store, "score", "--all", "--success-if", "Booked"))
    done = orjson.loads(
        ok(
            invoke(
                runner,
                store,
                "attribute",
                "--all-failing",
                "--success-if",
                "Booked",
                *QUICK,
                "--json",
            )
        ).stdout
    )
    assert {row["id"] for row in done} == _failing(store)
    assert {row["status"] for row in done} == {"done"}
    assert _reported(store) == _failing(store)


def test_all_failing_with_a_verifier_scores_the_unscored_runs_first(
    runner: CliRunner, store: Path
) -> None:
    """Before, this was "no stored run matches the selection" (no run had an outcome)."""
    result = ok(invoke(runner, store, "attribute", "--all-failing", "--success-if", "Booked",
                       *QUICK))  # fmt: skip
    assert "scored 5 runs that had no outcome (2 failing)" in result.stderr
    assert _reported(store) == _failing(store)
    failing = _failing(store)
    assert _outcomes(store) == {
        run: (0.0 if run in failing else 1.0, SOURCE) for run in _ids(store)
    }


def test_passing_runs_of_a_where_selection_are_skipped_and_counted(
    runner: CliRunner, store: Path
) -> None:
    """Before, each passing run was a five-line error row and the command exited 1."""
    result = ok(invoke(runner, store, "attribute", "--where", "steps > 0", "--success-if",
                       "Booked", *QUICK))  # fmt: skip
    assert "2 reports kept in the store, 3 skipped (3 passing: there is no failure to " in (
        result.stdout
    )
    assert "error" not in result.stdout
    assert _reported(store) == _failing(store)


def test_an_attribution_keeps_the_outcome_it_computed(runner: CliRunner, store: Path) -> None:
    run = sorted(_failing(store))[0]
    ok(invoke(runner, store, "attribute", run, "--success-if", "Booked", *QUICK))
    outcomes = _outcomes(store)
    assert outcomes[run] == (0.0, "attribution:builtin.success_if('Booked')")
    assert [o for other, o in outcomes.items() if other != run] == [(None, None)] * 4
    assert [row["id"] for row in _listed(runner, store, "--where", "failed")] == [run]
    shown = ok(invoke(runner, store, "show", run)).stdout
    assert "outcome unknown" not in shown
    assert "outcome 0 (failed) from attribution:builtin.success_if('Booked')" in shown


def test_serve_reads_the_outcome_attribute_as_import_does(tmp_path: Path) -> None:
    """The real SDK exporter sends runs whose root span carries ``booking.ok`` (a name agent-replay
    does not read by itself) to ``serve --outcome-attribute booking.ok``."""
    served = tmp_path / "served.db"
    command = [sys.executable, "-m", "otel_replay", "--store", str(served), "serve", "--port",
               "0", "--outcome-attribute", "booking.ok"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert "receiving OTLP/HTTP traces at http://127.0.0.1:" in line, line
        url = line.split("at ")[1].split("/v1/traces")[0]
        rec = Recorder(service="scheduler")
        rec.provider = TracerProvider(resource=Resource.create({"service.name": "scheduler"}))
        rec.provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces"))
        )
        rec.tracer = rec.provider.get_tracer("tests.score")
        for i, (date, slots, answer) in enumerate(RUNS):
            _booking_run(rec, date, slots, answer, 0.0 if i in FAILING else 1.0)
        rec.provider.shutdown()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    with Store.open(served, read_only=True) as db:
        runs = sorted(db.summaries(), key=lambda s: s.start_time_unix_nano or 0)
    assert [(s.outcome, s.outcome_source) for s in runs] == [
        (0.0 if i in FAILING else 1.0, "trace") for i in range(len(RUNS))
    ]
    assert err.decode().count(", outcome 0)") == 2


def _booked_or_not(body: dict[str, Any]) -> dict[str, Any]:
    """A judge model that says yes exactly when the answer it is shown books the meeting."""
    answer = body["messages"][-1]["content"].split("The agent's final answer:\n", 1)[1]
    verdict = "yes" if "Booked" in answer else "no"
    return {"role": "assistant", "content": orjson.dumps({"verdict": verdict}).decode()}


def test_a_judge_scores_each_run_once_and_is_named_as_the_source(
    runner: CliRunner, store: Path
) -> None:
    question = "Does the answer confirm a booking?"
    with FakeModelServer(replying(_booked_or_not)) as server:
        options = [
            "--judge",
            question,
            "--judge-base-url",
            server.base_url,
            "--judge-model",
            "judge",
        ]
        scored = ok(invoke(runner, store, "score", "--all", *options, "--json"))
        assert len(server.requests) == len(RUNS)  # five distinct answers, each asked once
    failing = _failing(store)
    assert {row["id"]: row["outcome"] for row in orjson.loads(scored.stdout)} == {
        run: 0.0 if run in failing else 1.0 for run in _ids(store)
    }
    assert {source for _, source in _outcomes(store).values()} == {f"judge:{question}"}


def test_all_failing_reads_stored_outcomes_and_asks_the_verifier_about_the_runs_it_picks(
    runner: CliRunner, store: Path
) -> None:
    """A run stored as passing is not chosen (nor read); one stored as failing that the verifier
    passes is skipped and counted, never attributed into an error row."""
    ids = _ids(store)
    ok(invoke(runner, store, "score", "--all", "--fail-if", "Sorry"))  # run 3 passes by this one
    ok(invoke(runner, store, "score", ids[0], "--fail-if", "Booked", "--force"))  # run 0 fails
    done = orjson.loads(
        ok(
            invoke(
                runner,
                store,
                "attribute",
                "--all-failing",
                "--success-if",
                "Booked",
                *QUICK,
                "--json",
            )
        ).stdout
    )
    assert sorted((row["id"], row["status"]) for row in done) == sorted(
        [(ids[0], "skipped: passing"), (ids[1], "done")]
    )
    assert _reported(store) == {ids[1]}
