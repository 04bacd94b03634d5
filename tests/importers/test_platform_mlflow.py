"""MLflow's traces: the support agent traced by the real MLflow (``mlflow.openai.autolog()`` and
``@mlflow.trace(span_type="TOOL")`` tools against the fake model server, logged to a real ``mlflow
server``), as ``Trace.to_json()`` writes them and as the server's v3 REST API answers
(`scripts/make_mlflow_fixtures.py`). Other shapes (a list of traces, damage, assessments of other
kinds) are derived here from those files, never written whole by hand.

What the agent did (`scripts/mlflow/run.py`): the ``pass`` run made 3 model requests and ran 3 tools
(the first response asked for lookup_order and search_policies at once, then track_shipment); the
``tool-error`` run made 2 model requests and ran lookup_order once, which raised.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from otel_replay import ReadOptions, StepKind, StepStatus, Store, TraceFormatError, read_path
from otel_replay.importers._documents import claiming_row
from otel_replay.importers._mlflow import decode_mlflow, decode_mlflow_trace
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, _read_all, json_values
from tests.importers.test_platform_jaeger import refused

HERE = ROOT / "tests" / "fixtures" / "platforms" / "mlflow"
PASS = HERE / "pass.json"
TOOL_ERROR = HERE / "tool-error.json"
ZIPKIN = ROOT / "tests" / "fixtures" / "platforms" / "zipkin" / "support-agent.zipkin.json"
SYSTEM = "You are a customer-support agent."


def _load(name: str) -> Any:
    return json.loads((HERE / name).read_text())


def _write(tmp_path: Path, document: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def _raise(exc: TraceFormatError) -> None:
    raise exc


def _shape(run: Any) -> list[tuple[StepKind, str, StepStatus]]:
    return [(s.kind, s.name, s.status) for s in run.steps]


def test_the_passing_run_is_one_step_per_operation() -> None:
    (run,) = read_path(PASS)
    assert run.metadata["format"] == "mlflow" and run.metadata["conventions"] == ["mlflow"]
    assert _shape(run) == [
        (StepKind.LLM, "gpt-fake", StepStatus.OK),
        (StepKind.TOOL, "lookup_order", StepStatus.OK),
        (StepKind.TOOL, "search_policies", StepStatus.OK),
        (StepKind.LLM, "gpt-fake", StepStatus.OK),
        (StepKind.TOOL, "track_shipment", StepStatus.OK),
        (StepKind.LLM, "gpt-fake", StepStatus.OK),
    ]
    first, lookup, search, second, track, last = run.steps
    # the model call comes in with the SDK request's messages, tools and parameters
    assert [m["role"] for m in first.inputs["messages"]] == ["system", "user"]
    assert first.inputs["messages"][0]["content"].startswith(SYSTEM)
    assert "at once" in first.inputs["messages"][1]["content"]
    assert first.inputs["model"] == "gpt-fake" and first.inputs["parameters"] == {"temperature": 0}
    assert [t["name"] for t in first.inputs["tools"]] == [
        "lookup_order",
        "track_shipment",
        "search_policies",
    ]
    # two calls in one turn, each answered by its own tool step with the call's id
    calls = first.output["tool_calls"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("lookup_order", {"order_id": "A-1001"}),
        ("search_policies", {"query": "late delivery refund"}),
    ]
    assert first.output["finish_reason"] == "tool_calls"
    assert lookup.inputs == {"arguments": {"order_id": "A-1001"}, "tool_call_id": calls[0]["id"]}
    assert search.inputs == {
        "arguments": {"query": "late delivery refund"},
        "tool_call_id": calls[1]["id"],
    }
    assert lookup.output == {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
    assert search.output == [
        "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost."
    ]
    results = [m for m in second.inputs["messages"] if m["role"] == "tool"]
    assert [(m["name"], m["tool_call_id"]) for m in results] == [
        ("lookup_order", calls[0]["id"]),
        ("search_policies", calls[1]["id"]),
    ]
    assert track.inputs["arguments"] == {"tracking_id": "TRK-42"}
    assert track.output["status"] == "delayed"
    assert "delayed" in last.output["content"] and last.output["finish_reason"] == "stop"
    assert run.outcome == 1.0
    assert run.metadata["token_usage"][first.span_id] == {
        "input_tokens": 40,
        "output_tokens": 12,
        "total_tokens": 52,
    }


def test_the_failing_run_keeps_the_tool_that_raised() -> None:
    (run,) = read_path(TOOL_ERROR)
    assert _shape(run) == [
        (StepKind.LLM, "gpt-fake", StepStatus.OK),
        (StepKind.TOOL, "lookup_order", StepStatus.ERROR),
        (StepKind.LLM, "gpt-fake", StepStatus.OK),
    ]
    asked, lookup, apology = run.steps
    assert lookup.inputs["arguments"] == {"order_id": "A-1001"}
    assert lookup.inputs["tool_call_id"] == asked.output["tool_calls"][0]["id"]
    assert lookup.error == "ToolFailure: order service unavailable (HTTP 503)"
    assert lookup.output is None
    told = apology.inputs["messages"][-1]
    assert told["role"] == "tool" and "order service unavailable" in told["content"]
    assert apology.output["content"].startswith("Sorry")
    assert run.outcome == 0.0  # the feedback named outcome is false; the trace's state is OK


def test_the_trace_info_goes_on_the_root_span() -> None:
    document = _load("pass.json")
    spans = list(decode_mlflow(document, _raise))
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "support_agent" and root.attributes["mlflow.spanType"] == "AGENT"
    assert root.attributes["mlflow.trace.id"] == document["info"]["trace_id"]
    assert root.attributes["session.id"] == "chat-A-1001"
    assert root.attributes["user.id"] == "customer-7"
    assert root.attributes["mlflow.assessment.outcome"] is True
    assert root.attributes["mlflow.assessment.tone"] == 0.8
    # each attribute's JSON text is decoded: the SDK request is an object, the type its name
    (chat, *_) = [s for s in spans if s.name == "Completions"]
    assert chat.attributes["mlflow.spanType"] == "CHAT_MODEL"
    assert chat.attributes["mlflow.spanInputs"]["model"] == "gpt-fake"
    assert chat.trace_id == document["info"]["trace_id"].removeprefix("tr-")
    (run,) = read_path(PASS)
    assert run.metadata["session"] == "chat-A-1001" and run.metadata["user"] == "customer-7"


def test_the_same_trace_read_every_way_is_one_run(tmp_path: Path) -> None:
    """``Trace.to_json()``, a list of traces, JSON Lines, and the server's REST answers."""
    (single,) = read_path(PASS)
    (failing,) = read_path(TOOL_ERROR)
    listed = _write(tmp_path, [_load("pass.json"), _load("tool-error.json")], "list.json")
    for path in (listed, HERE / "runs.jsonl", HERE / "rest-batch-get.json"):
        runs = list(read_path(path))
        assert [(r.id, r.identity, r.outcome) for r in runs] == [
            (single.id, single.identity, 1.0),
            (failing.id, failing.identity, 0.0),
        ], path.name
    (got,) = read_path(HERE / "rest-get-trace.json")
    assert (got.id, got.identity) == (single.id, single.identity)
    assert [s.hash for s in got.steps] == [s.hash for s in single.steps]
    assert [s.span_id for s in got.steps] == [s.span_id for s in single.steps]


def test_decode_mlflow_trace_reads_one_trace_of_the_rest_api() -> None:
    """What the ``mlflow://`` client hands it: one element of a batchGet answer."""
    first, second = _load("rest-batch-get.json")["traces"]
    spans = list(decode_mlflow_trace(first, _raise))
    assert len(spans) == 7 and [s.order for s in spans] == list(range(7))
    assert {s.attributes["mlflow.traceRequestId"] for s in spans} == {
        first["trace_info"]["trace_id"]
    }
    (failed,) = [s for s in decode_mlflow_trace(second, _raise) if s.status_code == 2]
    assert failed.name == "lookup_order" and failed.events[0].name == "exception"


def _as_mlflow_2(document: dict[str, Any]) -> dict[str, Any]:
    """The trace as MLflow 2 wrote it, as MLflow 3's ``Span.from_dict_v2`` and ``TraceInfoV2``
    read it back: ids in a ``context`` as 0x-hex, ``parent_id``, ``start_time``/``end_time``,
    ``status_code``; an info with ``request_id``, ``timestamp_ms`` and ``status``."""

    def hexed(raw: str | None, n_bytes: int) -> str | None:
        return None if raw is None else "0x" + base64.b64decode(raw).hex().zfill(2 * n_bytes)

    spans = [
        {
            "name": span["name"],
            "context": {
                "trace_id": hexed(span["trace_id"], 16),
                "span_id": hexed(span["span_id"], 8),
            },
            "parent_id": hexed(span["parent_span_id"], 8),
            "start_time": span["start_time_unix_nano"],
            "end_time": span["end_time_unix_nano"],
            "status_code": span["status"]["code"].removeprefix("STATUS_CODE_"),
            "status_message": span["status"]["message"],
            "attributes": span["attributes"],
            "events": [
                {"name": e["name"], "timestamp": e["time_unix_nano"], "attributes": e["attributes"]}
                for e in span["events"]
            ],
        }
        for span in document["data"]["spans"]
    ]
    info = document["info"]
    return {
        "info": {
            "request_id": info["trace_id"],
            "experiment_id": "1",
            "timestamp_ms": 1796538616871,
            "execution_time_ms": 597,
            "status": info["state"],
            "request_metadata": info["trace_metadata"],
            "tags": info["tags"],
        },
        "data": {"spans": spans},
    }


def test_an_mlflow_2_trace_is_the_same_run(tmp_path: Path) -> None:
    (run,) = read_path(TOOL_ERROR)
    (old,) = read_path(_write(tmp_path, _as_mlflow_2(_load("tool-error.json"))))
    assert old.metadata["format"] == "mlflow"
    assert (old.id, old.identity) == (run.id, run.identity)
    assert [(s.span_id, s.error) for s in old.steps] == [(s.span_id, s.error) for s in run.steps]
    assert old.metadata["session"] == "chat-A-1001"
    assert old.outcome is None  # MLflow 2's info kept no assessments here


@pytest.mark.parametrize("name", ["rest-search.json", "rest-trace-info.json"])
def test_trace_infos_without_spans_say_where_the_spans_are(
    runner: CliRunner, tmp_path: Path, name: str
) -> None:
    path = HERE / name
    line = refused(invoke(runner, tmp_path / "s.db", "import", str(path)), path)
    assert "comes without its spans" in line and "/api/3.0/mlflow/traces/get" in line


def _with_assessments(tmp_path: Path, assessments: list[Any], **info: Any) -> Path:
    document = _load("pass.json")
    document["info"]["assessments"] = assessments
    document["info"].update(info)
    return _write(tmp_path, document)


def _feedback(name: str, value: Any, **more: Any) -> dict[str, Any]:
    return {"assessment_name": name, "feedback": {"value": value}, "valid": True, **more}


def test_the_outcome_is_the_feedback_named_outcome(tmp_path: Path) -> None:
    assessments = _load("pass.json")["info"]["assessments"]
    (tone,) = [a for a in assessments if a["assessment_name"] == "tone"]
    # the trace's state is how it ended, not a score: without the feedback there is no outcome
    (run,) = read_path(_with_assessments(tmp_path, [tone]))
    assert run.outcome is None
    # another feedback is chosen by name
    options = ReadOptions(outcome_attribute="mlflow.assessment.tone")
    (run,) = read_path(_with_assessments(tmp_path, [tone]), options=options)
    assert run.outcome == 0.8
    # a judge's yes/no is true/false; the latest of a name wins; invalid ones and errors are out
    judged = [
        _feedback("outcome", "no", create_time="2026-12-06T06:30:23.000Z"),
        _feedback("outcome", "yes", create_time="2026-12-06T06:31:00.000Z"),
        _feedback("outcome", 0.0, create_time="2026-12-06T06:32:00.000Z", valid=False),
        {"assessment_name": "outcome", "feedback": {"error": {"error_code": "TIMEOUT"}}},
        {"assessment_name": "outcome", "expectation": {"value": False}},
    ]
    (run,) = read_path(_with_assessments(tmp_path, judged))
    assert run.outcome == 1.0
    # a label is no score; a feedback given to one span goes on that span
    chat_span = _load("pass.json")["data"]["spans"][1]["span_id"]
    others = [_feedback("outcome", "maybe"), _feedback("grounded", False, span_id=chat_span)]
    spans = list(decode_mlflow(json.loads(_with_assessments(tmp_path, others).read_text()), _raise))
    assert not any("mlflow.assessment.outcome" in s.attributes for s in spans)
    (graded,) = [s for s in spans if "mlflow.assessment.grounded" in s.attributes]
    assert graded.name == "Completions" and graded.attributes["mlflow.assessment.grounded"] is False


def test_a_trace_in_the_error_state_fails_its_root(tmp_path: Path) -> None:
    document = _load("pass.json")
    document["info"]["state"] = "ERROR"
    document["info"]["assessments"] = []
    del document["data"]["spans"][0]["status"]  # a root whose own status says nothing
    (run,) = read_path(_write(tmp_path, document))
    assert run.outcome == 0.0


def test_format_mlflow_is_forced_and_refuses_another_document(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    ok(invoke(runner, store, "import", str(PASS), "--format", "mlflow"))
    ok(invoke(runner, store, "import", str(HERE / "rest-batch-get.json"), "--format", "mlflow"))
    with Store.open(store) as db:
        assert db.count_runs() == 2
    result = invoke(runner, tmp_path / "t.db", "import", str(ZIPKIN), "--format", "mlflow")
    line = refused(result, ZIPKIN)
    assert "not a mlflow document" in line or "not an mlflow document" in line, line


def test_no_other_format_claims_mlflow_and_mlflow_claims_no_other() -> None:
    for name in ("pass.json", "runs.jsonl", "rest-get-trace.json", "rest-batch-get.json"):
        text = (HERE / name).read_text()
        document = json.loads(text.splitlines()[0] if name.endswith(".jsonl") else text)
        assert claiming_row(document).name == "mlflow", name  # type: ignore[union-attr]
    flat = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    assert claiming_row([flat]).name == "flat-spans"  # type: ignore[union-attr]
    assert claiming_row({"info": {"request_id": "tr-1"}, "data": {"spans": []}}) is None


def _damaged(name: str, change: Any) -> Any:
    document = copy.deepcopy(_load(name))
    change(document)
    return document


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(document: Any) -> None:
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _drop_data(document: Any) -> None:
    del document["data"]


@pytest.mark.parametrize(
    ("name", "change", "said"),
    [
        (
            "pass.json",
            _set(("data", "spans", 2, "attributes", "mlflow.spanInputs"), "{'order_id': 1"),
            "data.spans[2].attributes.mlflow.spanInputs",
        ),
        ("pass.json", _drop_data, "data"),
        ("pass.json", _set(("data", "spans", 3, "span_id"), "not-an-id"), "data.spans[3].span_id"),
        (
            "pass.json",
            _set(("data", "spans", 1, "start_time_unix_nano"), "soon"),
            "data.spans[1].start_time_unix_nano",
        ),
        (
            "rest-batch-get.json",
            _set(("traces", 1, "spans", 2, "attributes", 0, "value"), {"int_value": "x"}),
            "traces[1].spans[2].attributes[0].value",
        ),
    ],
)
def test_a_damaged_trace_is_located_and_nothing_is_stored(
    runner: CliRunner, tmp_path: Path, name: str, change: Any, said: str
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(TOOL_ERROR)))
    with Store.open(store) as db:
        before = db.counts()
    path = _write(tmp_path, _damaged(name, change), "damaged.json")
    line = refused(invoke(runner, store, "import", str(path)), path)
    assert f"at {said}" in line, line
    with Store.open(store) as db:
        assert db.counts() == before


def test_what_pythons_encoder_writes_is_read_as_it_was_meant() -> None:
    """MLflow encodes with Python's json: NaN and long integers are JSON text to it, and another
    instrumentation's attribute may be plain text."""
    document = _load("pass.json")
    attributes = document["data"]["spans"][2]["attributes"]
    attributes["mlflow.spanOutputs"] = json.dumps({"score": float("nan"), "n": 2**70})
    attributes["gen_ai.system"] = "openai"
    with pytest.raises(TraceFormatError, match="does not fit in 64 bits") as caught:
        list(decode_mlflow(document, _raise))
    assert caught.value.where == "data.spans[2].attributes.mlflow.spanOutputs"
    attributes["mlflow.spanOutputs"] = json.dumps({"score": float("nan")})
    spans = list(decode_mlflow(document, _raise))
    assert spans[2].attributes["mlflow.spanOutputs"] == {"score": "NaN"}
    assert spans[2].attributes["gen_ai.system"] == "openai"


def test_skip_invalid_reads_the_spans_that_can_be_read(tmp_path: Path) -> None:
    change = _set(("data", "spans", 2, "attributes", "mlflow.spanInputs"), "{broken")
    path = _write(tmp_path, _damaged("pass.json", change))
    options = ReadOptions(skip_invalid=True)
    (run,) = read_path(path, options=options)
    assert len(run.spans) == 6
    (skipped,) = options.report.skipped
    assert skipped.where == "data.spans[2].attributes.mlflow.spanInputs"


# --- fuzzing ---------------------------------------------------------------------------------------

ids = st.one_of(st.text("0123456789abcdef", max_size=34), st.text(max_size=14), json_values)
encoded = st.one_of(json_values.map(json.dumps), st.text(max_size=12), json_values)
json_spans = st.fixed_dictionaries(
    {"trace_id": ids, "span_id": ids, "name": st.one_of(st.text(max_size=8), json_values)},
    optional={
        "parent_span_id": ids,
        "start_time_unix_nano": st.one_of(st.integers(-5, 1 << 63), json_values),
        "end_time_unix_nano": st.one_of(st.integers(-5, 1 << 63), json_values),
        "attributes": st.one_of(
            st.dictionaries(
                st.sampled_from(
                    ["mlflow.spanType", "mlflow.spanInputs", "mlflow.spanOutputs", "x"]
                ),
                encoded,
                max_size=4,
            ),
            json_values,
        ),
        "status": st.one_of(
            st.fixed_dictionaries({"code": st.sampled_from(["STATUS_CODE_ERROR", "OK", 7])}),
            json_values,
        ),
        "events": st.one_of(st.lists(json_values, max_size=2), json_values),
        "context": st.one_of(
            st.fixed_dictionaries({"trace_id": ids, "span_id": ids}), json_values
        ),  # MLflow 2's spans
        "parent_id": ids,
        "start_time": st.one_of(st.integers(-5, 1 << 63), json_values),
        "status_code": st.one_of(st.sampled_from(["OK", "ERROR"]), json_values),
    },
)
assessments = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "assessment_name": json_values,
                "feedback": st.one_of(st.fixed_dictionaries({"value": json_values}), json_values),
            },
            optional={"span_id": ids, "valid": json_values, "create_time": json_values},
        ),
        json_values,
    ),
    max_size=3,
)
infos = st.fixed_dictionaries(
    {"trace_id": json_values, "state": st.one_of(st.sampled_from(["OK", "ERROR"]), json_values)},
    optional={"assessments": st.one_of(assessments, json_values), "trace_metadata": json_values},
)
traces = st.one_of(
    st.fixed_dictionaries(
        {"info": infos},
        optional={
            "data": st.one_of(
                st.fixed_dictionaries({"spans": st.lists(json_spans, max_size=4)}), json_values
            )
        },
    ),
    st.fixed_dictionaries(
        {"trace_info": infos},
        optional={"spans": st.one_of(st.lists(json_spans, max_size=3), json_values)},
    ),
)
documents = st.one_of(
    traces,
    st.lists(traces, max_size=3),
    st.fixed_dictionaries({"trace": traces}),
    st.fixed_dictionaries({"traces": st.lists(st.one_of(traces, infos), max_size=3)}),
)


@FAST
@given(document=documents, skip=st.booleans())
def test_mlflow_shaped_input_never_tracebacks(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document))
    _read_all(path, skip)
