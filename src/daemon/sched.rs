//! `[process] realtime_priority`: the daemon's threads in the kernel's real-time class
//! (`SCHED_RR` at the given priority), off by default.
//!
//! On a machine whose cores are busy, a normal process can wait tens of milliseconds for
//! a core; a leader that waits that long sends no heartbeat, and its followers, which
//! ran, rightly call it lost (docs/bench/detect/README.md, "The grace"). A real-time
//! thread runs before every normal one, so the heartbeats leave on time whatever the
//! rest of the machine does. The kernel still keeps a share of each second for normal
//! tasks (`/proc/sys/kernel/sched_rt_runtime_us`, 5 % by default; since Linux 6.12 its
//! fair server, 50 ms per second by default), and electd's threads mostly sleep. It is
//! meant for one daemon per machine: 35 real-time processes on two cores were seen to
//! stall together where ten did not (docs/bench/detect/README.md, "The real-time
//! class").
//!
//! Every thread of the daemon enters the class: the runtime's workers and blocking
//! threads (tokio's `on_thread_start`) and the state file's writer ([`enter_here`]).
//! Nothing else does: the class is set with `SCHED_RESET_ON_FORK`, so a process the
//! daemon starts (the `on_leader_change` hook, a `[[check]]` command) and a thread the
//! daemon does not enter itself start in the normal class. Whether the kernel allows
//! the class is checked when the configuration is validated (`config::process`).

use crate::config::process::{probe, refusal, set_thread_realtime};
use std::sync::OnceLock;

/// The priority the daemon's threads run at; set once by [`enter`].
static PRIORITY: OnceLock<u8> = OnceLock::new();

/// Put the calling thread in `SCHED_RR` at `priority` (1..=99) and remember the
/// priority for the daemon's other threads ([`enter_here`]). The error says what the
/// kernel refused and how to allow it.
pub fn enter(priority: u8) -> Result<(), String> {
    set_thread_realtime(priority)
        .map_err(|e| format!("process.realtime_priority: {}", refusal(&e, priority)))?;
    let _ = PRIORITY.set(priority);
    Ok(())
}

/// Put the calling thread in the class [`enter`] chose, if it did; a refusal is logged
/// (the first thread succeeded, so this one is not expected to fail).
pub fn enter_here() {
    if let Some(&p) = PRIORITY.get() {
        if let Err(e) = set_thread_realtime(p) {
            tracing::warn!(
                "a thread of the daemon could not enter SCHED_RR at {p} ({e}): it runs in \
                 the normal class"
            );
        }
    }
}

/// Whether this process may use `SCHED_RR` at `priority`, asked on a thread of its
/// own (this thread's class is left as it is); the error says how to allow it.
pub fn check(priority: u8) -> Result<(), String> {
    probe(priority)
}
