"""`--kernel 2.6.32` (study S4's kernel, docs/scheduler.md §13): accepted by the CLI, config
strings and the result document; RHEL 6's THP default; no automatic NUMA balancing."""

import json

from numalab.spec.run import KERNELS, THP_DEFAULT

SMALL = ("--machine", "e5620-2s", "--workload", "stream", "--n", "200000", "--threads", "2")


def test_the_profile_is_listed_with_rhel6_thp():
    assert KERNELS == ("2.6.32", "3.13", "6.1", "6.13")
    assert THP_DEFAULT["2.6.32"] == "always"


def test_sim_runs_with_2_6_32_and_records_it(cli):
    code, out, err = cli("sim", *SMALL, "--kernel", "2.6.32", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kernel"] == "2.6.32"
    assert doc["time_s"] > 0


def test_numa_balancing_with_2_6_32_is_one_usage_line(cli):
    code, out, err = cli("sim", *SMALL, "--kernel", "2.6.32", "--balancing", "on")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numalab: "), err
    assert "automatic NUMA balancing" in lines[0] and "2.6.32" in lines[0]


def test_an_unknown_kernel_is_one_usage_line_naming_the_profiles(cli):
    code, _, err = cli("sim", *SMALL, "--kernel", "2.4")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0] == "numalab: --kernel: '2.4' is not one of 2.6.32, 3.13, 6.1, 6.13"
