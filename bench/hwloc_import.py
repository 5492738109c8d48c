"""Import time of the largest topology of hwloc's test collection (bench/data/README.md): 384
PUs, 24 NUMA nodes, caches and 22 I/O objects, hwloc XML v3. Best of several imports, each the
whole path a user's ``--machine file.xml`` takes (parse with defusedxml, build the MachineSpec,
resolve and validate it in Rust). Target: under 1 s."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from numalab.machine.hwloc_xml import _parse_xml, load_hwloc_xml

FILE = Path(__file__).parent / "data" / "192em64t-12gr2n8c2t.xml"
TARGET_S = 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5, help="imports timed (the best is reported)")
    args = ap.parse_args()
    parse_s, total_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        _parse_xml(FILE)
        t1 = time.perf_counter()
        m = load_hwloc_xml(FILE)
        t2 = time.perf_counter()
        parse_s.append(t1 - t0)
        total_s.append(t2 - t1)
    best = min(total_s)
    size_kib = FILE.stat().st_size / 1024
    print(
        f"hwloc import, {FILE.name} ({size_kib:.0f} KiB, {m.nr_pus} PUs, {len(m.node_os_indexes)} nodes): "
        f"{best * 1000:.0f} ms best of {args.repeat} (parse {min(parse_s) * 1000:.0f} ms); "
        f"target < {TARGET_S:g} s: {'met' if best < TARGET_S else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
