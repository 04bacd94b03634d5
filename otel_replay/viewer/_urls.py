"""The viewer's addresses: what a run id and a report's digest may look like in a URL, and the links
the pages write.

A URL's parts are read once (percent-decoded once) and must then match these patterns whole, or the
answer is 404: nothing else reaches the store, so ``..``, an encoded slash (``%2f``) and an encoded
encoding (``%252e``) are never names of anything.
"""

from __future__ import annotations

import re
from urllib.parse import quote

#: Run ids as the importers and recorders make them: trace ids (hex), ``fork-…``, ``untraced-…``,
#: and the names a native JSONL file gives (``incident-pass``). A first character that is not a dot
#: keeps ``.`` and ``..`` out.
RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
#: A stored report's key: the sha256 of its configuration (`Store.keep_report`).
CONFIG_DIGEST = re.compile(r"[0-9a-f]{64}")


def is_run_id(value: str) -> bool:
    """Whether ``value`` is a run id (or id prefix) the viewer puts in a URL."""
    return RUN_ID.fullmatch(value) is not None


def is_config_digest(value: str) -> bool:
    return CONFIG_DIGEST.fullmatch(value) is not None


def run_url(run_id: str) -> str:
    return f"/run/{quote(run_id, safe='')}"


def report_url(run_id: str, config_digest: str) -> str:
    return f"{run_url(run_id)}/report/{quote(config_digest, safe='')}"


def compare_url(run_id: str) -> str:
    """Where the comparison form sends its ``with`` (a run id or prefix): on to `diff_url`."""
    return f"/diff/{quote(run_id, safe='')}"


def diff_url(left_id: str, right_id: str) -> str:
    return f"{compare_url(left_id)}/{quote(right_id, safe='')}"
