"""numalab-agent's JSON Lines -> a ``numalab.result/1`` document with ``source: host``.

The agent (``crates/numalab-agent``) writes one ``start`` record, a ``sample`` record every
``--interval-ms`` and a ``summary`` record when the command ends. Three more facts come from
the agent's other subcommands, read around the run: the host's topology (``numalab-agent topo``),
the NUMA balancing knobs (``numalab-agent knobs get``) and the kernel release.

What a host run can and cannot say, compared with a simulated one (docs/architecture.md §4):

* pages per node: ``/proc/PID/numa_maps`` as the agent read it at the command's exit (it traces
  the command and stops it there, before its memory is torn down: ``pages.basis: exit_snapshot``),
  else at its last sample (``sample``), in base pages (bytes / page size); where ptrace is refused
  a command that ends before the first sample has none (``none``). Each thread's statistics are
  likewise the last read, at its exit (``snapshot: exit``) or at a sample (``sample``);
* numastat and vmstat: the kernel's counters, as deltas over the run (system-wide: other
  processes count too); the agent keeps the vmstat counters of numalab's registry
  (:mod:`numalab.counters`: ``numa_*``, ``pgmigrate_*``, ``pgpromote_*``, ``pgdemote_*``, ``thp_*``);
* the access map: there is no per-access count on a real host. With automatic NUMA balancing on,
  the kernel keeps per-task NUMA hinting-fault statistics by memory node
  (``show_numa_stats()``, kernel/sched/fair.c, printed in ``/proc/PID/task/TID/sched``); each
  thread's ``task_private + task_shared`` faults at its last sample form a row of the map on the
  node the thread last ran on (``basis: hint_faults``). They are the kernel's decaying averages
  (halved every scan period, ``task_numa_placement()``), so the map shows where recent faults
  went. With balancing off the kernel records none, and the document has no access map;
* no seed, no engine figures, no balancing cost (the kernel does not report its time).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Iterable

from numalab import counters
from numalab.exceptions import NumalabError
from numalab.machine.bitmaps import parse_cpulist
from numalab.results.metrics import access_metrics, balancing_metrics
from numalab.results.result import SCHEMA
from numalab.spec.balancing import SCAN_KNOBS

#: The counters of automatic NUMA balancing a timeline point carries (mm/vmstat.c names).
BALANCING_COUNTERS = counters.names("vmstat", "balancing")
#: The scanner knobs a document reports: the engine's table (``numalab_model::knobs``, through
#: ``_core``), whose names ``numalab-agent knobs get`` gives too.
SCANNER_KNOBS = SCAN_KNOBS
DEFAULT_PAGE_BYTES = 4096


class RecordError(NumalabError):
    """The agent's records cannot be read (a truncated or foreign file): exit code 1."""


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file the agent wrote (``--output``/``--record``)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise RecordError(f"{p}: cannot read the agent's records ({e.strerror or e})") from None
    return parse_records(text, str(p))


def parse_records(text: str, where: str = "records") -> list[dict[str, Any]]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{where}:{i}: not a JSON line ({e.msg}); was the agent stopped while writing?") from None
        if not isinstance(rec, dict) or "type" not in rec:
            raise RecordError(f"{where}:{i}: not a numalab-agent record (no 'type')")
        out.append(rec)
    return out


def balancing_mode(knobs: dict[str, Any] | None) -> int:
    """``kernel.numa_balancing`` from ``knobs get`` output (0 when the kernel has no such knob)."""
    return int(knob_values(knobs).get("numa_balancing") or 0)


def knob_values(knobs: dict[str, Any] | None) -> dict[str, int]:
    """``numalab-agent knobs get`` output -> {name: value}."""
    return {k["name"]: k["value"] for k in (knobs or {}).get("knobs", [])}


def document(
    records: Iterable[dict[str, Any]],
    topo: dict[str, Any],
    knobs: dict[str, Any] | None,
    kernel: str,
    omp_proc_bind: str = "false",
    omp_places: str | None = None,
) -> dict[str, Any]:
    """The result document of one agent run.

    ``topo``: ``numalab-agent topo`` output; ``knobs``: ``numalab-agent knobs get`` output read
    before the run (None when unknown: balancing is then taken as off); ``kernel``: the kernel
    release (``uname -r``); ``omp_*``: the OpenMP binding the command was given through its
    environment (the agent does not see it)."""
    recs = list(records)
    start = _one(recs, "start")
    summary = _one(recs, "summary")
    samples = [r for r in recs if r["type"] == "sample"]
    nodes = [n["os_index"] for n in topo["nodes"]]
    mode = balancing_mode(knobs)
    on = mode != 0
    page = _page_bytes(samples)
    exit_code, signal = summary.get("exit_code"), summary.get("signal")
    error = None if exit_code == 0 else (f"killed by {signal}" if signal else f"exit code {exit_code}")
    argv = list(summary.get("command") or start.get("command") or [])
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "source": "host",
        "status": "ok" if exit_code == 0 else "failed",
        "error": error,
        "machine": {
            "name": "host",
            "nodes": len(nodes),
            "cpus": sum(len(parse_cpulist(n["cpus"])) for n in topo["nodes"]),
            "distances": [n.get("distances") for n in topo["nodes"]],
        },
        "workload": {"name": shlex.join(argv), "params": {}, "command": argv},
        "placement": _placement(start, on, mode, knobs, kernel, omp_proc_bind, omp_places),
        "kernel": kernel,
        "seed": None,
        "time_s": summary["wall_s"],
        # The whole run until the program's own output says otherwise (results/reported.py).
        "reported_time_s": summary["wall_s"],
        "reported_time_source": "whole-run",
        "processes": [{"pid": summary.get("pid"), "name": Path(argv[0]).name if argv else "", "time_s": summary["wall_s"],
                       "reported_time_s": summary["wall_s"], "alone_time_s": None, "exit_code": exit_code, "signal": signal}],
        "threads": _threads(summary, samples, topo),
        "pages": {
            "nodes": nodes,
            "page_size_bytes": page,
            "per_node": [_by_node(summary.get("bytes_per_node"), n) // page for n in nodes],
            "bytes_per_node": [_by_node(summary.get("bytes_per_node"), n) for n in nodes],
            "t_s": summary.get("pages_t_s"),
            "basis": summary.get("pages_basis") or ("sample" if summary.get("pages_t_s") is not None else "none"),
        },
        "numastat": {f"node{n}": dict((summary.get("numastat_delta") or {}).get(str(n), {})) for n in nodes},
        "vmstat": dict(sorted((summary.get("vmstat_delta") or {}).items())),
        "timeline": [_point(s, nodes, page, on) for s in samples],
        "agent": {
            "version": start.get("agent"),
            "pid": summary.get("pid"),
            "interval_ms": start.get("interval_ms"),
            "maps_budget_pct": start.get("maps_budget_pct"),
            "samples": summary.get("samples", len(samples)),
            "maps_reads": summary.get("maps_reads"),
            "maps_cost_s": summary.get("maps_cost_s"),
            "cpus_allowed": samples[-1].get("cpus_allowed") if samples else None,
            "mems_allowed": samples[-1].get("mems_allowed") if samples else None,
            "started_unix_s": start.get("time_unix_s"),
            "exit_code": exit_code,
            "signal": signal,
            "forwarded_signals": summary.get("forwarded_signals") or [],
            "killed_after_grace": bool(summary.get("killed_after_grace")),
            "exit_snapshot": bool(start.get("exit_snapshot")),
            "rusage": summary.get("rusage"),
            "errors": summary.get("errors") or [],
        },
    }
    if on:
        doc["access_map"] = {
            "basis": "hint_faults",
            "unit": "numa_faults",
            "rows": "cpu_node",
            "cols": "memory_node",
            "nodes": nodes,
            "matrix": fault_matrix(summary.get("threads") or [], nodes),
        }
    doc["metrics"] = metrics(doc)
    return doc


def metrics(doc: dict[str, Any]) -> dict[str, Any]:
    """``results/metrics.py``'s metrics for a host document: the access metrics from the map when
    there is one, hint-fault locality from vmstat; no balancing cost (the kernel does not report
    the time it spends balancing)."""
    am = doc.get("access_map")
    out = access_metrics(am["matrix"], am["nodes"]) if am else access_metrics([], [])
    out.update(balancing_metrics(doc))
    out["balancing_cost_pct"] = None
    return out


def fault_matrix(threads: list[dict[str, Any]], nodes: list[int]) -> list[list[float]]:
    """Rows: the node each thread last ran on; columns: the memory node of its hinting faults."""
    index: dict[Any, int] = {n: i for i, n in enumerate(nodes)}
    m = [[0.0] * len(nodes) for _ in nodes]
    for t in threads:
        row = index.get(t.get("current_node"))
        if row is None:
            continue  # a thread without NUMA statistics (kernel without CONFIG_NUMA_BALANCING)
        for f in t.get("faults") or []:
            col = index.get(f.get("node"))
            if col is not None:
                m[row][col] += f.get("task_private", 0) + f.get("task_shared", 0)
    return m


def _one(recs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in recs if r["type"] == kind]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise RecordError(f"the agent's records have {what} '{kind}' record{'s' if found else ''} (expected one: "
                          "start, samples, summary); was the agent stopped before the command ended?")
    return found[0]


def _placement(start: dict[str, Any], on: bool, mode: int, knobs: dict[str, Any] | None, kernel: str,
               omp_proc_bind: str, omp_places: str | None) -> dict[str, Any]:
    p = start.get("placement") or {}
    values = knob_values(knobs)
    balancing: dict[str, Any] = {"enabled": on, "numa_balancing": mode, "knobs": dict(sorted(values.items()))}
    if on:
        balancing.update({"kernel": kernel, **{k: values.get(k) for k in SCANNER_KNOBS}})
    return {
        "policy": p.get("policy") or "default",
        "nodes": p.get("nodes"),
        "weights": {},
        "cpubind": p.get("cpus"),
        "omp_proc_bind": omp_proc_bind,
        "omp_places": omp_places if omp_proc_bind != "false" else None,
        "numactl": p.get("numactl") or [],
        "numa_maps_policy": p.get("numa_maps_policy"),
        # numactl -b (MPOL_F_NUMA_BALANCING), under the key a simulated document uses; only when set.
        **({"membind_balancing": True} if "balancing" in (p.get("flags") or []) else {}),
        "balancing": balancing,
    }


#: At most this many ``cpu_history`` entries per thread, as in a simulated document.
CPU_HISTORY_MAX = 1000


def cpu_nodes(topo: dict[str, Any]) -> dict[int, int]:
    """CPU OS index -> its node, from ``numalab-agent topo``."""
    return {c: n["os_index"] for n in topo["nodes"] for c in parse_cpulist(n["cpus"])}


def _threads(summary: dict[str, Any], samples: list[dict[str, Any]], topo: dict[str, Any]) -> list[dict[str, Any]]:
    """Per thread, what a simulated document has (docs/scheduler.md §7), from the samples: the CPU of
    ``/proc/PID/task/TID/stat`` (field 39, ``processor``) at each sample gives ``cpu_history``
    (first sample, then every sample at which it changed), ``first_node`` (the node at the thread's
    first sample) and ``away_from_first_node_pct`` (share of its samples on another node: sampled
    every ``--interval-ms``, so moves shorter than that can be missed); ``nr_migrations`` is the
    kernel's count from ``/proc/PID/task/TID/sched`` (every change of CPU, node or not)."""
    node_of = cpu_nodes(topo)
    seen: dict[int, list[tuple[float, int]]] = {}
    for s in samples:
        for t in s.get("threads") or []:
            if t.get("processor") is not None:
                seen.setdefault(t["tid"], []).append((s["t_s"], int(t["processor"])))
    return [_thread(t, summary.get("pid"), seen.get(t["tid"], []), node_of) for t in summary.get("threads") or []]


def _thread(t: dict[str, Any], pid: Any, cpus: list[tuple[float, int]], node_of: dict[int, int]) -> dict[str, Any]:
    sched_keys = ("current_node", "faults", "numa_group_id", "numa_pages_migrated", "numa_preferred_nid",
                  "numa_scan_seq", "total_numa_faults")
    cpu = t.get("processor")
    out: dict[str, Any] = {
        "tid": t["tid"],
        "pid": pid,
        "comm": t.get("comm"),
        "cpu": cpu,
        "node": node_of.get(cpu, t.get("current_node")) if cpu is not None else t.get("current_node"),
        "time_s": (t.get("sum_exec_runtime_ns") or 0) / 1e9,
        "nr_migrations": t.get("nr_migrations"),
        "voluntary_switches": t.get("nr_voluntary_switches"),
        "involuntary_switches": t.get("nr_involuntary_switches"),
        "snapshot": t.get("snapshot") or "sample",
    }
    if cpus:
        nodes = [node_of.get(c, -1) for _, c in cpus]
        history = [[round(ts, 6), c, n] for (ts, c), n, prev in zip(cpus, nodes, [None, *cpus]) if prev is None or prev[1] != c]
        out["first_node"] = nodes[0]
        out["away_from_first_node_pct"] = round(100.0 * sum(n != nodes[0] for n in nodes) / len(nodes), 3)
        out["cpu_history"] = history[:CPU_HISTORY_MAX]
    sched = {k: t[k] for k in sched_keys if k in t}
    if sched:
        out["sched"] = sched
    return out


def _point(s: dict[str, Any], nodes: list[int], page: int, on: bool) -> dict[str, Any]:
    delta = s.get("vmstat_delta") or {}
    point: dict[str, Any] = {
        "t_s": s["t_s"],
        "pages_per_node": [_by_node(s.get("bytes_per_node"), n) // page for n in nodes],
        "vmstat": {k: delta[k] for k in BALANCING_COUNTERS if k in delta},
    }
    if on:
        point["access_map"] = fault_matrix(s.get("threads") or [], nodes)
    if s.get("snapshot"):
        point["snapshot"] = s["snapshot"]  # "exit": read at the command's exit stop
    return point


def _page_bytes(samples: list[dict[str, Any]]) -> int:
    """The base page size: the smallest ``kernelpagesize_kb`` numa_maps showed (4 KiB if none)."""
    sizes = [m["kernelpagesize_kb"] for s in samples for m in s.get("mappings") or [] if m.get("kernelpagesize_kb")]
    return min(sizes) * 1024 if sizes else DEFAULT_PAGE_BYTES


def _by_node(m: dict[str, Any] | None, node: int) -> int:
    return int((m or {}).get(str(node), 0))

