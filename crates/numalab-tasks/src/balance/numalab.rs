//! numalab's NUMA-aware hierarchical balancer: balance node loads, then PE loads, keep
//! communicating objects on one node, and move an object only when what the move is expected to
//! gain over the next balancing period pays for the migration.
//!
//! It refines the current mapping, as RefineLB (Refiner.C) does, rather than rebuilding it as
//! GreedyLB does; it weighs messages by node distance, as NucoLB does (NUMA factor x messages,
//! Pilla et al., ICPP 2012), but with bytes and copy rates of the machine; and it prices every
//! move with the migration model (fixed overhead + state bytes at the node-pair copy rate), as
//! HwTopoLB prices communication, so that a move happens only when
//! `gain_per_iteration x lb_period > gain_margin x migration_time`.
//!
//! - **Target.** T = max(`numalab_tolerance` x average PE load, greedy's makespan): no PE needs to go
//!   below what LPT reaches, and a PE within the tolerance is left alone.
//! - **Phase 1, nodes.** While a node's load exceeds the tolerance x its fair share (its PEs x the
//!   average), move an object from its most loaded PE to the least loaded PE of a node below its
//!   share: among objects that fit the excess and the deficit, the one with the best net benefit
//!   (load relief of the node, per PE, + the change in its messaging cost, x `lb_period`, minus
//!   the migration time), so near nodes and objects whose partners live there win.
//! - **Phase 2, PEs within each node.** While the node's most loaded PE is above T, move its
//!   largest object that fits under T onto the node's least loaded PE, or swap an object with a
//!   smaller one there; moves inside a node are the cheapest (local copy, messages stay in the
//!   node).
//! - **Phase 3, what is left.** A PE still above T gives to the least loaded PE of the nearest
//!   node (by SLIT distance) that can take one of its objects (a move or a swap). If a PE is
//!   still above T (its objects are too coarse for the room left), GreedyRefine's repair runs
//!   with M = T: heaviest first, an object stays if its PE's load so far plus the object fits
//!   under M, else it goes to the least loaded PE (nearest node first among equals) if that pays.
//! - **Phase 4, locality** (`numalab_locality = true`). An object whose bytes go mostly to another node
//!   moves to that node's least loaded PE if it fits under T and the messaging time saved over
//!   the period pays for the move.
//!
//! - **Last check, whole machine.** The iteration time predicted for the new mapping (compute
//!   loads, messages from the new PEs, link sharing: the simulator's own cost model) must beat the
//!   current one by more than the migration step costs, over `lb_period` iterations; otherwise the
//!   current mapping is kept. Pairwise gains miss what a move does to its partners' PEs.
//!
//! Gains: load relief = the drop of max(load(p), load(q)) for the pair (phase 2-3), the drop of
//! the node's load per PE (phase 1); messaging = sum over the object's partners of the
//! per-iteration cost of its messages from its PE to theirs ([`Platform::message_ns`]).
//!
//! - Complexity: O(n log n) for the target, O(moves x objects per PE x degree) for the phases
//!   (degree = partners of an object), O(n P) for the repair, O(E) for locality and the check; well under a second for 10,000 objects
//!   on 64 PEs.
//! - Migrations: only objects that leave overloaded PEs or nodes, plus locality moves that pay.
//! - Parameters: `numalab_tolerance` (1.02), `numalab_gain_margin` (1.0: how many times its
//!   migration time a move must gain), `numalab_locality` (true).

use super::greedy::greedy_assign;
use super::{Balancer, LbInput};
use crate::cost::{evaluate, migration_step, Eval};
use crate::error::TaskError;
use crate::gen::Params;
use crate::platform::Platform;

pub struct NumaLb {
    pub tolerance: f64,
    pub gain_margin: f64,
    pub locality: bool,
}

impl NumaLb {
    pub fn read(p: &mut Params<'_>) -> Result<Self, TaskError> {
        Ok(NumaLb {
            tolerance: p.f64("numalab_tolerance", 1.02, 1.0)?,
            gain_margin: p.f64("numalab_gain_margin", 1.0, 0.0)?,
            locality: p.bool("numalab_locality", true)?,
        })
    }
}

/// The balancer's working state: the mapping being built and the loads it implies.
struct State<'a> {
    input: &'a LbInput<'a>,
    plat: &'a Platform,
    to: Vec<u32>,
    /// Position of each object in its PE's list.
    pos: Vec<usize>,
    objs: Vec<Vec<u32>>,
    load: Vec<f64>,
    node_load: Vec<f64>,
    node_pes: Vec<Vec<usize>>,
    period: f64,
    margin: f64,
}

impl<'a> State<'a> {
    fn new(input: &'a LbInput<'a>, margin: f64) -> Self {
        let np = input.n_pes();
        let plat = input.platform;
        let mut objs = vec![Vec::new(); np];
        let mut pos = vec![0; input.mapping.len()];
        let mut load = vec![0.0; np];
        for (i, &p) in input.mapping.iter().enumerate() {
            pos[i] = objs[p as usize].len();
            objs[p as usize].push(i as u32);
            load[p as usize] += input.loads_ns[i];
        }
        let mut node_pes = vec![Vec::new(); plat.n_nodes];
        let mut node_load = vec![0.0; plat.n_nodes];
        for p in 0..np {
            node_pes[input.pe_nodes()[p]].push(p);
            node_load[input.pe_nodes()[p]] += load[p];
        }
        State {
            input,
            plat,
            to: input.mapping.to_vec(),
            pos,
            objs,
            load,
            node_load,
            node_pes,
            period: input.lb_period.max(1) as f64,
            margin,
        }
    }

    fn w(&self, i: u32) -> f64 {
        self.input.loads_ns[i as usize]
    }

    fn node(&self, p: usize) -> usize {
        self.input.pe_nodes()[p]
    }

    /// Messaging time per iteration of object `i` if it were on PE `x` (partners where they are now).
    fn comm_at(&self, i: u32, x: usize) -> f64 {
        self.input
            .adj
            .of(i as usize)
            .iter()
            .map(|&(j, m, b)| {
                let (s, r) = self.plat.message_ns(x, self.to[j as usize] as usize, m, b);
                s + r
            })
            .sum()
    }

    fn mig(&self, i: u32, p: usize, q: usize) -> f64 {
        self.plat.migration_total_ns(p, q, self.input.state_bytes[i as usize] as f64)
    }

    /// Net benefit over the period of moving `i` from `p` to `q` with load relief `relief` per
    /// iteration: positive when the move pays for itself.
    fn benefit(&self, i: u32, p: usize, q: usize, relief: f64) -> f64 {
        let gain = relief + self.comm_at(i, p) - self.comm_at(i, q);
        gain * self.period - self.margin * self.mig(i, p, q)
    }

    fn apply(&mut self, i: u32, q: usize) {
        let p = self.to[i as usize] as usize;
        let k = self.pos[i as usize];
        self.objs[p].swap_remove(k);
        if let Some(&moved) = self.objs[p].get(k) {
            self.pos[moved as usize] = k;
        }
        self.pos[i as usize] = self.objs[q].len();
        self.objs[q].push(i);
        let w = self.w(i);
        self.load[p] -= w;
        self.load[q] += w;
        let (np_, nq) = (self.node(p), self.node(q));
        self.node_load[np_] -= w;
        self.node_load[nq] += w;
        self.to[i as usize] = q as u32;
    }

    fn argmax_load(&self, pes: impl Iterator<Item = usize>) -> Option<usize> {
        pes.max_by(|&a, &b| self.load[a].total_cmp(&self.load[b]).then(b.cmp(&a)))
    }

    fn argmin_load(&self, pes: impl Iterator<Item = usize>) -> Option<usize> {
        pes.min_by(|&a, &b| self.load[a].total_cmp(&self.load[b]).then(a.cmp(&b)))
    }

    /// The best single move or swap from `p` to `q` keeping `q` under `t`: applies it and returns
    /// true when one pays for itself.
    fn relieve(&mut self, p: usize, q: usize, t: f64) -> bool {
        let (lp, lq) = (self.load[p], self.load[q]);
        let before = lp.max(lq);
        // Largest movable object that fits under t and lowers the pair's maximum.
        let mut best: Option<(f64, u32)> = None;
        for &i in &self.objs[p] {
            let w = self.w(i);
            if self.input.migratable[i as usize] && lq + w <= t && w < lp - lq && best.is_none_or(|b| w > b.0) {
                best = Some((w, i));
            }
        }
        if let Some((w, i)) = best {
            let relief = before - (lp - w).max(lq + w);
            if self.benefit(i, p, q, relief) > 0.0 {
                self.apply(i, q);
                return true;
            }
        }
        // A swap: i on p for a lighter j on q, the difference d fitting under t.
        let room = (t - lq).min(lp - lq);
        if room <= 0.0 {
            return false;
        }
        let mut qs: Vec<(f64, u32)> =
            self.objs[q].iter().filter(|&&j| self.input.migratable[j as usize]).map(|&j| (self.w(j), j)).collect();
        qs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut swap: Option<(f64, u32, u32)> = None;
        for &i in self.objs[p].iter().filter(|&&i| self.input.migratable[i as usize]) {
            let wi = self.w(i);
            // Lightest j with wi - wj <= room, i.e. wj >= wi - room: the largest d that fits.
            let k = qs.partition_point(|&(wj, _)| wj < wi - room);
            if let Some(&(wj, j)) = qs.get(k) {
                let d = wi - wj;
                if d > 0.0 && swap.is_none_or(|s| d > s.0) {
                    swap = Some((d, i, j));
                }
            }
        }
        if let Some((d, i, j)) = swap {
            let relief = before - (lp - d).max(lq + d);
            let gain = relief + self.comm_at(i, p) - self.comm_at(i, q) + self.comm_at(j, q) - self.comm_at(j, p);
            if gain * self.period > self.margin * (self.mig(i, p, q) + self.mig(j, q, p)) {
                self.apply(i, q);
                self.apply(j, p);
                return true;
            }
        }
        false
    }
}

impl Balancer for NumaLb {
    fn name(&self) -> String {
        "numalab".into()
    }

    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        let np = input.n_pes();
        let n = input.mapping.len();
        let total: f64 = input.loads_ns.iter().sum();
        let avg = total / np as f64;
        if avg <= 0.0 {
            return Ok(input.mapping.to_vec());
        }
        let greedy_max = greedy_assign(input).1.into_iter().fold(0.0, f64::max);
        let t = (self.tolerance * avg).max(greedy_max);
        let mut s = State::new(input, self.gain_margin);
        let nodes: Vec<usize> = (0..s.node_pes.len()).filter(|&k| !s.node_pes[k].is_empty()).collect();
        let share = |s: &State<'_>, k: usize| s.node_pes[k].len() as f64 * avg;

        // Phase 1: node loads.
        let mut stuck = vec![false; s.node_pes.len()];
        for _ in 0..n {
            let over =
                nodes.iter().copied().filter(|&k| !stuck[k] && s.node_load[k] > self.tolerance * share(&s, k)).max_by(
                    |&a, &b| {
                        (s.node_load[a] - share(&s, a)).total_cmp(&(s.node_load[b] - share(&s, b))).then(b.cmp(&a))
                    },
                );
            let Some(k) = over else { break };
            let p = s.argmax_load(s.node_pes[k].iter().copied()).expect("node with PEs");
            let excess = s.node_load[k] - share(&s, k);
            let mut best: Option<(f64, u32, usize)> = None;
            for &m in nodes.iter().filter(|&&m| s.node_load[m] < share(&s, m)) {
                let q = s.argmin_load(s.node_pes[m].iter().copied()).expect("node with PEs");
                let deficit = share(&s, m) - s.node_load[m];
                let fit = excess.min(deficit);
                for &i in &s.objs[p] {
                    let w = s.w(i);
                    // No overshoot past the balance point of the two nodes (2x: |imbalance| still drops).
                    if !input.migratable[i as usize] || w >= 2.0 * fit || s.load[q] + w > t {
                        continue;
                    }
                    let relief = w.min(fit) / s.node_pes[k].len() as f64;
                    let b = s.benefit(i, p, q, relief);
                    if b > 0.0 && best.is_none_or(|x| b > x.0) {
                        best = Some((b, i, q));
                    }
                }
            }
            match best {
                Some((_, i, q)) => s.apply(i, q),
                None => stuck[k] = true,
            }
        }

        // Phase 2: PE loads inside each node.
        for &k in &nodes {
            let pes = s.node_pes[k].clone();
            for _ in 0..n {
                let p = s.argmax_load(pes.iter().copied()).expect("node with PEs");
                if s.load[p] <= t {
                    break;
                }
                let Some(q) = s.argmin_load(pes.iter().copied().filter(|&q| q != p)) else { break };
                if !s.relieve(p, q, t) {
                    break;
                }
            }
        }

        // Phase 3: PEs still above T give to the nearest node that can take something.
        let mut done = vec![false; np];
        for _ in 0..n {
            let Some(p) = s.argmax_load((0..np).filter(|&p| !done[p])) else { break };
            if s.load[p] <= t {
                break;
            }
            let np_node = s.node(p);
            let mut cands: Vec<(u32, usize, usize)> = nodes
                .iter()
                .filter_map(|&m| {
                    let q = s.argmin_load(s.node_pes[m].iter().copied().filter(|&q| q != p))?;
                    let d = input.distances().get(np_node).and_then(|r| r.get(m)).copied().unwrap_or(10);
                    Some((d, m, q))
                })
                .collect();
            cands.sort_by(|a, b| a.0.cmp(&b.0).then(s.load[a.2].total_cmp(&s.load[b.2])).then(a.1.cmp(&b.1)));
            if !cands.into_iter().any(|(_, _, q)| s.relieve(p, q, t)) {
                done[p] = true;
            }
        }

        // Phase 3b: PEs that no single move or swap relieves (objects too coarse for the room
        // left under T) are repaired as GreedyRefine (greedy.h) repairs: heaviest object first,
        // stay where it is if that PE's load so far plus the object fits under M (= T, raised to
        // any new maximum), else go to the least loaded PE, nearest node first among equals, when
        // that pays for the migration.
        if (0..np).any(|p| s.load[p] > t) {
            let mut built = vec![0.0; np];
            for (i, &p) in s.to.iter().enumerate() {
                if !input.migratable[i] {
                    built[p as usize] += input.loads_ns[i];
                }
            }
            let mut order: Vec<u32> = (0..n as u32).filter(|&i| input.migratable[i as usize]).collect();
            order.sort_by(|&a, &b| s.w(b).total_cmp(&s.w(a)).then(a.cmp(&b)));
            let mut m = t;
            let mut moves = Vec::new();
            for i in order {
                let (w, home) = (s.w(i), s.to[i as usize] as usize);
                let mut dest = home;
                if built[home] + w > m {
                    let hn = s.node(home);
                    let dist =
                        |x: usize| input.distances().get(hn).and_then(|r| r.get(s.node(x))).copied().unwrap_or(10);
                    let q = (0..np)
                        .min_by(|&a, &b| built[a].total_cmp(&built[b]).then(dist(a).cmp(&dist(b))).then(a.cmp(&b)))
                        .expect("at least one PE");
                    let relief = built[home] + w - built[home].max(built[q] + w);
                    if q != home && relief > 0.0 && s.benefit(i, home, q, relief) > 0.0 {
                        dest = q;
                        moves.push((i, q));
                    }
                }
                built[dest] += w;
                m = m.max(built[dest]);
            }
            for (i, q) in moves {
                s.apply(i, q);
            }
        }

        // Phase 4: locality moves that pay for themselves.
        if self.locality && s.plat.n_nodes > 1 {
            for i in 0..n as u32 {
                if !input.migratable[i as usize] {
                    continue;
                }
                let p = s.to[i as usize] as usize;
                let mut by_node = vec![0.0f64; s.plat.n_nodes];
                for &(j, _, b) in input.adj.of(i as usize) {
                    by_node[s.node(s.to[j as usize] as usize)] += b;
                }
                let here = s.node(p);
                let Some(best) = (0..by_node.len()).max_by(|&a, &b| by_node[a].total_cmp(&by_node[b]).then(b.cmp(&a)))
                else {
                    continue;
                };
                if best == here || by_node[best] <= by_node[here] {
                    continue;
                }
                let Some(q) = s.argmin_load(s.node_pes[best].iter().copied()) else { continue };
                if s.load[q] + s.w(i) > t {
                    continue;
                }
                if s.benefit(i, p, q, 0.0) > 0.0 {
                    s.apply(i, q);
                }
            }
        }
        // Last check (module doc). Measured loads include the objects' messaging under the
        // current mapping; taking it out leaves their compute loads.
        let new = s.to;
        if new.as_slice() == input.mapping {
            return Ok(new);
        }
        let now = evaluate(input.edges, input.loads_ns, input.mapping, input.platform);
        let compute: Vec<f64> =
            input.loads_ns.iter().zip(&now.obj_measured).map(|(&l, &m)| (2.0 * l - m).max(0.0)).collect();
        let before = evaluate(input.edges, &compute, input.mapping, input.platform);
        let after = evaluate(input.edges, &compute, &new, input.platform);
        let max = |e: &Eval| e.pe_time.iter().copied().fold(0.0, f64::max);
        let (_, _, step) = migration_step(input.mapping, &new, input.state_bytes, input.platform);
        if (max(&before) - max(&after)) * period(input) > self.gain_margin * step {
            Ok(new)
        } else {
            Ok(input.mapping.to_vec())
        }
    }
}

fn period(input: &LbInput<'_>) -> f64 {
    input.lb_period.max(1) as f64
}
