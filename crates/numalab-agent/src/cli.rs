//! Command-line parsing: numactl's option spellings (`-i NODES`, `-iNODES`, `--interleave=NODES`,
//! `--interleave NODES`), the command after `--` or after the first word that is not an option.

use std::path::PathBuf;

use crate::placement::PlacementArg;

pub const USAGE: &str = "\
usage: numalab-agent topo [--root DIR]
       numalab-agent run [placement] [--interval-ms N] [--maps-budget-pct P] [--output FILE] [--root DIR]
                         [--grace-ms N] [--] CMD [ARGS...]
       numalab-agent knobs get [--root DIR]
       numalab-agent knobs set NAME=VALUE... --journal FILE [--root DIR]
       numalab-agent knobs restore --journal FILE [--root DIR]
placement (numactl's options and node strings: all, 0-3,5, !1, +0-1; =NODES adds MPOL_F_STATIC_NODES):
  -i, --interleave=NODES          -w, --weighted-interleave=NODES
  -m, --membind=NODES             -b, --balancing (with --membind)
  -p, --preferred=NODE            -P, --preferred-many=NODES
  -l, --localalloc                -N, --cpunodebind=NODES
  -C, --physcpubind=CPUS
run samples /proc/PID/task/*/sched, /proc/vmstat and node numastat every --interval-ms (default
1000) and /proc/PID/numa_maps as often as --maps-budget-pct (default 0.5% of one CPU) allows, and
writes JSON Lines to stdout or --output FILE. The command runs in its own process group (the
terminal's foreground when the agent has it); SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to
that group, and --grace-ms (default 5000) after the first of them the group is killed (SIGKILL).
The agent traces the command (ptrace) to read numa_maps and every thread once more at its exit,
before its memory is torn down; where ptrace is refused the command runs untraced.
--root DIR reads sys/ and proc/ system files under DIR instead of / (for captured trees).";

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Help,
    Version,
    Topo { root: PathBuf },
    Run(RunArgs),
    KnobsGet { root: PathBuf },
    KnobsSet { root: PathBuf, journal: PathBuf, changes: Vec<(String, u64)> },
    KnobsRestore { root: PathBuf, journal: PathBuf },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunArgs {
    pub placement: Vec<PlacementArg>,
    pub interval_ms: u64,
    pub maps_budget_pct: f64,
    pub output: Option<PathBuf>,
    pub root: PathBuf,
    pub grace_ms: u64,
    pub command: Vec<String>,
}

pub const DEFAULT_INTERVAL_MS: u64 = 1000;
pub const DEFAULT_GRACE_MS: u64 = 5000;
pub const DEFAULT_MAPS_BUDGET_PCT: f64 = 0.5;

/// A usage error: one line, exit code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

type Res<T> = Result<T, UsageError>;

fn err<T>(m: impl Into<String>) -> Res<T> {
    Err(UsageError(m.into()))
}

/// Options of `run` that take a value: (short, long).
const VALUED: [(&str, &str); 12] = [
    ("-i", "--interleave"),
    ("-w", "--weighted-interleave"),
    ("-m", "--membind"),
    ("-p", "--preferred"),
    ("-P", "--preferred-many"),
    ("-N", "--cpunodebind"),
    ("-C", "--physcpubind"),
    ("", "--interval-ms"),
    ("", "--maps-budget-pct"),
    ("", "--output"),
    ("", "--root"),
    ("", "--grace-ms"),
];

/// Split `arg` into (long name, attached value) if it is one of the valued options.
fn valued(arg: &str) -> Option<(&'static str, Option<String>)> {
    for (short, long) in VALUED {
        if arg == long || (!short.is_empty() && arg == short) {
            return Some((long, None));
        }
        if let Some(v) = arg.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            return Some((long, Some(v.to_string())));
        }
        if !short.is_empty() && arg.len() > 2 && arg.starts_with(short) {
            return Some((long, Some(arg[2..].to_string())));
        }
    }
    None
}

pub fn parse(args: &[String]) -> Res<Cmd> {
    let Some(first) = args.first() else { return err("no subcommand (expected topo, run or knobs; see --help)") };
    let rest = &args[1..];
    match first.as_str() {
        "-h" | "--help" | "help" => Ok(Cmd::Help),
        "-V" | "--version" => Ok(Cmd::Version),
        "topo" => {
            let (root, extra) = common(rest, false)?;
            if let Some(x) = extra.first() {
                return err(format!("topo: unexpected argument '{x}'"));
            }
            Ok(Cmd::Topo { root: root.root })
        }
        "run" => parse_run(rest).map(Cmd::Run),
        "knobs" => parse_knobs(rest),
        other => err(format!("unknown subcommand '{other}' (expected topo, run or knobs)")),
    }
}

struct Common {
    root: PathBuf,
    journal: Option<PathBuf>,
}

/// `--root DIR` and (if `journal`) `--journal FILE`; returns the other arguments.
fn common(args: &[String], journal: bool) -> Res<(Common, Vec<String>)> {
    let mut c = Common { root: PathBuf::from("/"), journal: None };
    let mut other = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (name, val) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |n: &str| -> Res<String> {
            match &val {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().ok_or_else(|| UsageError(format!("{n} needs a value"))),
            }
        };
        match name {
            "--root" => c.root = PathBuf::from(value(name)?),
            "--journal" if journal => c.journal = Some(PathBuf::from(value(name)?)),
            n if n.starts_with('-') => return err(format!("unknown option '{a}'")),
            _ => other.push(a.clone()),
        }
    }
    Ok((c, other))
}

fn parse_knobs(args: &[String]) -> Res<Cmd> {
    let Some(action) = args.first() else { return err("knobs: expected get, set or restore") };
    let (c, other) = common(&args[1..], action != "get")?;
    let journal = || c.journal.clone().ok_or_else(|| UsageError(format!("knobs {action} needs --journal FILE")));
    match action.as_str() {
        "get" => match other.first() {
            Some(x) => err(format!("knobs get: unexpected argument '{x}'")),
            None => Ok(Cmd::KnobsGet { root: c.root }),
        },
        "set" => {
            if other.is_empty() {
                return err("knobs set: expected NAME=VALUE (e.g. numa_balancing=0 scan_size_mb=256)");
            }
            let mut changes = Vec::new();
            for o in &other {
                let Some((n, v)) = o.split_once('=') else {
                    return err(format!("knobs set: '{o}' is not NAME=VALUE"));
                };
                let v: u64 = v
                    .parse()
                    .map_err(|_| UsageError(format!("knobs set: value of {n} must be a whole number, got '{v}'")))?;
                changes.push((n.to_string(), v));
            }
            Ok(Cmd::KnobsSet { journal: journal()?, root: c.root, changes })
        }
        "restore" => match other.first() {
            Some(x) => err(format!("knobs restore: unexpected argument '{x}'")),
            None => Ok(Cmd::KnobsRestore { journal: journal()?, root: c.root }),
        },
        a => err(format!("knobs: unknown action '{a}' (expected get, set or restore)")),
    }
}

fn parse_run(args: &[String]) -> Res<RunArgs> {
    let mut r = RunArgs {
        placement: Vec::new(),
        interval_ms: DEFAULT_INTERVAL_MS,
        maps_budget_pct: DEFAULT_MAPS_BUDGET_PCT,
        output: None,
        root: PathBuf::from("/"),
        grace_ms: DEFAULT_GRACE_MS,
        command: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            break;
        }
        if !a.starts_with('-') || a == "-" {
            i -= 1;
            break;
        }
        match a.as_str() {
            "-l" | "--localalloc" | "--local" => {
                r.placement.push(PlacementArg::LocalAlloc);
                continue;
            }
            "-b" | "--balancing" => {
                r.placement.push(PlacementArg::Balancing);
                continue;
            }
            _ => {}
        }
        let Some((long, attached)) = valued(a) else {
            return err(format!("run: unknown option '{a}' (see numalab-agent --help)"));
        };
        let v = match attached {
            Some(v) => v,
            None => {
                let v = args.get(i).cloned().ok_or_else(|| UsageError(format!("run: {long} needs a value")))?;
                i += 1;
                v
            }
        };
        if v.is_empty() {
            return err(format!("run: {long} needs a value"));
        }
        match long {
            "--interleave" => r.placement.push(PlacementArg::Interleave(v)),
            "--weighted-interleave" => r.placement.push(PlacementArg::WeightedInterleave(v)),
            "--membind" => r.placement.push(PlacementArg::Membind(v)),
            "--preferred" => r.placement.push(PlacementArg::Preferred(v)),
            "--preferred-many" => r.placement.push(PlacementArg::PreferredMany(v)),
            "--cpunodebind" => r.placement.push(PlacementArg::CpuNodeBind(v)),
            "--physcpubind" => r.placement.push(PlacementArg::PhysCpuBind(v)),
            "--interval-ms" => {
                r.interval_ms = match v.parse::<u64>() {
                    Ok(n) if (1..=3_600_000).contains(&n) => n,
                    _ => {
                        return err(format!("run: --interval-ms must be a whole number of ms in 1..3600000, got '{v}'"))
                    }
                }
            }
            "--maps-budget-pct" => {
                r.maps_budget_pct = match v.parse::<f64>() {
                    Ok(p) if p > 0.0 && p <= 100.0 => p,
                    _ => return err(format!("run: --maps-budget-pct must be a percentage in (0, 100], got '{v}'")),
                }
            }
            "--grace-ms" => {
                r.grace_ms = match v.parse::<u64>() {
                    Ok(n) if n <= 3_600_000 => n,
                    _ => return err(format!("run: --grace-ms must be a whole number of ms in 0..3600000, got '{v}'")),
                }
            }
            "--output" => r.output = Some(PathBuf::from(v)),
            "--root" => r.root = PathBuf::from(v),
            _ => unreachable!("every valued option is handled"),
        }
    }
    r.command = args[i..].to_vec();
    if r.command.is_empty() {
        return err("run: no command given (usage: numalab-agent run [options] -- CMD [ARGS...])");
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Res<RunArgs> {
        let v: Vec<String> = std::iter::once("run").chain(args.iter().copied()).map(String::from).collect();
        match parse(&v)? {
            Cmd::Run(r) => Ok(r),
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn numactl_spellings() {
        let r = run(&["-i", "all", "-N0", "--membind=1", "--physcpubind", "0-1", "-l", "--", "ls", "-l"]).unwrap();
        assert_eq!(
            r.placement,
            [
                PlacementArg::Interleave("all".into()),
                PlacementArg::CpuNodeBind("0".into()),
                PlacementArg::Membind("1".into()),
                PlacementArg::PhysCpuBind("0-1".into()),
                PlacementArg::LocalAlloc,
            ]
        );
        assert_eq!(r.command, ["ls", "-l"]);
        let r = run(&["--interleave=0,1", "--interval-ms", "50", "sleep", "-x"]).unwrap();
        assert_eq!((r.interval_ms, r.command.clone()), (50, vec!["sleep".to_string(), "-x".to_string()]));
        let r = run(&["-w0-1", "-P", "+0", "-p=1", "true"]).unwrap();
        assert_eq!(r.placement[2], PlacementArg::Preferred("=1".into()), "-p=1 keeps '=' (static nodes)");
    }

    #[test]
    fn usage_errors() {
        assert!(run(&["--interleaved=0", "ls"]).unwrap_err().0.contains("unknown option '--interleaved=0'"));
        assert!(run(&["-i"]).unwrap_err().0.contains("--interleave needs a value"));
        assert!(run(&["-i", "0"]).unwrap_err().0.contains("no command"));
        assert!(run(&["--interval-ms=0", "ls"]).unwrap_err().0.contains("--interval-ms"));
        assert!(parse(&["knobs".into(), "set".into(), "a=1".into()]).unwrap_err().0.contains("--journal"));
        assert!(parse(&["knobs".into(), "set".into(), "a=x".into(), "--journal=j".into()])
            .unwrap_err()
            .0
            .contains("whole number"));
        assert!(parse(&["frob".into()]).unwrap_err().0.contains("unknown subcommand"));
    }
}
