"""Run a page's ``sh`` blocks as a reader would, and say what went wrong where.

The blocks of a page run in page order in one folder made for the page, holding copies of the
repository's `COPIED` folders, so the commands are written as from the repository's root. Each
command is one ``bash -o pipefail -c`` with a time limit, stdin closed, in its own process group
(killed afterwards, so nothing it started outlives it). The environment is the test's without
anything of agent-replay's, OpenAI's, Anthropic's, OpenTelemetry's or Phoenix's (the store is the
folder's ``.agent-replay/store.db``, no model or collector is reached by accident), with the test
venv's ``bin`` first on PATH, and rich's width set wide so a table does not cut what a page expects.

A command ending in ``&`` starts a server the later commands of the page talk to (``agent-replay
serve --port 4318 &``, ``agent-replay ui --port 8765 &``, the examples' model servers): it listens
on a free port put for the one its ``--port`` names (see `_PageRun`), it is ready when that port
accepts connections (or, with no ``--port``, when it has printed a line), and it is stopped when
the page is done; what it printed by the block's end counts as the block's output. A command
that never ends on its own and is not so written is cut at
`TIMEOUT_S` and fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs_pages import Block, Command, Page
from tests.docs_paths import COPIED, is_background, split

#: One command's time limit: it only cuts a command that never ends, so it is far past the slowest
#: documented one (the 1,000-run fleet, about a minute) on a machine busy with other work.
TIMEOUT_S = 600.0
READY_TIMEOUT_S = 120.0  # a server started with `&` listening (a second or two, unless very busy)
TAIL_LINES = 25  # of a failing command's output, in the failure
DROPPED = ("AGENT_REPLAY_", "OPENAI_", "ANTHROPIC_", "OTEL_", "PHOENIX_", "PYTHONPATH")
_PORT = re.compile(r"^--port(?:=(\d+))?$")


@dataclass(frozen=True)
class Ran:
    """One finished command: its exit code (None: cut at the time limit) and its output."""

    code: int | None
    output: str


def make_folder(root: Path, folder: Path) -> Path:
    """``folder``, made to hold copies of the repository's `COPIED` folders."""
    folder.mkdir(parents=True)
    for name in COPIED:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(root / name, folder / name, ignore=ignore)
    return folder


def environment() -> dict[str, str]:
    """What every command of a page runs with (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["VIRTUAL_ENV"] = sys.prefix
    env.update(COLUMNS="200", NO_COLOR="1", TERM="dumb")
    return env


def run_page(page: Page, folder: Path) -> list[str]:
    """Run the page's runnable blocks in ``folder``; a sentence for each thing that failed."""
    failures: list[str] = []
    logs = folder.parent / f"{folder.name}-servers"
    logs.mkdir(exist_ok=True)
    with contextlib.ExitStack() as servers:
        run = _PageRun(folder, environment(), servers, logs)
        for block in page.blocks:
            if not block.runs:
                continue
            with contextlib.ExitStack() as needs:
                env = dict(run.env)
                if "openai" in block.needs:
                    env.update(needs.enter_context(_openai_server()))
                failures.extend(run.block(block, env))
    return failures


@dataclass
class _PageRun:
    """What the blocks of one page share: the folder, the servers started, the ports moved.

    A server's documented port (``--port 8000``) may be taken on a shared machine, so each one
    listens on a free port instead, and that port's number is put for the documented one in the
    page's later commands (``--port 8000``, ``127.0.0.1:8000``): the commands talk to the server
    the page started, never to whatever else holds the port.
    """

    folder: Path
    env: dict[str, str]
    servers: contextlib.ExitStack
    logs: Path
    ports: dict[int, int] = field(default_factory=dict)

    def block(self, block: Block, env: dict[str, str]) -> list[str]:
        """Run one block's commands; its failures (a block stops at its first failing command)."""
        outputs: list[str] = []
        started: list[Path] = []  # the logs of the servers the block starts
        for number, command in enumerate(block.commands, start=1):
            where = f"{block.page}:{command.line}: `{command.text}`"
            if is_background(command):
                started.append(self.logs / f"{command.line}.log")
                problem = self._start_server(command, env, started[-1])
                if problem:
                    return [f"{where} {problem}"]
                continue
            expected = block.exit_code if number == len(block.commands) else 0
            ran = _run(self._moved(command.text), self.folder, env)
            outputs.append(ran.output)
            if ran.code != expected:
                said = f"ran past {TIMEOUT_S:.0f} s" if ran.code is None else f"exited {ran.code}"
                left = len(block.commands) - number
                after = f" the block's {left} later command(s) not run;" if left else ""
                return [
                    f"{where} {said}, expected exit {expected};{self._ports_said(command.text)}"
                    f"{after} its output ends:\n{_tail(ran.output)}"
                ]
        outputs += [log.read_text(errors="replace") for log in started]  # what they said so far
        text = _squeezed("\n".join(outputs))
        return [
            f"{block.page}:{block.line}: the block's output lacks {wanted!r}; it ends:\n"
            f"{_tail(chr(10).join(outputs))}"
            for wanted in block.expect
            if _squeezed(wanted) not in text
        ]

    def _start_server(self, command: Command, env: dict[str, str], log: Path) -> str | None:
        """Start a command ending in ``&``, stopped when the page is done; why it failed, or None."""
        port = _port(split(command) or [])
        if port is not None and port not in self.ports:
            self.ports[port] = _free_port()
        text = self._moved(command.text.rstrip())
        text = text[: text.rindex("&")]  # bash would put it in the background; the runner does
        with log.open("w") as sink:
            process = subprocess.Popen(
                ["bash", "-c", text],
                cwd=self.folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.servers.callback(_stop, process)
        listening = None if port is None else self.ports[port]
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                said = f"exited {process.returncode} at once;{self._ports_said(command.text)}"
                return f"{said} its output ends:\n{_tail(log.read_text())}"
            if log.stat().st_size > 0 if listening is None else _listening(listening):
                return None
            time.sleep(0.05)
        waited = "a line of output" if listening is None else f"port {listening} listening"
        said = f"gave no sign of {waited} in {READY_TIMEOUT_S:.0f} s"
        return f"{said}; its output ends:\n{_tail(log.read_text())}"

    def _moved(self, text: str) -> str:
        """``text`` with each server's documented port replaced by the one it listens on."""
        for documented, used in self.ports.items():
            text = re.sub(rf"(?<=:){documented}\b|(?<=--port[ =]){documented}\b", str(used), text)
        return text

    def _ports_said(self, text: str) -> str:
        """The servers' ports moved that ``text`` names (its output shows the port used)."""
        moved = ", ".join(f"{a} on {b}" for a, b in self.ports.items() if str(a) in text)
        return f" (servers' documented ports: {moved})" if moved else ""


def _run(text: str, folder: Path, env: dict[str, str]) -> Ran:
    process = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", text],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: whatever it starts goes with it
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_S)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGKILL)
        output, _ = process.communicate()
        code = None
    _kill_group(process, signal.SIGKILL)  # anything it left behind
    return Ran(code, output)


@contextlib.contextmanager
def _openai_server() -> Iterator[dict[str, str]]:
    """The incident's model behind an OpenAI-compatible endpoint on a free loopback port (the
    samples are the incident's runs), and the variables that point the commands at it."""
    from examples.incident.openai_server import serve

    server, base_url = serve(0)
    try:
        yield {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-local-fake-server"}
    finally:
        server.shutdown()
        server.server_close()


def _port(words: list[str]) -> int | None:
    for index, word in enumerate(words):
        found = _PORT.match(word)
        if found:
            value = found[1] or (words[index + 1] if index + 1 < len(words) else "")
            return int(value) if value.isdigit() else None
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    _kill_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGKILL)
        process.wait()


def _kill_group(
    process: subprocess.Popen[str] | subprocess.Popen[bytes], sig: signal.Signals
) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def _tail(output: str) -> str:
    lines = output.rstrip().splitlines()[-TAIL_LINES:] or ["(nothing)"]
    return "\n".join(f"    | {line}" for line in lines)
