//! glibc's `malloc` as a program meets it, for first touch (docs/allocation.md §3.5): which
//! 4 KiB pages of each region the C library writes at allocation time, and from which thread.
//!
//! Pure and deterministic: the allocation requests of a process, in program order, give each
//! region its layout (its chunks laid end to end, each keeping its offset within its page) and
//! the pages written while allocating. The rules follow glibc 2.26+ on x86-64:
//! - `malloc/malloc.c: _int_malloc` carves a chunk from the arena's top and writes two size
//!   fields (`set_head` of the chunk, 8 bytes before the user pointer, and of the remaining top
//!   just after it); `sysmalloc` grows the top (main arena: `brk` by `nb + top_pad + MINSIZE`,
//!   page-aligned; other arenas: `grow_heap`, else `new_heap`) or, for `nb >= mmap_threshold`,
//!   `mmap`s the chunk alone, whose header is the only write (its first page);
//! - `__libc_free`: freeing an mmapped chunk larger than the threshold raises the threshold to
//!   its size (at most `DEFAULT_MMAP_THRESHOLD_MAX`, 32 MiB) and the trim threshold to twice
//!   that; a heap chunk goes back to its arena, merges with free neighbours and the top, and a
//!   top above the trim threshold is given back (`systrim`, `heap_trim`);
//! - `__libc_calloc` clears a chunk with `memset` except the part above the arena's high-water
//!   mark (fresh from `brk`/`mprotect`, `MORECORE_CLEARS`) and except mmapped chunks;
//! - `malloc/arena.c: arena_get2`: the main thread uses the main arena (the `brk` heap), every
//!   other thread at its first `malloc` gets a new arena (`_int_new_arena`, a 64 MiB heap
//!   `HEAP_MAX_SIZE` from `new_heap`) until there are `8 x CPUs`, then shares one round-robin
//!   (`reused_arena`).
//!
//! Not modelled: tcache and fastbins (freed chunks are merged at once, as `malloc_consolidate`
//! would), the C library's own allocations before the program's (stdio buffers), `brk` failure.

use std::collections::BTreeMap;

pub const PAGE: u64 = 4096;
const SIZE_SZ: u64 = 8;
const ALIGN: u64 = 16;
const MINSIZE: u64 = 32;
/// `DEFAULT_MMAP_THRESHOLD_MIN` and `DEFAULT_MMAP_THRESHOLD_MAX` (64-bit) in malloc/malloc.c.
pub const MMAP_THRESHOLD_MIN: u64 = 128 << 10;
pub const MMAP_THRESHOLD_MAX: u64 = 32 << 20;
/// `DEFAULT_TRIM_THRESHOLD`, `DEFAULT_TOP_PAD` (mallopt(3): M_TOP_PAD defaults to 128 KiB).
const TRIM_THRESHOLD: u64 = 128 << 10;
const TOP_PAD: u64 = 128 << 10;
/// `DEFAULT_MMAP_MAX`: mmapped chunks alive at once.
const MMAP_MAX: u64 = 65536;
/// `HEAP_MAX_SIZE` = 2 x `DEFAULT_MMAP_THRESHOLD_MAX` (malloc/arena.c), `HEAP_MIN_SIZE`.
pub const HEAP_MAX: u64 = 2 * MMAP_THRESHOLD_MAX;
const HEAP_MIN: u64 = 32 << 10;
/// `sizeof(heap_info)` and `sizeof(struct malloc_state)` on x86-64: a new arena's first heap
/// holds both before its top chunk.
const HEAP_INFO: u64 = 32;
const MALLOC_STATE: u64 = 2192;

/// How a region's memory is obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A static/BSS (or COMMON) array: nothing written before the program writes it.
    Static,
    Malloc,
    Calloc,
    /// The program's own anonymous `mmap`: nothing written.
    Mmap,
}

/// Which thread calls the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum By {
    /// Thread 0, the program's main thread.
    Master,
    /// Every thread allocates its `schedule(static)` share of the chunks.
    EachThread,
    Thread(u32),
}

/// Why the allocating thread wrote a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// A chunk's size field (`set_head`), or an arena's own bookkeeping at its creation.
    Header,
    /// `calloc`'s `memset` of memory that was not fresh.
    Zeroing,
}

/// One region's allocation: `count` chunks of `size` bytes each.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub kind: Kind,
    pub size: u64,
    pub count: u64,
    pub by: By,
    /// Freed (all chunks, in order) right after being allocated, before the next request.
    pub freed: bool,
}

/// Pages `first..first + pages` of a region (4 KiB, from the region's start) first written by
/// `thread` (its index in the process) while allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    pub first: u64,
    pub pages: u64,
    pub thread: u32,
    pub why: Why,
}

/// Where a request's memory went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of the region: its chunks end to end, headers included, each keeping its offset
    /// within its page (so a page of the region is a page of the process).
    pub span: u64,
    pub touched: Vec<Touch>,
    pub heap_chunks: u64,
    pub mmap_chunks: u64,
    /// Arenas the chunks came from (0 = the main arena), ascending.
    pub arenas: Vec<u32>,
}

/// The allocator state of one process.
pub struct Malloc {
    threads: u32,
    arena_max: u64,
    arenas: Vec<Arena>,
    /// Arena of each thread, from its first `malloc`.
    thread_arena: Vec<Option<usize>>,
    /// `next_to_use` of `reused_arena`, as an index into `list` (main arena first, then the
    /// newest arena: `_int_new_arena` links each new arena right after the main one).
    list: Vec<usize>,
    next_to_use: usize,
    mmap_threshold: u64,
    trim_threshold: u64,
    n_mmaps: u64,
    next_map: u64,
    /// First writer of every page of the address space written so far: start page -> (end
    /// page, thread, why), non-overlapping runs.
    pages: BTreeMap<u64, (u64, u32, Why)>,
    /// The page of the last one-page write (already in `pages`).
    last: Option<u64>,
}

struct Arena {
    /// Address of the top chunk and the end of the memory the arena holds after it.
    top: u64,
    end: u64,
    /// End of the memory the arena ever held in its current heap (`max_system_mem` of the main
    /// arena, `mprotect_size` of a heap): `calloc` takes what lies above it as zeroed.
    high: u64,
    /// Start of the current heap (non-main arenas), and whether this is the main arena.
    heap: u64,
    main: bool,
    /// Free chunks: address -> size.
    free: BTreeMap<u64, u64>,
}

/// A chunk handed out: its address (the chunk, 16 bytes before the user pointer), size, and
/// whether it is mmapped.
#[derive(Clone, Copy)]
struct Chunk {
    at: u64,
    size: u64,
    mmapped: bool,
}

/// Allocations per region at most: the model does a few map operations per chunk (about a
/// second for 2^22 chunks of 4 KiB).
pub const MAX_CHUNKS: u64 = 1 << 22;

/// `new_heap`'s size for `size` bytes plus `top_pad` where it fits (`None`: over `HEAP_MAX_SIZE`).
fn heap_size(size: u64) -> Option<u64> {
    let s = if size + TOP_PAD < HEAP_MIN {
        HEAP_MIN
    } else if size + TOP_PAD <= HEAP_MAX {
        size + TOP_PAD
    } else if size > HEAP_MAX {
        return None;
    } else {
        HEAP_MAX
    };
    Some(align_up(s, PAGE))
}

/// `request2size`: the chunk size of a request.
pub fn chunk_size(req: u64) -> u64 {
    ((req + SIZE_SZ + ALIGN - 1) & !(ALIGN - 1)).max(MINSIZE)
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

impl Malloc {
    /// A process of `threads` threads on a machine of `cpus` CPUs (`__get_nprocs`).
    pub fn new(threads: u32, cpus: u32) -> Self {
        let main =
            Arena { top: BRK_BASE, end: BRK_BASE, high: BRK_BASE, heap: BRK_BASE, main: true, free: BTreeMap::new() };
        Malloc {
            threads: threads.max(1),
            arena_max: 8 * cpus.max(1) as u64,
            arenas: vec![main],
            thread_arena: vec![None; threads.max(1) as usize],
            list: vec![0],
            next_to_use: 0,
            mmap_threshold: MMAP_THRESHOLD_MIN,
            trim_threshold: TRIM_THRESHOLD,
            n_mmaps: 0,
            next_map: MAP_BASE,
            pages: BTreeMap::new(),
            last: None,
        }
    }

    /// The layouts of `reqs`, in order. Touches are read at the end, so a page written while
    /// allocating a freed request and not given back counts for the region reusing it.
    pub fn model(mut self, reqs: &[Request]) -> Vec<Layout> {
        let mut pieces: Vec<Vec<(u64, u64)>> = Vec::with_capacity(reqs.len());
        let mut out = Vec::with_capacity(reqs.len());
        for r in reqs {
            let (layout, p) = self.request(r);
            out.push(layout);
            pieces.push(p);
        }
        for (l, p) in out.iter_mut().zip(&pieces) {
            l.touched = self.touches(p);
        }
        out
    }

    /// One request: its layout without touches, and its pieces (address, bytes) in region order.
    fn request(&mut self, r: &Request) -> (Layout, Vec<(u64, u64)>) {
        let mut l = Layout::default();
        match r.kind {
            // One array, nothing written before the program writes it.
            Kind::Static => {
                l.span = r.size.saturating_mul(r.count);
                return (l, Vec::new());
            }
            // One page-aligned mapping per chunk, laid end to end; the kernel writes nothing.
            Kind::Mmap => {
                l.span = (r.count - 1).saturating_mul(align_up(r.size, PAGE)).saturating_add(r.size);
                return (l, Vec::new());
            }
            Kind::Malloc | Kind::Calloc => {}
        }
        let mut chunks = Vec::new();
        let mut arenas = Vec::new();
        for k in 0..r.count {
            let t = match r.by {
                By::Master => 0,
                By::Thread(t) => t.min(self.threads - 1),
                By::EachThread => owner(k, r.count, self.threads as u64) as u32,
            };
            let (a, c) = match self.arena_of(t, chunk_size(r.size)) {
                Some(a) => (a, self.malloc(a, t, r.size, r.kind == Kind::Calloc)),
                // No arena can hold it (`_int_new_arena` failed): sysmalloc mmaps it.
                None => (usize::MAX, self.mmap_chunk(t, chunk_size(r.size))),
            };
            if a != usize::MAX {
                arenas.push(a as u32);
            }
            if c.mmapped {
                l.mmap_chunks += 1;
            } else {
                l.heap_chunks += 1;
            }
            chunks.push((c, a));
        }
        arenas.sort_unstable();
        arenas.dedup();
        l.arenas = arenas;
        // Region order: the chunks as allocated, contiguous ones merged; a jump keeps the page offset.
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        for &(c, _) in &chunks {
            match pieces.last_mut() {
                Some((s, n)) if *s + *n == c.at => *n += c.size,
                _ => pieces.push((c.at, c.size)),
            }
        }
        let mut span = 0;
        for (i, &(s, n)) in pieces.iter().enumerate() {
            span = if i == 0 { s % PAGE } else { align_up(span, PAGE) + s % PAGE };
            span += n;
        }
        l.span = span;
        if r.freed {
            for &(c, a) in &chunks {
                self.free(a, c);
            }
            pieces.clear();
        }
        (l, pieces)
    }

    /// `arena_get2`: the thread's arena, created (for a first request of `nb`) or shared at its
    /// first `malloc`; `None` when a new arena cannot hold the request.
    fn arena_of(&mut self, t: u32, nb: u64) -> Option<usize> {
        if let Some(a) = self.thread_arena[t as usize] {
            return Some(a);
        }
        let a = if t == 0 {
            0
        } else if (self.arenas.len() as u64) < self.arena_max {
            self.new_arena(t, nb)?
        } else {
            let a = self.list[self.next_to_use];
            self.next_to_use = (self.next_to_use + 1) % self.list.len();
            a
        };
        self.thread_arena[t as usize] = Some(a);
        Some(a)
    }

    /// `_int_new_arena`: a heap whose first page holds `heap_info` and the arena's state, sized
    /// for the request that creates it.
    fn new_arena(&mut self, t: u32, nb: u64) -> Option<usize> {
        let size = heap_size(nb + HEAP_INFO + MALLOC_STATE + ALIGN)?;
        let heap = self.new_heap();
        let top = heap + align_up(HEAP_INFO + MALLOC_STATE, ALIGN);
        self.touch(heap, top + ALIGN, t, Why::Header);
        let end = heap + size;
        self.arenas.push(Arena { top, end, high: end, heap, main: false, free: BTreeMap::new() });
        let a = self.arenas.len() - 1;
        self.list.insert(1, a);
        Some(a)
    }

    /// A heap's address: `new_heap` maps `HEAP_MAX_SIZE` aligned to it.
    fn new_heap(&mut self) -> u64 {
        let at = align_up(self.next_map, HEAP_MAX);
        self.next_map = at + HEAP_MAX;
        at
    }

    fn map(&mut self, bytes: u64) -> u64 {
        let at = self.next_map;
        self.next_map += align_up(bytes.max(1), PAGE);
        at
    }

    /// `_int_malloc` (bins, then the top, then `sysmalloc`) and `__libc_calloc`'s clearing.
    fn malloc(&mut self, a: usize, t: u32, req: u64, zero: bool) -> Chunk {
        let nb = chunk_size(req);
        // Best fit among the free chunks, as the sorted large bins pick it.
        let fit = self.arenas[a]
            .free
            .iter()
            .filter(|(_, &s)| s >= nb)
            .min_by_key(|(&at, &s)| (s, at))
            .map(|(&at, &s)| (at, s));
        if let Some((at, size)) = fit {
            self.arenas[a].free.remove(&at);
            let size = if size - nb >= MINSIZE {
                self.arenas[a].free.insert(at + nb, size - nb);
                self.touch(at + nb + SIZE_SZ, at + nb + 2 * SIZE_SZ, t, Why::Header);
                nb
            } else {
                size
            };
            self.touch(at + SIZE_SZ, at + 2 * SIZE_SZ, t, Why::Header);
            if zero {
                self.touch(at + 2 * SIZE_SZ, at + size + SIZE_SZ, t, Why::Zeroing);
            }
            return Chunk { at, size, mmapped: false };
        }
        let old_top = self.arenas[a].top;
        let high = self.arenas[a].high;
        if self.arenas[a].end - self.arenas[a].top < nb + MINSIZE {
            // Past n_mmaps_max glibc grows the heap, or fails where no heap can hold the chunk;
            // the model maps such a chunk anyway.
            let no_heap = !self.arenas[a].main && heap_size(nb + MINSIZE + HEAP_INFO).is_none();
            if nb >= self.mmap_threshold && (self.n_mmaps < MMAP_MAX || no_heap) {
                return self.mmap_chunk(t, nb);
            }
            self.grow(a, t, nb);
        }
        let ar = &mut self.arenas[a];
        let at = ar.top;
        ar.top += nb;
        self.touch(at + SIZE_SZ, at + 2 * SIZE_SZ, t, Why::Header);
        self.touch(at + nb + SIZE_SZ, at + nb + 2 * SIZE_SZ, t, Why::Header);
        if zero {
            // Only what lay below the high-water mark is cleared, and all of a chunk that is not
            // the old top (a new heap's).
            let limit = if at == old_top { high.max(old_top) } else { u64::MAX };
            let end = (at + nb + SIZE_SZ).min(limit);
            if end > at + 2 * SIZE_SZ {
                self.touch(at + 2 * SIZE_SZ, end, t, Why::Zeroing);
            }
        }
        Chunk { at, size: nb, mmapped: false }
    }

    /// sysmalloc's mmap: the chunk alone, its header at the start of the mapping.
    fn mmap_chunk(&mut self, t: u32, nb: u64) -> Chunk {
        let size = align_up(nb + SIZE_SZ, PAGE);
        let at = self.map(size);
        self.n_mmaps += 1;
        self.touch(at + SIZE_SZ, at + 2 * SIZE_SZ, t, Why::Header);
        Chunk { at, size, mmapped: true }
    }

    /// `sysmalloc`'s growth of the top so that `nb + MINSIZE` fit.
    fn grow(&mut self, a: usize, t: u32, nb: u64) {
        let ar = &mut self.arenas[a];
        let old = ar.end - ar.top;
        if ar.main {
            // brk by nb + top_pad + MINSIZE less what the top has, page-aligned.
            ar.end += align_up(nb + TOP_PAD + MINSIZE - old, PAGE);
            ar.high = ar.high.max(ar.end);
            return;
        }
        let need = ar.top + nb + MINSIZE;
        if need <= ar.heap + HEAP_MAX {
            // grow_heap: mprotect more of the reserved heap.
            ar.end = ar.end.max(ar.heap + align_up(need - ar.heap, PAGE));
            ar.high = ar.high.max(ar.end);
            return;
        }
        // new_heap: the old top is freed; the new top follows the new heap's heap_info.
        let (old_top, old_size) = (ar.top, old);
        let size = heap_size(nb + MINSIZE + HEAP_INFO).unwrap_or(HEAP_MAX);
        let heap = self.new_heap();
        let top = heap + HEAP_INFO;
        self.touch(heap, top + ALIGN, t, Why::Header);
        let ar = &mut self.arenas[a];
        if old_size >= MINSIZE {
            ar.free.insert(old_top, old_size - MINSIZE);
        }
        (ar.heap, ar.top, ar.end) = (heap, top, heap + size);
        ar.high = ar.end;
    }

    /// `__libc_free` / `_int_free`.
    fn free(&mut self, a: usize, c: Chunk) {
        if c.mmapped {
            if c.size > self.mmap_threshold && c.size <= MMAP_THRESHOLD_MAX {
                self.mmap_threshold = c.size;
                self.trim_threshold = 2 * c.size;
            }
            self.n_mmaps -= 1;
            self.unmap(c.at, c.at + c.size);
            return;
        }
        let ar = &mut self.arenas[a];
        let (mut at, mut size) = (c.at, c.size);
        if let Some((&p, &ps)) = ar.free.range(..at).next_back() {
            if p + ps == at {
                ar.free.remove(&p);
                (at, size) = (p, size + ps);
            }
        }
        if let Some(&ns) = ar.free.get(&(at + size)) {
            ar.free.remove(&(at + size));
            size += ns;
        }
        if at + size == ar.top {
            ar.top = at;
        } else {
            ar.free.insert(at, size);
            return;
        }
        // systrim / heap_trim: a top above the trim threshold keeps only top_pad.
        let top_size = ar.end - ar.top;
        if size >= FASTBIN_CONSOLIDATION && top_size >= self.trim_threshold && top_size - MINSIZE - 1 > TOP_PAD {
            let extra = (top_size - MINSIZE - 1 - TOP_PAD) / PAGE * PAGE;
            if extra > 0 && (ar.main || ar.end - extra > ar.heap) {
                ar.end -= extra;
                let end = ar.end;
                self.unmap(end, end + extra);
            }
        }
    }

    /// Pages given back to the kernel: their next write is a first touch again.
    fn unmap(&mut self, from: u64, to: u64) {
        self.last = None;
        let (p0, p1) = (from.div_ceil(PAGE), to / PAGE);
        if p1 <= p0 {
            return;
        }
        let inside: Vec<u64> =
            self.pages.range(..p1).rev().take_while(|(_, &(e, _, _))| e > p0).map(|(&s, _)| s).collect();
        for s in inside {
            let (e, t, w) = self.pages.remove(&s).expect("run present");
            if s < p0 {
                self.pages.insert(s, (p0, t, w));
            }
            if e > p1 {
                self.pages.insert(p1, (e, t, w));
            }
        }
    }

    /// Thread `t` writes bytes `from..to`: pages not written before are first-touched by it.
    fn touch(&mut self, from: u64, to: u64, t: u32, why: Why) {
        let (p0, p1) = (from / PAGE, to.div_ceil(PAGE));
        // Consecutive headers mostly fall on the page written last.
        if p1 == p0 + 1 && self.last == Some(p0) {
            return;
        }
        if p1 == p0 + 1 {
            self.last = Some(p0);
        }
        let mut p = p0;
        while p < p1 {
            // The run holding p, if any, else the next run's start.
            if let Some((_, &(e, _, _))) = self.pages.range(..=p).next_back().filter(|(_, &(e, _, _))| e > p) {
                p = e;
                continue;
            }
            let next = self.pages.range(p..).next().map_or(p1, |(&s, _)| s.min(p1));
            self.insert(p, next, t, why);
            p = next;
        }
    }

    /// Insert a run, merged with an adjacent one of the same writer and reason.
    fn insert(&mut self, s: u64, e: u64, t: u32, why: Why) {
        let mut e = e;
        if let Some(&(ne, nt, nw)) = self.pages.get(&e) {
            if nt == t && nw == why {
                self.pages.remove(&e);
                e = ne;
            }
        }
        // Extending the run before in place (headers row after row) spares a remove and an insert.
        if let Some((_, prev)) = self.pages.range_mut(..s).next_back() {
            if prev.0 == s && prev.1 == t && prev.2 == why {
                prev.0 = e;
                return;
            }
        }
        self.pages.insert(s, (e, t, why));
    }

    /// A region's touched pages, in region pages, from its pieces.
    fn touches(&self, pieces: &[(u64, u64)]) -> Vec<Touch> {
        let mut out: Vec<Touch> = Vec::new();
        let mut base = 0u64; // region offset of the current piece's start
        for (i, &(s, n)) in pieces.iter().enumerate() {
            base = if i == 0 { s % PAGE } else { align_up(base, PAGE) + s % PAGE };
            let (p0, p1) = (s / PAGE, (s + n).div_ceil(PAGE));
            let shift = base / PAGE; // region page of piece page p0
            let first = self.pages.range(..=p0).next_back().filter(|(_, &(e, _, _))| e > p0).map(|(&k, _)| k);
            let runs = first.into_iter().chain(self.pages.range(p0 + 1..p1).map(|(&k, _)| k));
            for k in runs {
                let (e, t, why) = self.pages[&k];
                let (a, b) = (k.max(p0), e.min(p1));
                let first = a - p0 + shift;
                match out.last_mut() {
                    Some(l) if l.first + l.pages == first && l.thread == t && l.why == why => l.pages += b - a,
                    _ => out.push(Touch { first, pages: b - a, thread: t, why }),
                }
            }
            base += n;
        }
        out
    }
}

/// `FASTBIN_CONSOLIDATION_THRESHOLD`: frees below it never trim.
const FASTBIN_CONSOLIDATION: u64 = 64 << 10;
/// Where the model puts the `brk` heap and the mappings; only offsets within pages and
/// contiguity matter.
const BRK_BASE: u64 = 0x0100_0000;
const MAP_BASE: u64 = 1 << 40;

/// The thread that allocates chunk `k` of `n` under `schedule(static)` over `nt` threads.
fn owner(k: u64, n: u64, nt: u64) -> u64 {
    let (q, r) = (n / nt, n % nt);
    if k < r * (q + 1) {
        k / (q + 1)
    } else {
        r + (k - r * (q + 1)) / q.max(1)
    }
}

/// The layouts of one process's requests.
pub fn model(reqs: &[Request], threads: u32, cpus: u32) -> Vec<Layout> {
    Malloc::new(threads, cpus).model(reqs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: Kind, size: u64, count: u64, by: By) -> Request {
        Request { kind, size, count, by, freed: false }
    }

    fn pages_by(l: &Layout, thread: u32) -> u64 {
        l.touched.iter().filter(|t| t.thread == thread).map(|t| t.pages).sum()
    }

    #[test]
    fn rows_of_4k_put_a_header_on_nearly_every_page_for_the_master() {
        // 4096-byte rows are 4112-byte chunks: one page in 257 holds no header.
        let n = 4096;
        let l = &model(&[req(Kind::Malloc, 4096, n, By::Master)], 16, 64)[0];
        assert_eq!((l.heap_chunks, l.mmap_chunks, l.arenas.clone()), (n, 0, vec![0]));
        assert_eq!(l.span, n * 4112);
        let pages = l.span.div_ceil(PAGE);
        let touched = pages_by(l, 0);
        assert_eq!(touched, l.touched.iter().map(|t| t.pages).sum::<u64>());
        let headers: std::collections::BTreeSet<u64> =
            (0..=n).map(|k| (k * 4112 + 8) / PAGE).filter(|&p| p < pages).collect();
        assert_eq!(touched, headers.len() as u64);
        assert!(touched * 1000 >= pages * 995, "{touched} of {pages}");
        assert!(l.touched.iter().all(|t| t.why == Why::Header));
    }

    #[test]
    fn one_block_touches_only_its_first_and_last_pages() {
        let size = 100 << 10; // below the mmap threshold: from the brk heap
        let l = &model(&[req(Kind::Malloc, size, 1, By::Master)], 4, 4)[0];
        assert_eq!(l.heap_chunks, 1);
        let first: Vec<u64> = l.touched.iter().map(|t| t.first).collect();
        // The chunk's header and the top's header right after it.
        assert_eq!(first, vec![0, chunk_size(size) / PAGE]);
        assert_eq!(pages_by(l, 0), 2);
    }

    #[test]
    fn requests_just_below_and_at_the_threshold_land_on_both_sides() {
        let below = MMAP_THRESHOLD_MIN - SIZE_SZ - ALIGN; // chunk of 128 KiB - 16
        let at = MMAP_THRESHOLD_MIN - SIZE_SZ; // chunk of 128 KiB exactly
        assert_eq!((chunk_size(below), chunk_size(at)), (MMAP_THRESHOLD_MIN - ALIGN, MMAP_THRESHOLD_MIN));
        let (lo, hi) = (
            &model(&[req(Kind::Malloc, below, 1, By::Master)], 1, 1)[0],
            &model(&[req(Kind::Malloc, at, 1, By::Master)], 1, 1)[0],
        );
        assert_eq!((lo.heap_chunks, lo.mmap_chunks), (1, 0));
        assert_eq!((hi.heap_chunks, hi.mmap_chunks), (0, 1));
        // The mmapped chunk: its header, on the mapping's first page, is the only write.
        assert_eq!(hi.touched, vec![Touch { first: 0, pages: 1, thread: 0, why: Why::Header }]);
        assert_eq!(hi.span, align_up(at + 2 * SIZE_SZ, PAGE));
        // The threshold applies only when the top cannot serve: after the first request, brk
        // left top_pad (128 KiB) in the top, which serves the second.
        let l = model(&[req(Kind::Malloc, below, 1, By::Master), req(Kind::Malloc, at, 1, By::Master)], 1, 1);
        assert_eq!((l[1].heap_chunks, l[1].mmap_chunks), (1, 0));
    }

    #[test]
    fn freeing_an_mmapped_chunk_raises_the_threshold() {
        let big = 1 << 20;
        let mut first = req(Kind::Malloc, big, 1, By::Master);
        first.freed = true;
        let l = model(&[first, req(Kind::Malloc, big, 1, By::Master)], 1, 1);
        assert_eq!((l[0].mmap_chunks, l[1].heap_chunks), (1, 1), "the second request comes from the heap");
        // Past DEFAULT_MMAP_THRESHOLD_MAX the threshold stays.
        let huge = 40 << 20;
        let mut first = req(Kind::Malloc, huge, 1, By::Master);
        first.freed = true;
        let l = model(&[first, req(Kind::Malloc, big * 2, 1, By::Master)], 1, 1);
        assert_eq!(l[1].mmap_chunks, 1);
    }

    #[test]
    fn a_worker_allocates_from_its_own_arena() {
        let l = model(&[req(Kind::Malloc, 4096, 64, By::Thread(3)), req(Kind::Malloc, 4096, 64, By::EachThread)], 4, 4);
        assert_eq!(l[0].arenas, vec![1]);
        assert_eq!(pages_by(&l[0], 3), l[0].touched.iter().map(|t| t.pages).sum::<u64>());
        // Each thread its own arena; thread 3 keeps the one it has.
        assert_eq!(l[1].arenas, vec![0, 1, 2, 3]);
        for t in 0..4 {
            assert!(pages_by(&l[1], t) >= 16, "thread {t}: {:?}", l[1].touched);
        }
    }

    #[test]
    fn arenas_are_shared_past_eight_per_cpu() {
        let l = model(&[req(Kind::Malloc, 64, 20, By::EachThread)], 20, 2);
        // 16 arenas for 2 CPUs: threads 16..19 reuse the main arena, then the newest ones.
        assert_eq!(l[0].arenas, (0..16).collect::<Vec<u32>>());
    }

    #[test]
    fn calloc_clears_reused_memory_but_not_fresh_memory() {
        let size = 96 << 10;
        // Fresh from brk: only headers.
        let fresh = &model(&[req(Kind::Calloc, size, 1, By::Master)], 2, 2)[0];
        assert!(fresh.touched.iter().all(|t| t.why == Why::Header));
        // Memory a freed block gave back: calloc's memset writes every page, from the caller.
        let mut tmp = req(Kind::Malloc, size, 1, By::Thread(1));
        tmp.freed = true;
        let l = model(&[tmp, req(Kind::Calloc, size, 1, By::Thread(1))], 2, 2);
        let pages = l[1].span.div_ceil(PAGE);
        assert_eq!(pages_by(&l[1], 1), pages);
        assert!(l[1].touched.iter().any(|t| t.why == Why::Zeroing));
        // The same calloc by the master, from the main arena's slack (below its high-water mark).
        let mut tmp = req(Kind::Malloc, size, 1, By::Master);
        tmp.freed = true;
        let l = model(&[tmp, req(Kind::Calloc, size, 1, By::Master)], 2, 2);
        assert_eq!(pages_by(&l[1], 0), pages);
    }

    #[test]
    fn static_and_mmap_regions_are_untouched() {
        let l = model(&[req(Kind::Static, 1 << 20, 1, By::Master), req(Kind::Mmap, 10_000, 3, By::Master)], 2, 2);
        assert!(l[0].touched.is_empty() && l[1].touched.is_empty());
        assert_eq!((l[0].span, l[1].span), (1 << 20, 2 * 12288 + 10_000));
    }

    #[test]
    fn freeing_a_large_top_chunk_trims_it() {
        let mut a = Malloc::new(1, 1);
        let mut big = req(Kind::Malloc, 100 << 10, 8, By::Master);
        big.freed = true;
        a.request(&big);
        // Everything merged back into the top, which kept top_pad: the pages beyond are gone.
        let ar = &a.arenas[0];
        assert_eq!(ar.top, BRK_BASE);
        assert!(ar.end - ar.top <= TOP_PAD + PAGE + MINSIZE, "{}", ar.end - ar.top);
        assert!(a.pages.values().all(|&(e, _, _)| e * PAGE <= ar.end + PAGE));
    }

    #[test]
    fn the_model_is_deterministic() {
        let reqs = [
            req(Kind::Calloc, 3000, 500, By::EachThread),
            Request { freed: true, ..req(Kind::Malloc, 1 << 21, 2, By::Thread(2)) },
            req(Kind::Malloc, 1 << 21, 3, By::Master),
        ];
        assert_eq!(model(&reqs, 8, 4), model(&reqs, 8, 4));
    }
}
