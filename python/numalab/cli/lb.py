"""``numalab lb``: a task graph on a machine under several task load balancers (Charm++ strategies:
the runtime moves objects between PEs), side by side (docs/taskgraph.md). Not the kernel's load
balancer (CFS) nor automatic NUMA balancing, which ``numalab sim`` models."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from dataclasses import replace
from typing import Any, Optional

import typer

from numalab.cli import options as o
from numalab.console.progress import Progress
from numalab.console.tables import render, table
from numalab.exceptions import UsageError
from numalab.tasks.repeat import cell

CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}
MIB = 1 << 20


def lb(
    ctx: typer.Context,
    graph: str = typer.Option("lb_test", "--graph", "-g", help="lb_test, kneighbor, jacobi2d, or a graph file: a numalab edge list (obj,ID,LOAD_NS,STATE_BYTES and edge,A,B,MSGS,BYTES records) or the text form of a Charm++ LB dump (docs/taskgraph.md)."),
    machine: str = o.MACHINE,
    # No -b: numactl's -b is --balancing (MPOL_F_NUMA_BALANCING), as numalab-agent takes it.
    balancers: Optional[str] = typer.Option(None, "--balancers", help="Task load balancers (Charm++ strategies), comma-separated, each name[:key=value...]: none, greedy, greedy-refine, refine, metis, scotch, treematch, numalab, random (default: none,greedy,refine,metis,scotch,treematch,numalab)."),
    iterations: str = typer.Option("50", "--iterations", help="Bulk-synchronous iterations to simulate."),
    lb_period: str = typer.Option("10", "--lb-period", help="Run the task load balancer every this many iterations (0: never)."),
    comm_layer: str = typer.Option("shm", "--comm-layer", help="shm (shared-memory pointer passing) or net (UDP datagrams, per-message overhead; udp is accepted too)."),
    pes: Optional[str] = typer.Option(None, "--pes", help="PEs, one per core from core 0 (default: every core of the machine)."),
    seed: str = typer.Option("1", "--seed", help="Seed of the graph generator, the noise and the randomised task load balancers, 0..2^64-1."),
    noise: str = typer.Option("on", "--noise", help="on: the LB database measures loads with the machine's noise (timer resolution, background work per PE, as numalab sim --noise); off: it sees the true loads."),
    lb_timer: str = typer.Option("wall", "--lb-timer", help="The LB database's timer: wall (Charm++'s default; counts background work sharing the PE) or cpu (+LBUseCpuTime; counts only the CPU time of the process)."),
    repeat: str = typer.Option("1", "--repeat", help="Repetitions on seeds SEED, SEED+1, ... (new noise and random graphs each); with 2 or more, means with 95% intervals (Student's t)."),
    results: Optional[Path] = typer.Option(None, "--results", "-r", help="Also store every run in this results directory (numalab report reads it)."),
    name: Optional[str] = typer.Option(None, "--name", help="Study name of the stored runs (default lb-GRAPH-MACHINE)."),
    as_json: bool = o.JSON,
) -> None:
    """Simulate a task graph on MACHINE under several task load balancers (Charm++ strategies) and compare them.

    Graph parameters follow as --name value: lb_test --n-objects 200 --min-us 50000 --max-us 200000;
    kneighbor --n-objects 200 --k 3 --msg-bytes 8192; jacobi2d --nx 1000 --ny 1000 --block 100.
    So do the simulator's: --load-noise 0.05, --shm-msg-ns, --net-dgram-ns, --net-dgram-bytes,
    --net-window, --migration-fixed-ns, --strategy-op-ns, --metis-unit-ns, --scotch-unit-ns
    (docs/taskgraph.md lists them; numalab sensitivity --graph varies the estimated ones).
    """
    from numalab.spec.run import load_machine
    from numalab.tasks import balancers as lbs
    from numalab.cli.suggest import check_params
    from numalab.tasks.graphs import GENERATORS, build, coerce, graph_spec
    from numalab.tasks.repeat import MAX_REPEAT, seeds, summarise
    from numalab.tasks.partition import gpart_program
    from numalab.tasks.run import SIM_PARAMS, Settings, check_pes, simulate

    balancer_specs = lbs.parse_list(balancers or lbs.DEFAULT_LIST)
    # The default list runs anywhere; naming scotch explicitly still asks for it.
    scotch_left_out = balancers is None and gpart_program() is None
    if scotch_left_out:
        balancer_specs = [b for b in balancer_specs if b.name != "scotch"]
    extra = o.workload_params(ctx.args)
    if graph in GENERATORS:
        check_params(extra, [*GENERATORS[graph], *SIM_PARAMS], f"graph {graph}")
    gspec = graph_spec(graph, {k: v for k, v in extra.items() if k not in SIM_PARAMS})
    settings = Settings.create(iterations, lb_period, comm_layer, pes, seed, {k: v for k, v in extra.items() if k in SIM_PARAMS}, noise, lb_timer)
    n_repeat = coerce("--repeat", repeat, int, 1)
    if n_repeat > MAX_REPEAT:
        raise UsageError(f"--repeat: at most {MAX_REPEAT}, got {n_repeat}")
    if n_repeat > 1 and results is not None:
        raise UsageError("--repeat with --results: store repetitions through a study file (repetitions = N), which numalab report summarises")
    if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise UsageError(f"--name: '{name}' is not a study name (letters, digits, '.', '_', '-')")
    m = load_machine(machine)
    check_pes(m, settings)
    for b in balancer_specs:
        lbs.check_available(b)
    runs: list[list[dict[str, Any]]] = []
    with Progress("simulating", len(balancer_specs) * n_repeat, unit="runs", quiet=as_json, plain=False) as progress:
        for s in seeds(settings.seed, n_repeat):
            st = replace(settings, seed=s)
            g = build(gspec, s)
            runs.append([])
            for b in balancer_specs:
                runs[-1].append(simulate(m, gspec, b, st, graph=g))
                progress.step(b.label())
    if scotch_left_out:  # said after the runs: bad input (caught up to here) stays a one-line error
        typer.echo("numalab: note: scotch left out: Scotch's gpart is not installed (Debian/Ubuntu: apt-get install scotch)", err=True)
    docs = runs[0]
    if n_repeat > 1:
        summary = summarise(runs)
        if as_json:
            typer.echo(json.dumps({"machine": m.name, "graph": docs[0]["graph"], "settings": docs[0]["settings"], "repeat": n_repeat,
                                   "summary": summary, "runs": [d for rep in runs for d in rep]}, indent=2, sort_keys=True))
            return
        typer.echo(header(docs[0]) + f"; {n_repeat} repetitions, seeds {settings.seed}..{summary[0]['seeds'][-1]}")
        typer.echo(render(repeat_table(summary)))
        return
    if results is not None:
        where = store(results, name, machine, gspec, settings, balancer_specs, docs)
        if not as_json:
            typer.echo(f"stored {len(docs)} runs in {where}", err=True)
    if as_json:
        typer.echo(json.dumps({"machine": m.name, "graph": docs[0]["graph"], "settings": docs[0]["settings"], "runs": docs},
                              indent=2, sort_keys=True))
        return
    typer.echo(header(docs[0]))
    typer.echo(render(summary_table(docs)))
    typer.echo("")
    typer.echo(render(comm_table(docs)))


def header(doc: dict[str, Any]) -> str:
    g, s = doc["graph"], doc["settings"]
    params = " ".join(f"{k}={v}" for k, v in g["params"].items())
    period = f"task load balancer every {s['lb_period']}" if s["lb_period"] else "no task load balancer"
    sim = "".join(f", {k} {v:g}" for k, v in s["params"].items())
    return (f"{g['name']}{' ' + params if params else ''}: {g['n_objects']} objects, {g['n_edges']} edges on {doc['machine']}, "
            f"{doc['n_pes']} PEs, {s['iterations']} iterations, {period}, comm layer {s['comm_layer']}, seed {s['seed']}{sim}"
            + (f", measured loads {'with' if s.get('noise', True) else 'without'} noise ({s.get('lb_timer', 'wall')} timer)"
               if "noise" in s else ""))


def repeat_table(summary: list[dict[str, Any]]) -> Any:
    rows = []
    for s in summary:
        m = s["metrics"]
        rows.append([s["balancer"], cell(m["iteration_time_ns"], 1e6, 3), cell(m["efficiency"], 1, 3), cell(m["migrations_per_call"], 1, 1),
                     cell(m["migrated_bytes_per_call"], MIB, 3), cell(m["predicted_makespan_ns"], 1e6, 3), cell(m["actual_makespan_ns"], 1e6, 3),
                     cell(m["comm_remote_pct"], 1, 1)])
    return table(["balancer", "iteration_ms", "efficiency", "migrations/call", "migrated_mib/call", "predicted_ms/call", "actual_ms/call",
                  "remote_%"], rows,
                 "mean ± half-width of the 95% interval (Student's t over the seeds); predicted: the makespan on the loads the LB "
                 "database measured, actual: on the true loads")


def sensitivity_graph(args: list[str], graph: str, machine: str, configs: Optional[str], only: Optional[list[str]], corners: bool,
                      list_only: bool, seed: str, as_json: bool) -> None:
    """``numalab sensitivity --graph``: each balancer of ``configs`` against the first, under every
    estimated constant of the task-graph simulator at its low and high end (tasks/sensitivity.py)."""
    from numalab.cli.suggest import check_params
    from numalab.spec.run import load_machine
    from numalab.tasks import balancers as lbs
    from numalab.tasks import sensitivity as ts
    from numalab.tasks.graphs import GENERATORS, graph_spec
    from numalab.tasks.run import SIM_PARAMS, Settings

    params = ts.parameters(only)
    if list_only:
        if as_json:
            typer.echo(json.dumps([{"id": p.id, "value": p.value, "low": p.low, "high": p.high, "source": p.source} for p in params], indent=2))
            return
        rows = [[p.id, f"{p.value:g}", f"{p.low:g} - {p.high:g}", p.source] for p in params]
        typer.echo(render(table(["estimate", "as written", "range", "source"], rows, "estimated task-graph constants")))
        return
    specs = lbs.parse_list(configs or "none,greedy,numalab")
    if len(specs) < 2:
        raise UsageError("--configs: with --graph, at least two balancers (each is compared with the first)")
    for b in specs:
        lbs.check_available(b)
    extra = o.workload_params(args)
    run_keys = ("iterations", "lb_period", "comm_layer", "pes", "noise", "lb_timer")
    run = {k: extra.pop(k) for k in run_keys if k in extra}
    if graph in GENERATORS:
        check_params(extra, [*GENERATORS[graph], *SIM_PARAMS], f"graph {graph}")
    gspec = graph_spec(graph, {k: v for k, v in extra.items() if k not in SIM_PARAMS})
    settings = Settings.create(run.get("iterations", 50), run.get("lb_period", 10), run.get("comm_layer", "shm"), run.get("pes"), seed,
                               {k: v for k, v in extra.items() if k in SIM_PARAMS}, run.get("noise", "on"), run.get("lb_timer", "wall"))
    fixed = [p for p in params if p.path in dict(settings.params)]
    if fixed:
        raise UsageError(f"--{fixed[0].path.replace('_', '-')} is given and also varied; leave it out or vary the others with --param")
    m = load_machine(machine)
    n_variants = len(ts.variants(params, corners))
    with Progress("sensitivity", n_variants * len(specs), unit="runs", quiet=as_json, plain=False) as progress:
        vs, outcomes = ts.analyse(m, gspec, specs, settings, params, corners, progress.step)
    if as_json:
        typer.echo(json.dumps({"schema": "numalab.sensitivity/1", "machine": m.name, "graph": graph, "metric": ts.METRIC,
                               "parameters": [{"id": p.id, "value": p.value, "low": p.low, "high": p.high, "source": p.source} for p in params],
                               "variants": [v.name for v in vs], "comparisons": [o.to_json() for o in outcomes]}, indent=2, sort_keys=True))
        return
    rows = []
    for out in outcomes:
        xs = list(out.speedups.values())
        rows.append([f"{out.label} vs {out.baseline}", f"{out.speedups['nominal']:.3f}", out.winner(), f"{min(xs):.3f} - {max(xs):.3f}",
                     ("FLIPS: " + ", ".join(out.flips)) if out.flips else "holds"])
    typer.echo(render(table(["comparison", "speedup", "winner", "speedup range", "conclusion"], rows,
                            f"{gspec.describe()} on {m.name}: speedup = time per iteration with balancing, baseline over balancer")))
    moves = [[p.id, f"{p.value:g}", f"{p.low:g} - {p.high:g}",
              *(f"{o.speedups[p.id + '=low']:.3f} / {o.speedups[p.id + '=high']:.3f}" for o in outcomes)] for p in params]
    typer.echo("\n" + render(table(["estimate", "as written", "range", *(f"{o.label} (low / high)" for o in outcomes)], moves,
                                   "speedup at each end of each estimate's range")))
    flips = [o for o in outcomes if o.flips]
    typer.echo(f"\n{len(flips)} of {len(outcomes)} conclusions flip within the stated ranges." if flips
               else f"\nno conclusion flips within the stated ranges ({len(vs) - 1} variants).")


def document_summary(doc: dict[str, Any]) -> str:
    """One stored task-graph document as text (``numalab results show``)."""
    if doc.get("kind") == "migration-cost":
        p = doc["graph"]["params"]
        rows = [[d["name"], f"{d['distance']:g}", f"{d['migration_time_ns'] / 1e3:.1f}"] for d in doc["destinations"]]
        return render(table(["destination", "slit_distance", "migration_us"], rows,
                            f"migrating {p['objects']} objects of {p['state_bytes']} bytes from PE 0 on {doc['machine']}"))
    return "\n".join([header(doc), render(summary_table([doc])), "", render(comm_table([doc]))])


def _baseline(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next((d for d in docs if d["balancer"]["name"] == "none"), docs[0])


def summary_table(docs: list[dict[str, Any]]) -> Any:
    base = _baseline(docs)["metrics"]["iteration_time_ns"]
    rows = []
    for d in docs:
        m = d["metrics"]
        it = m["iteration_time_ns"]
        rows.append([d["balancer"]["label"], f"{it / 1e6:.3f}", f"{base / it:.2f}" if it > 0 else "-", f"{m['efficiency']:.3f}",
                     m["lb_calls"], f"{m['migrations_per_call']:.1f}", f"{m['migrated_pct_per_call']:.1f}",
                     f"{m['migrated_bytes_per_call'] / MIB:.3f}", f"{m['migration_time_ns'] / 1e6:.3f}", f"{m['balancer_wall_s'] * 1e3:.2f}",
                     *(f"{m[k] / 1e6:.3f}" if k in m else "-" for k in ("lb_step_ns_per_call", "time_per_iteration_ns",
                                                                         "predicted_makespan_ns", "actual_makespan_ns"))])
    speedup = f"speedup_vs_{_baseline(docs)['balancer']['label']}"
    return table(["balancer", "iteration_ms", speedup, "efficiency", "lb_calls", "migrations/call", "migrated_%/call", "migrated_mib/call",
                  "migration_ms", "lb_ms", "step_ms/call", "with_lb_ms", "predicted_ms/call", "actual_ms/call"], rows,
                 "iteration time (mean), efficiency (average / maximum PE load); per task load balancer call: objects migrated, % of objects, MiB; "
                 "lb_ms: the balancer's own wall time here; step_ms/call: the whole balancing step as the runtime takes it (barrier, "
                 "statistics, the strategy's modelled run, decision, migrations, resumption); with_lb_ms: the run's time per iteration "
                 "with its steps; predicted: the makespan on the loads the LB database measured, actual: on the true loads")


def comm_table(docs: list[dict[str, Any]]) -> Any:
    rows = []
    for d in docs:
        b, n = d["comm_bytes"], d["comm_msgs"]
        total = sum(b.values())
        rows.append([d["balancer"]["label"], *(f"{b[k] / MIB:.2f}" for k in ("same_pe", "same_node", "remote")),
                     f"{100 * b['remote'] / total:.1f}" if total else "-", *(f"{n[k]:.0f}" for k in ("same_pe", "same_node", "remote"))])
    return table(["balancer", "same_pe_mib", "same_node_mib", "remote_mib", "remote_%", "same_pe_msgs", "same_node_msgs", "remote_msgs"], rows,
                 "communication by distance class (the whole run)")


def store(results: Path, name: Optional[str], machine: str, gspec: Any, settings: Any, balancer_specs: list[Any], docs: list[dict[str, Any]]) -> Path:
    """Store the runs as one study (its rows: this command's balancers; baseline: none, if run)."""
    from numalab.results.derived import columns
    from numalab.results.store import Store
    from numalab.results.text import document_text
    from numalab.study.canonical import config_hash, to_json
    from numalab.study.resolved import ResolvedRun

    study = name or re.sub(r"[^A-Za-z0-9._-]+", "-", f"lb-{Path(gspec.name).stem}-{Path(machine).stem}").strip("-")
    params = {**gspec.as_dict(), "iterations": settings.iterations, "lb_period": settings.lb_period, "comm_layer": settings.comm_layer,
              "pes": settings.pes, "noise": "on" if settings.noise else "off", "lb_timer": settings.lb_timer, **dict(settings.params)}
    case = f"{gspec.describe()} on {machine}, {settings.comm_layer}" + (f", {settings.pes} PEs" if settings.pes else "")
    configs = [{"kind": "taskgraph", "experiment": "lb", "machine": machine, "workload": gspec.name, "params": params,
                "balancer": b.label(), "placement": None, "balancing": {}, "kernel": None, "seed": settings.seed} for b in balancer_specs]
    hashes = [config_hash(c) for c in configs]
    base = next((h for h, b in zip(hashes, balancer_specs) if b.name == "none"), hashes[0])
    runs = [ResolvedRun(h, c, to_json(c), b.label(), case, "run", base) for h, c, b in zip(hashes, configs, balancer_specs)]
    source = (f"# numalab lb --graph {gspec.name} --machine {machine} --balancers {','.join(b.label() for b in balancer_specs)} "
              f"--iterations {settings.iterations} --lb-period {settings.lb_period} --comm-layer {settings.comm_layer}"
              + (f" --pes {settings.pes}" if settings.pes else "") + f" --seed {settings.seed}"
              + f" --noise {'on' if settings.noise else 'off'} --lb-timer {settings.lb_timer}"
              + "".join(f" --{k.replace('_', '-')} {v:g}" for k, v in settings.params) + "\n")
    resolved = SimpleNamespace(name=study, file=SimpleNamespace(path=f"/numalab-lb/{study}", text=source), runs=runs)
    with Store(results) as st:
        st.register_study(resolved)
        for run, doc in zip(runs, docs):
            outcome = {"status": "ok", "error": None, "wall_s": doc.get("wall_s"),
                       "result": document_text(doc), "columns": columns(doc)}
            st.write(study, run, outcome)
        return st.path
