"""Fuzzing the readers of where traces live (Jaeger, Zipkin, MLflow, LangSmith, Datadog, Phoenix):
their own files, made by the real libraries or published by the projects, damaged at random.

Two kinds of damage: bytes (a byte changed, added, removed, the file cut off), which mostly breaks
the JSON; and values (the document parsed, then one value somewhere in it replaced by a hostile one,
or one key removed), which keeps the JSON and reaches the decoders' checks. Either way a file reads,
or is refused with the project's one-line error; never a traceback. The default tier runs a few
cases of each; the ``fuzz`` tier runs them at length, and also each reader's own generated
documents (the ``documents`` strategies of its test module) at length.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.importers import (
    test_platform_datadog,
    test_platform_jaeger,
    test_platform_langsmith,
    test_platform_mlflow,
    test_platform_zipkin,
)
from tests.importers.test_fuzz import FAST, SLOW, _mutated, _read_all, edits, json_values

PLATFORMS = ROOT / "tests" / "fixtures" / "platforms"
#: Every trace file of the platform fixtures, by its path under them.
FILES = sorted(
    str(path.relative_to(PLATFORMS))
    for path in PLATFORMS.rglob("*")
    if path.suffix in (".json", ".jsonl") and path.name != "requests.json"
)
#: The readers' own generated documents (each test module's ``documents`` strategy).
GENERATED = {
    "datadog": test_platform_datadog.documents,
    "jaeger": test_platform_jaeger.documents,
    "langsmith": test_platform_langsmith.documents,
    "mlflow": test_platform_mlflow.documents,
    "zipkin": test_platform_zipkin.documents,
}


def test_every_platform_reader_has_files_to_damage() -> None:
    folders = {name.split("/")[0] for name in FILES}
    assert folders >= {"datadog", "jaeger", "langsmith", "mlflow", "phoenix", "zipkin"}


def _check_bytes(tmp_path: Path, name: str, changes: list[Any], skip: bool) -> None:
    source = PLATFORMS / name
    path = tmp_path / source.name  # its own name: a suffix may pick the reader
    path.write_bytes(_mutated(source.read_bytes(), changes))
    _read_all(path, skip)


# A value's place in a document: the keys and indices to it, each taken modulo what is there.
places = st.lists(st.integers(0, 2**16), min_size=1, max_size=8)


def _replaced(document: Any, place: list[int], value: Any, remove: bool) -> Any:
    """``document`` with the value at ``place`` replaced by ``value`` (or, in an object,
    removed)."""
    if not isinstance(document, (dict, list)) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[place[0] % len(keys)]
    if len(place) > 1 and isinstance(document[key], (dict, list)) and document[key]:
        document[key] = _replaced(document[key], place[1:], value, remove)
    elif remove and isinstance(document, dict):
        del document[key]
    else:
        document[key] = value
    return document


def _check_values(
    tmp_path: Path, name: str, line: int, place: list[int], value: Any, remove: bool, skip: bool
) -> None:
    source = PLATFORMS / name
    path = tmp_path / source.name
    if source.suffix == ".jsonl":
        lines = [json.loads(text) for text in source.read_text().splitlines() if text.strip()]
        at = line % len(lines)
        lines[at] = _replaced(lines[at], place, value, remove)
        path.write_text("".join(json.dumps(one) + "\n" for one in lines))
    else:
        document = _replaced(json.loads(source.read_text()), place, value, remove)
        path.write_text(json.dumps(document))
    _read_all(path, skip)


@FAST
@given(name=st.sampled_from(FILES), changes=edits, skip=st.booleans())
def test_damaged_bytes_of_platform_files(
    tmp_path: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_bytes(tmp_path, name, changes, skip)


@FAST
@given(
    name=st.sampled_from(FILES),
    line=st.integers(0, 2**16),
    place=places,
    value=json_values,
    remove=st.booleans(),
    skip=st.booleans(),
)
def test_damaged_values_of_platform_files(
    tmp_path: Path, name: str, line: int, place: list[int], value: Any, remove: bool, skip: bool
) -> None:
    _check_values(tmp_path, name, line, place, value, remove, skip)


@pytest.mark.fuzz
@SLOW
@given(name=st.sampled_from(FILES), changes=edits, skip=st.booleans())
def test_damaged_bytes_of_platform_files_at_length(
    tmp_path: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_bytes(tmp_path, name, changes, skip)


@pytest.mark.fuzz
@SLOW
@given(
    name=st.sampled_from(FILES),
    line=st.integers(0, 2**16),
    place=places,
    value=json_values,
    remove=st.booleans(),
    skip=st.booleans(),
)
def test_damaged_values_of_platform_files_at_length(
    tmp_path: Path, name: str, line: int, place: list[int], value: Any, remove: bool, skip: bool
) -> None:
    _check_values(tmp_path, name, line, place, value, remove, skip)


@pytest.mark.fuzz
@SLOW
@given(data=st.data(), reader=st.sampled_from(sorted(GENERATED)), skip=st.booleans())
def test_each_readers_documents_at_length(
    tmp_path: Path, data: st.DataObject, reader: str, skip: bool
) -> None:
    document = data.draw(GENERATED[reader])
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document))
    _read_all(path, skip)
    lines = tmp_path / "fuzz.jsonl"
    lines.write_text(json.dumps(document) + "\n" + json.dumps(document) + "\n")
    _read_all(lines, skip)
