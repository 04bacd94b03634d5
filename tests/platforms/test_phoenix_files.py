"""Phoenix's span JSON and its OTLP-shaped pages, saved as files, read as the spans they hold: golden
tests on files a real Phoenix wrote (``scripts/make_phoenix_fixtures.py`` makes them; no server needed
here). The runs are the incident example's, so each file gives the steps the sample traces give."""

from __future__ import annotations

import pytest

from otel_replay import StepStatus, Trajectory, read_path
from otel_replay.importers import Format
from otel_replay.importers._sniff import detect
from tests.conftest import ROOT, SAMPLES
from tests.platforms.incident_runs import FAIL, FAIL_STEPS, GENAI_FAIL, RETRY, RETRY_STEPS

FIXTURES = ROOT / "tests" / "fixtures" / "platforms" / "phoenix"
STEPS = {RETRY: RETRY_STEPS, FAIL: FAIL_STEPS, GENAI_FAIL: FAIL_STEPS}
ARGUMENTS = {
    RETRY: [
        {"service": "checkout", "metric": "error_rate"},
        {"service": "checkout"},
        {"service": "checkout"},
    ],
    FAIL: [
        {"service": "checkout", "metric": "error_rate"},
        {"service": "checkout"},
        {"service": "checkout", "query": "error OR warn"},
    ],
}
ARGUMENTS[GENAI_FAIL] = ARGUMENTS[FAIL]
OUTCOMES = {RETRY: 1.0, FAIL: 0.0, GENAI_FAIL: 0.0}

# file: (the format the run's metadata names, [trajectory ids])
FILES = {
    "incident.spans.json": ("span-dump", [FAIL, RETRY]),
    "incident-by-run.spans.json": ("span-dump", [FAIL, RETRY]),
    "incident.otlpv1.json": ("phoenix-otlp", [FAIL, RETRY]),
    "genai.spans.json": ("span-dump", [GENAI_FAIL]),
    "genai.otlpv1.json": ("phoenix-otlp", [GENAI_FAIL]),
}


def _samples() -> dict[str, Trajectory]:
    runs = {}
    for name in ("incident.otlp.jsonl", "incident-genai.otlp.jsonl"):
        runs.update({t.id: t for t in read_path(SAMPLES / name)})
    return runs


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_phoenix_file_gives_the_runs_steps_exactly(name: str) -> None:
    path = FIXTURES / name
    assert detect(path, 1 << 26) is Format.OTLP_JSON
    fmt, ids = FILES[name]
    runs = list(read_path(path))
    assert [t.final_hash for t in read_path(path, fmt)] == [t.final_hash for t in runs]
    assert [t.id for t in runs] == ids
    for run in runs:
        assert run.metadata["format"] == fmt
        assert [(s.kind.value, s.name, s.status.value) for s in run.steps] == STEPS[run.id]
        tools = [s for s in run.steps if s.kind.value == "tool"]
        assert [s.inputs["arguments"] for s in tools] == ARGUMENTS[run.id]
        assert run.outcome == OUTCOMES[run.id]


def test_the_failed_tool_is_an_error_with_phoenix_s_message() -> None:
    """Phoenix span JSON keeps ``status_code`` and ``status_message`` at the top of the span."""
    for name in ("incident.spans.json", "incident-by-run.spans.json", "incident.otlpv1.json"):
        retry = {t.id: t for t in read_path(FIXTURES / name)}[RETRY]
        failed = retry.steps[3]
        assert failed.status is StepStatus.ERROR, name
        assert failed.error == (
            "UpstreamError: list_deploys: upstream answered 503 Service Unavailable"
        )


def test_openinference_runs_read_from_phoenix_are_the_sample_runs() -> None:
    """Same content, same hashes, same span ids as the OTLP the SDK wrote for them."""
    samples = _samples()
    for name in ("incident.spans.json", "incident-by-run.spans.json", "incident.otlpv1.json"):
        for run in read_path(FIXTURES / name):
            assert run.final_hash == samples[run.id].final_hash, name
            assert [s.span_id for s in run.steps] == [s.span_id for s in samples[run.id].steps]


def test_the_fixtures_are_what_the_script_names() -> None:
    """Every file the script writes is here and tested; nothing else is."""
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(FILES)


def test_null_members_of_a_value_read_as_absent() -> None:
    """Phoenix writes every member of an AnyValue, the unset ones null (proto3 JSON: absent)."""
    from otel_replay.importers._otlp_json_decode import any_value

    unset = dict.fromkeys(
        ("array_value", "bool_value", "bytes_value", "double_value", "int_value", "kvlist_value")
    )
    assert any_value({**unset, "string_value": None, "double_value": 1.0}, "v") == 1.0
    assert any_value({**unset, "string_value": "x"}, "v") == "x"
    listed = {**unset, "string_value": None, "array_value": {"values": [{**unset, "int_value": 3}]}}
    assert any_value(listed, "v") == [3]
    assert any_value({**unset, "string_value": None}, "v") is None
