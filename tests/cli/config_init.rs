//! `electd config init`: the written file loads for every node id (with the key it
//! creates), an existing file is never overwritten without `--force`, and bad
//! parameters are clear errors.

use crate::common::{electd, electd_command, scratch};
use electd::config::{Config, Security};
use std::path::PathBuf;
use std::process::Output;

fn tmp(name: &str) -> PathBuf {
    scratch(&format!("init-{name}"))
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

/// `electd config check` with extra environment.
fn check(config: &std::path::Path, extra: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = electd_command(&["config", "check", "--config"]);
    c.arg(config).args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run electd config check")
}

/// Issue 28, §3 item 13: the written file failed `config check` on a fresh machine
/// (the state directory, /var/lib/electd, missing). Checked from this machine for
/// every node, the state directory is the nodes' business; checked as one node, a
/// missing directory that `run` can create is no error either.
#[test]
fn init_then_check_succeeds_on_a_fresh_machine() {
    let d = tmp("fresh");
    let out = d.join("electd.toml");
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "3",
        "--hosts",
        "127.0.0.1,127.0.0.2,127.0.0.3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("electd config check --config"), "{err}");
    let r = check(&out, &[], &[]);
    assert!(
        r.status.success(),
        "init then check: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    // As node 1, with its state directory not created yet (but creatable): ok, and
    // the note says `run` creates it.
    let missing = d.join("missing").join("state");
    let state = (
        "ELECTD_STATE_FILE",
        format!("{}/{{node}}.state", missing.display()),
    );
    let r = check(&out, &["--node-id", "1"], &[state]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("does not exist yet") && err.contains("creates it"),
        "{err}"
    );
    assert!(!missing.exists(), "check must not create anything");
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 28, §3 item 13: to standard output, init named a key file it never created,
/// without a word. It now says how to create it; doing so makes the file check.
#[test]
fn init_to_stdout_says_how_to_make_the_key_it_names() {
    let d = tmp("stdout-key");
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "2",
        "--hosts",
        "127.0.0.1,127.0.0.2",
    ]);
    assert!(r.status.success());
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    assert!(err.contains("electd keygen --out electd.key"), "{err}");
    let file = d.join("electd.toml");
    std::fs::write(&file, &r.stdout).unwrap();
    let before = check(&file, &[], &[]);
    assert!(!before.status.success(), "the key is missing");
    assert!(String::from_utf8_lossy(&before.stderr).contains("key_file"));
    // Follow the note.
    let key = d.join("electd.key");
    let r = electd(&["keygen", "--out", key.to_str().unwrap()]);
    assert!(r.status.success());
    let r = check(&file, &[], &[]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 28, §3 item 15: a check whose program does not exist was accepted; it fails
/// every run and keeps the node out of every election. `config check` (as a node)
/// refuses it naming the key; checking every node from another machine warns.
#[test]
fn a_check_program_that_does_not_exist_is_refused() {
    let d = tmp("check-program");
    let file = d.join("electd.toml");
    std::fs::write(
        &file,
        "cluster = \"c\"\nalgorithms = [\"bully\"]\n[security]\ninsecure = true\n\
         [[check]]\nname = \"db\"\ncommand = [\"/nonexistent/electd-check-db\", \"-q\"]\n\
         [[peer]]\nid = 1\naddr = \"127.0.0.1:7001\"\nhttp = \"127.0.0.1:8001\"\n\
         [[peer]]\nid = 2\naddr = \"127.0.0.1:7002\"\nhttp = \"127.0.0.1:8002\"\n",
    )
    .unwrap();
    let r = check(&file, &["--node-id", "1"], &[]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("check[0].command") && err.contains("no such file"),
        "{err}"
    );
    let r = check(&file, &[], &[]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("warning") && err.contains("check[0].command") && err.contains("here"),
        "{err}"
    );
    // The same file with a program that exists is fine as a node.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("/nonexistent/electd-check-db", "true")).unwrap();
    let r = check(&file, &["--node-id", "1"], &[]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// An existing key file that is no key (a directory, garbage, empty) was taken as
/// "the existing key" and the config written; port 0 was an "internal error"; a failed
/// write left `FILE.toml.tmp` behind. Now: refused before anything is written, a usage
/// error, and nothing left.
#[test]
fn init_refuses_an_unusable_key_and_leaves_nothing_behind() {
    let d = tmp("bad-key");
    let out = d.join("electd.toml");
    for (name, make) in [
        ("garbage.key", Some(&b"\xff\xfe not hex\n"[..])),
        ("empty.key", Some(&b""[..])),
        ("dir.key", None),
    ] {
        let key = d.join(name);
        match make {
            Some(bytes) => std::fs::write(&key, bytes).unwrap(),
            None => std::fs::create_dir_all(&key).unwrap(),
        }
        let r = electd(&[
            "config",
            "init",
            "--nodes",
            "3",
            "--key-file",
            name,
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("not a usable key file"), "{name}: {err}");
        assert!(!out.exists(), "{name}: the config was written");
    }
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "3",
        "--insecure",
        "--udp-port",
        "0",
    ]);
    assert_eq!(
        r.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // --out a directory: an error, and no temporary file beside it.
    let target = d.join("a-dir");
    std::fs::create_dir_all(&target).unwrap();
    let r = electd(&[
        "config",
        "init",
        "--nodes",
        "3",
        "--insecure",
        "--force",
        "--out",
        target.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&d);
}
