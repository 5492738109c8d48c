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

use std::collections::HashMap;
use std::path::Path;

use crate::error::TaskError;
use crate::graph::{Edge, TaskGraph};

fn read(path: &Path) -> Result<String, TaskError> {
    std::fs::read_to_string(path).map_err(|e| TaskError::file(path, 0, format!("cannot read the file: {e}")))
}

/// The line's fields, comments and separators removed.
fn fields(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or("");
    line.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).collect()
}

fn num<T: std::str::FromStr>(path: &Path, line: usize, what: &str, s: &str) -> Result<T, TaskError> {
    s.parse::<T>().map_err(|_| TaskError::file(path, line, format!("{what} '{s}' is not a valid number")))
}

fn nonneg(path: &Path, line: usize, what: &str, s: &str) -> Result<f64, TaskError> {
    let v: f64 = num(path, line, what, s)?;
    if !v.is_finite() || v < 0.0 {
        return Err(TaskError::file(path, line, format!("{what} '{s}' must be a finite number >= 0")));
    }
    Ok(v)
}

/// Read numalab's edge-list format (module doc).
pub fn from_edge_list(path: &Path) -> Result<TaskGraph, TaskError> {
    let text = read(path)?;
    let mut objs: Vec<Option<(f64, u64, usize)>> = Vec::new();
    let mut edges: Vec<(Edge, usize)> = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let ln = k + 1;
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
                let id: usize = num(path, ln, "object id", f[1])?;
                let load = nonneg(path, ln, "load_ns", f[2])?;
                let state: u64 = if f.len() == 4 { num(path, ln, "state_bytes", f[3])? } else { 0 };
                if id >= crate::gen::MAX_OBJECTS {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("object id {id} is too large (at most {})", crate::gen::MAX_OBJECTS - 1),
                    ));
                }
                if objs.len() <= id {
                    objs.resize(id + 1, None);
                }
                if let Some((_, _, first)) = objs[id] {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("object {id} is declared twice (first on line {first})"),
                    ));
                }
                objs[id] = Some((load, state, ln));
            }
            "edge" => {
                if f.len() != 5 {
                    return Err(TaskError::file(
                        path,
                        ln,
                        format!("an edge record has 5 fields (edge, a, b, msgs, bytes), found {}", f.len()),
                    ));
                }
                let a: u32 = num(path, ln, "object a", f[1])?;
                let b: u32 = num(path, ln, "object b", f[2])?;
                let msgs: u64 = num(path, ln, "msgs", f[3])?;
                let bytes: u64 = num(path, ln, "bytes", f[4])?;
                edges.push((Edge { a, b, msgs, bytes }, ln));
            }
            other => {
                return Err(TaskError::file(path, ln, format!("unknown record '{other}' (accepted: obj, edge)")));
            }
        }
    }
    if objs.is_empty() {
        return Err(TaskError::file(path, 0, "no obj records: a graph needs at least one object"));
    }
    if let Some(missing) = objs.iter().position(Option::is_none) {
        return Err(TaskError::file(
            path,
            0,
            format!("object {missing} is never declared (ids must be 0..{} with no gaps)", objs.len() - 1),
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
    let (loads, states): (Vec<f64>, Vec<u64>) = objs.into_iter().flatten().map(|(l, s, _)| (l, s)).unzip();
    TaskGraph::new(path.display().to_string(), loads, states, edges.into_iter().map(|(e, _)| e).collect())
}

/// A cursor over the dump's tokens that remembers each token's line.
struct Tokens<'a> {
    path: &'a Path,
    toks: Vec<(&'a str, usize)>,
    pos: usize,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    fn new(path: &'a Path, text: &'a str) -> Self {
        let mut toks = Vec::new();
        for (k, raw) in text.lines().enumerate() {
            for f in fields(raw) {
                toks.push((f, k + 1));
            }
        }
        let last_line = text.lines().count().max(1);
        Tokens { path, toks, pos: 0, last_line }
    }

    fn line(&self) -> usize {
        self.toks.get(self.pos).map_or(self.last_line, |t| t.1)
    }

    fn next(&mut self, what: &str) -> Result<(&'a str, usize), TaskError> {
        let t = self.toks.get(self.pos).copied().ok_or_else(|| {
            TaskError::file(self.path, self.last_line, format!("the file ends where {what} was expected"))
        })?;
        self.pos += 1;
        Ok(t)
    }

    fn keyword(&mut self, kw: &str) -> Result<(), TaskError> {
        let (t, ln) = self.next(&format!("'{kw}'"))?;
        if !t.eq_ignore_ascii_case(kw) {
            return Err(TaskError::file(self.path, ln, format!("expected '{kw}', found '{t}'")));
        }
        Ok(())
    }

    fn val<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, TaskError> {
        let (t, ln) = self.next(what)?;
        num(self.path, ln, what, t)
    }

    fn seconds(&mut self, what: &str) -> Result<f64, TaskError> {
        let (t, ln) = self.next(what)?;
        nonneg(self.path, ln, what, t)
    }

    fn flag(&mut self, what: &str) -> Result<bool, TaskError> {
        let (t, ln) = self.next(what)?;
        match t {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(TaskError::file(self.path, ln, format!("{what} '{t}' must be 0 or 1"))),
        }
    }
}

/// Read the text form of a Charm++ LB dump (module doc). Loads are the objects' `wallTime`.
pub fn from_lb_dump(path: &Path) -> Result<TaskGraph, TaskError> {
    let text = read(path)?;
    let mut t = Tokens::new(path, &text);
    t.keyword("lbdump")?;
    let ln = t.line();
    let version: i64 = t.val("the format version")?;
    if !(1..=3).contains(&version) {
        return Err(TaskError::file(
            path,
            ln,
            format!("format version {version} (accepted: 1 to 3, LB_FORMAT_VERSION)"),
        ));
    }
    let n_pes: usize = t.val("the number of PEs")?;
    t.keyword("n_migrateobjs")?;
    let _n_migratable: usize = t.val("n_migrateobjs")?;
    t.keyword("procs")?;
    let ln = t.line();
    let n_procs: usize = t.val("the proc count")?;
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
    let n: usize = t.val("the object count")?;
    let mut index: HashMap<(i64, u64), usize> = HashMap::with_capacity(n);
    let (mut loads, mut states, mut migratable) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let ln = t.line();
        let omid: i64 = t.val("omid")?;
        let objid: u64 = t.val("objid")?;
        if index.insert((omid, objid), i).is_some() {
            return Err(TaskError::file(path, ln, format!("object ({omid}, {objid}) appears twice")));
        }
        loads.push(t.seconds("wallTime")? * 1e9);
        migratable.push(t.flag("migratable")?);
        t.flag("asyncArrival")?;
        states.push(t.val::<u64>("pup_bytes")?);
    }
    t.keyword("from_proc")?;
    let mut from = Vec::with_capacity(n);
    for _ in 0..n {
        let ln = t.line();
        let pe: i64 = t.val("from_proc")?;
        if pe < 0 || pe as usize >= n_pes {
            return Err(TaskError::file(path, ln, format!("from_proc {pe} is outside the {n_pes} PEs")));
        }
        from.push(pe as u32);
    }
    t.keyword("comms")?;
    let n_comm: usize = t.val("the comm count")?;
    let mut edges = Vec::new();
    for _ in 0..n_comm {
        let ln = t.line();
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
                let len: usize = t.val("multicast length")?;
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
        let msgs: u64 = t.val("messages")?;
        let bytes: u64 = t.val("bytes")?;
        if src_proc != -1 {
            continue;
        }
        let a = *index.get(&sender).ok_or_else(|| {
            TaskError::file(path, ln, format!("sender ({}, {}) is not among the objects", sender.0, sender.1))
        })?;
        for (om, id, ln) in receivers {
            let b = *index
                .get(&(om, id))
                .ok_or_else(|| TaskError::file(path, ln, format!("receiver ({om}, {id}) is not among the objects")))?;
            edges.push(Edge { a: a as u32, b: b as u32, msgs, bytes });
        }
    }
    if let Some((tok, ln)) = t.toks.get(t.pos) {
        return Err(TaskError::file(path, *ln, format!("unexpected '{tok}' after the last comm record")));
    }
    if n == 0 {
        return Err(TaskError::file(path, 0, "the dump has no objects"));
    }
    let mut g = TaskGraph::new(path.display().to_string(), loads, states, edges)?;
    g.initial_pe = Some(from);
    g.migratable = Some(migratable);
    Ok(g)
}
