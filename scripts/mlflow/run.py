"""The support agent traced by MLflow: an OpenAI chat-completions client (``mlflow.openai.autolog``)
against the loopback fake model server, tools traced with ``@mlflow.trace(span_type="TOOL")``, the
whole agent an ``AGENT`` span. Its traces go to a real ``mlflow server`` (SQLite backend, a free
loopback port) that this script starts; each trace is then written as ``Trace.to_json()`` and the
server's own REST answers for it are captured.

    python run.py OUT_DIR     (PYTHONPATH must hold scripts/frameworks, for fake_models)

Runs:

* ``pass``: "Look order A-1001 up and check the refund policy at once ...": the first response
  asks for lookup_order and search_policies together (two calls in one turn, run on two threads),
  then track_shipment, then the answer. Feedback ``outcome`` true.
* ``tool-error``: "Where is my order A-1001 ...": lookup_order raises, the agent sends the error
  to the model as the tool's result and the model apologises. Feedback ``outcome`` false.

Each run's trace names its session and user (``mlflow.trace.session``, ``mlflow.trace.user``), and
both also get a numeric feedback ``tone`` (an evaluation score, not the run's success).
Written: ``<run>.json`` (``Trace.to_json(pretty=True)``), ``runs.jsonl`` (both, one
``Trace.to_json()`` a line), and the server's v3 REST answers: ``rest-get-trace.json`` (``GET
/api/3.0/mlflow/traces/get?trace_id=`` for the pass run: the trace with its spans),
``rest-batch-get.json`` (``GET /api/3.0/mlflow/traces/batchGet`` of both), ``rest-trace-info.json``
(``GET /api/3.0/mlflow/traces/{id}``: the trace info alone) and ``rest-search.json`` (the first page
of ``POST /api/3.0/mlflow/traces/search``, one trace a page, so it carries a next page token: trace
infos without spans); ``versions.txt`` says what wrote them.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "fake")
os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = (
    "false"  # each trace is on the server when it ends
)

import fake_models
import mlflow
import openai
from mlflow.entities import AssessmentSource, AssessmentSourceType

SYSTEM_PROMPT = (
    "You are a customer-support agent. Use the tools to look orders up, track shipments and check "
    "the policies before you answer."
)
ORDER_QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
MODEL = "gpt-fake"

_failing: set[str] = set()
_model_url: list[str] = []  # the fake model server's base URL, once it runs


class ToolFailure(RuntimeError):
    pass


@mlflow.trace(span_type="TOOL")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    if "lookup_order" in _failing:
        raise ToolFailure("order service unavailable (HTTP 503)")
    return dict(fake_models.ORDER, order_id=order_id)


@mlflow.trace(span_type="TOOL")
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    return dict(fake_models.SHIPMENT, tracking_id=tracking_id)


@mlflow.trace(span_type="TOOL")
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    words = set(query.lower().split())
    return [p for p in fake_models.POLICIES if words & set(p.lower().replace(":", " ").split())][:2]


TOOLS = {f.__name__: f for f in (lookup_order, track_shipment, search_policies)}
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": (function.__doc__ or "").strip(),
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string"}},
                "required": [arg],
            },
        },
    }
    for (name, function), arg in zip(
        TOOLS.items(), ("order_id", "tracking_id", "query"), strict=True
    )
]


def _call(call: Any) -> dict[str, Any]:
    """One tool call of the model's turn, its result (or its error) as the tool message."""
    try:
        result: Any = TOOLS[call.function.name](**json.loads(call.function.arguments))
    except ToolFailure as exc:
        result = {"error": str(exc)}
    return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}


@mlflow.trace(span_type="AGENT", name="support_agent")
def support_agent(question: str) -> str:
    client = openai.OpenAI(base_url=f"{_model_url[0]}/v1", api_key="fake", max_retries=0)
    # The conversation and the customer, where MLflow keeps them (its standard metadata keys).
    mlflow.update_current_trace(
        metadata={"mlflow.trace.session": "chat-A-1001", "mlflow.trace.user": "customer-7"}
    )
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        response = client.chat.completions.create(
            model=MODEL, messages=messages, tools=SCHEMAS, temperature=0
        )
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        # The calls of one turn run at once, each on its own thread in the agent's trace context.
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, _call, call)
                for call in message.tool_calls
            ]
            messages.extend(future.result() for future in futures)
    raise RuntimeError("the agent did not answer in 6 turns")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start_server(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", f"sqlite:///{home / 'mlflow.db'}",
            "--default-artifact-root", str(home / "artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ],
        stdout=(home / "server.log").open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return server, url
        except OSError:
            time.sleep(0.5)
        if server.poll() is not None:
            break
    server.kill()
    raise SystemExit(f"mlflow server did not start; see {home / 'server.log'}")


def _rest(url: str, method: str = "GET", body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="mlflow-fixtures-"))
    server, url = _start_server(home)
    _, model_url = fake_models.serve()
    try:
        mlflow.set_tracking_uri(url)
        experiment_id = mlflow.set_experiment("support-agent").experiment_id
        mlflow.openai.autolog()
        _model_url.append(model_url)
        trace_ids: dict[str, str] = {}
        for run, question, failing, passed in (
            ("pass", fake_models.PARALLEL_QUESTION, set(), True),
            ("tool-error", ORDER_QUESTION, {"lookup_order"}, False),
        ):
            _failing.clear()
            _failing.update(failing)
            answer = support_agent(question)
            trace_id = mlflow.get_last_active_trace_id()
            assert trace_id is not None
            trace_ids[run] = trace_id
            source = AssessmentSource(AssessmentSourceType.CODE, "answer-check")
            mlflow.log_feedback(trace_id=trace_id, name="outcome", value=passed, source=source)
            mlflow.log_feedback(trace_id=trace_id, name="tone", value=0.8, source=source)
            print(f"mlflow {run}: {answer[:100]!r}", file=sys.stderr)
        traces = {run: mlflow.get_trace(trace_id) for run, trace_id in trace_ids.items()}
        for run, trace in traces.items():
            (out / f"{run}.json").write_text(trace.to_json(pretty=True) + "\n")
        (out / "runs.jsonl").write_text("".join(t.to_json() + "\n" for t in traces.values()))
        api = f"{url}/api/3.0/mlflow/traces"
        _write(out / "rest-get-trace.json", _rest(f"{api}/get?trace_id={trace_ids['pass']}"))
        _write(out / "rest-trace-info.json", _rest(f"{api}/{trace_ids['pass']}"))
        ids = "&".join(f"trace_ids={t}" for t in trace_ids.values())
        _write(out / "rest-batch-get.json", _rest(f"{api}/batchGet?{ids}"))
        search = {
            "locations": [
                {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
            ],
            "max_results": 1,
        }
        _write(out / "rest-search.json", _rest(f"{api}/search", "POST", search))
        (out / "versions.txt").write_text(
            f"mlflow {mlflow.__version__}, openai {openai.__version__}\n"
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
