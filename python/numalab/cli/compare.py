"""``numalab compare``: one workload under several placements, speedups against the first and
the access maps side by side."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import typer

from numalab import machine as machines
from numalab.cli import options as o
from numalab.cli.tables import access_map_lines
from numalab.exceptions import UsageError
from numalab.placement import parse_config
from numalab.results.metrics import speedup
from numalab.results.result import Result
from numalab.runner import sim as runner


def _split_configs(text: str) -> list[str]:
    """Configs are comma separated, but node lists contain commas too (interleave=0,1):
    a piece that does not start a new config item is glued to the previous one."""
    out: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        head = piece.split(":")[0].split("=")[0].strip()
        starts_item = head and not head[0].isdigit() and head[0] not in "!+"
        if out and not starts_item:
            out[-1] += "," + piece
        elif piece:
            out.append(piece)
    return out


def compare(
    ctx: typer.Context,
    machine: str = o.MACHINE,
    workload: str = o.WORKLOAD,
    configs: str = typer.Option(..., "--configs", "-c", help="Comma-separated placements, e.g. default,interleave=all,membind=0,init=serial."),
    seed: int = o.SEED,
    sample_rate: float = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    balancing: str = o.BALANCING,
    scan_delay_ms: Optional[int] = o.SCAN_DELAY,
    scan_period_min_ms: Optional[int] = o.SCAN_MIN,
    scan_period_max_ms: Optional[int] = o.SCAN_MAX,
    scan_size_mb: Optional[int] = o.SCAN_SIZE,
    jobs: int = typer.Option(0, "--jobs", "-j", help="Simulations at once (default: one per CPU)."),
    as_json: bool = o.JSON,
) -> None:
    """Simulate WORKLOAD on MACHINE under several placements and compare them with the first.

    Each config joins items with ':' (interleave=all:cpunodebind=0-3); items that are not
    placement options set workload parameters (init=serial). Settings items: balancing (or
    balancing=off), scan-delay-ms=, scan-period-min-ms=, scan-period-max-ms=, scan-size-mb=,
    kernel=3.13|6.13, thp=always|never. Workload parameters shared by all configs follow as
    --name value.
    """
    m = machines.load(machine)
    base_params = o.workload_params(ctx.args)
    base_settings = o.settings(seed, sample_rate, kernel, thp, balancing, scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb)
    labels = _split_configs(configs)
    if not labels:
        raise UsageError("--configs is empty")
    runs = []
    for label in labels:
        opts, params, extra = parse_config(label)
        s = runner.apply_items(base_settings, extra, f"config '{label}'")
        runs.append((label, opts, {**base_params, **params}, s))
    # Check every config before running any, so a typo fails fast.
    for label, opts, params, s in runs:
        s.check()
        from numalab.placement import resolve as resolve_placement

        resolve_placement(opts, m)
    workers = jobs or os.cpu_count() or 1
    done = 0

    def one(r):
        nonlocal done
        res = runner.run(m, workload, r[2], r[1], r[3])
        done += 1
        if sys.stderr.isatty() and not as_json:
            print(f"\r  {done}/{len(runs)} configs simulated", end="", file=sys.stderr, flush=True)
        return res

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results: list[Result] = list(pool.map(one, runs))
    if sys.stderr.isatty() and not as_json:
        print(file=sys.stderr)
    if as_json:
        docs = [dict(r.doc, label=label) for (label, *_), r in zip(runs, results)]
        typer.echo(json.dumps(docs, indent=2, sort_keys=True))
        return
    typer.echo(_table(labels, results))
    if any(r.doc["placement"]["balancing"]["enabled"] for r in results):
        typer.echo("")
        typer.echo(_balancing_table(labels, results))
    typer.echo("")
    typer.echo(_maps_side_by_side(labels, results))


def _table(labels: list[str], results: list[Result]) -> str:
    base = results[0].time_s
    width = max(len(lbl) for lbl in labels) + 2
    lines = [f"{'config':<{width}}{'time_s':>10}{'speedup':>9}{'local%':>8}{'max_conc%':>10}  status"]
    for label, r in zip(labels, results):
        met = r.metrics
        sp = speedup(base, r.time_s)
        loc = f"{met['local_pct']:.1f}" if met["local_pct"] is not None else "-"
        conc = f"{met['max_concentration_pct']:.1f}" if met["max_concentration_pct"] is not None else "-"
        lines.append(f"{label:<{width}}{r.time_s:>10.4f}{(f'{sp:.2f}' if sp else '-'):>9}{loc:>8}{conc:>10}  {r.status}")
    return "\n".join(lines)


def _balancing_table(labels: list[str], results: list[Result]) -> str:
    """NUMA-balancing counters of the configs that ran with it."""
    width = max(len(lbl) for lbl in labels) + 2
    cols = ("numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated")
    lines = ["automatic NUMA balancing (/proc/vmstat)"]
    lines.append(f"{'config':<{width}}" + "".join(f"{c:>24}" for c in cols) + f"{'locality%':>11}{'cost%':>8}")
    for label, r in zip(labels, results):
        if not r.doc["placement"]["balancing"]["enabled"]:
            continue
        vm, met = r.doc["vmstat"], r.metrics
        loc = f"{met['hint_fault_locality_pct']:.1f}" if met["hint_fault_locality_pct"] is not None else "-"
        cost = f"{met['balancing_cost_pct']:.2f}" if met["balancing_cost_pct"] is not None else "-"
        lines.append(f"{label:<{width}}" + "".join(f"{vm[c]:>24}" for c in cols) + f"{loc:>11}{cost:>8}")
    return "\n".join(lines)


def _maps_side_by_side(labels: list[str], results: list[Result]) -> str:
    blocks = [access_map_lines(r.doc, label) for label, r in zip(labels, results)]
    widths = [max(len(x) for x in b) for b in blocks]
    height = max(len(b) for b in blocks)
    lines = ["access maps (% of all DRAM accesses; rows: CPU node, columns: memory node)"]
    for i in range(height):
        lines.append("   ".join((b[i] if i < len(b) else "").ljust(w) for b, w in zip(blocks, widths)).rstrip())
    return "\n".join(lines)
