"""The configuration file (issue 41, item 1): ``agent-replay.toml`` or ``[tool.agent-replay]`` in
``pyproject.toml``, found from the working directory up, holds how to re-run the agent and the
question's defaults; ``attribute``, ``sweep``, ``fork`` and ``record`` run from it with no code
flags, flags win over it, a report made from it is the report the same flags make, and a mistake
in it is one line naming the file and the line, the store untouched. ``agent-replay init`` writes
one from what a run remembers or from questions."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from otel_replay import Store
from otel_replay.cli import app
from tests.cli_helpers import ok, one_line_error
from tests.conftest import ROOT, SAMPLES

WIDE = {"COLUMNS": "250", "AGENT_REPLAY_STORE": ""}
INCIDENT = ROOT / "examples" / "incident"
AND_GATE = ROOT / "examples" / "docs" / "and_gate.py"
DEPLOY = '[{"version": "v841", "service": "checkout", "deployed_at": "2026-03-14T14:02:00Z"}]'

# A small live agent of its own (not the incident's): two release checks drawn from ctx.rng.
GATE_AGENT = """
from otel_replay.model import Trajectory


def gate(ctx, release="4.2"):
    canary = ctx.tool("canary_check", produce=lambda: {"caught": ctx.rng.random() < 0.5},
                      release=release)
    guard = ctx.tool("rollback_guard", produce=lambda: {"caught": ctx.rng.random() < 0.5},
                     release=release)
    return "held" if canary["caught"] or guard["caught"] else "shipped with the bug"


def held(trajectory: Trajectory) -> float:
    return 1.0 if trajectory.metadata.get("answer") == "held" else 0.0
"""


def run(*args: str, input: str | None = None) -> Result:
    """``agent-replay ARGS`` in the working directory; no traceback, ever."""
    result = CliRunner().invoke(app, list(args), env=WIDE, input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    return result


def rel(path: Path, start: Path) -> str:
    """``path`` as a file in ``start`` names it (relative: the file's folder, not the cwd)."""
    return os.path.relpath(path, start)


def state(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` with the digest of its bytes (the store untouched: the same;
    SQLite's shared-memory index and an empty log, which a reading open makes, aside)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def fork_outcome(*args: str) -> float:
    """``agent-replay fork ARGS``: the fork's outcome."""
    forked = ok(run("fork", *args, "--json"))
    return float(json.loads(forked.stdout)["diff"]["right"]["outcome"])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, the working directory, its store holding the bundled samples."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    ok(run("import", str(SAMPLES / "incident.steps.jsonl"), "--store", "runs.db"))
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def incident_config(folder: Path) -> str:
    return (
        f'store = "runs.db"\n'
        f'resamplers = ["{rel(INCIDENT / "tools.py", folder)}"]\n'
        f'success-if = "v841"\n'
        f'\n[sweep]\nseed = 3\nsteps = ["list_deploys"]\nfaults = "empty"\n'
        f'\n[record]\nagent = "{rel(INCIDENT / "agent.py", folder)}:investigate"\n'
    )


def test_attribute_sweep_fork_and_record_run_from_the_file_with_no_code_flags(
    project: Path,
) -> None:
    write(project / "agent-replay.toml", incident_config(project))
    attributed = ok(run("attribute", "incident-fail", "--out", "report.json"))
    assert "step 3 (tool list_deploys)" in attributed.output
    rerun = json.loads((project / "report.json").read_text())["config"]["rerun"]
    assert f"--resamplers {rel(INCIDENT / 'tools.py', project)} --success-if v841" in rerun
    swept = ok(run("sweep", "incident-fail", "--json"))
    assert json.loads(swept.stdout)["config"]["seed"] == 3  # [sweep] seed
    assert fork_outcome("incident-fail", "--at", "3", "--observe", DEPLOY) == 1.0
    recorded = ok(run("record", "--json"))  # [record] agent, scored by the top level's success-if
    with Store.open(project / "runs.db", read_only=True) as db:
        made = db.get(json.loads(recorded.stdout)["id"])
    assert made.metadata["answer_verifier"]["success_if"] == "v841"
    assert made.metadata["agent"] == f"{rel(INCIDENT / 'agent.py', project)}:investigate"


def test_another_agent_and_trace_run_from_the_file(project: Path) -> None:
    """Not the incident: the AND-gate run with its resample functions and verifier in a file
    beside the configuration, and a live agent of its own recorded, forked and attributed."""
    ok(run("import", str(ROOT / "examples" / "docs" / "and_gate.jsonl"), "--store", "runs.db"))
    write(project / "code" / "gate.py", GATE_AGENT)
    shutil.copy(AND_GATE, project / "code" / "and_gate.py")
    write(
        project / "agent-replay.toml",
        'store = "runs.db"\nresamplers = ["code/and_gate.py"]\n\n'
        '[sweep]\nsteps = ["llm"]\nfaults = "timeout"\n'
        '\n[record]\nagent = "code/gate.py:gate"\nverifier = "code/gate.py:held"\nseed = 1\n',
    )
    attributed = ok(run("attribute", "scm-and", "--json"))
    assert json.loads(attributed.stdout)["point_of_commitment"] == 3
    ok(run("sweep", "scm-and", "--json"))
    # scored by the resample functions' verifier, named by the file
    assert fork_outcome("scm-and", "--at", "3", "--observe", '{"caught": true}') == 1.0
    recorded = ok(run("record", "--json"))
    run_id = json.loads(recorded.stdout)["id"]
    with Store.open(project / "runs.db", read_only=True) as db:
        made = db.get(run_id)
    assert made.metadata["agent"] == "code/gate.py:gate"
    assert made.metadata["verifier"] == "code/gate.py:held"
    assert made.metadata["seed"] == 1


def test_a_report_from_the_file_is_the_report_the_same_flags_make(project: Path) -> None:
    tools = rel(INCIDENT / "tools.py", project)
    flags = ["--resamplers", tools, "--success-if", "v841", "--margin", "0.2", "--seed", "5"]
    ok(run("attribute", "incident-fail", "--store", "runs.db", *flags, "--out", "flags.json"))
    questions = "[attribute]\nmargin = 0.2\nseed = 5\n"
    write(project / "agent-replay.toml", incident_config(project) + questions)
    ok(run("attribute", "incident-fail", "--out", "file.json"))
    by_flags, by_file = (json.loads((project / n).read_text()) for n in ("flags.json", "file.json"))
    for report in (by_flags, by_file):
        del report["cost"]["wall_seconds"]
    assert by_file == by_flags
    with Store.open(project / "runs.db", read_only=True) as db:
        questions = {r["config_digest"] for r in db.reports(db.resolve("incident-fail"))}
    assert len(questions) == 1  # one question, however it was asked


def test_found_from_a_folder_below_with_paths_relative_to_the_file(project: Path) -> None:
    write(project / "agent-replay.toml", incident_config(project))
    below = project / "deep" / "er"
    below.mkdir(parents=True)
    os.chdir(below)
    report = below / "r.json"
    ok(run("attribute", "incident-fail", "--out", str(report)))
    rerun = json.loads(report.read_text())["config"]["rerun"]
    assert f"--resamplers {rel(INCIDENT / 'tools.py', below)} " in rerun  # as typed from here


def test_a_command_without_an_option_leaves_a_top_level_key_alone(project: Path) -> None:
    write(project / "agent-replay.toml", incident_config(project) + "[list]\nlimit = 1\n")
    listed = ok(run("list"))  # list takes no --resamplers, no --success-if; [list] limit
    assert "showing 1 of 3 runs" in listed.output


def test_flags_win_and_a_command_table_wins_over_the_top_level(project: Path) -> None:
    top = "seed = 1\nmargin = 0.3\n"
    write(project / "agent-replay.toml", top + incident_config(project) + "[attribute]\nseed = 9\n")
    ok(run("attribute", "incident-fail", "--margin", "0.25", "--out", "r.json"))
    config = json.loads((project / "r.json").read_text())["config"]
    assert (config["seed"], config["margin"]) == (9, 0.25)


def test_a_pyproject_table_counts_and_agent_replay_toml_wins_beside_it(project: Path) -> None:
    tools = rel(INCIDENT / "tools.py", project)
    pyproject = f'[project]\nname = "x"\n\n[tool.agent-replay]\nresamplers = ["{tools}"]\n'
    write(project / "pyproject.toml", pyproject + 'success-if = "v841"\nstore = "runs.db"\n')
    ok(run("attribute", "incident-fail", "--out", "r.json"))
    assert (
        f"--resamplers {tools} " in json.loads((project / "r.json").read_text())["config"]["rerun"]
    )
    write(project / "agent-replay.toml", 'store = "elsewhere.db"\n')
    assert "elsewhere.db" in one_line_error(run("attribute", "incident-fail"))


def test_a_mistake_in_a_pyproject_table_names_its_line(project: Path) -> None:
    text = (
        '[project]\nname = "x"\n\n[tool.agent-replay]\nseed = 1\n\n[tool.agent-replay.attribute]\n'
    )
    write(project / "pyproject.toml", text + "margin = 'wide'\n")
    before = state(project)
    line = one_line_error(run("attribute", "incident-fail", "--store", "runs.db"))
    assert line == "error: pyproject.toml:8: margin = 'wide': --margin takes a number"
    assert state(project) == before


def test_a_pyproject_without_the_table_does_not_count(project: Path) -> None:
    write(project / "agent-replay.toml", incident_config(project))
    inner = project / "package"
    write(inner / "pyproject.toml", '[project]\nname = "agent-replay-user"\n')
    os.chdir(inner)
    ok(run("attribute", "incident-fail", "--out", "r.json"))  # the parent's file, found


def test_config_names_another_file_before_or_after_the_command(project: Path) -> None:
    other = write(project / "conf" / "other.toml", incident_config(project / "conf"))
    (project / "runs.db").rename(project / "conf" / "runs.db")  # store = "runs.db": beside it
    ok(run("--config", str(other), "attribute", "incident-fail", "--out", "a.json"))
    ok(run("attribute", "incident-fail", "--config", str(other), "--out", "b.json"))
    ok(run("attribute", "incident-fail", f"--config={other}", "--out", "c.json"))
    assert all((project / n).is_file() for n in ("a.json", "b.json", "c.json"))


BAD = [
    (
        "sucess-if = 'v841'\n",
        ":1: sucess-if = 'v841': no command takes --sucess-if (did you mean success-if?)",
    ),
    ("seed = 1\n[attribute]\nat = 3\n", ":3: at = 3: 'attribute' takes no --at"),
    ("[atribute]\nseed = 1\n", ":1: [atribute] is no command (did you mean attribute?)"),
    ("[attribute]\nseed = 'seven'\n", ":2: seed = 'seven': --seed takes a whole number"),
    ("margin = true\n", ":1: margin = true: --margin takes a number"),
    ("repair = 'yes'\n", ":1: repair = 'yes': --repair takes true or false"),
    ("tools = 'bogus'\n", ":1: tools = 'bogus': --tools takes one of"),
    ("success-if = ['a', 'b']\n", ":1: success-if = ['a', 'b']: --success-if takes one value"),
    ("seed = 1\nseed = 2\n", ":2: not TOML: Cannot overwrite a value (column 9)"),
    ("resamplers = [\n", ":1: not TOML: Invalid value (at the end)"),
]


@pytest.mark.parametrize(("text", "said"), BAD, ids=[b[1].split(":")[2].strip() for b in BAD])
def test_a_mistake_in_the_file_is_one_located_line_and_the_store_untouched(
    project: Path, text: str, said: str
) -> None:
    write(project / "agent-replay.toml", text)
    before = state(project)
    line = one_line_error(run("attribute", "incident-fail", "--store", "runs.db"))
    assert line.startswith("error: agent-replay.toml:"), line
    assert said in line, line
    assert state(project) == before


def test_config_none_reads_no_file(project: Path) -> None:
    write(project / "agent-replay.toml", "sucess-if = 'v841'\n")
    assert "no command takes --sucess-if" in one_line_error(run("list", "--store", "runs.db"))
    ok(run("--config", "none", "list", "--store", "runs.db"))
    ok(run("list", "--store", "runs.db", "--config", "none"))


def test_a_missing_config_file_is_one_line_error(project: Path) -> None:
    before = state(project)
    assert one_line_error(run("--config", "nowhere.toml", "list", "--store", "runs.db")) == (
        "error: nowhere.toml: no such configuration file"
    )
    assert state(project) == before


def test_init_writes_what_an_attribution_remembers(project: Path) -> None:
    tools = rel(INCIDENT / "tools.py", project)
    ok(run("attribute", "incident-fail", "--store", "runs.db", "--resamplers", tools,
           "--success-if", "v841", "--repair", "--margin", "0.2"))  # fmt: skip
    ok(run("init", "incident-fail", "--store", "runs.db"))
    written = (project / "agent-replay.toml").read_text()
    settings = [line for line in written.splitlines() if line and not line.startswith("#")]
    assert settings == [
        f'resamplers = ["{tools}"]',
        'success-if = "v841"',
        "[attribute]",
        "margin = 0.2",
        "repair = true",
    ]
    again = one_line_error(run("init", "incident-fail", "--store", "runs.db"))
    assert again == "error: agent-replay.toml exists; --force replaces it"
    ok(run("init", "incident-fail", "--store", "runs.db", "--force"))
    forked = fork_outcome("incident-fail", "--store", "runs.db", "--at", "3", "--observe", DEPLOY)
    assert forked == 1.0  # scored by the file's success-if


def test_init_writes_how_a_recorded_run_was_made_relative_to_the_file(project: Path) -> None:
    agent = f"{rel(INCIDENT / 'agent.py', project)}:investigate"
    verifier = f"{rel(INCIDENT / 'agent.py', project)}:outcome"
    recorded = ok(run("record", "--store", "runs.db", "--agent", agent, "--verifier", verifier,
                      "--json"))  # fmt: skip
    run_id = json.loads(recorded.stdout)["id"]
    out = project / "settings" / "agent-replay.toml"
    out.parent.mkdir()
    ok(run("init", run_id, "--store", "runs.db", "--out", str(out)))
    text = out.read_text()
    assert f'agent = "{rel(INCIDENT / "agent.py", out.parent)}:investigate"' in text
    assert f'verifier = "{rel(INCIDENT / "agent.py", out.parent)}:outcome"' in text
    ok(run("--config", str(out), "record", "--store", "runs.db"))  # the file is read as written


def test_init_from_a_run_that_remembers_nothing_says_so(project: Path) -> None:
    before = state(project)
    line = one_line_error(run("init", "incident-pass", "--store", "runs.db"))
    assert "remembers no code" in line
    assert state(project) == before


def test_init_asks_when_no_run_is_given(project: Path) -> None:
    tools = rel(INCIDENT / "tools.py", project)
    answers = f"{tools}\n\n\nv841\n\n\n"  # resamplers, agent, verifier, success-if, llm, tools
    ok(run("init", input=answers))
    written = (project / "agent-replay.toml").read_text()
    assert f'resamplers = ["{tools}"]' in written and 'success-if = "v841"' in written
    ok(run("attribute", "incident-fail", "--store", "runs.db", "--out", "r.json"))
    assert (
        f"--resamplers {tools} " in json.loads((project / "r.json").read_text())["config"]["rerun"]
    )
    (project / "agent-replay.toml").unlink()
    wrong = "\n\n\n\nbogus\n\n\n\n"  # llm: bogus
    assert "--llm takes one of" in one_line_error(run("init", input=wrong))
    assert not (project / "agent-replay.toml").exists()
