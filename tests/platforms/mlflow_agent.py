"""The shop's support agent traced by MLflow itself, for the MLflow platform tests: run with
``.mlflow-venv/bin/python`` (MLflow and the OpenAI SDK are there, agent-replay is not), it answers
one customer question and logs its trace to a real ``mlflow server``.

    .mlflow-venv/bin/python tests/platforms/mlflow_agent.py TRACKING_URI EXPERIMENT QUESTION

The OpenAI SDK's base URL is ``OPENAI_BASE_URL`` (the tests' loopback fake model server) and the
order service's ``ORDER_SERVICE_URL``, as `tests.scenarios.shop` reads them. Tracing is MLflow's own:
``mlflow.openai.autolog()`` makes each chat completion a ``CHAT_MODEL`` span, the tools are
``@mlflow.trace(span_type="TOOL")`` and the loop an ``AGENT`` span. It prints the trace's id.

The tools, their schemas and the loop are the refund desk's (`examples.support_desk`, standard
library only), as the agents recorded by agent-replay have them: only the decorators differ.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import mlflow
from openai import OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for the desk

from examples import support_desk

MODEL = "support-model"
lookup_order = mlflow.trace(span_type="TOOL")(support_desk.lookup_order)
get_refund_policy = mlflow.trace(span_type="TOOL")(support_desk.get_refund_policy)
FUNCTIONS = {"lookup_order": lookup_order, "get_refund_policy": get_refund_policy}


def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    return FUNCTIONS[name](**arguments)


@mlflow.trace(span_type="AGENT", name="support_agent")
def answer(question: str) -> str:
    """Ask the model, run the tools it calls, hand their results back, until it answers."""
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="not-needed-locally")
    messages: list[Any] = [
        {"role": "system", "content": support_desk.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    return (
        support_desk.openai_loop(client, MODEL, messages, support_desk.OPENAI_TOOLS, call_tool)
        or ""
    )


def main() -> None:
    tracking_uri, experiment, question = sys.argv[1:4]
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    answer(question)
    trace_id = mlflow.get_last_active_trace_id()
    mlflow.flush_trace_async_logging()
    print(trace_id)


if __name__ == "__main__":
    main()
