"""Generate ``tests/fixtures/platforms/langsmith/`` with the real ``langsmith`` SDK: a small support
agent traced with ``@traceable`` and ``wrap_openai``, its runs sent to a loopback server that plays
LangSmith's API and keeps what the SDK sends, byte for byte.

    /work/venvs/langsmith/bin/python scripts/make_langsmith_fixtures.py

The venv holds ``scripts/langsmith/requirements.txt`` (the pinned ``langsmith``, ``openai``,
``langchain-core`` and ``langchain-openai``): ``python -m venv /work/venvs/langsmith`` then
``pip install -r scripts/langsmith/requirements.txt``. The model is the project's loopback fake
model server (``examples/fake_model_server.py``, OpenAI chat completions); ``LANGSMITH_ENDPOINT`` points the SDK at the capture server this script starts, which
answers ``GET /info`` (saying whether to use the multipart endpoint), takes ``POST /runs/batch``,
``POST /runs/multipart`` and ``POST /feedback``, and answers every request with an empty JSON object.

The agent: a chain run ``support_agent`` holding the model's turns (``llm`` runs from the wrapped
OpenAI client) and the tools it called (``@traceable(run_type="tool")``). Runs, each its own trace:

* ``pass`` — lookup_order, track_shipment, search_policies, the answer; feedback ``outcome`` 1.
* ``tool-error`` — lookup_order raises (the tool run has ``error``), the agent sends the error to the
  model as the tool's result and the model apologises; feedback ``outcome`` 0.
* ``parallel`` — the model's first turn asks for two tool calls (lookup_order and search_policies).
* ``rewrapped`` — each model turn is a ``@traceable(run_type="llm")`` function calling the wrapped
  client: two nested llm runs for one model call.
* ``langchain`` — the same agent on LangChain (``ChatOpenAI`` with the tools bound, ``@tool``
  functions) inside the ``@traceable`` chain: LangChain's tracer records the model calls (its
  serialised messages, its ``generations`` output) and the tools (their ``ToolMessage``).

Files written (what the SDK sent; nothing is edited):

* ``batch.jsonl`` — the agent with the server saying ``use_multipart_endpoint: false``: one line per
  request body, in the order received: ``POST /runs/batch`` payloads (``{"post": [...], "patch":
  [...]}``) and ``POST /feedback`` bodies (one feedback object each).
* ``multipart.jsonl`` — the agent with the multipart endpoint (the SDK's default): each request's
  ``multipart/form-data`` body decoded here into the same run objects, one line per request as
  ``{"post": [...], "patch": [...]}`` (a part named ``post.<id>`` is the run, ``post.<id>.inputs``
  and its siblings its fields), and each ``feedback.<id>`` part as its own line. The raw bodies are
  beside it (``multipart/request-N.txt``, with their content type in ``multipart/requests.json``).
* ``run-trees.jsonl`` — the run trees the SDK ends with, one run per line in the order above: each
  root ``RunTree`` (the ``@traceable`` ``on_end`` hook's argument) as ``model_dump(mode="json")``,
  with its children, which that dump leaves out, nested under ``child_runs`` the same way.

Run ids are the SDK's (UUID v7, from the clock): a regenerated fixture has new ids and times.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "scripts" / "frameworks"))

import fake_models  # noqa: E402  (the fake model server, standard library only)

OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "platforms" / "langsmith"
ORDER_QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
SYSTEM_PROMPT = (
    "You are a customer-support agent. Use the tools to look orders up, track shipments and check "
    "the policies before you answer."
)

# --- the capture server ------------------------------------------------------------------------------


class Captured:
    """What the SDK sent: ``(path, content type, body)`` in the order received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, bytes]] = []
        self.multipart = True

    def take(self) -> list[tuple[str, str, bytes]]:
        with self.lock:
            taken, self.requests = self.requests, []
        return taken


CAPTURED = Captured()


class LangSmithHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/info"):
            self._answer(
                {
                    "version": "0.10.0",
                    "batch_ingest_config": {
                        "use_multipart_endpoint": CAPTURED.multipart,
                        "size_limit": 100,
                        "size_limit_bytes": 20_971_520,
                        "scale_up_nthreads_limit": 16,
                        "scale_up_qsize_trigger": 1000,
                        "scale_down_nempty_trigger": 4,
                    },
                    "instance_flags": {},
                }
            )
        else:
            self._answer({})

    def _take(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding"):
            raise RuntimeError(f"compressed body: {self.headers['Content-Encoding']}")
        with CAPTURED.lock:
            CAPTURED.requests.append((self.path, self.headers.get("Content-Type", ""), body))
        self._answer({})

    do_POST = _take
    do_PATCH = _take


def serve_langsmith() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), LangSmithHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# --- the agent ---------------------------------------------------------------------------------------

_failing: set[str] = set()
#: The shipment service is slow: while it answers, the SDK's background thread sends the runs
#: started so far, so their ends come in a later request (a run posted, then patched).
SLOW_SHIPMENTS = 0.6


def make_agent(openai_url: str) -> dict[str, Any]:
    """The traced agent's functions (imported here: the SDK reads its environment on import)."""
    import openai
    from langsmith import traceable
    from langsmith.wrappers import wrap_openai

    client = wrap_openai(openai.OpenAI(base_url=f"{openai_url}/v1", api_key="fake"))

    class ToolFailure(RuntimeError):
        pass

    @traceable(run_type="tool", name="lookup_order")
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look an order up by its id."""
        if "lookup_order" in _failing:
            raise ToolFailure("order service unavailable (HTTP 503)")
        return dict(fake_models.ORDER, order_id=order_id)

    @traceable(run_type="tool", name="track_shipment")
    def track_shipment(tracking_id: str) -> dict[str, Any]:
        """Where a shipment is, by its tracking id."""
        time.sleep(SLOW_SHIPMENTS)
        return dict(fake_models.SHIPMENT, tracking_id=tracking_id)

    @traceable(run_type="tool", name="search_policies")
    def search_policies(query: str) -> list[str]:
        """The store policies that match a query."""
        words = set(query.lower().split())
        return [p for p in fake_models.POLICIES if words & set(p.lower().split())][:2]

    tools = {f.__name__: f for f in (lookup_order, track_shipment, search_policies)}
    schemas = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": function.__doc__,
                "parameters": {
                    "type": "object",
                    "properties": {
                        parameter: {"type": "string"}
                        for parameter in function.__annotations__
                        if parameter != "return"
                    },
                },
            },
        }
        for name, function in tools.items()
    ]

    def ask(messages: list[dict[str, Any]]) -> Any:
        return client.chat.completions.create(model="gpt-fake", messages=messages, tools=schemas)

    @traceable(run_type="llm", name="call_model")
    def call_model(messages: list[dict[str, Any]]) -> Any:
        """A model turn traced by the agent's own function around the wrapped client."""
        return ask(messages)

    @traceable(run_type="chain", name="support_agent")
    def support_agent(question: str, rewrapped: bool = False) -> str | None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ]
        for _ in range(6):
            # a copy: a run tree keeps the list it was given, which the agent goes on extending
            reply = (call_model if rewrapped else ask)([*messages]).choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                answer: str | None = reply.content
                return answer
            for call in reply.tool_calls:
                arguments = json.loads(call.function.arguments)
                try:
                    result = json.dumps(tools[call.function.name](**arguments))
                except ToolFailure as exc:
                    result = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None

    return {"support_agent": support_agent, "langchain": _langchain_agent(openai_url)}


def _langchain_agent(openai_url: str) -> Any:
    """The same agent on LangChain (``ChatOpenAI`` with tools bound, ``@tool`` functions): its
    own tracer records the runs, LangChain's serialised messages in the model calls' inputs and
    outputs, the tools' inputs as LangChain gives them."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langsmith import traceable

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look an order up by its id."""
        return dict(fake_models.ORDER, order_id=order_id)

    @tool
    def track_shipment(tracking_id: str) -> dict[str, Any]:
        """Where a shipment is, by its tracking id."""
        return dict(fake_models.SHIPMENT, tracking_id=tracking_id)

    @tool
    def search_policies(query: str) -> list[str]:
        """The store policies that match a query."""
        words = set(query.lower().split())
        return [p for p in fake_models.POLICIES if words & set(p.lower().split())][:2]

    tools = {t.name: t for t in (lookup_order, track_shipment, search_policies)}
    model = ChatOpenAI(model="gpt-fake", base_url=f"{openai_url}/v1", api_key="fake")
    bound = model.bind_tools(list(tools.values()))

    @traceable(run_type="chain", name="support_agent")
    def support_agent(question: str, rewrapped: bool = False) -> str | None:
        messages: list[Any] = [SystemMessage(SYSTEM_PROMPT), HumanMessage(question)]
        for _ in range(6):
            reply = bound.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return str(reply.content)
            for call in reply.tool_calls:
                messages.append(tools[call["name"]].invoke(call))
        return None

    return support_agent


RUNS = {
    "pass": (ORDER_QUESTION, False),
    "tool-error": (ORDER_QUESTION, False),
    "parallel": (fake_models.PARALLEL_QUESTION, False),
    "rewrapped": (ORDER_QUESTION, True),
    "langchain": (ORDER_QUESTION, False),
}


def run_agent(agent: dict[str, Any], client: Any, trees: dict[str, Any] | None) -> None:
    """Each run once through ``client``, its outcome given as feedback ``outcome`` on its root run."""
    from langsmith import get_current_run_tree
    from langsmith.run_helpers import tracing_context

    for name, (question, rewrapped) in RUNS.items():
        _failing.clear()
        if name == "tool-error":
            _failing.add("lookup_order")
        ended: list[Any] = []
        with tracing_context(client=client):
            answer = agent["langchain" if name == "langchain" else "support_agent"](
                question,
                rewrapped=rewrapped,
                langsmith_extra={"metadata": {"support_run": name}, "on_end": ended.append},
            )
        root = ended[0]
        passed = answer is not None and ("delayed" in answer or "refund" in answer.lower())
        if name == "tool-error":
            passed = answer is not None and "delayed" in answer
        client.create_feedback(
            root.id, key="outcome", score=1.0 if passed else 0.0, trace_id=root.trace_id
        )
        if trees is not None:
            trees[name] = _tree(root)
        assert get_current_run_tree() is None
        print(f"langsmith {name}: {str(answer)[:90]!r}", file=sys.stderr)
    client.flush()


def _tree(run: Any) -> dict[str, Any]:
    """A run tree as JSON: the run's own dump, its children (which the dump leaves out) nested under
    ``child_runs`` as the API's ``Run`` schema has them."""
    dumped: dict[str, Any] = run.model_dump(mode="json")
    dumped["child_runs"] = [_tree(child) for child in run.child_runs]
    return dumped


# --- writing what was captured -----------------------------------------------------------------------


def _multipart_documents(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """One multipart request's runs as ``{"post": [...], "patch": [...]}`` (a run's main part is
    ``<operation>.<id>``, each field its own part ``<operation>.<id>.<field>``), and each feedback
    part (``feedback.<id>``) as its own document."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    feedback: list[dict[str, Any]] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        value = json.loads(part.get_payload(decode=True))
        operation, _, rest = str(name).partition(".")
        run_id, _, field = rest.partition(".")
        if operation == "feedback":
            feedback.append(value)
        elif operation in ("post", "patch"):
            run = runs.setdefault((operation, run_id), {})
            if field:
                run[field] = value
            else:
                run.update(value)
        else:
            raise RuntimeError(f"unexpected multipart part {name!r}")
    documents: list[dict[str, Any]] = []
    batch = {
        operation: [run for (op, _), run in runs.items() if op == operation]
        for operation in ("post", "patch")
    }
    if any(batch.values()):
        documents.append(batch)
    documents.extend(feedback)
    return documents


def _write_lines(path: Path, documents: list[Any]) -> None:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents))
    print(f"wrote {path} ({len(documents)} lines)", file=sys.stderr)


def main() -> None:
    _, openai_url = fake_models.serve()
    _, langsmith_url = serve_langsmith()
    os.environ.update(
        LANGSMITH_ENDPOINT=langsmith_url,
        LANGSMITH_API_KEY="fake",
        LANGSMITH_TRACING="true",
        LANGSMITH_PROJECT="support-agent",
    )
    agent = make_agent(openai_url)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "multipart").mkdir(exist_ok=True)
    for stale in (OUT_DIR / "multipart").iterdir():
        stale.unlink()

    from langsmith import Client

    trees: dict[str, Any] = {}
    CAPTURED.multipart = True
    run_agent(agent, Client(), trees)
    raw = CAPTURED.take()
    documents: list[Any] = []
    kept = []
    for number, (path, content_type, body) in enumerate(raw):
        if path.endswith("/runs/multipart"):
            documents.extend(_multipart_documents(content_type, body))
            (OUT_DIR / "multipart" / f"request-{number}.txt").write_bytes(body)
            kept.append({"file": f"request-{number}.txt", "content_type": content_type})
        elif path.endswith("/feedback"):
            documents.append(json.loads(body))
        else:
            raise RuntimeError(f"unexpected request to {path}")
    _write_lines(OUT_DIR / "multipart.jsonl", documents)
    (OUT_DIR / "multipart" / "requests.json").write_text(json.dumps(kept, indent=1) + "\n")
    _write_lines(OUT_DIR / "run-trees.jsonl", list(trees.values()))

    # The batch endpoint: a new client, which asks /info again and is told not to use multipart.
    CAPTURED.multipart = False
    run_agent(agent, Client(), None)
    documents = []
    for path, _, body in CAPTURED.take():
        if not path.endswith(("/runs/batch", "/feedback")):
            raise RuntimeError(f"unexpected request to {path}")
        documents.append(json.loads(body))
    patched = {run["id"] for d in documents for run in d.get("patch") or []}
    posted = {
        run["id"] for d in documents for run in d.get("post") or [] if run.get("end_time") is None
    }
    if not patched & posted:
        raise RuntimeError("no run was posted and then patched in a later request")
    _write_lines(OUT_DIR / "batch.jsonl", documents)


if __name__ == "__main__":
    main()
