//! `numalab-agent run`: start the command under the placement, sample it while it runs, write a
//! summary when it ends, and exit with its status.
//!
//! Like numactl, the placement is applied by the process that then execs the command (numactl
//! applies it to itself and calls execvp); here the agent forks, the child applies it between fork
//! and exec, and the parent stays to sample. The command is exec'd from argv, never through a
//! shell.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::ptrace::{self, Options};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{killpg, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp, Pid};
use serde_json::{json, Value};

use crate::cli::RunArgs;
use crate::placement::{resolve, Host, Placement};
use crate::sample::{by_node, numastat_json, round6, thread_json, vmstat_json, Sampler, SystemCounters};
use crate::sys::{apply_before_exec, ChildSetup, Exec, TRACEME_REFUSED};
use crate::Failure;

/// Signals passed on to the command (SIGCHLD is watched, not forwarded).
const FORWARDED: [Signal; 4] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGQUIT];

pub fn run(args: RunArgs) -> Result<i32, Failure> {
    let host = Host::read(&args.root).map_err(|e| Failure::Usage(e.to_string()))?;
    let mut placement = resolve(&args.placement, &host).map_err(|e| Failure::Usage(e.0))?;
    let program = find_command(&args.command[0])?;
    let mut out = Output::open(args.output.as_deref())?;
    dry_run(&mut placement)?;

    let mut watched = SigSet::empty();
    for s in FORWARDED {
        watched.add(s);
    }
    watched.add(Signal::SIGCHLD);
    watched.thread_block().map_err(|e| Failure::Runtime(format!("cannot block signals: {e}")))?;
    let sfd = SignalFd::with_flags(&watched, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| Failure::Runtime(format!("cannot create a signalfd: {e}")))?;
    // Blocked, not watched: taking the terminal back at the end must not stop the agent.
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    ttou.thread_block().map_err(|e| Failure::Runtime(format!("cannot block signals: {e}")))?;
    let stdin = io::stdin();
    let terminal = foreground_terminal(&stdin);
    let mut unblock = watched;
    unblock.add(Signal::SIGTTOU);

    let baseline = SystemCounters::read(&args.root).map_err(|e| Failure::Runtime(e.to_string()))?;
    let start = Instant::now();
    let started_unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let spawn = |trace: bool| -> Result<std::process::Child, io::Error> {
        // std forks, puts the child in a process group of its own and sets it up; the hook then
        // applies the placement and execs the command itself (sys::Exec), so std's own exec is
        // never reached.
        let mut cmd = Command::new(&program);
        cmd.process_group(0);
        let setup = ChildSetup {
            policy: placement.raw_policy(),
            cpus: placement.cpu_set().map_err(|e| io::Error::other(e.0))?,
            unblock,
            terminal: terminal.map(|_| libc::STDIN_FILENO),
            trace,
        };
        let exec = Exec::new(program.as_os_str(), &args.command)?;
        apply_before_exec(&mut cmd, setup, exec);
        cmd.spawn()
    };
    if args.command.iter().any(|a| a.contains('\0')) {
        return Err(Failure::Usage(format!("{}: an argument holds a NUL byte", args.command[0])));
    }
    // A child that took the terminal and then failed leaves it to a group that is gone: take it
    // back before saying why, or numalab would be in the background of its own terminal.
    let take_terminal_back = || {
        if let Some(tty) = terminal {
            let _ = tcsetpgrp(tty, getpgrp());
        }
    };
    let spawned = match spawn(true) {
        Ok(c) => Ok((c, true)),
        // ptrace refused (a container's seccomp profile, a sandbox): run untraced, sampled only.
        Err(e) if e.raw_os_error() == Some(TRACEME_REFUSED) => spawn(false).map(|c| (c, false)),
        Err(e) => Err(e),
    };
    let (child, traced) = spawned.map_err(|e| {
        take_terminal_back();
        exec_failure(&args.command[0], &e)
    })?;
    let pid = child.id();
    let main = Pid::from_raw(pid as i32);
    if traced {
        if let Err(f) = start_tracing(main) {
            let _ = killpg(main, Signal::SIGKILL);
            take_terminal_back();
            return Err(f);
        }
    }

    out.line(&start_record(&args, &placement, pid, started_unix_s, &baseline, traced));
    let mut sampler = Sampler::new(&args.root, pid, baseline, args.maps_budget_pct / 100.0);
    let interval = Duration::from_millis(args.interval_ms);
    let mut next = start + interval;
    let mut forwarded: Vec<&'static str> = Vec::new();
    let mut kill_at: Option<Instant> = None;
    let mut killed_after_grace = false;
    let mut tracer = Tracer { main, threads: BTreeSet::from([main]) };
    let status = loop {
        let event = tracer.reap(&mut sampler, start).map_err(|e| {
            take_terminal_back();
            Failure::Runtime(format!("waiting for the command: {e}"))
        })?;
        match event {
            Reaped::Exit(st) => break st,
            Reaped::Snapshot(record, problems) => {
                for p in problems {
                    eprintln!("numalab-agent: {p}");
                }
                out.line(&record);
                continue;
            }
            Reaped::Nothing => {}
        }
        let now = Instant::now();
        if kill_at.is_some_and(|k| now >= k) && !killed_after_grace {
            // The command outlived the grace period after a stop signal: end it and its group.
            let _ = killpg(main, Signal::SIGKILL);
            killed_after_grace = true;
        }
        if now >= next {
            let (record, problems) = sampler.sample(start.elapsed().as_secs_f64());
            for p in problems {
                eprintln!("numalab-agent: {p}");
            }
            out.line(&record);
            while next <= Instant::now() {
                next += interval;
            }
            continue;
        }
        let until = kill_at.filter(|_| !killed_after_grace).map_or(next, |k| k.min(next));
        let wait_ms = (until.saturating_duration_since(now)).as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut fds = [PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::try_from(wait_ms).unwrap_or(PollTimeout::MAX)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(Failure::Runtime(format!("poll: {e}"))),
        }
        while let Ok(Some(info)) = sfd.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else { continue };
            if sig == Signal::SIGCHLD {
                continue;
            }
            // The command has a process group of its own: whoever signalled the agent (a
            // terminal it does not hold, kill, numalab) meant the command and its children.
            if killpg(main, sig).is_ok() {
                forwarded.push(sig.as_str());
            }
            kill_at.get_or_insert(Instant::now() + Duration::from_millis(args.grace_ms));
        }
    };
    let wall_s = start.elapsed().as_secs_f64();
    if kill_at.is_some() {
        // Children the command left in its group go with it when it was stopped by a signal.
        let _ = killpg(main, Signal::SIGKILL);
    }
    take_terminal_back();
    if let Some(p) = sampler.read_final_counters() {
        eprintln!("numalab-agent: {p}");
    }
    let (exit_code, signal) = status;
    let agent_exit = match (exit_code, signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    };
    let ended = Ended { wall_s, exit_code, signal, agent_exit, forwarded: &forwarded, killed_after_grace };
    out.line(&summary_record(&args, pid, &ended, &sampler));
    drop(child);
    // The command's status matters more than the records: a write error is reported, not returned.
    if let Err(Failure::Runtime(m)) = out.finish() {
        eprintln!("numalab-agent: {m}");
    }
    Ok(agent_exit)
}

/// Standard input when it is a terminal whose foreground process group is the agent's: the
/// command's group is then made the foreground, as a shell does for a job.
fn foreground_terminal(stdin: &io::Stdin) -> Option<BorrowedFd<'_>> {
    let fd = stdin.as_fd();
    (nix::unistd::isatty(fd).unwrap_or(false) && tcgetpgrp(fd).ok()? == getpgrp()).then_some(fd)
}

/// The command stops with SIGTRAP at its exec (`PTRACE_TRACEME`); ask for a stop at the exit of
/// every thread (`PTRACE_O_TRACEEXIT`, following new threads with `PTRACE_O_TRACECLONE`), for an
/// event instead of a SIGTRAP at a later exec, for the command's death if the agent dies
/// (`PTRACE_O_EXITKILL`), and let it run.
fn start_tracing(main: Pid) -> Result<(), Failure> {
    let fail = |e: nix::errno::Errno| Failure::Runtime(format!("tracing the command: {e}"));
    match waitpid(main, Some(WaitPidFlag::__WALL)).map_err(fail)? {
        WaitStatus::Stopped(_, Signal::SIGTRAP) => {}
        other => return Err(Failure::Runtime(format!("tracing the command: unexpected first stop {other:?}"))),
    }
    // PTRACE_O_TRACEEXEC: a traced exec otherwise raises SIGTRAP in the command (`sh -c 'exec prog'`).
    let opts = Options::PTRACE_O_TRACEEXIT
        | Options::PTRACE_O_TRACECLONE
        | Options::PTRACE_O_TRACEEXEC
        | Options::PTRACE_O_EXITKILL;
    ptrace::setoptions(main, opts).map_err(fail)?;
    ptrace::cont(main, None).map_err(fail)
}

/// What one look at the command's state found.
enum Reaped {
    /// The command ended: (exit code, signal number).
    Exit((Option<i32>, Option<i32>)),
    /// The command stopped at its exit; the snapshot's record.
    Snapshot(Value, Vec<String>),
    Nothing,
}

/// The traced command's threads, and what to do at each of their stops. Untraced, `waitpid` only
/// ever reports the command's end.
struct Tracer {
    main: Pid,
    threads: BTreeSet<Pid>,
}

impl Tracer {
    /// Handle every pending stop of the command's threads, without blocking.
    fn reap(&mut self, sampler: &mut Sampler, start: Instant) -> nix::Result<Reaped> {
        loop {
            let st = match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
                Err(nix::errno::Errno::EINTR) => continue,
                other => other?,
            };
            match st {
                WaitStatus::StillAlive => return Ok(Reaped::Nothing),
                WaitStatus::Exited(p, code) if p == self.main => return Ok(Reaped::Exit((Some(code), None))),
                WaitStatus::Signaled(p, sig, _) if p == self.main => return Ok(Reaped::Exit((None, Some(sig as i32)))),
                WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _) => {
                    self.threads.remove(&p);
                }
                WaitStatus::PtraceEvent(p, _, ev) if ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 => {
                    // Stopped before exit: the process's memory (for the main thread) and the
                    // thread's statistics are still there.
                    let snap = if p == self.main {
                        Some(sampler.exit_snapshot(start.elapsed().as_secs_f64()))
                    } else {
                        sampler.thread_exit(p.as_raw() as u32);
                        None
                    };
                    let _ = ptrace::cont(p, None);
                    if let Some((record, problems)) = snap {
                        return Ok(Reaped::Snapshot(record, problems));
                    }
                }
                WaitStatus::PtraceEvent(p, _, ev) => {
                    if ev == ptrace::Event::PTRACE_EVENT_CLONE as i32 {
                        if let Ok(tid) = ptrace::getevent(p) {
                            self.threads.insert(Pid::from_raw(tid as i32));
                        }
                    }
                    let _ = ptrace::cont(p, None);
                }
                WaitStatus::Stopped(p, sig) => {
                    // A new thread's first stop (SIGSTOP, before or after its parent's clone event),
                    // else a signal on its way to the thread, passed on; a group stop (no siginfo)
                    // is resumed, so ^Z does not stop a measured command.
                    let first = sig == Signal::SIGSTOP && self.threads.insert(p);
                    let deliver = if first || ptrace::getsiginfo(p).is_err() { None } else { Some(sig) };
                    let _ = ptrace::cont(p, deliver);
                }
                _ => {}
            }
        }
    }
}

/// Where the records go; a write error is kept and reported once, at the end, so a full disk or a
/// closed pipe never stops the command.
struct Output {
    sink: Box<dyn Write>,
    path: String,
    error: Option<io::Error>,
}

impl Output {
    fn open(path: Option<&Path>) -> Result<Output, Failure> {
        Ok(match path {
            Some(p) => Output {
                sink: Box::new(
                    File::create(p).map_err(|e| Failure::Usage(format!("cannot write {}: {e}", p.display())))?,
                ),
                path: p.display().to_string(),
                error: None,
            },
            None => Output { sink: Box::new(io::stdout()), path: "standard output".into(), error: None },
        })
    }

    fn line(&mut self, v: &Value) {
        if self.error.is_some() {
            return;
        }
        // One write per record, so lines never interleave with the command's own output.
        let text = format!("{v}\n");
        if let Err(e) = self.sink.write_all(text.as_bytes()).and_then(|_| self.sink.flush()) {
            self.error = Some(e);
        }
    }

    fn finish(self) -> Result<(), Failure> {
        match self.error {
            Some(e) => Err(Failure::Runtime(format!("cannot write the records to {}: {e}", self.path))),
            None => Ok(()),
        }
    }
}

/// Look the command up as a shell would (`execvp`'s PATH search), for the shell's exit codes:
/// 127 not found, 126 found but not executable.
fn find_command(name: &str) -> Result<PathBuf, Failure> {
    let check = |p: &Path| -> Option<Result<PathBuf, Failure>> {
        let meta = std::fs::metadata(p).ok()?;
        if meta.is_dir() {
            return Some(Err(Failure::Exec(126, format!("{name}: Is a directory"))));
        }
        if meta.permissions().mode() & 0o111 == 0 || nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_err() {
            return Some(Err(Failure::Exec(126, format!("{name}: Permission denied"))));
        }
        Some(Ok(p.to_path_buf()))
    };
    if name.contains('/') {
        return check(Path::new(name))
            .unwrap_or_else(|| Err(Failure::Exec(127, format!("{name}: No such file or directory"))));
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let mut denied = None;
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        match check(&Path::new(dir).join(name)) {
            Some(Ok(p)) => return Ok(p),
            Some(Err(e)) => {
                denied.get_or_insert(e);
            }
            None => {}
        }
    }
    Err(denied.unwrap_or_else(|| Failure::Exec(127, format!("{name}: command not found"))))
}

fn exec_failure(name: &str, e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::NotFound => Failure::Exec(127, format!("{name}: command not found")),
        io::ErrorKind::PermissionDenied => Failure::Exec(126, format!("{name}: Permission denied")),
        _ if e.raw_os_error() == Some(libc::ENOEXEC) => Failure::Exec(
            126,
            format!("{name}: cannot execute: Exec format error (no #! line; the agent runs no shell)"),
        ),
        _ => Failure::Exec(126, format!("{name}: cannot execute: {e}")),
    }
}

/// Ask the kernel whether it accepts the placement, on a scratch thread (policy and affinity are
/// per thread), so a refusal is reported clearly instead of as a failed exec. A kernel without
/// MPOL_F_NUMA_BALANCING (before 5.12) gets plain MPOL_BIND, as libnuma's
/// `numa_set_membind_balancing()` falls back on EINVAL.
fn dry_run(p: &mut Placement) -> Result<(), Failure> {
    let attempt = |p: &Placement| -> Result<io::Result<()>, Failure> {
        let setup = ChildSetup {
            policy: p.raw_policy(),
            cpus: p.cpu_set().map_err(|e| Failure::Usage(e.0))?,
            unblock: SigSet::empty(),
            terminal: None,
            trace: false,
        };
        std::thread::spawn(move || setup.apply())
            .join()
            .map_err(|_| Failure::Runtime("the placement check thread failed".into()))
    };
    let mut result = attempt(p)?;
    if p.numa_balancing && result.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)) {
        p.numa_balancing = false;
        result = attempt(p)?;
    }
    let what = p.args.iter().map(|a| a.numactl()).collect::<Vec<_>>().join(" ");
    result.map_err(|e| Failure::Usage(format!("the kernel refused {what}: {e}")))
}

fn start_record(args: &RunArgs, p: &Placement, pid: u32, unix_s: f64, base: &SystemCounters, traced: bool) -> Value {
    let mut flags = Vec::new();
    if p.static_nodes {
        flags.push("static");
    }
    if p.numa_balancing {
        flags.push("balancing");
    }
    json!({
        "type": "start",
        "agent": concat!("numalab-agent ", env!("CARGO_PKG_VERSION")),
        "time_unix_s": round6(unix_s),
        "pid": pid,
        "command": args.command,
        "placement": {
            "numactl": p.args.iter().map(|a| a.numactl()).collect::<Vec<_>>(),
            "policy": p.mode.map(|m| m.name()),
            "nodes": p.mode.map(|_| p.nodes.to_list_string()),
            "flags": flags,
            "numa_maps_policy": p.describe(),
            "cpus": p.cpus.as_ref().map(|c| c.to_list_string()),
        },
        "interval_ms": args.interval_ms,
        "maps_budget_pct": args.maps_budget_pct,
        "grace_ms": args.grace_ms,
        "exit_snapshot": traced,
        "vmstat": vmstat_json(&base.vmstat),
        "numastat": numastat_json(&base.numastat),
    })
}

/// How the command ended, as the summary tells it.
struct Ended<'a> {
    wall_s: f64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    agent_exit: i32,
    forwarded: &'a [&'static str],
    killed_after_grace: bool,
}

fn summary_record(args: &RunArgs, pid: u32, e: &Ended, s: &Sampler) -> Value {
    let ru = getrusage(UsageWho::RUSAGE_CHILDREN).ok();
    let tv = |t: nix::sys::time::TimeVal| round6(t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6);
    let rusage = ru.map(|u| {
        json!({
            "user_s": tv(u.user_time()),
            "system_s": tv(u.system_time()),
            "maxrss_kib": u.max_rss(),
            "minflt": u.minor_page_faults(),
            "majflt": u.major_page_faults(),
            "nvcsw": u.voluntary_context_switches(),
            "nivcsw": u.involuntary_context_switches(),
            "inblock": u.block_reads(),
            "oublock": u.block_writes(),
        })
    });
    json!({
        "type": "summary",
        "pid": pid,
        "command": args.command,
        "wall_s": round6(e.wall_s),
        "exit_code": e.exit_code,
        "signal": e.signal.and_then(|s| Signal::try_from(s).ok()).map(|s| s.as_str()),
        "agent_exit_code": e.agent_exit,
        "forwarded_signals": e.forwarded,
        "killed_after_grace": e.killed_after_grace,
        "rusage": rusage,
        "vmstat_delta": vmstat_json(&numalab_linux::vmstat::delta(&s.baseline.vmstat, &s.last.vmstat)),
        "numastat_delta": numastat_json(&s.numastat_delta()),
        "pages_per_node": by_node(&s.pages_per_node),
        "bytes_per_node": by_node(&s.bytes_per_node),
        "pages_t_s": s.last_pages_t_s.map(round6),
        "pages_basis": if s.pages_at_exit { "exit_snapshot" } else if s.last_pages_t_s.is_some() { "sample" } else { "none" },
        "threads": s.threads.values().map(|t| {
            let mut v = thread_json(t, s.processors.get(&t.tid).copied());
            v["snapshot"] = json!(if s.threads_at_exit.contains(&t.tid) { "exit" } else { "sample" });
            v
        }).collect::<Vec<_>>(),
        "samples": s.samples,
        "maps_reads": s.maps_reads,
        "maps_cost_s": round6(s.maps_cost_s),
        "errors": s.errors,
    })
}
