//! The process and counter readers on captured procfs trees (`tests/fixtures/procfs/`).

use std::fs;
use std::path::PathBuf;

use numalab_linux::knobs::{read_knob, read_knobs, restore_knobs, set_knobs, write_knob, Journal, KnobLocation};
use numalab_linux::numa_maps::{bytes_per_node, pages_per_node};
use numalab_linux::{
    read_node_states, read_numa_maps, read_numastat, read_status, read_task_sched, read_threads_sched, read_vmstat,
    LinuxError, MappingKind,
};
use numalab_model::PolicyMode;

use super::Scratch;

fn root(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/procfs").join(name)
}

/// The one PID under `proc/` of a captured tree.
fn only_pid(tree: &str) -> u32 {
    let pids: Vec<u32> = fs::read_dir(root(tree).join("proc"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    pids[0]
}

mod numa_maps {
    use super::*;

    #[test]
    fn interleaved_dgemv_splits_its_matrix_evenly() {
        let maps = read_numa_maps(&root("two-node"), 4242).unwrap();
        assert_eq!(maps.len(), 10);
        let matrix = maps.iter().find(|m| m.address == 0x7f1b2c000000).unwrap();
        assert_eq!(matrix.policy.text, "interleave:0-1");
        assert_eq!(matrix.pages(), 781_250);
        assert_eq!(matrix.pages_per_node[&0], matrix.pages_per_node[&1]);
        let bound = maps.iter().find(|m| m.policy.mode == PolicyMode::Bind).unwrap();
        assert_eq!(bound.policy.nodes.to_list_string(), "1");
        assert_eq!(bound.pages_per_node.keys().copied().collect::<Vec<_>>(), [1]);
        let empty = maps.iter().find(|m| m.address == 0x7f1cb4e00000).unwrap();
        assert_eq!((empty.pages(), empty.kernelpagesize_kb), (0, None));
        assert_eq!(maps[2].kind, MappingKind::Heap);
        assert_eq!(maps[9].kind, MappingKind::Stack);
        assert_eq!(maps[0].kind, MappingKind::File("/opt/kernels/dgemv".into()));
        let per_node = pages_per_node(&maps);
        assert_eq!(per_node[&0], 3 + 17 + 390_625 + 20 + 12 + 100 + 5);
        assert_eq!(per_node[&1], 1 + 16 + 390_625 + 20 + 2048 + 18 + 60 + 4);
    }

    #[test]
    fn every_policy_spelling_and_huge_pages() {
        let maps = read_numa_maps(&root("four-node-tiered"), 777).unwrap();
        let modes: Vec<PolicyMode> = maps.iter().map(|m| m.policy.mode).collect();
        for m in [
            PolicyMode::Default,
            PolicyMode::WeightedInterleave,
            PolicyMode::PreferredMany,
            PolicyMode::Bind,
            PolicyMode::Interleave,
            PolicyMode::Preferred,
            PolicyMode::Local,
        ] {
            assert!(modes.contains(&m), "{m} missing from {modes:?}");
        }
        assert_eq!(maps[0].kind.label(), "/opt/my kernels/stream");
        let stat = maps.iter().find(|m| m.policy.mode == PolicyMode::Bind).unwrap();
        assert_eq!(stat.policy.flags, ["static"]);
        let rel = maps.iter().find(|m| m.policy.mode == PolicyMode::Interleave).unwrap();
        assert_eq!(rel.policy.flags, ["relative"]);
        let huge = maps.iter().find(|m| m.huge).unwrap();
        assert_eq!(huge.kernelpagesize_kb, Some(2048));
        let swap = maps.iter().find(|m| m.policy.mode == PolicyMode::Preferred).unwrap();
        assert_eq!((swap.swapcache, swap.writeback), (2, 1));
        // Bytes weigh a huge page as 2 MiB, pages count it as one.
        let bytes = bytes_per_node(&maps);
        let pages = pages_per_node(&maps);
        assert_eq!(bytes[&2], pages[&2] * 4096);
        assert_eq!(bytes[&1] - pages[&1] * 4096, 4 * (2048 - 4) * 1024);
    }

    #[test]
    fn the_host_capture_reads() {
        let pid = only_pid("host");
        let maps = read_numa_maps(&root("host"), pid).unwrap();
        assert!(!maps.is_empty());
        assert!(maps.iter().all(|m| m.pages_per_node.keys().all(|n| *n == 0)), "one node");
        assert!(maps.iter().any(|m| matches!(&m.kind, MappingKind::File(p) if p.ends_with("sleep"))));
    }

    #[test]
    fn a_missing_process_is_a_read_error() {
        let e = read_numa_maps(&root("two-node"), 1).unwrap_err();
        assert!(matches!(&e, LinuxError::Read { path, .. } if path.ends_with("proc/1/numa_maps")), "{e}");
    }
}

mod sched {
    use super::*;

    #[test]
    fn every_thread_with_its_faults_per_node() {
        let threads = read_threads_sched(&root("two-node"), 4242).unwrap();
        assert_eq!(threads.iter().map(|t| t.tid).collect::<Vec<_>>(), [4242, 4243, 4244, 4245]);
        for t in &threads {
            let n = t.numa.as_ref().unwrap();
            assert_eq!(n.faults.len(), 2, "one line per online node");
            let sum: u64 = n.faults.iter().map(|f| f.task_private + f.task_shared).sum();
            assert_eq!(sum, n.total_numa_faults, "tid {}", t.tid);
            assert_eq!(n.numa_group_id, Some(4242));
            assert_eq!(n.numa_scan_seq, Some(4));
        }
        assert_eq!(threads[1].numa.as_ref().unwrap().numa_preferred_nid, 1);
        assert_eq!(threads[1].sum_exec_runtime_ns, 7_790_000_001);
    }

    #[test]
    fn the_host_capture_has_a_numa_block_with_no_preference() {
        let pid = only_pid("host");
        let t = read_task_sched(&root("host"), pid, pid).unwrap();
        assert_eq!(t.comm, "sleep");
        let n = t.numa.unwrap();
        assert_eq!(n.numa_preferred_nid, -1);
        assert_eq!(n.faults.len(), 1);
        assert_eq!(n.faults[0].node, 0);
    }

    #[test]
    fn four_nodes_give_four_fault_lines() {
        let threads = read_threads_sched(&root("four-node-tiered"), 777).unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0].numa.as_ref().unwrap().faults.len(), 4);
        assert_eq!(threads[0].numa.as_ref().unwrap().faults[3].task_private, 0, "node 3 has no memory");
    }
}

mod counters {
    use super::*;

    #[test]
    fn vmstat_keeps_numa_migration_and_tiering_counters() {
        let old = read_vmstat(&root("two-node")).unwrap();
        assert_eq!(old["numa_hint_faults"], 15000);
        assert_eq!(old["pgmigrate_fail"], 2);
        assert!(!old.contains_key("pgfault") && !old.contains_key("compact_migrate_scanned"));
        assert!(!old.keys().any(|k| k.starts_with("pgpromote")), "5.4 has no tiering");
        let new = read_vmstat(&root("four-node-tiered")).unwrap();
        assert_eq!(new["pgpromote_success"], 48000);
        assert_eq!(new["pgdemote_kswapd"], 7000);
        assert!(!new.contains_key("thp_migration_success"));
        let host = read_vmstat(&root("host")).unwrap();
        for k in ["numa_hit", "numa_miss", "numa_local", "pgmigrate_success"] {
            assert!(host.contains_key(k), "{k}");
        }
    }

    #[test]
    fn numastat_per_node() {
        let s = read_numastat(&root("two-node")).unwrap();
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(s[&1]["interleave_hit"], 390650);
        let total_hit: u64 = s.values().map(|c| c["numa_hit"]).sum();
        assert_eq!(total_hit, read_vmstat(&root("two-node")).unwrap()["numa_hit"]);
        let t = read_numastat(&root("four-node-tiered")).unwrap();
        assert_eq!(t[&3]["numa_hit"], 0, "a memoryless node allocates nothing");
        assert_eq!(read_numastat(&root("host")).unwrap().len(), 1);
    }

    #[test]
    fn status_and_node_states() {
        let s = read_status(&root("two-node"), 4242).unwrap();
        assert_eq!((s.name.as_str(), s.threads), ("dgemv", 4));
        assert_eq!(s.cpus_allowed.to_list_string(), "0-15");
        assert_eq!(s.mems_allowed.to_list_string(), "0-1");
        let n = read_node_states(&root("four-node-tiered")).unwrap();
        assert_eq!(n.online.to_list_string(), "0-3");
        assert_eq!(n.has_memory.to_list_string(), "0-2");
        assert_eq!(n.has_cpu.to_list_string(), "0-1,3");
        let h = read_node_states(&root("host")).unwrap();
        assert_eq!((h.online.to_list_string(), h.has_memory.to_list_string()), ("0".into(), "0".into()));
        let hs = read_status(&root("host"), only_pid("host")).unwrap();
        assert_eq!(hs.mems_allowed.to_list_string(), "0");
    }
}

mod knobs {
    use super::*;

    #[test]
    fn old_kernels_keep_scanner_knobs_in_procfs() {
        let (knobs, absent) = read_knobs(&root("two-node")).unwrap();
        let scan = knobs.iter().find(|k| k.name == "scan_period_min_ms").unwrap();
        assert_eq!((scan.location, scan.value), (KnobLocation::Procfs, 1000));
        assert_eq!(scan.path, "proc/sys/kernel/numa_balancing_scan_period_min_ms");
        assert_eq!(absent, ["hot_threshold_ms", "promote_rate_limit_mbps"]);
    }

    #[test]
    fn new_kernels_keep_them_in_debugfs() {
        let (knobs, absent) = read_knobs(&root("four-node-tiered")).unwrap();
        assert!(absent.is_empty(), "{absent:?}");
        let nb = knobs.iter().find(|k| k.name == "numa_balancing").unwrap();
        assert_eq!((nb.location, nb.value), (KnobLocation::Procfs, 2));
        let size = knobs.iter().find(|k| k.name == "scan_size_mb").unwrap();
        assert_eq!(size.location, KnobLocation::Debugfs);
        assert_eq!(size.path, "sys/kernel/debug/sched/numa_balancing/scan_size_mb");
        let (host, _) = read_knobs(&root("host")).unwrap();
        assert!(host.iter().any(|k| k.name == "numa_balancing"));
    }

    #[test]
    fn set_journals_first_and_restore_puts_every_original_back() {
        let s = Scratch::copy_procfs("four-node-tiered", "knobs-journal");
        let journal = s.path("journal.json");
        set_knobs(&s.0, &journal, &[("numa_balancing".into(), 1), ("scan_size_mb".into(), 64)]).unwrap();
        assert_eq!(read_knob(&s.0, "scan_size_mb").unwrap().unwrap().value, 64);
        assert_eq!(read_knob(&s.0, "numa_balancing").unwrap().unwrap().value, 1);
        // A second change keeps the first original of a knob already journalled.
        set_knobs(&s.0, &journal, &[("scan_size_mb".into(), 32), ("hot_threshold_ms".into(), 500)]).unwrap();
        let j = Journal::load(&journal).unwrap().unwrap();
        let orig: Vec<(&str, u64)> = j.entries.iter().map(|e| (e.name, e.value)).collect();
        assert_eq!(orig, [("numa_balancing", 2), ("scan_size_mb", 256), ("hot_threshold_ms", 1000)]);
        let restored = restore_knobs(&s.0, &journal).unwrap();
        assert_eq!(restored.len(), 3);
        assert_eq!(read_knob(&s.0, "scan_size_mb").unwrap().unwrap().value, 256);
        assert_eq!(read_knob(&s.0, "numa_balancing").unwrap().unwrap().value, 2);
        assert_eq!(read_knob(&s.0, "hot_threshold_ms").unwrap().unwrap().value, 1000);
        assert!(!journal.exists(), "a restored journal is removed");
        assert!(restore_knobs(&s.0, &journal).unwrap().is_empty(), "nothing left to restore");
    }

    #[test]
    fn a_bad_change_writes_nothing() {
        let s = Scratch::copy_procfs("two-node", "knobs-bad");
        let journal = s.path("journal.json");
        let e = set_knobs(&s.0, &journal, &[("scan_size_mb".into(), 64), ("numa_balancing".into(), 9)]).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = set_knobs(&s.0, &journal, &[("hot_threshold_ms".into(), 5)]).unwrap_err();
        assert!(e.to_string().contains("no hot_threshold_ms knob"), "{e}");
        assert!(!journal.exists());
        assert_eq!(read_knob(&s.0, "scan_size_mb").unwrap().unwrap().value, 256);
        assert_eq!(write_knob(&s.0, "scan_delay_ms", 5).unwrap().value, 1000);
        assert_eq!(read_knob(&s.0, "scan_delay_ms").unwrap().unwrap().value, 5);
    }

    #[test]
    fn a_journal_of_another_root_is_refused() {
        let a = Scratch::copy_procfs("two-node", "knobs-root-a");
        let b = Scratch::copy_procfs("two-node", "knobs-root-b");
        let journal = a.path("journal.json");
        set_knobs(&a.0, &journal, &[("scan_size_mb".into(), 64)]).unwrap();
        let e = restore_knobs(&b.0, &journal).unwrap_err().to_string();
        assert!(e.contains("journals changes under"), "{e}");
        assert_eq!(read_knob(&b.0, "scan_size_mb").unwrap().unwrap().value, 256);
    }
}
