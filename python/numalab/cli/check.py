"""``numalab check --host``: predicted against measured time on this host, per case
(docs/calibrate.md §5)."""

from __future__ import annotations

import json
import os

import typer

from numalab.console.progress import Progress
from numalab.console.tables import render, table
from numalab.exceptions import UsageError


def check(
    host: bool = typer.Option(False, "--host", help="Run the kernels on this host and in the simulator, and compare their times."),
    machine: str = typer.Option("host", "--machine", help="The machine the simulator uses: a calibrated preset .toml (numalab calibrate), a preset name, or host (sysfs topology, estimated timing)."),
    repeat: int = typer.Option(3, "--repeat", min=1, max=100, help="Host runs per case; their median is the measured time (the simulation is deterministic)."),
    as_json: bool = typer.Option(False, "--json", help="Print the cases as JSON."),
) -> None:
    """Predicted vs measured time of a fixed set of kernel runs on this host."""
    if not host:
        raise UsageError("check: give --host (run the kernels here and in the simulator); `numalab vm check` checks the guest")
    from numalab.calibrate import hostcheck
    from numalab.machine.host import read_facts

    facts = read_facts()
    nodes = [n["os_index"] for n in facts["nodes"] if n["cpus"]]
    cpus = len(os.sched_getaffinity(0))
    cases = hostcheck.cases(nodes, cpus)
    with Progress("check", len(cases), unit="cases", quiet=as_json, eta=True) as progress:
        outcomes = hostcheck.check(machine, nodes, cpus, progress.step, repeat)
    if as_json:
        typer.echo(json.dumps({"machine": machine, "repeat": repeat, "loadavg": hostcheck.loadavg(), "cases": [o.as_json() for o in outcomes]}, indent=1, sort_keys=True))
        return
    typer.echo(render(table(hostcheck.COLUMNS, hostcheck.rows(outcomes),
                            f"this host ({repeat} run(s) per case, median), simulated on {machine}: the kernels' timed loop; "
                            "error = predicted - measured, over measured; CPU = the loop's CPU time per thread; share = CPU / wall")))
