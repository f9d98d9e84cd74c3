//! Configuration drift over real `electd run` processes (docs/observability.md,
//! "Configuration drift"): five nodes, one of them started from an edited copy of the
//! cluster file. Every other node reports exactly that peer (`/status`'s `config`, the
//! `electd_config_mismatch{peer}` gauge, one log line) and it reports every other node;
//! with one file for all, nobody reports anything. Each wait is on a condition with a
//! deadline.

use crate::common::{run_electd, Cluster, Timing};
use electd::config::Config;
use electd::contract::algorithm::AlgorithmKind;
use electd::NodeId;
use std::path::Path;
use std::time::{Duration, Instant};

const N: NodeId = 5;
/// The node started from the edited file.
const ODD: NodeId = 3;
/// Room for five processes starting on a loaded 2-core machine.
const WITHIN: Duration = Duration::from_secs(30);

fn cluster(name: &str) -> Cluster {
    Cluster::new(
        name,
        N,
        &[AlgorithmKind::Bully, AlgorithmKind::Lcr],
        &Timing::LOOPBACK,
    )
}

/// Start node `id` from `config` (not the cluster's file), logging at `info`.
fn start_from(c: &mut Cluster, id: NodeId, config: &Path) {
    let shared = std::mem::replace(&mut c.config, config.to_path_buf());
    c.start_with_env(id, &[("ELECTD_LOG", "info")]);
    c.config = shared;
}

/// The digest `electd run` computes for `config` (every node's is the same).
fn digest_of(config: &Path) -> String {
    Config::load(config, std::iter::empty(), Some(1))
        .unwrap_or_else(|e| panic!("{e}"))
        .digest()
        .to_string()
}

/// Node `id`'s `config` object: (its digest, the peers it reports, each peer's digest
/// as it heard it, `None` until heard).
type View = (String, Vec<NodeId>, Vec<(NodeId, Option<String>)>);

fn config_of(c: &Cluster, id: NodeId) -> Option<View> {
    let s = c.status(id)?;
    let cfg = &s["config"];
    let digest = cfg["digest"].as_str()?.to_string();
    let mismatch = cfg["mismatch"]
        .as_array()?
        .iter()
        .map(|p| p.as_u64().map(|p| p as NodeId))
        .collect::<Option<Vec<_>>>()?;
    let peers = cfg["peers"]
        .as_array()?
        .iter()
        .map(|p| {
            let id = p["id"].as_u64()? as NodeId;
            Some((id, p["digest"].as_str().map(str::to_string)))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((digest, mismatch, peers))
}

/// The value of `electd_config_mismatch{peer="p"}` in node `id`'s metrics.
fn gauge(c: &Cluster, id: NodeId, peer: NodeId) -> Option<f64> {
    let text = c.metrics(id)?;
    let label = format!("peer=\"{peer}\"");
    text.lines()
        .filter(|l| l.starts_with("electd_config_mismatch{") && l.contains(&label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Wait until every node's view satisfies `ok(node, view)`; the views of the last try.
fn wait_views(c: &Cluster, what: &str, ok: impl Fn(NodeId, &View) -> bool) {
    let start = Instant::now();
    loop {
        let views: Vec<_> = (1..=N).map(|id| (id, config_of(c, id))).collect();
        if views
            .iter()
            .all(|(id, v)| v.as_ref().is_some_and(|v| ok(*id, v)))
        {
            return;
        }
        assert!(
            start.elapsed() < WITHIN,
            "{what}: not within {WITHIN:?}: {views:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn others(id: NodeId) -> Vec<NodeId> {
    (1..=N).filter(|&p| p != id).collect()
}

/// How many lines of node `id`'s log contain `needle`.
fn lines(c: &Cluster, id: NodeId, needle: &str) -> usize {
    c.log(id).lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn one_file_for_all_and_nobody_reports_a_mismatch() {
    let mut c = cluster("drift-same");
    let config = c.config.clone();
    let digest = digest_of(&config);
    for id in 1..=N {
        start_from(&mut c, id, &config);
    }
    for id in 1..=N {
        assert!(c.wait_http(id, WITHIN), "node {id} serves no HTTP");
        // The gauge exists at 0 for every peer from the start.
        for p in others(id) {
            assert_eq!(gauge(&c, id, p), Some(0.0), "node {id}, peer {p}");
        }
    }
    // Until every node has heard every peer's digest, then: no mismatch anywhere.
    wait_views(&c, "every digest heard", |id, (mine, mismatch, peers)| {
        assert!(mismatch.is_empty(), "node {id} reports {mismatch:?}");
        *mine == digest
            && peers.iter().map(|p| p.0).collect::<Vec<_>>() == others(id)
            && peers
                .iter()
                .all(|(_, d)| d.as_deref() == Some(digest.as_str()))
    });
    for id in 1..=N {
        for p in others(id) {
            assert_eq!(gauge(&c, id, p), Some(0.0), "node {id}, peer {p}");
        }
        assert_eq!(lines(&c, id, "configuration drift"), 0, "{}", c.log(id));
    }
    // `electd status` exits 0 only when every group agrees: the digests are heard at
    // the first exchange, the elections may still be under way (CI caught one).
    if let Err(e) = c.wait_agreement(WITHIN, |_| true) {
        panic!("{e}");
    }
    let (ok, out, err) = run_electd(&["status", "--config", config.to_str().unwrap()]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(&format!(
            "config: every answering node runs digest {digest}"
        )),
        "{out}"
    );
}

#[test]
fn one_edited_roster_is_reported_by_every_node_and_reports_every_node() {
    let mut c = cluster("drift-edited");
    let config = c.config.clone();
    // Node 3's copy gives peer 1 another priority (a roster edit that still loads).
    let text = std::fs::read_to_string(&config).unwrap();
    let edited_text = text.replacen("[[peer]]\nid = 1\n", "[[peer]]\nid = 1\npriority = 50\n", 1);
    assert_ne!(edited_text, text, "the roster of {}", config.display());
    let edited = c.dir.join("edited.toml");
    std::fs::write(&edited, edited_text).unwrap();
    let (shared_digest, odd_digest) = (digest_of(&config), digest_of(&edited));
    assert_ne!(shared_digest, odd_digest);

    for id in 1..=N {
        start_from(&mut c, id, if id == ODD { &edited } else { &config });
    }
    let digest_of_node = |id: NodeId| {
        if id == ODD {
            odd_digest.clone()
        } else {
            shared_digest.clone()
        }
    };
    let expected = |id: NodeId| if id == ODD { others(ODD) } else { vec![ODD] };
    wait_views(&c, "the drift seen", |id, (mine, mismatch, peers)| {
        *mine == digest_of_node(id)
            && *mismatch == expected(id)
            && peers
                .iter()
                .all(|(p, d)| d.as_deref() == Some(digest_of_node(*p).as_str()))
    });
    for id in 1..=N {
        for p in others(id) {
            let want = f64::from(u8::from(expected(id).contains(&p)));
            assert_eq!(gauge(&c, id, p), Some(want), "node {id}, peer {p}");
        }
    }
    let (_, out, _) = run_electd(&["status", "--config", config.to_str().unwrap()]);
    assert!(out.contains("config: DRIFT"), "{out}");
    for id in others(ODD) {
        assert!(
            out.contains(&format!(
                "config: node {id} hears another configuration from [{ODD}]"
            )),
            "{out}"
        );
    }

    // A second life of node 3 with the same edit: the others hear its CONFIG again
    // (they answer it: that is how node 3 hears theirs) and log nothing new.
    c.kill(ODD);
    start_from(&mut c, ODD, &edited);
    wait_views(&c, "node 3 restarted", |id, (_, mismatch, _)| {
        *mismatch == expected(id)
    });
    for id in 1..=N {
        let per_peer: Vec<usize> = expected(id)
            .iter()
            .map(|p| lines(&c, id, &format!("configuration drift: peer {p} ")))
            .collect();
        assert_eq!(
            per_peer,
            vec![1; expected(id).len()],
            "node {id}: one line per peer that differs\n{}",
            c.log(id)
        );
    }

    // Node 3 back on the cluster's file: the drift ends everywhere, said once.
    c.kill(ODD);
    start_from(&mut c, ODD, &config);
    wait_views(&c, "the drift ended", |_, (mine, mismatch, peers)| {
        *mine == shared_digest
            && mismatch.is_empty()
            && peers
                .iter()
                .all(|(_, d)| d.as_deref() == Some(shared_digest.as_str()))
    });
    for id in others(ODD) {
        assert_eq!(gauge(&c, id, ODD), Some(0.0), "node {id}");
        assert_eq!(
            lines(&c, id, &format!("configuration drift ended: peer {ODD} ")),
            1,
            "{}",
            c.log(id)
        );
    }
    assert_eq!(lines(&c, ODD, "configuration drift"), 0, "{}", c.log(ODD));
}
