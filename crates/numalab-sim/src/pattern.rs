//! Access patterns: which bytes of a region a thread touches in one phase execution, turned into
//! a stream of page visits (docs/workloads.md §2, §3). One visit = one thread touching one page (or a
//! run of `stride` pages when sampling) and moving `lines` 64-byte lines to or from DRAM.

use crate::input::{AccessSpec, Pattern};
use crate::pages::Region;
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Visit {
    pub region: u32,
    /// The page entry this sample reads (drawn uniformly among the entries it covers).
    pub unit: u64,
    /// First entry covered, and how many (the sample stands for all of them; first touch
    /// allocates all of them).
    pub first: u64,
    pub units: u64,
    pub lines: f64,
    pub write: bool,
    /// Share of `lines` that are reads (the rest are writes).
    pub rd_share: f64,
}

/// libgomp's `schedule(static)` without a chunk size: thread `t` of `nt` gets iterations
/// `[start, end)` of `n` (the first `n % nt` threads get one more).
pub fn static_share(n: u64, nt: u64, t: u64) -> (u64, u64) {
    let (q, r) = (n / nt, n % nt);
    if t < r {
        (t * (q + 1), t * (q + 1) + q + 1)
    } else {
        (t * q + r, t * q + r + q)
    }
}

/// Byte offset where plane `p` of a region starts.
fn plane_start(r: &Region, p: u64) -> u64 {
    ((p as u128 * r.bytes as u128) / r.planes as u128) as u64
}

/// Byte offset where unit `u` of `n` equal units of a region starts.
fn unit_start(r: &Region, u: u64, n: u64) -> u64 {
    ((u as u128 * r.bytes as u128) / n.max(1) as u128) as u64
}

/// The byte ranges thread `t` of `nt` sweeps, in order. `chunk_order` is the shuffled chunk
/// order of a dynamic schedule (shared by all threads of a process for one execution). A region
/// split among the processes mapping it (`Region::part`, docs/corun.md §6) gives this process's
/// threads only its slice of the partitioned patterns; `shared` still reads all of it.
pub fn ranges(a: &AccessSpec, r: &Region, t: u64, nt: u64, chunk_order: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    ranges_into(a, r, t, nt, chunk_order, &mut out);
    out
}

/// `ranges` into `out` (emptied first), keeping its allocation: a thread's sweeps are rebuilt at
/// every phase start, and a new vector per access each time was a fifth of that work.
pub fn ranges_into(a: &AccessSpec, r: &Region, t: u64, nt: u64, chunk_order: &[u64], out: &mut Vec<(u64, u64)>) {
    out.clear();
    let planes = |p0: u64, p1: u64| (plane_start(r, p0), plane_start(r, p1));
    // A static split divides `planes x rows` units (a collapse(2) over plane and row).
    let per_plane = a.rows.max(1);
    let n_rows = r.planes.saturating_mul(per_plane);
    let rows = |u0: u64, u1: u64| (unit_start(r, u0, n_rows), unit_start(r, u1, n_rows));
    let (k, np) = r.part;
    // Process k's slice of `n` units, then thread t's share of that slice.
    let share = |n: u64| {
        let (s0, e0) = static_share(n, np, k);
        let (s, e) = static_share(e0 - s0, nt, t);
        (s0 + s, s0 + e)
    };
    match a.pattern {
        Pattern::Block | Pattern::Private => {
            let (s, e) = share(n_rows);
            out.push(rows(s, e));
        }
        Pattern::Stencil => {
            let (s, e) = share(n_rows);
            let halo = a.halo.saturating_mul(per_plane);
            if e > s {
                out.push(rows(s.saturating_sub(halo), s));
                out.push(rows(s, e));
                out.push(rows(e, e.saturating_add(halo).min(n_rows)));
            }
        }
        Pattern::Transpose => {
            // A thread past the line count of the largest plane gets nothing of any plane.
            let max_lines = r.bytes.div_ceil(r.planes).div_ceil(64) + 1;
            if t >= max_lines {
                return;
            }
            // Plane starts `p * bytes / planes` one after the other: quotient and remainder
            // carried from plane to plane give the same integers as `plane_start` without its
            // 128-bit division per plane (this runs at every phase start, for every plane).
            let (step_q, step_r) = (r.bytes / r.planes, r.bytes % r.planes);
            let (mut b1, mut rem) = (0u64, 0u64);
            out.reserve(r.planes.min(1 << 16) as usize);
            // Planes differ by a byte at most, so their line counts take one or two values:
            // the thread's share of the last count is kept rather than divided out again.
            let mut last = (u64::MAX, (0, 0));
            for _ in 0..r.planes {
                let b0 = b1;
                b1 += step_q;
                rem += step_r;
                if rem >= r.planes {
                    b1 += 1;
                    rem -= r.planes;
                }
                let lines = (b1 - b0).div_ceil(64);
                if lines != last.0 {
                    last = (lines, share(lines));
                }
                let (s, e) = last.1;
                if e > s {
                    out.push((b0 + s * 64, (b0 + e * 64).min(b1)));
                }
            }
        }
        Pattern::Shared => out.push((0, r.bytes)),
        Pattern::Master => {
            if t == 0 {
                let (s0, e0) = static_share(r.planes, np, k);
                out.push(planes(s0, e0));
            }
        }
        Pattern::Dynamic => {
            let chunk = a.chunk.max(1);
            let (c0, c1) = static_share(chunk_order.len() as u64, np, k);
            let mine = chunk_order.iter().filter(|&&c| (c0..c1).contains(&c));
            for &c in mine.skip(t as usize).step_by(nt as usize) {
                out.push(planes(c.saturating_mul(chunk).min(r.planes), (c + 1).saturating_mul(chunk).min(r.planes)));
            }
        }
        Pattern::Gather | Pattern::Scatter => {}
    }
    out.retain(|&(s, e)| e > s);
}

/// A cursor over one access of one thread in one phase execution.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub region: u32,
    write: bool,
    rd_share: f64,
    /// Lines per byte swept (sweeps) or per line accessed (random patterns).
    lines_per_byte: f64,
    ranges: Vec<(u64, u64)>,
    range: usize,
    pos: u64,
    stride: u64,
    /// Random patterns: visits left, and lines per visit.
    random_left: u64,
    random_lines: f64,
    random_units: u64,
    pub total_lines: f64,
    inv_total: f64,
    pub done_lines: f64,
}

impl Sweep {
    pub fn new(a: &AccessSpec, r: &Region, region: u32, t: u64, nt: u64, chunk_order: &[u64], stride: u64) -> Self {
        Self::reusing(a, r, (region, t, nt), chunk_order, stride, Vec::new())
    }

    /// `new` with `buf` (any contents) as the vector of its byte ranges, reusing its allocation
    /// (`into_buffer` gives it back when the sweep is done with).
    pub fn reusing(
        a: &AccessSpec,
        r: &Region,
        (region, t, nt): (u32, u64, u64),
        chunk_order: &[u64],
        stride: u64,
        mut buf: Vec<(u64, u64)>,
    ) -> Self {
        buf.clear();
        // A sample never covers more than the whole region: a stride past it (a sample rate far
        // below 1 / pages) behaves the same and keeps the page arithmetic inside u64.
        let stride = stride.clamp(1, r.units() + 1);
        let traffic = (a.rd + a.wr) * a.passes;
        let write = a.wr > 0.0;
        let rd_share = if a.rd + a.wr > 0.0 { a.rd / (a.rd + a.wr) } else { 1.0 };
        if a.pattern.is_random() {
            // One visit carries up to a page's worth (64 lines) of random accesses, `stride` of them per sample.
            let per_visit = 64u64.saturating_mul(stride);
            let visits = a.count.div_ceil(per_visit);
            let total = a.count as f64 * traffic;
            return Sweep {
                region,
                write,
                rd_share,
                lines_per_byte: 0.0,
                ranges: buf,
                range: 0,
                pos: 0,
                stride,
                random_left: visits,
                random_lines: if visits > 0 { total / visits as f64 } else { 0.0 },
                random_units: r.units(),
                total_lines: total,
                inv_total: if total > 0.0 { 1.0 / total } else { 0.0 },
                done_lines: 0.0,
            };
        }
        // An access that moves nothing to or from DRAM (data kept in cache) visits no page.
        let mut ranges = buf;
        if traffic > 0.0 {
            ranges_into(a, r, t, nt, chunk_order, &mut ranges);
        }
        let bytes: u64 = ranges.iter().map(|(s, e)| e - s).sum();
        let lines_per_byte = traffic / 64.0;
        let pos = ranges.first().map_or(0, |r| r.0);
        Sweep {
            region,
            write,
            rd_share,
            lines_per_byte,
            ranges,
            range: 0,
            pos,
            stride,
            random_left: 0,
            random_lines: 0.0,
            random_units: 0,
            total_lines: bytes as f64 * lines_per_byte,
            inv_total: if bytes > 0 && lines_per_byte > 0.0 { 1.0 / (bytes as f64 * lines_per_byte) } else { 0.0 },
            done_lines: 0.0,
        }
    }

    /// The vector of its byte ranges, for `reusing`.
    pub fn into_buffer(self) -> Vec<(u64, u64)> {
        self.ranges
    }

    pub fn finished(&self) -> bool {
        self.random_left == 0 && self.range >= self.ranges.len()
    }

    #[inline]
    pub fn progress(&self) -> f64 {
        if self.total_lines > 0.0 {
            self.done_lines * self.inv_total
        } else {
            1.0
        }
    }

    /// `k` page entries spread evenly over what this sweep will touch, each with the share of
    /// the sweep's lines it stands for and the read share (for estimating a phase's mix), handed
    /// to `out` in order (not collected: this runs at every phase start, for every access).
    pub fn sample_points(&self, k: usize, shift: u32, mut out: impl FnMut(u64)) {
        if self.random_left > 0 {
            (0..k as u64).for_each(|i| out((2 * i + 1) * self.random_units / (2 * k as u64)));
            return;
        }
        let total: u64 = self.ranges.iter().map(|(s, e)| e - s).sum();
        if total == 0 {
            return;
        }
        let (mut ri, mut before) = (0, 0u64);
        for i in 0..k as u64 {
            let off = (2 * i + 1) * total / (2 * k as u64);
            while before + (self.ranges[ri].1 - self.ranges[ri].0) <= off {
                before += self.ranges[ri].1 - self.ranges[ri].0;
                ri += 1;
            }
            out((self.ranges[ri].0 + off - before) >> shift);
        }
    }

    /// Lines one whole sample (`stride` pages) of this sweep moves.
    #[inline]
    pub fn sample_lines(&self, shift: u32) -> f64 {
        (self.stride << shift) as f64 * self.lines_per_byte
    }

    pub fn rd_share(&self) -> f64 {
        self.rd_share
    }

    pub fn writes(&self) -> bool {
        self.write
    }

    /// Continue the current range with up to `max` more whole samples (groups of `stride`
    /// pages) already placed, each on a node `n` for which `admit(n)` (which counts it) agrees:
    /// the hot path serves a run of samples in one step. The first refusal ends the run, so
    /// `admit` is never asked again about a node it refused. A sample covering a page protected
    /// for a NUMA hinting fault (`marked`, empty when balancing is off) ends the run: the
    /// general path takes the fault. Returns the samples added and the lines of one.
    #[inline(always)]
    pub fn extend_run(
        &mut self,
        shift: u32,
        nodes: &crate::pages::PageTable,
        marked: &[u64],
        max: u64,
        mut admit: impl FnMut(usize) -> bool,
    ) -> (u64, f64) {
        if self.random_left > 0 {
            return (0, 0.0);
        }
        let Some(&(_, end)) = self.ranges.get(self.range) else { return (0, 0.0) };
        let group = self.stride << shift;
        let mut pos = self.pos;
        let mut k = 0;
        if self.stride == 1 {
            // The common case (every page): a straight scan of the page table, up to the first
            // page NUMA balancing has marked (its hinting fault takes the general path).
            let first = (pos >> shift) as usize;
            let avail = (((end - pos) >> shift) as usize).min(max as usize);
            // A sample from an offset inside a page also covers the next page (both must be
            // unmarked, as `any_marked` checks them in the strided loop below).
            let avail = if pos & (group - 1) == 0 {
                crate::pages::unmarked_run(marked, first as u64, avail as u64) as usize
            } else if marked.is_empty() {
                avail
            } else {
                (crate::pages::unmarked_run(marked, first as u64, avail as u64 + 1) as usize).saturating_sub(1)
            };
            // The table comes in chunks: scan chunk by chunk until a stop or `avail`.
            let mut seen = 0;
            'scan: while seen < avail {
                let run = nodes.run(first + seen, avail - seen);
                for &n in run {
                    if n == crate::pages::NONE || !admit(n as usize) {
                        break 'scan;
                    }
                    k += 1;
                }
                seen += run.len();
            }
            pos += k << shift;
        }
        while self.stride > 1 && k < max && pos + group <= end {
            let first = pos >> shift;
            // The sample is a page of the group picked by a hash of its position (unbiased
            // against interleave's period, and the same on every run).
            let rep = first + (first.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % self.stride;
            let (n, f) = (nodes[rep as usize], nodes[first as usize]);
            // Admission last: it counts the sample, which must then be taken.
            if n == crate::pages::NONE
                || f == crate::pages::NONE
                || crate::pages::any_marked(marked, first, ((pos + group - 1) >> shift) - first + 1)
                || !admit(n as usize)
            {
                break;
            }
            pos += group;
            k += 1;
        }
        let per_sample = group as f64 * self.lines_per_byte;
        if k == 0 {
            return (0, per_sample);
        }
        self.pos = pos;
        if self.pos >= end {
            self.range += 1;
            if let Some(&(s, _)) = self.ranges.get(self.range) {
                self.pos = s;
            }
        }
        self.done_lines += k as f64 * per_sample;
        (k, per_sample)
    }

    /// The next visit; `shift` is the region's page shift.
    pub fn next(&mut self, shift: u32, rng: &mut Rng) -> Option<Visit> {
        if self.random_left > 0 {
            self.random_left -= 1;
            let unit = rng.below(self.random_units);
            self.done_lines += self.random_lines;
            return Some(Visit {
                region: self.region,
                unit,
                first: unit,
                units: 1,
                lines: self.random_lines,
                write: self.write,
                rd_share: self.rd_share,
            });
        }
        let &(_, end) = self.ranges.get(self.range)?;
        let unit = self.pos >> shift;
        // The sample covers `stride` pages, clipped to the end of this range.
        let stop = ((unit + self.stride) << shift).min(end);
        let bytes = stop - self.pos;
        let units = ((stop - 1) >> shift) - unit + 1;
        self.pos = stop;
        if self.pos >= end {
            self.range += 1;
            if let Some(&(s, _)) = self.ranges.get(self.range) {
                self.pos = s;
            }
        }
        let lines = bytes as f64 * self.lines_per_byte;
        self.done_lines += lines;
        let sample = if units > 1 { unit + rng.below(units) } else { unit };
        Some(Visit {
            region: self.region,
            unit: sample,
            first: unit,
            units,
            lines,
            write: self.write,
            rd_share: self.rd_share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libgomp_static_schedule() {
        // 10 iterations over 4 threads: 3, 3, 2, 2.
        let shares: Vec<_> = (0..4).map(|t| static_share(10, 4, t)).collect();
        assert_eq!(shares, vec![(0, 3), (3, 6), (6, 8), (8, 10)]);
        // More threads than iterations: the last threads get nothing.
        assert_eq!(static_share(2, 4, 3), (2, 2));
    }

    #[test]
    fn transpose_planes_start_where_the_division_puts_them() {
        use crate::input::RegionSpec;
        // Region sizes that planes do not divide, the bytes of a region past 2^64 / planes
        // (whose products need 128 bits), and more threads than a plane has lines.
        for (bytes, planes, nt) in
            [(10_000u64, 7u64, 3u64), (1 << 40, 162, 64), (u64::MAX / 3, 1000, 5), (5000, 10, 64)]
        {
            // A small region's layout, then the sizes under test (only `ranges` reads them).
            let spec = RegionSpec::anonymous("u", 4096, 1);
            let r = crate::pages::Region { bytes, planes, ..crate::pages::layout(&[spec], vec![None]).pop().unwrap() };
            let a = AccessSpec::sweep(0, Pattern::Transpose, 1.0, 0.0);
            for t in [0, 1, nt - 1] {
                let mut want = Vec::new();
                for p in 0..planes {
                    let (b0, b1) = (plane_start(&r, p), plane_start(&r, p + 1));
                    let (s, e) = static_share((b1 - b0).div_ceil(64), nt, t);
                    if e > s {
                        want.push((b0 + s * 64, (b0 + e * 64).min(b1)));
                    }
                }
                assert_eq!(ranges(&a, &r, t, nt, &[]), want, "{bytes} bytes, {planes} planes, thread {t} of {nt}");
            }
        }
    }

    #[test]
    fn a_collapsed_static_split_divides_planes_times_rows() {
        use crate::input::RegionSpec;
        // 10 planes of 1000 bytes over 4 threads: whole planes give 3, 3, 2, 2 planes; with
        // 10 rows per plane (collapse(2)) every thread gets 25 rows = 2.5 planes.
        let spec = RegionSpec::anonymous("u", 10_000, 10);
        let r = crate::pages::layout(&[spec], vec![None]).pop().unwrap();
        let mut a = AccessSpec::sweep(0, Pattern::Block, 1.0, 0.0);
        let whole: Vec<_> = (0..4).map(|t| ranges(&a, &r, t, 4, &[])).collect();
        assert_eq!(whole, vec![vec![(0, 3000)], vec![(3000, 6000)], vec![(6000, 8000)], vec![(8000, 10_000)]]);
        a.rows = 10;
        let rows: Vec<_> = (0..4).map(|t| ranges(&a, &r, t, 4, &[])).collect();
        assert_eq!(rows, vec![vec![(0, 2500)], vec![(2500, 5000)], vec![(5000, 7500)], vec![(7500, 10_000)]]);
        // A stencil's halo stays a whole plane on each side.
        a.pattern = Pattern::Stencil;
        assert_eq!(ranges(&a, &r, 1, 4, &[]), vec![(1500, 2500), (2500, 5000), (5000, 6000)]);
    }
}
