"""A platform import holds what it must and no more, against hostile loopback Phoenix servers: a
page past ``--max-record-bytes`` is refused naming the page, endless pages of new spans stop at
the cap on what an import holds, and where standard error is no terminal the import prints its
pages as it goes, so Ctrl-C can stop it with the store as it was."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from otel_replay.errors import ReplayError
from otel_replay.platforms.phoenix import read_phoenix
from tests.cli_helpers import invoke, ok, one_line_error
from tests.hostile_http import hostile
from tests.http_stub import Asked, answer, stub

FIXTURES = Path(__file__).parents[1] / "fixtures" / "platforms" / "phoenix"
SPANS = "/v1/projects/p/spans/otlpv1"


def _endless(padding: int = 0) -> Callable[[Asked], bytes]:
    """A Phoenix whose project ``p`` answers pages of one new span each (with an attribute of
    ``padding`` bytes), each with a cursor to a next page, without end."""
    span = json.loads((FIXTURES / "genai.otlpv1.json").read_text())["data"][0]
    numbers = itertools.count(1)

    def respond(asked: Asked) -> bytes:
        if not asked.path.startswith(SPANS):
            return answer("200 OK", b"{}", Content_Type="application/json")
        number = next(numbers)
        attributes = list(span["attributes"])
        if padding:
            attributes.append({"key": "padding", "value": {"string_value": "x" * padding}})
        fresh = {
            **span,
            "trace_id": f"{number:032x}",
            "span_id": f"{number:016x}",
            "parent_span_id": None,
            "attributes": attributes,
        }
        page = {"data": [fresh], "next_cursor": f"after-{number}"}
        return answer("200 OK", json.dumps(page).encode(), Content_Type="application/json")

    return respond


def _listed(store: Path) -> str:
    return ok(invoke(CliRunner(), store, "list", "--json")).stdout


def test_endless_pages_of_new_spans_stop_at_the_cap_on_what_an_import_holds() -> None:
    with stub(_endless()) as server:
        with pytest.raises(ReplayError) as raised:
            list(read_phoenix(f"phoenix://127.0.0.1:{server.port}/p", held=(1 << 30, 50)))
    assert str(raised.value) == (
        f"Phoenix at {server.url}: with page 51 of {SPANS}, the import would hold more than 50 "
        "spans before its runs are made, the most it holds: gave up (import less at a time: a "
        "shorter time with since)"
    )
    assert len(server.asked) == 52  # the project, then 51 pages: no page after the cap


def test_a_page_past_max_record_bytes_is_refused_naming_the_page(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", str(FIXTURES / "incident.otlpv1.json")))
    before = _listed(store)
    respond = _endless(padding=2 << 20)
    with hostile(lambda asked: [respond(asked)]) as server:  # the client hangs up mid-answer
        url = f"phoenix://127.0.0.1:{server.port}/p"
        result = invoke(CliRunner(), store, "import", url, "--max-record-bytes", "1M")
    assert one_line_error(result) == (
        f"error: Phoenix at {server.url} answered page 1 of {SPANS} with more than 1 MiB: gave "
        "up (--max-record-bytes raises the cap)"
    )
    assert _listed(store) == before


def test_an_import_says_its_pages_on_a_log_and_ctrl_c_stops_it_with_the_store_as_it_was(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", str(FIXTURES / "incident.otlpv1.json")))
    before = _listed(store)
    with stub(_endless()) as server:
        url = f"phoenix://127.0.0.1:{server.port}/p"
        command = [sys.executable, "-m", "otel_replay", "import", url, "--store", str(store)]
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert process.stderr is not None
        first = process.stderr.readline().decode()  # said after 5 s, standard error no terminal
        pages = len(server.asked)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
    assert re.fullmatch(
        r"Phoenix: (\d+) page\(s\) of spans read, \1 span\(s\) of \1 trace\(s\)\n", first
    )
    assert len(server.asked) > pages  # it was still reading when it was stopped
    assert rest.decode().strip().splitlines()[-1] == (
        f"error: interrupted while reading {url}: nothing from it was imported"
    )
    assert process.returncode == 1
    assert _listed(store) == before
