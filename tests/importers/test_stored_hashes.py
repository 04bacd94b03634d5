"""Native JSONL edited after export: a step whose stored hash no longer matches its content is
named (file, line, run, step), read with fresh hashes and noted, or refused when read strictly.

The runs are the sample's exported ones (``sample_traces/incident.steps.jsonl``, written by
``agent-replay export``), edited one field at a time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_replay import EditedContentError, ReadOptions, TraceFormatError, read_jsonl
from tests.conftest import SAMPLES

EXPORTED = SAMPLES / "incident.steps.jsonl"
LINES = EXPORTED.read_bytes().splitlines()
FAIL_LINE = 3  # incident-fail: 7 steps, model turns and tool calls
Record = dict[str, Any]


def _exported(edit: Callable[[Record], None] | None = None) -> list[Record]:
    records = [orjson.loads(line) for line in LINES]
    if edit is not None:
        edit(records[FAIL_LINE - 1])
    return records


def _write(tmp_path: Path, records: list[Record]) -> Path:
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _read(path: Path, **options: Any) -> tuple[list[str], ReadOptions]:
    read = ReadOptions(**options)
    return [run.id for run in read_jsonl(path, read)], read


def _set(step: int, field: str, value: Any) -> Callable[[Record], None]:
    def edit(record: Record) -> None:
        record["steps"][step][field] = value

    return edit


def _set_argument(record: Record) -> None:
    record["steps"][3]["inputs"]["arguments"]["service"] = "payments"


def _set_message(record: Record) -> None:
    record["steps"][4]["inputs"]["messages"][0]["content"] = "edited prompt"


EDITS = {
    "output": (_set(5, "output", []), 5, "search_logs"),
    "tool input": (_set_argument, 3, "list_deploys"),
    "model input": (_set_message, 4, "rule-based-investigator"),
    "status": (_set(1, "status", "error"), 1, "query_metrics"),
    "error": (_set(3, "error", "timeout"), 3, "list_deploys"),
    "name": (_set(1, "name", "query_logs"), 1, "query_logs"),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_an_edited_step_is_named_and_the_run_read_with_fresh_hashes(
    tmp_path: Path, edit: tuple[Callable[[Record], None], int, str]
) -> None:
    change, index, name = edit
    path = _write(tmp_path, _exported(change))
    ids, options = _read(path)
    assert ids == ["incident-pass", "incident-pass-retry", "incident-fail"]  # the import goes on
    (edited,) = options.report.edited
    assert (edited.path, edited.line, edited.run_id) == (str(path), FAIL_LINE, "incident-fail")
    assert (edited.step_index, edited.step_name, edited.others) == (index, name, 0)
    assert str(edited) == (
        f"{path}:{FAIL_LINE}: run 'incident-fail': step {index} {name!r} no longer matches its "
        "stored hash: its content was edited after export"
    )
    with pytest.raises(EditedContentError) as refused:
        _read(path, strict=True)
    assert str(refused.value) == str(edited)
    assert isinstance(refused.value, TraceFormatError)


def test_an_unchanged_export_and_a_hand_written_file_read_without_a_word(tmp_path: Path) -> None:
    assert _read(EXPORTED, strict=True)[1].report.edited == []

    def unhashed(record: Record) -> None:  # hand-written: no index, op_key, hash or final_hash
        del record["final_hash"]
        for step in record["steps"]:
            del step["index"], step["op_key"], step["hash"]
        record["steps"][5]["output"] = []

    assert _read(_write(tmp_path, _exported(unhashed)), strict=True)[1].report.edited == []


def test_clocks_span_ids_and_correlation_ids_are_no_part_of_the_content(tmp_path: Path) -> None:
    def elsewhere(record: Record) -> None:
        for step in record["steps"]:
            step["start_time_unix_nano"] = 1
            step["span_id"] = "0000000000000001"
            step["op_key"] = "0" * 64  # made from the inputs the hash covers: not compared
        record["steps"][1]["inputs"]["tool_call_id"] = "call_renamed"

    assert _read(_write(tmp_path, _exported(elsewhere)), strict=True)[1].report.edited == []


def test_one_warning_per_run_names_the_first_edit_and_counts_the_rest(tmp_path: Path) -> None:
    def twice(record: Record) -> None:
        record["steps"][1]["output"] = {"points": []}
        record["steps"][5]["error"] = "timeout"
        record["steps"][6]["output"]["content"] = "Root cause: a deploy."

    def once(record: Record) -> None:
        record["steps"][0]["status"] = "error"

    records = _exported(twice)
    once(records[0])
    _, options = _read(_write(tmp_path, records))
    first, second = options.report.edited
    assert (first.run_id, first.line, first.step_index, first.others) == ("incident-pass", 1, 0, 0)
    assert (second.run_id, second.step_index, second.step_name) == (
        "incident-fail",
        1,
        "query_metrics",
    )
    assert second.others == 2
    assert "step 1 'query_metrics' no longer matches its stored hash (nor do 2 later steps)" in str(
        second
    )


def test_steps_removed_or_reordered_are_edits(tmp_path: Path) -> None:
    def last_removed(record: Record) -> None:
        record["steps"].pop()

    _, options = _read(_write(tmp_path, _exported(last_removed)))
    (edited,) = options.report.edited
    assert edited.step_index is None and "its final_hash no longer names its steps" in str(edited)

    def swapped(record: Record) -> None:
        steps = record["steps"]
        steps[1], steps[3] = steps[3], steps[1]

    _, options = _read(_write(tmp_path, _exported(swapped)))
    (edited,) = options.report.edited
    assert (edited.step_index, edited.step_name) == (1, "list_deploys")


def test_strict_with_skip_invalid_skips_only_the_edited_run(tmp_path: Path) -> None:
    path = _write(tmp_path, _exported(_set(5, "output", [])))
    ids, options = _read(path, strict=True, skip_invalid=True)
    assert ids == ["incident-pass", "incident-pass-retry"]
    (skipped,) = options.report.skipped
    assert isinstance(skipped, EditedContentError) and skipped.step_index == 5
    assert options.report.edited == []


def test_step_lines_carrying_hashes_are_checked_on_their_own_line(tmp_path: Path) -> None:
    (run,) = (r for r in _exported() if r["trajectory_id"] == "incident-fail")
    lines = [{"trajectory_id": "incident-fail", **step} for step in copy.deepcopy(run["steps"])]
    path = tmp_path / "steps.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert _read(path, strict=True)[1].report.edited == []
    lines[2]["output"]["content"] = "edited"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    (edited,) = _read(path)[1].report.edited
    assert (edited.line, edited.step_index) == (3, 2)
