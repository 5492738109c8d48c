//! numalab-agent end to end on this host (whatever its nodes; the placement checks use node 0 and
//! CPU 0, which every Linux machine has), and on captured trees for nodes it lacks.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const AGENT: &str = env!("CARGO_BIN_EXE_numalab-agent");

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-agent-test-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/procfs").join(name)
}

fn agent(args: &[&str]) -> Output {
    Command::new(AGENT).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run `cmd` under the agent with `placement`, records to a file; (command's stdout, records).
fn run_recorded(test: &str, placement: &[&str], cmd: &[&str]) -> (Output, Vec<Value>) {
    let out = scratch(test).join("records.jsonl");
    let mut args = vec!["run", "--output", out.to_str().unwrap()];
    args.extend_from_slice(placement);
    args.push("--");
    args.extend_from_slice(cmd);
    let o = agent(&args);
    (o, records(&out))
}

fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}

fn summary(recs: &[Value]) -> &Value {
    let s = recs.last().expect("records");
    assert_eq!(s["type"], "summary", "{s}");
    s
}

/// The policies of numa_maps lines (second field up to the first file=/heap/stack/counter).
fn policies(numa_maps: &str) -> Vec<String> {
    numa_maps
        .lines()
        .map(|l| {
            let rest = l.split_once(' ').unwrap().1;
            for spaced in ["prefer (many)", "weighted interleave"] {
                if let Some(r) = rest.strip_prefix(spaced) {
                    return format!("{spaced}{}", r.split(' ').next().unwrap());
                }
            }
            rest.split(' ').next().unwrap().to_string()
        })
        .collect()
}

fn numa_maps_under(test: &str, placement: &[&str]) -> Vec<String> {
    let (o, recs) = run_recorded(test, placement, &["cat", "/proc/self/numa_maps"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(summary(&recs)["exit_code"], 0);
    let p = policies(&text(&o.stdout));
    assert!(!p.is_empty());
    p
}

mod placement {
    use super::*;

    #[test]
    fn membind_binds_every_mapping_to_node_0() {
        let (o, recs) = run_recorded("membind-status", &["--membind=0"], &["cat", "/proc/self/status"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let status = text(&o.stdout);
        assert!(
            status.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Mems_allowed_list:", "0"]),
            "{status}"
        );
        assert_eq!(recs[0]["type"], "start");
        assert_eq!(recs[0]["placement"]["policy"], "bind");
        assert_eq!(recs[0]["placement"]["numa_maps_policy"], "bind:0");
        assert!(numa_maps_under("membind-maps", &["--membind=0"]).iter().all(|p| p == "bind:0"));
    }

    #[test]
    fn interleave_all_interleaves_over_the_nodes_with_memory() {
        let p = numa_maps_under("interleave", &["--interleave=all"]);
        let expect = recs_policy("interleave-start", &["--interleave=all"]);
        assert!(expect.starts_with("interleave:0"), "{expect}");
        assert!(p.iter().all(|x| *x == expect), "{p:?}");
    }

    fn recs_policy(test: &str, placement: &[&str]) -> String {
        let (_, recs) = run_recorded(test, placement, &["true"]);
        recs[0]["placement"]["numa_maps_policy"].as_str().unwrap().to_string()
    }

    #[test]
    fn each_numactl_mode_reaches_the_kernel() {
        assert!(numa_maps_under("local", &["-l"]).iter().all(|p| p == "local"));
        assert!(numa_maps_under("preferred", &["-p", "0"]).iter().all(|p| p == "prefer:0"));
        assert!(numa_maps_under("static", &["--membind==0"]).iter().all(|p| p == "bind=static:0"));
        // --balancing: MPOL_F_NUMA_BALANCING where the kernel has it (5.12+), plain bind before.
        let want = recs_policy("balancing-start", &["-m", "0", "-b"]);
        assert!(want == "bind=balancing:0" || want == "bind:0", "{want}");
        assert!(numa_maps_under("balancing", &["-m", "0", "-b"]).iter().all(|p| *p == want));
        // Newer modes (preferred-many 5.15, weighted interleave 6.9): checked where the kernel has them.
        for (opt, want) in
            [("--preferred-many=0", "prefer (many):0"), ("--weighted-interleave=0", "weighted interleave:0")]
        {
            let o = agent(&["run", opt, "true"]);
            if text(&o.stderr).contains("the kernel refused") {
                continue;
            }
            assert!(numa_maps_under(opt, &[opt]).iter().all(|p| p == want), "{opt}");
        }
        // The default policy is left alone.
        assert!(numa_maps_under("default", &[]).iter().all(|p| p == "default"));
    }

    #[test]
    fn cpu_binding_sets_the_affinity() {
        let (o, _) = run_recorded("physcpubind", &["--physcpubind=0"], &["cat", "/proc/self/status"]);
        let s = text(&o.stdout);
        assert!(s.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Cpus_allowed_list:", "0"]), "{s}");
        let node0 = fs::read_to_string("/sys/devices/system/node/node0/cpulist").unwrap();
        let (o, recs) = run_recorded("cpunodebind", &["-N", "0"], &["cat", "/proc/self/status"]);
        let (_, sampled) = run_recorded("physcpubind-sampled", &["-C", "0", "--interval-ms", "20"], &["sleep", "0.1"]);
        assert_eq!(sampled[1]["cpus_allowed"], "0", "the sampled process's Cpus_allowed_list");
        // `processor` (stat field 39): the CPU the thread last ran on, inside its affinity.
        assert_eq!(sampled[1]["threads"][0]["processor"], 0, "{}", sampled[1]);
        assert_eq!(summary(&sampled)["threads"][0]["processor"], 0);
        let s = text(&o.stdout);
        let want = node0.trim();
        assert!(s.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Cpus_allowed_list:", want]), "{s}");
        assert_eq!(recs[0]["placement"]["cpus"], want);
    }
}

mod exit_codes {
    use super::*;

    #[test]
    fn the_command_exit_code_is_passed_through() {
        let (o, recs) = run_recorded("exit3", &[], &["sh", "-c", "exit 3"]);
        assert_eq!(o.status.code(), Some(3));
        let s = summary(&recs);
        assert_eq!((s["exit_code"].as_i64(), s["agent_exit_code"].as_i64()), (Some(3), Some(3)));
        assert!(s["signal"].is_null());
    }

    #[test]
    fn a_missing_command_is_127_like_a_shell() {
        let o = agent(&["run", "--", "numalab-no-such-command", "x"]);
        assert_eq!(o.status.code(), Some(127));
        assert_eq!(text(&o.stderr), "numalab-agent: numalab-no-such-command: command not found\n");
        // argv, never a shell string: a command line in one word is a command name.
        let o = agent(&["run", "--", "echo hi"]);
        assert_eq!(o.status.code(), Some(127));
    }

    #[test]
    fn a_file_that_is_not_executable_is_126() {
        let f = scratch("noexec").join("script");
        fs::write(&f, "#!/bin/sh\nexit 0\n").unwrap();
        let o = agent(&["run", "--", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(126), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("Permission denied"));
        // Executable but not a program (no #! line): a shell would run it with sh, the agent runs
        // no shell.
        let g = scratch("noexec").join("plain");
        fs::write(&g, "exit 0\n").unwrap();
        fs::set_permissions(&g, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let o = agent(&["run", "--", g.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(126), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("Exec format error"), "{}", text(&o.stderr));
    }

    #[test]
    fn bad_input_is_one_line_and_exit_2() {
        for (args, want) in [
            (vec!["run", "--interleaved=0", "true"], "unknown option '--interleaved=0'"),
            (vec!["run", "--membind=63", "true"], "--membind=63: node 63"),
            (vec!["run", "-i", "0", "-m", "0", "true"], "conflicting policies"),
            (vec!["run", "--physcpubind=4095", "true"], "--physcpubind=4095: cpu 4095"),
            (vec!["frobnicate"], "unknown subcommand"),
        ] {
            let o = agent(&args);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.starts_with("numalab-agent: ") && err.contains(want), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn nodes_without_memory_or_cpus_are_refused_with_the_reason() {
        let root = fixture("four-node-tiered");
        let r = root.to_str().unwrap();
        let o = agent(&["run", "--root", r, "--membind=3", "true"]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(text(&o.stderr), "numalab-agent: --membind=3: node 3 has no memory (nodes with memory: 0-2)\n");
        let o = agent(&["run", "--root", r, "--preferred=5", "true"]);
        assert!(text(&o.stderr).contains("node 5 in '5' does not exist"), "{}", text(&o.stderr));
        let o = agent(&["run", "--root", r, "--cpunodebind=2", "true"]);
        assert!(text(&o.stderr).contains("node 2 has no CPUs"), "{}", text(&o.stderr));
    }
}

mod sampling {
    use super::*;

    #[test]
    fn samples_carry_pages_threads_and_counters() {
        let (o, recs) =
            run_recorded("sampling", &["--interval-ms", "50", "--maps-budget-pct", "100"], &["sleep", "0.4"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let start = &recs[0];
        assert!(start["vmstat"]["numa_hit"].as_u64().unwrap() > 0);
        assert!(start["numastat"]["0"]["numa_hit"].as_u64().unwrap() > 0);
        let samples: Vec<&Value> = recs.iter().filter(|r| r["type"] == "sample").collect();
        assert!(samples.len() >= 4, "{} samples", samples.len());
        let pid = start["pid"].as_u64().unwrap();
        for s in &samples {
            assert_eq!(s["pid"].as_u64(), Some(pid));
            assert!(s["pages_per_node"]["0"].as_u64().unwrap() > 0, "{s}");
            // A sample skips numa_maps while the last read's cost is over its budget (a read
            // slower than the 50 ms interval on a busy machine); one that read it maps `sleep`.
            if let Some(maps) = s["mappings"].as_array() {
                assert!(maps.iter().any(|m| m["file"].as_str().is_some_and(|f| f.ends_with("sleep"))));
            }
            let t = &s["threads"][0];
            assert_eq!(t["tid"].as_u64(), Some(pid));
            assert!(s["mems_allowed"].as_str().unwrap().starts_with('0'), "{s}");
            assert!(t["numa_preferred_nid"].is_i64(), "NUMA block of /proc/PID/task/TID/sched: {t}");
        }
        assert!(samples[0]["mappings"].is_array(), "the first sample reads numa_maps: {}", samples[0]);
        // The last record before the summary is the snapshot at the exit stop, not a sample.
        assert_eq!(samples.last().unwrap()["snapshot"], "exit");
        assert!(samples[..samples.len() - 1].iter().all(|s| s["snapshot"].is_null()));
        let sum = summary(&recs);
        assert_eq!(sum["samples"].as_u64().unwrap() as usize, samples.len() - 1);
        assert_eq!((&sum["pages_basis"], &sum["threads"][0]["snapshot"]), (&json!("exit_snapshot"), &json!("exit")));
        assert!(sum["vmstat_delta"]["numa_hit"].as_u64().unwrap() > 0, "sleep allocated pages");
        assert!(sum["pages_per_node"]["0"].as_u64().unwrap() > 0, "the last pages seen");
        assert!(sum["rusage"]["maxrss_kib"].as_u64().unwrap() > 0);
        assert!(sum["wall_s"].as_f64().unwrap() >= 0.4);
        assert_eq!(sum["threads"][0]["comm"], "sleep");
        assert_eq!(sum["maps_reads"].as_u64(), sum["samples"].as_u64().map(|n| n + 1));
    }

    #[test]
    fn a_small_budget_reads_numa_maps_less_often_and_keeps_the_last_pages() {
        let (o, recs) =
            run_recorded("budget", &["--interval-ms", "50", "--maps-budget-pct", "0.0001"], &["sleep", "0.4"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let samples: Vec<&Value> = recs.iter().filter(|r| r["type"] == "sample" && r["snapshot"].is_null()).collect();
        assert!(samples.len() >= 3);
        assert!(samples[0]["mappings"].is_array(), "the first sample maps the process");
        for s in &samples[1..] {
            assert!(s["mappings"].is_null(), "{s}");
            assert_eq!(s["pages_t_s"], samples[0]["t_s"]);
            assert!(s["pages_per_node"]["0"].as_u64().unwrap() > 0);
            assert!(!s["threads"].as_array().unwrap().is_empty(), "threads are sampled every time");
        }
        // The first sample's read, and the exit snapshot's, which no budget holds back.
        assert_eq!(summary(&recs)["maps_reads"], 2);
    }

    #[test]
    fn a_command_that_ends_before_the_first_sample_is_read_at_its_exit() {
        let (o, recs) = run_recorded("exit", &[], &["dd", "if=/dev/zero", "of=/dev/null", "bs=8M", "count=1"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(recs[0]["exit_snapshot"], true);
        let sum = summary(&recs);
        assert_eq!((sum["samples"].as_u64(), &sum["pages_basis"]), (Some(0), &json!("exit_snapshot")));
        assert!(
            sum["bytes_per_node"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum::<u64>() >= 8 << 20
        );
        assert_eq!(sum["threads"][0]["snapshot"], "exit");
    }
}

mod signals {
    use super::*;

    /// Start the agent on `sleep 30`, recording to a file; wait for the start record.
    // The caller waits for the returned child (`wait` below); clippy cannot follow it out of the loop.
    #[allow(clippy::zombie_processes, unsafe_code)]
    fn start(test: &str) -> (Child, PathBuf, u32) {
        let out = scratch(test).join("records.jsonl");
        let mut child = Command::new(AGENT);
        child
            .args(["run", "--interval-ms", "100", "--output", out.to_str().unwrap(), "--", "sleep", "30"])
            // A SIGQUIT may dump core: into the scratch directory, not the source tree.
            .current_dir(out.parent().unwrap())
            .stdin(Stdio::null());
        // A shell without job control starts a background job with SIGINT and SIGQUIT ignored,
        // and `sleep` inherits that: it would outlive the forwarded signal until the grace kill
        // (exit 137). The test is about forwarding, so the command starts with default actions.
        // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut child, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = child.spawn().unwrap();
        let t0 = Instant::now();
        loop {
            if let Some(pid) = records(&out).first().and_then(|r| r["pid"].as_u64()) {
                return (child, out, pid as u32);
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no start record");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait(mut c: Child) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = c.kill();
                panic!("the agent did not stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn signals_to_the_agent_reach_the_command() {
        for (name, number) in [("TERM", 15), ("INT", 2), ("HUP", 1), ("QUIT", 3)] {
            let (child, out, _) = start(&format!("sig{name}"));
            std::thread::sleep(Duration::from_millis(150));
            Command::new("kill").args([format!("-{name}"), child.id().to_string()]).status().unwrap();
            let st = wait(child);
            assert_eq!(st.code(), Some(128 + number), "SIG{name}");
            let recs = records(&out);
            let s = summary(&recs);
            assert_eq!(s["signal"], format!("SIG{name}"));
            assert_eq!(s["forwarded_signals"][0], format!("SIG{name}"));
            assert!(s["exit_code"].is_null());
        }
    }

    #[test]
    fn a_killed_command_still_gets_its_summary() {
        let (child, out, pid) = start("sigkill");
        std::thread::sleep(Duration::from_millis(350));
        Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
        let st = wait(child);
        assert_eq!(st.code(), Some(128 + 9));
        let recs = records(&out);
        let s = summary(&recs);
        assert_eq!((s["signal"].as_str(), s["agent_exit_code"].as_i64()), (Some("SIGKILL"), Some(137)));
        assert!(s["samples"].as_u64().unwrap() >= 1);
        assert!(s["pages_per_node"]["0"].as_u64().unwrap() > 0, "pages from the last sample");
        assert!(s["forwarded_signals"].as_array().unwrap().is_empty());
    }
}

mod subcommands {
    use super::*;

    #[test]
    fn topo_prints_the_host_as_json() {
        let o = agent(&["topo"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(!v["nodes"].as_array().unwrap().is_empty());
        assert!(v["has_memory"].as_str().unwrap().starts_with('0'));
        let sysfs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sysfs/two-node");
        let o = agent(&["topo", "--root", sysfs.to_str().unwrap()]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["nodes"][1]["cpus"], "4-7,12-15");
        assert!(v["online"].is_null(), "that capture has no node state masks");
        let o = agent(&["topo", "--root", "/nonexistent"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o.stderr).starts_with("numalab-agent: cannot read /nonexistent/"), "{}", text(&o.stderr));
    }

    fn copy_tree(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &to.join(e.file_name()));
            } else {
                fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    #[test]
    fn knobs_set_and_restore_through_a_journal() {
        let dir = scratch("knobs");
        let root = dir.join("root");
        copy_tree(&fixture("four-node-tiered"), &root);
        let (r, j) = (root.to_str().unwrap().to_string(), dir.join("journal.json").to_str().unwrap().to_string());
        let o = agent(&["knobs", "set", "numa_balancing=0", "scan_period_min_ms=200", "--journal", &j, "--root", &r]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["changed"][1]["before"], 1000);
        assert_eq!(v["changed"][1]["location"], "debugfs");
        let get: Value = serde_json::from_slice(&agent(&["knobs", "get", "--root", &r]).stdout).unwrap();
        let nb = get["knobs"].as_array().unwrap().iter().find(|k| k["name"] == "numa_balancing").unwrap();
        assert_eq!(nb["value"], 0);
        let o = agent(&["knobs", "restore", "--journal", &j, "--root", &r]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(fs::read_to_string(root.join("proc/sys/kernel/numa_balancing")).unwrap(), "2\n");
        assert_eq!(
            fs::read_to_string(root.join("sys/kernel/debug/sched/numa_balancing/scan_period_min_ms")).unwrap(),
            "1000\n"
        );
        let o = agent(&["knobs", "set", "scan_size=5", "--journal", &j, "--root", &r]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains("unknown NUMA balancing knob"), "{}", text(&o.stderr));
    }
}

/// The C kernels of `kernels/` (built here with their Makefile), alone and under the agent.
mod kernels {
    use super::*;

    /// The kernel binary, built once per test process (tests run in parallel).
    fn built(name: &str) -> PathBuf {
        static BUILD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
        let ok =
            BUILD.get_or_init(|| Command::new("make").args(["-s", "-C"]).arg(&dir).status().is_ok_and(|s| s.success()));
        assert!(ok, "make -C kernels failed");
        dir.join(name)
    }

    fn line(o: &Output) -> Value {
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        assert_eq!(out.lines().count(), 1, "exactly one line: {out}");
        serde_json::from_str(&out).unwrap()
    }

    #[test]
    fn each_kernel_prints_one_json_line_with_its_timing() {
        for (k, n) in [("dgemv", "300"), ("stream", "100000"), ("stencil", "40"), ("barrier", "100000")] {
            let o =
                Command::new(built(k)).args(["--n", n, "--reps", "2", "--threads", "2", "--init", "serial"]).output();
            let v = line(&o.unwrap());
            assert_eq!(v["kernel"], k);
            assert_eq!(v["n"].to_string(), n);
            assert_eq!(
                (v["threads"].as_u64(), v["reps"].as_u64(), v["init"].as_str()),
                (Some(2), Some(2), Some("serial"))
            );
            for f in ["init_s", "time_s", "gflops", "gbps"] {
                assert!(v[f].as_f64().unwrap() >= 0.0, "{k} {f}: {v}");
            }
            assert!(v["time_s"].as_f64().unwrap() > 0.0);
        }
    }

    #[test]
    fn the_results_do_not_depend_on_the_init_or_the_threads() {
        let run = |init: &str, threads: &str| {
            line(
                &Command::new(built("dgemv"))
                    .args(["--n", "200", "--reps", "1", "--threads", threads, "--init", init])
                    .output()
                    .unwrap(),
            )["checksum"]
                .as_f64()
                .unwrap()
        };
        let a = run("serial", "1");
        assert_eq!(a, run("parallel", "2"));
    }

    #[test]
    fn bad_options_print_the_usage_and_exit_2() {
        for args in [vec!["--n", "x"], vec!["--init", "sometimes"], vec!["--bogus", "1"], vec!["--reps"], vec!["extra"]]
        {
            let o = Command::new(built("stream")).args(&args).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            assert!(text(&o.stderr).contains("usage: stream"), "{args:?}: {}", text(&o.stderr));
            assert!(o.stdout.is_empty());
        }
    }

    #[test]
    fn stream_under_the_agent_shows_its_arrays_on_node_0() {
        let k = built("stream");
        let (o, recs) = run_recorded(
            "stream",
            &["--membind=0", "--interval-ms", "20", "--maps-budget-pct", "100"],
            &[k.to_str().unwrap(), "--n", "2000000", "--reps", "40", "--threads", "2", "--init", "serial"],
        );
        let v = line(&o);
        assert_eq!(v["kernel"], "stream");
        let s = summary(&recs);
        // Three arrays of 2e6 doubles: 11719 pages of 4 KiB, once first-written.
        let arrays_pages = 3 * 2_000_000 * 8 / 4096;
        let max_pages = recs
            .iter()
            .filter(|r| r["type"] == "sample")
            .filter_map(|r| r["pages_per_node"]["0"].as_u64())
            .max()
            .unwrap_or(0);
        assert!(max_pages >= arrays_pages, "at most {max_pages} pages seen");
        assert!(s["vmstat_delta"]["numa_hit"].as_u64().unwrap() >= arrays_pages);
        assert!(recs
            .iter()
            .filter(|r| r["type"] == "sample")
            .all(|r| r["mappings"].as_array().is_none_or(|m| m.iter().all(|m| m["policy"] == "bind:0"))));
    }
}
