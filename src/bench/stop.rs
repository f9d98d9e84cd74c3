//! A bench stopped by a signal stops what it started.
//!
//! The bench starts processes (`electd run` nodes, etcd members, the detect section's
//! load) and stops each by its PID when a section ends, in destructors. A signal that
//! ends the process runs no destructor: a bench under `timeout(1)` or stopped with
//! `kill` used to leave its nodes and etcd members running (the detect section's hogs
//! die with it by `PR_SET_PDEATHSIG`, but nodes are spawned from threads that may end
//! before them, where that would kill them early).
//!
//! [`install`] catches SIGINT, SIGTERM and SIGHUP with a handler that writes the
//! signal's number to a pipe, which a thread of its own reads. (Not a blocked mask and
//! `sigwait`: the processes the bench starts would inherit the mask through `fork` and
//! `exec`, and a node or etcd member would never see the failover section's SIGTERM;
//! a handler is reset by `exec`.) At the first signal it kills every child process of
//! the bench (those whose parent is this process: a child not yet reaped cannot have
//! had its PID reused), removes the bench's temporary directories (named after its PID;
//! not with `KEEP` set) and exits with 128 + the signal, saying so on stderr. A section
//! that cleans up after itself (the keepalived section deletes its network namespaces,
//! which outlive any process) holds a [`Graceful`]: the first signal then only sets
//! [`requested`], which the section polls; a second one ends the bench as above.

use electd::testkit::procs::children_of;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// A section is running that stops by itself when [`requested`].
static GRACEFUL: AtomicBool = AtomicBool::new(false);
/// A signal asked the running section to stop.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The signals that stop the bench.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Take over SIGINT, SIGTERM and SIGHUP for the rest of the process (see the module
/// doc). Without a pipe or the thread, the signals keep their default action, as
/// before.
pub fn install() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2(2) writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [read_end, write_end] = fds;
    let spawned = std::thread::Builder::new()
        .name("bench-signals".into())
        .spawn(move || loop {
            let mut b = [0u8; 1];
            // SAFETY: a read of one byte into a one-byte buffer from our own pipe.
            let n = unsafe { libc::read(read_end, b.as_mut_ptr().cast(), 1) };
            if n == 1 {
                on_signal(libc::c_int::from(b[0]));
            } else if n < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return;
            }
        });
    if spawned.is_err() {
        return;
    }
    WAKE.store(write_end, Ordering::SeqCst);
    for sig in SIGNALS {
        // SAFETY: the handler only calls write(2), which is async-signal-safe; the
        // sigaction struct is fully initialised (zeroed, then the handler and an
        // empty mask set). A handler, unlike a blocked mask, is not inherited by the
        // processes the bench starts: exec resets it.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal_raw as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The write end of the pipe the signal thread reads (-1: none).
static WAKE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// The signal handler: tell the thread which signal came (the self-pipe).
extern "C" fn on_signal_raw(sig: libc::c_int) {
    let fd = WAKE.load(Ordering::SeqCst);
    let b = sig as u8;
    // SAFETY: write(2) is async-signal-safe; one byte from a live local.
    unsafe {
        libc::write(fd, std::ptr::addr_of!(b).cast(), 1);
    }
}

/// On the signal thread: ask a graceful section to stop, or end the bench.
fn on_signal(sig: libc::c_int) {
    if GRACEFUL.load(Ordering::SeqCst) && !REQUESTED.swap(true, Ordering::SeqCst) {
        eprintln!(
            "bench: {} received: the section stops after cleaning up (again to stop at once)",
            name(sig)
        );
        return;
    }
    stop_children_and_exit(sig);
}

/// While it lives, the first signal only sets [`requested`] (the running section
/// cleans up and returns); dropped, signals end the bench again.
pub struct Graceful(());

impl Graceful {
    pub fn begin() -> Graceful {
        GRACEFUL.store(true, Ordering::SeqCst);
        Graceful(())
    }
}

impl Drop for Graceful {
    fn drop(&mut self) {
        GRACEFUL.store(false, Ordering::SeqCst);
    }
}

/// A signal asked the running section to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The bench is stopping: start nothing more ([`Busy`](super::detect)'s writer checks).
static EXITING: AtomicBool = AtomicBool::new(false);

/// The bench is stopping on a signal: a loop that starts processes starts no more.
pub fn exiting() -> bool {
    EXITING.load(Ordering::SeqCst)
}

/// Kill every child of this process, remove its temporary directories, exit. Twice: a
/// thread that was starting a process as the first pass ran (the detect section's
/// writer) has started its last one by the second.
fn stop_children_and_exit(sig: libc::c_int) -> ! {
    EXITING.store(true, Ordering::SeqCst);
    let me = std::process::id();
    let children = children_of(me, Path::new("/proc"));
    eprintln!(
        "bench: {} received: killing its {} child processes {children:?} and leaving",
        name(sig),
        children.len()
    );
    kill_and_clean(me, &children);
    kill_and_clean(me, &children_of(me, Path::new("/proc")));
    std::process::exit(128 + sig);
}

/// SIGKILL and reap `children` of `me`, then remove `me`'s temporary directories.
fn kill_and_clean(me: u32, children: &[u32]) {
    for &pid in children {
        // SAFETY: kill(2) on a child of this process not yet reaped (its PID is ours
        // until we wait for it).
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    for &pid in children {
        // Reap them, so that no zombie outlives the bench's own exit by much and the
        // directories below are no longer written to.
        // SAFETY: waitpid(2) on our own child; a null status pointer is allowed.
        unsafe {
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
    }
    // The names the bench gives them: `…-{pid}` (clusters, etcd), `….{pid}`
    // (keepalived), `…-{pid}.dd` (the detect section's writer).
    let ends = [format!("-{me}"), format!(".{me}"), format!("-{me}.dd")];
    // KEEP asks the bench to keep its clusters' directories (`ProcCluster`).
    let dirs = if std::env::var_os("KEEP").is_some() {
        Vec::new()
    } else {
        vec![std::env::temp_dir(), Path::new("/var/tmp").to_path_buf()]
    };
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let ours = n.starts_with("electd-bench-") && ends.iter().any(|x| n.ends_with(x));
            if ours {
                let p = e.path();
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        }
    }
}
