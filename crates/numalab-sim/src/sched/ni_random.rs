//! Proportional newly idle balancing (profile `sched.newidle_random`): upstream 33cf66d88306
//! "sched/fair: Proportional newidle balance" (v6.18), in the 6.1 stable series ("[PATCH 6.1
//! 617/634]", January 2026) and so in the guest's Debian 6.1.192. In `sched_balance_newidle()`
//! (v6.1's `newidle_balance()` renamed), each domain past the cost gate (`newidle.rs`) is
//! balanced only if a 1024-sided die shows at most `1 + sd->newidle_ratio`; otherwise the
//! domain counts a failed call and the next domain is tried ("continue", so a higher level can
//! be balanced when a lower one was not). A balance's success counts `weight = (1024 +
//! weight / 2) / weight` (the inverse of its chance), so `newidle_ratio`, refreshed every 1024
//! calls from the halved sums (`update_newidle_stats()`), estimates the successes per 1024
//! balances: a domain that rarely pulls is rarely balanced. `sd_init()` starts every domain at
//! 512 calls, 256 successes, ratio 512 ("50% success rate"). The kernel's die is
//! `prandom_u32_state()` of a per-CPU state seeded at boot (`sched_rng()`); here a stream of
//! the run's seed.

use crate::rng::Rng;

/// The die's stream of the run's seed (`crate::rng::Rng`).
const STREAM: u64 = 0x4e49_5241_4e44;

/// One domain's `newidle_call`, `newidle_success`, `newidle_ratio` (`struct sched_domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stats {
    call: u32,
    success: u32,
    ratio: u32,
}

/// `sd_init()`: "/* 50% success rate */ .newidle_call = 512, .newidle_success = 256,
/// .newidle_ratio = 512".
const INIT: Stats = Stats { call: 512, success: 256, ratio: 512 };

impl Stats {
    /// `update_newidle_stats()`: "sd->newidle_call++; sd->newidle_success += success; if
    /// (sd->newidle_call >= 1024) { sd->newidle_ratio = sd->newidle_success;
    /// sd->newidle_call /= 2; sd->newidle_success /= 2; }".
    fn update(&mut self, success: u32) {
        self.call += 1;
        self.success = self.success.wrapping_add(success);
        if self.call >= 1024 {
            self.ratio = self.success;
            self.call /= 2;
            self.success /= 2;
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct NiRandom {
    /// `stats[level][cpu]`.
    stats: Vec<Vec<Stats>>,
    rng: Rng,
}

impl NiRandom {
    pub fn new(levels: usize, ncpu: usize, seed: u64) -> Self {
        NiRandom { stats: vec![vec![INIT; ncpu]; levels], rng: Rng::new(seed, STREAM) }
    }

    /// The die for `cpu`'s level `l`: Some(the weight of its success) when it balances, None
    /// when it skips the level ("if (d1k > weight) { update_newidle_stats(sd, 0); continue; }").
    pub fn roll(&mut self, l: usize, cpu: usize) -> Option<u32> {
        let st = &mut self.stats[l][cpu];
        // "u32 d1k = sched_rng() % 1024; weight = 1 + sd->newidle_ratio;"
        let d1k = (self.rng.next_u64() >> 32) as u32 % 1024;
        let weight = st.ratio.wrapping_add(1);
        if d1k > weight {
            st.update(0);
            return None;
        }
        Some((1024 + weight / 2) / weight)
    }

    /// After the balance `roll()` allowed: "update_newidle_cost(sd, domain_cost, weight *
    /// !!pulled_task)", which updates the statistics for any non-zero cost (a balance always
    /// takes some time).
    pub fn balanced(&mut self, l: usize, cpu: usize, weight: u32, pulled: bool) {
        self.stats[l][cpu].update(weight * u32::from(pulled));
    }

    #[cfg(test)]
    fn ratio(&self, l: usize, cpu: usize) -> u32 {
        self.stats[l][cpu].ratio
    }

    /// A domain's success ratio as if its history had left it there.
    #[cfg(test)]
    pub fn set_ratio(&mut self, l: usize, cpu: usize, ratio: u32) {
        self.stats[l][cpu].ratio = ratio;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_that_never_pulls_is_balanced_ever_more_rarely() {
        // From sd_init()'s 50 %: every balance fails. After 512 more calls (call reaches 1024)
        // the ratio is the 256 successes of the start, halved each 512 calls after.
        let mut n = NiRandom::new(1, 1, 7);
        let mut ran = 0;
        for _ in 0..512 {
            if let Some(w) = n.roll(0, 0) {
                n.balanced(0, 0, w, false);
                ran += 1;
            }
        }
        // About half of the first 512 ran (weight 513 of 1024 sides).
        assert!((200..310).contains(&ran), "{ran}");
        assert_eq!(n.ratio(0, 0), 256);
        for _ in 0..512 * 4 {
            if let Some(w) = n.roll(0, 0) {
                n.balanced(0, 0, w, false);
            }
        }
        // 256 -> 128 -> 64 -> 32 -> 16: a balance in about 17 of 1024 idle entries.
        assert_eq!(n.ratio(0, 0), 16);
    }

    #[test]
    fn a_success_counts_the_inverse_of_its_chance() {
        // At ratio 512 the die lets 514 of 1024 through (0..=513) and a success weighs
        // (1024 + 256) / 513 = 2: a domain that pulls at every balance keeps about 1024
        // weighted successes per 1024 calls, and its ratio rises (to about 771 at the first
        // refresh; past 682 a success weighs 1, and from there the ratio drifts by about one a
        // refresh, a random walk of some ten a step).
        let mut n = NiRandom::new(1, 1, 3);
        let mut runs = 0;
        for k in 0..20_000 {
            if let Some(w) = n.roll(0, 0) {
                n.balanced(0, 0, w, true);
                runs += usize::from(k >= 19_000);
            }
        }
        let ratio = n.ratio(0, 0);
        assert!((650..1024).contains(&ratio), "{ratio}");
        // Balanced in about (ratio + 2) / 1024 of the calls.
        assert!(runs.abs_diff(ratio as usize) < 100, "{runs} {ratio}");
    }

    #[test]
    fn the_same_seed_rolls_the_same() {
        let rolls = |seed| {
            let mut n = NiRandom::new(2, 2, seed);
            (0..64).map(|k| n.roll(k % 2, k / 32)).collect::<Vec<_>>()
        };
        assert_eq!(rolls(5), rolls(5));
        assert_ne!(rolls(5), rolls(6));
    }
}
