"""NPB's OpenMP implementations (docs/workloads.md §4.2): NAS's Fortran 3.4.2 and 3.3.1, RWCP's
NPB2.3-omp-C and SNU's NPB3.3-OMP-C, picked with --npb (old spelling --npb-version) on the CLI, in
config strings, study files and the Python API; each C implementation's regions cite the source
that allocates them and the loop that first writes them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import numalab
from numalab.exceptions import UsageError
from numalab.runner import sim as runner
from numalab.spec.run import NPB_IMPLEMENTATIONS, RunSpec
from numalab.study import expand, load_study
from numalab.workload import descriptor

NPB = ["bt", "sp", "lu", "mg", "ft", "cg", "ep", "is"]
#: The source tree each implementation's citations name.
TREES = {"3.4.2": "NPB3.4-OMP", "3.3.1": "NPB3.3-OMP", "rwcp-2.3-c": "NPB2.3-omp-C", "snu-3.3-c": "NPB3.3-OMP-C"}
C_IMPLEMENTATIONS = {k: v for k, v in TREES.items() if k.endswith("-c")}
#: "<tree>/<BENCH>/<file>: <function>, line <N>" opens every citation.
CITATION = re.compile(r"^(?P<tree>NPB[\w.-]+)/(?P<bench>[A-Z]{2})/[\w.]+\.(c|h|f|f90): (?P<function>\w+), lines? (?P<line>\d+)\b")
ONE_LINE_ERROR = "--npb: 'x' is not one of 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c"


@pytest.mark.parametrize("impl", sorted(TREES))
@pytest.mark.parametrize("name", NPB)
def test_every_region_of_every_implementation_cites_its_first_writing_loop(name: str, impl: str) -> None:
    desc, _, _ = descriptor.load(name)
    assert impl in descriptor.versions(desc), f"{name} has no {impl}"
    patched = descriptor.with_version(desc, impl)
    for region in patched.regions:
        cite = region.first_write
        assert cite, f"{name} {impl}: region {region.name} cites no source"
        m = CITATION.match(cite)
        assert m, f"{name} {impl}: region {region.name}: '{cite[:60]}' is not 'tree/BENCH/file: function, line N'"
        assert m["tree"] == TREES[impl] and m["bench"] == name.upper(), cite[:60]
        # The C translations state how each array is allocated (static, or malloc per row).
        assert impl not in C_IMPLEMENTATIONS or region.alloc is not None, f"{name} {impl}: region {region.name} does not say how it is allocated"
    # The implementation resolves, and names itself in the engine's input.
    assert descriptor.resolve(name, {"class": "S", "threads": 4}, version=impl)["version"] == impl


def _on_master(doc: dict) -> float:
    pages = doc["pages"]["per_node"]
    return pages[doc["threads"][0]["node"]] / sum(pages)


def test_rwcp_mg_rows_malloced_by_the_master_land_on_its_node() -> None:
    # Class W: rows of 66 doubles (528 bytes), each with a header the master writes at malloc time,
    # so every page of u, v and r is the master's before zero3's parallel loop writes the data.
    spec = RunSpec.create("e5-2620v4-2s", "mg", params={"class": "W", "threads": 16}, noise="off")
    rwcp = runner.run(spec.updated(npb="rwcp-2.3-c")).doc
    assert _on_master(rwcp) >= 0.99
    assert {r["region"] for r in rwcp["alloc"] if r["heap_chunks"] > 1000} >= {"u", "v", "r"}
    # The same grid as SNU's static arrays (or NAS's) is first written by the parallel loops: spread.
    for impl in ("snu-3.3-c", "3.3.1"):
        assert _on_master(runner.run(spec.updated(npb=impl)).doc) == pytest.approx(0.5, abs=0.05), impl


def test_the_option_and_its_old_spelling_in_run_settings_and_config_strings() -> None:
    spec = RunSpec.create("opteron6282-4p", "mg", params={"class": "S", "threads": 8})
    rwcp = spec.updated(npb="rwcp-2.3-c")
    assert rwcp == spec.updated(npb_version="rwcp-2.3-c") == spec.with_config("npb=rwcp-2.3-c")
    assert spec.with_config("npb-version=rwcp-2.3-c") == rwcp
    assert RunSpec.from_canonical(rwcp.canonical()) == rwcp
    assert rwcp.bind().workload["version"] == "rwcp-2.3-c"
    with pytest.raises(UsageError) as e:
        spec.updated(npb="x")
    assert str(e.value) == ONE_LINE_ERROR
    with pytest.raises(UsageError, match="npb: 'x' is not one of 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c"):
        spec.with_config("npb=x")


@pytest.mark.parametrize("option", ["--npb", "--npb-version"])
def test_the_cli_takes_npb_and_the_old_spelling(cli, option: str) -> None:
    args = ("sim", "--machine", "opteron6282-4p", "--workload", "mg", "--class", "S", "--threads", "8", "--json")
    code, out, err = cli(*args, option, "snu-3.3-c")
    assert code == 0, err
    assert json.loads(out)["workload"]["version"] == "snu-3.3-c"
    code, _, err = cli(*args, option, "x")
    assert code == 2 and err.strip() == f"numalab: {ONE_LINE_ERROR}"


def test_workloads_lists_the_implementations(cli) -> None:
    code, out, _ = cli("workloads")
    assert code == 0 and "NPB implementations (--npb): 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c" in out
    code, out, _ = cli("workloads", "mg")
    assert code == 0 and "implementations (--npb): 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c (default 3.4.2)" in out


STUDY = """\
name = "npb-key"
machine = "opteron6282-4p"
workload = "mg"
params = {{ class = "S", threads = 8 }}
{key} = "{value}"
"""


@pytest.mark.parametrize("key", ["npb", "npb_version"])
def test_study_files_take_npb_and_the_old_key(tmp_path: Path, key: str) -> None:
    p = tmp_path / "s.toml"
    p.write_text(STUDY.format(key=key, value="rwcp-2.3-c"))
    assert {r.config.get("npb_version") for r in expand(load_study(p)).runs} == {"rwcp-2.3-c"}
    p.write_text(STUDY.format(key=key, value="x"))
    with pytest.raises(UsageError) as e:
        load_study(p)
    message = str(e.value)
    assert "\n" not in message and all(i in message for i in NPB_IMPLEMENTATIONS), message


def test_the_api_takes_npb_and_the_old_keyword() -> None:
    a = numalab.simulate("opteron6282-4p", "mg", threads=8, npb="snu-3.3-c", **{"class": "S"})
    b = numalab.simulate("opteron6282-4p", "mg", threads=8, npb_version="snu-3.3-c", **{"class": "S"})
    assert a.doc["workload"]["version"] == b.doc["workload"]["version"] == "snu-3.3-c"
    with pytest.raises(UsageError) as e:
        numalab.simulate("opteron6282-4p", "mg", threads=8, npb="x", **{"class": "S"})
    assert ONE_LINE_ERROR in str(e.value) and "\n" not in str(e.value)


ONLY = """\
name = "only"
source = "test"
version = "a"
program = [{ phases = ["p"] }]
[params]
threads = 2
[[regions]]
name = "x"
bytes = 4096
[[regions]]
name = "y"
bytes = 4096
only = [%s]
[[phases]]
name = "p"
access = [{ region = "x", pattern = "block", wr = 1.0 }, { region = "y", pattern = "block", wr = 1.0 }]
[versions.b]
"""


def test_a_region_only_some_implementations_have_is_dropped_with_its_accesses(tmp_path: Path) -> None:
    p = tmp_path / "only.toml"
    p.write_text(ONLY % '"b"')
    a, b = descriptor.resolve(str(p)), descriptor.resolve(str(p), version="b")
    assert [r["name"] for r in a["regions"]] == ["x"] and len(a["phases"][0]["accesses"]) == 1
    assert [r["name"] for r in b["regions"]] == ["x", "y"] and len(b["phases"][0]["accesses"]) == 2
    p.write_text(ONLY % '"c"')
    with pytest.raises(UsageError, match="only names 'c', which is not one of its versions \\(a, b\\)"):
        descriptor.resolve(str(p))


def test_compare_npb_runs_each_configuration_per_implementation_with_its_own_baseline(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text(STUDY.format(key="npb", value="rwcp-2.3-c") + 'compare_npb = ["3.3.1"]\n[baseline]\nplacement = "default"\n'
                 '[[runs]]\nlabel = "default"\nplacement = "default"\n[[runs]]\nlabel = "interleave"\nplacement = "interleave=all"\n')
    runs = expand(load_study(p)).runs
    by_hash = {r.hash: r for r in runs}
    assert sorted((r.case, r.label) for r in runs) == [
        ("mg [3.3.1]", "default"), ("mg [3.3.1]", "interleave"), ("mg [rwcp-2.3-c]", "default"), ("mg [rwcp-2.3-c]", "interleave")]
    for r in runs:
        assert by_hash[r.baseline_hash].config.get("npb_version") == r.config.get("npb_version")


REPORTED = """\
name = "npb-beside"
design = "test, docs/studies.md §6.1"
machine = "e5-2620v4-2s"
workload = "mg"
params = { class = "S", threads = 4 }
npb = "rwcp-2.3-c"
compare_npb = ["3.3.1"]
[baseline]
label = "default"
placement = "default"
[[runs]]
label = "default"
placement = "default"
[[runs]]
label = "interleave"
placement = "interleave=all"
"""


def test_the_report_shows_each_implementations_speedups_and_access_maps(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from inline_backend import run_stored
    from numalab.report import write_report

    summary = run_stored(REPORTED, tmp_path / "s.toml", tmp_path / "r")
    assert (summary.ok, summary.failed) == (4, 0)
    md = write_report(tmp_path / "s.toml", tmp_path / "s.md", results=tmp_path / "r").read_text()
    speedups = md[md.index("## Speedup"):md.index("### Time")]
    rows = {line.split("|")[1].strip(): line for line in speedups.splitlines() if line.startswith("| mg")}
    assert set(rows) == {"mg \\[rwcp-2.3-c\\]", "mg \\[3.3.1\\]"}
    # Rows malloc'ed by RWCP's master put the grid on node 0, so interleaving gains; NAS's parallel
    # first touch is already spread, so it loses: the conclusion depends on the build.
    gain = {k: float(v.split("|")[3].split()[0]) for k, v in rows.items()}
    assert gain["mg \\[rwcp-2.3-c\\]"] > 1.0 > gain["mg \\[3.3.1\\]"]
    assert "### mg \\[rwcp-2.3-c\\]" in md and "### mg \\[3.3.1\\]" in md
