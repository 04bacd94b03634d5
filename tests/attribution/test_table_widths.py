"""The attribution table at the widths terminals have (issue 38: at exactly 110 columns it lost its
``#`` column and cut names that had room). Every width keeps every column; a name is cut only when
the table, its other columns as narrow as they can be, fills the terminal without it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from rich.console import Console

from otel_replay.attribution import AttributionConfig, AttributionResult, attribute
from otel_replay.cli import _attribute_view as view
from tests.attribution.long_runs import Break, run

WIDTHS = (80, 100, 110, 120, 200)


def _named(result: AttributionResult, name: str) -> AttributionResult:
    steps = tuple(dataclasses.replace(s, name=f"{name}_{s.index}") for s in result.steps)
    return dataclasses.replace(result, steps=steps)


@pytest.fixture(scope="module")
def results() -> dict[str, AttributionResult]:
    model = run("late", 6, {4: Break(0.0)})
    plain = attribute(model.trajectory(), model.registry(), AttributionConfig())
    causes = attribute(model.trajectory(), model.registry(), AttributionConfig(root_cause=True))
    return {"plain": plain, "causes": causes}


def _table(result: AttributionResult, width: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table's lines as ``attribute`` prints it on a terminal ``width`` columns wide."""
    console = Console(width=width, record=True, color_system=None)
    monkeypatch.setattr(view, "console", console)
    view._render(result, AttributionConfig())
    lines = console.export_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    end = next(i for i in range(start + 2, len(lines)) if not lines[i].strip())
    return lines[start:end]


def _rows(lines: list[str]) -> Iterator[list[str]]:
    for line in lines[2:]:
        yield line.split()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["plain", "causes"])
@pytest.mark.parametrize(
    "name", ["search", "get_free_slots_for_calendar_attendees", "x" * 70, "[bold]b[/bold]"]
)
def test_every_column_shows_and_names_are_cut_only_without_room(
    results: dict[str, AttributionResult],
    which: str,
    width: int,
    name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _named(results[which], name)
    lines = _table(result, width, monkeypatch)
    header = lines[0].split()
    assert header[:3] == ["#", "kind", "name"], lines[0]
    assert header[3] == "attribution" and "P(fail)" in header and "test" in header
    widest = max(len(line) for line in lines)
    assert widest <= width
    rows = list(_rows(lines))
    assert [r[0] for r in rows] == [str(s.index) for s in result.steps]
    assert all(r[1] == "tool" for r in rows)
    culprit = next(r for r in rows if r[0] == str(result.point_of_commitment))
    assert culprit[-1] == "◀"
    cut = [r[2] for r in rows if r[2] != f"{name}_{r[0]}"]
    if cut:
        assert all(c.endswith("…") for c in cut), cut
        assert widest == width, f"names cut with {width - widest} columns to spare"
    if width >= 100 and len(name) < 40:
        assert not cut, lines
