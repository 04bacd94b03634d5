"""A stand-in judge for ``--judge`` behind a local OpenAI-compatible endpoint, to try it with no key and
no network: it reads the agent's final answer from the judge's prompt and says yes when the answer
names the deploy that broke checkout in the incident example (v841), no otherwise, with its reason,
as the JSON object the judge asks for. A real judge is a real model (``--llm-base-url`` of any
OpenAI-compatible server, ``--judge-model``); this one only shows the path. The server is the one
fake model server of the examples and tests (`examples.fake_model_server`); this module is the model
it serves.

    python -m examples.incident.judge_server --port 8001     # then --llm-base-url http://127.0.0.1:8001/v1
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from examples.fake_model_server import Request
from examples.fake_model_server import main as serve_until_stopped

#: Where the judge's prompt puts the answer (`otel_replay.resamplers.Judge`).
ANSWER_HEADING = "The agent's final answer:\n"


def verdict(prompt: str) -> dict[str, str]:
    """Yes when the final answer in ``prompt`` names v841."""
    answer = prompt.split(ANSWER_HEADING, 1)[-1]
    if "v841" in answer:
        return {
            "verdict": "yes",
            "reason": "the answer names deploy v841, the one that broke checkout",
        }
    return {"verdict": "no", "reason": "the answer does not name deploy v841"}


def judge(request: Request) -> dict[str, Any]:
    """The verdict on the last user message's prompt, as the JSON text the judge reads."""
    prompt = next((m["content"] for m in reversed(request.messages) if m["role"] == "user"), "")
    return {"content": json.dumps(verdict(str(prompt))), "usage": False}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8001)
    serve_until_stopped(judge, parser.parse_args().port, "a stand-in judge")
