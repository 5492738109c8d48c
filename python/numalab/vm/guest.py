"""The guest's side: its ``/init`` (in the cached base image) and the per-run job (a second,
tiny archive appended to it; the kernel unpacks concatenated cpio archives in order, see
Documentation/driver-api/early-userspace/buffer-format.rst).

The protocol (read back by ``protocol.py``):

* console (ttyS0, QEMU's stdio): ``<MARK> READY`` once /init has mounted /proc, /sys, /dev and
  debugfs, before the job's work; the host times boot-to-ready from it. Nothing else there is read.
* data port (ttyS1, a file on the host; the kernel never prints there): ``<MARK> BEGIN``, then per
  file ``<MARK> FILE <name> <sha256>``, the base64 lines of its gzip stream, ``<MARK> ENDFILE <name>``; ``<MARK> END``.
  ``<MARK>`` is ``NUMALAB-<random hex>``, new for every run, so no output of the command can
  forge a frame. The files: ``status`` (the agent's exit code), ``uname``, ``uptime`` (the
  guest's uptime at READY), ``topo.json`` and
  ``knobs.json`` (``numalab-agent topo`` / ``knobs get``), ``agent.jsonl`` (its records),
  ``stdout`` and ``stderr`` of the command (at most ``OUTPUT_CAP`` bytes each; ``truncated`` says
  which were cut), ``numactl-H``, ``knobs.err`` and ``memory_tiers``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

#: Where things live inside the guest.
AGENT = "/bin/numalab-agent"
DATA_PORT = "/dev/ttyS1"
JOB = "numalab/job"

#: The file systems /init mounts (type, mount point). Nothing is mounted on /tmp: the initramfs's
#: root is already a tmpfs (init/do_mounts.c: rootfs_init_fs_context(), without root=), and a
#: mount there would hide the command's binary when its host path is under /tmp.
MOUNTS = (("proc", "/proc"), ("sysfs", "/sys"), ("devtmpfs", "/dev"))
#: Where the command's binary goes when its host path is under one of MOUNTS (hidden there).
USER_BIN = "/opt/numalab/bin"

INIT = """#!/bin/sh
# numalab guest init (PID 1): mount the kernel's file systems, run the job, power off.
export PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=vt100
""" + "".join(f"mount -t {kind} {kind} {where}\n" for kind, where in MOUNTS) + """mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -f /numalab/job ]; then . /numalab/job; else echo "numalab: no job in the initramfs"; fi
poweroff -f
"""

# Frame one file onto the data port: name, sha256 of the file, its gzip stream in base64 (the
# agent's JSON shrinks about tenfold, and every byte through the emulated UART costs time).
_FRAME = """frame() {
  echo "$MARK FILE $1 $(sha256sum < "/tmp/out/$1" | cut -d' ' -f1)"
  gzip -c "/tmp/out/$1" | base64
  echo "$MARK ENDFILE $1"
}
"""

OUT_FILES = ("status", "uname", "uptime", "topo.json", "knobs.json", "knobs.err", "numactl-H", "agent.jsonl", "stdout", "stderr",
             "truncated", "memory_tiers")
#: The command's stdout and stderr are sent back up to this many bytes each (their beginning):
#: every byte crosses the emulated UART and is held several times over on the host. ``truncated``
#: has one ``<name> <bytes written>`` line per file cut.
OUTPUT_CAP = 1 << 20
TRUNCATE = f"""for f in stdout stderr; do
  n=$(wc -c < /tmp/out/$f)
  if [ "$n" -gt {OUTPUT_CAP} ]; then
    head -c {OUTPUT_CAP} /tmp/out/$f > /tmp/out/$f.cut && mv /tmp/out/$f.cut /tmp/out/$f && echo "$f $n" >> /tmp/out/truncated
  fi
done
"""
#: The guest's memory tiers (mm/memory-tiers.c, 6.1+: one ``memory_tier<adistance >> 7>`` device per
#: tier with its ``nodelist``) and demotion_enabled, one ``name value`` line each, read after the run.
TIERS = """for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
  [ -f "$d/nodelist" ] && echo "${d##*/} $(cat "$d/nodelist")"
done > /tmp/out/memory_tiers 2>/dev/null
[ -f /sys/kernel/mm/numa/demotion_enabled ] && echo "demotion_enabled $(cat /sys/kernel/mm/numa/demotion_enabled)" >> /tmp/out/memory_tiers
"""


@dataclass(frozen=True)
class Job:
    """What one guest boot does."""

    mark: str
    command: list[str] = field(default_factory=list)  # empty: an interactive shell
    agent_args: list[str] = field(default_factory=list)  # numactl-style placement for the agent
    knobs: dict[str, int] = field(default_factory=dict)  # numalab-agent knobs set NAME=VALUE
    thp: str | None = None  # /sys/kernel/mm/transparent_hugepage/enabled
    env: dict[str, str] = field(default_factory=dict)
    interval_ms: int = 100
    setup: tuple[str, ...] = ()  # shell lines run before the command (e.g. interleave weights)
    #: (path, value) written after the knobs (demotion_enabled, weighted interleave's auto); a file
    #: the guest kernel lacks or refuses is reported in knobs.err, as a refused knob is.
    sysfs: tuple[tuple[str, str], ...] = ()
    #: Shell lines that online the dax/kmem nodes (kmem.script()), run first; they report
    #: failures in knobs.err.
    kmem: tuple[str, ...] = ()
    #: Shell lines that undo what an earlier command of a shared boot left in the guest
    #: (ramdisk.reset()), run before the command in ``batch_script``.
    reset: tuple[str, ...] = ()


def job_script(job: Job) -> str:
    q = shlex.quote
    # The guest's uptime at READY: how much of the boot-to-ready time the kernel itself took.
    lines = [f"MARK={q(job.mark)}", "mkdir -p /tmp/out", "cut -d' ' -f1 /proc/uptime > /tmp/out/uptime", 'echo "$MARK READY"']
    if job.thp:
        lines.append(f"echo {q(job.thp)} > /sys/kernel/mm/transparent_hugepage/enabled")
    for k, v in job.env.items():
        lines.append(f"export {k}={q(v)}")
    lines += list(job.setup)
    lines.append("mkdir -p /tmp/out /tmp/work && cd /tmp/work")
    knobs = " ".join(q(f"{k}={v}") for k, v in sorted(job.knobs.items()))
    if not job.command:
        lines += list(job.kmem)
        if knobs:
            lines.append(f"{AGENT} knobs set {knobs} --journal /tmp/knobs.journal >/dev/null")
        lines += [f"echo {q(value)} > {q(path)}" for path, value in job.sysfs]
        lines += [
            'echo "numalab vm shell: Linux $(uname -r), $(nproc) CPUs. numactl, /sys/devices/system/node/node*/numastat, /proc/PID/numa_maps,'
            ' /proc/sys/kernel/numa_balancing are real. exit (or Ctrl-D) powers the guest off."',
            "numactl -H",
            "setsid cttyhack sh -l",
        ]
        return "\n".join(lines) + "\n"
    lines += [*_BOOT, *job.kmem]
    if knobs:
        lines.append(f"{AGENT} knobs set {knobs} --journal /tmp/knobs.journal >/dev/null 2>/tmp/out/knobs.err")
    lines += [_sysfs_line(path, value) for path, value in job.sysfs]
    lines += [*_run_lines(job), *_send_lines()]
    return "\n".join(lines) + "\n"


#: What every command of a boot shares: the framing function, the release, the nodes, and the
#: (empty) settings-error file that the dax/kmem and ramdisk lines and the settings append to.
_BOOT = [_FRAME, "uname -r > /tmp/out/uname", "numactl -H > /tmp/out/numactl-H 2>&1", ": > /tmp/out/knobs.err"]


def _sysfs_line(path: str, value: str) -> str:
    q = shlex.quote
    return (f"if [ -f {q(path)} ]; then echo {q(value)} > {q(path)} || echo {q(path + ': the guest kernel refused ' + value)} >> /tmp/out/knobs.err; "
            f"else echo {q(path + ': absent in the guest kernel')} >> /tmp/out/knobs.err; fi")


def _run_lines(job: Job) -> list[str]:
    """The agent runs the command; its files are written to /tmp/out."""
    q = shlex.quote
    # numa_maps at every sample: in the guest, seeing every move matters more than the agent's CPU.
    agent = [AGENT, "run", f"--interval-ms={job.interval_ms}", "--maps-budget-pct=100", "--output=/tmp/out/agent.jsonl", *job.agent_args, "--", *job.command]
    return [
        f"{AGENT} topo > /tmp/out/topo.json",
        f"{AGENT} knobs get > /tmp/out/knobs.json",
        " ".join(q(a) for a in agent) + " </dev/null >/tmp/out/stdout 2>/tmp/out/stderr",
        "echo $? > /tmp/out/status",
        "touch /tmp/out/agent.jsonl",
        ": > /tmp/out/truncated",
        TRUNCATE,
        TIERS,
    ]


def _send_lines() -> list[str]:
    """/tmp/out's files framed onto the data port between ``$MARK BEGIN`` and ``$MARK END``."""
    return [
        f"stty -F {DATA_PORT} raw -echo 2>/dev/null",
        "{",
        '  echo "$MARK BEGIN"',
        *[f"  frame {name}" for name in OUT_FILES],
        '  echo "$MARK END"',
        f"}} > {DATA_PORT}",
    ]


def shareable(job: Job) -> bool:
    """Whether the command can share a boot with others (``batch_script``): it leaves no setting
    behind that the next command would meet. The agent's knobs and the interleave weights
    (``setup``) are left set; a sysfs switch is put back after the command."""
    return bool(job.command) and not job.knobs and not job.setup


def batch_script(jobs: list[Job]) -> str:
    """Several commands in one boot, one after the other, each as ``job_script`` runs its one: in
    a subshell (its environment and working directory its own), from a copy of the boot's files
    in an empty /tmp/out and an empty /tmp/work, its sysfs switches put back after it, its files
    framed between its own ``<mark> BEGIN`` and ``<mark> END`` and then deleted (a later command
    meets the memory the first one found). The agent's counters are differences over its own
    command, its pages and threads the command's own. The dax/kmem and ramdisk lines (the same
    for every job of a boot) run once, before the first command."""
    q = shlex.quote
    if not jobs or not all(shareable(j) for j in jobs):
        raise ValueError("batch_script: every job needs a command and no knobs or weights")
    lines = [f"MARK={q(jobs[0].mark)}", "mkdir -p /tmp/out", "cut -d' ' -f1 /proc/uptime > /tmp/out/uptime", 'echo "$MARK READY"',
             *_BOOT, *jobs[0].kmem, "rm -rf /tmp/boot && mv /tmp/out /tmp/boot"]
    for job in jobs:
        lines += [*job.reset, "cp -r /tmp/boot /tmp/out && mkdir -p /tmp/work", "(", f"MARK={q(job.mark)}"]
        if job.thp:
            lines.append(f"echo {q(job.thp)} > /sys/kernel/mm/transparent_hugepage/enabled")
        lines += [f"export {k}={q(v)}" for k, v in job.env.items()]
        lines.append("cd /tmp/work")
        # each switch's value before the command, written back after it
        lines += [f"old{i}=$(cat {q(path)} 2>/dev/null)" for i, (path, _) in enumerate(job.sysfs)]
        lines += [_sysfs_line(path, value) for path, value in job.sysfs]
        lines += _run_lines(job)
        lines += [f'[ -n "$old{i}" ] && echo "$old{i}" > {q(path)}' for i, (path, _) in enumerate(job.sysfs)]
        lines += [*_send_lines(), ")", "rm -rf /tmp/out /tmp/work"]
    return "\n".join(lines) + "\n"


def script(jobs: list[Job]) -> str:
    """The job file for one command (``job_script``) or several (``batch_script``)."""
    return job_script(jobs[0]) if len(jobs) == 1 else batch_script(jobs)
