//! Execution traces: every send, retransmission, delivery, drop, timer, state change
//! and leader change of a run, one JSON object per line (format `electd-trace`,
//! version 1, documented in `docs/trace.md`).
//!
//! The simulator records them in virtual time ([`crate::sim::Sim::set_trace`]); `electd
//! demo` records them on one monotonic clock shared by all its nodes. `electd view`
//! reads them back ([`read`]) and draws them.

pub mod view;

use crate::contract::message::Message;
use crate::node::{Datagram, Time};
use crate::NodeId;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};

/// The `format` of the header line.
pub(crate) const FORMAT: &str = "electd-trace";
/// The version this build writes and reads.
pub(crate) const VERSION: u32 = 1;

/// A recorder stops after this many records (and says how many it left out).
pub const DEFAULT_LIMIT: usize = 5_000_000;

type Name = Cow<'static, str>;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`]; readers refuse newer ones.
    pub version: u32,
    /// `simulate` or `demo`.
    pub source: String,
    /// `virtual` (simulator) or `monotonic` (one clock for every node of a demo).
    pub clock: String,
    /// Algorithm names (as on the command line) that appear in the trace.
    pub algorithms: Vec<String>,
    /// Node ids, in ring order.
    pub nodes: Vec<NodeId>,
    /// The simulator's scenario, when it was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The simulator's seed: the run replays from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Header {
    /// The header of a trace recorded by `source` on `clock` (no scenario or seed).
    pub fn new(source: &str, clock: &str, algorithms: Vec<String>, nodes: Vec<NodeId>) -> Self {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            source: source.into(),
            clock: clock.into(),
            algorithms,
            nodes,
            scenario: None,
            seed: None,
        }
    }
}

/// One event. `t` is nanoseconds since the start of the run on the trace's clock; the
/// other fields are named in each variant's documentation (docs/trace.md is the
/// format's reference).
#[allow(missing_docs)] // the fields are the format's, documented per variant above them
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Record {
    /// A message put on the network for the first time. `id` names this datagram in
    /// `deliver` and `drop`; `token` is the number that orders the message's election
    /// (Bully/ring epoch, LCR/HS round, Raft term); `body` shows every field.
    Send(Msg),
    /// The reliable link sent a message again (same `seq`), not acked in time.
    Retransmit(Msg),
    /// A pure link acknowledgement of sequence `ack` from `from` to `to` (no body; not
    /// drawn, not an election message).
    Ack {
        t: u64,
        from: NodeId,
        to: NodeId,
        ack: u64,
    },
    /// Datagram `id` reached a live `to` and was handed to it.
    Deliver { t: u64, id: u64, to: NodeId },
    /// Datagram `id` was lost: `loss` (random loss), `partition` (a cut link), `dead`
    /// (the receiver was down when it arrived).
    Drop { t: u64, id: u64, reason: Name },
    /// A timer of `alg` fired at `node` (`answer`, `election`, `failure_detector`, …).
    Timer {
        t: u64,
        node: NodeId,
        alg: Name,
        timer: Name,
    },
    /// `node`'s state in `alg` changed (the algorithm's own state name).
    State {
        t: u64,
        node: NodeId,
        alg: Name,
        state: Name,
    },
    /// `node` now believes `leader` leads `alg` (`null`: no leader) in `term`.
    Leader {
        t: u64,
        node: NodeId,
        alg: Name,
        leader: Option<NodeId>,
        term: u64,
    },
    /// `node` started (or restarted with a new `incarnation`).
    Start {
        t: u64,
        node: NodeId,
        incarnation: u64,
    },
    /// `node` crashed (or was taken down): it neither sends nor receives.
    Crash { t: u64, node: NodeId },
    /// Every link between different sides is cut, both ways.
    Partition { t: u64, sides: Vec<Vec<NodeId>> },
    /// Links from every `from` to every `to` are cut (one direction).
    OneWay {
        t: u64,
        from: Vec<NodeId>,
        to: Vec<NodeId>,
    },
    /// Every cut removed.
    Heal { t: u64 },
    /// The network's random faults changed: the probabilities of `loss`, `duplicate`
    /// and `reorder` from now on.
    Net {
        t: u64,
        loss: f64,
        duplicate: f64,
        reorder: f64,
    },
    /// The run's outcome for `alg` as its driver reported it: the agreed leader and the
    /// election messages it counted.
    End {
        t: u64,
        alg: Name,
        leader: Option<NodeId>,
        messages: u64,
    },
    /// The recorder reached its limit and left out `dropped` later records.
    Truncated { t: u64, dropped: u64 },
}

/// A message on the network (see [`Record::Send`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Msg {
    /// When it left, in nanoseconds since the start.
    pub t: u64,
    /// This datagram's id in the trace (its `deliver` or `drop` names it).
    pub id: u64,
    /// The algorithm (group) it belongs to.
    pub alg: Name,
    /// Sender.
    pub from: NodeId,
    /// Receiver.
    pub to: NodeId,
    /// The message type (`election`, `ok`, `request_vote`, …).
    #[serde(rename = "type")]
    pub kind: Name,
    /// The number that orders its election ([`token`]).
    pub token: u64,
    /// Link sequence (0: unreliable, never retransmitted).
    pub seq: u64,
    /// The sender's incarnation.
    pub incarnation: u64,
    /// Every field of the message, as text.
    pub body: String,
}

impl Record {
    /// Its `t`.
    pub(crate) fn time(&self) -> u64 {
        match self {
            Record::Send(m) | Record::Retransmit(m) => m.t,
            Record::Ack { t, .. }
            | Record::Deliver { t, .. }
            | Record::Drop { t, .. }
            | Record::Timer { t, .. }
            | Record::State { t, .. }
            | Record::Leader { t, .. }
            | Record::Start { t, .. }
            | Record::Crash { t, .. }
            | Record::Partition { t, .. }
            | Record::OneWay { t, .. }
            | Record::Heal { t }
            | Record::Net { t, .. }
            | Record::End { t, .. }
            | Record::Truncated { t, .. } => *t,
        }
    }
}

/// The number that orders the election a message belongs to: its term, epoch or
/// round (`node::msg_term`, the one list of them), and for an OK, which carries none,
/// the sequence of the election it answers.
pub(crate) fn token(m: &Message) -> u64 {
    match m {
        Message::Ok { tag, .. } => tag.seq,
        m => crate::node::msg_term(m),
    }
}

/// Nanoseconds of a driver time.
pub(crate) fn ns(t: Time) -> u64 {
    t.as_nanos().min(u64::MAX as u128) as u64
}

/// Collects records while a run goes; cheap enough for the simulator's hot path
/// (the simulator holds none when tracing is off).
#[derive(Debug)]
pub struct Recorder {
    records: Vec<Record>,
    limit: usize,
    dropped: u64,
    next_id: u64,
    /// Reliable datagrams seen: (from, incarnation, to, seq), to tell retransmissions.
    seen: HashSet<(NodeId, u64, NodeId, u64)>,
    /// Last state recorded per (node, algorithm).
    states: HashMap<(NodeId, &'static str), &'static str>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new(DEFAULT_LIMIT)
    }
}

impl Recorder {
    /// A recorder that keeps at most `limit` records.
    pub fn new(limit: usize) -> Self {
        Recorder {
            records: Vec::new(),
            limit,
            dropped: 0,
            next_id: 0,
            seen: HashSet::new(),
            states: HashMap::new(),
        }
    }

    /// Keep `r`, unless the limit is reached (then count it as left out).
    pub(crate) fn push(&mut self, r: Record) {
        if self.records.len() < self.limit {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }

    /// Record datagram `d` leaving `from` for `to` at `t`. Returns the id its
    /// delivery or drop is recorded under (0: a pure ack, or the limit is reached; not
    /// followed).
    pub(crate) fn transmit(&mut self, t: Time, from: NodeId, to: NodeId, d: &Datagram) -> u64 {
        let t = ns(t);
        let (Some(group), Some(body)) = (d.group, d.body.as_ref()) else {
            self.push(Record::Ack {
                t,
                from,
                to,
                ack: d.ack,
            });
            return 0;
        };
        if self.records.len() >= self.limit {
            self.dropped += 1;
            return 0;
        }
        self.next_id += 1;
        let first = d.seq == 0 || self.seen.insert((from, d.incarnation, to, d.seq));
        let m = Msg {
            t,
            id: self.next_id,
            alg: Cow::Borrowed(group.as_str()),
            from,
            to,
            kind: Cow::Borrowed(body.kind().as_str()),
            token: token(body),
            seq: d.seq,
            incarnation: d.incarnation,
            body: format!("{body:?}"),
        };
        self.push(if first {
            Record::Send(m)
        } else {
            Record::Retransmit(m)
        });
        self.next_id
    }

    /// Record `node`'s state in `alg` if it differs from the last one recorded.
    pub(crate) fn state(&mut self, t: Time, node: NodeId, alg: &'static str, state: &'static str) {
        if self.states.insert((node, alg), state) != Some(state) {
            self.push(Record::State {
                t: ns(t),
                node,
                alg: Cow::Borrowed(alg),
                state: Cow::Borrowed(state),
            });
        }
    }

    /// Forget the states of `node` (it restarts from scratch).
    pub(crate) fn forget(&mut self, node: NodeId) {
        self.states.retain(|k, _| k.0 != node);
    }

    /// The records so far, with a [`Record::Truncated`] at the end if any were left out.
    pub fn finish(mut self) -> Vec<Record> {
        if self.dropped > 0 {
            let t = self.records.last().map(Record::time).unwrap_or(0);
            self.records.push(Record::Truncated {
                t,
                dropped: self.dropped,
            });
        }
        self.records
    }
}

/// Key that matches a received datagram to its send: (from, to, incarnation, link
/// sequence, algorithm, message type).
type Flight = (NodeId, NodeId, u64, u64, &'static str, &'static str);

/// A recorder shared by every node of one process (`electd demo`), on one monotonic
/// clock: each node's driver reports what it sends, receives, fires and decides, and
/// deliveries are matched to their sends by link header (first in, first out).
#[derive(Debug)]
pub struct SharedRecorder {
    origin: std::time::Instant,
    inner: std::sync::Mutex<SharedInner>,
}

#[derive(Debug)]
struct SharedInner {
    rec: Recorder,
    pending: HashMap<Flight, std::collections::VecDeque<u64>>,
    down: HashSet<NodeId>,
}

fn flight(from: NodeId, to: NodeId, d: &Datagram) -> Option<Flight> {
    let (g, b) = (d.group?, d.body.as_ref()?);
    Some((
        from,
        to,
        d.incarnation,
        d.seq,
        g.as_str(),
        b.kind().as_str(),
    ))
}

impl SharedRecorder {
    /// A recorder of at most `limit` records whose clock starts now.
    pub fn new(limit: usize) -> Self {
        SharedRecorder {
            origin: std::time::Instant::now(),
            inner: std::sync::Mutex::new(SharedInner {
                rec: Recorder::new(limit),
                pending: HashMap::new(),
                down: HashSet::new(),
            }),
        }
    }

    /// The shared clock: time since the recorder was made.
    pub(crate) fn now(&self) -> Time {
        self.origin.elapsed()
    }

    fn with<R>(&self, f: impl FnOnce(&mut SharedInner, Time) -> R) -> R {
        let t = self.now();
        // A panic elsewhere while holding the lock leaves plain data behind: go on.
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g, t)
    }

    /// `from` put `d` on the wire for `to`. To a node that is down, the datagram is
    /// recorded as dropped at once (the node discards it).
    pub(crate) fn sent(&self, from: NodeId, to: NodeId, d: &Datagram) {
        self.with(|g, t| {
            let id = g.rec.transmit(t, from, to, d);
            if id == 0 {
                return;
            }
            if g.down.contains(&to) {
                g.rec.push(Record::Drop {
                    t: ns(t),
                    id,
                    reason: Cow::Borrowed("dead"),
                });
            } else if let Some(k) = flight(from, to, d) {
                g.pending.entry(k).or_default().push_back(id);
            }
        })
    }

    /// `to` accepted `d` (authenticated and decoded) and hands it to its node.
    pub(crate) fn received(&self, to: NodeId, d: &Datagram) {
        self.with(|g, t| {
            let Some(k) = flight(d.from, to, d) else {
                return;
            };
            let id = match g.pending.get_mut(&k) {
                Some(q) => {
                    let id = q.pop_front();
                    if q.is_empty() {
                        g.pending.remove(&k);
                    }
                    id
                }
                None => None,
            };
            if let Some(id) = id {
                g.rec.push(Record::Deliver { t: ns(t), id, to });
            }
        })
    }

    /// Timers `node` is about to fire.
    pub(crate) fn timers(
        &self,
        node: NodeId,
        due: &[(crate::contract::algorithm::AlgorithmKind, &'static str)],
    ) {
        if due.is_empty() {
            return;
        }
        self.with(|g, t| {
            for &(alg, timer) in due {
                g.rec.push(Record::Timer {
                    t: ns(t),
                    node,
                    alg: Cow::Borrowed(alg.as_str()),
                    timer: Cow::Borrowed(timer),
                });
            }
        })
    }

    /// What `node` decided in its last step: its state per algorithm and the leader
    /// changes among its events.
    pub(crate) fn decided(
        &self,
        node: NodeId,
        n: &crate::node::Node,
        events: &[crate::node::Event],
    ) {
        self.with(|g, t| {
            for e in events {
                if let crate::node::Event::LeaderChanged {
                    group,
                    leader,
                    term,
                    ..
                } = e
                {
                    g.rec.push(Record::Leader {
                        t: ns(t),
                        node,
                        alg: Cow::Borrowed(group.as_str()),
                        leader: *leader,
                        term: *term,
                    });
                }
            }
            for s in n.status() {
                g.rec.state(t, node, s.algorithm.as_str(), s.state);
            }
        })
    }

    /// `node` went down (paused: no traffic in or out). What was still on its way to
    /// it is recorded as dropped now: the node discards it.
    pub(crate) fn crash(&self, node: NodeId) {
        self.with(|g, t| {
            g.down.insert(node);
            g.rec.push(Record::Crash { t: ns(t), node });
            let lost: Vec<Flight> = g.pending.keys().filter(|k| k.1 == node).copied().collect();
            for k in lost {
                for id in g.pending.remove(&k).unwrap_or_default() {
                    g.rec.push(Record::Drop {
                        t: ns(t),
                        id,
                        reason: Cow::Borrowed("dead"),
                    });
                }
            }
        })
    }

    /// `node` (re)started with `incarnation`.
    pub(crate) fn start(&self, node: NodeId, incarnation: u64) {
        self.with(|g, t| {
            g.down.remove(&node);
            g.rec.forget(node);
            g.rec.push(Record::Start {
                t: ns(t),
                node,
                incarnation,
            });
        })
    }

    /// Hand over every record so far, in time order (nodes report from several
    /// threads); the recorder starts empty again.
    pub fn take(&self) -> Vec<Record> {
        let mut records = self.with(|g, _| {
            let limit = g.rec.limit;
            std::mem::replace(&mut g.rec, Recorder::new(limit)).finish()
        });
        records.sort_by_key(Record::time);
        records
    }
}

/// Write a header and records as JSON Lines.
pub fn write(mut w: impl Write, header: &Header, records: &[Record]) -> std::io::Result<()> {
    serde_json::to_writer(&mut w, header)?;
    w.write_all(b"\n")?;
    for r in records {
        serde_json::to_writer(&mut w, r)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// No header line.
    #[error("empty file: a trace starts with a header line")]
    Empty,
    /// The first line is not a header.
    #[error("line 1 is not an electd trace header: {0}")]
    Header(String),
    /// A header of another format.
    #[error("line 1: format {0:?} is not {FORMAT:?}")]
    Format(String),
    /// A newer version of the format.
    #[error(
        "line 1: trace version {0} is newer than this electd reads ({VERSION}); use a newer electd"
    )]
    Version(u32),
    /// A record that does not parse.
    #[error("line {line}: {msg}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// More records than a reader keeps.
    #[error("more than {0} records: {1}")]
    TooLarge(usize, &'static str),
}

/// Read a trace: the header and every record. Blank lines are skipped; any other line
/// that is not a record is an error naming the line (nothing is silently dropped).
/// Past `max_records` records the read stops with [`ReadError::TooLarge`].
pub fn read(
    r: impl BufRead,
    max_records: usize,
    too_large: &'static str,
) -> Result<(Header, Vec<Record>), ReadError> {
    let mut lines = r.lines();
    let first = loop {
        match lines.next() {
            None => return Err(ReadError::Empty),
            Some(l) => {
                let l = l?;
                if !l.trim().is_empty() {
                    break l;
                }
            }
        }
    };
    let v: serde_json::Value =
        serde_json::from_str(&first).map_err(|e| ReadError::Header(e.to_string()))?;
    match v.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(ReadError::Format(other.to_string())),
        None => return Err(ReadError::Header("no \"format\" field".into())),
    }
    if let Some(ver) = v.get("version").and_then(|f| f.as_u64()) {
        if ver > VERSION as u64 {
            return Err(ReadError::Version(ver.min(u32::MAX as u64) as u32));
        }
    }
    let header: Header = serde_json::from_value(v).map_err(|e| ReadError::Header(e.to_string()))?;
    check_header(&header).map_err(ReadError::Header)?;
    let mut check = RecordCheck::new(&header);
    let mut records = Vec::new();
    for (i, l) in lines.enumerate() {
        let l = l?;
        if l.trim().is_empty() {
            continue;
        }
        if records.len() >= max_records {
            return Err(ReadError::TooLarge(max_records, too_large));
        }
        let line = i + 2;
        // serde_json places the error in the one line it parsed ("at line 1 column
        // 18"): the column is kept, the file's line number is ours.
        let rec: Record = serde_json::from_str(&l).map_err(|e| {
            let text = e.to_string();
            let msg = match text.rfind(" at line ") {
                Some(at) => format!("{} (column {})", &text[..at], e.column()),
                None => text,
            };
            ReadError::Line { line, msg }
        })?;
        check
            .record(&rec)
            .map_err(|msg| ReadError::Line { line, msg })?;
        records.push(rec);
    }
    Ok((header, records))
}

/// The header describes lanes and groups a diagram can draw: at least one node, no
/// node twice, and known algorithms, each once.
fn check_header(h: &Header) -> Result<(), String> {
    if h.nodes.is_empty() {
        return Err("\"nodes\" is empty: a trace has at least one node".into());
    }
    let mut seen = HashSet::new();
    if let Some(n) = h.nodes.iter().find(|&&n| !seen.insert(n)) {
        return Err(format!("node {n} is listed twice in \"nodes\""));
    }
    let mut algs = HashSet::new();
    for a in &h.algorithms {
        if a.parse::<crate::contract::algorithm::AlgorithmKind>()
            .is_err()
        {
            return Err(format!("unknown algorithm {a:?} in \"algorithms\""));
        }
        if !algs.insert(a.as_str()) {
            return Err(format!("algorithm {a:?} is listed twice"));
        }
    }
    Ok(())
}

/// What every record must keep (docs/trace.md): time order, nodes among the header's
/// lanes, algorithms among its groups, and a delivery or drop of a datagram sent
/// before it.
struct RecordCheck<'h> {
    header: &'h Header,
    last: u64,
    sent: HashSet<u64>,
}

impl<'h> RecordCheck<'h> {
    fn new(header: &'h Header) -> Self {
        RecordCheck {
            header,
            last: 0,
            sent: HashSet::new(),
        }
    }

    fn record(&mut self, r: &Record) -> Result<(), String> {
        let t = r.time();
        if t < self.last {
            return Err(format!(
                "at t = {t} ns, before the record above it (t = {} ns): records are in time order",
                self.last
            ));
        }
        self.last = t;
        let node = |n: NodeId| {
            if self.header.nodes.contains(&n) {
                Ok(())
            } else {
                Err(format!("node {n} is not in the header's \"nodes\""))
            }
        };
        let alg = |a: &str| {
            if self.header.algorithms.iter().any(|h| h == a) {
                Ok(())
            } else {
                Err(format!(
                    "algorithm {a:?} is not in the header's \"algorithms\""
                ))
            }
        };
        match r {
            Record::Send(m) | Record::Retransmit(m) => {
                node(m.from)?;
                node(m.to)?;
                alg(&m.alg)?;
                self.sent.insert(m.id);
            }
            Record::Ack { from, to, .. } => {
                node(*from)?;
                node(*to)?;
            }
            Record::Deliver { id, to, .. } => {
                node(*to)?;
                if !self.sent.contains(id) {
                    return Err(format!("a delivery of datagram {id}, never sent before it"));
                }
            }
            Record::Drop { id, .. } => {
                if !self.sent.contains(id) {
                    return Err(format!("a drop of datagram {id}, never sent before it"));
                }
            }
            Record::Timer {
                node: n, alg: a, ..
            }
            | Record::State {
                node: n, alg: a, ..
            }
            | Record::Leader {
                node: n, alg: a, ..
            } => {
                node(*n)?;
                alg(a)?;
            }
            Record::Start { node: n, .. } | Record::Crash { node: n, .. } => node(*n)?,
            Record::Partition { sides, .. } => {
                for n in sides.iter().flatten() {
                    node(*n)?;
                }
            }
            Record::OneWay { from, to, .. } => {
                for n in from.iter().chain(to) {
                    node(*n)?;
                }
            }
            Record::End { alg: a, .. } => alg(a)?,
            Record::Heal { .. } | Record::Net { .. } | Record::Truncated { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::algorithm::AlgorithmKind;

    /// docs/trace.md's rules a reader holds a trace to: lanes and groups from the
    /// header, time order, a delivery only of a datagram sent before it. `view` drew
    /// traces that broke each of them.
    #[test]
    fn a_trace_that_breaks_the_format_is_refused_naming_the_line() {
        let head = r#"{"format":"electd-trace","version":1,"source":"simulate","clock":"virtual","algorithms":["bully"],"nodes":[1,2,3]}"#;
        let send = |t: u64, id: u64, from: u32, to: u32, alg: &str| {
            format!(
                r#"{{"ev":"send","t":{t},"id":{id},"alg":"{alg}","from":{from},"to":{to},"type":"election","token":1,"seq":1,"incarnation":1,"body":""}}"#
            )
        };
        let read_all = |text: String| read(text.as_bytes(), 1000, "test").map(|_| ());
        assert!(read_all(format!(
            "{head}\n{}\n{{\"ev\":\"deliver\",\"t\":7,\"id\":1,\"to\":2}}\n",
            send(5, 1, 1, 2, "bully")
        ))
        .is_ok());
        for (text, want) in [
            (
                format!("{head}\n{}\n", send(5, 1, 1, 99, "bully")),
                "node 99 is not in",
            ),
            (
                format!("{head}\n{}\n", send(5, 1, 1, 2, "paxos")),
                "\"paxos\" is not in",
            ),
            (
                format!(
                    "{head}\n{}\n{}\n",
                    send(50, 1, 1, 2, "bully"),
                    send(5, 2, 2, 1, "bully")
                ),
                "time order",
            ),
            (
                format!("{head}\n{{\"ev\":\"deliver\",\"t\":7,\"id\":4,\"to\":2}}\n"),
                "never sent",
            ),
            (head.replace("[1,2,3]", "[]"), "at least one node"),
            (head.replace("[1,2,3]", "[1,1,1]"), "node 1 is listed twice"),
            (
                head.replace("[\"bully\"]", "[\"paxos\"]"),
                "unknown algorithm",
            ),
        ] {
            let e = read_all(text.clone()).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?} for {text}");
        }
        // A record's error names its line.
        let e = read_all(format!("{head}\n\n{}\n", send(5, 1, 1, 99, "bully")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 3:"), "{e}");
        // A record that does not parse names the file's line and the column in it,
        // not serde's "at line 1" of the one line it saw.
        let e = read_all(format!("{head}\n{{\"ev\":\"frobnicate\",\"t\":1}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 2:") && e.contains("frobnicate"), "{e}");
        assert!(e.contains("(column 18)") && !e.contains("at line 1"), "{e}");
    }
    use crate::contract::message::ElectionTag;

    fn datagram(seq: u64, body: Option<Message>) -> Datagram {
        Datagram {
            from: 1,
            incarnation: 7,
            seq,
            ack: 0,
            group: body.as_ref().map(|_| AlgorithmKind::Bully),
            body,
        }
    }

    #[test]
    fn second_transmission_of_a_sequence_is_a_retransmission() {
        let mut r = Recorder::default();
        let m = Message::Election {
            tag: ElectionTag::default(),
            epoch: 3,
        };
        let a = r.transmit(Time::ZERO, 1, 2, &datagram(5, Some(m.clone())));
        let b = r.transmit(Time::from_millis(5), 1, 2, &datagram(5, Some(m.clone())));
        let c = r.transmit(Time::from_millis(5), 1, 3, &datagram(5, Some(m)));
        assert_ne!(a, b);
        let ack = r.transmit(Time::ZERO, 2, 1, &datagram(0, None));
        assert_eq!(ack, 0);
        let recs = r.finish();
        assert!(matches!(&recs[0], Record::Send(m) if m.token == 3 && m.id == a));
        assert!(matches!(&recs[1], Record::Retransmit(m) if m.id == b));
        assert!(matches!(&recs[2], Record::Send(m) if m.id == c && m.to == 3));
        assert!(matches!(&recs[3], Record::Ack { from: 2, .. }));
    }

    #[test]
    fn shared_recorder_matches_deliveries_and_drops_what_a_down_node_misses() {
        let r = SharedRecorder::new(100);
        let m = Message::Heartbeat { term: 1, leader: 1 };
        let d = datagram(0, Some(m));
        r.start(2, 1);
        r.sent(1, 2, &d);
        r.sent(1, 2, &d);
        r.received(2, &d);
        r.crash(2); // the second heartbeat was still on its way
        r.sent(1, 2, &d); // to a node that is down
        let recs = r.take();
        let ids: Vec<u64> = recs
            .iter()
            .filter_map(|x| match x {
                Record::Send(m) => Some(m.id),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 3);
        let delivered: Vec<u64> = recs
            .iter()
            .filter_map(|x| match x {
                Record::Deliver { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        let dropped: Vec<u64> = recs
            .iter()
            .filter_map(|x| match x {
                Record::Drop { id, reason, .. } if reason == "dead" => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(delivered, vec![ids[0]]);
        assert_eq!(dropped.len(), 2);
        assert!(dropped.contains(&ids[1]) && dropped.contains(&ids[2]));
        assert!(recs.windows(2).all(|w| w[0].time() <= w[1].time()));
        assert!(r.take().is_empty(), "take hands the records over");
    }

    #[test]
    fn round_trip_and_errors() {
        let mut r = Recorder::new(2);
        r.state(Time::ZERO, 1, "bully", "idle");
        r.state(Time::ZERO, 1, "bully", "idle");
        r.push(Record::Crash { t: 9, node: 1 });
        r.push(Record::Heal { t: 10 });
        let recs = r.finish();
        assert_eq!(recs.len(), 3, "limit 2, then the truncation marker");
        assert!(matches!(recs[2], Record::Truncated { dropped: 1, .. }));
        let h = Header::new("simulate", "virtual", vec!["bully".into()], vec![1, 2]);
        let mut buf = Vec::new();
        write(&mut buf, &h, &recs).unwrap();
        let (h2, back) = read(&buf[..], 10, "").unwrap();
        assert_eq!(h2, h);
        assert_eq!(back, recs);
        assert!(matches!(
            read(&buf[..], 1, "x"),
            Err(ReadError::TooLarge(1, "x"))
        ));

        let bad_line = format!(
            "{}\n{{\"ev\":\"nope\"}}\n",
            serde_json::to_string(&h).unwrap()
        );
        assert!(matches!(
            read(bad_line.as_bytes(), 10, ""),
            Err(ReadError::Line { line: 2, .. })
        ));
        let newer = serde_json::to_string(&Header {
            version: VERSION + 1,
            ..h.clone()
        })
        .unwrap();
        assert!(matches!(
            read(newer.as_bytes(), 10, ""),
            Err(ReadError::Version(v)) if v == VERSION + 1
        ));
        assert!(matches!(
            read(&b"{\"format\":\"other\"}\n"[..], 10, ""),
            Err(ReadError::Format(_))
        ));
        assert!(matches!(read(&b"\n\n"[..], 10, ""), Err(ReadError::Empty)));
        assert!(matches!(
            read(&b"not json"[..], 10, ""),
            Err(ReadError::Header(_))
        ));
    }
}
