"""Full result documents of one small run per placement kind, compared with stored golden files.

The engine's speed work (issue 27: every placement at first-touch speed) must keep results
bit-identical; these cases cover each placement path it touches: first touch, interleave, weighted
interleave, membind with and without its fallback, preferred(-many), NUMA balancing on the 3.13 and
6.13 profiles (membind-balancing too), tiering (numa_balancing = 2 with demotion) and noise on/off.
NUMALAB_UPDATE_GOLDEN=1 writes the files under tests/golden/placements/.
"""

from __future__ import annotations

import json

import pytest

import numalab

# CG class A at 1 sample in 20: long enough (0.26 simulated s) for NUMA balancing to scan, fault
# and migrate with a 10 ms scan delay and period; vm-tier's 128 MiB fast node is smaller than
# STREAM's 192 MB, so tiering demotes and promotes.
CG = ("opteron6282-4p", "cg", {"class": "A", "threads": 16})
TIER = ("vm-tier", "stream", {"n": 8_000_000, "ntimes": 4, "threads": 1})
SCAN = "scan-delay-ms=10:scan-period-min-ms=10"
CASES = {
    "first-touch": (*CG, "noise=off", None),
    "first-touch-noise": (*CG, "default", None),
    "interleave": (*CG, "noise=off:interleave=all", None),
    "interleave-noise": (*CG, "interleave=all", None),
    "weighted-interleave": (*CG, "noise=off:weighted-interleave=all", None),
    "membind": (*CG, "noise=off:membind=0-1", None),
    "membind-fallback": (*CG, "noise=off:membind=0-3:cpunodebind=0", None),
    "preferred": (*CG, "noise=off:preferred=1", None),
    "balancing-613": (*CG, f"noise=off:balancing:{SCAN}", None),
    "balancing-613-noise": (*CG, f"balancing:{SCAN}", None),
    "balancing-613-interleave": (*CG, f"noise=off:interleave=all:balancing:{SCAN}", None),
    "balancing-313": (*CG, f"noise=off:thp=never:kernel=3.13:balancing:{SCAN}", None),
    "balancing-313-noise": (*CG, f"kernel=3.13:balancing:{SCAN}", None),
    "membind-balancing": (*CG, f"noise=off:membind=0-1:membind-balancing:balancing:{SCAN}", None),
    "tiering": (*TIER, f"noise=off:cpunodebind=0:{SCAN}:hot-threshold-ms=100", "2:demotion-enabled"),
    "tiering-noise": (*TIER, f"cpunodebind=0:{SCAN}:hot-threshold-ms=100", "2:demotion-enabled"),
    "preferred-fast-demotion": (*TIER, "noise=off:preferred-many=0:cpunodebind=0", "demotion-enabled"),
    "weighted-interleave-tier": (*TIER, "noise=off:weighted-interleave=0,2:cpunodebind=0", "weighted-interleave-auto"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_document_matches_golden(name, golden):
    machine, workload, params, placement, balancing = CASES[name]
    r = numalab.simulate(machine, workload, placement, balancing=balancing, sample_rate=0.05, **params)
    assert r.status == "ok", r.doc.get("error")
    golden(f"placements/{name}.json", json.dumps(r.doc, sort_keys=True, indent=1) + "\n")
