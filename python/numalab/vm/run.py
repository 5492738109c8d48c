"""One guest boot from start to result: check the inputs, build the initramfs, boot QEMU, read
the guest's files back and turn the agent's records into a ``numalab.result/1`` document with
``source: vm`` (through the host converter, ``numalab.results.agent.document``)."""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from numalab.exceptions import NumalabError, UsageError
from numalab.runner import host
from numalab.spec import Placement
from numalab.spec.balancing import Balancing
from numalab.vm import guest, initramfs, kmem, protocol, qemu, ramdisk
from numalab.vm import setup as vm_setup

Say = Callable[[str], None]
ACCELS = ("auto", "tcg", "kvm")
THP_MODES = ("always", "madvise", "never")
WAIT_POLICIES = ("default", "active", "passive")
#: MPOL_WEIGHTED_INTERLEAVE and its sysfs weights arrived in Linux 6.9 (commit fa3bea4e1f82).
WEIGHTED_INTERLEAVE_SINCE = (6, 9)
#: The longest a guest may run (a week): beyond, a typo rather than a plan.
MAX_TIMEOUT_S = 7 * 24 * 3600


@dataclass(frozen=True)
class VmRequest:
    machine: str
    command: list[str]
    placement: Placement = field(default_factory=Placement)
    balancing: Balancing = field(default_factory=Balancing)
    memory_per_node_mib: int | None = None
    cpus_per_node: int = 1
    thp: str | None = None
    accel: str = "tcg"
    timeout_s: float = 600.0
    interval_ms: int = 100
    #: OMP_WAIT_POLICY for the command (``default``: left unset, libgomp's own default).
    omp_wait_policy: str = "default"
    #: A brd ramdisk of this many MiB at ramdisk.DEVICE (0: none), for file mappings (ramdisk.py).
    ramdisk_mib: int = 0


@dataclass
class VmOutput:
    files: dict[str, bytes]
    topology: qemu.Topology
    accel: str
    ready_s: float | None
    wall_s: float
    request: VmRequest
    #: Commands in the boot that ran this one (``run_many``; 1: a boot of its own).
    boot_commands: int = 1

    def text(self, name: str) -> str:
        return self.files.get(name, b"").decode(errors="replace")

    @property
    def status(self) -> int:
        return int(self.text("status").strip() or 1)

    @property
    def kernel_release(self) -> str:
        return self.text("uname").strip()

    @property
    def truncated(self) -> dict[str, int]:
        """``{"stdout": bytes written}`` for each output the guest cut to ``guest.OUTPUT_CAP``."""
        out = {}
        for line in self.text("truncated").splitlines():
            name, _, size = line.partition(" ")
            if name in ("stdout", "stderr") and size.strip().isdigit():
                out[name] = int(size)
        return out


def kernel_tuple(release: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def agent_args(p: Placement) -> list[str]:
    """The host's translation, with the weights left out: in the guest they are set through its
    own sysfs before the command (``_weights_script``), which changes nothing on the host."""
    return host.agent_args(replace(p, weights=()))


def resolve_accel(accel: str) -> str:
    if accel not in ACCELS:
        raise UsageError(f"--accel must be one of {', '.join(ACCELS)}, got '{accel}'")
    if accel == "auto":
        return "kvm" if vm_setup.kvm_usable() else "tcg"
    if accel == "kvm" and not vm_setup.kvm_usable():
        raise UsageError("--accel kvm: /dev/kvm is absent or not usable here (use --accel tcg)")
    return accel


def _check_placement(machine, p: Placement) -> None:
    """Node strings checked against the preset before boot (the agent checks CPUs in the guest).
    A leading ``=`` (numactl's static nodes) is the agent's to read."""
    for nodes in (p.nodes, p.cpunodebind):
        if nodes:
            machine.parse_nodes(nodes.removeprefix("="))


def omp_env(req: VmRequest) -> dict[str, str]:
    """The command's OpenMP environment: the binding (as on a host) and OMP_WAIT_POLICY when one
    is asked for (libgomp reads it in ``env.c: initialize_env()``; docs/scheduler.md §5)."""
    if req.omp_wait_policy not in WAIT_POLICIES:
        raise UsageError(f"--omp-wait-policy: '{req.omp_wait_policy}' is not one of {', '.join(WAIT_POLICIES)}")
    env = host.omp_env(req.placement)
    if req.omp_wait_policy != "default":
        env["OMP_WAIT_POLICY"] = req.omp_wait_policy.upper()
    return env


#: The simulator's knob names that the guest's agent (crates/numalab-linux/src/knobs.rs) spells as
#: the kernel does: the sysctl is ``numa_balancing_promote_rate_limit_MBps``.
AGENT_KNOB_NAMES = {"promote_rate_limit_mbps": "promote_rate_limit_MBps"}
#: The tiering switches beside numa_balancing, as files of the guest kernel (docs/tiering.md §1).
DEMOTION_ENABLED = "/sys/kernel/mm/numa/demotion_enabled"
WEIGHTED_INTERLEAVE_AUTO = "/sys/kernel/mm/mempolicy/weighted_interleave/auto"


def guest_settings(b: Balancing) -> tuple[dict[str, int], tuple[tuple[str, str], ...]]:
    """What the guest writes from the simulator's Balancing: the agent's knobs (``numa_balancing``
    itself when the mode is 2 or 3, since the boot option only says enable/disable) and the sysfs
    switches. The agent refuses a knob the guest kernel lacks, the job reports a missing switch
    file: either stops the run with the guest's own message (``run``)."""
    knobs = {AGENT_KNOB_NAMES.get(k, k): v for k, v in b.knobs}
    if b.tiering:
        knobs["numa_balancing"] = b.mode
    sysfs = []
    if b.demotion:
        sysfs.append((DEMOTION_ENABLED, "true"))
    if b.wi_auto:
        sysfs.append((WEIGHTED_INTERLEAVE_AUTO, "true"))
    return knobs, tuple(sysfs)


def memory_tiers(text: str) -> dict[str, Any]:
    """The guest's ``memory_tiers`` file: tiers (``memory_tierN`` -> nodelist) and demotion_enabled."""
    tiers: dict[str, str] = {}
    out: dict[str, Any] = {"tiers": tiers}
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "demotion_enabled":
            out["demotion_enabled"] = value.strip() == "true"
        elif name.startswith("memory_tier"):
            tiers[name] = value.strip()
    return out


def _weights_script(p: Placement) -> list[str]:
    return [f"echo {w} > /sys/kernel/mm/mempolicy/weighted_interleave/node{n}" for n, w in p.weights]


def boot_job(req: VmRequest, command: list[str] | None, say: Say = lambda s: None):
    """Everything before QEMU runs, every input checked: (guest files, topology, accelerator,
    base image, job). ``command`` None: an interactive shell."""
    g, topo, accel, base, jobs = _prepare([req], [command], say)
    return g, topo, accel, base, jobs[0]


def _check_request(req: VmRequest) -> None:
    if req.thp is not None and req.thp not in THP_MODES:
        raise UsageError(f"--thp must be one of {', '.join(THP_MODES)}, got '{req.thp}'")
    if not 1 <= req.interval_ms <= 60000:
        raise UsageError(f"--interval-ms must be in 1..60000, got {req.interval_ms}")
    if not 0 < req.timeout_s <= MAX_TIMEOUT_S:  # also false for NaN
        raise UsageError(f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT_S}], got {req.timeout_s:g}")


def _prepare(reqs: list[VmRequest], commands: list[list[str] | None], say: Say):
    """``boot_job`` for the requests of one boot (``boot_key`` equal): one base image holding
    every command's binary, one job per request."""
    from numalab.machine import load as load_machine

    for req in reqs:
        _check_request(req)
    first = reqs[0]
    machine = load_machine(first.machine)
    topo = qemu.topology(machine, first.memory_per_node_mib, first.cpus_per_node)
    kmem.cmdline(topo.memory_mib, topo.kmem_nodes)  # a layout dax/kmem cannot online is refused before boot
    for req in reqs:
        _check_placement(machine, req.placement)
    g = vm_setup.load(say)
    agent = vm_setup.find_agent()
    builtins = {Path(a).name for a in initramfs.busybox_applets(g.busybox)} | {"numactl", "numalab-agent"}
    cmds = [initramfs.resolve_command(command, builtins) if command is not None else None for command in commands]
    for req in reqs:
        if req.placement.policy == "weighted-interleave" and kernel_tuple(g.kernel_version) < WEIGHTED_INTERLEAVE_SINCE:
            raise UsageError(
                f"--weighted-interleave needs Linux 6.9 or later (MPOL_WEIGHTED_INTERLEAVE); the guest kernel is {g.kernel_version} "
                "(pass a newer one with numalab vm setup --kernel PATH)"
            )
    accel = resolve_accel(first.accel)
    say("numalab vm: building the initramfs (reused from the cache when unchanged)")
    base = initramfs.base_image(g, agent, *cmds)
    if topo.kmem_nodes:
        # the modules and the kernel options come with the base image (kmem.py)
        modules = kmem.fetch_modules(vm_setup.cache_dir(), g.kernel_version, g.kernel_source, say)
        base += kmem.archive(modules)
    if first.ramdisk_mib > 0:
        base += ramdisk.archive(ramdisk.fetch(vm_setup.cache_dir(), g.kernel_version, g.kernel_source, say))
    jobs = []
    for req, cmd in zip(reqs, cmds):
        knobs, sysfs = guest_settings(req.balancing)
        jobs.append(guest.Job(
            mark="NUMALAB-" + secrets.token_hex(12),
            command=cmd.argv if cmd is not None else [],
            agent_args=agent_args(req.placement),
            knobs=knobs,
            thp=req.thp,
            env=omp_env(req),
            interval_ms=req.interval_ms,
            setup=tuple(_weights_script(req.placement)),
            sysfs=sysfs,
            kmem=tuple(kmem.script(topo.kmem_nodes, "/tmp/out/knobs.err") + ramdisk.script(req.ramdisk_mib, "/tmp/out/knobs.err")),
            reset=tuple(ramdisk.reset(req.ramdisk_mib)),
        ))
    return g, topo, accel, base, jobs


def _cmdline(req: VmRequest, topo: qemu.Topology, g: vm_setup.Guest, accel: str) -> str:
    lpj = qemu.preset_lpj(accel, Path(g.kernel).parent / "config")
    # $NUMALAB_VM_APPEND: extra kernel options for a measurement (docs/scheduler.md §10.49's
    # ``tsc=reliable``); unset, the boot line is unchanged.
    extra = os.environ.get("NUMALAB_VM_APPEND", "")
    return qemu.cmdline(req.balancing.scanning, f"{lpj} {kmem.cmdline(topo.memory_mib, topo.kmem_nodes)} {extra}".strip())


def _initrd(tmp: Path, base: bytes, job: guest.Job | list[guest.Job]) -> Path:
    """The job archive, then the base image: the kernel unpacks both in turn. The uncompressed
    archive goes first, as the early-microcode archive does (init/initramfs.c, unpack_to_rootfs()
    skips the zero padding after it and recognises the gzip magic that follows)."""
    path = tmp / "initrd.img"
    with open(path, "wb") as out:
        out.write(initramfs.job_archive(job))
        out.write(base)
    return path


def run(req: VmRequest, say: Say = lambda s: None, watch: qemu.ConsoleWatch | None = None) -> VmOutput:
    return run_many([req], say, watch)[0]


def boot_key(req: VmRequest) -> tuple[Any, ...]:
    """What the guest's boot itself depends on (QEMU's command line, the kernel's options, the
    dax/kmem nodes and the ramdisk): requests with the same key can share a boot."""
    return (req.machine, req.memory_per_node_mib, req.cpus_per_node, req.accel, req.thp, req.balancing.scanning, req.ramdisk_mib)


def shareable(req: VmRequest) -> bool:
    """A request that may share its boot with others (``run_many``): it sets no knob (the agent
    leaves them set) and no interleave weight. Its sysfs switches are put back and the ramdisk's
    page cache dropped after it (guest.batch_script, ramdisk.reset)."""
    knobs, _ = guest_settings(req.balancing)
    return bool(req.command) and not knobs and not req.placement.weights


def run_many(reqs: list[VmRequest], say: Say = lambda s: None, watch: qemu.ConsoleWatch | None = None) -> list[VmOutput]:
    """The requests' commands in one guest boot, one after the other (``guest.batch_script``),
    one output each, as if each had booted its own guest: each has its own agent records,
    counters over its own command, and the boot's uptime at READY; ``wall_s`` is the boot's
    (every command's). One request is ``run``'s boot exactly. Several need one ``boot_key`` and
    ``shareable`` requests; the guest is killed after the sum of their timeouts. ``watch`` sees
    QEMU's pid and console (``qemu.boot``)."""
    if len(reqs) > 1 and (len({boot_key(r) for r in reqs}) != 1 or not all(shareable(r) for r in reqs)):
        raise UsageError("vm: only requests with the same machine, memory, vCPUs, accelerator, THP mode, balancing, ramdisk and no knobs "
                         "or weights share a boot")
    g, topo, accel, base, jobs = _prepare(reqs, [r.command for r in reqs], say)
    req = reqs[0]
    with tempfile.TemporaryDirectory(prefix="numalab-vm-") as tmpdir:
        tmp = Path(tmpdir)
        initrd = _initrd(tmp, base, jobs)
        data = tmp / "data-port"
        args = qemu.argv(g.qemu, topo, g.boot_kernel, initrd, _cmdline(req, topo, g, accel), accel, data)
        what = f" for {len(reqs)} commands" if len(reqs) > 1 else ""
        say(f"numalab vm: booting {topo.name} ({topo.nodes} nodes, {sum(topo.cpus_per_node)} vCPUs, "
            f"{sum(topo.memory_mib)} MiB, {accel}) with Linux {g.kernel_version}{what}")
        b = _boot_once_more_if_hung(args, f"{jobs[0].mark} READY", sum(r.timeout_s for r in reqs), say, watch)
        text = protocol.read_port(data)
    if b.ready_s is None:
        last = "\n".join(f"  | {ln}" for ln in b.console.splitlines()[-10:])
        raise qemu.QemuFailed(f"the guest never became ready (QEMU exit code {b.returncode}); last console lines:\n{last}")
    outs = []
    for r, job in zip(reqs, jobs):
        try:
            files = protocol.read_frames(text, job.mark)
        except protocol.ProtocolError as e:
            last = "\n".join(f"  | {ln}" for ln in b.console.splitlines()[-10:])
            raise protocol.ProtocolError(f"{e.args[0]}; last console lines:\n{last}") from None
        knobs_err = files.get("knobs.err", b"").decode(errors="replace").strip()
        if knobs_err:
            raise GuestCommandError(f"the guest kernel refused the settings (balancing knobs, tiering switches, dax/kmem nodes): {knobs_err}")
        outs.append(VmOutput(files, topo, accel, b.ready_s, b.wall_s, r, len(reqs)))
    return outs


#: A TCG guest is ready in 5-15 s on a laptop or CI runner (bench/vm_boot.py), slower under load;
#: past this its boot has hung (a soft lockup of a vCPU thread starved by the host has been seen
#: once in CI): QEMU is killed and the guest booted once more. A guest's data port is reopened
#: (truncated) by the new QEMU, so nothing of the hung boot is read.
READY_WITHIN_S = 120.0


def _boot_once_more_if_hung(args: list[str], ready_line: str, timeout_s: float, say: Say,
                            watch: qemu.ConsoleWatch | None = None) -> qemu.Boot:
    try:
        return qemu.boot(args, ready_line, timeout_s, READY_WITHIN_S, watch)
    except qemu.BootHung as e:
        say(f"numalab vm: {e.args[0].splitlines()[0]}; booting it once more")
        return qemu.boot(args, ready_line, timeout_s, READY_WITHIN_S, watch)


def shell(req: VmRequest, say: Say = lambda s: None) -> int:
    """An interactive shell in the guest: QEMU's console on this terminal (Ctrl-A x quits QEMU).
    Refused without a terminal on stdin: the guest's serial console never sees an end of input,
    so a shell reading a pipe or /dev/null would wait for ever."""
    if not os.isatty(0):
        raise UsageError("vm shell needs a terminal on stdin (the guest's console never ends otherwise); "
                         "to run a script in the guest: numalab vm run -- sh -c '...'")
    g, topo, accel, base, job = boot_job(req, None, say)
    with tempfile.TemporaryDirectory(prefix="numalab-vm-") as tmpdir:
        initrd = _initrd(Path(tmpdir), base, job)
        args = qemu.argv(g.qemu, topo, g.boot_kernel, initrd, _cmdline(req, topo, g, accel), accel, None)
        say(f"numalab vm shell: {topo.name}, {accel}; `exit` powers the guest off, Ctrl-A x quits QEMU")
        return qemu.interactive(args)


class GuestCommandError(NumalabError):
    """The command did not run in the guest (the agent refused or could not start it): exit code 1."""


def document(out: VmOutput) -> dict[str, Any]:
    """The result document (``source: vm``) of a guest run, via the host converter."""
    from numalab.results import agent as host
    from numalab.results import reported

    status = out.status
    records_text = out.text("agent.jsonl")
    if not records_text.strip():
        err = out.text("stderr").strip().splitlines()
        why = err[-1] if err else f"exit code {status}"
        raise GuestCommandError(f"the agent in the guest ran nothing: {why}")
    records = host.parse_records(records_text, "the guest's agent records")
    topo = json.loads(out.text("topo.json"))
    knobs = json.loads(out.text("knobs.json")) if out.text("knobs.json").strip() else None
    p = out.request.placement
    doc = host.document(records, topo, knobs, out.kernel_release, p.omp_proc_bind, p.omp_places)
    # NPB prints the time of its timed section: that is the time it reports (results/reported.py).
    reported.apply(doc, out.text("stdout"))
    t = out.topology
    doc["source"] = "vm"
    doc["machine"] = dict(doc["machine"], name=t.name, preset_node_os_indexes=t.node_os_indexes)
    doc["vm"] = {
        "accel": out.accel,
        "kernel": out.kernel_release,
        "memory_mib_per_node": t.memory_mib,
        "cpus_per_node": t.cpus_per_node,
        "ready_s": round(out.ready_s, 3) if out.ready_s is not None else None,
        "guest_uptime_at_ready_s": float(out.text("uptime").strip()) if out.text("uptime").strip() else None,
        "wall_s": round(out.wall_s, 3),
        "thp": out.request.thp,
        "memory_tiers": memory_tiers(out.text("memory_tiers")),
        "stdout": out.text("stdout"),
        "stderr": out.text("stderr"),
        # bytes the command wrote to each output that was cut to its first guest.OUTPUT_CAP
        "output_truncated": out.truncated,
        "output_cap_bytes": guest.OUTPUT_CAP,
    }
    if out.boot_commands > 1:
        # the commands that shared the boot (``run_many``): wall_s is the boot's, theirs included
        doc["vm"]["boot_commands"] = out.boot_commands
    return doc
