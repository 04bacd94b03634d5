"""Hostile loopback HTTP servers for the clients' bounds: each answers every request by writing
what a function yields, as slowly or as endlessly as it likes (a byte every second, a chunked body
with no end, headers that never finish), and stops when the client hangs up."""

from __future__ import annotations

import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from tests.http_stub import Asked, Stub


@contextmanager
def hostile(behave: Callable[[Asked], Iterable[bytes]]) -> Iterator[Stub]:
    """A server on a free loopback port writing ``behave(asked)``'s pieces to each request."""
    state = Stub(0)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            method, path, _ = self.rfile.readline().decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while (line := self.rfile.readline().decode("latin-1").strip()) != "":
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.rfile.read(int(headers.get("content-length", "0")))
            asked = Asked(method, path, headers)
            state.asked.append(asked)
            try:
                for piece in behave(asked):
                    self.wfile.write(piece)
                    self.wfile.flush()
            except OSError:
                pass  # the client gave up: what the test wants

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def trickled_headers(asked: Asked) -> Iterator[bytes]:
    """A status line, then a header one byte a quarter second, never ending."""
    yield b"HTTP/1.1 200 OK\r\nX-Slow: "
    while True:
        time.sleep(0.25)
        yield b"a"


def trickled_body(asked: Asked) -> Iterator[bytes]:
    """Headers at once, then a chunked body one byte a quarter second, never ending."""
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    while True:
        time.sleep(0.25)
        yield b"1\r\n \r\n"


def endless_body(status: str = "200 OK") -> Callable[[Asked], Iterator[bytes]]:
    """Headers at once, then a chunked body of 64 KiB chunks with no end."""

    def behave(asked: Asked) -> Iterator[bytes]:
        yield (
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
        chunk = b"10000\r\n" + b"[" * 0x10000 + b"\r\n"
        while True:
            yield chunk

    return behave


def silent(asked: Asked) -> Iterator[bytes]:
    """Nothing at all, for a minute."""
    time.sleep(60)
    yield b""


def within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """What ``call`` raised (None: it returned), failing the test when it is still running after
    ``seconds`` (it is left to its daemon thread, not waited for)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)
        else:
            raised.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert raised, f"still waiting after {seconds:g} s: the client is not bounded"
    return raised[0]


def redirect_loop(asked: Asked) -> Iterator[bytes]:
    """A redirect to the very address asked, every time."""
    yield (
        f"HTTP/1.1 302 Found\r\nLocation: {asked.path}\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
