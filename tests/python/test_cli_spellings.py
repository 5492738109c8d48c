"""One spelling per setting, the older one kept as an alias: each alias reaches the same value
as the spelling it stands for, on the command line and in config strings (issue 19 item 5)."""

from __future__ import annotations

import json

import click
import pytest
import typer.main

from numalab.cli.main import app
from numalab.spec import RunSpec
from numalab.spec.balancing import Balancing
from numalab.spec.run import MAX_SEED

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")


def parsed(*argv: str) -> dict:
    """The parameters click reads for ``numalab ARGV`` (parsing only, nothing runs)."""
    cmd: click.Command = typer.main.get_command(app)
    ctx = cmd.make_context("numalab", list(argv), resilient_parsing=True)
    args = list(argv)
    while isinstance(cmd, click.Group):
        name = args.pop(0)
        cmd = cmd.get_command(ctx, name)
        ctx = cmd.make_context(name, args, parent=ctx)
    return ctx.params


@pytest.mark.parametrize("spelling", ["--demotion-enabled", "--demotion"])
def test_demotion_enabled_and_its_alias(spelling):
    assert parsed("sim", *SMALL, spelling, "on")["demotion"] == "on"


def test_demotion_alias_runs_as_the_kernels_name(cli):
    docs = []
    for spelling in ("--demotion-enabled", "--demotion"):
        code, out, err = cli("sim", *SMALL, "--balancing", "2", spelling, "on", "--json")
        assert code == 0, err
        docs.append(json.loads(out)["placement"]["balancing"])
    assert docs[0] == docs[1] and docs[0]["demotion_enabled"] is True


def test_config_demotion_alias():
    base = RunSpec.create("vm-4", "stream")
    assert base.with_config("demotion=on") == base.with_config("demotion-enabled=on") == base.with_config("demotion-enabled")
    assert base.with_config("demotion-enabled").balancing.demotion
    assert Balancing.parse("2:demotion") == Balancing.parse("2:demotion-enabled")


def test_weights_both_separators_on_the_cli_and_in_configs(cli):
    base = RunSpec.create("vm-4", "stream")
    by_eq = base.with_config("weighted-interleave=all:weights=0=5,1=2")
    assert base.with_config("weighted-interleave=all:weights=0:5,1:2") == by_eq
    assert by_eq.placement.weights == ((0, 5), (1, 2))
    docs = []
    for weights in ("0=5,1=2", "0:5,1:2"):
        code, out, err = cli("sim", *SMALL, "-w", "all", "--weights", weights, "--json")
        assert code == 0, err
        docs.append(json.loads(out)["placement"])
    assert docs[0] == docs[1]


@pytest.mark.parametrize("spelling", ["-j", "--jobs", "--workers"])
def test_study_jobs_has_one_letter_and_two_names(cli, tmp_path, spelling):
    assert parsed("study", "s.toml", spelling, "3")["jobs"] == 3
    code, _, err = cli("study", str(tmp_path / "s.toml"), spelling, "0")
    assert code == 2 and err == "numalab: --jobs must be >= 1, got 0\n"


@pytest.mark.parametrize("command", [("compare", "-c", "default,interleave=all"), ("sensitivity",), ("advise",)])
def test_j_is_jobs_in_every_command(command):
    assert parsed(*command, *SMALL, "-j", "2")["jobs"] == 2


@pytest.mark.parametrize("spelling", ["--guest-memory-per-node-mib", "--memory-per-node-mib"])
@pytest.mark.parametrize("command", ["run", "shell", "check"])
def test_vm_guest_memory_and_its_alias(command, spelling):
    args = ["vm", command, spelling, "256"] + (["--", "true"] if command == "run" else [])
    assert parsed(*args)["memory_per_node_mib"] == 256


def test_guest_memory_is_not_the_simulators_unsized_node_memory():
    # sim's --memory-per-node-mib sizes nodes a machine file leaves unsized; vm's is the guest RAM.
    sim_help = _help("sim")
    vm_help = _help("vm", "run")
    assert "--guest-memory-per-node-mib" in vm_help and "--guest-memory" not in sim_help
    assert "the machine's source gives no size" in sim_help


def test_seed_help_and_check_agree(cli):
    assert "0..2^64-1" in _help("sim") and "2^63" not in _help("sim")
    assert RunSpec.create("vm-4", "stream", seed=str(MAX_SEED)).seed == 2**64 - 1
    code, _, err = cli("sim", *SMALL, "--seed", str(2**64))
    assert code == 2 and "--seed must be 0..18446744073709551615" in err


def _help(*argv: str) -> str:
    cmd: click.Command = typer.main.get_command(app)
    ctx = click.Context(cmd, info_name="numalab")
    for name in argv:
        cmd = cmd.get_command(ctx, name)  # type: ignore[attr-defined]
        ctx = click.Context(cmd, info_name=name, parent=ctx)
    return " ".join(cmd.get_help(ctx).split())
