"""The report's Sensitivity section says where each conclusion flips (the variant and the speedup
it gives) and reads a range that no variant moves as such, not as an interval."""

from __future__ import annotations

import json

from numalab.report.markdown import text
from numalab.report.sensitivity import html_section, load, md_section

DOC = {
    "schema": "numalab.sensitivity/1",
    "study": "s",
    "parameters": [{"id": "m:latency.loaded_curve", "factor": True, "low": 0.75, "high": 1.5, "source": "estimate"}],
    "variants": ["nominal", "m:latency.loaded_curve=low", "m:latency.loaded_curve=high"],
    "comparisons": [
        {"case": "dgemv", "config": "interleave=all", "baseline": "default", "speedup": 1.02, "speedup_low": 0.97, "speedup_high": 1.04,
         "flips": True, "flipped_by": ["m:latency.loaded_curve=low"],
         "speedups": {"nominal": 1.02, "m:latency.loaded_curve=low": 0.97, "m:latency.loaded_curve=high": 1.04}},
        {"case": "dgemv", "config": "membind=0", "baseline": "default", "speedup": 0.5, "speedup_low": 0.5, "speedup_high": 0.5,
         "flips": False, "flipped_by": [], "speedups": {"nominal": 0.5}},
    ],
}


def test_flips_name_the_variant_and_its_speedup(tmp_path):
    (tmp_path / "s.sensitivity.json").write_text(json.dumps(DOC))
    view = load(tmp_path / "numalab.db", "s")
    assert view.flipped == {("dgemv", "interleave=all")}
    md = "\n".join(md_section(view, text))
    assert "1 of 2 conclusions flip" in md
    row = next(line for line in md.splitlines() if "interleave=all vs default" in line)
    assert "flips: m:latency.loaded\\_curve=low (0.970)" in row
    assert "0.970 - 1.040" in row
    html = html_section(view)
    assert "flips: m:latency.loaded_curve=low (0.970)" in html


def test_a_range_no_variant_moves_is_said_so(tmp_path):
    (tmp_path / "s.sensitivity.json").write_text(json.dumps(DOC))
    md = "\n".join(md_section(load(tmp_path / "numalab.db", "s"), text))
    row = next(line for line in md.splitlines() if "membind=0 vs default" in line)
    assert "0.500 (no variant moves it)" in row and "0.500 - 0.500" not in row
    assert row.rstrip(" |").endswith("holds")
