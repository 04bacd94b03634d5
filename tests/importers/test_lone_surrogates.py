"""A lone surrogate escape (``"\\ud800"``) in a JSON string is no text any store holds. Every
reader refuses it in one line naming the file, the line and what is wrong, whichever decoder read
the document: orjson (which refuses it itself), or Python's, which reads a file of one line that
orjson refused (it may hold NaN) and takes the escape as text: the span holding it is refused
(``--skip-invalid`` leaves it out)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import Store
from otel_replay.cli import app
from otel_replay.otlp_encode import request_to_otlp_json, spans_to_request
from tests.sdk import Recorder

MARK = "LONE-SURROGATE-HERE"


def _document(nan: bool) -> dict[str, object]:
    """An OTLP JSON request of real SDK spans: a tool call whose result is ``MARK`` (and, with
    ``nan``, a score that is NaN, which only Python's decoder reads)."""
    recorder = Recorder()
    with recorder.span("agent", {"openinference.span.kind": "AGENT"}):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
        with recorder.span("execute_tool search", {**tool, "gen_ai.tool.call.result": MARK}):
            pass
    document = request_to_otlp_json(spans_to_request(recorder.spans()))
    if nan:
        spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
        # before the surrogate: orjson stops at the NaN, and Python's decoder reads the document
        spans[0]["attributes"].insert(0, {"key": "score", "value": {"doubleValue": "NAN-HERE"}})
    return document


def _text(document: dict[str, object], pretty: bool) -> str:
    text = orjson.dumps(document, option=orjson.OPT_INDENT_2 if pretty else 0).decode()
    return text.replace(MARK, "\\ud800").replace('"NAN-HERE"', "NaN")


def _line_of(text: str, lead: str) -> int:
    return 1 + lead.count("\n") + text[: text.index("\\ud800")].count("\n")


# name: (pretty, NaN, trailing newline, blank lines before)
SHAPES = {
    "one-line-no-newline": (False, False, False, ""),
    "one-line-with-nan": (False, True, False, ""),
    "one-line-after-blank-lines": (False, True, False, "\n\n"),
    "pretty": (True, False, True, ""),
    "json-lines": (False, False, True, "\n"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_lone_surrogate_is_one_line_naming_the_file_and_line(
    runner: CliRunner, store_path: Path, tmp_path: Path, shape: str
) -> None:
    pretty, nan, newline, lead = SHAPES[shape]
    text = _text(_document(nan), pretty)
    path = tmp_path / "trace.json"
    path.write_text(lead + text + ("\n" if newline else ""))
    Store.open(store_path).close()
    before = store_path.read_bytes()
    result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error, *rest = [line for line in result.stderr.splitlines() if line.strip()]
    assert error.startswith(f"error: {path}:{_line_of(text, lead)}: "), error
    assert "surrogate" in error, error
    assert rest == [f"nothing from {path} was imported"]
    assert store_path.read_bytes() == before
    if not pretty and not newline:  # read by Python's decoder: the span is named, and skipped
        assert "at span 'execute_tool search'" in error and "gen_ai.tool.call.result" in error
        skipping = runner.invoke(
            app, ["import", str(path), "--store", str(store_path), "--skip-invalid"]
        )
        assert skipping.exit_code == 0, skipping.output
        assert "skipped 1 invalid record" in skipping.stderr


def test_a_native_jsonl_line_with_a_lone_surrogate_names_its_line(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    lines = [
        '{"trajectory_id": "t", "outcome": 1.0}',
        '{"trajectory_id": "t", "kind": "tool", "name": "search", "inputs": {}, "output": "ok"}',
        '{"trajectory_id": "t", "kind": "tool", "name": "se\\ud800", "inputs": {}, "output": 1}',
    ]
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"error: {path}:3: line.name = 'se\\ud800'"), result.stderr
