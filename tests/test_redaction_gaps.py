"""Redaction without gaps (issue 40, item 5): a secret that is an object key is redacted as a value
is, the same by `import` and `serve`, wherever the run goes; messages that quote trace content or
user code's exception text are redacted with the patterns in force."""

from __future__ import annotations

import http.client
import json
import re
import string
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from otel_replay import COMMON_SECRET_PATTERNS, Store
from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request
from otel_replay.receiver._http import Receiver
from otel_replay.redaction import Redactor
from tests.cli_helpers import invoke, ok
from tests.importers.test_fuzz import FAST, SLOW

#: keys of model providers, caught by --redact-common; what is asserted absent is their tails
FIRST = "sk-live-Qm4Rt8Yp2Wx6Vn0Lk3Jh7Gf5Dc9Sa1Zb"
SECOND = "sk-proj-Hu7Ij3Ko9Lp1Mq5Nr2Os8Pt4Qu6Rv0Sw"
TAILS = (FIRST[8:], SECOND[8:])


def _leaks(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [tail for tail in TAILS if tail in text]


def _store_bytes(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))


def _keyed_spans() -> tuple[ReadableSpan, ...]:
    """A run from the real SDK whose tool arguments (JSON text in a string attribute) have secrets
    as object keys, two of them at the same depth, one deeper, and a header's value."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.redaction_gaps")
    arguments = {FIRST: 1, SECOND: 2, "nested": [{"deeper": {FIRST: "x"}}],
                 "headers": {"Authorization": "Token 5f0e9d8c7b6a5f4e3d2c"}}  # fmt: skip
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span(
            "lookup",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": orjson.dumps(arguments).decode(),
                "output.value": orjson.dumps({SECOND: "found"}).decode(),
            },
        ):
            pass
    return tuple(exporter.get_finished_spans())


def _served(store: Path, spans: tuple[ReadableSpan, ...], patterns: list[str]) -> None:
    receiver = Receiver(lambda: Store.open(store), "127.0.0.1", 0, max_body_bytes=1 << 20)
    receiver.intake.redacting(patterns)
    receiver.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        body = spans_to_request(spans).SerializeToString()
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        assert connection.getresponse().status == 200
        connection.close()
    finally:
        receiver.stop()


def _only_run(store: Path) -> Any:
    with Store.open(store, read_only=True) as db:
        (summary,) = db.summaries()
        return db.get(summary.id)


def test_a_secret_that_is_an_object_key_is_redacted_by_import_as_by_serve_everywhere(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: `import --redact-common` left both keys in the store, `show --json` and every
    export, while `serve` redacted them (as text, before the arguments were parsed)."""
    spans = _keyed_spans()
    traces = tmp_path / "t.otlp.json"
    traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(spans))))
    ok(invoke(runner, store_path, "import", str(traces), "--redact-common"))
    assert _leaks(_store_bytes(store_path)) == []
    run = _only_run(store_path)
    (tool,) = [step for step in run.steps if step.name == "lookup"]
    # both keys are kept, the second numbered; the header's value is matched with its key
    assert set(tool.inputs.get("arguments", tool.inputs)) >= {
        "[REDACTED]",
        "[REDACTED] (2)",
    }
    assert "Token [REDACTED]" in orjson.dumps(tool.inputs).decode()
    outputs = [
        invoke(runner, store_path, "show", run.id).stdout,
        invoke(runner, store_path, "show", run.id, "--json").stdout,
    ]
    for fmt in ("jsonl", "otlp-json", "otlp-proto", "parquet"):
        out = tmp_path / f"export.{fmt}"
        ok(invoke(runner, store_path, "export", "--format", fmt, "--out", str(out)))
        outputs.append(out.read_bytes().decode("utf-8", "replace"))
    assert all(outputs) and [o for o in outputs if _leaks(o)] == []
    served = tmp_path / "served.db"
    _served(served, spans, list(COMMON_SECRET_PATTERNS))
    assert _leaks(_store_bytes(served)) == []
    assert _only_run(served).steps == run.steps  # one code path: the same run stored


def test_two_keys_that_redact_alike_both_stay_and_redacting_again_changes_nothing() -> None:
    scrub = Redactor(COMMON_SECRET_PATTERNS)
    value = {
        "a": {FIRST: 1, "[REDACTED] (2)": 2, SECOND: 3},
        "text": orjson.dumps({FIRST: [SECOND]}).decode(),
    }
    redacted = scrub(value)
    assert redacted["a"] == {"[REDACTED]": 1, "[REDACTED] (2)": 2, "[REDACTED] (3)": 3}
    assert orjson.loads(redacted["text"]) == {"[REDACTED]": ["[REDACTED]"]}
    assert scrub(redacted) == redacted
    # JSON text of a string that is JSON text (a tool result written twice): its keys too
    twice = scrub(json.dumps(json.dumps({FIRST: None, SECOND: None})))
    assert json.loads(json.loads(twice)) == {"[REDACTED]": None, "[REDACTED] (2)": None}


#: a bad value whose secret `preview` would cut short (no longer matched) unless redacted first
BAD = ["x" * 38 + " " + FIRST]
#: a request whose one span has that value for its name
PARTIAL = {"resourceSpans": [{"scopeSpans": [{"spans": [
    {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": BAD}]}]}]}  # fmt: skip


def _no_fragment(text: str) -> bool:
    return FIRST[8:16] not in text and not _leaks(text)


def test_an_import_error_quoting_a_secret_says_it_redacted(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: the one line quoted the bad value, the key's first characters included."""
    bad = tmp_path / "bad.otlp.json"
    bad.write_bytes(orjson.dumps(PARTIAL))
    result = invoke(runner, store_path, "import", str(bad), "--redact-common")
    assert result.exit_code == 1 and "span name must be a string" in result.stderr
    assert "[REDACTED]" in result.stderr and _no_fragment(result.stdout + result.stderr)
    skipped = invoke(runner, store_path, "import", str(bad), "--redact-common", "--skip-invalid",
                     "--json")  # fmt: skip
    assert "[REDACTED]" in skipped.stdout and _no_fragment(skipped.stdout + skipped.stderr)


def test_serve_answers_what_it_refuses_redacted(tmp_path: Path) -> None:
    """Before: the 400's message, and a partial success's, quoted the secret."""
    receiver = Receiver(
        lambda: Store.open(tmp_path / "s.db"), "127.0.0.1", 0, max_body_bytes=1 << 20
    )
    receiver.intake.redacting(list(COMMON_SECRET_PATTERNS))
    receiver.start()
    answers = []
    try:
        for body, status in ((BAD, 400), (PARTIAL, 200)):
            connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
            connection.request("POST", "/v1/traces", orjson.dumps(body),
                               {"Content-Type": "application/json"})  # fmt: skip
            response = connection.getresponse()
            answers.append(response.read().decode())
            assert response.status == status, answers[-1]
            connection.close()
    finally:
        receiver.stop()
    assert all("[REDACTED]" in a and _no_fragment(a) for a in answers), answers


RAISING_TOOLS = """
from otel_replay import resampler


@resampler("tool", name="lookup")
def lookup(step, ctx):
    raise ValueError("refused key {SECOND}")


def outcome(run):
    return 0.0
""".replace("{SECOND}", SECOND)


def test_attribute_says_a_resample_functions_exception_redacted_as_the_run_is(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: `attribute` printed the function's exception text, key included, on a run
    imported with --redact-common (its metadata keeps the patterns, never what they matched)."""
    traces, tools = tmp_path / "t.otlp.json", tmp_path / "raising_tools.py"
    traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(_keyed_spans()))))
    tools.write_text(RAISING_TOOLS, encoding="utf-8")
    ok(invoke(runner, store_path, "import", str(traces), "--redact-common"))
    run = _only_run(store_path)
    assert run.metadata["redact"] == list(COMMON_SECRET_PATTERNS)
    result = invoke(runner, store_path, "attribute", run.id, "--resamplers", str(tools),
                    "--verifier", f"{tools}:outcome", "--rollouts", "4")  # fmt: skip
    assert result.exit_code == 1
    assert "raised ValueError: refused key [REDACTED]" in result.stderr
    assert _leaks(result.stdout + result.stderr) == []


# --- fuzz: secrets planted in keys and values at random depths ----------------------------------

#: a model provider's key whose tail is letters no hash, id or clock of a store is written with
SECRETS = st.text(
    alphabet="ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ", min_size=24, max_size=32
).map(lambda tail: "sk-proj-" + tail)
PLANTED = re.compile(r"sk-proj-([g-zG-Z]{24,32})")
_WORDS = st.text(alphabet=string.ascii_lowercase + " _-", max_size=6)
_LEAVES = st.one_of(
    st.integers(-5, 5), st.booleans(), st.none(), _WORDS, SECRETS,
    SECRETS.map(lambda s: f"the key {s} leaked"),
)  # fmt: skip
_KEYS = st.one_of(_WORDS, SECRETS, SECRETS.map(lambda s: f"x {s}"))
#: JSON values with secrets planted in keys and values at any depth, alone and in words, and
#: objects written as JSON text inside a string
JSON_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(_KEYS, inner, min_size=1, max_size=3),
        st.dictionaries(_KEYS, inner, min_size=1, max_size=3).map(json.dumps),
    ),
    max_leaves=12,
)


def _outputs(runner: CliRunner, store: Path, folder: Path) -> dict[str, str]:
    """Every way the run leaves the store: its file, `show`, `show --json`, every export."""
    import polars as pl

    (run_id,) = [s.id for s in Store.open(store, read_only=True).summaries()]
    found = {
        "store": _store_bytes(store).decode("latin-1"),
        "show": ok(invoke(runner, store, "show", run_id)).stdout,
        "show --json": ok(invoke(runner, store, "show", run_id, "--json")).stdout,
    }
    for fmt in ("jsonl", "otlp-json", "otlp-proto", "parquet"):
        out = folder / f"export.{fmt}"
        ok(invoke(runner, store, "export", "--format", fmt, "--out", str(out)))
        data = out.read_bytes()
        if fmt == "parquet":
            data = orjson.dumps(pl.read_parquet(out).to_dicts(), default=str)
        found[fmt] = data.decode("latin-1")
    return found


@settings(FAST, max_examples=12)  # an import, a serve and seven outputs each; the fuzz tier has 200
@given(arguments=JSON_VALUES, output=JSON_VALUES)
def test_no_planted_secret_survives_import_in_any_output(
    runner: CliRunner, arguments: Any, output: Any
) -> None:
    _check_planted(runner, arguments, output)


@pytest.mark.fuzz
@settings(SLOW, max_examples=200)  # an import, a serve and seven outputs each
@given(arguments=JSON_VALUES, output=JSON_VALUES)
def test_no_planted_secret_survives_import_in_any_output_at_length(
    runner: CliRunner, arguments: Any, output: Any
) -> None:
    _check_planted(runner, arguments, output)


def _check_planted(runner: CliRunner, arguments: Any, output: Any) -> None:
    tails = set(PLANTED.findall(json.dumps([arguments, output])))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        traces = root / "t.otlp.json"
        spans = _tool_spans(arguments, output)
        traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(spans))))
        store, served = root / "s.db", root / "served.db"
        ok(invoke(runner, store, "import", str(traces), "--redact-common"))
        found = _outputs(runner, store, root)
        _served(served, spans, list(COMMON_SECRET_PATTERNS))  # the same run, by one code path
        assert _only_run(served).steps == _only_run(store).steps
    # nothing of a secret: not its tail, not the first half of it
    leaked = {where: [t for t in tails if t[:12] in text] for where, text in found.items()}
    assert {where: tails for where, tails in leaked.items() if tails} == {}


def _tool_spans(arguments: Any, output: Any) -> tuple[ReadableSpan, ...]:
    """An agent's one tool call (the real SDK), its arguments and result as JSON text."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.redaction_gaps")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span("lookup", attributes={
            "openinference.span.kind": "TOOL", "tool.name": "lookup",
            "input.value": json.dumps({"query": arguments}),
            "output.value": json.dumps(output),
        }):  # fmt: skip
            pass
    return tuple(exporter.get_finished_spans())


RAISING_VERIFIER = """
def outcome(run):
    raise ValueError("the judge refused key {SECOND}")
""".replace("{SECOND}", SECOND)


@pytest.mark.parametrize(
    "command",
    [
        ("fork", "--at", "0", "--value", '{"found": 1}'),
        ("score",),
        ("sweep", "--resamplers", "{tools}", "--max-rollouts", "2"),
    ],
    ids=["fork", "score", "sweep"],
)
def test_a_verifiers_exception_is_said_redacted_as_the_run_is(
    runner: CliRunner, store_path: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Before: `fork`, `score` and `sweep` said the verifier's exception text, key included."""
    traces, tools = tmp_path / "t.otlp.json", tmp_path / "raising_tools.py"
    verifier = tmp_path / "raising_verifier.py"
    traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(_keyed_spans()))))
    tools.write_text(RAISING_TOOLS, encoding="utf-8")
    verifier.write_text(RAISING_VERIFIER, encoding="utf-8")
    ok(invoke(runner, store_path, "import", str(traces), "--redact-common"))
    run = _only_run(store_path)
    name, *rest = (part.replace("{tools}", str(tools)) for part in command)
    result = invoke(runner, store_path, name, run.id, *rest, "--verifier", f"{verifier}:outcome")
    said = result.stdout + result.stderr
    assert "refused key [REDACTED]" in " ".join(said.split()), said
    assert _leaks(said) == []


KEYED_AGENT = """
def main(ctx, order="A-1"):
    found = ctx.tool("lookup", produce=lambda: {"{SECOND}": "found"}, query={"{FIRST}": order})
    return "done"
""".replace("{FIRST}", FIRST).replace("{SECOND}", SECOND)


def test_a_recording_with_secret_keys_exports_its_pytest_test_redacted(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: `record --redact-common` stored the tool's secret keys, and the exported test's
    recording held them."""
    agent = tmp_path / "keyed_agent.py"
    agent.write_text(KEYED_AGENT, encoding="utf-8")
    recorded = ok(invoke(runner, store_path, "record", "--agent", f"{agent}:main",
                         "--redact-common", "--json"))  # fmt: skip
    run_id = orjson.loads(recorded.stdout)["id"]
    out = tmp_path / "exported" / "test_keyed.py"
    ok(invoke(runner, store_path, "export", run_id, "--format", "pytest", "--agent",
              f"{agent}:main", "--out", str(out)))  # fmt: skip
    written = b"".join(p.read_bytes() for p in out.parent.iterdir())
    assert b"[REDACTED]" in written and _leaks(written) == []
    assert _leaks(_store_bytes(store_path)) == []
