"""A loopback HTTP server for the clients' tests that answers each request with the raw bytes a
function gives (so an answer can be a redirect, a body cut short or no HTTP at all), and keeps
what it was asked."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Asked:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Stub:
    port: int
    asked: list[Asked] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def answer(status: str, body: bytes = b"", **headers: str) -> bytes:
    """A whole HTTP/1.1 answer: ``status`` ("301 Moved Permanently"), the headers, the body."""
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@contextmanager
def stub(respond: Callable[[Asked], bytes]) -> Iterator[Stub]:
    """A server on a free loopback port answering ``respond(asked)`` to each request."""
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
            self.wfile.write(respond(asked))

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
