//! NUMA balancing's memory-tiering mode (docs/tiering.md §5): the slow-tier branch of
//! `kernel/sched/fair.c: should_numa_migrate_memory()` (v6.13) with `pgdat_free_space_enough()`,
//! `numa_promotion_adjust_threshold()`, `numa_hint_fault_latency()` and
//! `numa_promotion_rate_limit()`. Times are `jiffies_to_msecs(jiffies)`: ms in steps of one
//! 4 ms tick (`CONFIG_HZ=250`), kept in 32 bits with the kernel's wrap-around arithmetic.

/// `NUMA_MIGRATION_ADJUST_STEPS`.
const ADJUST_STEPS: u32 = 16;
/// `include/linux/mm.h`: the access time lives in the `last_cpupid` bits, `LAST_CPUPID_SHIFT` =
/// 8 pid + 13 cpu bits (`CONFIG_NR_CPUS` 8192 on x86-64 distribution kernels) = 21; with at
/// least `PAGE_ACCESS_TIME_MIN_BITS` (12) bits there are no buckets, and times wrap every
/// 2^21 ms (`PAGE_ACCESS_TIME_MASK`).
const LAST_CPUPID_SHIFT: u32 = 21;
const PAGE_ACCESS_TIME_MIN_BITS: u32 = 12;
const PAGE_ACCESS_TIME_BUCKETS: u32 = PAGE_ACCESS_TIME_MIN_BITS.saturating_sub(LAST_CPUPID_SHIFT);
const PAGE_ACCESS_TIME_MASK: u32 = ((1u32 << LAST_CPUPID_SHIFT) - 1) << PAGE_ACCESS_TIME_BUCKETS;

/// `jiffies_to_msecs(jiffies)` at `now_ns` with 4 ms jiffies.
pub fn jiffies_ms(now_ns: u64) -> u32 {
    ((now_ns / 4_000_000) * 4) as u32
}

/// `folio_xchg_access_time()`: store `time` in the page's `last_cpupid` field, return the old
/// time (both masked as the field keeps them).
pub fn xchg_access_time(field: &mut u32, time_ms: u32) -> u32 {
    let old = *field;
    *field = (time_ms >> PAGE_ACCESS_TIME_BUCKETS) & ((1u32 << LAST_CPUPID_SHIFT) - 1);
    (old & ((1u32 << LAST_CPUPID_SHIFT) - 1)) << PAGE_ACCESS_TIME_BUCKETS
}

/// `numa_hint_fault_latency()`: time since the scan that marked the page.
pub fn hint_fault_latency(field: &mut u32, time_ms: u32) -> u32 {
    let last = xchg_access_time(field, time_ms);
    time_ms.wrapping_sub(last) & PAGE_ACCESS_TIME_MASK
}

/// The per-node (`pglist_data`) promotion state: `nbp_rl_*`, `nbp_th_*`, `nbp_threshold`, and
/// the node counter `PGPROMOTE_CANDIDATE`.
#[derive(Clone, Copy, Default)]
pub struct NodePromo {
    rl_start: u32,
    rl_nr_cand: u64,
    th_start: u32,
    th_nr_cand: u64,
    threshold: u32,
    pub candidate: u64,
}

/// What the tiering branch decides for one hinting fault on a slow-tier page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Promote: the target has plenty of room (`pgdat_free_space_enough()`).
    Room,
    /// Promote: hot and within the rate limit.
    Hot,
    /// Not hot enough: the latency is at or above the threshold.
    Cold,
    /// Hot, but over the rate limit.
    RateLimited,
}

impl Verdict {
    pub fn promote(self) -> bool {
        matches!(self, Verdict::Room | Verdict::Hot)
    }
}

/// The knobs the branch reads.
#[derive(Clone, Copy)]
pub struct PromoKnobs {
    /// `sysctl_numa_balancing_hot_threshold`, ms.
    pub hot_threshold_ms: u32,
    /// `MB_TO_PAGES(sysctl_numa_balancing_promote_rate_limit)`.
    pub rate_limit_pages: u64,
    /// `sysctl_numa_balancing_scan_period_max`, ms: the threshold adjustment period.
    pub scan_period_max_ms: u32,
}

impl PromoKnobs {
    pub fn new(hot_threshold_ms: u32, rate_limit_mbps: u32, scan_period_max_ms: u32) -> Self {
        PromoKnobs { hot_threshold_ms, rate_limit_pages: (rate_limit_mbps as u64) << (20 - 12), scan_period_max_ms }
    }
}

impl NodePromo {
    /// The tiering branch of `should_numa_migrate_memory()` for a page of `nr` base pages whose
    /// access-time field is `field`, toward this node (`dst`). `free_enough`: the result of
    /// `pgdat_free_space_enough(dst)`.
    pub fn decide(&mut self, k: PromoKnobs, field: &mut u32, nr: u64, now_ms: u32, free_enough: bool) -> Verdict {
        if free_enough {
            // "workload changed, reset hot threshold"
            self.threshold = 0;
            return Verdict::Room;
        }
        let def_th = k.hot_threshold_ms;
        self.adjust_threshold(k, def_th, now_ms);
        let th = if self.threshold != 0 { self.threshold } else { def_th };
        let latency = hint_fault_latency(field, now_ms);
        if latency >= th {
            return Verdict::Cold;
        }
        if self.rate_limit(k.rate_limit_pages, nr, now_ms) {
            Verdict::RateLimited
        } else {
            Verdict::Hot
        }
    }

    /// `numa_promotion_rate_limit()`: count the candidate; refuse once `rate_limit` candidates
    /// arrived since the window (restarted after more than a second) began.
    fn rate_limit(&mut self, rate_limit: u64, nr: u64, now_ms: u32) -> bool {
        self.candidate += nr;
        if now_ms.wrapping_sub(self.rl_start) > 1000 {
            self.rl_start = now_ms;
            self.rl_nr_cand = self.candidate;
        }
        self.candidate - self.rl_nr_cand >= rate_limit
    }

    /// `numa_promotion_adjust_threshold()`: once per `scan_period_max`, compare the candidates
    /// of the period with what the rate limit allows over it; lower the threshold by one step
    /// (1/8 of the default) above 110 %, raise it below 90 %, within [step, 2 x default].
    fn adjust_threshold(&mut self, k: PromoKnobs, ref_th: u32, now_ms: u32) {
        let period = k.scan_period_max_ms;
        if now_ms.wrapping_sub(self.th_start) <= period {
            return;
        }
        self.th_start = now_ms;
        let ref_cand = k.rate_limit_pages * period as u64 / 1000;
        let diff = self.candidate - self.th_nr_cand;
        let unit = ref_th * 2 / ADJUST_STEPS;
        let mut th = if self.threshold != 0 { self.threshold } else { ref_th };
        if diff > ref_cand * 11 / 10 {
            th = th.saturating_sub(unit).max(unit);
        } else if diff < ref_cand * 9 / 10 {
            th = (th + unit).min(ref_th * 2);
        }
        self.th_nr_cand = self.candidate;
        self.threshold = th;
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }
}

/// `pgdat_free_space_enough()`: free above `promo + max(1 GiB, present / 16)`.
pub fn free_space_enough(free: u64, promo: u64, present: u64) -> bool {
    let enough = (1u64 << (30 - 12)).max(present >> 4);
    free > promo + enough
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_time_since_scan() {
        let mut f = 0u32;
        xchg_access_time(&mut f, 1000);
        assert_eq!(hint_fault_latency(&mut f, 1400), 400);
    }

    #[test]
    fn rate_limit_counts_candidates_per_second() {
        let k = PromoKnobs::new(1000, 1, 60_000); // 1 MB/s = 256 pages per second
        let mut p = NodePromo::default();
        let mut ok = 0;
        for i in 0..1000u32 {
            let mut f = 0;
            xchg_access_time(&mut f, 2000 + i);
            if p.decide(k, &mut f, 1, 2000 + i, false) == Verdict::Hot {
                ok += 1;
            }
        }
        // The window opened at the first candidate: 256 pass, then the limit is reached.
        assert_eq!(ok, 256);
    }

    #[test]
    fn threshold_drops_when_candidates_exceed_the_limit() {
        let k = PromoKnobs::new(1000, 1, 100);
        let mut p = NodePromo::default();
        for t in (0..2000u32).step_by(4) {
            let mut f = 0;
            xchg_access_time(&mut f, t);
            p.decide(k, &mut f, 64, t, false);
        }
        assert!(p.threshold() < 1000 && p.threshold() >= 125);
    }
}
