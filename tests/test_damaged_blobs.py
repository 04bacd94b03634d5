"""A store whose blobs are not JSON (a disk fault, an edit with sqlite3) is a damaged store to every
command that reads them and to the viewer: the one "it may be damaged" line (a page of it in the
viewer), exit 1, never a traceback. Every read of the store's JSON goes through one function
(`otel_replay.store._connection.stored_json`)."""

from __future__ import annotations

import http.client
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import Store
from otel_replay.viewer._server import Viewer
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT

RUN = ROOT / "examples" / "docs" / "recorded-openai.jsonl"  # model calls: a blob per message
DAMAGED = "it may be damaged; `sqlite3 STORE .recover | sqlite3 NEW.db` saves what it can"


def _digests(store: Path) -> dict[str, str]:
    """The digest of one blob of each kind the run holds."""
    db = sqlite3.connect(store)
    try:
        metadata, spans = db.execute(
            "SELECT metadata_digest, spans_digest FROM trajectories"
        ).fetchone()
        output, inputs = db.execute(
            "SELECT output_digest, inputs_digest FROM steps ORDER BY idx LIMIT 1"
        ).fetchone()
        (shell,) = db.execute(
            "SELECT b.data FROM steps s JOIN blobs b ON b.digest = s.inputs_digest "
            "WHERE s.inputs_layout = 1 LIMIT 1"
        ).fetchone()
    finally:
        db.close()
    message = orjson.loads(shell)["messages"][0]
    return {
        "metadata": metadata,
        "spans": spans,
        "output": output,
        "inputs": inputs,
        "message": message,
    }


#: What a blob is damaged into: bytes that are no JSON, text cut short, a number SQLite keeps as one.
DAMAGE = {"bytes": b"\x00\xffgarbage", "cut": '{"role": "us', "integer": 7}


@pytest.fixture(params=[(kind, how) for kind in ("metadata", "spans", "output", "inputs",
                                                 "message") for how in DAMAGE])  # fmt: skip
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", str(RUN)))
    with Store.open(store, read_only=True) as db:
        (run_id,) = [s.id for s in db.summaries()]
    kind, how = request.param
    digest = _digests(store)[kind]
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE blobs SET data = ? WHERE digest = ?", (DAMAGE[how], digest))
    db.close()
    yield store, run_id, kind


def test_every_command_that_reads_a_damaged_blob_says_so_in_one_line(
    damaged: tuple[Path, str, str], tmp_path: Path
) -> None:
    store, run_id, kind = damaged
    runner = CliRunner()
    commands = [
        ["show", run_id],
        ["show", run_id, "--json"],
        ["lint", run_id],
        *(
            ["export", run_id, "--format", fmt, "--out", str(tmp_path / f"out.{fmt}")]
            for fmt in ("jsonl", "otlp-json", "parquet")
        ),
    ]
    passed = []
    for command in commands:
        result = invoke(runner, store, *command)
        if result.exit_code == 0:  # it read no blob of the kind damaged
            passed.append(command[3] if command[0] == "export" else command[0])
            continue
        error = one_line_error(result)
        assert error.startswith("error: the store cannot be read ("), (command, error)
        assert DAMAGED in error and "is not JSON" in error, (command, error)
    # a table of steps needs neither the run's metadata nor its span tree: every other reads all
    assert passed == (["parquet"] if kind in ("metadata", "spans") else []), passed
    # the list reads the runs' rows, not their blobs: it still lists the run
    assert run_id in ok(invoke(runner, store, "list", "--json")).stdout


def test_the_viewer_answers_a_damaged_run_with_a_page_saying_so(
    damaged: tuple[Path, str, str],
) -> None:
    store, run_id, _ = damaged
    with Viewer(store, "127.0.0.1", 0) as viewer:
        connection = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=10)
        try:
            connection.request("GET", f"/run/{run_id}")
            response = connection.getresponse()
            page = response.read().decode()
        finally:
            connection.close()
        assert response.status == 500
        assert "The store cannot be read" in page and "it may be damaged" in page
        connection = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=10)
        try:  # and the viewer goes on answering
            connection.request("GET", "/")
            assert connection.getresponse().status == 200
        finally:
            connection.close()
