//! Moving tasks toward their memory (docs/balancing.md §12): `numa_migrate_preferred` and
//! `task_numa_migrate`, with 3.13's capacity rule and swap acceptance and 6.x's node types,
//! allowed imbalance, `SMALLIMP` and preferred-node bonuses.

use super::{Numab, World, MS};
use crate::profile::{MigrateRetry, TaskMigrate};
use crate::sched::adjust_numa_imbalance;

/// Load of one always-runnable task (`NICE_0_LOAD`, `task_h_load` of a lone task).
const TASK_LOAD: i64 = 1024;
const CAPACITY: i64 = 1024;
/// `SMALLIMP` (4.19+): smaller improvements are not worth a swap.
const SMALLIMP: i64 = 30;

#[derive(Clone, Copy, Debug, Default)]
struct NodeStats {
    nr_running: i64,
    load: i64,
    runnable: i64,
    util: i64,
    capacity: i64,
    weight: i64,
    /// 3.13: `nr_running < capacity`.
    has_capacity: bool,
    idle_cpu: Option<usize>,
    node_type: NodeType,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum NodeType {
    #[default]
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// `struct task_numa_env`.
struct Env {
    p: usize,
    src_cpu: usize,
    src_nid: usize,
    dst_nid: usize,
    dist: u32,
    src: NodeStats,
    dst: NodeStats,
    /// Runnable threads per CPU.
    nr: Vec<i64>,
    best_cpu: Option<usize>,
    best_task: Option<usize>,
    best_imp: i64,
}

impl Numab {
    /// `numa_migrate_preferred`: retry moving toward the preferred node at most every retry
    /// interval (3.13 1 s; 6.13 `min(1 s, period / 16)`).
    pub(super) fn numa_migrate_preferred(&mut self, w: &mut World, tid: usize, now: u64) {
        let t = &self.tasks[tid];
        let Some(pref) = t.preferred else { return };
        if t.faults.is_none() {
            return;
        }
        let interval = match self.rules.migrate_retry {
            MigrateRetry::Second => 1000 * MS,
            MigrateRetry::PeriodOver16 => (1000 * MS).min(t.scan_period as u64 * MS / 16),
        };
        self.tasks[tid].migrate_retry = now + interval;
        if self.topo.pu_node[w.sched.cpu[tid]] == pref {
            return;
        }
        // The threads' CPUs before, for `--explain-sched`'s run queues (`sched/rq_trace.rs`).
        let before = w.sched.rq_kept().then(|| w.sched.cpu.clone());
        match self.rules.task_migrate {
            TaskMigrate::Capacity => self.task_numa_migrate_k313(w, tid),
            TaskMigrate::NodeClassify => self.task_numa_migrate_k6(w, tid),
        }
        for (t, was) in before.into_iter().flatten().enumerate() {
            if w.sched.cpu[t] != was {
                let to = w.sched.cpu[t];
                w.sched.rq_moved(t, to, now as f64 * 1e-9);
            }
        }
    }

    fn env(&self, w: &World, p: usize) -> Env {
        let mut nr = vec![0i64; self.topo.pu_node.len()];
        for (t, &cpu) in w.sched.cpu.iter().enumerate() {
            if self.live[t] {
                nr[cpu] += 1;
            }
        }
        let src_cpu = w.sched.cpu[p];
        let src_nid = self.topo.pu_node[src_cpu];
        let dst_nid = self.tasks[p].preferred.unwrap_or(src_nid);
        Env {
            p,
            src_cpu,
            src_nid,
            dst_nid,
            dist: self.topo.dist[src_nid][dst_nid],
            src: NodeStats::default(),
            dst: NodeStats::default(),
            nr,
            best_cpu: None,
            best_task: None,
            best_imp: 0,
        }
    }

    fn allowed(&self, w: &World, tid: usize, cpu: usize) -> bool {
        w.sched.allowed[tid].contains(&cpu)
    }

    /// 3.13 `task_numa_migrate`: the preferred node only if it has spare capacity, else every
    /// node where task or group weight does not drop; the preferred node is then set to the
    /// last node examined (fixed in 3.17), the period reset to `task_scan_min`.
    fn task_numa_migrate_k313(&mut self, w: &mut World, p: usize) {
        let mut env = self.env(w, p);
        let pref = env.dst_nid;
        let (tw, gw) = (self.task_weight(p, env.src_nid, 0), self.group_weight(p, env.src_nid, 0));
        env.src = self.stats_k313(&env, env.src_nid);
        env.dst = self.stats_k313(&env, pref);
        let (timp, gimp) = (self.task_weight(p, pref, 0) - tw, self.group_weight(p, pref, 0) - gw);
        if env.dst.has_capacity {
            self.find_cpu_k313(w, &mut env, timp, gimp);
        }
        if env.best_cpu.is_none() {
            for nid in 0..self.topo.n {
                if nid == env.src_nid || nid == pref {
                    continue;
                }
                let (timp, gimp) = (self.task_weight(p, nid, 0) - tw, self.group_weight(p, nid, 0) - gw);
                if timp < 0 && gimp < 0 {
                    continue;
                }
                env.dst_nid = nid;
                env.dst = self.stats_k313(&env, nid);
                self.find_cpu_k313(w, &mut env, timp, gimp);
            }
        }
        let Some(cpu) = env.best_cpu else { return };
        self.tasks[p].preferred = Some(env.dst_nid);
        self.tasks[p].scan_period = self.scan_min(p);
        self.apply_move(w, &env, cpu);
    }

    fn stats_k313(&self, env: &Env, nid: usize) -> NodeStats {
        let cpus = &self.topo.node_pus[nid];
        let nr: i64 = cpus.iter().map(|&c| env.nr[c]).sum();
        let power: i64 = cpus.iter().map(|&c| self.topo.power[c]).sum();
        if power == 0 {
            return NodeStats { nr_running: nr, ..NodeStats::default() };
        }
        let capacity = (power + CAPACITY / 2) / CAPACITY;
        NodeStats {
            nr_running: nr,
            load: nr * TASK_LOAD * CAPACITY / power,
            capacity,
            has_capacity: nr < capacity,
            ..NodeStats::default()
        }
    }

    fn find_cpu_k313(&self, w: &World, env: &mut Env, timp: i64, gimp: i64) {
        for &cpu in &self.topo.node_pus[env.dst_nid] {
            if self.allowed(w, env.p, cpu) {
                self.compare_k313(w, env, cpu, timp, gimp);
            }
        }
    }

    /// 3.13 `task_numa_compare`: idle CPUs and swaps with improvement >= the best so far
    /// (starting at 0), with the load check unless both run queues hold one task.
    fn compare_k313(&self, w: &World, env: &mut Env, cpu: usize, timp: i64, gimp: i64) {
        let p = env.p;
        let cur = self.curr[cpu];
        let (src, dst) = (env.src_nid, env.dst_nid);
        let mut imp = if gimp > 0 { gimp } else { timp };
        if let Some(c) = cur {
            if !self.allowed(w, c, env.src_cpu) {
                return;
            }
            let (pg, cg) = (self.tasks[p].group, self.tasks[c].group);
            if cg.is_none() || pg.is_none() || cg == pg {
                imp = timp + self.task_weight(c, src, 0) - self.task_weight(c, dst, 0);
                if cg.is_some() {
                    imp -= imp / 16;
                }
            } else {
                imp = if pg.is_some() { gimp } else { timp };
                imp += self.group_weight(c, src, 0) - self.group_weight(c, dst, 0);
            }
        }
        if imp < env.best_imp {
            return;
        }
        let one_each = cur.is_some() && env.nr[env.src_cpu] == 1 && env.nr[cpu] == 1;
        if cur.is_none() && env.src.has_capacity && !env.dst.has_capacity {
            return;
        }
        if !one_each && !balanced_k313(env, cur.is_some(), self.topo.imbalance_pct) {
            return;
        }
        (env.best_cpu, env.best_task, env.best_imp) = (Some(cpu), cur, imp);
    }

    /// 6.x `task_numa_migrate` (5.7+ form).
    fn task_numa_migrate_k6(&mut self, w: &mut World, p: usize) {
        let mut env = self.env(w, p);
        let pref = env.dst_nid;
        let dist = env.dist;
        let (mut tw, mut gw) = (self.task_weight(p, env.src_nid, dist), self.group_weight(p, env.src_nid, dist));
        env.src = self.stats_k6(w, &env, env.src_nid, false);
        let (timp, gimp) = (self.task_weight(p, pref, dist) - tw, self.group_weight(p, pref, dist) - gw);
        env.dst = self.stats_k6(w, &env, pref, true);
        self.find_cpu_k6(w, &mut env, timp, gimp);
        let ng = self.tasks[p].group;
        if env.best_cpu.is_none() || ng.is_some_and(|g| self.groups[g].active_nodes > 1) {
            for nid in (0..self.topo.n).filter(|&x| self.topo.has_cpus[x]) {
                if nid == env.src_nid || nid == pref {
                    continue;
                }
                // The kernel measures from the node examined last (harmless except on a backplane).
                let dist = self.topo.dist[env.src_nid][env.dst_nid];
                if self.topo.ttype == super::TopoType::Backplane && dist != env.dist {
                    (tw, gw) = (self.task_weight(p, env.src_nid, dist), self.group_weight(p, env.src_nid, dist));
                }
                let (timp, gimp) = (self.task_weight(p, nid, dist) - tw, self.group_weight(p, nid, dist) - gw);
                if timp < 0 && gimp < 0 {
                    continue;
                }
                (env.dist, env.dst_nid) = (dist, nid);
                env.dst = self.stats_k6(w, &env, nid, true);
                self.find_cpu_k6(w, &mut env, timp, gimp);
            }
        }
        if ng.is_some() {
            // A grouped task settles where it was put (or stays): its preferred node follows.
            let nid = env.best_cpu.map_or(env.src_nid, |c| self.topo.pu_node[c]);
            self.tasks[p].preferred = Some(nid);
        }
        if let Some(cpu) = env.best_cpu {
            self.apply_move(w, &env, cpu);
        }
    }

    /// 6.x `update_numa_stats` + `numa_classify`.
    fn stats_k6(&self, w: &World, env: &Env, nid: usize, find_idle: bool) -> NodeStats {
        let mut ns = NodeStats::default();
        let mut idle_core = None;
        for &cpu in &self.topo.node_pus[nid] {
            let nr = env.nr[cpu];
            ns.load += nr * TASK_LOAD;
            ns.runnable += nr * TASK_LOAD;
            ns.util += (nr * TASK_LOAD).min(CAPACITY);
            ns.nr_running += nr;
            ns.capacity += CAPACITY;
            if find_idle && idle_core.is_none() && nr == 0 && self.allowed(w, env.p, cpu) {
                ns.idle_cpu.get_or_insert(cpu);
                let smt = self.topo.siblings[cpu].len() > 1;
                if smt && self.topo.siblings[cpu].iter().all(|&s| env.nr[s] == 0) {
                    idle_core = Some(cpu);
                }
            }
        }
        ns.weight = self.topo.node_pus[nid].len() as i64;
        ns.idle_cpu = idle_core.or(ns.idle_cpu);
        ns.node_type = classify(&ns, self.topo.imbalance_pct);
        ns
    }

    fn find_cpu_k6(&self, w: &World, env: &mut Env, timp: i64, gimp: i64) {
        let maymove = if env.dst.node_type == NodeType::HasSpare {
            // Would the move leave the nodes more imbalanced than the load balancer allows?
            let src_running = env.src.nr_running - 1;
            let dst_running = env.dst.nr_running + 1;
            let imbalance = (dst_running - src_running).max(0) as usize;
            let imbalance = adjust_numa_imbalance(imbalance, dst_running as usize, self.topo.imb_numa_nr[env.src_nid]);
            if imbalance == 0 {
                if let Some(idle) = env.dst.idle_cpu {
                    (env.best_cpu, env.best_task, env.best_imp) = (Some(idle), None, 0);
                    return;
                }
            }
            imbalance == 0
        } else {
            !too_imbalanced(env, env.src.load - TASK_LOAD, env.dst.load + TASK_LOAD)
        };
        for &cpu in &self.topo.node_pus[env.dst_nid] {
            if self.allowed(w, env.p, cpu) && self.compare_k6(w, env, cpu, timp, gimp, maymove) {
                break;
            }
        }
    }

    /// 6.x `task_numa_compare`; true stops the search.
    fn compare_k6(&self, w: &World, env: &mut Env, cpu: usize, timp: i64, gimp: i64, maymove: bool) -> bool {
        let p = env.p;
        let pg = self.tasks[p].group;
        let moveimp = if pg.is_some() { gimp } else { timp };
        let Some(c) = self.curr[cpu] else {
            return maymove && moveimp >= env.best_imp && self.assign_k6(env, cpu, None, moveimp, maymove);
        };
        if c == p {
            return true;
        }
        if !self.allowed(w, c, env.src_cpu) {
            return false;
        }
        let best_goes_home = env.best_task.is_some_and(|b| self.tasks[b].preferred == Some(env.src_nid));
        let cur_goes_home = self.tasks[c].preferred == Some(env.src_nid);
        if best_goes_home && !cur_goes_home {
            return false;
        }
        let Some(imp) = self.swap_imp(env, c, timp, moveimp) else { return false };
        if maymove && moveimp > imp && moveimp > env.best_imp {
            return self.assign_k6(env, cpu, None, moveimp, maymove);
        }
        if env.best_task.is_some() && cur_goes_home && !best_goes_home {
            return self.assign_k6(env, cpu, Some(c), imp, maymove);
        }
        if imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2 {
            return false;
        }
        // Equal task loads: a swap leaves the node loads unchanged, no load check needed.
        self.assign_k6(env, cpu, Some(c), imp, maymove)
    }

    /// Improvement of swapping `p` with `c` (None: no swap within a group while dst has spare
    /// capacity), with the 1/16 hysteresis and the preferred-node terms.
    fn swap_imp(&self, env: &Env, c: usize, timp: i64, imp0: i64) -> Option<i64> {
        let (pg, cg) = (self.tasks[env.p].group, self.tasks[c].group);
        let (src, dst, dist) = (env.src_nid, env.dst_nid, env.dist);
        let mut imp = if cg == pg {
            if env.dst.node_type == NodeType::HasSpare {
                return None;
            }
            let mut i = timp + self.task_weight(c, src, dist) - self.task_weight(c, dst, dist);
            if cg.is_some() {
                i -= i / 16;
            }
            i
        } else if cg.is_some() && pg.is_some() {
            imp0 + self.group_weight(c, src, dist) - self.group_weight(c, dst, dist)
        } else {
            imp0 + self.task_weight(c, src, dist) - self.task_weight(c, dst, dist)
        };
        if self.tasks[c].preferred == Some(dst) {
            imp -= imp / 16;
        }
        if self.tasks[c].preferred == Some(src) {
            imp += imp / 8;
        }
        Some(imp)
    }

    /// `task_numa_assign` plus the early stops of `task_numa_compare`.
    fn assign_k6(&self, env: &mut Env, cpu: usize, cur: Option<usize>, imp: i64, maymove: bool) -> bool {
        let mut dst_cpu = cpu;
        if cur.is_none() {
            dst_cpu = env.dst.idle_cpu.unwrap_or(cpu);
            if env.nr[dst_cpu] > 0 && env.best_cpu.is_some_and(|b| env.nr[b] == 0) {
                dst_cpu = env.best_cpu.expect("checked");
            }
        }
        (env.best_cpu, env.best_task, env.best_imp) = (Some(dst_cpu), cur, imp);
        if maymove && cur.is_none() && env.nr[dst_cpu] == 0 {
            return true;
        }
        !maymove && cur.is_some_and(|c| self.tasks[c].preferred == Some(env.src_nid))
    }

    /// `migrate_task_to` / `migrate_swap`: both happen at once (stop_one_cpu).
    fn apply_move(&mut self, w: &mut World, env: &Env, cpu: usize) {
        let p = env.p;
        w.sched.cpu[p] = cpu;
        // activate_task() on each run queue, `p` first (`__migrate_swap_task()`): the root
        // domain's overload flag (`sched/overload.rs`).
        w.sched.numa_moved_onto(env.nr[cpu].max(0) as usize);
        self.moved_task(p, env.src_cpu, cpu);
        if let Some(c) = env.best_task {
            w.sched.numa_moved_onto((env.nr[env.src_cpu] - 1).max(0) as usize);
            w.sched.cpu[c] = env.src_cpu;
            self.moved_task(c, cpu, env.src_cpu);
        }
        self.refresh_curr(w.sched);
    }

    fn moved_task(&mut self, tid: usize, from: usize, to: usize) {
        self.update_scan_period(tid, from, to);
        self.moved.push(tid);
        self.cost.task_moves_s += self.costs.task_move_ns * 1e-9;
        self.mms[self.tasks[tid].proc].pass.moves += 1;
    }
}

/// 3.13 load check after a move (or swap): the lighter node keeps at least 100/112 of the
/// heavier's load.
fn balanced_k313(env: &Env, swap: bool, pct: i64) -> bool {
    let (mut dst, mut src) = (env.dst.load + TASK_LOAD, env.src.load - TASK_LOAD);
    if swap {
        dst -= TASK_LOAD;
        src += TASK_LOAD;
    }
    let (lo, hi) = if dst < src { (dst, src) } else { (src, dst) };
    lo * pct >= hi * 100
}

/// `load_too_imbalanced` (5.7+): the capacity-normalised imbalance must not grow.
fn too_imbalanced(env: &Env, src_load: i64, dst_load: i64) -> bool {
    let (sc, dc) = (env.src.capacity, env.dst.capacity);
    let imb = (dst_load * sc - src_load * dc).abs();
    let old = (env.dst.load * sc - env.src.load * dc).abs();
    imb > old
}

/// `numa_classify`.
fn classify(ns: &NodeStats, pct: i64) -> NodeType {
    if ns.nr_running > ns.weight && (ns.capacity * 100 < ns.util * pct || ns.capacity * pct < ns.runnable * 100) {
        return NodeType::Overloaded;
    }
    if ns.nr_running < ns.weight || (ns.capacity * 100 > ns.util * pct && ns.capacity * pct > ns.runnable * 100) {
        return NodeType::HasSpare;
    }
    NodeType::FullyBusy
}
