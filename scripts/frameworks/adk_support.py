"""The support agent on Google's Agent Development Kit, shared by the ADK frameworks of the corpus
(``google-adk``: ADK 2.x; ``google-adk-1``: ADK 1.x), whose ``run.py`` each run it under their own
name in their own venv: an ``LlmAgent`` with function tools, run by an ``InMemoryRunner``, with
OpenInference instrumentation (``GoogleADKInstrumentor``).

The model is ADK's own ``Gemini`` model class on the google-genai client, its ``base_url`` pointed at
the fake server's Gemini route (``generateContent``); no key leaves the machine. A tool that raises
is answered to the model by the agent's ``on_tool_error_callback`` as ``{"error": "..."}``, as an ADK
application does to let its agent go on.
"""

from __future__ import annotations

import os

os.environ["GOOGLE_API_KEY"] = "fake"
os.environ.pop("GOOGLE_GENAI_USE_VERTEXAI", None)
os.environ.setdefault("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "true")

import asyncio
from typing import Any

import harness
from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types
from openinference.instrumentation.google_adk import GoogleADKInstrumentor
from opentelemetry.sdk.trace import TracerProvider

MODEL = "gemini-fake"


def instrument(provider: TracerProvider) -> None:
    GoogleADKInstrumentor().instrument(tracer_provider=provider)


def _tool_failed(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> Any:
    return {"error": str(error)}


async def _run(run: str, url: str) -> Any:
    agent = LlmAgent(
        name="support_agent",
        model=Gemini(model=MODEL, base_url=url),
        instruction=harness.SYSTEM_PROMPT,
        tools=[harness.lookup_order, harness.track_shipment, harness.search_policies],
        on_tool_error_callback=_tool_failed,
    )
    runner = InMemoryRunner(agent=agent, app_name="support")
    session = await runner.session_service.create_session(app_name="support", user_id="customer")
    message = types.Content(role="user", parts=[types.Part(text=harness.question(run))])
    answer = ""
    async for event in runner.run_async(
        user_id="customer", session_id=session.id, new_message=message
    ):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(p.text or "" for p in event.content.parts)
    return answer


def agent(run: str, url: str) -> Any:
    return asyncio.run(_run(run, url))


def main(name: str) -> None:
    """Write the framework's runs (``harness.main``) as ``name``."""
    harness.main(
        name,
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.ALL_RUNS},
    )
