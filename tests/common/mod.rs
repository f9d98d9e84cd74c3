//! The one place of the integration tests' helpers. Every test binary
//! (`tests/{sim,wire,runtime,cli,processes}/main.rs`) includes this module with
//! `#[path = "../common/mod.rs"]`: running the `electd` binary, waiting on a condition
//! with a deadline, scratch directories that no two tests share, process liveness;
//! [`cluster`]: real `electd run` processes (the bench's harness with the tests'
//! config); [`http`]: runtimes in this process, a server on `Shared`, and an HTTP
//! client of its own (hyper), so the server is not only checked against our parser.

#![allow(dead_code, unused_imports)]

pub(crate) mod cluster;
pub(crate) mod http;

pub(crate) use cluster::{with_admin_token, Cluster, Timing};

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Deadline of the blocking waits ([`wait_for`]): generous, the machine may be loaded
/// by parallel builds.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);

/// The `electd` binary cargo built for these tests.
pub(crate) fn electd_path() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_electd"))
}

/// A `Command` running `electd` with `args` (to add environment, stdio, `spawn`).
pub(crate) fn electd_command(args: &[&str]) -> Command {
    let mut c = Command::new(electd_path());
    c.args(args);
    c
}

/// Run `electd` with `args` to its end.
pub(crate) fn electd(args: &[&str]) -> Output {
    electd_command(args).output().expect("run electd")
}

/// Run `electd` with `args`: (exit 0, stdout, stderr).
pub(crate) fn run_electd(args: &[&str]) -> (bool, String, String) {
    let out = electd(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `GET path` over HTTP/1.1 with `Connection: close`; the body if the status is 200.
/// (The client of `electd status` and `electd bench`, shared.)
pub(crate) fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    match electd::http::client::http_request(addr, "GET", path, None)? {
        (200, body) => Some(body),
        _ => None,
    }
}

/// Sum of a Prometheus counter over the series whose labels contain every `labels`
/// pair (text exposition format).
pub(crate) use electd::http::client::metric_sum as counter_sum;

/// Poll `f` every 5 ms until it returns `Some`, or fail the test with `what` after
/// [`DEADLINE`].
pub(crate) fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_for_within(DEADLINE, what, f)
}

/// [`wait_for`] with a deadline of `within`.
pub(crate) fn wait_for_within<T>(
    within: Duration,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < within,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A fresh, empty directory `electd-{name}-{pid}` under the temporary directory. The
/// tests of one binary share a pid, so a name claimed twice in one process fails the
/// test instead of letting two tests write into one directory.
pub(crate) fn scratch(name: &str) -> PathBuf {
    static CLAIMED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let fresh = CLAIMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string());
    assert!(
        fresh,
        "two tests of this binary use the scratch directory {name:?}"
    );
    let dir = std::env::temp_dir().join(format!("electd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    sweep_dead(name);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Remove the scratch directories of `name` that test processes no longer running left
/// behind (a test that failed keeps its directory for a look until the next run; one
/// that passed may keep it too): `electd-{name}-{pid}` whose PID is not a live process.
fn sweep_dead(name: &str) {
    let prefix = format!("electd-{name}-");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Tests that load the whole machine (`bench --quick`, `demo`: several clusters and the
/// simulator at once) or measure against a tight bound (`loopback`'s resignation under
/// the failure timeout, `failover`'s figures) run [`alone`]; every process cluster holds a [`shared`] claim for
/// its lifetime, so a cluster test's timing bound is never measured beside them. (Each
/// ran in a binary of its own before the test files became five binaries; the tests of
/// one binary run in parallel.) Shared claims never wait for each other, nor for the
/// test that holds the machine alone, so one test may hold several, and a test alone
/// may start clusters.
static MACHINE: (Mutex<(usize, Option<ThreadId>)>, Condvar) =
    (Mutex::new((0, None)), Condvar::new());

/// A shared claim on the machine (see [`MACHINE`]); released when dropped.
pub(crate) struct Shared(());

/// The machine to this test alone (see [`MACHINE`]); released when dropped.
pub(crate) struct Alone(());

/// Wait until no test runs [`alone`], then hold a shared claim.
pub(crate) fn shared() -> Shared {
    let (lock, cv) = &MACHINE;
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::thread::current().id();
    while s.1.is_some_and(|t| t != me) {
        s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
    }
    s.0 += 1;
    Shared(())
}

/// Wait until no other test holds a claim, then hold the machine alone.
pub(crate) fn alone() -> Alone {
    let (lock, cv) = &MACHINE;
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    while s.0 > 0 || s.1.is_some() {
        s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
    }
    s.1 = Some(std::thread::current().id());
    Alone(())
}

impl Drop for Shared {
    fn drop(&mut self) {
        let (lock, cv) = &MACHINE;
        lock.lock().unwrap_or_else(|e| e.into_inner()).0 -= 1;
        cv.notify_all();
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        let (lock, cv) = &MACHINE;
        lock.lock().unwrap_or_else(|e| e.into_inner()).1 = None;
        cv.notify_all();
    }
}

/// Is process `pid` gone (or a zombie: dead all the same)?
pub(crate) fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}
