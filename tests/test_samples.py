"""The bundled sample traces: what the quick start shows is true of them."""

from __future__ import annotations

from otel_replay import StepKind, StepStatus, read_path
from tests.conftest import SAMPLES

FAILING = "ef2843ff74cff6a6b6dc0914faa30751"


def test_the_failing_run_blames_the_database_because_list_deploys_came_back_empty() -> None:
    runs = {r.id: r for r in read_path(SAMPLES / "incident.otlp.jsonl")}
    assert sorted((r.outcome for r in runs.values()), key=float) == [0.0, 1.0, 1.0]
    failing = runs[FAILING]
    assert failing.outcome == 0.0
    names = [(s.kind, s.name) for s in failing.steps]
    assert names[:4] == [
        (StepKind.LLM, "rule-based-investigator"),
        (StepKind.TOOL, "query_metrics"),
        (StepKind.LLM, "rule-based-investigator"),
        (StepKind.TOOL, "list_deploys"),
    ]
    assert failing.steps[3].output == []
    assert (StepKind.TOOL, "search_logs") in names
    assert "database" in failing.steps[-1].output["content"]
    assert "v841" not in failing.steps[-1].output["content"]


def test_passing_runs_name_the_deploy() -> None:
    for run in read_path(SAMPLES / "incident.otlp.jsonl"):
        if run.outcome == 1.0:
            assert "v841" in run.steps[-1].output["content"]


def test_the_retry_run_has_an_error_step_it_recovered_from() -> None:
    (retry,) = [r for r in read_path(SAMPLES / "incident.otlp.jsonl") if r.id.startswith("5bb5")]
    errors = [s for s in retry.steps if s.status is StepStatus.ERROR]
    assert [s.name for s in errors] == ["list_deploys"]
    assert errors[0].error


def test_json_lines_and_protobuf_hold_the_same_runs() -> None:
    from_json = {r.id: r.final_hash for r in read_path(SAMPLES / "incident.otlp.jsonl")}
    from_proto = {r.id: r.final_hash for r in read_path(SAMPLES / "incident.otlp.pb")}
    assert from_json == from_proto


def test_genai_flavour_tells_the_same_story() -> None:
    runs = {r.outcome: r for r in read_path(SAMPLES / "incident-genai.otlp.jsonl")}
    assert set(runs) == {0.0, 1.0}
    assert [s.name for s in runs[0.0].steps if s.kind is StepKind.TOOL] == [
        "query_metrics",
        "list_deploys",
        "search_logs",
    ]


def test_genai_runs_hold_the_conversations_of_their_openinference_twins() -> None:
    """One message shape whatever recorded it: a GenAI tool result (a JSON value in its part) is the
    text the agent sent, as OpenInference recorded it, with the tool's name."""
    openinference = {
        (r.outcome, len(r.steps)): r for r in read_path(SAMPLES / "incident.otlp.jsonl")
    }
    for genai in read_path(SAMPLES / "incident-genai.otlp.jsonl"):
        twin = openinference[genai.outcome, len(genai.steps)]  # failed; passed without a retry
        conversations = [s.inputs["messages"] for s in genai.steps if s.kind is StepKind.LLM]
        assert conversations == [s.inputs["messages"] for s in twin.steps if s.kind is StepKind.LLM]
        results = [m for m in conversations[-1] if m["role"] == "tool"]
        assert results and all(isinstance(m["content"], str) and m["name"] for m in results)


def test_native_samples_match_their_otlp_twins() -> None:
    otlp = {r.steps[0].start_time_unix_nano: r for r in read_path(SAMPLES / "incident.otlp.jsonl")}
    natives = list(read_path(SAMPLES / "incident.steps.jsonl"))
    assert len(natives) == len(otlp) == 3
    for native in natives:
        twin = otlp[native.steps[0].start_time_unix_nano]
        assert native.final_hash == twin.final_hash
        assert native.outcome == twin.outcome
