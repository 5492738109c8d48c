//! Integration tests of the Linux readers on captured sysfs/procfs trees
//! (`tests/fixtures/sysfs/{two-node,eight-node,host}`, `tests/fixtures/procfs/*`), and on broken
//! copies of them.

mod procfs;

use std::fs;
use std::path::{Path, PathBuf};

use numalab_linux::{read_topology, HostTopology, LinuxError};
use numalab_model::CpuSet;

const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sysfs").join(name)
}

fn read(name: &str) -> HostTopology {
    read_topology(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A private copy of a fixture tree, removed when dropped, for tests that break files.
struct Scratch(PathBuf);

impl Scratch {
    fn copy_of(fixture_name: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("numalab-linux-it-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        copy_tree(&fixture(fixture_name), &dir);
        Scratch(dir)
    }

    fn copy_procfs(fixture_name: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("numalab-linux-it-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/procfs").join(fixture_name), &dir);
        Scratch(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

const NODE0: &str = "sys/devices/system/node/node0";

mod two_node {
    use super::*;

    #[test]
    fn nodes_cpus_and_memory() {
        let t = read("two-node");
        assert!(!t.numa_disabled);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[0].os_index, 0);
        assert_eq!(t.nodes[0].cpus, cpus("0-3,8-11"));
        assert_eq!(t.nodes[1].cpus, cpus("4-7,12-15"));
        for n in &t.nodes {
            assert_eq!(n.memory_bytes, 16 * GIB);
            let free = n.memory_free_bytes.expect("fixture meminfo has MemFree");
            assert!(free > 0 && free < n.memory_bytes, "{free}");
        }
    }

    #[test]
    fn distances_are_the_slit_rows() {
        let t = read("two-node");
        assert_eq!(t.nodes[0].distances, vec![10, 21]);
        assert_eq!(t.nodes[1].distances, vec![21, 10]);
    }

    #[test]
    fn smt_siblings_k_and_k_plus_8_share_a_core() {
        let t = read("two-node");
        assert_eq!(t.cores.len(), 8);
        for (k, core) in t.cores.iter().enumerate() {
            let first = k as u32;
            assert_eq!(core.cpus, CpuSet::from_indexes([first, first + 8]), "core {k}");
            assert_eq!(core.package, (k / 4) as u32);
            assert_eq!(core.core_id, (k % 4) as u32);
        }
    }

    #[test]
    fn json_facts_carry_packages_and_free_memory() {
        let j = read("two-node").to_json();
        assert_eq!(j["nodes"][1]["package"], 1);
        assert_eq!(j["nodes"][0]["cpus"], "0-3,8-11");
        assert!(j["nodes"][0]["memory_free_bytes"].as_u64().unwrap() > 0);
        assert_eq!(j["cores"][0]["cpus"], "0,8");
        assert_eq!(j["numa_disabled"], false);
    }
}

mod eight_node {
    use super::*;

    #[test]
    fn eight_nodes_of_eight_cores() {
        let t = read("eight-node");
        assert_eq!(t.nodes.len(), 8);
        for (i, n) in t.nodes.iter().enumerate() {
            let first = 8 * i as u32;
            assert_eq!(n.cpus, CpuSet::from_indexes(first..first + 8));
            assert_eq!(n.memory_bytes, 16 * GIB);
        }
        assert_eq!(t.cores.len(), 64);
        assert!(t.cores.iter().all(|c| c.cpus.weight() == 1), "no SMT");
        assert_eq!(t.cores[17].package, 1, "two nodes (dies) per package");
    }

    #[test]
    fn slit_is_symmetric_with_three_levels() {
        let t = read("eight-node");
        for (i, a) in t.nodes.iter().enumerate() {
            assert_eq!(a.distances[i], 10);
            for (j, b) in t.nodes.iter().enumerate() {
                assert_eq!(a.distances[j], b.distances[i]);
                assert!([10, 16, 22].contains(&a.distances[j]));
            }
        }
        assert_eq!(t.nodes[0].distances, vec![10, 16, 16, 22, 16, 22, 16, 22]);
    }
}

mod host_capture {
    use super::*;

    #[test]
    fn the_captured_host_reads_consistently() {
        let t = read("host");
        assert!(!t.nodes.is_empty());
        let all = t.nodes.iter().fold(CpuSet::new(), |a, n| a.union(&n.cpus));
        let in_cores = t.cores.iter().fold(CpuSet::new(), |a, c| a.union(&c.cpus));
        assert_eq!(all, in_cores, "every CPU is in exactly one core");
        for n in &t.nodes {
            assert_eq!(n.distances.len(), t.nodes.len());
            assert!(n.memory_bytes > 0);
        }
    }
}

mod caches {
    use super::*;
    use numalab_linux::topology::HostCache;

    fn cache(level: u32, kind: &str, kib: u64, list: &str) -> HostCache {
        HostCache { level, kind: kind.into(), size_bytes: kib * 1024, cpus: cpus(list) }
    }

    #[test]
    fn one_entry_per_instance_instruction_caches_left_out() {
        let t = read("two-node");
        let l1: Vec<_> = t.caches.iter().filter(|c| c.level == 1).collect();
        let l2: Vec<_> = t.caches.iter().filter(|c| c.level == 2).collect();
        let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
        assert_eq!((l1.len(), l2.len(), l3.len()), (8, 8, 2), "one L1d and L2 per core, one L3 per socket");
        assert!(l1.iter().all(|c| c.kind == "Data"), "L1i is skipped");
        assert_eq!(*l2[1], cache(2, "Unified", 256, "1,9"));
        assert_eq!(*l3[0], cache(3, "Unified", 10240, "0-3,8-11"));
        assert_eq!(*l3[1], cache(3, "Unified", 10240, "4-7,12-15"));
    }

    #[test]
    fn an_l3_shared_by_part_of_a_node_is_its_own_instance() {
        // A Zen-like split: each socket's L3 in two halves of two cores (four PUs).
        let s = Scratch::copy_of("two-node", "ccx");
        for k in 0..16u32 {
            let core = k % 8;
            let first = core / 2 * 2;
            let list = format!("{first}-{},{}-{}\n", first + 1, first + 8, first + 9);
            fs::write(s.path(&format!("sys/devices/system/cpu/cpu{k}/cache/index3/shared_cpu_list")), list).unwrap();
        }
        let t = read_topology(&s.0).unwrap();
        let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).map(|c| c.cpus.to_list_string()).collect();
        assert_eq!(l3, ["0-1,8-9", "2-3,10-11", "4-5,12-13", "6-7,14-15"]);
    }

    #[test]
    fn without_cache_directories_there_are_no_caches() {
        assert!(read("eight-node").caches.is_empty());
        let s = Scratch::copy_of("two-node", "no-cacheinfo");
        for k in 0..16 {
            fs::remove_dir_all(s.path(&format!("sys/devices/system/cpu/cpu{k}/cache"))).unwrap();
        }
        let t = read_topology(&s.0).unwrap();
        assert!(t.caches.is_empty());
        assert_eq!(t.to_json()["caches"], serde_json::json!([]));
    }

    #[test]
    fn a_cache_whose_size_the_kernel_hides_is_left_out() {
        // cacheinfo.c hides `size` when the architecture code did not know it.
        let s = Scratch::copy_of("two-node", "no-size");
        for k in 0..16 {
            fs::remove_file(s.path(&format!("sys/devices/system/cpu/cpu{k}/cache/index3/size"))).unwrap();
        }
        let t = read_topology(&s.0).unwrap();
        assert_eq!(t.caches.iter().map(|c| c.level).max(), Some(2));
    }

    #[test]
    fn shared_cpus_outside_the_machine_are_dropped() {
        let s = Scratch::copy_of("two-node", "offline-sharer");
        fs::write(s.path("sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list"), "0-3,8-11,40\n").unwrap();
        let t = read_topology(&s.0).unwrap();
        let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
        assert_eq!(l3.len(), 2, "CPU 40 is not a CPU of the machine: the instance is the same as its siblings'");
    }

    #[test]
    fn a_malformed_size_names_the_file() {
        let s = Scratch::copy_of("two-node", "bad-size");
        fs::write(s.path("sys/devices/system/cpu/cpu3/cache/index2/size"), "256KB\n").unwrap();
        let msg = read_topology(&s.0).expect_err("a bad size must not read").to_string();
        assert!(msg.contains("cpu3/cache/index2/size") && msg.contains("'256KB'"), "{msg}");
    }

    #[test]
    fn json_facts_carry_the_caches() {
        let j = read("two-node").to_json();
        let l3 = j["caches"].as_array().unwrap().iter().find(|c| c["level"] == 3).unwrap().clone();
        assert_eq!(
            l3,
            serde_json::json!({"level": 3, "type": "Unified", "size_bytes": 10240 * 1024, "cpus": "0-3,8-11"})
        );
    }
}

mod no_numa {
    use super::*;

    #[test]
    fn without_node_directories_the_machine_is_node_0() {
        let s = Scratch::copy_of("two-node", "no-numa");
        fs::remove_dir_all(s.path("sys/devices/system/node")).unwrap();
        let t = read_topology(&s.0).unwrap();
        assert!(t.numa_disabled);
        assert_eq!(t.nodes.len(), 1);
        assert_eq!(t.nodes[0].cpus, cpus("0-15"));
        assert_eq!(t.nodes[0].memory_bytes, 32 * GIB);
        assert!(t.nodes[0].memory_free_bytes.is_some());
        assert_eq!(t.nodes[0].distances, vec![10]);
    }
}

mod errors {
    use super::*;

    fn err(s: &Scratch) -> LinuxError {
        read_topology(&s.0).expect_err("the broken tree must not read")
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_the_path() {
        let s = Scratch::copy_of("two-node", "missing");
        fs::remove_file(s.path(&format!("{NODE0}/meminfo"))).unwrap();
        match err(&s) {
            LinuxError::Read { path, .. } => assert!(path.ends_with("node0/meminfo"), "{path}"),
            e => panic!("expected a read error, got {e}"),
        }
    }

    #[test]
    fn a_malformed_distance_names_the_file_and_the_token() {
        let s = Scratch::copy_of("two-node", "bad-distance");
        fs::write(s.path(&format!("{NODE0}/distance")), "10 2x1\n").unwrap();
        let e = err(&s);
        let LinuxError::Parse { path, message } = &e else { panic!("expected a parse error, got {e}") };
        assert!(path.ends_with("node0/distance"), "{path}");
        assert!(message.contains("'2x1'"), "{message}");
        assert!(e.to_string().contains("node0/distance: bad distance '2x1'"), "{e}");
    }

    #[test]
    fn a_distance_row_of_the_wrong_length_is_rejected() {
        let s = Scratch::copy_of("two-node", "short-row");
        fs::write(s.path("sys/devices/system/node/node1/distance"), "21 10 20\n").unwrap();
        let e = err(&s);
        assert!(matches!(e, LinuxError::Parse { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("node1/distance") && msg.contains("3 distances, expected 2"), "{msg}");
    }

    #[test]
    fn a_meminfo_without_memtotal_is_rejected() {
        let s = Scratch::copy_of("two-node", "no-memtotal");
        fs::write(s.path(&format!("{NODE0}/meminfo")), "Node 0 MemFree:  1024 kB\n").unwrap();
        let msg = err(&s).to_string();
        assert!(msg.contains("node0/meminfo") && msg.contains("no MemTotal line"), "{msg}");
    }

    #[test]
    fn a_bad_cpulist_names_the_token() {
        let s = Scratch::copy_of("two-node", "bad-cpulist");
        fs::write(s.path(&format!("{NODE0}/cpulist")), "0-3,x\n").unwrap();
        let msg = err(&s).to_string();
        assert!(msg.contains("node0/cpulist") && msg.contains("'x'"), "{msg}");
    }

    #[test]
    fn memfree_is_optional() {
        let s = Scratch::copy_of("two-node", "no-memfree");
        fs::write(s.path(&format!("{NODE0}/meminfo")), "Node 0 MemTotal:  2048 kB\n").unwrap();
        let t = read_topology(&s.0).unwrap();
        assert_eq!(t.nodes[0].memory_bytes, 2048 * 1024);
        assert_eq!(t.nodes[0].memory_free_bytes, None);
        assert!(t.to_json()["nodes"][0]["memory_free_bytes"].is_null());
    }
}
