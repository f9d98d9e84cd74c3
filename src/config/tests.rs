//! The configuration's rules, one test per topic, driven through [`Config::parse`].

use super::*;

mod checks;
mod files;

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

/// [`head`] running Bully and Raft (without a state file, knowingly).
fn with_raft(extra: &str) -> String {
    head(&format!("[state]\nephemeral = true\n{extra}"))
        .replace("[\"bully\"]", "[\"bully\", \"raft\"]")
}

fn parse_env(
    text: &str,
    env: &[(&str, &str)],
    node: Option<NodeId>,
) -> Result<Config, ConfigError> {
    parse_env_elsewhere(text, env, node, false).map(|(c, _)| c)
}

/// [`parse_env`], or as `config check` loads every node from one machine
/// (`elsewhere`: this machine's facts are notes, returned beside the config).
fn parse_env_elsewhere(
    text: &str,
    env: &[(&str, &str)],
    node: Option<NodeId>,
    elsewhere: bool,
) -> Result<(Config, Vec<String>), ConfigError> {
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let (file, base) = (Path::new("electd.toml"), Path::new("/nonexistent"));
    if elsewhere {
        Config::parse_elsewhere(text, file, base, env, node)
    } else {
        Config::parse(text, file, base, env, node).map(|c| (c, Vec::new()))
    }
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

/// `[process] realtime_priority`: 1..99, 0 or absent for the normal class, from the
/// file or the environment; anything else names the key and the range. Whether the
/// kernel allows the class is this machine's fact: an error where the node runs, a
/// note from elsewhere; the test asks the kernel first which of the two to expect.
#[test]
fn realtime_priority() {
    assert_eq!(parse(&head("")).unwrap().realtime_priority, None);
    let off = parse_env(
        &head("[process]\nrealtime_priority = 10"),
        &[("ELECTD_PROCESS_REALTIME_PRIORITY", "0")],
        None,
    );
    assert_eq!(off.unwrap().realtime_priority, None);
    let allowed = process::probe(10).is_ok() && process::probe(99).is_ok();
    for (text, env, p) in [
        (head("[process]\nrealtime_priority = 10"), vec![], 10),
        (
            head(""),
            vec![("ELECTD_PROCESS_REALTIME_PRIORITY", "99")],
            99,
        ),
    ] {
        let (c, notes) =
            parse_env_elsewhere(&text, &env, None, true).expect("from elsewhere: never an error");
        assert_eq!(c.realtime_priority, Some(p));
        let here = parse_env(&text, &env, None);
        if allowed {
            assert!(notes.is_empty(), "{notes:?}");
            assert_eq!(here.unwrap().realtime_priority, Some(p));
        } else {
            eprintln!("NOTE: this process may not use SCHED_RR: checking the refusal");
            assert!(
                notes.iter().any(|n| n.contains("RLIMIT_RTPRIO")),
                "{notes:?}"
            );
            fails(here, "process.realtime_priority", "RLIMIT_RTPRIO");
        }
    }
    for bad in ["100", "-1", "256"] {
        fails(
            parse(&head(&format!("[process]\nrealtime_priority = {bad}"))),
            "process.realtime_priority",
            "1..99",
        );
    }
    fails(
        parse_env(
            &head(""),
            &[("ELECTD_PROCESS_REALTIME_PRIORITY", "high")],
            None,
        ),
        "ELECTD_PROCESS_REALTIME_PRIORITY",
        "not an integer",
    );
    fails(
        parse(&head("[process]\nrealtime_priority = \"10\"")),
        "process.realtime_priority",
        "expected i64",
    );
    fails(
        parse(&head("[process]\nnice = 5")),
        "process.nice",
        "expected `realtime_priority`",
    );
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
    // Raft's relations hold where Raft runs.
    let raft = with_raft;
    fails(
        parse(&raft("[timing]\nelection_timeout = \"150ms..150ms\"")),
        "timing.election_timeout",
        "lo < hi",
    );
    fails(
        parse(&raft(
            "[timing]\nheartbeat = \"50ms\"\nelection_timeout = \"40ms..80ms\"",
        )),
        "timing.election_timeout",
        "not above timing.heartbeat",
    );
    // Where Raft does not run, its (default) election timeout is no reason to refuse
    // a timing: a Bully cluster at a 100 ms heartbeat was refused over Raft's default
    // 100..200 ms (the audit). Nor are the failure detector's relations a reason to
    // refuse a Raft-only cluster.
    let slow = "[timing]\nheartbeat = \"100ms\"\nfailure_timeout = \"1s\"\n\
                answer_timeout = \"300ms\"\ncoordinator_timeout = \"700ms\"";
    parse(&head(slow)).expect("a Bully cluster ignores Raft's election timeout");
    fails(
        parse(&raft(slow)),
        "timing.election_timeout",
        "not above timing.heartbeat",
    );
    let raft_only = |extra: &str| raft(extra).replace("[\"bully\", \"raft\"]", "[\"raft\"]");
    parse(&raft_only(
        "[timing]\nheartbeat = \"100ms\"\nelection_timeout = \"1s..2s\"",
    ))
    .expect("a Raft cluster ignores the failure timeout's relations");
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

/// Every `ELECTD_<SECTION>_<KEY>` takes its value in the key's own type: a boolean key
/// given `true` or an integer key given `3` is never refused as a string of the wrong
/// type (`ELECTD_TRANSPORT_BATCH_HEARTBEATS=false` was, while the docs list it).
#[test]
fn every_override_is_read_in_its_keys_type() {
    for (section, keys) in raw::SECTIONS {
        for key in keys {
            let var = format!("ELECTD_{}_{}", section, key).to_ascii_uppercase();
            for value in ["true", "3"] {
                if let Err(e) = parse_env(&head(""), &[(var.as_str(), value)], None) {
                    assert!(
                        !e.message.contains("invalid type: string"),
                        "{var}={value}: {e}"
                    );
                }
            }
        }
    }
    let c = parse_env(
        &head(""),
        &[("ELECTD_TRANSPORT_BATCH_HEARTBEATS", "off")],
        None,
    )
    .expect("a boolean override");
    assert!(!c.batch_heartbeats);
    assert!(c.beat_thread, "on unless turned off");
    let c = parse_env(&head(""), &[("ELECTD_TRANSPORT_BEAT_THREAD", "no")], None)
        .expect("a boolean override");
    assert!(!c.beat_thread);
    // `[policy]`'s own keys too (they were refused as unknown variables while the
    // example file promised every scalar key).
    let c = parse_env(&head(""), &[("ELECTD_POLICY_PREEMPT", "off")], None)
        .expect("a boolean override");
    assert!(!c.options.policy.preempt.preempt);
    let c = parse_env(
        &head(""),
        &[("ELECTD_POLICY_PREEMPT_DELAY", "1500ms")],
        None,
    )
    .expect("a duration override");
    assert!(c.options.policy.preempt.preempt);
    assert_eq!(c.options.policy.preempt.delay, Duration::from_millis(1500));
    fails(
        parse_env(&head(""), &[("ELECTD_POLICY_PREEMPT_DELAY", "soon")], None),
        "policy.preempt_delay",
        "not a duration",
    );
}

/// The key reference (deploy/systemd/electd.toml.example, README: "every key, its
/// constraints and the ELECTD_* environment overrides") and the overrides agree: every
/// key an `ELECTD_<SECTION>_<KEY>` variable sets is written in its section there
/// (`transport.beat_thread` was not), and every key written in a single table there
/// can be set by one (`[policy]`'s could not, while the file said every scalar key).
#[test]
fn the_example_file_documents_exactly_the_overridable_keys() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/systemd/electd.toml.example"
    );
    let text = std::fs::read_to_string(path).expect("the example file");
    let mut written: Vec<(String, String)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let bare = line.trim_start_matches('#').trim();
        // A table header, written or commented out: `[timing]`, `# [[check]]`.
        if let Some(name) = bare
            .split('#')
            .next()
            .map(str::trim)
            .filter(|h| h.starts_with('[') && h.ends_with(']'))
        {
            section = name.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        let Some((key, _)) = bare.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            written.push((section.clone(), key.to_string()));
        }
    }
    let has = |s: &str, k: &str| written.iter().any(|(ws, wk)| ws == s && wk == k);
    for (section, keys) in raw::SECTIONS {
        for key in keys {
            // The older spelling is named in the text of [state], not written as a key.
            let older = (section, *key) == ("raft", "state_file")
                && text.contains("[raft] state_file is the older spelling");
            assert!(
                has(section, key) || older,
                "{section}.{key} is overridable but not written in [{section}] of {path}"
            );
        }
    }
    for key in raw::TOP {
        assert!(has("", key), "top-level {key} is not written in {path}");
    }
    for (section, key) in &written {
        let single = raw::SECTIONS.iter().find(|(s, _)| s == section);
        match single {
            Some((_, keys)) => assert!(
                keys.contains(&key.as_str()),
                "{section}.{key} is written in {path} but no ELECTD_ variable sets it"
            ),
            None if section.is_empty() => assert!(raw::TOP.contains(&key.as_str()), "{key}"),
            // [[peer]], [[check]], [[vip]], [lease.<algorithm>], [policy.<algorithm>]:
            // the file says these come from the file only.
            None => assert!(
                ["peer", "check", "vip"].contains(&section.as_str())
                    || section.starts_with("lease.")
                    || section.starts_with("policy."),
                "[{section}] in {path} is neither a single table nor one the file excludes"
            ),
        }
    }
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

/// The cluster name's bound is 64 characters, as the docs and the error say, not 64
/// bytes: a name of non-ASCII letters is held to the same count.
#[test]
fn the_cluster_name_is_counted_in_characters() {
    let named = |name: &str| {
        format!("cluster = \"{name}\"\nnode_id = 2\nalgorithms = [\"bully\"]\n[security]\ninsecure = true\n{ROSTER}")
    };
    let c = parse_env(&named(&"é".repeat(64)), &[], None).expect("64 characters, 128 bytes");
    assert_eq!(c.cluster.chars().count(), 64);
    fails(
        parse_env(&named(&"é".repeat(65)), &[], None),
        "cluster",
        "1 to 64 characters",
    );
    fails(
        parse_env(&named(&"a".repeat(65)), &[], None),
        "cluster",
        "1 to 64 characters",
    );
    fails(
        parse_env(&named(" "), &[], None),
        "cluster",
        "1 to 64 characters",
    );
}

/// Timing a setting cannot mean: a heartbeat below a millisecond (1 ns spun an idle
/// node at 75 % of a core) or any duration beyond a day (99999999999999h was taken, and
/// a node never elected).
#[test]
fn absurd_durations_are_refused_with_the_key() {
    fails(
        parse(&head("[timing]\nheartbeat = \"1ns\"")),
        "timing.heartbeat",
        "below 1ms",
    );
    fails(
        parse(&head(
            "[timing]\nheartbeat = \"1s\"\nfailure_timeout = \"99999999999999h\"",
        )),
        "timing.failure_timeout",
        "more than a day",
    );
    fails(
        parse(&head("[timing]\nelection_timeout = \"1s..2000000h\"")),
        "timing.election_timeout",
        "more than a day",
    );
    fails(
        parse(&head("[policy]\npreempt_delay = \"25h\"")),
        "policy.preempt_delay",
        "more than a day",
    );
    // The edges are taken.
    assert!(parse(&head("[timing]\nheartbeat = \"1ms\"\nfailure_timeout = \"5ms\"\nanswer_timeout = \"2ms\"\ncoordinator_timeout = \"10ms\"\nelection_timeout = \"5ms..10ms\"\n[transport]\nretransmit = \"1ms\"")).is_ok());
}

/// A hook whose program is a path that does not exist failed at every leader change,
/// and the config check said nothing; a shell line starting with a word (a builtin, a
/// function, an assignment) is not second-guessed.
#[test]
fn a_hook_program_that_does_not_exist_is_refused() {
    fails(
        parse(&head(
            "[hooks]\non_leader_change = \"/nonexistent/hook --flag\"",
        )),
        "hooks.on_leader_change",
        "would fail at every leader change",
    );
    for fine in [
        "/bin/true",
        "echo $ELECTD_STATE >> /tmp/x",
        "X=/nonexistent/y /bin/true",
    ] {
        let c = parse(&head(&format!("[hooks]\non_leader_change = \"{fine}\"")))
            .unwrap_or_else(|e| panic!("{fine}: {e}"));
        assert_eq!(c.hooks.on_leader_change.as_deref(), Some(fine));
    }
}
