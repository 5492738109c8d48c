//! The two things no safe wrapper offers: the `set_mempolicy(2)` system call and a hook that runs
//! in the child between fork and exec. Everything else uses `nix`.
#![allow(unsafe_code)]

use std::io;
use std::process::Command;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::unistd::Pid;

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
}

impl ChildSetup {
    /// Apply to the calling thread (the child after fork, or a scratch thread for a dry run).
    pub fn apply(&self) -> io::Result<()> {
        nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&self.unblock), None)?;
        if let Some(p) = &self.policy {
            set_mempolicy(p)?;
        }
        if let Some(c) = &self.cpus {
            sched_setaffinity(Pid::from_raw(0), c)?;
        }
        Ok(())
    }
}

/// Make `cmd` apply `setup` in the child between fork and exec.
pub fn apply_before_exec(cmd: &mut Command, setup: ChildSetup) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child, where only async-signal-safe work is allowed. It
    // makes three system calls (rt_sigprocmask, set_mempolicy, sched_setaffinity) on data built
    // before the fork, allocates nothing and takes no lock; errors are plain errno values.
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }
}
