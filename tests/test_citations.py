"""Comments and docstrings cite files the repository holds (its docs pages), never a file beside
it: a reader of a clone has only the clone. (Eight once cited a page of format notes that no clone
has.)"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

#: A page cited by its path (``docs/importing.md``) or by a name in capitals (``README.md``).
CITED = re.compile(r"(?<![\w/.-])((?:docs/[\w/-]+|[A-Z][A-Z_-]+)\.md)\b")
SOURCES = ("otel_replay", "tests", "scripts", "examples", "benchmarks")


def citations(text: str) -> list[str]:
    return CITED.findall(text)


def _held(cited: str) -> bool:
    if "/" in cited:
        return (ROOT / cited).is_file()
    return any(ROOT.glob(cited)) or any(ROOT.glob(f"*/{cited}"))


def test_every_cited_page_is_in_the_repository() -> None:
    missing = sorted(
        f"{path.relative_to(ROOT)}: {cited}"
        for folder in SOURCES
        for path in (ROOT / folder).rglob("*.py")
        if path != Path(__file__)  # its examples below
        for cited in citations(path.read_text(encoding="utf-8"))
        if not _held(cited)
    )
    assert missing == []


def test_a_citation_of_a_file_beside_the_repository_is_found() -> None:
    text = "code = ERROR  # the pre-2021 rule (FORMATS.md §1.5); see docs/importing.md, README.md"
    assert citations(text) == ["FORMATS.md", "docs/importing.md", "README.md"]
    assert [c for c in citations(text) if not _held(c)] == ["FORMATS.md"]
    assert citations("tests write notes/paths.md and a runbook-2019.md") == []
