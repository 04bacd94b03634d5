"""``agent-replay import`` of native JSONL edited after export: a warning naming the file, line,
run and step, the import going on; ``--strict`` refuses the file with the store left as it was.
An export imported again unchanged says nothing, whether its runs came from the bundled samples
or from a trace of the corpus (model turns with a server's response and tool-call ids)."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from otel_replay import Store
from tests.cli_helpers import invoke, ok
from tests.conftest import SAMPLES


def _export(runner: CliRunner, store: Path, out: Path) -> list[dict[str, object]]:
    ok(invoke(runner, store, "export", "--format", "jsonl", "--out", str(out)))
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _samples_exported(
    runner: CliRunner, tmp_path: Path
) -> tuple[Path, Path, list[dict[str, object]]]:
    """A store of the bundled native samples, and its export to ``edited.jsonl`` with its records."""
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(SAMPLES / "incident.steps.jsonl")))
    exported = tmp_path / "edited.jsonl"
    return store, exported, _export(runner, store, exported)


def _contents(store: Path) -> dict[str, list[str]]:
    with Store.open(store) as db:
        return {s.id: [step.hash for step in db.get(s.id).steps] for s in db.summaries()}


def test_an_export_imported_again_says_nothing(
    runner: CliRunner, tmp_path: Path, corpus: Path
) -> None:
    store = tmp_path / "store.db"
    traced = corpus / "platforms" / "any-agent-traces" / "OPENAI_trace.json"
    ok(invoke(runner, store, "import", str(SAMPLES), str(traced)))
    exported = tmp_path / "all.jsonl"
    records = _export(runner, store, exported)
    assert any(r["metadata"]["source"] == str(traced) for r in records)  # type: ignore[index]
    again = ok(invoke(runner, tmp_path / "again.db", "import", "--strict", str(exported)))
    assert "warning" not in again.stderr and again.stderr.strip() == ""
    assert _contents(tmp_path / "again.db") == _contents(store)


def test_an_edited_step_warns_once_per_run_and_the_import_goes_on(
    runner: CliRunner, tmp_path: Path
) -> None:
    store, exported, records = _samples_exported(runner, tmp_path)
    line = next(i for i, r in enumerate(records, 1) if r["trajectory_id"] == "incident-fail")
    steps = records[line - 1]["steps"]
    steps[5]["output"] = []  # type: ignore[index]  # the logs that named the database, gone
    steps[6]["status"] = "error"  # type: ignore[index]
    exported.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))

    result = ok(invoke(runner, tmp_path / "fresh.db", "import", str(exported)))

    warnings = [w for w in result.stderr.splitlines() if w.startswith("warning:")]
    assert warnings == [
        f"warning: {exported}:{line}: run 'incident-fail': step 5 'search_logs' no longer matches "
        "its stored hash (nor does 1 later step): its content was edited after export; it is "
        "imported with the hashes of its content as it is now (--strict refuses it)"
    ]
    imported = _contents(tmp_path / "fresh.db")
    assert sorted(imported) == sorted(_contents(store))
    with Store.open(tmp_path / "fresh.db") as db:
        assert db.get("incident-fail").steps[5].output == []  # as it is now, hashed as it is now


def test_strict_refuses_the_edited_file_and_leaves_the_store_as_it_was(
    runner: CliRunner, tmp_path: Path
) -> None:
    store, exported, records = _samples_exported(runner, tmp_path)
    records[0]["steps"][1]["error"] = "timeout"  # type: ignore[index]
    records = [{**r, "trajectory_id": f"copy-{r['trajectory_id']}"} for r in records]  # new runs
    exported.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    before = _contents(store)

    refused = invoke(runner, store, "import", "--strict", str(exported))

    assert refused.exit_code == 1
    error, note = [line for line in refused.stderr.splitlines() if line.strip()]
    run = records[0]["trajectory_id"]
    assert error == (
        f"error: {exported}:1: run {run!r}: step 1 'query_metrics' no longer matches its stored "
        "hash: its content was edited after export"
    )
    assert note == f"nothing from {exported} was imported"
    assert _contents(store) == before
