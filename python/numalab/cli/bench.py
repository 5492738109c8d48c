"""``numalab bench --configs default,interleave=all --repeat N -- CMD``: time a real command under
several placements on this host, with repetitions, confidence intervals and speedups, into the
results store as a study (``numalab report`` renders it).

Runs go in interleaved order (every configuration once, then again, ...), so a drift of the
machine (another load, thermal throttling) spreads over all configurations instead of biasing
the last one. The interval is Student's t at 95% (``report/stats.py``); ``--rel-error X`` adds
rounds until every configuration's half-width is within X% of its mean (``--repeat`` is then
the minimum, as in "at least 20 runs, 10% relative error"), up to ``--max-repeat``.
"""

from __future__ import annotations

import json
import platform
import shlex
import signal
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, List, Optional

import typer

from numalab.cli import options as o
from numalab.cli.run import COMMAND, CONTEXT, INTERVAL, KILL_GRACE, check_command, check_grace, check_interval
from numalab.cli.study import RESULTS
from numalab.console.progress import clock
from numalab.console.tables import pct, render, table
from numalab.exceptions import USAGE_ERRORS, NumalabError, UsageError
from numalab.results.agent import balancing_mode
from numalab.results.text import document_text
from numalab.runner import host
from numalab.spec import Placement, RunSpec
from numalab.spec import config as cfg

__all__ = ["bench", "CONTEXT"]

#: With --rel-error: at most this many rounds, and no new round after this many seconds.
MAX_REPEAT = 100
MAX_TIME_S = 3600.0
MAX_TIME = typer.Option(MAX_TIME_S, "--max-time", help="With --rel-error: start no new round after this many seconds (default 3600).")

#: Config items that set up the simulator, not a real run.
SIM_ONLY = ("seed", "sample-rate", "kernel", "thp")


@dataclass
class Config:
    """One configuration of a bench: its label as written, what it runs under, its timings."""

    label: str
    placement: Placement
    balancing: dict[str, Any]  # the canonical balancing the run had ({"enabled": false}, knobs of a tune point)
    # Run before each of its runs (tune writes the knobs); returns the knob values the run must
    # read back before it starts.
    prepare: Callable[[], dict[str, int]] | None = None
    times: list[float] = field(default_factory=list)
    docs: list[dict[str, Any]] = field(default_factory=list)


def bench(
    command: List[str] = COMMAND,
    configs: str = typer.Option(..., "--configs", "-c", help="Comma-separated placements in the config language, e.g. default,interleave=all,membind=0,cpunodebind=0:localalloc; the first is the baseline."),
    repeat: int = typer.Option(5, "--repeat", help="Runs per configuration (the minimum, with --rel-error)."),
    warmup: bool = typer.Option(False, "--warmup", help="Run each configuration once, untimed, before the timed runs."),
    rel_error: Optional[float] = typer.Option(None, "--rel-error", help="Add rounds until each 95% interval is within X% of its mean (e.g. 10)."),
    max_repeat: int = typer.Option(MAX_REPEAT, "--max-repeat", help="With --rel-error: at most this many runs per configuration."),
    max_time: float = MAX_TIME,
    name: str = typer.Option("bench", "--name", help="Study name the runs are stored under (numalab report --study NAME)."),
    results: Path = RESULTS,
    show_output: bool = typer.Option(False, "--show-output", help="Let the command's standard output through (default: discarded; to stderr with --json)."),
    interval_ms: int = INTERVAL,
    kill_grace: float = KILL_GRACE,
    as_json: bool = o.JSON,
) -> None:
    """Time CMD under each placement of --configs, --repeat times each, in interleaved order.

    Prints mean, median and the 95% confidence interval (Student's t) of the time per
    configuration (the time the program reports: NPB's "Time in seconds", else its wall time) and
    the speedup time(first) / time(configuration); stores every run in the
    results store as the study --name, one label per configuration string. Settings that only
    the simulator has (seed, sample-rate, kernel, thp) and workload parameters are refused;
    balancing knobs are `numalab tune`'s.
    """
    labels = o.config_labels(configs)
    plan = [Config(label, host_placement(label), {}) for label in labels]
    check_repeats(repeat, rel_error, max_repeat, max_time)
    check_interval(interval_ms)
    check_grace(kill_grace)
    check_command(list(command))
    host.agent_path()
    enabled = balancing_mode(host.knobs()) != 0
    for c in plan:
        c.balancing = {"enabled": enabled}
    # SIGTERM between two runs ends the bench as one during a run does (143, the store closed).
    with host.terminable():
        outcome = measure(plan, list(command), name=name, results=results, repeat=repeat, warmup=warmup,
                          rel_error=rel_error, max_repeat=max_repeat, max_time_s=max_time, interval_ms=interval_ms,
                          output=command_output(show_output, as_json), kind="bench", kill_grace_s=kill_grace)
    report(plan, outcome, as_json)


def host_placement(text: str) -> Placement:
    """A config string -> the placement it asks for on this host, checked against the host;
    items a real run cannot honour are refused, each with why."""
    items = cfg.parse(text)
    where = f"config '{text}'"
    sim = [k for k in items.settings if k in SIM_ONLY]
    if sim:
        raise UsageError(f"{where}: {sim[0]} is a simulator setting; a real run has no {sim[0]} (remove it)")
    if items.settings:
        raise UsageError(f"{where}: {next(iter(items.settings))} changes the kernel's NUMA balancing knobs for the whole "
                         "system; use `numalab tune` for that (it restores them)")
    if items.params:
        k, v = next(iter(items.params.items()))
        raise UsageError(f"{where}: '{k.replace('_', '-')}={v}' is a workload parameter of the simulator; a real command "
                         "takes its parameters on its own command line")
    place = RunSpec.create("host", host.CHECK_WORKLOAD).with_config(text).placement
    try:
        host.check_placement(place)
    except USAGE_ERRORS as e:
        raise UsageError(f"{where}: {e.args[0] if e.args else e}") from None
    return place


def command_output(show: bool, as_json: bool) -> str:
    """Where the command's stdout goes (``host.run``): discarded unless --show-output, and then to
    stderr with --json, so stdout carries the JSON summary alone."""
    if not show:
        return "devnull"
    return "stderr" if as_json else "inherit"


def check_repeats(repeat: int, rel_error: Optional[float], max_repeat: int, max_time: float = MAX_TIME_S) -> None:
    if repeat < 1:
        raise UsageError(f"--repeat must be >= 1, got {repeat}")
    if not 0 < max_time <= 7 * 86400:  # also refuses nan
        raise UsageError(f"--max-time must be in (0, 604800] seconds, got {max_time}")
    if rel_error is not None:
        if not 0 < rel_error < 100:
            raise UsageError(f"--rel-error is a percentage in (0, 100), got {rel_error}")
        if repeat < 2:
            raise UsageError("--rel-error needs --repeat >= 2 (an interval takes two runs)")
        if max_repeat < repeat:
            raise UsageError(f"--max-repeat ({max_repeat}) is below --repeat ({repeat})")


@dataclass
class Outcome:
    name: str
    db: Path
    rounds: int
    converged: bool | None  # None without --rel-error
    stopped_by: str | None = None  # "--max-repeat" or "--max-time" when the target was not reached


def measure(plan: list[Config], command: list[str], *, name: str, results: Path, repeat: int, warmup: bool,
            rel_error: Optional[float], max_repeat: int, interval_ms: int, output: str, kind: str,
            knob_root: Path = Path("/"), extra_source: str = "", max_time_s: float = MAX_TIME_S,
            kill_grace_s: float = host.DEFAULT_KILL_GRACE_S) -> Outcome:
    """Run the plan in interleaved rounds, storing each run as it ends. Stops at the first run
    that fails (its row is stored with status failed) or is interrupted."""
    from numalab.results.derived import columns
    from numalab.results.store import Store
    from numalab.study.canonical import config_hash, to_json
    from numalab.study.resolved import ResolvedRun

    hostname, kernel, case = socket.gethostname(), platform.release(), shlex.join(command)
    source = _source(kind, command, plan, repeat, warmup, rel_error, max_repeat, hostname, kernel) + extra_source
    runs: dict[tuple[int, int], Any] = {}

    def resolved(rounds: int) -> Any:
        for r in range(rounds):
            for i, c in enumerate(plan):
                if (i, r) not in runs:
                    config = {"machine": "host", "workload": case, "params": {"command": command, "host": hostname},
                              "placement": c.placement.label(), "balancing": c.balancing, "kernel": kernel, "thp": None,
                              "sample_rate": 1.0, "seed": r}
                    h = config_hash(config)
                    runs[(i, r)] = ResolvedRun(h, config, to_json(config), c.label, case, "run", None)
        listing = []
        for r in range(rounds):
            base = runs[(0, r)].hash
            listing += [SimpleNamespace(**{**vars(runs[(i, r)]), "baseline_hash": base}) for i in range(len(plan))]
        return SimpleNamespace(name=name, file=SimpleNamespace(path=f"/numalab-{kind}/{name}", text=source), runs=listing)

    def one(c: Config, quiet_note: str) -> host.HostRun:
        expected = c.prepare() if c.prepare is not None else None
        r = host.run(command, c.placement, interval_ms=interval_ms, knob_root=knob_root, stdout=output, expect_knobs=expected,
                     kill_grace_s=kill_grace_s)
        _note(f"{quiet_note}: {r.doc['time_s']:.4f} s" + ("" if r.doc["status"] == "ok" else f" ({r.doc['error']})")
              + f", elapsed {clock(time.monotonic() - started)}")
        return r

    started = time.monotonic()
    with Store(results) as store:
        rounds = repeat
        store.register_study(resolved(rounds))
        if warmup:
            for c in plan:
                _stop_if_bad(one(c, f"{kind}: warm-up {c.label}"), c, None, None)
        r, converged, stopped_by = 0, None, None
        began = time.monotonic()  # --max-time counts the measured rounds, not the warm-up
        while r < rounds:
            for i, c in enumerate(plan):
                result = one(c, f"{kind}: {r * len(plan) + i + 1}/{rounds * len(plan)} runs ({c.label})")
                doc = result.doc
                outcome = {"status": doc["status"], "error": doc["error"], "wall_s": doc["time_s"],
                           "result": document_text(doc), "columns": columns(doc)}
                store.write(name, runs[(i, r)], outcome)
                _stop_if_bad(result, c, store, name)
                # The time the program reports, as the store's speedups compare (docs/measure.md §3).
                c.times.append(doc.get("reported_time_s", doc["time_s"]))
                c.docs.append(doc)
            r += 1
            if r == rounds and rel_error is not None:
                converged = all(_within(c.times, rel_error) for c in plan)
                if converged:
                    break
                if rounds >= max_repeat:
                    stopped_by = "--max-repeat"
                elif time.monotonic() - began >= max_time_s:
                    stopped_by = "--max-time"
                else:
                    rounds += 1
                    store.register_study(resolved(rounds))
        return Outcome(name, store.path, rounds, converged, stopped_by)


def _stop_if_bad(result: host.HostRun, c: Config, store: Any, name: Optional[str]) -> None:
    if result.interrupted:
        raise host.Terminated(signal.SIGINT)
    if result.doc["status"] != "ok":
        raise NumalabError(f"the command failed under '{c.label}' ({result.doc['error']}); stopped, since the time of a "
                           "failing run measures nothing" + (f" (runs so far are stored as '{name}')" if store else ""))


def _within(times: list[float], rel_error: float) -> bool:
    from numalab.report.stats import estimate

    e = estimate(times)
    if e is None or e.n < 2:
        return False
    return e.identical or (e.half_width is not None and 100.0 * e.half_width / e.mean <= rel_error)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _source(kind: str, command: list[str], plan: list[Config], repeat: int, warmup: bool, rel_error: Optional[float],
            max_repeat: int, hostname: str, kernel: str) -> str:
    """What the store shows as the study's text (a report's "Configuration"): how the runs were made."""
    stop = f"until the 95% interval is within {rel_error:g}% (at most {max_repeat})" if rel_error is not None else "fixed"
    return "\n".join([
        f"# numalab {kind}: a real command timed on host {hostname} (Linux {kernel}) through numalab-agent",
        f"# command: {shlex.join(command)}",
        f"# configurations (the first is the baseline): {', '.join(c.label for c in plan)}",
        f"# repetitions: {repeat} per configuration, {stop}; interleaved order; warm-up run: {'yes' if warmup else 'no'}",
    ]) + "\n"


def summarize(plan: list[Config]) -> list[dict[str, Any]]:
    """Mean, median, 95% interval and speedup of the mean against the first configuration."""
    from numalab.report.stats import estimate

    out = []
    estimates = [estimate(c.times) for c in plan]
    base = estimates[0].mean if estimates[0] else None
    for c, e in zip(plan, estimates):
        mean = e.mean if e else None
        half = e.half_width if e else None
        out.append({
            "label": c.label,
            "runs": len(c.times),
            "times_s": c.times,
            "mean_s": mean,
            "median_s": statistics.median(c.times) if c.times else None,
            "ci95_low_s": e.low if e else None,
            "ci95_high_s": e.high if e else None,
            "rel_error_pct": 100.0 * half / mean if half is not None and mean else (0.0 if e and e.identical else None),
            "speedup": base / mean if base and mean else None,
            "hint_fault_locality_pct": _mean(d["metrics"]["hint_fault_locality_pct"] for d in c.docs),
            "local_pct": _mean(d["metrics"]["local_pct"] for d in c.docs),
            "numa_pages_migrated": _mean(d["vmstat"].get("numa_pages_migrated") for d in c.docs),
        })
    return out


def _mean(values: Any) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


def not_reached(rows: list[dict[str, Any]], outcome: Outcome) -> str:
    """The target precision was not reached: which configurations, how close, and which cap stopped."""
    worst = ", ".join(f"{r['label']} {pct(r['rel_error_pct'])}" for r in rows if r["rel_error_pct"] is None or r["rel_error_pct"] > 0)
    return (f"numalab: note: the asked relative error was not reached after {outcome.rounds} rounds ({outcome.stopped_by} "
            f"reached); relative errors: {worst}")


def report(plan: list[Config], outcome: Outcome, as_json: bool, balancing: bool = False) -> None:
    rows = summarize(plan)
    if as_json:
        typer.echo(json.dumps({"study": outcome.name, "store": str(outcome.db), "rounds": outcome.rounds,
                               "converged": outcome.converged, "stopped_by": outcome.stopped_by, "configs": rows},
                              indent=2, sort_keys=True))
        if outcome.converged is False:
            _note(not_reached(rows, outcome))
        return
    f = lambda v, d=4: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    cols = ["config", "runs", "mean_s", "median_s", "ci95_s", "rel_error_pct", "speedup"]
    if balancing:
        cols += ["hint_fault_locality_pct", "numa_pages_migrated"]
    body = []
    for r in rows:
        ci = "-" if r["ci95_low_s"] is None else f"{r['ci95_low_s']:.4f}-{r['ci95_high_s']:.4f}"
        line = [r["label"], r["runs"], f(r["mean_s"]), f(r["median_s"]), ci, pct(r["rel_error_pct"]), f(r["speedup"], 2)]
        if balancing:
            line += [pct(r["hint_fault_locality_pct"]), f(r["numa_pages_migrated"], 0)]
        body.append(line)
    typer.echo(render(table(cols, body, "time per configuration (s), as the program reports it (its wall time unless it prints its "
                                        "own, as NPB does); 95% interval (Student's t); speedup = mean(first) / mean")))
    if outcome.converged is False:
        _note(not_reached(rows, outcome))
    typer.echo(f"stored as study '{outcome.name}' in {outcome.db}: numalab report {outcome.db.parent} --study {outcome.name} -o {outcome.name}.html")
