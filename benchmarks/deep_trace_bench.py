"""What one deep or wide trace costs to import, at N, 2N and 4N spans (issue 40, item 4).

Three shapes of one trace, each made by the real OpenTelemetry SDK and written as one OTLP JSON
document with `otel_replay.otlp_encode`:

* ``chain``: a parent chain of N spans (each the child of the one before), a tool call every
  tenth span and an llm call at the bottom: operations at several depths;
* ``wide``: N spans under one root, model calls and tool calls in turn, one after another;
* ``at-once``: N tool calls under one root all running at once, sending the same request
  without a result (none is one call with another).

Each file is read in a child process (`otel_replay.importers.read_path`, what ``import`` and
``lint`` run, ``serve`` the same on each request's spans) and, as the baseline, parsed by
``orjson.loads`` in another; each reports its wall time and peak RSS (best of ``--repeats``; the peak RSS is the child's own, its VmHWM).
The machines this runs on are shared and noisy, so the verdicts are ratios: the time and memory
at 2N and 4N over those at N (linear is 2 and 4; quadratic 4 and 16), and the import over the
parse of the same file.

Usage::

    python benchmarks/deep_trace_bench.py [--spans 5000] [--shapes chain,wide,at-once]
        [--repeats 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request

OI = "openinference.span.kind"
T0 = 1_760_000_000_000_000_000
MS = 1_000_000


def _llm(k: int) -> dict[str, Any]:
    return {
        OI: "LLM",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": f"question {k}",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": f"answer {k}",
    }


def _tool(k: int) -> dict[str, Any]:
    return {
        OI: "TOOL",
        "tool.name": "lookup",
        "input.value": json.dumps({"q": k}),
        "output.value": f"r{k}",
    }


class _Spans:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("deep_trace_bench")
        self.clock = T0

    def tick(self) -> int:
        self.clock += MS
        return self.clock


def chain(n: int) -> tuple[ReadableSpan, ...]:
    made = _Spans()
    context = None
    opened = []
    for k in range(n):
        attributes = _llm(k) if k == n - 1 else (_tool(k) if k % 10 == 5 else {OI: "CHAIN"})
        span = made.tracer.start_span(
            f"s{k}", context=context, attributes=attributes, start_time=made.tick()
        )
        context = trace.set_span_in_context(span)
        opened.append(span)
    for span in reversed(opened):
        span.end(end_time=made.tick())
    return made.exporter.get_finished_spans()


def _under_one_root(n: int, at_once: bool) -> tuple[ReadableSpan, ...]:
    made = _Spans()
    root = made.tracer.start_span("root", attributes={OI: "AGENT"}, start_time=made.tick())
    context = trace.set_span_in_context(root)
    for k in range(n):
        if at_once:
            attributes = {OI: "TOOL", "tool.name": "lookup", "input.value": '{"q": 1}'}
            start, end = made.clock + 1, made.clock + 10**9
        else:
            attributes = _llm(k) if k % 2 == 0 else _tool(k)
            start, end = made.tick(), made.tick()
        made.tracer.start_span(
            f"s{k}", context=context, attributes=attributes, start_time=start
        ).end(end_time=end)
    made.clock += 2 * 10**9
    root.end(end_time=made.tick())
    return made.exporter.get_finished_spans()


SHAPES: dict[str, Callable[[int], tuple[ReadableSpan, ...]]] = {
    "chain": chain,
    "wide": lambda n: _under_one_root(n, at_once=False),
    "at-once": lambda n: _under_one_root(n, at_once=True),
}

_CHILD = """
import resource, sys, time
from pathlib import Path
path = Path(sys.argv[2])
start = time.perf_counter()
if sys.argv[1] == "parse":
    import orjson
    orjson.loads(path.read_bytes())
else:
    from otel_replay.importers import read_path
    assert len(list(read_path(path))) == 1
seconds = time.perf_counter() - start
try:  # the peak of this program's own memory (ru_maxrss would count the parent's at the fork)
    status = Path("/proc/self/status").read_text()
    peak = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(seconds, peak)
"""


def _measure(what: str, path: Path, repeats: int) -> tuple[float, float]:
    """Best wall time (s) and peak RSS (MB) of ``what`` (parse or import) of ``path``."""
    best_time, best_rss = float("inf"), float("inf")
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, what, str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        best_time = min(best_time, float(out[0]))
        best_rss = min(best_rss, int(out[1]) * 1024 / 1e6)  # KiB
    return best_time, best_rss


def run(spans: int, shapes: list[str], repeats: int, workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for shape in shapes:
        for n in (spans, 2 * spans, 4 * spans):
            path = workdir / f"{shape}-{n}.json"
            path.write_bytes(orjson.dumps(request_to_otlp_json(spans_to_request(SHAPES[shape](n)))))
            parse_s, parse_mb = _measure("parse", path, repeats)
            import_s, import_mb = _measure("import", path, repeats)
            rows.append(
                {
                    "shape": shape,
                    "spans": n,
                    "file_mb": path.stat().st_size / 1e6,
                    "parse_s": parse_s,
                    "parse_mb": parse_mb,
                    "import_s": import_s,
                    "import_mb": import_mb,
                }
            )
    for row in rows:
        base = next(r for r in rows if r["shape"] == row["shape"] and r["spans"] == spans)
        row["time_x"] = row["import_s"] / base["import_s"]
        row["memory_x"] = row["import_mb"] / base["import_mb"]
        row["import_over_parse_s"] = row["import_s"] / row["parse_s"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=5000)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape {unknown[0]!r}; shapes: {', '.join(SHAPES)}")
    with tempfile.TemporaryDirectory() as workdir:
        rows = run(args.spans, shapes, args.repeats, Path(workdir))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{'shape':8} {'spans':>7} {'MB':>6} {'parse s':>8} {'import s':>9} {'x parse':>8} "
        f"{'time x':>7} {'RSS MB':>7} {'RSS x':>6}"
    )
    for r in rows:
        print(
            f"{r['shape']:8} {r['spans']:>7,} {r['file_mb']:>6.1f} {r['parse_s']:>8.3f} "
            f"{r['import_s']:>9.2f} {r['import_over_parse_s']:>8.0f} {r['time_x']:>7.2f} "
            f"{r['import_mb']:>7.0f} {r['memory_x']:>6.2f}"
        )
    print("time x and RSS x: over the same shape at N spans (linear: 2 and 4; quadratic: 4 and 16)")


if __name__ == "__main__":
    main()
