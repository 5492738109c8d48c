//! numactl's node and CPU string grammar (libnuma `numa_parse_nodestring` / `numa_parse_cpustring`):
//! `all`, `0-3,5`, `!1` (everything allowed but 1), `+0-1` (relative: the 0th and 1st allowed index).
//!
//! Parsing is done against the set of indexes that exist (and are allowed), so `all` and `!` have a
//! meaning and a number that does not exist is an error naming that token.

use crate::bitmap::Bitmap;

/// What the string lists: node numbers or CPU numbers (only changes the wording of errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    Node,
    Cpu,
}

impl IndexKind {
    fn word(self) -> &'static str {
        match self {
            IndexKind::Node => "node",
            IndexKind::Cpu => "cpu",
        }
    }
}

/// Parse a numactl node (or CPU) string against the `allowed` set, which is also what `all` means.
pub fn parse_indexstring(s: &str, allowed: &Bitmap, kind: IndexKind) -> Result<Bitmap, String> {
    let word = kind.word();
    let text = s.trim();
    if text.is_empty() {
        return Err(format!("empty {word} string (expected e.g. all, 0-3,5, !1 or +0-1)"));
    }
    let (invert, rest) = match text.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, text),
    };
    let (relative, body) = match rest.strip_prefix('+') {
        Some(r) => (true, r.trim_start()),
        None => (false, rest),
    };
    let mut set = if body == "all" {
        allowed.clone()
    } else {
        let mut set = Bitmap::new();
        for tok in body.split(',') {
            let tok = tok.trim();
            let (a, z) = parse_range(tok, s, word)?;
            for i in a..=z {
                let idx = if relative {
                    allowed.nth(i as usize).ok_or_else(|| {
                        format!(
                            "relative {word} {i} in '{s}' is out of range (only {} allowed: {})",
                            allowed.weight(),
                            allowed
                        )
                    })?
                } else {
                    i
                };
                if !allowed.contains(idx) {
                    return Err(format!("{word} {idx} in '{s}' does not exist on this machine ({word}s: {})", allowed));
                }
                set.set(idx);
            }
        }
        set
    };
    if invert {
        set = allowed.difference(&set);
    }
    if set.is_empty() {
        return Err(format!("{word} string '{s}' selects no {word}"));
    }
    Ok(set)
}

fn parse_range(tok: &str, whole: &str, word: &str) -> Result<(u32, u32), String> {
    let bad = || format!("bad token '{tok}' in {word} string '{whole}' (expected a number, a range a-b, or all)");
    if tok.is_empty() {
        return Err(bad());
    }
    let num = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
    match tok.split_once('-') {
        Some((a, z)) => {
            let (a, z) = (num(a)?, num(z)?);
            if z < a {
                return Err(format!("bad range '{tok}' in {word} string '{whole}': end is below start"));
            }
            Ok((a, z))
        }
        None => {
            let v = num(tok)?;
            Ok((v, v))
        }
    }
}

/// Parse a node string (`--membind`, `--interleave`, `--cpunodebind`, ...).
pub fn parse_nodestring(s: &str, nodes: &Bitmap) -> Result<Bitmap, String> {
    parse_indexstring(s, nodes, IndexKind::Node)
}

/// Parse a CPU string (`--physcpubind`).
pub fn parse_cpustring(s: &str, cpus: &Bitmap) -> Result<Bitmap, String> {
    parse_indexstring(s, cpus, IndexKind::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eight() -> Bitmap {
        Bitmap::parse_list("0-7").unwrap()
    }

    #[test]
    fn grammar() {
        let n = eight();
        let p = |s: &str| parse_nodestring(s, &n).map(|b| b.to_list_string());
        assert_eq!(p("all").unwrap(), "0-7");
        assert_eq!(p("0-3,5").unwrap(), "0-3,5");
        assert_eq!(p("!1").unwrap(), "0,2-7");
        assert_eq!(p("!0-6").unwrap(), "7");
        assert_eq!(p(" 2 ").unwrap(), "2");
    }

    #[test]
    fn relative_is_counted_in_the_allowed_set() {
        let allowed = Bitmap::parse_list("2,4,6").unwrap();
        assert_eq!(parse_nodestring("+0-1", &allowed).unwrap().to_list_string(), "2,4");
        let e = parse_nodestring("+3", &allowed).unwrap_err();
        assert!(e.contains("relative node 3"), "{e}");
    }

    #[test]
    fn errors_name_the_bad_token() {
        let n = eight();
        let e = parse_nodestring("0,9", &n).unwrap_err();
        assert!(e.contains("node 9") && e.contains("0-7"), "{e}");
        let e = parse_nodestring("0,x", &n).unwrap_err();
        assert!(e.contains("'x'"), "{e}");
        let e = parse_nodestring("3-1", &n).unwrap_err();
        assert!(e.contains("'3-1'"), "{e}");
        assert!(parse_nodestring("", &n).is_err());
        assert!(parse_nodestring("!all", &n).unwrap_err().contains("selects no node"));
        let e = parse_cpustring("64", &Bitmap::parse_list("0-63").unwrap()).unwrap_err();
        assert!(e.starts_with("cpu 64"), "{e}");
    }
}
