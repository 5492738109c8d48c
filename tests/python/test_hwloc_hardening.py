"""hwloc XML files that are hostile or broken: each is refused fast, with one line that names the
file, the line and what is wrong, never a traceback, a hang or a huge allocation."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from numalab.exceptions import TopologyError, UsageError
from numalab.machine import limits, load
from numalab.machine.hwloc_xml import load_hwloc_xml, to_hwloc_xml

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hwloc" / "2p-2n-l3.xml"
NODE1 = '<object type="NUMANode" os_index="1" cpuset="0x000000cc"'


def write(tmp_path: Path, text: str, name: str = "topo.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = FIXTURE.read_text()
    assert old in text
    return write(tmp_path, text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def exported(tmp_path: Path, name: str = "e5-2620v4-2s") -> str:
    return to_hwloc_xml(load(name))


def with_info(text: str, name: str, value: str) -> str:
    out, n = re.subn(rf'<info name="{re.escape(name)}" value="[^"]*" ?/>', f'<info name="{name}" value="{value}"/>', text)
    assert n == 1
    return out


# ---------------------------------------------------------------- XML attacks


def test_billion_laughs_fails_fast_at_the_first_entity(tmp_path: Path) -> None:
    decls = ['<!ENTITY lol "lol">'] + [f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)]
    text = '<?xml version="1.0"?>\n<!DOCTYPE topology [\n' + "\n".join(decls) + "\n]>\n<topology>&lol9;</topology>\n"
    path = write(tmp_path, text)
    start = time.monotonic()
    with pytest.raises(UsageError, match=rf"^{path}:3: <!ENTITY lol> refused: hwloc files declare no entities"):
        load_hwloc_xml(path)
    assert time.monotonic() - start < 2


def test_an_external_entity_is_not_read(tmp_path: Path) -> None:
    text = '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<topology>&x;</topology>\n'
    with pytest.raises(UsageError, match=r"topo\.xml:2: <!ENTITY x> refused"):
        load_hwloc_xml(write(tmp_path, text))


def test_the_doctype_lstopo_writes_is_accepted_and_not_fetched(tmp_path: Path) -> None:
    text = FIXTURE.read_text()
    assert '<!DOCTYPE topology SYSTEM "hwloc2.dtd">' in text
    load_hwloc_xml(write(tmp_path, text))  # no hwloc2.dtd beside it, none asked for


def test_deep_nesting_is_refused_without_recursion(tmp_path: Path) -> None:
    depth = 100_000
    text = "<topology>" + '<object type="Group">' * depth + "</object>" * depth + "</topology>"
    with pytest.raises(UsageError, match=rf"topo\.xml:1: <object> is nested {limits.MAX_XML_DEPTH + 1} elements deep"):
        load_hwloc_xml(write(tmp_path, text))


def test_many_text_chunks_are_read_in_linear_time(tmp_path: Path) -> None:
    """Character data arrives in many pieces (here one per character reference); joining them
    by += on one string was quadratic."""
    values = "&#32;" * 2_000_000
    text = FIXTURE.read_text().replace("10 21 21 10 </u64values>", f"10 21 21 10 {values}</u64values>")
    start = time.monotonic()
    load_hwloc_xml(write(tmp_path, text))
    assert time.monotonic() - start < 10


def test_a_file_larger_than_the_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    with path.open("wb") as f:
        f.truncate(limits.MAX_XML_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(UsageError, match=r"big\.xml: larger than the 64 MiB numalab reads as hwloc XML"):
        load_hwloc_xml(path)


# ---------------------------------------------------------------- not a file, not XML


def test_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=rf"^{tmp_path}: cannot read: Is a directory"):
        load_hwloc_xml(tmp_path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"topo\.xml:1:1: malformed XML: no element found"),
        (b"hello\n", r"topo\.xml:1:1: malformed XML: syntax error"),
        (b"\xff\xfe\x00garbage", r"topo\.xml:1:\d+: malformed XML: "),
        (b'{"nodes": []}', r"topo\.xml:1:1: malformed XML: not well-formed \(invalid token\)"),
    ],
)
def test_not_xml(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "topo.xml"
    path.write_bytes(data)
    with pytest.raises(UsageError, match=message):
        load_hwloc_xml(path)


def test_utf16_files_are_read(tmp_path: Path) -> None:
    text = FIXTURE.read_text().replace('encoding="UTF-8"', 'encoding="UTF-16"')
    path = tmp_path / FIXTURE.name
    path.write_bytes(text.encode("utf-16"))
    assert load_hwloc_xml(path) == load_hwloc_xml(FIXTURE)


# ---------------------------------------------------------------- numbers


def test_a_huge_pu_os_index_is_refused_before_allocating(tmp_path: Path) -> None:
    path = variant(tmp_path, '<object type="PU" os_index="6"', '<object type="PU" os_index="4294967295"')
    with pytest.raises(UsageError) as e:
        load_hwloc_xml(path)
    line = line_of(path, 'os_index="4294967295"')
    assert e.value.args[0] == (
        f"{path}:{line}: object[type=PU, os_index=4294967295]: os_index=4294967295 is too large: "
        "CPU indexes must be below 65536 (Linux builds with at most 8192 CPUs, NR_CPUS)"
    )


def test_a_huge_node_os_index_is_refused(tmp_path: Path) -> None:
    path = variant(tmp_path, '<object type="NUMANode" os_index="1"', '<object type="NUMANode" os_index="4096"')
    with pytest.raises(UsageError, match=r"os_index=4096 is too large: NUMA node indexes must be below 4096 \(.*MAX_NUMNODES\)"):
        load_hwloc_xml(path)


def test_a_cpuset_bit_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    far = ",".join(["0x00000001"] + ["0x0"] * (limits.MAX_CPUS // 32))
    path = variant(tmp_path, NODE1, NODE1.replace('cpuset="0x000000cc"', f'cpuset="{far}"'))
    with pytest.raises(UsageError, match=r"object\[type=NUMANode, os_index=1\]: cpuset: .* sets bit 65536, beyond the limit of 65536: CPU indexes"):
        load_hwloc_xml(path)


@pytest.mark.parametrize("value", ["-1", "+3", "1_0", "٣", "0x10", "1e3", "3.0", ""])
def test_os_index_must_be_decimal_digits(tmp_path: Path, value: str) -> None:
    path = variant(tmp_path, '<object type="PU" os_index="6"', f'<object type="PU" os_index="{value}"')
    with pytest.raises(UsageError, match=r"object\[type=PU.*\]: os_index='.*' is not a whole number \(expected decimal digits"):
        load_hwloc_xml(path)


@pytest.mark.parametrize("value", ["NaN", "nan", "inf", "-inf", "-48828", "1e999", "²"])
def test_a_memattr_value_that_is_not_a_whole_number(tmp_path: Path, value: str) -> None:
    text = exported(tmp_path)
    assert 'value="48828"' in text
    path = write(tmp_path, text.replace('value="48828"', f'value="{value}"', 1))
    with pytest.raises(UsageError, match=rf"{path}:\d+: <memattr_value>: value='.*' is not a whole number"):
        load_hwloc_xml(path)


def test_a_zero_bandwidth_memattr_is_a_model_error_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, exported(tmp_path).replace('value="48828"', 'value="0"', 1))
    with pytest.raises(TopologyError) as e:
        load_hwloc_xml(path)
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if '<object type="NUMANode" os_index="0"' in text)
    assert e.value.args[0].startswith(f"{path}:{line}: nodes[0].bandwidth_gbps: must be > 0")


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("numalab.bandwidth_gbps", "[NaN,51.2]", "NaN"),
        ("numalab.bandwidth_gbps", "[Infinity,51.2]", "Infinity"),
        ("numalab.idle_latency_ns", "[[75.8,1e999],[133.4,75.8]]", "1e999"),
        ("numalab.loaded_latency", "[[0.0,-Infinity]]", "-Infinity"),
    ],
)
def test_numalab_infos_must_hold_finite_numbers(tmp_path: Path, name: str, value: str, shown: str) -> None:
    path = write(tmp_path, with_info(exported(tmp_path), name, value))
    with pytest.raises(UsageError, match=rf"info\[name={re.escape(name)}\]: value holds {re.escape(shown)}: numbers must be finite"):
        load_hwloc_xml(path)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_core_infos_must_be_positive_and_finite(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, with_info(exported(tmp_path), "numalab.core_frequency_hz", value))
    with pytest.raises(UsageError, match=rf"info\[name=numalab\.core_frequency_hz\]: value '{value}' must be a finite number above 0"):
        load_hwloc_xml(path)


# ---------------------------------------------------------------- CPUs without a PU


def test_a_node_cpuset_naming_cpus_without_pu_is_refused(tmp_path: Path) -> None:
    path = variant(tmp_path, NODE1, NODE1.replace("0x000000cc", "0x00000fcc"))
    with pytest.raises(UsageError) as e:
        load_hwloc_xml(path)
    assert e.value.args[0].startswith(
        f"{path}:{line_of(path, '0x00000fcc')}: object[type=NUMANode, os_index=1]: cpuset 0x00000fcc names CPUs 8-11 that have no PU object"
    )


def test_a_package_cpuset_naming_cpus_without_pu_is_refused(tmp_path: Path) -> None:
    old = '<object type="Package" os_index="1" cpuset="0x000000cc"'
    path = variant(tmp_path, old, old.replace("0x000000cc", "0x000100cc"))
    with pytest.raises(UsageError, match=r"object\[type=Package, os_index=1\]: cpuset 0x000100cc names CPUs 16 that have no PU object"):
        load_hwloc_xml(path)


def test_a_pu_whose_cpuset_is_not_itself_is_refused(tmp_path: Path) -> None:
    old = '<object type="PU" os_index="6" cpuset="0x00000040"'
    path = variant(tmp_path, old, old.replace("0x00000040", "0x000000c0"))
    with pytest.raises(UsageError, match=r"object\[type=PU, os_index=6\]: cpuset 0x000000c0 is not PU 6 alone"):
        load_hwloc_xml(path)


# ---------------------------------------------------------------- preset-format files


def test_a_preset_file_with_a_huge_shape_is_refused_before_the_model_allocates(tmp_path: Path) -> None:
    spec = tmp_path / "huge.toml"
    spec.write_text(
        'name = "huge"\n[topology]\npackages = 4000\nnodes_per_package = 1\ncores_per_node = 100000\n'
        "[memory]\nnode_gib = 1\n[latency]\nlocal_ns = 80\n[bandwidth]\nnode_gbps = 10\n[core]\nfrequency_ghz = 2.0\nmlp = 10\n"
    )
    with pytest.raises(UsageError, match=rf"^{spec}:2: topology: 400000000 CPUs .* is too many: CPU indexes must be below 65536"):
        load(str(spec))


def test_a_preset_file_with_a_huge_cpu_list_is_a_model_error(tmp_path: Path) -> None:
    spec = tmp_path / "wide.toml"
    spec.write_text(
        'name = "wide"\n[[nodes]]\nos_index = 0\ncpus = "0-4294967295"\n'
        "[latency]\nlocal_ns = 80\n[bandwidth]\nnode_gbps = 10\n[core]\nfrequency_ghz = 2.0\nmlp = 10\n"
    )
    start = time.monotonic()
    with pytest.raises(TopologyError) as e:
        load(str(spec))
    assert "index 4294967295 in '0-4294967295' is too large (indexes must be below 65536" in e.value.args[0]
    assert time.monotonic() - start < 2


def test_too_many_elements_are_refused_before_memory_runs_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_XML_ELEMENTS", 1000)  # the real limit takes seconds to reach
    text = "<topology>" + "<x/>" * 1000 + "</topology>"
    with pytest.raises(UsageError, match=r"topo\.xml:1: more than 1000 elements; an hwloc topology of the largest"):
        load_hwloc_xml(write(tmp_path, text))
    assert load_hwloc_xml(write(tmp_path, FIXTURE.read_text(), "2p-2n-l3.xml")) == load_hwloc_xml(FIXTURE)  # ~70 elements
