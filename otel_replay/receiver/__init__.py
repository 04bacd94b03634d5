"""The OTLP/HTTP receiver: ``agent-replay serve`` (`Receiver`), spans into the store as they arrive."""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.receiver._http import DEFAULT_FLUSH_AFTER, DEFAULT_MAX_BODY_BYTES, Receiver
    from otel_replay.receiver._intake import Stored

__all__ = ["DEFAULT_FLUSH_AFTER", "DEFAULT_MAX_BODY_BYTES", "Receiver", "Stored"]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
