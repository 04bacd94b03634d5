"""On-call incident investigator: a small, deterministic example agent with no LLM.

A rule-based model (:mod:`.model`) investigates a checkout error-rate spike with three tools over a
fixed fake world (:mod:`.world`); :mod:`.traced` runs it under the real OpenTelemetry SDK and emits
OpenInference or OTel GenAI spans. Injecting ``{"list_deploys": "empty"}`` makes the agent miss the
bad deploy ``v841`` and blame the database instead — the failure agent-replay is meant to explain.
"""

from .model import MODEL_NAME, respond
from .traced import CULPRIT, Flavour, Investigation, investigate, outcome_of, run_traced
from .world import FAULT_MODES, World

__all__ = [
    "CULPRIT",
    "FAULT_MODES",
    "MODEL_NAME",
    "Flavour",
    "Investigation",
    "World",
    "investigate",
    "outcome_of",
    "respond",
    "run_traced",
]
