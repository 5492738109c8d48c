"""Two studies started at once on a new results directory: the store is created once, complete,
and metric columns that both add at the same moment are added once (no ``duplicate column
name``); every run of both studies is stored."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

ROUNDS = 4
WRITERS = 3

SCRIPT = """
import sys, time
from pathlib import Path
from numalab.results.store import Store
from numalab.study import expand, parse_study

root, i, start, rounds = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
text = 'name = "s%d"\\nmachine = "e5-2620v4-2s"\\nworkload = "dgemv"\\nparams = { n = 2000, reps = 2 }\\nseeds = [1, 2, 3]\\n' % i
resolved = expand(parse_study(text, str(root / ("s%d.toml" % i))))
for r in range(rounds):
    while time.time() < start + r * 0.4:
        time.sleep(0.0005)
    with Store(root / ("r%d" % r)) as store:
        store.register_study(resolved)
        for run in resolved.runs:
            cols = {"time_s": 1.0, "vmstat_race_a": 1, "vmstat_race_b": 2, "race_only_%d" % i: 3}
            store.write("s%d" % i, run, {"status": "ok", "error": None, "wall_s": 0.0, "result": "{}", "columns": cols})
"""


def test_writers_creating_and_extending_one_new_store_at_once(tmp_path):
    start = time.time() + 4.0  # every process has imported numalab by then
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path), str(i), str(start), str(ROUNDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(WRITERS)]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err
    for r in range(ROUNDS):
        con = sqlite3.connect(tmp_path / f"r{r}" / "numalab.db")
        assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 3 * WRITERS
        assert con.execute("SELECT count(DISTINCT study) FROM results").fetchone()[0] == WRITERS
        cols = {c[1] for c in con.execute("PRAGMA table_info(runs)")}
        assert {"vmstat_race_a", "vmstat_race_b", *(f"race_only_{i}" for i in range(WRITERS))} <= cols
        con.close()
        leftovers = [p.name for p in (tmp_path / f"r{r}").iterdir() if p.name.endswith(".tmp")]
        assert leftovers == [], "a half-made store was left behind"


STUDY = 'name = "{name}"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = {{ n = 2000, reps = 2 }}\nseeds = [1, 2]\n[sweep]\nplacement = [{placements}]\n'


def test_two_study_commands_at_once_on_a_new_results_directory(tmp_path):
    (tmp_path / "a.toml").write_text(STUDY.format(name="a", placements='"default", "interleave=all"'))
    (tmp_path / "b.toml").write_text(STUDY.format(name="b", placements='"membind=0", "membind=1"'))
    results = tmp_path / "results"
    procs = [subprocess.Popen([sys.executable, "-m", "numalab.cli.main", "study", str(tmp_path / f"{n}.toml"), "--results", str(results),
                               "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "4 of 4 runs done: 4 ok" in out
    con = sqlite3.connect(results / "numalab.db")
    assert dict(con.execute("SELECT study, count(*) FROM results GROUP BY study").fetchall()) == {"a": 4, "b": 4}
    con.close()
