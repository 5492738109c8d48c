//! Per-page counts of a co-run (docs/corun.md §6): each group's processes as
//! `accesses::page_accesses` gives them, processes and threads numbered over the run, and each
//! segment several processes share counted once, with every mapper's accesses.
//!
//! The counts have no time, so a shared page's first write is the first mapping's (in process
//! order) that writes it, then the next's. The communication matrix pairs threads of two
//! processes running the same program on a segment they share phase by phase (the k-th phase
//! of one with the k-th of the other, as copies started together run them); processes running
//! different programs are not paired.

use super::accesses::{add_cross_comm, page_accesses, region_spans, PageAccesses, RegionPages};
use crate::corun;
use crate::input::WorkloadSpec;

const NONE: u8 = u8::MAX;

/// `parts`: each group's workload (its `processes` copies) and its threads' nodes; `shared[g]`:
/// the regions group `g` maps from the run's segments (`corun::segments`).
pub fn corun_page_accesses(
    parts: &[(&WorkloadSpec, &[usize])],
    shared: &[Vec<String>],
    nodes: usize,
) -> Result<PageAccesses, String> {
    let workloads: Vec<&WorkloadSpec> = parts.iter().map(|p| p.0).collect();
    let segments = corun::segments(&workloads, shared)?;
    let total: usize = parts.iter().map(|p| p.1.len()).sum();
    let mut out = PageAccesses { nodes, thread_node: Vec::with_capacity(total), regions: Vec::new(), comm: Vec::new() };
    out.comm = vec![vec![0.0; total]; total];
    // Index in `out.regions` of (process, region), processes numbered over the run; each
    // process's group and first thread, and each thread's process.
    let mut index: Vec<Vec<usize>> = Vec::new();
    let (mut group_of, mut tid0, mut proc_of) = (Vec::new(), Vec::new(), Vec::with_capacity(total));
    for (g, &(w, tn)) in parts.iter().enumerate() {
        let pa = page_accesses(w, tn, nodes)?;
        let (pid0, t0) = (index.len(), out.thread_node.len());
        index.extend((0..w.processes as usize).map(|_| Vec::with_capacity(w.regions.len())));
        for p in 0..w.processes as usize {
            group_of.push(g);
            tid0.push(t0 + p * w.threads as usize);
            proc_of.extend(std::iter::repeat_n(pid0 + p, w.threads as usize));
        }
        for mut r in pa.regions {
            let pid = pid0 + r.pid as usize - 1;
            r.pid = pid as u32 + 1;
            index[pid].push(out.regions.len());
            out.regions.push(r);
        }
        for (i, row) in pa.comm.iter().enumerate() {
            out.comm[t0 + i][t0..t0 + row.len()].copy_from_slice(row);
        }
        out.thread_node.extend_from_slice(tn);
    }
    let mut gone = vec![false; out.regions.len()];
    for seg in segments.iter().filter(|s| s.len() > 1) {
        let keep = index[seg[0].0][seg[0].1];
        for &(pid, ri) in &seg[1..] {
            let k = index[pid][ri];
            let other = std::mem::take(&mut out.regions[k].acc);
            let first = std::mem::take(&mut out.regions[k].first);
            merge(&mut out.regions[keep], &other, &first);
            gone[k] = true;
        }
    }
    // Threads of processes running the same program, on each segment they share.
    let program = |g: usize| {
        let w = parts[g].0;
        serde_json::to_string(&(w.threads, &w.regions, &w.phases, &w.program)).unwrap_or_default()
    };
    let programs: Vec<String> = (0..parts.len()).map(program).collect();
    for seg in segments.iter().filter(|s| s.len() > 1) {
        let mut done = vec![false; seg.len()];
        for i in 0..seg.len() {
            if done[i] {
                continue;
            }
            let same: Vec<(usize, usize)> = (i..seg.len())
                .filter(|&j| programs[group_of[seg[j].0]] == programs[group_of[seg[i].0]])
                .inspect(|&j| done[j] = true)
                .map(|j| seg[j])
                .collect();
            if same.len() < 2 {
                continue;
            }
            let w = parts[group_of[same[0].0]].0;
            let per: Vec<_> = same.iter().map(|&(pid, ri)| region_spans(w, ri, tid0[pid])).collect();
            for k in 0..per[0].len() {
                let spans: Vec<_> = per.iter().flat_map(|p| p[k].1.iter().copied()).collect();
                add_cross_comm(&mut out.comm, &spans, per[0][k].0, &|t| proc_of[t]);
            }
        }
    }
    let mut i = 0;
    out.regions.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
    Ok(out)
}

/// Add another mapping's counts of the same pages into `into`.
fn merge(into: &mut RegionPages, acc: &[f64], first: &[u8]) {
    for (a, b) in into.acc.iter_mut().zip(acc) {
        *a += b;
    }
    for (f, &g) in into.first.iter_mut().zip(first) {
        if *f == NONE {
            *f = g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{AccessSpec, Pattern, PhaseSpec, RegionSpec, StepSpec};

    /// One 4-page region each thread of one process writes, then reads, by blocks.
    fn block(threads: u32) -> WorkloadSpec {
        let access = AccessSpec::sweep(0, Pattern::Block, 1.0, 1.0);
        let region = RegionSpec::anonymous("a", 4 << 12, 4);
        let phase: PhaseSpec = serde_json::from_value(serde_json::json!({
            "name": "p", "cycles": 1.0, "mlp": null, "sync": "barrier", "accesses": [access]
        }))
        .unwrap();
        WorkloadSpec {
            name: "w".into(),
            description: String::new(),
            params: Default::default(),
            processes: 1,
            threads,
            regions: vec![region],
            phases: vec![phase],
            instructions: Vec::new(),
            program: vec![StepSpec { phases: vec![0], repeat: 1, timed: false }],
        }
    }

    #[test]
    fn a_shared_segment_counts_once_with_both_processes_accesses() {
        let w = block(1);
        let (a, b): (&[usize], &[usize]) = (&[0], &[1]);
        let apart = corun_page_accesses(&[(&w, a), (&w, b)], &[], 2).unwrap();
        assert_eq!(apart.regions.len(), 2);
        let one = corun_page_accesses(&[(&w, a), (&w, b)], &[vec!["a".into()], vec!["a".into()]], 2).unwrap();
        assert_eq!(one.regions.len(), 1);
        let r = &one.regions[0];
        // Every page: the same lines from node 0 and from node 1; first written by process 1.
        for p in 0..r.pages {
            let acc = r.node_acc(p, 2);
            assert!(acc[0] > 0.0 && acc[0] == acc[1], "{acc:?}");
            assert_eq!(r.first[p], 0);
        }
        assert_eq!(one.thread_node, [0, 1]);
        let m = crate::mapping::mapping_metrics(&one);
        assert!((m.exclusivity - 0.5).abs() < 1e-12, "{}", m.exclusivity);
        assert!((crate::mapping::mapping_metrics(&apart).exclusivity - 1.0).abs() < 1e-12);
        // Both sweep the whole segment in the same phase: they communicate; apart they do not.
        assert!(one.comm[0][1] > 0.0 && one.comm[0][1] == one.comm[1][0], "{:?}", one.comm);
        assert_eq!(apart.comm, [[0.0, 0.0], [0.0, 0.0]]);
    }

    #[test]
    fn threads_of_one_process_keep_their_pairs_and_two_processes_add_theirs() {
        let w = block(2);
        let alone = page_accesses(&w, &[0, 1], 2).unwrap();
        let tn: &[usize] = &[0, 1];
        let one = corun_page_accesses(&[(&w, tn), (&w, tn)], &[vec!["a".into()], vec!["a".into()]], 2).unwrap();
        // Block split: a process's two threads touch different halves, so they never pair;
        // thread k of one process and thread k of the other touch the same half.
        assert_eq!(alone.comm, [[0.0, 0.0], [0.0, 0.0]]);
        assert!(one.comm[0][2] > 0.0 && one.comm[1][3] > 0.0, "{:?}", one.comm);
        assert_eq!((one.comm[0][1], one.comm[0][3], one.comm[2][3]), (0.0, 0.0, 0.0));
    }
}
