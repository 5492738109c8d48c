//! What a run will cost the engine itself, estimated from its inputs before anything is
//! allocated: page-table entries, per-thread state, the byte ranges threads sweep, and the page
//! visits it will simulate. `Engine::new` refuses a run above the limits below with the estimate,
//! the limit and what to change, instead of exhausting the machine it runs on.
//!
//! Data larger than the simulated machine's memory is not refused here when the engine can hold
//! its page table: that run ends as the simulated kernel would, `status: out-of-memory`, and the
//! table's chunks are allocated only where pages were placed (`pages::PageTable`).

use numalab_model::Machine;

use crate::error::SimError;
use crate::input::{Pattern, SimConfig, WorkloadSpec};

/// The engine's own memory a run may use. CI machines have 24 GiB shared by the study workers
/// running side by side (one run per worker); 4 GiB each leaves room for several of them and for
/// Python's copy of the results. Every workload of the library at its largest class fits in a
/// small fraction of it.
pub const MAX_ENGINE_BYTES: u64 = 4 << 30;
/// Threads over all processes. Placement and load balancing cost grows with the square of the
/// thread count: CG class S takes 2 s with 1,024 threads and 12 s with 4,096 on the 384-CPU
/// epyc9654-2s-nps1 preset, so 16,384 is minutes of scheduling alone (and 43 threads per CPU).
pub const MAX_THREADS: u64 = 1 << 14;
/// Threads per PU of the machine (all processes together). Every scheduler tick visits every
/// runnable thread of a CPU's queue, so the cost grows with threads per CPU as well as in all:
/// STREAM with 4,096 threads on 4 PUs takes 10 s and 16,384 a minute; 64 per PU, far beyond
/// the oversubscription of any study, ends in about 3 s.
pub const MAX_THREADS_PER_PU: u64 = 64;
/// Phase executions of one process over the program (repeats included): an empty phase costs the
/// engine about 0.6 us, so 2^22 is a few seconds.
pub const MAX_PHASE_RUNS: f64 = (1u64 << 22) as f64;
/// Compute cycles per thread over the program: the engine's cost grows with the simulated time
/// (scheduler ticks, balancing scans, noise), some 1,500 simulated seconds per second of its own,
/// so 2^44 cycles (7,000 s at 2.5 GHz) is a few seconds of work.
pub const MAX_CYCLES_PER_THREAD: f64 = (1u64 << 44) as f64;
/// Page visits simulated over the run (after sampling). The engine serves some 10^7-10^8 a
/// second; 10^11 is an hour or more of work, a size nobody means: a smaller size or `--sample-rate` helps.
pub const MAX_SAMPLES: f64 = 1e11;

/// One page-table entry: the node byte, plus with NUMA balancing `last_cpupid` (4 bytes) and the
/// PROT_NONE bit.
const ENTRY_BYTES: f64 = 1.0;
const ENTRY_BALANCING_BYTES: f64 = 4.0 + 1.0 / 8.0;
/// Per thread: its state, scheduler and solver entries (fixed part, per node, per CPU it may use).
const THREAD_BYTES: f64 = 1024.0;
const THREAD_NODE_BYTES: f64 = 128.0;
const THREAD_PU_BYTES: f64 = 16.0;
/// One byte range of a sweep (start, end).
const RANGE_BYTES: f64 = 16.0;
/// One timeline point: its per-node pages and node-by-node access map, vmstat and headers.
const POINT_BYTES: f64 = 512.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Workload data over all processes, and the page-table entries that map it.
    pub data_bytes: f64,
    pub entries: f64,
    pub page_table_bytes: f64,
    pub thread_bytes: f64,
    /// Byte ranges of the sweeps all threads hold at once (the largest phase) and dynamic
    /// schedules' chunk orders.
    pub sweep_bytes: f64,
    /// The timeline kept for the result (at most `timeline_points` + 1 points).
    pub timeline_bytes: f64,
    pub threads: f64,
    /// Bytes of engine state per page-table entry (more with NUMA balancing).
    pub entry_bytes: f64,
    /// Page visits the run will simulate.
    pub samples: f64,
    /// Phase executions of one process, and compute cycles per thread, up to where the run ends.
    pub phase_runs: f64,
    pub cycles_per_thread: f64,
}

impl Estimate {
    pub fn total_bytes(&self) -> f64 {
        self.page_table_bytes + self.thread_bytes + self.sweep_bytes + self.timeline_bytes
    }

    /// Refuse a run above the limits, saying by how much and what to change.
    pub fn check(&self, m: &Machine) -> Result<(), SimError> {
        let bad = |s: String| Err(SimError::Input(s));
        if self.threads > MAX_THREADS as f64 {
            return bad(format!(
                "{} threads in all: numalab simulates at most {MAX_THREADS} (scheduling them costs the square of \
                 their number); use fewer threads or processes",
                self.threads
            ));
        }
        if self.total_bytes() > MAX_ENGINE_BYTES as f64 {
            // Name the largest part, with what shrinks it.
            let largest = [self.page_table_bytes, self.thread_bytes, self.sweep_bytes, self.timeline_bytes]
                .into_iter()
                .enumerate()
                .fold((0, f64::MIN), |best, (i, v)| if v > best.1 { (i, v) } else { best })
                .0;
            let why = match largest {
                0 => {
                    let beyond = if self.data_bytes > m.total_memory_bytes() as f64 {
                        format!(
                            " (more than the {} of the machine: such a run could only end out of memory)",
                            human(m.total_memory_bytes() as f64)
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        "{} of page tables for {} of workload data{beyond}; numalab simulates at most {:.0} pages \
                         per run; use a smaller size or THP (2 MiB pages)",
                        human(self.page_table_bytes),
                        human(self.data_bytes),
                        (MAX_ENGINE_BYTES as f64 / self.entry_bytes).floor(),
                    )
                }
                1 => format!(
                    "{} of state for {} threads; use fewer threads or processes",
                    human(self.thread_bytes),
                    self.threads
                ),
                2 => format!(
                    "{} for the byte ranges its threads sweep (transpose planes or dynamic chunks times threads); \
                     use fewer planes, larger chunks or fewer threads",
                    human(self.sweep_bytes)
                ),
                _ => format!("{} for the timeline; ask for fewer timeline points", human(self.timeline_bytes)),
            };
            return bad(format!(
                "the simulation would need {} of its own memory, more than its limit of {}: {why}",
                human(self.total_bytes()),
                human(MAX_ENGINE_BYTES as f64)
            ));
        }
        if self.samples > MAX_SAMPLES {
            return bad(format!(
                "the simulation would visit {:.2e} pages, more than its limit of {MAX_SAMPLES:.0e} (an hour or more of work); \
                 use a smaller size, fewer repetitions or a lower --sample-rate",
                self.samples
            ));
        }
        let per_pu_limit = MAX_THREADS_PER_PU * m.pus.len() as u64;
        if self.threads > per_pu_limit as f64 {
            return bad(format!(
                "{} threads in all on {} CPUs: numalab simulates at most {MAX_THREADS_PER_PU} threads per CPU \
                 ({per_pu_limit} here); use fewer threads or processes, or a larger machine",
                self.threads,
                m.pus.len()
            ));
        }
        if self.phase_runs > MAX_PHASE_RUNS {
            return bad(format!(
                "the program runs {:.3e} phases per process (repeats included), more than the limit of 2^22 \
                 ({MAX_PHASE_RUNS:.0}); use fewer repetitions",
                self.phase_runs
            ));
        }
        if self.cycles_per_thread > MAX_CYCLES_PER_THREAD {
            return bad(format!(
                "the program computes {:.3e} cycles per thread (phases' cycles x repeats / threads), more than the \
                 limit of 2^44 ({MAX_CYCLES_PER_THREAD:.3e}, about two simulated hours at 2.5 GHz); use a smaller \
                 size, fewer repetitions or more threads",
                self.cycles_per_thread
            ));
        }
        Ok(())
    }
}

/// Bytes in binary units, as `numactl --hardware` and `free -h` print them.
pub fn human(bytes: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Everything in f64: the inputs may be absurd (2^64-byte regions), the estimate must not overflow.
pub fn estimate(m: &Machine, w: &WorkloadSpec, cfg: &SimConfig) -> Estimate {
    let procs = w.processes as f64;
    let nt = w.threads as f64;
    let stride = (1.0 / cfg.sample_rate).round().max(1.0);
    let entry = if cfg.balancing.scanning() { ENTRY_BYTES + ENTRY_BALANCING_BYTES } else { ENTRY_BYTES };
    let units: Vec<f64> = w
        .regions
        .iter()
        .map(|r| {
            let page = if r.thp { (2u64 << 20) as f64 } else { 4096.0 };
            (r.bytes as f64 / page).ceil()
        })
        .collect();
    let data_bytes = procs * w.regions.iter().map(|r| r.bytes as f64).sum::<f64>();
    let entries = procs * units.iter().sum::<f64>();
    let threads = procs * nt;
    let thread_bytes = threads
        * (THREAD_BYTES + THREAD_NODE_BYTES * m.nodes.len() as f64 + THREAD_PU_BYTES * m.pus.len() as f64)
        + procs * nt * w.phases.len() as f64 * 8.0;
    // Ranges every thread of a process holds for one phase, and its page visits.
    let phase_cost = |p: usize| -> (f64, f64) {
        let (mut ranges, mut visits) = (0.0, 0.0);
        for a in &w.phases[p].accesses {
            let Some(r) = w.regions.get(a.region) else { continue };
            let u = units[a.region];
            let planes = r.planes as f64;
            let (rg, pages) = match a.pattern {
                Pattern::Block | Pattern::Private => (nt, u),
                Pattern::Stencil => (3.0 * nt, u),
                Pattern::Shared => (nt, u * nt),
                Pattern::Master => (1.0, u),
                // One range per plane per thread that gets lines of it.
                Pattern::Transpose => ((planes * nt).min(planes + (r.bytes as f64 / 64.0).ceil()), u),
                Pattern::Dynamic => ((planes / a.chunk.max(1) as f64).ceil(), u),
                Pattern::Gather | Pattern::Scatter => (0.0, nt * (a.count as f64 / (64.0 * stride)).ceil()),
            };
            // A dynamic schedule has one range per chunk, and the engine keeps up to 8 chunk
            // orders of 8 bytes per chunk (half a range each).
            ranges += if a.pattern == Pattern::Dynamic { 5.0 * rg } else { rg };
            visits += if a.pattern.is_random() { pages } else { (pages / stride).ceil().max(rg) };
        }
        (ranges, visits)
    };
    let costs: Vec<(f64, f64)> = (0..w.phases.len()).map(phase_cost).collect();
    let sweep_bytes = procs * RANGE_BYTES * costs.iter().map(|c| c.0).fold(0.0, f64::max);
    let until = until_full(m, w, &costs);
    let samples = procs * until.visits;
    let n = m.nodes.len() as f64;
    let timeline_bytes = (cfg.timeline_points as f64 + 1.0) * (POINT_BYTES + 8.0 * n * (n + 1.0));
    Estimate {
        data_bytes,
        entries,
        page_table_bytes: entries * entry,
        entry_bytes: entry,
        thread_bytes,
        sweep_bytes,
        timeline_bytes,
        threads,
        samples,
        phase_runs: until.runs,
        cycles_per_thread: until.cycles / nt.max(1.0),
    }
}

/// Page visits, phase executions and compute cycles (all threads) of one process.
struct Work {
    visits: f64,
    runs: f64,
    cycles: f64,
}

/// The work of one process over the program, up to the phase whose first writes fill the
/// machine's memory: a run that cannot fit ends out of memory there, whatever comes after.
fn until_full(m: &Machine, w: &WorkloadSpec, costs: &[(f64, f64)]) -> Work {
    let memory = m.total_memory_bytes() as f64;
    let procs = w.processes as f64;
    let mut written = vec![false; w.regions.len()];
    let mut placed = 0.0;
    let (mut visits, mut runs, mut cycles) = (0.0, 0.0, 0.0);
    for step in w.program.iter().filter(|s| s.repeat > 0) {
        let (mut first_rep, mut step_cycles, mut step_runs) = (0.0, 0.0, 0.0);
        for &p in &step.phases {
            let Some(&(_, v)) = costs.get(p) else { continue };
            let phase = &w.phases[p];
            let mut new = 0.0;
            for a in phase.accesses.iter().filter(|a| a.wr > 0.0 && a.passes > 0.0) {
                if let Some(r) = w.regions.get(a.region).filter(|_| !written[a.region]) {
                    written[a.region] = true;
                    // Random writes place at most a page per line they write.
                    let lines = if a.pattern.is_random() { a.count as f64 * w.threads as f64 } else { f64::INFINITY };
                    new += procs * (r.bytes as f64).min(lines * 4096.0);
                }
            }
            if placed + new > memory {
                // Out of memory part-way through this phase's first writes.
                return Work {
                    visits: visits + first_rep + v * ((memory - placed) / new).clamp(0.0, 1.0),
                    runs: runs + step_runs + 1.0,
                    cycles: cycles + step_cycles + phase.cycles,
                };
            }
            placed += new;
            first_rep += v;
            step_cycles += phase.cycles;
            step_runs += 1.0;
        }
        visits += first_rep * step.repeat as f64;
        runs += step.phases.len() as f64 * step.repeat as f64;
        cycles += step_cycles * step.repeat as f64;
    }
    Work { visits, runs, cycles }
}
