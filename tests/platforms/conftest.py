"""A real Arize Phoenix and a real MLflow for the platform tests (`tests.platforms.phoenix_server`): ``phoenix serve``
from its own venv (``.phoenix-venv``, which ``.ci/run`` installs), on free loopback ports, with its
SQLite database in a temporary folder.

Starting it takes 20 to 40 seconds, so one server serves the whole session (``phoenix``); the server
with authentication on (``phoenix_auth``) starts only when a test asks for it. Without the venv the
tests skip with the reason; under CI (the ``CI`` variable set) they fail instead.

MLflow (``mlflow server`` from ``.mlflow-venv``, `tests.platforms.mlflow_server`) starts in about
ten seconds; one serves the session (``mlflow_server``), and `serve_mlflow` starts one of a test's
own (one the test stops half way).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.platforms import mlflow_server
from tests.platforms.mlflow_server import Mlflow, MlflowFailed
from tests.platforms.phoenix_server import MISSING, PHOENIX, Phoenix, PhoenixFailed, serve

# the secrets of the server with authentication on (Phoenix wants 32 characters, digits, lower case)
_SECRET = "agent-replay-test-secret-0123456789"
ADMIN_KEY = "agent-replay-test-admin-9876543210"


def _serve(folder: Path, extra: dict[str, str], key: str | None) -> Iterator[Phoenix]:
    if not PHOENIX.exists():
        if os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    try:
        with serve(folder, extra, key) as server:
            yield server
    except PhoenixFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """A Phoenix without authentication, for the whole session."""
    yield from _serve(tmp_path_factory.mktemp("phoenix"), {}, None)


@pytest.fixture(scope="session")
def phoenix_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """A Phoenix with authentication on; ``key`` (its admin secret) is a key it accepts."""
    extra = {
        "PHOENIX_ENABLE_AUTH": "true",
        "PHOENIX_SECRET": _SECRET,
        "PHOENIX_ADMIN_SECRET": ADMIN_KEY,
    }
    yield from _serve(tmp_path_factory.mktemp("phoenix-auth"), extra, ADMIN_KEY)


def serve_mlflow(folder: Path, password: str | None = None) -> Generator[Mlflow, None, None]:
    """A real ``mlflow server`` with its database in ``folder`` (``password``: with MLflow's
    basic-auth app on, its admin's password); the test skips without the venv (fails under
    CI)."""
    if not mlflow_server.MLFLOW.exists():
        if os.environ.get("CI"):
            pytest.fail(mlflow_server.MISSING)
        pytest.skip(mlflow_server.MISSING)
    try:
        with mlflow_server.serve(folder, password) as server:
            yield server
    except MlflowFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mlflow]:
    """An MLflow tracking server for the whole session."""
    yield from serve_mlflow(tmp_path_factory.mktemp("mlflow"))


@pytest.fixture(scope="session")
def mlflow_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mlflow]:
    """An MLflow tracking server with its basic-auth app on (started when a test asks for it)."""
    yield from serve_mlflow(tmp_path_factory.mktemp("mlflow-auth"), "agent-replay-Test-Pass-1234")
