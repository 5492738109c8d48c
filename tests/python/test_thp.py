"""THP as the kernels shipped it: the kernel profile's default (always for 3.13, madvise for
6.13), --thp always|madvise|never overriding it, and which regions get 2 MiB pages under each."""

from __future__ import annotations

import pytest

from numalab.exceptions import UsageError
from numalab.spec.run import RunSpec


def thp_regions(**fields) -> dict[str, bool]:
    spec = RunSpec.create("opteron6282-4p", "cg", params={"class": "C", "threads": 8}, **fields)
    return {r["name"]: r["thp"] for r in spec.bind().workload["regions"]}


def test_the_kernel_profile_sets_the_default() -> None:
    # CG's regions are all >= 2 MiB and none is marked MADV_HUGEPAGE.
    assert all(thp_regions(kernel="3.13").values())
    assert not any(thp_regions(kernel="6.13").values())


@pytest.mark.parametrize("kernel", ["3.13", "6.13"])
def test_thp_overrides_the_profile(kernel: str) -> None:
    assert all(thp_regions(kernel=kernel, thp="always").values())
    assert not any(thp_regions(kernel=kernel, thp="never").values())
    assert not any(thp_regions(kernel=kernel, thp="madvise").values())


def test_old_boolean_settings_and_bad_values() -> None:
    assert RunSpec.create("e5-2620v4-2s", "dgemv", thp=True).thp == "always"
    assert RunSpec.create("e5-2620v4-2s", "dgemv", thp="off").thp == "never"
    with pytest.raises(UsageError, match="--thp: 'sometimes' is not one of always, madvise, never"):
        RunSpec.create("e5-2620v4-2s", "dgemv", thp="sometimes")
