//! Sampling a running process and the system's NUMA counters, and the JSON of each record.
//!
//! `/proc/PID/*` always comes from the live `/proc` (the process is real); the system-wide files
//! (`proc/vmstat`, `sys/devices/system/node/nodeN/numastat`) come from the agent's `--root`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use numalab_linux::numa_maps::{bytes_per_node, pages_per_node};
use numalab_linux::vmstat::delta;
use numalab_linux::{
    read_numa_maps, read_numastat, read_status, read_task_sched, read_threads_sched, read_vmstat, Counters, LinuxError,
    NumaMapping, TaskSched,
};
use serde_json::{json, Map, Value};

/// System counters at one moment.
#[derive(Clone, Debug, Default)]
pub struct SystemCounters {
    pub vmstat: Counters,
    pub numastat: BTreeMap<u32, Counters>,
}

impl SystemCounters {
    pub fn read(root: &Path) -> Result<SystemCounters, LinuxError> {
        Ok(SystemCounters { vmstat: read_vmstat(root)?, numastat: read_numastat(root)? })
    }
}

/// Node-keyed maps as JSON objects with string keys (`{"0": 12}`).
pub fn by_node<T: Clone + Into<Value>>(m: &BTreeMap<u32, T>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.to_string(), v.clone().into())).collect::<Map<_, _>>())
}

fn counters(c: &Counters) -> Value {
    Value::Object(c.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

pub fn numastat_json(n: &BTreeMap<u32, Counters>) -> Value {
    Value::Object(n.iter().map(|(k, v)| (k.to_string(), counters(v))).collect())
}

pub fn vmstat_json(c: &Counters) -> Value {
    counters(c)
}

fn mapping_json(m: &NumaMapping) -> Value {
    let (kind, file) = match &m.kind {
        numalab_linux::MappingKind::File(p) => ("file", Value::String(p.clone())),
        k => (k.label(), Value::Null),
    };
    json!({
        "address": format!("{:x}", m.address),
        "policy": m.policy.text,
        "kind": kind,
        "file": file,
        "huge": m.huge,
        "kernelpagesize_kb": m.kernelpagesize_kb,
        "anon": m.anon,
        "dirty": m.dirty,
        "pages_per_node": by_node(&m.pages_per_node),
    })
}

/// Field 39 of `/proc/PID/task/TID/stat`, `processor`: the CPU the thread last ran on
/// (`fs/proc/array.c: do_task_stat()` prints `task_cpu(task)` there). The fields are counted
/// after the last `)`, since `comm` (field 2) may itself hold spaces and parentheses.
pub fn parse_stat_processor(text: &str) -> Option<u32> {
    let rest = &text[text.rfind(')')? + 1..];
    // `rest` starts at field 3 (state): field 39 is the 37th word.
    rest.split_ascii_whitespace().nth(39 - 3)?.parse().ok()
}

/// The CPU each thread last ran on, by tid (threads that exit between the two reads are left out).
fn read_processors(proc_root: &Path, pid: u32, tids: impl Iterator<Item = u32>) -> BTreeMap<u32, u32> {
    tids.filter_map(|tid| {
        let text = std::fs::read_to_string(proc_root.join(format!("proc/{pid}/task/{tid}/stat"))).ok()?;
        Some((tid, parse_stat_processor(&text)?))
    })
    .collect()
}

/// A thread's record: its `sched` statistics and `processor`, the CPU of `stat` field 39
/// (null when it could not be read).
pub fn thread_json(t: &TaskSched, processor: Option<u32>) -> Value {
    let mut v = json!({
        "tid": t.tid,
        "comm": t.comm,
        "processor": processor,
        "sum_exec_runtime_ns": t.sum_exec_runtime_ns,
        "nr_migrations": t.nr_migrations,
        "nr_voluntary_switches": t.nr_voluntary_switches,
        "nr_involuntary_switches": t.nr_involuntary_switches,
    });
    let o = v.as_object_mut().expect("an object");
    match &t.numa {
        Some(n) => {
            o.insert("numa_preferred_nid".into(), json!(n.numa_preferred_nid));
            o.insert("total_numa_faults".into(), json!(n.total_numa_faults));
            o.insert("numa_pages_migrated".into(), json!(n.numa_pages_migrated));
            o.insert("numa_scan_seq".into(), json!(n.numa_scan_seq));
            o.insert("current_node".into(), json!(n.current_node));
            o.insert("numa_group_id".into(), json!(n.numa_group_id));
            o.insert("faults".into(), json!(n.faults));
        }
        None => {
            o.insert("numa_balancing".into(), json!(false));
        }
    }
    v
}

/// State carried from sample to sample: the baseline, the last pages seen, every thread seen.
pub struct Sampler {
    root: PathBuf,
    proc_root: PathBuf,
    pid: u32,
    pub baseline: SystemCounters,
    pub last: SystemCounters,
    pub pages_per_node: BTreeMap<u32, u64>,
    pub bytes_per_node: BTreeMap<u32, u64>,
    pub last_pages_t_s: Option<f64>,
    /// The last statistics of every thread seen, exited ones included, and the CPU each last ran on.
    pub threads: BTreeMap<u32, TaskSched>,
    pub processors: BTreeMap<u32, u32>,
    pub samples: u64,
    /// numa_maps reads so far, and their total cost.
    pub maps_reads: u64,
    pub maps_cost_s: f64,
    /// Share of one CPU numa_maps reads may take (0.005 = 0.5%).
    maps_budget: f64,
    next_maps_t_s: f64,
    /// Distinct problems met while sampling, in order.
    pub errors: Vec<String>,
    /// Whether the last pages came from the snapshot at the command's exit (run.rs) rather than
    /// from a sample.
    pub pages_at_exit: bool,
    /// Threads whose last statistics were read at their exit.
    pub threads_at_exit: BTreeSet<u32>,
}

impl Sampler {
    /// `maps_budget`: the share of one CPU that reading numa_maps may take. The kernel walks every
    /// page table entry of the process for it (`show_numa_map()` -> `gather_pte_stats()`), about
    /// 40 ms for 3 GB of 4 KiB pages, while the other files cost microseconds: numa_maps is read at
    /// a sample only when the time since the last read is at least that read's cost over the
    /// budget, so a large process is mapped less often and a small one at every sample.
    pub fn new(root: &Path, pid: u32, baseline: SystemCounters, maps_budget: f64) -> Sampler {
        Sampler {
            root: root.to_path_buf(),
            proc_root: PathBuf::from("/"),
            pid,
            last: baseline.clone(),
            baseline,
            pages_per_node: BTreeMap::new(),
            bytes_per_node: BTreeMap::new(),
            last_pages_t_s: None,
            threads: BTreeMap::new(),
            processors: BTreeMap::new(),
            samples: 0,
            maps_reads: 0,
            maps_cost_s: 0.0,
            maps_budget,
            next_maps_t_s: 0.0,
            errors: Vec::new(),
            pages_at_exit: false,
            threads_at_exit: BTreeSet::new(),
        }
    }

    /// The snapshot at the command's exit, taken while it is stopped before its memory is torn
    /// down (the `PTRACE_EVENT_EXIT` stop): numa_maps whatever its budget, every thread still
    /// there, the system counters. Its record is a sample with `"snapshot": "exit"`; it does not
    /// count as a sample.
    pub fn exit_snapshot(&mut self, t_s: f64) -> (Value, Vec<String>) {
        self.next_maps_t_s = 0.0;
        let (mut record, problems) = self.sample(t_s);
        self.samples -= 1;
        if self.last_pages_t_s == Some(t_s) {
            self.pages_at_exit = true;
        }
        if let Some(threads) = record["threads"].as_array() {
            self.threads_at_exit.extend(threads.iter().filter_map(|t| t["tid"].as_u64()).map(|t| t as u32));
        }
        record["snapshot"] = json!("exit");
        (record, problems)
    }

    /// The last statistics of thread `tid`, read at its exit stop (it is gone a moment later).
    pub fn thread_exit(&mut self, tid: u32) {
        if let Ok(t) = read_task_sched(&self.proc_root, self.pid, tid) {
            self.threads.insert(tid, t);
            self.threads_at_exit.insert(tid);
            self.processors.extend(read_processors(&self.proc_root, self.pid, std::iter::once(tid)));
        }
    }

    /// Note a problem once; returns true the first time (the caller prints it then).
    fn note(&mut self, e: String) -> Option<String> {
        if self.errors.contains(&e) {
            None
        } else {
            self.errors.push(e.clone());
            Some(e)
        }
    }

    /// Take a sample at `t_s` seconds; returns its record and any new problem to print.
    pub fn sample(&mut self, t_s: f64) -> (Value, Vec<String>) {
        self.samples += 1;
        let mut new_errors = Vec::new();
        let mut errs = Vec::new();
        let read_maps = t_s >= self.next_maps_t_s;
        let mut maps_cost_s = None;
        let maps = if read_maps {
            let t0 = Instant::now();
            let m = read_numa_maps(&self.proc_root, self.pid);
            let cost = t0.elapsed().as_secs_f64();
            self.maps_reads += 1;
            self.maps_cost_s += cost;
            maps_cost_s = Some(round6(cost));
            self.next_maps_t_s = t_s + cost / self.maps_budget;
            match m {
                // An exiting process has no mappings left: keep the last pages seen.
                Ok(m) if m.is_empty() => None,
                Ok(m) => Some(m),
                Err(e) => {
                    errs.push(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        if let Some(m) = &maps {
            self.pages_per_node = pages_per_node(m);
            self.bytes_per_node = bytes_per_node(m);
            self.last_pages_t_s = Some(t_s);
        }
        let status = match read_status(&self.proc_root, self.pid) {
            Ok(st) => Some(st),
            Err(e) => {
                errs.push(e.to_string());
                None
            }
        };
        let threads = match read_threads_sched(&self.proc_root, self.pid) {
            Ok(t) => t,
            Err(e) => {
                errs.push(e.to_string());
                Vec::new()
            }
        };
        let processors = read_processors(&self.proc_root, self.pid, threads.iter().map(|t| t.tid));
        for t in &threads {
            self.threads.insert(t.tid, t.clone());
        }
        self.processors.extend(processors.iter().map(|(k, v)| (*k, *v)));
        match SystemCounters::read(&self.root) {
            Ok(c) => self.last = c,
            Err(e) => errs.push(e.to_string()),
        }
        for e in &errs {
            if let Some(e) = self.note(e.clone()) {
                new_errors.push(e);
            }
        }
        let mappings: Option<Vec<Value>> =
            maps.as_ref().map(|m| m.iter().filter(|m| m.pages() > 0).map(mapping_json).collect());
        let record = json!({
            "type": "sample",
            "t_s": round6(t_s),
            "pid": self.pid,
            "pages_per_node": by_node(&self.pages_per_node),
            "bytes_per_node": by_node(&self.bytes_per_node),
            "pages_t_s": self.last_pages_t_s.map(round6),
            "mappings": mappings,
            "maps_cost_s": maps_cost_s,
            "cpus_allowed": status.as_ref().map(|st| st.cpus_allowed.to_list_string()),
            "mems_allowed": status.as_ref().map(|st| st.mems_allowed.to_list_string()),
            "threads": threads.iter().map(|t| thread_json(t, processors.get(&t.tid).copied())).collect::<Vec<_>>(),
            "vmstat_delta": vmstat_json(&delta(&self.baseline.vmstat, &self.last.vmstat)),
            "numastat_delta": numastat_json(&self.numastat_delta()),
            "errors": errs,
        });
        (record, new_errors)
    }

    /// Re-read the system counters (at exit).
    pub fn read_final_counters(&mut self) -> Option<String> {
        match SystemCounters::read(&self.root) {
            Ok(c) => {
                self.last = c;
                None
            }
            Err(e) => self.note(e.to_string()),
        }
    }

    pub fn numastat_delta(&self) -> BTreeMap<u32, Counters> {
        self.last
            .numastat
            .iter()
            .map(|(n, c)| (*n, delta(self.baseline.numastat.get(n).unwrap_or(&Counters::new()), c)))
            .collect()
    }
}

/// Seconds rounded to the microsecond, so records do not carry float noise.
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::parse_stat_processor;

    #[test]
    fn processor_is_field_39_counted_after_the_command_name() {
        // A line of `taskset -c 1 cat /proc/self/stat`, then the same with a command name holding ") (".
        let tail = "R 12795 12795 4514 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 996637 3133440 391 18446744073709551615 \
                    94035459485696 94035459505577 140728518643984 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94035459521584 \
                    94035459523200 94035819925504 140728518646274 140728518646294 140728518646294 140728518647787 0";
        assert_eq!(parse_stat_processor(&format!("4242 (cat) {tail}")), Some(1));
        assert_eq!(parse_stat_processor(&format!("4242 (a) (b c) {tail}")), Some(1));
        assert_eq!(parse_stat_processor("4242 (cat) R 1"), None);
    }

    /// A thread's `faults` are the engine's `NodeFaults` (one type in numalab_model), so measured and
    /// simulated documents share their keys.
    #[test]
    fn thread_faults_have_the_engines_keys() {
        use numalab_linux::{NodeFaults, TaskNuma, TaskSched};

        let f = NodeFaults { node: 1, task_private: 2, task_shared: 3, group_private: 4, group_shared: 5 };
        let numa = TaskNuma { faults: vec![f.clone()], ..TaskNuma::default() };
        let t = TaskSched {
            tid: 7,
            comm: "x".into(),
            sum_exec_runtime_ns: 0,
            nr_migrations: 0,
            nr_voluntary_switches: 0,
            nr_involuntary_switches: 0,
            numa: Some(numa),
        };
        let v = super::thread_json(&t, None);
        assert_eq!(v["faults"][0], serde_json::to_value(&f).unwrap());
        assert_eq!(v["faults"][0]["group_shared"], 5);
    }
}
