"""Bounded memory against hostile input (issue 11): no record past ``max_record_bytes`` is held, a
gzip file is streamed however far it inflates, and a protobuf stream cut off inside its first message
says it is cut off (issue 16).

The bombs are multi-member gzip files (what ``cat a.gz b.gz`` makes; RFC 1952 allows it): one member
of 1 MiB of filler is compressed once and written again and again, so a file that inflates to 128 MiB
costs the test about 130 kB and no time. Memory is measured with `tracemalloc`: a record read whole
would be one ``bytes`` object of the inflated size, which it counts.
"""

from __future__ import annotations

import gzip
import struct
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from otel_replay import ReadOptions, TraceFormatError, read_path
from otel_replay.importers import otlp_json
from otel_replay.importers._source import LongLine, first_line
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.importers.otlp_json import read_otlp_json
from otel_replay.importers.otlp_proto import read_otlp_proto
from tests.conftest import SAMPLES, proto_frames

MIB = 1 << 20
BOMB_MIB = 128
LIMIT = MIB
#: What reading a bomb may hold at its peak, against the 128 MiB a bomb inflates to: the limit, a copy
#: while a line is joined, buffers.
PEAK_BOUND = 8 * MIB

OTLP_JSONL = SAMPLES / "incident.otlp.jsonl"
OTLP_STREAM = SAMPLES / "incident.otlp.pb"


def _gzip_bomb(path: Path, before: bytes, after: bytes, filler: bytes = b"x") -> Path:
    """A gzip file inflating to ``before``, `BOMB_MIB` MiB of ``filler``, then ``after``."""
    member = gzip.compress(filler * MIB, mtime=0)
    with open(path, "wb") as out:
        out.write(gzip.compress(before, mtime=0))
        for _ in range(BOMB_MIB):
            out.write(member)
        out.write(gzip.compress(after, mtime=0))
    assert path.stat().st_size < MIB
    return path


@contextmanager
def _peak() -> Iterator[list[int]]:
    """Yield a list that holds, once the block is done, the peak of traced memory during it."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    found: list[int] = []
    try:
        yield found
    finally:
        found.append(tracemalloc.get_traced_memory()[1] - start)
        if not tracing:
            tracemalloc.stop()


def _hashes(path: Path) -> dict[str, str]:
    return {t.id: t.final_hash for t in read_path(path)}


def _frames() -> list[bytes]:
    return proto_frames(OTLP_STREAM)


# --- gzip bombs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("skip_invalid", [False, True], ids=["refused", "skipped"])
def test_a_jsonl_line_that_inflates_to_128_mib_is_never_held(
    tmp_path: Path, skip_invalid: bool
) -> None:
    first, *rest = OTLP_JSONL.read_bytes().splitlines(keepends=True)
    bomb = _gzip_bomb(
        tmp_path / "bomb.otlp.jsonl.gz",
        first + b'{"resourceSpans": [], "padding": "',
        b'"}\n' + b"".join(rest),
    )
    options = ReadOptions(skip_invalid=skip_invalid, max_record_bytes=LIMIT)

    with _peak() as peak:
        if skip_invalid:
            runs = list(read_path(bomb, options=options))
        else:
            with pytest.raises(TraceFormatError) as caught:
                list(read_path(bomb, options=options))

    assert peak[0] < PEAK_BOUND, f"peak {peak[0] / MIB:.0f} MiB for a {BOMB_MIB} MiB line"
    expected = f"{bomb}:2: record larger than --max-record-bytes {LIMIT} (a JSON line)"
    if skip_invalid:
        assert {t.id: t.final_hash for t in runs} == _hashes(OTLP_JSONL)
        assert [str(e) for e in options.report.skipped] == [f"{expected}; a larger limit reads it"]
    else:
        assert str(caught.value).startswith(expected)


def test_a_document_that_inflates_to_128_mib_is_never_held(tmp_path: Path) -> None:
    bomb = _gzip_bomb(
        tmp_path / "bomb.json.gz", b'{\n  "resourceSpans": [],\n  "padding": "', b'"\n}\n'
    )
    # skipping cannot step over the one record a document is: the file is refused either way
    options = ReadOptions(skip_invalid=True, max_record_bytes=LIMIT)

    with _peak() as peak, pytest.raises(TraceFormatError) as caught:
        list(read_path(bomb, options=options))

    assert peak[0] < PEAK_BOUND, f"peak {peak[0] / MIB:.0f} MiB for a {BOMB_MIB} MiB document"
    assert str(caught.value).startswith(
        f"{bomb}: record larger than --max-record-bytes {LIMIT} (a JSON document)"
    )


@pytest.mark.parametrize("skip_invalid", [False, True], ids=["refused", "skipped"])
def test_a_protobuf_message_announcing_128_mib_is_never_held(
    tmp_path: Path, skip_invalid: bool
) -> None:
    first, *rest = _frames()
    declared = BOMB_MIB * MIB
    bomb = _gzip_bomb(
        tmp_path / "bomb.pb.gz",
        first + struct.pack(">I", declared),
        b"".join(rest),
        filler=b"\x00",
    )
    options = ReadOptions(skip_invalid=skip_invalid, max_record_bytes=LIMIT)

    with _peak() as peak:
        if skip_invalid:
            runs = list(read_path(bomb, options=options))
        else:
            with pytest.raises(TraceFormatError) as caught:
                list(read_path(bomb, options=options))

    assert peak[0] < PEAK_BOUND, f"peak {peak[0] / MIB:.0f} MiB for a {BOMB_MIB} MiB message"
    expected = (
        f"{bomb} (byte {len(first)}): record larger than --max-record-bytes {LIMIT} "
        f"(a protobuf message of {declared} bytes)"
    )
    if skip_invalid:
        assert {t.id: t.final_hash for t in runs} == _hashes(OTLP_STREAM)
        (skipped,) = options.report.skipped
        assert str(skipped).startswith(expected)
    else:
        assert str(caught.value).startswith(expected)


def test_sniffing_a_bomb_holds_no_more_than_the_limit(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.jsonl.gz", b'{"trajectory_id": "', b'"}\n')
    with _peak() as peak:
        line = first_line(bomb, LIMIT)
    assert isinstance(line, LongLine) and line.head.startswith(b'{"trajectory_id": "xxx')
    assert peak[0] < PEAK_BOUND


def test_a_gzip_file_is_read_in_two_passes_whatever_its_size(tmp_path: Path) -> None:
    """A trace is handed over right after its last line, not after the file: a small gzip file may
    inflate to any size, so its size on disk cannot say it is safe to hold."""
    packed = tmp_path / "incident.otlp.jsonl.gz"
    packed.write_bytes(gzip.compress(OTLP_JSONL.read_bytes(), mtime=0))
    assert packed.stat().st_size < otlp_json.TWO_PASS_THRESHOLD_BYTES
    options = ReadOptions()

    reader = read_path(packed, options=options)
    first = next(reader)
    read_when_first_came = options.report.records
    runs = [first, *reader]

    assert (
        read_when_first_came < options.report.records == len(OTLP_JSONL.read_bytes().splitlines())
    )
    assert {t.id: t.final_hash for t in runs} == _hashes(OTLP_JSONL)


def test_a_gzip_protobuf_stream_is_read_in_two_passes(tmp_path: Path) -> None:
    packed = tmp_path / "incident.otlp.pb.gz"
    packed.write_bytes(gzip.compress(OTLP_STREAM.read_bytes(), mtime=0))
    options = ReadOptions()

    reader = read_path(packed, options=options)
    first = next(reader)
    read_when_first_came = options.report.records
    runs = [first, *reader]

    assert read_when_first_came < options.report.records == len(_frames())
    assert {t.id: t.final_hash for t in runs} == _hashes(OTLP_STREAM)


# --- the limit, exactly ----------------------------------------------------------------------------


def _native_line(size: int) -> bytes:
    """A native step line of exactly ``size`` bytes (newline not counted)."""
    line = orjson.dumps({"trajectory_id": "t", "kind": "tool", "name": ""})
    return line.replace(b'"name":""', b'"name":"' + b"n" * (size - len(line)) + b'"')


def test_a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    path.write_bytes(_native_line(4096) + b"\n")
    (run,) = read_jsonl(path, ReadOptions(max_record_bytes=4096))
    assert len(run.steps[0].name) > 4000
    with pytest.raises(TraceFormatError, match=r"steps.jsonl:1: record larger than .* 4095 \("):
        list(read_jsonl(path, ReadOptions(max_record_bytes=4095)))


def test_a_native_file_whose_first_line_is_too_long_is_still_native(tmp_path: Path) -> None:
    """The sniffer never holds the long first line: its first key says it is native JSONL."""
    path = tmp_path / "steps.jsonl"
    path.write_bytes(
        _native_line(10_000) + b"\n" + _native_line(100).replace(b'"t"', b'"u"') + b"\n"
    )
    options = ReadOptions(skip_invalid=True, max_record_bytes=4096)
    (run,) = read_path(path, options=options)
    assert run.id == "u"
    (skipped,) = options.report.skipped
    assert str(skipped).startswith(f"{path}:1: record larger than --max-record-bytes 4096")


def test_a_document_of_exactly_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    document = orjson.dumps(
        orjson.loads(OTLP_JSONL.read_bytes().splitlines()[0]), option=orjson.OPT_INDENT_2
    )
    path = tmp_path / "trace.json"
    path.write_bytes(document)
    assert list(read_otlp_json(path, ReadOptions(max_record_bytes=len(document))))
    with pytest.raises(TraceFormatError, match=r"\(a JSON document\)"):
        list(read_otlp_json(path, ReadOptions(max_record_bytes=len(document) - 1)))


def test_a_bare_protobuf_request_over_the_limit_is_refused_even_when_skipping(
    tmp_path: Path,
) -> None:
    body = _frames()[0][4:]
    path = tmp_path / "request.pb"
    path.write_bytes(body)
    assert list(read_otlp_proto(path, ReadOptions(max_record_bytes=len(body))))
    options = ReadOptions(skip_invalid=True, max_record_bytes=len(body) - 1)
    with pytest.raises(
        TraceFormatError, match=r"\(byte 0\): record larger .* \(a protobuf request\)"
    ):
        list(read_otlp_proto(path, options))


@pytest.mark.parametrize("limit", [0, -1, (1 << 40) + 1])
def test_a_limit_must_be_a_positive_size(limit: int) -> None:
    with pytest.raises(ValueError, match="max_record_bytes"):
        ReadOptions(max_record_bytes=limit)


# --- a protobuf stream cut off inside its first message (issue 16) --------------------------------


@pytest.mark.parametrize("kept", [5, 6, 64, "all-but-one"])
@pytest.mark.parametrize("format", ["auto", "otlp-proto"])
def test_a_stream_cut_off_inside_its_first_message_says_so(
    tmp_path: Path, kept: int | str, format: str
) -> None:
    first = _frames()[0]
    declared = len(first) - 4
    size = len(first) - 1 if kept == "all-but-one" else int(kept)
    path = tmp_path / "cut.pb"
    path.write_bytes(OTLP_STREAM.read_bytes()[:size])

    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path, format))

    assert str(caught.value) == (
        f"{path} (byte 0): protobuf data is cut off: a message of {declared} bytes ends after "
        f"{size - 4} bytes"
    )


def test_text_that_could_pass_for_a_length_is_still_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"abcd\nx\nmore notes\n")  # a "length", then 0x0a, as a stream would start
    with pytest.raises(TraceFormatError, match="not a trace file"):
        list(read_path(path))
