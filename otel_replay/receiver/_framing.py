"""Where a request's body ends (RFC 9112 6), read one way only: a request whose end two readers could
put in different places (two Content-Lengths, ``+5``, Transfer-Encoding beside a Content-Length, a
header line the parser would drop) is how request smuggling starts, so it is refused, and so are
bytes after a body that do not begin another request. Every refusal closes the connection: what
follows on it can no longer be told apart from a request.
"""

from __future__ import annotations

import re
import socket
import time
from email.message import Message
from http import HTTPStatus
from io import BufferedIOBase

from otel_replay.errors import setting

#: A request line starts with a method, a token (RFC 9110 5.6.2), then one space.
_TOKEN_BYTES = frozenset(
    b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
#: Longer than any method worth waiting for, and than any chunk-size or trailer line we take.
LONGEST_METHOD = 32
LONGEST_LINE = 4096
MOST_TRAILERS = 64
#: How long to wait for the rest of a method that arrived cut short after a body: a pipelining
#: client writes its next request at once.
METHOD_WAIT_SECONDS = 1.0


class Refused(Exception):
    """A request refused with ``status`` and a one-line reason."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def content_length(headers: Message) -> int | None:
    """The body's length from ``headers``; None for a chunked body. Raises `Refused`: header lines
    that were not all read (a malformed line, a folded one), a length that is not one run of ASCII
    digits, or given twice, Transfer-Encoding beside it or not just ``chunked``, or neither."""
    if headers.defects or headers.get_payload():
        raise Refused(HTTPStatus.BAD_REQUEST, "a header line is malformed")
    for name, value in headers.items():
        if "\r" in value or "\n" in value:
            raise Refused(HTTPStatus.BAD_REQUEST, f"header {name!r} is folded over lines")
    lengths = headers.get_all("Content-Length") or []
    codings = [
        coding.strip().lower()
        for field in headers.get_all("Transfer-Encoding") or []
        for coding in field.split(",")
    ]
    if codings and lengths:
        raise Refused(HTTPStatus.BAD_REQUEST, "Transfer-Encoding and Content-Length: send one")
    if codings:
        if codings == ["chunked"]:
            return None
        if "" in codings or "chunked" in codings:
            raise Refused(HTTPStatus.BAD_REQUEST, f"Transfer-Encoding {', '.join(codings)!r}")
        raise Refused(
            HTTPStatus.NOT_IMPLEMENTED,
            f"Transfer-Encoding {', '.join(codings)!r}: send chunked or a Content-Length",
        )
    if not lengths:
        raise Refused(
            HTTPStatus.LENGTH_REQUIRED, "send a Content-Length or Transfer-Encoding: chunked"
        )
    if len(lengths) > 1:
        raise Refused(HTTPStatus.BAD_REQUEST, f"Content-Length given {len(lengths)} times")
    value = lengths[0].strip(" \t")
    if not _DIGITS.fullmatch(value):
        raise Refused(
            HTTPStatus.BAD_REQUEST,
            f"Content-Length {lengths[0]!r} is not a number of bytes (ASCII digits)",
        )
    return int(value)


def read_chunked(rfile: BufferedIOBase, limit: int) -> bytes:
    """A chunked body (RFC 9112 7.1): chunk sizes in hex (extensions ignored), each chunk ending
    with CRLF, the last chunk (size 0), trailer fields (read and ignored), the final CRLF. Raises
    `Refused`: 400 for anything else, 413 past ``limit`` bytes (never held whole)."""
    body = bytearray()
    while True:
        line = _line(rfile, "a chunk size")
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text):
            raise Refused(HTTPStatus.BAD_REQUEST, f"chunk size {size_text[:40]!r} is not hex")
        size = int(size_text, 16)
        if size == 0:
            break
        if len(body) + size > limit:
            raise Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"a chunked body over the limit of {limit} bytes ({setting('max_body_bytes')})",
            )
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise Refused(HTTPStatus.BAD_REQUEST, "the chunked body ends inside a chunk")
        body += chunk
        if rfile.read(2) != b"\r\n":
            raise Refused(HTTPStatus.BAD_REQUEST, "a chunk is longer than its size")
    for _ in range(MOST_TRAILERS + 1):
        if not _line(rfile, "a trailer field"):
            return bytes(body)
    raise Refused(HTTPStatus.BAD_REQUEST, f"more than {MOST_TRAILERS} trailer fields")


def _line(rfile: BufferedIOBase, what: str) -> bytes:
    """One CRLF-ended line of a chunked body, without its CRLF."""
    line = rfile.readline(LONGEST_LINE + 1)
    if not line.endswith(b"\r\n"):
        if len(line) > LONGEST_LINE:
            raise Refused(HTTPStatus.BAD_REQUEST, f"{what} line is over {LONGEST_LINE} bytes")
        if line.endswith(b"\n"):
            raise Refused(HTTPStatus.BAD_REQUEST, f"{what} line ends without CR")
        raise Refused(HTTPStatus.BAD_REQUEST, f"the chunked body ends in {what}")
    return line[:-2]


def refuse_unless_a_request_follows(rfile: BufferedIOBase, connection: socket.socket) -> None:
    """Raise `Refused` (400) if bytes that have arrived after a body do not begin a request: a
    method and a space. A method cut short waits a moment for the rest; nothing arrived is fine
    (the next request, if any, is read as usual)."""
    timeout_s = connection.gettimeout()
    connection.settimeout(0)  # look at what is here; wait for nothing
    try:
        here = rfile.peek(LONGEST_METHOD)  # type: ignore[attr-defined]
        deadline = time.monotonic() + METHOD_WAIT_SECONDS
        while True:
            unread, ended = _unread(connection, LONGEST_METHOD - len(here))
            followed = here[:LONGEST_METHOD] + unread
            verdict = _begins_a_request(followed)
            if verdict is not None or ended or time.monotonic() > deadline:
                break
            time.sleep(0.01)
    finally:
        connection.settimeout(timeout_s)
    if not verdict:
        raise Refused(
            HTTPStatus.BAD_REQUEST,
            f"the body is followed by {bytes(followed[:20])!r}, which begins no request "
            "(is the Content-Length right?)",
        )


def _unread(connection: socket.socket, most: int) -> tuple[bytes, bool]:
    """Up to ``most`` bytes waiting on ``connection`` past the reader's buffer, left there, and
    whether the client has closed its side (no more will come)."""
    if most <= 0:
        return b"", False
    try:
        waiting = connection.recv(most, socket.MSG_PEEK)
    except BlockingIOError:
        return b"", False
    return waiting, not waiting


def _begins_a_request(data: bytes) -> bool | None:
    """Whether ``data`` begins a request line; None while it could still (a method cut short)."""
    for at, byte in enumerate(data):
        if byte == ord(" "):
            return at > 0
        if byte not in _TOKEN_BYTES:
            return False
    if not data:
        return True
    return None if len(data) < LONGEST_METHOD else False
