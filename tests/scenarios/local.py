"""A stdlib HTTP server on a loopback port, serving from a daemon thread until it is stopped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    """``handler`` served at ``url`` (``http://127.0.0.1:PORT``, a free port) until `stop`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._http: ThreadingHTTPServer | None = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.owner = self  # type: ignore[attr-defined]  # what the handler reads its state from
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Shut the server down and close its port: a connection to ``url`` is refused from now."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
