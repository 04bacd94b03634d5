"""The Phoenix REST client against answers no real Phoenix gives (a loopback stub, not the server):
a redirect is an error naming where it points and is not followed, a mistyped address is told
before anything is stored, an answer that is no HTTP or no JSON is one error line, a page of the
wrong type or a cursor given twice stops the paging, and no key or query string is ever printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from otel_replay.errors import ReplayError
from otel_replay.platforms._http import JsonClient
from tests.cli_helpers import invoke, one_line_error
from tests.http_stub import Asked, answer, stub

SECRET = "sk-do-not-print-0123456789"


def _import(store: Path, url: str) -> str:
    """``import URL``: its one error line (with stdout and stderr checked for the secret)."""
    result = invoke(CliRunner(), store, "import", url)
    assert SECRET not in result.stdout + result.stderr
    return one_line_error(result)


def _json(status: str, value: object) -> bytes:
    return answer(status, json.dumps(value).encode(), Content_Type="application/json")


def test_a_redirect_is_an_error_naming_where_and_the_key_stays_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHOENIX_API_KEY", SECRET)
    with stub(lambda asked: _json("200 OK", {"data": []})) as elsewhere:
        moved_to = f"{elsewhere.url}/v1/projects/p?token={SECRET}"
        with stub(lambda asked: answer("301 Moved Permanently", Location=moved_to)) as phoenix:
            line = _import(tmp_path / "store.db", f"phoenix://127.0.0.1:{phoenix.port}/p")
    assert line == (
        f"error: Phoenix at {phoenix.url} answered 301, moved to {elsewhere.url}/v1/projects/p: "
        "give that URL"
    )
    assert elsewhere.asked == []  # neither the request nor its Authorization header went there
    assert [a.headers["authorization"] for a in phoenix.asked] == [f"Bearer {SECRET}"]


def test_a_post_answered_with_see_other_is_not_turned_into_a_get() -> None:
    def respond(asked: Asked) -> bytes:
        if asked.path.startswith("/v1/span_annotations"):
            return answer("303 See Other", Location="/elsewhere")
        return _json("200 OK", {})

    with stub(respond) as server:
        client = JsonClient("Phoenix", server.url, None, "PHOENIX_API_KEY")
        with pytest.raises(ReplayError) as raised:
            client.post("/v1/span_annotations", [("sync", "true")], {"data": []})
    assert str(raised.value) == (
        f"Phoenix at {server.url} answered 303, moved to {server.url}/elsewhere: give that URL"
    )
    assert [(a.method, a.path) for a in server.asked] == [
        ("POST", "/v1/span_annotations?sync=true")
    ]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("phoenix://[::1/p", "is not a URL"),
        ("phoenix://a b:1/p", "has no host name a request can go to"),
        ("phoenix://h:0/p", "the port is not a number from 1 to 65535"),
        ("phoenix://h:99999/p", "the port is not a number from 1 to 65535"),
        (f"phoenix://me:{SECRET}@h:6006/p", "has a user name or password in it"),
        (f"phoenix://{SECRET}@h:6006/p", "has a user name or password in it"),
        (f"phoenix://h:6006/p?api_key={SECRET}", "is not a Phoenix address"),
    ],
)
def test_a_mistyped_address_is_one_line_before_the_store_is_touched(
    tmp_path: Path, url: str, said: str
) -> None:
    assert said in _import(tmp_path / "store.db", url)
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"no http here\r\n\r\n", "cannot reach Phoenix at"),
        (answer("200 OK", b"[" * 100_000), "with something that is not JSON"),
        (answer("500 Internal Server Error", b"[" * 100_000), "answered HTTP 500"),
    ],
    ids=["bad-status-line", "json-too-deep", "error-json-too-deep"],
)
def test_an_answer_that_is_no_http_or_no_json_is_one_line(
    tmp_path: Path, raw: bytes, said: str
) -> None:
    with stub(lambda asked: raw) as server:
        line = _import(tmp_path / "store.db", f"phoenix://127.0.0.1:{server.port}/p")
    assert said in line and f"Phoenix at {server.url}" in line


def test_a_body_shorter_than_its_length_is_one_line(tmp_path: Path) -> None:
    short = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{}"
    with stub(lambda asked: short) as server:
        line = _import(tmp_path / "store.db", f"phoenix://127.0.0.1:{server.port}/p")
    assert line.startswith(f"error: cannot reach Phoenix at {server.url}: IncompleteRead")


def test_a_projects_answer_that_is_no_page_is_one_line(tmp_path: Path) -> None:
    def respond(asked: Asked) -> bytes:
        if asked.path.startswith("/v1/projects/"):
            return _json("404 Not Found", {"detail": "no such project"})
        return _json("200 OK", ["not", "a", "page"])

    with stub(respond) as server:
        line = _import(tmp_path / "store.db", f"phoenix://127.0.0.1:{server.port}/p")
    assert line == f"error: Phoenix at {server.url} answered /v1/projects with no project page"


@pytest.mark.parametrize("path", ["/v1/projects?", "/v1/projects/p/spans/otlpv1"])
def test_a_cursor_given_twice_stops_the_paging(tmp_path: Path, path: str) -> None:
    def respond(asked: Asked) -> bytes:
        if len(server.asked) > 50:
            return _json("500 Internal Server Error", {"detail": "asked too often"})
        if asked.path.startswith(path):
            return _json("200 OK", {"data": [], "next_cursor": "again"})
        if asked.path.startswith("/v1/projects/p") and path == "/v1/projects?":
            return _json("404 Not Found", {"detail": "no such project"})
        return _json("200 OK", {})

    with stub(respond) as server:
        line = _import(tmp_path / "store.db", f"phoenix://127.0.0.1:{server.port}/p")
    where = path.rstrip("?")
    assert line == (
        f"error: Phoenix at {server.url} answered page 2 of {where} with a cursor it gave "
        "before: its pages go round in a circle"
    )
    assert len(server.asked) <= 4
