"""The Collector's length-prefixed protobuf framing, recognised without loading protobuf.

Format sniffing runs for every file, including ones that turn out to be JSON, so it must not pay for
importing the protobuf runtime; this module reads only the framing: a 4-byte big-endian length, then
a message that opens the way an ``ExportTraceServiceRequest`` does.
"""

from __future__ import annotations

import struct

#: The length before each message of a stream.
PREFIX = struct.Struct(">I")
#: The longest first message a stream cut off inside it is believed to announce: text starts with
#: printable bytes, whose four read as a length of 512 MiB or more.
_CUT_OFF_MAX_LENGTH = 1 << 28
#: The tags a ResourceSpans opens with: resource (field 1), scope_spans (2), schema_url (3).
_RESOURCE_SPANS_TAGS = frozenset({0x0A, 0x12, 0x1A})


def is_length_prefixed(head: bytes, size: int) -> bool:
    """A Collector proto stream: a length, then a message starting with field 1 (0x0a).

    The first message must fit in the file's ``size``, or else the bytes after the prefix must read
    as the start of a request: then the stream is cut off inside its first message, and reading it
    says so. (A bare request starts with 0x0a, a length of 160 MiB or more: never taken for a
    cut-off stream.)
    """
    if len(head) < 5 or head[4] != 0x0A:
        return False
    (length,) = PREFIX.unpack_from(head)
    if 0 < length <= size - 4:
        return True
    plausible = 0 < length <= _CUT_OFF_MAX_LENGTH and head[0] != 0x0A
    return plausible and _starts_request(head[4:], length)


def _starts_request(data: bytes, length: int) -> bool:
    """Whether ``data``, the first bytes of a message of ``length`` bytes, reads as the start of an
    ``ExportTraceServiceRequest``: resource_spans fields (1) that fit in the message, each opening
    with a field of ``ResourceSpans``."""
    data = data[:length]
    position = 0
    while position < len(data):
        if data[position] != 0x0A:
            return False
        size, position = _varint(data, position + 1)
        if size is None:
            return True  # the data ends inside the length
        if position + size > length or (
            size and position < len(data) and data[position] not in _RESOURCE_SPANS_TAGS
        ):
            return False
        position += size
    return True


def _varint(data: bytes, position: int) -> tuple[int | None, int]:
    """The base-128 varint at ``position`` and the position after it; ``None`` if ``data`` ends first."""
    value = shift = 0
    while position < len(data):
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return None, position
