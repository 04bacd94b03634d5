"""Regenerate the framework corpus in ``tests/fixtures/frameworks/`` from the real frameworks.

    python scripts/make_framework_fixtures.py                 # every framework
    python scripts/make_framework_fixtures.py langgraph dspy  # some of them

Each ``scripts/frameworks/<name>/`` holds ``run.py`` (the support-agent scenario written with that
framework and its instrumentation, see ``scripts/frameworks/harness.py``) and ``requirements.txt``
(a frozen list: every package pinned, so ``pip install --no-deps`` installs exactly it). Each
framework gets its own virtual environment under ``--venvs`` (their pins clash), then its
``run.py`` runs against the local fake model server (``examples/fake_model_server.py``) and
writes ``<name>.otlp.pb``, a bare OTLP protobuf body; this script adds ``<name>.otlp.jsonl``, the
same spans as OTLP JSON Lines. The frameworks are needed here only, never by the tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ROOT / "scripts" / "frameworks"
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"


def frameworks() -> list[str]:
    return sorted(p.parent.name for p in FRAMEWORKS.glob("*/run.py"))


def environment(name: str, venvs: Path) -> Path:
    """The framework's virtual environment, created and filled from its frozen requirements."""
    home = venvs / name
    python = home / "bin" / "python"
    stamp = home / "requirements.txt"
    requirements = FRAMEWORKS / name / "requirements.txt"
    if stamp.is_file() and stamp.read_bytes() == requirements.read_bytes():
        return python
    venv.create(home, with_pip=True, clear=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-r", requirements], check=True
    )
    stamp.write_bytes(requirements.read_bytes())
    return python


def generate(name: str, venvs: Path) -> Path:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_replay.otlp_encode import write_otlp_json_lines

    python = environment(name, venvs)
    body = FIXTURES / f"{name}.otlp.pb"
    subprocess.run(
        [python, FRAMEWORKS / name / "run.py", body],
        check=True,
        env={"PYTHONPATH": str(FRAMEWORKS), "PATH": "/usr/bin:/bin", "HOME": str(venvs)},
    )
    request = ExportTraceServiceRequest.FromString(body.read_bytes())
    write_otlp_json_lines([request], FIXTURES / f"{name}.otlp.jsonl")
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"frameworks (default: all of {frameworks()})")
    parser.add_argument("--venvs", type=Path, default=ROOT / ".cache" / "framework-venvs")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(frameworks()))
    if unknown:
        parser.error(f"unknown framework(s) {unknown}; known: {frameworks()}")
    for name in args.names or frameworks():
        print(f"wrote {generate(name, args.venvs).relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
