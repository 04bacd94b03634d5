"""The shop's order service: ``GET /orders/ID`` answers the order as JSON, or 503 while it is down."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scenarios.local import LocalServer

ORDERS = {
    "A-1001": {"order_id": "A-1001", "item": "electric kettle", "status": "delivered"},
}


class OrderService(LocalServer):
    """The service, up until a test sets ``down``; ``requests`` counts the lookups it was asked."""

    def __init__(self) -> None:
        self.down = False
        self.requests = 0
        super().__init__(_Handler)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        service: OrderService = self.server.owner  # type: ignore[attr-defined]
        service.requests += 1
        order = ORDERS.get(self.path.removeprefix("/orders/"))
        if service.down:
            self._send(503, {"error": "service unavailable"})
        elif order is None:
            self._send(404, {"error": "no such order"})
        else:
            self._send(200, order)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass
