"""``numalab sim``: simulate one workload under one placement."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from numalab.cli import options as o
from numalab.cli.summary import summary
from numalab.console.progress import working
from numalab.runner import sim as runner

WORKLOAD = typer.Option(None, "--workload", help="Workload name (numalab workloads) or a descriptor .toml file (or --corun).")
CORUN = typer.Option(None, "--corun", help="Run several processes together instead of --workload: NAME[*COPIES][@START_MS][(CONFIG)], comma separated, e.g. 'stream*8' or 'stream*2,leslie3d*2,milc*2,gemsfdtd*2' (docs/corun.md). Prints each process's slowdown against its time alone.")
PIN_COPIES = typer.Option(False, "--pin-copies", help="With --corun: bind each process to its own cores, processes taking the nodes in turn (with --localalloc: study S4's hand-tuned placement).")

MAPPING_METRICS = typer.Option(False, "--mapping-metrics", help="Also analyse the data mapping (docs/mapping.md): page exclusivity and its histogram, exclusivity at 2 MiB and 1 GiB, the thread communication matrix, and numalize's mapping scores with each mapping's simulated time.")


@o.with_placement
@o.with_balancing
@o.with_machine_memory
def sim(
    ctx: typer.Context,
    placement: o.Placement,
    balancing: o.Balancing,
    machine: str = o.MACHINE,
    workload: Optional[str] = WORKLOAD,
    corun: Optional[str] = CORUN,
    pin_copies: bool = PIN_COPIES,
    seed: str = o.SEED,
    sample_rate: str = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    explain_balancing: bool = o.EXPLAIN_NUMA_BALANCING,
    explain_sched: bool = o.EXPLAIN_SCHED,
    explain_thp: bool = o.EXPLAIN_THP,
    explain_alloc: bool = o.EXPLAIN_ALLOC,
    noise: str = o.NOISE,
    omp_wait_policy: str = o.WAIT_POLICY,
    npb_version: str = o.NPB_VERSION,
    latbal_threshold_ns: str = o.LATBAL_THRESHOLD,
    latbal_window_ms: str = o.LATBAL_WINDOW,
    latbal_sample_us: str = o.LATBAL_SAMPLE,
    mapping_metrics: bool = MAPPING_METRICS,
    verbose: bool = o.VERBOSE,
    as_json: bool = o.JSON,
) -> None:
    """Simulate WORKLOAD on MACHINE under a numactl-style placement.

    Workload parameters follow as --name value (e.g. --class C --threads 64, --n 20000 --init serial);
    `numalab workloads NAME` lists them.
    """
    bal = replace(balancing, explain=explain_balancing)
    workload = corun_workload(workload, corun, pin_copies, ctx.args)
    spec = o.run_spec(machine, workload, ctx.args, placement, seed, sample_rate, kernel, thp, bal)
    if corun is not None:
        spec = spec.updated(corun=corun, pin_copies=pin_copies)
    spec = spec.updated(noise=noise, explain_sched=explain_sched, omp_wait_policy=omp_wait_policy, npb_version=npb_version,
                        latbal_threshold_ns=latbal_threshold_ns, latbal_window_ms=latbal_window_ms, latbal_sample_us=latbal_sample_us)
    bound = spec.bind()
    with working(f"simulating {spec.workload} on {spec.machine}", quiet=as_json):
        result = runner.run(bound)
    if mapping_metrics and result.status == "ok":
        from numalab.runner.mapping import mapping_doc

        with working("analysing the data mapping", quiet=as_json):
            result.doc["mapping"] = mapping_doc(bound, result.doc)
    if as_json:
        typer.echo(result.to_json())
    else:
        typer.echo(summary(result.doc, None if verbose else dict(spec.params)))
        if explain_thp:
            from numalab.cli.thp_explain import thp_text

            typer.echo("\n" + thp_text(result.doc, bound.workload, spec.thp))
        if explain_alloc:
            from numalab.cli.alloc_explain import alloc_text

            typer.echo("\n" + alloc_text(result.doc, bound.workload))
        if "mapping" in result.doc:
            from numalab.cli.mapping_text import mapping_text

            typer.echo("\n" + mapping_text(result.doc["mapping"]))
    if result.status != "ok":
        raise typer.Exit(1)


def corun_workload(workload: Optional[str], corun: Optional[str], pin_copies: bool, extra: list[str]) -> str:
    """The workload name a run spec is written with: --workload, or "corun" for a co-run."""
    from numalab.exceptions import UsageError

    if (workload is None) == (corun is None):
        raise UsageError("give --workload NAME or --corun GROUPS (e.g. --corun 'stream*8'), not both" if workload else "missing option --workload (or --corun GROUPS, e.g. --corun 'stream*8')")
    if corun is not None and extra:
        raise UsageError(f"--corun: workload parameters go inside a group, e.g. stream*2(threads=4), not as {extra[0]}")
    if pin_copies and corun is None:
        raise UsageError("--pin-copies needs --corun")
    return workload or "corun"
