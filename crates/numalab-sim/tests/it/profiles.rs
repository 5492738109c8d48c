//! Kernel profiles as data (`numalab_sim::profile`): every `--kernel` name resolves to a
//! profile, each profile states every rule (the table below is the expected one, rule by rule),
//! and no engine code outside the profile module asks which release it runs.

use std::collections::BTreeMap;
use std::path::Path;

use numalab_sim::profile::{KernelProfile, PROFILE_2_6_32, PROFILE_3_13, PROFILE_6_1, PROFILE_6_13};
use numalab_sim::Kernel;
use serde_json::Value;

#[test]
fn every_kernel_name_resolves_to_its_profile() {
    assert_eq!(Kernel::ALL.map(|(n, _)| n), ["2.6.32", "3.13", "6.1", "6.13"]);
    for (name, kernel) in Kernel::ALL {
        assert_eq!(Kernel::parse(name), Ok(kernel));
        assert_eq!(kernel.profile().name, name, "Kernel::ALL and the profile disagree on the name");
        // The serialized key (run records, configs) is the same name.
        assert_eq!(serde_json::to_value(kernel).unwrap(), Value::String(name.into()));
    }
    assert_eq!(Kernel::V2_6_32.profile(), &PROFILE_2_6_32);
    assert_eq!(Kernel::V3_13.profile(), &PROFILE_3_13);
    assert_eq!(Kernel::V6_1.profile(), &PROFILE_6_1);
    assert_eq!(Kernel::V6_13.profile(), &PROFILE_6_13);
    assert_eq!(Kernel::default(), Kernel::V6_13);
    let err = Kernel::parse("5.4").unwrap_err();
    assert_eq!(err, "--kernel: '5.4' is not one of 2.6.32, 3.13, 6.1, 6.13");
}

/// `part.rule` -> the rule's value (compact JSON), for one profile. Nested structs (the
/// domains' parameters) are followed; an enum variant with data is a value.
fn rules(p: &KernelProfile) -> BTreeMap<String, String> {
    fn walk(prefix: &str, v: Value, out: &mut BTreeMap<String, String>) {
        match v {
            Value::Object(fields) if fields.keys().all(|k| k.starts_with(|c: char| c.is_ascii_lowercase())) => {
                for (field, v) in fields {
                    let key = if prefix.is_empty() { field } else { format!("{prefix}.{field}") };
                    walk(&key, v, out);
                }
            }
            v => {
                out.insert(prefix.to_string(), v.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", serde_json::to_value(p).unwrap(), &mut out);
    out
}

/// One line per rule: `part.rule | 2.6.32 | 3.13 | 6.1 | 6.13`.
fn table() -> String {
    let cols: Vec<BTreeMap<String, String>> = Kernel::ALL.iter().map(|(_, k)| rules(k.profile())).collect();
    let mut lines = vec![format!("rule | {}", Kernel::ALL.map(|(n, _)| n).join(" | "))];
    for key in cols[0].keys() {
        let vals: Vec<&str> = cols.iter().map(|c| c[key].as_str()).collect();
        lines.push(format!("{key} | {}", vals.join(" | ")));
    }
    lines.join("\n") + "\n"
}

#[test]
fn every_profile_states_every_rule_as_expected() {
    let table = table();
    let expected = include_str!("kernel_profiles.txt");
    assert!(
        table == expected,
        "the kernel profiles changed; if on purpose, copy this table to tests/it/kernel_profiles.txt:\n{table}"
    );
    // Every profile has the same rules (the struct literal names each one).
    let keys: Vec<Vec<String>> = Kernel::ALL.iter().map(|(_, k)| rules(k.profile()).into_keys().collect()).collect();
    assert!(keys.windows(2).all(|w| w[0] == w[1]));
    assert!(keys[0].len() > 40, "the table lists every rule: {}", keys[0].len());
}

/// The engine's sources, without their `#[cfg(test)]` modules (tests may name a release).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_string();
            out.push((p.display().to_string(), code));
        }
    }
}

#[test]
fn no_engine_code_outside_the_profiles_branches_on_the_release() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 20, "found the sources: {}", files.len());
    let profile = src.join("profile.rs").display().to_string();
    let mut offenders = Vec::new();
    for (path, code) in &files {
        if *path == profile {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            // Naming a release (Kernel::V3_13) is the only way to compare or match on one.
            if line.contains("Kernel::V") || line.contains("profile::PROFILE_") {
                offenders.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "release branches outside src/profile.rs:\n{}", offenders.join("\n"));
    // The scan does see a release where one is named.
    let (_, profile_code) = files.iter().find(|(p, _)| *p == profile).unwrap();
    assert!(profile_code.contains("Kernel::V3_13 => &PROFILE_3_13"));
}

/// 4 nodes of 2 cores: 0-1 and 2-3 at distance 20, the pairs 40 apart (beyond RECLAIM_DISTANCE).
fn four_nodes_two_tiers() -> numalab_model::Machine {
    let spec = r#"{"name": "4n", "description": "four nodes, two distances",
        "topology": {"packages": 4, "nodes_per_package": 1, "cores_per_node": 2},
        "memory": {"node_gib": 1},
        "distances": [[10,20,40,40],[20,10,40,40],[40,40,10,20],[40,40,20,10]],
        "latency": {"local_ns": 100},
        "bandwidth": {"node_gbps": 10},
        "links": [{"nodes": [0,1], "gbps": 6}, {"nodes": [2,3], "gbps": 6}, {"nodes": [1,2], "gbps": 6}],
        "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
    numalab_model::MachineSpec::from_json(spec).unwrap().resolve().unwrap()
}

#[test]
fn the_2_6_32_profile_builds_one_node_level_that_balances_fork_exec_and_wakeups_at_any_distance() {
    use numalab_sim::input::{Placement, Places, ProcBind};
    use numalab_sim::sched::Sched;
    let m = four_nodes_two_tiers();
    let placement = Placement {
        policy: crate::common::policy(numalab_model::PolicyMode::Default, &[]),
        cpus: None,
        proc_bind: ProcBind::False,
        places: Places::Cores,
    };
    let names = |k: Kernel| -> Vec<String> {
        Sched::new(&m, &placement, k, 1, 1).unwrap().domains().iter().map(|d| d.name.clone()).collect()
    };
    // 3.13 builds a level per distance and stops fork/exec balancing beyond RECLAIM_DISTANCE.
    assert_eq!(names(Kernel::V3_13), ["MC", "NUMA20", "NUMA40"]);
    let s313 = Sched::new(&m, &placement, Kernel::V3_13, 1, 1).unwrap();
    assert!(!s313.domains()[2].balance_fork_exec);
    // 2.6.32: SD_NODE_INIT over the (at most 16) nearest nodes, i.e. the whole machine here.
    assert_eq!(names(Kernel::V2_6_32), ["MC", "NODE"]);
    let s = Sched::new(&m, &placement, Kernel::V2_6_32, 1, 1).unwrap();
    let node = &s.domains()[1];
    assert_eq!(node.weight(0), 8);
    assert!(node.balance_fork_exec && node.wake_affine);
    assert_eq!((node.min_interval_ms(0), node.max_interval_ms(0), node.init_interval_ms(0)), (8.0, 32.0, 1.0));
    assert_eq!((node.busy_factor, node.imbalance_pct), (32.0, 125.0));
    // SD_NODE_INIT: busy_idx 3, idle_idx SD_IDLE_IDX (2 on x86-64), newidle_idx 0,
    // cache_nice_tries SD_CACHE_NICE_TRIES (2); SD_MC_INIT: busy_idx 2, cache_nice_tries 1.
    let idx = node.load_idx;
    assert_eq!((idx.busy, idx.idle, idx.newidle, node.cache_nice_tries), (3, 2, 0, 2));
    let mc = &s.domains()[0];
    assert_eq!((mc.load_idx.busy, mc.load_idx.idle, mc.load_idx.newidle, mc.cache_nice_tries), (2, 0, 0, 1));
}

#[test]
fn automatic_numa_balancing_is_refused_with_2_6_32_in_one_line() {
    use numalab_sim::input::Balancing;
    let on = Balancing { enabled: true, ..Balancing::default() };
    let err = on.check(Kernel::V2_6_32).unwrap_err().to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("automatic NUMA balancing") && err.contains("2.6.32") && err.contains("3.13, 6.1, 6.13"),
        "{err}"
    );
    assert!(on.check(Kernel::V3_13).is_ok());
    assert!(Balancing::default().check(Kernel::V2_6_32).is_ok());
}

#[test]
fn weighted_interleave_is_refused_before_6_9_in_one_line() {
    // MPOL_WEIGHTED_INTERLEAVE arrived in 6.9: 6.1's include/uapi/linux/mempolicy.h ends at
    // MPOL_PREFERRED_MANY, so the guest kernel refuses it too (numalab vm).
    use numalab_sim::spec::{PlacementRequest, PolicyRequest, RunSpec};
    let m = crate::common::machine4();
    let placement = PlacementRequest {
        policy: PolicyRequest {
            mode: numalab_model::PolicyMode::WeightedInterleave,
            nodes: Some("0-1".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let ask = |kernel: Kernel| {
        let w = crate::common::stream_like(8, 2, numalab_sim::input::Pattern::Block, 1);
        let regions = vec![None; w.regions.len()];
        RunSpec::new(&m, w, &placement, &regions, numalab_sim::input::SimConfig { kernel, ..crate::common::cfg() })
    };
    assert!(ask(Kernel::V6_13).is_ok());
    for kernel in [Kernel::V2_6_32, Kernel::V3_13, Kernel::V6_1] {
        let err = ask(kernel).unwrap_err().to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--weighted-interleave") && err.contains("added in 6.9"), "{err}");
    }
}
