"""Trajectories out as native JSONL: one `Trajectory.to_record` per line; as OTLP traces
(`write_otlp`: one ``ExportTraceServiceRequest`` per run, `otel_replay.otlp_trace.run_request`);
and a recorded run as a pytest regression test (`pytest_module`).

The record is what `otel_replay.importers.read_jsonl` reads back; a round trip keeps every step hash.
An OTLP export imports back to the same content (`Trajectory.identity`), its runs' steps as they
were stored.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import orjson

from otel_replay.errors import TooLargeError, UnreplayableError
from otel_replay.model import StepKind, Trajectory

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from otel_replay.store import Store

__all__ = ["agent_for_test", "check_testable", "pytest_module", "write_jsonl", "write_otlp"]

#: The metadata naming the run a made run came from (a fork, a resumed run, a kept rollout).
SOURCE_KEYS = ("forked_from", "resumed_from", "rollout_of")

#: What marks a project's root folder: a test names its agent by its path from there.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def write_jsonl(trajectories: Iterable[Trajectory], out: IO[bytes]) -> int:
    """Write one JSON line per trajectory (keys in recorded order); return how many were written."""
    count = 0
    for trajectory in trajectories:
        out.write(orjson.dumps(trajectory.to_record()))
        out.write(b"\n")
        count += 1
    return count


class Written(NamedTuple):
    """What `write_otlp` wrote: how many ``runs``, and how many of them ``with_report``."""

    runs: int
    with_report: int


def write_otlp(
    db: Store, ids: Sequence[str], out: Path, *, proto: bool, verdicts: bool = False
) -> Written:
    """Write the runs ``ids`` of ``db`` to ``out`` as OTLP, a trace each: JSON Lines (one
    ``ExportTraceServiceRequest`` a line, the Collector file exporter's ``format: json``) or, with
    ``proto``, length-prefixed protobuf (its ``format: proto``). A fork, resumed run or rollout
    whose source is in ``db`` links to it; with ``verdicts`` each run's newest kept attribution
    report is written on its spans. The file is whole or untouched. Returns how many runs were
    written and how many of them had a report."""
    from otel_replay.otlp_encode import write_otlp_json_lines, write_otlp_proto_stream

    counted = [0, 0]
    requests = _requests(db, ids, verdicts, counted, _MAX_FRAME if proto else None)
    try:
        if proto:
            write_otlp_proto_stream(requests, out)
        else:
            write_otlp_json_lines(requests, out)
    except _TooBig as exc:
        raise TooLargeError(
            f"run {exc.run_id} is {exc.size} bytes of protobuf, more than the 4-byte length "
            "before each request can say (OTLP JSON Lines have no such limit)"
        ) from None
    return Written(counted[0], counted[1])


class _TooBig(ValueError):
    def __init__(self, run_id: str, size: int) -> None:
        super().__init__(run_id)
        self.run_id, self.size = run_id, size


#: The largest request a length prefix of 4 bytes can say (the Collector's ``format: proto``).
_MAX_FRAME = 0xFFFFFFFF


def _requests(
    db: Store, ids: Sequence[str], verdicts: bool, counted: list[int], limit: int | None
) -> Iterator[ExportTraceServiceRequest]:
    from otel_replay.otlp_trace import run_request

    for run_id in ids:
        run = db.get(run_id)
        report = None
        if verdicts:
            kept = db.reports(run.id)
            report = kept[0]["report"] if kept else None
        request = run_request(run, source=_source(db, run), report=report)
        if limit is not None and (size := request.ByteSize()) > limit:
            raise _TooBig(run.id, size)
        counted[0] += 1
        counted[1] += report is not None
        yield request


def _source(db: Store, run: Trajectory) -> Trajectory | None:
    """The run ``run`` was made from, when ``db`` holds it."""
    for key in SOURCE_KEYS:
        named: Any = run.metadata.get(key)
        if isinstance(named, str) and named != run.id and db.summary(named) is not None:
            return db.get(named)
    return None


def check_testable(run: Trajectory, agent: str, function: object = None) -> None:
    """Raise `UnreplayableError` at once when ``run`` cannot become a test that replays ``agent``
    (``function``: the agent itself, when loaded): a run imported from a trace was not made by
    running an agent. Unless the agent is written against agent-replay's context and needs no
    argument (its steps are what its own trace records, and it is called with none), its model
    calls hold what the instrumentation captured (the conversation, and whatever parameters it
    saw: LangChain's own settings, never the request the SDK sends), which a replay cannot match
    the agent's calls against, and the trace does not hold the arguments it was called with."""
    if "input" in run.metadata:  # recorded by running an agent (record, fork, resume)
        return
    if function is not None and _context_alone(function):
        return
    origin = str(run.metadata.get("format") or "unknown format")
    models = sum(1 for step in run.steps if step.kind is StepKind.LLM)
    what = (
        f"its {models} model call{'s' if models != 1 else ''} hold what the instrumentation "
        "captured, not the requests the SDK sends, so a replay cannot match the agent's calls "
        "to them, and "
        if models
        else ""
    )
    raise UnreplayableError(
        f"run {run.id} was imported from a trace ({origin}), not recorded by running its agent: "
        f"{what}the trace does not hold the arguments the agent was called with; record the "
        f"agent ({agent}) on the same task and export that run"
    )


def _context_alone(function: object) -> bool:
    """Whether ``function`` is an agent written against the context (its first parameter ``ctx``)
    that needs nothing else: every other parameter has a default."""
    try:
        parameters = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    if not parameters or parameters[0].name != "ctx":
        return False
    return all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in parameters[1:]
    )


def agent_for_test(spec: str, test_folder: Path) -> str:
    """How a test in ``test_folder`` names the agent ``spec``: a ``file.py:function`` spec by the
    file's path from its project's root (the nearest folder above it holding pyproject.toml,
    setup.py, setup.cfg or .git) when the test is in the same project, so the test finds it from
    wherever it is moved inside the project; else by its absolute path. Module specs as they are."""
    module, _, name = spec.rpartition(":")
    if not module.endswith(".py"):
        return spec
    agent = Path(module).resolve()
    root = project_root(agent.parent)
    folder = test_folder.resolve()
    if root is not None and folder.is_relative_to(root):
        return f"{agent.relative_to(root).as_posix()}:{name}"
    return f"{agent}:{name}"


def project_root(folder: Path) -> Path | None:
    """The nearest folder from ``folder`` up that holds a project marker (`PROJECT_MARKERS`)."""
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return None


def pytest_module(
    *,
    run_id: str,
    recording: str,
    agent: str,
    instrument: Sequence[str] = (),
    verifier: str | None = None,
    answer: Mapping[str, str | None] | None = None,
    expect: str = "identical",
) -> str:
    """A self-contained test replaying run ``run_id`` (its native JSONL ``recording``, beside the
    test) against the current code of ``agent``, its model calls served through the SDKs
    ``instrument`` names: ``identical`` asserts it replays step for step; ``pass`` serves tools
    from the record, runs model calls live (and any call the record does not hold: a retry the fix
    added), and asserts the agent returns and ``verifier`` now scores the run a success. A failure
    says why in one sentence (the agent raising names the step and the exception). ``agent`` and
    ``verifier`` are specs as `agent_for_test` gives them: a relative ``file.py:function`` spec is
    the file's path from the project's root, which the test finds from its own folder up. ``answer``: without a
    ``verifier``, the ``--success-if`` / ``--fail-if`` patterns that score it. A recording
    edited after the export is refused (`EditedContentError`), as a cassette is."""
    slug = re.sub(r"\W+", "_", run_id[:12]).strip("_") or "run"
    if expect == "identical":
        body = f'''

def test_run_{slug}_replays_identically() -> None:
    """The agent makes exactly the recorded calls and returns the recorded answer."""
    result = replay(_recorded(), _load(AGENT, "--agent"), instrument=INSTRUMENT)
    assert result.identical, result.verdict
'''
    else:
        body = f'''

def test_run_{slug}_now_passes() -> None:
    """Tools served from the record, model calls live (and any call the record does not hold):
    the agent now succeeds where it failed."""
    agent, live = _load(AGENT, "--agent"), (StepKind.LLM,)
    result = replay(_recorded(), agent, live_kinds=live, on_miss="resample", instrument=INSTRUMENT)
    assert result.raised is None, str(result.raised)
    verifier = answer_verifier(**ANSWER) if ANSWER else _load(VERIFIER, "--verifier")
    outcome = score(verifier, result.trajectory)
    assert outcome >= FAIL_THRESHOLD, f"the verifier scores the replayed run {{outcome}}"
'''
    model_imports = (
        "from otel_replay import ReadOptions, Trajectory, load_object, read_jsonl"
        if expect == "identical"
        else "from otel_replay import (\n"
        "    FAIL_THRESHOLD,\n    ReadOptions,\n    StepKind,\n    Trajectory,\n"
        "    answer_verifier,\n    load_object,\n    read_jsonl,\n    score,\n)"
    )
    return f'''"""Regression test made from agent run {run_id} by ``agent-replay export --format pytest``.

It replays the recorded run ({recording}, beside this file) against the agent's current
code; it needs no store, and no network{" for tools" if expect == "pass" else ""}.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

{model_imports}
from otel_replay.replay import replay

HERE = Path(__file__).resolve().parent
RECORDING = HERE / {_literal(recording)}
AGENT = {_literal(agent)}
VERIFIER = {_literal(verifier)}
ANSWER: dict[str, str | None] = {_answer(answer)}
INSTRUMENT = {_literal(tuple(instrument))}


def _load(spec: str | None, what: str) -> Any:
    assert spec is not None, f"this test needs {{what}}"
    module, _, name = spec.rpartition(":")
    if module.endswith(".py") and not Path(module).is_absolute():
        spec = f"{{_project_root() / module}}:{{name}}"
    return load_object(spec, what)


def _project_root() -> Path:
    """The project this test is in: the nearest folder up holding {" or ".join(PROJECT_MARKERS)}."""
    for folder in (HERE, *HERE.parents):
        if any((folder / marker).exists() for marker in {_literal(PROJECT_MARKERS)}):
            return folder
    raise AssertionError(f"{{HERE}} is in no project (no {" or ".join(PROJECT_MARKERS)} above it)")


def _recorded() -> Trajectory:
    # strict: a recording edited since the export would replay what was never recorded
    (run,) = read_jsonl(RECORDING, ReadOptions(strict=True))
    return run
{body}'''


def _answer(patterns: Mapping[str, str | None] | None) -> str:
    """The answer patterns as a Python dict literal (empty: a verifier scores the run)."""
    if not patterns:
        return "{}"
    items = ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in patterns.items())
    return "{" + items + "}"


def _literal(value: str | tuple[str, ...] | None) -> str:
    """``value`` as Python source, double-quoted as the formatter writes it."""
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return "(" + "".join(f"{_literal(item)}, " for item in value).rstrip(" ") + ")"
    return orjson.dumps(value).decode()
