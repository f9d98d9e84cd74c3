//! The files a configuration names (key file, admin token, state file) and its
//! security settings.

use super::*;

#[test]
fn security_needs_a_key_or_an_explicit_opt_out() {
    let no_sec = head("").replace("[security]\ninsecure = true\n", "");
    fails(parse(&no_sec), "security", "electd keygen");
    let both = head("").replace("insecure = true", "insecure = true\nkey_file = \"k\"");
    fails(parse(&both), "security.insecure", "choose one");
    let missing = head("").replace("insecure = true", "key_file = \"k\"");
    fails(parse(&missing), "security.key_file", "/nonexistent/k");
}

#[test]
fn key_and_token_files_load_relative_to_the_config() {
    let dir = std::env::temp_dir().join(format!("electd-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("k");
    let _ = std::fs::remove_file(&key);
    crate::security::keyring::write_key_file(&key).unwrap();
    std::fs::write(dir.join("tok"), "short\n").unwrap();
    let text = head("[admin]\ntoken_file = \"tok\"").replace("insecure = true", "key_file = \"k\"");
    let file = dir.join("electd.toml");
    std::fs::write(&file, &text).unwrap();
    let e = Config::load(&file, Vec::new(), None).unwrap_err();
    assert_eq!(e.key, "admin.token_file");
    std::fs::write(dir.join("tok"), "0123456789abcdef0123\n").unwrap();
    let c = Config::load(&file, Vec::new(), None).unwrap();
    assert!(matches!(c.security, Security::Keyring(ref r) if r.len() == 1));
    assert_eq!(c.admin_token.as_deref(), Some("0123456789abcdef0123"));
    let _ = std::fs::remove_dir_all(&dir);
    let e = Config::load(&dir.join("gone.toml"), Vec::new(), None).unwrap_err();
    assert!(e.to_string().contains("gone.toml: cannot read"), "{e}");
}

#[test]
fn check_source_defaults_on_and_peers_keep_every_resolved_address() {
    let c = parse(&head("")).unwrap();
    assert!(c.check_source);
    assert_eq!(
        c.peer(1).unwrap().sources,
        vec!["127.0.0.1:7001".parse().unwrap()]
    );
    let off = head("").replace("insecure = true", "insecure = true\ncheck_source = false");
    assert!(!parse(&off).unwrap().check_source);
    let env = parse_env(
        &head(""),
        &[("ELECTD_SECURITY_CHECK_SOURCE", "false")],
        None,
    );
    assert!(!env.unwrap().check_source);
    fails(
        parse(&head("").replace("insecure = true", "insecure = true\ncheck_source = 1")),
        "security.check_source",
        "expected a boolean",
    );
    // A DNS name: every address it resolves to is an accepted source.
    let named = head("").replace("\"127.0.0.1:7001\"", "\"localhost:7001\"");
    let c = parse(&named).unwrap();
    let p = c.peer(1).unwrap();
    assert!(!p.sources.is_empty() && p.sources.contains(&p.addr));
    assert!(p
        .sources
        .iter()
        .all(|a| a.port() == 7001 && a.ip().is_loopback()));
}

#[test]
fn key_file_errors_name_the_key_the_file_and_the_problem() {
    let dir = std::env::temp_dir().join(format!("electd-keyerr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = head("").replace("insecure = true", "key_file = \"k\"");
    let file = dir.join("electd.toml");
    std::fs::write(&file, &text).unwrap();
    let key = dir.join("k");
    let shown = |content: Option<&str>| {
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_dir(&key);
        match content {
            Some(t) => std::fs::write(&key, t).unwrap(),
            // Unreadable as a file: a directory in its place.
            None => std::fs::create_dir(&key).unwrap(),
        }
        let e = Config::load(&file, Vec::new(), None).unwrap_err();
        assert_eq!(e.key, "security.key_file");
        let s = e.to_string();
        assert!(s.contains(&key.display().to_string()), "{s}");
        assert!(s.contains("electd.toml"), "{s}");
        s
    };
    assert!(shown(Some("")).contains("holds no key"));
    assert!(shown(Some("# comment only\n")).contains("holds no key"));
    let short = shown(Some("abcdef\n"));
    assert!(
        short.contains("line 1") && short.contains("64 hex digits"),
        "{short}"
    );
    assert!(shown(None).contains("cannot read key file"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn raft_state_file_must_be_writable_where_it_is() {
    let dir = std::env::temp_dir().join(format!("electd-cfg-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("taken.state")).unwrap();
    let with = |p: &str| head(&format!("[raft]\nstate_file = \"{p}\""));
    let ok = format!("{}/raft-{{node}}.state", dir.display());
    let c = parse(&with(&ok)).expect("an existing directory");
    assert_eq!(c.raft_state_file, Some(dir.join("raft-2.state")));
    assert_eq!(c.state_dir_to_create, None);
    // A missing directory this user can create: `run` creates it (issue 28, §3 item 13).
    let later = format!("{}/later/dir/raft.state", dir.display());
    let c = parse(&with(&later)).expect("a directory run can create");
    assert_eq!(c.state_dir_to_create, Some(dir.join("later/dir")));
    assert!(!dir.join("later").exists(), "loading creates nothing");
    // One that cannot be created (below a file): the file is named (the message was
    // that the directory "does not exist and this user cannot create it").
    std::fs::write(dir.join("a-file"), "").unwrap();
    let below_file = format!("{}/a-file/dir/raft.state", dir.display());
    fails(
        parse(&with(&below_file)),
        "raft.state_file",
        "a-file is a file, not a directory",
    );
    let is_dir = format!("{}/taken.state", dir.display());
    fails(parse(&with(&is_dir)), "raft.state_file", "is a directory");
    // From the environment, the variable is blamed.
    let e = parse_env(
        &head(""),
        &[("ELECTD_RAFT_STATE_FILE", below_file.as_str())],
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "ELECTD_RAFT_STATE_FILE (environment, overriding raft.state_file of electd.toml)"
        ),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn admin_token_files_hold_one_printable_line() {
    let dir = std::env::temp_dir().join(format!("electd-cfg-token-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let load = |content: &str| {
        let f = dir.join("token");
        std::fs::write(&f, content).unwrap();
        let text = head(&format!("[admin]\ntoken_file = \"{}\"", f.display()));
        parse(&text)
    };
    let good = "0123456789abcdef0123";
    let c = load(&format!("{good}\n")).unwrap();
    assert_eq!(c.admin_token.as_deref(), Some(good));
    assert_eq!(c.admin_token_file, Some(dir.join("token")));
    fails(
        load(&format!("{good}\nsecond-line-token\n")),
        "admin.token_file",
        "holds 2 lines",
    );
    fails(load("0123456789 abcdef0123"), "admin.token_file", "' '");
    // A 0644 token file loads, with a warning.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let c = load(good).unwrap();
        std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let w = c.warnings().join("\n");
        assert!(w.contains("admin token file") && w.contains("0644"), "{w}");
        std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        assert!(!c.warnings().join("\n").contains("admin token file"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The insecure warning says what that mode gives up and what it keeps, as the receive
/// path does it: no authentication, but a replayed datagram is still dropped.
#[test]
fn insecure_warning_matches_what_the_receive_path_checks() {
    use crate::contract::message::Message;
    use crate::node::Datagram;
    use crate::security::gate::{Gate, GateConfig};
    let c = parse(&head("")).unwrap();
    let w = c
        .warnings()
        .into_iter()
        .find(|w| w.starts_with("security.insecure"))
        .expect("a warning for insecure = true");
    assert!(w.contains("not authenticated"), "{w}");
    // A gate without keys, as insecure mode builds it, still runs the replay window.
    let gate = |me| {
        Gate::new(GateConfig {
            me,
            cluster: "t".into(),
            roster: vec![1, 2, 3],
            keys: None,
            sources: None,
            group: false,
        })
    };
    let d = Datagram {
        from: 1,
        incarnation: 1_000_000,
        seq: 1,
        ack: 0,
        group: Some(AlgorithmKind::Bully),
        body: Some(Message::Resign { epoch: 1 }),
    };
    let bytes = gate(1).seal(2, &d).unwrap();
    let mut rx = gate(2);
    assert!(rx.open(&bytes, None, 2_000_000).is_ok());
    let again = rx.open(&bytes, None, 2_000_000).map_err(|e| e.reason());
    assert_eq!(again, Err("replay"));
    assert!(w.contains("replay window still drops repeated"), "{w}");
}
