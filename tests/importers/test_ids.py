"""Trace and span ids in every spelling producers use: hex, ``0x``-hex, UUID, base64.

Found by CI: protobuf's generic JSON printer wrote a trace id whose base64 began with ``0X``; the
reader took that for a hex prefix, stripped it and refused the rest (about 1 trace in 2,000).
"""

from __future__ import annotations

import base64
import random
import uuid

import pytest

from otel_replay import TraceFormatError
from otel_replay.importers._spans import normalize_id


def test_base64_that_begins_like_a_hex_prefix_is_base64() -> None:
    assert normalize_id("0XHC06l8L19VnYMEtAU1BA==", 16, "traceId") == (
        "d171c2d3a97c2f5f559d8304b4053504"
    )


@pytest.mark.parametrize("n_bytes", [16, 8])
def test_every_spelling_of_many_ids_reads_back(n_bytes: int) -> None:
    rng = random.Random(0)
    for _ in range(20_000):
        raw = rng.randbytes(n_bytes)
        spellings = [raw.hex(), raw.hex().upper(), "0x" + raw.hex(), base64.b64encode(raw).decode()]
        if n_bytes == 16:
            spellings.append(str(uuid.UUID(bytes=raw)))
        for spelling in spellings:
            assert normalize_id(spelling, n_bytes, "id") in (raw.hex(), ""), spelling


def test_an_id_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(TraceFormatError, match="neither 32 hex digits nor base64 of 16 bytes"):
        normalize_id("0xabc", 16, "traceId")
