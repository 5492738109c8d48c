"""``numalab results list|show|export``: look into a results store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from numalab.cli.study import RESULTS
from numalab.console.text import printable
from numalab.exceptions import UsageError

app = typer.Typer(help="List, show and export the runs of a results store.", no_args_is_help=True, add_completion=False, rich_markup_mode=None)
STUDY = typer.Option(None, "--study", "-s", help="Only this study's runs.")


@app.command("list")
def list_runs(
    results: Path = RESULTS,
    study: Optional[str] = STUDY,
    status: Optional[str] = typer.Option(None, "--status", help="Only runs with this status: ok, out-of-memory, failed."),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as JSON: {store, runs: [one object per run, every column of the results view, config decoded]}."),
) -> None:
    """One line per run: hash, study, status, case, configuration, seed, time and speedup."""
    from numalab.results.store import STATUSES, Store

    if status is not None and status not in STATUSES:
        raise UsageError(f"--status: '{status}' is not accepted (expected one of: {', '.join(STATUSES)})")
    with Store(results, create=False) as store:
        rows = [r for r in store.rows(study) if status is None or r["status"] == status]
        damaged = store.damaged(study)
    if as_json:
        runs = [dict(r, config=_config(r, store.path), damaged=damaged.get(r["hash"])) for r in rows]
        typer.echo(json.dumps({"store": str(store.path), "runs": runs}, indent=2, sort_keys=True))
        return
    head = f"{'hash':12}  {'study':16} {'status':13} {'seed':>4} {'time_s':>10} {'speedup':>8}  case | configuration"
    typer.echo(head)
    for r in rows:
        t = "-" if r["time_s"] is None else f"{r['time_s']:.4f}"
        sp = "-" if r["speedup"] is None else f"{r['speedup']:.2f}"
        mark = f"  [damaged: {damaged[r['hash']]}]" if r["hash"] in damaged else ""
        typer.echo(printable(f"{r['hash'][:12]}  {r['study'][:16]:16} {r['status']:13} {r['seed']:>4} {t:>10} {sp:>8}  {r['case']} | {r['label']}{mark}"))
    typer.echo(f"{len(rows)} runs")
    bad = sum(1 for r in rows if r["hash"] in damaged)
    if bad:
        typer.echo(f"numalab: warning: {bad} of these runs {'has its' if bad == 1 else 'have their'} stored result document damaged "
                   f"(marked [damaged]); reports leave {'it' if bad == 1 else 'them'} out; restore {store.path} from a copy", err=True)


def _config(row: dict, path: Path) -> object:
    from numalab.results.store import StoreError

    try:
        return json.loads(row["config"])
    except (TypeError, ValueError):
        raise StoreError(f"{path}: database is corrupt (run {str(row['hash'])[:12]}: its configuration is not JSON)") from None


@app.command("show")
def show(
    run_hash: str = typer.Argument(..., metavar="HASH", help="A run's hash (or its first digits, as `results list` shows)."),
    results: Path = RESULTS,
    as_json: bool = typer.Option(False, "--json", help="Print the result document as JSON."),
) -> None:
    """A run's configuration, status and result summary (or its whole document with --json)."""
    from numalab.cli.summary import summary
    from numalab.results.store import Store, StoreError, describe_run, document_problem

    with Store(results, create=False) as store:
        row = store.find(run_hash)
    problem = document_problem(row["result"], row["status"])
    if problem:
        raise StoreError(f"{store.path}: database is corrupt ({describe_run(row)}: {problem})")
    try:
        config = json.loads(row["config"])
    except ValueError:
        raise StoreError(f"{store.path}: database is corrupt ({describe_run(row)}: its configuration is not JSON)") from None
    doc = json.loads(row["result"]) if row["result"] else None
    if as_json:
        typer.echo(json.dumps(doc if doc is not None else {"status": row["status"], "error": row["error"]}, indent=2, sort_keys=True))
        return
    typer.echo(printable(f"run {row['hash']} (study {row['study']}): {row['status']}" + (f" - {row['error']}" if row["error"] else "")))
    typer.echo("configuration: " + json.dumps(config, sort_keys=True))
    if row["wall_s"] is not None:
        typer.echo(f"wall time: {row['wall_s']:.3f} s, finished {row['finished_at']}")
    if doc is not None:
        from numalab.cli.lb import document_summary

        typer.echo("")
        typer.echo(document_summary(doc) if str(doc.get("schema", "")).startswith("numalab.taskgraph/") else summary(doc))


@app.command("export")
def export(
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write a CSV file."),
    parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write a Parquet file (needs pyarrow)."),
    results: Path = RESULTS,
    study: Optional[str] = STUDY,
) -> None:
    """Export the runs (one row each, metrics and parameters as columns) to CSV and/or Parquet."""
    from numalab.results.frame import export as write, load
    from numalab.results.store import db_path

    if csv is None and parquet is None:
        raise UsageError("export needs --csv FILE and/or --parquet FILE")
    df = load(results, study)
    for path in write(df, csv, parquet, db_path(results)):
        typer.echo(f"wrote {path} ({len(df)} runs)")
