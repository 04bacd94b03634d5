"""Regenerate the MLflow fixtures in ``tests/fixtures/platforms/mlflow/`` from the real MLflow.

    python scripts/make_mlflow_fixtures.py [--venv PATH]

``scripts/mlflow/run.py`` is the support agent traced by MLflow (``mlflow.openai.autolog()`` on an
OpenAI client, tools traced with ``@mlflow.trace(span_type="TOOL")``) against the local fake model
server (``examples/fake_model_server.py``), logging its traces to a real ``mlflow server``
(SQLite backend, a free loopback port) that it starts. It writes each run's ``Trace.to_json()``,
the runs as JSON Lines, and the server's REST answers (see its docstring). MLflow gets its own
virtual environment (``--venv``), filled from ``scripts/mlflow/requirements.txt`` (a frozen list:
every package pinned, so ``pip install --no-deps`` installs exactly it); MLflow is needed here only,
never by the tests that read the fixtures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mlflow" / "run.py"
REQUIREMENTS = ROOT / "scripts" / "mlflow" / "requirements.txt"
FIXTURES = ROOT / "tests" / "fixtures" / "platforms" / "mlflow"


def environment(home: Path) -> Path:
    """MLflow's virtual environment, created and filled from the frozen requirements."""
    python = home / "bin" / "python"
    stamp = home / "requirements.txt"
    if stamp.is_file() and stamp.read_bytes() == REQUIREMENTS.read_bytes():
        return python
    venv.create(home, with_pip=True, clear=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-r", REQUIREMENTS], check=True
    )
    stamp.write_bytes(REQUIREMENTS.read_bytes())
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".cache" / "mlflow-venv")
    args = parser.parse_args(argv)
    python = environment(args.venv)
    for old in FIXTURES.glob("*.json*"):
        old.unlink()
    subprocess.run(
        [python, SCRIPT, FIXTURES],
        check=True,
        env={
            "PYTHONPATH": str(ROOT / "scripts" / "frameworks"),
            "PATH": f"{python.parent}:/usr/bin:/bin",
            "HOME": str(args.venv),
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "DO_NOT_TRACK": "true",
        },
        cwd=ROOT,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
