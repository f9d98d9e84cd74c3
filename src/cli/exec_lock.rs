//! The lock of `electd exec` (docs/exec.md, "When exec itself dies"): one file per
//! (local daemon, group, command), held with `flock(2)` by `exec` and by every process
//! of the command it runs, which inherit the open file.
//!
//! - While `exec` runs it holds the lock: a second `exec` of the same command for the
//!   same group on the same daemon refuses to start (exit 1) instead of running a
//!   second copy.
//! - When `exec` is killed (SIGKILL, OOM), its command's processes still hold the lock.
//!   A restarted `exec` finds it held by them, SIGTERMs the process group the file
//!   names, SIGKILLs it `--grace` later, and starts nothing until the lock is free; a
//!   holder that escaped the group (`setsid`) makes it exit 1, naming the file.
//! - The file records `exec`'s pid and start time and the running command's process
//!   group: `pid PID START` and `group PGID` lines (0: none).

use anyhow::{bail, Context};
use std::fs::File;
use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A held lock (released when `exec` exits and every process of its command is gone).
pub(super) struct ExecLock {
    file: File,
    path: PathBuf,
}

/// The default lock file: in `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`),
/// else `$XDG_RUNTIME_DIR`, else the temporary directory; named after the user, the
/// group and a hash of the daemon's address, the network namespace (nodes in several
/// namespaces of one machine may share an address) and the command line.
pub(super) fn default_path(
    algorithm: &str,
    daemon: SocketAddr,
    command: &[std::ffi::OsString],
) -> PathBuf {
    let dir = std::env::var_os("RUNTIME_DIRECTORY")
        .and_then(|d| std::env::split_paths(&d).next())
        .or_else(|| std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from))
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // FNV-1a (64 bit): stable across builds, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let netns = std::fs::read_link("/proc/self/ns/net").unwrap_or_default();
    // The command's bytes as given (an argument need not be UTF-8), NUL between them.
    let mut key = format!("{daemon}\0{}\0", netns.display()).into_bytes();
    for (i, arg) in command.iter().enumerate() {
        if i > 0 {
            key.push(0);
        }
        key.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(arg.as_os_str()));
    }
    for &b in &key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    // SAFETY: getuid(2) cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    dir.join(format!("electd-exec-{uid}-{algorithm}-{h:016x}.lock"))
}

fn try_lock(file: &File) -> bool {
    // SAFETY: flock(2) on a descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Try the lock every 10 ms until `within` has passed.
fn wait_lock(file: &File, within: Duration) -> bool {
    let end = Instant::now() + within;
    loop {
        if try_lock(file) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The start time of process `pid` (clock ticks since boot, field 22 of
/// `/proc/PID/stat`), which tells a live process from a later one with the same pid.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (in parentheses) start with field 3.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// (exec's pid and start time, the command's process group) as the file records them.
/// Empty, or nothing but the lines [`ExecLock::record`] writes (`pid P START`,
/// `group G`).
fn is_lock_record(bytes: &[u8]) -> bool {
    if bytes.len() > 4096 {
        return false;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    text.lines().all(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["pid", pid, start] => pid.parse::<i32>().is_ok() && start.parse::<u64>().is_ok(),
            ["group", g] => g.parse::<i32>().is_ok(),
            _ => false,
        }
    })
}

fn read_record(file: &File) -> (Option<(i32, u64)>, i32) {
    let mut text = String::new();
    let _ = (&*file).read_to_string(&mut text);
    let mut exec = None;
    let mut group = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["pid", pid, start] => {
                if let (Ok(p), Ok(s)) = (pid.parse(), start.parse()) {
                    exec = Some((p, s));
                }
            }
            ["group", g] => group = g.parse().unwrap_or(0),
            _ => {}
        }
    }
    (exec, group)
}

fn signal_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) touches no memory.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

impl ExecLock {
    /// Take the lock at `path`, first stopping what a killed `exec` left running (see
    /// the module documentation). Err: another `exec` holds it, or a process outside
    /// the recorded group does.
    pub(super) fn acquire(path: &Path, grace: Duration) -> anyhow::Result<ExecLock> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .with_context(|| format!("cannot open the lock file {}", path.display()))?;
        // A file that holds something else (a mistyped --lock naming a config file)
        // is not overwritten: an exec lock is empty or holds exec's own record.
        let mut head = vec![0u8; 4097];
        let n = file.read_at(&mut head, 0).unwrap_or(0);
        if !is_lock_record(&head[..n]) {
            bail!(
                "{} exists and is not an electd exec lock file (it holds other data): give \
                 --lock a path of its own",
                path.display()
            );
        }
        let lock = ExecLock {
            file,
            path: path.to_path_buf(),
        };
        if try_lock(&lock.file) {
            lock.record(0)?;
            return Ok(lock);
        }
        let (exec, group) = read_record(&lock.file);
        if let Some((pid, start)) = exec {
            if start_time(pid) == Some(start) {
                bail!(
                    "another electd exec (pid {pid}) runs this command for this group (lock {}): \
                     stop it first, or give this one its own --lock",
                    path.display()
                );
            }
        }
        tracing::warn!(
            lock = %path.display(),
            previous_exec = exec.map_or(0, |e| e.0),
            group,
            "a previous electd exec of this command died and its command still runs: \
             stopping it (SIGTERM to its process group, SIGKILL after --grace) before \
             anything starts"
        );
        signal_group(group, libc::SIGTERM);
        if !wait_lock(&lock.file, grace) {
            signal_group(group, libc::SIGKILL);
            if !wait_lock(&lock.file, Duration::from_secs(2)) {
                bail!(
                    "the lock {} is still held by processes of a previous run that left its \
                     process group {group}: find them with `fuser -v {}` and stop them",
                    path.display(),
                    path.display()
                );
            }
        }
        tracing::info!(group, "the previous command is gone");
        lock.record(0)?;
        Ok(lock)
    }

    /// Record this `exec` and the running command's process group (0: none).
    pub(super) fn record(&self, group: i32) -> anyhow::Result<()> {
        // SAFETY: getpid(2) cannot fail.
        let pid = unsafe { libc::getpid() };
        let start = start_time(pid).unwrap_or(0);
        let text = format!("pid {pid} {start}\ngroup {group}\n");
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all_at(text.as_bytes(), 0))
            .with_context(|| format!("cannot write the lock file {}", self.path.display()))
    }

    /// The descriptor the command inherits (its close-on-exec flag is cleared in the
    /// child only).
    pub(super) fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// The file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_exec_of_the_same_command_is_refused() {
        let dir = std::env::temp_dir().join(format!("electd-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.lock");
        let first = ExecLock::acquire(&path, Duration::from_millis(10)).expect("free");
        let e = ExecLock::acquire(&path, Duration::from_millis(10))
            .err()
            .expect("held by a live exec")
            .to_string();
        assert!(e.contains("another electd exec"), "{e}");
        drop(first);
        ExecLock::acquire(&path, Duration::from_millis(10)).expect("free again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_default_path_depends_on_daemon_group_and_command() {
        let a: SocketAddr = "127.0.0.1:5741".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:5742".parse().unwrap();
        let cmd = |s: &str| vec![std::ffi::OsString::from(s)];
        let p = default_path("raft", a, &cmd("w"));
        assert_eq!(p, default_path("raft", a, &cmd("w")));
        assert_ne!(p, default_path("bully", a, &cmd("w")));
        assert_ne!(p, default_path("raft", b, &cmd("w")));
        assert_ne!(p, default_path("raft", a, &cmd("v")));
    }

    /// A mistyped `--lock` naming another file (a config) is refused, not truncated
    /// to exec's record; an empty file and exec's own record are locks.
    #[test]
    fn a_file_that_holds_other_data_is_not_taken_as_a_lock() {
        assert!(is_lock_record(b""));
        assert!(is_lock_record(b"pid 31783 5715887\ngroup 0\n"));
        assert!(is_lock_record(b"pid 31783 5715887\ngroup 4242\n"));
        assert!(!is_lock_record(b"cluster = \"prod\"\n"));
        assert!(!is_lock_record(&[0xff, 0xfe, 0x00]));
        assert!(!is_lock_record(&vec![b'\n'; 5000]));
        let dir = std::env::temp_dir().join(format!("electd-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("electd.toml");
        std::fs::write(&path, "cluster = \"prod\"\n").unwrap();
        let e = ExecLock::acquire(&path, Duration::from_millis(10))
            .err()
            .expect("refused");
        assert!(
            e.to_string().contains("not an electd exec lock file"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "cluster = \"prod\"\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
