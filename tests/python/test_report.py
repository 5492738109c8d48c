"""Reports: the HTML file is self-contained and holds the speedup table (with confidence
intervals when repeated), the access-map heatmaps with their totals, pages per node and the
scatter plots asked for; figures are saved as PNG and SVG beside it; Markdown works too; and
the page renders in headless Chromium without console errors."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from numalab.exceptions import UsageError
from numalab.report import write_report
from numalab.report.stats import estimate, t975

from inline_backend import run_stored

STUDY = """
name = "rep"
description = "report test"
design = "S2, docs/studies.md §6.2 (reduced)"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 3000, reps = 5 }
seeds = [1, 2, 3]
[baseline]
placement = "default"
[sweep]
placement = ["default", "init=serial", "interleave=all"]
[sweep.params]
threads = [8, 16]
[[report.scatter]]
x = "remote_pct"
y = "speedup"
[[report.scatter]]
title = "intensity"
x = "baseline.dram_gbps"
y = "speedup"
color = "workload"
best = true
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    from numalab.study.executors import LocalBackend

    root = tmp_path_factory.mktemp("report")
    summary = run_stored(STUDY, root / "rep.toml", root / "results", lambda: LocalBackend(2))
    assert summary.ok == 18
    return root


class _Tables(HTMLParser):
    """Counts tables by class and collects the text of every cell."""

    def __init__(self):
        super().__init__()
        self.classes: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.classes.append(a.get("class") or "")
        if tag in ("td", "th"):
            self._in_cell = True
            self.cells.append("")
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith(("data:", "#")):
                self.external.append(a[key])

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.cells[-1] += data


def test_t_quantiles_and_intervals():
    # scipy.stats.t against the printed tables (t_{0.975}: 12.706 for df 1, 2.042 for 30, 1.96 in the limit)
    assert round(t975(1), 3) == 12.706 and round(t975(30), 3) == 2.042 and abs(t975(10**9) - 1.96) < 1e-3
    assert 2.0 < t975(50) < 2.021
    e = estimate([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.n == 3 and not e.identical and math.isclose(e.half_width, t975(2) / math.sqrt(3))
    assert estimate([5.0]).half_width is None and estimate([]) is None


def test_identical_repetitions_are_said_to_be_identical_not_a_zero_interval():
    from numalab.report.tables import format_estimate

    e = estimate([2.5, 2.5, 2.5])
    assert e.identical and e.half_width is None and e.n == 3
    assert format_estimate(e) == "2.50 (3 identical runs)"
    assert "±" not in format_estimate(e)
    assert format_estimate(estimate([1.0, 1.5])).startswith("1.25 ± ")
    assert format_estimate(estimate([1.0, 1.0001, 1.0002])) == "1.00010 ± 0.00025"  # a real spread never reads as ± 0.00


@pytest.fixture(scope="module")
def html_report(stored):
    """The HTML report, written once (its figures cost seconds) for the tests that only read it."""
    (stored / "out").mkdir(exist_ok=True)
    return write_report(stored / "rep.toml", stored / "out" / "report.html", results=stored / "results")


def test_html_report_is_self_contained_with_tables_and_heatmaps(stored, html_report):
    html = html_report.read_text()
    p = _Tables()
    p.feed(html)
    assert p.external == [], "the report must open without network"
    assert "<style>" in html and "<script" not in html
    assert p.classes.count("speedup") == 1
    # one heatmap per case (threads 8 and 16) and configuration (3 placements)
    assert p.classes.count("heatmap") == 6
    assert p.classes.count("pages") == 2
    for text in ("cpu node \\ memory", "memory node total", "local 100.0%", "remote 50.0%"):
        assert text in html, text
    # the speedup table: rows = cases, columns = configurations; repeated runs show ± intervals
    assert "dgemv threads=8" in p.cells and "dgemv threads=16" in p.cells
    # the baseline's own speedup is 1 for every seed although its times differ: said to be the
    # baseline, neither a zero-width interval nor "identical runs"
    assert any(re.fullmatch(r"1\.00 \(baseline\)", c) for c in p.cells)
    assert not any(re.search(r"± 0\.00$", c) for c in p.cells)
    assert "report test" in html and "S2, docs/studies.md §6.2" in html
    figures = sorted(f.name for f in (stored / "out" / "report-figures").iterdir())
    assert len([f for f in figures if f.endswith(".png")]) == len([f for f in figures if f.endswith(".svg")]) == 4  # 2 pages + 2 scatter
    assert html.count('src="data:image/svg+xml;base64,') == 4


def test_markdown_report(stored, cli):
    (stored / "md").mkdir(exist_ok=True)
    code, out, err = cli("report", str(stored / "results"), "-o", str(stored / "md" / "report.md"))  # .md: Markdown
    assert code == 0, err
    md = (stored / "md" / "report.md").read_text()
    assert md.startswith("# rep: report test")
    assert "| workload | default | init=serial | interleave=all |" in md
    assert "| **total** |" in md and "![" in md and "report-figures/" in md


def test_report_errors(stored, cli, tmp_path):
    code, _, err = cli("report", str(stored / "results"), "-o", str(tmp_path / "x.html"), "--format", "pdf")
    assert code == 2 and "expected one of: html, md" in err
    code, _, err = cli("report", str(stored / "results"), "--study", "nope", "-o", str(tmp_path / "x.html"))
    assert code == 2 and "expected one of: rep" in err
    # the study's own file with a report option edited (nothing re-runs): a bad metric is named
    bad = STUDY.replace('x = "remote_pct"', 'x = "remote_percent"')
    (stored / "rep.toml").write_text(bad)
    try:
        with pytest.raises(UsageError, match=r"report.scatter\[0\].x: unknown metric 'remote_percent' \(expected one of: .*remote_pct"):
            write_report(stored / "rep.toml", tmp_path / "x.html", results=stored / "results")
    finally:
        (stored / "rep.toml").write_text(STUDY)


def test_package_grouping_and_timelines(tmp_path, cli):
    study = tmp_path / "pkg.toml"
    study.write_text(
        'name = "pkg"\nmachine = "opteron6282-4p"\nworkload = "dgemv"\nkernel = "3.13"\nparams = { n = 3000, reps = 20, threads = 64, init = "serial" }\n'
        '[report]\naccess_map_groups = "package"\n'
        '[sweep]\nbalancing = [false, { enabled = true, scan_delay_ms = 0, scan_period_min_ms = 10, scan_period_max_ms = 50 }]\n'
    )
    code, _, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--workers", "1")
    assert code in (0, 1), err  # 1 while the simulator has no balancing: that run is recorded failed
    code, _, err = cli("report", str(study), "--results", str(tmp_path / "r"), "-o", str(tmp_path / "pkg.html"))
    assert code == 0, err
    html = (tmp_path / "pkg.html").read_text()
    assert "package \\ memory" in html and ">package3<" in html and "within a package" in html
    if code == 0 and "Failed runs" not in html:
        assert "Balancing over time" in html


# -- the report in a real browser ------------------------------------------------------------------


def _chromium() -> str | None:
    # .ci/run installs Debian's chromium; elsewhere the test runs where a chromium is found.
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-default-apps", "--enable-logging=stderr", "--v=0",
]


@pytest.mark.needs_browser
def test_report_renders_in_headless_chromium(html_report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does it)")
    url = html_report.resolve().as_uri()
    common = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    p = _Tables()
    p.feed(dom.stdout)
    assert p.classes.count("heatmap") == 6 and p.classes.count("speedup") == 1
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/svg\+xml', dom.stdout)) == 4
    shot = tmp_path / "report.png"
    run = subprocess.run([*common, f"--screenshot={shot}", "--window-size=1200,2000", url], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.stat().st_size > 10_000, run.stderr[-2000:]
    # Console messages (a script error, a resource that failed to load) are logged as CONSOLE lines.
    console = [line for line in (dom.stderr + run.stderr).splitlines() if "CONSOLE" in line or "Failed to load resource" in line]
    assert console == [], console
    print(f"screenshot: {shot}")
