"""One progress display (numalab.console.progress) for every long command: a rich bar on a
terminal, plain lines elsewhere for the commands that ask for them, nothing otherwise.
``numalab report`` shows it once it has taken a second."""

from __future__ import annotations

import io

from numalab.console.progress import Progress, clock, working
from numalab.report import steps as Steps


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_before_the_delay():
    for stream in (io.StringIO(), _Tty()):
        s = Steps(stream=stream, delay_s=60)
        s.add(3)
        for i in range(5):
            s.step(f"step {i}")
        s.stop()
        assert stream.getvalue() == ""


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    s = Steps(stream=stream, delay_s=0, interval_s=0)
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
    s = Steps(stream=stream, delay_s=0)
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
    steps = Steps(stream=stream, delay_s=0, interval_s=0)
    write_report(study, tmp_path / "p.html", results=tmp_path / "r", progress=steps)
    lines = stream.getvalue().splitlines()
    assert steps.done == steps.total == 4  # the store, two cases, the file
    assert lines[-1].startswith("report: 4/4 steps (wrote the report)")


def test_plain_lines_name_the_step_count_the_detail_and_the_time():
    stream = io.StringIO()
    p = Progress("runs", unit="done", stream=stream, interval_s=0, eta=True)
    p.start(4)
    p.update(0, "2 running, 0 failed")
    p.update(2, "2 running, 1 failed")
    p.stop()
    lines = stream.getvalue().splitlines()
    assert lines == ["runs: 0/4 done, 2 running, 0 failed, elapsed 0:00:00, eta ?",
                     "runs: 2/4 done, 2 running, 1 failed, elapsed 0:00:00, eta 0:00:00"]


def test_a_last_line_when_the_state_changed_since_the_last_one():
    stream = io.StringIO()
    with Progress("sensitivity", 3, unit="runs", stream=stream, interval_s=3600) as p:
        for i in range(3):
            p.step(f"case {i}")
    assert stream.getvalue().splitlines() == ["sensitivity: 1/3 runs (case 0), elapsed 0:00:00",
                                          "sensitivity: 3/3 runs (case 2), elapsed 0:00:00"]


def test_commands_whose_stderr_stays_clean_show_nothing_off_a_terminal_but_count():
    for kwargs in ({"plain": False}, {"quiet": True}):
        stream = io.StringIO()
        with Progress("simulating", 2, stream=stream, interval_s=0, **kwargs) as p:
            p.step("a")
            p.step("b")
        assert stream.getvalue() == "" and p.done == 2
    quiet_tty = _Tty()
    with Progress("simulating", 1, stream=quiet_tty, quiet=True) as p:
        p.step()
    assert quiet_tty.getvalue() == "" and p._bar is None


def test_working_is_silent_off_a_terminal_and_draws_on_one():
    stream = io.StringIO()
    with working("simulating", stream=stream):
        pass
    assert stream.getvalue() == ""
    tty = _Tty()
    with working("simulating", stream=tty):
        pass
    assert "simulating" in tty.getvalue()


def test_clock():
    assert [clock(s) for s in (0, 59.6, 3600 + 61)] == ["0:00:00", "0:01:00", "1:01:01"]
