//! Co-runs (docs/corun.md): one run of several process groups, each `workload.processes` copies
//! of one workload with its own placement, started together or staggered. A run of one workload
//! is the one-group case.

use numalab_model::Machine;

use crate::footprint;
use crate::input::{Placement, SimConfig, WorkloadSpec};

/// One group of identical processes.
#[derive(Clone, Copy, Debug)]
pub struct Group<'a> {
    pub workload: &'a WorkloadSpec,
    pub placement: &'a Placement,
    /// When its processes are exec'ed (seconds after the run starts).
    pub start_s: f64,
    /// `MADV_HUGEPAGE` per region of this workload.
    pub thp_madvised: &'a [bool],
}

/// Where each process of the run comes from: its group and the first of its threads.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub group: usize,
    pub first_tid: usize,
    pub threads: usize,
}

/// Processes in group order, their threads numbered process by process.
pub fn slots(groups: &[Group<'_>]) -> Vec<Slot> {
    let mut out = Vec::new();
    let mut tid = 0;
    for (g, grp) in groups.iter().enumerate() {
        for _ in 0..grp.workload.processes {
            let threads = grp.workload.threads as usize;
            out.push(Slot { group: g, first_tid: tid, threads });
            tid += threads;
        }
    }
    out
}

/// Checks that concern the groups together: at least one, and start times finite and >= 0.
pub fn check(groups: &[Group<'_>]) -> Result<(), String> {
    if groups.is_empty() {
        return Err("a co-run needs at least one process group".into());
    }
    if let Some(g) = groups.iter().find(|g| !g.start_s.is_finite() || g.start_s < 0.0) {
        return Err(format!("workload {}: start time must be finite and >= 0, got {} s", g.workload.name, g.start_s));
    }
    Ok(())
}

/// The engine's thread and memory bounds over all groups, once each group alone has passed them
/// (`engine::check::inputs`).
pub fn check_totals(m: &Machine, groups: &[Group<'_>], cfg: &SimConfig) -> Result<(), String> {
    let parts: Vec<_> = groups.iter().map(|g| footprint::estimate(m, g.workload, cfg)).collect();
    let sum = |f: fn(&footprint::Estimate) -> f64| parts.iter().map(f).sum::<f64>();
    let max = |f: fn(&footprint::Estimate) -> f64| parts.iter().map(f).fold(0.0, f64::max);
    // One engine holds every group's pages, threads and sweeps; the timeline is the run's one.
    let total = footprint::Estimate {
        data_bytes: sum(|e| e.data_bytes),
        entries: sum(|e| e.entries),
        page_table_bytes: sum(|e| e.page_table_bytes),
        thread_bytes: sum(|e| e.thread_bytes),
        sweep_bytes: sum(|e| e.sweep_bytes),
        timeline_bytes: max(|e| e.timeline_bytes),
        threads: sum(|e| e.threads),
        entry_bytes: max(|e| e.entry_bytes),
        samples: sum(|e| e.samples),
        phase_runs: max(|e| e.phase_runs),
        cycles_per_thread: max(|e| e.cycles_per_thread),
    };
    total.check(m).map_err(|e| format!("the co-run's processes together: {e}"))?;
    Ok(())
}

/// The segments several processes map (docs/corun.md §6): `shared[g]` names the regions of
/// group `g`'s workload (`workloads[g]`) that each of its processes maps from the run's segment
/// of that name. Returns each segment's mappings as (process, region), in process order.
pub fn segments(workloads: &[&WorkloadSpec], shared: &[Vec<String>]) -> Result<Vec<Vec<(usize, usize)>>, String> {
    Ok(named_segments(workloads, shared)?.1)
}

/// Which of the segments (`segments`, same order) the processes mapping them split: each of
/// the P mappers works on its own slice k (its rank among them, in process order) of the
/// partitioned accesses (`pages::Region::part`). `split` names segments from `shared`.
pub fn split_segments(
    workloads: &[&WorkloadSpec],
    shared: &[Vec<String>],
    split: &[String],
) -> Result<Vec<bool>, String> {
    let (names, _) = named_segments(workloads, shared)?;
    if let Some(bad) = split.iter().find(|s| !names.contains(&s.as_str())) {
        let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return Err(format!(
            "split segment '{bad}': no process maps a shared region of that name (shared segments: {known})"
        ));
    }
    Ok(names.iter().map(|n| split.iter().any(|s| s == n)).collect())
}

/// Each segment's mappings as (process, region) (`segments`).
type Segments = Vec<Vec<(usize, usize)>>;

/// The segments' names and mappings (`segments`).
fn named_segments<'w>(
    workloads: &[&'w WorkloadSpec],
    shared: &'w [Vec<String>],
) -> Result<(Vec<&'w str>, Segments), String> {
    if shared.len() > workloads.len() {
        return Err(format!("{} lists of shared regions for {} process groups", shared.len(), workloads.len()));
    }
    let mut names: Vec<&str> = Vec::new();
    let mut out: Vec<Vec<(usize, usize)>> = Vec::new();
    let procs = workloads.iter().enumerate().flat_map(|(g, w)| std::iter::repeat_n(g, w.processes as usize));
    for (pid, group) in procs.enumerate() {
        let w = workloads[group];
        for name in shared.get(group).map(Vec::as_slice).unwrap_or(&[]) {
            let Some(ri) = w.regions.iter().position(|r| &r.name == name) else {
                let known: Vec<&str> = w.regions.iter().map(|r| r.name.as_str()).collect();
                return Err(format!(
                    "shared region '{name}': workload {} has no such region (its regions: {})",
                    w.name,
                    known.join(", ")
                ));
            };
            match names.iter().position(|n| n == name) {
                Some(s) if out[s].iter().any(|&(p, _)| p == pid) => {
                    return Err(format!("shared region '{name}' is listed twice for workload {}", w.name));
                }
                Some(s) => out[s].push((pid, ri)),
                None => {
                    names.push(name);
                    out.push(vec![(pid, ri)]);
                }
            }
        }
    }
    Ok((names, out))
}
