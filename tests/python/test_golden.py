"""The ``golden`` fixture: a missing golden file fails (it is never written by a plain run)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent.parent / "golden"  # where the fixture looks (conftest.py)


def test_a_missing_golden_file_fails_and_is_not_written(golden, monkeypatch):
    monkeypatch.delenv("NUMALAB_UPDATE_GOLDEN", raising=False)
    name = "no-such-golden-file.out"
    with pytest.raises(AssertionError, match="no golden file .*NUMALAB_UPDATE_GOLDEN=1"):
        golden(name, "text\n")
    assert not (GOLDEN / name).exists()


def test_an_existing_golden_file_is_compared(golden, monkeypatch):
    monkeypatch.delenv("NUMALAB_UPDATE_GOLDEN", raising=False)
    name = "topo_e5-2620v4-2s.out"
    golden(name, (GOLDEN / name).read_text(encoding="utf-8"))
    with pytest.raises(AssertionError, match="output differs"):
        golden(name, "something else\n")
