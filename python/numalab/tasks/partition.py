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

import itertools
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


def object_graph(n: int, edges: Sequence[Sequence[Any]]) -> tuple[Any, Any, Any]:
    """The undirected object graph in compressed rows (ckgraph): ``(xadj, adjncy, bytes)``, the
    neighbours of object i being ``adjncy[xadj[i]:xadj[i+1]]`` in increasing order, with the
    bytes of both directions of a pair summed and self-messages left out."""
    import numpy as np

    # fromiter over the flattened tuples: several times faster than np.asarray on a list of tuples.
    e = np.fromiter(itertools.chain.from_iterable(edges), dtype=np.float64, count=4 * len(edges)).reshape(-1, 4)
    a, b, by = e[:, 0].astype(np.int64), e[:, 1].astype(np.int64), e[:, 3]
    keep = a != b
    a, b, by = a[keep], b[keep], by[keep]
    src, dst, w = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([by, by])
    keys, inverse = np.unique(src * n + dst, return_inverse=True)
    weights = np.bincount(inverse, weights=w, minlength=len(keys))
    rows, adjncy = keys // n, keys % n
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=xadj[1:])
    return xadj, adjncy, weights


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
    import numpy as np
    import pymetis

    xadj, adjncy, by = object_graph(n, edges)
    # METIS wants integer weights >= 1; bytes are integers already, but never 0.
    eweights = np.maximum(1, np.rint(by)).astype(np.int64)
    opts = pymetis.Options(ufactor=METIS_UFACTOR, seed=int(seed) % (1 << 31))
    graph = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
    result = pymetis.part_graph(nparts, graph, vweights=vertex_weights(loads), eweights=eweights if len(eweights) else None,
                                recursive=True, options=opts)
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
    import numpy as np

    n = len(loads)
    xadj, adjncy, by = object_graph(n, edges)
    top = float(by.max()) if len(by) else 0.0
    ew = np.maximum(1, np.ceil(by * 1024 / top)).astype(np.int64) if top > 0 else np.ones(len(by), dtype=np.int64)
    # Every vertex: weight, degree, then (edge weight, neighbour) pairs. Scotch reads numbers
    # separated by any white space, so one vertex per line is only for people reading the file.
    deg = np.diff(xadj)
    flat = np.empty(2 * n + 2 * len(adjncy), dtype=np.int64)
    starts = 2 * np.arange(n) + 2 * xadj[:-1]
    flat[starts], flat[starts + 1] = vertex_weights(loads), deg
    body = np.ones(len(flat), dtype=bool)
    body[starts] = body[starts + 1] = False
    pairs = np.empty(2 * len(adjncy), dtype=np.int64)
    pairs[0::2], pairs[1::2] = ew, adjncy
    flat[body] = pairs
    words = list(map(str, flat.tolist()))
    lines = ["0", f"{n}\t{len(adjncy)}", "0\t011"]
    for i in range(n):
        lo, hi = int(starts[i]), int(starts[i] + 2 + 2 * deg[i])
        lines.append(" ".join(words[lo:hi]))
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
