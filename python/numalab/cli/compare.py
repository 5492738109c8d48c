"""``numalab compare``: one workload under several configurations, speedups against the first
and the access maps side by side."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import typer
from rich.columns import Columns

from numalab.cli import options as o
from numalab.cli.summary import VMSTAT_KEYS, access_map_table, header
from numalab.console.progress import Progress
from numalab.console.tables import pct, render, table
from numalab.exceptions import UsageError
from numalab.results.metrics import speedup
from numalab.results.result import Result
from numalab.runner import sim as runner


@o.with_balancing
@o.with_machine_memory
def compare(
    ctx: typer.Context,
    balancing: o.Balancing,
    machine: str = o.MACHINE,
    workload: str = o.WORKLOAD,
    configs: str = typer.Option(..., "--configs", "-c", help="Comma-separated configs, e.g. default,interleave=all,membind=0,init=serial."),
    seed: str = o.SEED,
    sample_rate: str = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    npb_version: str = o.NPB_VERSION,
    jobs: int = typer.Option(0, "--jobs", "-j", help="Simulations at once (default: one per CPU)."),
    verbose: bool = o.VERBOSE,
    as_json: bool = o.JSON,
) -> None:
    """Simulate WORKLOAD on MACHINE under several configurations and compare them with the first.

    Each config joins items with ':' (interleave=all:cpunodebind=0-3), in the config language of
    `numalab sim` options: policy (default, localalloc, interleave=, membind=, preferred=,
    preferred-many=, weighted-interleave= with weights=0=5,1=2), cpunodebind=, physcpubind=,
    omp-proc-bind=, omp-places=, balancing (or balancing=off), scan-delay-ms=, scan-period-min-ms=,
    scan-period-max-ms=, scan-size-mb=, kernel=, thp=; other name=value items are workload
    parameters (init=serial). Workload parameters shared by all configs follow as --name value.
    """
    if jobs < 0:
        raise UsageError(f"--jobs must be >= 0, got {jobs}")
    base = o.run_spec(machine, workload, ctx.args, o.placement(), seed, sample_rate, kernel, thp, balancing)
    base = base.updated(npb_version=npb_version)
    labels = o.config_labels(configs)
    # Every config is checked by the engine before any runs, so a typo fails fast.
    bound = [base.with_config(label).bind() for label in labels]
    lock = threading.Lock()
    with Progress("simulating configs", len(bound), unit="configs", quiet=as_json, plain=False) as progress:
        def one(b):
            r = runner.run(b)
            with lock:
                progress.step()
            return r

        with ThreadPoolExecutor(max_workers=min(jobs or os.cpu_count() or 1, len(bound))) as pool:
            results: list[Result] = list(pool.map(one, bound))
    if as_json:
        docs = [dict(r.doc, label=label) for label, r in zip(labels, results)]
        typer.echo(json.dumps(docs, indent=2, sort_keys=True))
        return
    typer.echo(header(dict(results[0].doc, placement={"policy": f"{len(labels)} configs"}), None if verbose else dict(base.params)))
    typer.echo(render(_table(labels, results)))
    if any(r.doc["placement"]["balancing"]["enabled"] for r in results):
        typer.echo("\n" + render(_balancing_table(labels, results)))
    maps = [access_map_table(r.doc, label) for label, r in zip(labels, results)]
    typer.echo("\naccess maps (% of all DRAM accesses; rows: CPU node, columns: memory node)")
    typer.echo(render(Columns(maps, padding=(0, 4))))


def _table(labels: list[str], results: list[Result]):
    """Speedups compare the time the program reports, as a study does by default (its timed
    section; the whole run for a program without a timer, docs/workloads.md §1.2)."""
    base = results[0].reported_time_s
    rows = []
    for label, r in zip(labels, results):
        met = r.metrics
        sp = speedup(base, r.reported_time_s)
        rows.append([label, f"{r.time_s:.4f}", f"{r.reported_time_s:.4f}", "-" if sp is None else f"{sp:.2f}", pct(met["local_pct"]),
                     pct(met["max_concentration_pct"]), "-" if met.get("mapki") is None else f"{met['mapki']:.2f}", r.status])
    heads = ["config", "time_s", "reported_time_s", "speedup", "local_pct", "max_concentration_pct", "mapki", "status"]
    if any(r.doc.get("fairness") for r in results):  # a co-run: its fairness beside (docs/corun.md §4)
        keys = ("unfairness", "max_slowdown", "weighted_speedup", "mean_process_time_s")
        for row, r in zip(rows, results):
            f = r.doc.get("fairness") or {}
            row += ["-" if f.get(k) is None else f"{f[k]:.3f}" for k in keys]
        heads += list(keys)
    return table(heads, rows)


def _balancing_table(labels: list[str], results: list[Result]):
    """NUMA-balancing counters of the configs that ran with it."""
    cols = VMSTAT_KEYS[:1] + VMSTAT_KEYS[2:5]
    rows = []
    for label, r in zip(labels, results):
        if r.doc["placement"]["balancing"]["enabled"]:
            met = r.metrics
            rows.append([label, *(r.doc["vmstat"][c] for c in cols), pct(met["hint_fault_locality_pct"]), pct(met["balancing_cost_pct"], 2)])
    return table(["config", *cols, "hint_fault_locality_pct", "balancing_cost_pct"], rows, "automatic NUMA balancing (/proc/vmstat)")
