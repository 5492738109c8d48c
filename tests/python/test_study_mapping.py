"""A study's ``mapping_metrics`` key (docs/mapping.md §8, docs/studies.md §6.5): each run's
document gets the data mapping analysis, its headline figures become store columns and the
report shows them per case; without the key runs keep their hash, document and columns."""

from __future__ import annotations

import json

import pytest

from numalab.exceptions import UsageError
from numalab.report import write_report
from numalab.results import load
from numalab.results.store import Store
from numalab.study import expand, parse_study
from numalab.study.sweep import run_study

from inline_backend import InlineBackend

STUDY = """
name = "m"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2048, reps = 10, threads = 8 }
KEY
[baseline]
label = "serial init"
params = { init = "serial" }
[[runs]]
label = "serial init"
params = { init = "serial" }
[[runs]]
label = "parallel init"
params = { init = "parallel" }
"""

MAPPING_COLUMNS = ("exclusivity_4k_pct", "exclusivity_2m_pct", "exclusivity_1g_pct", "first_touch_loc_app_pct", "first_touch_b_acc_pct")


def _run(tmp_path, key: str):
    text = STUDY.replace("KEY", key)
    path = tmp_path / "m.toml"
    path.write_text(text)
    resolved = expand(parse_study(text, str(path)))
    with Store(tmp_path / "results") as store:
        assert run_study(resolved, store, InlineBackend).ok == 2
    return resolved, load(tmp_path / "results", "m", documents=True).set_index("label")


def test_the_key_stores_the_headline_figures_and_the_report_shows_them(tmp_path):
    resolved, df = _run(tmp_path, "mapping_metrics = true")
    assert all(r.config["mapping_metrics"] is True for r in resolved.runs)
    par, ser = df.loc["parallel init"], df.loc["serial init"]
    # dgemv's matrix is block-partitioned: every page is used by one node, and parallel
    # initialisation puts it there; the master's serial initialisation puts it all on node 0.
    assert par["exclusivity_4k_pct"] == pytest.approx(100.0, abs=0.5)
    assert par["first_touch_loc_app_pct"] == pytest.approx(100.0, abs=0.5)
    assert ser["first_touch_loc_app_pct"] < 75.0
    assert ser["first_touch_b_acc_pct"] > par["first_touch_b_acc_pct"]
    for row in (par, ser):
        assert row["exclusivity_4k_pct"] >= row["exclusivity_2m_pct"] >= row["exclusivity_1g_pct"] >= 50.0 - 1e-9
        doc = json.loads(row["result"])
        assert doc["mapping"]["exclusivity"] * 100.0 == pytest.approx(row["exclusivity_4k_pct"])
        assert all("time_s" not in s for s in doc["mapping"]["mappings"])  # no extra runs per mapping

    md = write_report(tmp_path / "m.toml", tmp_path / "r.md", results=tmp_path / "results").read_text()
    assert "## Data mapping" in md
    # (Markdown text escapes the underscores.)
    assert "| configuration | exclusivity 4 KiB % | exclusivity 2 MiB % | exclusivity 1 GiB % | Loc\\_App first touch % | B\\_Acc first touch % |" in md
    row = next(line for line in md.splitlines() if line.startswith("| parallel init | 100.0 |"))
    assert row.split(" | ")[4] == "100.0"  # Loc_App of first touch after parallel initialisation
    assert "page exclusivity, % of accesses per bin" in md and "| 100% |" in md
    page = write_report(tmp_path / "m.toml", tmp_path / "r.html", results=tmp_path / "results").read_text()
    assert 'id="mapping"' in page and "exclusivity 2 MiB %" in page


def test_without_the_key_runs_keep_their_hash_document_and_columns(tmp_path):
    on = expand(parse_study(STUDY.replace("KEY", "mapping_metrics = true")))
    off_explicit = expand(parse_study(STUDY.replace("KEY", "mapping_metrics = false")))
    resolved, df = _run(tmp_path, "")
    assert [r.hash for r in off_explicit.runs] == [r.hash for r in resolved.runs]
    assert all("mapping_metrics" not in r.config for r in resolved.runs)
    # With the key only the key is added, so the configurations differ in hash and nothing else.
    assert [{k: v for k, v in r.config.items() if k != "mapping_metrics"} for r in on.runs] == [r.config for r in resolved.runs]
    assert not {r.hash for r in on.runs} & {r.hash for r in resolved.runs}
    assert not set(MAPPING_COLUMNS) & set(df.columns)
    assert all("mapping" not in json.loads(d) for d in df["result"])
    md = write_report(tmp_path / "m.toml", tmp_path / "r.md", results=tmp_path / "results").read_text()
    assert "Data mapping" not in md


@pytest.mark.parametrize(
    "text, says",
    [
        ('name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nmapping_metrics = 1\n', "mapping_metrics"),
        ('name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "stream*2"\nmapping_metrics = true\n', "is a co-run, and mapping_metrics analyses one workload"),
        ('name = "t"\nkind = "taskgraph"\nmapping_metrics = true\n[[experiments]]\nname = "x"\nmachine = "e5-2620v4-2s"\ngraph = "lb_test"\n',
         "mapping_metrics belong to placement studies"),
    ],
)
def test_the_key_is_refused_where_it_cannot_apply(text, says):
    with pytest.raises(UsageError) as e:
        expand(parse_study(text, "t.toml"))
    assert says in str(e.value)
