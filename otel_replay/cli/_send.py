"""``--otlp-endpoint URL``: the runs a command makes (a fork, a resumed run, kept rollouts) sent out
as OTLP/HTTP, so a counterfactual run opens beside the original in Phoenix or any OTLP backend."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from otel_replay._web import shown_url
from otel_replay.cli._common import console, err_console, print_error, shown
from otel_replay.errors import SettingError

if TYPE_CHECKING:
    from otel_replay.errors import ExportError
    from otel_replay.model import Trajectory
    from otel_replay.otlp_encode import Destination, Sent

OtlpEndpointOption = Annotated[
    str | None,
    typer.Option(
        "--otlp-endpoint",
        metavar="URL",
        help="Also send the runs made as OTLP to URL.",
    ),
]
OtlpHeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--otlp-header",
        metavar="KEY=VALUE",
        help="A header for --otlp-endpoint (repeatable).",
    ),
]
OtlpCompressionOption = Annotated[
    str | None,
    typer.Option(
        "--otlp-compression",
        metavar="gzip|none",
        help="Compress what --otlp-endpoint sends.",
    ),
]


def otlp_destination(
    endpoint: str | None, headers: Sequence[str] | None, compression: str | None
) -> Destination | None:
    """Where the options send runs (None: nowhere); a URL or header that is no such thing raises
    before anything runs."""
    if endpoint is None:
        return None
    from otel_replay.otlp_encode import destination

    return destination(endpoint, headers or (), compression)


def rollouts_destination(
    keep: int, endpoint: str | None, headers: Sequence[str] | None, compression: str | None
) -> Destination | None:
    """`otlp_destination` for ``attribute``: ``--keep-rollouts N`` says which rollouts
    ``--otlp-endpoint`` gets, so the endpoint does not go without it."""
    if endpoint is not None and keep == 0:
        raise SettingError(
            "--otlp-endpoint sends the rollouts --keep-rollouts N keeps: say how many of each plan"
        )
    return otlp_destination(endpoint, headers, compression)


@dataclass(slots=True)
class Sending:
    """What was sent of the runs a command made, and the error that stopped the rest."""

    to: Destination
    what: str  # "the fork", "rollout", ...
    sent: list[tuple[str, Sent]] = field(default_factory=list)
    unsent: list[str] = field(default_factory=list)
    error: ExportError | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or any(s.rejected for _, s in self.sent)

    def say(self, *, json: bool = False) -> None:
        """What went where: a line per run sent (on stderr with --json), and one error line naming
        the URL, the status, and the runs stored here but not sent."""
        out = err_console if json else console
        for run_id, sent in self.sent:
            if sent.rejected:
                print_error(
                    f"the OTLP endpoint {shown_url(sent.url)} took {shown(run_id)} ({sent.status}) but rejected "
                    f"{sent.rejected} of its {sent.spans} spans"
                    + (f": {sent.message}" if sent.message else "")
                )
            else:
                out.print(
                    f"sent {shown(run_id)} to {shown(shown_url(sent.url))} ({sent.spans} spans)",
                    highlight=False,
                )
        if self.error is not None:
            runs = ", ".join(self.unsent)
            print_error(f"{self.error}; {self.what} {runs} stored, not sent")


def send_runs(
    to: Destination | None,
    what: str,
    runs: Sequence[tuple[Trajectory, Trajectory | None, Mapping[str, Any]]],
) -> Sending | None:
    """Send each ``(run, source, attributes)`` (`otel_replay.replay.send_run`) until the endpoint
    fails; the runs after it are not tried (an endpoint down or refusing stays so)."""
    if to is None:
        return None
    from otel_replay.errors import ExportError
    from otel_replay.replay import send_run

    sending = Sending(to, what)
    for run, source, also in runs:
        if sending.error is not None:
            sending.unsent.append(run.id)
            continue
        try:
            sending.sent.append((run.id, send_run(run, to, source=source, also=also)))
        except ExportError as exc:
            sending.error = exc
            sending.unsent.append(run.id)
    return sending


@contextmanager
def said_sent(sending: Sending | None, *, json: bool = False) -> Iterator[None]:
    """`Sending.say` on entry; the block then says and does the rest of the command (it may exit
    on its own account); after it, exit 1 when something was not sent (the runs are stored all
    the same)."""
    if sending is not None:
        sending.say(json=json)
    yield
    if sending is not None and sending.failed:
        raise typer.Exit(1)
