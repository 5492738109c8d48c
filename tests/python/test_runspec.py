"""One run specification: the CLI, a config string, a study file and the Python API write the same
RunSpec, and every bad value is refused with one clear line, by the same rule wherever it comes
from (regression tests for the cases a new user's trial found)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numalab
from numalab.exceptions import USAGE_ERRORS, UsageError
from numalab.spec import Balancing, Placement, RunSpec
from numalab.spec import config as cfg
from numalab.study import expand, load_study

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")
HEAD = 'name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 1000, reps = 1 }\n'
FAST = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _study_error(tmp_path: Path, body: str, head: str = HEAD) -> str:
    f = tmp_path / "s.toml"
    f.write_text(head + body)
    with pytest.raises(UsageError) as e:
        expand(load_study(f))
    return str(e.value)


# --- the same run, whichever edge writes it -----------------------------------------------------


def test_cli_config_string_study_and_api_write_the_same_run(tmp_path, cli):
    from_config = RunSpec("e5-2620v4-2s", "dgemv").with_config("weighted-interleave=0,1:weights=0=5,1=2:balancing:scan-size-mb=128")
    from_config = from_config.updated(params={"n": 1000, "reps": 1})
    study = tmp_path / "s.toml"
    study.write_text(HEAD + 'placement = "weighted-interleave=0,1:weights=0:5,1:2"\nbalancing = "on:scan-size-mb=128MiB"\n')
    (run,) = expand(load_study(study)).runs
    assert RunSpec.from_canonical(run.config).bind().engine.placement_doc() == from_config.bind().engine.placement_doc()
    assert run.config["placement"] == from_config.canonical()["placement"] == "weighted-interleave=0,1:weights=0=5,1=2"
    assert run.config["balancing"] == {"enabled": True, "scan_size_mb": 128}
    code, out, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "1000", "--reps", "1",
                         "-w", "0,1", "--weights", "0:5,1:2", "--balancing", "on", "--scan-size-mb", "128", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["placement"]["weights"] == {"node0": 5, "node1": 2}
    api = numalab.simulate("e5-2620v4-2s", "dgemv", "weighted-interleave=0,1:weights=0=5,1=2:balancing:scan-size-mb=128", n=1000, reps=1)
    assert api.doc["placement"] == doc["placement"]
    # weighted interleave really follows the weights: 5:2 of the pages
    pages = doc["pages"]["per_node"]
    assert abs(pages[0] / pages[1] - 5 / 2) < 0.05


def test_numactl_short_options(cli):
    for short, long_ in (("-i", "--interleave"), ("-m", "--membind"), ("-N", "--cpunodebind"), ("-P", "--preferred-many")):
        a = cli("sim", *SMALL, short, "0-1", "--json")
        b = cli("sim", *SMALL, long_, "0-1", "--json")
        assert a[0] == 0 and a[1] == b[1], (short, a[2])
    assert json.loads(cli("sim", *SMALL, "-p", "2", "--json")[1])["placement"]["nodes"] == "2"
    assert json.loads(cli("sim", *SMALL, "-l", "--json")[1])["placement"]["policy"] == "local"
    assert json.loads(cli("sim", *SMALL, "-C", "0-1", "--json")[1])["placement"]["cpubind"] == "0-1"


def test_help_has_no_stray_escapes(cli):
    for command in ("sim", "compare", "topo", "study", "report"):
        code, out, _ = cli(command, "--help")
        assert code == 0 and "\\[" not in out and "\\]" not in out, command


def test_header_shows_given_parameters_and_verbose_all(cli):
    _, out, _ = cli("sim", "--machine", "vm-4", "--workload", "cg", "--class", "S", "--threads", "4")
    head = out.splitlines()[0]
    assert head.startswith("cg (class=S, threads=4) on vm-4")
    _, out, _ = cli("sim", "--machine", "vm-4", "--workload", "cg", "--class", "S", "--threads", "4", "--verbose")
    assert "na=1400" in out.splitlines()[0]  # the class table's size, derived from class=S


# --- bad values: one line, exit 2, the same rule everywhere -------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (("-m", "0", "-i", "all"), "give at most one memory policy option"),
        (("-m", "7",), "node 7 in '7' does not exist on this machine (nodes: 0-3)"),
        (("-p", "0-1",), "--preferred takes exactly one node, got '0-1' (2 nodes)"),
        (("--weights", "0:5",), "weights are given but the policy is default"),
        (("-w", "0,1", "--weights", "2:5"), "weight given for node 2, which is not in the weighted-interleave nodes"),
        (("-w", "0,1", "--weights", "0:300"), "weight of node 0 must be 1..255, got 300"),
        (("-N", "0", "-C", "1"), "give --cpunodebind or --physcpubind, not both"),
        (("--seed", "18446744073709551616"), "--seed must be 0..18446744073709551615"),
        (("--seed", "-1"), "--seed must be 0.."),
        (("--sample-rate", "nan"), "--sample-rate: 'nan' is not a number"),
        (("--sample-rate", "0"), "--sample-rate must be in (0, 1], got 0"),
        (("--omp-proc-bind", "spread", "-C", "0-1"), "4 threads cannot be bound one per place"),
        (("--kernel", "5.4"), "--kernel: '5.4' is not one of 2.6.32, 3.13, 6.1, 6.13"),
        (("--ntimes", "0"), "ntimes must be at least 1, got 0"),
        (("--ntimes", "2.5"), "ntimes must be a whole number (ASCII digits), got '2.5'"),
        (("--n", "1", "--n", "2"), "--n is given twice"),
    ],
)
def test_bad_cli_values(cli, args, message):
    code, out, err = cli("sim", *SMALL, *args)
    assert code == 2, (out, err)
    assert err.startswith("numalab: ") and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    "config, message",
    [
        ("membind=0:membind=1", "'membind' is given twice"),
        ("interleave=all:membind=0", "two memory policies (interleave=all and membind)"),
        ("localalloc=1", "localalloc takes no value"),
        ("interleave=", "interleave needs a node list"),
        ("omp-proc-bind=sometimes", "--omp-proc-bind: 'sometimes' is not one of"),
        ("weights=0:x", "weights: bad item '0:x'"),
        ("balancing:scan-period-min-ms=2000:scan-period-max-ms=1000", "--scan-period-min-ms (2000) is above --scan-period-max-ms (1000)"),
        ("interleaved=all", "unknown option 'interleaved'; did you mean interleave?"),
        ("hot-threshold-ms=5", "memory-tiering knob"),
    ],
)
def test_bad_config_strings(config, message):
    with pytest.raises(USAGE_ERRORS, match=None) as e:
        RunSpec("vm-4", "stream").with_config(config).updated(params={"n": 1000}).bind()
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "body, message",
    [
        ("[params]\nn = true\n", "n must be a whole number, got True"),
        ("[params]\nn = 2000.5\n", "n must be a whole number, got 2000.5"),
        ('[sweep.params]\nthreads = []\n', "sweep.params.threads"),
        ("seeds = [18446744073709551616]\n", "seeds"),
        ("repetitions = 100000000\n", "repetitions"),
        ("[sweep.params]\nn = [" + ",".join(str(i + 1) for i in range(1000)) + "]\nreps = [" + ",".join(str(i + 1) for i in range(1000)) + "]\n",
         "asks for 1,000,000 runs"),
        ('balancing = "on:scan-period-min-ms=5000:scan-period-max-ms=100"\n', "--scan-period-min-ms (5000) is above --scan-period-max-ms (100)"),
        ('placement = "membind=0:membind=1"\n', "'membind' is given twice"),
        ('[[runs]]\nlabel = "a"\nplacement = "default"\n[[runs]]\nlabel = "a"\nplacement = "interleave=all"\n',
         "label 'a' (case 'dgemv') is already used by runs[0].label for another configuration"),
    ],
)
def test_bad_study_values(tmp_path, body, message):
    head = HEAD.replace("params = { n = 1000, reps = 1 }\n", "") if body.startswith("[params]") else HEAD
    assert message in _study_error(tmp_path, body, head)


def test_labelled_runs_crossed_with_a_sweep_are_not_duplicates(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(HEAD + '[sweep]\nbalancing = [false, true]\n[[runs]]\nlabel = "a"\nplacement = "default"\n[[runs]]\nlabel = "b"\nplacement = "interleave=all"\n')
    assert len(expand(load_study(f)).runs) == 4


# --- properties: no input gives a traceback, a hang, or nonsense accepted ------------------------

ITEM_WORDS = st.sampled_from(list(cfg.KNOWN) + ["init", "n", "threads", "bogus", "", "weights", "1", "!", "+"])
VALUES = st.one_of(st.sampled_from(["all", "0", "0-3", "!1", "+0-1", "3-0", "9", "-1", "on", "off", "1e9", "x", "0:5,1:2",
                                    "0=5", "spread", "cores", "", "128MiB", "2s", "nan"]), st.text(max_size=6))
ITEMS = st.lists(st.tuples(ITEM_WORDS, st.booleans(), VALUES).map(lambda t: t[0] + ("=" + t[2] if t[1] else "")), max_size=5)


@FAST
@given(items=ITEMS)
def test_config_strings_either_give_a_valid_run_or_a_usage_error(items):
    text = ":".join(items)
    try:
        spec = RunSpec("vm-4", "stream").updated(params={"n": 1000, "threads": 4}).with_config(text)
        bound = spec.bind()
    except USAGE_ERRORS as e:
        message = str(e.args[0]) if e.args else str(e)
        assert message and "\n" not in message and "Traceback" not in message
        return
    # accepted: the canonical form reads back to the same run, and the engine agreed to it
    again = RunSpec.from_canonical(spec.canonical())
    assert again.canonical() == spec.canonical()
    assert bound.engine.threads == 4


SCALARS = st.one_of(st.booleans(), st.integers(-5, 10**20), st.floats(allow_nan=True), st.sampled_from(["serial", "x", "1", ""]))
KEYS = st.sampled_from(["placement", "balancing", "kernel", "thp", "seeds", "repetitions", "sample_rate", "params", "label", "zz"])


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    return json.dumps(v)


@FAST
@given(entries=st.lists(st.tuples(KEYS, st.one_of(SCALARS, st.lists(SCALARS, max_size=3))), max_size=4))
def test_study_files_either_expand_or_say_where_they_are_wrong(tmp_path_factory, entries):
    lines = []
    for key, value in entries:
        text = "[" + ", ".join(_toml_value(v) for v in value) + "]" if isinstance(value, list) else _toml_value(value)
        lines.append(f"{key} = {text}")
    f = tmp_path_factory.mktemp("h") / "s.toml"
    f.write_text(HEAD + "\n".join(dict.fromkeys(lines)) + "\n")
    try:
        study = expand(load_study(f))
    except USAGE_ERRORS as e:
        assert str(e).startswith(str(f)), str(e)
        return
    assert study.runs and len({r.hash for r in study.runs}) == len(study.runs)
    for r in study.runs:
        assert RunSpec.from_canonical(r.config).canonical() == r.config


def test_balancing_parse_accepts_every_spelling_and_only_them():
    assert Balancing.parse(True) == Balancing.parse("on") == Balancing.parse({"enabled": True})
    assert Balancing.parse("on:scan-delay-ms=2s").canonical() == {"enabled": True, "scan_delay_ms": 2000}
    assert Balancing.parse({"enabled": True, "scan_size_mb": "1GiB"}).value("scan_size_mb") == 1024
    for bad in ("sometimes", {"enabled": True, "scan_size": 1}, "on:scan-size-mb=-1", 3.5):
        with pytest.raises(UsageError):
            Balancing.parse(bad)


def test_placement_items_round_trip():
    p = Placement(policy="bind", nodes="0-1", cpunodebind="0", omp_proc_bind="close", omp_places="threads")
    assert RunSpec("vm-4", "stream").with_config(p.label()).placement == p


def test_every_error_a_worker_can_raise_pickles():
    """A study worker sends its exception back to the client: every numalab error must survive pickling."""
    import pickle

    from numalab.exceptions import NumalabError, PolicyError, SimulationError, SpecError, TopologyError
    from numalab.runner.host import AgentFailed, CommandNotFound
    from numalab.workload.descriptor import ParamError

    for e in (ParamError("n", "n must be a whole number"), AgentFailed("agent failed", 1), CommandNotFound("x: not found", 127),
              SpecError("bad"), SimulationError("bad"), PolicyError("bad"), TopologyError("bad"), NumalabError("bad")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and getattr(back, "code", None) == getattr(e, "code", None)
        assert getattr(back, "key", None) == getattr(e, "key", None)


def test_absurd_sizes_are_refused_before_the_run_as_bad_input(cli):
    code, _, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "10000000", "--reps", "1")
    assert code == 2 and "would need" in err and "limit" in err, err
    code, _, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--threads", "100000000")
    assert code == 2 and err.startswith("numalab: ") and err.count("\n") == 1, err
