"""What a calibration runs: the (CPU node, memory node) pairs, the CPUs each may use, buffer
sizes and repetitions (``--quick`` or full), and the pairs it must skip because this process
cannot bind there (cgroup-restricted CPUs or memory nodes, nodes without memory)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from numalab.exceptions import UsageError
from numalab.machine.bitmaps import parse_cpulist

MIB = 1 << 20


@dataclass(frozen=True)
class Plan:
    pairs: list[tuple[int, int]]  # (CPU node, memory node), measured in this order
    cpus: dict[int, list[int]]  # node -> the CPUs it may use, one per core first, then siblings
    curve_nodes: list[int]  # memory nodes whose loaded-latency curve is measured (local CPUs)
    chase_mib: int
    chase_loads: int  # dependent loads per repetition
    chase_reps: int  # repetitions inside one chase process
    pages: tuple[str, ...]  # "4k", "2m"
    stream_n: int  # elements per STREAM array
    stream_inner_reps: int  # kernel loops per STREAM process
    stream_runs: int  # STREAM processes per figure (the samples of its median)
    modes: tuple[str, ...]  # read, triad, write
    llc_mib: int
    quick: bool
    skipped: list[str] = field(default_factory=list)
    # The dependent-add latency: read-only STREAM over 128 KiB (in L1/L2 on any current core), one
    # thread, so the loop's time is its reduction chain's (kernels/stream.c --mode read: one addpd per 16 B).
    add_n: int = 16384
    add_reps: int = 20000
    # The clock: kernels/clock, 2e8 dependent integer adds (about 0.05-0.1 s at 2-4 GHz) per
    # repetition, each repetition one sample.
    clock_hundreds: int = 2000000
    clock_reps: int = 5
    # The instruction window: kernels/window, two chases over the chase's buffer with 0, 8, ...
    # 1024 nops after each load (past the 512-entry reorder buffers of current x86 cores), 16384
    # load pairs per count (about 3-8 ms at one or two memory latencies); each sweep one sample.
    window_pairs: int = 16384
    window_max_nops: int = 1024
    window_step: int = 8
    window_reps: int = 3

    def thread_levels(self, node: int) -> list[int]:
        """1, 2, 4 ... and every CPU of the node (quick: 1 and all)."""
        n = len(self.cpus[node])
        levels = [1, n] if self.quick else sorted({*(2**i for i in range(n.bit_length()) if 2**i < n), n})
        return sorted(set(levels))

    def load_levels(self, node: int) -> list[int]:
        """Loader threads beside the probe: 0, then 1, 2, 4 ... up to the node's other CPUs."""
        others = len(self.cpus[node]) - 1
        return sorted({0, *(2**i for i in range(others.bit_length()) if 2**i < others), others}) if others else [0]


def parse_pairs(text: str, nodes: list[int]) -> list[tuple[int, int]] | int | str:
    """``all``, ``local``, a count N (sampled), or explicit ``C:M,C:M``."""
    text = text.strip()
    if text in ("all", "local"):
        return text
    if text.isdigit():
        if int(text) < 1:
            raise UsageError(f"--pairs {text}: a count must be at least 1")
        return int(text)
    out = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+):(\d+)\s*", item)
        if not m:
            raise UsageError(f"--pairs: '{item}' is not CPU_NODE:MEM_NODE (accepted: all, local, a count N, or C:M,C:M,...)")
        c, mem = int(m.group(1)), int(m.group(2))
        for n in (c, mem):
            if n not in nodes:
                raise UsageError(f"--pairs: node {n} does not exist (nodes: {','.join(map(str, nodes))})")
        out.append((c, mem))
    return out


def choose_pairs(spec: list[tuple[int, int]] | int | str, nodes: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Every local pair first; then the remote pairs (``all``), or as many as a count allows,
    spread evenly over the remote pairs sorted by SLIT distance (nearest and farthest kept)."""
    ids = [n["os_index"] for n in nodes]
    if isinstance(spec, list):
        return list(dict.fromkeys(spec))
    local = [(i, i) for i in ids]
    dist = {(a["os_index"], b["os_index"]): a["distances"][j] for a in nodes for j, b in enumerate(nodes)}
    remote = sorted(((c, m) for c in ids for m in ids if c != m), key=lambda p: (dist[p], p))
    if spec == "local":
        return local
    if spec == "all" or isinstance(spec, str):
        return local + remote
    room = max(0, spec - len(local))
    if room >= len(remote):
        return local + remote
    if room == 1:
        return local + [remote[-1]]
    picked = [remote[round(k * (len(remote) - 1) / (room - 1))] for k in range(room)] if room else []
    return local + list(dict.fromkeys(picked))


def bindable(facts: dict[str, Any], pairs: list[tuple[int, int]], allowed_cpus: set[int], allowed_mems: set[int]) -> tuple[list[tuple[int, int]], dict[int, list[int]], list[str]]:
    """The pairs this process can bind, the CPUs of each node it may use, and one line per pair
    skipped, saying why. CPUs are ordered one per core first (the first thread of each core),
    so k threads use k cores before any SMT sibling."""
    by_node = {n["os_index"]: n for n in facts["nodes"]}
    cpus: dict[int, list[int]] = {}
    for n in facts["nodes"]:
        mine = set(parse_cpulist(n["cpus"]))
        firsts, siblings = [], []
        for core in facts["cores"]:
            threads = [t for t in parse_cpulist(core["cpus"]) if t in mine and t in allowed_cpus]
            firsts.extend(threads[:1])
            siblings.extend(threads[1:])
        cpus[n["os_index"]] = sorted(firsts) + sorted(siblings)
    ok, skipped = [], []
    for c in dict.fromkeys(c for c, _ in pairs):
        left = sorted(set(parse_cpulist(by_node[c]["cpus"])) - set(cpus[c]))
        if cpus[c] and left:
            skipped.append(f"CPUs {','.join(map(str, left))} of node {c}: outside this process's allowed CPUs (cgroup cpuset or "
                           f"taskset); node {c} measured on {','.join(map(str, sorted(cpus[c])))}")
    for c, m in pairs:
        if not parse_cpulist(by_node[c]["cpus"]):
            skipped.append(f"{c}:{m}: node {c} has no CPUs")
        elif not cpus[c]:
            skipped.append(f"{c}:{m}: none of node {c}'s CPUs ({by_node[c]['cpus']}) is in this process's allowed CPUs "
                           f"(cgroup cpuset or taskset)")
        elif not by_node[m]["memory_bytes"]:
            skipped.append(f"{c}:{m}: node {m} has no memory")
        elif m not in allowed_mems:
            skipped.append(f"{c}:{m}: node {m} is not in this process's allowed memory nodes (cgroup cpuset.mems)")
        else:
            ok.append((c, m))
    return ok, cpus, skipped


def make_plan(facts: dict[str, Any], pairs_option: str, quick: bool, allowed_cpus: set[int], allowed_mems: set[int]) -> Plan:
    """The plan, or a one-line refusal when no pair can be bound."""
    nodes = facts["nodes"]
    wanted = choose_pairs(parse_pairs(pairs_option, [n["os_index"] for n in nodes]), nodes)
    pairs, cpus, skipped = bindable(facts, wanted, allowed_cpus, allowed_mems)
    if not pairs:
        raise UsageError("calibrate: cannot bind any (CPU node, memory node) pair, nothing measured; skipped " + "; ".join(skipped))
    llc = max((c["size_bytes"] for c in facts.get("caches", []) if c["level"] >= 2), default=32 * MIB)
    llc_mib = max(1, llc // MIB)
    free = min((n["memory_free_bytes"] or n["memory_bytes"]) for n in nodes if n["os_index"] in {m for _, m in pairs})
    cap_mib = max(64, free // MIB // 4)  # a quarter of the free memory: the run must not push the host into swap
    if quick:
        chase_mib, loads, reps, runs, stream_bytes = min(256, cap_mib), 1 << 20, 3, 3, 96 * MIB
    else:
        chase_mib = min(max(2 * llc_mib, 256), 4096, cap_mib)
        loads, reps, runs = chase_mib * MIB // 64, 5, 5
        stream_bytes = min(max(4 * llc, 384 * MIB), cap_mib * MIB)
    curve_nodes = [m for c, m in pairs if c == m]
    return Plan(pairs=pairs, cpus=cpus, curve_nodes=curve_nodes, chase_mib=chase_mib, chase_loads=loads, chase_reps=reps,
                pages=("4k", "2m"), stream_n=stream_bytes // 24, stream_inner_reps=3 if quick else 5, stream_runs=runs,
                modes=("read", "triad", "write"), llc_mib=llc_mib, quick=quick, skipped=skipped,
                window_reps=3 if quick else 5)
