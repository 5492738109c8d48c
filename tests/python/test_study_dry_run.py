"""``study --dry-run`` of a large sweep counts its runs from the file and lists only the first
ones, so it answers in seconds (it used to expand and check all 100,000 runs, for about a minute
at best); the runs it lists are exactly the first runs the study expands to."""

from __future__ import annotations

import json
import time

from numalab.study import expand, parse_study
from numalab.study.expand import sample

PLACEMENTS = ["default", "interleave=all", "membind=0", "membind=1", "preferred=0", "preferred=1", "localalloc",
              "cpunodebind=0", "cpunodebind=1", "interleave=0,1"]
BIG = f"""
name = "big"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = {{ reps = 2 }}
seeds = {list(range(1, 11))}
[sweep]
placement = {json.dumps(PLACEMENTS)}
[sweep.params]
n = {list(range(1000, 2000))}
"""


def test_dry_run_of_a_100000_run_sweep_takes_seconds(cli, tmp_path):
    (tmp_path / "big.toml").write_text(BIG)
    start = time.monotonic()
    code, out, err = cli("study", str(tmp_path / "big.toml"), "--results", str(tmp_path / "r"), "--dry-run")
    elapsed = time.monotonic() - start
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 21 and lines[-1].startswith("100,000 runs planned") and "the first 20 are listed" in lines[-1]
    assert lines[0].endswith("to run  dgemv n=1000 | default | seed 1")
    assert elapsed < 10, f"dry run took {elapsed:.1f} s"
    assert not (tmp_path / "r").exists(), "a dry run creates no store"
    code, out, err = cli("study", str(tmp_path / "big.toml"), "--results", str(tmp_path / "r"), "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["planned"] == 100_000 and doc["sampled"] is True and len(doc["runs"]) == 20


def test_the_sample_is_the_first_runs_of_the_expansion():
    text = """
name = "mix"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { reps = 2 }
seeds = [1, 2]
[baseline]
placement = "default"
[[runs]]
thp = "never"
[[runs]]
balancing = true
[[runs]]
label = "mine"
kernel = "3.13"
[sweep]
placement = ["membind=0", "preferred=1"]
[sweep.params]
n = [1000, 2000, 3000]
"""
    sf = parse_study(text, "mix.toml")
    full = [(r.hash, r.case, r.label, r.config["seed"]) for r in expand(sf).runs if r.role == "run"]
    part = [(r.hash, r.case, r.label, r.config["seed"]) for r in sample(sf, len(full))]
    assert len(full) == 36 and part == full
