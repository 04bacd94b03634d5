"""The incident investigator's paperwork: an incident ticket stamped with the time and a fresh id.

``open_ticket`` reads its environment through the context (``ctx.now()``, ``ctx.uuid()``): each
read is recorded as a step and served on replay, so the replay is the record hash for hash.
``stamp`` is not written for agent-replay: it calls ``time.time()``, ``datetime.now()`` and
``uuid.uuid4()`` itself, which ``--instrument time,uuid`` records the same way.

    agent-replay record --agent examples/incident/stamps.py:open_ticket
    agent-replay record --agent examples/incident/stamps.py:stamp --instrument time,uuid
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone
from typing import Any

from otel_replay.replay import AgentContext


def open_ticket(ctx: AgentContext, service: str = "checkout") -> dict[str, Any]:
    """Open a ticket for ``service``'s incident, page its owner, and say when and under which id."""
    opened = ctx.now()
    ticket = ctx.uuid()
    owner = ctx.tool("owner_of", produce=lambda: "payments-oncall", service=service)
    ctx.tool("page", produce=lambda: "paged", owner=owner, ticket=ticket)
    return {"ticket": ticket, "opened": opened, "owner": owner}


def stamp(service: str = "checkout") -> dict[str, Any]:
    """The same ticket from an agent that reads the clock and makes ids itself."""
    return {
        "ticket": str(uuid.uuid4()),
        "opened": time.time(),
        "day": datetime.now(timezone.utc).date().isoformat(),
        "service": service,
    }
