"""The pytest plugin's cassettes, through real pytest runs (``pytester``): a cassette that is not
one run, or whose content was edited after it was recorded, fails the test saying so (never an
internal error); a cassette is written whole or not at all.

The agent is written against the context API and needs no server: its one tool call returns
``CASSETTE_OUTPUT_BYTES`` bytes of text (16 unless told)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

CASSETTE_TEST = """
import os
import resource

import pytest


def agent(ctx, question):
    size = int(os.environ.get("CASSETTE_OUTPUT_BYTES", "16"))
    found = ctx.tool("lookup", produce=lambda: "x" * size, question=question)
    return f"{question}: {found[:8]}"


@pytest.mark.agent_replay(cassette="run.jsonl")
def test_agent(agent_replay):
    limit = os.environ.get("CASSETTE_FSIZE_LIMIT")
    if limit:  # the disk (as this process sees it) fills while the cassette is written
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), resource.RLIM_INFINITY))
    assert agent_replay.run(agent, question="where")
    print("recorded" if agent_replay.recorded else "replayed")
"""


@pytest.fixture
def cassette(pytester: pytest.Pytester) -> Path:
    """The test file written; its cassette's path (not recorded yet)."""
    pytester.makepyfile(test_cassette=CASSETTE_TEST)
    return pytester.path / "cassettes" / "run.jsonl"


def _run(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    # in process: otel_replay is already imported, so pytest cannot rewrite its asserts (and says so)
    quiet = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
    return pytester.runpytest("-s", "-p", "no:cacheprovider", *quiet, *options)


def _failed_with(result: pytest.RunResult, message: str) -> None:
    """The test failed (not errored, no internal error) and its failure says ``message``."""
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and "ValueError" not in output, output
    assert message in " ".join(output.split()), output


def _recorded(pytester: pytest.Pytester, cassette: Path) -> list[dict[str, object]]:
    _run(pytester).assert_outcomes(passed=1)
    return [orjson.loads(line) for line in cassette.read_bytes().splitlines()]


def test_an_unedited_cassette_replays(pytester: pytest.Pytester, cassette: Path) -> None:
    _recorded(pytester, cassette)
    again = _run(pytester)
    again.assert_outcomes(passed=1)
    assert "replayed" in again.stdout.str()


def test_an_empty_cassette_holds_no_run(pytester: pytest.Pytester, cassette: Path) -> None:
    cassette.parent.mkdir()
    cassette.write_bytes(b"")
    _failed_with(
        _run(pytester), f"cassette {cassette} holds no run: record it with --agent-replay-mode all"
    )


def test_a_cassette_of_two_runs_is_refused(pytester: pytest.Pytester, cassette: Path) -> None:
    (run,) = _recorded(pytester, cassette)
    other = {**run, "trajectory_id": "other-run"}
    cassette.write_bytes(orjson.dumps(run) + b"\n" + orjson.dumps(other) + b"\n")
    _failed_with(
        _run(pytester),
        f"cassette {cassette} holds 2 runs (ids {run['trajectory_id']!r}, 'other-run'); a "
        "cassette is one run",
    )


def test_a_cassette_that_is_not_jsonl_names_its_line(
    pytester: pytest.Pytester, cassette: Path
) -> None:
    (run,) = _recorded(pytester, cassette)
    cassette.write_bytes(orjson.dumps(run) + b"\n" + b"\x00\x17 not json\n")
    _failed_with(_run(pytester), f"cassette {cassette}:2: malformed JSON")


def test_an_edited_cassette_is_refused_naming_the_step(
    pytester: pytest.Pytester, cassette: Path
) -> None:
    (run,) = _recorded(pytester, cassette)
    run["steps"][0]["output"] = "tampered"  # type: ignore[index]  # the agent still passes on it
    cassette.write_bytes(orjson.dumps(run) + b"\n")
    _failed_with(
        _run(pytester),
        f"cassette {cassette}:1: run {run['trajectory_id']!r}: step 0 'lookup' no longer matches "
        "its stored hash: its content was edited after export; a cassette replays only what was "
        "recorded: re-record it with --agent-replay-mode all",
    )
    _run(pytester, "--agent-replay-mode", "all").assert_outcomes(passed=1)  # re-recorded
    _run(pytester).assert_outcomes(passed=1)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_cassette_that_cannot_be_written_whole_is_left_as_it_was(
    pytester: pytest.Pytester, cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded(pytester, cassette)
    kept = cassette.read_bytes()
    # re-recorded, the run is 2 MB; the process may write files of 1 MB at most (a real EFBIG
    # half way through the write, in a pytest process of its own: the limit is per process)
    monkeypatch.setenv("CASSETTE_OUTPUT_BYTES", str(2 << 20))
    monkeypatch.setenv("CASSETTE_FSIZE_LIMIT", str(1 << 20))
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--agent-replay-mode", "all")
    _failed_with(
        failed, f"cassette {cassette} cannot be written (File too large); the cassette is left"
    )
    assert cassette.read_bytes() == kept
    assert [p.name for p in cassette.parent.iterdir()] == ["run.jsonl"]  # no temporary left
    monkeypatch.delenv("CASSETTE_OUTPUT_BYTES")
    monkeypatch.delenv("CASSETTE_FSIZE_LIMIT")
    again = _run(pytester)
    again.assert_outcomes(passed=1)
    assert "replayed" in again.stdout.str()
