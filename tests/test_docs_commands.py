"""Every shell command the documentation shows is run, as a reader would run it (issue 27).

Each page (README.md and docs/**/*.md) is one test: its ``sh`` blocks run in page order in a fresh
folder holding copies of ``sample_traces/``, ``examples/`` and ``tests/fixtures/``, their markers
checked (`tests/docs_pages.py` says how blocks and markers are written, `tests/docs_runner.py` how
they run). Beside them: the markers are read as documented, a failing command is reported with its page,
line, exit code and output, and no documented command names a file the repository does not ship.

The pages are independent (each its own folder, its servers on free ports of their own), so the
pages a session selects start as the session starts, on the machine's other cores
(`tests.conftest.documentation_pages`), and each page's test waits for its own.
"""

from __future__ import annotations

import socket
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.docs_pages import Page, parse_page, read_page
from tests.docs_paths import placeholders, shipped_files, unshipped
from tests.docs_runner import make_folder, run_page

PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")], key=lambda p: p.relative_to(ROOT).parts
)


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _page(path: Path) -> Page:
    return read_page(path, _name(path))


@pytest.fixture(scope="module")
def agent_replay() -> Path:
    """The test venv's ``agent-replay``, which the pages' commands must find first on PATH."""
    found = Path(sys.executable).parent / "agent-replay"
    if not found.exists():
        pytest.fail(
            f"{found} is missing: install the project into the test venv (pip install -e .)"
        )
    return found


def run_one_page(path: Path, folder: Path) -> list[str]:
    """Run the page at ``path`` in a folder made under ``folder``: its failures."""
    page = _page(path)
    return page.problems + run_page(page, make_folder(ROOT, folder / "page"))


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_every_command_of_the_page_runs_as_documented(
    path: Path, agent_replay: Path, documentation_pages: dict[Path, Future[list[str]]]
) -> None:
    page = _page(path)
    failures = documentation_pages[path].result()
    ran = sum(len(b.commands) for b in page.blocks if b.runs)
    assert not failures, f"{len(failures)} failure(s) in {page.name} ({ran} commands run):\n\n" + (
        "\n\n".join(failures)
    )


def test_no_documented_command_names_a_file_the_repository_does_not_ship() -> None:
    shipped = shipped_files(ROOT)
    problems = [problem for path in PAGES for problem in unshipped(_page(path), shipped)]
    assert not problems, "\n".join(problems)


def test_no_runnable_command_keeps_a_placeholder() -> None:
    pages = [_page(path) for path in PAGES]
    found = [
        p for page in pages for block in page.blocks if block.runs for p in placeholders(block)
    ]
    assert not found, "\n".join(found)


SYNTHETIC = """\
# A page

Some text.

<!-- expect: imported 11 -->
<!-- expect: runs -->
```sh
agent-replay import sample_traces/   # every sample
agent-replay list \\
  --json
```

<!-- a comment that is no marker -->
<!-- not run: needs a real cluster -->

```sh
agent-replay attribute --executor ray
```

<!-- exit: 1 -->
<!-- needs: openai -->
```sh
# a comment line is no command
agent-replay show no-such-run
```

```python
print("not shell")
```

<!-- not run: -->
```sh
echo one
```

<!-- expects: typo -->
```sh
echo two
```

<!-- exit: 1 -->
```python
print("markers before python do nothing")
```

<!-- not run -->
```sh
echo three
```

<!-- exit: one -->
<!-- needs: anthropic -->
```sh
echo four
```

<!-- expect: nothing follows -->
A paragraph.
"""


def test_the_markers_are_read_as_documented() -> None:
    page = parse_page(SYNTHETIC, "synthetic.md")
    first, second, third, *rest = page.blocks
    assert [(c.line, c.text) for c in first.commands] == [
        (8, "agent-replay import sample_traces/   # every sample"),
        (9, "agent-replay list --json"),
    ]
    assert first.expect == ("imported 11", "runs") and first.runs and first.exit_code == 0
    assert second.not_run == "needs a real cluster" and not second.runs
    assert (third.line, third.exit_code, third.needs) == (22, 1, ("openai",))
    assert [c.line for c in third.commands] == [24]
    assert len(rest) == 4  # the python blocks are no sh blocks
    assert page.problems == [
        "synthetic.md:31: 'not run:' without why the block is not run",
        "synthetic.md:36: 'expects' is not a marker; known: not run, expect, exit, needs",
        "synthetic.md:41: markers before a block in 'python' (only ```sh blocks are run)",
        "synthetic.md:46: 'not run' needs a colon and a value ('not run: …')",
        "synthetic.md:51: exit: 'one' (one exit code, a whole number)",
        "synthetic.md:52: needs: 'anthropic'; known: openai",
        "synthetic.md:57: markers that precede no block",
    ]


FAILING = """\
<!-- expect: imported 11 trajectories -->
```sh
agent-replay import sample_traces/
```

<!-- exit: 1 -->
```sh
agent-replay show incident-fail
```

```sh
agent-replay show incident-fail
agent-replay show no-such-run   # the store has no such run
agent-replay list
```

<!-- expect: a line no command prints -->
```sh
agent-replay list
```
"""


def test_a_failing_command_is_named_with_its_page_line_exit_code_and_output(
    tmp_path: Path, agent_replay: Path
) -> None:
    page = parse_page(FAILING, "failing.md")
    failures = run_page(page, make_folder(ROOT, tmp_path / "page"))
    assert len(failures) == 3, failures
    unexpected_pass, missing_run, missing_text = failures
    assert unexpected_pass.startswith(
        "failing.md:8: `agent-replay show incident-fail` exited 0, expected exit 1;"
    )
    assert "list_deploys" in unexpected_pass  # the output's tail
    assert missing_run.startswith("failing.md:13: `agent-replay show no-such-run")
    assert "exited 1, expected exit 0; the block's 1 later command(s) not run;" in missing_run
    assert "no trajectory id starts with 'no-such-run'" in missing_run
    assert missing_text.startswith("failing.md:18: the block's output lacks 'a line no command")
    assert "incident-fail" in missing_text  # what the block printed instead


def test_a_command_that_names_a_missing_file_is_found_without_running_it() -> None:
    page = parse_page(
        """\
```sh
agent-replay import traces.jsonl sample_traces/incident.otlp.pb
agent-replay attribute incident-fail --resamplers tests/attribution/scm/chain.py
agent-replay record --agent examples/incident/agent.py:investigate --otlp-out run.json
agent-replay import run.json --out=made/there.json && agent-replay import made/there.json
python -m examples.incident.judge_server --port 8001 &
python -m examples.incident.no_such_server
gzip -k sample_traces/incident.otlp.jsonl && agent-replay import sample_traces/incident.otlp.jsonl.gz
python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]'
agent-replay diff incident-fail FORK_ID [--json]
```
""",
        "paths.md",
    )
    problems = unshipped(page, shipped_files(ROOT))
    assert problems == [
        "paths.md:2: `agent-replay import traces.jsonl sample_traces/incident.otlp.pb` names "
        "traces.jsonl, which the repository does not ship",
        "paths.md:3: `agent-replay attribute incident-fail --resamplers "
        "tests/attribution/scm/chain.py` names tests/attribution/scm/chain.py, which a "
        "page's folder does not hold (only sample_traces/, examples/ and tests/fixtures/ are copied there): "
        "ship it under examples/",
        "paths.md:7: `python -m examples.incident.no_such_server` names "
        "examples/incident/no_such_server.py, which the repository does not ship",
    ]
    assert list(placeholders(page.blocks[0])) == [
        "paths.md:10: `agent-replay diff incident-fail FORK_ID [--json]` has the placeholder FORK_ID",
        "paths.md:10: `agent-replay diff incident-fail FORK_ID [--json]` has the optional [--json]",
    ]


def test_a_server_started_with_an_ampersand_serves_the_later_commands(
    tmp_path: Path, agent_replay: Path
) -> None:
    """The receiver a page starts with ``&`` is listening when the next command sends it a run,
    and is stopped when the page is done (its port free again)."""
    port = _free_port()
    send = (
        "import urllib.request as u; [u.urlopen(u.Request(URL, data=line, headers={'Content-Type':"
        " 'application/json'})) for line in open('sample_traces/incident.otlp.jsonl', 'rb')]"
    ).replace("URL", repr(f"http://127.0.0.1:{port}/v1/traces"))
    page = parse_page(
        f"""\
<!-- expect: ef2843ff74cff6a6b6dc0914faa30751 -->
<!-- expect: 3 runs -->
<!-- expect: receiving OTLP/HTTP traces at -->
```sh
agent-replay serve --port {port} &
python -c "{send}"
agent-replay list
```
""",
        "server.md",
    )
    assert run_page(page, make_folder(ROOT, tmp_path / "page")) == []
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the receiver outlived its page"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
