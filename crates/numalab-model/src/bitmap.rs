//! `Bitmap`: a set of OS indexes (CPUs or NUMA nodes), as hwloc's `hwloc_bitmap_t` and the kernel's
//! cpumask/nodemask. `CpuSet` and `NodeSet` are the two names it goes by.
//!
//! Printed as Linux cpulists (`0-3,8`), the format of `/sys/devices/system/node/nodeN/cpulist`, or as
//! hwloc's hexadecimal cpuset strings (`0x000000ff,0xffffffff`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Parsed indexes must be below this, so that a text of a few bytes (`4294967295`, `0-4294967295`)
/// cannot make a 512 MiB bitmap or a four-billion-step loop: 8 x the largest `NR_CPUS` Linux builds
/// with (8192, arch/x86/Kconfig `NR_CPUS_RANGE_END`), and far above `MAX_NUMNODES` (at most 1024).
pub const MAX_INDEX: u32 = 1 << 16;

/// A set of OS indexes, kept sorted and deduplicated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bitmap {
    words: Vec<u64>,
}

/// A set of PU (logical CPU) OS indexes.
pub type CpuSet = Bitmap;
/// A set of NUMA node OS indexes.
pub type NodeSet = Bitmap;

impl Bitmap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_indexes<I: IntoIterator<Item = u32>>(it: I) -> Self {
        let mut b = Self::new();
        for i in it {
            b.set(i);
        }
        b
    }

    pub fn set(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (i % 64);
    }

    pub fn clear(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if w < self.words.len() {
            self.words[w] &= !(1u64 << (i % 64));
            self.trim();
        }
    }

    pub fn contains(&self, i: u32) -> bool {
        let w = (i / 64) as usize;
        w < self.words.len() && self.words[w] & (1u64 << (i % 64)) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Number of set bits (the kernel's `nodes_weight`).
    pub fn weight(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Set bits in ascending order. Zero words are skipped and a word's bits found by counting
    /// trailing zeros: a PU's set is as wide as its index, so testing every bit made machines of
    /// 65,536 PUs cost billions of steps.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().filter(|(_, &w)| w != 0).flat_map(|(wi, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                Some(wi as u32 * 64 + b)
            })
        })
    }

    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<u32> {
        // Words are trimmed: the last one, if any, is not zero.
        let (wi, w) = self.words.iter().enumerate().rev().find(|(_, &w)| w != 0)?;
        Some(wi as u32 * 64 + 63 - w.leading_zeros())
    }

    /// The `n`-th set bit counting from 0 (the kernel's interleave pick), if any.
    pub fn nth(&self, n: usize) -> Option<u32> {
        self.iter().nth(n)
    }

    pub fn union(&self, other: &Self) -> Self {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.words.get(i).copied().unwrap_or(0) | other.words.get(i).copied().unwrap_or(0))
            .collect();
        Self { words }.trimmed()
    }

    pub fn intersection(&self, other: &Self) -> Self {
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect();
        Self { words }.trimmed()
    }

    pub fn difference(&self, other: &Self) -> Self {
        let words = self.words.iter().enumerate().map(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0)).collect();
        Self { words }.trimmed()
    }

    pub fn is_subset(&self, other: &Self) -> bool {
        self.difference(other).is_empty()
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    fn trimmed(mut self) -> Self {
        self.trim();
        self
    }

    /// Linux cpulist format: `0-3,8,10-11` (empty string for the empty set).
    pub fn to_list_string(&self) -> String {
        let mut out = Vec::new();
        let mut run: Option<(u32, u32)> = None;
        for i in self.iter() {
            run = match run {
                Some((a, b)) if b + 1 == i => Some((a, i)),
                Some(r) => {
                    out.push(fmt_run(r));
                    Some((i, i))
                }
                None => Some((i, i)),
            };
        }
        if let Some(r) = run {
            out.push(fmt_run(r));
        }
        out.join(",")
    }

    /// Parse a Linux cpulist (`0-3,8`, whitespace and a trailing newline allowed; empty = empty set).
    pub fn parse_list(s: &str) -> Result<Self, String> {
        let mut b = Self::new();
        for tok in s.trim().split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (a, z) = match tok.split_once('-') {
                Some((a, z)) => (parse_index(a, tok)?, parse_index(z, tok)?),
                None => {
                    let v = parse_index(tok, tok)?;
                    (v, v)
                }
            };
            if z < a {
                return Err(format!("bad range '{tok}': end is below start"));
            }
            if z >= MAX_INDEX {
                return Err(format!("index {z} in '{tok}' is too large (indexes must be below {MAX_INDEX}; Linux has at most 8192 CPUs)"));
            }
            for i in a..=z {
                b.set(i);
            }
        }
        Ok(b)
    }

    /// hwloc's cpuset string: 32-bit hex words, most significant first, comma separated
    /// (`0x000000ff`, `0x00000001,0xffffffff`); `0x0` for the empty set.
    pub fn to_hwloc_string(&self) -> String {
        let mut words32: Vec<u32> =
            self.words.iter().flat_map(|w| [(*w & 0xffff_ffff) as u32, (*w >> 32) as u32]).collect();
        while words32.len() > 1 && words32.last() == Some(&0) {
            words32.pop();
        }
        if words32.is_empty() {
            return "0x0".to_string();
        }
        words32.iter().rev().map(|w| format!("0x{w:08x}")).collect::<Vec<_>>().join(",")
    }

    /// Parse hwloc's cpuset string (see [`Bitmap::to_hwloc_string`]), indexes below [`MAX_INDEX`].
    pub fn parse_hwloc(s: &str) -> Result<Self, String> {
        Self::parse_hwloc_below(s, MAX_INDEX)
    }

    /// Parse hwloc's cpuset string, refusing a set bit at or above `limit` before the set is
    /// built. Words are listed most significant first; an empty word between commas is zero.
    /// Errors quote the input, shortened.
    pub fn parse_hwloc_below(s: &str, limit: u32) -> Result<Self, String> {
        let text = s.trim();
        if text.starts_with(INFINITE_PREFIX) {
            return Err(format!("'{s}' is an infinite set; numalab needs the actual CPUs or nodes"));
        }
        let mut b = Self::new();
        for (k, word) in text.split(',').rev().enumerate() {
            let word = word.trim();
            if word.is_empty() {
                continue;
            }
            let hex = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")).unwrap_or(word);
            if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!(
                    "bad bitmap word '{}' in '{}' (expected hex words like 0x000000ff)",
                    shorten(word),
                    shorten(s)
                ));
            }
            let digits = hex.trim_start_matches('0');
            let v = match u32::from_str_radix(if digits.is_empty() { "0" } else { digits }, 16) {
                Ok(v) => v,
                Err(_) => {
                    return Err(format!("bitmap word '{}' in '{}' has more than 32 bits", shorten(word), shorten(s)))
                }
            };
            let top = k as u64 * 32 + u64::from(32 - v.leading_zeros());
            if v != 0 && top > u64::from(limit) {
                return Err(format!("'{}' sets bit {}, beyond the limit of {limit}", shorten(s), top - 1));
            }
            for bit in 0..32u32 {
                if v & (1 << bit) != 0 {
                    b.set(k as u32 * 32 + bit);
                }
            }
        }
        Ok(b)
    }
}

/// hwloc's prefix for a set whose bits run to infinity (an unrestricted allowed set).
pub const INFINITE_PREFIX: &str = "0xf...f";

/// Errors quote the input, but not a megabyte of it (60 characters at most).
pub fn shorten(text: &str) -> String {
    if text.chars().count() <= 60 {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(57).collect::<String>())
    }
}

fn fmt_run((a, b): (u32, u32)) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

fn parse_index(s: &str, tok: &str) -> Result<u32, String> {
    s.trim().parse::<u32>().map_err(|_| format!("bad token '{tok}': expected a number or a range a-b"))
}

impl fmt::Display for Bitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list_string())
    }
}

impl Serialize for Bitmap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list_string())
    }
}

impl<'de> Deserialize<'de> for Bitmap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Bitmap::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trip() {
        let b = Bitmap::parse_list("0-3,8,10-11\n").unwrap();
        assert_eq!(b.to_list_string(), "0-3,8,10-11");
        assert_eq!(b.weight(), 7);
        assert_eq!(b.nth(4), Some(8));
        assert_eq!(Bitmap::parse_list("").unwrap(), Bitmap::new());
    }

    #[test]
    fn list_errors_name_the_token() {
        let e = Bitmap::parse_list("0-3,x").unwrap_err();
        assert!(e.contains("'x'"), "{e}");
        assert!(Bitmap::parse_list("5-2").unwrap_err().contains("'5-2'"));
    }

    #[test]
    fn hwloc_round_trip() {
        let b = Bitmap::parse_list("0-7,40").unwrap();
        let s = b.to_hwloc_string();
        assert_eq!(s, "0x00000100,0x000000ff");
        assert_eq!(Bitmap::parse_hwloc(&s).unwrap(), b);
        assert_eq!(Bitmap::new().to_hwloc_string(), "0x0");
        assert_eq!(Bitmap::parse_hwloc("0x0").unwrap(), Bitmap::new());
    }

    #[test]
    fn huge_indexes_are_refused_before_allocating() {
        let e = Bitmap::parse_list("4294967295").unwrap_err();
        assert!(e.contains("4294967295") && e.contains("65536"), "{e}");
        assert!(Bitmap::parse_list("0-4294967295").unwrap_err().contains("too large"));
        assert_eq!(Bitmap::parse_list("65535").unwrap().last(), Some(65535));
        let mut words = vec!["0x00000001"];
        words.extend(std::iter::repeat_n("0x0", 2048));
        assert!(Bitmap::parse_hwloc(&words.join(",")).unwrap_err().contains("65536"));
    }

    #[test]
    fn hwloc_errors_name_the_word_and_the_limit() {
        let e = Bitmap::parse_hwloc("0xzz,0x1").unwrap_err();
        assert_eq!(e, "bad bitmap word '0xzz' in '0xzz,0x1' (expected hex words like 0x000000ff)");
        assert!(Bitmap::parse_hwloc("+ff").unwrap_err().starts_with("bad bitmap word '+ff'"));
        assert!(Bitmap::parse_hwloc("0x1ffffffff").unwrap_err().contains("has more than 32 bits"));
        assert!(Bitmap::parse_hwloc("0xf...f,0x0").unwrap_err().contains("is an infinite set"));
        assert_eq!(Bitmap::parse_hwloc_below("0x10", 4).unwrap_err(), "'0x10' sets bit 4, beyond the limit of 4");
        assert_eq!(Bitmap::parse_hwloc_below("0x8", 4).unwrap().to_list_string(), "3");
        assert_eq!(Bitmap::parse_hwloc("0x1,,0X0000000f").unwrap().to_list_string(), "0-3,64");
        assert_eq!(Bitmap::parse_hwloc("ff").unwrap().to_list_string(), "0-7");
        let long = format!("0xzz{}", ",0x0".repeat(40));
        assert!(Bitmap::parse_hwloc(&long).unwrap_err().contains("..."));
    }

    #[test]
    fn set_algebra() {
        let a = Bitmap::parse_list("0-5").unwrap();
        let b = Bitmap::parse_list("4-70").unwrap();
        assert_eq!(a.intersection(&b).to_list_string(), "4-5");
        assert_eq!(a.difference(&b).to_list_string(), "0-3");
        assert_eq!(a.union(&b).to_list_string(), "0-70");
        assert!(Bitmap::parse_list("1,2").unwrap().is_subset(&a));
    }
}
