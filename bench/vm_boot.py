"""numalab vm: boot-to-ready time and the wall time of a whole dgemv run in the vm-4 guest.

Boots vm-4 (TCG unless --accel says otherwise) with dgemv n=3000 (72 MB matrix, serial first
touch, 4 threads) and prints, per round: the host seconds from QEMU's start to the guest's READY
line (its /init has mounted /proc, /sys, /dev and debugfs) and how much of that the guest kernel's
own boot took (its uptime at READY; the rest is QEMU loading the kernel), QEMU's wall time (the guest boots,
runs dgemv under numalab-agent, sends its files back over the data port and powers off) and the
whole call's wall time (initramfs from the cache, document built). Targets on this machine:
under 10 s to ready, under 30 s for the whole run. The first round may build the initramfs.

    .venv/bin/python bench/vm_boot.py [--rounds N] [--n N] [--reps N] [--accel tcg|kvm|auto]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from numalab.vm import run as vm_run
from numalab.vm import setup as vm_setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--accel", default="tcg")
    a = ap.parse_args()
    g = vm_setup.load(print)
    print(f"vm-4, Linux {g.kernel_version}, accel {a.accel}, dgemv --n {a.n} --reps {a.reps} --init serial; "
          f"host {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'round':>5} {'ready s':>8} {'of it kernel s':>15} {'qemu s':>7} {'total s':>8} {'dgemv init s':>13} {'dgemv s':>8}")
    ready, qemu_s, total = [], [], []
    for i in range(a.rounds):
        t0 = time.monotonic()
        req = vm_run.VmRequest("vm-4", ["dgemv", f"--n={a.n}", f"--reps={a.reps}", "--init=serial"], accel=a.accel, timeout_s=300)
        out = vm_run.run(req)
        doc = vm_run.document(out)
        t = time.monotonic() - t0
        k = json.loads(doc["vm"]["stdout"])
        ready.append(out.ready_s or float("nan"))
        qemu_s.append(out.wall_s)
        total.append(t)
        kernel_s = doc["vm"]["guest_uptime_at_ready_s"] or float("nan")
        print(f"{i + 1:>5} {ready[-1]:>8.2f} {kernel_s:>15.2f} {out.wall_s:>7.2f} {t:>8.2f} {k['init_s']:>13.2f} {k['time_s']:>8.2f}")
    print(f"median: ready {statistics.median(ready):.2f} s (target < 10), whole run {statistics.median(total):.2f} s (target < 30)")


if __name__ == "__main__":
    main()
