"""The support agents after the fix for the outage, the change a user makes once a run failed on
the order service's 503: a lookup it answered 503 is asked once more, by the agent (not inside the
tool), so the retry is a second ``lookup_order`` step of its own.

That is what makes the fix testable against the failing run's record (``export --format pytest
--expect pass``): tools are served from the record, so a retry inside ``lookup_order`` would be
served the recorded 503 with the tool, and never run; the second call is one the record does not
hold, so it runs live, against the order service as it is now (up again).
"""

from __future__ import annotations

from typing import Any

from tests.scenarios import anthropic_agent, openai_agent, shop


def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    result = shop.call_tool(name, arguments)
    if name == "lookup_order" and "(503)" in str(result.get("error", "")):
        result = shop.call_tool(name, arguments)  # the service was briefly down: once more
    return result


def openai_main(question: str, base_url: str) -> str:
    return openai_agent.answer(question, base_url, call_tool)


def anthropic_main(question: str, base_url: str) -> str:
    return anthropic_agent.answer(question, base_url, call_tool)
