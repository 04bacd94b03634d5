"""The store when the machine pushes back: another writer holding the lock, a full disk, a store
that may only be read (issue 11, items 8–10).

The full disk and the read-only disk are real: the tests run the CLI in a user and mount namespace
(``unshare -rm``) over a small tmpfs or a read-only bind mount. Where the kernel allows no user
namespaces those tests skip and say so; the library-level tests beside them run everywhere.
"""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from otel_replay import Store, StoreError, read_path
from otel_replay.store import _connection
from tests.conftest import SAMPLES, big_native_run

NATIVE = SAMPLES / "incident.steps.jsonl"
NATIVE_IDS = sorted(run.id for run in read_path(NATIVE))


def _runs(store: Path) -> list[str]:
    with Store.open(store, read_only=True) as db:
        return sorted(s.id for s in db.summaries())


# --- a second writer --------------------------------------------------------------------------------


def test_a_writer_waits_past_sqlites_timeout_and_says_it_is_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the second writer died with ``database is locked`` once SQLite's busy timeout ran
    out. Now it waits as long as the other writer writes, and says so once."""
    monkeypatch.setattr(_connection, "BUSY_TIMEOUT_MS", 100)
    monkeypatch.setattr(_connection, "WAIT_NOTICE_SECONDS", 0.3)
    path = tmp_path / "store.db"
    Store.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another import, mid-transaction
    release = threading.Timer(1.5, lambda: holder.execute("COMMIT"))
    notices: list[float] = []
    started = time.monotonic()
    with Store.open(path, on_wait=lambda: notices.append(time.monotonic() - started)) as db:
        release.start()
        db.put_all(read_path(NATIVE))
    release.join()
    holder.close()
    assert len(notices) == 1 and 0.3 <= notices[0] < 1.5
    assert time.monotonic() - started >= 1.5  # it waited for the holder, well past the timeout
    assert len(_runs(path)) == 3


def test_the_cli_tells_the_user_it_is_waiting(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    Store.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    command = [sys.executable, "-m", "otel_replay", "import", str(NATIVE), "--store", str(path)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stderr is not None
    # the notice comes while the lock is held (however slowly the process starts on a busy machine)
    first = process.stderr.readline()
    assert process.poll() is None  # still waiting, not dead
    holder.execute("COMMIT")
    holder.close()
    _, rest = process.communicate(timeout=60)
    err = first + rest
    assert process.returncode == 0, err
    assert "waiting for another import to finish" in first, err
    assert len(_runs(path)) == 3


# --- a full disk ------------------------------------------------------------------------------------


def test_a_full_disk_is_named_and_the_store_stays_as_it_was(tmp_path: Path) -> None:
    """SQLite's own full-disk result (``max_page_count`` caps the file the way a full disk does).
    Before: ``cannot rollback - no transaction is active`` hid the cause."""
    path = tmp_path / "store.db"
    with Store.open(path) as db:
        db.put_all(read_path(SAMPLES / "incident.otlp.jsonl"))
        before = _runs(path)
        pages = db._db.execute("PRAGMA page_count").fetchone()[0]
        db._db.execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(StoreError, match="no space left on the disk holding") as raised:
            db.put_all(read_path(big_native_run(tmp_path, 400_000)))
        assert "rollback" not in str(raised.value)
        assert not db._db.in_transaction
    assert _runs(path) == before


def _namespace_script(script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` under sh as root of a new user and mount namespace; skip where there is none."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(
            "no user namespaces here (unshare -rm): cannot make a real full or read-only disk"
        )
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )


def _cli(*args: object) -> str:
    return shlex.join([sys.executable, "-m", "otel_replay", *map(str, args)])


def test_a_full_disk_from_the_cli(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    store = disk / "store.db"
    big = big_native_run(tmp_path, 3_000_000)
    script = "; ".join(
        [
            f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(disk))}",
            _cli("import", NATIVE, "--store", store) + " >/dev/null || exit 90",
            _cli("import", big, "--store", store) + "; echo exit=$?",
            _cli("list", "--json", "--store", store),
        ]
    )
    done = _namespace_script(script)
    assert "exit=1" in done.stdout, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left on the disk holding" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    listed = orjson.loads(done.stdout.split("exit=1", 1)[1])
    assert sorted(run["id"] for run in listed) == NATIVE_IDS


# --- a store that may only be read ------------------------------------------------------------------


def test_reading_commands_work_on_a_read_only_store(tmp_path: Path) -> None:
    """Before: ``list`` on a store in a read-only folder failed with ``unable to open database
    file``. Reading commands open the store read-only; writing ones say it is read-only."""
    folder = tmp_path / "shelf"
    store = folder / "store.db"
    with Store.open(store) as db:
        db.put_all(read_path(NATIVE))
    assert not Path(f"{store}-wal").exists()  # closed cleanly: the file is the whole store
    out = tmp_path / "out.jsonl"
    script = "; ".join(
        [
            f"mount --bind {shlex.quote(str(folder))} {shlex.quote(str(folder))}",
            f"mount -o remount,bind,ro {shlex.quote(str(folder))}",
            f"touch {shlex.quote(str(folder / 'probe'))} 2>/dev/null && exit 91",
            _cli("list", "--json", "--store", store) + " || exit 92",
            _cli("show", NATIVE_IDS[0], "--store", store) + " >/dev/null || exit 93",
            _cli("export", "--out", out, "--store", store) + " || exit 94",
            _cli("import", SAMPLES / "incident.otlp.jsonl", "--store", store) + "; echo exit=$?",
        ]
    )
    done = _namespace_script(script)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert "exit=1" in done.stdout
    assert sorted(r["id"] for r in orjson.loads(done.stdout.split("exit=", 1)[0])) == NATIVE_IDS
    assert len(out.read_bytes().splitlines()) == 3
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "read-only" in errors[0], done.stderr


def test_a_read_only_open_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with Store.open(path) as db:
        db.put_all(read_path(NATIVE))
    before = path.read_bytes()
    with Store.open(path, read_only=True) as db:
        assert len(db.summaries()) == 3
        with pytest.raises(StoreError, match="read-only"):
            db.put_all(read_path(SAMPLES / "incident.otlp.jsonl"))
    assert path.read_bytes() == before
    with pytest.raises(StoreError, match="there is no store"):
        Store.open(tmp_path / "none.db", read_only=True)
    assert not (tmp_path / "none.db").exists()
