"""Phoenix both ways, against a real ``phoenix serve``: runs of the incident example, made by the real
OpenTelemetry SDK and sent with its OTLP/HTTP exporter, come back through ``import phoenix://`` as the
same steps a file of them gives; ``attribute --annotate`` writes the verdict as span annotations,
read back from Phoenix's REST API."""

from __future__ import annotations

import json
import shlex
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from examples.incident import Investigation, investigate
from otel_replay import ReadOptions, StepKind, StepStatus, Trajectory, read_path
from otel_replay.errors import ReplayError
from otel_replay.model import Step
from otel_replay.platforms.phoenix import (
    annotate_phoenix,
    parse_phoenix_url,
    phoenix_annotations,
    read_phoenix,
)
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES
from tests.platforms.incident_runs import FAIL, FAIL_STEPS, GENAI_FAIL, RETRY, RETRY_STEPS
from tests.platforms.phoenix_server import Phoenix

PROJECT = "incident-tests"
GENAI_PROJECT = "genai-tests"


@pytest.fixture(scope="module")
def runs(phoenix: Phoenix) -> dict[str, Investigation]:
    """The pass-retry and failing OpenInference runs in PROJECT, the failing GenAI run in
    GENAI_PROJECT, each exported once."""
    made = {
        RETRY: investigate("openinference", 102, {"list_deploys": "error_once"}),
        FAIL: investigate("openinference", 103, {"list_deploys": "empty"}),
        GENAI_FAIL: investigate("genai", 202, {"list_deploys": "empty"}),
    }
    phoenix.send(made[RETRY].spans, PROJECT)
    phoenix.send(made[FAIL].spans, PROJECT)
    phoenix.send(made[GENAI_FAIL].spans, GENAI_PROJECT)
    return made


def _steps(trajectory: Trajectory) -> list[tuple[str, str, str]]:
    return [(s.kind.value, s.name, s.status.value) for s in trajectory.steps]


def _read(url: str, since_ns: int | None = None, key: str | None = None) -> dict[str, Trajectory]:
    return {t.id: t for t in read_phoenix(url, since_ns, ReadOptions(), key=key)}


def _file_runs() -> dict[str, Trajectory]:
    from otel_replay import read_path

    found = {}
    for name in ("incident.otlp.jsonl", "incident-genai.otlp.jsonl"):
        found.update({t.id: t for t in read_path(SAMPLES / name)})
    return found


def test_a_project_imports_as_the_same_steps_its_spans_give_in_a_file(
    phoenix: Phoenix, runs: dict[str, Investigation]
) -> None:
    read = _read(f"phoenix://{phoenix.address}/{PROJECT}")
    assert sorted(read) == sorted([RETRY, FAIL])
    assert _steps(read[RETRY]) == RETRY_STEPS
    assert _steps(read[FAIL]) == FAIL_STEPS
    failed = read[RETRY].steps[3]
    assert failed.inputs["arguments"] == {"service": "checkout"}
    assert failed.error == "UpstreamError: list_deploys: upstream answered 503 Service Unavailable"
    assert (read[RETRY].outcome, read[FAIL].outcome) == (1.0, 0.0)
    assert read[FAIL].metadata["format"] == "phoenix-otlp"  # what --format names a saved page
    assert read[FAIL].metadata["source"] == f"phoenix://{phoenix.address}/{PROJECT}"
    files = _file_runs()
    for trace_id in (RETRY, FAIL):  # content, hashes and span ids as the sample file gives them
        assert read[trace_id].final_hash == files[trace_id].final_hash
        assert [s.span_id for s in read[trace_id].steps] == [
            s.span_id for s in files[trace_id].steps
        ]


def test_a_genai_run_keeps_its_steps_through_phoenix(
    phoenix: Phoenix, runs: dict[str, Investigation]
) -> None:
    """Phoenix adds OpenInference attributes to the GenAI spans it takes in (and re-spaces the JSON
    of the messages it writes there): the steps, their arguments and the outcome stay the file's."""
    read = _read(f"phoenix://{phoenix.address}/{GENAI_PROJECT}")[GENAI_FAIL]
    files = _file_runs()[GENAI_FAIL]
    assert _steps(read) == _steps(files)
    assert [s.inputs.get("arguments") for s in read.steps] == [
        s.inputs.get("arguments") for s in files.steps
    ]
    assert read.outcome == files.outcome == 0.0


def test_since_brings_a_trace_that_straddles_it_back_whole(
    phoenix: Phoenix, runs: dict[str, Investigation]
) -> None:
    url = f"phoenix://{phoenix.address}/{PROJECT}"
    spans = sorted(runs[FAIL].spans, key=lambda s: s.start_time or 0)
    middle = spans[len(spans) // 2].start_time
    assert middle is not None
    read = _read(url, since_ns=middle)
    assert sorted(read) == [FAIL]  # the pass-retry run started hours before it: not a span since
    assert _steps(read[FAIL]) == FAIL_STEPS
    assert read[FAIL].final_hash == _file_runs()[FAIL].final_hash
    last = max(s.start_time or 0 for s in runs[FAIL].spans)
    assert _read(url, since_ns=last + 1_000_000) == {}


def test_pages_are_followed_by_their_cursor(
    phoenix: Phoenix, runs: dict[str, Investigation], monkeypatch: pytest.MonkeyPatch
) -> None:
    from otel_replay.platforms import phoenix as module

    url = f"phoenix://{phoenix.address}/{PROJECT}"
    whole = _read(url)
    monkeypatch.setattr(module, "PAGE_SIZE", 3)
    monkeypatch.setattr(module, "_TRACES_PER_REQUEST", 1)
    options = ReadOptions()
    paged = {t.id: t for t in read_phoenix(url, None, options)}
    spans = len(runs[RETRY].spans) + len(runs[FAIL].spans)
    assert options.report.records == -(-spans // 3)  # pages of 3 spans, the last one shorter
    assert options.report.spans == spans
    assert {k: t.final_hash for k, t in paged.items()} == {
        k: t.final_hash for k, t in whole.items()
    }
    first = min(s.start_time or 0 for s in runs[FAIL].spans)
    since = {t.id: t for t in read_phoenix(url, first + 1, ReadOptions())}
    assert since[FAIL].final_hash == whole[FAIL].final_hash


def test_import_names_what_it_imported_and_imports_again_unchanged(
    phoenix: Phoenix, runs: dict[str, Investigation], runner: CliRunner, store_path: Path
) -> None:
    url = f"phoenix://{phoenix.address}/{PROJECT}"
    result = ok(invoke(runner, store_path, "import", url))
    assert "imported 2 trajectories from 1 source" in result.stdout
    assert "2 added, 0 unchanged" in result.stdout
    again = json.loads(ok(invoke(runner, store_path, "import", url, "--json")).stdout)
    assert [(f["path"], f["skipped"]) for f in again] == [(url, [])]
    assert sorted((r["id"], r["steps"], r["result"]) for r in again[0]["trajectories"]) == [
        (RETRY, 7, "unchanged"),
        (FAIL, 7, "unchanged"),
    ]


def _untouched(store_path: Path) -> None:
    if store_path.exists():
        with Store.open(store_path) as store:
            assert store.summaries() == []


def test_no_such_project_is_one_line_naming_the_projects_there(
    phoenix: Phoenix, runs: dict[str, Investigation], runner: CliRunner, store_path: Path
) -> None:
    result = invoke(runner, store_path, "import", f"phoenix://{phoenix.address}/no-such-project")
    line = one_line_error(result)
    assert "has no project 'no-such-project'" in line
    assert PROJECT in line
    _untouched(store_path)


def test_a_server_that_is_down_is_one_line(runner: CliRunner, store_path: Path) -> None:
    from tests.platforms.phoenix_server import free_port

    port = free_port()  # nothing listens there
    line = one_line_error(invoke(runner, store_path, "import", f"phoenix://127.0.0.1:{port}/p"))
    assert line.startswith(f"error: cannot reach Phoenix at http://127.0.0.1:{port}")
    _untouched(store_path)


def test_addresses_are_checked_before_anything_is_asked(
    runner: CliRunner, store_path: Path
) -> None:
    assert "names no project" in one_line_error(
        invoke(runner, store_path, "import", "phoenix://127.0.0.1:6006")
    )
    assert "port is not a number" in one_line_error(
        invoke(runner, store_path, "import", "phoenix://127.0.0.1:x/p")
    )
    assert "--since chooses traces on a platform" in one_line_error(
        invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl"), "--since", "1d")
    )
    mistyped = ("attribute", "ef2843ff", "--success-if", "v841", "--annotate", "phoenix://h:x")
    assert "port is not a number" in one_line_error(invoke(runner, store_path, *mistyped))
    assert parse_phoenix_url("phoenix://example.org/my%20project").url == (
        "phoenix://example.org:6006/my%20project"
    )


def test_the_key_is_sent_and_a_refused_or_missing_key_is_one_line(
    phoenix_auth: Phoenix, runner: CliRunner, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phoenix_auth.send(investigate("openinference", 103, {"list_deploys": "empty"}).spans, "keyed")
    url = f"phoenix://{phoenix_auth.address}/keyed"
    monkeypatch.delenv("PHOENIX_API_KEY", raising=False)
    missing = one_line_error(invoke(runner, store_path, "import", url))
    assert "wants an API key (HTTP 401): set PHOENIX_API_KEY" in missing
    monkeypatch.setenv("PHOENIX_API_KEY", "not-the-key")
    refused = one_line_error(invoke(runner, store_path, "import", url))
    assert "refused the API key in PHOENIX_API_KEY (HTTP 401" in refused
    _untouched(store_path)
    assert phoenix_auth.key is not None
    monkeypatch.setenv("PHOENIX_API_KEY", phoenix_auth.key)
    result = ok(invoke(runner, store_path, "import", url))
    assert "1 added" in result.stdout


def _annotations(phoenix: Phoenix, project: str, span_ids: list[str]) -> list[dict[str, Any]]:
    params = [("identifier", "agent-replay"), ("limit", "100")]
    params += [("span_ids", s) for s in span_ids]
    query = urllib.parse.urlencode(params)
    path = f"/v1/projects/{project}/span_annotations?{query}"
    with urllib.request.urlopen(phoenix.base + path, timeout=30) as response:
        data: list[dict[str, Any]] = json.loads(response.read())["data"]
    return data


def test_annotate_writes_the_verdict_on_the_commitment_and_root_spans(
    phoenix: Phoenix, runs: dict[str, Investigation], runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", f"phoenix://{phoenix.address}/{PROJECT}"))
    args: tuple[str, ...] = ("attribute", FAIL[:8])
    args += ("--resamplers", str(ROOT / "examples/incident/tools.py"))
    args += ("--success-if", "v841", "--annotate", f"phoenix://{phoenix.address}", "--json")
    result = ok(invoke(runner, store_path, *args))
    report = json.loads(result.stdout)
    assert (report["verdict"], report["point_of_commitment"]) == ("culprit", 3)
    assert "annotated 2 spans in Phoenix at " in result.stderr
    with Store.open(store_path) as store:
        run = store.get(FAIL)
    culprit = run.steps[3]
    assert (culprit.kind, culprit.name) == (StepKind.TOOL, "list_deploys")
    assert culprit.span_id is not None
    root = next(s.span_id for s in run.spans if s.parent_span_id is None)
    found = _annotations(phoenix, PROJECT, [culprit.span_id, root])
    by_span = {a["span_id"]: a for a in found}
    assert len(found) == 2
    at_culprit, at_root = by_span[culprit.span_id], by_span[root]
    assert at_culprit["name"] == "agent_replay.point_of_commitment"
    assert at_culprit["annotator_kind"] == "CODE"
    assert at_culprit["result"]["label"] == "culprit"
    assert at_culprit["result"]["score"] == pytest.approx(report["steps"][3]["attribution"])
    assert at_culprit["result"]["explanation"] == report["explanation"]
    assert at_culprit["metadata"]["step_name"] == "list_deploys"
    assert at_root["name"] == "agent_replay.verdict"
    assert (at_root["result"]["label"], at_root["result"]["score"]) == ("culprit", 0.0)
    # attributed again (--force), the same annotations are updated in place, not added
    ok(invoke(runner, store_path, *args, "--force"))
    again = _annotations(phoenix, PROJECT, [culprit.span_id, root])
    assert sorted(a["id"] for a in again) == sorted(a["id"] for a in found)


def test_a_run_phoenix_does_not_have_is_one_line(
    phoenix: Phoenix, runs: dict[str, Investigation], runner: CliRunner, store_path: Path
) -> None:
    """The GenAI sample's failing run was never sent to this Phoenix."""
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident-genai.otlp.jsonl")))
    with Store.open(store_path) as store:
        run = store.get("6b9bb2f6535a7e07b6dffce8112d9d11")
    report = {"verdict": "culprit", "point_of_commitment": 1, "explanation": "", "steps": []}
    with pytest.raises(ReplayError, match="does not have the spans of run 6b9bb2f6"):
        annotate_phoenix(f"phoenix://{phoenix.address}", report, run)


def test_a_run_without_span_ids_cannot_be_annotated() -> None:
    run = Trajectory.build(
        "hand-made", [Step(StepKind.TOOL, "t", {}, None, StepStatus.ERROR)], outcome=0.0
    )
    report = {"verdict": "culprit", "point_of_commitment": 0, "explanation": "x", "steps": []}
    with pytest.raises(ReplayError, match="run hand-made has no root span"):
        phoenix_annotations(report, run)
    inconclusive = {**report, "verdict": "inconclusive", "point_of_commitment": None}
    with pytest.raises(ReplayError, match="run hand-made has no root span"):
        phoenix_annotations(inconclusive, run)


def test_a_rebuilt_point_of_commitment_is_named_on_the_root_span() -> None:
    """A tool loop that runs its tools itself leaves them no span: the steps rebuilt from the
    conversation have no span to annotate, so the run's root span carries the verdict and says
    which step it is."""
    path = ROOT / "tests" / "fixtures" / "frameworks" / "anthropic.otlp.jsonl"
    run = next(r for r in read_path(path) if r.metadata.get("reconstructed_steps"))
    rebuilt = run.metadata["reconstructed_steps"][0]
    report = {
        "verdict": "culprit",
        "point_of_commitment": rebuilt,
        "explanation": "the lookup decided it",
        "steps": [{"index": rebuilt, "attribution": 0.8}],
    }
    (verdict,) = phoenix_annotations(report, run)
    assert verdict.name == "agent_replay.verdict"
    assert verdict.span_id == next(s.span_id for s in run.spans if not s.parent_span_id)
    name = run.steps[rebuilt].name
    assert verdict.explanation == (
        f"the lookup decided it (step {rebuilt}, {name}, was rebuilt from the conversation: it "
        "has no span of its own)"
    )
    assert verdict.metadata["point_of_commitment"] == rebuilt


def _readme_commands() -> list[list[str]]:
    """The commands of the "Phoenix, both ways" block of docs/importing.md, without
    ``agent-replay``."""
    text = (ROOT / "docs" / "importing.md").read_text()
    block = text[text.index("## Phoenix, both ways") :].split("```sh\n", 1)[1].split("```")[0]
    return [shlex.split(line.split("  #")[0])[1:] for line in block.strip().splitlines()]


def test_the_readme_commands_run_against_a_real_phoenix(
    phoenix: Phoenix,
    runs: dict[str, Investigation],
    runner: CliRunner,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)  # the page's paths are the checkout's
    commands = _readme_commands()
    assert [c[0] for c in commands] == ["import", "import", "attribute"]
    for command in commands:
        args = [
            a.replace("127.0.0.1:6006", phoenix.address).replace("incident-investigations", PROJECT)
            for a in command
        ]
        result = ok(invoke(runner, store_path, *args, "--json"))
        if "--since" in args:  # the failing run began before the bound: it comes back whole
            (imported,) = json.loads(result.stdout)
            assert [(r["id"], r["steps"]) for r in imported["trajectories"]] == [(FAIL, 7)]
    with Store.open(store_path) as store:
        culprit = store.get(FAIL).steps[3]
    assert culprit.span_id is not None
    (annotation,) = _annotations(phoenix, PROJECT, [culprit.span_id])
    assert (annotation["name"], annotation["result"]["label"]) == (
        "agent_replay.point_of_commitment",
        "culprit",
    )
