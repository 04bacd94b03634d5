"""A pytest plugin (entry point ``pytest11``): agent runs as cassettes, in the manner of vcrpy.

A test marked ``@pytest.mark.agent_replay(cassette="support.jsonl")`` and taking the ``agent_replay``
fixture runs its agent through it: ``agent_replay.run(agent, question=...)`` records the run into the
cassette (native JSONL, beside the test in ``cassettes/`` unless the path says otherwise) the first
time and replays it from there after, with no network. Modes, from the marker's ``mode=`` or the
command line's ``--agent-replay-mode`` (which wins):

* ``once`` (the default): record when there is no cassette, else replay; a call the cassette does
  not hold fails the test, naming it;
* ``none``: replay only; no cassette fails the test;
* ``new_episodes``: replay; a call the cassette does not hold runs live, and the cassette is
  rewritten with the run as it went;
* ``all``: record again, always.

``instrument=("openai",)`` on the marker instruments those SDKs first (`otel_replay.instrument`).
The plugin loads nothing of agent-replay until a marked test runs.

A cassette is one run, written whole or not at all (`otel_replay._files.output_file`: a test killed
while it records leaves the cassette it had). One that holds no run, more than one, or lines that
do not read fails the test saying so; so does one whose steps no longer match the hashes they were
recorded with (edited by hand: what it would serve is not what was recorded), which is re-recorded
with ``--agent-replay-mode all``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from otel_replay.model import Trajectory

MODES = ("once", "none", "new_episodes", "all")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("agent-replay").addoption(
        "--agent-replay-mode",
        choices=MODES,
        default=None,
        help="Record or replay agent cassettes: once (default), none, new_episodes, all.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_replay(cassette=None, mode='once', instrument=()): record the agent run the first "
        "time and replay it after (the agent_replay fixture)",
    )


class Cassette:
    """One test's recorded agent run: `run` records it or replays it, as the mode says."""

    def __init__(self, path: Path, mode: str, instrument: tuple[str, ...]) -> None:
        if mode not in MODES:
            raise pytest.UsageError(f"agent_replay mode {mode!r}: use one of {', '.join(MODES)}")
        self.path = path
        self.mode = mode
        self.instrument = instrument
        self.recorded = False  # whether the last `run` recorded rather than replayed

    def run(self, agent: Any, **arguments: Any) -> Any:
        """Run ``agent`` with ``arguments`` (recorded, or served from the cassette); its answer."""
        from otel_replay.replay import instrument, record, replay

        if self.instrument:
            instrument(*self.instrument)
        given = arguments or None
        if self.mode == "all" or (not self.path.exists() and self.mode != "none"):
            recording = record(agent, arguments=given)
            self._write(recording.trajectory)
            self.recorded = True
            if recording.error is not None:
                raise AssertionError(f"the agent raised {recording.error} (recorded)")
            return recording.answer
        if not self.path.exists():
            pytest.fail(
                f"no cassette {self.path} (mode none): record it with --agent-replay-mode once"
            )
        run = self._read()
        if run.metadata.get("input") != given:
            pytest.fail(
                f"cassette {self.path} was recorded with other arguments "
                f"({run.metadata.get('input')!r}); re-record it with --agent-replay-mode all"
            )
        on_miss = "resample" if self.mode == "new_episodes" else "error"
        result = replay(run, agent, on_miss=on_miss)
        self.recorded = False
        if result.nondeterminism is not None:
            pytest.fail(f"cassette {self.path}: {result.nondeterminism}")
        if on_miss == "resample" and not result.identical:
            self._write(result.trajectory)
        return result.answer

    def _read(self) -> Trajectory:
        """The cassette's one run; anything else fails the test, saying what the cassette holds."""
        from otel_replay.errors import EditedContentError, TraceFormatError
        from otel_replay.importers import ReadOptions
        from otel_replay.importers.jsonl import read_jsonl

        try:
            runs = list(read_jsonl(self.path, ReadOptions(strict=True)))
        except EditedContentError as exc:  # replayed, it would serve what was never recorded
            pytest.fail(
                f"cassette {exc}; a cassette replays only what was recorded: re-record it "
                "with --agent-replay-mode all",
                pytrace=False,
            )
        except TraceFormatError as exc:
            pytest.fail(f"cassette {exc}", pytrace=False)
        except OSError as exc:
            pytest.fail(f"cassette {self.path} cannot be read: {exc.strerror}", pytrace=False)
        if len(runs) == 1:
            return runs[0]
        if not runs:
            pytest.fail(
                f"cassette {self.path} holds no run: record it with --agent-replay-mode all",
                pytrace=False,
            )
        ids = ", ".join(repr(run.id) for run in runs[:5]) + (", ..." if len(runs) > 5 else "")
        pytest.fail(
            f"cassette {self.path} holds {len(runs)} runs (ids {ids}); a cassette is one run: "
            "re-record it with --agent-replay-mode all",
            pytrace=False,
        )

    def _write(self, trajectory: Trajectory) -> None:
        """The cassette written whole, or (writing failing) left as it was."""
        from otel_replay._files import output_file
        from otel_replay.export import write_jsonl

        try:
            with output_file(self.path) as out:
                write_jsonl([trajectory], out)
        except OSError as exc:
            pytest.fail(
                f"cassette {self.path} cannot be written ({exc.strerror or exc}); "
                "the cassette is left as it was",
                pytrace=False,
            )


@pytest.fixture
def agent_replay(request: pytest.FixtureRequest) -> Cassette:
    """The cassette of the test (see the module docstring)."""
    marker = request.node.get_closest_marker("agent_replay")
    options = dict(marker.kwargs) if marker is not None else {}
    folder = Path(request.node.path).parent
    name = options.get("cassette") or f"{request.node.name}.jsonl"
    path = Path(name) if Path(name).is_absolute() else folder / "cassettes" / name
    mode = request.config.getoption("--agent-replay-mode") or options.get("mode", "once")
    return Cassette(path, str(mode), tuple(options.get("instrument", ())))
