"""User text reaches the terminal with its control characters made visible (an ESC sequence in a
label, descriptor or preset name would otherwise recolour the terminal, move the cursor or
retitle the window), and a CSV export never hands a spreadsheet a formula: cells starting with
= + - @ are prefixed with ' (OWASP, "CSV Injection")."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from numalab.console.tables import render, table
from numalab.console.text import printable

from inline_backend import run_stored

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
STUDY = r'''
name = "esc"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
[baseline]
placement = "default"
label = "=HYPERLINK(\"http://x\",\"y\")"
[[runs]]
label = "\u001b]0;pwned\u0007\u001b[2J red \u202e"
placement = "interleave=all"
[[runs]]
label = "+1 @SUM(A1) -x"
placement = "membind=0"
'''
LIBRARY = Path(__file__).parents[2] / "python" / "numalab"


def test_printable():
    assert printable("a\x1b[31mb\x07\r\n\tc\u202ed\x9b") == r"a\x1b[31mb\x07\r\n\tc\u202ed\x9b"
    assert printable("one\ntwo\t\x1b", lines=True) == "one\ntwo\t\\x1b"
    assert printable("plain ü €") == "plain ü €"


def test_tables_show_control_characters_and_markup_literally():
    out = render(table(["\x1b[1mhead"], [["\x1b[31mred", "[bold]x[/bold]"]], title="t\x1b]0;x\x07"))
    assert not RAW.search(out.replace("\n", ""))
    assert r"\x1b[31mred" in out and "[bold]x[/bold]" in out and r"t\x1b]0;x\x07" in out


def _stored(tmp_path):
    run_stored(STUDY, tmp_path / "esc.toml", tmp_path / "r")
    return tmp_path / "r"


def test_study_and_results_print_labels_escaped(cli, tmp_path):
    results = _stored(tmp_path)
    for argv in (["results", "list", "-r", str(results)], ["study", str(tmp_path / "esc.toml"), "-r", str(results), "--dry-run"]):
        code, out, err = cli(*argv)
        assert code == 0, err
        assert not RAW.search(out.replace("\n", "")) and not RAW.search(err.replace("\n", "")), argv
        assert r"\x1b]0;pwned\x07\x1b[2J red \u202e" in out, argv


def test_errors_quoting_user_text_are_escaped(cli, tmp_path):
    bad = STUDY + '[[runs]]\nlabel = "\\u001b]0;pwned\\u0007\\u001b[2J red \\u202e"\nplacement = "membind=1"\n'
    (tmp_path / "bad.toml").write_text(bad)
    code, _, err = cli("study", str(tmp_path / "bad.toml"), "-r", str(tmp_path / "r"), "--dry-run")
    assert code == 2 and "is already used" in err and r"\x1b]0;pwned\x07" in err
    assert not RAW.search(err.replace("\n", ""))


def test_descriptor_and_preset_names_are_escaped(cli, tmp_path):
    text = (LIBRARY / "workload" / "library" / "dgemv.toml").read_text()
    text = re.sub(r'^name = ".*"', r'name = "evil\\u001b[31m"', text, count=1, flags=re.M)
    (tmp_path / "evil.toml").write_text(text)
    code, out, err = cli("workloads", str(tmp_path / "evil.toml"))
    assert code == 0, err
    assert out.startswith(r"evil\x1b[31m: ") and not RAW.search(out.replace("\n", ""))
    text = (LIBRARY / "machine" / "presets" / "e5-2420-2s.toml").read_text()
    text = re.sub(r'^description = ".*"', r'description = "d\\u001b[2J"', text, count=1, flags=re.M)
    (tmp_path / "m.toml").write_text(text)
    code, out, err = cli("topo", "--machine", str(tmp_path / "m.toml"))
    assert code == 0, err
    assert r"d\x1b[2J" in out and not RAW.search(out.replace("\n", ""))


def test_csv_export_neutralises_formulas(cli, tmp_path):
    results = _stored(tmp_path)
    code, _, err = cli("results", "export", "--csv", str(tmp_path / "x.csv"), "-r", str(results))
    assert code == 0, err
    with open(tmp_path / "x.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    labels = {r["label"] for r in rows}
    assert labels == {"'=HYPERLINK(\"http://x\",\"y\")", "'+1 @SUM(A1) -x", "\x1b]0;pwned\x07\x1b[2J red \u202e"}
    for r in rows:
        assert not any(v.startswith(("=", "+", "-", "@")) for v in r.values()), r
        assert float(r["time_s"]) > 0  # numbers stay numbers
