"""Shared fixtures: the published trace corpus beside the project, the bundled samples, a CLI runner,
the documentation's pages started with the session (`documentation_pages`); and the tiers: plain
``pytest`` runs the fast one and skips the slow ones (`SLOW_TIERS`), saying ``--all`` runs them;
``pytest --all`` (what ``.ci/run`` runs) or any ``-m`` runs what it names."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

pytest_plugins = ["tests.browser", "pytester"]  # `browser`, `browser_page`; `pytester`

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "trace-corpus"
SAMPLES = ROOT / "sample_traces"

#: The slow tiers, each a marker (declared in pyproject.toml): plain ``pytest`` skips them.
SLOW_TIERS = ("statistical", "fuzz", "scale", "platform", "browser", "scenario")
#: A test that asks for one of these fixtures (or for one that does) starts a real platform server.
PLATFORM_FIXTURES = frozenset({"phoenix", "phoenix_auth", "mlflow", "mlflow_auth"})
#: A test that asks for one of these drives a real Chromium.
BROWSER_FIXTURES = frozenset({"browser", "browser_page"})
#: Every test here runs whole agents on real SDKs, end to end.
SCENARIOS = ROOT / "tests" / "scenarios"
#: The test of one documentation page (`tests/test_docs_commands.py`), started with the session.
_EVERY_COMMAND = "test_every_command_of_the_page_runs_as_documented"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help=f"run every tier, the slow ones too ({', '.join(SLOW_TIERS)}); CI does",
    )


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that start a platform server or a browser by the fixtures they ask for, and
    those of `SCENARIOS`; skip every slow tier's test unless ``--all`` or a ``-m`` expression says
    which to run."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & PLATFORM_FIXTURES:
            item.add_marker(pytest.mark.platform)
        if names & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if SCENARIOS in item.path.parents:
            item.add_marker(pytest.mark.scenario)
    if config.getoption("--all") or config.getoption("markexpr"):
        return
    for item in items:
        tiers = [tier for tier in SLOW_TIERS if item.get_closest_marker(tier)]
        if tiers:
            reason = f"slow tier ({', '.join(tiers)}): pytest --all runs it, or -m {tiers[0]}"
            item.add_marker(pytest.mark.skip(reason=reason))


def big_native_run(tmp_path: Path, size: int) -> Path:
    """A native JSONL file with one run (``big-run``) whose first step's output is ``size`` bytes of
    text: varied, so no filesystem that compresses makes it small."""
    record = orjson.loads((SAMPLES / "incident.steps.jsonl").read_bytes().splitlines()[0])
    record["trajectory_id"] = "big-run"
    record["steps"][0]["output"] = {"content": os.urandom(size // 2).hex()}
    path = tmp_path / "big.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n")
    return path


def proto_frames(path: Path) -> list[bytes]:
    """A Collector ``format: proto`` stream split into its frames, length prefixes included."""
    data = path.read_bytes()
    frames, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from(">I", data, offset)
        frames.append(data[offset : offset + 4 + length])
        offset += 4 + length
    return frames


def requires_ray() -> None:
    """Skip the module without Ray (the ``ray`` extra), with the reason; under CI, fail."""
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is missing under CI: .ci/run installs the test extra, which has it")
        pytest.skip(
            "the ray extra is not installed (pip install 'otel-replay[ray]')",
            allow_module_level=True,
        )


@pytest.fixture(scope="session", autouse=True)
def documentation_pages(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[Path, Future[list[str]]]]:
    """The documentation's pages the session runs (`tests/test_docs_commands.py`), started as the
    session starts, each page's failures when it is done. A page's commands are processes of their
    own, each page in its own folder with its servers on free ports, so they run on the machine's
    other cores while the rest of the suite runs on one; each page's test waits for its page."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    pool = ThreadPoolExecutor(max_workers=max(1, (cores or 1) - 1), thread_name_prefix="page")
    started: dict[Path, Future[list[str]]] = {}
    for item in request.session.items:
        if isinstance(item, pytest.Function) and item.originalname == _EVERY_COMMAND:
            path, folder = item.callspec.params["path"], tmp_path_factory.mktemp("page")
            started[path] = pool.submit(item.module.run_one_page, path, folder)
    yield started
    pool.shutdown(wait=True, cancel_futures=True)  # those not started (after -x stopped it)


@pytest.fixture
def corpus() -> Path:
    """``../shared/trace-corpus``: required in CI, skipped with a reason elsewhere."""
    if not CORPUS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(
                f"trace corpus missing at {CORPUS} (CI must have ../shared beside the clone)"
            )
        pytest.skip(f"trace corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
