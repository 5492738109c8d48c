"""``numalab report`` shows progress once it has taken a second: a rich bar on a terminal, plain
lines otherwise, nothing before the second has passed."""

from __future__ import annotations

import io

from numalab.report.progress import Steps


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_before_the_delay():
    for stream in (io.StringIO(), _Tty()):
        s = Steps(stream, delay_s=60)
        s.add(3)
        for i in range(5):
            s.step(f"step {i}")
        s.stop()
        assert stream.getvalue() == ""


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    s = Steps(stream, delay_s=0, interval_s=0)
    s.add(1)
    s.step("read the store")
    s.step("case dgemv")
    s.step("wrote the report")
    s.stop()
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["report: 1/3 steps (read the store)", "report: 2/3 steps (case dgemv)",
                                                      "report: 3/3 steps (wrote the report)"]


def test_a_rich_bar_on_a_terminal():
    stream = _Tty()
    s = Steps(stream, delay_s=0)
    s.add(2)
    s.step("case a")
    assert s._bar is not None
    s.step("case b")
    s.stop()
    assert s._bar is None and "report" in stream.getvalue()


def test_a_report_counts_its_steps(tmp_path, cli):
    from numalab.report import write_report

    study = tmp_path / "p.toml"
    study.write_text('name = "p"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'
                     '[sweep]\nplacement = ["default", "interleave=all"]\n[sweep.params]\nthreads = [4, 8]\n')
    assert cli("study", str(study), "--results", str(tmp_path / "r"), "--workers", "1")[0] == 0
    stream = io.StringIO()
    steps = Steps(stream, delay_s=0, interval_s=0)
    write_report(study, tmp_path / "p.html", results=tmp_path / "r", progress=steps)
    lines = stream.getvalue().splitlines()
    assert steps.done == steps.total == 4  # the store, two cases, the file
    assert lines[-1].startswith("report: 4/4 steps (wrote the report)")
