"""The install command an error suggests for an optional extra (issue 38: ``pip install
'otel-replay[openai]'`` was suggested to users who installed from a clone, where it fetches another
copy from an index instead of adding the extra to theirs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from otel_replay._extras import _direct_url, pip_command
from tests.conftest import ROOT


def _installed(folder: Path, direct_url: dict[str, object] | None) -> list[str]:
    """A copy of the distribution as pip leaves it in ``folder``: its dist-info, with pip's record
    of where it came from when there is one."""
    info = folder / "otel_replay-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-replay\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_bytes(orjson.dumps(direct_url))
    return [str(folder)]


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        (None, "pip install 'otel-replay[openai]'"),
        (
            {"url": "file:///home/me/agent-replay", "dir_info": {}},
            "pip install '/home/me/agent-replay[openai]'",
        ),
        (
            {"url": "file:///home/me/agent-replay", "dir_info": {"editable": True}},
            "pip install -e '/home/me/agent-replay[openai]'",
        ),
        (
            {"url": "file:///home/me/my%20clone", "dir_info": {"editable": True}},
            "pip install -e '/home/me/my clone[openai]'",
        ),
        (
            {
                "url": "https://example.org/me/agent-replay.git",
                "vcs_info": {"vcs": "git", "commit_id": "0" * 40},
            },
            "pip install 'otel-replay[openai] @ git+https://example.org/me/agent-replay.git'",
        ),
        (
            {"url": "https://example.org/otel_replay-0.1.0-py3-none-any.whl", "archive_info": {}},
            "pip install 'otel-replay[openai] @ https://example.org/otel_replay-0.1.0-py3-none-any.whl'",
        ),
    ],
)
def test_the_command_follows_where_the_copy_came_from(
    tmp_path: Path, direct_url: dict[str, object] | None, command: str
) -> None:
    read = _direct_url(_installed(tmp_path / "site", direct_url))
    assert read == direct_url
    assert pip_command("openai", read, None, tmp_path) == command


def test_a_folder_that_is_the_working_directory_is_dot(tmp_path: Path) -> None:
    editable = {"url": tmp_path.as_uri(), "dir_info": {"editable": True}}
    assert pip_command("ray", editable, None, tmp_path) == "pip install -e '.[ray]'"
    # a source tree run without any installation is its own editable copy
    assert pip_command("ray", None, tmp_path, tmp_path) == "pip install -e '.[ray]'"
    assert pip_command("ray", None, tmp_path, ROOT) == f"pip install -e '{tmp_path}[ray]'"


def test_a_missing_sdk_names_the_command_for_this_clone(tmp_path: Path) -> None:
    """The test environment installs this clone editable (.ci/run: ``pip install -e``): without
    the openai package, ``instrument('openai')`` says to add the extra to this clone."""
    script = (
        "import sys; sys.modules['openai'] = None\n"  # an import of openai now fails
        "import otel_replay\n"
        "try:\n"
        "    otel_replay.instrument('openai')\n"
        "except otel_replay.ReplayError as error:\n"
        "    print(error)\n"
    )
    said = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert said == f"instrumenting openai needs the openai package: pip install -e '{ROOT}[openai]'"
