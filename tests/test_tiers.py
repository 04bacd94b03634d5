"""The tiers (issue 41, item 7): plain ``pytest`` runs the fast tier and skips each slow one with a
reason naming ``--all``; ``pytest --all`` (what ``.ci/run`` runs) or a ``-m`` runs what it names; a
test that asks for a real platform server or a browser is in that tier by its fixtures alone. Each
case runs pytest on a small suite using this suite's hooks (`tests.conftest`)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, SLOW_TIERS

CONFTEST = """
import pytest
from tests.conftest import pytest_addoption, pytest_collection_modifyitems

@pytest.fixture
def phoenix():
    return "a server"

@pytest.fixture
def browser_page():
    return "a page"

@pytest.fixture
def traced(phoenix):
    return phoenix
"""

SUITE = """
import pytest

def test_fast():
    pass

@pytest.mark.fuzz
def test_fuzzing():
    pass

@pytest.mark.statistical
def test_coverage():
    pass

def test_needs_a_platform(traced):
    pass

def test_looks(browser_page):
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    markers = "\n".join(f"    {tier}: slow" for tier in SLOW_TIERS)
    pytester.makeini(f"[pytest]\nmarkers =\n{markers}\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Each test's name and what became of it (``-v`` lines)."""
    found = re.findall(r"::(test_\w+) (PASSED|SKIPPED|FAILED|ERROR)", result.stdout.str())
    return dict(found)


def test_plain_pytest_runs_the_fast_tier_and_says_how_to_run_the_rest(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest_inprocess("-p", "no:cacheprovider", "-v", "-rs")
    assert _outcomes(result) == {
        "test_fast": "PASSED",
        "test_fuzzing": "SKIPPED",
        "test_coverage": "SKIPPED",
        "test_needs_a_platform": "SKIPPED",
        "test_looks": "SKIPPED",
    }
    said = result.stdout.str()
    assert "slow tier (fuzz): pytest --all runs it, or -m fuzz" in said
    assert "slow tier (platform): pytest --all runs it, or -m platform" in said
    assert "slow tier (browser): pytest --all runs it, or -m browser" in said


def test_all_runs_every_tier(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess("-p", "no:cacheprovider", "-v", "--all")
    assert set(_outcomes(result).values()) == {"PASSED"}
    result.assert_outcomes(passed=5)


@pytest.mark.parametrize(
    ("expression", "ran"),
    [
        ("fuzz", {"test_fuzzing"}),
        ("platform", {"test_needs_a_platform"}),
        ("browser", {"test_looks"}),
        ("not fuzz and not statistical", {"test_fast", "test_needs_a_platform", "test_looks"}),
    ],
)
def test_a_marker_expression_runs_what_it_names(
    suite: pytest.Pytester, expression: str, ran: set[str]
) -> None:
    outcomes = _outcomes(
        suite.runpytest_inprocess("-p", "no:cacheprovider", "-v", "-m", expression)
    )
    assert outcomes == dict.fromkeys(ran, "PASSED")


def test_every_tier_is_declared_and_ci_runs_them_all() -> None:
    """The markers pytest knows are the tiers (pyproject.toml), tests/README.md's table names each
    one, and `.ci/run` runs ``pytest --all``."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    start = pyproject.index("\nmarkers = [")
    declared = re.findall(r'^    "(\w+):', pyproject[start : pyproject.index("\n]", start)], re.M)
    assert sorted(declared) == sorted(SLOW_TIERS)
    table = (ROOT / "tests" / "README.md").read_text()
    assert [tier for tier in SLOW_TIERS if f"| `{tier}`" not in table] == []
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "pytest --all" in lines and "pytest" not in lines
