//! The cluster report: agreement, unreachable and paused nodes, drained groups.

use super::*;
use serde_json::json;

fn node(id: NodeId, groups: Value) -> NodeReport {
    NodeReport {
        id,
        http: format!("127.0.0.1:{}", 5740 + id),
        reachable: true,
        paused: false,
        error: None,
        status: Some(json!({
            "node": id, "cluster": "c", "paused": false,
            "algorithms": ["bully", "raft"], "groups": groups,
        })),
    }
}

fn g(algorithm: &str, leader: Option<NodeId>, term: u64, electing: bool) -> Value {
    json!({"algorithm": algorithm, "leader": leader, "term": term,
           "state": "follower", "electing": electing})
}

#[test]
fn agreement_needs_one_leader_no_election_and_every_group() {
    let ok = |l| json!([g("bully", Some(3), 1, false), g("raft", Some(l), 4, false)]);
    let r = analyse(
        Some("c".into()),
        vec![node(1, ok(2)), node(2, ok(2)), node(3, ok(2))],
    );
    assert!(r.agreed);
    assert_eq!(r.algorithms[1].leader, Some(2));
    assert_eq!(r.algorithms[1].nodes[0].token, Some(4));

    let r = analyse(Some("c".into()), vec![node(1, ok(2)), node(2, ok(3))]);
    assert!(!r.agreed);
    assert!(r.algorithms[0].agreed && !r.algorithms[1].agreed);
    assert_eq!(
        r.algorithms[1].problem,
        "the nodes follow different leaders"
    );

    let electing = json!([g("bully", Some(3), 1, true), g("raft", Some(2), 4, false)]);
    let r = analyse(Some("c".into()), vec![node(1, ok(2)), node(2, electing)]);
    assert!(!r.agreed);
    assert_eq!(r.algorithms[0].problem, "node 2 is electing");

    let none = json!([g("bully", None, 1, false), g("raft", Some(2), 4, false)]);
    assert!(!analyse(None, vec![node(1, none)]).agreed);

    let only_bully = json!([g("bully", Some(3), 1, false)]);
    let r = analyse(None, vec![node(1, ok(2)), node(2, only_bully)]);
    assert_eq!(r.algorithms[1].problem, "nodes [2] do not run it");
}

#[test]
fn unreachable_and_paused_nodes_do_not_vote_but_nobody_answering_is_not_agreed() {
    let ok = json!([g("bully", Some(3), 1, false), g("raft", Some(2), 4, false)]);
    let mut down = node(3, json!([]));
    down.reachable = false;
    down.status = None;
    down.error = Some("refused".into());
    let mut paused = node(2, json!([g("bully", None, 1, true)]));
    paused.paused = true;
    let r = analyse(None, vec![node(1, ok), paused, down]);
    assert!(r.agreed, "{r:?}");
    assert_eq!(r.unreachable, vec![3]);
    let t = table(&r);
    assert!(
        t.contains("unreachable: [3]") && t.contains("paused"),
        "{t}"
    );

    let mut down = node(1, json!([]));
    down.reachable = false;
    assert!(!analyse(None, vec![down]).agreed);
}

/// Issue 28, item 11: a group in which every node is drained says so, not
/// "electing" (its symptom); other reasons are named per node.
#[test]
fn a_group_with_every_node_drained_says_so() {
    let with = |leader: Option<NodeId>, electing: bool, why: &[&str]| {
        let mut b = g("bully", leader, 1, electing);
        b["ineligible"] = json!(why);
        json!([b, g("raft", Some(2), 4, false)])
    };
    let drained = ["drained"];
    let r = analyse(
        None,
        vec![
            node(1, with(None, true, &drained)),
            node(2, with(None, false, &drained)),
            node(3, with(None, true, &["drained", "fault"])),
        ],
    );
    assert!(!r.algorithms[0].agreed);
    assert!(
        r.algorithms[0].problem.starts_with("every node is drained"),
        "{}",
        r.algorithms[0].problem
    );
    assert!(table(&r).contains("bully: not agreed: every node is drained"));
    assert!(r.algorithms[1].agreed);
    let fault = analyse(
        None,
        vec![
            node(1, with(None, true, &drained)),
            node(2, with(None, true, &["fault"])),
        ],
    );
    assert_eq!(
        fault.algorithms[0].problem,
        "no node may lead (node 1 drained, node 2 fault)"
    );
    // One node may lead: the usual verdict.
    let r = analyse(
        None,
        vec![
            node(1, with(None, true, &drained)),
            node(2, with(None, true, &[])),
        ],
    );
    assert_eq!(r.algorithms[0].problem, "node 1 is electing");
}

#[test]
fn a_token_field_is_preferred_to_the_term() {
    let v = json!({"algorithm": "bully", "leader": 3, "term": 2, "token": 9,
                   "state": "leader", "electing": false});
    assert_eq!(group_of(3, &v).token, Some(9));
}

#[test]
fn roster_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("electd-roster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("c.toml");
    std::fs::write(&f, "cluster = \"c\"\n[[peer]]\nid = 1\nhttp = \"127.0.0.1:1\"\n[[peer]]\nid = 1\nhttp = \"127.0.0.1:2\"\n").unwrap();
    let e = load_roster(&f).err().unwrap().to_string();
    assert!(e.contains("listed twice") && e.contains("c.toml"), "{e}");
    std::fs::write(&f, "cluster = \"c\"\n").unwrap();
    assert!(load_roster(&f)
        .err()
        .unwrap()
        .to_string()
        .contains("no [[peer]]"));
    std::fs::write(&f, "cluster = \n").unwrap();
    assert!(load_roster(&f)
        .err()
        .unwrap()
        .to_string()
        .contains("line 1"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `electd watch` leaves a paused node out of the agreement, as `status` does: its
/// groups name no leader while it simulates a crash, which kept the `cluster` line
/// from ever coming. Resumed, it counts again.
#[test]
fn watch_leaves_a_paused_node_out_of_the_agreement() {
    use super::watch::{Printer, Report};
    let ev = |leader: Option<NodeId>, term: u64, paused: bool| {
        json!({"algorithm": "bully", "leader": leader, "term": term,
               "initial": false, "paused": paused, "at_ms": 1})
    };
    let cluster_lines = |p: &Printer| -> Vec<(u64, Vec<u64>)> {
        p.kept()
            .iter()
            .filter(|v| v["type"] == "cluster")
            .map(|v| {
                let nodes = v["nodes"].as_array().unwrap().iter();
                (
                    v["leader"].as_u64().unwrap(),
                    nodes.filter_map(Value::as_u64).collect(),
                )
            })
            .collect()
    };
    let mut p = Printer::keeping(3);
    for id in 1..=3 {
        p.report(Report::Connected(id));
    }
    p.report(Report::Event(1, ev(Some(3), 1, false)));
    p.report(Report::Event(2, ev(Some(3), 1, false)));
    p.report(Report::Event(3, ev(Some(3), 1, false)));
    assert_eq!(cluster_lines(&p), vec![(3, vec![1, 2, 3])]);
    // Node 3 is paused: its event names no leader; the others elect 2.
    p.report(Report::Event(3, ev(None, 1, true)));
    p.report(Report::Event(1, ev(Some(2), 2, false)));
    p.report(Report::Event(2, ev(Some(2), 2, false)));
    assert_eq!(cluster_lines(&p)[1..], [(2, vec![1, 2])]);
    let text = p.kept().iter().find(|v| v["paused"] == true);
    assert!(
        text.is_some_and(|v| v["type"] == "leader"),
        "{:?}",
        p.kept()
    );
    // Resumed: node 3 follows 2 and is counted again (2 was announced already).
    p.report(Report::Event(3, ev(Some(2), 2, false)));
    assert_eq!(cluster_lines(&p).len(), 2);
    p.report(Report::Event(3, ev(Some(3), 3, false)));
    p.report(Report::Event(1, ev(Some(3), 3, false)));
    p.report(Report::Event(2, ev(Some(3), 3, false)));
    assert_eq!(cluster_lines(&p)[2..], [(3, vec![1, 2, 3])]);
}
