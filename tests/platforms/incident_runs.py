"""The incident example's runs the Phoenix tests send and read: their ids and exact steps."""

from __future__ import annotations

RETRY, FAIL, GENAI_FAIL = (
    "5bb584929dafe6bead21914625ee8c4c",
    "ef2843ff74cff6a6b6dc0914faa30751",
    "780c4b16a51059fa62b2bbd1c38dbe31",
)
LLM = ("llm", "rule-based-investigator", "ok")

# the pass-retry run: a model turn, a tool, a model turn, the tool that failed, ... (exact steps)
RETRY_STEPS = [
    LLM,
    ("tool", "query_metrics", "ok"),
    LLM,
    ("tool", "list_deploys", "error"),
    LLM,
    ("tool", "list_deploys", "ok"),
    LLM,
]
FAIL_STEPS = [
    LLM,
    ("tool", "query_metrics", "ok"),
    LLM,
    ("tool", "list_deploys", "ok"),
    LLM,
    ("tool", "search_logs", "ok"),
    LLM,
]
