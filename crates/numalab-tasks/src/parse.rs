//! Reading user graphs: numalab's edge list and a text transcription of Charm++'s LB dump.
//! Every error names the file, the 1-based line and what is wrong there ([`TaskError::File`]).
//!
//! ## Edge list (`from_edge_list`)
//!
//! One record per line; fields separated by commas and/or blanks; `#` starts a comment; blank
//! lines are skipped:
//!
//! ```text
//! # kind, fields
//! obj, <id>, <load_ns>, <state_bytes>      # one line per object, ids 0..n-1 each exactly once
//! edge, <a>, <b>, <msgs>, <bytes>          # a sends msgs messages totalling bytes to b, per iteration
//! ```
//!
//! `state_bytes` may be left out (0). Edges may come before the objects they name; every id must
//! be declared by the end of the file.
//!
//! ## Charm++ LB dump, text form (`from_lb_dump`)
//!
//! Charm++ writes its load-balancing database with `+LBDump <step> +LBDumpFile <name>`
//! (src/ck-ldb/CentralLB.C `CentralLB::writeStatsMsgs`) as a binary PUP stream whose layout
//! depends on build options (`CMK_LB_CPUTIMER`, `CMK_LB_USER_DATA`). numalab reads the same
//! fields, in the same order (`BaseLB::LDStats::pup` in src/ck-ldb/BaseLB.C, `ProcStats::pup` in
//! BaseLB.h, `LDObjData` and `LDCommData` in src/ck-ldb/lbdb.h), written as text:
//!
//! ```text
//! lbdump <version> <n_pes>                 # LB_FORMAT_VERSION (3) and stats_msg_count
//! n_migrateobjs <n>
//! procs <count>
//! <total_walltime_s> <idletime_s> <bg_walltime_s> <pe_speed> <available 0|1> <n_objs> <pe>
//! objs <count>
//! <omid> <objid> <wallTime_s> <migratable 0|1> <asyncArrival 0|1> <pup_bytes>
//! from_proc <pe of object 0> <pe of object 1> ...     # one value per object, may wrap lines
//! comms <count>
//! <src_proc> <sender_omid> <sender_objid> <type> <receiver...> <messages> <bytes>
//! ```
//!
//! A comm record's receiver is, by `LDCommDesc` type, `1 <pe>` (a PE: not an object edge,
//! skipped), `2 <omid> <objid> <lastKnownPe>` (one object) or `3 <len> <omid> <objid> ...` (a
//! multicast to `len` objects: one edge each). A record sent by a PE (`src_proc != -1`) has no
//! sender object and is skipped. `pup_bytes` is the decoded `pupSize` (`pup_decodeSize`). Objects
//! keep `from_proc` as their initial PE; non-migratable objects stay where they are.
//!
//! ## Limits
//!
//! Files are read line by line, never whole, and every count is checked before anything is
//! allocated for it: at most [`MAX_FILE_OBJECTS`] objects, [`MAX_FILE_EDGES`] edges (comm
//! records' receivers included) and [`MAX_FILE_PES`] PEs, lines of at most [`MAX_LINE_BYTES`],
//! UTF-8 text. Memory then stays below some 400 MiB whatever the file holds. Loads, sizes and
//! counts are bounded by [`crate::graph::MAX_LOAD_NS`] and its neighbours (graph.rs).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::TaskError;
use crate::graph::{Edge, TaskGraph};

/// Objects a graph file may declare (ids 0..n-1): a million chares is far beyond any Charm++ run's
/// LB database, and their records take some 40 MiB here.
pub const MAX_FILE_OBJECTS: usize = 1_000_000;
/// Edges a graph file may give: ten per object on average at the largest (24 bytes each, 240 MiB).
pub const MAX_FILE_EDGES: usize = 10_000_000;
/// PEs an LB dump may declare (Charm++ runs have reached some 10^6 PEs; numalab's machines fewer).
pub const MAX_FILE_PES: usize = 1 << 20;
/// Longest line: an LB dump's `from_proc` list of a million objects on one line fits.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A graph file, read one line at a time with each line's length and encoding checked.
struct Lines<'a> {
    path: &'a Path,
    reader: BufReader<File>,
    buf: Vec<u8>,
    line: usize,
}

impl<'a> Lines<'a> {
    fn open(path: &'a Path) -> Result<Self, TaskError> {
        let f = File::open(path).map_err(|e| TaskError::file(path, 0, format!("cannot read the file: {e}")))?;
        Ok(Lines { path, reader: BufReader::new(f), buf: Vec::new(), line: 0 })
    }

    /// The next line (its 1-based number, its text without its end), or None at the end of the file.
    fn next_line(&mut self) -> Result<Option<(usize, &str)>, TaskError> {
        self.buf.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| TaskError::file(self.path, self.line + 1, format!("cannot read the file: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(TaskError::file(
                self.path,
                self.line,
                format!("a line longer than {} MiB: not a graph file", MAX_LINE_BYTES >> 20),
            ));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let line = self.line;
        std::str::from_utf8(&self.buf).map(|t| Some((line, t))).map_err(|e| {
            TaskError::file(self.path, self.line, format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1))
        })
    }
}

/// The line's fields, comments and separators removed.
fn fields(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or("");
    line.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).collect()
}

fn num<T: std::str::FromStr>(path: &Path, line: usize, what: &str, s: &str) -> Result<T, TaskError> {
    s.parse::<T>().map_err(|_| TaskError::file(path, line, format!("{what} '{}' is not a valid number", short(s))))
}

/// A field as shown in a message: long ones cut, so the message stays one line.
fn short(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(37).collect::<String>())
    }
}

fn nonneg(path: &Path, line: usize, what: &str, s: &str) -> Result<f64, TaskError> {
    let v: f64 = num(path, line, what, s)?;
    if !v.is_finite() || v < 0.0 {
        return Err(TaskError::file(path, line, format!("{what} '{}' must be a finite number >= 0", short(s))));
    }
    Ok(v)
}

/// `v` if it is at most `max`, else an error naming the line, the value and the bound.
fn at_most<T: PartialOrd + std::fmt::Display>(
    path: &Path,
    line: usize,
    what: &str,
    v: T,
    max: T,
) -> Result<T, TaskError> {
    if v > max {
        return Err(TaskError::file(path, line, format!("{what} {v} is more than numalab accepts ({max})")));
    }
    Ok(v)
}

/// A load in ns if it is at most [`crate::graph::MAX_LOAD_NS`] (sums of loads stay finite).
fn load_at_most(path: &Path, line: usize, what: &str, v: f64) -> Result<f64, TaskError> {
    let max = crate::graph::MAX_LOAD_NS;
    if v > max {
        return Err(TaskError::file(
            path,
            line,
            format!("{what} {v:.3e} is more than numalab accepts ({max:e} ns per iteration)"),
        ));
    }
    Ok(v)
}

/// Read numalab's edge-list format (module doc).
pub fn from_edge_list(path: &Path) -> Result<TaskGraph, TaskError> {
    let mut lines = Lines::open(path)?;
    // (id, load, state, line), in file order: sparse ids cost their records, not their values.
    let mut objs: Vec<(u32, f64, u64, usize)> = Vec::new();
    let mut edges: Vec<(Edge, usize)> = Vec::new();
    while let Some((ln, raw)) = lines.next_line()? {
        let f = fields(raw);
        let Some(kind) = f.first() else { continue };
        match kind.to_ascii_lowercase().as_str() {
            "obj" | "object" => {
                if !(3..=4).contains(&f.len()) {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("an obj record has 3 or 4 fields (obj, id, load_ns, state_bytes), found {}", f.len()),
                    ));
                }
                let id: u64 = num(path, ln, "object id", f[1])?;
                if id >= MAX_FILE_OBJECTS as u64 {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("object id {id} is too large (a graph file declares at most {MAX_FILE_OBJECTS} objects, ids 0..{})", MAX_FILE_OBJECTS - 1),
                    ));
                }
                if objs.len() >= MAX_FILE_OBJECTS {
                    return Err(TaskError::file(path, ln, format!("more than {MAX_FILE_OBJECTS} obj records")));
                }
                let load = nonneg(path, ln, "load_ns", f[2])?;
                let load = load_at_most(path, ln, "load_ns", load)?;
                let state: u64 = if f.len() == 4 { num(path, ln, "state_bytes", f[3])? } else { 0 };
                let state = at_most(path, ln, "state_bytes", state, crate::graph::MAX_STATE_BYTES)?;
                objs.push((id as u32, load, state, ln));
            }
            "edge" => {
                if f.len() != 5 {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("an edge record has 5 fields (edge, a, b, msgs, bytes), found {}", f.len()),
                    ));
                }
                if edges.len() >= MAX_FILE_EDGES {
                    return Err(TaskError::file(path, ln, format!("more than {MAX_FILE_EDGES} edge records")));
                }
                let a: u32 = num(path, ln, "object a", f[1])?;
                let b: u32 = num(path, ln, "object b", f[2])?;
                let msgs: u64 = num(path, ln, "msgs", f[3])?;
                let bytes: u64 = num(path, ln, "bytes", f[4])?;
                let msgs = at_most(path, ln, "msgs", msgs, crate::graph::MAX_EDGE_MSGS)?;
                let bytes = at_most(path, ln, "bytes", bytes, crate::graph::MAX_EDGE_BYTES)?;
                edges.push((Edge { a, b, msgs, bytes }, ln));
            }
            other => {
                return Err(TaskError::file(
                    path,
                    ln,
                    format!("unknown record '{}' (accepted: obj, edge)", short(other)),
                ));
            }
        }
    }
    if objs.is_empty() {
        return Err(TaskError::file(path, 0, "no obj records: a graph needs at least one object"));
    }
    // Stable: of two records of one id, the first in the file comes first.
    objs.sort_by_key(|o| o.0);
    for w in objs.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(TaskError::file(
                path,
                w[1].3,
                format!("object {} is declared twice (first on line {})", w[1].0, w[0].3),
            ));
        }
    }
    if let Some(missing) = objs.iter().enumerate().position(|(i, o)| o.0 as usize != i) {
        return Err(TaskError::file(
            path,
            0,
            format!(
                "object {missing} is never declared (ids must be 0..{} with no gaps)",
                objs.last().map_or(0, |o| o.0)
            ),
        ));
    }
    let n = objs.len();
    if let Some((e, ln)) = edges.iter().find(|(e, _)| e.a as usize >= n || e.b as usize >= n) {
        let bad = if e.a as usize >= n { e.a } else { e.b };
        return Err(TaskError::file(
            path,
            *ln,
            format!("edge names object {bad}, which is never declared (objects 0..{})", n - 1),
        ));
    }
    let (loads, states): (Vec<f64>, Vec<u64>) = objs.into_iter().map(|(_, l, s, _)| (l, s)).unzip();
    TaskGraph::new(path.display().to_string(), loads, states, edges.into_iter().map(|(e, _)| e).collect())
}

/// A cursor over the dump's tokens, read a line at a time, that remembers each token's line.
struct Tokens<'a> {
    path: &'a Path,
    lines: Lines<'a>,
    /// The current line's tokens, and the next one to hand out.
    toks: Vec<String>,
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(path: &'a Path) -> Result<Self, TaskError> {
        Ok(Tokens { path, lines: Lines::open(path)?, toks: Vec::new(), pos: 0 })
    }

    /// Make the next token current; false at the end of the file.
    fn fill(&mut self) -> Result<bool, TaskError> {
        while self.pos >= self.toks.len() {
            let Some((_, raw)) = self.lines.next_line()? else { return Ok(false) };
            self.toks = fields(raw).into_iter().map(str::to_string).collect();
            self.pos = 0;
        }
        Ok(true)
    }

    /// The line of the next token (or of the end of the file).
    fn line(&mut self) -> Result<usize, TaskError> {
        self.fill()?;
        Ok(self.lines.line.max(1))
    }

    fn next(&mut self, what: &str) -> Result<(String, usize), TaskError> {
        if !self.fill()? {
            return Err(TaskError::file(
                self.path,
                self.lines.line.max(1),
                format!("the file ends where {what} was expected"),
            ));
        }
        let t = std::mem::take(&mut self.toks[self.pos]);
        self.pos += 1;
        Ok((t, self.lines.line))
    }

    fn keyword(&mut self, kw: &str) -> Result<(), TaskError> {
        let (t, ln) = self.next(&format!("'{kw}'"))?;
        if !t.eq_ignore_ascii_case(kw) {
            return Err(TaskError::file(self.path, ln, format!("expected '{kw}', found '{}'", short(&t))));
        }
        Ok(())
    }

    fn val<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, TaskError> {
        let (t, ln) = self.next(what)?;
        num(self.path, ln, what, &t)
    }

    /// A count, refused above `max` before anything is allocated for it.
    fn count(&mut self, what: &str, max: usize) -> Result<usize, TaskError> {
        let (t, ln) = self.next(what)?;
        let v: u64 = num(self.path, ln, what, &t)?;
        if v > max as u64 {
            return Err(TaskError::file(self.path, ln, format!("{what} {v} is more than numalab reads ({max})")));
        }
        Ok(v as usize)
    }

    fn seconds(&mut self, what: &str) -> Result<f64, TaskError> {
        let (t, ln) = self.next(what)?;
        nonneg(self.path, ln, what, &t)
    }

    fn flag(&mut self, what: &str) -> Result<bool, TaskError> {
        let (t, ln) = self.next(what)?;
        match t.as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(TaskError::file(self.path, ln, format!("{what} '{}' must be 0 or 1", short(&t)))),
        }
    }
}

/// Read the text form of a Charm++ LB dump (module doc). Loads are the objects' `wallTime`.
pub fn from_lb_dump(path: &Path) -> Result<TaskGraph, TaskError> {
    let mut t = Tokens::new(path)?;
    t.keyword("lbdump")?;
    let ln = t.line()?;
    let version: i64 = t.val("the format version")?;
    if !(1..=3).contains(&version) {
        return Err(TaskError::file(
            path,
            ln,
            format!("format version {version} (accepted: 1 to 3, LB_FORMAT_VERSION)"),
        ));
    }
    let n_pes = t.count("the number of PEs", MAX_FILE_PES)?;
    t.keyword("n_migrateobjs")?;
    let _n_migratable: u64 = t.val("n_migrateobjs")?;
    t.keyword("procs")?;
    let ln = t.line()?;
    let n_procs = t.count("the proc count", MAX_FILE_PES)?;
    if n_procs != n_pes {
        return Err(TaskError::file(path, ln, format!("{n_procs} proc records for {n_pes} PEs")));
    }
    for _ in 0..n_procs {
        for what in ["total_walltime", "idletime", "bg_walltime", "pe_speed"] {
            t.seconds(what)?;
        }
        t.flag("available")?;
        t.val::<u64>("n_objs")?;
        t.val::<i64>("pe")?;
    }
    t.keyword("objs")?;
    let n = t.count("the object count", MAX_FILE_OBJECTS)?;
    let mut index: HashMap<(i64, u64), usize> = HashMap::with_capacity(n);
    let (mut loads, mut states, mut migratable) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let ln = t.line()?;
        let omid: i64 = t.val("omid")?;
        let objid: u64 = t.val("objid")?;
        if index.insert((omid, objid), i).is_some() {
            return Err(TaskError::file(path, ln, format!("object ({omid}, {objid}) appears twice")));
        }
        let load = t.seconds("wallTime")? * 1e9;
        loads.push(load_at_most(path, ln, "wallTime x 1e9 (ns)", load)?);
        migratable.push(t.flag("migratable")?);
        t.flag("asyncArrival")?;
        let state = t.val::<u64>("pup_bytes")?;
        states.push(at_most(path, ln, "pup_bytes", state, crate::graph::MAX_STATE_BYTES)?);
    }
    t.keyword("from_proc")?;
    let mut from = Vec::with_capacity(n);
    for _ in 0..n {
        let ln = t.line()?;
        let pe: i64 = t.val("from_proc")?;
        if pe < 0 || pe as usize >= n_pes {
            return Err(TaskError::file(path, ln, format!("from_proc {pe} is outside the {n_pes} PEs")));
        }
        from.push(pe as u32);
    }
    t.keyword("comms")?;
    // Records are read until the count or the file ends; the edges they make are bounded below.
    let n_comm: u64 = t.val("the comm count")?;
    let mut edges = Vec::new();
    for _ in 0..n_comm {
        let ln = t.line()?;
        let src_proc: i64 = t.val("src_proc")?;
        let sender = (t.val::<i64>("sender omid")?, t.val::<u64>("sender objid")?);
        let kind: u32 = t.val("receiver type")?;
        let mut receivers = Vec::new();
        match kind {
            1 => {
                t.val::<i64>("receiver pe")?;
            }
            2 => {
                receivers.push((t.val::<i64>("receiver omid")?, t.val::<u64>("receiver objid")?, ln));
                t.val::<i64>("lastKnownPe")?;
            }
            3 => {
                let len = t.count("multicast length", MAX_FILE_OBJECTS)?;
                for _ in 0..len {
                    receivers.push((t.val::<i64>("receiver omid")?, t.val::<u64>("receiver objid")?, ln));
                }
            }
            _ => {
                return Err(TaskError::file(
                    path,
                    ln,
                    format!("receiver type {kind} (accepted: 1 PE, 2 object, 3 objects)"),
                ))
            }
        }
        let msgs = at_most(path, ln, "messages", t.val::<u64>("messages")?, crate::graph::MAX_EDGE_MSGS)?;
        let bytes = at_most(path, ln, "bytes", t.val::<u64>("bytes")?, crate::graph::MAX_EDGE_BYTES)?;
        if src_proc != -1 {
            continue;
        }
        let a = *index.get(&sender).ok_or_else(|| {
            TaskError::file(path, ln, format!("sender ({}, {}) is not among the objects", sender.0, sender.1))
        })?;
        if edges.len() + receivers.len() > MAX_FILE_EDGES {
            return Err(TaskError::file(path, ln, format!("more than {MAX_FILE_EDGES} object edges")));
        }
        for (om, id, ln) in receivers {
            let b = *index
                .get(&(om, id))
                .ok_or_else(|| TaskError::file(path, ln, format!("receiver ({om}, {id}) is not among the objects")))?;
            edges.push(Edge { a: a as u32, b: b as u32, msgs, bytes });
        }
    }
    if t.fill()? {
        let (tok, ln) = t.next("")?;
        return Err(TaskError::file(path, ln, format!("unexpected '{}' after the last comm record", short(&tok))));
    }
    if n == 0 {
        return Err(TaskError::file(path, 0, "the dump has no objects"));
    }
    let mut g = TaskGraph::new(path.display().to_string(), loads, states, edges)?;
    g.initial_pe = Some(from);
    g.migratable = Some(migratable);
    Ok(g)
}
