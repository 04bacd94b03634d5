"""How rollouts are made when no agent code is given: `Driver`, the choice the commands' ``--driver``
offers. The command's option types import it before any command runs, so this module imports
nothing that does work: the drivers themselves are `_chat` (the chat loop), `_builtin` (choosing
it) and `_rollout` (the walk)."""

from __future__ import annotations

from enum import Enum


class Driver(str, Enum):
    """How rollouts are made when no live agent is given."""

    AUTO = "auto"  # the chat loop when the record is a tool-calling chat, else the walk
    TRACE = "trace"  # walk the recorded steps in their recorded order
    CHAT = "chat"  # re-drive a tool-calling run as its loop (a turn's calls decide the next steps)
