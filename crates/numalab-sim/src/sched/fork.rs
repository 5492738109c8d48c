//! Placement of a new task: `select_task_rq_fair()` with `SD_BALANCE_FORK` (a worker cloned by
//! the primary thread) or `SD_BALANCE_EXEC` (a process's first thread, `sched_exec()`), in
//! `kernel/sched/fair.c` of v3.13 and v6.13: start at the highest domain of the current CPU
//! carrying the flag; in each, `find_idlest_group()` either keeps the local group (go down one
//! level) or names a group, whose `find_idlest_cpu()` becomes the CPU to look from, and the walk
//! goes on below that domain's weight.

use super::load::CpuSig;
use super::pelt::{RunnableAvg313, CAPACITY};
use super::{GroupLoad, Sched, SchedEvent};
use crate::profile::{ExecLoad, GroupSignals, IdlestGroup};

/// A group's figures as fork placement sums them (v6.13 `update_sg_wakeup_stats()`, v3.13
/// `find_idlest_group()`'s loop): runnable tasks and idle CPUs, and PELT (`load.rs`).
#[derive(Clone, Copy, Debug)]
struct WakeupStats {
    g: GroupLoad,
    /// The profile's `load.idlest_group`: v3.13 `weighted_cpuload()`, v6.13 `cpu_load()`.
    load: u64,
    util: u64,
    runnable: u64,
}

impl WakeupStats {
    fn of(s: &Sched, cpus: &[usize], nr: &[usize], sig: &[CpuSig]) -> Self {
        let load = |c: usize| match s.rules.load.idlest_group {
            GroupSignals::RqWeight => nr[c] as u64 * CAPACITY,
            GroupSignals::RunnableLoadAvg => sig[c].runnable_load,
            GroupSignals::LoadUtilRunnable => sig[c].load,
        };
        WakeupStats {
            g: GroupLoad::of(cpus, nr, &s.pu_core),
            load: cpus.iter().map(|&c| load(c)).sum(),
            util: cpus.iter().map(|&c| sig[c].util).sum(),
            runnable: cpus.iter().map(|&c| sig[c].runnable).sum(),
        }
    }

    /// `group_capacity`: every CPU at full capacity (no RT, IRQ or thermal pressure here).
    fn capacity(&self) -> u64 {
        CAPACITY * self.g.weight as u64
    }

    /// `avg_load = group_load x SCHED_CAPACITY_SCALE / group_capacity` (v3.13: `x
    /// SCHED_POWER_SCALE / power`, the same with equal CPUs).
    fn avg_load(&self) -> u64 {
        self.load * CAPACITY / self.capacity()
    }

    /// v6.13 `group_classify()` (`lb_stats.rs`).
    fn kind(&self, pct: u64) -> u8 {
        super::lb_stats::group_classify(pct, self.g.nr, self.g.weight, self.util, self.runnable)
    }
}

impl Sched {
    /// Place thread `tid` when it is created; `parent` is the creating thread (None for a
    /// process's first thread). `live` says which threads already exist.
    pub fn place_new(&mut self, tid: usize, parent: Option<usize>, live: &[bool]) -> bool {
        self.place_new_at(0.0, tid, parent, live)
    }

    /// Returns whether the kernel counts a migration in it: a bound thread that libgomp's
    /// binding moves off the CPU its exec or fork chose.
    pub fn place_new_at(&mut self, now_s: f64, tid: usize, parent: Option<usize>, live: &[bool]) -> bool {
        let mut bound_move = false;
        let (cpu, path, level, why) = if self.bound[tid] {
            // libgomp binds after the kernel placed the thread: the primary thread in
            // gomp_init_affinity() (libgomp/config/linux/affinity.c), after its exec over the
            // process's CPUs; a worker through its pthread attribute (gomp_team_start(),
            // pthread_attr_setaffinity_np()), which glibc's create_thread() applies with
            // sched_setaffinity() after clone(), the child having inherited its parent's mask
            // (kernel/fork.c: dup_task_struct()) and been placed inside it. A thread outside its
            // new mask is moved (kernel/sched/core.c: __set_cpus_allowed_ptr(),
            // affine_move_task(), move_queued_task() -> set_task_cpu(): nr_migrations++), one
            // inside it stays.
            let (before, _, _, _) = self.choose(now_s, parent, &self.inherited[tid].clone(), live);
            let place = self.allowed[tid].clone();
            if place.contains(&before) {
                (before, "bind", String::new(), "its CPU is in its OpenMP place".to_string())
            } else {
                bound_move = true;
                let load = self.nr_running(live, now_s);
                (self.idlest(&place, &load), "bind", String::new(), "least loaded PU of its OpenMP place".to_string())
            }
        } else {
            self.choose(now_s, parent, &self.allowed[tid].clone(), live)
        };
        self.cpu[tid] = cpu;
        self.rq.on(now_s, tid, cpu);
        // wake_up_new_task() → activate_task(): the run queue it joins (`overload.rs`).
        let mut others = live.to_vec();
        others[tid] = false;
        let prev = self.run_queue_len(cpu, &others, now_s);
        self.add_nr_running(prev, prev + 1);
        self.first_node[tid] = self.pu_node[cpu];
        self.history[tid].push((now_s, cpu));
        self.start_load(now_s, tid);
        self.record(SchedEvent { t_s: now_s, tid, from: None, to: cpu, path, level, why });
        bound_move
    }

    /// Exec or fork placement of a thread allowed on `allowed`.
    fn choose(
        &mut self,
        now_s: f64,
        parent: Option<usize>,
        allowed: &[usize],
        live: &[bool],
    ) -> (usize, &'static str, String, String) {
        let mut load = self.nr_running(live, now_s);
        {
            let (start, path) = match parent {
                Some(p) => (self.cpu[p], "fork"),
                // exec: the launching shell runs on the first allowed CPU (numactl's
                // sched_setaffinity before exec moves it there; CPU 0 without binding).
                None => (allowed[0], "exec"),
            };
            let mut sig = self.cpu_signals(now_s, live);
            // v3.13 counts the exec'ing task on its CPU (it is running there, with the load of
            // a task just forked by the shell: init_task_runnable_average()); v6.13's
            // find_idlest_group() discounts it (cpu_util_without(), idle_cpu_without()).
            if parent.is_none() {
                match self.rules.exec_load {
                    ExecLoad::CountsExecer => {
                        load[start] += 1;
                        let slice = self.slice_s(1);
                        sig[start].runnable_load += RunnableAvg313::new_task(0, (slice * 1e9) as u64).load_avg_contrib;
                    }
                    ExecLoad::DiscountsExecer => {}
                }
            }
            self.select_task_rq(start, allowed, &load, &sig, path)
        }
    }

    /// The slow path of `select_task_rq_fair()` for fork and exec.
    fn select_task_rq(
        &self,
        start: usize,
        allowed: &[usize],
        load: &[usize],
        sig: &[CpuSig],
        path: &'static str,
    ) -> (usize, &'static str, String, String) {
        let mut cpu = if allowed.contains(&start) { start } else { allowed[0] };
        let mut why: Vec<String> = Vec::new();
        let mut last_level = String::new();
        // for_each_domain(cpu, tmp): the highest domain carrying the flag.
        let mut sd = (0..self.domains.len()).rev().find(|&l| self.domains[l].balance_fork_exec);
        if sd.is_none() {
            why.push("no domain carries SD_BALANCE_FORK/EXEC: stays on the parent's CPU".into());
        }
        while let Some(l) = sd {
            let d = &self.domains[l];
            let child = l.checked_sub(1);
            if !d.balance_fork_exec {
                sd = child;
                continue;
            }
            match self.find_idlest_group(l, cpu, allowed, load, sig) {
                Err(reason) => {
                    why.push(format!("{}: {reason}", d.name));
                    sd = child;
                }
                Ok(cpus) => {
                    let new = self.find_idlest_cpu(&cpus, load, sig);
                    why.push(format!("{}: idlest group -> CPU {}", d.name, self.pu_os[new]));
                    last_level = d.name.clone();
                    if new == cpu {
                        sd = child;
                        continue;
                    }
                    cpu = new;
                    // Go on below this domain's weight, at the new CPU.
                    sd = child;
                }
            }
        }
        if !allowed.contains(&cpu) {
            cpu = self.idlest(allowed, load);
        }
        (cpu, path, last_level, why.join("; "))
    }

    /// `find_idlest_cpu()` in the chosen group: an idle CPU if there is one (an idle core
    /// first, then the lowest PU: the idle-state exit latency and `idle_stamp` tie-breaks of
    /// v6.13 are not modelled); otherwise the least loaded by PELT, the first on ties (v6.13
    /// `sched_balance_find_dst_group_cpu()`: `cpu_load()`; v3.13: `weighted_cpuload()`).
    fn find_idlest_cpu(&self, cands: &[usize], nr: &[usize], sig: &[CpuSig]) -> usize {
        if cands.iter().any(|&c| nr[c] == 0) {
            let idle: Vec<usize> = cands.iter().copied().filter(|&c| nr[c] == 0).collect();
            return self.idlest(&idle, nr);
        }
        let load = |c: usize| match self.rules.load.idlest_group {
            GroupSignals::RqWeight => nr[c] as u64 * CAPACITY,
            GroupSignals::RunnableLoadAvg => sig[c].runnable_load,
            GroupSignals::LoadUtilRunnable => sig[c].load,
        };
        *cands.iter().min_by_key(|&&c| (load(c), c)).expect("non-empty candidate list")
    }

    /// `find_idlest_group()`: Ok(the idlest group's allowed CPUs) or Err(why the local group
    /// stays). Loads, utilisation and runnable are PELT's (`WakeupStats`); integer arithmetic
    /// as the kernel's.
    fn find_idlest_group(
        &self,
        l: usize,
        cpu: usize,
        allowed: &[usize],
        load: &[usize],
        sig: &[CpuSig],
    ) -> Result<Vec<usize>, String> {
        let d = &self.domains[l];
        let pct = d.imbalance_pct as u64;
        let stats = |cpus: &Vec<usize>| WakeupStats::of(self, cpus, load, sig);
        let groups = &d.groups_of[cpu];
        let local_cpus = &groups[0];
        let local = stats(local_cpus);
        let mut idlest: Option<(WakeupStats, Vec<usize>)> = None;
        for g in &groups[1..] {
            let st = stats(g);
            // Groups the task may not run in are skipped (cpumask_intersects with p->cpus_ptr).
            let cpus: Vec<usize> = g.iter().copied().filter(|c| allowed.contains(c)).collect();
            if cpus.is_empty() {
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((b, _)) => match self.rules.idlest_group {
                    // v3.13: "if (avg_load < min_load)", the first group on ties.
                    IdlestGroup::LoadAverage => st.avg_load() < b.avg_load(),
                    // v6.13 update_pick_idlest(): a lower type; fully busy or overloaded: a
                    // lower avg_load; has spare: more idle CPUs, then a lower group_util.
                    IdlestGroup::GroupType => match st.kind(pct).cmp(&b.kind(pct)) {
                        std::cmp::Ordering::Less => true,
                        std::cmp::Ordering::Greater => false,
                        std::cmp::Ordering::Equal if st.kind(pct) > 0 => st.avg_load() < b.avg_load(),
                        std::cmp::Ordering::Equal => {
                            st.g.idle > b.g.idle || (st.g.idle == b.g.idle && st.util < b.util)
                        }
                    },
                },
            };
            if better {
                idlest = Some((st, cpus));
            }
        }
        let Some((idl, cpus)) = idlest else { return Err("no other group".into()) };
        let local_allowed = local_cpus.iter().filter(|c| allowed.contains(c)).count();
        match self.rules.idlest_group {
            IdlestGroup::LoadAverage => {
                // v3.13: imbalance = 100 + (sd->imbalance_pct - 100) / 2;
                // "if (!idlest || 100*this_load < imbalance*min_load) return NULL".
                let imbalance = 100 + (pct - 100) / 2;
                if 100 * local.avg_load() < imbalance * idl.avg_load() {
                    return Err(format!(
                        "local load {}/CPU below {imbalance}% of the idlest group's {}",
                        local.avg_load(),
                        idl.avg_load()
                    ));
                }
                Ok(cpus)
            }
            IdlestGroup::GroupType => {
                let (lk, ik) = (local.kind(pct), idl.kind(pct));
                if lk < ik {
                    return Err("local group less busy (group type)".into());
                }
                if ik < lk {
                    return Ok(cpus);
                }
                if lk > 0 {
                    // Both fully busy or overloaded: imbalance = NICE_0_LOAD x (imbalance_pct -
                    // 100) / 100; across NUMA, stay while the idlest's load plus it is not
                    // below the local one; stay if the idlest is not lighter by it; stay within
                    // imbalance_pct.
                    let imbalance = super::pelt::NICE_0_WEIGHT * (pct - 100) / 100;
                    let (la, ia) = (local.avg_load(), idl.avg_load());
                    if (d.numa && ia + imbalance >= la) || ia >= la + imbalance || 100 * la <= pct * ia {
                        return Err(format!("avg_load {la} local vs {ia}, within imbalance {imbalance}"));
                    }
                    return Ok(cpus);
                }
                if d.numa {
                    // Keep the task close while the local node stays lightly used:
                    // adjust_numa_imbalance(|idle diff|, local running + 1, imb_numa_nr), with
                    // imb_numa_nr capped by the task's allowed CPUs in the local group.
                    let imb_nr = d.imb_numa_nr.min(local_allowed.max(1));
                    let imbalance = local.g.idle.abs_diff(idl.g.idle);
                    if imbalance == 0 {
                        // adjust_numa_imbalance() returns the imbalance itself: 0, so the local
                        // group stays ("if (!adjust_numa_imbalance(...)) return NULL;").
                        return Err("NUMA: idle-CPU difference 0".into());
                    }
                    if adjust_numa_imbalance(imbalance, local.g.nr + 1, imb_nr) == 0 {
                        return Err(format!(
                            "NUMA imbalance allowance: {} running + 1 <= imb_numa_nr {imb_nr}, idle-CPU difference {imbalance} <= {NUMA_IMBALANCE_MIN}",
                            local.g.nr
                        ));
                    }
                }
                if local.g.idle >= idl.g.idle {
                    return Err(format!("local group has as many idle CPUs ({})", local.g.idle));
                }
                Ok(cpus)
            }
        }
    }
}

/// v6.1 and v6.13 `kernel/sched/fair.c`: `NUMA_IMBALANCE_MIN`, the imbalance a lightly loaded
/// destination tolerates ("a simple pair of communicating tasks").
const NUMA_IMBALANCE_MIN: usize = 2;

/// v6.1 and v6.13 `kernel/sched/fair.c: adjust_numa_imbalance()`: no imbalance while the
/// destination would run at most `imb_numa_nr` tasks ("if (dst_running > imb_numa_nr) return
/// imbalance;") and the imbalance is at most `NUMA_IMBALANCE_MIN`, whatever `imb_numa_nr` is.
pub(crate) fn adjust_numa_imbalance(imbalance: usize, dst_running: usize, imb_numa_nr: usize) -> usize {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

#[cfg(test)]
mod tests {
    use super::adjust_numa_imbalance;

    #[test]
    fn a_lightly_loaded_destination_tolerates_two_tasks_of_imbalance_whatever_imb_numa_nr() {
        // imb_numa_nr 1 (a node of fewer than 16 CPUs): a destination that would run 1 task
        // keeps an idle-CPU difference of 2 (NUMA_IMBALANCE_MIN), not only of 1.
        assert_eq!(adjust_numa_imbalance(2, 1, 1), 0);
        assert_eq!(adjust_numa_imbalance(3, 1, 1), 3);
        // With 2 tasks it would run more than imb_numa_nr: the imbalance stands.
        assert_eq!(adjust_numa_imbalance(1, 2, 1), 1);
        // A larger imb_numa_nr does not raise the tolerated imbalance above 2.
        assert_eq!(adjust_numa_imbalance(3, 2, 4), 3);
    }
}
