"""Did you mean: a mistyped option, workload or graph parameter, command, workload or machine name
ends in one line with the nearest spelling and exit code 2 (issue 20 item 6)."""

from __future__ import annotations

import pytest

from numalab.cli.suggest import closest

SIM = ("sim", "--machine", "vm-4", "--workload", "stream", "--n", "20000")


def _one_line(cli, *args: str) -> str:
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("numalab: "), err
    return err.strip()


def test_a_mistyped_placement_option_is_not_taken_for_a_workload_parameter(cli):
    err = _one_line(cli, *SIM, "--interleav", "all")
    assert err == ("numalab: --interleav is neither an option of numalab sim nor a parameter of workload stream "
                   "(--n, --ntimes, --threads); did you mean --interleave?")


def test_a_mistyped_workload_parameter(cli):
    assert _one_line(cli, *SIM, "--thread", "4").endswith("; did you mean --threads?")


def test_nothing_close_suggests_nothing(cli):
    err = _one_line(cli, *SIM, "--xyzzy", "4")
    assert "did you mean" not in err and "(--n, --ntimes, --threads)" in err


def test_compare_suggests_its_own_options(cli):
    err = _one_line(cli, "compare", "--machine", "vm-4", "--workload", "stream", "-c", "default,interleave=all", "--jbos", "2")
    assert err.endswith("; did you mean --jobs?") and "numalab compare" in err


def test_lb_suggests_graph_parameters(cli):
    err = _one_line(cli, "lb", "--machine", "vm-4", "--n-object", "20")
    assert "a parameter of graph lb_test" in err and err.endswith("; did you mean --n-objects?")


@pytest.mark.parametrize(("args", "expected"), [
    (("topo", "--machin", "vm-4"), "no such option --machin for numalab topo; did you mean --machine?"),
    (("study", "--worker", "2", "s.toml"), "no such option --worker for numalab study; did you mean --workers?"),
    (("results", "list", "--stat", "ok"), "no such option --stat for numalab results list; did you mean --status?"),
])
def test_unknown_options_of_any_command(cli, args, expected):
    assert _one_line(cli, *args) == "numalab: " + expected


@pytest.mark.parametrize(("args", "suggestion"), [(("simm",), "sim"), (("comapre", "-h"), "compare"), (("results", "lst"), "list"),
                                                   (("vm", "chek"), "check")])
def test_unknown_commands(cli, args, suggestion):
    err = _one_line(cli, *args)
    assert err.startswith(f"numalab: no such command '{args[-2] if args[-1] == '-h' else args[-1]}' for numalab")
    assert err.endswith(f"; did you mean {suggestion}?")


def test_workload_and_machine_names(cli):
    assert _one_line(cli, "sim", "--machine", "vm-4", "--workload", "strem").endswith("; did you mean stream?")
    assert _one_line(cli, "workloads", "strem").endswith("; did you mean stream?")
    err = _one_line(cli, "sim", "--machine", "vm-5", "--workload", "stream")
    assert err.startswith("numalab: unknown machine preset 'vm-5' (") and err.endswith("; did you mean vm-8?")


def test_closest_picks_one_or_none():
    assert closest("--interleav", ["--interleave", "--membind", "--n"]) == "--interleave"
    assert closest("--zzz", ["--interleave", "--membind"]) is None


def test_lb_leaves_numactls_b_alone(cli):
    # numactl's -b is --balancing (MPOL_F_NUMA_BALANCING with --membind); lb's task load balancers are --balancers.
    err = _one_line(cli, "lb", "--machine", "vm-4", "-b", "greedy")
    assert err.startswith("numalab: no such option -b for numalab lb")


def test_a_mistyped_config_item(cli):
    err = _one_line(cli, "compare", *SIM[1:], "-c", "default,interleaved=all")
    assert err == "numalab: config 'interleaved=all': unknown option 'interleaved'; did you mean interleave?"
