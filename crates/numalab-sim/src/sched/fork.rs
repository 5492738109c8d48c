//! Placement of a new task: `select_task_rq_fair()` with `SD_BALANCE_FORK` (a worker cloned by
//! the primary thread) or `SD_BALANCE_EXEC` (a process's first thread, `sched_exec()`), in
//! `kernel/sched/fair.c` of v3.13 and v6.13: start at the highest domain of the current CPU
//! carrying the flag; in each, `find_idlest_group()` either keeps the local group (go down one
//! level) or names a group, whose `find_idlest_cpu()` becomes the CPU to look from, and the walk
//! goes on below that domain's weight.

use super::{GroupLoad, Sched, SchedEvent};
use crate::profile::{ExecLoad, IdlestGroup};

impl Sched {
    /// Place thread `tid` when it is created; `parent` is the creating thread (None for a
    /// process's first thread). `live` says which threads already exist.
    pub fn place_new(&mut self, tid: usize, parent: Option<usize>, live: &[bool]) {
        self.place_new_at(0.0, tid, parent, live)
    }

    pub fn place_new_at(&mut self, now_s: f64, tid: usize, parent: Option<usize>, live: &[bool]) {
        let mut load = self.nr_running(live, now_s);
        let allowed = self.allowed[tid].clone();
        let (cpu, path, level, why) = if self.bound[tid] {
            (self.idlest(&allowed, &load), "bind", String::new(), "least loaded PU of its OpenMP place".to_string())
        } else {
            let (start, path) = match parent {
                Some(p) => (self.cpu[p], "fork"),
                // exec: the launching shell runs on the first allowed CPU (numactl's
                // sched_setaffinity before exec moves it there; CPU 0 without binding).
                None => (allowed[0], "exec"),
            };
            // v3.13 counts the exec'ing task on its CPU (it is running there); v6.13's
            // find_idlest_group() discounts it (cpu_util_without(), idle_cpu_without()).
            if parent.is_none() {
                match self.rules.exec_load {
                    ExecLoad::CountsExecer => load[start] += 1,
                    ExecLoad::DiscountsExecer => {}
                }
            }
            self.select_task_rq(start, &allowed, &load, path)
        };
        self.cpu[tid] = cpu;
        self.first_node[tid] = self.pu_node[cpu];
        self.history[tid].push((now_s, cpu));
        self.start_load(now_s, tid);
        self.record(SchedEvent { t_s: now_s, tid, from: None, to: cpu, path, level, why });
    }

    /// The slow path of `select_task_rq_fair()` for fork and exec.
    fn select_task_rq(
        &self,
        start: usize,
        allowed: &[usize],
        load: &[usize],
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
            match self.find_idlest_group(l, cpu, allowed, load) {
                Err(reason) => {
                    why.push(format!("{}: {reason}", d.name));
                    sd = child;
                }
                Ok(cpus) => {
                    let new = self.idlest(&cpus, load);
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

    /// `find_idlest_group()`: Ok(the idlest group's allowed CPUs) or Err(why the local group
    /// stays).
    fn find_idlest_group(&self, l: usize, cpu: usize, allowed: &[usize], load: &[usize]) -> Result<Vec<usize>, String> {
        let d = &self.domains[l];
        let stats = |cpus: &Vec<usize>| GroupLoad::of(cpus, load, &self.pu_core);
        let groups = &d.groups_of[cpu];
        let local_cpus = &groups[0];
        let local = stats(local_cpus);
        let mut idlest: Option<(GroupLoad, Vec<usize>)> = None;
        for g in &groups[1..] {
            let st = stats(g);
            let cpus = g.clone();
            // Groups the task may not run in are skipped (cpumask_intersects with p->cpus_ptr).
            let cpus: Vec<usize> = cpus.into_iter().filter(|c| allowed.contains(c)).collect();
            if cpus.is_empty() {
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((b, _)) => match self.rules.idlest_group {
                    IdlestGroup::LoadAverage => st.avg() < b.avg(),
                    // update_pick_idlest(): lower type; spare: more idle CPUs; else lower load.
                    IdlestGroup::GroupType => {
                        (st.kind(), std::cmp::Reverse(st.idle), (st.avg() * 1e6) as u64)
                            < (b.kind(), std::cmp::Reverse(b.idle), (b.avg() * 1e6) as u64)
                    }
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
                let imbalance = 100.0 + (d.imbalance_pct - 100.0) / 2.0;
                if 100.0 * local.avg() < imbalance * idl.avg() {
                    return Err(format!(
                        "local load {:.2}/CPU below {imbalance}% of the idlest group's {:.2}",
                        local.avg(),
                        idl.avg()
                    ));
                }
                Ok(cpus)
            }
            IdlestGroup::GroupType => {
                if local.kind() < idl.kind() {
                    return Err("local group less busy (group type)".into());
                }
                if idl.kind() < local.kind() {
                    return Ok(cpus);
                }
                if local.kind() > 0 {
                    // Both fully busy or overloaded: keep local unless clearly more loaded.
                    if 100.0 * local.avg() <= d.imbalance_pct * idl.avg() {
                        return Err(format!("within imbalance_pct {}", d.imbalance_pct));
                    }
                    return Ok(cpus);
                }
                if d.numa {
                    // Keep the task close while the local node stays lightly used:
                    // adjust_numa_imbalance(|idle diff|, local running + 1, imb_numa_nr), with
                    // imb_numa_nr capped by the task's allowed CPUs in the local group.
                    let imb_nr = d.imb_numa_nr.min(local_allowed.max(1));
                    let imbalance = local.idle.abs_diff(idl.idle);
                    if adjust_numa_imbalance(imbalance, local.nr + 1, imb_nr) == 0 {
                        return Err(format!(
                            "NUMA imbalance allowance: {} running + 1 <= imb_numa_nr {imb_nr}, idle-CPU difference {imbalance}",
                            local.nr
                        ));
                    }
                }
                if local.idle >= idl.idle {
                    return Err(format!("local group has as many idle CPUs ({})", local.idle));
                }
                Ok(cpus)
            }
        }
    }
}

/// v6.13 `kernel/sched/fair.c: adjust_numa_imbalance()`: no imbalance while the destination
/// would run at most `imb_numa_nr` tasks and the imbalance is at most that (a small imbalance
/// keeps communicating tasks together).
pub(super) fn adjust_numa_imbalance(imbalance: usize, dst_running: usize, imb_numa_nr: usize) -> usize {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= imb_numa_nr {
        return 0;
    }
    imbalance
}
