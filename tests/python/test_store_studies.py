"""A study name belongs to one study file per results directory: a second file with the same
name is refused (its runs would replace the first one's), unless --replace; the file edited in
place, or moved unchanged, stays the same study; a report never shows one study's text with
another's numbers."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from numalab.exceptions import UsageError
from numalab.report import write_report

A = """
name = "same"
description = "study A: interleave"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
[sweep]
placement = ["default", "interleave=all"]
"""
B = """
name = "same"
description = "study B: membind"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 3000, reps = 2 }
[sweep]
placement = ["membind=0", "membind=1"]
"""


@pytest.fixture
def two(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "study.toml").write_text(A)
    (tmp_path / "b" / "study.toml").write_text(B)
    return tmp_path / "a" / "study.toml", tmp_path / "b" / "study.toml", tmp_path / "results"


def _placements(results) -> set[str]:
    con = sqlite3.connect(results / "numalab.db")
    try:
        return {p for (p,) in con.execute("SELECT placement FROM results WHERE study = 'same'")}
    finally:
        con.close()


def test_a_second_file_with_the_same_name_is_refused_and_nothing_changes(cli, two):
    a, b, results = two
    code, _, err = cli("study", str(a), "--results", str(results), "--workers", "1")
    assert code == 0, err
    code, _, err = cli("study", str(b), "--results", str(results), "--workers", "1")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert f"a different study named 'same' is already stored here (from {a.resolve()}, 2 runs" in lines[0]
    assert "--replace" in lines[0] and "rename this one" in lines[0]
    assert _placements(results) == {"default", "interleave=all"}
    # the dry run says so too, without failing
    code, _, err = cli("study", str(b), "--results", str(results), "--dry-run")
    assert code == 0 and "running this file there needs --replace" in err


def test_a_report_never_pairs_one_studys_text_with_anothers_numbers(cli, two, tmp_path):
    a, b, results = two
    assert cli("study", str(a), "--results", str(results), "--workers", "1")[0] == 0
    with pytest.raises(UsageError, match=r"the study 'same' in .* was run from another file \(.*a/study.toml\)"):
        write_report(b, tmp_path / "r.html", results=results)
    md = write_report(a, tmp_path / "a.md", results=results).read_text()
    assert "study A: interleave" in md and "study B" not in md and "interleave=all" in md
    # with --replace, B becomes the study: its text with its numbers, and A is the other file now
    code, _, err = cli("study", str(b), "--results", str(results), "--workers", "1", "--replace")
    assert code == 0, err
    assert _placements(results) == {"membind=0", "membind=1"}
    md = write_report(results, tmp_path / "b.md").read_text()
    assert "study B: membind" in md and "membind=1" in md and "study A" not in md and "interleave=all" not in md
    with pytest.raises(UsageError, match="was run from another file"):
        write_report(a, tmp_path / "r.html", results=results)


def test_the_same_file_edited_or_moved_is_the_same_study(cli, two, tmp_path):
    a, _, results = two
    assert cli("study", str(a), "--results", str(results), "--workers", "1")[0] == 0
    a.write_text(A.replace('"interleave=all"]', '"interleave=all", "membind=0"]'))  # edited in place: resumes
    code, out, err = cli("study", str(a), "--results", str(results), "--workers", "1")
    assert code == 0 and "1 of 1 runs done" in out and "2 already in the store" in out, err
    moved = tmp_path / "moved.toml"
    shutil.move(a, moved)  # moved unchanged: still the same study
    code, out, err = cli("study", str(moved), "--results", str(results), "--workers", "1")
    assert code == 0 and "3 already in the store" in out, err


def test_a_report_of_an_edited_file_shows_the_stored_configuration(cli, two, tmp_path):
    a, _, results = two
    assert cli("study", str(a), "--results", str(results), "--workers", "1")[0] == 0
    a.write_text(A.replace("study A: interleave", "study A, edited").replace('"interleave=all"]', '"interleave=all", "membind=1"]')
                 + '[report]\ntitle = "New title"\n')
    md = write_report(a, tmp_path / "r.md", results=results).read_text()
    assert md.startswith("# New title")  # the file's report options apply
    assert "has changed since its runs were stored" in md
    assert "study A: interleave" in md and "study A, edited" not in md  # the text that produced the numbers
    assert "membind=1" not in md
