"""What the CLI owes a user's files and terminal: no lost bytes, no escape sequences from a trace,
no store made by a command that only reads (issue 11's first items)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import Store, Trajectory
from otel_replay._files import output_file, write_output
from otel_replay.cli import app
from otel_replay.cli._common import printable
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

HOSTILE = "\x1b]0;PWNED\x07\x1b[2J[bold]boom[/] :100:"


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    return store_path


# --- files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
@pytest.mark.parametrize("format", ["jsonl", "parquet"])
def test_export_never_writes_over_the_store_it_reads(
    runner: CliRunner, store: Path, suffix: str, format: str
) -> None:
    before = Store.open(store).counts()
    target = Path(f"{store}{suffix}")
    line = one_line_error(invoke(runner, store, "export", "--format", format, "--out", str(target)))
    assert "is the store being read" in line
    with Store.open(store) as db:
        assert db.counts() == before


def test_a_failed_write_leaves_the_previous_file_and_no_debris(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"the previous good report")
    with pytest.raises(RuntimeError), output_file(target) as out:
        out.write(b"half a rep")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"the previous good report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


@pytest.fixture
def umask() -> Iterator[int]:
    """A umask no default gives (group may read, others nothing), restored after the test."""
    previous = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_file_the_cli_writes_has_the_mode_a_plain_write_gives(
    runner: CliRunner, tmp_path: Path, umask: int
) -> None:
    plain = tmp_path / "plain"
    with open(plain, "w"):
        pass
    assert _mode(plain) == 0o666 & ~umask == 0o640
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(SAMPLES / "incident.otlp.jsonl")))
    incident = ROOT / "examples" / "incident"
    tools, agent = str(incident / "tools.py"), str(incident / "agent.py")
    out = tmp_path / "out"
    ok(
        invoke(
            runner, store, "record", "--agent", f"{agent}:investigate",
            "--outcome", f"{agent}:outcome", "--otlp-out", str(out / "spans.json"),
        )
    )  # fmt: skip
    ok(
        invoke(
            runner, store, "attribute", "ef2843ff", "--resamplers", tools, "--success-if",
            "v841", "--repair", "--out", str(out / "report.json"), "--out",
            str(out / "report.html"),
        )
    )  # fmt: skip
    ok(
        invoke(
            runner,
            store,
            "report",
            "html",
            str(out / "report.json"),
            "--out",
            str(out / "again.html"),
        )
    )
    ok(invoke(runner, store, "blame", "--out", str(out / "blame.csv")))
    ok(invoke(runner, store, "export", "--out", str(out / "runs.jsonl")))
    ok(invoke(runner, store, "export", "--format", "parquet", "--out", str(out / "steps.parquet")))
    ok(invoke(runner, store, "export", "--format", "pairs", "--out", str(out / "pairs.jsonl")))
    ok(
        invoke(
            runner, store, "export", "ef2843ff", "--format", "pytest",
            "--agent", f"{agent}:investigate", "--out", str(out / "test_run.py"),
        )
    )  # fmt: skip
    written = {p.name: _mode(p) for p in out.iterdir()}
    assert sorted(written) == [
        "again.html", "blame.csv", "pairs.jsonl", "report.html", "report.json", "runs.jsonl",
        "spans.json", "steps.parquet", "test_run.jsonl", "test_run.py",
    ]  # fmt: skip
    assert written == dict.fromkeys(written, 0o640)
    # the store (and its WAL files) too: a plain write's mode
    assert {_mode(p) for p in tmp_path.glob("store.db*")} == {0o640}


def test_a_new_store_is_made_with_the_mode_of_a_plain_write(tmp_path: Path) -> None:
    """Group-writable under a group-writable umask (SQLite alone makes stores 0644 at most)."""
    previous = os.umask(0o002)
    try:
        with Store.open(tmp_path / "shared.db") as db:
            db.put(Trajectory.build("r", []))
        modes = {p.name: _mode(p) for p in tmp_path.glob("shared.db*")}
    finally:
        os.umask(previous)
    assert modes["shared.db"] == 0o664 and set(modes.values()) == {0o664}, modes


def test_a_file_written_over_keeps_its_mode(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"the previous report")
    target.chmod(0o604)
    write_output(target, b"the new report")
    assert target.read_bytes() == b"the new report" and _mode(target) == 0o604
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_dash_is_standard_output(runner: CliRunner, store: Path) -> None:
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    result = ok(
        invoke(
            runner, store, "attribute", "ef2843ff", "--resamplers", resamplers, "--rollouts", "5",
            "--out", "-",
        )
    )  # fmt: skip
    report, _ = json.JSONDecoder().raw_decode(result.stdout, result.stdout.index("{\n"))
    assert report["trajectory_id"].startswith("ef2843ff")
    exported = ok(invoke(runner, store, "export", "ef2843ff", "--out", "-"))
    assert orjson.loads(exported.stdout)["trajectory_id"].startswith("ef2843ff")


# --- the terminal ----------------------------------------------------------------------------------


def test_printable_writes_control_characters_as_escapes() -> None:
    assert printable(HOSTILE) == "\\x1b]0;PWNED\\x07\\x1b[2J[bold]boom[/] :100:"
    assert printable("tab\tand\nnewline stay") == "tab\tand\nnewline stay"
    assert printable("\x9b C1 too") == "\\x9b C1 too"


def _hostile_run(tmp_path: Path) -> Path:
    step = {
        "kind": "tool",
        "name": HOSTILE,
        "inputs": {"arguments": {"q": HOSTILE}},
        "output": HOSTILE,
    }
    lines = [
        {"trajectory_id": "hostile", "outcome": 0.0, "steps": [step]},
        {"trajectory_id": "other", "outcome": 1.0, "steps": [dict(step, name="calm")]},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["import", "<FILE>"],
        ["list"],
        ["show", "hostile"],
        ["show", "hostile", "--tree"],
        ["diff", "hostile", "other"],
    ],
    ids=["import", "list", "show", "tree", "diff"],
)
def test_trace_content_never_reaches_the_terminal_raw(
    runner: CliRunner, store_path: Path, tmp_path: Path, command: list[str]
) -> None:
    trace = _hostile_run(tmp_path)
    ok(invoke(runner, store_path, "import", str(trace)))
    args = [str(trace) if a == "<FILE>" else a for a in command]
    result = ok(invoke(runner, store_path, *args))
    assert "\x1b" not in result.output and "\x07" not in result.output
    if command[0] in ("show", "diff"):
        assert "\\x1b" in result.output  # shown, as text


def test_errors_are_text_not_markup_or_emoji(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "line100.jsonl"
    lines = [f'{{"trajectory_id": "run-{i}", "steps": []}}\n' for i in range(99)]
    path.write_text("".join(lines) + "{broken\n")
    result = invoke(runner, store_path, "import", str(path))
    assert result.exit_code == 1 and f"error: {path}:100:" in result.stderr


# --- the store -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["list"], ["show", "x"], ["export"], ["diff", "a", "b"], ["replay", "x"], ["attribute", "x"]],
    ids=["list", "show", "export", "diff", "replay", "attribute"],
)
def test_a_reading_command_does_not_create_a_store(
    runner: CliRunner, tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nowhere" / "store.db"
    line = one_line_error(invoke(runner, missing, *command))
    assert f"there is no store at {missing}" in line and "agent-replay import" in line
    assert not (tmp_path / "nowhere").exists()


# --- surprises -------------------------------------------------------------------------------------


def test_replaying_an_imported_run_with_an_agent_says_it_was_not_recorded(
    runner: CliRunner, store: Path
) -> None:
    agent = str(ROOT / "examples" / "incident" / "agent.py") + ":investigate"
    result = invoke(runner, store, "replay", "ef2843ff", "--agent", agent)
    assert result.exit_code == 1
    assert "was imported, not recorded" in result.stdout


def test_a_module_name_that_is_a_file_here_gets_a_hint(
    runner: CliRunner, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_resamplers.py").write_text("")
    monkeypatch.chdir(tmp_path)
    line = one_line_error(
        invoke(runner, store, "attribute", "ef2843ff", "--resamplers", "my_resamplers")
    )
    assert "did you mean the file my_resamplers.py?" in line


@pytest.mark.parametrize("threshold", ["5", "0", "-1"])
def test_a_fail_threshold_outside_the_outcome_range_is_refused(
    runner: CliRunner, store: Path, threshold: str
) -> None:
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    line = one_line_error(
        invoke(
            runner, store, "attribute", "ef2843ff", "--resamplers", resamplers,
            "--fail-threshold", threshold,
        )
    )  # fmt: skip
    assert "must be above 0 and at most 1" in line


# --- one-line errors, not tracebacks ---------------------------------------------------------------


def _otlp(tmp_path: Path, start: object, value: object) -> Path:
    span = {
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": "00f067aa0ba902b7",
        "name": "x",
        "startTimeUnixNano": start,
        "endTimeUnixNano": "2000",
        "attributes": [{"key": "v", "value": {"intValue": value}}],
    }
    path = tmp_path / "trace.json"
    path.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    return path


@pytest.mark.parametrize(
    ("start", "value", "message"),
    [
        ("--5", "1", "expected an integer (number or decimal string), got '--5'"),
        ("1000", "9" * 5000, "(5000 characters) does not fit in 64 bits"),
        ("18446744073709551616", "1", "does not fit in 64 bits"),
    ],
    ids=["double-minus", "5000-digits", "past-2**64"],
)
def test_otlp_integers_are_one_line_errors(
    runner: CliRunner, store_path: Path, tmp_path: Path, start: str, value: str, message: str
) -> None:
    result = invoke(runner, store_path, "import", str(_otlp(tmp_path, start, value)))
    assert result.exit_code == 1 and message in result.stderr


def test_a_span_pointing_past_the_steps_is_drawn_as_a_span(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "native.jsonl"
    line = {
        "trajectory_id": "t",
        "steps": [{"kind": "tool", "name": "a"}],
        "spans": [{"span_id": "s", "step_index": 5}],
    }
    path.write_bytes(orjson.dumps(line) + b"\n")
    ok(invoke(runner, store_path, "import", str(path)))
    assert "(span)" in ok(invoke(runner, store_path, "show", "t", "--tree")).stdout


def test_import_descends_into_folders_and_says_when_there_is_nothing(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    nested = tmp_path / "traces" / "2026" / "11"
    nested.mkdir(parents=True)
    (nested / "run.jsonl").write_bytes((SAMPLES / "incident.otlp.jsonl").read_bytes())
    assert "3 added" in ok(invoke(runner, store_path, "import", str(tmp_path / "traces"))).stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_error(invoke(runner, store_path, "import", str(empty)))
    assert f"no trace files in {empty}" in line


def test_record_stores_a_crashed_run_and_exits_1(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "crashing.py"
    agent.write_text(
        "def run(ctx):\n"
        "    ctx.tool('lookup', produce=lambda: 1, key='a')\n"
        "    raise RuntimeError('boom')\n"
    )
    result = invoke(runner, store_path, "record", "--agent", f"{agent}:run")
    assert result.exit_code == 1
    said = "the agent raised RuntimeError: boom (at step 1, after its last recorded step)"
    assert f"{said}; recorded up to there" in result.stderr
    with Store.open(store_path) as db:
        (summary,) = db.summaries()
    assert summary.n_steps == 1


# --- the store under pressure, and silent failures -------------------------------------------------


def test_two_imports_can_create_a_store_at_once(tmp_path: Path) -> None:
    """Both see a new, empty file; the schema is created once, under the write lock."""
    import subprocess
    import sys

    for attempt in range(4):
        store = tmp_path / f"race-{attempt}" / "store.db"
        command = [sys.executable, "-m", "otel_replay", "import", "--store", str(store)]
        processes = [
            subprocess.Popen([*command, str(SAMPLES / name)], stderr=subprocess.PIPE)
            for name in ("incident.otlp.jsonl", "incident-genai.otlp.jsonl")
        ]
        ended = [(process, process.communicate(timeout=120)[1]) for process in processes]
        for process, stderr in ended:  # both waited for before either is judged
            assert process.returncode == 0, stderr.decode()
        with Store.open(store) as db:
            assert db.counts()["trajectories"] == 5


def test_a_damaged_store_is_one_line_naming_the_recovery(runner: CliRunner, store: Path) -> None:
    import sqlite3

    db = sqlite3.connect(store)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file, none in the WAL
    db.close()
    data = bytearray(store.read_bytes())
    assert len(data) > 3 * 16384
    for offset in range(
        16384, len(data), 16384
    ):  # scribble over the start of every page but the first
        data[offset : offset + 64] = b"\xff" * 64
    store.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    line = one_line_error(invoke(runner, store, "show", "ef2843ff"))
    assert "the store cannot be read" in line and ".recover" in line


def test_an_outcome_attribute_no_root_carries_is_a_warning(
    runner: CliRunner, store_path: Path
) -> None:
    result = ok(
        invoke(
            runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl"),
            "--outcome-attribute", "eval.passed",
        )
    )  # fmt: skip
    assert "no root span carries --outcome-attribute 'eval.passed'" in result.stderr
    assert "agent_replay.outcome" in result.stderr  # what the roots do carry


def test_a_run_whose_every_rollout_errored_is_an_error(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(
        "from otel_replay import resampler, verifier\n"
        "@resampler('tool')\n"
        "def tool(step, ctx):\n"
        "    raise RuntimeError('always')\n"
        "@verifier\n"
        "def judge(trajectory):\n"
        "    return 0.0\n"
    )
    line = one_line_error(
        invoke(
            runner, store, "attribute", "ef2843ff", "--resamplers", str(broken),
            "--on-resampler-error", "fail-rollout", "--rollouts", "3",
        )
    )  # fmt: skip
    assert "every one of the" in line and "failed on a resample function's error" in line


# --- nesting ---------------------------------------------------------------------------------------


def test_a_document_nested_past_the_readers_depth_is_one_line(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = invoke(runner, store_path, "import", str(path))
    assert result.exit_code == 1
    assert f"error: {path} (byte 0): JSON nested deeper than the reader follows" in result.stderr


def test_a_string_holding_deep_json_stays_text(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    deep = "[" * 300 + "]" * 300
    span = {
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": "00f067aa0ba902b7",
        "name": "x",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "tool.name", "value": {"stringValue": "t"}},
            {"key": "input.value", "value": {"stringValue": deep}},
        ],
    }
    path = tmp_path / "deep-string.json"
    path.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    ok(invoke(runner, store_path, "import", str(path)))
    with Store.open(store_path) as db:
        (summary,) = db.summaries()
        assert db.get(summary.id).steps[0].inputs["arguments"] == deep


def test_a_native_record_nested_too_deep_is_skipped_with_its_line(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    value: object = {"a": 1}
    for _ in range(300):
        value = [value]
    lines = [
        {"trajectory_id": "deep", "steps": [{"kind": "tool", "name": "t", "output": value}]},
        {"trajectory_id": "fine", "steps": [{"kind": "tool", "name": "t"}]},
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))  # orjson stops at 254
    result = invoke(runner, store_path, "import", str(path))
    assert (
        result.exit_code == 1
        and f"{path}:1: " in result.stderr
        and "nested deeper than 200" in result.stderr
    )
    skipped = ok(invoke(runner, store_path, "import", str(path), "--skip-invalid"))
    assert "1 added" in skipped.stdout and "skipped 1 invalid record" in skipped.stderr


# --- one vocabulary, one-line usage errors ---------------------------------------------------------


def _agent_replay(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "error: No such command 'bogus'. (see: agent-replay --help)"),
        (["list", "--bogus"], "error: No such option: --bogus (see: agent-replay list --help)"),
        (["show"], "error: Missing argument 'ID'. (see: agent-replay show --help)"),
    ],
    ids=["command", "option", "argument"],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, _, stderr = _agent_replay(*args)
    assert code == 2 and stderr.strip() == message


def test_help_version_and_a_store_before_the_command(store: Path, tmp_path: Path) -> None:
    from otel_replay import __version__

    assert _agent_replay("--version")[:2] == (0, f"agent-replay {__version__}\n")
    code, out, _ = _agent_replay("-h")
    assert code == 0 and "Usage: agent-replay" in out
    # the store named before the command wins over the variable, as its own --store would
    code, out, err = _agent_replay(
        "--store", str(store), "list", "--json", env={"AGENT_REPLAY_STORE": str(tmp_path / "x.db")}
    )
    assert code == 0, err
    assert len(json.loads(out)) == 3


def test_the_verifier_option_has_one_name(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    agent = ROOT / "examples" / "incident" / "agent.py"
    result = ok(
        invoke(
            runner,
            store_path,
            "record",
            "--agent",
            f"{agent}:investigate",
            "--verifier",
            f"{agent}:outcome",
        )
    )
    assert "outcome 1" in result.stdout


def test_skip_invalid_goes_past_a_file_that_is_not_a_trace(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a-notes.log").write_text("hello, not a trace\n")
    (folder / "b-run.jsonl").write_bytes((SAMPLES / "incident.otlp.jsonl").read_bytes())
    stopped = invoke(runner, store_path, "import", str(folder))
    assert stopped.exit_code == 1 and "not a trace file" in stopped.stderr
    went_on = ok(invoke(runner, store_path, "import", str(folder), "--skip-invalid"))
    assert "3 added" in went_on.stdout
    assert "a-notes.log: not a trace file" in went_on.stderr


# --- tables and words ------------------------------------------------------------------------------


def test_tables_keep_the_file_name_and_words_agree_with_counts(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    deep = tmp_path / "a" / "very" / "long" / "folder" / "that" / "goes" / "on" / "and" / "on"
    deep.mkdir(parents=True)
    (deep / "incident.otlp.jsonl").write_bytes((SAMPLES / "incident.otlp.jsonl").read_bytes())
    narrow = runner.invoke(
        app,
        ["import", str(tmp_path / "a"), "--store", str(store_path)],
        env={"COLUMNS": "80"},
    )
    assert narrow.exit_code == 0, narrow.output
    assert "nt.otlp.jsonl" in narrow.stdout  # cut from the left: the file's name shows
    agent = tmp_path / "one.py"
    agent.write_text("def run(ctx):\n    return ctx.tool('lookup', produce=lambda: 1, key='a')\n")
    recorded = ok(invoke(runner, store_path, "record", "--agent", f"{agent}:run"))
    assert ": 1 step, outcome" in recorded.stdout


# --- bounded records, cut-off streams (issue 11, issue 16) -----------------------------------------


def _gzip_with_a_long_line(tmp_path: Path, padding_bytes: int) -> Path:
    """The OTLP sample, gzipped, with a line of ``padding_bytes`` and more as its second line."""
    import gzip

    first, *rest = (SAMPLES / "incident.otlp.jsonl").read_bytes().splitlines(keepends=True)
    long = b'{"resourceSpans": [], "padding": "' + b"x" * padding_bytes + b'"}\n'
    path = tmp_path / "long.otlp.jsonl.gz"
    path.write_bytes(gzip.compress(first + long + b"".join(rest)))
    return path


def test_a_record_over_max_record_bytes_is_refused_or_skipped(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = _gzip_with_a_long_line(tmp_path, 64 << 10)
    stopped = invoke(runner, store_path, "import", str(path), "--max-record-bytes", "16K")
    assert stopped.exit_code == 1
    expected = f"{path}:2: record larger than --max-record-bytes 16384 (a JSON line)"
    assert stopped.stderr.startswith(f"error: {expected}")
    went_on = ok(
        invoke(
            runner, store_path, "import", str(path), "--max-record-bytes", "16K", "--skip-invalid"
        )
    )
    assert "3 added" in went_on.stdout
    assert "skipped 1 invalid record" in went_on.stderr and expected in went_on.stderr
    by_default = ok(invoke(runner, tmp_path / "other.db", "import", str(path)))  # 256M holds it
    assert "3 added" in by_default.stdout


@pytest.mark.parametrize("value", ["0", "-1", "lots", "2T", "1.5M", "2048G"])
def test_a_max_record_bytes_that_is_no_size_is_one_line(
    runner: CliRunner, store_path: Path, value: str
) -> None:
    line = one_line_error(
        invoke(runner, store_path, "import", str(SAMPLES), "--max-record-bytes", value)
    )
    assert f"--max-record-bytes {value} must be a number of bytes from 1 to 1T" in line
    assert not store_path.exists()


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("1048576", 1 << 20),
        ("64K", 64 << 10),
        ("64M", 64 << 20),
        ("1g", 1 << 30),
        ("16MiB", 16 << 20),
    ],
)
def test_max_record_bytes_takes_k_m_g_suffixes(value: str, count: int) -> None:
    from otel_replay.cli._import import byte_count

    assert byte_count(value) == count


def test_a_protobuf_stream_cut_off_in_its_first_message_says_cut_off(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "collector"
    folder.mkdir()
    cut = folder / "a-rotated.pb"
    cut.write_bytes((SAMPLES / "incident.otlp.pb").read_bytes()[:100])  # its first is 9,179 bytes
    (folder / "b-run.jsonl").write_bytes((SAMPLES / "incident.otlp.jsonl").read_bytes())
    stopped = invoke(runner, store_path, "import", str(folder))
    assert stopped.exit_code == 1
    expected = f"{cut} (byte 0): protobuf data is cut off: a message of 9175 bytes ends after 96"
    assert stopped.stderr.startswith(f"error: {expected}")
    went_on = ok(invoke(runner, store_path, "import", str(folder), "--skip-invalid"))
    assert "3 added" in went_on.stdout
    assert "skipped 1 invalid record" in went_on.stderr and expected in went_on.stderr
