"""Every benchmark script in ``bench/`` says how to run it and refuses a flag it does not know,
before it boots a guest or starts a long run (a mistyped flag used to run the whole benchmark)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[2] / "bench").glob("*.py"))


def test_there_are_benchmark_scripts():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_and_an_unknown_flag(script):
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: "), out.stdout[:200]
    bad = subprocess.run([sys.executable, str(script), "--no-such-flag"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2, (bad.stdout[-300:], bad.stderr[-300:])
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script.name}: error: ") and "--no-such-flag" in last, last
