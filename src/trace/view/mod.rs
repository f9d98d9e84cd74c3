//! `electd view`: traces ([`crate::trace`]) turned into one self-contained HTML page
//! (inline script and style, no network): a space-time diagram per algorithm, one lane
//! per node, on one shared time axis, with a scrubber, play/pause, speed, step to the
//! next event, counts per message type and the current leader per lane, and the fields
//! of a message on click.
//!
//! The page draws on `<canvas>` and holds every message in typed arrays; it stays
//! smooth up to [`MAX_MESSAGES`] messages in total (see `docs/trace.md` for the figures).
//! Past that, [`render`] refuses with a message saying so rather than write a page that
//! would freeze a browser.

use crate::trace::{Header, Record};
use crate::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Most messages (arrows) one page draws, over all its panels.
pub const MAX_MESSAGES: usize = 600_000;

/// Most records read from one trace file (a trace also holds timers, states, …).
pub const MAX_RECORDS: usize = 4 * MAX_MESSAGES;

const TEMPLATE: &str = include_str!("view.html");
const SCRIPT: &str = include_str!("view.js");

/// One trace as read from a file (or produced in memory).
pub struct Trace {
    /// Where it came from (shown in the page).
    pub label: String,
    /// Its header.
    pub header: Header,
    /// Its records, in file order.
    pub records: Vec<Record>,
}

/// A page cannot be made from these traces.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// Nothing to draw.
    #[error("no trace given")]
    NoTrace,
    /// More messages than a page draws smoothly (held, limit).
    #[error(
        "the traces hold {0} messages; a view draws at most {1} smoothly. \
         Record fewer nodes, a shorter run or fewer algorithms (view them in several pages)"
    )]
    TooManyMessages(usize, usize),
}

/// Message columns of one panel (parallel arrays, index = message).
#[derive(Default, Serialize)]
struct Msgs {
    /// Send time and arrival (or drop) time, ns.
    t0: Vec<u64>,
    t1: Vec<u64>,
    /// Lane indexes.
    from: Vec<u32>,
    to: Vec<u32>,
    /// Index into `types`.
    ty: Vec<u32>,
    /// 1: a retransmission.
    re: Vec<u8>,
    /// 0 delivered, 1 lost, 2 cut by a partition, 3 receiver down, 4 never arrived
    /// (still in flight when the trace ends).
    fate: Vec<u8>,
    token: Vec<u64>,
    seq: Vec<u64>,
    body: Vec<String>,
}

#[derive(Serialize)]
struct Panel {
    title: String,
    alg: String,
    source: String,
    clock: String,
    scenario: Option<String>,
    seed: Option<u64>,
    nodes: Vec<NodeId>,
    types: Vec<String>,
    msgs: Msgs,
    /// Election messages first sent (liveness and retransmissions excluded).
    election_messages: u64,
    /// (t, lane, leader id or 0 for none, term).
    leaders: Vec<(u64, u32, NodeId, u64)>,
    /// (t, lane, state).
    states: Vec<(u64, u32, String)>,
    /// (t, lane, timer).
    timers: Vec<(u64, u32, String)>,
    /// (lane, from, to): the node was down.
    down: Vec<(u32, u64, u64)>,
    /// (from, to, description): some links were cut.
    cuts: Vec<(u64, u64, String)>,
    /// The driver's own result, if the trace has one.
    end_leader: Option<NodeId>,
    end_messages: Option<u64>,
    truncated: u64,
    t_end: u64,
}

fn lane_of(nodes: &[NodeId]) -> HashMap<NodeId, u32> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i as u32))
        .collect()
}

/// Split one trace into panels, one per algorithm in it.
fn panels_of(tr: &Trace) -> Vec<Panel> {
    let lanes = lane_of(&tr.header.nodes);
    let lane = |n: NodeId| lanes.get(&n).copied();
    let mut order: Vec<String> = tr.header.algorithms.clone();
    for r in &tr.records {
        if let Record::Send(m) | Record::Retransmit(m) = r {
            if !order.iter().any(|a| *a == m.alg) {
                order.push(m.alg.to_string());
            }
        }
    }
    let t_end = tr.records.iter().map(Record::time).max().unwrap_or(0);
    let mut panels: Vec<Panel> = order
        .iter()
        .map(|alg| Panel {
            title: format!("{alg} · {}", tr.label),
            alg: alg.clone(),
            source: tr.header.source.clone(),
            clock: tr.header.clock.clone(),
            scenario: tr.header.scenario.clone(),
            seed: tr.header.seed,
            nodes: tr.header.nodes.clone(),
            types: Vec::new(),
            msgs: Msgs::default(),
            election_messages: 0,
            leaders: Vec::new(),
            states: Vec::new(),
            timers: Vec::new(),
            down: Vec::new(),
            cuts: Vec::new(),
            end_leader: None,
            end_messages: None,
            truncated: 0,
            t_end,
        })
        .collect();
    let pidx: HashMap<String, usize> = order
        .iter()
        .enumerate()
        .map(|(i, a)| (a.clone(), i))
        .collect();
    // Message id → (panel, index) to attach deliveries and drops.
    let mut by_id: HashMap<u64, (usize, usize)> = HashMap::new();
    let mut type_idx: Vec<HashMap<String, u32>> = vec![HashMap::new(); panels.len()];
    let mut down_since: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut down: Vec<(u32, u64, u64)> = Vec::new();
    let mut cut_since: Option<(u64, String)> = None;
    let mut cuts: Vec<(u64, u64, String)> = Vec::new();
    let mut truncated = 0;
    for r in &tr.records {
        match r {
            Record::Send(m) | Record::Retransmit(m) => {
                let (Some(&p), Some(f), Some(t)) =
                    (pidx.get(m.alg.as_ref()), lane(m.from), lane(m.to))
                else {
                    continue;
                };
                let panel = &mut panels[p];
                let ty = *type_idx[p].entry(m.kind.to_string()).or_insert_with(|| {
                    panel.types.push(m.kind.to_string());
                    panel.types.len() as u32 - 1
                });
                let re = matches!(r, Record::Retransmit(_));
                if !re && m.kind != "heartbeat" && m.kind != "heartbeat_ack" {
                    panel.election_messages += 1;
                }
                let ms = &mut panel.msgs;
                by_id.insert(m.id, (p, ms.t0.len()));
                ms.t0.push(m.t);
                ms.t1.push(t_end.max(m.t));
                ms.from.push(f);
                ms.to.push(t);
                ms.ty.push(ty);
                ms.re.push(re as u8);
                ms.fate.push(4);
                ms.token.push(m.token);
                ms.seq.push(m.seq);
                ms.body.push(m.body.clone());
            }
            Record::Deliver { t, id, .. } | Record::Drop { t, id, .. } => {
                if let Some(&(p, i)) = by_id.get(id) {
                    let ms = &mut panels[p].msgs;
                    // A duplicated datagram arrives twice; the arrow ends at the first.
                    if ms.fate[i] == 4 {
                        ms.t1[i] = *t;
                        ms.fate[i] = match r {
                            Record::Deliver { .. } => 0,
                            Record::Drop { reason, .. } => match reason.as_ref() {
                                "loss" => 1,
                                "partition" => 2,
                                _ => 3,
                            },
                            _ => 4,
                        };
                    }
                }
            }
            Record::Timer {
                t,
                node,
                alg,
                timer,
            } => {
                if let (Some(&p), Some(l)) = (pidx.get(alg.as_ref()), lane(*node)) {
                    panels[p].timers.push((*t, l, timer.to_string()));
                }
            }
            Record::State {
                t,
                node,
                alg,
                state,
            } => {
                if let (Some(&p), Some(l)) = (pidx.get(alg.as_ref()), lane(*node)) {
                    panels[p].states.push((*t, l, state.to_string()));
                }
            }
            Record::Leader {
                t,
                node,
                alg,
                leader,
                term,
            } => {
                if let (Some(&p), Some(l)) = (pidx.get(alg.as_ref()), lane(*node)) {
                    panels[p].leaders.push((*t, l, leader.unwrap_or(0), *term));
                }
            }
            Record::Start { t, node, .. } => {
                if let (Some(s), Some(l)) = (down_since.remove(node), lane(*node)) {
                    down.push((l, s, *t));
                }
                // A restarted node knows no leader until it learns one.
                if let Some(l) = lane(*node) {
                    for p in panels.iter_mut() {
                        p.leaders.push((*t, l, 0, 0));
                    }
                }
            }
            Record::Crash { t, node } => {
                down_since.entry(*node).or_insert(*t);
            }
            Record::Partition { t, sides } => {
                let d = sides
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(" | ");
                if let Some((s, what)) = cut_since.take() {
                    cuts.push((s, *t, what));
                }
                cut_since = Some((*t, format!("partition {d}")));
            }
            Record::OneWay { t, from, to } => {
                if let Some((s, what)) = cut_since.take() {
                    cuts.push((s, *t, what));
                }
                cut_since = Some((*t, format!("one-way cut {from:?} → {to:?}")));
            }
            Record::Heal { t } => {
                if let Some((s, what)) = cut_since.take() {
                    cuts.push((s, *t, what));
                }
            }
            Record::End {
                alg,
                leader,
                messages,
                ..
            } => {
                if let Some(&p) = pidx.get(alg.as_ref()) {
                    panels[p].end_leader = *leader;
                    panels[p].end_messages = Some(*messages);
                }
            }
            Record::Truncated { dropped, .. } => truncated += dropped,
            Record::Ack { .. } | Record::Net { .. } => {}
        }
    }
    // Still down when the trace ends: open-ended.
    for (node, s) in down_since {
        if let Some(l) = lane(node) {
            down.push((l, s, u64::MAX));
        }
    }
    if let Some((s, what)) = cut_since {
        cuts.push((s, t_end, what));
    }
    for p in panels.iter_mut() {
        p.down = down.clone();
        p.cuts = cuts.clone();
        p.truncated = truncated;
    }
    panels
}

/// The HTML page for `traces` (panels in the order given, one per algorithm of each).
pub fn render(traces: &[Trace]) -> Result<String, ViewError> {
    render_limited(traces, MAX_MESSAGES)
}

fn render_limited(traces: &[Trace], max_messages: usize) -> Result<String, ViewError> {
    if traces.is_empty() {
        return Err(ViewError::NoTrace);
    }
    let messages: usize = traces
        .iter()
        .map(|t| {
            t.records
                .iter()
                .filter(|r| matches!(r, Record::Send(_) | Record::Retransmit(_)))
                .count()
        })
        .sum();
    if messages > max_messages {
        return Err(ViewError::TooManyMessages(messages, max_messages));
    }
    let panels: Vec<Panel> = traces.iter().flat_map(panels_of).collect();
    let data = serde_json::to_string(&panels).unwrap_or_else(|_| "[]".into());
    // Inside <script type="application/json"> only "</" could end the element early.
    let data = data.replace("</", "<\\/");
    Ok(TEMPLATE
        .replacen("/*DATA*/", &data, 1)
        .replacen("/*SCRIPT*/", SCRIPT, 1)
        .replacen("/*MAX*/", &MAX_MESSAGES.to_string(), 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::AlgorithmKind;
    use crate::sim::runner::{simulate_traced, SimulateParams};
    use crate::sim::scenario::Scenario;

    #[test]
    fn panel_holds_every_message_of_the_trace() {
        let mut p = SimulateParams::new(AlgorithmKind::Bully, 5);
        p.scenario = Scenario::LeaderCrash;
        let (report, header, records) = simulate_traced(&p, crate::trace::DEFAULT_LIMIT).unwrap();
        let sends = records
            .iter()
            .filter(|r| matches!(r, Record::Send(_) | Record::Retransmit(_)))
            .count();
        let panels = panels_of(&Trace {
            label: "t".into(),
            header,
            records,
        });
        assert_eq!(panels.len(), 1);
        let panel = &panels[0];
        assert_eq!(panel.msgs.t0.len(), sends);
        assert_eq!(panel.election_messages, report.messages.total);
        assert_eq!(panel.end_leader, report.leader);
        // The crashed leader is shaded from its crash to the end.
        assert_eq!(panel.down.len(), 1);
        assert_eq!(panel.nodes[panel.down[0].0 as usize], 5);
        // Every message arrived, or was dropped because its receiver was down.
        assert!(panel.msgs.fate.iter().all(|&f| f == 0 || f == 3));
        let html = render(&[Trace {
            label: "t".into(),
            header: Header::new("simulate", "virtual", vec![], vec![1]),
            records: vec![],
        }])
        .unwrap();
        assert!(!html.contains("/*DATA*/") && !html.contains("/*SCRIPT*/"));
        let one = |records| Trace {
            label: "t".into(),
            header: Header::new("simulate", "virtual", vec![], vec![1, 2]),
            records,
        };
        let (_, _, records) = simulate_traced(&p, crate::trace::DEFAULT_LIMIT).unwrap();
        let err = render_limited(&[one(records)], 10).unwrap_err();
        assert!(matches!(err, ViewError::TooManyMessages(n, 10) if n == sends));
        assert!(err.to_string().contains("at most 10"));
        assert!(matches!(render(&[]), Err(ViewError::NoTrace)));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
