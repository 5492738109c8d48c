"""User text in figures is drawn as written: labels, scatter titles and legend entries holding
``$...$`` (matplotlib's TeX mathtext), backslashes or a lone ``$`` neither fail the report nor
turn into typeset formulas; the SVG figures carry them literally."""

from __future__ import annotations

import re

from numalab.report import write_report
from numalab.report.figures import literal
from numalab.results.store import Store
from numalab.study import expand, parse_study
from numalab.study.sweep import run_study

from inline_backend import InlineBackend

BAD = r"$\q$ and x$_{$ cost \alpha"
STUDY = rf'''
name = "tex"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = {{ n = 2000, reps = 2 }}
[baseline]
placement = "default"
[[runs]]
label = '{BAD}'
placement = "default"
[[runs]]
label = '$\frac{{1}}{{2}}$'
placement = "interleave=all"
[[report.scatter]]
title = '{BAD} scatter'
x = "remote_pct"
y = "speedup"
'''


def test_labels_with_mathtext_are_drawn_literally(tmp_path):
    (tmp_path / "tex.toml").write_text(STUDY)
    sf = parse_study(STUDY, str(tmp_path / "tex.toml"))
    with Store(tmp_path / "r") as store:
        assert run_study(expand(sf), store, InlineBackend).ok == 2
    out = write_report(tmp_path / "tex.toml", tmp_path / "tex.html", results=tmp_path / "r")
    # The SVG's comments repeat each text as given; the drawn text is in its elements.
    svgs = {p.name: re.sub(r"<!--.*?-->", "", p.read_text(), flags=re.S) for p in (tmp_path / "tex-figures").glob("*.svg")}
    pages = next(t for n, t in svgs.items() if "pages" in n)
    scatter = next(t for n, t in svgs.items() if "scatter" in n)
    for text in (pages, scatter):
        assert BAD in text and r"$\frac{1}{2}$" in text
    assert f"{BAD} scatter" in scatter
    assert out.read_text().count("data:image/svg+xml") >= 2


def test_literal_escapes_every_dollar():
    assert literal("a $x$ b") == r"a \$x\$ b"
    assert literal(r"\$") == r"\\$"
    assert literal("no math") == "no math"
