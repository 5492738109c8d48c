//! The load balancer (`kernel/sched/fair.c` v3.13 / v6.13): `rebalance_domains()` runs each
//! domain of each CPU when `sd->last_balance + interval` has passed, the interval being
//! `get_sd_balance_interval()`: `sd->balance_interval`, times `sd->busy_factor` on a busy CPU,
//! in whole jiffies. `load_balance()` asks `should_we_balance()` (one CPU per group: its first
//! idle CPU, else its first CPU), finds the busiest group (`find_busiest_group()`, per version)
//! and its busiest CPU, and pulls queued tasks that `can_migrate_task()` allows (not running,
//! allowed on the destination, not cache hot unless balancing failed more than
//! `cache_nice_tries` times). Balanced: `balance_interval` doubles up to `max_interval`; moved:
//! back to `min_interval`. After more than `cache_nice_tries + 2` failures, active balancing
//! pushes the running task (`need_active_balance()`, `active_load_balance_cpu_stop()`, which
//! needs at least two tasks on the busiest CPU). A CPU that just went idle balances at once
//! (`newidle_balance()`, `SD_BALANCE_NEWIDLE`, set on every level in both versions).

use super::fork::adjust_numa_imbalance;
use super::pelt::CAPACITY;
use super::{Domain, GroupLoad, Sched, HZ, MIGRATION_COST_S};
use crate::profile::{BusiestGroup, IdleScan, TimeSlice};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Idle {
    Busy,
    Now,
    Newly,
}

/// A group of a domain: its index (0 = the local group) and its load.
#[derive(Clone, Copy, Debug)]
struct Group {
    id: usize,
    load: GroupLoad,
}

impl std::ops::Deref for Group {
    type Target = GroupLoad;
    fn deref(&self) -> &GroupLoad {
        &self.load
    }
}

/// Time slice of each of `n` tasks sharing a CPU: v3.13 `sched_slice()` over
/// `__sched_period()` (latency 6 ms x (1 + log2 min(CPUs, 8)) = 24 ms, at least n x 3 ms);
/// v6.13 EEVDF's `sysctl_sched_base_slice` 0.75 ms x the same factor 4 = 3 ms.
pub(super) fn slice_s(slice: TimeSlice, n: usize) -> f64 {
    match slice {
        TimeSlice::CfsPeriod { period_s, min_granularity_s } => period_s.max(n as f64 * min_granularity_s) / n as f64,
        TimeSlice::Base { slice_s } => slice_s,
    }
}

impl Sched {
    /// Balancing at time `now_s` (an epoch end): newly-idle CPUs first, then every domain of
    /// every CPU whose interval has passed. Returns the threads moved.
    pub fn balance(&mut self, now_s: f64, live: &[bool]) -> Vec<usize> {
        self.account(now_s, live);
        let mut nr = self.nr_running(live, now_s);
        let mut moved = Vec::new();
        let ncpu = nr.len();
        for cpu in 0..ncpu {
            if self.was_busy[cpu] && nr[cpu] == 0 {
                for l in 0..self.domains.len() {
                    let got = self.load_balance(now_s, cpu, l, Idle::Newly, &mut nr, live);
                    let done = !got.is_empty();
                    moved.extend(got);
                    if done {
                        break;
                    }
                }
            }
        }
        for cpu in 0..ncpu {
            for l in 0..self.domains.len() {
                let busy = nr[cpu] > 0;
                let st = &self.state[l][cpu];
                let mut ms = st.balance_interval_ms;
                if busy {
                    ms *= self.domains[l].busy_factor;
                }
                let jiffies = (ms * HZ / 1000.0).ceil().max(1.0);
                if now_s + 1e-12 < st.last_balance_s + jiffies / HZ {
                    continue;
                }
                self.state[l][cpu].last_balance_s = now_s;
                let idle = if busy { Idle::Busy } else { Idle::Now };
                if !self.should_we_balance(cpu, l, &nr) {
                    // load_balance(): "goto out_balanced" and stop climbing for this CPU.
                    self.grow_interval(l, cpu);
                    break;
                }
                moved.extend(self.load_balance(now_s, cpu, l, idle, &mut nr, live));
            }
        }
        for (w, &n) in self.was_busy.iter_mut().zip(&nr) {
            *w = n > 0;
        }
        moved
    }

    fn grow_interval(&mut self, l: usize, cpu: usize) {
        let max = self.domains[l].max_interval_ms(cpu);
        let st = &mut self.state[l][cpu];
        if st.balance_interval_ms < max {
            st.balance_interval_ms *= 2.0;
        }
    }

    /// `should_we_balance()`: the first idle CPU of the local group, else the group's first.
    fn should_we_balance(&self, cpu: usize, l: usize, nr: &[usize]) -> bool {
        let group = &self.domains[l].groups_of[cpu][0];
        match group.iter().find(|&&c| nr[c] == 0) {
            Some(&first_idle) => first_idle == cpu,
            None => group.first() == Some(&cpu),
        }
    }

    /// Whether `tid` runs on `cpu` at `now_s`, and if queued how long ago it last ran
    /// (`task_hot()`: `rq_clock_task(src_rq) - p->se.exec_start`): tasks sharing a CPU take
    /// turns in thread order, and a task woken from a barrier sleep ran at least until it
    /// stopped to sleep (its `exec_start` is from then), however long ago its turn was.
    fn since_ran(&self, now_s: f64, cpu: usize, tid: usize, live: &[bool]) -> (bool, f64) {
        let (running, since) = self.since_turn(now_s, cpu, tid, live);
        let stopped = self.stopped_s[tid];
        if running || stopped > now_s {
            return (running, since);
        }
        (false, since.min(now_s - stopped))
    }

    /// `since_ran()` from the turn-taking alone.
    fn since_turn(&self, now_s: f64, cpu: usize, tid: usize, live: &[bool]) -> (bool, f64) {
        let mut on: Vec<usize> = (0..self.cpu.len()).filter(|&t| live[t] && self.cpu[t] == cpu).collect();
        on.sort();
        if let Some(nz) = &self.noise {
            if let Some(start) = nz.active_since(cpu, now_s) {
                // Background work preempted the CPU's task at its start.
                return (false, now_s - start);
            }
        }
        let n = on.len();
        if n <= 1 {
            return (true, 0.0);
        }
        let s = slice_s(self.rules.slice, n);
        let period = s * n as f64;
        let pos = now_s.rem_euclid(period);
        let cur = ((pos / s) as usize).min(n - 1);
        let me = on.iter().position(|&t| t == tid).unwrap_or(0);
        if me == cur {
            return (true, 0.0);
        }
        // Time since the end of my last turn.
        let end_of_mine = (me + 1) as f64 * s;
        let since = (pos - end_of_mine).rem_euclid(period);
        (false, since)
    }

    /// One `load_balance()` of domain `l` for destination `dst`; returns the threads pulled.
    fn load_balance(
        &mut self,
        now_s: f64,
        dst: usize,
        l: usize,
        idle: Idle,
        nr: &mut [usize],
        live: &[bool],
    ) -> Vec<usize> {
        if l == 0 && idle != Idle::Newly && self.rules.load.idle_scan == IdleScan::SisUtil {
            self.update_idle_cpu_scan(now_s, dst, live);
        }
        let d = &self.domains[l];
        let span = &d.span_of[dst];
        let groups: Vec<(Group, Vec<usize>)> = d.groups_of[dst]
            .iter()
            .enumerate()
            .map(|(id, cpus)| {
                let g = Group { id, load: GroupLoad::of(cpus, nr, &self.pu_core) };
                (g, cpus.clone())
            })
            .collect();
        let local = groups[0].0;
        let total_nr: usize = groups.iter().map(|(g, _)| g.nr).sum();
        let dom_avg = total_nr as f64 / span.len() as f64;
        let others = groups.iter().filter(|(g, _)| g.id != local.id && g.nr > 0);
        // v3.13 sg_capacity(): a group's capacity is its cores; update_sd_lb_stats() lowers it
        // to 1 when the groups prefer siblings and the local group has capacity left.
        let capacity_313 = |g: &Group| {
            if d.groups_prefer_sibling && local.cores > local.nr {
                g.cores.min(1)
            } else {
                g.cores
            }
        };
        let busiest = match self.rules.busiest_group {
            // update_sd_pick_busiest(): the highest average load among groups above their
            // capacity ("if (sgs->sum_nr_running > sgs->group_capacity) return true"), the first
            // one on ties.
            BusiestGroup::Capacity => others
                .filter(|(g, _)| g.nr > capacity_313(g))
                .max_by(|a, b| a.0.avg().total_cmp(&b.0.avg()).then(b.0.id.cmp(&a.0.id))),
            // update_sd_pick_busiest(), over the groups in order: a higher type wins; overloaded:
            // a strictly higher average load; fully busy: an average load at least as high (the
            // later group on ties, no SMT flag here); has spare: fewer idle CPUs, or as many and
            // strictly more tasks.
            BusiestGroup::GroupType => others.fold(None, |best: Option<&(Group, Vec<usize>)>, cand| match best {
                None => Some(cand),
                Some(b) => {
                    let (g, bg) = (&cand.0, &b.0);
                    let wins = match g.kind().cmp(&bg.kind()) {
                        std::cmp::Ordering::Greater => true,
                        std::cmp::Ordering::Less => false,
                        std::cmp::Ordering::Equal => match g.kind() {
                            2 => g.avg() > bg.avg(),
                            1 => g.avg() >= bg.avg(),
                            _ => g.idle < bg.idle || (g.idle == bg.idle && g.nr > bg.nr),
                        },
                    };
                    Some(if wins { cand } else { b })
                }
            }),
        };
        let Some((busiest, busiest_cpus)) = busiest.cloned() else {
            self.balanced(l, dst, idle);
            return Vec::new();
        };
        let tasks = match self.rules.busiest_group {
            BusiestGroup::Capacity => {
                imbalance_313(d.imbalance_pct, idle, local, busiest, capacity_313(&busiest), dom_avg)
            }
            BusiestGroup::GroupType => imbalance_6(d, l == 0, idle, local, busiest, dom_avg),
        };
        let Some(tasks) = tasks.filter(|&t| t > 0) else {
            self.balanced(l, dst, idle);
            return Vec::new();
        };
        // find_busiest_queue(): the busiest CPU of the group (most runnable tasks).
        let Some(src) =
            busiest_cpus.iter().copied().filter(|&c| nr[c] >= 1).max_by_key(|&c| (nr[c], std::cmp::Reverse(c)))
        else {
            self.balanced(l, dst, idle);
            return Vec::new();
        };
        let failed = self.state[l][dst].nr_balance_failed;
        let tries = self.domains[l].cache_nice_tries;
        let path = match idle {
            Idle::Busy => "busy-balance",
            Idle::Now => "idle-balance",
            Idle::Newly => "newidle-balance",
        };
        let mut pulled = Vec::new();
        let mut blocked = Vec::new();
        // detach_tasks(): from the tail of the queue (highest thread first here).
        let mut cands: Vec<usize> = (0..self.cpu.len()).filter(|&t| live[t] && self.cpu[t] == src).collect();
        cands.sort_by(|a, b| b.cmp(a));
        for t in cands {
            if pulled.len() >= tasks {
                break;
            }
            // 6.x detach_tasks(): an idle destination never takes the source's last task.
            if idle != Idle::Busy && nr[src] <= 1 {
                break;
            }
            if !self.allowed[t].contains(&dst) {
                blocked.push(format!("thread {} pinned", t + 1));
                continue;
            }
            let (running, since) = self.since_ran(now_s, src, t, live);
            if running {
                blocked.push(format!("thread {} running", t + 1));
                continue;
            }
            // task_hot(): ran less than sysctl_sched_migration_cost ago (SMT siblings share
            // their caches: never hot at that level; no SMT level is modelled).
            if since < MIGRATION_COST_S && failed <= tries {
                blocked.push(format!("thread {} cache hot (ran {:.0} us ago)", t + 1, since * 1e6));
                continue;
            }
            let why = format!(
                "{} from CPU {} ({} runnable) to {} CPU {}: busiest group {:.2}/CPU vs local {:.2}/CPU, imbalance {} task(s)",
                d_name(self, l),
                self.pu_os[src],
                nr[src],
                if idle == Idle::Busy { "busy" } else { "idle" },
                self.pu_os[dst],
                busiest.avg(),
                local.avg(),
                tasks
            );
            nr[src] -= 1;
            nr[dst] += 1;
            self.migrate(now_s, t, dst, path, l, why);
            pulled.push(t);
        }
        let st = &mut self.state[l][dst];
        if !pulled.is_empty() {
            st.nr_balance_failed = 0;
            st.balance_interval_ms = self.domains[l].min_interval_ms(dst);
            return pulled;
        }
        if idle != Idle::Newly {
            st.nr_balance_failed += 1;
        }
        st.balance_interval_ms = self.domains[l].min_interval_ms(dst);
        // need_active_balance(): too many failures; the stopper moves the running task when
        // the source still has at least two.
        if idle != Idle::Newly && self.state[l][dst].nr_balance_failed > tries + 2 && nr[src] >= 2 {
            let running =
                (0..self.cpu.len()).find(|&t| live[t] && self.cpu[t] == src && self.since_ran(now_s, src, t, live).0);
            if let Some(t) = running.filter(|&t| self.allowed[t].contains(&dst)) {
                let why = format!(
                    "{} after {} failed attempts ({}): CPU {} pushes its running thread to CPU {}",
                    d_name(self, l),
                    self.state[l][dst].nr_balance_failed,
                    blocked.join(", "),
                    self.pu_os[src],
                    self.pu_os[dst]
                );
                self.state[l][dst].nr_balance_failed = tries + 1;
                nr[src] -= 1;
                nr[dst] += 1;
                self.migrate(now_s, t, dst, "active-balance", l, why);
                return vec![t];
            }
        }
        Vec::new()
    }

    /// v6.13 `update_idle_cpu_scan()` (from `update_sd_lb_stats()` of the LLC domain, periodic
    /// balancing only): with `x = sum_util / llc_weight` and `pct` the domain's
    /// `imbalance_pct`, `nr_idle_scan = llc_weight x (1024 - min(x^2 x pct^2 / (10000 x
    /// 1024), 1024)) / 1024`: the whole LLC when idle, nothing from 85 % utilisation up.
    fn update_idle_cpu_scan(&mut self, now_s: f64, dst: usize, live: &[bool]) {
        let sig = self.cpu_signals(now_s, live);
        let llc = &self.domains[0].span_of[dst];
        let llc_weight = llc.len() as u64;
        let sum_util: u64 = llc.iter().map(|&c| sig[c].util).sum();
        let x = sum_util / llc_weight.max(1);
        let pct = self.domains[0].imbalance_pct as u64;
        let tmp = (x * x * pct * pct / (10000 * CAPACITY)).min(CAPACITY);
        let y = (CAPACITY - tmp) * llc_weight / CAPACITY;
        self.nr_idle_scan[self.pu_node[dst]] = y as usize;
    }

    fn balanced(&mut self, l: usize, cpu: usize, idle: Idle) {
        // newidle_balance() disregards intervals: no growth for it.
        if idle != Idle::Newly {
            self.state[l][cpu].nr_balance_failed = 0;
            self.grow_interval(l, cpu);
        }
    }
}

fn d_name(s: &Sched, l: usize) -> String {
    s.domains[l].name.clone()
}

/// v3.13 `find_busiest_group()` + `calculate_imbalance()` in tasks (every task weighs the same;
/// kernel/sched/fair.c as in v3.13.10). `busiest_capacity`: its `group_capacity` after
/// `update_sd_lb_stats()`.
fn imbalance_313(
    pct: f64,
    idle: Idle,
    local: Group,
    busiest: Group,
    busiest_capacity: usize,
    dom_avg: f64,
) -> Option<usize> {
    // "SD_BALANCE_NEWIDLE trumps SMP nice when underutilized": newly idle, the local group has
    // capacity (group_capacity > sum_nr_running) and the busiest has none.
    let force = idle == Idle::Newly && local.cores > local.nr && busiest_capacity <= busiest.nr;
    if !force {
        if local.avg() >= busiest.avg() || local.avg() >= dom_avg {
            return None;
        }
        if idle == Idle::Now {
            // "if ((local->idle_cpus < busiest->idle_cpus) && busiest->sum_nr_running <=
            // busiest->group_weight) goto out_balanced;"
            if local.idle < busiest.idle && busiest.nr <= busiest.weight {
                return None;
            }
        } else if 100.0 * busiest.avg() <= pct * local.avg() {
            // CPU_NOT_IDLE and CPU_NEWLY_IDLE: the conservative imbalance_pct test.
            return None;
        }
    }
    // max_pull = min(busiest avg - domain avg, load above capacity); imbalance = min(max_pull
    // x busiest power, (domain avg - local avg) x local power); fix_small_imbalance() moves one.
    let above = (busiest.nr.saturating_sub(busiest_capacity)) as f64;
    let max_pull = ((busiest.avg() - dom_avg) * busiest.weight as f64).min(above);
    let t = max_pull.min((dom_avg - local.avg()) * local.weight as f64).floor();
    Some((t.max(0.0) as usize).max(1))
}

/// v6.13 `sibling_imbalance()`: the running-task difference, normalised by the groups' cores
/// when they differ (rounded), at least 2 toward an empty local group when the busiest runs more
/// than one; 0 for a busy destination.
fn sibling_imbalance(idle: Idle, local: Group, busiest: Group) -> usize {
    if idle == Idle::Busy || busiest.nr == 0 {
        return 0;
    }
    if busiest.cores == local.cores {
        return busiest.nr.saturating_sub(local.nr);
    }
    let imb = (local.cores * busiest.nr).saturating_sub(busiest.cores * local.nr);
    let imb = (2 * imb + local.cores + busiest.cores) / (local.cores + busiest.cores);
    if imb <= 1 && local.nr == 0 && busiest.nr > 1 {
        2
    } else {
        imb
    }
}

/// v6.13 `sched_balance_find_src_group()` (`find_busiest_group()` before 6.10) and
/// `calculate_imbalance()` in tasks (kernel/sched/fair.c), for a system without asymmetric
/// capacity or energy model. `llc`: the domain shares the LLC (MC, `SD_SHARE_LLC`).
fn imbalance_6(d: &Domain, llc: bool, idle: Idle, local: Group, busiest: Group, dom_avg: f64) -> Option<usize> {
    if local.kind() > busiest.kind() {
        return None;
    }
    if local.kind() == 2
        && (local.avg() >= busiest.avg()
            || local.avg() >= dom_avg
            || 100.0 * busiest.avg() <= d.imbalance_pct * local.avg())
    {
        return None;
    }
    // "Try to move all excess tasks to a sibling domain of the busiest group's child domain":
    // sds.prefer_sibling is the busiest group's SD_PREFER_SIBLING (its child domain's flag).
    let prefer_sibling = d.groups_prefer_sibling;
    let force = prefer_sibling && local.kind() == 0 && sibling_imbalance(idle, local, busiest) > 1;
    if busiest.kind() != 2 && !force {
        // "this CPU is already busy, let another idle CPU try to pull task"
        if idle == Idle::Busy {
            return None;
        }
        if busiest.weight > 1 && local.idle <= busiest.idle + 1 {
            return None;
        }
        if busiest.nr <= 1 {
            return None;
        }
    }
    if local.kind() == 0 {
        if busiest.kind() == 2 && !llc {
            // migrate_util: fill the local group's spare capacity (in idle CPUs here; at least
            // one task for an idle destination).
            return Some(local.idle.max(1));
        }
        let imb = if busiest.weight == 1 || prefer_sibling {
            sibling_imbalance(idle, local, busiest)
        } else {
            // "If there is no overload, we just want to even the number of idle CPUs."
            local.idle.saturating_sub(busiest.idle)
        };
        let imb = if d.numa { adjust_numa_imbalance(imb, local.nr + 1, d.imb_numa_nr) } else { imb };
        // "Number of tasks to move to restore balance": imbalance >>= 1.
        return Some(imb >> 1);
    }
    // migrate_load between loaded groups, in tasks.
    let t =
        ((busiest.avg() - dom_avg) * busiest.weight as f64).min((dom_avg - local.avg()) * local.weight as f64).floor();
    Some((t.max(0.0) as usize).max(1))
}
