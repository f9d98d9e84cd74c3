//! `[state]`: the durable state every algorithm keeps (fencing tokens, Raft's vote).
//! Raft without it is refused unless `ephemeral = true` says so; contradictions are
//! errors naming the key; `[raft] state_file` still works as the older spelling.

use electd::config::Config;
use std::path::{Path, PathBuf};

fn write(name: &str, algorithms: &str, extra: &str) -> PathBuf {
    let dir = crate::common::scratch(&format!("state-config-{name}"));
    let text = format!(
        "cluster = \"c\"\nalgorithms = [{algorithms}]\nnode_id = 2\n\n[security]\ninsecure = true\n\n\
         {extra}\n\n[[peer]]\nid = 1\naddr = \"127.0.0.1:7001\"\nhttp = \"127.0.0.1:8001\"\n\n\
         [[peer]]\nid = 2\naddr = \"127.0.0.1:7002\"\nhttp = \"127.0.0.1:8002\"\n"
    );
    let path = dir.join("electd.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn load(path: &Path, env: &[(&str, &str)]) -> Result<Config, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::load(path, env, None).map_err(|e| e.to_string())
}

#[test]
fn raft_without_state_is_refused_unless_ephemeral() {
    let p = write("refused", "\"bully\", \"raft\"", "");
    let err = load(&p, &[]).unwrap_err();
    assert!(
        err.contains("state.file") && err.contains("vote twice") && err.contains("ephemeral"),
        "{err}"
    );
    let p = write("ephemeral", "\"raft\"", "[state]\nephemeral = true");
    let c = load(&p, &[]).unwrap();
    assert!(c.ephemeral && c.raft_state_file.is_none());
    // The environment can say it too.
    let p = write("env", "\"raft\"", "");
    assert!(
        load(&p, &[("ELECTD_STATE_EPHEMERAL", "true")])
            .unwrap()
            .ephemeral
    );
    // Without raft, running without state is allowed (tokens are learned from peers).
    let p = write("bully", "\"bully\", \"ring\"", "");
    assert!(load(&p, &[]).unwrap().raft_state_file.is_none());
}

#[test]
fn the_state_file_is_per_node_and_relative_to_the_config() {
    let p = write(
        "file",
        "\"raft\", \"bully\"",
        "[state]\nfile = \"state/{node}.state\"",
    );
    // The state file's directory need not exist yet where `run` can create it (issue
    // 28, §3 item 13); loading creates nothing.
    let dir = p.parent().unwrap();
    let c = load(&p, &[]).unwrap();
    assert_eq!(c.state_dir_to_create, Some(dir.join("state")));
    assert!(!dir.join("state").exists());
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let c = load(&p, &[]).unwrap();
    assert_eq!(
        c.raft_state_file.as_deref(),
        Some(dir.join("state/2.state").as_path())
    );
    let abs = format!("{}/{{node}}.st", dir.display());
    let c = load(&p, &[("ELECTD_STATE_FILE", abs.as_str())]).unwrap();
    assert_eq!(
        c.raft_state_file.as_deref(),
        Some(dir.join("2.st").as_path())
    );
    // The older spelling.
    let p = write(
        "old",
        "\"raft\"",
        "[raft]\nstate_file = \"raft-{node}.state\"",
    );
    let c = load(&p, &[]).unwrap();
    assert!(c.raft_state_file.unwrap().ends_with("raft-2.state"));
}

#[test]
fn contradictions_name_the_key() {
    let p = write(
        "both",
        "\"raft\"",
        "[raft]\nstate_file = \"a\"\n\n[state]\nfile = \"b\"",
    );
    let err = load(&p, &[]).unwrap_err();
    assert!(
        err.contains("raft.state_file") && err.contains("[state] file"),
        "{err}"
    );
    let p = write(
        "contra",
        "\"raft\"",
        "[state]\nfile = \"b\"\nephemeral = true",
    );
    let err = load(&p, &[]).unwrap_err();
    assert!(err.contains("state.ephemeral"), "{err}");
    let p = write("unknown", "\"raft\"", "[state]\nfiel = \"b\"");
    let err = load(&p, &[]).unwrap_err();
    assert!(err.contains("fiel"), "{err}");
}

#[test]
fn a_config_named_bare_resolves_against_the_working_directory() {
    // `--config electd.toml` (no directory part): its relative paths are the working
    // directory's, and a missing state directory there is one `run` creates, as for
    // `./electd.toml`. The bare name's parent is the empty path, which once made the
    // directory look impossible to create.
    let p = write(
        "bare",
        "\"bully\"",
        "[state]\nfile = \"state/{node}.state\"",
    );
    let dir = p.parent().unwrap();
    for name in ["electd.toml", "./electd.toml"] {
        let out = crate::common::electd_command(&["config", "check", "--config", name])
            .current_dir(dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(err.contains("creates it (mode 0700)"), "{name}: {err}");
        assert!(!dir.join("state").exists(), "{name}: check creates nothing");
    }
}

/// `config check` reads a state file that is already there as `run` does: one `run`
/// refuses (garbage, empty) fails the check too (it said "ok").
#[test]
fn config_check_reads_an_existing_state_file() {
    let p = write(
        "check-reads",
        "\"bully\"",
        "[state]\nfile = \"{node}.state\"",
    );
    let dir = p.parent().unwrap();
    let check = || {
        crate::common::electd_command(&["config", "check", "--config", p.to_str().unwrap()])
            .output()
            .unwrap()
    };
    assert!(check().status.success(), "no state file yet: ok");
    for bad in [&b"\x01\x02 not a state file"[..], &b""[..]] {
        std::fs::write(dir.join("2.state"), bad).unwrap();
        let out = check();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("node 2: state.file") && err.contains("refuses it"),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
