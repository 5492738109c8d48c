//! Serving page visits: the hot path over runs of placed pages, the general path (first
//! touch, hinting faults), per-round bandwidth budgets, and the slice/round schedule.

use super::*;

impl Engine<'_> {
    /// A new round's budgets; an overdraft (at most a page per path) is carried over, unused
    /// capacity is not.
    pub(super) fn refill_budgets(&mut self, round_s: f64) {
        for (b, n) in self.budget_node.iter_mut().zip(&self.m.nodes) {
            *b = b.min(0.0) + n.bandwidth_gbps * 1e9 * round_s / 64.0;
        }
        for (b, l) in self.budget_link.iter_mut().zip(&self.m.links) {
            for (dir, gbps) in b.iter_mut().zip(l.gbps) {
                *dir = dir.min(0.0) + gbps * 1e9 * round_s / 80.0;
            }
        }
    }

    /// Take `rd`/`wr` lines between CPU node `c` and memory node `n` from the slice budgets;
    /// false (nothing taken) if the node or a link on the way is already exhausted.
    pub(super) fn take_budget(&mut self, c: usize, n: usize, rd: f64, wr: f64) -> bool {
        let routes = &self.m.routes;
        let link_ok =
            |hops: &[numalab_model::Hop], b: &[[f64; 2]]| hops.iter().all(|h| b[h.link as usize][h.dir as usize] > 0.0);
        if self.budget_node[n] <= 0.0
            || (rd > 0.0 && !link_ok(&routes[n][c], &self.budget_link))
            || (wr > 0.0 && !link_ok(&routes[c][n], &self.budget_link))
        {
            return false;
        }
        self.budget_node[n] -= rd + wr;
        for h in &routes[n][c] {
            self.budget_link[h.link as usize][h.dir as usize] -= rd;
        }
        for h in &routes[c][n] {
            self.budget_link[h.link as usize][h.dir as usize] -= wr;
        }
        true
    }

    /// Run every thread to `slice_end` in small rounds, so the slice's bandwidth budget is
    /// consumed in time order by all threads rather than first-come by thread number.
    /// Not inlined into `Engine::run`: when it was (a change elsewhere tipped the inliner),
    /// first touch on CG class C took 2.5 % more instructions.
    #[inline(never)]
    pub(super) fn run_slice(&mut self, slice_start: f64, slice_end: f64, costs: &[Vec<f64>], shares: &[f64]) {
        let nt = self.threads.len();
        for round in 1..=ROUNDS {
            let round_end = slice_start + (slice_end - slice_start) * round as f64 / ROUNDS as f64;
            self.refill_budgets((slice_end - slice_start) / ROUNDS as f64);
            let round_start = slice_start + (slice_end - slice_start) * (round - 1) as f64 / ROUNDS as f64;
            // With the host model a round ends early at the host's next event (QEMU's main
            // loop thread, `host.rs: host_round_split`); the rest of it is another.
            let mut start = round_start;
            loop {
                let mut end = round_end;
                if self.host.is_some() {
                    self.host_plan(start);
                    end = self.host_round_split(start, round_end);
                }
                // With the host model the threads of the vCPUs it runs go first, and the round
                // ends where one of those vCPUs halts (`host.rs: host_halt_in`); the others'
                // threads stand still after, to the round's end once it is known.
                let stages = if self.host.is_some() { 2 } else { 1 };
                for stage in 0..stages {
                    let first = stages == 2 && stage == 0;
                    self.run_passes(nt, first, start, &mut end, costs, shares);
                    if self.oom.is_some() {
                        return;
                    }
                }
                self.host_charge(end - start);
                if self.host.is_some() {
                    self.host_round_end(end);
                }
                if end >= round_end {
                    break;
                }
                start = end;
            }
        }
    }

    /// Passes over the threads up to `end`. `first`: only the threads of the vCPUs the host runs
    /// (the others are left for a later call), `end` brought forward to where one of those halts.
    #[inline(always)]
    fn run_passes(&mut self, nt: usize, first: bool, start: f64, end: &mut f64, costs: &[Vec<f64>], shares: &[f64]) {
        // Another pass only if a barrier released threads or a pipeline moved on, since
        // only that lets a thread already visited in this round do more.
        loop {
            self.woke = false;
            let turns_before = self.sched.turn_changes();
            let mut progressed = false;
            for tid in 0..nt {
                if first {
                    if self.host_stopped(tid) {
                        continue;
                    }
                    if let Some(h) = self.host_halt_in(start, *end) {
                        *end = h;
                    }
                }
                let end = *end;
                // Threads sharing a CPU run in turns (`turns.rs`).
                let Some(until) = self.turn_until(tid, end) else { continue };
                if self.host_stopped(tid) {
                    progressed |= self.stand_still(tid, until);
                    self.after_turn(tid);
                    continue;
                }
                progressed |= self.run_thread(tid, until, &costs[tid], shares[tid]);
                if self.oom.is_some() {
                    return;
                }
                self.after_turn(tid);
            }
            // A pass that changed nothing ends the round: the next would be the same (a
            // pipelined thread may wait for a predecessor queued for its CPU until later).
            progressed |= self.sched.turn_changes() != turns_before;
            if !progressed || !self.woke {
                break;
            }
        }
    }

    /// Run one thread up to `until`; true if it did anything. Forced inline, as `fast_visits` and
    /// `Sweep::extend_run` are: left to the compiler, an unrelated change elsewhere once moved
    /// them out of `run_slice` and cost a third of first touch's speed (docs/performance.md §9).
    #[inline(always)]
    pub(super) fn run_thread(&mut self, tid: usize, until: f64, cost: &[f64], share: f64) -> bool {
        let mut did = false;
        // An out-of-memory ends the run at once: the thread must not go on through its visits.
        while self.threads[tid].state == State::Running && self.threads[tid].clock < until && self.oom.is_none() {
            if !self.threads[tid].pipelined && self.fast_visits(tid, until, cost, share) {
                did = true;
            }
            if self.threads[tid].clock >= until {
                break;
            }
            if let Some(cap) = self.pipeline_cap(tid) {
                let pred = tid - 1;
                let t = &self.threads[tid];
                if t.lines_total > 0.0 && progress(t) >= cap {
                    let pc = self.threads[pred].clock;
                    let cpu = self.sched.cpu[tid];
                    let t = &mut self.threads[tid];
                    if pc > t.clock {
                        t.clock = pc.min(until);
                        did = true;
                    } else if self.sched.turn_holder(cpu) == Some(tid) && self.sched.turn_end(cpu).is_finite() {
                        // Others wait for its CPU (`turns.rs`), its predecessor among them or
                        // behind a thread that waits for this one: the pipeline's flag wait spins
                        // (NPB LU's sync_left), so its turn runs out and the next one runs.
                        t.clock = self.sched.turn_end(cpu).min(until).max(t.clock);
                        return true;
                    }
                    // The predecessor may go on later in this round: look again then.
                    self.woke |= self.threads[pred].state == State::Running && pc < until;
                    return did;
                }
            }
            let t = &mut self.threads[tid];
            let next = t.pending.take().or_else(|| next_visit(t, self.procs[t.pid].regions.as_slice()));
            if let Some(v) = next {
                if !self.visit(tid, v, cost, share) {
                    // No bandwidth left on the way this round: wait for the next one.
                    self.budget_waits += 1;
                    let t = &mut self.threads[tid];
                    t.pending = Some(v);
                    t.clock = t.clock.max(until);
                    return true;
                }
                did = true;
                continue;
            }
            let t = &mut self.threads[tid];
            if t.compute_left_s > 0.0 {
                let need = t.compute_left_s / share;
                let avail = until - t.clock;
                if need <= avail {
                    t.clock += need;
                    t.busy_s += need;
                    t.compute_left_s = 0.0;
                } else {
                    t.clock = until;
                    t.busy_s += avail;
                    t.compute_left_s -= avail * share;
                }
                did = true;
                continue;
            }
            self.end_phase(tid);
            did = true;
        }
        did
    }

    /// The hot loop: serve visits to pages already placed whose path has bandwidth left, until
    /// `until`, the end of the phase's visits, or a visit that needs the general path (first
    /// touch, exhausted budget); that visit is left in `pending`. Runs of whole samples are
    /// served in one step. True if any visit was served.
    #[inline(always)]
    pub(super) fn fast_visits(&mut self, tid: usize, until: f64, cost: &[f64], share: f64) -> bool {
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        let Engine { threads, procs, budget_node, budget_link, scratch, .. } = self;
        let Scratch { slots, rems, cap_links, pair_hops, hops22 } = scratch;
        // The slots as a slice held here: through the vector, every sample's count (a store)
        // made the page-table scan load the vector's pointer and length again.
        let slots = slots.as_mut_slice();
        let n = slots.len();
        let pairs = &pair_hops[cpu_node * n..(cpu_node + 1) * n];
        // Padded hops and the link budgets as a fixed-size table where the machine has them
        // (`Scratch::hops22`): a u8 index into 256 entries needs no check.
        let fixed = hops22.get(cpu_node * n..(cpu_node + 1) * n);
        let t = &mut threads[tid];
        let regions = &procs[t.pid].regions;
        let kappa = t.compute_per_line_s / share;
        // The cheapest node the thread went to last epoch (or expects to): runs are sized by it,
        // and a node it does not use may be far cheaper than the ones it does.
        if t.cheapest_s.is_nan() {
            // The node's four vectors walked in step with its cost (the same sum, in the same
            // order): once per epoch and phase for every thread, an indexed closure was a call
            // and four index checks per node.
            let mut c = f64::INFINITY;
            let seen = t.prev_rd.iter().zip(&t.prev_wr).zip(t.est_rd.iter().zip(&t.est_wr));
            for (&x, ((&pr, &pw), (&er, &ew))) in cost.iter().zip(seen) {
                if pr + pw + er + ew > 0.0 {
                    c = c.min(x);
                }
            }
            t.cheapest_s = if c.is_finite() { c } else { cost.iter().copied().fold(f64::INFINITY, f64::min) };
        }
        let cheapest = t.cheapest_s + kappa;
        let mut served = false;

        while t.clock < until && t.pending.is_none() {
            let Some(i) = pick_sweep(t) else { break };
            let sweep = &mut t.sweeps[i];
            let r = &regions[sweep.region as usize];
            let rd_share = sweep.rd_share();
            let per_sample = sweep.sample_lines(r.shift);
            let room = if per_sample > 0.0 {
                crate::ceil::ceil_at_least_1((until - t.clock) / (per_sample * cheapest))
            } else {
                1
            };
            // Samples each node can still take this round (its memory and the links on the way):
            // a run stops there, so no resource goes over its budget by more than one sample.
            // A node's cap is only worked out when the run first reaches the node (`node_cap`;
            // most runs reach one or two of the machine's nodes): count and cap start at 0, so
            // the first sample on a node finds the cap reached with nothing counted yet.
            let max = room.min(RUN_PAGES);
            let enough = per_sample * max as f64 * (1.0 + 1e-9);
            let links = budget_link.as_flattened();
            // Caps up front, for every node, when the thread's last run reached several
            // (interleaved pages): worked out in one loop rather than on each node's first
            // sample, where the page-table scan would leave its loop (a mispredicted branch and
            // a call per node). Runs over one node's pages keep working out that node's alone.
            if t.spread > 2 {
                // Budgets do not change while a run grows, so a cap worked out now is the one
                // `admit` would work out on the node's first sample; a node that may take
                // nothing gets [0, 0] and is refused there as before. Every slot is written
                // here, so none needs clearing first.
                if let (Some(h22), Ok(lk)) = (fixed, <&[f64; LINK_FLAT]>::try_from(links)) {
                    // What each node has left (`cap_of`'s minimum, without its branches), and
                    // the least of them: when that is a run's worth, every cap is no limit, the
                    // common case (a node rarely runs short of budget within a run).
                    let mut least = f64::INFINITY;
                    for ((r, &[[a, b], [c, d]]), &nb) in rems.iter_mut().zip(h22).zip(budget_node.iter()) {
                        let m = least_of(nb, [lk[a as usize], lk[b as usize], lk[c as usize], lk[d as usize]]);
                        *r = m;
                        least = if m < least { m } else { least };
                    }
                    if least > 0.0 && least >= enough {
                        slots.fill([0, u32::MAX]);
                    } else {
                        for (s, &rem) in slots.iter_mut().zip(rems.iter()) {
                            *s = [0, cap_of_rem(rem, per_sample, enough).unwrap_or(0)];
                        }
                    }
                } else {
                    for ((s, &[lo, _, hi]), &b) in slots.iter_mut().zip(pairs).zip(budget_node.iter()) {
                        let hops = &cap_links[lo as usize..hi as usize];
                        *s = [0, cap_of(b, hops, links, per_sample, enough).unwrap_or(0)];
                    }
                }
            } else {
                slots.fill([0; 2]);
            }
            // The closure stays small (the first sample on a node goes to `node_cap`), so that
            // it is inlined into the page-table scan rather than called for every sample.
            let admit = |n: usize| {
                let s = &mut slots[n];
                if s[0] < s[1] {
                    s[0] += 1;
                    return true;
                }
                if s[0] > 0 {
                    return false;
                }
                let [lo, _, hi] = pairs[n];
                let hops = &cap_links[lo as usize..hi as usize];
                match node_cap(budget_node[n], hops, links, per_sample, enough) {
                    Some(c) => {
                        *s = [1, c];
                        true
                    }
                    None => false,
                }
            };
            let (k, per) = sweep.extend_run(r.shift, &r.node, r.marked_or_none(), max, admit);
            if k > 0 {
                // A sweep that only reads (or only writes) takes nothing the other way:
                // subtracting 0 changes no budget, so those hops are skipped, decided once per
                // run (a product that rounds to 0 would subtract 0 here, which changes nothing).
                let (take_rd, take_wr) = (rd_share != 0.0, 1.0 - rd_share != 0.0);
                let run = Run { per, rd_share, kappa, take_rd, take_wr };
                let mix = (&mut t.mix_rd[..], &mut t.mix_wr[..]);
                let links = budget_link.as_flattened_mut();
                // The route back (read data), then the route out (written data), hop by hop in
                // route order; none for the CPU's own node (padded: a pad takes from a budget
                // that is never read, `Engine::budget_link`).
                let (c, reached) = if let (Some(h22), Ok(lk)) = (fixed, <&mut [f64; LINK_FLAT]>::try_from(links)) {
                    run.charge(slots, h22, budget_node, cost, mix, |&[[a, b], [c, d]], rd, wr| {
                        if take_rd {
                            lk[a as usize] -= rd;
                            lk[b as usize] -= rd;
                        }
                        if take_wr {
                            lk[c as usize] -= wr;
                            lk[d as usize] -= wr;
                        }
                    })
                } else {
                    let links = budget_link.as_flattened_mut();
                    run.charge(slots, pairs, budget_node, cost, mix, |&[lo, mid, hi], rd, wr| {
                        if take_rd {
                            for &l in &cap_links[lo as usize..mid as usize] {
                                links[l as usize] -= rd;
                            }
                        }
                        if take_wr {
                            for &l in &cap_links[mid as usize..hi as usize] {
                                links[l as usize] -= wr;
                            }
                        }
                    })
                };
                t.spread = reached;
                t.visits += k;
                t.clock += c;
                t.busy_s += c;
                served = true;
                continue;
            }
            // A partial page, a page not placed yet, or a saturated path: the general path.
            let shift = r.shift;
            if let Some(v) = t.sweeps[i].next(shift, &mut t.rng) {
                t.pending = Some(v);
            }
        }
        served
    }

    /// For a thread in a pipelined phase: how far (fraction) it may get, given its predecessor.
    pub(super) fn pipeline_cap(&self, tid: usize) -> Option<f64> {
        let t = &self.threads[tid];
        let phase = self.current_phase(t)?;
        let spec = &self.wl(t.pid).phases[phase];
        if spec.sync != Sync::Pipeline || t.idx == 0 {
            return None;
        }
        let pred = &self.threads[tid - 1];
        if pred.seq > t.seq || pred.state == State::Done || matches!(pred.state, State::Waiting(_)) {
            return None;
        }
        Some(progress(pred) - 1.0 / spec.pipeline_steps as f64)
    }

    /// Serve one visit; false if the bandwidth budget of its path is exhausted (nothing done).
    pub(super) fn visit(&mut self, tid: usize, v: Visit, cost: &[f64], share: f64) -> bool {
        let cpu_node = self.sched.pu_node[self.sched.cpu[tid]];
        if self.tiering.is_some() {
            // kswapd runs beside the thread: what it demoted by now is free for this visit.
            self.kswapd(self.threads[tid].clock);
        }
        let placed = self.placed_node(tid, &v);
        if let Some(node) = placed {
            if !self.take_budget(cpu_node, node, v.lines * v.rd_share, v.lines * (1.0 - v.rd_share)) {
                return false;
            }
        }
        // A visit whose first and last entries are placed faults nothing (`first_touch`'s own
        // first test, made here without the call: hinting faults come this way).
        let whole = placed.is_some()
            && self.procs[self.threads[tid].pid].regions[v.region as usize].node[v.first as usize] != NONE;
        let mut extra = if whole {
            0.0
        } else {
            let Some(e) = self.first_touch(tid, &v, cpu_node, share) else { return true };
            e
        };
        extra += self.hint_faults(tid, &v, cpu_node);
        let t = &mut self.threads[tid];
        // The access goes to the page's node after any migration its hinting fault made.
        let node = self.procs[t.pid].regions[v.region as usize].node[v.unit as usize] as usize;
        let c = v.lines * (t.compute_per_line_s / share + cost[node]) + extra;
        t.mix_rd[node] += v.lines * v.rd_share;
        t.mix_wr[node] += v.lines * (1.0 - v.rd_share);
        t.clock += c;
        t.busy_s += c;
        t.visits += 1;
        true
    }

    /// Allocate the pages of a visit not placed yet (first write). Returns the fault time, or
    /// None when the visit is fully served here (a first read maps the zero page) or ran out
    /// of memory.
    pub(super) fn first_touch(&mut self, tid: usize, v: &Visit, cpu_node: usize, share: f64) -> Option<f64> {
        let t = &mut self.threads[tid];
        let proc = &mut self.procs[t.pid];
        let region = &mut proc.regions[v.region as usize];
        if region.node[v.first as usize] != NONE && region.node[v.unit as usize] != NONE {
            return Some(0.0);
        }
        // A first read of anonymous memory maps the shared zero page: nothing allocated, no DRAM
        // traffic. A file page is read into the page cache, with its read-around window.
        let (lo, hi) = pages::fault_window(region, v.first, v.units);
        // Page-cache pages follow the task's policy, not the mapping's (mm/filemap.c:
        // filemap_alloc_folio allocates without the VMA).
        let vma_policy = region.readaround == 0;
        // A read fault on shared memory allocates its page (mm/shmem.c: shmem_fault).
        if !v.write && region.readaround == 0 && !region.shared {
            t.visits += 1;
            let c = v.lines * t.compute_per_line_s / share;
            t.clock += c;
            t.busy_s += c;
            return None;
        }
        let (pid, now) = (t.pid, t.clock);
        let bp = region.base_pages();
        let mut extra = 0.0;
        // The latency-balanced policy stands in for the default policy of a process that chose
        // none, as MPOL_PREFERRED on the node it picks (crate::latbal).
        let implicit = region.policy.is_none() && proc.task_policy.mode == numalab_model::PolicyMode::Default;
        let latbal_policy = match self.latbal.as_mut() {
            Some(lb) if implicit => {
                let os: Vec<u32> = self.m.nodes.iter().map(|n| n.os_index).collect();
                let node = lb.node_for(pid, cpu_node, now, &self.alloc, &os);
                Some(crate::latbal::preferred(node, os.len()))
            }
            _ => None,
        };
        let mut from = lo;
        // Direct reclaim (demotion) may free room for an allocation that found none; it needs
        // every process's pages, so the walk restarts from the entry that failed.
        loop {
            let proc = &mut self.procs[pid];
            let region = &mut proc.regions[v.region as usize];
            let own = region.policy.as_ref().filter(|_| vma_policy);
            let policy = latbal_policy.as_ref().or(own).unwrap_or(&proc.task_policy);
            let mut failed = None;
            for u in from..hi.min(region.units()) {
                if region.node[u as usize] != NONE {
                    continue;
                }
                let placed = if bp > 1 {
                    // A 2 MiB entry: the THP fault rules (crate::khugepaged) give a huge page or
                    // 512 base pages, whose faults cost more than one huge page's.
                    let at = (u, region.units(), region.ilx(u));
                    match self.thp.fault(&mut self.alloc, policy, (pid, v.region as usize), at, cpu_node, now) {
                        Some(crate::khugepaged::Fault::Huge(n)) => Some(n),
                        Some(crate::khugepaged::Fault::Fallback(n)) => {
                            extra += (bp as f64 * self.cfg.costs.fault_4k_ns - self.cfg.costs.fault_2m_ns) * 1e-9;
                            Some(n)
                        }
                        None => None,
                    }
                } else {
                    policy.allocate(&mut self.alloc, region.ilx(u), cpu_node, bp)
                };
                match placed {
                    Some(node) => {
                        region.node[u as usize] = node as u8;
                        self.pages_node[node] += bp;
                        if let Some(nb) = self.numab.as_mut() {
                            nb.on_alloc(pid, bp);
                        }
                    }
                    None => {
                        failed = Some(u);
                        break;
                    }
                }
                extra += if bp > 1 { self.cfg.costs.fault_2m_ns } else { self.cfg.costs.fault_4k_ns } * 1e-9;
            }
            let Some(u) = failed else {
                self.mirror(pid, v.region as usize, lo, hi);
                return Some(extra);
            };
            let ilx = region.ilx(u);
            let policy = policy.clone();
            if let Some(t) = self.tiering.as_mut() {
                let mut space: crate::tiering::demote::Space =
                    self.procs.iter_mut().map(|p| p.regions.as_mut_slice()).collect();
                let (freed, time_s) =
                    t.direct_reclaim(&mut self.alloc, &mut space, &mut self.pages_node, &policy, ilx, cpu_node, bp);
                if freed > 0 {
                    extra += time_s;
                    from = u;
                    continue;
                }
            }
            let region = &self.procs[pid].regions[v.region as usize];
            self.oom = Some(oom_message(self.m, &self.alloc, &policy, region, ilx, cpu_node));
            return None;
        }
    }

    /// NUMA hinting faults on the marked pages a visit touches, each handled in the touching
    /// thread; returns their time. Migration copies load memory and links like accesses do;
    /// threads moved by NUMA placement are charged their move.
    pub(super) fn hint_faults(&mut self, tid: usize, v: &Visit, cpu_node: usize) -> f64 {
        let Some(nb) = self.numab.as_mut() else { return 0.0 };
        let pid = self.threads[tid].pid;
        let proc = &mut self.procs[pid];
        let r = v.region as usize;
        let end = (v.first + v.units).min(proc.regions[r].units());
        if !pages::any_marked(proc.regions[r].marked_or_none(), v.first, end - v.first) {
            return 0.0;
        }
        let start = self.threads[tid].clock;
        let mut view = MmView { regions: &mut proc.regions, task_policy: &proc.task_policy };
        let mut world = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        let mut extra = 0.0;
        let mut moved_any = false;
        for u in v.first..end {
            if !view.regions[r].is_marked(u) {
                continue;
            }
            let out = nb.hint_fault(&mut world, &mut view, tid, r, u, start + extra);
            extra += out.time_s;
            if let Some((from, to, lines)) = out.copy {
                let t = &mut self.threads[tid];
                t.mix_rd[from] += lines;
                t.mix_wr[to] += lines;
                charge_copy(self.m, &mut self.budget_node, &mut self.budget_link, cpu_node, from, to, lines);
            }
            for moved in nb.moved.drain(..) {
                moved_any = true;
                let move_s = self.cfg.costs.task_move_ns * 1e-9;
                self.threads[moved].migrations += 1;
                if moved == tid {
                    extra += move_s;
                } else {
                    self.threads[moved].clock += move_s;
                }
            }
        }
        // Only a segment other processes map has entries to mirror: the call is skipped for the
        // rest (most regions; a hinting fault is a general-path visit of its own).
        if !self.procs[pid].regions[r].mappers.is_empty() {
            self.mirror(pid, r, v.first, end);
        }
        if moved_any {
            // NUMA balancing moved threads in the middle of the epoch: each runs on its new CPU
            // from now on, in its turn there (`turns.rs`), not idle until the next epoch.
            self.refresh_members();
        }
        extra
    }

    /// The node of an already placed page of a visit (the budget check needs it up front).
    pub(super) fn placed_node(&self, tid: usize, v: &Visit) -> Option<usize> {
        let r = &self.procs[self.threads[tid].pid].regions[v.region as usize];
        match r.node[v.unit as usize] {
            NONE => None,
            x => Some(x as usize),
        }
    }
}

/// A run of samples just taken: what charging its lines to the nodes it reached needs.
struct Run {
    /// Lines per sample.
    per: f64,
    rd_share: f64,
    /// Compute seconds per line at the thread's share of its CPU.
    kappa: f64,
    take_rd: bool,
    take_wr: bool,
}

impl Run {
    /// Takes each reached node's lines from its budget and, through `take_links` (given the
    /// node's hops and its read and written lines), from the links on the way; adds them to the
    /// thread's mix. Returns the run's time and the nodes it reached. Every node's state is
    /// walked in step (no index checks per node), in node order, so every sum adds its terms in
    /// the same order whichever hops are given.
    #[inline(always)]
    fn charge<H>(
        &self,
        slots: &[[u32; 2]],
        hops: &[H],
        budget_node: &mut [f64],
        cost: &[f64],
        (mix_rd, mix_wr): (&mut [f64], &mut [f64]),
        mut take_links: impl FnMut(&H, f64, f64),
    ) -> (f64, usize) {
        let (mut c, mut reached) = (0.0, 0);
        let per_node = slots.iter().zip(hops).zip(budget_node.iter_mut()).zip(cost);
        for ((((s, h), b), &cn), (mr, mw)) in per_node.zip(mix_rd.iter_mut().zip(mix_wr.iter_mut())) {
            if s[0] == 0 {
                continue;
            }
            reached += 1;
            let lines = s[0] as f64 * self.per;
            let (rd, wr) = (lines * self.rd_share, lines * (1.0 - self.rd_share));
            *b -= lines;
            take_links(h, rd, wr);
            c += lines * (self.kappa + cn);
            // Likewise the mix: adding +0 leaves a sum of non-negative terms that starts at
            // +0 unchanged (it is never -0).
            if self.take_rd {
                *mr += rd;
            }
            if self.take_wr {
                *mw += wr;
            }
        }
        (c, reached)
    }
}

/// The most samples a run may take on a node it reaches first, `None` if it may take none:
/// what is left of the node's budget and of every link budget on the way (`hops`), in samples
/// of `per_sample` lines, or no limit (`u32::MAX`) when that is at least `enough`, a whole run's
/// worth. A run takes at most that many samples, so a larger cap stops nothing, and the margin
/// in `enough` covers the rounding of the product, so the quotient would be at least as large.
/// Budgets do not change while a run grows, so this is the cap the node would have had up front.
#[inline(never)]
fn node_cap(node_budget: f64, hops: &[u32], links: &[f64], per_sample: f64, enough: f64) -> Option<u32> {
    cap_of(node_budget, hops, links, per_sample, enough)
}

/// `node_cap`, inlined where every node's cap is worked out in one loop.
#[inline(always)]
fn cap_of(node_budget: f64, hops: &[u32], links: &[f64], per_sample: f64, enough: f64) -> Option<u32> {
    let mut rem = node_budget;
    // A plain comparison rather than `f64::min`: budgets are never NaN (bandwidths times a
    // round's length), so the minimum is the same without `min`'s NaN handling.
    for &l in hops {
        let x = links[l as usize];
        if x < rem {
            rem = x;
        }
    }
    cap_of_rem(rem, per_sample, enough)
}

/// The least of a node's budget and its four (padded) link budgets, as `cap_of` takes it. Which
/// of two equal budgets is kept (+0 or -0) makes no difference: `cap_of_rem` only tests a
/// minimum at or below 0 as such.
#[inline(always)]
fn least_of(node_budget: f64, links: [f64; 4]) -> f64 {
    let mut rem = node_budget;
    for x in links {
        rem = if x < rem { x } else { rem };
    }
    rem
}

/// `cap_of` once the node's budget and those of the links on the way come to `rem`.
#[inline(always)]
fn cap_of_rem(rem: f64, per_sample: f64, enough: f64) -> Option<u32> {
    if rem <= 0.0 {
        None
    } else if per_sample > 0.0 && rem < enough {
        Some(crate::ceil::ceil_u32(rem / per_sample))
    } else {
        Some(u32::MAX)
    }
}

/// The next visit of the access furthest behind, so a phase's accesses interleave in proportion.
/// The access furthest behind, so a phase's accesses interleave in proportion.
#[inline]
fn pick_sweep(t: &Thread) -> Option<usize> {
    if t.sweeps.len() == 1 {
        return (!t.sweeps[0].finished()).then_some(0);
    }
    let mut best: Option<usize> = None;
    for (i, s) in t.sweeps.iter().enumerate() {
        if !s.finished() && best.is_none_or(|b| s.progress() < t.sweeps[b].progress()) {
            best = Some(i);
        }
    }
    best
}

#[inline]
fn next_visit(t: &mut Thread, regions: &[Region]) -> Option<Visit> {
    let i = pick_sweep(t)?;
    let shift = regions[t.sweeps[i].region as usize].shift;
    t.sweeps[i].next(shift, &mut t.rng)
}

/// A page copy by a CPU of `cpu_node`: reads on `from`'s controller and the links back, writes
/// on `to`'s and the links there, taken from the slice budgets (which may go negative: the
/// copy happens regardless, later visits wait).
fn charge_copy(
    m: &Machine,
    budget_node: &mut [f64],
    budget_link: &mut [[f64; 2]],
    cpu_node: usize,
    from: usize,
    to: usize,
    lines: f64,
) {
    budget_node[from] -= lines;
    budget_node[to] -= lines;
    for h in &m.routes[from][cpu_node] {
        budget_link[h.link as usize][h.dir as usize] -= lines;
    }
    for h in &m.routes[cpu_node][to] {
        budget_link[h.link as usize][h.dir as usize] -= lines;
    }
}

/// What a user needs to see why a first write found no memory: the nodes the allocation could
/// use (in the order it tried them), the policy, the region and the page size it faulted in.
fn oom_message(m: &Machine, a: &Allocator, p: &Resolved, r: &Region, ilx: u64, cpu_node: usize) -> String {
    use numalab_model::PolicyMode;
    let os = |n: usize| m.nodes[n].os_index.to_string();
    let start = match p.mode {
        PolicyMode::Preferred => p.nodes[0],
        PolicyMode::Interleave | PolicyMode::WeightedInterleave => p.interleave_node(ilx),
        _ => cpu_node,
    };
    // Bind may only use its nodes; every other policy falls back along the start node's zonelist.
    let tried: Vec<usize> =
        a.zonelists[start].iter().copied().filter(|&n| p.mode != PolicyMode::Bind || p.mask[n]).collect();
    let nodes: Vec<String> = p.nodes.iter().map(|&n| os(n)).collect();
    let policy =
        if nodes.is_empty() { p.mode.name().to_string() } else { format!("{}:{}", p.mode.name(), nodes.join(",")) };
    let mib_of = |bytes: f64| {
        let v = bytes / (1 << 20) as f64;
        if v < 10.0 {
            format!("{v:.1} MiB")
        } else {
            format!("{v:.0} MiB")
        }
    };
    let mib = |pages: u64| mib_of(pages as f64 * 4096.0);
    let page = if r.shift == 21 { "2 MiB" } else { "4 KiB" };
    let on = match tried.len() {
        0 => "on no node (the policy's nodes have no memory)".to_string(),
        1 => format!("on node {}", os(tried[0])),
        _ => format!("on nodes {}", tried.iter().map(|&n| os(n)).collect::<Vec<_>>().join(",")),
    };
    let free: Vec<String> =
        tried.iter().map(|&n| format!("node {} has {} free of {}", os(n), mib(a.free[n]), mib(a.managed[n]))).collect();
    let size = mib_of(r.bytes as f64);
    let mut msg = format!("out of memory {on} under {policy}: region '{}' ({size}, {page} pages)", r.name);
    if !free.is_empty() {
        msg += &format!("; {}", free.join(", "));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contention::tests::square;
    use crate::input::{AccessSpec, Pattern, PhaseSpec, Places, ProcBind, RegionSpec, StepSpec};
    use numalab_model::{MemPolicy, NodeSet, PolicyMode};

    /// 16 threads writing a 64 MiB array, then reading and writing it (3 reads to 1 write) four
    /// times: memory-bound, so the links run out of budget within rounds.
    fn sweeps() -> WorkloadSpec {
        let bytes = 64u64 << 20;
        let access = |rd, wr| AccessSpec::sweep(0, Pattern::Block, rd, wr);
        let phase = |name: &str, rd, wr| PhaseSpec {
            name: name.into(),
            cycles: (bytes / 64) as f64,
            mlp: None,
            chain: 0.0,
            sync: Sync::Barrier,
            pipeline_steps: 1,
            accesses: vec![access(rd, wr)],
        };
        WorkloadSpec {
            name: "sweeps".into(),
            description: String::new(),
            params: Default::default(),
            processes: 1,
            threads: 16,
            regions: vec![RegionSpec::anonymous("a", bytes, bytes / 8)],
            phases: vec![phase("init", 0.0, 1.0), phase("sweep", 0.75, 0.25)],
            instructions: Vec::new(),
            program: vec![
                StepSpec { phases: vec![0], repeat: 1, timed: false },
                StepSpec { phases: vec![1], repeat: 4, timed: false },
            ],
        }
    }

    #[test]
    fn padded_hops_serve_interleaved_runs_as_the_route_loops_do() {
        // Runs over interleaved pages reach every node: their caps and charges go through the
        // padded hops (`Scratch::hops22`) where the machine has them, else through the loops
        // over each route. Both must give the same run, bit for bit, budget waits included.
        let m = square();
        let w = sweeps();
        let all = NodeSet::from_indexes(0..4);
        let p = Placement {
            policy: MemPolicy::new(PolicyMode::Interleave, all).unwrap(),
            cpus: None,
            proc_bind: ProcBind::Spread,
            places: Places::Cores,
        };
        let cfg = SimConfig::default();
        let padded = Engine::new(&m, &w, &p, &cfg).unwrap();
        assert!(!padded.scratch.hops22.is_empty(), "the square's routes fit the padded hops");
        let mut looped = Engine::new(&m, &w, &p, &cfg).unwrap();
        looped.scratch.hops22.clear();
        let (a, b) = (padded.run(), looped.run());
        assert!(a.engine.bandwidth_waits > 0, "the case must run out of link budget within rounds");
        assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }
}
