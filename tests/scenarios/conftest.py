"""The scenario's world, started fresh for each test: the order service, the model servers, and
each support agent in turn; instrumentation is undone after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from examples.fake_model_server import FakeModelServer, shop
from otel_replay.replay import uninstrument
from tests.scenarios.order_service import OrderService
from tests.scenarios.runs import AGENTS, Agent


@pytest.fixture(autouse=True)
def _uninstrumented() -> Iterator[None]:
    try:
        yield
    finally:
        uninstrument()


@pytest.fixture
def orders(monkeypatch: pytest.MonkeyPatch) -> Iterator[OrderService]:
    service = OrderService()
    monkeypatch.setenv("ORDER_SERVICE_URL", service.url)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture
def models() -> Iterator[FakeModelServer]:
    with FakeModelServer(shop) as server:
        yield server


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest) -> Agent:
    return AGENTS[request.param]
