"""Running a real MLflow tracking server (``mlflow server`` from ``.mlflow-venv``) on a free loopback
port with its SQLite database in a folder, and feeding it traces written by MLflow's own tracing of
the support agent (`tests/platforms/mlflow_agent.py`, run with the venv's Python)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.platforms.phoenix_server import free_port

ROOT = Path(__file__).resolve().parents[2]
MLFLOW_VENV = ROOT / ".mlflow-venv"
MLFLOW = MLFLOW_VENV / "bin" / "mlflow"
PYTHON = MLFLOW_VENV / "bin" / "python"
AGENT = Path(__file__).resolve().parent / "mlflow_agent.py"
#: The versions `.ci/run` installs there.
VERSION = "3.17.2"
OPENAI_VERSION = "3.63.0"
MISSING = (
    f"MLflow is not installed in {MLFLOW_VENV} (python3 -m venv .mlflow-venv && "
    f".mlflow-venv/bin/pip install mlflow[auth]=={VERSION} openai=={OPENAI_VERSION}; .ci/run does it)"
)
_READY_SECONDS = 120.0
ADMIN = "admin"
#: What the server and the agent run with besides the test's environment: no telemetry, no
#: tracking server or key of the user's.
QUIET = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}


class MlflowFailed(RuntimeError):
    """The server did not start, or the agent did not log its trace."""


@dataclass
class Mlflow:
    """A running server: ``address`` is HOST:PORT, as ``mlflow://`` URLs name it; ``process`` is
    the server's, so a test can stop it half way."""

    address: str
    process: subprocess.Popen[bytes]
    started_in: float = 0.0
    password: str | None = None  # the admin's, when the server runs MLflow's basic-auth app

    @property
    def base(self) -> str:
        return f"http://{self.address}"

    def run_agent(self, experiment: str, question: str, models_url: str, orders_url: str) -> str:
        """The support agent answering ``question``, traced into ``experiment`` (made when it is
        new) by MLflow's tracing; the model at ``models_url`` (OpenAI's ``/v1``), the order
        service at ``orders_url``. The trace's id (``tr-…``), once the server has it."""
        env = {
            **_environment(),
            "OPENAI_BASE_URL": models_url,
            "ORDER_SERVICE_URL": orders_url,
            "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",  # logged before the script ends
        }
        if self.password is not None:
            env |= {"MLFLOW_TRACKING_USERNAME": ADMIN, "MLFLOW_TRACKING_PASSWORD": self.password}
        done = subprocess.run(
            [str(PYTHON), str(AGENT), self.base, experiment, question],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        lines = done.stdout.split()
        if done.returncode != 0 or not lines or not lines[-1].startswith("tr-"):
            raise MlflowFailed(
                f"the traced agent failed ({done.returncode}):\n{done.stderr[-2000:]}"
            )
        self._await_spans(lines[-1])
        return lines[-1]

    def _await_spans(self, trace_id: str, seconds: float = 30.0) -> None:
        """Wait until the server gives the trace's spans: it can answer for a trace whose spans
        it has not committed yet ("Trace data not stored in tracking store") just after the
        agent's process ends, even with synchronous logging."""
        url = f"{self.base}/api/3.0/mlflow/traces/batchGet?trace_ids={trace_id}"
        request = urllib.request.Request(url)
        if self.password is not None:
            token = base64.b64encode(f"{ADMIN}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        deadline = time.monotonic() + seconds
        while True:
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    traces = json.loads(answer.read()).get("traces") or []
                if traces and traces[0].get("spans"):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise MlflowFailed(f"the server never gave the spans of {trace_id}")
            time.sleep(0.2)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "OPENAI_"))}
    return {**env, **QUIET}


@contextmanager
def serve(folder: Path, password: str | None = None) -> Iterator[Mlflow]:
    """``mlflow server`` with its SQLite database and artifacts in ``folder``, one worker, until the
    block ends (or a test stopped it); with ``password``, MLflow's basic-auth app on, the user
    `ADMIN` having that password."""
    if not MLFLOW.exists():
        raise MlflowFailed(MISSING)
    port = free_port()
    command = [str(MLFLOW), "server", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    command += ["--default-artifact-root", str(folder / "artifacts"), "--workers", "1"]
    env = _environment()
    if password is not None:
        command += ["--app-name", "basic-auth"]
        config = folder / "basic_auth.ini"
        config.write_text(
            "[mlflow]\ndefault_permission = READ\n"
            f"database_uri = sqlite:///{folder / 'auth.db'}\nadmin_username = {ADMIN}\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        )
        env |= {
            "MLFLOW_AUTH_CONFIG_PATH": str(config),
            "MLFLOW_AUTH_ADMIN_PASSWORD": password,
            "MLFLOW_FLASK_SERVER_SECRET_KEY": "agent-replay-tests-secret",
        }
    log = folder / "mlflow.log"
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, cwd=folder, stdout=out, stderr=out, start_new_session=True
        )
    try:
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise MlflowFailed(f"mlflow server exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() - started > _READY_SECONDS:
                    raise MlflowFailed(
                        f"mlflow server not ready after {_READY_SECONDS:.0f} s"
                    ) from None
                time.sleep(0.25)
        yield Mlflow(f"127.0.0.1:{port}", process, time.monotonic() - started, password)
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and the workers it started (its own process group)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, 15)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
