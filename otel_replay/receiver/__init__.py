"""The OTLP/HTTP receiver: ``agent-replay serve`` (`otel_replay.receiver._http.Receiver`), spans into
the store as they arrive. Private to the package: ``agent-replay serve`` is its interface."""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.receiver._http import Receiver as Receiver

__all__: list[str] = []

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "Receiver",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
