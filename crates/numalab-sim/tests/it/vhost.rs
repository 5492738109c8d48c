//! The host running a guest's vCPUs (`numalab_sim::vhost`, docs/scheduler.md §10.5): a CPU the
//! host does not run makes no progress while the run's clock goes on.

use numalab_sim::input::{Pattern, WaitPolicy};
use numalab_sim::vhost::{HostMode, VcpuHost};
use numalab_sim::{simulate, SimConfig};

use numalab_model::MemPolicy;

use crate::common::*;

fn time_s(host: Option<VcpuHost>, wait: WaitPolicy) -> f64 {
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 4);
    let c = SimConfig { vcpu_host: host, omp_wait_policy: wait, ..cfg() };
    simulate(&m, &w, &pinned(MemPolicy::default_policy()), &c).unwrap().time_s
}

/// A host of `cores` running the vCPUs in `mode`, a vCPU keeping a core `slice_s` at a time.
fn host(cores: usize, mode: HostMode, slice_s: f64) -> VcpuHost {
    VcpuHost::new(cores, mode, slice_s)
}

#[test]
fn four_busy_vcpus_on_one_host_core_take_about_four_times_as_long() {
    // Threads that sleep at once at a barrier (passive): their vCPUs halt and use no host time.
    let base = time_s(None, WaitPolicy::Passive);
    for mode in [HostMode::Mttcg, HostMode::Rr] {
        let one = time_s(Some(host(1, mode, 1.5e-3)), WaitPolicy::Passive);
        // Each vCPU computes a quarter of the time (memory less contended with one running: a
        // little faster); a vCPU that halts gives the core to the next at once (§10.60).
        assert!(one > 3.0 * base && one < 5.0 * base, "{mode:?}: {one} against {base}");
    }
    // As many host cores as busy vCPUs: the run as without the host.
    let four = time_s(Some(host(4, HostMode::Mttcg, 1.5e-3)), WaitPolicy::Passive);
    assert!((four / base - 1.0).abs() < 0.05, "{four} against {base}");
}

#[test]
fn a_vcpu_that_halts_gives_its_host_core_up_at_the_halt_not_at_the_rounds_end() {
    // Four vCPUs whose threads sleep at once at a barrier share one host core: the core goes
    // to the next vCPU where one halts (docs/scheduler.md §10.60), so the core is never left
    // unused while a vCPU has work.
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 4);
    let base = time_s(None, WaitPolicy::Passive);
    let c = SimConfig {
        vcpu_host: Some(host(1, HostMode::Mttcg, 1.5e-3)),
        omp_wait_policy: WaitPolicy::Passive,
        explain_sched: true,
        ..cfg()
    };
    let o = simulate(&m, &w, &pinned(MemPolicy::default_policy()), &c).unwrap();
    // One vCPU after another at most as slow as all four at once (alone, memory is less
    // contended): 3.83 times seen; 4.45 when a halted vCPU kept the core to the round's end.
    assert!(o.time_s < 4.0 * base, "{} against {base}", o.time_s);
    // The core's time went to the vCPUs all along, none left unused to the run's end.
    let held: f64 = o.sched_cpus.iter().filter_map(|c| c.host_s).sum();
    assert!((held / o.time_s - 1.0).abs() < 0.01, "{held} against {}", o.time_s);
}

#[test]
fn vcpus_spinning_at_a_barrier_take_host_time_from_those_still_computing() {
    let one_core = || Some(host(1, HostMode::Mttcg, 1.5e-3));
    let passive = time_s(one_core(), WaitPolicy::Passive);
    // libgomp's default spins about 3 ms before sleeping: a non-halted vCPU all that time.
    let spinning = time_s(one_core(), WaitPolicy::Unset);
    assert!(spinning > 1.2 * passive, "{spinning} against {passive}");
    // Without the host model the spin costs no computing thread anything.
    let (a, b) = (time_s(None, WaitPolicy::Passive), time_s(None, WaitPolicy::Unset));
    assert!((a / b - 1.0).abs() < 0.05, "{a} against {b}");
}

#[test]
fn a_host_without_cores_is_refused() {
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 1);
    let c = SimConfig { vcpu_host: Some(host(0, HostMode::Mttcg, 1e-3)), ..cfg() };
    let e = simulate(&m, &w, &pinned(MemPolicy::default_policy()), &c).unwrap_err().to_string();
    assert!(e.contains("vcpu_host.cores"), "{e}");
}

#[test]
fn halted_vcpus_take_no_host_time_from_the_busy_one() {
    // Both threads on the primary's core (the other 15 vCPUs halted): one host core runs it
    // alone, as fast as without the host.
    let m = machine4();
    let w = stream_like(16, 2, Pattern::Block, 4);
    let p = numalab_sim::input::Placement {
        proc_bind: numalab_sim::input::ProcBind::Primary,
        ..pinned(MemPolicy::default_policy())
    };
    let run = |host| {
        let c = SimConfig { vcpu_host: host, omp_wait_policy: WaitPolicy::Passive, ..cfg() };
        simulate(&m, &w, &p, &c).unwrap().time_s
    };
    let base = run(None);
    let one = run(Some(host(1, HostMode::Mttcg, 1.5e-3)));
    assert!((one / base - 1.0).abs() < 0.05, "{one} against {base}");
}

/// Idle entries over the CPUs and the run's time, four threads on one host core waiting at
/// barriers with libgomp's default spin at `spin_iteration_s`.
fn idle_entries_and_time(wait: WaitPolicy, spin_iteration_s: Option<f64>) -> (u64, f64) {
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 4);
    let h = VcpuHost { spin_iteration_s, ..host(1, HostMode::Mttcg, 4e-3) };
    let c = SimConfig { vcpu_host: Some(h), omp_wait_policy: wait, explain_sched: true, ..cfg() };
    let o = simulate(&m, &w, &pinned(MemPolicy::default_policy()), &c).unwrap();
    (o.sched_cpus.iter().map(|c| c.sched_goidle).sum(), o.time_s)
}

#[test]
fn waits_longer_than_libgomps_3_ms_spin_but_shorter_than_42_ms_spin_at_140_ns_a_pause() {
    // Four vCPUs on one host core reach each barrier one after another, several ms apart.
    let (passive, passive_s) = idle_entries_and_time(WaitPolicy::Passive, None);
    let (estimate, estimate_s) = idle_entries_and_time(WaitPolicy::Unset, None);
    let (tcg, tcg_s) = idle_entries_and_time(WaitPolicy::Unset, Some(140e-9));
    assert!(passive > 0);
    // At libgomp's 10 ns a spin the waits outlast the 3 ms spin: the waiters sleep as passive
    // ones do and their vCPUs go idle.
    assert_eq!(estimate, passive);
    // At TCG's 140 ns the spin lasts 42 ms, longer than every wait: no waiter sleeps, no CPU
    // goes idle, and the spinning vCPUs keep taking the host core from the computing ones.
    assert_eq!(tcg, 0);
    assert!(tcg_s > estimate_s && estimate_s > passive_s, "{tcg_s} {estimate_s} {passive_s}");
    // Passive waiters do not spin: the iteration changes nothing.
    assert_eq!(idle_entries_and_time(WaitPolicy::Passive, Some(140e-9)), (passive, passive_s));
}

#[test]
fn a_spin_iteration_that_is_not_a_positive_number_of_seconds_is_refused() {
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 1);
    for bad in [0.0, -140e-9, f64::NAN, f64::INFINITY] {
        let h = VcpuHost { spin_iteration_s: Some(bad), ..host(1, HostMode::Mttcg, 4e-3) };
        let c = SimConfig { vcpu_host: Some(h), ..cfg() };
        let e = simulate(&m, &w, &pinned(MemPolicy::default_policy()), &c).unwrap_err().to_string();
        assert!(e.contains("vcpu_host.spin_iteration_s must be a positive number of seconds"), "{e}");
    }
}
