"""``numalab calibrate``: measure this host's latencies, bandwidths, loaded-latency curve and
per-core concurrency with the project's kernels and write a machine preset (docs/calibrate.md)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

import typer

from numalab.calibrate import figures as fg
from numalab.calibrate.preset import preset_toml
from numalab.console.progress import Progress
from numalab.exceptions import NumalabError, UsageError


def calibrate(
    output: Path = typer.Option(Path("calibrated.toml"), "--output", "-o", help="The preset TOML to write (its stem is the machine's name); load it with --machine FILE.toml."),
    quick: bool = typer.Option(False, "--quick", help="Small buffers, 3 repetitions, 1 and all threads: under a minute on a small host (buffers may not exceed the last-level cache)."),
    pairs: str = typer.Option("all", "--pairs", help="(CPU node, memory node) pairs to measure: all, local, a count N (local pairs, then remote ones spread over the SLIT distances) or C:M,C:M."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures and the raw kernel outputs as JSON on stdout (no progress)."),
    from_raw: Optional[Path] = typer.Option(None, "--from-raw", help="Measure nothing: write the preset from a raw document saved from --json (its 'raw' member, or the whole output)."),
) -> None:
    """Measure this host with the C kernels under the agent and write a preset TOML."""
    if output.suffix != ".toml":
        raise UsageError(f"--output {output}: the preset must be a .toml file (--machine reads presets by that suffix)")
    name = output.stem
    if from_raw is not None:
        doc = _read_raw(from_raw)
    else:
        doc = _measure(pairs, quick, as_json)
    # The user's file (--from-raw) is a usage error; this run's own kernels giving nonsense is a failure.
    where, error = (f"--from-raw {from_raw}", UsageError) if from_raw is not None else ("calibrate", NumalabError)
    try:
        text = preset_toml(doc, name)
    except KeyError as e:
        raise error(f"{where}: the calibration document has no {e} (numalab calibrate --json writes it)") from None
    except (TypeError, ValueError, AttributeError, IndexError) as e:
        raise error(f"{where}: cannot build the preset from the measurements: {e}") from None
    _check(text, output, error)
    from numalab.results.outfile import write_atomic

    write_atomic(output, lambda f: f.write(text.encode()), "--output")
    if as_json:
        typer.echo(json.dumps({"output": str(output), "figures": summary(doc), "raw": doc}, indent=1, sort_keys=True))
    else:
        for s in doc.get("skipped", []):
            typer.echo(f"numalab: calibrate: skipped {s}", err=True)
        typer.echo(f"wrote {output} ({name}); use it with --machine {output}")


def _measure(pairs: str, quick: bool, as_json: bool) -> dict[str, Any]:
    from numalab.calibrate import measure, plan
    from numalab.machine.host import read_facts

    facts = read_facts()
    cpus, mems = measure.check_binding()
    p = plan.make_plan(facts, pairs, quick, cpus, mems)
    with Progress("calibrate", unit="runs", quiet=as_json, eta=True) as progress:
        return measure.measure(p, facts, progress)


def _read_raw(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"--from-raw {path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"--from-raw {path}: not JSON: {e}") from None
    if isinstance(doc, dict) and "raw" in doc:
        doc = doc["raw"]
    if not isinstance(doc, dict):
        raise UsageError(f"--from-raw {path}: expected a JSON object (numalab calibrate --json's output or its 'raw' member)")
    return doc


def _check(text: str, output: Path, error: type[NumalabError]) -> None:
    """The preset must load as --machine would load it, before it replaces anything; ``error``:
    a usage error when the measurements came from the user's file (--from-raw)."""
    from numalab.machine.presets import load_spec_file

    with tempfile.TemporaryDirectory(prefix="numalab-calibrate-") as tmp:
        p = Path(tmp) / output.name
        p.write_text(text)
        try:
            load_spec_file(p)
        except Exception as e:  # noqa: BLE001 - any refusal is a calibration that cannot be used
            raise error(f"calibrate: the preset built for {output} does not load: {e}") from None


def summary(doc: dict[str, Any]) -> dict[str, Any]:
    """The figures of the raw document, for --json."""
    runs = doc.get("runs", [])
    return {
        "latency_ns": [{"cpu_node": c, "mem_node": m, "pages": p, **f.as_json()} for (c, m, p), f in fg.latencies(runs).items()],
        "bandwidth_gbps": [{"cpu_node": c, "mem_node": m, "mode": md, "threads": t, **f.as_json()}
                           for (c, m, md, t), f in fg.bandwidths(runs).items()],
        "loaded_latency": [{"mem_node": m, "load_threads": p.load_threads, "load_gbps": p.load_gbps, **p.latency.as_json()}
                           for m, pts in fg.loaded(runs).items() for p in pts],
        "clock_ghz": clock.as_json() if (clock := fg.clock_ghz(runs)) else None,
        "skipped": doc.get("skipped", []),
    }
