"""The simulator's side of ``numalab vm check``'s sleeping scheduler cases, without a guest.

For every passive and oversubscribed case (``vm-4``, ``vm-8``, ``vm-4x2``, ``vm-2x4``) runs the
simulator as the check does (``check.sim_side``: the guest's speed, background and, on several
vCPUs per node, the host running the vCPUs) and prints migrations per thread per barrier, the
threads that changed node and the moves by kernel path (all / across nodes). Deterministic; a few
CPU seconds for all. The guest's ranges to compare with are in docs/scheduler.md §10.3-§10.5
(issue 22: the simulator inside them for these cases).

    .venv/bin/python bench/vm_sched_sim.py [--kernel 6.1|6.13]
"""

from __future__ import annotations

import argparse

from numalab.machine import load as load_machine
from numalab.spec import RunSpec
from numalab.vm import check, sched_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="6.1", help="the simulated kernel profile (vm check simulates Debian's 6.1 guest)")
    args = ap.parse_args()
    print(f"{'case':28} {'migrations/thread/barrier':>26} {'changed node':>13}  moves by path (all/across nodes)")
    for name, case in check.CASES.items():
        if not case.sched or case.background is None:
            continue
        params = {"threads": load_machine(case.machine).nr_pus, **case.params}
        spec = RunSpec.create(case.machine, case.workload, params=params, kernel=args.kernel, thp="never").with_config(case.config)
        side = check.sim_side(spec, case.background, case.interval_ms)
        t = side.threads
        moves = sched_trace.sim_moves(name, args.kernel)
        paths = ", ".join(f"{p} {a}/{b}" for p, (a, b) in sorted(moves.items()))
        reps = int(case.params["reps"])
        print(f"{name:28} {t.migrations_per_thread_barrier(reps):>26.4g} {t.changed_node:>6}/{len(t.nr_migrations):<6}  {paths}")


if __name__ == "__main__":
    main()
