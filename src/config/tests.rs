//! The configuration's rules, one test per topic, driven through [`Config::parse`].

use super::*;

const ROSTER: &str = r#"
[[peer]]
id = 1
addr = "127.0.0.1:7001"
http = "127.0.0.1:8001"
[[peer]]
id = 2
addr = "127.0.0.1:7002"
http = "127.0.0.1:8002"
[[peer]]
id = 3
addr = "127.0.0.1:7003"
http = "127.0.0.1:8003"
listen = "0.0.0.0:7003"
"#;

fn head(extra: &str) -> String {
    format!("cluster = \"t\"\nnode_id = 2\nalgorithms = [\"bully\"]\n{extra}\n[security]\ninsecure = true\n{ROSTER}")
}

fn parse_env(
    text: &str,
    env: &[(&str, &str)],
    node: Option<NodeId>,
) -> Result<Config, ConfigError> {
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Config::parse(
        text,
        Path::new("electd.toml"),
        Path::new("/nonexistent"),
        env,
        node,
    )
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_env(text, &[], None)
}

/// The error must name the file and `key`, and say `what`.
fn fails(r: Result<Config, ConfigError>, key: &str, what: &str) {
    let e = r.expect_err("the config must be rejected");
    let shown = e.to_string();
    assert_eq!(e.key, key, "{shown}");
    match (&e.var, e.at) {
        (Some(var), _) => assert!(shown.starts_with(&format!("{var} (environment")), "{shown}"),
        (None, Some((l, c))) => {
            assert!(
                shown.starts_with(&format!("electd.toml:{l}:{c}: ")),
                "{shown}"
            )
        }
        (None, None) => assert!(shown.starts_with("electd.toml: "), "{shown}"),
    }
    assert!(shown.contains(what), "{shown:?} should contain {what:?}");
}

#[test]
fn a_complete_file_parses_with_defaults_filled_in() {
    let c = parse(&head(
        "[timing]\nheartbeat = \"20ms\"\nelection_timeout = \"150ms\"",
    ))
    .unwrap();
    assert_eq!(c.cluster, "t");
    assert_eq!(c.node_id, 2);
    assert_eq!(c.ring(), vec![1, 2, 3]);
    assert_eq!(c.me().addr, "127.0.0.1:7002".parse().unwrap());
    assert_eq!(
        c.peer(3).unwrap().bind_addr(),
        "0.0.0.0:7003".parse().unwrap()
    );
    assert_eq!(c.timing.heartbeat, Duration::from_millis(20));
    assert_eq!(c.timing.failure_timeout, Timing::default().failure_timeout);
    // A single value V means V..2V.
    assert_eq!(c.timing.election_timeout_min, Duration::from_millis(150));
    assert_eq!(c.timing.election_timeout_max, Duration::from_millis(300));
    assert_eq!(c.security, Security::Insecure);
    assert_eq!(c.link, LinkConfig::default());
}

#[test]
fn election_timeout_range() {
    let c = parse(&head("[timing]\nelection_timeout = \"120ms..400ms\"")).unwrap();
    assert_eq!(
        (c.timing.election_timeout_min, c.timing.election_timeout_max),
        (Duration::from_millis(120), Duration::from_millis(400))
    );
    fails(
        parse(&head("[timing]\nelection_timeout = \"300ms..150ms\"")),
        "timing.election_timeout",
        "empty range",
    );
}

#[test]
fn unknown_keys_are_rejected() {
    // The key is named by its path.
    fails(
        parse(&head("colour = \"blue\"")),
        "colour",
        "unknown field `colour`",
    );
    fails(
        parse(&head("[timing]\nheartbeet = \"10ms\"")),
        "timing.heartbeet",
        "unknown field `heartbeet`",
    );
    let bad_peer = head("").replace("listen = ", "bind = ");
    fails(parse(&bad_peer), "peer[2].bind", "unknown field `bind`");
    fails(
        parse(&head("").replace("[[peer]]\nid = 2", "[[peer]]\nid = \"two\"")),
        "peer[1].id",
        "expected i64",
    );
}

#[test]
fn not_toml() {
    fails(parse("cluster = "), "-", "not valid TOML");
}

#[test]
fn duplicate_ids_and_addresses() {
    let dup_id = head("").replace("id = 3", "id = 2");
    fails(parse(&dup_id), "peer[2].id", "listed twice");
    let dup_addr = head("").replace("127.0.0.1:7003", "127.0.0.1:7001");
    fails(parse(&dup_addr), "peer[2].addr", "already the address");
    let dup_http = head("").replace("127.0.0.1:8003", "127.0.0.1:8002");
    fails(parse(&dup_http), "peer[2].http", "already the HTTP address");
    fails(
        parse(&head("").replace("id = 1", "id = 0")),
        "peer[0].id",
        "not a node id",
    );
    fails(
        parse(&head("").replace("\"127.0.0.1:7001\"", "\"nowhere\"")),
        "peer[0].addr",
        "not an address",
    );
}

#[test]
fn dns_names_that_do_not_resolve_yet_are_accepted_for_other_peers() {
    // `.invalid` never resolves (RFC 6761).
    let text = head("").replace("127.0.0.1:7003", "electd-2.example.invalid:7003");
    let c = parse(&text).unwrap();
    let p = c.peer(3).unwrap();
    assert_eq!(p.name.as_deref(), Some("electd-2.example.invalid:7003"));
    assert_eq!(p.resolved(), None);
    assert_eq!(p.addr.port(), 7003);
    assert_eq!(c.resolve_every, Duration::from_secs(30));
    // This node binds its own address: it must resolve (or listen must be given).
    let own = head("").replace("127.0.0.1:7002", "electd-1.example.invalid:7002");
    fails(parse(&own), "peer[1].addr", "does not resolve");
    // Node 3 has listen, so its unresolved name is fine for itself.
    assert!(parse_env(&text, &[], Some(3)).is_ok());
    let own_http = head("").replace("127.0.0.1:8002", "electd-1.example.invalid:8002");
    fails(parse(&own_http), "peer[1].http", "does not resolve");
    // A name that resolves keeps its name for re-resolution.
    let c = parse(&head("").replace("127.0.0.1:7001", "localhost:7001")).unwrap();
    let p = c.peer(1).unwrap();
    assert_eq!(p.name.as_deref(), Some("localhost:7001"));
    assert!(p.resolved().is_some_and(|a| a.ip().is_loopback()));
    let dup = head("")
        .replace("127.0.0.1:7001", "a.example.invalid:7001")
        .replace("127.0.0.1:7003", "a.example.invalid:7001");
    fails(parse(&dup), "peer[2].addr", "already the address");
    fails(
        parse(&head("").replace("127.0.0.1:7001", "bad host:7001")),
        "peer[0].addr",
        "not an address",
    );
    let c = parse(&head("[transport]\nresolve_every = \"5s\"")).unwrap();
    assert_eq!(c.resolve_every, Duration::from_secs(5));
}

#[test]
fn this_node_must_be_in_the_roster() {
    fails(
        parse(&head("").replace("node_id = 2", "node_id = 9")),
        "node_id",
        "not in the roster",
    );
    fails(
        parse(&head("").replace("node_id = 2", "")),
        "node_id",
        "not set",
    );
    // --node-id beats the environment, which beats the file.
    let c = parse_env(&head(""), &[("ELECTD_NODE_ID", "3")], None).unwrap();
    assert_eq!(c.node_id, 3);
    let c = parse_env(&head(""), &[("ELECTD_NODE_ID", "3")], Some(1)).unwrap();
    assert_eq!(c.node_id, 1);
    fails(
        parse_env(&head(""), &[], Some(7)),
        "node_id",
        "not in the roster",
    );
}

#[test]
fn empty_roster() {
    let text =
        "cluster = \"t\"\nnode_id = 1\nalgorithms = [\"bully\"]\n[security]\ninsecure = true\n";
    fails(parse(text), "peer", "roster is empty");
}

#[test]
fn algorithms_are_checked() {
    fails(
        parse(&head("").replace("[\"bully\"]", "[\"bullie\"]")),
        "algorithms",
        "unknown algorithm",
    );
    fails(
        parse(&head("").replace("[\"bully\"]", "[]")),
        "algorithms",
        "empty",
    );
    fails(
        parse(&head("").replace("[\"bully\"]", "[\"bully\", \"bully\"]")),
        "algorithms",
        "twice",
    );
    let c = parse(&head("").replace("[\"bully\"]", "[\"improved-bully\", \"bully\"]")).unwrap();
    assert_eq!(
        c.algorithms,
        vec![AlgorithmKind::ImprovedBully, AlgorithmKind::Bully]
    );
}

#[test]
fn contradictory_timings() {
    fails(
        parse(&head(
            "[timing]\nheartbeat = \"100ms\"\nfailure_timeout = \"100ms\"",
        )),
        "timing.heartbeat",
        "not below timing.failure_timeout",
    );
    fails(
        parse(&head(
            "[timing]\nanswer_timeout = \"5ms\"\n[transport]\nretransmit = \"5ms\"",
        )),
        "timing.answer_timeout",
        "not above transport.retransmit",
    );
    // T' must exceed 2T + retransmit (Improved Bully's two answer waits): 50 ms
    // answers and 5 ms retransmissions need more than 105 ms.
    fails(
        parse(&head(
            "[timing]\nanswer_timeout = \"50ms\"\ncoordinator_timeout = \"105ms\"",
        )),
        "timing.coordinator_timeout",
        "not above 2 × timing.answer_timeout + transport.retransmit (105ms)",
    );
    assert!(parse(&head(
        "[timing]\nanswer_timeout = \"50ms\"\ncoordinator_timeout = \"106ms\""
    ))
    .is_ok());
    // The link must give up on a dead peer before the failure detector fires:
    // 5 + 10 + 20 + 40 + 40 = 115 ms for 5 attempts, not below 100 ms.
    fails(
        parse(&head("[transport]\nmax_attempts = 5")),
        "transport.max_attempts",
        "gives up on a peer after 115ms",
    );
    fails(
        parse(&head("[timing]\nelection_timeout = \"150ms..150ms\"")),
        "timing.election_timeout",
        "lo < hi",
    );
    fails(
        parse(&head(
            "[timing]\nheartbeat = \"50ms\"\nelection_timeout = \"40ms..80ms\"",
        )),
        "timing.election_timeout",
        "not above timing.heartbeat",
    );
    fails(
        parse(&head("[timing]\nheartbeat = \"0ms\"")),
        "timing.heartbeat",
        "above zero",
    );
    fails(
        parse(&head("[timing]\nheartbeat = \"soon\"")),
        "timing.heartbeat",
        "not a duration",
    );
    fails(
        parse(&head("[transport]\nmax_attempts = 0")),
        "transport.max_attempts",
        "outside",
    );
}

#[test]
fn multicast_is_validated() {
    let c = parse(&head("[transport]\nmulticast = \"239.255.70.1:5740\"")).unwrap();
    assert_eq!(c.multicast, Some("239.255.70.1:5740".parse().unwrap()));
    fails(
        parse(&head("[transport]\nmulticast = \"10.0.0.1:5740\"")),
        "transport.multicast",
        "not a multicast",
    );
    fails(
        parse(&head("[transport]\nmulticast = \"239.255.70.1\"")),
        "transport.multicast",
        "group:port",
    );
}

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
    assert!(e.to_string().contains("gone.toml: -: cannot read"), "{e}");
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
fn environment_overrides() {
    let env = [
        ("ELECTD_CLUSTER", "other"),
        ("ELECTD_ALGORITHMS", "improved-bully, bully"),
        ("ELECTD_TIMING_HEARTBEAT", "20ms"),
        ("ELECTD_TRANSPORT_MAX_ATTEMPTS", "3"),
        ("ELECTD_RAFT_PRE_VOTE", "false"),
        ("ELECTD_HOOKS_ON_LEADER_CHANGE", "/bin/true"),
        ("ELECTD_LOG", "debug"),
        ("PATH", "/usr/bin"),
    ];
    let c = parse_env(&head(""), &env, None).unwrap();
    assert_eq!(c.cluster, "other");
    assert_eq!(
        c.algorithms,
        vec![AlgorithmKind::ImprovedBully, AlgorithmKind::Bully]
    );
    assert_eq!(c.timing.heartbeat, Duration::from_millis(20));
    assert_eq!(c.link.max_attempts, Some(3));
    assert!(!c.options.pre_vote);
    assert_eq!(c.hooks.on_leader_change.as_deref(), Some("/bin/true"));
    fails(
        parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEET", "1ms")], None),
        "ELECTD_TIMING_HEARTBEET",
        "unknown",
    );
    fails(
        parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEAT", "1s")], None),
        "timing.heartbeat",
        "not below",
    );
}

#[test]
fn port_zero_is_refused_everywhere() {
    fails(
        parse(&head("").replace("127.0.0.1:7002", "127.0.0.1:0")),
        "peer[1].addr",
        "port 0",
    );
    fails(
        parse(&head("").replace("127.0.0.1:8003", "127.0.0.1:0")),
        "peer[2].http",
        "port 0",
    );
    fails(
        parse(&head("").replace("0.0.0.0:7003", "0.0.0.0:0")),
        "peer[2].listen",
        "port 0",
    );
}

#[test]
fn a_roster_mixing_address_families_is_refused_unless_bound_dual_stack() {
    let mixed = head("").replace("127.0.0.1:7003", "[::1]:7003");
    // Node 2 binds IPv4: peer 3 on IPv6 is out of reach…
    fails(parse(&mixed), "peer[2].addr", "is IPv6 but this node");
    // …and node 3 (bound 0.0.0.0 by listen) cannot reach IPv6 either; an IPv6-only
    // node cannot reach the IPv4 ones.
    let v6 = mixed.replace("listen = \"0.0.0.0:7003\"\n", "");
    fails(
        parse_env(&v6, &[], Some(3)),
        "peer[0].addr",
        "is IPv4 but this node",
    );
    // A dual-stack bind reaches both, but its datagrams to IPv4 peers leave from an
    // IPv4 address the peers' source check does not know: only without it.
    let dual = mixed.replace("0.0.0.0:7003", "[::]:7003");
    fails(
        parse_env(&dual, &[], Some(3)),
        "peer[0].addr",
        "check_source",
    );
    let unchecked = dual.replace("insecure = true", "insecure = true\ncheck_source = false");
    parse_env(&unchecked, &[], Some(3)).expect("dual stack reaches every peer");
    // A multicast group of the other family could not be joined.
    fails(
        parse(&head("[transport]\nmulticast = \"[ff15::1]:7946\"")),
        "transport.multicast",
        "different IP versions",
    );
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
    // One that cannot be created (below a file).
    std::fs::write(dir.join("a-file"), "").unwrap();
    let below_file = format!("{}/a-file/dir/raft.state", dir.display());
    fails(
        parse(&with(&below_file)),
        "raft.state_file",
        "does not exist and this user cannot create it",
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

#[test]
fn environment_errors_blame_the_variable() {
    let e = parse_env(&head(""), &[("ELECTD_NODE_ID", "abc")], None).unwrap_err();
    assert_eq!(e.var.as_deref(), Some("ELECTD_NODE_ID"));
    let shown = e.to_string();
    assert!(
        shown.starts_with("ELECTD_NODE_ID (environment)") && shown.contains("\"abc\""),
        "{shown}"
    );
    let e = parse_env(&head(""), &[("ELECTD_TIMING_HEARTBEAT", "1s")], None).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "ELECTD_TIMING_HEARTBEAT (environment, overriding timing.heartbeat of electd.toml)"
        ),
        "{e}"
    );
    // Booleans in any spelling and case; nonsense is refused with the variable.
    for (v, want) in [("TRUE", false), ("off", true), ("On", false), ("0", true)] {
        let c = parse_env(&head(""), &[("ELECTD_RAFT_PRE_VOTE", v)], None).unwrap();
        assert_eq!(c.options.pre_vote, !want, "{v}");
    }
    fails(
        parse_env(&head(""), &[("ELECTD_RAFT_PRE_VOTE", "maybe")], None),
        "ELECTD_RAFT_PRE_VOTE",
        "not a boolean",
    );
    // An empty variable is not "unset".
    fails(
        parse_env(&head(""), &[("ELECTD_SECURITY_KEY_FILE", "")], None),
        "ELECTD_SECURITY_KEY_FILE",
        "set but empty",
    );
}

#[test]
fn toml_syntax_errors_name_line_and_column() {
    let e = parse("cluster = \"x\"\n\nfoo = = 3\n").unwrap_err();
    assert_eq!(e.at, Some((3, 7)), "{e}");
    assert!(
        e.to_string().starts_with("electd.toml:3:7: not valid TOML"),
        "{e}"
    );
}

mod family {
    use crate::config::reachable_from;

    #[test]
    fn which_sockets_reach_which_peers() {
        let a = |s: &str| s.parse().unwrap();
        assert!(reachable_from(a("10.0.0.1:1"), a("10.0.0.2:1")));
        assert!(reachable_from(a("0.0.0.0:1"), a("10.0.0.2:1")));
        assert!(!reachable_from(a("0.0.0.0:1"), a("[::1]:1")));
        assert!(!reachable_from(a("10.0.0.1:1"), a("[::ffff:10.0.0.2]:1")));
        assert!(reachable_from(a("[::]:1"), a("10.0.0.2:1")));
        assert!(reachable_from(a("[::]:1"), a("[fd00::2]:1")));
        assert!(reachable_from(a("[fd00::1]:1"), a("[fd00::2]:1")));
        assert!(!reachable_from(a("[fd00::1]:1"), a("10.0.0.2:1")));
    }
}

#[test]
fn lease_settings_per_algorithm_with_overrides() {
    use crate::contract::algorithm::AlgorithmKind::{Bully, Ring};
    use crate::contract::algorithm::LeaseOptions;
    let two = |extra: &str| head(extra).replace("[\"bully\"]", "[\"bully\", \"ring\"]");
    let c = parse(&two("")).unwrap();
    assert_eq!(c.options.lease, LeaseOptions::default());
    let c = parse(&two(
        "[lease]\nrequire_quorum = true\nclock_drift = \"20ms\"\n[lease.ring]\nrequire_quorum = false\nclock_drift = \"5ms\"",
    ))
    .unwrap();
    assert_eq!(c.options.lease.require_quorum, vec![Bully]);
    assert_eq!(
        c.options.lease.clock_drift,
        vec![
            (Bully, Duration::from_millis(20)),
            (Ring, Duration::from_millis(5))
        ]
    );
    let env = parse_env(&two(""), &[("ELECTD_LEASE_REQUIRE_QUORUM", "yes")], None).unwrap();
    assert_eq!(env.options.lease.require_quorum, vec![Bully, Ring]);
    fails(
        parse(&two("[lease.raft]\nrequire_quorum = true")),
        "lease.raft",
        "not in `algorithms`",
    );
    fails(
        parse(&two("[lease]\nclock_drift = \"soon\"")),
        "lease.clock_drift",
        "not a duration",
    );
    fails(
        parse(&two("[lease]\nrequire_qorum = true")),
        "lease.require_qorum",
        "unknown key",
    );
    fails(
        parse(&two("[lease.ring]\nclock_drif = \"5ms\"")),
        "lease.ring",
        "clock_drif",
    );
}

#[test]
fn health_checks_parse_with_defaults_and_every_bad_key_is_blamed() {
    use super::checks::Probe;
    let c = parse(&head(
        "[[check]]\nname = \"nginx\"\ncommand = [\"/bin/sh\", \"-x\", \"nginx-{node}\"]\n\
         [[check]]\nname = \"api\"\nurl = \"http://127.0.0.1:8080/health?deep=1\"\ninterval = \"2s\"\n\
         timeout = \"300ms\"\nrise = 3\nfall = 2\nalgorithms = [\"bully\"]",
    ))
    .expect("valid checks");
    assert_eq!(c.checks.len(), 2);
    let a = &c.checks[0];
    assert_eq!(
        a.probe,
        Probe::Command(vec!["/bin/sh".into(), "-x".into(), "nginx-2".into()])
    );
    assert_eq!(
        (a.interval, a.timeout, a.rise, a.fall),
        (Duration::from_secs(1), Duration::from_millis(500), 1, 1)
    );
    assert_eq!(a.algorithms, vec![AlgorithmKind::Bully]);
    assert_eq!(a.weight, None);
    let w = parse(&head(
        "[[check]]\nname = \"w\"\ncommand = [\"true\"]\nweight = 20",
    ))
    .expect("a weighted check");
    assert_eq!(w.checks[0].weight, Some(20));
    match &c.checks[1].probe {
        Probe::Url {
            authority, path, ..
        } => {
            assert_eq!(authority, "127.0.0.1:8080");
            assert_eq!(path, "/health?deep=1");
        }
        p => panic!("{p:?}"),
    }
    assert_eq!((c.checks[1].rise, c.checks[1].fall), (3, 2));
    let cmd = "command = [\"true\"]";
    let bad: &[(&str, &str, &str)] = &[
        ("command = [\"true\"]", "check[0].name", "missing"),
        (
            "name = \"a b\"\ncommand = [\"true\"]",
            "check[0].name",
            "A-Z",
        ),
        ("name = \"x\"", "check[0].command", "missing"),
        ("name = \"x\"\ncommand = []", "check[0].command", "empty"),
        // Issue 28, §3 item 15: a program that cannot run keeps the node out of every
        // election; refused.
        (
            "name = \"x\"\ncommand = [\"/nonexistent/electd-check\"]",
            "check[0].command",
            "no such file",
        ),
        (
            "name = \"x\"\ncommand = [\"electd-no-such-check\", \"{node}\"]",
            "check[0].command",
            "no such program on PATH",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nurl = \"http://a/\"",
            "check[0].url",
            "not both",
        ),
        (
            "name = \"x\"\nurl = \"https://a/\"",
            "check[0].url",
            "only http://",
        ),
        (
            "name = \"x\"\nurl = \"http://a:x/\"",
            "check[0].url",
            "bad port",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\ninterval = \"1s\"\ntimeout = \"2s\"",
            "check[0].timeout",
            "longer than interval",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\ninterval = \"0s\"",
            "check[0].interval",
            "above zero",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nrise = 0",
            "check[0].rise",
            "1 to 100",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nfall = 101",
            "check[0].fall",
            "1 to 100",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nweight = 0",
            "check[0].weight",
            "1 to 254",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nweight = 300",
            "check[0].weight",
            "1 to 254",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nalgorithms = [\"raft\"]",
            "check[0].algorithms",
            "not in `algorithms`",
        ),
        (
            "name = \"x\"\ncommand = [\"true\"]\nalgorithms = []",
            "check[0].algorithms",
            "empty",
        ),
    ];
    for (body, key, what) in bad {
        fails(parse(&head(&format!("[[check]]\n{body}"))), key, what);
    }
    fails(
        parse(&head(&format!(
            "[[check]]\nname = \"x\"\n{cmd}\n[[check]]\nname = \"x\"\n{cmd}"
        ))),
        "check[1].name",
        "names two checks",
    );
    // An unknown key in a check is blamed by serde with its name.
    let e = parse(&head(
        "[[check]]\nname = \"x\"\ncommand = [\"true\"]\nscript = \"y\"",
    ))
    .expect_err("unknown key");
    assert!(e.to_string().contains("script"), "{e}");
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

/// Issue 28, item 2: where a group keeps a lease, a `clock_drift` at or above its base
/// (minus a heartbeat, the period of the answers that renew it) is refused, naming the
/// key; where none is kept it is not looked at. The limits come from the timing parsed.
#[test]
fn a_clock_drift_that_leaves_no_lease_is_refused_naming_the_key() {
    let cfg = |lease: &str| {
        head(&format!(
            "[state]\nephemeral = true\n[raft]\ncheck_quorum = true\n{lease}"
        ))
        .replace("[\"bully\"]", "[\"bully\", \"raft\"]")
    };
    let t = parse(&cfg("")).expect("defaults are valid").timing;
    let ms = |d: Duration| format!("{}us", d.as_micros());
    let raft_room = t.election_timeout_min - t.heartbeat;
    let bully_room = t.failure_timeout - t.heartbeat;
    // Raft keeps a lease (check-quorum): its base is election_timeout min.
    for d in [
        t.election_timeout_min,
        raft_room,
        t.election_timeout_min * 3,
    ] {
        let e = parse(&cfg(&format!("[lease.raft]\nclock_drift = \"{}\"", ms(d))));
        fails(e, "lease.raft.clock_drift", "lease base");
    }
    let below = raft_room - Duration::from_millis(1);
    let c = parse(&cfg(&format!(
        "[lease.raft]\nclock_drift = \"{}\"",
        ms(below)
    )))
    .expect("below the limit");
    assert!(c
        .options
        .lease
        .clock_drift
        .contains(&(AlgorithmKind::Raft, below)));
    // The shared key is blamed when it is the one set.
    let e = parse(&cfg(&format!(
        "[lease]\nrequire_quorum = true\nclock_drift = \"{}\"",
        ms(t.failure_timeout)
    )));
    fails(e, "lease.clock_drift", "no leader would ever hold a lease");
    // Bully without require_quorum keeps no lease: its drift is not looked at.
    let c = parse(&cfg(&format!(
        "[lease.bully]\nclock_drift = \"{}\"",
        ms(t.failure_timeout * 2)
    )))
    .expect("bully keeps no lease");
    assert_eq!(c.options.lease.require_quorum, vec![]);
    // With require_quorum it is.
    let e = parse(&cfg(&format!(
        "[lease.bully]\nrequire_quorum = true\nclock_drift = \"{}\"",
        ms(bully_room)
    )));
    fails(e, "lease.bully.clock_drift", "between two heartbeats");
    // Without check-quorum Raft keeps none either.
    let off = cfg(&format!(
        "[lease.raft]\nclock_drift = \"{}\"",
        ms(t.election_timeout_min)
    ))
    .replace("check_quorum = true", "check_quorum = false");
    parse(&off).expect("raft without check-quorum keeps no lease");
}
