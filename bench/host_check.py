"""Host check table: `numalab check --host` on this machine as the markdown table of the README and
docs/calibrate.md §5, with the machine's load while it ran and the exact commands.

    python3 bench/host_check.py [--machine FILE.toml | --calibrate FILE.toml] [--rounds N] [--repeat N]
                                [--wait-load L [--wait-max S]]

--calibrate FILE runs `numalab calibrate --quick -o FILE` first and checks against it (calibration
and check back to back, as docs/calibrate.md §3 advises); the calibration's raw kernel outputs
(its --json document's ``raw``) are kept as FILE with the suffix .raw.json. Each round is one
`numalab check --host --json` (--repeat runs per case, their median); the table gives, per case,
the median over the rounds of the measured loop time (wall), its range over every run, the CPU
time per thread and the CPU share (cpu_s / (threads x wall): 1 on an idle machine), the
prediction and both errors. The load averages (/proc/loadavg) before and after say how busy the
machine was. --wait-load L waits (up to --wait-max seconds, default 1800) until the one-minute
load average is below L before it starts, since other programs' memory traffic moves every figure.
Deterministic apart from the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMALAB = ROOT / ".venv" / "bin" / "numalab"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def wait_for_load(below: float, max_s: float, poll_s: float = 10.0) -> bool:
    """True once the one-minute load average is below ``below``; False after ``max_s`` seconds."""
    start = time.monotonic()
    while True:
        try:
            if float(Path("/proc/loadavg").read_text().split()[0]) < below:
                return True
        except (OSError, ValueError, IndexError):
            return True  # no load average to wait for
        if time.monotonic() - start >= max_s:
            return False
        time.sleep(poll_s)


def run(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"host_check: {' '.join(argv)} failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
    return p.stdout


def table(rounds: list[dict]) -> list[str]:
    """Markdown rows: one per case, medians over the rounds; skipped cases with their reason."""
    out = ["| case | measured s (wall, median) | runs s | CPU s / thread | CPU share | predicted s | error % | error % (CPU) |",
           "|---|---|---|---|---|---|---|---|"]
    for i, first in enumerate(rounds[0]["cases"]):
        if "skipped" in first:
            out.append(f"| {first['case']} | skipped: {first['skipped']} | | | | | | |")
            continue
        cs = [r["cases"][i] for r in rounds]
        walls = [t for c in cs for t in c["measured_runs_s"]]
        wall = statistics.median(c["measured_s"] for c in cs)
        cpu = statistics.median(c["measured_cpu_s"] for c in cs)
        share = statistics.median(c["cpu_share"] for c in cs)
        pred = first["predicted_s"]
        out.append(f"| {first['case']} | {wall:.3f} | {min(walls):.3f}-{max(walls):.3f} | {cpu:.3f} | {share:.2f} | {pred:.3f} | "
                   f"{(pred - wall) / wall * 100:+.1f} | {(pred - cpu) / cpu * 100:+.1f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="", help="a calibrated preset .toml (default: host)")
    ap.add_argument("--calibrate", default="", help="calibrate into this file first (numalab calibrate --quick) and check against it")
    ap.add_argument("--rounds", type=int, default=3, help="numalab check --host runs (default 3)")
    ap.add_argument("--repeat", type=int, default=3, help="host runs per case in each (default 3)")
    ap.add_argument("--wait-load", type=float, default=0.0, help="wait until the 1-min load average is below this first")
    ap.add_argument("--wait-max", type=float, default=1800.0, help="give up waiting after this many seconds (default 1800)")
    a = ap.parse_args()
    if a.wait_load > 0 and not wait_for_load(a.wait_load, a.wait_max):
        print(f"host_check: the load average stayed at or above {a.wait_load} for {a.wait_max:g} s; measuring anyway",
              file=sys.stderr)
    commands = []
    before = loadavg()
    machine = a.machine or "host"
    if a.calibrate:
        # --json: the raw kernel outputs too, kept beside the preset (a capture for tests/fixtures/calibrate).
        cal = [str(NUMALAB), "calibrate", "--quick", "--json", "-o", a.calibrate]
        raw = Path(a.calibrate).with_suffix(".raw.json")
        raw.write_text(json.dumps(json.loads(run(cal))["raw"], indent=1, sort_keys=True) + "\n")
        commands.append(" ".join(["numalab", *cal[1:]]) + f" > {raw}")
        machine = a.calibrate
    check = [str(NUMALAB), "check", "--host", "--machine", machine, "--repeat", str(a.repeat), "--json"]
    rounds = [json.loads(run(check)) for _ in range(max(1, a.rounds))]
    commands.append(" ".join(["numalab", *check[1:]]) + f"   # {a.rounds} times")
    after = loadavg()
    print(f"Measured {platform.node() or 'this host'} ({platform.release()}); load average (1, 5, 15 min) "
          f"{before} before, {after} after, on {len(os.sched_getaffinity(0))} CPUs.")
    print("Commands: " + "; ".join(f"`{c}`" for c in commands) + ".")
    print()
    print("\n".join(table(rounds)))


if __name__ == "__main__":
    main()
