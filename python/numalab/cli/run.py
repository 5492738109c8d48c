"""``numalab run [placement options] -- CMD [ARGS...]``: run a real program on this host under a
numactl placement and report where its memory went (``runner/host.py``)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import List, Optional

import typer

from numalab.cli import options as o
from numalab.cli.summary import summary
from numalab.exceptions import UsageError
from numalab.runner import host

#: Options end at the command's name, as with numactl: ``numalab run -m 0 ls -l`` runs ``ls -l``.
CONTEXT = {"allow_interspersed_args": False}
COMMAND = typer.Argument(..., metavar="CMD [ARGS]...", help="The command to run (after --, or after the last option).")
RECORD = typer.Option(None, "--record", help="Keep the agent's raw records (JSON Lines) in FILE.")
OUTPUT = typer.Option(None, "--output", "-o", help="Write the result document (JSON) to FILE.")
INTERVAL = typer.Option(host.DEFAULT_INTERVAL_MS, "--interval-ms", help="Sample the command's pages and threads every N ms.")
KILL_GRACE = typer.Option(host.DEFAULT_KILL_GRACE_S, "--kill-grace", help="Seconds the command (and its process group) has to end after numalab is sent SIGINT, SIGTERM or SIGHUP, before it is killed.")
JSON = typer.Option(False, "--json", help="Print the result document as JSON on stdout; the command's own stdout then goes to stderr, so stdout is the document alone.")


@o.with_placement
def run(
    placement: o.Placement,
    command: List[str] = COMMAND,
    record: Optional[Path] = RECORD,
    output: Optional[Path] = OUTPUT,
    interval_ms: int = INTERVAL,
    kill_grace: float = KILL_GRACE,
    latbal_threshold_ns: str = o.LATBAL_THRESHOLD,
    as_json: bool = JSON,
) -> None:
    """Run CMD on this host under a numactl-style placement, through numalab-agent.

    The command's output is its own; the summary `numalab sim` prints follows on stderr (as time
    and perf stat do): pages per node, numastat and vmstat deltas and, with automatic NUMA
    balancing on, an access map from the kernel's per-thread NUMA hinting faults. --json prints
    the result document (source: host) on stdout instead, and sends the command's stdout to
    stderr, so `numalab run --json -- CMD | jq` reads the document alone. The exit status is the
    command's. --policy latency-balanced probes each node's loaded latency first (a few ms of
    pointer chasing on its memory) and runs CMD with --preferred on the node it picks, once.
    """
    place = placement
    from numalab.spec.run import latbal_value

    threshold = latbal_value("latbal_threshold_ns", latbal_threshold_ns)
    check_interval(interval_ms)
    check_grace(kill_grace)
    probed = None
    if place.policy == "latency-balanced":
        from numalab.calibrate import probe

        place, probed = probe.resolve(place, threshold)
    host.check_placement(place)
    from numalab.results.frame import writable_file

    if record is not None:
        writable_file(record, "--record", "run.jsonl")
        no_waiting(record, "--record")
    if output is not None:
        writable_file(output, "--output", "run.json")
        no_waiting(output, "--output")
    check_command(list(command))
    try:
        result = host.run(list(command), place, record=record, interval_ms=interval_ms,
                          stdout="stderr" if as_json else "inherit", kill_grace_s=kill_grace)
    except host.AgentFailed as e:
        raise typer.Exit(e.code) from None  # the agent has said why, on stderr
    if probed is not None:
        result.doc["latency_balanced"] = probed
    text = json.dumps(result.doc, indent=2, sort_keys=True)
    if output is not None:
        from numalab.results.outfile import write_text_atomic

        write_text_atomic(output, text + "\n", "--output")
    if as_json:
        typer.echo(text)
    else:
        typer.echo(summary(result.doc), err=True)
    if result.doc["pages"]["t_s"] is None:
        typer.echo(f"numalab: note: the command ended before numalab-agent read its pages (every {interval_ms} ms) and "
                   "could not trace it to read them at its exit, so pages per node are not known; a smaller --interval-ms "
                   "samples sooner", err=True)
    if result.interrupted:
        raise host.Terminated(signal.SIGINT)  # ends numalab as a shell's job: 130, whatever the command's status
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def check_command(argv: list[str]) -> None:
    """A missing command ends numalab as it ends a shell: the message, exit 127 (126 when not executable)."""
    try:
        host.check_command(argv)
    except host.CommandNotFound as e:
        typer.echo(f"numalab: {e}", err=True)
        raise typer.Exit(e.code) from None


def check_interval(ms: int) -> None:
    if not 1 <= ms <= 3_600_000:
        raise UsageError(f"--interval-ms must be 1..3600000 ms, got {ms}")


def check_grace(seconds: float) -> None:
    if not 0 <= seconds <= 3600:  # also refuses nan
        raise UsageError(f"--kill-grace must be 0..3600 seconds, got {seconds}")


def no_waiting(path: Path, option: str) -> None:
    """A FIFO with no reader would make the write at the end wait forever: refuse it now. (A pipe
    that has a reader, as ``/dev/stdout`` into ``| jq``, opens at once.)"""
    import errno
    import os
    import stat

    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise UsageError(f"{option} {path}: a FIFO that nobody reads (the write would wait forever)") from None
