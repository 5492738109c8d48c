"""``numalab study FILE``: expand a study file and run what the results store does not hold yet,
in local worker processes, on a Dask cluster (``--scheduler``) or on Slurm (``--slurm``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from numalab.console.text import printable
from numalab.exceptions import UsageError

# A dry run lists every run of a study up to this size; above it, the count and the first runs
# (expanding 100,000 runs takes about a minute, counting them no time).
DRY_RUN_ALL = 2_000
DRY_RUN_SAMPLE = 20
RESULTS = typer.Option(Path("results"), "--results", "-r", envvar="NUMALAB_RESULTS", help="Results directory (holds numalab.db).")


def study(
    file: Path = typer.Argument(..., help="Study file (.toml); `numalab schema` describes the format."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", "--workers", help="Runs at once: local worker processes (default: one per CPU); with --slurm, Slurm jobs to start (default 1). --workers is the same option."),
    results: Path = RESULTS,
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Run on an existing Dask cluster: its scheduler address, tcp://HOST:PORT (its workers need numalab installed)."),
    slurm: bool = typer.Option(False, "--slurm", help="Run on Dask workers submitted to Slurm (needs dask-jobqueue)."),
    queue: Optional[str] = typer.Option(None, "--queue", help="Slurm partition for --slurm (default: the cluster's)."),
    cores: int = typer.Option(1, "--cores", help="Cores per Slurm job for --slurm (one worker process each)."),
    memory: str = typer.Option("2GB", "--memory", help="Memory per Slurm job for --slurm, e.g. 8GB."),
    walltime: str = typer.Option("01:00:00", "--walltime", help="Walltime per Slurm job for --slurm, HH:MM:SS."),
    account: Optional[str] = typer.Option(None, "--account", help="Slurm account to charge for --slurm (default: yours)."),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="List the runs (and which are stored already); run nothing."),
    replace: bool = typer.Option(False, "--replace", help="Make this file the study of its name in the store, when another study file of that name was stored there before."),
    as_json: bool = typer.Option(False, "--json", help="Print a summary as JSON on stdout (runs done, skipped, failed; where they are stored); with --dry-run, the runs. Progress stays on stderr."),
) -> None:
    """Run every configuration of a study file into the results store.

    Runs already stored are skipped, so running the same command again resumes a study that
    stopped (Ctrl-C, a crash, a lost worker). Failed runs are recorded and tried again next time.
    A study name belongs to one study file per results directory: another file with the same
    name is refused (rename it, use another --results, or --replace).
    """
    from numalab.results.store import Store
    from numalab.study import executors, expand, load_study
    from numalab.study.sweep import check_size, run_study

    if scheduler and slurm:
        raise UsageError("give --scheduler or --slurm, not both")
    if scheduler:
        scheduler = executors.check_scheduler_address(scheduler)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    sf = load_study(file)
    planned = check_size(sf.study)
    if dry_run and planned > DRY_RUN_ALL and sf.study.kind == "placement":
        _sample(sf, planned, results, as_json)
        return
    resolved = expand(sf)
    if dry_run:
        _list(resolved, results, as_json)
        return
    with Store(results) as store:
        store.register_study(resolved, replace=replace)
        todo = len(resolved.runs) - len(store.complete_hashes(r.hash for r in resolved.runs))
        if slurm:
            opts = executors.SlurmOptions(queue, cores, memory, walltime, jobs or 1, account, str((results / "slurm-logs").resolve()))
            factory: Callable[[], Any] = lambda: executors.slurm_backend(opts)  # noqa: E731
        elif scheduler:
            factory = lambda: executors.DaskBackend(scheduler)  # noqa: E731
        else:
            n, note = executors.local_workers(jobs, todo)
            if note and todo:
                typer.echo(f"numalab: note: {note}", err=True)
            factory = lambda: executors.LocalBackend(n)  # noqa: E731
        summary = run_study(resolved, store, factory, registered=True)
        errors = Counter(r["error"] for r in store.rows(resolved.name) if r["status"] == "failed")
    report = f"numalab report {file} --results {results} -o {results / (resolved.name + '.html')}"
    sensitivity = None
    if resolved.study.sensitivity and not summary.failed and not summary.interrupted:
        from numalab.study.sensitivity import run_for_study

        sensitivity = run_for_study(resolved, results)
    if as_json:
        typer.echo(json.dumps(_summary_json(resolved, file, store.path, summary, errors, sensitivity, report), indent=2, sort_keys=True))
    else:
        typer.echo(f"study {resolved.name}: {summary.describe()}; results in {store.path}")
        for error, n in errors.most_common(5):
            typer.echo(printable(f"  {n} failed: {error}"))
    if summary.interrupted:
        typer.echo(f"interrupted: the {summary.done} finished runs are kept; run the same command to resume", err=True)
        raise typer.Exit(130)
    if not as_json:
        if sensitivity is not None:
            typer.echo(sensitivity)
        typer.echo(f"report: {report}")
    if summary.failed:
        raise typer.Exit(1)


def _summary_json(resolved: Any, file: Path, store: Path, summary: Any, errors: Counter, sensitivity: Optional[str],
                  report: str) -> dict[str, Any]:
    """``study --json``: what the text says, as data."""
    return {
        "study": resolved.name,
        "file": str(file),
        "store": str(store),
        "runs": summary.total,
        "skipped": summary.skipped,
        "done": summary.done,
        "ok": summary.ok,
        "out_of_memory": summary.out_of_memory,
        "failed": summary.failed,
        "interrupted": summary.interrupted,
        "elapsed_s": round(summary.elapsed_s, 3),
        "failures": [{"error": e, "runs": n} for e, n in errors.most_common()],
        "sensitivity": sensitivity,
        "report": report,
    }


def _sample(sf: Any, planned: int, results: Path, as_json: bool) -> None:
    """``--dry-run`` of a sweep too large to list: its size, counted from the file, and its first
    runs, resolved and checked; nothing else is built."""
    from numalab.results.store import Store, db_path
    from numalab.study.expand import sample

    runs = sample(sf, DRY_RUN_SAMPLE)
    stored: set[str] = set()
    count = 0
    if db_path(results).exists():
        with Store(results, create=False) as store:
            stored = store.complete_hashes(r.hash for r in runs)
            count = store.complete_count(sf.study.name)
    what = (f"{planned:,} runs planned (sweep axes x runs x seeds, before duplicates merge and baselines are added); "
            f"the first {len(runs)} are listed (--dry-run lists every run up to {DRY_RUN_ALL:,}); {count:,} runs of study "
            f"'{sf.study.name}' are stored")
    if as_json:
        listed = [{"hash": r.hash, "stored": r.hash in stored, "case": r.case, "label": r.label, "seed": r.config["seed"], "role": r.role}
                  for r in runs]
        typer.echo(json.dumps({"study": sf.study.name, "planned": planned, "sampled": True, "runs": listed, "stored": count},
                              indent=2, sort_keys=True))
        return
    for r in runs:
        mark = "stored" if r.hash in stored else "to run"
        typer.echo(printable(f"{r.hash[:12]}  {mark:6}  {r.case} | {r.label} | seed {r.config['seed']}"))
    typer.echo(what)


def _list(resolved, results: Path, as_json: bool = False) -> None:
    from numalab.results.store import Store, db_path

    stored: set[str] = set()
    if db_path(results).exists():
        with Store(results, create=False) as store:
            stored = store.complete_hashes(r.hash for r in resolved.runs)
            other = store.same_study_file(resolved.name, resolved.file.path, resolved.file.text)
        if other:
            typer.echo(f"numalab: note: a different study named '{resolved.name}' is stored in {store.path} (from {other}); "
                       "running this file there needs --replace", err=True)
    if as_json:
        runs = [{"hash": r.hash, "stored": r.hash in stored, "case": r.case, "label": r.label, "seed": r.config["seed"], "role": r.role}
                for r in resolved.runs]
        typer.echo(json.dumps({"study": resolved.name, "runs": runs, "stored": len(stored), "to_run": len(resolved.runs) - len(stored)},
                              indent=2, sort_keys=True))
        return
    for r in resolved.runs:
        mark = "stored" if r.hash in stored else "to run"
        role = " (baseline)" if r.role == "baseline" else ""
        typer.echo(printable(f"{r.hash[:12]}  {mark:6}  {r.case} | {r.label} | seed {r.config['seed']}{role}"))
    typer.echo(f"{len(resolved.runs)} runs, {len(stored)} stored, {len(resolved.runs) - len(stored)} to run")
