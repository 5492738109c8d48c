"""Study files: validation errors name the file, the line, the key path and what is accepted;
`numalab schema` writes the JSON Schema; the shipped studies validate and expand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numalab.exceptions import UsageError
from numalab.study import expand, load_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"

HEAD = 'name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\n'


def _error(tmp_path: Path, body: str) -> str:
    f = tmp_path / "bad.toml"
    f.write_text(HEAD + body)
    with pytest.raises(UsageError) as e:
        expand(load_study(f))
    return str(e.value)


@pytest.mark.parametrize(
    "body, line, key, accepted",
    [
        # a misspelt key: the accepted keys of that table
        ('[[runs]]\nplacement = "default"\n[[runs]]\nplacement = "default"\n[[runs]]\nplacemnt = "x"\n', 9, "runs[2].placemnt", "label, machine, workload, params, placement, balancing, kernel, thp"),
        # an unknown placement option
        ('[[runs]]\nplacement = "default"\n[[runs]]\nplacement = "default"\n[[runs]]\nplacement = "interleaved=all"\n', 9, "runs[2].placement", "did you mean interleave?"),
        # a literal
        ('kernel = "5.0"\n', 4, "kernel", "2.6.32, 3.13, 6.1, 6.13"),
        ('[[runs]]\nkernel = "3.12"\n', 5, "runs[0].kernel", "2.6.32, 3.13, 6.1, 6.13"),
        # a workload parameter that does not exist, and a value outside its choices
        ("[params]\nnn = 3\n", 5, "params.nn", "init, n, reps, threads"),
        ('[sweep.params]\ninit = ["serial", "paralel"]\n', 5, "sweep.params.init[1]", "serial, parallel"),
        # balancing spellings
        ('[[runs]]\nbalancing = "on:scan-sise-mb=3"\n', 5, "runs[0].balancing", "scan-size-mb"),
        ("[sweep]\nbalancing = [{ enabled = false, scan_size_mb = 64 }]\n", 5, "sweep.balancing[0]", "enabled = true"),
        # node numbers checked against the machine
        ('[sweep]\nplacement = [\n  "default",\n  "membind=7",\n]\n', 7, "sweep.placement[1]", "nodes: 0-1"),
        # unknown machine: the close names
        ("", 2, "machine", "e5-2620v4-2s"),
    ],
)
def test_errors_name_file_line_key_and_accepted_values(tmp_path, body, line, key, accepted):
    if key == "machine":
        (tmp_path / "bad.toml").write_text(HEAD.replace("e5-2620v4-2s", "e5-2620v4-3s"))
        with pytest.raises(UsageError) as e:
            expand(load_study(tmp_path / "bad.toml"))
        msg = str(e.value)
    else:
        msg = _error(tmp_path, body)
    assert msg.startswith(f"{tmp_path / 'bad.toml'}:{line}: {key}: "), msg
    assert accepted in msg, msg


def test_seeds_and_repetitions_are_exclusive(tmp_path):
    msg = _error(tmp_path, "seeds = [1, 2]\nrepetitions = 3\n")
    assert "seeds or repetitions" in msg


def test_a_key_set_by_a_run_and_a_sweep_is_refused(tmp_path):
    msg = _error(tmp_path, '[sweep]\nplacement = ["default"]\n[[runs]]\nplacement = "interleave=all"\n')
    assert "runs[0].placement" in msg and "sweep axis" in msg


def test_malformed_toml_points_at_the_line(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(HEAD + "[sweep\n")
    with pytest.raises(UsageError, match=r"bad.toml:4:\d+: malformed TOML"):
        load_study(f)


def test_schema_command_writes_the_json_schema(cli, tmp_path):
    code, out, _ = cli("schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["title"] == "numalab study file"
    for key in ("machine", "workload", "params", "placement", "balancing", "kernel", "seeds", "baseline", "sweep", "runs", "report"):
        assert key in schema["properties"], key
    knobs = json.dumps(schema)
    assert "scan_period_min_ms" in knobs and "scan_size_mb" in knobs
    code, _, _ = cli("schema", "-o", str(tmp_path / "study.schema.json"))
    assert code == 0 and json.loads((tmp_path / "study.schema.json").read_text()) == schema


def test_study_cli_reports_a_bad_file_as_a_usage_error(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(HEAD + 'kernel = "5.0"\n')
    code, _, err = cli("study", str(f), "--results", str(tmp_path / "r"))
    assert code == 2
    assert err.startswith(f"numalab: {f}:4: kernel: '5.0' is not accepted (expected one of: 2.6.32, 3.13, 6.1, 6.13)")


@pytest.mark.parametrize("name, runs", [("example.toml", 16), ("s1-autonuma-npb.toml", 336), ("s2-dgemv-first-touch.toml", 30)])
def test_shipped_studies_validate_and_expand(name, runs):
    sf = load_study(STUDIES / name)
    assert "docs/studies.md" in sf.study.design
    resolved = expand(sf)
    assert len(resolved.runs) == runs
    assert len({r.hash for r in resolved.runs}) == runs


def test_s1_follows_the_design():
    resolved = expand(load_study(STUDIES / "s1-autonuma-npb.toml"))
    configs = [r.config for r in resolved.runs]
    assert {c["workload"] for c in configs} == {"ep", "cg", "mg", "ft", "bt", "sp", "lu"}
    assert {c["kernel"] for c in configs} == {"3.13"}
    assert {c["params"]["class"] for c in configs} == {"C"} and {c["params"]["threads"] for c in configs} == {64}
    periods = {(c["balancing"].get("scan_period_min_ms"), c["balancing"].get("scan_period_max_ms"), c["balancing"].get("scan_delay_ms")) for c in configs}
    for lo, hi in [(0, 50), (100, 500), (500, 1000), (1000, 2000), (4000, 6000), (6000, 10000)]:
        assert (lo, hi, (lo + hi) // 2) in periods
    assert {c["balancing"].get("scan_size_mb") for c in configs} == {None, 32, 64, 128}
    assert {c["placement"] for c in configs} == {"default", "interleave=all"}
