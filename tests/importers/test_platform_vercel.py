"""Vercel AI SDK v6 spans (JS ``ReadableSpan`` dumps from real OpenAI calls, read from
../shared/trace-corpus/platforms/openinference-vercel/): each span is its own trace there, so a call
level span (``ai.generateText``, ``ai.streamText``, ``ai.generateObject``, ``ai.embed``) stands alone
and is the model call itself; ``ai.response.object``, ``ai.values`` and ``ai.embeddings`` are content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_replay import ReadOptions, StepStatus, Trajectory, read_path

FOLDER = "platforms/openinference-vercel"
OK = StepStatus.OK
MINI = "gpt-4o-mini"
EMBEDDER = "text-embedding-3-small"

# file: [(trace id, kind, name, status)], one run per span
GOLDEN: dict[str, list[tuple[str, str, str, StepStatus]]] = {
    "ai-embed.json": [("91621bbaaf1920e94ae594e91b3a99fd", "embedding", "ai.embed", OK)],
    "ai-generateText-doGenerate.json": [
        ("b3e700af9eab81e19f72f964d62a35af", "llm", MINI, OK),
        ("edff2fc5854be6170e8cccccec0c82cf", "llm", MINI, OK),
    ],
    "ai-generateText.json": [
        ("700d5f98fe2420adcf6ab0822f7a323c", "llm", MINI, OK),
        ("673a889f59126f8b4c90dce5a1f99368", "llm", MINI, OK),
    ],
    "all-spans.json": [
        ("b3e700af9eab81e19f72f964d62a35af", "llm", MINI, OK),
        ("700d5f98fe2420adcf6ab0822f7a323c", "llm", MINI, OK),
        ("edff2fc5854be6170e8cccccec0c82cf", "llm", MINI, OK),
        ("673a889f59126f8b4c90dce5a1f99368", "llm", MINI, OK),
        ("8f60802815d6e97da2dbc4708a8e5c7b", "llm", MINI, OK),
        ("f99cc53c9bb8fe40462f7a48999e7088", "llm", MINI, OK),
        ("478d4dcc697ecfabc5e7a3d6e4216291", "llm", MINI, OK),
        ("8185b815e471184c6525a601a042be42", "llm", MINI, OK),
        ("045d21a7f69972edf509fe0ff911f3f5", "embedding", "ai.embed.doEmbed", OK),
        ("91621bbaaf1920e94ae594e91b3a99fd", "embedding", "ai.embed", OK),
    ],
}
HAIKU = "Write a haiku about programming."


def _runs(corpus: Path, name: str) -> list[Trajectory]:
    options = ReadOptions()
    runs = list(read_path(corpus / FOLDER / name, options=options))
    assert not options.report.skipped and not options.report.warnings
    return runs


def _by_root(runs: list[Trajectory]) -> dict[str, Trajectory]:
    """The runs whose root span's name is theirs alone."""
    names = [run.metadata["root_span"] for run in runs]
    return {name: run for name, run in zip(names, runs, strict=True) if names.count(name) == 1}


def test_every_file_has_its_golden_row(corpus: Path) -> None:
    assert {p.name for p in (corpus / FOLDER).glob("*.json")} == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_file(corpus: Path, name: str) -> None:
    runs = _runs(corpus, name)
    assert all(len(run.steps) == 1 for run in runs)
    got = [(r.id, r.steps[0].kind.value, r.steps[0].name, r.steps[0].status) for r in runs]
    assert got == GOLDEN[name]
    assert all(run.outcome is None for run in runs)


def test_a_lone_generate_text_is_the_model_call(corpus: Path) -> None:
    """The call-level span alone in its trace holds the same call as its doGenerate span."""
    runs = {run.id: run for run in _runs(corpus, "all-spans.json")}
    (outer,) = runs["700d5f98fe2420adcf6ab0822f7a323c"].steps  # ai.generateText
    (inner,) = runs["b3e700af9eab81e19f72f964d62a35af"].steps  # its ai.generateText.doGenerate
    assert (
        outer.inputs["messages"] == inner.inputs["messages"] == [{"role": "user", "content": HAIKU}]
    )
    assert outer.output["content"] == inner.output["content"]
    assert outer.output["content"].startswith("Lines of code align")
    assert outer.output["finish_reason"] == "stop"


def test_the_call_level_prompt_keeps_its_system_message(corpus: Path) -> None:
    second = _runs(corpus, "ai-generateText.json")[1]
    (step,) = second.steps
    assert [m["role"] for m in step.inputs["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert step.output == {
        "role": "assistant",
        "content": "3 + 3 equals 6.",
        "finish_reason": "stop",
    }


def test_a_generated_object_is_the_answers_content(corpus: Path) -> None:
    runs = _by_root(_runs(corpus, "all-spans.json"))
    for root in ("ai.generateObject", "ai.generateObject.doGenerate"):
        (step,) = runs[root].steps
        assert step.inputs["messages"] == [
            {"role": "user", "content": "Generate a simple recipe for scrambled eggs."}
        ]
        assert step.output["content"].startswith('{"name":"Scrambled Eggs"')


def test_a_lone_stream_text_is_the_model_call(corpus: Path) -> None:
    runs = _by_root(_runs(corpus, "all-spans.json"))
    (step,) = runs["ai.streamText"].steps
    assert step.inputs["messages"] == [
        {"role": "user", "content": "Write a short poem about TypeScript."}
    ]
    assert step.output["content"].startswith("In code’s embrace")


def test_embedded_values_and_vectors_are_content(corpus: Path) -> None:
    runs = _by_root(_runs(corpus, "all-spans.json"))
    fox = "The quick brown fox jumps over the lazy dog."
    for root in ("ai.embed", "ai.embed.doEmbed"):
        (step,) = runs[root].steps
        assert step.inputs == {"model": EMBEDDER, "texts": [fox]}
        (vector,) = step.output
        assert len(vector) == 1536 and all(isinstance(x, float) for x in vector)
