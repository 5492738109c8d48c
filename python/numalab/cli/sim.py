"""``numalab sim``: simulate one workload under one placement."""

from __future__ import annotations

from typing import Optional

import typer

from numalab import machine as machines
from numalab.cli import options as o
from numalab.cli.tables import summary
from numalab.runner import sim as runner


def sim(
    ctx: typer.Context,
    machine: str = o.MACHINE,
    workload: str = o.WORKLOAD,
    interleave: Optional[str] = o.INTERLEAVE,
    weighted_interleave: Optional[str] = o.WEIGHTED,
    weights: Optional[str] = o.WEIGHTS,
    membind: Optional[str] = o.MEMBIND,
    preferred: Optional[str] = o.PREFERRED,
    preferred_many: Optional[str] = o.PREFERRED_MANY,
    localalloc: bool = o.LOCALALLOC,
    cpunodebind: Optional[str] = o.CPUNODEBIND,
    physcpubind: Optional[str] = o.PHYSCPUBIND,
    omp_proc_bind: str = o.PROC_BIND,
    omp_places: str = o.PLACES,
    seed: int = o.SEED,
    sample_rate: float = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    balancing: str = o.BALANCING,
    scan_delay_ms: Optional[int] = o.SCAN_DELAY,
    scan_period_min_ms: Optional[int] = o.SCAN_MIN,
    scan_period_max_ms: Optional[int] = o.SCAN_MAX,
    scan_size_mb: Optional[int] = o.SCAN_SIZE,
    explain_balancing: bool = o.EXPLAIN,
    as_json: bool = o.JSON,
) -> None:
    """Simulate WORKLOAD on MACHINE under a numactl-style placement.

    Workload parameters follow as --name value (e.g. --class C --threads 64, --n 20000 --init serial);
    `numalab workloads NAME` lists them.
    """
    m = machines.load(machine)
    place = o.placement(interleave, weighted_interleave, weights, membind, preferred, preferred_many, localalloc, cpunodebind, physcpubind, omp_proc_bind, omp_places)
    settings = o.settings(
        seed, sample_rate, kernel, thp, balancing, scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb, explain_balancing
    )
    result = runner.run(m, workload, o.workload_params(ctx.args), place, settings)
    if as_json:
        typer.echo(result.to_json())
    else:
        typer.echo(summary(result.doc))
    if result.status != "ok":
        raise typer.Exit(1)
