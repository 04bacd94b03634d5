"""The tokens a model call's span records, however its convention spells them
(`otel_replay.importers._usage`): one base, variants that differ from it in the spelling."""

from __future__ import annotations

from typing import Any

import pytest

from otel_replay.importers._usage import span_usage

BOTH = {"input_tokens": 40, "output_tokens": 12}


@pytest.mark.parametrize(
    ("attributes", "found"),
    [
        pytest.param(
            {"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 12}, BOTH, id="genai"
        ),
        pytest.param(
            {"gen_ai.usage.prompt_tokens": 40, "gen_ai.usage.completion_tokens": 12},
            BOTH,
            id="genai-deprecated",
        ),
        pytest.param(
            {
                "llm.token_count.prompt": 40,
                "llm.token_count.completion": 12,
                "llm.token_count.total": 52,
            },
            {**BOTH, "total_tokens": 52},
            id="openinference",
        ),
        pytest.param(
            {"llm.usage.prompt_tokens": 40, "llm.usage.completion_tokens": 12},
            BOTH,
            id="openllmetry",
        ),
        pytest.param(
            {"ai.usage.promptTokens": 40, "ai.usage.completionTokens": 12}, BOTH, id="vercel"
        ),
        pytest.param(
            {"langfuse.observation.usage_details": '{"input": 40, "output": 12}'},
            BOTH,
            id="langfuse-text",
        ),
        pytest.param(
            {"langfuse.observation.usage_details": {"input": "40", "output": 12}},
            BOTH,
            id="langfuse-object",
        ),
        pytest.param({"llm.token_count.total": 52}, {"total_tokens": 52}, id="total-only"),
        pytest.param({"gen_ai.usage.input_tokens": 40}, {"input_tokens": 40}, id="input-only"),
        pytest.param(
            {"gen_ai.usage.input_tokens": -1, "gen_ai.usage.output_tokens": True},
            {},
            id="not-counts",
        ),
        pytest.param(
            {"gen_ai.usage.input_tokens": 40.0, "gen_ai.usage.output_tokens": 12.5},
            {"input_tokens": 40},
            id="floats",
        ),
        pytest.param({}, {}, id="none"),
    ],
)
def test_each_convention_spells_the_counts_its_own_way(
    attributes: dict[str, Any], found: dict[str, int]
) -> None:
    assert span_usage(attributes) == found
