"""numactl's ``-b`` with ``--membind`` (MPOL_F_NUMA_BALANCING): ``numalab sim -m NODES -b``, the
config item ``membind-balancing``, and the kernel's rules (bind only; Linux 5.12+)."""

import json

import pytest

from numalab.runner.host import agent_args
from numalab.spec import Placement, RunSpec
from numalab.spec.run import _region_policy

SERIAL = ("--machine", "vm-4", "--workload", "dgemv", "--n", "4000", "--threads", "4", "--init", "serial")
FAST = ("--balancing", "on", "--scan-delay-ms", "100", "--scan-period-min-ms", "100")


def sim(cli, *args):
    code, out, err = cli("sim", *SERIAL, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_balancing_migrates_a_bound_process_only_among_its_nodes(cli):
    flagged = sim(cli, "-m", "0-1", "-b", *FAST)
    assert flagged["placement"]["membind_balancing"] is True
    assert flagged["vmstat"]["numa_pages_migrated"] > 0
    per_node = flagged["pages"]["per_node"]
    assert per_node[0] > 0 and per_node[1] > 0 and per_node[2] == per_node[3] == 0
    plain = sim(cli, "-m", "0-1", *FAST)
    assert "membind_balancing" not in plain["placement"]
    assert plain["vmstat"]["numa_pte_updates"] == 0, "a plain bind policy carries no MPOL_F_MOF: never scanned"
    assert plain["pages"]["per_node"][1] == 0


@pytest.mark.parametrize("args,message", [
    (("-b",), "numalab: -b/--membind-balancing needs --membind (MPOL_F_NUMA_BALANCING is only valid with MPOL_BIND), not default"),
    (("-i", "all", "-b"), "not --interleave"),
    (("-m", "0", "-b", "--kernel", "3.13"), "numalab: -b/--membind-balancing: Linux 3.13 has no MPOL_F_NUMA_BALANCING (added in 5.12)"),
])
def test_refused_where_numactl_and_the_kernel_refuse_it(cli, args, message):
    code, out, err = cli("sim", *SERIAL, *args)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err


def test_config_item_round_trips_and_reaches_the_engine():
    s = RunSpec.create("vm-4", "dgemv").with_config("membind=0-1:membind-balancing")
    assert s.placement.membind_balancing and s.placement.label() == "membind=0-1:membind-balancing"
    assert s.placement.engine()["policy"]["numa_balancing"] is True
    assert not RunSpec.create("vm-4", "dgemv").with_config("membind=0:membind-balancing=off").placement.membind_balancing
    assert _region_policy({"name": "a", "policy": "membind=0:membind-balancing"})["numa_balancing"] is True
    with pytest.raises(Exception, match="is not on or off"):
        RunSpec.create("vm-4", "dgemv").with_config("membind=0:membind-balancing=maybe")


def test_a_host_run_passes_numactls_b_to_the_agent():
    assert agent_args(Placement(policy="bind", nodes="0", membind_balancing=True)) == ["--membind=0", "--balancing"]


def test_a_host_document_says_membind_balancing_as_a_simulated_one_does():
    from numalab.results.agent import _placement

    start = {"placement": {"policy": "bind", "nodes": "0-1", "flags": ["balancing"], "numactl": ["--membind=0-1", "--balancing"]}}
    assert _placement(start, False, 0, None, "6.8.0", "false", None)["membind_balancing"] is True
    start["placement"]["flags"] = []
    assert "membind_balancing" not in _placement(start, False, 0, None, "6.8.0", "false", None)
