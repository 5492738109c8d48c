"""``processes[]`` of a result document (design README §3.1): each process's ``time_s`` and an
``alone_time_s`` that stays null until co-run studies record a process's time alone."""

import json
from pathlib import Path

from numalab.results import agent

RUN = Path(__file__).parent.parent / "fixtures" / "agent" / "four-node-balancing"


def test_simulated_processes_carry_a_null_alone_time(cli):
    code, out, err = cli("sim", "--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4", "--json")
    assert code == 0, err
    procs = json.loads(out)["processes"]
    assert procs and all(p["alone_time_s"] is None and p["time_s"] > 0 for p in procs)


def test_measured_processes_carry_a_null_alone_time():
    recs = agent.read_records(RUN / "run.jsonl")
    doc = agent.document(recs, json.loads((RUN / "topo.json").read_text()), json.loads((RUN / "knobs.json").read_text()), "6.8.0")
    assert [p["alone_time_s"] for p in doc["processes"]] == [None]
