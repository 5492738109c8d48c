//! What no safe wrapper offers: the `set_mempolicy(2)` system call, a hook that runs in the child
//! between fork and exec, a plain `execve(2)` and borrowing the terminal's descriptor in the
//! child. Everything else uses `nix`.
#![allow(unsafe_code)]

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::unistd::{getpid, tcsetpgrp, Pid};

/// `MPOL_*` mode flags (include/uapi/linux/mempolicy.h).
pub const MPOL_F_STATIC_NODES: i32 = 1 << 15;
pub const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;

/// A memory policy as `set_mempolicy(2)` takes it: `mode | flags` and a node mask in 64-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawPolicy {
    pub mode: i32,
    pub flags: i32,
    pub mask: Vec<u64>,
}

/// `set_mempolicy(mode | flags, mask, maxnode)` for the calling thread.
pub fn set_mempolicy(p: &RawPolicy) -> io::Result<()> {
    // The kernel reads `maxnode - 1` bits (get_nodes() in mm/mempolicy.c), so pass one more than
    // the bits held; libnuma's setpol() relies on the same rule. An empty mask is a NULL pointer.
    let (ptr, maxnode) = if p.mask.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (p.mask.as_ptr(), p.mask.len() as libc::c_ulong * 64 + 1)
    };
    // SAFETY: `ptr` is null or points to `mask.len()` u64 words that live for the whole call, and
    // the kernel reads at most `maxnode - 1` bits from it; set_mempolicy touches no other memory.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, p.mode | p.flags, ptr, maxnode) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the child applies to itself before exec, in numactl's order: memory policy, then CPU
/// affinity (numactl.c main(): each option is applied as it is parsed, then execvp).
pub struct ChildSetup {
    pub policy: Option<RawPolicy>,
    pub cpus: Option<CpuSet>,
    /// Signals the agent blocks for itself; the child must start with them unblocked.
    pub unblock: SigSet,
    /// The terminal to make the child's process group the foreground of (the agent's, when the
    /// agent is in the foreground): ^C and ^\ then reach the command as they would from a shell.
    /// SIGTTOU must be blocked (it is in `unblock`), since the child's new group is not yet the
    /// foreground when it asks.
    pub terminal: Option<RawFd>,
    /// `PTRACE_TRACEME`: the agent traces the command, to see it at its exit (run.rs).
    pub trace: bool,
}

/// The errno a failed `PTRACE_TRACEME` is reported with through `spawn()`, so the agent can tell
/// it from the other set-up calls (none of which returns it) and run the command untraced.
pub const TRACEME_REFUSED: i32 = libc::ENOTSUP;

impl ChildSetup {
    /// Apply to the calling thread (the child after fork, or a scratch thread for a dry run).
    pub fn apply(&self) -> io::Result<()> {
        if let Some(fd) = self.terminal {
            // SAFETY: `fd` is the agent's standard input, open for the whole fork-exec; the
            // borrow lives for this call only.
            let tty = unsafe { BorrowedFd::borrow_raw(fd) };
            // Not fatal: a terminal that went away leaves the command in the background.
            let _ = tcsetpgrp(tty, getpid());
        }
        nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&self.unblock), None)?;
        if let Some(p) = &self.policy {
            set_mempolicy(p)?;
        }
        if let Some(c) = &self.cpus {
            sched_setaffinity(Pid::from_raw(0), c)?;
        }
        if self.trace && nix::sys::ptrace::traceme().is_err() {
            return Err(io::Error::from_raw_os_error(TRACEME_REFUSED));
        }
        Ok(())
    }
}

/// An `execve(2)` prepared before the fork: path, argv and environment as C strings and the
/// pointer arrays over them, so the child only makes the system call. Not `execvp`: glibc's
/// execvp runs a file the kernel cannot execute (ENOEXEC) with /bin/sh, and the agent runs no
/// shell.
pub struct Exec {
    path: CString,
    _strings: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

// SAFETY: the raw pointers point into the heap buffers of the CStrings the same value owns; those
// buffers never move or change while it lives, so the value can move to and be read from any
// thread (the pre-exec hook must be Send + Sync).
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is ever written through the pointers.
unsafe impl Sync for Exec {}

impl Exec {
    /// `path` to run, `args` its argv (argv[0] first); the environment is the agent's.
    pub fn new(path: &OsStr, args: &[String]) -> io::Result<Exec> {
        let c = |b: &[u8]| CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"));
        let path = c(path.as_bytes())?;
        let mut strings = Vec::new();
        for a in args {
            strings.push(c(a.as_bytes())?);
        }
        let nargs = strings.len();
        for (k, v) in std::env::vars_os() {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            strings.push(c(&kv)?);
        }
        let ptrs = |s: &[CString]| s.iter().map(|x| x.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
        let argv = ptrs(&strings[..nargs]);
        let envp = ptrs(&strings[nargs..]);
        Ok(Exec { path, _strings: strings, argv, envp })
    }

    /// Replace this process with the program; returns only on failure, with its errno.
    fn exec(&self) -> io::Error {
        // SAFETY: path, argv and envp are NUL-terminated strings and NULL-terminated arrays owned
        // by `self`, alive for the call; execve reads them and does not return on success.
        unsafe { libc::execve(self.path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// Make `cmd` apply `setup` in the child between fork and exec, then exec with `exec`.
pub fn apply_before_exec(cmd: &mut Command, setup: ChildSetup, exec: Exec) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child, where only async-signal-safe work is allowed. It
    // makes plain system calls (tcsetpgrp's ioctl, rt_sigprocmask, set_mempolicy,
    // sched_setaffinity, ptrace, execve) on data built before the fork, allocates nothing and
    // takes no lock; errors are plain errno values, which std passes back to spawn() in the parent.
    unsafe {
        cmd.pre_exec(move || {
            setup.apply()?;
            Err(exec.exec())
        });
    }
}
