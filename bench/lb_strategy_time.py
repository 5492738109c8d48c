"""The run time of MetisLB's and ScotchLB's partitioners on this machine, for the strategy-time
model of the task-graph simulator (crates/numalab-tasks/src/strategy_time.rs).

    python bench/lb_strategy_time.py [--sizes 1000,4000,10000] [--pes 16,64] [--repeat 3]

Per size (lb_test randgraph, S3's 1 % ratio capped so the edges stay near 40 per object) and PE
count: the best of ``--repeat`` timings of the partitioner alone, as the Charm++ strategy runs it
on its graph in memory: ``METIS_PartGraphRecursive`` through pymetis on prepared arrays, and
Scotch's ``gpart -cb -b0.01`` on a graph file already written (gpart's own ``-vt`` total, so
process start and file reading are left out). Each line also gives the time per unit of the
model, t / ((V + E) log2 P) in ns, which the model's constants are fitted to.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from numalab.tasks import partition
from numalab.tasks.graphs import build, graph_spec


def metis_s(loads, xadj, adjncy, by, pes: int) -> float:
    import numpy as np
    import pymetis

    ew = np.maximum(1, np.rint(by)).astype(np.int64)
    opts = pymetis.Options(ufactor=partition.METIS_UFACTOR, seed=1)
    graph = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
    vw = partition.vertex_weights(loads)
    start = time.perf_counter()
    pymetis.part_graph(pes, graph, vweights=vw, eweights=ew, recursive=True, options=opts)
    return time.perf_counter() - start


def scotch_s(grf: Path, pes: int) -> float | None:
    program = partition.gpart_program()
    if program is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "parts.map"
        cmd = [program, str(pes), str(grf), str(out), "-Cd", "-cb", f"-b{partition.SCOTCH_IMBALANCE}", "-vt"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ, LC_ALL="C"))
    # gpart -vt prints "T\tMapping\t\t<seconds>" (Scotch 7), beside "I/O" and "Total".
    m = re.search(r"T\s+Mapping\s+([0-9.eE+-]+)", done.stdout + done.stderr)
    return float(m.group(1)) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,4000,10000")
    ap.add_argument("--pes", default="16,64")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'objects':>8} {'edges':>9} {'pes':>4} {'metis_s':>9} {'ns/unit':>8} {'scotch_s':>9} {'ns/unit':>8}")
    for n in (int(x) for x in args.sizes.split(",")):
        ratio = min(0.01, 40.0 / max(n - 1, 1))
        g = build(graph_spec("lb_test", {"n_objects": n, "ratio": ratio}), seed=1)
        loads, edges = g.loads_ns, g.edges
        xadj, adjncy, by = partition.object_graph(n, edges)
        undirected = len(adjncy) // 2
        with tempfile.TemporaryDirectory() as tmp:
            grf = Path(tmp) / "graph.grf"
            grf.write_text(partition.scotch_graph(loads, edges), encoding="ascii")
            for pes in (int(x) for x in args.pes.split(",")):
                units = (n + undirected) * math.log2(pes)
                tm = min(metis_s(loads, xadj, adjncy, by, pes) for _ in range(args.repeat))
                ts_all = [scotch_s(grf, pes) for _ in range(args.repeat)]
                ts = min((t for t in ts_all if t is not None), default=None)
                scotch = "-" if ts is None else f"{ts:9.4f} {ts * 1e9 / units:8.1f}"
                print(f"{n:8d} {undirected:9d} {pes:4d} {tm:9.4f} {tm * 1e9 / units:8.1f} {scotch}")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
