"""``numalab import FORMAT FILE -o workload.toml``: a real program's access profile as a workload."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Optional

import typer

from numalab.exceptions import UsageError
from numalab.workload import descriptor
from numalab.workload.profiles import agent, numalize, numamma, perfmem, replay

FORMATS = ("numalize", "numamma", "perf-mem", "agent")


def import_profile(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="numalize (its PROGRAM.full.page.csv), numamma (call_sites.log, with callsite_counters_ID.dat beside it), perf-mem (`perf script -F tid,cpu,time,period,event,addr` of `perf mem record`), agent (numalab run --record FILE)."),
    path: Path = typer.Argument(..., metavar="FILE", help="The profile to import."),
    output: Path = typer.Option(..., "-o", "--output", help="The workload descriptor to write (replay it with numalab sim --workload FILE)."),
    name: Optional[str] = typer.Option(None, "--name", help="The workload's name (default: the output file's stem)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, help="numamma: the program's threads when no callsite_counters file says it."),
    as_json: bool = typer.Option(False, "--json", help="Print what was imported (pages, accesses, regions, patterns) as JSON."),
) -> None:
    """Turn a real access profile into a workload descriptor the simulator replays (docs/mapping.md §7)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown profile format '{fmt}' (accepted: {', '.join(FORMATS)})")
    if output.suffix != ".toml":
        raise UsageError(f"-o {output}: a workload descriptor ends in .toml")
    if fmt == "numalize":
        profile = numalize.read(path)
    elif fmt == "numamma":
        profile = numamma.read(path, threads)
    elif fmt == "perf-mem":
        profile = perfmem.read(path)
    else:
        profile = agent.read(path)
    wname = name or output.stem
    text = replay.workload(profile, wname)
    _write(output, text)
    descriptor.resolve(str(output), {})   # what was written loads and resolves
    info = {"output": str(output), "name": wname, **replay.summary(profile)}
    if as_json:
        typer.echo(json.dumps(info, indent=2, sort_keys=True))
        return
    typer.echo(f"{output}: {info['regions']} regions ({', '.join(f'{k} {v}' for k, v in info['patterns'].items())}), "
               f"{info['pages']} pages, {info['threads']} threads, from {info['source']}")
    typer.echo(f"replay: numalab sim --machine M --workload {output}")


def _write(path: Path, text: str) -> None:
    """Atomically: a failed import leaves no half-written descriptor."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"-o {path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".numalab-import-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"-o {path}: cannot write ({e.strerror or e})") from None
