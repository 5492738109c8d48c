"""Scheduler cost: the share of the engine's CPU time spent in the scheduler model, from `perf`.

NPB CG class C, 64 unbound threads, `opteron6282-4p`, noise on (the engine as users run it). `perf
record` samples the simulation and the share of samples in `numalab_sim::sched::*` and
`numalab_sim::openmp::*` functions is printed (functions the compiler inlined into the engine's
loop count for the loop, so the share is a lower bound). Prints "skipped" where `perf` is missing
or not permitted.

The simulation runs 5 times in one profile (`--repeat N` to change): one run gives about a
thousand samples, and its share spread 3.3-5.2 % over five profiles (2026-11-28).

Run: `.venv/bin/python bench/sched_share.py [--quick] [--repeat N]` (class B with --quick).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import numalab
for _ in range(%d):
    numalab.simulate("opteron6282-4p", "cg", "default", **{"class": "%s", "threads": 64})
"""
SCHEDULER = ("numalab_sim::sched::", "numalab_sim::openmp::")


def positive(text: str) -> int:
    """A run count: a whole number, 1 or more."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number of runs, 1 or more, not {text!r}")
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CG class B instead of C")
    ap.add_argument("--repeat", type=positive, default=5, metavar="N", help="simulations in the one profile (default 5)")
    args = ap.parse_args()
    cls, repeat = ("B" if args.quick else "C"), args.repeat
    if not shutil.which("perf"):
        print("scheduler share: skipped (perf is not installed)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        rec = subprocess.run(["perf", "record", "-F", "999", "-o", str(data), sys.executable, "-c", CHILD % (repeat, cls)],
                             capture_output=True, text=True)
        if rec.returncode != 0:
            print(f"scheduler share: skipped (perf record failed: {rec.stderr.strip().splitlines()[-1:]})")
            return
        rep = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "symbol", "--percent-limit", "0"],
                             capture_output=True, text=True)
    engine = sched = 0.0
    for line in rep.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].endswith("%"):
            continue
        pct, symbol = float(parts[0].rstrip("%")), parts[2]
        if "numalab_sim::" in symbol:
            engine += pct
            if any(s in symbol for s in SCHEDULER):
                sched += pct
    if engine == 0:
        print("scheduler share: skipped (no engine symbols in the profile)")
        return
    print(f"scheduler share (cg class {cls}, 64 unbound threads, opteron6282-4p, noise on, {repeat} runs): "
          f"{sched / engine * 100:.1f} % of the engine's samples, {sched:.1f} % of the process")


if __name__ == "__main__":
    main()
