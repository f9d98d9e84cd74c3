//! `electd config init`: the written file loads for every node id (with the key it
//! creates), an existing file is never overwritten without `--force`, and bad
//! parameters are clear errors.

use electd::config::{Config, Security};
use std::path::PathBuf;
use std::process::{Command, Output};

fn electd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_electd"))
        .args(args)
        .output()
        .expect("run electd")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("electd-init-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn init_writes_a_config_and_key_that_every_node_loads() {
    let d = tmp("ok");
    let out = d.join("electd.toml");
    let o = out.to_str().unwrap();
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "5",
        "--base-addr",
        "10.231.0.1",
        "--cluster",
        "lab",
        "--algorithms",
        "bully,raft",
        "--out",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(d.join("electd.key").exists(), "the default key is created");
    // The generated state file lives in /var/lib/electd on the nodes; here the
    // test's directory stands in for it.
    let state = |d: &std::path::Path| {
        vec![(
            "ELECTD_STATE_FILE".to_string(),
            format!("{}/{{node}}.state", d.display()),
        )]
    };
    for id in 1..=5u32 {
        let c = Config::load(&out, state(&d), Some(id)).unwrap();
        assert_eq!(c.cluster, "lab");
        assert_eq!(c.ring(), vec![1, 2, 3, 4, 5]);
        assert_eq!(c.me().addr, format!("10.231.0.{id}:5740").parse().unwrap());
        assert!(matches!(c.security, Security::Keyring(_)));
    }
    // Never overwritten without --force; the original is intact.
    let before = std::fs::read_to_string(&out).unwrap();
    let r = electd(&["config", "init", "--nodes", "3", "--insecure", "--out", o]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), before);
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "3",
        "--insecure",
        "--hosts",
        "127.0.0.1,127.0.0.2,127.0.0.3",
        "--force",
        "--out",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let c = Config::load(&out, state(&d), Some(3)).unwrap();
    assert_eq!(c.peers.len(), 3);
    assert_eq!(c.security, Security::Insecure);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn init_to_stdout_and_clear_errors() {
    let r = electd(&["config", "init", "--nodes", "2", "--insecure"]);
    assert!(r.status.success());
    let text = String::from_utf8(r.stdout).unwrap();
    assert!(
        text.contains("[[peer]]\nid = 2\naddr = \"10.0.0.2:5740\""),
        "{text}"
    );
    for (args, needle) in [
        (vec!["--nodes", "0", "--insecure"], "--nodes"),
        (
            vec!["--nodes", "3", "--hosts", "a,b", "--insecure"],
            "2 hosts",
        ),
        (
            vec!["--nodes", "2", "--insecure", "--key-file", "k"],
            "cannot be used",
        ),
        // Not "lists 1 hosts": an empty list names the empty entry.
        (
            vec!["--nodes", "1", "--hosts", "", "--insecure"],
            "entry 1 of 1 is empty",
        ),
        (
            vec!["--nodes", "3", "--hosts", "a,,c", "--insecure"],
            "entry 2 of 3 is empty",
        ),
        // A roster its own nodes could not use.
        (
            vec!["--nodes", "2", "--hosts", "127.0.0.1,::1", "--insecure"],
            "address family",
        ),
    ] {
        let mut all = vec!["config", "init"];
        all.extend(args);
        let r = electd(&all);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{all:?}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(needle), "{all:?}: {needle:?} not in {err}");
    }
}
