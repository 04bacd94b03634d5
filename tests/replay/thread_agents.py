"""Agents whose tools run where frameworks run them: on worker threads (``asyncio.to_thread``, which
copies the context; a bare ``ThreadPoolExecutor``, which does not), several at once. They are
ordinary code with ``@otel_replay.tool`` functions, no ``ctx``: what `record` must capture without
changing what they do. The CLI tests load this file by path."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import otel_replay


@otel_replay.tool
def free_slots(email: str, date: str) -> list[str]:
    """Two slots of a calendar, on whichever thread calls it."""
    time.sleep(0.002)  # long enough for calls of one turn to overlap
    return [f"{date} 10:00 ({email})", f"{date} 14:00 ({email})"]


@otel_replay.tool
def book(email: str, slot: str) -> dict[str, Any]:
    return {"booked": slot, "for": email, "thread": "worker"}


async def to_thread_agent(email: str = "ana@example.com") -> dict[str, Any]:
    """A sync tool on a worker thread, then three at once (one model turn's parallel calls)."""
    first = await asyncio.to_thread(free_slots, email=email, date="2026-12-07")
    more = await asyncio.gather(
        *(asyncio.to_thread(free_slots, email=email, date=f"2026-12-{d:02d}") for d in (8, 9, 10))
    )
    booked = await asyncio.to_thread(book, email=email, slot=first[0])
    return {"first": first, "more": more, "booked": booked}


def pool_agent(calls: int = 24, workers: int = 8) -> dict[str, Any]:
    """Many tool calls on a bare thread pool (no context copied into its threads)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        dates = [f"2026-12-{day:02d}" for day in range(1, calls + 1)]
        answers = list(pool.map(lambda d: free_slots(email="bo@example.com", date=d), dates))
    return {"answers": answers, "threads": threading.active_count() > 0}


class _Unreadable(dict):  # type: ignore[type-arg]
    """A tool result the recorder's own bookkeeping trips on (its items cannot be read)."""

    def items(self) -> Any:
        raise RuntimeError("the recorder cannot read this value")

    def keys(self) -> Any:
        raise RuntimeError("the recorder cannot read this value")

    def __iter__(self) -> Any:
        raise RuntimeError("the recorder cannot read this value")


@otel_replay.tool
def odd_tool(n: int) -> Any:
    return _Unreadable(n=n) if n == 1 else {"n": n}


def tripping_agent() -> dict[str, Any]:
    """Three tool calls; the second's result trips the recorder. The agent catches everything
    its tools raise, as frameworks do, and says so in its answer."""
    seen: list[Any] = []
    for n in range(3):
        try:
            result = odd_tool(n=n)
            seen.append("ok" if n != 1 else type(result).__name__)
        except Exception as exc:
            seen.append(f"tool failed: {type(exc).__name__}")
    return {"seen": seen}


def _in_a_child(date: str, results: Any) -> None:
    results.put(free_slots(email="cy@example.com", date=date))


def forking_agent() -> dict[str, Any]:
    """One tool call here, one in a forked worker process (as a framework's process pool makes):
    the child's call runs as it would without agent-replay, and comes back through a queue."""
    import multiprocessing

    mine = free_slots(email="cy@example.com", date="2026-12-01")
    fork = multiprocessing.get_context("fork")
    results = fork.Queue()
    child = fork.Process(target=_in_a_child, args=("2026-12-02", results))
    child.start()
    theirs = results.get(timeout=30)
    child.join(timeout=30)
    return {"mine": mine, "theirs": theirs, "exit": child.exitcode}
