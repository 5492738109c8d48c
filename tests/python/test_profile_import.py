"""Real profiles in (docs/mapping.md §7): numalize, NumaMMA, perf mem and agent records become
workloads whose replay reproduces the profile's access map; malformed files are refused with
FILE:LINE: reason."""

import json
import tomllib

import pytest

from numalab.api import simulate
from numalab.exceptions import UsageError
from numalab.workload.profiles import agent, numalize, numamma, perfmem, replay

T = 8
MACHINE = "e5-2420-2s"   # 6 cores per node: bound close, threads 0-5 on node 0, 6-7 on node 1


def _owner(i, pages, threads=T):
    q, r = divmod(pages, threads)
    big = r * (q + 1)
    return i // (q + 1) if i < big else r + (i - big) // q


def _synthetic():
    """Pages -> (per-thread accesses, first-touch thread): a block-partitioned array initialised in
    parallel, a shared one and one used by the main thread alone, both initialised serially, at
    pages that are not multiples of anything in particular."""
    pages = {}
    base = 0x7F3A1200
    for i in range(803):
        c = [0] * T
        c[_owner(i, 803)] = 900
        pages[base + i] = (c, _owner(i, 803))
    for i in range(401):
        pages[base + 3000 + i] = ([150] * T, 0)
    for i in range(257):
        pages[base + 6000 + i] = ([700] + [0] * (T - 1), 0)
    return pages


def _expected_map(pages, node_of_thread, nodes=2):
    m = [[0.0] * nodes for _ in range(nodes)]
    for counts, ft in pages.values():
        for t, c in enumerate(counts):
            m[node_of_thread[t]][node_of_thread[ft]] += c
    total = sum(map(sum, m))
    return [[100 * v / total for v in row] for row in m]


def _replayed_map(path):
    r = simulate(MACHINE, str(path), omp_proc_bind="close", omp_places="cores")
    assert r.status == "ok"
    return r, r.access_map(percent=True).values.tolist()


def _close(a, b, tol=2.0):
    return all(abs(x - y) <= tol for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def _write_numalize(path, pages):
    head = "page.address,alloc.thread,alloc.location,firsttouch.thread,firsttouch.location,structure.name," + ",".join(f"T{i}" for i in range(T))
    rows = [f"{p},0,x.c:1,{ft},x.c:2,S{p // 3000},{','.join(map(str, c))}" for p, (c, ft) in pages.items()]
    path.write_text("\n".join([head, *rows]) + "\n")


def test_numalize_round_trip_reproduces_the_access_map(tmp_path):
    pages = _synthetic()
    csv = tmp_path / "prog.full.page.csv"
    _write_numalize(csv, pages)
    out = tmp_path / "prog.toml"
    out.write_text(replay.workload(numalize.read(csv), "prog"))
    r, got = _replayed_map(out)
    node_of = [t["first_node"] for t in sorted(r.doc["threads"], key=lambda t: t["tid"])]
    want = _expected_map(pages, node_of)
    assert _close(got, want), (got, want)
    # The patterns found are the ones the profile was made of.
    assert replay.summary(numalize.read(csv))["patterns"] == {"master": 1, "block": 1, "shared": 1}


def test_interleave_what_if_on_an_imported_profile(tmp_path):
    # The regions keep the program's addresses: interleave splits them as it split the program's.
    csv = tmp_path / "p.csv"
    _write_numalize(csv, _synthetic())
    out = tmp_path / "p.toml"
    out.write_text(replay.workload(numalize.read(csv), "p"))
    r = simulate(MACHINE, str(out), interleave="all", omp_proc_bind="close", omp_places="cores")
    cols = r.access_map(percent=True).sum(axis=0).tolist()
    assert abs(cols[0] - 50) < 2 and abs(cols[1] - 50) < 2


def test_perf_mem_round_trip(tmp_path):
    # The same pages as samples: period 1000 per sample, thread ids from 4000; loads only.
    pages = _synthetic()
    lines, t = [], 100.0
    for p, (counts, _ft) in pages.items():
        for th, c in enumerate(counts):
            for _ in range(c // 150):
                t += 1e-6
                lines.append(f"{4000 + th}/{4000 + th} [{th:03d}] {t:.6f}: 150 cpu/mem-loads,ldlat=30/P: {p * 4096 + 64:x}")
    lines.append(f"4001 [001] {t + 1:.6f}: 150 cpu/mem-loads,ldlat=30/P: 0")   # no data address: skipped
    f = tmp_path / "perf.txt"
    f.write_text("\n".join(lines) + "\n")
    prof = perfmem.read(f)
    assert prof.threads == T and prof.write_share == 0.0 and prof.duration_s == pytest.approx(1 + len(lines[:-1]) * 1e-6, rel=1e-3)
    out = tmp_path / "perf.toml"
    out.write_text(replay.workload(prof, "perf"))
    r, got = _replayed_map(out)
    node_of = [t["first_node"] for t in sorted(r.doc["threads"], key=lambda t: t["tid"])]
    # perf does not see first touch: block pages go to their user, the others to the main thread.
    want = _expected_map(pages, node_of)
    assert _close(got, want), (got, want)


def test_numamma_call_sites_with_and_without_page_counters(tmp_path):
    log = tmp_path / "call_sites.log"
    log.write_text("1\tmain (size=40960) - 1 buffers. 800 read access (total weight: 9000, avg weight: 11.25). 200 wr_access\n"
                   "2\tinit_b (size=8192) - 2 buffers. 30 read access (total weight: 10, avg weight: 0.33). 0 wr_access\n")
    # Site 1: 11 pages, thread t uses pages [t*11/4 ...) as a static split of 4 threads would.
    rows = []
    for i in range(11):
        c = [0] * 4
        c[_owner(i, 11, 4)] = 90
        rows.append("".join(f"\t{v}" for v in c))
    (tmp_path / "callsite_counters_1.dat").write_text("\n".join(rows) + "\n")
    prof = numamma.read(log)
    assert prof.threads == 4 and prof.write_share == pytest.approx(200 / 1030)
    s = replay.summary(prof)
    assert s["regions"] == 2 and s["patterns"]["block"] == 1 and s["patterns"]["shared"] == 1
    # Each site keeps its own read/write split: 200 of 1000 (site 1), none (site 2).
    doc = tomllib.loads(replay.workload(prof, "mm"))
    acc = {a["region"]: a for ph in doc["phases"] if ph["name"].startswith("replay") for a in ph["access"]}
    assert acc["r0"]["wr"] / (acc["r0"]["rd"] + acc["r0"]["wr"]) == pytest.approx(0.2)
    assert acc["r1"]["wr"] == 0.0


def _agent_records(path, faults, mappings):
    recs = [
        {"type": "start", "command": ["prog"]},
        {"type": "sample", "t_s": 0.5, "mappings": mappings, "threads": []},
        {"type": "summary", "wall_s": 2.0, "pid": 1, "command": ["prog"],
         "threads": [{"tid": 10 + i, "current_node": i // 6, "faults": [{"node": n, "task_private": v, "task_shared": 0}
                                                                     for n, v in enumerate(row)]} for i, row in enumerate(faults)]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")


def test_agent_records_replay_pages_and_fault_shares(tmp_path):
    faults = [[300, 100]] * 6 + [[100, 300]] * 2
    f = tmp_path / "run.jsonl"
    _agent_records(f, faults, [{"address": "7f0000000000", "kernelpagesize_kb": 4, "pages_per_node": {"0": 600, "1": 200}},
                               {"address": "7f1000000000", "kernelpagesize_kb": 4, "pages_per_node": {"1": 200}}])
    prof = agent.read(f)
    assert prof.threads == 8 and prof.duration_s == 2.0 and len(prof.pages) == 1000
    out = tmp_path / "run.toml"
    out.write_text(replay.workload(prof, "run"))
    r = simulate(MACHINE, str(out), omp_proc_bind="close", omp_places="cores")
    assert r.pages().tolist() == [600, 400]   # as numa_maps showed them (membind per node)
    cols = r.access_map(percent=True).sum(axis=0).tolist()
    share0 = 100 * sum(row[0] for row in faults) / sum(map(sum, faults))
    assert abs(cols[0] - share0) < 2 and abs(cols[1] - (100 - share0)) < 2


@pytest.mark.parametrize("fmt, name, text, where", [
    ("numalize", "p.csv", "page.address,alloc.thread,alloc.location,firsttouch.thread,firsttouch.location,structure.name,T0,T1\n1,0,a,0,b,S,5\n",
     r"p.csv:2: 7 fields, expected 8"),
    ("numalize", "p.csv", "page.address,alloc.thread,alloc.location,firsttouch.thread,firsttouch.location,structure.name,T0\n1,0,a,0,b,S,x\n",
     r"p.csv:2: T0 'x' is not a whole number"),
    ("numalize", "p.csv", "addr,T0\n", r"p.csv:1: not numalize's page table"),
    ("numamma", "call_sites.log", "1\tmain (size=4096) - 1 buffers. 5 read access (total weight: 1, avg weight: 0.2). 0 wr_access\ngarbage\n",
     r"call_sites.log:2: not a NumaMMA call-site line"),
    ("perf-mem", "perf.txt", "4000 [001] 1.000000: 100 cpu/mem-loads/P: 7f00\n4000 [001] 1.5: cpu/mem-loads/P: zz\n",
     r"perf.txt:2: not a perf mem sample"),
    ("agent", "run.jsonl", '{"type": "start"}\n{not json\n', r"run.jsonl:2: not JSON"),
    ("agent", "run.jsonl", '{"type": "start"}\n', r"run.jsonl:1: no 'summary' record"),
])
def test_malformed_profiles_are_refused_with_file_line_and_reason(tmp_path, cli, fmt, name, text, where):
    f = tmp_path / name
    f.write_text(text)
    reader = {"numalize": numalize.read, "numamma": numamma.read, "perf-mem": perfmem.read, "agent": agent.read}[fmt]
    with pytest.raises(UsageError, match=where):
        reader(f)
    code, _out, err = cli("import", fmt, str(f), "-o", str(tmp_path / "w.toml"))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"numalab: {f}:") and where.replace("\\", "") in err
    assert not (tmp_path / "w.toml").exists()


def test_cli_import_writes_a_descriptor_sim_accepts(tmp_path, cli):
    csv = tmp_path / "prog.full.page.csv"
    _write_numalize(csv, _synthetic())
    out = tmp_path / "prog.toml"
    code, out_text, err = cli("import", "numalize", str(csv), "-o", str(out), "--json")
    assert code == 0, err
    doc = json.loads(out_text)
    assert doc["regions"] == 3 and doc["threads"] == T and doc["name"] == "prog"
    code, out_text, err = cli("sim", "--machine", MACHINE, "--workload", str(out), "--json")
    assert code == 0 and json.loads(out_text)["status"] == "ok", err


def test_many_allocations_split_into_phases_of_64_accesses(tmp_path):
    # 130 separate allocations: more accesses than one phase may hold.
    pages = {}
    for k in range(130):
        for i in range(8):
            c = [0] * T
            c[i] = 10
            pages[1_000_000 + k * 100 + i] = (c, i)
    csv = tmp_path / "many.csv"
    _write_numalize(csv, pages)
    text = replay.workload(numalize.read(csv), "many")
    assert text.count('name = "replay') == 3 and text.count("[[regions]]") == 130
    out = tmp_path / "many.toml"
    out.write_text(text)
    r, got = _replayed_map(out)
    node_of = [t["first_node"] for t in sorted(r.doc["threads"], key=lambda t: t["tid"])]
    assert _close(got, _expected_map(pages, node_of))


def test_cli_import_help_and_bad_outputs(tmp_path, cli):
    code, out, _err = cli("import", "--help")
    assert code == 0 and "numalize" in out and "--json" in out and "-o" in out
    csv = tmp_path / "p.csv"
    _write_numalize(csv, _synthetic())
    code, _out, err = cli("import", "numalize", str(csv), "-o", str(tmp_path / "nowhere" / "w.toml"))
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err
    code, _out, err = cli("import", "numalize", str(csv), "-o", str(tmp_path / "w.txt"))
    assert code == 2 and err == f"numalab: -o {tmp_path / 'w.txt'}: a workload descriptor ends in .toml\n"
    code, _out, err = cli("import", "numalize", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "w.toml"))
    assert code == 2 and err.startswith(f"numalab: {tmp_path / 'missing.csv'}: cannot read")
