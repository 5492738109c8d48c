"""``bench/vm_loaded_host.py`` (docs/scheduler.md §10.39): busy loops in QEMU's own autogroup, and
the agent's CPU per sample read from ``bench/agent_first_sample.py``'s bursts."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("vm_loaded_host", REPO / "bench" / "vm_loaded_host.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: ``agent_first_sample.py sched-passive none`` with one loop in QEMU's group (2026-11-27
#: 23:34:28 UTC): run 1's first sample woke on the grid, slept 10 ms inside and went on for
#: 38.6 ms; each run's last stretch (0.59 s / 0.65 s after the last sample) is the agent's
#: wake-up at the command's end and its exit snapshot; pid 130 is the outer agent.
PROBE = """\
sched-passive none run 1 pid 133: samples (ms CPU, in order) 0.3 (0 faults), 9.4 (2 faults), 15.6 (2 faults), 10.9 (1 faults); all bursts 0.00s/14.6/8 0.00s/21.7/17 0.00s/15.1/14 0.02s/15.9/0 0.00s/0.1/0 0.00s/0.1/0 0.00s/18.2/0 0.91s/0.3/0 0.01s/38.6/27 0.96s/9.4/2 0.99s/15.6/2 0.59s/10.9/1 0.00s/17.2/0 0.00s/14.5/2
sched-passive none run 1 pid 135: samples (ms CPU, in order) -; all bursts 0.00s/7.7/2
sched-passive none run 1 pid 130: samples (ms CPU, in order) 7.6 (0 faults); all bursts 0.00s/7.8/0 3.78s/7.6/0
sched-passive none run 2 pid 140: samples (ms CPU, in order) 76.8 (24 faults), 20.0 (4 faults), 14.9 (1 faults), 43.2 (1 faults); all bursts 0.00s/24.0/21 0.00s/21.6/16 0.00s/22.5/14 0.00s/11.8/0 0.00s/0.1/0 0.00s/0.1/0 0.00s/0.3/0 0.00s/2.0/0 0.00s/0.1/0 0.00s/18.2/0 0.00s/0.4/0 0.92s/76.8/24 0.92s/20.0/4 0.98s/14.9/1 0.65s/43.2/1 0.00s/0.3/0 0.00s/0.2/0 0.01s/14.9/2
sched-passive none run 2 pid 141: samples (ms CPU, in order) -; all bursts 0.00s/2.5/2
"""


def test_a_sample_is_the_agents_stretch_on_the_grid_a_brief_sleep_inside_it_and_not_its_exit():
    # run 1's first sample is 0.3 + 38.6 ms (the probe's own list splits it into 0.3 and drops
    # the 38.6); the 10.9 / 43.2 ms "samples" it lists last are the exit's stretches.
    assert _bench().probe_samples(PROBE) == [[38.9, 9.4, 15.6], [76.8, 20.0, 14.9]]


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no SCHED_AUTOGROUP")
def test_the_wrapper_puts_its_loops_in_the_execd_programs_autogroup_and_ends_them_after_it(tmp_path):
    """Started in a new session as ``vm/qemu.py: boot()`` starts QEMU (``setsid``): the loop and
    the program the wrapper ``exec``s (``sleep`` standing in for QEMU, under the wrapper's pid)
    share that session's autogroup, not the caller's; once the program is gone, so is the loop."""
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(_bench().WRAPPER)
    wrapper.chmod(0o755)
    env = {**os.environ, "NUMALAB_LOOPS": "1", "NUMALAB_LOOPS_FILE": str(tmp_path / "loops"),
           "NUMALAB_QEMU_PID_FILE": str(tmp_path / "pid")}
    proc = subprocess.Popen([str(wrapper), "sleep", "0.6"], env=env, start_new_session=True)
    try:
        for _ in range(100):
            if (tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip():
                break
            time.sleep(0.01)
        time.sleep(0.1)  # past the exec
        assert int((tmp_path / "pid").read_text()) == proc.pid
        (loop,) = [int(x) for x in (tmp_path / "loops").read_text().split()]
        group = Path(f"/proc/{proc.pid}/autogroup").read_text()
        assert Path(f"/proc/{loop}/autogroup").read_text() == group
        assert group != Path("/proc/self/autogroup").read_text()
        assert os.readlink(f"/proc/{proc.pid}/exe").endswith("sleep")
    finally:
        proc.wait(5)
    for _ in range(50):  # the watcher checks every 0.2 s
        if not Path(f"/proc/{loop}").exists() or "Z" in Path(f"/proc/{loop}/stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        os.kill(loop, 9)
        pytest.fail("the loop outlived the program")
