"""``numalab advise``: which regions' placement costs most and what to change, ranked by the
speedup each remedy buys in simulation, with its range under the estimates (docs/mapping.md §6)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer

from numalab.cli import options as o
from numalab.console.progress import Progress
from numalab.console.tables import render, table
from numalab.exceptions import UsageError
from numalab.results.frame import writable_file
from numalab.results.outfile import check_output, write_text_atomic
from numalab.study import advise as adv


@o.with_placement
@o.with_balancing
@o.with_machine_memory
def advise(
    ctx: typer.Context,
    placement: o.Placement,
    balancing: o.Balancing,
    machine: str = o.MACHINE,
    workload: str = o.WORKLOAD,
    corners: bool = typer.Option(True, "--corners/--no-corners", help="Also simulate the three best remedies with all estimated numbers at their low ends and at their high ends (the speedup range); --no-corners gives the nominal speedups only."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Simulations at once (default: one per CPU)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the advice as a Markdown report to this file."),
    seed: str = o.SEED,
    sample_rate: str = o.SAMPLE_RATE,
    kernel: str = o.KERNEL,
    thp: Optional[str] = o.THP,
    npb_version: str = o.NPB_VERSION,
    as_json: bool = o.JSON,
) -> None:
    """Name the regions of WORKLOAD whose placement costs most on MACHINE, simulate each remedy
    (parallel first-touch initialisation, interleaving one region, moving a malloc out of the
    master thread, interleaving everything, binding threads, NUMA balancing on or tuned, THP on or
    off) and rank them by predicted speedup over the placement given.

    Workload parameters follow as --name value (e.g. --class C --threads 16). The speedup range of
    the three best remedies is their speedup with every estimated number of the machine and the
    workload ([estimates], numalab sensitivity --list) at its low end and at its high end.
    """
    if jobs < 0:
        raise UsageError(f"--jobs must be >= 0, got {jobs}")
    spec = o.run_spec(machine, workload, ctx.args, placement, seed, sample_rate, kernel, thp, balancing)
    spec = spec.updated(npb_version=npb_version)
    spec.bind()  # the engine checks the run before anything is simulated
    if output is not None:  # a bad path fails now, not after the simulations
        writable_file(output, "--output", "advice.md")
        check_output(output, "--output")
    with Progress("advise", 0, unit="runs", quiet=as_json, plain=False) as progress:
        result = adv.advise(spec, corners=corners, jobs=jobs or os.cpu_count() or 1, advance=progress.step,
                            on_plan=progress.add)
    if output is not None:
        write_text_atomic(output, advice_markdown(result), "--output")
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, sort_keys=True))
        return
    typer.echo(advice_text(result))


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def _speed(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _range(r: adv.Remedy) -> str:
    return "-" if r.low is None or r.high is None else f"{r.low:.3f} - {r.high:.3f}"


def _tables(a: adv.Advice) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    rh = ["region", "pages", "accesses", "exclusivity", "local under first touch", "remote accesses (of all)"]
    rr = [[r["region"] if r["pid"] == 1 else f"{r['region']} (pid {r['pid']})", str(r["pages"]), f"{r['accesses']:.4g}",
           _pct(r["exclusivity"]), _pct(r["first_touch_local"]), _pct(r["remote_share"])] for r in a.regions]
    mh = ["rank", "remedy", "speedup", "speedup range", "time s"]
    mr = [[str(i), r.name, _speed(r.speedup), _range(r), "-" if r.time_s is None else f"{r.time_s:.4g}"]
          for i, r in enumerate(a.remedies, 1)]
    return rh, rr, mh, mr


def advice_text(a: adv.Advice) -> str:
    rh, rr, mh, mr = _tables(a)
    head = f"{a.workload} on {a.machine}: {a.base_time_s:.4g} s as given"
    regions = table(rh, rr, title="Regions by accesses away from their node under first touch")
    ranked = table(mh, mr, title="Remedies by predicted speedup (time as given / time with the remedy)")
    tail = "" if len(a.variants) > 1 else "\n(no estimated numbers to vary: the ranges are the nominal speedups)"
    return head + "\n\n" + render(regions) + _verdict(a) + "\n\n" + render(ranked) + tail


def _verdict(a: adv.Advice) -> str:
    """One line when first touch already places every region well (no region-level remedy)."""
    if any(r["remote_share"] > adv.COSTLY for r in a.regions):
        return ""
    return (f"\nNo region has more than {100 * adv.COSTLY:g}% of all accesses remote under first touch: "
            "the data is placed well; only whole-run remedies are tried.")


def advice_markdown(a: adv.Advice) -> str:
    rh, rr, mh, mr = _tables(a)

    def md(h: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(lines)

    return (f"# Advice: {a.workload} on {a.machine}\n\nSimulated time as given: {a.base_time_s:.4g} s.\n\n"
            f"## Regions by accesses away from their node under first touch\n\n{md(rh, rr)}\n{_verdict(a)}\n\n"
            f"## Remedies by predicted speedup\n\n{md(mh, mr)}\n\n"
            "Speedup = time as given / time with the remedy; the range has every estimated number at its low "
            "and at its high end (docs/mapping.md §6).\n")
