"""The support agent on the google-genai SDK with automatic function calling, OTel GenAI instrumentation.

One `client.models.generate_content` call per run, with the three tools as plain Python functions:
the SDK's automatic function calling (AFC) runs the whole exchange — model turn, tool, model turn, ... —
inside that one call. A tool that raises is answered to the model by the SDK itself as a function
response ``{"error": "..."}``. Instrumented with the OpenTelemetry contrib `GoogleGenAiSdkInstrumentor`
(opentelemetry-instrumentation-google-genai, which wraps ``Models.generate_content``, ``embed_content``
and each tool function given in the config). Message content is captured on spans:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` takes a `ContentCapturingMode` name here
(NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT); ``true`` is not one of them and means no content.

google-genai has no client-side retriever (its retrieval tools run on the server), so in the
`retrieval` run `search_policies` embeds the query with ``client.models.embed_content`` (an embeddings
span inside the tool span) and ranks the three policies against an index embedded beforehand without
instrumentation, as an offline indexing job would. The fake embeddings carry no meaning, so only
documents sharing a word with the query are kept (`harness.search_policies`). The fake server has no
Gemini embeddings route, so this script's handler adds ``:batchEmbedContents``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
os.environ["GOOGLE_API_KEY"] = "fake"
os.environ.pop("GOOGLE_GENAI_USE_VERTEXAI", None)

import json
import math
import re
from typing import Any

import fake_models
import harness
from google import genai
from google.genai import types
from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor
from opentelemetry.sdk.trace import TracerProvider

MODEL = "gemini-fake"
EMBEDDING_MODEL = "text-embedding-fake"


class Handler(fake_models.Handler):
    """The shared fake server plus Gemini's ``models/{model}:batchEmbedContents``."""

    def do_POST(self) -> None:
        if not re.search(r"/models/[^/:]+:batchEmbedContents", self.path):
            return super().do_POST()
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        texts = [
            " ".join(p.get("text", "") for p in r.get("content", {}).get("parts", []))
            for r in body.get("requests", [])
        ]
        return self._json({"embeddings": [{"values": fake_models.embed(t)} for t in texts]})


def instrument(provider: TracerProvider) -> None:
    GoogleGenAiSdkInstrumentor().instrument(tracer_provider=provider)


def _client(url: str) -> genai.Client:
    return genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=url))


def _embed(client: genai.Client, texts: list[str]) -> list[list[float]]:
    response = client.models.embed_content(model=EMBEDDING_MODEL, contents=texts)
    return [list(e.values or []) for e in response.embeddings or []]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def retriever_tool(client: genai.Client, index: list[tuple[str, list[float]]]):
    def search_policies(query: str) -> list[str]:
        """The store policies that match a query."""
        vector = _embed(client, [query])[0]
        matching = set(harness.search_policies(query))
        ranked = sorted(index, key=lambda item: _cosine(vector, item[1]), reverse=True)
        return [text for text, _ in ranked if text in matching][:2]

    return search_policies


def _offline_index(client: genai.Client) -> list[tuple[str, list[float]]]:
    """The policies' vectors, embedded before the agent runs and left out of the trace, like an
    indexing job: through the SDK method the instrumentation wrapped (``__wrapped__``)."""
    embed_content = getattr(
        genai.models.Models.embed_content, "__wrapped__", genai.models.Models.embed_content
    )
    response = embed_content(client.models, model=EMBEDDING_MODEL, contents=fake_models.POLICIES)
    return list(
        zip(
            fake_models.POLICIES,
            [list(e.values or []) for e in response.embeddings or []],
            strict=True,
        )
    )


def agent(run: str, url: str) -> Any:
    client = _client(url)
    search: Any = harness.search_policies
    if run == "retrieval":
        search = retriever_tool(client, _offline_index(client))
    response = client.models.generate_content(
        model=MODEL,
        contents=harness.question(run),
        config=types.GenerateContentConfig(
            system_instruction=harness.SYSTEM_PROMPT,
            tools=[harness.lookup_order, harness.track_shipment, search],
        ),
    )
    return response.text


if __name__ == "__main__":
    harness.main(
        "google-genai",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
        handler=Handler,
    )
