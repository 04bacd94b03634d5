"""Regenerate ``sample_traces/`` from the incident example, byte for byte the same every run.

    python scripts/make_sample_traces.py           # rewrite the files
    python scripts/make_sample_traces.py --check   # exit 1 if the committed files are stale

Files written:

* ``incident.otlp.jsonl`` — OpenInference flavour, 2 passing runs and 1 failing run, as OTLP JSON
  Lines. Spans are exported the way a batching exporter would see them: in end order (children
  before parents), 3 per line, so every trace is spread over several lines and some lines hold two
  traces.
* ``incident.otlp.pb`` — the same batches as a Collector ``format: proto`` stream (4-byte length
  prefixes). Same trace ids as the .jsonl on purpose: importing both must deduplicate.
* ``incident-genai.otlp.jsonl`` — OTel GenAI flavour, 1 passing and 1 failing run (other seeds, so
  other trace ids; same conversations as their OpenInference counterparts).
* ``incident.steps.jsonl`` — the OpenInference runs in agent-replay's native step JSONL, read back
  through ``otel_replay.importers`` and renamed ``incident-<name>`` so they do not collide with the
  imported traces. Skipped with a note while those library functions do not exist.
"""

from __future__ import annotations

import argparse
import dataclasses
import filecmp
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from examples.incident import Investigation

REPO_ROOT = Path(__file__).resolve().parents[1]
# Run as a plain script from a checkout, where neither the package nor the example is installed;
# the project's own imports therefore happen inside the functions, after this.
sys.path.insert(0, str(REPO_ROOT))

OUT_DIR = REPO_ROOT / "sample_traces"
BATCH_SIZE = 3
DEPLOY_API_EMPTY = {"list_deploys": "empty"}


class RunSpec(NamedTuple):
    name: str
    flavour: str
    seed: int
    faults: Mapping[str, str]


OPENINFERENCE_RUNS = (
    RunSpec("pass", "openinference", 101, {}),
    # The deploy API fails once (an ERROR tool span); the agent retries and still finds v841.
    RunSpec("pass-retry", "openinference", 102, {"list_deploys": "error_once"}),
    RunSpec("fail", "openinference", 103, DEPLOY_API_EMPTY),
)
GENAI_RUNS = (
    RunSpec("genai-pass", "genai", 201, {}),
    RunSpec("genai-fail", "genai", 202, DEPLOY_API_EMPTY),
)


class Finished(NamedTuple):
    spec: RunSpec
    run: Investigation

    @property
    def trace_id(self) -> str:
        return format(self.run.spans[-1].context.trace_id, "032x")


def run_all(specs: Sequence[RunSpec]) -> list[Finished]:
    from examples.incident import investigate

    return [Finished(spec, investigate(spec.flavour, spec.seed, spec.faults)) for spec in specs]


def batches(runs: Sequence[Finished]) -> Iterator[ExportTraceServiceRequest]:
    """Export requests of BATCH_SIZE spans, runs back to back, each run's spans in end order."""
    from otel_replay.otlp_encode import spans_to_request

    spans = [span for finished in runs for span in finished.run.spans]
    for start in range(0, len(spans), BATCH_SIZE):
        yield spans_to_request(spans[start : start + BATCH_SIZE])


def write_native_steps(source: Path, runs: Sequence[Finished], path: Path) -> bool:
    """Write the native step JSONL via the library; False when the library is not there yet."""
    try:
        from otel_replay.importers import read_path
    except ImportError as exc:
        print(f"skipped {path.name}: {exc}", file=sys.stderr)
        return False
    names = {finished.trace_id: f"incident-{finished.spec.name}" for finished in runs}
    lines = []
    for trajectory in read_path(source):
        if trajectory.id not in names:
            raise SystemExit(f"{source}: unexpected trajectory {trajectory.id!r}")
        # The importer records where it read from; a machine-specific absolute path there would
        # make the file differ between checkouts.
        portable = f"{OUT_DIR.name}/{source.name}"
        metadata = {
            key: portable if value == str(source) else value
            for key, value in trajectory.metadata.items()
        }
        renamed = dataclasses.replace(trajectory, id=names[trajectory.id], metadata=metadata)
        record = renamed.to_record()
        lines.append(orjson.dumps(record) + b"\n")
    if len(lines) != len(runs):
        raise SystemExit(f"{source}: expected {len(runs)} trajectories, read {len(lines)}")
    path.write_bytes(b"".join(lines))
    return True


def generate(out_dir: Path) -> list[Finished]:
    from otel_replay.otlp_encode import write_otlp_json_lines, write_otlp_proto_stream

    out_dir.mkdir(parents=True, exist_ok=True)
    openinference = run_all(OPENINFERENCE_RUNS)
    genai = run_all(GENAI_RUNS)
    write_otlp_json_lines(batches(openinference), out_dir / "incident.otlp.jsonl")
    write_otlp_proto_stream(batches(openinference), out_dir / "incident.otlp.pb")
    write_otlp_json_lines(batches(genai), out_dir / "incident-genai.otlp.jsonl")
    write_native_steps(
        out_dir / "incident.otlp.jsonl", openinference, out_dir / "incident.steps.jsonl"
    )
    return openinference + genai


def check(out_dir: Path, make: Callable[[Path], object] | None = None) -> int:
    """Regenerate into a scratch directory with ``make`` (default: this script's `generate`) and
    compare with ``out_dir``; 0 when identical. The other fixture scripts check with it too."""
    with tempfile.TemporaryDirectory() as scratch:
        (make or generate)(Path(scratch))
        fresh = sorted(p.name for p in Path(scratch).iterdir())
        _, mismatch, errors = filecmp.cmpfiles(out_dir, scratch, fresh, shallow=False)
    for name in mismatch + errors:
        print(f"stale: {out_dir / name}", file=sys.stderr)
    return 1 if mismatch or errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    parser.add_argument("--check", action="store_true", help="only verify the files are current")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.out)
    for finished in generate(args.out):
        spec = finished.spec
        print(
            f"{finished.trace_id}  incident-{spec.name:<11}  {spec.flavour:<13}  "
            f"outcome={finished.run.outcome}  faults={dict(spec.faults)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
