"""``numalab sensitivity``: does a comparison's conclusion survive the uncertainty of the
estimated numbers it rests on? (docs/studies.md §8)"""

from __future__ import annotations

import json
import os
from typing import Optional

import typer

from numalab.cli import options as o
from numalab.console.progress import Progress
from numalab.console.tables import render, table
from numalab.exceptions import UsageError
from numalab.study import sensitivity as sens


@o.with_balancing
@o.with_machine_memory
def sensitivity(
    ctx: typer.Context,
    balancing: o.Balancing,
    machine: str = o.MACHINE,
    workload: Optional[str] = typer.Option(None, "--workload", help="Workload name (numalab workloads) or a descriptor .toml file (or --graph)."),
    graph: Optional[str] = typer.Option(None, "--graph", "-g", help="A task graph instead of a workload (as numalab lb takes it): --configs names its balancers, the first the baseline; the estimates are the task-graph simulator's (docs/taskgraph.md §5)."),
    configs: Optional[str] = typer.Option(None, "--configs", "-c", help="Comma-separated configs as numalab compare takes them; each is compared with the first."),
    param: Optional[list[str]] = typer.Option(None, "--param", help="Vary only this estimate (id machine:path or workload:path, or the path alone); repeatable. Default: every estimate of the machine and the workload."),
    corners: bool = typer.Option(True, "--corners/--no-corners", help="Also run with every estimate at its low end, and at its high end, together."),
    list_only: bool = typer.Option(False, "--list", help="List the estimated numbers and their ranges; run nothing."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Simulations at once (default: one per CPU)."),
    seed: str = o.SEED,
    sample_rate: str = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    npb_version: str = o.NPB_VERSION,
    as_json: bool = o.JSON,
) -> None:
    """Vary every estimated number of MACHINE and WORKLOAD within its stated range and say, for
    each config against the first, whether the winner and the speedup change.

    The estimates and their ranges are the [estimates] tables of the preset and the workload
    descriptor (numalab sensitivity --list shows them). Each is set to its low and its high end,
    one at a time, then all low and all high together (--no-corners skips those); every run
    keeps the same seed. Workload parameters shared by all configs follow as --name value.
    """
    if jobs < 0:
        raise UsageError(f"--jobs must be >= 0, got {jobs}")
    if graph is not None:
        if workload is not None:
            raise UsageError("--graph and --workload: give one of them")
        from numalab.cli.lb import sensitivity_graph

        sensitivity_graph(ctx.args, graph, machine, configs, param, corners, list_only, seed, as_json)
        return
    if workload is None:
        raise UsageError("--workload is required (or --graph for a task graph)")
    base = o.run_spec(machine, workload, ctx.args, o.placement(), seed, sample_rate, kernel, thp, balancing)
    base = base.updated(npb_version=npb_version)
    if list_only:
        params = sens.parameters([base], param)
        _list(params, as_json)
        return
    labels = o.config_labels(configs or "", minimum=2)
    run_specs = [base.with_config(label) for label in labels]
    for s in run_specs:
        s.bind()  # every config checked by the engine before anything runs
    case = _case(workload, ctx.args)
    comparisons = [sens.Comparison(case, label, labels[0], run_specs[0], s) for label, s in zip(labels[1:], run_specs[1:])]
    params = sens.parameters(run_specs, param)
    if not params:
        raise UsageError(f"no estimated numbers to vary: neither {machine} nor {workload} has an [estimates] table")
    sens.check(comparisons, params)
    todo = sens.plan(comparisons, sens.variants(params, corners))
    with Progress("sensitivity", len(todo), unit="runs", quiet=as_json, plain=False) as progress:
        result = sens.analyse(comparisons, params, corners, progress.step, jobs=jobs or os.cpu_count() or 1)
    if as_json:
        typer.echo(json.dumps(dict(result.to_json(), machine=machine, workload=workload), indent=2, sort_keys=True))
        return
    typer.echo(render(outcome_table(result)))
    typer.echo("\n" + render(_param_table(result)))
    flips = [out for out in result.outcomes if out.flips]
    if flips:
        typer.echo(f"\n{len(flips)} of {len(result.outcomes)} conclusions flip within the stated ranges: "
                   "the estimates cannot decide them.")
    else:
        typer.echo(f"\nno conclusion flips within the stated ranges ({len(result.variants) - 1} variants).")


def _case(workload: str, extra: list[str]) -> str:
    params = o.workload_params(extra)
    return " ".join([workload] + [f"{k}={v}" for k, v in params.items()])


def outcome_table(result: sens.Sensitivity):
    rows = []
    for out in result.outcomes:
        lo_hi = out.range
        rows.append([
            f"{out.comparison.label} vs {out.comparison.baseline_label}",
            "-" if out.nominal is None else f"{out.nominal:.3f}",
            out.winner(),
            "-" if lo_hi is None else f"{lo_hi[0]:.3f} - {lo_hi[1]:.3f}",
            ("FLIPS: " + ", ".join(out.flips)) if out.flips else "holds",
        ])
    return table(["comparison", "speedup", "winner", "speedup range", "conclusion"], rows,
                 f"{result.outcomes[0].comparison.case}: speedup = time(baseline) / time(config) under each estimate's range")


def _param_table(result: sens.Sensitivity):
    """Per estimate: how far each comparison's speedup moves at its low and high end."""
    rows = []
    for p in result.parameters:
        moves = []
        for out in result.outcomes:
            lo, hi = out.speedups.get(f"{p.id}=low"), out.speedups.get(f"{p.id}=high")
            moves.append("-" if lo is None or hi is None else f"{lo:.3f} / {hi:.3f}")
        nominal = "1 (factor)" if p.factor else f"{p.value:g}"
        rows.append([p.id, nominal, f"{p.low:g} - {p.high:g}", *moves])
    heads = [f"{out.comparison.label} (low / high)" for out in result.outcomes]
    return table(["estimate", "as written", "range", *heads], rows, "speedup at each end of each estimate's range")


def _list(params: list[sens.Parameter], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps([{"id": p.id, "value": p.value, "low": p.low, "high": p.high, "factor": p.factor, "source": p.source}
                               for p in params], indent=2))
        return
    rows = [[p.id, "1 (factor)" if p.factor else f"{p.value:g}", f"{p.low:g} - {p.high:g}", p.source] for p in params]
    typer.echo(render(table(["estimate", "as written", "range", "source"], rows, "estimated numbers")))
