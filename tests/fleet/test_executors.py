"""Executors (issue 14, part 1): the same report on threads, a process pool and Ray, for any number
of workers; a worker that dies is retried and changes nothing; one that always dies is a clear
error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.executors import Processes, Threads
from otel_replay.executors._base import BATCHES_PER_WORKER, WorkerDied, batches
from tests.attribution.models import CHAIN
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import requires_ray

requires_ray()

ARGS = ["--method", "all", "--repair", "--permutations", "8", "--seed", "3"]


def _report(runner: CliRunner, store: Path, out: Path, *extra: str) -> dict[str, Any]:
    ok(invoke(runner, store, "attribute", CHAIN.trajectory_id, *extra, "--out", str(out)))
    report: dict[str, Any] = orjson.loads(out.read_bytes())
    report["cost"].pop("wall_seconds")
    return report


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    return store_path


def dying_module(folder: Path, *, always: bool = False) -> Path:
    """The chain's resample functions, with ``read_config`` killing its worker process (never this
    test's own) the first time it runs there (``always``: every time)."""
    source = CHAIN.resamplers.read_text()
    marker = folder / "died-once"
    head = "def read_config(step: Step, ctx: RolloutContext) -> Any:\n"
    assert head in source
    dying = source.replace(head, head + "    _die()\n") + (
        "\n\ndef _die() -> None:\n"
        "    import os, pathlib\n"
        f"    if os.getpid() == {os.getpid()}:\n"
        "        return\n"
        f"    marker = pathlib.Path({str(marker)!r})\n"
        f"    if {always!r} or not marker.exists():\n"
        "        marker.touch()\n"
        "        os._exit(13)\n"
    )
    path = folder / ("always_dying.py" if always else "dying_once.py")
    path.write_text(dying)
    return path


def test_the_report_is_the_same_on_every_executor_and_any_number_of_workers(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    code = ["--resamplers", str(CHAIN.resamplers), *ARGS]
    one = _report(runner, store, tmp_path / "one.json", *code)
    assert one["point_of_commitment"] == 1 and one["repair"] is not None
    for name, extra in {
        "threads-3": ["--workers", "3"],
        "process-2": ["--executor", "process", "--workers", "2"],
        "ray-2": ["--executor", "ray", "--workers", "2"],
    }.items():
        assert _report(runner, store, tmp_path / f"{name}.json", *code, *extra) == one, name


def test_a_worker_that_dies_is_retried_and_changes_nothing(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    code = ["--resamplers", str(CHAIN.resamplers), *ARGS]
    expected = _report(runner, store, tmp_path / "threads.json", *code)
    dying = ["--resamplers", str(dying_module(tmp_path)), *ARGS]
    for executor in ("process", "ray"):
        (tmp_path / "died-once").unlink(missing_ok=True)
        got = _report(
            runner,
            store,
            tmp_path / f"{executor}.json",
            *dying,
            "--executor",
            executor,
            "--workers",
            "2",
        )
        assert (tmp_path / "died-once").exists(), (
            f"no {executor} worker died: the test tests nothing"
        )
        assert _named_apart(got) == _named_apart(expected), executor


def test_a_worker_that_always_dies_is_a_one_line_error(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    dying = ["--resamplers", str(dying_module(tmp_path, always=True)), *ARGS]
    line = one_line_error(
        invoke(
            runner,
            store,
            "attribute",
            CHAIN.trajectory_id,
            *dying,
            "--executor",
            "process",
            "--workers",
            "2",
        )
    )
    assert "died 4 times running the same batch" in line


def _named_apart(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what names the module it ran (the dying copy has another file name)."""
    config = {
        k: v for k, v in report["config"].items() if k not in ("resamplers", "verifier", "rerun")
    }
    repair = {k: v for k, v in (report["repair"] or {}).items() if k != "source"}
    # each step's variation names the resample function that varies it, module and all
    steps = [{k: v for k, v in s.items() if k != "variation"} for s in report["steps"]]
    return {**report, "config": config, "repair": repair, "steps": steps}


class Square:
    """A picklable piece of work: prepared once per worker, one item at a time."""

    def prepare(self) -> int:
        return os.getpid()

    def run(self, state: int, item: int) -> tuple[int, int]:
        return item * item, state


def test_results_come_back_in_order_and_the_work_is_prepared_once_per_worker() -> None:
    items = list(range(50))
    on_threads = [value for value, _ in Threads(4).map(Square(), items)]
    pool = Processes(2)
    try:
        counted: list[int] = []
        got = list(pool.map(Square(), items, counted.append))
    finally:
        pool.close()
    assert [value for value, _ in got] == on_threads == [i * i for i in items]
    assert sum(counted) == len(items)
    workers = {pid for _, pid in got}
    assert os.getpid() not in workers and 1 <= len(workers) <= 2


def test_batches_give_each_worker_a_few() -> None:
    cut = batches(list(range(100)), 5)
    assert [x for batch in cut for x in batch] == list(range(100))
    assert len(cut) == 20 == 5 * BATCHES_PER_WORKER
    assert batches(list(range(7)), 4) == [[i] for i in range(7)]
    assert [len(b) for b in batches(list(range(10)), 1, largest=3)] == [3, 3, 2, 2]
    assert sorted({len(b) for b in batches(list(range(80)), 8)}) == [2, 3]
    assert batches([], 3) == []


def test_worker_died_is_a_project_error() -> None:
    from otel_replay.errors import ReplayError

    assert issubclass(WorkerDied, ReplayError)


def test_a_pool_whose_workers_died_while_idle_is_started_anew() -> None:
    """Workers killed between two maps (the OOM killer, say) break the pool before the next map
    hands it anything: that map starts a new pool instead of failing on the broken one."""
    import multiprocessing
    import signal
    import time

    pool = Processes(2)
    try:
        assert [value for value, _ in pool.map(Square(), [1, 2, 3])] == [1, 4, 9]
        workers = multiprocessing.active_children()
        assert workers
        for worker in workers:
            os.kill(worker.pid or 0, signal.SIGKILL)
        for worker in workers:
            worker.join()
        time.sleep(0.5)  # the pool's own thread notices and marks it broken
        got = list(pool.map(Square(), list(range(10))))
    finally:
        pool.close()
    assert [value for value, _ in got] == [i * i for i in range(10)]


class Noted:
    """Work whose ``prepare`` appends this process's id to a file, so a test can count how many
    times, and where, it ran."""

    def __init__(self, notes: Path) -> None:
        self.notes = notes

    def prepare(self) -> int:
        with self.notes.open("a") as out:
            out.write(f"{os.getpid()}\n")
        return os.getpid()

    def run(self, state: int, item: int) -> tuple[int, int]:
        return item + 1, state


def _prepared_in(notes: Path) -> list[int]:
    return [int(line) for line in notes.read_text().split()]


def test_a_pool_stays_warm_across_maps_and_prepares_each_work_once_per_process(
    tmp_path: Path,
) -> None:
    """The plans of one attribution map the same work many times: the processes started with
    the pool run all of them, and each prepares the work once, however many maps come."""
    pool = Processes(2)
    try:
        started = pool.worker_ids()
        work = Noted(tmp_path / "prepared")
        seen: set[int] = set()
        for plan in range(6):
            got = list(pool.map(work, list(range(plan * 10, plan * 10 + 10))))
            assert [value for value, _ in got] == list(range(plan * 10 + 1, plan * 10 + 11))
            seen |= {pid for _, pid in got}
        other = Noted(tmp_path / "other")  # a fleet's next piece of work: same processes
        seen |= {pid for _, pid in pool.map(other, list(range(20)))}
    finally:
        pool.close()
    assert len(started) == 2 and os.getpid() not in started
    assert seen <= started, "a map started processes of its own"
    prepared = _prepared_in(tmp_path / "prepared")
    assert len(prepared) == len(set(prepared)) <= 2, prepared  # once per process, not per map
    assert set(_prepared_in(tmp_path / "other")) <= started


def test_ray_actors_stay_warm_across_maps_and_prepare_each_work_once_per_actor(
    tmp_path: Path,
) -> None:
    from otel_replay.executors import RayExecutor

    ray = RayExecutor(4)  # on a machine of fewer cores: an actor per core, on threads
    try:
        actors = ray.worker_ids()
        work = Noted(tmp_path / "prepared")
        seen: set[int] = set()
        for plan in range(6):
            got = list(ray.map(work, list(range(plan * 10, plan * 10 + 10))))
            assert [value for value, _ in got] == list(range(plan * 10 + 1, plan * 10 + 11))
            seen |= {pid for _, pid in got}
    finally:
        ray.close()
    assert len(actors) == min(4, os.cpu_count() or 1) and seen <= actors
    assert ray.workers >= 4
    prepared = _prepared_in(tmp_path / "prepared")
    assert len(prepared) == len(set(prepared)) <= len(actors), prepared


def test_the_work_is_pickled_once_for_all_the_maps_of_it(tmp_path: Path) -> None:
    """Re-pickling the run and the code for every plan is what the pool is spared: the file the
    workers read is written once per piece of work."""
    pool = Processes(1)
    try:
        work = Noted(tmp_path / "prepared")
        list(pool.map(work, [1]))
        shipped = {p: p.stat().st_mtime_ns for p in Path(pool._path).parent.iterdir()}
        for _ in range(3):
            list(pool.map(work, [2, 3]))
        assert {p: p.stat().st_mtime_ns for p in Path(pool._path).parent.iterdir()} == shipped
        assert len(shipped) == 1
    finally:
        pool.close()


def test_an_attribution_loads_the_code_once_per_worker_for_all_its_plans(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """An attribution's plans (a search, then a scan: many maps) all run on the workers the pool
    started with, each of which loads the user's code once; the report is the threads' own."""
    notes = tmp_path / "loaded"
    source = CHAIN.resamplers.read_text() + (
        f"\n\nwith open({str(notes)!r}, 'a') as _out:\n    _out.write(f'{{__import__(\"os\").getpid()}}\\n')\n"
    )
    noting = tmp_path / "noting.py"
    noting.write_text(source)
    code = ["--resamplers", str(noting), "--seed", "3"]
    expected = _report(runner, store, tmp_path / "threads.json", *code)
    notes.write_text("")
    got = _report(
        runner, store, tmp_path / "process.json", *code, "--executor", "process", "--workers", "2"
    )
    assert got == expected
    loads = [pid for pid in _prepared_in(notes) if pid != os.getpid()]  # this process's: 1 check
    assert expected["cost"]["rollouts"] > 8  # many plans, many batches ...
    assert 1 <= len(loads) == len(set(loads)) <= 2, loads  # ... one load per worker


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_ray_address_reaches_a_cluster_started_with_ray_start(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """``ray start --head`` as the README shows, then ``--ray-address HOST:PORT``: the report is
    the threads' own, and the cluster is left running (it is not the command's to stop)."""
    import shutil
    import subprocess
    import sys
    import tempfile
    import time

    port = _free_port()
    ray_cli = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    # a short folder: Ray's sockets live under it, and a socket's path has a length limit
    folder = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen(
        [ray_cli, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
         "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={folder}", "--block"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        code = ["--resamplers", str(CHAIN.resamplers), *ARGS]
        expected = _report(runner, store, tmp_path / "threads.json", *code)
        deadline = time.monotonic() + 60
        while True:  # the head takes a few seconds to answer
            try:
                _free_socket_answers(port)
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "head.log").read_text()[-2000:]
                time.sleep(0.5)
        # the command as a user runs it, a process of its own (this one has had local Rays)
        out = tmp_path / "cluster.json"
        done = subprocess.run(
            [sys.executable, "-m", "otel_replay", "attribute", CHAIN.trajectory_id, *code,
             "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(out),
             "--store", str(store)],
            capture_output=True, text=True, timeout=300,
            # Ray's clusters ask for a token (its own local file): a driver given an address
            # sends it only when told to, as the README says
            env={**os.environ, "RAY_AUTH_MODE": "token"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        got = orjson.loads(out.read_bytes())
        got["cost"].pop("wall_seconds")
        assert got == expected
        assert head.poll() is None  # the command left the cluster running
    finally:
        head.terminate()  # the head stops the processes it started
        head.wait(60)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _free_socket_answers(port: int) -> None:
    import socket

    socket.create_connection(("127.0.0.1", port), 1).close()


def test_a_ray_address_nothing_answers_at_is_a_one_line_error(
    runner: CliRunner, store: Path
) -> None:
    port = _free_port()
    line = one_line_error(
        invoke(
            runner,
            store,
            "attribute",
            CHAIN.trajectory_id,
            "--resamplers",
            str(CHAIN.resamplers),
            "--executor",
            "ray",
            "--ray-address",
            f"127.0.0.1:{port}",
        )
    )
    assert f"cannot reach a Ray cluster at --ray-address '127.0.0.1:{port}'" in line
    assert "ray start --head" in line


def test_pool_processes_end_when_the_process_that_made_them_is_killed(tmp_path: Path) -> None:
    """A command killed (SIGKILL: no chance to shut its pool down) leaves no worker behind: each
    watches the process that made the pool and ends within seconds of it (issue 28)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import time\n"
        "from otel_replay.executors import Processes\n"
        "if __name__ == '__main__':\n"
        "    pool = Processes(2)\n"
        "    print(' '.join(map(str, sorted(pool.worker_ids()))), flush=True)\n"
        "    time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2, workers
        assert all(_alive(pid) for pid in workers)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its parent"


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has ended: where nothing reaps orphans, as in some
    containers, it stays in the table)."""
    import subprocess

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return not state.stdout.strip().startswith("Z")


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (``ps``: Linux and macOS alike)."""
    import subprocess

    table = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, check=True)
    children: dict[int, list[int]] = {}
    for line in table.stdout.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def test_a_killed_attribute_leaves_no_process_and_no_work_file_behind(
    store: Path, tmp_path: Path
) -> None:
    """``attribute --executor process`` killed mid-run (SIGKILL: no chance to shut its pool down):
    its workers, the fork server and multiprocessing's resource tracker are all gone within
    seconds, and so is the folder the work was shipped in (issue 28)."""
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "started"
    source = CHAIN.resamplers.read_text()
    head = "def read_config(step: Step, ctx: RolloutContext) -> Any:\n"
    slow = tmp_path / "slow_chain.py"
    slow.write_text(
        source.replace(
            head,
            head + f"    import pathlib, time\n    pathlib.Path({str(started)!r}).touch()\n"
            "    time.sleep(0.5)\n",
        )
    )
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    command = [sys.executable, "-m", "otel_replay", "attribute", CHAIN.trajectory_id]
    command += ["--store", str(store), "--resamplers", str(slow), "--method", "all"]
    command += ["--executor", "process", "--workers", "2"]
    parent = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(temporary)},
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and parent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "no rollout ran in a worker: the test tests nothing"
        below = _descendants(parent.pid)
        assert len(below) >= 4, below  # two workers, the fork server, the resource tracker
        assert list(temporary.glob("agent-replay-work-*")), "no work folder was made"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in below if _alive(pid)] == [], "a process outlived the command"
    assert list(temporary.glob("agent-replay-work-*")) == []
