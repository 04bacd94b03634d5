"""Issue 28, defects 4 and 5: redaction. An agent's own exception is kept redacted wherever the run
goes (the store, exports, OTLP, what commands print, kept rollouts); what a fork, replay or kept
rollout of a redacted recording makes is stored with the recording's patterns applied (what was
injected included); ``import`` and ``serve`` redact every string of a run before it is stored and
hashed (``--redact``, ``--redact-common``); the common secrets' patterns catch real-looking keys and
leave the words around them alone."""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from typer.testing import CliRunner

from otel_replay import COMMON_SECRET_PATTERNS, SpanNode, Step, StepKind, StepStatus, Store
from otel_replay import Trajectory as Run
from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request
from otel_replay.receiver._http import Receiver
from otel_replay.redaction import REDACTED, Redactor, redact_run
from tests.cli_helpers import invoke, ok, one_line_error

KEY = "sk-live-ABC123def456"  # what the agent's exception and the tool let out
TOKEN = "tok-552183907461"  # a secret of the user's own, caught by their pattern
OPENAI_KEY = "sk-proj-Zq8xW3vB7nM1kL5jH9gF2dS6aP0oI4uY"  # caught by --redact-common
#: what must never be found: long enough that no hash, id or clock in a store holds one by chance
SECRETS = ("ABC123def456", "552183907461", "Zq8xW3vB7nM1kL5jH9gF2dS6aP0oI4uY")

AGENT = """
def main(ctx, order="A-1"):
    found = ctx.tool("lookup", produce=lambda: {"status": "late"}, order=order)
    raise RuntimeError(f"token {KEY} rejected for {found['status']}")


def outcome(run):
    return 0.0 if run.metadata.get("agent_error") else 1.0
""".replace("{KEY}", KEY)


def _agent(tmp_path: Path) -> str:
    path = tmp_path / "leaky_agent.py"
    path.write_text(AGENT, encoding="utf-8")
    return str(path)


def _leaks(data: bytes | str, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [secret for secret in secrets if secret in text]


def _store_bytes(store: Path) -> bytes:
    """The store file and whatever SQLite keeps beside it (the write-ahead log)."""
    return b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))


def _record(runner: CliRunner, store: Path, agent: str, *extra: str) -> tuple[str, Any]:
    result = invoke(runner, store, "record", "--agent", f"{agent}:main", "--redact",
                    r"sk-live-\w+", "--json", *extra)  # fmt: skip
    assert result.exit_code == 1, result.output  # the agent raised: stored, said, exit 1
    recorded = orjson.loads(result.stdout)
    return recorded["id"], result


# --- defect 4: the agent's own exception -------------------------------------------------------


def test_a_recorded_agents_own_exception_is_redacted_wherever_the_run_goes(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    agent = _agent(tmp_path)
    otlp = tmp_path / "run.otlp.json"
    run_id, recorded = _record(runner, store_path, agent, "--otlp-out", str(otlp))
    assert _leaks(recorded.stdout + recorded.stderr) == []
    assert "RuntimeError: token [REDACTED] rejected for late" in recorded.stderr
    plain = invoke(runner, store_path, "record", "--agent", f"{agent}:main", "--redact",
                   r"sk-live-\w+")  # fmt: skip
    assert plain.exit_code == 1 and _leaks(plain.stdout + plain.stderr) == []
    assert _leaks(otlp.read_bytes()) == [] and _leaks(_store_bytes(store_path)) == []
    exported = ok(invoke(runner, store_path, "export", run_id))
    assert _leaks(exported.stdout) == [] and "[REDACTED]" in exported.stdout
    for args in (("replay", run_id), ("replay", run_id, "--json")):
        again = ok(invoke(runner, store_path, *args, "--agent", f"{agent}:main"))
        assert _leaks(again.stdout + again.stderr) == []
    # the exported spans, imported elsewhere, are the run as it was stored
    other = tmp_path / "other.db"
    ok(invoke(runner, other, "import", str(otlp)))
    assert _leaks(_store_bytes(other)) == []


def test_attribute_with_the_agent_says_and_keeps_its_crashes_redacted(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: the rollouts' crash text came unredacted from the agent (``run_agent``): printed
    ("the first: RuntimeError: token sk-live-…"), and stored in every kept rollout."""
    agent = _agent(tmp_path)
    run_id, _ = _record(runner, store_path, agent)
    result = invoke(runner, store_path, "attribute", run_id, "--agent", f"{agent}:main",
                    "--verifier", f"{agent}:outcome", "--rollouts", "4", "--keep-rollouts", "2",
                    "--out", str(tmp_path / "report.json"))  # fmt: skip
    assert "left out as crashed" in result.stdout + result.stderr
    assert "RuntimeError: token [REDACTED] rejected" in result.stdout + result.stderr
    assert _leaks(result.stdout + result.stderr) == []
    assert _leaks((tmp_path / "report.json").read_bytes()) == []
    with Store.open(store_path, read_only=True) as db:
        kept = [db.get(s.id) for s in db.summaries() if s.id.startswith("rollout-")]
    assert kept and all(run.metadata["redact"] == [r"sk-live-\w+"] for run in kept)
    assert _leaks(_store_bytes(store_path)) == []


# --- defect 5: what a fork of a redacted recording stores --------------------------------------


@pytest.mark.parametrize("with_agent", [True, False], ids=["live-agent", "trace-walk"])
def test_a_fork_of_a_redacted_recording_stores_what_it_injects_redacted(
    runner: CliRunner, store_path: Path, tmp_path: Path, with_agent: bool
) -> None:
    """Before: the observed output went into the fork's step and its ``injected`` metadata as
    given, and so into the store, the fork's JSON and its diff table."""
    agent = _agent(tmp_path)
    run_id, _ = _record(runner, store_path, agent)
    observed = orjson.dumps({"status": f"late, retry with {KEY}"}).decode()
    code = ("--agent", f"{agent}:main") if with_agent else ()
    for shown in ((), ("--json",)):
        result = invoke(runner, store_path, "fork", run_id, "--at", "0", "--observe", observed,
                        *code, *shown)  # fmt: skip
        assert result.exit_code in (0, 1), result.output
        assert _leaks(result.stdout + result.stderr) == []
    with Store.open(store_path, read_only=True) as db:
        (fork,) = [db.get(s.id) for s in db.summaries() if s.id.startswith("fork-")]
    assert fork.steps[0].output == {"status": "late, retry with [REDACTED]"}
    assert fork.metadata["injected"]["output"] == fork.steps[0].output
    assert fork.metadata["redact"] == [r"sk-live-\w+"]
    assert _leaks(_store_bytes(store_path)) == []


# --- the common secrets ------------------------------------------------------------------------

#: (text, what is left of it): each common pattern's real-looking secret, then near misses.
CASES = [
    ("key sk-4f9Qx2LmN8pR3tV6yB1cD5eG7hJ0kW2z end", "key [REDACTED] end"),
    (f"OPENAI_API_KEY={OPENAI_KEY}", "OPENAI_API_KEY=[REDACTED]"),
    ("sk-ant-api03-Xy7_Qm2-Lp9Rt4Vw8Zb3Nc6Hd1Fg5Jk0", "[REDACTED]"),
    ("AIzaSyD4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0aBcD", "[REDACTED]"),
    ("gsk_8Hq2Lm5Np9Rt3Vw7Zb1Cd4Fg6Jk0Mn2Pq", "[REDACTED]"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "[REDACTED]"),
    ("xai-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9", "[REDACTED]"),
    ("pplx-3f8a1b2c9d7e6f5a4b3c2d1e0f9a8b7c", "[REDACTED]"),
    ("r8_Kd83jf9Slw02Mdk3lQp0zXc7", "[REDACTED]"),
    ("sk_live_51HqLm2Np9Rt3Vw7Zb", "[REDACTED]"),
    (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2ln",
        "Authorization: Bearer [REDACTED]",
    ),
    ('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}', '{"authorization": "Basic [REDACTED]"}'),
    ("Proxy-Authorization: Token 8c1e44b0aa93", "Proxy-Authorization: Token [REDACTED]"),
    ("id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED] here"),
    ("ASIAY34FZKBOKMUTVV7A", "[REDACTED]"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [REDACTED]",
    ),
    ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJH", "AWS_SESSION_TOKEN=[REDACTED]"),
    ("ghp_1A2b3C4d5E6f7G8h9I0jK1l2M3n4O5p6Q7r8", "[REDACTED]"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED]"),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "[REDACTED]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "[REDACTED]"),
    # near misses: words, prefixes alone, too short
    ("the skill to ask-me-anything", None),
    ("sk- alone, sk-short and task-runner-0123456789abcdefghij", None),
    ("AKIA1234 is too short; AKIAIOSFODNN7EXAMPLEX is too long", None),
    ("the bearer of bad news; Bearer tokens expire", None),
    ("authorization: required; Authorization: denied", None),
    ("hf_model, gsk_x, ghp_ and xoxo are no tokens", None),
    ("AIzaTooShort and aws_secret_access_key=<your key>", None),
    ("an already [REDACTED] value", None),
]


@pytest.mark.parametrize(("text", "left"), CASES, ids=[c[0][:28] for c in CASES])
def test_the_common_patterns_redact_secrets_and_leave_near_misses(
    text: str, left: str | None
) -> None:
    assert Redactor(COMMON_SECRET_PATTERNS).text(text) == (text if left is None else left)


def test_every_common_pattern_has_an_example() -> None:
    secrets = [text for text, left in CASES if left is not None]
    for pattern in COMMON_SECRET_PATTERNS:
        assert any(re.search(pattern, text) for text in secrets), pattern


def test_redacting_twice_is_redacting_once() -> None:
    scrub = Redactor([r"RED", r"tok-\d+", *COMMON_SECRET_PATTERNS])
    once = scrub({"a": [f"{TOKEN} Bearer abc12345xyz", "RED"]})
    assert once == {"a": ["[REDACTED] Bearer [REDACTED]", "[REDACTED]"]}
    assert scrub(once) == once


def test_a_pattern_that_does_not_compile_is_one_clear_line(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "t.otlp.json"
    traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(_spans()))))
    for command in (("import", str(traces)), ("serve", "--port", "0")):
        result = invoke(runner, store_path, *command, "--redact", "tok-(", "--redact-common")
        assert one_line_error(result).startswith(
            "error: --redact 'tok-(' is not a regular expression"
        )
        assert not store_path.exists()


# --- a whole run, import and serve -------------------------------------------------------------


def test_redact_run_reaches_every_string_and_its_hashes_cover_the_result() -> None:
    step = Step(StepKind.TOOL, f"lookup-{TOKEN}", {"arguments": {"q": TOKEN}}, {"said": [TOKEN]},
                StepStatus.ERROR, f"failed with {TOKEN}")  # fmt: skip
    run = Run.build(
        "r1",
        [step],
        metadata={"input": {"q": TOKEN}, "redact": ["x-\\d"]},
        spans=[SpanNode("s1", None, f"agent {TOKEN}", "agent")],
    )
    redacted = redact_run(run, [r"tok-\d+"])
    assert _leaks(orjson.dumps(redacted.to_record())) == []
    assert redacted.metadata["redact"] == ["x-\\d", r"tok-\d+"]  # the union, in order
    by_hand = Run.build(
        "r1",
        [Step(StepKind.TOOL, "lookup-[REDACTED]", {"arguments": {"q": REDACTED}},
              {"said": [REDACTED]}, StepStatus.ERROR, "failed with [REDACTED]")],
    )  # fmt: skip
    assert redacted.final_hash == by_hand.final_hash != run.final_hash
    assert redact_run(run, []) is run


def _spans() -> tuple[ReadableSpan, ...]:
    """A run from the real SDK whose strings carry secrets: the model call's input, a tool's
    output, an event, a failed span's status."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.redaction")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span(
            "chat",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "m",
                "input.value": orjson.dumps({"messages": [{"role": "user", "content":
                                             f"my key is {OPENAI_KEY}"}]}).decode(),
                "output.value": f"ok, {TOKEN} noted",
            },
        ):  # fmt: skip
            pass
        with tracer.start_as_current_span(
            "lookup",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": orjson.dumps({"order": TOKEN}).decode(),
                "output.value": f"found {TOKEN}",
            },
        ) as tool:
            tool.add_event("retry", {"detail": f"again with {TOKEN}"})
            tool.set_status(Status(StatusCode.ERROR, f"refused {TOKEN}"))
    return tuple(exporter.get_finished_spans())


def test_import_redacts_every_string_before_it_is_stored_and_hashed(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "t.otlp.json"
    traces.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(_spans()))))
    plain = tmp_path / "plain.db"
    ok(invoke(runner, plain, "import", str(traces)))
    assert _leaks(_store_bytes(plain))  # the secrets are there to be redacted
    ok(invoke(runner, store_path, "import", str(traces), "--redact", r"tok-\d+",
              "--redact-common"))  # fmt: skip
    assert _leaks(_store_bytes(store_path)) == []
    with Store.open(store_path, read_only=True) as db, Store.open(plain, read_only=True) as bare:
        (summary,) = db.summaries()
        run, unredacted = db.get(summary.id), bare.get(summary.id)
    assert run.metadata["redact"] == [r"tok-\d+", *COMMON_SECRET_PATTERNS]
    assert run == redact_run(unredacted, [r"tok-\d+", *COMMON_SECRET_PATTERNS])
    assert run.final_hash == Run.build(run.id, run.steps).final_hash != unredacted.final_hash


def test_import_keeps_the_patterns_a_run_has_and_adds_its_own(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """A recording exported with its patterns, imported with more: both apply, both are kept."""
    agent = _agent(tmp_path)
    otlp = tmp_path / "run.otlp.json"
    _record(runner, tmp_path / "recorded.db", agent, "--otlp-out", str(otlp))
    text = otlp.read_text(encoding="utf-8").replace("late", f"late {OPENAI_KEY}")
    otlp.write_text(text, encoding="utf-8")  # a secret its own patterns do not catch
    ok(invoke(runner, store_path, "import", str(otlp), "--redact-common"))
    with Store.open(store_path, read_only=True) as db:
        (run,) = [db.get(s.id) for s in db.summaries()]
    assert run.metadata["redact"] == [r"sk-live-\w+", *COMMON_SECRET_PATTERNS]
    assert _leaks(_store_bytes(store_path)) == []


def test_two_parts_of_a_trace_merge_redacted_with_both_parts_patterns(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    spans = _spans()
    tool = next(s for s in spans if s.name == "lookup")
    first, second = tmp_path / "a.otlp.json", tmp_path / "b.otlp.json"
    first.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(
        [s for s in spans if s is not tool]))))  # fmt: skip
    second.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request([tool]))))
    ok(invoke(runner, store_path, "import", str(first), "--redact-common"))
    ok(invoke(runner, store_path, "import", str(second), "--redact", r"tok-\d+"))
    with Store.open(store_path, read_only=True) as db:
        (run,) = [db.get(s.id) for s in db.summaries()]
    assert len(run.steps) == 2 and set(run.metadata["redact"]) == {
        r"tok-\d+",
        *COMMON_SECRET_PATTERNS,
    }
    assert _leaks(orjson.dumps(run.to_record())) == []


def test_serve_redacts_spans_while_they_wait_for_their_root(tmp_path: Path) -> None:
    store = tmp_path / "served.db"
    receiver = Receiver(lambda: Store.open(store), "127.0.0.1", 0, max_body_bytes=1 << 20)
    receiver.intake.redacting([r"tok-\d+", *COMMON_SECRET_PATTERNS])
    receiver.start()
    spans = _spans()
    children = tuple(s for s in spans if s.parent is not None)
    try:
        for part in (children, tuple(s for s in spans if s not in children)):
            connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
            body = spans_to_request(part).SerializeToString()
            connection.request("POST", "/v1/traces", body,
                               {"Content-Type": "application/x-protobuf"})  # fmt: skip
            assert connection.getresponse().status == 200
            connection.close()
            # the children wait for their root in the store: redacted there already
            assert _leaks(_store_bytes(store)) == []
    finally:
        receiver.stop()
    with Store.open(store, read_only=True) as db:
        runs = [db.get(s.id) for s in db.summaries()]
    assert runs and all(r.metadata["redact"][0] == r"tok-\d+" for r in runs)
    assert _leaks(_store_bytes(store)) == []


def test_serve_and_import_offer_the_options(runner: CliRunner, store_path: Path) -> None:
    for command in ("serve", "import", "record"):
        shown = ok(invoke(runner, store_path, command, "--help")).stdout
        assert "--redact-common" in shown and "--redact " in shown


LOOKUP_AGENT = """
def main(ctx, order="A-1"):
    late = ctx.rng.random() < 0.5
    found = ctx.tool("lookup", produce=lambda: {"status": "late" if late else "ok"}, order=order)
    return "refund" if found["status"].startswith("ok") else "sorry"
"""

#: resample functions that know the secret: what they return is new to the run, not its record
LOOKUP_TOOLS = """
from otel_replay import resampler


@resampler("tool", name="lookup")
def lookup(step, ctx):
    return {"status": "ok, use {TOKEN}" if ctx.rng.random() < 0.5 else "late"}


def outcome(run):
    return 1.0 if str(run.steps[0].output.get("status", "")).startswith("ok") else 0.0
""".replace("{TOKEN}", TOKEN)


def test_the_repair_a_resample_function_offers_is_redacted_as_the_run_is(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Before: the repair (a resample function's output on a rollout) was printed, written to the
    report and stored with the report as the function returned it."""
    agent, tools = tmp_path / "lookup_agent.py", tmp_path / "lookup_tools.py"
    agent.write_text(LOOKUP_AGENT, encoding="utf-8")
    tools.write_text(LOOKUP_TOOLS, encoding="utf-8")
    recorded = invoke(runner, store_path, "record", "--agent", f"{agent}:main", "--seed", "1",
                      "--redact", r"tok-\d+", "--verifier", f"{tools}:outcome", "--json")  # fmt: skip
    run_id = orjson.loads(recorded.stdout)["id"]
    assert orjson.loads(recorded.stdout)["outcome"] == 0.0  # seed 1: the lookup came back late
    report = tmp_path / "report.json"
    result = ok(invoke(runner, store_path, "attribute", run_id, "--resamplers", str(tools),
                       "--verifier", f"{tools}:outcome", "--repair", "--rollouts", "64",
                       "--out", str(report)))  # fmt: skip
    assert 'returning {"status":"ok, use [REDACTED]"}' in result.stdout
    assert orjson.loads(report.read_bytes())["repair"]["output"] == {"status": "ok, use [REDACTED]"}
    assert _leaks(result.stdout + result.stderr) == []
    assert _leaks(report.read_bytes()) == []
    assert _leaks(_store_bytes(store_path)) == []


# --- replay and resume of a redacted recording, from Python ------------------------------------


def test_a_replay_says_how_its_answer_differs_redacted() -> None:
    """Before: the replay's ending ("the answer differs: ...") and its run showed the answer the
    agent returned as it was, secret and all."""
    from otel_replay import record
    from otel_replay.replay import replay

    version = [1]

    def agent(ctx: Any) -> str:
        ctx.tool("lookup", produce=lambda: {"status": "late"})
        return f"use {KEY}, version {version[0]}"

    recorded = record(agent, redact=[r"sk-live-\w+"])
    assert recorded.trajectory.metadata["answer"] == "use [REDACTED], version 1"
    version[0] = 2
    again = replay(recorded.trajectory, agent)
    assert again.ending == (
        "the answer differs: 'use [REDACTED], version 2' (recorded: 'use [REDACTED], version 1')"
    )
    assert _leaks(orjson.dumps(again.trajectory.to_record())) == []


def test_a_resumed_run_stores_what_it_ran_live_redacted() -> None:
    from otel_replay import AgentRaised, record, resume

    reachable = [False]

    def pay() -> dict[str, str]:
        if not reachable[0]:
            raise ConnectionError(f"refused {KEY}")
        return {"receipt": f"paid with {KEY}"}

    def agent(ctx: Any) -> str:
        ctx.tool("lookup", produce=lambda: {"status": "late"})
        paid = ctx.tool("pay", produce=pay)
        return f"{paid['receipt']} ({KEY})"

    crashed = record(agent, redact=[r"sk-live-\w+"]).trajectory
    assert AgentRaised.of(crashed) is not None and _leaks(orjson.dumps(crashed.to_record())) == []
    reachable[0] = True
    resumed = resume(crashed, agent).trajectory
    assert resumed.steps[-1].output == {"receipt": "paid with [REDACTED]"}
    assert resumed.metadata["redact"] == [r"sk-live-\w+"]
    assert _leaks(orjson.dumps(resumed.to_record())) == []
