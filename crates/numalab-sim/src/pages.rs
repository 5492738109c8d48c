//! Page tables: one per region of each process, one entry per page (4 KiB, or 2 MiB when the
//! region uses THP), holding the node of the page or `NONE` before its first write.
//!
//! Regions get virtual addresses as `mmap` hands them out: top-down from `MMAP_BASE`, each
//! aligned to 2 MiB (what kernels since 6.7 do for anonymous mappings of 2 MiB or more), so the
//! interleave index of a page is its virtual page number (docs/allocation.md §4.3).

use crate::input::RegionSpec;
use crate::mempolicy::Resolved;

pub const NONE: u8 = u8::MAX;
/// Entries per page-table chunk (256 MiB of 4 KiB pages): chunks are allocated at the first
/// write inside them, so a region larger than the machine costs table memory only where pages
/// were actually placed.
const CHUNK_SHIFT: u32 = 16;
const CHUNK: usize = 1 << CHUNK_SHIFT;
static EMPTY: [u8; CHUNK] = [NONE; CHUNK];

/// The node of every entry of a region (`NONE` before its first write), allocated chunk by chunk.
pub struct PageTable {
    len: usize,
    chunks: Vec<Option<Box<[u8]>>>,
}

impl PageTable {
    pub fn new(len: usize) -> Self {
        PageTable { len, chunks: (0..len.div_ceil(CHUNK)).map(|_| None).collect() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&u8> {
        (i < self.len).then(|| &self[i])
    }

    /// Entries `first..` up to `max` of them, as far as the chunk holding `first` goes.
    #[inline]
    pub fn run(&self, first: usize, max: usize) -> &[u8] {
        let (c, o) = (first >> CHUNK_SHIFT, first & (CHUNK - 1));
        let n = max.min(CHUNK - o).min(self.len - first);
        match &self.chunks[c] {
            Some(chunk) => &chunk[o..o + n],
            None => &EMPTY[o..o + n],
        }
    }

    /// Bytes of table allocated so far.
    pub fn allocated_bytes(&self) -> usize {
        self.chunks.iter().flatten().count() * CHUNK
    }
}

impl std::ops::Index<usize> for PageTable {
    type Output = u8;

    #[inline]
    fn index(&self, i: usize) -> &u8 {
        assert!(i < self.len, "page-table entry {i} of {}", self.len);
        match &self.chunks[i >> CHUNK_SHIFT] {
            Some(chunk) => &chunk[i & (CHUNK - 1)],
            None => &NONE,
        }
    }
}

/// Writing an entry allocates its chunk.
impl std::ops::IndexMut<usize> for PageTable {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut u8 {
        assert!(i < self.len, "page-table entry {i} of {}", self.len);
        let chunk = self.chunks[i >> CHUNK_SHIFT].get_or_insert_with(|| vec![NONE; CHUNK].into_boxed_slice());
        &mut chunk[i & (CHUNK - 1)]
    }
}
const MMAP_BASE: u64 = 0x7f00_0000_0000;
const ALIGN: u64 = 2 << 20;

pub struct Region {
    pub name: String,
    pub bytes: u64,
    pub planes: u64,
    /// log2 of the page size: 12 (4 KiB) or 21 (2 MiB THP).
    pub shift: u32,
    pub vm_start: u64,
    pub node: PageTable,
    /// The VMA policy (`mbind`), if any.
    pub policy: Option<Resolved>,
    /// NUMA balancing only (empty otherwise): one bit per entry, set while the mapping is
    /// PROT_NONE for a hinting fault.
    pub marked: Vec<u64>,
    /// How many entries `marked` has set (kept by `set_marked`): a run over a region with none
    /// skips the bitmap (`marked_or_none`).
    pub nr_marked: u64,
    /// NUMA balancing only: `last_cpupid` per entry (a THP has one), `CPUPID_UNSET` until the
    /// first hinting fault.
    pub cpupid: Vec<u32>,
    /// Pages a fault fills from the page cache: 0 for anonymous memory, 1 for a file mapping
    /// under MADV_RANDOM, `READAROUND_PAGES` for a file mapping (`fault_window`).
    pub readaround: u64,
    /// A segment several processes map (shared memory or a shared file mapping,
    /// docs/corun.md §6): its pages are the segment's, whoever faults them in.
    pub shared: bool,
    /// The other mappings of the same segment, as (process, region): they see the same page on
    /// the same node (`Engine::mirror`).
    pub mappers: Vec<(usize, usize)>,
    /// (k, P): this mapping is process k of the P that split the segment, and its partitioned
    /// accesses cover only slice k (`pattern::ranges`); (0, 1) for the whole region.
    pub part: (u64, u64),
}

/// The mmap read-around window of a file fault: `ra_pages` = VM_READAHEAD_PAGES, 128 KiB
/// (include/linux/mm.h), started `ra_pages / 2` before the faulting page
/// (mm/filemap.c: do_sync_mmap_readahead, "mmap read-around"); MADV_RANDOM (VM_RAND_READ)
/// skips it. Pages it brings in are mapped by later faults or by fault-around
/// (mm/memory.c: do_fault_around, fault_around_bytes 64 KiB) without a new allocation.
pub const READAROUND_PAGES: u64 = 32;

/// Entries a fault on entries `first..first + n` fills: those, or for a file mapping the
/// read-around window around them (clipped to the region by the caller).
pub fn fault_window(r: &Region, first: u64, n: u64) -> (u64, u64) {
    if r.readaround <= 1 {
        return (first, first + n);
    }
    let half = r.readaround / 2;
    (first.saturating_sub(half), (first + half).max(first + n))
}

/// `last_cpupid` of a page no task has faulted on yet (all bits set, as the kernel resets it).
pub const CPUPID_UNSET: u32 = u32::MAX;

impl Region {
    pub fn page_bytes(&self) -> u64 {
        1 << self.shift
    }

    pub fn units(&self) -> u64 {
        self.node.len() as u64
    }

    /// Base (4 KiB) pages in one entry.
    pub fn base_pages(&self) -> u64 {
        1 << (self.shift - 12)
    }

    /// The interleave index of entry `u`: its virtual page number at this page size, or for a
    /// shared segment its page offset in the segment, the same for every mapper
    /// (mm/shmem.c: shmem_get_pgoff_policy, `i_ino + index`, the inode number taken as 0).
    pub fn ilx(&self, u: u64) -> u64 {
        if self.shared {
            return u;
        }
        (self.vm_start >> self.shift) + u
    }

    /// End of the VMA (the engine gives a THP region whole huge pages).
    pub fn vm_end(&self) -> u64 {
        self.vm_start + (self.units() << self.shift)
    }

    /// Allocate the per-page state NUMA balancing needs.
    pub fn enable_balancing(&mut self) {
        self.marked = vec![0; self.node.len().div_ceil(64)];
        self.nr_marked = 0;
        self.cpupid = vec![CPUPID_UNSET; self.node.len()];
    }

    #[inline]
    pub fn is_marked(&self, u: u64) -> bool {
        self.marked[(u >> 6) as usize] & (1 << (u & 63)) != 0
    }

    #[inline]
    pub fn set_marked(&mut self, u: u64, on: bool) {
        let (w, b) = ((u >> 6) as usize, 1u64 << (u & 63));
        let was = self.marked[w] & b != 0;
        if on {
            self.marked[w] |= b;
        } else {
            self.marked[w] &= !b;
        }
        if on != was {
            if on {
                self.nr_marked += 1;
            } else {
                self.nr_marked -= 1;
            }
        }
    }

    /// The marks to check, or none (as with balancing off) when no entry is marked: every
    /// check then finds nothing marked, as it would in the all-zero bitmap, without reading it.
    #[inline]
    pub fn marked_or_none(&self) -> &[u64] {
        if self.nr_marked == 0 {
            &[]
        } else {
            &self.marked
        }
    }
}

/// True if any of entries `first..first + n` is marked (`marked` empty: balancing off).
#[inline]
pub fn any_marked(marked: &[u64], first: u64, n: u64) -> bool {
    if marked.is_empty() || n == 0 {
        return false;
    }
    let last = first + n - 1;
    let (w0, w1) = ((first >> 6) as usize, (last >> 6) as usize);
    let lo = !0u64 << (first & 63);
    let hi = !0u64 >> (63 - (last & 63));
    if w0 == w1 {
        return marked[w0] & lo & hi != 0;
    }
    marked[w0] & lo != 0 || marked[w0 + 1..w1].iter().any(|&x| x != 0) || marked[w1] & hi != 0
}

/// How many of entries `first..first + n` come before the first marked one (`n` if none is;
/// `marked` empty: balancing off). A word at a time, so a run of page visits under NUMA
/// balancing is scanned like one without it.
#[inline]
pub fn unmarked_run(marked: &[u64], first: u64, n: u64) -> u64 {
    if marked.is_empty() {
        return n;
    }
    let end = first + n;
    let mut u = first;
    while u < end {
        let w = marked[(u >> 6) as usize] >> (u & 63);
        if w != 0 {
            return (u + w.trailing_zeros() as u64).min(end) - first;
        }
        u = (u | 63) + 1;
    }
    n
}

/// Lay out a process's regions and create their empty page tables.
pub fn layout(specs: &[RegionSpec], policies: Vec<Option<Resolved>>) -> Vec<Region> {
    let mut top = MMAP_BASE;
    specs
        .iter()
        .zip(policies)
        .map(|(s, policy)| {
            // The page cache of a file is modelled in 4 KiB pages (no large folios).
            let shift = if s.thp && s.file.is_none() { 21 } else { 12 };
            let vm_start = s.address.unwrap_or_else(|| {
                top -= s.bytes.div_ceil(ALIGN) * ALIGN;
                top
            });
            let units = s.bytes.div_ceil(1 << shift);
            Region {
                name: s.name.clone(),
                bytes: s.bytes,
                planes: s.planes,
                shift,
                vm_start,
                node: PageTable::new(units as usize),
                policy,
                marked: Vec::new(),
                nr_marked: 0,
                cpupid: Vec::new(),
                readaround: match s.file {
                    None => 0,
                    Some(f) if f.random => 1,
                    Some(_) => READAROUND_PAGES,
                },
                shared: false,
                mappers: Vec::new(),
                part: (0, 1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmarked_run_stops_at_the_first_marked_entry() {
        let mut marked = vec![0u64; 4];
        for u in [5u64, 64, 130, 255] {
            marked[(u >> 6) as usize] |= 1 << (u & 63);
        }
        let slow = |first: u64, n: u64| (0..n).take_while(|&i| !any_marked(&marked, first + i, 1)).count() as u64;
        for first in 0..256 {
            for n in 0..=(256 - first).min(140) {
                assert_eq!(unmarked_run(&marked, first, n), slow(first, n), "first {first}, n {n}");
            }
        }
        assert_eq!(unmarked_run(&[], 3, 7), 7);
    }

    /// Runs skip the bitmap of a region whose count is 0: the count must be the set bits.
    #[test]
    fn nr_marked_counts_the_marked_entries() {
        let spec = RegionSpec::anonymous("a", 300 * 4096, 1);
        let mut r = layout(&[spec], vec![None]).pop().unwrap();
        assert!(r.marked_or_none().is_empty(), "balancing off");
        r.enable_balancing();
        assert!(r.marked_or_none().is_empty(), "nothing marked yet");
        for (u, on) in [(5, true), (5, true), (64, true), (299, true), (7, false), (5, false), (64, false)] {
            r.set_marked(u, on);
            let set: u32 = r.marked.iter().map(|w| w.count_ones()).sum();
            assert_eq!(r.nr_marked, set as u64, "after entry {u} set to {on}");
        }
        assert_eq!(r.marked_or_none().len(), 5, "entry 299 still marked");
        r.set_marked(299, false);
        assert!(r.marked_or_none().is_empty());
    }

    #[test]
    fn page_table_allocates_a_chunk_at_its_first_write_only() {
        let mut t = PageTable::new(10 * CHUNK + 5);
        assert_eq!((t[0], t[10 * CHUNK + 4], t.allocated_bytes()), (NONE, NONE, 0), "reads allocate nothing");
        t[3 * CHUNK + 7] = 2;
        t[3 * CHUNK + 8] = 1;
        assert_eq!(t.allocated_bytes(), CHUNK);
        assert_eq!((t[3 * CHUNK + 7], t[3 * CHUNK + 6]), (2, NONE));
        // A run stops at its chunk's end; the last chunk is as long as the table.
        assert_eq!(t.run(3 * CHUNK + 7, 5), &[2, 1, NONE, NONE, NONE]);
        assert_eq!(t.run(4 * CHUNK - 2, 100).len(), 2);
        assert_eq!(t.run(10 * CHUNK, 100).len(), 5);
        assert_eq!(t.get(10 * CHUNK + 5), None);
    }
}
