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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup`` (make test): keep each ``xdist_group`` on one worker, and the tests of a
    module that share a module- or class-scoped fixture too (else each worker would build it
    again). pytest-xdist 3.8 names the group by renaming ``item._nodeid``, which pytest 9.2 no
    longer reads (a node's id is ``item._id``); rename through ``_id`` the same way
    (``<nodeid>@<group>``)."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under loadgroup
        return
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d and d[-1].scope in ("module", "class") for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own renaming works there
        return
    for item in items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(groups)
        if groups and hasattr(item, "_id") and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
