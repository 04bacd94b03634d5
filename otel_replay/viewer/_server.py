"""The viewer's HTTP server: the standard library's, read-only over one store.

* ``GET`` and ``HEAD`` only; any other method (``POST``, ``PUT``, one http.server never heard of)
  is 405 with ``Allow: GET, HEAD``.
* A request's path is split at ``/``, each part percent-decoded once, and matched whole against the
  id and digest patterns (`otel_replay.viewer._urls`); anything else is a 404 page, before the store
  is opened. The store is opened read-only for each request (a connection belongs to its thread)
  and closed after it: the viewer never writes it, so an import beside it goes on as usual and each
  page shows the store as it is.
* Every answer is ``text/html; charset=utf-8`` with ``X-Content-Type-Options: nosniff``, the same
  Content-Security-Policy as the page's own ``<meta>`` (nothing loads from anywhere, only the
  page's inline style and script run) plus what only a header can say (no framing), and
  ``Cache-Control: no-store`` (pages hold prompts).
* Bound to a loopback address, it answers only requests whose ``Host`` names a loopback address,
  so a web page in the same browser cannot reach it through a DNS name that points here.
* No request can hold the viewer: each runs on a thread of its own, its filter's patterns are RE2's
  (time linear in the text searched: `otel_replay._regex`), its filter is bounded in length and
  conditions (`otel_replay.store._query`), and SQLite interrupts its queries after
  `REQUEST_SECONDS` (503, the form to narrow the filter). Nothing holds the interpreter's lock for
  long, so the command's SIGTERM and Ctrl-C handlers run while a page is being made.
"""

from __future__ import annotations

import ipaddress
import socket
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from otel_replay.errors import ListenError, NotFoundError, ReplayError, setting
from otel_replay.store import QueryError, QueryTimeout, Store
from otel_replay.viewer._compare import diff_page
from otel_replay.viewer._pages import error_page, report_page, run_page
from otel_replay.viewer._run_list import query_form_page, run_list_page
from otel_replay.viewer._urls import diff_url, is_config_digest, is_run_id

DEFAULT_PORT = 8765
#: The policy of `otel_replay.report.page`'s ``<meta>``, then what a ``<meta>`` cannot set.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
#: How long a connection may sit silent before its thread gives up on it.
IDLE_SECONDS = 10.0
#: How long the store's queries for one page may take before SQLite interrupts them.
REQUEST_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Answer:
    """What the viewer answers a ``GET``: a status and a page, or a redirect."""

    status: HTTPStatus
    html: str
    location: str | None = None


def answer(store_path: Path, target: str, seconds: float = REQUEST_SECONDS) -> Answer:
    """The answer to ``GET target`` (a request line's path and query) over the store at
    ``store_path``, its queries interrupted after ``seconds``. Raises only what is not the
    request's fault (a bug)."""
    path, _, query = target.partition("?")
    if not path.startswith("/"):
        return _not_found(f"{path!r} is not a path here")
    parts = [unquote(part) for part in path[1:].split("/")]
    refused = [p for p in parts[1:] if not is_run_id(p) and not is_config_digest(p)]
    if refused:
        return _not_found(f"{refused[0]!r} is not a run id (letters, digits and _ . : -)")
    try:
        match parts:
            case [""]:
                return _with_store(store_path, seconds, lambda db: run_list_page(db, query))
            case ["run", run_id]:
                return _with_store(store_path, seconds, lambda db: run_page(db, run_id))
            case ["run", run_id, "report", digest] if is_config_digest(digest):
                return _with_store(store_path, seconds, lambda db: report_page(db, run_id, digest))
            case ["diff", left, right]:
                return _with_store(store_path, seconds, lambda db: diff_page(db, left, right))
            case ["diff", left]:
                other = (parse_qs(query).get("with") or [""])[0].strip()
                if not is_run_id(other):
                    return _not_found(f"{other!r} is not a run id (letters, digits and _ . : -)")
                return Answer(HTTPStatus.SEE_OTHER, "", diff_url(left, other))
    except NotFoundError as exc:
        return _not_found(str(exc))
    except QueryError as exc:
        return Answer(HTTPStatus.BAD_REQUEST, query_form_page(query, str(exc)))
    except QueryTimeout as exc:
        if parts == [""]:
            return Answer(HTTPStatus.SERVICE_UNAVAILABLE, query_form_page(query, str(exc)))
        return Answer(HTTPStatus.SERVICE_UNAVAILABLE, error_page("Too slow", str(exc)))
    except (ReplayError, sqlite3.DatabaseError) as exc:
        return Answer(
            HTTPStatus.INTERNAL_SERVER_ERROR, error_page("The store cannot be read", str(exc))
        )
    return _not_found(f"there is no page at {path}")


def _with_store(store_path: Path, seconds: float, render: Callable[[Store], str]) -> Answer:
    with Store.open(store_path, read_only=True) as db, db.time_limit(seconds):
        return Answer(HTTPStatus.OK, render(db))


def _not_found(message: str) -> Answer:
    return Answer(HTTPStatus.NOT_FOUND, error_page("Not found", message))


class Viewer:
    """The pages of the store at ``store_path`` on ``host:port`` (port 0: a free one), until
    `stop`. ``on_error`` hears of each page that failed for a reason not the request's (a bug), in
    one line, on a server thread."""

    def __init__(
        self,
        store_path: str | Path,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.store_path = Path(store_path)
        Store.open(self.store_path, read_only=True).close()  # no store there: say so now, once
        server_class = _Server6 if ":" in host else _Server
        try:
            self._server = server_class((host, port), _Handler)
        except OSError as exc:
            raise ListenError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another viewer "
                f"there? {setting('port')} picks another, 0 a free one)"
            ) from None
        self._server.viewer = self
        self.on_error = on_error
        bound = self._server.server_address
        name = bound[0].decode() if isinstance(bound[0], bytes) else str(bound[0])
        self.url = f"http://{f'[{name}]' if ':' in name else name}:{bound[1]}"
        self.allowed_hosts = _loopback_names(host, name)
        self._serving: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Serve on a background thread."""
        self._serving = threading.Thread(target=self._server.serve_forever, name="agent-replay-ui")
        self._serving.start()

    def stop(self) -> None:
        """Stop serving and close the socket (a page being written is cut off: nothing is lost,
        the viewer only reads)."""
        if self._serving is not None:  # shutdown waits for a serve_forever that has begun
            self._server.shutdown()
        self._server.server_close()
        if self._serving is not None:
            self._serving.join()
            self._serving = None

    def __enter__(self) -> Viewer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _loopback_names(host: str, bound: str) -> frozenset[str] | None:
    """The ``Host`` names a request may carry when the viewer listens on a loopback address; None
    (any) when it listens beyond the machine, where the user chose who may reach it."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(bound).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return None
    return frozenset({"localhost", "127.0.0.1", "::1", host.lower(), bound.lower()})


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a page only reads: a stop need not wait for the ones being written
    viewer: Viewer


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "agent-replay-ui"
    timeout = IDLE_SECONDS

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    def do_GET(self) -> None:
        self._send(self._answer(), body=True)

    def do_HEAD(self) -> None:
        self._send(self._answer(), body=False)

    def __getattr__(self, name: str) -> Callable[[], None]:
        # http.server finds a method's handler by name (``do_POST``): every method but GET and HEAD
        # gets the same refusal, including ones http.server has never heard of (else 501)
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def _refuse_method(self) -> None:
        self.close_connection = True  # a body may follow, unread
        page = error_page(
            "Method not allowed", f"{self.command} is not served: the viewer only reads"
        )
        self._send(Answer(HTTPStatus.METHOD_NOT_ALLOWED, page), body=True, allow=True)

    def _answer(self) -> Answer:
        if not self._host_allowed():
            return Answer(
                HTTPStatus.BAD_REQUEST,
                error_page(
                    "Bad request", "this viewer answers requests to a loopback address only"
                ),
            )
        viewer = self.server.viewer
        try:
            return answer(viewer.store_path, self.path)
        except (
            Exception
        ) as exc:  # a bug: the page says so, the terminal hears of it, serving goes on
            if viewer.on_error is not None:
                viewer.on_error(f"{self.path}: {type(exc).__name__}: {exc}")
            return Answer(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                error_page(
                    "The viewer failed", f"this page could not be made ({type(exc).__name__})"
                ),
            )

    def _host_allowed(self) -> bool:
        allowed = self.server.viewer.allowed_hosts
        host = self.headers.get("Host")
        if allowed is None or host is None:  # an HTTP/1.0 client may send none; browsers always do
            return True
        try:
            name = urlsplit(f"//{host}").hostname
        except ValueError:
            return False
        return name in allowed

    def _send(self, answer: Answer, *, body: bool, allow: bool = False) -> None:
        data = answer.html.encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            if answer.location is not None:
                self.send_header("Location", answer.location)
            if allow:
                self.send_header("Allow", "GET, HEAD")
            self.end_headers()
            if body:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the browser left; nothing to tell
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the command prints where it serves, not every page it served."""
