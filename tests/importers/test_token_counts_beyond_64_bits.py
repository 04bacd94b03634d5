"""A token count no store, OTLP intValue or SQLite integer can hold (beyond 2**63 - 1) is the
error of its span: ``import`` says the file, the line and the value in one line and stores nothing
(``--skip-invalid`` imports the rest); ``serve`` rejects that span as it rejects any span it cannot
read (200 with ``partial_success`` naming it) and stores the request's other traces, and the
exporter, told the request was taken, does not send it again."""

from __future__ import annotations

import http.client
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from typer.testing import CliRunner

from otel_replay import CanonicalJSONError, Store, Trajectory
from otel_replay.cli import app
from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request
from otel_replay.receiver._http import Receiver
from tests.sdk import Recorder, encodings

BEYOND = str(1 << 64)  # 18446744073709551616: one past what an unsigned 64-bit integer holds

#: The places a count can be too big: a Vercel AI SDK span's text, GenAI's key, a count of more
#: digits than Python's int() reads, and 2**63 (fits an unsigned integer, not OTLP's intValue).
CASES = {
    "vercel": ("ai.usage.promptTokens", BEYOND),
    "genai": ("gen_ai.usage.input_tokens", BEYOND),
    "5000-digits": ("gen_ai.usage.output_tokens", "9" * 5000),
    "2**63": ("llm.usage.total_tokens", str(1 << 63)),
}


def _run(recorder: Recorder, key: str, value: str, question: str) -> None:
    with recorder.span("agent", {"openinference.span.kind": "AGENT", "input.value": question}):
        attributes = {"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "m"}
        with recorder.span("ai.generateText.doGenerate", {**attributes, key: value}):
            pass


def _spans(key: str, value: str) -> tuple[ReadableSpan, ...]:
    recorder = Recorder()
    _run(recorder, key, value, "how many tokens?")
    return recorder.spans()


def _counts(path: Path) -> dict[str, int]:
    with Store.open(path, read_only=True) as store:
        return store.counts()


@pytest.mark.parametrize("case", list(CASES))
def test_import_says_the_file_the_line_and_the_count(
    runner: CliRunner, store_path: Path, tmp_path: Path, case: str
) -> None:
    key, value = CASES[case]
    files = encodings(_spans(key, value), tmp_path / "files")
    good = encodings(_spans("gen_ai.usage.input_tokens", "12"), tmp_path / "good")
    seeded = runner.invoke(app, ["import", str(good["otlp-jsonl"]), "--store", str(store_path)])
    assert seeded.exit_code == 0, seeded.output
    for name, path in files.items():
        before = _counts(store_path)
        result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])
        assert result.exit_code == 1, (name, result.output)
        assert "Traceback" not in result.output
        error, *rest = [line for line in result.stderr.splitlines() if line.strip()]
        # the OTLP JSON Lines file has the model call's span on its first line (children first)
        at = {"otlp-jsonl": f"{path}:1: ", "proto-stream": f"{path} (byte 0): "}
        assert error.startswith(f"error: {at.get(name, f'{path}: ')}token count "), (name, error)
        assert key in error and "ai.generateText.doGenerate" in error, error
        assert value[:20] in error and len(error) < len(str(path)) + 250, error
        assert rest == [f"nothing from {path} was imported"], result.stderr
        assert _counts(store_path) == before
        skipping = runner.invoke(
            app, ["import", str(path), "--store", str(store_path), "--skip-invalid"]
        )
        assert skipping.exit_code == 0, (name, skipping.output)
        assert "skipped 1 invalid record" in skipping.stderr


def test_a_count_that_fits_is_kept() -> None:
    from otel_replay.importers._usage import MAX_COUNT, span_usage

    assert span_usage({"gen_ai.usage.input_tokens": str(MAX_COUNT)}) == {"input_tokens": MAX_COUNT}
    # text that only looks like digits (a superscript two) is no count, as before, never an error
    assert span_usage({"gen_ai.usage.input_tokens": "\u00b2", "ai.usage.promptTokens": 3.0}) == {
        "input_tokens": 3
    }


def _post_json(port: int, body: bytes) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, orjson.loads(response.read())
    finally:
        connection.close()


def test_serve_rejects_the_span_names_it_and_keeps_the_good_traces(tmp_path: Path) -> None:
    store_file = tmp_path / "store.db"
    heard: list[tuple[int, str]] = []
    receiver = Receiver(
        lambda: Store.open(store_file),
        "127.0.0.1",
        0,
        max_body_bytes=1 << 20,
        on_request=lambda status, what: heard.append((status, what)),
    )
    receiver.start()
    try:
        recorder = Recorder()
        _run(recorder, "gen_ai.usage.input_tokens", "7", "a good run")
        _run(recorder, "ai.usage.promptTokens", BEYOND, "a run whose count cannot be kept")
        spans = recorder.spans()  # the model call, its root; the other model call, its root
        # the real exporter posts both runs in one request: taken, so never sent again
        exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", timeout=10)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        assert [status for status, _ in heard] == [200]
        assert "1 rejected" in heard[0][1]
        good, bad = (format(spans[i].context.trace_id, "032x") for i in (1, 3))
        with Store.open(store_file, read_only=True) as store:
            stored = {s.id: s.n_steps for s in store.summaries()}
            assert store.get(good).metadata["token_usage"] == {
                format(spans[0].context.span_id, "016x"): {"input_tokens": 7}
            }
        assert stored[good] == 1 and stored[bad] == 1  # the second: its root, the span refused
        # the same request as OTLP JSON: the answer names the span, the attribute and the value
        body = orjson.dumps(request_to_otlp_json(spans_to_request(spans)))
        status, answer = _post_json(receiver.port, body)
        assert status == 200
        partial = answer["partialSuccess"]
        assert isinstance(partial, dict) and partial["rejectedSpans"] == "1"
        message = str(partial["errorMessage"])
        assert "ai.usage.promptTokens" in message and BEYOND in message
        assert "ai.generateText.doGenerate" in message
    finally:
        receiver.stop()


def test_a_seed_no_intvalue_holds_is_the_error_of_its_span(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """A recording's seed goes back out as OTLP's intValue (signed 64 bits) when the run is
    exported: one beyond it is refused where it is read, not left to break the export."""
    document = request_to_otlp_json(spans_to_request(_spans("gen_ai.usage.input_tokens", "3")))
    root = document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    root["attributes"].append(
        {"key": "agent_replay.seed", "value": {"intValue": str((1 << 64) - 1)}}
    )
    path = tmp_path / "seed.otlp.json"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    error = result.stderr.splitlines()[0]
    assert error.startswith(f"error: {path}: agent_replay.seed 18446744073709551615 "), error
    assert "at span 'agent'" in error


def test_the_store_names_a_value_json_cannot_hold(store_path: Path) -> None:
    """The store's own guard, under every reader's: a run holding an integer beyond 64 bits is a
    `CanonicalJSONError` naming the run and where the value is, and nothing is stored."""
    run = Trajectory.build("t-1", [], metadata={"token_usage": {"s": {"input_tokens": 1 << 64}}})
    with Store.open(store_path) as store:
        with pytest.raises(CanonicalJSONError, match=r"run t-1 cannot be stored: metadata\.token"):
            store.put(run)
        assert store.counts()["trajectories"] == 0


def test_a_datadog_metric_beyond_64_bits_stays_the_float_it_was(tmp_path: Path) -> None:
    """ddtrace writes metrics as doubles: a whole one is read as the integer it is where an
    integer can hold it, and stays the float beyond (it round-trips as one); a token count that
    large is still the error of its span."""
    from otel_replay import ReadOptions, TraceFormatError, read_path
    from otel_replay.importers._datadog import decode_datadog
    from tests.importers.test_platform_datadog import CARRIED

    document = orjson.loads(CARRIED.read_bytes())
    document[0][0]["metrics"].update({"big": 1e300, "small": 2.0})
    span = next(iter(decode_datadog(document, _raise)))
    assert span.attributes["big"] == 1e300 and isinstance(span.attributes["big"], float)
    assert span.attributes["small"] == 2 and isinstance(span.attributes["small"], int)
    document[0][0]["metrics"]["gen_ai.usage.input_tokens"] = 1e30
    path = tmp_path / "dd.json"
    path.write_bytes(orjson.dumps(document))
    with pytest.raises(TraceFormatError, match=r"token count 1e\+30 in gen_ai.usage.input_tokens"):
        list(read_path(path, options=ReadOptions()))


def _raise(error: Exception) -> None:
    raise error
