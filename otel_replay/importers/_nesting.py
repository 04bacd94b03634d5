"""Agent and chain spans that ran inside a tool call but hang from above it, found in time that
grows as n log n with a trace's spans (`nested_in_tools`).

An agent used as a tool whose spans lost their link to the tool call (the tool span and the agent's
span both hang from the caller's side) is told by time: a container span whose interval lies within
a tool span's, and whose recorded parent is an ancestor of that tool span, ran inside it. The
innermost such tool is its parent; when tools that do not nest both contain it (two such calls at
once), which one ran it is unknown and it stays where it was recorded.

Asking every tool of a trace about every container, each with the set of its ancestors, cost time
and memory that grew with the square of a trace's spans (a chain of 20,000 spans with a tool every
tenth span held a gigabyte). Here the recorded parents are laid out once in pre-order (a span's
descendants are the positions right after it), so "an ancestor of" is two comparisons, and the
tools that contain a container in time are found with one sweep by start time over a tree of the
latest end among the tools in each range of positions.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.importers._semconv import CONTAINER_ROLES
from otel_replay.importers._spans import SpanRecord


def recorded_parents(spans: Sequence[SpanRecord]) -> list[int | None]:
    """The parent position each span names (None: a root, an orphan, or itself)."""
    by_id: dict[str, int] = {}
    for i, span in enumerate(spans):
        if span.span_id:
            by_id.setdefault(span.span_id, i)
    parent: list[int | None] = []
    for i, span in enumerate(spans):
        p = by_id.get(span.parent_span_id) if span.parent_span_id else None
        parent.append(None if p == i else p)  # a span that names itself as parent is a root
    return parent


def nested_in_tools(
    spans: Sequence[SpanRecord], roles: Sequence[tuple[str, str]]
) -> list[int | None]:
    """The parents, with each agent or chain span that ran inside a tool call but hangs from above
    it moved under that tool (see the module's docstring)."""
    parent = recorded_parents(spans)
    tools = [i for i, (role, _) in enumerate(roles) if role == "tool" and _timed(spans[i])]
    containers = [
        i
        for i, (role, _) in enumerate(roles)
        if role in CONTAINER_ROLES and parent[i] is not None and _timed(spans[i])
    ]
    if not tools or not containers:
        return parent
    lineage = _Lineage(parent)
    latest = _LatestEnd(len(spans))
    tools.sort(key=lambda t: spans[t].start_time_unix_nano)
    containers.sort(key=lambda i: spans[i].start_time_unix_nano)
    moved = list(parent)
    added = 0
    for i in containers:
        start, end = spans[i].start_time_unix_nano, spans[i].end_time_unix_nano
        while added < len(tools) and spans[tools[added]].start_time_unix_nano <= start:
            t = tools[added]
            latest.put(lineage.first[t], spans[t].end_time_unix_nano)
            added += 1
        holders = [
            lineage.at[k] for lo, hi in lineage.beside(i) for k in latest.ending(lo, hi, end)
        ]
        innermost = lineage.innermost([t for t in holders if t != i and t != parent[i]])
        if len(innermost) == 1:
            moved[i] = innermost[0]
    return moved


class _Lineage:
    """The recorded parents as ancestry: each span's position in a pre-order of the spans (its
    descendants follow it, up to ``last``), with each parent cycle (A→B→A) broken at one span for
    the layout and its spans kept as ancestors of everything that hangs from it, as a walk up the
    recorded parents finds them."""

    def __init__(self, parent: Sequence[int | None]) -> None:
        n = len(parent)
        self.cycle = [-1] * n  # the span each one's cycle was broken at (-1: reaches a root)
        self.on_cycle = [False] * n
        tree = list(parent)
        state = [0] * n  # 0 unseen, 1 on the walk under way, 2 done
        for start in range(n):
            path: list[int] = []
            node: int | None = start
            while node is not None and state[node] == 0:
                state[node] = 1
                path.append(node)
                node = parent[node]
            if node is None:
                reached = -1
            elif state[node] == 1:  # the walk came round to itself: a cycle, broken here
                reached = node
                for member in path[path.index(node) :]:
                    self.on_cycle[member] = True
                tree[node] = None
            else:
                reached = self.cycle[node]
            for member in path:
                state[member] = 2
                self.cycle[member] = reached
        children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(tree):
            if p is not None:
                children[p].append(i)
        self.first = [0] * n
        self.last = [0] * n
        self.at = [0] * n  # the span at each position
        position = 0
        for root in (i for i, p in enumerate(tree) if p is None):
            stack = [(root, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    self.last[node] = position - 1
                    continue
                self.first[node] = position
                self.at[position] = node
                position += 1
                stack.append((node, True))
                stack.extend((child, False) for child in children[node])
        self.parent = parent

    def above(self, a: int, t: int) -> bool:
        """Whether ``a`` is an ancestor of ``t`` by the recorded parents."""
        if a == t:
            return False
        if self.first[a] < self.first[t] <= self.last[a]:
            return True
        return self.on_cycle[a] and self.cycle[a] == self.cycle[t]

    def beside(self, i: int) -> list[tuple[int, int]]:
        """The ranges of positions of the spans that descend from ``i``'s parent but not from
        ``i`` (none when ``i`` is in a cycle: it is an ancestor of all its cycle's spans)."""
        p = self.parent[i]
        if p is None or self.on_cycle[i]:
            return []
        top = self.cycle[p] if self.on_cycle[p] else p
        lo = self.first[top] + (0 if self.on_cycle[p] else 1)
        return [(lo, self.first[i] - 1), (self.last[i] + 1, self.last[top])]

    def innermost(self, holders: list[int]) -> list[int]:
        """The holders that are ancestors of no other holder."""
        if len(holders) < 2:
            return holders
        ordered = sorted(holders, key=lambda t: self.first[t])
        cycles: dict[int, int] = {}
        for t in ordered:
            cycles[self.cycle[t]] = cycles.get(self.cycle[t], 0) + 1
        found = []
        for k, t in enumerate(ordered):
            if self.on_cycle[t] and cycles[self.cycle[t]] > 1:
                continue  # a span of a cycle is an ancestor of every other span it reaches
            following = ordered[k + 1] if k + 1 < len(ordered) else None
            if following is not None and self.first[following] <= self.last[t]:
                continue
            found.append(t)
        return found


class _LatestEnd:
    """The latest end time among the tools put at each range of positions (a segment tree)."""

    def __init__(self, n: int) -> None:
        self.size = 1
        while self.size < n:
            self.size *= 2
        self.top = [-1] * (2 * self.size)

    def put(self, position: int, end: int) -> None:
        node = position + self.size
        self.top[node] = end
        node //= 2
        while node:
            self.top[node] = max(self.top[2 * node], self.top[2 * node + 1])
            node //= 2

    def ending(self, lo: int, hi: int, end: int) -> list[int]:
        """The positions in ``lo..hi`` whose tool ends at ``end`` or later."""
        found: list[int] = []
        if lo > hi:
            return found
        stack = [(1, 0, self.size - 1)]
        while stack:
            node, a, b = stack.pop()
            if b < lo or a > hi or self.top[node] < end:
                continue
            if a == b:
                found.append(a)
                continue
            middle = (a + b) // 2
            stack.append((2 * node + 1, middle + 1, b))
            stack.append((2 * node, a, middle))
        return found


def _timed(span: SpanRecord) -> bool:
    return 0 < span.start_time_unix_nano <= span.end_time_unix_nano
