"""Generate ``tests/fixtures/platforms/phoenix/`` from a real Arize Phoenix: runs of the incident
example, made by the real OpenTelemetry SDK, sent to ``phoenix serve`` (from ``.phoenix-venv``) with the
OTLP/HTTP exporter, and read back through its REST API as Phoenix writes them.

    python scripts/make_phoenix_fixtures.py           # rewrite the files (about a minute)
    python scripts/make_phoenix_fixtures.py --check   # exit 1 if the committed files are stale

The server runs with ``PYTHONHASHSEED=0`` (it orders attributes by string hashes), so the files are the
same byte for byte every run. Files written (spans as the server sends them; nothing is edited):

* ``incident.spans.json`` — ``GET /v1/projects/incident/spans``: Phoenix span JSON, a page
  ``{"data": [...], "next_cursor": null}`` (``context.span_id``, ``parent_id``, ``span_kind``, the
  status at the top); the pass-retry run (its first ``list_deploys`` fails) and the failing run.
* ``incident.otlpv1.json`` — ``GET /v1/projects/incident/spans/otlpv1``: the same spans in Phoenix's
  OTLP shape (flat snake_case spans, key/value attributes with null members).
* ``incident-by-run.spans.json`` — the span JSON above as an object of named span lists (one list per
  run, named as the example names them), the shape Phoenix's own span fixtures have.
* ``genai.spans.json`` and ``genai.otlpv1.json`` — the failing run with OTel GenAI attributes (Phoenix
  adds OpenInference ones beside them when it takes the spans in).

Phoenix is Elastic License 2.0: these files are its output for spans this project made, not copies of
its code or fixtures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from make_sample_traces import check  # noqa: E402  (this folder is the script's own path)

OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "platforms" / "phoenix"
# (name, flavour, seed, faults): the runs of scripts/make_sample_traces.py with these seeds
RUNS = {
    "incident": (
        ("pass-retry", "openinference", 102, {"list_deploys": "error_once"}),
        ("fail", "openinference", 103, {"list_deploys": "empty"}),
    ),
    "genai": (("genai-fail", "genai", 202, {"list_deploys": "empty"}),),
}


def _get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=60) as response:
        return json.loads(response.read())


def _write(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


def generate(out_dir: Path) -> None:
    from examples.incident import investigate
    from tests.platforms.phoenix_server import serve

    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, serve(Path(folder)) as phoenix:
        names: dict[str, str] = {}
        for project, runs in RUNS.items():
            for name, flavour, seed, faults in runs:
                run = investigate(flavour, seed, faults)
                names[format(run.spans[-1].context.trace_id, "032x")] = name
                phoenix.send(run.spans, project)
        for project in RUNS:
            spans = _get(phoenix.base, f"/v1/projects/{project}/spans?limit=1000")
            otlp = _get(phoenix.base, f"/v1/projects/{project}/spans/otlpv1?limit=1000")
            assert spans["next_cursor"] is None and otlp["next_cursor"] is None
            _write(out_dir / f"{project}.spans.json", spans)
            _write(out_dir / f"{project}.otlpv1.json", otlp)
        by_run: dict[str, list[Any]] = {}
        incident = json.loads((out_dir / "incident.spans.json").read_text())
        for span in incident["data"]:
            by_run.setdefault(names[span["context"]["trace_id"]], []).append(span)
        _write(out_dir / "incident-by-run.spans.json", by_run)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    parser.add_argument("--check", action="store_true", help="only verify the files are current")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.out, generate)
    generate(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
