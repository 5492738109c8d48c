"""Run a real command on this host under a placement, through ``numalab-agent``, and build its
result document (``source: host``, ``results/agent.py``).

The agent is a separate static binary (``crates/numalab-agent``): it applies the placement the
way numactl does (set_mempolicy and sched_setaffinity between fork and exec), samples
``/proc/PID/numa_maps``, the threads' scheduler statistics, vmstat and numastat, and writes JSON
Lines. This module finds it, checks the placement against the host before anything runs (the
engine's rules on the host's topology, ``RunSpec.bind``), turns a ``Placement`` into the agent's
numactl-style arguments, runs it and reads its records.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

from numalab.exceptions import NumalabError, UsageError
from numalab.results import agent as records
from numalab.results import reported
from numalab.runner.tail import Tail, open_channel
from numalab.spec import Placement, RunSpec

AGENT = "numalab-agent"
#: The repository holding this package (an editable install), where cargo puts the agent.
REPO = Path(__file__).resolve().parents[3]
#: Where a build leaves the agent, best first: `make agent` (static),
#: `cargo build --release -p numalab-agent`, a debug build.
BUILD_DIRS = ("target/static", "target/release", "target/debug")
#: A workload whose descriptor the engine's placement rules are checked with: the rules
#: (nodes exist, CPUs exist, one CPU binding, preferred takes one node) do not depend on it.
CHECK_WORKLOAD = "stream"
#: numactl's option for each policy name of a Placement.
AGENT_POLICY = {
    "interleave": "--interleave",
    "weighted-interleave": "--weighted-interleave",
    "bind": "--membind",
    "preferred": "--preferred",
    "preferred-many": "--preferred-many",
}
DEFAULT_INTERVAL_MS = 1000
#: Seconds the command has to end after a stop signal before it is killed (--kill-grace).
DEFAULT_KILL_GRACE_S = 5.0
#: Seconds past the grace period the agent has to write its summary and end.
AGENT_MARGIN_S = 5.0
#: Where the command's standard output goes, by the name ``run`` takes (a file descriptor of this
#: process, None: discarded). It passes through a pipe, so its end can be read (``runner/tail.py``).
STDOUT: dict[str, int | None] = {"inherit": 1, "devnull": None, "stderr": 2}


class AgentFailed(NumalabError):
    """The agent stopped before running the command; it has said why on stderr. ``code`` is its
    exit status (2 bad input, 1 failure, 126/127 command not executable/found)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code

    def __reduce__(self):  # keep ``code`` when a worker process sends it back
        return type(self), (self.args[0], self.code)


class Terminated(BaseException):
    """SIGTERM or SIGHUP to numalab (not to the command), or a run ended by SIGINT: stop, then end
    as a shell does, with 128 + the signal's number. Not an ``Exception``, so no ``except Exception`` swallows it,
    and not a ``KeyboardInterrupt``, which typer turns into a silent exit 130."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = int(signum)
        self.exit_code = 128 + self.signum


@contextmanager
def terminable() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` while the block runs (in the main thread), so
    the agent and the command are stopped instead of being left running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class CommandNotFound(UsageError):
    """The command is not on PATH (a shell's exit 127) or not executable (126)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code

    def __reduce__(self):  # keep ``code`` when a worker process sends it back
        return type(self), (self.args[0], self.code)


def agent_path() -> Path:
    """The agent binary: ``$NUMALAB_AGENT``, else the repository's build, else ``numalab-agent``
    on PATH; an error that says how to build it when there is none."""
    env = os.environ.get("NUMALAB_AGENT")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"NUMALAB_AGENT={env}: not an executable file (unset it to use the agent built in {REPO})")
        return p
    for d in BUILD_DIRS:
        p = REPO / d / AGENT
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which(AGENT)
    if found:
        return Path(found)
    raise NumalabError(f"{AGENT} is not built: run `make agent` in {REPO} (or `cargo build --release -p numalab-agent`), "
                       f"or set NUMALAB_AGENT to the binary")


def agent_args(p: Placement) -> list[str]:
    """The agent's numactl-style arguments for a placement (``--membind=0 --cpunodebind=0``).

    OpenMP's binding is not an argument: it travels in the command's environment (``omp_env``).
    Weighted-interleave weights are refused: on a real host they are the system-wide
    ``/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`` files, not a property of one run."""
    if p.weights:
        raise UsageError("--weights: on a real host the weighted-interleave weights are system-wide "
                         "(/sys/kernel/mm/mempolicy/weighted_interleave/nodeN), which numalab does not change; "
                         "set them there and give --weighted-interleave alone")
    args = []
    if p.policy == "latency-balanced":
        raise UsageError("--policy latency-balanced on this host: only numalab run applies it (a probe picks the node before the command starts)")
    if p.policy == "local":
        args.append("--localalloc")
    elif p.policy != "default":
        args.append(f"{AGENT_POLICY[p.policy]}={p.nodes}")
    if p.membind_balancing:
        args.append("--balancing")  # the agent's numactl -b (MPOL_F_NUMA_BALANCING)
    if p.cpunodebind:
        args.append(f"--cpunodebind={p.cpunodebind}")
    if p.physcpubind:
        args.append(f"--physcpubind={p.physcpubind}")
    return args


def omp_env(p: Placement) -> dict[str, str]:
    """OMP_PROC_BIND / OMP_PLACES for the command, when the placement binds OpenMP threads."""
    if p.omp_proc_bind == "false":
        return {}
    return {"OMP_PROC_BIND": p.omp_proc_bind, "OMP_PLACES": p.omp_places}


@lru_cache(maxsize=4)
def host_machine(root: str = "/") -> Any:
    from numalab.machine.host import from_host

    return from_host(Path(root))


def check_placement(p: Placement, root: Path = Path("/")) -> None:
    """Refuse a placement this host cannot honour, before anything runs: the engine's rules on
    the host's topology (nodes and CPUs that exist, one CPU binding, one node for --preferred),
    then numactl's rule that a memory policy names nodes with memory."""
    agent_args(p)
    machine = host_machine(str(root))
    RunSpec.create("host", CHECK_WORKLOAD, placement=p).bind(machine)
    if p.nodes and p.policy in AGENT_POLICY and _explicit(p.nodes):
        from numalab.machine.host import read_facts

        memory = {n["os_index"]: n["memory_bytes"] for n in read_facts(root)["nodes"]}
        empty = [n for n in machine.parse_nodes(p.nodes) if not memory.get(n)]
        if empty:
            with_memory = ",".join(str(n) for n, b in sorted(memory.items()) if b) or "none"
            raise UsageError(f"{AGENT_POLICY[p.policy]}: node {','.join(map(str, empty))} has no memory (nodes with memory: {with_memory})")


def _explicit(nodes: str) -> bool:
    """A node list that names its nodes (``0,2-3``), as opposed to ``all``, ``!1`` or ``+0``,
    which numactl resolves within the nodes that have memory."""
    return not any(mark in nodes for mark in ("all", "!", "+"))


def check_command(argv: list[str]) -> None:
    """The command exists and is executable, as a shell would find it (exit 127 / 126)."""
    name = argv[0]
    if "/" in name:
        p = Path(name)
        if not p.exists():
            raise CommandNotFound(f"{name}: No such file or directory", 127)
        if p.is_dir() or not os.access(p, os.X_OK):
            raise CommandNotFound(f"{name}: {'Is a directory' if p.is_dir() else 'Permission denied'}", 126)
        return
    if shutil.which(name) is None:
        raise CommandNotFound(f"{name}: command not found", 127)


def agent_json(*args: str) -> dict[str, Any]:
    """Run an agent subcommand that prints one JSON object (topo, knobs ...)."""
    exe = agent_path()
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        message = proc.stderr.strip().removeprefix(f"{AGENT}: ") or f"exit status {proc.returncode}"
        cls = UsageError if proc.returncode == 2 else NumalabError
        raise cls(f"{AGENT} {' '.join(args)}: {message}")
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise NumalabError(f"{AGENT} {' '.join(args)}: printed something that is not JSON: {proc.stdout[:200]!r}") from None


@lru_cache(maxsize=4)
def topology(root: str = "/") -> dict[str, Any]:
    return agent_json("topo", "--root", root)


def knobs(root: Path = Path("/")) -> dict[str, Any]:
    """``numalab-agent knobs get``: the NUMA balancing knobs this kernel shows under ``root``."""
    return agent_json("knobs", "get", "--root", str(root))


@dataclass
class HostRun:
    doc: dict[str, Any]
    exit_code: int  # the agent's: the command's status, or 128 + its signal
    interrupted: bool  # Ctrl-C (or SIGINT/SIGTERM) ended it


def run(
    command: list[str],
    placement: Placement,
    record: Path | None = None,
    interval_ms: int = DEFAULT_INTERVAL_MS,
    knob_root: Path = Path("/"),
    stdout: str = "inherit",
    expect_knobs: dict[str, int] | None = None,
    kill_grace_s: float = DEFAULT_KILL_GRACE_S,
) -> HostRun:
    """Run ``command`` under ``placement``; ``record`` keeps the agent's JSON Lines.

    The command's standard streams are the caller's, except its stdout with ``stdout``
    ``"devnull"`` (discarded) or ``"stderr"`` (sent to the caller's stderr, so the caller's stdout
    carries only a JSON document). Its stdout reaches there through a pipe (a pseudo-terminal when
    it goes to a terminal, so the program still sees one), whose last bytes give
    the time the program reports when it prints one (NPB's "Time in seconds =",
    ``results/reported.py``). Ctrl-C reaches the command (it is in the terminal's process group);
    the run then ends as the command does, with its status.

    ``expect_knobs``: the knob values just written (``numalab tune``); every knob is read back
    before the command starts and the run is refused if one differs. The read-back is the
    document's ``placement.balancing.knobs``.

    The command runs in a process group of its own. SIGINT, SIGTERM or SIGHUP to numalab reach
    it through the agent; ``kill_grace_s`` later the agent kills the group (SIGKILL), and numalab
    kills the agent if it is still there a few seconds after that. SIGTERM and SIGHUP then end
    numalab (:class:`Terminated`); after SIGINT the run's document is still built."""
    check_command(command)
    exe = agent_path()
    topo = topology()
    before = knobs(knob_root)
    check_knobs(before, expect_knobs or {}, knob_root)
    with tempfile.TemporaryDirectory(prefix="numalab-run-") as tmp:
        # The agent writes to a private file, copied to ``record`` at the end: the records are read
        # back from it, which a device or pipe given as --record (/dev/full, /dev/stdout) cannot do.
        out = Path(tmp) / "records.jsonl"
        args = [str(exe), "run", "--interval-ms", str(interval_ms), "--grace-ms", str(round(kill_grace_s * 1000)),
                "--output", str(out), *agent_args(placement), "--", *command]
        with terminable():
            theirs, ours = open_channel(STDOUT[stdout])
            try:
                proc = subprocess.Popen(args, env={**os.environ, **omp_env(placement)}, stdout=theirs)
            finally:
                os.close(theirs)
            code, interrupted, output = _wait(proc, kill_grace_s, lambda: Tail(ours, STDOUT[stdout]))
        if record is not None and out.exists():
            keep_records(out, record)
        recs = records.read_records(out) if out.exists() else []
    if not any(r["type"] == "start" for r in recs):
        raise AgentFailed(f"{AGENT} did not run the command (exit status {code})", code)
    doc = records.document(recs, topo, before, platform.release(), placement.omp_proc_bind, placement.omp_places)
    # NPB prints the time of its timed section: that is the time it reports (results/reported.py).
    reported.apply(doc, output.text())
    return HostRun(doc, code, interrupted or code == 128 + signal.SIGINT)


def keep_records(src: Path, record: Path) -> None:
    """Copy the agent's records to ``record`` (--record), whole or not at all; a device or pipe
    there (``/dev/stdout``) is written in place."""
    from numalab.results.outfile import write_atomic

    def copy(f: Any) -> None:
        with open(src, "rb") as r:
            shutil.copyfileobj(r, f)

    write_atomic(record, copy, "--record")


def check_knobs(read: dict[str, Any], expected: dict[str, int], root: Path) -> None:
    """Refuse to measure when a knob does not read back as written (another program, or a second
    numalab, changed it): the result would be labelled with settings it did not run under."""
    values = records.knob_values(read)
    wrong = [f"{k}={values.get(k, 'absent')} (written {v})" for k, v in expected.items() if values.get(k) != v]
    if wrong:
        raise NumalabError(f"the NUMA balancing knobs under {root} do not read back as written: {', '.join(wrong)}; "
                           "refusing to measure (is another program changing them?)")


def _wait(proc: subprocess.Popen, grace_s: float, tail: Callable[[], Tail]) -> tuple[int, bool, Tail]:
    """Start reading the command's output (``tail``), then wait for the agent. SIGINT (Ctrl-C, or
    kill -INT) is passed on to the agent, which passes it to the command's group and kills the
    group after the grace period; the wait then goes on for the command's status. Any other
    exception (SIGTERM, SIGHUP as :class:`Terminated`) is passed on the same way before it
    propagates; an agent still there after the grace period is killed. A signal that comes while
    the output reader starts is handled the same way: the agent is already running."""
    interrupted = False
    try:
        output = tail()
        while True:
            try:
                return proc.wait(), interrupted, output
            except KeyboardInterrupt:
                interrupted = True
                proc.send_signal(signal.SIGINT)
    except BaseException as e:
        proc.send_signal(e.signum if isinstance(e, Terminated) else signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s + AGENT_MARGIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()  # its command dies with it (PTRACE_O_EXITKILL) when it was traced
            proc.wait()
        raise
