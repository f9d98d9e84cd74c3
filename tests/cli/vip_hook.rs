//! deploy/hooks/electd-vip, run as electd runs it (the state in `ELECTD_STATE`, the
//! group in `ELECTD_ALGORITHM`) and as docs/keepalived.md tells systemd to run it when
//! the daemon is killed (`ExecStopPost=/usr/local/bin/electd-vip stopped`, with no
//! ELECTD_* variable: that run used to exit at the group check and leave the address).
//! `ip` and `arping` are stubs that record their arguments; nothing touches the host.

use std::path::{Path, PathBuf};
use std::process::Command;

const HOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/hooks/electd-vip");

struct Stubs {
    dir: PathBuf,
}

impl Stubs {
    fn new(name: &str) -> Stubs {
        let dir = crate::common::scratch(&format!("vip-hook-{name}"));
        for tool in ["ip", "arping"] {
            let path = dir.join(tool);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho \"$*\" >> {}/{tool}.calls\n", dir.display()),
            )
            .unwrap();
            let mut perm = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(&path, perm).unwrap();
        }
        Stubs { dir }
    }

    /// The hook with `args` and `env` only (and a PATH of the stubs first).
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut c = Command::new("sh");
        c.arg(HOOK).args(args).env_clear();
        c.env("PATH", format!("{}:/usr/bin:/bin", self.dir.display()));
        c.env("VIP_RUN_DIR", &self.dir);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("sh")
    }

    fn calls(&self, tool: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{tool}.calls"))).unwrap_or_default()
    }

    fn held(&self) -> bool {
        Path::new(&self.dir).join("electd-vip-bully.held").exists()
    }
}

#[test]
fn a_stopped_argument_lets_the_address_go_without_electd_variables() {
    let s = Stubs::new("stopped");
    // A leader run from electd: the marker, then the address.
    let out = s.run(
        &[],
        &[("ELECTD_ALGORITHM", "bully"), ("ELECTD_STATE", "leader")],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(s.held());
    assert_eq!(s.calls("ip"), "addr replace 10.0.0.100/24 dev eth0\n");
    // Another group's run changes nothing.
    let out = s.run(
        &[],
        &[("ELECTD_ALGORITHM", "raft"), ("ELECTD_STATE", "follower")],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(s.held());
    // systemd's ExecStopPost after a SIGKILL: no ELECTD_* at all.
    let out = s.run(&["stopped"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(!s.held(), "the marker goes with the address");
    assert_eq!(
        s.calls("ip"),
        "addr replace 10.0.0.100/24 dev eth0\naddr del 10.0.0.100/24 dev eth0\n"
    );
    // Again: nothing held, nothing to delete.
    assert!(s.run(&["stopped"], &[]).status.success());
    assert_eq!(s.calls("ip").lines().count(), 2);
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn the_run_directory_is_systemds_runtime_directory_unless_set() {
    let s = Stubs::new("runtime-dir");
    let rt = s.dir.join("rt");
    std::fs::create_dir_all(&rt).unwrap();
    let mut c = Command::new("sh");
    c.arg(HOOK).env_clear();
    c.env("PATH", format!("{}:/usr/bin:/bin", s.dir.display()));
    c.env("RUNTIME_DIRECTORY", &rt);
    c.env("ELECTD_ALGORITHM", "bully")
        .env("ELECTD_STATE", "leader");
    assert!(c.output().unwrap().status.success());
    assert!(rt.join("electd-vip-bully.held").exists());
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn an_unknown_state_argument_is_a_usage_error() {
    let s = Stubs::new("usage");
    let out = s.run(&["stop"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: electd-vip"));
    assert_eq!(s.calls("ip"), "");
    let _ = std::fs::remove_dir_all(&s.dir);
}
