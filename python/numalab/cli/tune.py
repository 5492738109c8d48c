"""``numalab tune -- CMD``: study S1's sweep of the automatic NUMA balancing knobs on a real host
(docs/studies.md §6.1, docs/balancing.md): for each grid point write ``kernel.numa_balancing``
and the scanner knobs, time the command, store the result; then put every knob back.

The knobs are system-wide, so changing them needs root and ``--allow-system-changes``. They are
written through ``numalab-agent knobs set``, which saves each original value in a journal file
before its first write (``crates/numalab-linux/src/knobs.rs``); the end of the sweep, an error,
Ctrl-C or SIGTERM restore them from it (``knobs restore``, which then removes the journal). After
``kill -9`` the journal stays behind: the next ``numalab tune`` (or ``numalab tune --restore``)
restores it first and says so. The scanner knobs live in debugfs on Linux 5.13+; when it is not
mounted, tune mounts it and unmounts it at the end (noted beside the journal, so a restore after
``kill -9`` unmounts it too).

``--knob-root`` (or ``NUMALAB_KNOB_ROOT``) points the knobs at a copy of the tree (for tests);
nothing under ``/`` is touched then.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer

from numalab.cli import bench as b
from numalab.cli import options as o
from numalab.cli.run import CONTEXT, INTERVAL, check_command, check_interval
from numalab.cli.study import RESULTS
from numalab.exceptions import USAGE_ERRORS, NumalabError, UsageError
from numalab.runner import host
from numalab.spec import Balancing, RunSpec
from numalab.spec.balancing import SCAN_KNOBS as KNOBS  # the scanner knobs (tune writes no tiering knob)

__all__ = ["tune", "CONTEXT"]

#: Study S1's knob settings (studies/s1-autonuma-npb.toml, docs/studies.md §6.1): balancing off
#: (the baseline), on with the kernel's defaults, six scan-period ranges with the scan delay at
#: each midpoint, and a 0-100 ms period with three scan sizes.
S1_GRID = (
    "balancing=off",
    "balancing",
    "balancing:scan-period-min-ms=0:scan-period-max-ms=50:scan-delay-ms=25",
    "balancing:scan-period-min-ms=100:scan-period-max-ms=500:scan-delay-ms=300",
    "balancing:scan-period-min-ms=500:scan-period-max-ms=1000:scan-delay-ms=750",
    "balancing:scan-period-min-ms=1000:scan-period-max-ms=2000:scan-delay-ms=1500",
    "balancing:scan-period-min-ms=4000:scan-period-max-ms=6000:scan-delay-ms=5000",
    "balancing:scan-period-min-ms=6000:scan-period-max-ms=10000:scan-delay-ms=8000",
    "balancing:scan-period-min-ms=0:scan-period-max-ms=100:scan-size-mb=32",
    "balancing:scan-period-min-ms=0:scan-period-max-ms=100:scan-size-mb=64",
    "balancing:scan-period-min-ms=0:scan-period-max-ms=100:scan-size-mb=128",
)
#: The journal of a tune on the real system: /run is emptied at boot, as the knobs are reset.
SYSTEM_JOURNAL = Path("/run/numalab/knobs-journal.json")
DEBUGFS = "sys/kernel/debug"
MOUNTED_SUFFIX = ".debugfs-mounted"
LOCK_SUFFIX = ".lock"
#: kernel.numa_balancing: 1 is NUMA_BALANCING_NORMAL (kernel/sched/core.c).
NUMA_BALANCING_ON = 1


@o.with_placement
def tune(
    placement: o.Placement,
    command: Optional[List[str]] = typer.Argument(None, metavar="CMD [ARGS]...", help="The command to run at each grid point."),
    grid: Optional[str] = typer.Option(None, "--grid", help="Grid points as balancing config strings, comma separated, e.g. balancing=off,balancing:scan-period-min-ms=100:scan-period-max-ms=500 (default: study S1's 11 points)."),
    allow: bool = typer.Option(False, "--allow-system-changes", help="Let tune write the system-wide NUMA balancing knobs (they are restored at the end)."),
    restore: bool = typer.Option(False, "--restore", help="Only restore knobs left changed by a tune that was killed, then exit."),
    repeat: int = typer.Option(1, "--repeat", help="Runs per grid point (the minimum, with --rel-error)."),
    warmup: bool = typer.Option(False, "--warmup", help="Run each grid point once, untimed, first."),
    rel_error: Optional[float] = typer.Option(None, "--rel-error", help="Add rounds until each 95% interval is within X% of its mean."),
    max_repeat: int = typer.Option(100, "--max-repeat", help="With --rel-error: at most this many runs per grid point."),
    name: str = typer.Option("tune", "--name", help="Study name the runs are stored under."),
    results: Path = RESULTS,
    show_output: bool = typer.Option(False, "--show-output", help="Let the command's standard output through (default: discarded; to stderr with --json)."),
    interval_ms: int = INTERVAL,
    journal: Optional[Path] = typer.Option(None, "--journal", envvar="NUMALAB_KNOB_JOURNAL", help=f"Journal of the original knob values (default {SYSTEM_JOURNAL}; under --knob-root for a copied tree)."),
    knob_root: Path = typer.Option(Path("/"), "--knob-root", envvar="NUMALAB_KNOB_ROOT", hidden=True),
    as_json: bool = o.JSON,
) -> None:
    """Sweep the automatic NUMA balancing knobs over a grid, timing CMD at each point (root only).

    Each grid point sets kernel.numa_balancing (procfs) and the scanner knobs scan_delay_ms,
    scan_period_min_ms, scan_period_max_ms, scan_size_mb (procfs before Linux 5.13, debugfs
    sched/numa_balancing/ after); knobs a point leaves out get the kernel's defaults. Every
    original value is restored at the end, on error, on Ctrl-C and SIGTERM, and after a kill -9
    at the next start (or with --restore). Results go to the store as the study --name.
    """
    root = knob_root.resolve()
    jpath = journal or default_journal(root)
    with locked(jpath):
        _tune(root, jpath, placement, command, grid, allow, restore, repeat, warmup, rel_error, max_repeat, name, results,
              show_output, interval_ms, as_json)


def _tune(root: Path, jpath: Path, placement: o.Placement, command: Optional[List[str]], grid: Optional[str], allow: bool,
          restore: bool, repeat: int, warmup: bool, rel_error: Optional[float], max_repeat: int, name: str, results: Path,
          show_output: bool, interval_ms: int, as_json: bool) -> None:
    restored = recover(root, jpath, announce=True)
    if restore:
        if not restored:
            _say(f"nothing to restore: no journal at {jpath}")
        return
    if not command:
        raise UsageError("no command given (usage: numalab tune [options] -- CMD [ARGS...])")
    place = placement
    points = [(text, grid_point(text)) for text in (o.config_labels(grid, option="--grid") if grid else S1_GRID)]
    b.check_repeats(repeat, rel_error, max_repeat)
    check_interval(interval_ms)
    host.check_placement(place)
    check_command(list(command))
    host.agent_path()
    permitted(root, allow)
    with guarded(root, jpath):
        ensure_knobs(root, jpath, needs_scanner=any(p.enabled for _, p in points))
        plan = [b.Config(text, place, p.canonical(), prepare=_setter(root, jpath, p)) for text, p in points]
        outcome = b.measure(plan, list(command), name=name, results=results, repeat=repeat, warmup=warmup, rel_error=rel_error,
                            max_repeat=max_repeat, interval_ms=interval_ms, output=b.command_output(show_output, as_json), kind="tune",
                            knob_root=root, extra_source=f"# knobs written under {root} (journal {jpath}), restored at the end\n")
    b.report(plan, outcome, as_json, balancing=True)


@contextmanager
def locked(jpath: Path) -> Iterator[None]:
    """One tune (or --restore) at a time per journal: a second one would take the first one's
    changed knobs for originals, or restore them under it. The lock (``JOURNAL.lock``, flock) is
    released by the kernel however this process ends, kill -9 included."""
    lock = Path(str(jpath) + LOCK_SUFFIX)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except PermissionError:
        # Who cannot create the lock cannot write the knobs either: permitted() refuses them.
        yield
        return
    except OSError as e:
        raise UsageError(f"{lock}: cannot create the tune lock ({e.strerror or e})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise NumalabError(f"another numalab tune (pid {holder}) is changing the knobs journalled in {jpath}; "
                               "wait for it to end") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def default_journal(root: Path) -> Path:
    return SYSTEM_JOURNAL if root == Path("/") else root / ".numalab-knobs-journal.json"


def grid_point(text: str) -> Balancing:
    """One grid point: a balancing setting only, checked by the engine's rules (knob ranges,
    min <= max, knobs need balancing on)."""
    try:
        point = Balancing.parse(text)
        RunSpec.create("host", host.CHECK_WORKLOAD, balancing=point).bind(host.host_machine("/"))
    except USAGE_ERRORS as e:
        raise UsageError(f"--grid '{text}': {e.args[0] if e.args else e}") from None
    return point


def permitted(root: Path, allow: bool) -> None:
    """Changing the system's knobs needs root, and the user's explicit consent."""
    if not allow:
        raise UsageError("numalab tune writes the system-wide NUMA balancing knobs (kernel.numa_balancing and the scanner "
                         "knobs) at every grid point and restores them at the end; pass --allow-system-changes to let it")
    if root == Path("/") and os.geteuid() != 0:
        raise UsageError("numalab tune must run as root: only root may write /proc/sys/kernel/numa_balancing and "
                         "/sys/kernel/debug/sched/numa_balancing/*")


def recover(root: Path, jpath: Path, announce: bool) -> list[dict[str, Any]]:
    """Restore what a tune left changed (its journal), unmount the debugfs it mounted; tell the
    user when ``announce``. Returns the restored knobs."""
    restored: list[dict[str, Any]] = []
    if jpath.exists():
        if root == Path("/") and os.geteuid() != 0:
            raise UsageError(f"{jpath}: an earlier numalab tune left NUMA balancing knobs changed; run numalab tune --restore "
                             "as root to put them back")
        restored = host.agent_json("knobs", "restore", "--journal", str(jpath), "--root", str(root))["restored"]
        if announce:
            values = ", ".join(f"{k['name']}={k['value']}" for k in restored) or "none"
            _say(f"an earlier numalab tune did not finish (killed?): restored the NUMA balancing knobs it had changed "
                 f"under {root} from {jpath}: {values}")
    marker = Path(str(jpath) + MOUNTED_SUFFIX)
    if marker.exists():
        where = marker.read_text().strip()
        if subprocess.run(["umount", where], capture_output=True).returncode == 0 or not os.path.ismount(where):
            marker.unlink()
            if announce:
                _say(f"unmounted {where}, which an earlier numalab tune had mounted")
    return restored


@contextmanager
def guarded(root: Path, jpath: Path) -> Iterator[None]:
    """Restore the knobs however the sweep ends; SIGTERM and SIGHUP end it like Ctrl-C."""

    def stop(signum: int, frame: Any) -> None:
        raise host.Terminated(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    jpath.parent.mkdir(parents=True, exist_ok=True)
    why = ""
    try:
        yield
    except host.Terminated as e:
        why = "interrupted: " if e.signum == signal.SIGINT else "terminated: "
        raise
    except KeyboardInterrupt:
        why = "interrupted: "
        raise
    except BaseException:
        why = "stopped by an error: "
        raise
    finally:
        # A second signal (or Ctrl-C) during the restore must not cut it short.
        during = {s: signal.signal(s, signal.SIG_IGN) for s in (*old, signal.SIGINT)}
        try:
            restored = recover(root, jpath, announce=False)
            if restored:
                _say(why + "restored the NUMA balancing knobs: " + ", ".join(f"{k['name']}={k['value']}" for k in restored))
        finally:
            for s, h in {**during, **old}.items():
                signal.signal(s, h)


def ensure_knobs(root: Path, jpath: Path, needs_scanner: bool) -> None:
    """The knobs this kernel shows under ``root``; mounts debugfs (and notes it beside the
    journal) when the scanner knobs are needed and only debugfs could hold them."""
    present = {k["name"] for k in host.knobs(root)["knobs"]}
    if "numa_balancing" not in present:
        raise UsageError(f"{root / 'proc/sys/kernel/numa_balancing'}: this kernel has no automatic NUMA balancing "
                         "(CONFIG_NUMA_BALANCING off, or a single-node machine without it)")
    missing = [k for k in KNOBS if k not in present] if needs_scanner else []
    if missing and root == Path("/") and not os.path.ismount("/" + DEBUGFS):
        where = "/" + DEBUGFS
        done = subprocess.run(["mount", "-t", "debugfs", "debugfs", where], capture_output=True, text=True)
        if done.returncode != 0:
            raise UsageError(f"the scanner knobs are in debugfs, which is not mounted, and mounting it failed "
                             f"(mount -t debugfs debugfs {where}: {done.stderr.strip()})")
        Path(str(jpath) + MOUNTED_SUFFIX).write_text(where + "\n")
        _say(f"mounted debugfs at {where} for the scanner knobs (unmounted at the end)")
        present = {k["name"] for k in host.knobs(root)["knobs"]}
        missing = [k for k in KNOBS if k not in present]
    if missing:
        raise UsageError(f"this kernel shows no {', '.join(missing)} under {root} (neither "
                         f"proc/sys/kernel/numa_balancing_* nor {DEBUGFS}/sched/numa_balancing/*)")


def _setter(root: Path, jpath: Path, point: Balancing) -> Any:
    """Write one grid point: numa_balancing, and with balancing on every scanner knob (its value
    or the kernel's default), through the agent (which journals the originals first)."""
    values = {"numa_balancing": NUMA_BALANCING_ON if point.enabled else 0}
    if point.enabled:
        values.update({k: point.value(k) for k in KNOBS})
    changes = [f"{k}={v}" for k, v in values.items()]

    def write() -> dict[str, int]:
        host.agent_json("knobs", "set", *changes, "--journal", str(jpath), "--root", str(root))
        return values

    return write


def _say(text: str) -> None:
    print(f"numalab tune: {text}", file=sys.stderr, flush=True)
