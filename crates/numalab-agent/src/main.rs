//! numalab-agent: run a program under a numactl placement and record where its memory and faults
//! go; read and set the kernel's NUMA balancing knobs with a journal. One static binary, no shell,
//! no libnuma. `numalab-agent --help` lists the commands; errors are one line on stderr.

mod cli;
mod placement;
mod run;
mod sample;
mod sys;

use std::path::Path;
use std::process::ExitCode;

use numalab_linux::knobs::{read_knobs, restore_knobs, set_knobs};
use numalab_linux::{read_node_states, read_topology, LinuxError};
use serde_json::json;

use cli::Cmd;

/// Why the agent stops without running to the end; each has its exit code.
pub enum Failure {
    /// Bad input (options, placement the host cannot honour): exit 2.
    Usage(String),
    /// The command could not be exec'd: 127 (not found) or 126 (not executable), as a shell.
    Exec(i32, String),
    /// Something failed at run time (a file not readable or writable): exit 1.
    Runtime(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match cli::parse(&args) {
        Ok(cmd) => dispatch(cmd),
        Err(e) => Err(Failure::Usage(e.0)),
    };
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(f) => {
            let (code, msg) = match f {
                Failure::Usage(m) => (2, m),
                Failure::Exec(c, m) => (c, m),
                Failure::Runtime(m) => (1, m),
            };
            eprintln!("numalab-agent: {msg}");
            ExitCode::from(code as u8)
        }
    }
}

fn linux(e: LinuxError) -> Failure {
    match e {
        LinuxError::Parse { .. } => Failure::Usage(e.to_string()),
        _ => Failure::Runtime(e.to_string()),
    }
}

fn dispatch(cmd: Cmd) -> Result<i32, Failure> {
    match cmd {
        Cmd::Help => {
            println!("{}", cli::USAGE);
            Ok(0)
        }
        Cmd::Version => {
            println!("numalab-agent {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Cmd::Topo { root } => topo(&root),
        Cmd::Run(r) => run::run(r),
        Cmd::KnobsGet { root } => {
            let (knobs, absent) = read_knobs(&root).map_err(linux)?;
            println!(
                "{}",
                json!({
                    "root": root.display().to_string(),
                    "knobs": knobs.iter().map(|k| k.to_json()).collect::<Vec<_>>(),
                    "absent": absent,
                })
            );
            Ok(0)
        }
        Cmd::KnobsSet { root, journal, changes } => {
            let before = set_knobs(&root, &journal, &changes).map_err(linux)?;
            let changed: Vec<_> = before
                .iter()
                .zip(&changes)
                .map(|(b, (_, v))| {
                    json!({"name": b.name, "path": b.path, "location": b.location.name(), "before": b.value, "after": v})
                })
                .collect();
            println!(
                "{}",
                json!({"root": root.display().to_string(), "journal": journal.display().to_string(), "changed": changed})
            );
            Ok(0)
        }
        Cmd::KnobsRestore { root, journal } => {
            let restored = restore_knobs(&root, &journal).map_err(linux)?;
            println!(
                "{}",
                json!({
                    "root": root.display().to_string(),
                    "journal": journal.display().to_string(),
                    "restored": restored.iter().map(|k| k.to_json()).collect::<Vec<_>>(),
                })
            );
            Ok(0)
        }
    }
}

/// The topology facts (`numalab_linux::HostTopology::to_json`) plus the node state masks (null
/// where a captured tree lacks them).
fn topo(root: &Path) -> Result<i32, Failure> {
    let t = read_topology(root).map_err(linux)?;
    let s = read_node_states(root).ok();
    let mut v = t.to_json();
    v["online"] = json!(s.as_ref().map(|s| s.online.to_list_string()));
    v["has_memory"] = json!(s.as_ref().map(|s| s.has_memory.to_list_string()));
    v["has_cpu"] = json!(s.as_ref().map(|s| s.has_cpu.to_list_string()));
    println!("{v}");
    Ok(0)
}
