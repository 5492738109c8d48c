//! Statistics and preferred node (docs/balancing.md §5, §10, §11): `task_numa_placement`
//! once per completed pass, `update_task_scan_period`, numa groups and the fault weights.

use super::{Group, Numab, TopoType, World, MS};
use crate::profile::{NumaPlacement, ScanPeriodAdapt};

/// `NUMA_PERIOD_SLOTS`.
const SLOTS: i64 = 10;

/// `LOAD_AVG_MAX`: the PELT sum of an always-running task, used for the first placement.
const LOAD_AVG_MAX: u64 = 47742;

impl Numab {
    /// `task_numa_placement`: fold and decay the fault buffers once per completed pass
    /// (`p->numa_scan_seq != mm->numa_scan_seq`), choose the preferred node, adapt the period.
    pub(super) fn task_numa_placement(&mut self, w: &mut World, tid: usize, now: u64) {
        let seq = self.mms[self.tasks[tid].proc].seq;
        if self.tasks[tid].scan_seq == seq || self.tasks[tid].faults.is_none() {
            return;
        }
        self.tasks[tid].scan_seq = seq;
        self.tasks[tid].scan_period_max = self.scan_max(tid);
        match self.rules.placement {
            NumaPlacement::MemoryFaults => self.placement_k313(w, tid, now),
            NumaPlacement::MemoryAndCpuFaults => self.placement_k6(tid, now),
        }
    }

    fn placement_k313(&mut self, w: &mut World, tid: usize, now: u64) {
        let (mut max_nid, mut max_faults, mut max_gnid, mut max_gfaults) = (None, 0u64, None, 0u64);
        let mut types = [0u64; 2];
        let g = self.tasks[tid].group;
        for nid in 0..self.topo.n {
            let (mut faults, mut gfaults) = (0u64, 0u64);
            for (prv, ty) in types.iter_mut().enumerate() {
                let t = &mut self.tasks[tid];
                let f = t.faults.as_mut().expect("placement needs faults");
                let old = f.mem[nid][prv];
                *ty += f.membuf[nid][prv];
                f.mem[nid][prv] = old / 2 + f.membuf[nid][prv];
                f.membuf[nid][prv] = 0;
                let new = f.mem[nid][prv];
                faults += new;
                let diff = new.wrapping_sub(old);
                t.total_faults = t.total_faults.wrapping_add(diff);
                if let Some(g) = g {
                    let g = &mut self.groups[g];
                    g.mem[nid][prv] = g.mem[nid][prv].wrapping_add(diff);
                    g.total = g.total.wrapping_add(diff);
                    gfaults += g.mem[nid][prv];
                }
            }
            if faults > max_faults {
                (max_faults, max_nid) = (faults, Some(nid));
            }
            if gfaults > max_gfaults {
                (max_gfaults, max_gnid) = (gfaults, Some(nid));
            }
        }
        self.update_task_scan_period(tid, types[0], types[1], now);
        if g.is_some() && max_nid != max_gnid {
            // Task and group disagree: the node with the largest sum of both weights.
            let mut max_weight = 0;
            for nid in 0..self.topo.n {
                let wgt = self.task_weight(tid, nid, 0) + self.group_weight(tid, nid, 0);
                if wgt > max_weight {
                    (max_weight, max_nid) = (wgt, Some(nid));
                }
            }
        }
        if max_faults > 0 && max_nid != self.tasks[tid].preferred {
            self.tasks[tid].preferred = max_nid;
            self.numa_migrate_preferred(w, tid, now);
        }
    }

    fn placement_k6(&mut self, tid: usize, now: u64) {
        let loc = self.tasks[tid].locality;
        let total_loc = loc[0] + loc[1];
        let (runtime, period) = self.avg_runtime(tid, now);
        let f_scale = (runtime << 16) / (period + 1);
        let g = self.tasks[tid].group;
        let (mut max_nid, mut max_faults) = (None, 0u64);
        let mut types = [0u64; 2];
        for nid in 0..self.topo.n {
            let (mut faults, mut gfaults) = (0u64, 0u64);
            for (prv, ty) in types.iter_mut().enumerate() {
                let t = &mut self.tasks[tid];
                let f = t.faults.as_mut().expect("placement needs faults");
                let diff = f.membuf[nid][prv].wrapping_sub(f.mem[nid][prv] / 2);
                *ty += f.membuf[nid][prv];
                f.membuf[nid][prv] = 0;
                // CPU-side faults weighted by the share of time the task ran (3.15+).
                let f_weight = f_scale * f.cpubuf[nid][prv] / (total_loc + 1);
                let f_diff = f_weight.wrapping_sub(f.cpu[nid][prv] / 2);
                f.cpubuf[nid][prv] = 0;
                f.mem[nid][prv] = f.mem[nid][prv].wrapping_add(diff);
                f.cpu[nid][prv] = f.cpu[nid][prv].wrapping_add(f_diff);
                faults += f.mem[nid][prv];
                t.total_faults = t.total_faults.wrapping_add(diff);
                if let Some(g) = g {
                    let g = &mut self.groups[g];
                    g.mem[nid][prv] = g.mem[nid][prv].wrapping_add(diff);
                    g.cpu[nid][prv] = g.cpu[nid][prv].wrapping_add(f_diff);
                    g.total = g.total.wrapping_add(diff);
                    gfaults += g.mem[nid][prv];
                }
            }
            let candidate = if g.is_none() { faults } else { gfaults };
            if candidate > max_faults {
                (max_faults, max_nid) = (candidate, Some(nid));
            }
        }
        max_nid = max_nid.map(|x| self.nearest_cpu_node(x));
        if let Some(g) = g {
            count_active_nodes(&mut self.groups[g], &self.topo.has_cpus);
            max_nid = Some(self.preferred_group_nid(tid, max_nid));
        }
        if max_faults > 0 && max_nid != self.tasks[tid].preferred {
            self.tasks[tid].preferred = max_nid;
        }
        self.update_task_scan_period(tid, types[0], types[1], now);
    }

    /// `numa_get_avg_runtime`: CPU time and wall time since the last placement (ns). The first
    /// time the kernel uses the PELT sums (`load_sum / LOAD_AVG_MAX`), i.e. the runnable share,
    /// which is the share of time run so far.
    fn avg_runtime(&mut self, tid: usize, now: u64) -> (u64, u64) {
        let t = &mut self.tasks[tid];
        let out = if t.last_placement != 0 {
            (t.runtime - t.last_runtime, now.saturating_sub(t.last_placement))
        } else {
            let share = if now > 0 { (t.runtime as f64 / now as f64).min(1.0) } else { 1.0 };
            ((share * LOAD_AVG_MAX as f64) as u64, LOAD_AVG_MAX)
        };
        t.last_runtime = t.runtime;
        t.last_placement = now;
        out
    }

    /// `numa_nearest_node(nid, N_CPU)`: a preferred node must have CPUs.
    fn nearest_cpu_node(&self, nid: usize) -> usize {
        if self.topo.has_cpus[nid] {
            return nid;
        }
        (0..self.topo.n).filter(|&x| self.topo.has_cpus[x]).min_by_key(|&x| (self.topo.dist[nid][x], x)).unwrap_or(nid)
    }

    /// `preferred_group_nid` (3.19+): by topology type.
    fn preferred_group_nid(&self, tid: usize, nid: Option<usize>) -> usize {
        let src = nid.unwrap_or(0);
        match self.topo.ttype {
            TopoType::Direct => src,
            TopoType::GluelessMesh => {
                let (mut max_score, mut max_node) = (0, src);
                for node in (0..self.topo.n).filter(|&x| self.topo.has_cpus[x]) {
                    let score = self.group_weight(tid, node, self.topo.max_dist);
                    if score > max_score {
                        (max_score, max_node) = (score, node);
                    }
                }
                max_node
            }
            TopoType::Backplane => self.backplane_nid(tid, src),
        }
    }

    /// Backplane: descend the distance hierarchy keeping the node group with most faults.
    fn backplane_nid(&self, tid: usize, mut nid: usize) -> usize {
        let Some(g) = self.tasks[tid].group.map(|g| &self.groups[g]) else { return nid };
        let mut nodes: Vec<usize> = (0..self.topo.n).filter(|&x| self.topo.has_cpus[x]).collect();
        let exists = |d: u32| self.topo.dist.iter().flatten().any(|&x| x == d);
        for dist in (11..=self.topo.max_dist).rev() {
            if !exists(dist) {
                continue;
            }
            let (mut max_faults, mut max_group) = (0u64, Vec::new());
            let mut left = nodes.clone();
            for &a in &nodes {
                if !left.contains(&a) {
                    continue;
                }
                let group: Vec<usize> = left.iter().copied().filter(|&b| self.topo.dist[a][b] < dist).collect();
                let faults: u64 = group.iter().map(|&b| g.faults(b)).sum();
                left.retain(|b| !group.contains(b));
                if faults > max_faults {
                    (max_faults, max_group, nid) = (faults, group, a);
                }
            }
            if max_faults == 0 {
                break;
            }
            nodes = max_group;
        }
        nid
    }

    /// `task_weight` in ‰ of the task's faults, with nearby nodes on multi-level topologies
    /// (6.13; 3.13 has no topology scoring).
    pub(super) fn task_weight(&self, tid: usize, nid: usize, dist: u32) -> i64 {
        let t = &self.tasks[tid];
        let Some(f) = &t.faults else { return 0 };
        if t.total_faults == 0 {
            return 0;
        }
        let at = |x: usize| f.mem[x][0] + f.mem[x][1];
        let faults = at(nid) + self.score_nearby(nid, dist, &at);
        (1000 * faults / t.total_faults) as i64
    }

    /// `group_weight` in ‰ of the group's faults.
    pub(super) fn group_weight(&self, tid: usize, nid: usize, dist: u32) -> i64 {
        let Some(g) = self.tasks[tid].group.map(|g| &self.groups[g]) else { return 0 };
        if g.total == 0 {
            return 0;
        }
        let at = |x: usize| g.faults(x);
        let faults = at(nid) + self.score_nearby(nid, dist, &at);
        (1000 * faults / g.total) as i64
    }

    /// `score_nearby_nodes` (3.19+): faults on nodes nearer than the maximum distance, scaled
    /// down with distance on a glueless mesh.
    fn score_nearby(&self, nid: usize, lim: u32, faults: &dyn Fn(usize) -> u64) -> u64 {
        if !self.rules.score_nearby || self.topo.ttype == TopoType::Direct {
            return 0;
        }
        let max = self.topo.max_dist;
        let mut score = 0;
        for node in 0..self.topo.n {
            let d = self.topo.dist[nid][node];
            if d >= max || node == nid || (self.topo.ttype == TopoType::Backplane && d >= lim) {
                continue;
            }
            let mut f = faults(node);
            if self.topo.ttype == TopoType::GluelessMesh {
                f = f * (max - d) as u64 / (max - 10) as u64;
            }
            score += f;
        }
        score
    }

    /// `update_task_scan_period`: slow down when faults are local (or private, 6.13), speed up
    /// when remote; double on no local/shared faults or (6.13) a failed migration.
    pub(super) fn update_task_scan_period(&mut self, tid: usize, shared: u64, private: u64, now: u64) {
        let t = &self.tasks[tid];
        let (remote, local, failed) = (t.locality[0], t.locality[1], t.locality[2]);
        if local + shared == 0 || (self.rules.scan_period_adapt.counts_failed() && failed > 0) {
            let t = &mut self.tasks[tid];
            t.scan_period = t.scan_period_max.min(t.scan_period << 1);
            self.mms[t.proc].next_scan = now + t.scan_period as u64 * MS;
            return;
        }
        let period = t.scan_period;
        let slot = (period as i64 + SLOTS - 1) / SLOTS;
        let lr = ratio(local, local + remote);
        let diff = match self.rules.scan_period_adapt {
            ScanPeriodAdapt::LocalityThreshold3 => k313_diff(lr, slot, private, shared),
            ScanPeriodAdapt::PrivateOrLocalThreshold7 => k6_diff(lr, ratio(private, private + shared), slot),
        };
        let (lo, hi) = (self.scan_min(tid), self.scan_max(tid));
        // `numa_scan_period + diff` is unsigned int arithmetic in the kernel.
        let t = &mut self.tasks[tid];
        t.scan_period = period.wrapping_add(diff as i32 as u32).clamp(lo, hi.max(lo));
        t.locality = [0; 3];
    }

    /// `task_numa_group` on a shared fault: join the other task's group when it is at least as
    /// large. Returns the fault's privacy afterwards (true: deemed unrelated, false sharing).
    /// `shared`: TNF_SHARED, a page of a segment several processes map.
    pub(super) fn task_numa_group(&mut self, tid: usize, last: u32, shared: bool) -> bool {
        if self.tasks[tid].group.is_none() {
            self.create_group(tid);
        }
        let cpu = (last >> 8) as usize;
        let Some(other) = self.curr.get(cpu).copied().flatten() else { return false };
        if self.tasks[other].pid & 0xff != last & 0xff {
            return false;
        }
        let (Some(grp), Some(my)) = (self.tasks[other].group, self.tasks[tid].group) else { return false };
        let (gn, mn) = (self.groups[grp].nr_tasks, self.groups[my].nr_tasks);
        // The smaller group joins the larger; on a tie the group created later joins.
        if grp == my || mn > gn || (mn == gn && my > grp) {
            return false;
        }
        // Threads of one process always join; threads of two processes join on a page of a
        // segment they share (kernel/sched/fair.c: task_numa_group, `tsk->mm == current->mm`,
        // `flags & TNF_SHARED`), and are deemed unrelated otherwise.
        if self.tasks[other].proc != self.tasks[tid].proc && !shared {
            return true;
        }
        self.move_to_group(tid, my, grp);
        false
    }

    fn create_group(&mut self, tid: usize) {
        let t = &self.tasks[tid];
        let f = t.faults.as_ref().expect("a grouping fault has statistics");
        let cpu_faults = self.rules.placement.tracks_cpu_faults();
        self.groups.push(Group {
            gid: t.pid,
            nr_tasks: 1,
            mem: f.mem.clone(),
            cpu: if cpu_faults { f.cpu.clone() } else { vec![[0; 2]; self.topo.n] },
            total: t.total_faults,
            active_nodes: 1,
            max_faults_cpu: 0,
        });
        self.tasks[tid].group = Some(self.groups.len() - 1);
    }

    fn move_to_group(&mut self, tid: usize, from: usize, to: usize) {
        let t = &self.tasks[tid];
        let f = t.faults.as_ref().expect("a grouping fault has statistics");
        for nid in 0..self.topo.n {
            for prv in 0..2 {
                self.groups[from].mem[nid][prv] = self.groups[from].mem[nid][prv].wrapping_sub(f.mem[nid][prv]);
                self.groups[to].mem[nid][prv] += f.mem[nid][prv];
                self.groups[from].cpu[nid][prv] = self.groups[from].cpu[nid][prv].wrapping_sub(f.cpu[nid][prv]);
                self.groups[to].cpu[nid][prv] += f.cpu[nid][prv];
            }
        }
        self.groups[from].total = self.groups[from].total.wrapping_sub(t.total_faults);
        self.groups[to].total += t.total_faults;
        self.groups[from].nr_tasks -= 1;
        self.groups[to].nr_tasks += 1;
        self.tasks[tid].group = Some(to);
    }
}

/// `numa_group_count_active_nodes` (4.6+): nodes whose CPU-side faults exceed a third of the
/// busiest node's.
fn count_active_nodes(g: &mut Group, has_cpus: &[bool]) {
    let nodes = || (0..g.mem.len()).filter(|&x| has_cpus[x]);
    let max = nodes().map(|x| g.faults_cpu(x)).max().unwrap_or(0);
    let active = nodes().filter(|&x| g.faults_cpu(x) * 3 > max).count();
    g.max_faults_cpu = max;
    g.active_nodes = active as u32;
}

/// `10 * part / whole` in integers (0 when there is nothing to divide).
fn ratio(part: u64, whole: u64) -> i64 {
    (part * SLOTS as u64).checked_div(whole).unwrap_or(0) as i64
}

/// 3.13 (threshold 3): slow down from 30 % local faults; speed-ups scaled by the private share.
fn k313_diff(lr: i64, slot: i64, private: u64, shared: u64) -> i64 {
    const THRESHOLD: i64 = 3;
    if lr >= THRESHOLD {
        return (lr - THRESHOLD).max(1) * slot;
    }
    let diff = -(THRESHOLD - lr) * slot;
    let whole = private + shared;
    let private_ratio = if whole == 0 { 0 } else { (private * SLOTS as u64).div_ceil(whole) as i64 };
    diff * private_ratio / SLOTS
}

/// 4.14+ (threshold 7): mostly private faults slow down first, then mostly local ones; else
/// speed up by the larger of the two ratios' distance to the threshold.
fn k6_diff(lr: i64, ps: i64, slot: i64) -> i64 {
    const THRESHOLD: i64 = 7;
    if ps >= THRESHOLD {
        (ps - THRESHOLD).max(1) * slot
    } else if lr >= THRESHOLD {
        (lr - THRESHOLD).max(1) * slot
    } else {
        -(THRESHOLD - lr.max(ps)) * slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_steps_follow_the_kernel_formulas() {
        // 3.13: 90 % local, period 1000 ms (slot 100): +6 slots.
        assert_eq!(k313_diff(9, 100, 10, 0), 600);
        // 3.13: all remote, all private: -3 slots; all shared: no speed-up.
        assert_eq!(k313_diff(0, 100, 10, 0), -300);
        assert_eq!(k313_diff(0, 100, 0, 10), 0);
        // 6.x: all private slows down even when remote; all shared and remote speeds up.
        assert_eq!(k6_diff(0, 10, 100), 300);
        assert_eq!(k6_diff(0, 0, 100), -700);
        assert_eq!(k6_diff(7, 0, 100), 100);
    }
}
