"""Graph-partitioning balancers: MetisLB and ScotchLB of Charm++ (v6.9.0 src/ck-ldb/MetisLB.C,
ScotchLB.C), as callables the task-graph simulator calls with its balancing state.

Both build the object graph the same way (MetisLB.C/ScotchLB.C over ckgraph): one vertex per
object, one undirected edge per communicating pair with the bytes of both directions summed,
self-messages left out; vertex weight = ceil(load * 256 / max load), at least 1 (METIS and
Scotch refuse a graph whose vertices all weigh 0). They partition into one part per PE and
object i goes to PE part[i]: part numbers are unrelated to the current mapping, so almost every
object moves (about n (1 - 1/P)), as in Charm++.

* METIS through ``pymetis`` (PyPI, 2025.2 or later; it bundles METIS 5): ``METIS_PartGraphRecursive``, edge
  weight = bytes, ``ufactor`` 100 (MetisLB's ubvec 1.1, 10% imbalance), seeded.
* Scotch through Debian's ``scotch`` package's ``gpart`` program (installed as ``scotch_gpart``):
  edge weight = ceil(bytes * 1024 / max bytes), at least 1; ``-cb -b0.01`` is ScotchLB's
  ``SCOTCH_stratGraphMapBuild(SCOTCH_STRATBALANCE, P, 0.01)``; ``-Cd`` makes it deterministic.
  docs/taskgraph.md §3.5 says why the program rather than a Python binding.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

from numalab.exceptions import NumalabError

GPART_NAMES = ("scotch_gpart", "gpart")  # Debian renames Scotch's gpart to scotch_gpart
METIS_UFACTOR = 100  # MetisLB.C: ubvec[0] = 1.1 -> METIS's ufactor, in thousandths over 1
SCOTCH_IMBALANCE = 0.01  # ScotchLB.C: SCOTCH_stratGraphMapBuild(..., SCOTCH_STRATBALANCE, P, 0.01)
SCOTCH_TIMEOUT_S = 600


def object_graph(n: int, edges: Sequence[Sequence[Any]]) -> list[dict[int, float]]:
    """Undirected neighbours of each object with bytes summed over both directions (ckgraph)."""
    adj: list[dict[int, float]] = [{} for _ in range(n)]
    for e in edges:
        a, b, by = int(e[0]), int(e[1]), float(e[3])
        if a == b:
            continue
        adj[a][b] = adj[a].get(b, 0.0) + by
        adj[b][a] = adj[b].get(a, 0.0) + by
    return adj


def vertex_weights(loads: Sequence[float]) -> list[int]:
    top = max(loads, default=0.0)
    if top <= 0:
        return [1] * len(loads)
    return [max(1, math.ceil(x * 256 / top)) for x in loads]


def metis_parts(loads: Sequence[float], edges: Sequence[Sequence[Any]], nparts: int, seed: int = 0) -> list[int]:
    """Part of each object (0..nparts-1), METIS recursive bisection as MetisLB calls it."""
    n = len(loads)
    if nparts <= 1 or n == 0:
        return [0] * n
    import pymetis

    adj = object_graph(n, edges)
    xadj, adjncy, eweights = [0], [], []
    for nb in adj:
        for j in sorted(nb):
            adjncy.append(j)
            # METIS wants integer weights >= 1; bytes are integers already, but never 0.
            eweights.append(max(1, int(round(nb[j]))))
        xadj.append(len(adjncy))
    opts = pymetis.Options(ufactor=METIS_UFACTOR, seed=int(seed) % (1 << 31))
    graph = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
    result = pymetis.part_graph(nparts, graph, vweights=vertex_weights(loads), eweights=eweights or None, recursive=True, options=opts)
    return [int(p) for p in result[1]]


def gpart_program() -> str | None:
    for name in GPART_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_gpart() -> str:
    found = gpart_program()
    if found is None:
        raise NumalabError("the scotch balancer runs Scotch's gpart, which is not installed (Debian/Ubuntu: apt-get install scotch, "
                           "which installs it as scotch_gpart)")
    return found


def scotch_graph(loads: Sequence[float], edges: Sequence[Sequence[Any]]) -> str:
    """The object graph in Scotch's source graph format (.grf, Scotch user's guide §5.1):
    version 0, vertex and arc counts, base 0 and flags 011 (vertex and edge weights), then per
    vertex its weight, its degree and (edge weight, neighbour) pairs."""
    n = len(loads)
    adj = object_graph(n, edges)
    top = max((w for nb in adj for w in nb.values()), default=0.0)
    arcs = sum(len(nb) for nb in adj)
    lines = ["0", f"{n}\t{arcs}", "0\t011"]
    for w, nb in zip(vertex_weights(loads), adj):
        pairs = " ".join(f"{max(1, math.ceil(nb[j] * 1024 / top)) if top > 0 else 1} {j}" for j in sorted(nb))
        lines.append(f"{w}\t{len(nb)}" + (f"\t{pairs}" if pairs else ""))
    return "\n".join(lines) + "\n"


def scotch_parts(loads: Sequence[float], edges: Sequence[Sequence[Any]], nparts: int, seed: int = 0) -> list[int]:
    """Part of each object, from ``gpart P graph.grf parts.map -Cd -cb -b0.01``."""
    n = len(loads)
    if nparts <= 1 or n == 0:
        return [0] * n
    program = require_gpart()
    with tempfile.TemporaryDirectory(prefix="numalab-scotch-") as tmp:
        grf, out = Path(tmp) / "graph.grf", Path(tmp) / "parts.map"
        grf.write_text(scotch_graph(loads, edges), encoding="ascii")
        cmd = [program, str(nparts), str(grf), str(out), "-Cd", "-cb", f"-b{SCOTCH_IMBALANCE}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=SCOTCH_TIMEOUT_S, env=dict(os.environ, LC_ALL="C"))
        except subprocess.TimeoutExpired:
            raise NumalabError(f"scotch balancer: {Path(program).name} took more than {SCOTCH_TIMEOUT_S} s") from None
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()
            raise NumalabError(f"scotch balancer: {Path(program).name} failed (exit {done.returncode}): {last[-1] if last else 'no message'}")
        return read_scotch_map(out.read_text(encoding="ascii"), n)


def read_scotch_map(text: str, n: int) -> list[int]:
    """A Scotch mapping file: the count, then ``vertex part`` per line."""
    rows = text.split()
    if not rows or int(rows[0]) != n or len(rows) != 1 + 2 * n:
        raise NumalabError(f"scotch balancer: gpart wrote a mapping of {rows[0] if rows else 'no'} vertices, expected {n}")
    parts = [0] * n
    for i in range(n):
        parts[int(rows[1 + 2 * i])] = int(rows[2 + 2 * i])
    return parts
