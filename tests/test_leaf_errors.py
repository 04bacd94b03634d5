"""What the library raises on purpose is a leaf of `otel_replay.errors` saying what kind of thing
went wrong, never the base class alone, so a caller catches what it can handle (issue 41, item 4).
Each leaf here is raised by the real component (a loopback HTTP server, a bound port, the store),
with the message it had when it was a bare `ReplayError`."""

from __future__ import annotations

import ast
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

import otel_replay
from otel_replay.errors import (
    AddressError,
    MissingExtraError,
    PlatformError,
    ReplayError,
    ReportFormatError,
    SettingError,
    TooLargeError,
    UnreplayableError,
)
from otel_replay.model import Trajectory
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT


def _bare_raises(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and isinstance(node.exc.func, ast.Name)
                and node.exc.func.id == "ReplayError"
            ):
                found.append(f"{name}:{node.lineno}")
    return found


def test_the_library_raises_no_bare_base_class() -> None:
    root = Path(otel_replay.__file__).parent
    assert _bare_raises(root) == []


def test_every_leaf_is_documented_in_the_module_tree() -> None:
    """The module docstring's tree lists every error class `otel_replay.errors` defines."""
    import otel_replay.errors as errors

    leaves = [
        name
        for name in errors.__all__
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception)
    ]
    assert errors.__doc__ is not None
    assert [name for name in leaves if name not in errors.__doc__] == []


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://user:secret@example.com", "has a user name or password in it"),
        ("ftp://example.com", "is not an http:// or https:// URL"),
        ("http://example.com:99999", "the port is not a number from 1 to 65535"),
    ],
)
def test_an_address_that_cannot_be_used_is_an_address_error(url: str, said: str) -> None:
    from otel_replay.otlp_encode import destination

    with pytest.raises(AddressError, match=said) as raised:
        destination(url)
    assert isinstance(raised.value, ValueError)


def test_a_platform_address_without_its_name_or_of_the_wrong_platform_is_an_address_error() -> None:
    from otel_replay.platforms.jaeger import parse_jaeger_url, read_jaeger
    from otel_replay.platforms.schemes import annotated_by

    with pytest.raises(AddressError, match="a Jaeger service name has no"):
        parse_jaeger_url("jaeger://localhost:16686/a/b")
    with pytest.raises(AddressError, match="names no service"):
        list(read_jaeger("jaeger://localhost:16686"))
    with pytest.raises(AddressError, match="takes no verdicts"):
        annotated_by("jaeger://localhost:16686/checkout")


class _NotJson(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>a web page</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web_page() -> Iterator[int]:
    """A loopback server that answers every GET with a web page: the wrong address."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotJson)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_platform_answering_no_json_is_a_platform_error(web_page: int) -> None:
    from otel_replay.platforms.jaeger import read_jaeger

    with pytest.raises(PlatformError, match="with something that is not JSON"):
        list(read_jaeger(f"jaeger://127.0.0.1:{web_page}/checkout"))


def test_a_platform_nobody_answers_at_is_a_platform_error() -> None:
    from otel_replay.platforms.jaeger import read_jaeger

    with socket.socket() as held:  # bound, never listening: the port refuses connections
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        with pytest.raises(PlatformError, match=f"cannot reach Jaeger at http://127.0.0.1:{port}"):
            list(read_jaeger(f"jaeger://127.0.0.1:{port}/checkout"))


def test_a_port_taken_is_a_listen_error(tmp_path: Path) -> None:
    from otel_replay.errors import ListenError
    from otel_replay.receiver._http import Receiver

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port}") as raised:
            Receiver(lambda: Store.open(tmp_path / "s.db", create=True), "127.0.0.1", port)
    assert isinstance(raised.value, OSError)


def test_settings_that_cannot_be_used_are_setting_errors() -> None:
    from otel_replay.executors._base import ExecutorKind
    from otel_replay.executors._choose import executor
    from otel_replay.otlp_encode import destination
    from otel_replay.redaction import Redactor

    with pytest.raises(SettingError, match="is not a regular expression"):
        Redactor(["tok-("])
    with pytest.raises(SettingError, match="OTLP compression 'zip' is not gzip or none"):
        destination("http://127.0.0.1:4318", compression="zip")
    with pytest.raises(SettingError, match="is not a number of milliseconds"):
        destination("http://127.0.0.1:4318", environ={"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})
    with pytest.raises(SettingError, match="is not KEY=VALUE"):
        destination("http://127.0.0.1:4318", headers=["no-value"])
    with pytest.raises(SettingError, match="is for"):
        executor(ExecutorKind.THREADS, 2, "ray://example:10001")


def test_an_extra_not_installed_is_a_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from otel_replay.executors._base import ExecutorKind
    from otel_replay.executors._choose import executor

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: importing it fails

    with pytest.raises(MissingExtraError, match="needs Ray") as raised:
        executor(ExecutorKind.RAY, 2)
    assert isinstance(raised.value, ImportError)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"{", "r.json: not JSON"),
        (b"[]", "r.json: a report is a JSON object"),
        (b'{"version": 99}', "not an attribution report of a version"),
    ],
)
def test_a_file_that_is_no_report_is_a_report_format_error(data: bytes, said: str) -> None:
    from otel_replay.report._json import read_report

    with pytest.raises(ReportFormatError, match=said):
        read_report(data, "r.json")


def test_a_recorded_run_whose_seed_is_no_integer_is_unreplayable() -> None:
    from otel_replay.replay._made import run_inputs

    run = Trajectory.build("r1", [], metadata={"seed": "7"})
    with pytest.raises(UnreplayableError, match="a recorded run's seed is an integer"):
        run_inputs(run, None)


def test_a_run_too_large_for_a_protobuf_frame_is_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from otel_replay.export import write_otlp

    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", str(ROOT / "sample_traces" / "incident.otlp.jsonl")))
    monkeypatch.setattr("otel_replay.export._MAX_FRAME", 1000)  # stands in for 4 GiB
    with Store.open(store, read_only=True) as db:
        ids = [s.id for s in db.summaries()]
        with pytest.raises(TooLargeError, match="bytes of protobuf"):
            write_otlp(db, ids, tmp_path / "out.otlp.pb", proto=True)


def test_every_leaf_is_still_a_replay_error() -> None:
    """The command line catches the base class: a leaf is still one line and exit 1."""
    import otel_replay.errors as errors

    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, ReplayError), name
