"""studies/s5-data-mapping.toml follows design S5 (docs/studies.md §6.5)."""

from pathlib import Path

from numalab.study import expand, load_study

S5 = Path(__file__).resolve().parents[2] / "studies" / "s5-data-mapping.toml"


def test_s5_follows_the_design():
    resolved = expand(load_study(S5))
    runs = resolved.runs
    assert len(runs) == 24 and len({r.hash for r in runs}) == 24
    configs = [r.config for r in runs]
    # Every run carries the data mapping analysis (exclusivity, numalize's scores: docs/mapping.md §8).
    assert all(c["mapping_metrics"] is True for c in configs)
    assert {c["workload"] for c in configs} == {"comd", "lbm-omp", "lulesh", "ondes3d"}
    # All hardware threads: 2 x 12 on lsc-srv1, 8 x 6 on blade01.
    assert {(c["machine"], c["params"]["threads"]) for c in configs} == {("e5-2420-2s", 24), ("e5-4617-8s", 48)}
    assert {c["params"]["steps"] for c in configs} == {100}
    cells = {(r.label, r.config["placement"], r.config["params"]["init"]) for r in runs}
    assert cells == {("first touch", "default", "serial"), ("interleave", "interleave=all", "serial"),
                     ("parallel init", "default", "parallel")}
    # Each run's baseline is first touch with the original init on its own machine and workload.
    by_hash = {r.hash: r for r in runs}
    for r in runs:
        b = by_hash[r.baseline_hash]
        assert b.label == "first touch" and (b.config["machine"], b.config["workload"]) == (r.config["machine"], r.config["workload"])
