"""The platforms an address names, by its scheme (``phoenix://``, ``mlflow://``, ``jaeger://``):
the one table the command line asks which platform an ``import`` source or an ``attribute
--annotate`` target is, how to check it, read it and write a verdict to it. A platform is a row; its module does the work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from otel_replay._web import shown_url
from otel_replay.errors import AddressError, setting
from otel_replay.importers import ReadOptions
from otel_replay.model import Trajectory

__all__ = ["PLATFORMS", "Platform", "annotated_by", "platform_of", "sources"]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Platform:
    """One platform: its ``name`` for messages, its ``scheme``, the ``source`` form an import
    gives, and what it can do. ``check`` raises `ReplayError` for an address that is no source
    (``source=True``: it must name what to read) or no annotation target; ``read`` yields the
    runs of a source, every one fetched first; ``annotate`` (None: the platform takes no
    verdicts) writes a report on the run's trace and returns the lines that say what it wrote."""

    name: str
    scheme: str
    source: str
    check: Callable[[str, bool], None]
    read: Callable[[str, int | None, ReadOptions, Progress], Iterator[Trajectory]]
    annotate: Callable[[str, Mapping[str, Any], Trajectory], list[str]] | None = None


def _check_phoenix(url: str, source: bool) -> None:
    from otel_replay.platforms.phoenix import parse_phoenix_url

    if parse_phoenix_url(url).project is None and source:
        raise AddressError(f"{url} names no project: phoenix://HOST:PORT/PROJECT")


def _read_phoenix(
    url: str, since_ns: int | None, options: ReadOptions, progress: Progress
) -> Iterator[Trajectory]:
    from otel_replay.platforms.phoenix import read_phoenix

    return read_phoenix(url, since_ns, options, progress=progress)


def _annotate_phoenix(url: str, report: Mapping[str, Any], run: Trajectory) -> list[str]:
    from otel_replay.platforms.phoenix import annotate_phoenix, parse_phoenix_url

    written = annotate_phoenix(url, report, run)
    lines = [
        f"annotated {_count(len(written), 'span')} in Phoenix at {parse_phoenix_url(url).base}:"
    ]
    return lines + [f"  {a.name} = {a.label} on span {a.span_id}" for a in written]


def _check_mlflow(url: str, source: bool) -> None:
    from otel_replay.platforms.mlflow import parse_mlflow_url

    if parse_mlflow_url(url).experiment is None and source:
        raise AddressError(f"{url} names no experiment: mlflow://HOST:PORT/EXPERIMENT")


def _read_mlflow(
    url: str, since_ns: int | None, options: ReadOptions, progress: Progress
) -> Iterator[Trajectory]:
    from otel_replay.platforms.mlflow import read_mlflow

    return read_mlflow(url, since_ns, options, progress=progress)


def _annotate_mlflow(url: str, report: Mapping[str, Any], run: Trajectory) -> list[str]:
    from otel_replay.platforms.mlflow import annotate_mlflow, mlflow_trace_id, parse_mlflow_url

    written = annotate_mlflow(url, report, run)
    updated = sum(1 for w in written if w.updated)
    where = parse_mlflow_url(url).base
    head = f"wrote {_count(len(written), 'assessment')} in MLflow at {where}"
    lines = [f"{head} ({updated} updated):" if updated else f"{head}:"]
    trace = mlflow_trace_id(run)
    for one in written:
        on = f"span {one.feedback.span_id} of trace {trace}" if one.feedback.span_id else trace
        lines.append(f"  {one.feedback.name} = {one.feedback.value} on {on}")
    return lines


def _check_jaeger(url: str, source: bool) -> None:
    from otel_replay.platforms.jaeger import parse_jaeger_url

    if parse_jaeger_url(url).service is None and source:
        raise AddressError(f"{url} names no service: jaeger://HOST:PORT/SERVICE")


def _read_jaeger(
    url: str, since_ns: int | None, options: ReadOptions, progress: Progress
) -> Iterator[Trajectory]:
    from otel_replay.platforms.jaeger import read_jaeger

    return read_jaeger(url, since_ns, options, progress=progress)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


#: Every platform, by scheme.
PLATFORMS: tuple[Platform, ...] = (
    Platform(
        "Phoenix",
        "phoenix://",
        "phoenix://HOST:PORT/PROJECT",
        _check_phoenix,
        _read_phoenix,
        _annotate_phoenix,
    ),
    Platform(
        "MLflow",
        "mlflow://",
        "mlflow://HOST:PORT/EXPERIMENT",
        _check_mlflow,
        _read_mlflow,
        _annotate_mlflow,
    ),
    Platform("Jaeger", "jaeger://", "jaeger://HOST:PORT/SERVICE", _check_jaeger, _read_jaeger),
)


def platform_of(text: str) -> Platform | None:
    """The platform whose scheme ``text`` starts with; None for anything else (a path)."""
    return next((p for p in PLATFORMS if text.startswith(p.scheme)), None)


def sources() -> str:
    """The source forms, for messages: "Phoenix projects (phoenix://HOST:PORT/PROJECT), ..."."""
    return ", ".join(f"{p.name} ({p.source})" for p in PLATFORMS)


def annotated_by(url: str) -> Platform:
    """The platform ``url`` (an ``--annotate`` target) names, its address checked; a
    `ReplayError` for an address of no platform that takes verdicts."""
    platform = platform_of(url)
    takers = " or ".join(f"{p.scheme}HOST:PORT" for p in PLATFORMS if p.annotate is not None)
    if platform is None or platform.annotate is None:
        named = (
            f"{platform.name} takes no verdicts"
            if platform
            else f"{shown_url(url)!r} is no platform"
        )
        raise AddressError(f"{setting('annotate')} {named}: give {takers}")
    platform.check(url, False)
    return platform
