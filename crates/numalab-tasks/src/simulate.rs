//! Bulk-synchronous iterations of a task graph on a machine's PEs, with load balancing every
//! `lb_period` iterations (the AtSync pattern of lb_test, kNeighbor and jacobi2D).
//!
//! One iteration: a PE's time = the loads of its objects + the messaging of their messages
//! ([`Platform::message_ns`]: the sender pays its side, the receiver its side; same PE is free),
//! where remote traffic cannot drain faster than the links it crosses allow: a PE receiving
//! across a link spends at least (all bytes crossing that link direction) / (its bandwidth) on
//! remote messaging. The iteration's time is the maximum over PEs. Each object's true time is
//! its compute load plus its own messaging sides; what the balancer sees is that time as the LB
//! database's timers record it ([`crate::measure`]: timer resolution, background work on the
//! PE, wall or CPU timer), summed over the period since the last balancing step and handed over
//! per iteration (the period's mean).
//!
//! A balancing step after iteration k (k a multiple of `lb_period`, k < iterations) hands the
//! measured loads to the balancer and migrates what moved; it records the makespan the balancer
//! could predict (the largest PE sum of measured loads under its new mapping) and the actual one
//! (the next iteration's time on the true loads of this one under the new mapping): each migration costs its source PE
//! the packing side and its destination PE the unpacking side ([`Platform::migration_ns`]); PEs
//! migrate in parallel, so the step takes the busiest PE's total. The step also waits for the
//! `AtSync` barrier ([`crate::atsync`]: a reduction up the PE tree, resumption down it), for
//! every PE's statistics to reach the central balancer on PE 0, for the strategy's modelled run
//! there ([`crate::strategy_time`]), for the decision's broadcast and barrier, and for each PE
//! to resume its objects ([`crate::lbstep`]). Objects that may not move stay.
//!
//! Objects start on the graph's own PEs when it has them (an LB dump's `from_proc`, taken modulo
//! the run's PE count) or on Charm++'s default block map ([`block_map`]).
//!
//! Determinism: everything but `balancer_wall_s` (the balancer's own wall-clock time) follows
//! from the inputs and the seed, bit for bit. The seed drives `load_noise` (a relative, uniform
//! per-object, per-iteration perturbation of the true loads; 0 by default) and the measurement
//! noise (`noise`, off by default), each from a stream of its own.

use std::time::Instant;

use serde::Serialize;

use crate::atsync::{barrier_ns, stats_gather_ns};
use crate::balance::{pe_loads, Balancer, LbInput};
use crate::cost::{evaluate, migration_step, Eval};
use crate::error::TaskError;
use crate::graph::{Adjacency, TaskGraph};
use crate::lbstep::{decision_ns, resume_ns};
use crate::measure::{LbTimer, Meter, NoiseParams};
use crate::platform::Platform;
use crate::rng::Rng;
use crate::strategy_time::strategy_ns;

/// Most iterations a run keeps a record of.
pub const MAX_ITERATIONS: usize = 1_000_000;

/// Most work a run may ask for, in object and edge visits (iterations x (objects + edges)):
/// about ten seconds of this engine on one core, so a hostile request ends at once.
pub const MAX_VISITS: u64 = 200_000_000;

#[derive(Clone, Debug)]
pub struct SimOptions {
    pub iterations: usize,
    /// Iterations between balancing steps (0 = never).
    pub lb_period: usize,
    pub seed: u64,
    /// Relative per-iteration load noise (0 = loads as given).
    pub load_noise: f64,
    /// Noise of the LB database's measurements (`scale` 0: the true loads).
    pub noise: NoiseParams,
    /// The timer the database reads.
    pub timer: LbTimer,
}

impl SimOptions {
    /// No noise of any kind, the wall timer.
    pub fn quiet(iterations: usize, lb_period: usize, seed: u64) -> Self {
        SimOptions { iterations, lb_period, seed, load_noise: 0.0, noise: NoiseParams::default(), timer: LbTimer::Wall }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct IterationRecord {
    pub time_ns: f64,
    pub max_pe_load_ns: f64,
    pub avg_pe_load_ns: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LbCall {
    /// Iterations completed before this step.
    pub iteration: usize,
    pub migrations: usize,
    pub migrated_pct: f64,
    pub migrated_bytes: u64,
    pub migration_time_ns: f64,
    pub balancer_wall_s: f64,
    /// The AtSync barrier's reduction and broadcast and the program's own around it
    /// (`TaskGraph::app_barriers`), ns (in `total_time_ns`).
    pub atsync_ns: f64,
    /// Every PE's statistics sent to the central balancer on PE 0, ns (in `total_time_ns`).
    pub stats_ns: f64,
    /// The strategy's modelled run on PE 0 (every PE waits for it), ns.
    pub strategy_ns: f64,
    /// The decision's broadcast to every PE and the barrier before objects move, ns.
    pub decision_ns: f64,
    /// Every PE resuming its objects (`ResumeFromSync`), ns.
    pub resume_ns: f64,
    /// The whole step: barrier, statistics, strategy, decision, migrations and resumption, ns.
    pub step_ns: f64,
    /// The largest PE sum of the measured loads under the new mapping: what the balancer saw.
    pub predicted_makespan_ns: f64,
    /// The iteration's time on the true loads under the new mapping.
    pub actual_makespan_ns: f64,
}

/// Messages or bytes per distance class, summed over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Classes {
    pub same_pe: f64,
    pub same_node: f64,
    pub remote: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    pub balancer: String,
    /// Mean iteration time (iterations only; migrations are in `total_time_ns`).
    pub iteration_time_ns: f64,
    /// All iterations plus every balancing step (`LbCall::step_ns`).
    pub total_time_ns: f64,
    pub iterations: Vec<IterationRecord>,
    /// Average over maximum PE load, mean over the iterations after the first balancing step (all
    /// iterations when there is none).
    pub efficiency: f64,
    pub lb_calls: Vec<LbCall>,
    pub comm_bytes: Classes,
    pub comm_msgs: Classes,
    pub mapping_initial: Vec<u32>,
    pub mapping_final: Vec<u32>,
    pub n_pes: usize,
}

/// Charm++'s default block map of a 1-D chare array (src/ck-core/cklocation.C,
/// `DefaultArrayMap::procNum`): the first n mod P PEs get one object more than the rest.
pub fn block_map(n: usize, n_pes: usize) -> Vec<u32> {
    let floor = n / n_pes;
    let first = n % n_pes; // PEs holding floor + 1
    (0..n)
        .map(
            |i| {
                if i < first * (floor + 1) {
                    i / (floor + 1)
                } else {
                    first + (i - first * (floor + 1)) / floor.max(1)
                }
            },
        )
        .map(|p| p.min(n_pes - 1) as u32)
        .collect()
}

/// Run `opts.iterations` iterations of `g` on `plat` balanced by `lb`.
pub fn simulate(
    g: &TaskGraph,
    plat: &Platform,
    lb: &mut dyn Balancer,
    opts: &SimOptions,
) -> Result<SimResult, TaskError> {
    g.check()?;
    if !(1..=MAX_ITERATIONS).contains(&opts.iterations) {
        return Err(TaskError::param(format!("iterations = {} (accepted: 1 to {MAX_ITERATIONS})", opts.iterations)));
    }
    let visits = opts.iterations as u64 * (g.n_objects() + g.edges.len()) as u64;
    if visits > MAX_VISITS {
        return Err(TaskError::param(format!(
            "iterations x (objects + edges) = {visits} (accepted: at most {MAX_VISITS}; fewer iterations or a smaller graph)"
        )));
    }
    if !(0.0..1.0).contains(&opts.load_noise) {
        return Err(TaskError::param(format!("load_noise = {} (accepted: 0 <= load_noise < 1)", opts.load_noise)));
    }
    let n = g.n_objects();
    let np = plat.n_pes();
    let initial: Vec<u32> = match &g.initial_pe {
        Some(v) => v.iter().map(|&p| p % np as u32).collect(),
        None => block_map(n, np),
    };
    let migratable = g.migratable.clone().unwrap_or_else(|| vec![true; n]);
    let adj = Adjacency::new(n, &g.edges);
    let mut map = initial.clone();
    let mut rng = Rng::new(opts.seed, 11);
    let mut loads = g.loads_ns.clone();
    let mut cached: Option<Eval> = None;
    // Entry methods per object and iteration: its own step plus one per message it receives.
    let mut entries = vec![1.0; n];
    for e in &g.edges {
        entries[e.b as usize] += e.msgs as f64;
    }
    let mut meter = Meter::new(opts.noise, opts.timer, opts.seed);
    meter.remap(&map, np);
    let mut period_sum = vec![0.0; n];
    let mut period_len = 0usize;
    let atsync = barrier_ns(plat) * f64::from(1 + g.app_barriers);
    let mut iters = Vec::with_capacity(opts.iterations);
    let mut calls = Vec::new();
    let (mut cb, mut cm) = ([0.0; 3], [0.0; 3]);
    let mut total = 0.0;
    let mut first_lb: Option<usize> = None;
    for it in 1..=opts.iterations {
        if opts.load_noise > 0.0 {
            for (l, &base) in loads.iter_mut().zip(&g.loads_ns) {
                *l = base * (1.0 + opts.load_noise * (2.0 * rng.unit() - 1.0));
            }
            cached = None;
        }
        let ev = match cached.take() {
            Some(e) => e,
            None => evaluate(&g.edges, &loads, &map, plat),
        };
        let max = ev.pe_time.iter().copied().fold(0.0, f64::max);
        let avg = ev.pe_time.iter().sum::<f64>() / np as f64;
        iters.push(IterationRecord { time_ns: max, max_pe_load_ns: max, avg_pe_load_ns: avg });
        total += max;
        for c in 0..3 {
            cb[c] += ev.bytes[c];
            cm[c] += ev.msgs[c];
        }
        let balance_now = opts.lb_period > 0 && it % opts.lb_period == 0 && it < opts.iterations;
        if opts.lb_period > 0 {
            // Only balancing steps read the records; without them, measuring is wasted work.
            meter.record(&ev.obj_measured, &entries, &mut period_sum);
            period_len += 1;
        }
        if balance_now {
            let measured: Vec<f64> = period_sum.iter().map(|s| s / period_len as f64).collect();
            let input = LbInput {
                loads_ns: &measured,
                state_bytes: &g.state_bytes,
                edges: &g.edges,
                adj: &adj,
                mapping: &map,
                migratable: &migratable,
                lb_period: opts.lb_period,
                platform: plat,
            };
            let start = Instant::now();
            let mut new = lb.balance(&input)?;
            let wall = start.elapsed().as_secs_f64();
            if new.len() != n {
                return Err(TaskError::Balancer {
                    name: lb.name(),
                    reason: format!("returned {} PEs for {} objects", new.len(), n),
                });
            }
            if let Some((i, &p)) = new.iter().enumerate().find(|(_, &p)| p as usize >= np) {
                return Err(TaskError::Balancer {
                    name: lb.name(),
                    reason: format!("object {i} mapped to PE {p}, outside 0..{np}"),
                });
            }
            for i in 0..n {
                if !migratable[i] {
                    new[i] = map[i];
                }
            }
            let (moved, moved_bytes, mig) = migration_step(&map, &new, &g.state_bytes, plat);
            let (mut objs, mut comms) = (vec![0usize; np], vec![0usize; np]);
            for &p in &map {
                objs[p as usize] += 1;
            }
            for e in &g.edges {
                comms[map[e.a as usize] as usize] += 1;
            }
            let stats = stats_gather_ns(plat, &objs, &comms);
            // With one PE Charm++'s AtSync resumes at once (`CentralLB::AtSync`): no strategy.
            let strategy = if np > 1 { strategy_ns(&lb.name(), n, g.edges.len(), np, &plat.costs) } else { 0.0 };
            let decision = decision_ns(plat, moved);
            let mut after = vec![0usize; np];
            for &p in &new {
                after[p as usize] += 1;
            }
            let resume = resume_ns(&after);
            let step = atsync + stats + strategy + decision + mig + resume;
            total += step;
            let predicted = pe_loads(&measured, &new, np).into_iter().fold(0.0, f64::max);
            let actual = if moved > 0 {
                evaluate(&g.edges, &loads, &new, plat).pe_time.into_iter().fold(0.0, f64::max)
            } else {
                max
            };
            calls.push(LbCall {
                iteration: it,
                migrations: moved,
                migrated_pct: 100.0 * moved as f64 / n as f64,
                migrated_bytes: moved_bytes,
                migration_time_ns: mig,
                balancer_wall_s: wall,
                atsync_ns: atsync,
                stats_ns: stats,
                strategy_ns: strategy,
                decision_ns: decision,
                resume_ns: resume,
                step_ns: step,
                predicted_makespan_ns: predicted,
                actual_makespan_ns: actual,
            });
            first_lb.get_or_insert(it);
            period_sum.iter_mut().for_each(|s| *s = 0.0);
            period_len = 0;
            if moved > 0 {
                map = new;
                meter.remap(&map, np);
            } else {
                cached = Some(ev);
            }
        } else {
            cached = Some(ev);
        }
    }
    let after: Vec<&IterationRecord> = iters.iter().skip(first_lb.unwrap_or(0)).collect();
    let efficiency = if after.is_empty() {
        0.0
    } else {
        after
            .iter()
            .map(|r| if r.max_pe_load_ns > 0.0 { r.avg_pe_load_ns / r.max_pe_load_ns } else { 1.0 })
            .sum::<f64>()
            / after.len() as f64
    };
    let classes = |a: [f64; 3]| Classes { same_pe: a[0], same_node: a[1], remote: a[2] };
    Ok(SimResult {
        balancer: lb.name(),
        iteration_time_ns: iters.iter().map(|r| r.time_ns).sum::<f64>() / iters.len() as f64,
        total_time_ns: total,
        iterations: iters,
        efficiency,
        lb_calls: calls,
        comm_bytes: classes(cb),
        comm_msgs: classes(cm),
        mapping_initial: initial,
        mapping_final: map,
        n_pes: np,
    })
}

/// What one balancing step alone returns (for timing balancers).
#[derive(Clone, Debug, Serialize)]
pub struct BalanceOnce {
    pub mapping: Vec<u32>,
    pub migrations: usize,
    pub wall_s: f64,
}

/// One balancing step from `mapping` (default: the graph's initial PEs or the block map), with
/// the loads measured under that mapping.
pub fn balance_once(
    g: &TaskGraph,
    plat: &Platform,
    lb: &mut dyn Balancer,
    mapping: Option<Vec<u32>>,
    lb_period: usize,
) -> Result<BalanceOnce, TaskError> {
    g.check()?;
    let n = g.n_objects();
    let np = plat.n_pes();
    let map = match mapping {
        Some(m) => {
            if m.len() != n || m.iter().any(|&p| p as usize >= np) {
                return Err(TaskError::param(format!(
                    "mapping: {} PEs for {n} objects, each in 0..{np} expected",
                    m.len()
                )));
            }
            m
        }
        None => match &g.initial_pe {
            Some(v) => v.iter().map(|&p| p % np as u32).collect(),
            None => block_map(n, np),
        },
    };
    let migratable = g.migratable.clone().unwrap_or_else(|| vec![true; n]);
    let adj = Adjacency::new(n, &g.edges);
    let ev = evaluate(&g.edges, &g.loads_ns, &map, plat);
    let input = LbInput {
        loads_ns: &ev.obj_measured,
        state_bytes: &g.state_bytes,
        edges: &g.edges,
        adj: &adj,
        mapping: &map,
        migratable: &migratable,
        lb_period: lb_period.max(1),
        platform: plat,
    };
    let start = Instant::now();
    let new = lb.balance(&input)?;
    let wall_s = start.elapsed().as_secs_f64();
    if new.len() != n || new.iter().any(|&p| p as usize >= np) {
        return Err(TaskError::Balancer {
            name: lb.name(),
            reason: format!("returned an invalid mapping for {n} objects on {np} PEs"),
        });
    }
    let migrations = new.iter().zip(&map).filter(|(a, b)| a != b).count();
    Ok(BalanceOnce { mapping: new, migrations, wall_s })
}
