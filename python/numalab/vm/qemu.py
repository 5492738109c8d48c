"""QEMU's command line for a machine preset, and running it with a time limit.

One guest NUMA node per preset node (``-numa node`` backed by its own ``memory-backend-ram``),
the preset's SLIT as ``-numa dist`` (QEMU makes the matrix symmetric when only src<dst is given;
an asymmetric preset gives both directions), vCPUs scaled down to ``cpus_per_node`` per node
(at least one on a node with CPUs). A preset node without CPUs stays CPU-less in the guest
(``-numa node`` without ``cpus``, its HMAT initiator the nearest node with CPUs), and then the
guest gets an ACPI HMAT (``-machine hmat=on``, ``-numa hmat-lb``) with the preset's idle latencies
and node bandwidths, the firmware figures the kernel reads for memory tiers (docs/tiering.md §11). No network
(``-nic none``, ``-nodefaults``), no display, the console on stdio and the data port (ttyS1) on a
file. The presets ``vm-4.toml`` and ``vm-8.toml`` carry the same options in their header.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from numalab.exceptions import NumalabError, UsageError
from numalab.vm.kmem import KMEM_SUBTYPES

#: Above this the guest would need more host memory than a laptop or CI runner has to spare.
MAX_GUEST_MIB = 16384
#: vCPUs: per node (each is a host thread under TCG), and in all (q35's limit without an IOMMU
#: for x2APIC interrupt remapping: 8-bit APIC ids).
MAX_CPUS_PER_NODE = 64
MAX_VCPUS = 255
DEFAULT_NODE_CAP_MIB = 512


class GuestTimeout(NumalabError):
    """The guest did not finish in time; QEMU was killed (exit code 1)."""


class BootHung(GuestTimeout):
    """The guest printed no READY line within ``boot``'s ``ready_within_s``; QEMU was killed."""


class QemuFailed(NumalabError):
    """QEMU exited with an error before the guest finished (exit code 1)."""


class Stopped(KeyboardInterrupt):
    """numalab got SIGTERM, SIGHUP or SIGINT while QEMU ran; QEMU was killed. Exit 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(frozen=True)
class Topology:
    name: str
    cpus_per_node: list[int]
    memory_mib: list[int]
    distances: list[list[int]]
    node_os_indexes: list[int]  # the preset's node numbers; the guest numbers its nodes 0..N-1
    #: The preset's idle latency (ns, initiator row, target column) and node bandwidth (GB/s):
    #: the HMAT's figures when a node is CPU-less.
    latency_ns: list[list[float]] = field(default_factory=list)
    bandwidth_gbps: list[float] = field(default_factory=list)
    #: CPU-less nodes of a kind the kernel onlines through dax/kmem (CXL, NVM; kmem.py).
    kmem_nodes: list[int] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return len(self.memory_mib)

    @property
    def hmat(self) -> bool:
        """A CPU-less node: QEMU needs its initiator, which only exists with ``hmat=on``."""
        return 0 in self.cpus_per_node

    def initiator(self, node: int) -> int:
        """A node's HMAT initiator: itself when it has CPUs, else the node with CPUs at the smallest
        idle latency to it (then SLIT distance, then number), as ACPI 6.3 §5.2.27.3 defines the
        attached initiator."""
        if self.cpus_per_node[node]:
            return node
        lat = self.latency_ns or [[0.0] * self.nodes for _ in range(self.nodes)]
        return min((i for i in range(self.nodes) if self.cpus_per_node[i]),
                   key=lambda i: (lat[i][node], self.distances[i][node], i))


def topology(machine, memory_per_node_mib: int | None = None, cpus_per_node: int = 1) -> Topology:
    """The guest for ``machine`` (a ``numalab._core.Machine``): its nodes and SLIT, memory per node
    from ``memory_per_node_mib`` or the preset (capped at 512 MiB), ``cpus_per_node`` vCPUs per
    node (at most the preset's CPUs on it, at least one)."""
    spec = json.loads(machine.to_json())
    nodes = spec["nodes"]
    if not 1 <= cpus_per_node <= MAX_CPUS_PER_NODE:
        raise UsageError(f"--cpus-per-node must be in 1..{MAX_CPUS_PER_NODE}, got {cpus_per_node}")
    # A CPU-less preset node stays CPU-less (a lower memory tier's shape); the others keep at least one vCPU.
    cpus = [min(cpus_per_node, c) if c else 0 for c in (_count(n.get("cpuset", "")) for n in nodes)]
    if not any(cpus):
        raise UsageError(f"{machine.name} has no node with CPUs: the guest needs one to boot")
    if sum(cpus) > MAX_VCPUS:
        raise UsageError(f"the guest would have {sum(cpus)} vCPUs ({len(cpus)} nodes); at most {MAX_VCPUS} (lower --cpus-per-node)")
    if memory_per_node_mib is not None:
        if memory_per_node_mib < 64:
            raise UsageError(f"--guest-memory-per-node-mib must be at least 64 (the guest kernel needs room), got {memory_per_node_mib}")
        mem = [memory_per_node_mib] * len(nodes)
    else:
        mem = [max(64, min(DEFAULT_NODE_CAP_MIB, int(n["local_memory_bytes"]) >> 20)) for n in nodes]
    if sum(mem) > MAX_GUEST_MIB:
        raise UsageError(f"the guest would have {sum(mem)} MiB of memory ({len(mem)} nodes); at most {MAX_GUEST_MIB} (lower --guest-memory-per-node-mib)")
    return Topology(machine.name, cpus, mem, [list(r) for r in machine.distances], [n["os_index"] for n in nodes],
                    [list(map(float, r)) for r in spec.get("idle_latency_ns") or []],
                    [float(n.get("bandwidth_gbps") or 0.0) for n in nodes],
                    [i for i, n in enumerate(nodes) if cpus[i] == 0 and n.get("subtype") in KMEM_SUBTYPES])


def _count(cpuset: str) -> int:
    total = 0
    for part in cpuset.split(","):
        if part.strip():
            lo, _, hi = part.partition("-")
            total += int(hi or lo) - int(lo) + 1
    return total


def numa_args(t: Topology) -> list[str]:
    args = ["-smp", f"{sum(t.cpus_per_node)}", "-m", f"{sum(t.memory_mib)}M"]
    first = 0
    for i, (n, mib) in enumerate(zip(t.cpus_per_node, t.memory_mib)):
        args += ["-object", f"memory-backend-ram,id=m{i},size={mib}M"]
        if n == 0:
            args += ["-numa", f"node,nodeid={i},memdev=m{i},initiator={t.initiator(i)}"]
            continue
        cpus = f"{first}" if n == 1 else f"{first}-{first + n - 1}"
        first += n
        args += ["-numa", f"node,nodeid={i},cpus={cpus},memdev=m{i}"]
    d = t.distances
    for i in range(t.nodes):
        for j in range(t.nodes):
            if i != j and (i < j or d[i][j] != d[j][i]):
                args += ["-numa", f"dist,src={i},dst={j},val={d[i][j]}"]
    return args + hmat_args(t)


def hmat_args(t: Topology) -> list[str]:
    """The HMAT's memory latency and bandwidth from every node with CPUs (an initiator) to every
    node: the preset's idle latency in whole ns and the target node's bandwidth in whole MB/s
    (ACPI 6.3 §5.2.27.4; QEMU's ``-numa hmat-lb``, hw/core/numa.c: parse_numa_hmat_lb()). Linux
    reads them in drivers/acpi/numa/hmat.c (``node*/access0/initiators/``). Nothing when every
    node has CPUs: those guests stay as they were."""
    if not t.hmat:
        return []
    if not t.latency_ns or not all(t.bandwidth_gbps):
        raise UsageError(f"{t.name} has a CPU-less node but no idle latency matrix or node bandwidths for the guest's HMAT")
    args = []
    for i in (i for i in range(t.nodes) if t.cpus_per_node[i]):
        for j in range(t.nodes):
            args += ["-numa", f"hmat-lb,initiator={i},target={j},hierarchy=memory,data-type=access-latency,"
                              f"latency={round(t.latency_ns[i][j])}"]
            args += ["-numa", f"hmat-lb,initiator={i},target={j},hierarchy=memory,data-type=access-bandwidth,"
                              f"bandwidth={round(t.bandwidth_gbps[j] * 1000)}M"]
    return args


def preset_lpj(accel: str, kernel_config: Path, cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """``lpj=N`` for a TCG guest, "" under KVM or where the figures cannot be read. A TCG guest
    marks its TSCs unsynchronised, so every secondary CPU calibrates its delay loop at bring-up
    (init/calibrate.c: calibrate_delay(), about 0.1-0.2 s each under TCG; the boot log itself says
    'Consider using "lpj=" boot option'). The boot CPU's value comes from the timer frequency,
    TSC kHz * 1000 / HZ (calibrate_delay_is_known() via lpj_fine); QEMU's TCG TSC runs at the
    host's rate, so the host's clock and the guest kernel's CONFIG_HZ give the same figure."""
    if accel != "tcg":
        return ""
    try:
        hz = next(int(line.split("=")[1]) for line in kernel_config.read_text().splitlines() if line.startswith("CONFIG_HZ="))
        mhz = next(float(line.split(":")[1]) for line in cpuinfo.read_text().splitlines() if line.startswith("cpu MHz"))
    except (OSError, StopIteration, ValueError, IndexError):
        return ""
    return f"lpj={round(mhz * 1000) * 1000 // hz}" if hz > 0 and mhz > 0 else ""


def cmdline(balancing: bool, extra: str = "") -> str:
    """``balancing``: the scanner runs (either bit of numa_balancing; the job writes mode 2 or 3
    through ``kernel.numa_balancing``, as the boot option knows only enable/disable).
    ``no_timer_check``: under TCG on a busy host the boot's test of the timer interrupt
    (arch/x86/kernel/apic/io_apic.c: ``check_timer()``, ``timer_irq_works()``) can miss its ticks
    and panic with "IO-APIC + timer doesn't work!"; the option skips the test, as cloud images do."""
    base = f"console=ttyS0 quiet panic=-1 no_timer_check numa_balancing={'enable' if balancing else 'disable'}"
    return f"{base} {extra}".strip()


def argv(
    qemu: str, t: Topology, kernel: str, initrd: Path, append: str, accel: str, data_port: Path | None
) -> list[str]:
    """The whole command line; ``data_port`` None means an interactive console (``vm shell``)."""
    a = [qemu, "-accel", accel, "-machine", "q35,hmat=on" if t.hmat else "q35", "-cpu", "host" if accel == "kvm" else "max"]
    a += numa_args(t)
    a += ["-kernel", kernel, "-initrd", str(initrd), "-append", append]
    a += ["-nodefaults", "-nic", "none", "-nographic", "-no-reboot"]
    # Threads named for the host's /proc (``CPU <n>/TCG``, ...): how vm/hostthreads.py finds the
    # vCPU threads (QEMU's qemu_thread_naming()); nothing else changes.
    a += ["-name", "numalab,debug-threads=on"]
    if data_port is None:
        a += ["-serial", "mon:stdio"]
    else:
        a += ["-monitor", "none", "-serial", "stdio", "-serial", f"file:{data_port}"]
    return a


@dataclass
class Boot:
    returncode: int
    console: str
    ready_s: float | None  # host seconds from QEMU's start to the guest's READY line
    wall_s: float


#: The stop signals that end numalab while QEMU runs (their default action would end Python
#: without its cleanup, leaving QEMU running).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


@contextmanager
def stop_on_signals():
    """While QEMU runs, a stop signal raises ``Stopped`` in the main thread, so that the code
    around QEMU kills it. A signal the caller ignores stays ignored; other threads keep theirs
    (only the main thread may set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Stopped(signum)

    old = {}
    try:
        for s in STOP_SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:
                old[s] = signal.signal(s, stop)
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _death_signal():
    """A function for the child, between fork and exec: SIGKILL when numalab's thread ends,
    however it ends (even by SIGKILL), so QEMU never outlives it (prctl(2) PR_SET_PDEATHSIG).
    libc's prctl is looked up here, in the parent: the child must not load anything. None
    where there is no prctl."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def child() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # numalab ended before prctl: the signal would never come
            os._exit(1)

    return child


#: Console lines longer than this are read in pieces (the reader's memory stays bounded).
MAX_LINE = 1 << 16


class ConsoleWatch(Protocol):
    """Told QEMU's pid once it runs, then each console line as it comes (vm/hostthreads.py)."""

    def started(self, pid: int) -> None: ...

    def line(self, text: str) -> None: ...


def boot(args: list[str], ready_line: str, timeout_s: float, ready_within_s: float | None = None,
         watch: ConsoleWatch | None = None) -> Boot:
    """Run QEMU, read its console, kill it after ``timeout_s`` (GuestTimeout), after
    ``ready_within_s`` without the ready line (BootHung), or on any way out: an exception, a stop
    signal (``Stopped``), numalab's own death (PR_SET_PDEATHSIG). ``watch`` sees every line."""
    start = time.monotonic()
    tail: deque[str] = deque(maxlen=40)
    ready: list[float] = []
    seen_ready = threading.Event()
    hung = False
    with stop_on_signals():
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_death_signal(),
        )
        assert proc.stdout is not None
        console = proc.stdout
        if watch is not None:
            watch.started(proc.pid)

        def read() -> None:
            for raw in iter(lambda: console.readline(MAX_LINE), b""):
                line = raw.decode(errors="replace").rstrip("\r\n")
                tail.append(line)
                if watch is not None:
                    watch.line(line)
                if not ready and line.rstrip().endswith(ready_line):
                    ready.append(time.monotonic() - start)
                    seen_ready.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            if ready_within_s is not None and ready_within_s < timeout_s:
                hung = not _ready_or_exited(proc, seen_ready, ready_within_s)
            rc = None if hung else proc.wait(timeout=timeout_s - (time.monotonic() - start))
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            _kill(proc)
            reader.join(5)  # QEMU is gone: the console ends
            console.close()
    if rc is None:
        last = "\n".join(f"  | {ln}" for ln in list(tail)[-10:])
        if hung:
            raise BootHung(f"the guest was not ready within {ready_within_s:g} s (boot hung); QEMU was killed. "
                           f"Last console lines:\n{last}")
        where = "before it was ready (boot hung?)" if not ready else f"(ready after {ready[0]:.1f} s; the command hung?)"
        raise GuestTimeout(f"the guest did not finish within {timeout_s:g} s {where}; QEMU was killed. Last console lines:\n{last}")
    return Boot(rc, "\n".join(tail), ready[0] if ready else None, time.monotonic() - start)


def _ready_or_exited(proc: subprocess.Popen, seen_ready: threading.Event, within_s: float) -> bool:
    """Wait up to ``within_s`` for the ready line or QEMU's exit; False if neither came."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if seen_ready.wait(min(0.2, max(0.0, end - time.monotonic()))) or proc.poll() is not None:
            return True
    return seen_ready.is_set() or proc.poll() is not None


def _kill(proc: subprocess.Popen) -> None:
    """Kill QEMU's process group unless it has been reaped (then the id may be another's)."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def interactive(args: list[str]) -> int:
    """QEMU with the terminal as the guest's console (``vm shell``), killed on any way out as
    ``boot`` does. It stays in the terminal's process group: the terminal is its console."""
    with stop_on_signals():
        proc = subprocess.Popen(args, preexec_fn=_death_signal())
        try:
            return proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
            proc.wait()
