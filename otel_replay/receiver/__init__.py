"""The OTLP/HTTP receiver: ``agent-replay serve`` (`otel_replay.receiver._http.Receiver`), spans into
the store as they arrive. Private to the package: ``agent-replay serve`` is its interface."""

from __future__ import annotations

__all__: list[str] = []
