//! Health checks on real `electd run` processes over UDP (issue 18, item 2): a
//! `[[check]]` command (`test -e healthy-{node}`) that starts failing puts its node in
//! FAULT: the leader steps down, another node leads, `/status` lists `fault`, the
//! metrics say so and the hook runs with `ELECTD_STATE=fault`; passing again, the node
//! may lead again (Bully preempts: it takes over). Every wait is on a condition with a
//! deadline.

use crate::common::{counter_sum, wait_for, Cluster, Timing, DEADLINE};
use electd::contract::algorithm::AlgorithmKind::Bully;

const TIMING: Timing = Timing::LOOPBACK;

#[test]
fn a_failing_check_demotes_the_leader_and_a_passing_one_restores_it() {
    let mut c = Cluster::new("checks", 3, &[Bully], &TIMING);
    let dir = c.dir.clone();
    for id in 1..=3 {
        std::fs::write(dir.join(format!("healthy-{id}")), "").unwrap();
    }
    let hook_log = dir.join("hook.log");
    c.append_config(&format!(
        "[hooks]\non_leader_change = \"echo $ELECTD_NODE $ELECTD_STATE >> {}\"\n\n\
         [[check]]\nname = \"service\"\ncommand = [\"test\", \"-e\", \"{}/healthy-{{node}}\"]\n\
         interval = \"20ms\"\ntimeout = \"15ms\"\nfall = 2\nrise = 2\n",
        hook_log.display(),
        dir.display()
    ));
    c.start_all();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .expect("node 3 leads at first");
    let runs = |id: u32, result: &str| {
        c.metrics(id).map_or(0.0, |m| {
            counter_sum(
                &m,
                "electd_check_runs_total",
                &[("check", "service"), ("result", result)],
            )
        })
    };
    wait_for("passing runs on node 3", || {
        (runs(3, "pass") >= 2.0).then_some(())
    });
    assert_eq!(c.ineligible(3, "bully"), Some(vec![]));

    // The service on node 3 goes away: FAULT after two failed runs, node 2 leads.
    std::fs::remove_file(dir.join("healthy-3")).unwrap();
    let (leaders, _) = c
        .wait_agreement(DEADLINE, |l| l.get("bully") == Some(&2))
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log(3)));
    assert_eq!(leaders["bully"], 2);
    assert_eq!(c.ineligible(3, "bully"), Some(vec!["fault".to_string()]));
    let m = c.metrics(3).expect("metrics");
    assert_eq!(
        counter_sum(&m, "electd_fault", &[("algorithm", "bully")]),
        1.0
    );
    assert_eq!(
        counter_sum(&m, "electd_check_up", &[("check", "service")]),
        0.0
    );
    assert!(runs(3, "fail") >= 2.0);
    wait_for("the hook's fault run on node 3", || {
        let log = std::fs::read_to_string(&hook_log).ok()?;
        log.lines().any(|l| l == "3 fault").then_some(())
    });
    // Other nodes are unaffected.
    assert_eq!(c.ineligible(2, "bully"), Some(vec![]));

    // Healthy again: two passes, no FAULT, and Bully gives node 3 the lead back.
    std::fs::write(dir.join("healthy-3"), "").unwrap();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log(3)));
    assert_eq!(c.ineligible(3, "bully"), Some(vec![]));
    let m = c.metrics(3).expect("metrics");
    assert_eq!(
        counter_sum(&m, "electd_fault", &[("algorithm", "bully")]),
        0.0
    );
    assert_eq!(
        counter_sum(&m, "electd_check_up", &[("check", "service")]),
        1.0
    );
}

/// A weighted check (keepalived's `weight -N`): failing, it lowers the leader's
/// priority (100 → 80) below its followers', which see it advertised and take over;
/// passing again, the leader takes back (Bully preempts). No FAULT meanwhile.
#[test]
fn a_failing_weighted_check_lowers_the_priority_and_the_next_node_takes_over() {
    let mut c = Cluster::new("checks-weight", 3, &[Bully], &TIMING);
    let dir = c.dir.clone();
    for id in 1..=3 {
        std::fs::write(dir.join(format!("healthy-{id}")), "").unwrap();
    }
    c.append_config(&format!(
        "[[check]]\nname = \"service\"\ncommand = [\"test\", \"-e\", \"{}/healthy-{{node}}\"]\n\
         interval = \"20ms\"\ntimeout = \"15ms\"\nfall = 2\nrise = 2\nweight = 20\n",
        dir.display()
    ));
    c.start_all();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .expect("node 3 leads at first");
    std::fs::remove_file(dir.join("healthy-3")).unwrap();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&2))
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log(3)));
    let m = c.metrics(3).expect("metrics");
    assert_eq!(
        counter_sum(&m, "electd_priority_penalty", &[("algorithm", "bully")]),
        20.0
    );
    assert_eq!(
        counter_sum(&m, "electd_fault", &[("algorithm", "bully")]),
        0.0,
        "a weighted check is no FAULT"
    );
    assert_eq!(c.ineligible(3, "bully"), Some(vec![]));
    std::fs::write(dir.join("healthy-3"), "").unwrap();
    c.wait_agreement(DEADLINE, |l| l.get("bully") == Some(&3))
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log(3)));
}
