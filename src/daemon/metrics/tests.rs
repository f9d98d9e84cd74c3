//! The metrics of a node: names, labels, deltas, and every known series at 0.

use super::*;
use crate::contract::algorithm::{Options, Timing};
use crate::node::link::LinkConfig;
use crate::node::NodeConfig;
use std::time::Duration;

/// Node `id` of roster `ring`, running `algos`, with the default timing.
fn test_node(id: NodeId, ring: &[NodeId], algos: &[AlgorithmKind]) -> Node {
    Node::new(NodeConfig {
        id,
        ring: ring.to_vec().into(),
        algorithms: algos.to_vec(),
        timing: Timing::default(),
        options: Options::default(),
        link: LinkConfig::default(),
        incarnation: 1,
        seed: 1,
    })
    .expect("node")
}

#[test]
fn names_labels_and_deltas() {
    let algos = [AlgorithmKind::Bully];
    let m = Metrics::new(3, &algos).expect("registry");
    let mut node = test_node(3, &[1, 2, 3], &algos);
    // Node 3 is the highest: it wins at once and announces to 1 and 2.
    node.start(Duration::ZERO, true);
    m.sync(&node);
    m.sync(&node); // a second sync adds nothing
    let text = m.encode();
    assert!(
        text.contains(
            "electd_messages_sent_total{algorithm=\"bully\",node=\"3\",type=\"coordinator\"} 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("electd_is_leader{algorithm=\"bully\",node=\"3\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("electd_leader{algorithm=\"bully\",node=\"3\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("electd_build_info{node=\"3\",version="),
        "{text}"
    );
    assert!(
        text.contains(
            "electd_election_duration_seconds_bucket{algorithm=\"bully\",node=\"3\",le=\"0.001\"}"
        ),
        "{text}"
    );

    // The same reliable datagram twice (its ack was lost): delivered once, the
    // second copy counted as a duplicate.
    let again = crate::node::Datagram {
        from: 1,
        incarnation: 1,
        seq: 1,
        ack: 0,
        group: Some(AlgorithmKind::Bully),
        body: Some(crate::contract::message::Message::Resign { epoch: 1 }),
    };
    node.handle_datagram(Duration::ZERO, again.clone());
    node.handle_datagram(Duration::ZERO, again);
    m.sync(&node);
    assert!(
        m.encode()
            .contains("electd_duplicates_dropped_total{node=\"3\"} 1"),
        "{}",
        m.encode()
    );
}

/// docs/architecture.md: every series carries `node`; per-group series carry `algorithm`;
/// message counters carry `type`; durations use 1 ms doubling buckets.
#[test]
fn every_series_is_labelled() {
    let algos = [AlgorithmKind::Bully, AlgorithmKind::ImprovedBully];
    let m = Metrics::new(7, &algos).expect("registry");
    m.datagram_sent(100);
    m.invalid_datagram("decode");
    m.send_error("network_unreachable");
    m.hook_run("ok");
    m.hook_skipped(2);
    let mut node = test_node(7, &[5, 6, 7], &algos);
    node.start(Duration::ZERO, true);
    m.sync(&node);
    let text = m.encode();
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(samples.len() > 20, "{text}");
    for line in &samples {
        assert!(line.contains("node=\"7\""), "no node label: {line}");
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        let per_group = [
            "electd_messages_",
            "electd_elections_",
            "electd_election_duration",
            "electd_leader",
            "electd_is_leader",
            "electd_has_leader",
            "electd_term",
            "electd_failover_",
            "electd_leaderless_",
            "electd_group_",
        ];
        if per_group.iter().any(|p| name.starts_with(p)) {
            assert!(line.contains("algorithm=\""), "no algorithm: {line}");
        }
        if name.starts_with("electd_messages_") {
            assert!(line.contains("type=\""), "no type: {line}");
        }
    }
    #[cfg(target_os = "linux")]
    assert!(
        text.contains("process_resident_memory_bytes{node=\"7\"}"),
        "{text}"
    );
    assert!(text.contains("electd_hook_runs_total{node=\"7\",result=\"skipped\"} 2"));
    assert!(
        !text.contains("cluster="),
        "no cluster given, none invented"
    );
    assert!(text.contains("electd_bytes_sent_total{node=\"7\"} 100"));
    // Buckets: 1 ms, doubling.
    let b = election_buckets();
    assert_eq!(b[0], 0.001);
    assert!(b.windows(2).all(|w| (w[1] / w[0] - 2.0).abs() < 1e-9));
    assert!(*b.last().unwrap_or(&0.0) >= 10.0, "covers slow elections");
}

/// `for_cluster`: every series, `process_*` included, carries `cluster`; the
/// failover buckets are laid out in tenths of the failure timeout; a leaderless
/// period still under way counts up to the time of the sync.
#[test]
fn cluster_label_failover_buckets_and_leaderless_time() {
    let algos = [AlgorithmKind::Bully];
    let ft = Duration::from_millis(200);
    let m = Metrics::for_cluster("prod-eu", 2, &algos, ft).expect("registry");
    let mut node = test_node(2, &[1, 2, 3], &algos);
    // Node 2 asks node 3 and waits: no leader yet.
    node.start(Duration::ZERO, true);
    m.sync_at(&node, Duration::from_millis(250));
    m.group_datagram_sent(AlgorithmKind::Bully, 40);
    let text = m.encode();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.contains("cluster=\"prod-eu\""), "no cluster: {line}");
    }
    assert!(
        text.contains("electd_leaderless_seconds_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 0.25"),
        "{text}"
    );
    assert!(
        text.contains(
            "electd_group_bytes_sent_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 40"
        ),
        "{text}"
    );
    // A second sync at a later time adds only the difference.
    m.sync_at(&node, Duration::from_millis(400));
    assert!(
        m.encode().contains("electd_leaderless_seconds_total{algorithm=\"bully\",cluster=\"prod-eu\",node=\"2\"} 0.4"),
        "{}",
        m.encode()
    );
    let b = failover_buckets(ft);
    assert!(b.windows(2).all(|w| w[1] > w[0]), "increasing: {b:?}");
    for i in 1..=20 {
        let edge = ft.as_secs_f64() * f64::from(i) / 10.0;
        assert!(b.iter().any(|x| (x - edge).abs() < 1e-9), "{edge} in {b:?}");
    }
}

/// The value of the sample `name{labels}` in `text` (labels as encoded: sorted).
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let key = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

/// Issue 32: a fresh node's /metrics has every series whose labels are known at
/// start at 0 (health checks at 1), so that increase() over a window that starts
/// with the node counts its first election.
#[test]
fn a_fresh_node_exports_every_known_series_at_zero() {
    let m = Metrics::new(4, &AlgorithmKind::ALL).expect("registry");
    let text = m.encode();
    // The transfer and priority messages too (the audit saw `timeout_now` and
    // `priority` appear at their first use).
    for (a, t) in [
        ("raft", "timeout_now"),
        ("bully", "handoff"),
        ("bully", "priority"),
        ("hs", "handoff"),
    ] {
        let labels = format!("algorithm=\"{a}\",node=\"4\",type=\"{t}\"");
        assert_eq!(
            sample(&text, "electd_messages_sent_total", &labels),
            Some(0.0),
            "{labels}"
        );
    }
    for a in AlgorithmKind::ALL {
        for t in known_message_types(a) {
            for name in [
                "electd_messages_sent_total",
                "electd_messages_received_total",
            ] {
                // Labels are encoded sorted: `node` between `algorithm` and `type`.
                let (a, t) = (a.as_str(), t.as_str());
                let labels = format!("algorithm=\"{a}\",node=\"4\",type=\"{t}\"");
                assert_eq!(
                    sample(&text, name, &labels),
                    Some(0.0),
                    "{name}{{{labels}}}"
                );
            }
        }
    }
    for r in invalid_reasons() {
        let labels = format!("node=\"4\",reason=\"{r}\"");
        assert_eq!(
            sample(&text, "electd_invalid_datagrams_total", &labels),
            Some(0.0),
            "{r}"
        );
    }
    let by_result = |name: &str, label: &str, values: &[&str], v: f64| {
        for x in values {
            let labels = if label < "node" {
                format!("{label}=\"{x}\",node=\"4\"")
            } else {
                format!("node=\"4\",{label}=\"{x}\"")
            };
            assert_eq!(
                sample(&text, name, &labels),
                Some(v),
                "{name}{{{labels}}}:\n{text}"
            );
        }
    };
    by_result("electd_send_errors_total", "kind", &SEND_ERROR_KINDS, 0.0);
    by_result("electd_errors_total", "class", &ERROR_CLASSES, 0.0);
    by_result(
        "electd_key_reloads_total",
        "result",
        &KEY_RELOAD_RESULTS,
        0.0,
    );
    by_result("electd_hook_runs_total", "result", &HOOK_RESULTS, 0.0);
    by_result(
        "electd_health",
        "check",
        &crate::daemon::shared::HEALTH_CHECKS,
        1.0,
    );
}

/// The label values the code passes to the counters above, read from the source
/// (`metrics.error("x")`, `count_invalid("x")`, …), are all among those created at
/// start: a new class or reason added without its zero fails here.
#[test]
fn every_label_value_the_code_counts_is_created_at_start() {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src").flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut paths,
    );
    let known: Vec<(&str, Vec<&str>)> = vec![
        ("metrics.error(\"", ERROR_CLASSES.to_vec()),
        ("send_error(\"", SEND_ERROR_KINDS.to_vec()),
        ("key_reload(\"", KEY_RELOAD_RESULTS.to_vec()),
        ("hook_run(\"", HOOK_RESULTS.to_vec()),
        ("count_invalid(\"", crate::node::NODE_DROP_REASONS.to_vec()),
    ];
    let mut found = 0;
    for path in paths {
        if path.ends_with("daemon/metrics/tests.rs") {
            continue; // this file's own tests call them with examples
        }
        let src = std::fs::read_to_string(&path).expect("read source");
        for (call, values) in &known {
            for (i, _) in src.match_indices(call) {
                let rest = &src[i + call.len()..];
                let value = &rest[..rest.find('"').expect("closing quote")];
                assert!(
                    values.contains(&value),
                    "{}: {call}{value}\") is not created at start (known: {values:?})",
                    path.display()
                );
                found += 1;
            }
        }
    }
    // The calls this test reads exist (it would pass vacuously if they were renamed).
    assert!(
        found >= ERROR_CLASSES.len() + crate::node::NODE_DROP_REASONS.len(),
        "found {found}"
    );
    // send_error_kind's every answer is known too.
    use std::io::{Error, ErrorKind as K};
    let errors = [
        Error::from(K::PermissionDenied),
        Error::from(K::NetworkUnreachable),
        Error::from(K::HostUnreachable),
        Error::from(K::AddrNotAvailable),
        Error::from(K::ConnectionRefused),
        Error::from(K::WouldBlock),
        Error::from(K::InvalidInput),
        Error::from_raw_os_error(105),
        Error::from_raw_os_error(90),
        Error::other("x"),
    ];
    for e in errors {
        let kind = crate::daemon::socket::send_error_kind(&e);
        assert!(SEND_ERROR_KINDS.contains(&kind), "{kind}");
    }
}

/// What a node counts in its first election is counted by series that existed
/// before it (so increase() from a scrape before the election sees all of it).
#[test]
fn the_first_election_is_counted_by_series_that_existed_before_it() {
    for a in AlgorithmKind::ALL {
        let m = Metrics::new(3, &[a]).expect("registry");
        let before = m.encode();
        let mut node = test_node(3, &[1, 2, 3], &[a]);
        node.start(Duration::ZERO, true);
        // Raft first waits out its election timeout: run the node's timers (peers
        // are silent) until it has sent something, a bounded number of times.
        let sent_any = |node: &Node| {
            let stats = node.group_stats(a).expect("group");
            MessageType::ALL.iter().any(|&t| stats.sent_of(t) > 0)
        };
        for _ in 0..100 {
            if sent_any(&node) {
                break;
            }
            let Some(at) = node.poll_timeout() else { break };
            node.handle_timeout(at);
        }
        assert!(sent_any(&node), "{a:?} sent nothing at start");
        m.sync(&node);
        let after = m.encode();
        let stats = node.group_stats(a).expect("group");
        for t in MessageType::ALL
            .into_iter()
            .filter(|&t| stats.sent_of(t) > 0)
        {
            let labels = format!(
                "algorithm=\"{}\",node=\"3\",type=\"{}\"",
                a.as_str(),
                t.as_str()
            );
            let name = "electd_messages_sent_total";
            assert_eq!(sample(&before, name, &labels), Some(0.0), "{labels} before");
            assert_eq!(
                sample(&after, name, &labels),
                Some(stats.sent_of(t) as f64),
                "{labels} after"
            );
        }
    }
}

/// The HELP of a labelled series names every label value the code exports (it is
/// built from the same constants), as docs/observability.md does.
#[test]
fn the_help_of_errors_and_health_lists_every_label_value() {
    let m = Metrics::new(4, &AlgorithmKind::ALL).expect("registry");
    let text = m.encode();
    let help = |name: &str| -> String {
        let prefix = format!("# HELP {name} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no HELP for {name}"))
            .to_string()
    };
    let errors = help("electd_errors_total");
    for class in ERROR_CLASSES {
        assert!(errors.contains(class), "{class}: {errors}");
    }
    let health = help("electd_health");
    for check in crate::daemon::shared::HEALTH_CHECKS {
        assert!(health.contains(check), "{check}: {health}");
    }
}

/// docs/observability.md's table of alerts lists exactly the alerts of the shipped
/// rules (two of them, the `[[vip]]` ones, were missing from it).
#[test]
fn the_alert_table_lists_every_shipped_alert() {
    let root = env!("CARGO_MANIFEST_DIR");
    let rules = std::fs::read_to_string(format!("{root}/deploy/prometheus/rules/electd.rules.yml"))
        .expect("rules");
    let doc = std::fs::read_to_string(format!("{root}/docs/observability.md")).expect("doc");
    let shipped: std::collections::BTreeSet<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert:"))
        .map(str::trim)
        .collect();
    let table: std::collections::BTreeSet<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `Electd"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let table: std::collections::BTreeSet<String> =
        table.into_iter().map(|n| format!("Electd{n}")).collect();
    let shipped: std::collections::BTreeSet<String> =
        shipped.into_iter().map(String::from).collect();
    assert!(shipped.len() >= 11, "{shipped:?}");
    assert_eq!(table, shipped, "the alert table against the rules file");
}

/// Every `type` filter on `electd_messages_sent_total` in the shipped rules and
/// dashboard names exactly the liveness types ([`MessageType::is_liveness`]): they
/// named heartbeats and acks only, and a leader whose weighted check failed sent a
/// `priority` advert with every heartbeat, which they counted as election messages
/// (236 of them against 5 in the audit's 12 s).
#[test]
fn the_rules_and_dashboard_leave_out_exactly_the_liveness_types() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut liveness: Vec<&str> = MessageType::ALL
        .into_iter()
        .filter(|t| t.is_liveness())
        .map(MessageType::as_str)
        .collect();
    liveness.sort_unstable();
    let mut seen = 0;
    for file in [
        "deploy/prometheus/rules/electd.rules.yml",
        "dashboards/electd.json",
    ] {
        let text = std::fs::read_to_string(format!("{root}/{file}")).expect(file);
        let text = text.replace("\\\"", "\"");
        for (i, _) in text.match_indices("electd_messages_sent_total{") {
            let labels = &text[i..i + text[i..].find('}').expect("a closing brace")];
            let Some(at) = labels.find("type") else {
                continue;
            };
            let value = labels[at..].split('"').nth(1).expect("a quoted value");
            let mut names: Vec<&str> = value.split('|').collect();
            names.sort_unstable();
            assert_eq!(names, liveness, "{file}: {labels}");
            seen += 1;
        }
    }
    assert!(seen >= 6, "the filters were found ({seen})");
}
