"""The command that installs one of the package's optional extras (``openai``, ``anthropic``,
``ray``) where this copy of it came from.

A copy installed from a package index takes ``pip install 'otel-replay[openai]'``; one installed
from a clone or a folder (``pip install .``, ``pip install -e .``) must be given that folder again,
or pip fetches another copy beside it; one installed from a VCS URL, that URL. pip records where a
copy came from in its ``direct_url.json`` (PEP 610), read here; a copy run from a source tree with no
installation at all (``PYTHONPATH``) is the editable case of the tree it sits in.
"""

from __future__ import annotations

import importlib.metadata
import os
import shlex
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import orjson

#: The distribution's name, as an index knows it.
DISTRIBUTION = "otel-replay"


def install_command(extra: str) -> str:
    """``pip install …`` for ``extra``, spelled for where this copy was installed from."""
    return pip_command(extra, _direct_url(), _source_tree(), Path.cwd())


def pip_command(
    extra: str, direct_url: dict[str, Any] | None, source_tree: Path | None, cwd: Path
) -> str:
    """The command for ``extra`` given what pip recorded of the install (``direct_url``, None for
    one from an index), and the source tree the package is imported from when it is not installed
    (``source_tree``), a folder shown as ``.`` when it is ``cwd``."""
    if direct_url is None and source_tree is not None:
        direct_url = {"url": source_tree.as_uri(), "dir_info": {"editable": True}}
    if direct_url is None or not isinstance(direct_url.get("url"), str):
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
    url: str = direct_url["url"]
    dir_info = direct_url.get("dir_info")
    if isinstance(dir_info, dict) and url.startswith("file:"):
        folder = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        shown = "." if folder == cwd else os.fspath(folder)
        editable = "-e " if dir_info.get("editable") else ""
        return f"pip install {editable}{shlex.quote(f'{shown}[{extra}]')}"
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        url = f"{vcs['vcs']}+{url}"
    return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}] @ {url}')}"


def _direct_url(path: list[str] | None = None) -> dict[str, Any] | None:
    """What pip recorded of where the installed copy came from: the first copy on ``path`` (None:
    ``sys.path``) that has the record (an ``egg-info`` folder a source tree holds has none)."""
    found = (
        importlib.metadata.distributions(name=DISTRIBUTION)
        if path is None
        else importlib.metadata.distributions(name=DISTRIBUTION, path=path)
    )
    for distribution in found:
        text = distribution.read_text("direct_url.json")
        if text:
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _source_tree() -> Path | None:
    """The source tree this copy is imported from when it is one (a ``pyproject.toml`` naming the
    distribution beside the package's folder), else None."""
    root = Path(__file__).resolve().parent.parent
    project = root / "pyproject.toml"
    try:
        text = project.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None
