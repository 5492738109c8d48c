"""Shared fixtures: run the CLI in-process and compare with golden files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from numalab.cli.main import run

GOLDEN = Path(__file__).parent.parent / "golden"


@pytest.fixture
def cli(capsys):
    """``cli("topo", "--list") -> (exit_code, stdout, stderr)``."""

    def call(*args: str) -> tuple[int, str, str]:
        code = 0
        try:
            run(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


@pytest.fixture
def golden():
    """``golden("name.out", text)``: compare with tests/golden/name.out. NUMALAB_UPDATE_GOLDEN=1
    writes it (and is the only way a golden file comes to exist: a missing one fails, so a typo in
    a name or a file left out of a commit cannot pass by writing what the code prints today)."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("NUMALAB_UPDATE_GOLDEN") == "1":
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no golden file {path}: run the test with NUMALAB_UPDATE_GOLDEN=1 to write it, then review and commit it"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path} (NUMALAB_UPDATE_GOLDEN=1 to accept)"

    return check
