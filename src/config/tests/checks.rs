//! Leases per algorithm and health checks: defaults, overrides, and every bad key
//! blamed.

use super::*;

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
    // The audit's two: a drift of zero (a lease with no margin at all) and a Raft
    // table asking for require_quorum (Raft's lease is its check-quorum's; the key
    // was accepted and nothing came of it).
    fails(
        parse(&two("[lease]\nrequire_quorum = true\nclock_drift = \"0s\"")),
        "lease.clock_drift",
        "above zero",
    );
    fails(
        parse(&two("[lease.ring]\nclock_drift = \"2d\"")),
        "lease.ring.clock_drift",
        "more than a day",
    );
    let raft = with_raft;
    fails(
        parse(&raft("[lease.raft]\nrequire_quorum = true")),
        "lease.raft.require_quorum",
        "check-quorum",
    );
    // The shared switch is for the other algorithms, and Raft's own false is harmless.
    let c = parse(&raft(
        "[lease]\nrequire_quorum = true\n[lease.raft]\nrequire_quorum = false",
    ))
    .expect("the shared switch with Raft in the roster");
    assert_eq!(c.options.lease.require_quorum, vec![Bully]);
}

#[test]
fn health_checks_parse_with_defaults_and_every_bad_key_is_blamed() {
    use crate::config::checks::Probe;
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
            "name = \"x\"\nurl = \"http://:80/\"",
            "check[0].url",
            "no host",
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

#[test]
fn virtual_addresses_parse_with_defaults_and_every_bad_key_is_blamed() {
    use crate::contract::algorithm::AlgorithmKind::{Bully, Ring};
    use std::net::Ipv4Addr;
    // `lo` is on every machine the tests run on.
    let c = parse(&head(
        "[[vip]]\naddress = \"10.0.0.100/24\"\ninterface = \"lo\"\n\
         [[vip]]\naddress = \" 10.0.0.101 \"\ninterface = \"lo\"\nalgorithm = \"bully\"\n\
         garp_count = 0\ngarp_interval = \"250ms\"",
    ))
    .expect("valid vips");
    assert_eq!(c.vips.len(), 2);
    let (a, b) = (&c.vips[0], &c.vips[1]);
    assert_eq!((a.address, a.prefix), (Ipv4Addr::new(10, 0, 0, 100), 24));
    assert_eq!(a.interface, "lo");
    assert_eq!(a.algorithm, Bully, "the only algorithm is the default");
    assert_eq!((a.garp_count, a.garp_interval), (3, Duration::from_secs(1)));
    assert_eq!(a.label(), "10.0.0.100/24");
    assert_eq!((b.address, b.prefix), (Ipv4Addr::new(10, 0, 0, 101), 32));
    assert_eq!(
        (b.garp_count, b.garp_interval),
        (0, Duration::from_millis(250))
    );
    let two = |extra: &str| head(extra).replace("[\"bully\"]", "[\"bully\", \"ring\"]");
    let c = parse(&two(
        "[[vip]]\naddress = \"10.0.0.100\"\ninterface = \"lo\"\nalgorithm = \"ring\"",
    ))
    .unwrap();
    assert_eq!(c.vips[0].algorithm, Ring);
    let vip = |body: &str| head(&format!("[[vip]]\n{body}"));
    for (text, key, needle) in [
        (two("[[vip]]\naddress = \"10.0.0.100\"\ninterface = \"lo\""), "vip[0].algorithm", "more than one algorithm"),
        (vip("interface = \"lo\""), "vip[0].address", "missing"),
        (vip("address = \"10.0.0.100\""), "vip[0].interface", "missing"),
        (vip("address = \"10.0.0.300\"\ninterface = \"lo\""), "vip[0].address", "not an IPv4 address"),
        (vip("address = \"fe80::1\"\ninterface = \"lo\""), "vip[0].address", "IPv6"),
        (vip("address = \"10.0.0.1/40\"\ninterface = \"lo\""), "vip[0].address", "prefix"),
        (vip("address = \"127.0.0.9\"\ninterface = \"lo\""), "vip[0].address", "cannot be"),
        (vip("address = \"10.0.0.1\"\ninterface = \"eth0:1\""), "vip[0].interface", "not an interface name"),
        (vip("address = \"10.0.0.1\"\ninterface = \"a-name-far-too-long\""), "vip[0].interface", "not an interface name"),
        (vip("address = \"10.0.0.1\"\ninterface = \"electd-none0\""), "vip[0].interface", "no such interface"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\nalgorithm = \"raft\""), "vip[0].algorithm", "not in `algorithms`"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\nalgorithm = \"paxos\""), "vip[0].algorithm", "paxos"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ngarp_count = -1"), "vip[0].garp_count", "0 to 100"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ngarp_count = 101"), "vip[0].garp_count", "0 to 100"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ngarp_interval = \"0s\""), "vip[0].garp_interval", "above zero"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ngarp_interval = \"500us\""), "vip[0].garp_interval", "1ms to 1h"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ngarp_interval = \"2h\""), "vip[0].garp_interval", "1ms to 1h"),
        (vip("address = \"10.0.0.1\"\ninterface = \"lo\"\ncolour = \"red\""), "vip[0].colour", "unknown field"),
        (
            vip("address = \"10.0.0.1/24\"\ninterface = \"lo\"\n[[vip]]\naddress = \"10.0.0.1/32\"\ninterface = \"lo\""),
            "vip[1].address",
            "one address, one owner",
        ),
        // A member's own address (the start's delete took it off that host).
        (
            vip("address = \"10.0.0.3/24\"\ninterface = \"lo\"")
                .replace("127.0.0.1:7003", "10.0.0.3:7003"),
            "vip[0].address",
            "node 3's own address",
        ),
        (
            vip("address = \"10.0.0.3/24\"\ninterface = \"lo\"")
                .replace("127.0.0.1:8001", "10.0.0.3:8001"),
            "vip[0].address",
            "node 1's own address",
        ),
    ] {
        fails(parse(&text), key, needle);
    }
}
