"""Receiver benchmark: spans per second that ``agent-replay serve`` takes from 4 concurrent exporters,
beside ``agent-replay import`` of the same spans from a file, in one run.

The spans are agent runs made with the real OpenTelemetry SDK (a root span, model calls with their
messages, tool calls; ``--traces`` of them). They are sent twice:

* to ``agent-replay serve`` (a separate process, a fresh store) by 4 threads, each with the real
  ``OTLPSpanExporter`` (protobuf over HTTP, as an application's batch processor sends it: batches of
  512 spans in the order they finished, each thread its own runs); timed from the first batch to the
  last one acknowledged, which is when every span is committed;
* to ``agent-replay import`` of the same spans as a Collector ``format: proto`` file (a separate
  process, a fresh store), timed inside that process around the import alone.

Both rounds alternate ``--rounds`` times on this noisy machine; the best of each is compared (target:
the receiver at >= 0.7x the file import).

Usage::

    python benchmarks/receiver_bench.py [--traces 1500] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.otlp_encode import spans_to_request, write_otlp_proto_stream

ROOT = Path(__file__).resolve().parent.parent
EXPORTERS = 4
BATCH = 512  # the SDK's BatchSpanProcessor default max_export_batch_size
TARGET_RATIO = 0.7

_IMPORT = """
import sys, time
from otel_replay import Store
from otel_replay.importers import read_path
from otel_replay.ingest import ingest
store = Store.open(sys.argv[2])
started = time.perf_counter()
ingest(store, read_path(sys.argv[1]))
print(time.perf_counter() - started)
"""


def make_runs(traces: int) -> list[list[ReadableSpan]]:
    """``traces`` agent runs, each as its spans in the order they finished (children first)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("receiver-bench")
    history = [{"role": "user", "content": "Checkout is failing since 14:02. Why?"}]
    for t in range(traces):
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
            for turn in range(4):
                with tracer.start_as_current_span(
                    "chat",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "model-1",
                        "gen_ai.input.messages": json.dumps(history),
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "content": f"run {t} turn {turn}: checking"}]
                        ),
                    },
                ):
                    pass
                with tracer.start_as_current_span(
                    "execute_tool search_logs",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search_logs",
                        "gen_ai.tool.call.arguments": json.dumps({"query": f"error {turn}"}),
                        "gen_ai.tool.call.result": json.dumps({"lines": ["timeout"] * 8}),
                    },
                ):
                    pass
    spans = memory.get_finished_spans()
    runs: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        runs.setdefault(span.context.trace_id, []).append(span)
    return list(runs.values())


def time_import(runs: Sequence[Sequence[ReadableSpan]], directory: Path) -> float:
    """Seconds ``agent-replay import`` takes over the spans as a Collector proto file."""
    file = directory / "spans.binpb"
    spans = [span for run in runs for span in run]
    requests = [spans_to_request(spans[i : i + BATCH]) for i in range(0, len(spans), BATCH)]
    write_otlp_proto_stream(requests, file)
    store = directory / f"import-{time.monotonic_ns()}.db"
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT, str(file), str(store)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return float(out.stdout)


def time_receiver(
    runs: Sequence[Sequence[ReadableSpan]], directory: Path, *, encoded: bool
) -> float:
    """Seconds from the first batch to the last acknowledged, 4 clients against ``serve``: the
    real exporter (which encodes each batch as it goes), or with ``encoded`` the same batches
    encoded beforehand and posted as the exporter posts them (the receiver's own throughput)."""
    store = directory / f"served-{time.monotonic_ns()}.db"
    command = [sys.executable, "-m", "otel_replay", "--store", str(store), "serve", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        assert server.stdout is not None
        line = server.stdout.readline().decode()
        url = line.split(" at ")[1].split()[0]
        port = int(url.split(":")[2].split("/")[0])
        shares = [[s for run in runs[w::EXPORTERS] for s in run] for w in range(EXPORTERS)]
        failures: list[str] = []

        def export(spans: list[ReadableSpan]) -> None:
            exporter = OTLPSpanExporter(endpoint=url)
            for i in range(0, len(spans), BATCH):
                if exporter.export(spans[i : i + BATCH]) is not SpanExportResult.SUCCESS:
                    failures.append(f"batch {i // BATCH} failed")
            exporter.shutdown()

        def post(bodies: list[bytes]) -> None:
            connection = http.client.HTTPConnection("127.0.0.1", port)
            for body in bodies:
                headers = {"Content-Type": "application/x-protobuf"}
                connection.request("POST", "/v1/traces", body, headers)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    failures.append(f"status {response.status}")
            connection.close()

        if encoded:
            work = [
                [
                    bytes(spans_to_request(share[i : i + BATCH]).SerializeToString())
                    for i in range(0, len(share), BATCH)
                ]
                for share in shares
            ]
            threads = [threading.Thread(target=post, args=(bodies,)) for bodies in work]
        else:
            threads = [threading.Thread(target=export, args=(share,)) for share in shares]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        if failures:
            raise RuntimeError(f"the receiver refused batches: {failures[:3]}")
        return elapsed
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = make_runs(args.traces)
    spans = sum(len(run) for run in runs)
    seconds: dict[str, list[float]] = {"import": [], "posted": [], "exporters": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            seconds["import"].append(time_import(runs, Path(tmp)))
            seconds["posted"].append(time_receiver(runs, Path(tmp), encoded=True))
            seconds["exporters"].append(time_receiver(runs, Path(tmp), encoded=False))
    best = {name: min(values) for name, values in seconds.items()}
    ratio = best["import"] / best["posted"]
    with_encoding = best["import"] / best["exporters"]
    figures = {
        "traces": len(runs),
        "spans": spans,
        "cpus": os.cpu_count(),
        "seconds": seconds,
        "spans_per_second": {name: spans / value for name, value in best.items()},
        "ratio": ratio,
        "ratio_with_exporters_encoding": with_encoding,
        "target": TARGET_RATIO,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{len(runs)} runs, {spans} spans; best of {args.rounds} rounds, alternating")
    rows = {
        "import": "agent-replay import of the file",
        "posted": "serve, 4 clients posting the exporter's batches",
        "exporters": "serve, 4 real exporters (encoding as they go)",
    }
    for name, label in rows.items():
        print(f"{label:<50} {best[name]:6.2f} s {spans / best[name]:9,.0f} spans/s")
    verdict = "met" if ratio >= TARGET_RATIO else "missed"
    print(f"receiver / import: {ratio:.2f}x (target >= {TARGET_RATIO}x): {verdict}")
    print(f"with the exporters' own encoding in the clock: {with_encoding:.2f}x")


if __name__ == "__main__":
    main()
