"""Import benchmark for agent-replay.

Generates a deterministic OpenInference agent-trace workload in the two Collector file-exporter
formats (OTLP JSON Lines and length-prefixed protobuf), then measures in one run:

* parse-only baselines: ``orjson.loads`` per JSON line and
  ``ExportTraceServiceRequest.FromString`` per protobuf frame (best of 3 each);
* ``agent-replay import FILE --store STORE`` for both files in a child process (best of 2 for wall
  time, max of 2 for peak RSS).

The machines this runs on are noisy, so the verdicts are ratios against baselines measured in the
same run rather than absolute speeds.  MB means 10**6 bytes throughout (file sizes, throughput and
RSS alike).

Usage::

    python benchmarks/import_bench.py --size-mb 50 [--seed 0] [--workdir DIR] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

MB = 1_000_000
JSONL_NAME = "bench.otlp.jsonl"
PB_NAME = "bench.otlp.pb"
STORES_DIR = "stores"

# Targets from the project's performance goals (issue 26: "import closer to its ceiling"; the
# design's ceiling, every span walked in Python and stored in SQLite, is about 0.16-0.21x orjson).
JSON_RATIO_TARGET = 0.15
PROTO_RATIO_TARGET = 0.05
RSS_TARGET_MB = 100.0  # stated for a 300 MB input; a streaming importer should meet it at any size

SMALL_FILE_MB = 50
PARSE_REPEATS = 3
IMPORT_REPEATS = 2

# 2026-01-01T00:00:00Z in ns; a fixed epoch keeps the output byte-identical for a given seed.
BASE_TIME_NS = 1_767_225_600_000_000_000
MS = 1_000_000  # ns per millisecond

# Enum values taken from the generated proto module; they are plain ints at runtime, which is
# also what OTLP JSON wants ("enum values MUST be encoded as integers").
SPAN_KIND_INTERNAL = trace_pb2.Span.SPAN_KIND_INTERNAL
SPAN_KIND_CLIENT = trace_pb2.Span.SPAN_KIND_CLIENT
STATUS_OK = trace_pb2.Status.STATUS_CODE_OK
STATUS_OK_SHARE = 0.8  # fraction of spans with status OK; the rest leave status absent (UNSET)

AttrValue = str | bool | int | float
Attr = tuple[str, AttrValue]


# --------------------------------------------------------------------------------------------
# Workload model
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SpanRec:
    """One generated span, independent of the wire format it is written in."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: trace_pb2.Span.SpanKind.ValueType
    start_ns: int
    end_ns: int
    attrs: list[Attr]
    status_ok: bool
    resource: int
    scope: int


@dataclass(slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str


@dataclass(slots=True)
class Message:
    role: str
    content: str
    tool_call: ToolCall | None = None
    tool_call_id: str | None = None


@dataclass(slots=True)
class _TraceCtx:
    """Per-trace constants shared by all of the trace's spans."""

    trace_id: str
    root_id: str
    session_id: str
    resource: int
    model: str


@dataclass(slots=True)
class GenStats:
    traces: int = 0
    spans: int = 0
    batches: int = 0
    json_bytes: int = 0
    pb_bytes: int = 0


# Two scopes, as a real OpenInference app has one instrumentor per library.
SCOPES: list[tuple[str, str]] = [
    ("openinference.instrumentation.smolagents", "0.1.14"),
    ("openinference.instrumentation.openai", "0.1.30"),
]
SCOPE_AGENT = 0
SCOPE_LLM = 1

N_INSTANCES = 3
MODELS = ["gpt-4.1-2025-04-14", "gpt-4o-2024-08-06", "o4-mini-2025-04-16"]
TOOLS = ["web_search", "read_file", "run_python", "fetch_url", "sql_query", "write_file"]

# Tokens that force JSON escaping, so parse speed is measured on realistic text.
SPECIAL_WORDS = ["\n", "\n\n", '"quoted"', "`code()`", "café", "naïve", "→", "\\path", "it's", "\t"]


def resource_attrs(instance: int) -> list[Attr]:
    return [
        ("service.name", "research-agent"),
        ("service.version", "1.4.2"),
        ("service.instance.id", f"research-agent-{instance}"),
        ("telemetry.sdk.language", "python"),
        ("telemetry.sdk.name", "opentelemetry"),
        ("telemetry.sdk.version", "1.38.0"),
        ("openinference.project.name", "agent-replay-bench"),
    ]


class TextSource:
    """Pseudo-random prose drawn from a fixed vocabulary (seeded, so output is reproducible)."""

    def __init__(self, rng: random.Random, vocab_size: int = 4000) -> None:
        self._rng = rng
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(vocab_size)]
        self._vocab = words + SPECIAL_WORDS

    def text(self, min_bytes: int, max_bytes: int) -> str:
        # ~7 bytes per word including the separator; exact length does not matter.
        n_words = max(1, self._rng.randint(min_bytes, max_bytes) // 7)
        return " ".join(self._rng.choices(self._vocab, k=n_words))


class TraceFactory:
    """Builds complete agent traces: AGENT root, 4-8 LLM turns, a TOOL span between turns."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._text = TextSource(rng)
        # A real agent reuses one system prompt across runs; a few variants keep it plausible.
        self._system_prompts = [self._text.text(2500, 4000) for _ in range(3)]
        self._clock = BASE_TIME_NS

    def _hex(self, bits: int) -> str:
        # An all-zero id is invalid in OTLP; the `| 1` keeps ids non-zero.
        return f"{self._rng.getrandbits(bits) | 1:0{bits // 4}x}"

    def make(self) -> list[SpanRec]:
        """Return one trace's spans in end order (children before parents, like an SDK)."""
        rng = self._rng
        # Traces start a few seconds apart so that 2-3 of them overlap in time.
        self._clock += rng.randint(2_000, 20_000) * MS
        ctx = _TraceCtx(
            trace_id=self._hex(128),
            root_id=self._hex(64),
            session_id=f"session-{rng.randrange(10_000):04d}",
            resource=rng.randrange(N_INSTANCES),
            model=rng.choice(MODELS),
        )
        task = self._text.text(800, 2000)
        history = [Message("system", rng.choice(self._system_prompts)), Message("user", task)]
        t = self._clock + rng.randint(1, 20) * MS
        spans: list[SpanRec] = []
        n_turns = rng.randint(4, 8)
        for turn in range(n_turns):
            reply, t = self._llm_turn(ctx, history, t, spans, final=turn == n_turns - 1)
            history.append(reply)
            if reply.tool_call is not None:
                result, t = self._tool_call(ctx, reply.tool_call, t, spans)
                history.append(result)
        spans.append(self._agent_span(ctx, task, history[-1].content, t + rng.randint(1, 30) * MS))
        return spans

    def _llm_turn(
        self, ctx: _TraceCtx, history: list[Message], start: int, out: list[SpanRec], final: bool
    ) -> tuple[Message, int]:
        rng = self._rng
        if final:
            reply = Message("assistant", self._text.text(1500, 4000))
        else:
            call = ToolCall(
                call_id=f"call_{self._hex(96)}",
                name=rng.choice(TOOLS),
                arguments=orjson.dumps(
                    {"query": self._text.text(40, 200), "limit": rng.randint(1, 50)}
                ).decode(),
            )
            reply = Message("assistant", self._text.text(300, 1200), tool_call=call)
        end = start + rng.randint(400, 8_000) * MS
        attrs = llm_attrs(ctx, history, reply, rng)
        out.append(self._span(ctx, "ChatCompletion", (start, end), attrs, llm=True))
        return reply, end + rng.randint(1, 50) * MS

    def _tool_call(
        self, ctx: _TraceCtx, call: ToolCall, start: int, out: list[SpanRec]
    ) -> tuple[Message, int]:
        rng = self._rng
        result = orjson.dumps(
            {"ok": True, "tool": call.name, "result": self._text.text(1500, 6000)}
        ).decode()
        attrs: list[Attr] = [
            ("openinference.span.kind", "TOOL"),
            ("tool.name", call.name),
            ("tool.id", call.call_id),
            ("input.value", call.arguments),
            ("input.mime_type", "application/json"),
            ("output.value", result),
            ("output.mime_type", "application/json"),
            ("session.id", ctx.session_id),
        ]
        end = start + rng.randint(20, 3_000) * MS
        out.append(self._span(ctx, call.name, (start, end), attrs, llm=False))
        message = Message("tool", result, tool_call_id=call.call_id)
        return message, end + rng.randint(1, 50) * MS

    def _agent_span(self, ctx: _TraceCtx, task: str, answer: str, end: int) -> SpanRec:
        attrs: list[Attr] = [
            ("openinference.span.kind", "AGENT"),
            ("agent.name", "research-agent"),
            ("input.value", task),
            ("input.mime_type", "text/plain"),
            ("output.value", answer),
            ("output.mime_type", "text/plain"),
            ("session.id", ctx.session_id),
            ("agent_replay.outcome", round(self._rng.random(), 4)),
        ]
        span = self._span(ctx, "agent.run", (self._clock, end), attrs, llm=False)
        span.span_id, span.parent_id = ctx.root_id, ""
        return span

    def _span(
        self, ctx: _TraceCtx, name: str, window: tuple[int, int], attrs: list[Attr], llm: bool
    ) -> SpanRec:
        # LLM calls are outgoing requests (CLIENT) recorded by the model-client instrumentor.
        kind, scope = (SPAN_KIND_CLIENT, SCOPE_LLM) if llm else (SPAN_KIND_INTERNAL, SCOPE_AGENT)
        return SpanRec(
            trace_id=ctx.trace_id,
            span_id=self._hex(64),
            parent_id=ctx.root_id,
            name=name,
            kind=kind,
            start_ns=window[0],
            end_ns=window[1],
            attrs=attrs,
            # OpenInference marks most successful spans OK; leave some UNSET (status absent).
            status_ok=self._rng.random() < STATUS_OK_SHARE,
            resource=ctx.resource,
            scope=scope,
        )


def message_attrs(prefix: str, msg: Message) -> list[Attr]:
    """Flatten one message the OpenInference way: ``<prefix>.message.<suffix>``."""
    attrs: list[Attr] = [
        (f"{prefix}.message.role", msg.role),
        (f"{prefix}.message.content", msg.content),
    ]
    if msg.tool_call is not None:
        call = f"{prefix}.message.tool_calls.0.tool_call"
        attrs.append((f"{call}.id", msg.tool_call.call_id))
        attrs.append((f"{call}.function.name", msg.tool_call.name))
        attrs.append((f"{call}.function.arguments", msg.tool_call.arguments))
    if msg.tool_call_id is not None:
        attrs.append((f"{prefix}.message.tool_call_id", msg.tool_call_id))
    return attrs


def llm_attrs(
    ctx: _TraceCtx, history: list[Message], reply: Message, rng: random.Random
) -> list[Attr]:
    params = {"model": ctx.model, "temperature": 0.2, "max_tokens": 4096, "tool_choice": "auto"}
    attrs: list[Attr] = [
        ("openinference.span.kind", "LLM"),
        ("llm.system", "openai"),
        ("llm.provider", "openai"),
        ("llm.model_name", ctx.model),
        ("llm.invocation_parameters", orjson.dumps(params).decode()),
        ("session.id", ctx.session_id),
    ]
    for i, msg in enumerate(history):
        attrs.extend(message_attrs(f"llm.input_messages.{i}", msg))
    attrs.extend(message_attrs("llm.output_messages.0", reply))
    # Roughly 4 characters per token; the exact figure is irrelevant to parsing cost.
    prompt = sum(len(m.content) for m in history) // 4
    completion = len(reply.content) // 4 + rng.randint(5, 40)
    attrs.append(("llm.token_count.prompt", prompt))
    attrs.append(("llm.token_count.completion", completion))
    attrs.append(("llm.token_count.total", prompt + completion))
    attrs.append(("llm.finish_reason", "stop" if reply.tool_call is None else "tool_calls"))
    return attrs


def take_spans(queue: deque[SpanRec], trace_in_batch: bool, want: int) -> list[SpanRec]:
    """Pop up to ``want`` spans of one trace, holding back its root when it would share a batch.

    A batch is regrouped by resource and scope, which can move the AGENT root (agent scope) ahead
    of its last LLM child (LLM scope); a root alone in its batch keeps children-before-parents.
    """
    n = min(len(queue), want)
    if n == len(queue) and (trace_in_batch or n > 1):
        n -= 1
    return [queue.popleft() for _ in range(n)]


def schedule(
    rng: random.Random, make_trace: Callable[[], list[SpanRec]], done: Callable[[], bool]
) -> Iterator[list[SpanRec]]:
    """Yield export batches of ~5 spans mixing 2-3 concurrent traces, like a Collector batcher.

    New traces stop being started once ``done()`` is true; traces already in flight are drained
    so that every trace in the file is complete.
    """
    active: list[deque[SpanRec]] = []
    while True:
        want = rng.randint(2, 3)
        while len(active) < want and not done():
            active.append(deque(make_trace()))
        if not active:
            return
        size = rng.randint(3, 7)
        batch: list[SpanRec] = []
        in_batch: set[str] = set()
        while len(batch) < size and active:
            i = rng.randrange(len(active))
            queue = active[i]
            trace_id = queue[0].trace_id
            spans = take_spans(queue, trace_id in in_batch, rng.randint(1, 3))
            if not spans:
                break  # only a held-back root was picked; it opens the next batch instead
            batch.extend(spans)
            in_batch.add(trace_id)
            if not queue:
                del active[i]
        yield batch


# --------------------------------------------------------------------------------------------
# Encoders: OTLP JSON (Collector pdata style) and protobuf, built from the same SpanRec
# --------------------------------------------------------------------------------------------


def json_value(value: AttrValue) -> dict[str, Any]:
    # bool before int: bool is a subclass of int.
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a decimal string in OTLP JSON
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def json_attrs(attrs: list[Attr]) -> list[dict[str, Any]]:
    return [{"key": k, "value": json_value(v)} for k, v in attrs]


def json_span(span: SpanRec) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_id:  # proto3 JSON omits defaults, so a root has no parentSpanId key
        out["parentSpanId"] = span.parent_id
    out["name"] = span.name
    out["kind"] = span.kind
    out["startTimeUnixNano"] = str(span.start_ns)
    out["endTimeUnixNano"] = str(span.end_ns)
    out["attributes"] = json_attrs(span.attrs)
    if span.status_ok:
        out["status"] = {"code": STATUS_OK}
    return out


def pb_value(value: AttrValue) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    return common_pb2.AnyValue(string_value=value)


def pb_attrs(attrs: list[Attr]) -> list[common_pb2.KeyValue]:
    return [common_pb2.KeyValue(key=k, value=pb_value(v)) for k, v in attrs]


def pb_span(span: SpanRec) -> trace_pb2.Span:
    msg = trace_pb2.Span(
        trace_id=bytes.fromhex(span.trace_id),
        span_id=bytes.fromhex(span.span_id),
        parent_span_id=bytes.fromhex(span.parent_id),
        name=span.name,
        kind=span.kind,
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        attributes=pb_attrs(span.attrs),
    )
    if span.status_ok:
        msg.status.code = STATUS_OK
    return msg


def pb_scope_spans(scope: int, spans: list[SpanRec]) -> trace_pb2.ScopeSpans:
    name, version = SCOPES[scope]
    return trace_pb2.ScopeSpans(
        scope=common_pb2.InstrumentationScope(name=name, version=version),
        spans=[pb_span(s) for s in spans],
    )


def group_batch(batch: list[SpanRec]) -> dict[int, dict[int, list[SpanRec]]]:
    """Group spans by resource, then scope, in first-seen order (dicts keep insertion order)."""
    groups: dict[int, dict[int, list[SpanRec]]] = {}
    for span in batch:
        groups.setdefault(span.resource, {}).setdefault(span.scope, []).append(span)
    return groups


def encode_json_line(groups: dict[int, dict[int, list[SpanRec]]]) -> bytes:
    resource_spans = [
        {
            "resource": {"attributes": json_attrs(resource_attrs(res))},
            "scopeSpans": [
                {
                    "scope": {"name": SCOPES[scope][0], "version": SCOPES[scope][1]},
                    "spans": [json_span(s) for s in spans],
                }
                for scope, spans in scopes.items()
            ],
        }
        for res, scopes in groups.items()
    ]
    return orjson.dumps({"resourceSpans": resource_spans}) + b"\n"


def encode_pb_frame(groups: dict[int, dict[int, list[SpanRec]]]) -> bytes:
    request = trace_service_pb2.ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=resource_pb2.Resource(attributes=pb_attrs(resource_attrs(res))),
                scope_spans=[pb_scope_spans(scope, spans) for scope, spans in scopes.items()],
            )
            for res, scopes in groups.items()
        ]
    )
    payload: bytes = request.SerializeToString()
    # Collector fileexporter `format: proto`: 4-byte big-endian length, then the message.
    return struct.pack(">I", len(payload)) + payload


def generate(workdir: Path, size_mb: float, seed: int) -> GenStats:
    """Write bench.otlp.jsonl and bench.otlp.pb; stop starting traces once the JSON reaches size."""
    rng = random.Random(seed)
    factory = TraceFactory(rng)
    stats = GenStats()
    target = int(size_mb * MB)

    def make_trace() -> list[SpanRec]:
        stats.traces += 1
        return factory.make()

    with (
        open(workdir / JSONL_NAME, "wb") as json_out,
        open(workdir / PB_NAME, "wb") as pb_out,
    ):
        for batch in schedule(rng, make_trace, lambda: stats.json_bytes >= target):
            groups = group_batch(batch)
            stats.json_bytes += json_out.write(encode_json_line(groups))
            stats.pb_bytes += pb_out.write(encode_pb_frame(groups))
            stats.spans += len(batch)
            stats.batches += 1
    return stats


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Result:
    name: str
    file_bytes: int
    spans: int
    seconds: float
    rss_mb: float | None = None

    @property
    def mb_per_s(self) -> float:
        return self.file_bytes / MB / self.seconds

    @property
    def spans_per_s(self) -> float:
        return self.spans / self.seconds

    def as_dict(self) -> dict[str, float | None]:
        return {
            "seconds": round(self.seconds, 4),
            "mb_per_s": round(self.mb_per_s, 2),
            "spans_per_s": round(self.spans_per_s, 1),
            "peak_rss_mb": None if self.rss_mb is None else round(self.rss_mb, 1),
        }


def best_time(fn: Callable[[], None], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    return min(timings)


def parse_jsonl(path: Path) -> None:
    loads = orjson.loads  # local alias: keep attribute lookups out of the measured loop
    with open(path, "rb") as f:
        for line in f:
            loads(line)


def read_frames(f: IO[bytes]) -> Iterator[bytes]:
    while header := f.read(4):
        (length,) = struct.unpack(">I", header)
        yield f.read(length)


def parse_pb(path: Path) -> None:
    parse = trace_service_pb2.ExportTraceServiceRequest.FromString
    with open(path, "rb") as f:
        for frame in read_frames(f):
            parse(frame)


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "agent-replay"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "otel_replay"]


def fresh_store(workdir: Path, label: str) -> Path:
    """Return a not-yet-existing store path inside an emptied directory of its own.

    The store may be a file (plus sidecars such as SQLite's -wal) or a directory; giving each run
    its own parent directory lets us delete whichever it is.
    """
    parent = workdir / STORES_DIR / label
    shutil.rmtree(parent, ignore_errors=True)
    parent.mkdir(parents=True)
    return parent / "store"


def run_import(path: Path, store: Path, log: Path) -> tuple[float, float]:
    """Run one import in a child process; return (wall seconds, peak RSS in MB)."""
    cmd = [*cli_command(), "import", str(path), "--store", str(store)]
    # stderr goes to a file, not a pipe: a chatty child could fill a pipe and block while we
    # sit in wait4() without reading it.
    with open(log, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # we reaped it; tell Popen
    if proc.returncode != 0:
        sys.stderr.write(f"error: {' '.join(cmd)} exited with {proc.returncode}\n")
        sys.stderr.write(log.read_text(errors="replace"))
        sys.exit(1)
    return seconds, usage.ru_maxrss * 1024 / MB  # ru_maxrss is KiB on Linux


def measure_import(workdir: Path, path: Path, label: str, spans: int) -> Result:
    best, peak = float("inf"), 0.0
    for _ in range(IMPORT_REPEATS):
        store = fresh_store(workdir, label)
        seconds, rss = run_import(path, store, workdir / STORES_DIR / f"{label}.stderr")
        best, peak = min(best, seconds), max(peak, rss)
    return Result(f"agent-replay import {label}", path.stat().st_size, spans, best, peak)


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def protobuf_backend() -> str:
    # "upb" vs "python" changes protobuf speed ~10x, so it belongs in the report.  Imported
    # dynamically because google.protobuf.internal ships no type stubs.
    module = importlib.import_module("google.protobuf.internal.api_implementation")
    return str(module.Type())


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "orjson": orjson.__version__,
        "protobuf_backend": protobuf_backend(),
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def check(name: str, value: float, target: float, higher_is_better: bool) -> dict[str, Any]:
    ok = value >= target if higher_is_better else value <= target
    op = ">=" if higher_is_better else "<="
    # Ratios need three decimals to be comparable; RSS in MB is fine to one.
    digits = 3 if higher_is_better else 1
    return {
        "check": name,
        "value": round(value, digits),
        "target": f"{op} {target:g}",
        "pass": ok,
        "digits": digits,
    }


def checks(results: dict[str, Result]) -> list[dict[str, Any]]:
    """Ratios against same-run baselines, and peak RSS, each with its target."""
    out: list[dict[str, Any]] = []
    pairs = [
        ("import_json", "orjson_parse", JSON_RATIO_TARGET, "json import / orjson parse"),
        ("import_proto", "protobuf_parse", PROTO_RATIO_TARGET, "proto import / protobuf parse"),
    ]
    for imp, base, target, label in pairs:
        if imp in results:
            # Same file for both, so the throughput ratio is the inverse of the time ratio.
            ratio = results[base].seconds / results[imp].seconds
            out.append(check(label, ratio, target, higher_is_better=True))
    for key in ("import_json", "import_proto"):
        rss = results[key].rss_mb if key in results else None
        if rss is not None:
            out.append(check(f"peak RSS {key} MB", rss, RSS_TARGET_MB, higher_is_better=False))
    return out


def print_table(stats: GenStats, results: dict[str, Result], env: dict[str, Any]) -> None:
    print(f"python {env['python']}  cpus {env['cpu_count']}  {env['platform']}")
    print(f"orjson {env['orjson']}  protobuf backend {env['protobuf_backend']}")
    print(
        f"files: json {stats.json_bytes / MB:.1f} MB, proto {stats.pb_bytes / MB:.1f} MB; "
        f"{stats.spans} spans, {stats.traces} traces, {stats.batches} batches"
    )
    print()
    print(f"{'measurement':<28} {'file MB':>8} {'seconds':>9} {'MB/s':>9} {'spans/s':>11}")
    for r in results.values():
        print(
            f"{r.name:<28} {r.file_bytes / MB:>8.1f} {r.seconds:>9.3f} "
            f"{r.mb_per_s:>9.1f} {r.spans_per_s:>11.0f}"
        )
    print()
    for c in checks(results):
        value = f"{c['value']:.{c['digits']}f}"
        print(f"{c['check']:<30} {value:>8}  target {c['target']:<8} {verdict(c['pass'])}")
    print(f"(RSS target {RSS_TARGET_MB:g} MB is set for a 300 MB input)")
    if stats.json_bytes < SMALL_FILE_MB * MB:
        print(f"note: below {SMALL_FILE_MB} MB, child start-up time weighs on the import ratios")


def report_json(stats: GenStats, results: dict[str, Result], env: dict[str, Any]) -> str:
    payload = {
        **env,
        "json_file_mb": round(stats.json_bytes / MB, 2),
        "proto_file_mb": round(stats.pb_bytes / MB, 2),
        "spans": stats.spans,
        "traces": stats.traces,
        "batches": stats.batches,
        "results": {key: r.as_dict() for key, r in results.items()},
        "checks": checks(results),
    }
    return json.dumps(payload, indent=None)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=float, default=50.0, help="approximate JSONL size (10^6 B)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (output is deterministic)")
    p.add_argument("--workdir", type=Path, help="where to write files (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep generated files and stores")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--parse-only", action="store_true", help="skip the agent-replay imports")
    return p.parse_args(argv)


def progress(msg: str) -> None:
    # Progress on stderr so `--json` leaves stdout machine-readable.
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Result]:
    progress(f"generating ~{args.size_mb:g} MB (seed {args.seed}) in {workdir}")
    start = time.perf_counter()
    stats = generate(workdir, args.size_mb, args.seed)
    progress(f"  {stats.spans} spans in {time.perf_counter() - start:.1f}s")
    jsonl, pb = workdir / JSONL_NAME, workdir / PB_NAME
    results: dict[str, Result] = {}
    progress("orjson parse (best of 3)")
    seconds = best_time(lambda: parse_jsonl(jsonl), PARSE_REPEATS)
    results["orjson_parse"] = Result("orjson parse", stats.json_bytes, stats.spans, seconds)
    if not args.parse_only:
        progress(f"agent-replay import json (best of {IMPORT_REPEATS})")
        results["import_json"] = measure_import(workdir, jsonl, "json", stats.spans)
    progress("protobuf parse (best of 3)")
    seconds = best_time(lambda: parse_pb(pb), PARSE_REPEATS)
    results["protobuf_parse"] = Result("protobuf parse", stats.pb_bytes, stats.spans, seconds)
    if not args.parse_only:
        progress(f"agent-replay import proto (best of {IMPORT_REPEATS})")
        results["import_proto"] = measure_import(workdir, pb, "proto", stats.spans)
    env = environment()
    if args.json:
        print(report_json(stats, results, env))
    else:
        print_table(stats, results, env)
    return results


def cleanup(workdir: Path, created_tempdir: bool) -> None:
    if created_tempdir:
        shutil.rmtree(workdir, ignore_errors=True)
        return
    # A user-supplied workdir may hold other things: remove only what this script wrote.
    for name in (JSONL_NAME, PB_NAME):
        (workdir / name).unlink(missing_ok=True)
    shutil.rmtree(workdir / STORES_DIR, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    created_tempdir = args.workdir is None
    if created_tempdir:
        workdir = Path(tempfile.mkdtemp(prefix="agent-replay-bench-"))
    else:
        workdir = args.workdir
        workdir.mkdir(parents=True, exist_ok=True)
    try:
        run(args, workdir)
    finally:
        if args.keep:
            progress(f"kept {workdir}")
        else:
            cleanup(workdir, created_tempdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
