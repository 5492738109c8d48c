"""A result document as text for the terminal: access maps with per-node totals, numastat,
balancing counters, run summaries. Nodes are written ``node0`` as numastat writes them."""

from __future__ import annotations

from typing import Any, Iterable

from numalab import counters
from numalab.console.tables import pct, render, table
from numalab.results.metrics import access_map_percent

MIB = 1 << 20


def access_map_table(doc: dict[str, Any], title: str | None = None) -> Any:
    """The access map in % of all DRAM accesses, rows CPU node, columns memory node, with row
    totals and a last row of per-memory-node totals (the concentration)."""
    am = doc["access_map"]
    nodes, pct = am["nodes"], access_map_percent(am["matrix"])
    rows = [[f"node{n}", *(f"{v:.1f}" for v in row), f"{sum(row):.1f}"] for n, row in zip(nodes, pct)]
    cols = [sum(r[j] for r in pct) for j in range(len(nodes))]
    rows.append(["total", *(f"{c:.1f}" for c in cols), f"{sum(cols):.1f}"])
    return table(["cpu \\ mem", *(f"node{n}" for n in nodes), "total"], rows, title)


def describe_placement(p: dict[str, Any]) -> str:
    s = p["policy"] + (f":{p['nodes']}" if p.get("nodes") else "")
    if p.get("weights"):
        s += " weights " + ",".join(f"{n}={w}" for n, w in p["weights"].items())
    if p.get("cpubind"):
        s += f", cpus {p['cpubind']}"
    if p.get("omp_proc_bind") and p["omp_proc_bind"] != "false":
        s += f", OMP_PROC_BIND={p['omp_proc_bind']} OMP_PLACES={p['omp_places']}"
    return s


def header(doc: dict[str, Any], given: Iterable[str] | None = None) -> str:
    """One line: workload with the parameters the user gave (all of them when ``given`` is None),
    machine, placement, kernel, seed."""
    w = doc["workload"]
    keys = list(w["params"]) if given is None else [k for k in w["params"] if k in set(given)]
    params = ", ".join(f"{k}={w['params'][k]}" for k in keys)
    return (f"{w['name']}" + (f" ({params})" if params else "") + f" on {doc['machine']['name']}: "
            f"{describe_placement(doc['placement'])}; kernel {doc['kernel']}" + ("" if doc["seed"] is None else f", seed {doc['seed']}"))


def summary(doc: dict[str, Any], given: Iterable[str] | None = None) -> str:
    met = doc["metrics"]
    lines = [
        header(doc, given),
        f"status: {doc['status']}" + (f" ({doc['error']})" if doc["error"] else "") + f"    time: {doc['time_s']:.4f} s" + _reported(doc),
    ]
    if met["local_pct"] is not None:
        lines.append(
            f"{'NUMA hinting faults' if (doc.get('access_map') or {}).get('basis') == 'hint_faults' else 'DRAM accesses'}: {met['local_pct']:.1f}% local, {met['remote_pct']:.1f}% remote; "
            f"busiest memory node serves {met['max_concentration_pct']:.1f}%"
        )
    if met.get("mapki") is not None:
        lines.append(f"memory accesses per kilo-instruction (MAPKI): {met['mapki']:.2f}")
    page = doc["pages"]["page_size_bytes"]
    # A host run has an access map only with NUMA balancing on (results/agent.py); its pages name their nodes.
    am = doc.get("access_map")
    nodes = am["nodes"] if am else doc["pages"]["nodes"]
    lines.append("memory per node (MiB): " + "  ".join(f"node{n} {p * page / MIB:.0f}" for n, p in zip(nodes, doc["pages"]["per_node"])))
    lines.append("")
    if doc.get("latency_balanced"):
        lines += [latbal_text(doc["latency_balanced"]), ""]
    if doc.get("fairness") is not None:
        from numalab.cli.corun_text import corun_text

        lines += [corun_text(doc), ""]
    if am is None:
        lines.append("access map: none (on a real host it comes from NUMA hinting faults, which the kernel records only with automatic NUMA balancing on)")
    else:
        what = "% of NUMA hinting faults" if am["basis"] == "hint_faults" else "% of all DRAM accesses"
        lines.append(render(access_map_table(doc, f"access map ({what}; rows: CPU node, columns: memory node)")))
    lines.append("")
    keys = counters.names("numastat")
    stat = doc["numastat"]
    lines.append(render(table(["", *stat], ([k, *(v[k] for v in stat.values())] for k in keys), "numastat (allocations)")))
    if doc["placement"].get("balancing", {}).get("enabled"):
        lines.append("")
        lines.append(balancing_text(doc))
    if doc.get("balancing_passes") is not None:
        lines.append("")
        lines.append(pass_text(doc["balancing_passes"]))
    if doc.get("sched_events") is not None:
        lines.append("")
        lines.append(sched_text(doc))
    return "\n".join(lines)


#: The balancing table's rows: NUMA balancing and migration counters, in the registry's order.
VMSTAT_KEYS = counters.names("vmstat", "balancing")


def balancing_text(doc: dict[str, Any]) -> str:
    """Automatic NUMA balancing: its knobs, the vmstat counters and the derived figures."""
    b, met = doc["placement"]["balancing"], doc["metrics"]
    head = [
        f"automatic NUMA balancing (kernel {b['kernel']}): scan delay {b['scan_delay_ms']} ms, period "
        f"{b['scan_period_min_ms']}-{b['scan_period_max_ms']} ms, size {b['scan_size_mb']} MB",
        f"hint-fault locality {pct(met['hint_fault_locality_pct'])}%; balancing work {pct(met['balancing_cost_pct'], 2)}% of thread time",
    ]
    vm = table(["/proc/vmstat", "count"], ((k, doc["vmstat"][k]) for k in VMSTAT_KEYS))
    return "\n".join(head) + "\n" + render(vm)


def sched_text(doc: dict[str, Any]) -> str:
    """The scheduler's decisions (``--explain-sched``), then per thread its migrations and time
    away from its first node (docs/scheduler.md §7)."""
    def cpu(c: int | None, n: int | None) -> str:
        return "-" if c is None else f"cpu{c} (node{n})"

    # One line per decision: the reason is long and must not squeeze a table's columns.
    lines = ["scheduler decisions (placement at creation, then every move)",
             f"{'t_ms':>10}  {'tid':>4}  {'path':<16} {'level':<8} {'from':<14}    {'to':<14} why"]
    lines += [f"{e['t_s'] * 1e3:>10.3f}  {e['tid']:>4}  {e['path']:<16} {e['level'] or '-':<8} "
              f"{cpu(e['from_cpu'], e['from_node']):<14} -> {cpu(e['to_cpu'], e['to_node']):<14} {e['why']}" for e in doc["sched_events"]]
    text = "\n".join(lines)
    per = [[t["tid"], t["first_node"], t["node"], t["nr_migrations"], f"{t['away_from_first_node_pct']:.1f}"] for t in doc["threads"]]
    text += "\n" + render(table(("tid", "first_node", "node", "nr_migrations", "away_pct"), per, "threads", first_left=False))
    return text + rq_text(doc)


def rq_text(doc: dict[str, Any]) -> str:
    """The threads' run queues per CPU, counted as ``vm check --moves`` counts a guest's
    (docs/scheduler.md §10.25), or "" without them."""
    from numalab.vm import sched_trace

    rq = sched_trace.sim_rq(doc)
    if rq is None:
        return ""
    cpus = sorted(int(c["cpu"]) for c in doc["sched_cpus"])
    rows = [[c, *(f"{x:.4f}" for x in t)] for c, t in zip(cpus, rq.time)]
    cols = ("cpu", "s at 0", "s at 1", "s at 2", "s at 3+")
    title = f"runnable threads per CPU over {rq.span_s:.4f} s (first fork to last exit)"
    return "\n" + render(table(cols, rows, title, first_left=False)) + "\n" + sched_trace.rq_line("run queues:", rq.figures())


def pass_text(passes: list[dict[str, Any]]) -> str:
    """One row per completed scan pass (``--explain-balancing``)."""
    cols = ("pid", "pass", "t_s", "period_ms", "windows", "pages_marked", "faults_local", "faults_remote", "pages_migrated", "task_moves")
    rows = [[f"{p[c]:.3f}" if c == "t_s" else p[c] for c in cols] for p in passes]
    text = render(table(cols, rows, "scan passes (faults and migrations during each pass)", first_left=False))
    if not passes:
        text += "\n  (no pass completed: the run ended before the scanner covered the address space)"
    return text


def _reported(doc: dict[str, Any]) -> str:
    """What the program reports beside the whole run (docs/workloads.md §1.2)."""
    source, t = doc.get("reported_time_source"), doc.get("reported_time_s")
    if source is None or t is None:
        return ""
    if source == "whole-run":
        return " (whole run; the program has no timer of its own, so it reports the same)"
    how = "its timed section" if source == "timer" else "printed by the program"
    return f" whole run, {t:.4f} s reported ({how})"


def latbal_text(lb: dict[str, Any]) -> str:
    """The latency-balanced policy's decisions (docs/allocation.md §12), one line each; on a host,
    the probe and the node applied (docs/measure.md §6)."""
    if "probe_ns" in lb:
        probe = ", ".join(f"node{n} {v:.0f} ns" for n, v in lb["probe_ns"].items())
        state = "balanced" if lb["balanced"] else "unbalanced"
        return f"latency-balanced: probe {probe} ({state}, threshold {lb['threshold_ns']:g} ns): {lb['applied']}, decided once at start"
    out = [f"latency-balanced (threshold {lb['threshold_ns']:g} ns, window {lb['window_ms']:g} ms, a sample every {lb['sample_us']:g} us):"]
    for d in lb["decisions"]:
        ind = " ".join(f"{v:.0f}" for v in d["indicator_ns"]) or "none yet"
        state = "balanced" if d["balanced"] else "unbalanced"
        out.append(f"  {d['t_s']:.3f} s  process {d['pid']}  {d['why']:5}  node{d['node']} (its CPU on node{d['cpu_node']}; {state}; indicator ns: {ind})")
    return "\n".join(out)
