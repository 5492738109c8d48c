"""CPU and node sets (``numalab.machine.bitmaps``): one parser, the model's ``Bitmap``, reached
through ``_core``; the errors name the bad word or token and the limit."""

import pytest

from numalab import _core
from numalab.machine.bitmaps import format_cpulist, format_hwloc, parse_cpulist, parse_hwloc


def test_round_trips():
    assert parse_cpulist("0-3,8, 10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("") == set()
    assert format_cpulist({11, 10, 8, 3, 2, 1, 0}) == "0-3,8,10-11"
    assert format_hwloc({0, 1, 2, 3, 4, 5, 6, 7, 40}) == "0x00000100,0x000000ff"
    assert format_hwloc(()) == "0x0"
    assert parse_hwloc("0x00000100,0x000000ff") == set(range(8)) | {40}
    assert parse_hwloc("0x1,,0X0000000f") == {0, 1, 2, 3, 64}, "an empty word is zero"


def test_python_reads_what_the_model_parses():
    assert _core.parse_hwloc("0x00010001") == [0, 16]
    assert _core.parse_cpulist("4-5") == [4, 5]


@pytest.mark.parametrize("text,limit,message", [
    ("0xzz,0x1", None, "bad bitmap word '0xzz' in '0xzz,0x1' (expected hex words like 0x000000ff)"),
    ("+ff", None, "bad bitmap word '+ff'"),
    ("0x1ffffffff", None, "bitmap word '0x1ffffffff' in '0x1ffffffff' has more than 32 bits"),
    ("0xf...f,0x0", None, "'0xf...f,0x0' is an infinite set; numalab needs the actual CPUs or nodes"),
    ("0x10", 4, "'0x10' sets bit 4, beyond the limit of 4"),
    ("0x00000001" + ",0x0" * 2048, None, "beyond the limit of 65536"),
])
def test_hwloc_errors(text, limit, message):
    with pytest.raises(ValueError) as e:
        parse_hwloc(text, limit)
    assert message in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("text,message", [
    ("0-3,x", "bad token 'x': expected a number or a range a-b"),
    ("5-2", "bad range '5-2': end is below start"),
    ("4294967295", "index 4294967295 in '4294967295' is too large"),
])
def test_cpulist_errors(text, message):
    with pytest.raises(ValueError) as e:
        parse_cpulist(text)
    assert message in str(e.value)


def test_formatting_refuses_impossible_indexes():
    with pytest.raises(ValueError, match="index -1 is outside 0..65536"):
        format_cpulist([-1])


def test_a_bad_cpulist_in_an_hwloc_file_is_one_line_naming_the_info(cli, tmp_path):
    code, _, err = cli("topo", "--machine", "vm-4", "--export-xml", str(tmp_path / "m.xml"))
    assert code == 0, err
    text = (tmp_path / "m.xml").read_text()
    at = text.index("<info ")
    bad = '<info name="numalab.core_frequencies_hz" value="[[&quot;0-x&quot;, 2000000000]]"/>\n'
    (tmp_path / "bad.xml").write_text(text[:at] + bad + text[at:])
    code, out, err = cli("topo", "--machine", str(tmp_path / "bad.xml"))
    assert code == 2 and out == "", err
    assert err.strip().endswith("info[name=numalab.core_frequencies_hz]: cpulist '0-x': bad token '0-x': expected a number or a range a-b"), err
    assert len(err.strip().splitlines()) == 1
