//! The start shared by the node-level simulator tests: every node of `cfg` started
//! calling its election, the cluster settled (within 5 s of virtual time), then 300 ms
//! of quiet so that leases and heartbeats are under way.

use crate::sim::{Sim, SimConfig};
use std::time::Duration;

pub(super) fn settled(cfg: SimConfig, what: &str) -> Sim {
    let ids = cfg.ids.clone();
    let mut sim = Sim::new(cfg).expect("sim");
    for id in ids {
        sim.start(id, true).expect("start");
    }
    assert!(
        sim.run_until_settled(Duration::from_secs(5)),
        "{what}: startup"
    );
    sim.run_for(Duration::from_millis(300));
    sim
}
