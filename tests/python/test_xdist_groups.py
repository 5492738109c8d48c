"""make test runs pytest with ``-n <CPUs + 1> --dist loadgroup --no-loadscope-reorder``: the tests of
one ``xdist_group`` (those that reuse a booted guest's runs) must run on one worker, and the guest
tests start first, with the pytest and pytest-xdist that the Makefile installs (conftest.py's
``pytest_collection_modifyitems``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("xdist")

CONFTEST = Path(__file__).with_name("conftest.py")


def test_an_xdist_group_runs_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("numalab_conftest", {str(CONFTEST)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        pytest_collection_modifyitems = module.pytest_collection_modifyitems
    """))
    (tmp_path / "test_sample.py").write_text(textwrap.dedent("""
        import os, time
        import pytest

        def record(name):
            with open("workers.txt", "a") as f:
                f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")

        @pytest.mark.parametrize("i", [pytest.param(i, marks=pytest.mark.xdist_group("shared")) for i in range(8)] + list(range(8, 16)))
        def test_param(i):
            time.sleep(0.05)
            record(f"param{i}")

        @pytest.mark.xdist_group("shared")
        def test_plain():
            record("plain")

        @pytest.fixture(scope="module")
        def built_once():
            record("fixture")

        @pytest.mark.parametrize("i", range(6))
        def test_module_fixture(built_once, i):
            time.sleep(0.05)

        @pytest.mark.needs_qemu
        def test_guest():
            record("guest")
    """))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    needs_qemu: boots a guest\n    xdist_group(name): one worker\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-p", "no:cacheprovider", "-q"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = (tmp_path / "workers.txt").read_text().splitlines()
    assert [ln.split()[0] for ln in lines].count("fixture") == 1, "a module-scoped fixture was built on each worker"
    ran = dict(line.split() for line in lines)
    assert len(ran) == 19
    grouped = {ran[f"param{i}"] for i in range(8)} | {ran["plain"]}
    assert len(grouped) == 1, ran
    assert set(ran.values()) == {"gw0", "gw1"}, "the other tests should use both workers"
    # the guest test, collected last, is the first its worker runs
    assert [ln.split()[0] for ln in lines if ln.split()[1] == ran["guest"]][0] == "guest", lines
