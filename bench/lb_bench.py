"""How long each load balancer takes to balance 10,000 objects on 64 PEs (issue 14's target: the
NUMA-aware balancer under 1 s).

    python bench/lb_bench.py [--graph lb_test] [--objects 10000] [--pes 64] [--machine opteron6282-4p]

One balancing call per balancer (2 iterations, balancing after the first) on the same graph;
the time is the balancer's own wall time as the simulator measures it around the call
(``lb_calls[0].balancer_wall_s``: for metis and scotch it includes building their input graph
in Python and, for scotch, running gpart).
"""

from __future__ import annotations

import argparse
import sys
import time

from numalab import _core
from numalab.spec.run import load_machine
from numalab.tasks import balancers as lb
from numalab.tasks.graphs import build, graph_spec
from numalab.tasks.partition import gpart_program

DEFAULT = "none,greedy,greedy-refine,refine,metis,scotch,treematch,numalab"
TARGET_S = {"numalab": 1.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="lb_test", choices=["lb_test", "kneighbor"])
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--pes", type=int, default=64)
    ap.add_argument("--machine", default="opteron6282-4p", help="a machine with at least --pes cores (default: 64 cores)")
    ap.add_argument("--balancers", default=DEFAULT)
    args = ap.parse_args()

    machine = load_machine(args.machine)
    specs = [b for b in lb.parse_list(args.balancers) if b.name != "scotch" or gpart_program() is not None]
    start = time.perf_counter()
    g = build(graph_spec(args.graph, {"n_objects": args.objects}), seed=1)
    print(f"{args.graph}: {g.n_objects} objects, {g.n_edges} edges, on {args.pes} PEs of {machine.name} "
          f"(graph built in {time.perf_counter() - start:.2f} s)")
    print(f"{'balancer':14} {'balancing_s':>12} {'migrations':>11} {'migrated_%':>11} {'iteration_ms before':>20} {'after':>10}  target")
    failed = False
    for b in specs:
        how, params = lb.resolve(b, seed=1)
        r = _core.taskgraph_simulate(g, machine, how, iterations=2, lb_period=1, pes=args.pes, seed=1, params=params)
        call = r["lb_calls"][0] if r["lb_calls"] else {"balancer_wall_s": 0.0, "migrations": 0, "migrated_pct": 0.0}
        before, after = (it["time_ns"] / 1e6 for it in r["iterations"][:2])
        target = TARGET_S.get(b.name)
        mark = ""
        if target is not None:
            ok = call["balancer_wall_s"] < target
            failed |= not ok
            mark = f"< {target:g} s: {'yes' if ok else 'NO'}"
        print(f"{b.label():14} {call['balancer_wall_s']:12.3f} {call['migrations']:11d} {call['migrated_pct']:11.1f} {before:20.2f} {after:10.2f}  {mark}")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
