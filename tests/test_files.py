"""What an output path names decides how it is written (issue 28, defects 3, 6 and 7): a regular
file is replaced whole, keeping its mode and owner; a symbolic link's target is written and the
link stays; a FIFO, a device or a descriptor is written in place; a folder or a socket is refused;
a full disk or a file-size limit names the file, or says what the store still holds.

Every node here is made in ``tmp_path`` (a FIFO with ``os.mkfifo``, devices with ``os.mknod``):
no test writes to the machine's own ``/dev`` nodes, which the old writer would have replaced.
"""

from __future__ import annotations

import http.client
import os
import re
import resource
import shlex
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from otel_replay import Store
from otel_replay._files import output_file, write_output
from otel_replay.errors import OutputError
from otel_replay.otlp_encode import spans_to_request
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import SAMPLES, big_native_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, devices, RLIMIT_FSIZE")

NATIVE = SAMPLES / "incident.steps.jsonl"


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(NATIVE)))
    return store_path


def _device(path: Path, major: int, minor: int) -> Path:
    """A character device node at ``path`` (a copy of ``/dev/null`` is 1, 3; of ``/dev/full``
    1, 7), or skip where this process may not make one."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("mknod is not permitted here: no device node to write")
    return path


def _is_device(path: Path, major: int, minor: int) -> bool:
    found = os.lstat(path)
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == os.makedev(major, minor)


def _read_fifo_while(fifo: Path, writing: threading.Thread, timeout_s: float = 5.0) -> bytes:
    """What the FIFO's reader gets while ``writing`` runs: opened without blocking, so a writer
    that never opens the FIFO (the old one renamed a file over it) fails the test, not hangs it."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = b""
    writing.start()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(reader, 65536)
            except BlockingIOError:  # a writer is there, nothing written yet
                chunk = None
            if chunk:
                got += chunk
            elif chunk == b"" and got and not writing.is_alive():
                break  # the writer closed: end of file
            time.sleep(0.01)
    finally:
        os.close(reader)
        writing.join(timeout_s)
    return got


# --- what a path names ------------------------------------------------------------------------------


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    """Before: a regular file was renamed over the FIFO and its reader got nothing."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = b"".join(b"line %d\n" % i for i in range(20_000))  # more than a pipe holds at once
    writer = threading.Thread(target=write_output, args=(fifo, data))
    assert _read_fifo_while(fifo, writer) == data
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_a_symlink_stays_a_link_and_its_target_is_written_whole(tmp_path: Path) -> None:
    """Before: the link was replaced by a regular file and its target kept the old report."""
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "latest.json"
    target.write_bytes(b"the previous report")
    target.chmod(0o640)
    link = tmp_path / "report.json"
    link.symlink_to("reports/latest.json")
    chained = tmp_path / "chained.json"  # a link to a link
    chained.symlink_to(link)
    write_output(link, b"the new report")
    assert link.is_symlink() and os.readlink(link) == "reports/latest.json"
    assert target.read_bytes() == b"the new report"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    write_output(chained, b"through two links")
    assert chained.is_symlink() and link.is_symlink()
    assert target.read_bytes() == b"through two links"
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["latest.json"]


def test_a_dangling_symlink_gets_its_target_made(tmp_path: Path) -> None:
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "made" / "later.jsonl")
    write_output(link, b"{}\n")
    assert link.is_symlink() and (tmp_path / "made" / "later.jsonl").read_bytes() == b"{}\n"


def test_a_character_device_is_written_in_place(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """``--out`` naming a device (a copy of /dev/null): written to, never replaced. Before: a
    regular file took its place (run as root, ``--out /dev/null`` replaced the machine's)."""
    null = _device(tmp_path / "null", 1, 3)
    ok(invoke(runner, store, "export", "--out", str(null)))
    ok(invoke(runner, store, "export", "--format", "parquet", "--out", str(null)))
    assert _is_device(null, 1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "store.db", "store.db-shm",
                                                          "store.db-wal"]  # fmt: skip


def test_a_descriptor_is_written_in_place_and_appended_to(tmp_path: Path) -> None:
    """``/proc/self/fd/N`` and ``/dev/fd/N`` name an open descriptor: written through it (a file
    it has open is appended to, as the command's own output is), never resolved to a name."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc/self/fd here")
    read_end, write_end = os.pipe()
    try:
        write_output(Path(f"/proc/self/fd/{write_end}"), b"first ")
        write_output(Path(f"/dev/fd/{write_end}"), b"second")
        assert os.read(read_end, 100) == b"first second"
    finally:
        os.close(read_end)
        os.close(write_end)
    log = tmp_path / "log.txt"
    log.write_bytes(b"kept\n")
    with open(log, "ab") as opened:
        write_output(Path(f"/proc/self/fd/{opened.fileno()}"), b"added\n")
    assert log.read_bytes() == b"kept\nadded\n"


def test_a_directory_or_a_socket_is_refused_in_one_line(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """Before: a folder gave ``Is a directory: .../.out.1a2b3c4d.tmp`` (the temporary file's
    name), and a socket was replaced by a regular file."""
    folder = tmp_path / "out"
    folder.mkdir()
    line = one_line_error(invoke(runner, store, "export", "--out", str(folder)))
    assert line == f"error: cannot write {folder}: it is a folder; name a file to write"
    listening = socket.socket(socket.AF_UNIX)
    try:
        listening.bind(str(tmp_path / "sock"))
        line = one_line_error(invoke(runner, store, "export", "--out", str(tmp_path / "sock")))
        assert (
            line == f"error: cannot write {tmp_path / 'sock'}: it is a socket; name a file to write"
        )
        assert stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)
    finally:
        listening.close()
    assert list(folder.iterdir()) == []


def test_a_file_written_over_keeps_its_mode_and_owner(tmp_path: Path) -> None:
    """Before: the file written over became root's (the writer's), its group root's."""
    if os.geteuid() != 0:
        pytest.skip("only root may give a file another owner")
    target = tmp_path / "report.html"
    target.write_bytes(b"the previous page")
    os.chown(target, 1234, 5678)
    target.chmod(0o2640)  # set-group-id: a change of owner clears it, so mode comes after
    write_output(target, b"the new page")
    kept = target.stat()
    assert (kept.st_uid, kept.st_gid, stat.S_IMODE(kept.st_mode)) == (1234, 5678, 0o2640)
    assert target.read_bytes() == b"the new page"


# --- a disk that refuses -----------------------------------------------------------------------------


def test_a_full_disk_names_the_file(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    """A device that is always full (a copy of /dev/full: every write is ENOSPC), written in
    place: the error names the file. Before: the node was replaced, and the command said it
    wrote the file; on a real full disk it said ``[Errno 28] No space left on device`` alone,
    and Parquet a polars ``ComputeError``."""
    full = _device(tmp_path / "full", 1, 7)
    for format in ("jsonl", "parquet"):
        line = one_line_error(
            invoke(runner, store, "export", "--format", format, "--out", str(full))
        )
        assert line == f"error: cannot write {full}: No space left on device"
    with pytest.raises(OutputError) as raised, output_file(full) as out:
        out.write(b"x" * 100_000)
    assert isinstance(raised.value, OSError) and raised.value.errno == 28
    assert _is_device(full, 1, 7)


def test_an_error_of_the_callers_own_is_not_said_to_be_the_files(tmp_path: Path) -> None:
    """Only what writing the file raised is an `OutputError`; the caller's own `OSError` (a
    trace it could not read) passes as it is, and the file is left as it was."""
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"kept")
    with pytest.raises(OSError) as raised, output_file(target) as out:
        out.write(b"half")
        (tmp_path / "missing.jsonl").read_bytes()
    assert type(raised.value) is FileNotFoundError
    assert target.read_bytes() == b"kept" and sorted(tmp_path.iterdir()) == [target]


def _limited(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` giving the child a file-size limit of ``limit`` bytes (``ulimit -f``)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _agent_replay(*args: object, limit: int) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "otel_replay", *map(str, args)]
    return subprocess.run(
        command, preexec_fn=_limited(limit), capture_output=True, text=True, timeout=120
    )


def _errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("error:")]


def test_a_file_size_limit_names_the_output_and_leaves_it_as_it_was(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """A real EFBIG half way through an export: the file named, the one there kept whole, no
    temporary left. Before: ``File too large: .../.runs.jsonl.1a2b3c4d.tmp``."""
    ok(invoke(runner, store, "import", str(big_native_run(tmp_path, 200_000))))
    out = tmp_path / "runs.jsonl"
    out.write_bytes(b"the previous export\n")
    # 64 KiB: room for the store's -shm file (a reader needs it), not for the export
    done = _agent_replay("export", "--out", out, "--store", store, limit=64 << 10)
    assert done.returncode == 1
    assert _errors(done) == [f"error: cannot write {out}: File too large"]
    assert out.read_bytes() == b"the previous export\n"
    assert not list(tmp_path.glob(".runs.jsonl.*"))


def test_a_real_full_disk_names_the_file_and_keeps_the_one_there(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """A 256 KiB tmpfs (in a user and mount namespace: ``unshare -rm``) filled by an export
    of 1 MB: the file that was there is kept whole, no temporary left. Before: ``error: [Errno
    28] No space left on device``, naming nothing."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no user namespaces here (unshare -rm): cannot make a real full disk")
    ok(invoke(runner, store, "import", str(big_native_run(tmp_path, 1_000_000))))
    disk = tmp_path / "disk"
    disk.mkdir()
    out = disk / "runs.jsonl"
    export = shlex.join(
        [sys.executable, "-m", "otel_replay", "export", "--out", str(out), "--store", str(store)]
    )
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {shlex.quote(str(disk))} && "
        f"echo previous > {shlex.quote(str(out))} && {export}; echo exit=$?; "
        f"cat {shlex.quote(str(out))}; ls -A {shlex.quote(str(disk))}"
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert _errors(done) == [f"error: cannot write {out}: No space left on device"], done.stderr
    assert done.stdout.split() == ["exit=1", "previous", "runs.jsonl"]


def _held(store: Path) -> tuple[list[str], dict[str, int]]:
    with Store.open(store, read_only=True) as db:
        return sorted(s.id for s in db.summaries()), db.counts()


def test_the_file_size_limit_stopping_an_import_says_so(store: Path, tmp_path: Path) -> None:
    """Before: ``the store cannot be read (disk I/O error): it may be damaged`` and a recovery
    recipe, for a store SQLite had rolled back whole."""
    before = _held(store)
    limit = sum(p.stat().st_size for p in tmp_path.glob("store.db*")) + 200_000
    done = _agent_replay(
        "import", big_native_run(tmp_path, 2_000_000), "--store", store, limit=limit
    )
    assert done.returncode == 1
    assert _errors(done) == [
        f"error: the file-size limit of this process (RLIMIT_FSIZE, `ulimit -f`: {limit} bytes) "
        f"stopped the writing of store {store}; nothing was written, the store holds what it held "
        "before: raise the limit and run the command again"
    ]
    assert "damaged" not in done.stderr
    assert _held(store) == before  # it opens, and holds exactly what it held


AGENT = """
import os


def agent(ctx, steps):
    for index in range(steps):  # each step's output 400 kB of text no store can compress
        ctx.tool("fetch", produce=lambda: os.urandom(200_000).hex(), index=index)
    return "done"
"""


def test_the_file_size_limit_stopping_a_record_says_what_it_kept(tmp_path: Path) -> None:
    """A recording keeps its run step by step: stopped by the limit, it says which steps the
    store keeps and how to go on. Before: ``may be damaged``, and its run so far was said of
    nowhere."""
    (tmp_path / "agent.py").write_text(AGENT)
    store = tmp_path / "store.db"
    ok_first = _agent_replay("import", NATIVE, "--store", store, limit=resource.RLIM_INFINITY)
    assert ok_first.returncode == 0, ok_first.stderr
    before = _held(store)
    done = _agent_replay(
        "record", "--agent", f"{tmp_path / 'agent.py'}:agent", "--input", '{"steps": 5}',
        "--store", store, limit=1_000_000,
    )  # fmt: skip
    assert done.returncode == 1
    [line] = _errors(done)
    said = re.fullmatch(
        r"error: the file-size limit of this process \(RLIMIT_FSIZE, `ulimit -f`: 1000000 "
        rf"bytes\) stopped the writing of store {re.escape(str(store))}; the run so far \(its "
        r"first (step|\d+ steps)\) is kept as run (partial-[0-9a-f]+): raise the limit, then "
        r"`agent-replay resume (partial-[0-9a-f]+) --agent \S+:agent` continues it",
        line,
    )
    assert said is not None, line
    kept, partial = 1 if said[1] == "step" else int(said[1].split()[0]), said[2]
    assert said[3] == partial and 0 < kept < 5
    runs, _ = _held(store)
    assert runs == sorted([*before[0], partial])
    with Store.open(store, read_only=True) as db:
        assert len(db.get(partial).steps) == kept


def _big_trace() -> bytes:
    """One whole run as an OTLP/HTTP protobuf body of about 1 MB (spans of the real SDK)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.files")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        for _ in range(40):
            prompt = os.urandom(12_500).hex()
            with tracer.start_as_current_span(
                "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.prompt": prompt}
            ):
                pass
    return bytes(spans_to_request(memory.get_finished_spans()).SerializeToString())


def test_the_file_size_limit_stopping_serve_says_so(store: Path, tmp_path: Path) -> None:
    """The receiver answers 503 (exporters retry) with what stopped it, the store as it was."""
    before = _held(store)
    limit = sum(p.stat().st_size for p in tmp_path.glob("store.db*")) + 200_000
    command = [sys.executable, "-m", "otel_replay", "serve", "--port", "0", "--store", str(store)]
    served = subprocess.Popen(
        command, preexec_fn=_limited(limit), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert served.stdout is not None
        line = served.stdout.readline().decode()
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(
            "POST", "/v1/traces", _big_trace(), {"Content-Type": "application/x-protobuf"}
        )
        answer = connection.getresponse()
        status, body = answer.status, answer.read().decode(errors="replace")
        connection.close()
    finally:
        served.terminate()
        served.communicate(timeout=30)
    assert status == 503
    assert f"the file-size limit of this process (RLIMIT_FSIZE, `ulimit -f`: {limit} bytes)" in body
    assert "the store holds what it held before" in body and "damaged" not in body
    assert _held(store) == before
