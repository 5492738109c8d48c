"""Simulator benchmark: prints figures, asserts nothing.

For NPB CG class C on 64 threads on opteron6282-4p (the design's reference case):
- sampled page visits per second on one core, simulated seconds per wall second, peak memory,
  each config in its own process so the peak is that run's;
- wall time of a 3-config `numalab compare` (default, interleave=all, membind=0-3) on this machine;
- the same with automatic NUMA balancing on, when the simulator has it;
- every placement's samples per CPU second as a ratio to first touch's in the same run (issue 27's
  goal: >= 95 %), and tiering (numa_balancing = 2 with demotion) against first touch on vm-tier;
  beside it first touch's epochs over the run's and each one's CPU per epoch (README, Performance);
- a co-run: 8 single-threaded STREAM copies against one 8-thread STREAM of the same total
  footprint on e5620-2s, sampled page visits per second of each (the co-run's own simulation,
  without its alone runs); the issue's bound is >= 80 % (docs/corun.md §2).

With `--hashes`, each run's whole document (sha256 of its JSON, sorted keys) and one digest of
them all: a speed change must leave them equal (every run of a placement, each repetition too).

Run: `make bench` (or `.venv/bin/python bench/sim_bench.py [--quick] [--repeat N] [--noise-off] [--ratios-only] [--hashes]`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

CASE = {"machine": "opteron6282-4p", "workload": "cg", "params": {"class": "C", "threads": 64}}
# Tiering: one STREAM thread on vm-tier, whose 128 MiB fast node is smaller than STREAM's 192 MB,
# so numa_balancing=2 with demotion demotes and promotes all along (as the placement goldens' case).
TIER = {"machine": "vm-tier", "workload": "stream", "params": {"n": 8_000_000, "ntimes": 400, "threads": 1}}
CHILD = r"""
import hashlib, json, resource, sys, time
import numalab
case = json.loads(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
r = numalab.simulate(case["machine"], case["workload"], case["placement"], **case["params"])
wall, cpu = time.perf_counter() - t, time.process_time() - c
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "sim_s": r.time_s, "samples": r.doc["engine"]["samples"],
                  "epochs": r.doc["engine"]["epochs"], "peak_mib": peak_kib / 1024, "status": r.status,
                  "hash": hashlib.sha256(json.dumps(r.doc, sort_keys=True).encode()).hexdigest()}))
"""


def one(placement: str, params: dict, base: dict = CASE) -> dict:
    case = dict(base, placement=placement, params=params)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout)


CORUN_CHILD = r"""
import json, sys, time
from numalab.spec import RunSpec
case = json.loads(sys.argv[1])
spec = RunSpec.create("e5620-2s", case["workload"], noise="off", params=case.get("params", {}))
bound = spec.bind()
best = None
for _ in range(3):  # the best of three: the machine is shared
    t = time.perf_counter()
    out = bound.simulate() if hasattr(bound, "groups") else bound.engine.simulate()
    wall = time.perf_counter() - t
    best = wall if best is None else min(best, wall)
print(json.dumps({"wall_s": best, "samples": out["engine"]["samples"], "sim_s": out["time_s"]}))
"""


def corun_bench(n: int) -> None:
    """8 copies of STREAM (n doubles each) against one 8-thread STREAM of 8 n."""
    cases = [("stream*8 co-run", {"workload": f"stream*8(n={n})"}), ("stream, 8 threads", {"workload": "stream", "params": {"n": 8 * n, "threads": 8}})]
    rates = []
    print(f"co-run benchmark: e5620-2s, STREAM n = {n:,} per copy")
    for label, case in cases:
        out = subprocess.run([sys.executable, "-c", CORUN_CHILD, json.dumps(case)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{label:<24} not available: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
            return
        f = json.loads(out.stdout)
        rates.append(f["samples"] / f["wall_s"])
        print(f"{label:<24}{f['wall_s']:>8.3f} s{f['samples']:>12,} samples{rates[-1] / 1e6:>8.2f} M samples/s")
    print(f"co-run / single process: {100 * rates[0] / rates[1]:.0f} % of the samples/s (bound: >= 80 %)")


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CG class B instead of C; a smaller co-run")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="run the set N times and keep each placement's best (default 1)")
    ap.add_argument("--noise-off", action="store_true", help="only the noise=off runs")
    ap.add_argument("--ratios-only", action="store_true", help="stop after the ratios (no compare, no co-run)")
    ap.add_argument("--hashes", action="store_true", help="also each run's document hash and one digest of them all")
    ap.add_argument("--corun-only", action="store_true", help="only the co-run benchmark")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat needs a whole number of runs, 1 or more, not {args.repeat}")
    return args


def main() -> None:
    args = arguments()
    quick = args.quick
    if args.corun_only:
        corun_bench(2_000_000 if quick else 10_000_000)
        return
    params = dict(CASE["params"], **({"class": "B"} if quick else {}))
    print(f"simulator benchmark: {CASE['workload']} class {params['class']}, {params['threads']} threads, {CASE['machine']}")
    print(f"{'placement':<44}{'wall_s':>8}{'sim_s':>8}{'samples':>12}{'samples/s':>12}{'sim_s/wall_s':>13}{'peak_MiB':>10}")
    # noise=off and thp=never keep the runs comparable across engine versions (the 3.13 profile
    # defaults to THP always, which makes each sample a 2 MiB visit); "default (noise on)" is the
    # engine as users run it. Each placement's samples/s is also printed as a ratio to first touch's
    # in the same noise setting of this run, so that the shared machine's load cancels out (issue
    # 27's goal: >= 95 %); --repeat N runs the set N times and keeps each placement's best.
    tier = ("cpunodebind=0", "cpunodebind=0:balancing=2:demotion-enabled")
    groups = {
        "noise=off": (CASE, params, ("noise=off", "noise=off:interleave=all", "noise=off:weighted-interleave=all",
                                     "noise=off:membind=0-3:cpunodebind=0", "noise=off:balancing",
                                     "noise=off:thp=never:kernel=3.13:balancing")),
        "noise on": (CASE, params, ("default", "interleave=all", "weighted-interleave=all", "membind=0-3:cpunodebind=0",
                                    "balancing", "thp=never:kernel=3.13:balancing")),
        # against first touch on the same machine (vm-tier, STREAM), not CG's
        "tiering, noise=off": (TIER, TIER["params"], tuple(f"noise=off:{p}" for p in tier)),
        "tiering, noise on": (TIER, TIER["params"], tier),
    }
    repeat, only_noise_off = args.repeat, args.noise_off
    best: dict[tuple[str, str], dict] = {}
    hashes: dict[tuple[str, str], set[str]] = {}
    for _ in range(repeat):
        for group, (base, group_params, names) in groups.items():
            if only_noise_off and not group.endswith("noise=off"):
                continue
            for placement in names:
                f = one(placement, group_params, base)
                label = placement if base is CASE else f"{placement} ({base['machine']}, {base['workload']})"
                if "error" in f:
                    print(f"{label:<44}  not available: {f['error']}")
                    continue
                hashes.setdefault((group, placement), set()).add(f["hash"])
                # the ratio is on CPU time: on a busy shared host wall time counts other programs' turns
                f["rate"] = f["samples"] / f["cpu_s"]
                if (group, placement) not in best or f["rate"] > best[group, placement]["rate"]:
                    best[group, placement] = f
                print(f"{label:<44}{f['wall_s']:>8.2f}{f['sim_s']:>8.2f}{f['samples']:>12,}{f['rate'] / 1e6:>10.1f} M{f['sim_s'] / f['wall_s']:>13.2f}{f['peak_mib']:>10.0f}")
    # The engine steps simulated time in epochs (docs/contention.md §8): a placement that makes the
    # program slower runs more epochs for the same samples, and each epoch's CPU is much the same
    # whatever the placement, so first touch's epochs over the placement's bound the ratio unless
    # an epoch gets cheaper than first touch's. Both are printed beside the ratio.
    print(f"samples per CPU second as a ratio to first touch (best of {repeat}; goal >= 95 %); "
          "first touch's epochs over the run's; CPU µs per epoch, the run's and first touch's")
    for group, (_, _, names) in groups.items():
        if (group, names[0]) not in best:
            continue
        ft = best[group, names[0]]
        for placement in names[1:]:
            if (group, placement) in best:
                f = best[group, placement]
                ratio = 100 * f["rate"] / ft["rate"]
                print(f"  {group:<20}{placement:<54}{ratio:>6.0f} %{100 * ft['epochs'] / f['epochs']:>6.0f} %"
                      f"{1e6 * f['cpu_s'] / f['epochs']:>8.1f}{1e6 * ft['cpu_s'] / ft['epochs']:>8.1f}")
    if args.hashes:
        print("documents, sha256 of each run's JSON (sorted keys); a placement whose repetitions differ shows them all")
        for (group, placement), hs in hashes.items():
            print(f"  {group:<20}{placement:<54}{' '.join(h[:16] for h in sorted(hs))}")
        whole = hashlib.sha256("".join(f"{g}|{p}|{','.join(sorted(hs))}\n" for (g, p), hs in hashes.items()).encode())
        print(f"all documents: {whole.hexdigest()[:16]} ({len(hashes)} runs)")
    if args.ratios_only:
        return
    numalab = os.path.join(os.path.dirname(sys.executable), "numalab")
    cmd = [numalab, "compare", "--machine", CASE["machine"], "--workload", "cg", "--class", params["class"], "--threads", "64",
           "--configs", "default,interleave=all,membind=0-3"]
    t = time.perf_counter()
    rc = subprocess.run(cmd, capture_output=True).returncode
    print(f"3-config compare ({os.cpu_count()} CPUs): {time.perf_counter() - t:.2f} s wall (exit {rc})")
    corun_bench(2_000_000 if quick else 10_000_000)


if __name__ == "__main__":
    main()
