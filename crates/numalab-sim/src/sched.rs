//! Where threads run (docs/scheduler.md).
//!
//! - Bound threads (`OMP_PROC_BIND` close/spread/primary over `OMP_PLACES` threads/cores/sockets)
//!   get a place each, computed as the OpenMP 5 specification says (§2.6.2 "Controlling OpenMP
//!   thread affinity").
//! - Unbound threads start near their parent, as `clone` places them: 3.13 never balances forks
//!   across NUMA domains (`sd_numa_init` has no SD_BALANCE_FORK), so new threads fill the
//!   parent's node; 6.x balances forks across nodes (`sd_init`, distance <= 30) but keeps a
//!   task on the parent's node while that node is lightly used (the NUMA imbalance allowance,
//!   here the 5.7-5.17 rule: busy CPUs below 25 % of the node).
//! - The periodic load balancer then spreads runnable threads level by level: node (LLC), then
//!   each NUMA distance tier, each at an interval of one millisecond per CPU it spans
//!   (`sd->min_interval = sd_weight`): an idle CPU pulls one thread at a time from the busiest
//!   CPU of the busiest group of its domain when that group has more runnable threads than CPUs
//!   (for an idle CPU `find_busiest_group` skips the `imbalance_pct` test).

use numalab_model::{CpuSet, Machine};

use crate::input::{Kernel, Placement, Places, ProcBind};

pub struct Level {
    /// For each PU (logical), the PUs of its domain at this level.
    span_of: Vec<Vec<usize>>,
    /// For each PU, its group (child domain) id at this level.
    group_of: Vec<usize>,
    interval_s: f64,
    next_s: f64,
}

pub struct Sched {
    kernel: Kernel,
    pub pu_node: Vec<usize>,
    pu_core: Vec<usize>,
    /// OS index of each PU (logical).
    pub pu_os: Vec<u32>,
    /// Logical PUs each thread may run on.
    pub allowed: Vec<Vec<usize>>,
    pub cpu: Vec<usize>,
    pub bound: Vec<bool>,
    levels: Vec<Level>,
}

impl Sched {
    /// Threads are numbered process by process; `threads` per process, `processes` of them.
    pub fn new(m: &Machine, p: &Placement, kernel: Kernel, processes: usize, threads: usize) -> Result<Self, String> {
        let pu_node: Vec<usize> = m.pus.iter().map(|u| m.node_logical(u.node).unwrap_or(0)).collect();
        let pu_core: Vec<usize> = m.pus.iter().map(|u| u.core as usize).collect();
        let pu_os: Vec<u32> = m.pus.iter().map(|u| u.os_index).collect();
        let all = m.cpuset();
        let cpus = p.cpus.clone().unwrap_or(all);
        let allowed_pus: Vec<usize> = (0..m.pus.len()).filter(|&i| cpus.contains(pu_os[i])).collect();
        if allowed_pus.is_empty() {
            return Err("the placement allows no CPU of this machine".into());
        }
        let nthreads = processes * threads;
        let mut s = Sched {
            kernel,
            pu_node,
            pu_core,
            pu_os,
            allowed: vec![allowed_pus.clone(); nthreads],
            cpu: vec![0; nthreads],
            bound: vec![false; nthreads],
            levels: Vec::new(),
        };
        s.levels = build_levels(m);
        if p.proc_bind != ProcBind::False {
            let places = places(m, p.places, &cpus);
            if places.is_empty() {
                return Err("OMP_PLACES gives no place inside the allowed CPUs".into());
            }
            for proc in 0..processes {
                for (i, place) in assign_places(p.proc_bind, places.len(), threads).into_iter().enumerate() {
                    let tid = proc * threads + i;
                    s.allowed[tid] = places[place].clone();
                    s.bound[tid] = true;
                }
            }
        }
        Ok(s)
    }

    fn running_on(&self, live: &[bool]) -> Vec<usize> {
        let mut n = vec![0; self.pu_node.len()];
        for (t, &cpu) in self.cpu.iter().enumerate() {
            if live[t] {
                n[cpu] += 1;
            }
        }
        n
    }

    /// The least loaded of `cands` (ties: an idle core first, then the lowest PU).
    fn idlest(&self, cands: &[usize], load: &[usize]) -> usize {
        let core_busy =
            |c: usize| (0..load.len()).filter(|&q| self.pu_core[q] == self.pu_core[c]).map(|q| load[q]).sum::<usize>();
        *cands.iter().min_by_key(|&&c| (load[c], core_busy(c), c)).expect("non-empty candidate list")
    }

    /// Place thread `tid` when it is created; `parent` is the creating thread (None for a
    /// process's first thread). `live` says which threads already exist.
    pub fn place_new(&mut self, tid: usize, parent: Option<usize>, live: &[bool]) {
        let load = self.running_on(live);
        let allowed = self.allowed[tid].clone();
        let cpu = if self.bound[tid] {
            self.idlest(&allowed, &load)
        } else {
            let home_node = match parent {
                Some(p) => self.pu_node[self.cpu[p]],
                // exec: 3.13 does not balance exec across NUMA domains either, so a new
                // process starts on the node of the launching shell (node of CPU 0).
                None if self.kernel == Kernel::K313 => self.pu_node[allowed[0]],
                None => return self.cpu[tid] = self.idlest(&allowed, &load),
            };
            let on_home: Vec<usize> = allowed.iter().copied().filter(|&c| self.pu_node[c] == home_node).collect();
            match self.kernel {
                Kernel::K313 if !on_home.is_empty() => self.idlest(&on_home, &load),
                Kernel::K6
                    if !on_home.is_empty() && {
                        let busy = on_home.iter().filter(|&&c| load[c] > 0).count();
                        (busy + 1) * 4 <= on_home.len()
                    } =>
                {
                    self.idlest(&on_home, &load)
                }
                _ => {
                    // Idlest node (runnable per allowed CPU), then idlest CPU in it.
                    let mut best: Option<(usize, usize, usize)> = None; // (load*1000/cpus, node)
                    let nodes: Vec<usize> = {
                        let mut v: Vec<usize> = allowed.iter().map(|&c| self.pu_node[c]).collect();
                        v.dedup();
                        v.sort();
                        v.dedup();
                        v
                    };
                    for n in nodes {
                        let cpus: Vec<usize> = allowed.iter().copied().filter(|&c| self.pu_node[c] == n).collect();
                        let l: usize = cpus.iter().map(|&c| load[c]).sum();
                        let key = (l * 1000 / cpus.len(), usize::from(n != home_node), n);
                        if best.is_none_or(|b| key < b) {
                            best = Some(key);
                        }
                    }
                    let n = best.map(|b| b.2).unwrap_or(home_node);
                    let cpus: Vec<usize> = allowed.iter().copied().filter(|&c| self.pu_node[c] == n).collect();
                    self.idlest(&cpus, &load)
                }
            }
        };
        self.cpu[tid] = cpu;
    }

    /// Run the periodic balancer levels due at time `now_s`; returns the threads moved.
    pub fn balance(&mut self, now_s: f64, live: &[bool]) -> Vec<usize> {
        let mut moved = Vec::new();
        for li in 0..self.levels.len() {
            if now_s < self.levels[li].next_s {
                continue;
            }
            let lvl = &self.levels[li];
            let next =
                lvl.next_s + lvl.interval_s * ((now_s - lvl.next_s) / lvl.interval_s).floor().max(0.0) + lvl.interval_s;
            self.levels[li].next_s = next;
            while let Some(t) = self.pull_once(li, live) {
                moved.push(t);
            }
        }
        moved
    }

    /// One pull at level `li`: an idle CPU takes a thread from the busiest CPU of the busiest
    /// other group of its domain, if that group is imbalanced enough.
    fn pull_once(&mut self, li: usize, live: &[bool]) -> Option<usize> {
        let load = self.running_on(live);
        let lvl = &self.levels[li];
        for dst in 0..load.len() {
            if load[dst] > 0 {
                continue;
            }
            let span = &lvl.span_of[dst];
            let group_load = |g: usize| {
                let cpus: Vec<usize> = span.iter().copied().filter(|&c| lvl.group_of[c] == g).collect();
                (cpus.iter().map(|&c| load[c]).sum::<usize>() as f64 / cpus.len() as f64, cpus)
            };
            let (local, _) = group_load(lvl.group_of[dst]);
            let mut groups: Vec<usize> = span.iter().map(|&c| lvl.group_of[c]).collect();
            groups.sort();
            groups.dedup();
            let mut best: Option<(f64, Vec<usize>)> = None;
            for g in groups.into_iter().filter(|&g| g != lvl.group_of[dst]) {
                let (avg, cpus) = group_load(g);
                if best.as_ref().is_none_or(|b| avg > b.0) {
                    best = Some((avg, cpus));
                }
            }
            let Some((avg, cpus)) = best else { continue };
            // dst is idle: find_busiest_group skips the imbalance_pct test for an idle CPU and
            // pulls when the busiest group has more runnable tasks than CPUs.
            if avg <= 1.0 || avg <= local {
                continue;
            }
            // Busiest CPU with more than one runnable thread that may run on dst.
            let mut cands: Vec<usize> = cpus.into_iter().filter(|&c| load[c] >= 2).collect();
            cands.sort_by_key(|&c| (std::cmp::Reverse(load[c]), c));
            for src in cands {
                let movable = (0..self.cpu.len())
                    .filter(|&t| live[t] && self.cpu[t] == src && self.allowed[t].contains(&dst))
                    .max();
                if let Some(t) = movable {
                    self.cpu[t] = dst;
                    return Some(t);
                }
            }
        }
        None
    }
}

/// Scheduling domain levels above the core: the node (LLC), then one per NUMA distance tier.
fn build_levels(m: &Machine) -> Vec<Level> {
    let pu_node: Vec<usize> = m.pus.iter().map(|u| m.node_logical(u.node).unwrap_or(0)).collect();
    let n_pus = m.pus.len();
    let mut levels = Vec::new();
    // Node level: groups are cores.
    let span_of =
        (0..n_pus).map(|c| (0..n_pus).filter(|&q| pu_node[q] == pu_node[c]).collect::<Vec<_>>()).collect::<Vec<_>>();
    let group_of: Vec<usize> = m.pus.iter().map(|u| u.core as usize).collect();
    levels.push(Level { interval_s: span_of[0].len() as f64 * 1e-3, span_of, group_of, next_s: 0.0 });
    let mut tiers: Vec<u32> = m.distances.iter().flatten().copied().filter(|&d| d > 10).collect();
    tiers.sort();
    tiers.dedup();
    let mut child_group: Vec<usize> = pu_node.clone();
    for d in tiers {
        let span_of: Vec<Vec<usize>> =
            (0..n_pus).map(|c| (0..n_pus).filter(|&q| m.distances[pu_node[c]][pu_node[q]] <= d).collect()).collect();
        let weight = span_of.iter().map(|s| s.len()).max().unwrap_or(1);
        levels.push(Level {
            interval_s: weight as f64 * 1e-3,
            span_of: span_of.clone(),
            group_of: child_group.clone(),
            next_s: 0.0,
        });
        // Groups one level up are this level's spans (named by their lowest PU).
        child_group = span_of.iter().map(|s| s[0]).collect();
    }
    levels
}

/// OMP_PLACES: the list of places inside the allowed CPUs, in OS order (logical PU lists).
pub(crate) fn places(m: &Machine, kind: Places, allowed: &CpuSet) -> Vec<Vec<usize>> {
    let keep = |set: &CpuSet| -> Vec<usize> {
        (0..m.pus.len()).filter(|&i| set.contains(m.pus[i].os_index) && allowed.contains(m.pus[i].os_index)).collect()
    };
    let mut out: Vec<Vec<usize>> = match kind {
        Places::Threads => {
            m.pus.iter().filter(|u| allowed.contains(u.os_index)).map(|u| vec![u.logical_index as usize]).collect()
        }
        Places::Cores => m.cores.iter().map(|c| keep(&c.cpuset)).collect(),
        Places::Sockets => m.packages.iter().map(|p| keep(&p.cpuset)).collect(),
    };
    out.retain(|p| !p.is_empty());
    out.sort_by_key(|p| m.pus[p[0]].os_index);
    out
}

/// Which place each of `t` threads gets under a binding policy over `p` places.
pub fn assign_places(bind: ProcBind, p: usize, t: usize) -> Vec<usize> {
    let close = || -> Vec<usize> {
        if t <= p {
            (0..t).collect()
        } else {
            // T > P: P subsets of consecutive threads, the first T mod P one larger.
            let (q, r) = (t / p, t % p);
            (0..p).flat_map(|i| std::iter::repeat_n(i, q + usize::from(i < r))).collect()
        }
    };
    match bind {
        ProcBind::False | ProcBind::Close => close(),
        ProcBind::Primary => vec![0; t],
        ProcBind::Spread if t <= p => {
            // P places in T subpartitions of consecutive places; thread i takes the first of the i-th.
            let (q, r) = (p / t, p % t);
            let mut start = 0;
            (0..t)
                .map(|i| {
                    let s = start;
                    start += q + usize::from(i < r);
                    s
                })
                .collect()
        }
        ProcBind::Spread => close(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmp_place_assignment() {
        assert_eq!(assign_places(ProcBind::Close, 8, 4), vec![0, 1, 2, 3]);
        assert_eq!(assign_places(ProcBind::Spread, 8, 4), vec![0, 2, 4, 6]);
        assert_eq!(assign_places(ProcBind::Close, 2, 5), vec![0, 0, 0, 1, 1]);
        assert_eq!(assign_places(ProcBind::Primary, 4, 3), vec![0, 0, 0]);
    }
}
