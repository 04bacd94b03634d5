"""``agent-replay ui``: a read-only local viewer over the store, in the browser.

`Viewer` serves the run list (a page at a time, filtered, searched and ordered by the store), each run's timeline as the
HTML report draws it, the attribution reports stored for it, and two runs compared at their first
divergence; the pages are `otel_replay.report`'s, served by the standard library's HTTP server.
`answer` is what the server answers a ``GET``, for callers that bring their own server (both in
`otel_replay.viewer._server`; private to the package: ``agent-replay ui`` is its interface).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.viewer._server import Viewer as Viewer

__all__: list[str] = []

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "Viewer",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
