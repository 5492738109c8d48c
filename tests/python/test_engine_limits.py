"""The engine at its limits: a Rust panic never crosses into Python, absurd sizes are refused
before the engine allocates (in a process with bounded memory), data larger than the machine ends
out of memory with a message that says where, and every numalab exception pickles (a study
worker sends errors back to its parent)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import numalab._core as core
from numalab.exceptions import HostError, NumalabError, PolicyError, SimulationError, SpecError, TopologyError, UsageError

#: Address space of the CLI process for the absurd-size cases (3 GiB, as `ulimit -v 3145728`).
ULIMIT_KIB = 3 * 1024 * 1024


def cli_bounded(*args: str) -> tuple[int, str, str]:
    """Run ``numalab ARGS`` in a subprocess whose address space is capped at 3 GiB."""
    cmd = ["sh", "-c", f'ulimit -v {ULIMIT_KIB} && exec "$@"', "sh", sys.executable, "-c", "from numalab.cli.main import run; run()", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def assert_one_error_line(code: int, out: str, err: str) -> str:
    assert code in (1, 2), (code, out, err)
    assert "panicked" not in out + err and "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("numalab: "), err
    return lines[0]


def test_a_rust_panic_is_a_plain_simulation_error_that_pickles(capfd):
    with pytest.raises(SimulationError) as e:
        core._panic_through_guard("boom")
    msg = str(e.value)
    assert msg.startswith("internal error in the panic check: boom at ") and msg.endswith("; please report it"), msg
    assert "panicked" not in capfd.readouterr().err
    again = pickle.loads(pickle.dumps(e.value))
    assert type(again) is SimulationError and str(again) == msg


@pytest.mark.parametrize("exc", [NumalabError, TopologyError, PolicyError, SimulationError, SpecError, HostError, UsageError])
def test_every_exception_type_pickles(exc):
    e = pickle.loads(pickle.dumps(exc("what went wrong")))
    assert type(e) is exc and e.args == ("what went wrong",)
    assert isinstance(e, NumalabError)


def test_a_sample_rate_far_below_one_page_runs(cli):
    # Used to panic (index out of bounds in the pattern code).
    for rate in ("1e-20", "1e-300"):
        code, out, err = cli("sim", "--machine", "opteron6282-4p", "--workload", "cg", "--class", "S", "--threads", "4", "--sample-rate", rate)
        assert code == 0, err
        assert "status: ok" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # 10^8 threads: per-thread state and quadratic scheduling.
        (("--machine", "opteron6282-4p", "--workload", "cg", "--class", "S", "--threads", "100000000"), ["threads"]),
        # DGEMV n = 10^7: an 800 TB matrix, 200 G page-table entries.
        (("--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "10000000"), ["page tables", "limit", "THP"]),
        # Ten billion repetitions: the memory fits, the work does not.
        (("--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "20000", "--reps", "10000000000"), ["--sample-rate"]),
    ],
)
def test_absurd_sizes_fail_fast_in_bounded_memory(args, words):
    code, out, err = cli_bounded("sim", *args)
    line = assert_one_error_line(code, out, err)
    for w in words:
        assert w in line, line


def test_data_beyond_the_machine_ends_out_of_memory_without_a_table_for_it():
    # 8 TB of matrix on a 64 GiB machine: a legitimate out-of-memory of the simulated kernel.
    # A full page table would be 2 G entries; the run must stay far inside 3 GiB.
    code, out, err = cli_bounded("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "1000000")
    assert code == 1, err
    assert "panicked" not in out + err and "Traceback" not in err
    assert "status: out-of-memory (out of memory on nodes 1,0 under default: region 'A'" in out
    assert "4 KiB pages" in out and "free of 32768 MiB" in out


def test_out_of_memory_names_the_node_policy_region_and_huge_page_size(cli):
    code, out, _ = cli("sim", "--machine", "vm-4", "--workload", "stream", "--n", "30000000", "--threads", "4", "--membind", "2", "--thp", "always")
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("status:"))
    assert "out of memory on node 2 under bind:2: region '" in line and "MiB, 2 MiB pages)" in line, line
    assert "node 2 has " in line and " MiB free of 512 MiB" in line, line
