"""S5's scientific proxies (docs/workloads.md §4.6): sizes as the design states, every region's
allocation and first write cited, and serial initialisation putting the persistent data on the
main thread's node where parallel initialisation spreads it."""

import pytest

from numalab.api import simulate
from numalab.workload.descriptor import load, resolve

PROXIES = ["lbm-omp", "lulesh", "comd", "ondes3d"]
# Small sizes: what is tested is where the pages go, not the footprint.
SMALL = {
    "lbm-omp": {"nx": 512, "ny": 256, "steps": 2},
    "lulesh": {"s": 24, "steps": 1},
    "comd": {"nx": 24, "steps": 1},
    "ondes3d": {"nx": 64, "ny": 64, "nz": 48, "steps": 1},
}
GB = 1e9


@pytest.mark.parametrize("name", PROXIES)
def test_every_region_cites_its_allocation_and_first_write(name):
    desc, _path, _text = load(name)
    assert desc.source.strip()
    for r in desc.regions:
        assert r.first_write and r.alloc == "malloc", f"{name}: region {r.name}"
    if name == "ondes3d":
        assert "Source not found" in desc.source and all(r.first_write.startswith("modelled") for r in desc.regions)


def _footprint(name):
    return sum(r["bytes"] for r in resolve(name, {})["regions"])


def test_s5_sizes():
    # docs/workloads.md §4.6: the defaults are S5's sizes, 100 steps, 24 threads (lsc-srv1).
    for name in PROXIES:
        p = load(name)[0].params
        assert p["steps"] == 100 and p["threads"] == 24 and p["init"] == "serial"
    assert load("lulesh")[0].params["s"] == 175 and load("comd")[0].params["nx"] == 150
    # D2Q9 8000 x 8000: two grids of 10 entries per cell, 8 B each.
    assert _footprint("lbm-omp") == pytest.approx(2 * 8 * 10 * 8000 * 8000, rel=1e-9)
    # CoMD: 93^3 local boxes (floor(150 x 3.615 / 5.7875)), 95^3 with the halo, 64 slots x 88 B.
    assert _footprint("comd") == 64 * 88 * 95**3
    # Every proxy fits lsc-srv1's 15.6 GB.
    for name in PROXIES:
        assert _footprint(name) < 15.6 * GB, name


def _node0_share(r):
    pages = r.pages()
    return pages.iloc[0] / pages.sum()


@pytest.mark.parametrize("name", PROXIES)
def test_serial_init_concentrates_and_parallel_init_spreads(name):
    runs = {
        init: simulate("e5-2420-2s", name, omp_proc_bind="close", omp_places="cores", threads=12, init=init, **SMALL[name])
        for init in ("serial", "parallel")
    }
    serial, parallel = runs["serial"], runs["parallel"]
    # LULESH's per-cycle temporaries are first-touched in parallel in both variants: only its
    # persistent fields move.
    assert _node0_share(serial) > (0.3 if name == "lulesh" else 0.97)
    assert 0.35 < _node0_share(parallel) < 0.65
    assert _node0_share(serial) > _node0_share(parallel) + 0.1
    assert parallel.metrics["local_pct"] > serial.metrics["local_pct"] + 10
