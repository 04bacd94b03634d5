"""Fuzzing ``agent-replay serve`` with raw bytes (hypothesis, issue 28): a valid OTLP/HTTP request,
built then changed (headers changed, duplicated, removed; its Content-Length altered; chunked; its
gzip body split, cut, its checks broken; the request cut short or followed by junk; bytes flipped),
sent over a socket to a real ``serve`` process.

Whether each request is valid is known from how it was built (bytes flipped at random: not known).
Whatever the bytes, the server answers or closes within a timeout and prints no traceback; it
answers 200 to every valid request (and the run is stored) and to no invalid one, and after any
answer but 200 the store is as it was. The default tier runs a small number of examples; the
``fuzz`` tier (``pytest -m fuzz``, run by CI) runs many more.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from otel_replay.receiver._framing import _TOKEN_BYTES
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, SLOW, _mutated, edits
from tests.test_receiver import AGENT_REPLAY, _exchange, _proto, _spans, _stored

_TEMPLATE_SPANS = _spans()
_TEMPLATE = _proto(_TEMPLATE_SPANS)
_TEMPLATE_ID = _TEMPLATE_SPANS[0].context.trace_id.to_bytes(16, "big")
_NUMBERS = itertools.count()  # a new trace each example: a stored run is told from the others
#: Where to cut or split, taken modulo a length: what is drawn never depends on the bytes (which
#: differ with each example's trace id), as hypothesis needs to replay an example.
positions = st.integers(0, 1 << 16)


@dataclass(frozen=True)
class Case:
    """Bytes for the socket; whether they are one valid request (None: not known); its trace."""

    data: bytes
    valid: bool | None
    trace_id: str
    made: tuple[str, ...]  # what was done to the request, for the failure message


class Serve:
    """An ``agent-replay serve`` process on a free loopback port, its stderr in a file."""

    def __init__(self, store_file: Path, errors: Path) -> None:
        self.store_file, self.errors = store_file, errors
        command = [*AGENT_REPLAY, "--store", str(store_file), "serve", "--port", "0"]
        with errors.open("wb") as stderr:
            self.process = subprocess.Popen(
                [*command, "--flush-after", "3600"],  # nothing is stored unasked while we look
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=ROOT,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        assert "receiving OTLP/HTTP traces at http://127.0.0.1:" in line, errors.read_text()
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    where = tmp_path_factory.mktemp("serve-fuzz")
    running = Serve(where / "store.db", where / "stderr.txt")
    yield running
    running.process.terminate()
    running.process.communicate(timeout=30)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    number = next(_NUMBERS)
    trace = hashlib.sha256(b"fuzz %d" % number).digest()[:16]
    body = _TEMPLATE.replace(_TEMPLATE_ID, trace)
    made: list[str] = []
    valid: bool | None = True

    def did(what: str, still_valid: bool | None) -> None:
        nonlocal valid
        made.append(what)
        if valid is not None:  # once not known, not known; else valid while every change keeps it
            valid = None if still_valid is None else valid and still_valid

    headers = [("Host", "127.0.0.1"), ("Content-Type", "application/x-protobuf")]
    encoding = draw(st.sampled_from(["identity", "none", "gzip", "gzip-members"]))
    if encoding.startswith("gzip"):
        cuts = sorted(at % (len(body) + 1) for at in draw(st.lists(positions, max_size=3)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        members = [gzip.compress(piece, mtime=0) for piece in pieces]
        body = b"".join(members)
        did(f"gzip in {len(members)} member(s)", True)
        headers.append(("Content-Encoding", "gzip"))
        mangle = draw(_mostly("", ["cut", "crc", "isize", "junk", "no-header"]))
        if mangle == "cut":
            body = body[: draw(positions) % len(body)]
        elif mangle in ("crc", "isize"):
            at = len(body) - (8 if mangle == "crc" else 4)
            body = body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]
        elif mangle == "junk":
            body += draw(st.binary(min_size=1, max_size=8))
        elif mangle == "no-header":
            headers.pop()  # a gzip body read as protobuf: 0x1f is wire type 7, which none is
        if mangle:
            did(f"gzip {mangle}", False)
    elif encoding == "identity":
        headers.append(("Content-Encoding", draw(st.sampled_from(["identity", "gzip"]))))
        did(f"Content-Encoding {headers[-1][1]}", headers[-1][1] == "identity")

    framing = draw(_mostly("length", ["chunked", "chunked", "both", "other", "neither"]))
    declared = str(len(body))
    valid_length: bool | None = True
    if framing == "length":
        form = draw(_mostly("", ["zeros", "spaces", "+", "hex", "delta", "twice", "two"]))
        if form == "zeros":
            declared = "00" + declared
        elif form == "spaces":
            declared = f"  {declared}\t"
        elif form == "+":
            declared = "+" + declared
        elif form == "hex":
            declared = f"{len(body):x}x"
        elif form == "delta":
            delta = max(draw(st.integers(-(1 << 16), 40).filter(lambda d: d != 0)), -len(body))
            declared = str(len(body) + delta)
            # a body longer than declared leaves its tail as the next request: refused unless
            # that tail begins one (a method and a space), which the rule cannot tell from one
            valid_length = False if delta > 0 or not _begins_a_request(body[delta:]) else None
        headers.append(("Content-Length", declared))
        if form in ("twice", "two"):
            headers.append(("Content-Length", declared if form == "twice" else declared + "0"))
        did(f"Content-Length {form or 'right'}", valid_length and form in ("", "zeros", "spaces"))
    elif framing == "chunked":
        body = _chunked(draw, body)
        headers.append(("Transfer-Encoding", draw(st.sampled_from(["chunked", "Chunked "]))))
        did("chunked", True)
    elif framing == "both":
        body = _chunked(draw, body)
        headers += [("Transfer-Encoding", "chunked"), ("Content-Length", str(len(body)))]
        did("chunked and a Content-Length", False)
    elif framing == "other":
        headers += [("Transfer-Encoding", draw(st.sampled_from(["gzip", "gzip, chunked", ""])))]
        did("another Transfer-Encoding", False)
    else:
        did("no length", False)

    for change in draw(st.lists(st.sampled_from(HEADER_CHANGES), max_size=2)):
        headers, still_valid = change(headers)
        did(change.__name__, still_valid)

    line = draw(_mostly(REQUEST_LINES[0], REQUEST_LINES[1:]))
    did(line, line in REQUEST_LINES[:2])
    lines = [line] + [f"{name}:{' ' if value else ''}{value}" for name, value in headers]
    data = "\r\n".join(lines).encode() + b"\r\n\r\n" + body

    after = draw(_mostly("", ["junk", "cut", "flipped"]))
    if after == "junk":  # a first byte that no method has
        first = draw(st.integers(0, 255).filter(lambda b: b not in _TOKEN_BYTES))
        data += bytes([first]) + draw(st.binary(max_size=8))
        did("junk after", False)
    elif after == "cut":
        data = data[: draw(positions) % len(data)]
        did("cut short", False)
    elif after == "flipped":
        data = _mutated(data, draw(edits))
        did("bytes flipped", None)
    return Case(data, valid, trace.hex(), tuple(made))


def _mostly(usual: str, others: list[str]) -> st.SearchStrategy[str]:
    """``usual`` half the time, else one of ``others``: valid requests stay common."""
    return st.one_of(st.just(usual), st.sampled_from(others))


def _chunked(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` in chunks of drawn sizes, with extensions and trailers sometimes."""
    drawn = draw(st.lists(positions, max_size=4))
    cuts = sorted({1 + at % max(len(body) - 1, 1) for at in drawn})
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    # a style for each piece there could be, drawn whatever the body's length: how many pieces
    # there are and how many are empty depend on it (a gzip body's length on the trace id), and
    # hypothesis must draw the same things to replay an example
    styles = [
        (draw(st.booleans()), draw(st.sampled_from([b"", b";a=b", b" ;x"])))
        for _ in range(len(drawn) + 1)
    ]
    out = b""
    for piece, (upper, extension) in zip(pieces, styles, strict=False):
        if not piece:
            continue
        size = (b"%X" if upper else b"%x") % len(piece)
        out += size + extension + b"\r\n" + piece + b"\r\n"
    return out + b"0\r\n" + draw(st.sampled_from([b"", b"X-Sum: 1\r\n"])) + b"\r\n"


def _begins_a_request(tail: bytes) -> bool:
    return re.match(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+ ", tail) is not None


def lowercased(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [(name.lower(), value) for name, value in headers], True


def a_note_twice(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [*headers, ("X-Note", "a"), ("X-Note", "a")], True


def no_content_type(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [(n, v) for n, v in headers if n.lower() != "content-type"], False


def text_plain(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [*no_content_type(headers)[0], ("Content-Type", "text/plain")], False


def a_space_before_the_colon(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [("X-Note ", "a"), *headers], False


def a_folded_line(headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    return [*headers, ("X-Note", "a\r\n b")], False


HEADER_CHANGES = [
    lowercased,
    a_note_twice,
    no_content_type,
    text_plain,
    a_space_before_the_colon,
    a_folded_line,
]
#: The first two are valid.
REQUEST_LINES = [
    "POST /v1/traces HTTP/1.1",
    "POST /v1/traces?x=1 HTTP/1.1",
    "POST /v1/logs HTTP/1.1",
    "GET /v1/traces HTTP/1.1",
    "POST /v1/traces HTTP/1.1 x",
]


def _check(serve: Serve, case: Case) -> None:
    before = _stored(serve.store_file)
    try:
        answer = _exchange(serve.port, case.data, timeout_s=10)
    except TimeoutError:
        pytest.fail(f"no answer and no close within 10 s: {case.made}")
    status = _first_status(answer)
    event(f"valid: {case.valid}, answered: {status}")
    errors = serve.errors.read_text()
    assert "Traceback" not in errors, (case.made, errors)
    assert serve.process.poll() is None, (case.made, errors)
    after = _stored(serve.store_file)
    if case.valid:
        assert status == 200, (case.made, answer[:300])
        assert after.get(case.trace_id) == 3, case.made
    elif case.valid is False:
        assert status != 200, (case.made, case.data[-200:])
    if status != 200:
        assert after == before, case.made


def _first_status(answer: bytes) -> int | None:
    """The status of the first response (None: none, or one without a status line)."""
    found = re.match(rb"HTTP/1\.[01] (\d{3}) ", answer)
    return int(found[1]) if found else None


@FAST
@given(case=cases())
def test_whatever_the_bytes_only_a_valid_request_is_stored(serve: Serve, case: Any) -> None:
    _check(serve, case)


@pytest.mark.fuzz
@SLOW
@given(case=cases())
def test_whatever_the_bytes_only_a_valid_request_is_stored_at_length(
    serve: Serve, case: Any
) -> None:
    _check(serve, case)
