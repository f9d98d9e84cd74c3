//! The test vectors of docs/wire.md against the real codec: every ```` ```vector ````
//! block of the document is decoded (the envelope with prost, the body with this
//! test's own reader of proto/electd.proto), rendered field by field as the document
//! describes it and compared with the block's `envelope:` and `body:` lines;
//! then it goes through a receiving node's gate ([`electd::security::gate::Gate`], which runs
//! `wire`, `keyring` and `replay`) and must be accepted or dropped for the reason the
//! block names. Accepted vectors must also be exactly what electd's own encoder
//! produces for the decoded datagram (canonical encoding, deterministic tag).
//!
//! The blocks are not electd's output: scripts/wire_vectors.py makes them from the
//! document alone (protobuf bytes written by hand, Python's `hmac`). Independently of
//! prost and of electd's keyring, this test also recomputes each vector's key id
//! (first four bytes of SHA-256 of the key, big-endian) and, for the accepted ones, the
//! HMAC-SHA256 tag over the datagram with the tag field's bytes cut out, and walks each
//! accepted datagram with a protobuf reader of its own driven by proto/electd.proto
//! (read as text here): fields in ascending order at every level, no default written,
//! and — across the vectors — every message and enum value of the schema present, every
//! field of every body set at least once. A new body type, or a new field, without a
//! vector fails here.
//!
//! Adding a vector: add it to `VECTORS` in scripts/wire_vectors.py, run it, paste the
//! printed block into docs/wire.md §10 (`python3 scripts/wire_vectors.py --check`
//! compares).
//!
//! The CONFIG vectors of §11 (```` ```config-vector ```` blocks) are checked by the child
//! module `config` (`tests/wire/wire_vectors/config.rs`) with the readers of this one.

use electd::proto;
use electd::security::gate::{Gate, GateConfig};
use electd::security::keyring::{Key, Keyring, KEY_LEN};
use electd::security::wire::{Codec, Header};
use electd::NodeId;
use hmac::{Hmac, Mac};
use prost::Message as _;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

const CLUSTER: &str = "prod";
const ROSTER: [NodeId; 5] = [1, 2, 3, 4, 5];
/// 2026-01-01T00:00:00Z in unix microseconds: the senders' incarnation.
const INCARNATION: u64 = 1_767_225_600_000_000;
/// The receiver's clock when the vectors arrive: one second later.
const NOW_US: u64 = INCARNATION + 1_000_000;

fn key_bytes(first: u8) -> [u8; KEY_LEN] {
    std::array::from_fn(|i| first + i as u8)
}

/// The two keys of the document: k1 (00 01 … 1f), the cluster's; k2 (20 21 … 3f), a
/// key the receiver does not have.
fn key(name: &str) -> [u8; KEY_LEN] {
    match name {
        "k1" => key_bytes(0x00),
        "k2" => key_bytes(0x20),
        other => panic!("unknown key {other}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// The document's rendering of an envelope (everything but the body), fields in
/// field-number order, every field shown (defaults included).
fn render_envelope(e: &proto::Envelope) -> String {
    let algorithm = proto::Algorithm::try_from(e.algorithm)
        .map(|a| a.as_str_name().to_string())
        .unwrap_or_else(|_| format!("{}", e.algorithm));
    format!(
        "version={} cluster={:?} sender={} incarnation={} seq={} ack={} algorithm={} \
         tag={} key_id={:#010x} counter={} receiver={}",
        e.version,
        e.cluster,
        e.sender,
        e.incarnation,
        e.seq,
        e.ack,
        algorithm,
        if e.tag.is_empty() {
            "none".to_string()
        } else {
            format!("{}-bytes", e.tag.len())
        },
        e.key_id,
        e.counter,
        e.receiver
    )
}

/// The document's rendering of a body, read from the datagram by this test's own
/// protobuf reader and proto/electd.proto: the oneof field's name, then every field of
/// its message in number order, defaults included (`0`, `false`, `[]`; a nested message
/// as `{field=value …}`, `absent` when missing; a repeated message as `[{…}, {…}]`). A new field of the schema shows up
/// here without a change to this test.
fn render_body(schema: &Schema, envelope: &[u8]) -> Result<String, String> {
    fn message(schema: &Schema, name: &str, bytes: &[u8]) -> Result<Vec<String>, String> {
        let fields = read_fields(bytes, false)?;
        let mut out = Vec::new();
        for f in &schema.messages[name] {
            let values: Vec<&Value> = fields
                .iter()
                .filter(|(n, _)| *n == f.number)
                .map(|(_, v)| v)
                .collect();
            let shown = match (f.ty.as_str(), values.first()) {
                (ty, Some(Value::Bytes(b))) if schema.is_message(ty) => {
                    format!("{{{}}}", message(schema, ty, b)?.join(" "))
                }
                (ty, None) if schema.is_message(ty) => "absent".into(),
                ("bool", v) => matches!(v, Some(Value::Varint(1))).to_string(),
                (ty, _)
                    if ty
                        .strip_prefix("repeated ")
                        .is_some_and(|t| schema.is_message(t)) =>
                {
                    // Each element its own length-delimited field, in order.
                    let t = &ty["repeated ".len()..];
                    let mut shown = Vec::new();
                    for v in &values {
                        let Value::Bytes(b) = v else {
                            return Err(format!("{name}.{}: not a message", f.name));
                        };
                        shown.push(format!("{{{}}}", message(schema, t, b)?.join(" ")));
                    }
                    format!("[{}]", shown.join(", "))
                }
                (ty, v) if ty.starts_with("repeated ") => {
                    let mut ids = Vec::new();
                    if let Some(Value::Bytes(mut b)) = v {
                        while !b.is_empty() {
                            ids.push(read_varint(&mut b, false)?.to_string());
                        }
                    }
                    format!("[{}]", ids.join(", "))
                }
                (_, Some(Value::Varint(n))) => n.to_string(),
                (_, Some(Value::Fixed64(n))) => format!("{n:#018x}"),
                (_, None) => "0".into(),
                (ty, Some(Value::Bytes(_))) => return Err(format!("{name}.{}: {ty}", f.name)),
            };
            out.push(format!("{}={shown}", f.name));
        }
        Ok(out)
    }
    let envelope_fields = &schema.messages["Envelope"];
    for (number, value) in read_fields(envelope, false)? {
        let Some(f) = envelope_fields
            .iter()
            .find(|f| f.number == number && f.oneof.is_some())
        else {
            continue;
        };
        let Value::Bytes(b) = value else {
            return Err(format!("body {} is not length-delimited", f.name));
        };
        let mut parts = vec![f.name.clone()];
        parts.extend(message(schema, &f.ty, b)?);
        return Ok(parts.join(" "));
    }
    Ok("absent".into())
}

/// One ```vector block.
#[derive(Debug, Default)]
struct Vector {
    fields: BTreeMap<String, String>,
}

impl Vector {
    fn get(&self, k: &str) -> &str {
        self.fields
            .get(k)
            .unwrap_or_else(|| panic!("vector {:?} has no {k}:", self.fields.get("name")))
    }
}

fn document_vectors() -> Vec<Vector> {
    blocks("```vector")
}

/// The ```config-vector blocks of docs/wire.md (same layout as ```vector, plus
/// `digest:` for the accepted ones).
fn config_vectors() -> Vec<Vector> {
    blocks("```config-vector")
}

/// docs/wire.md, as text.
fn wire_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/wire.md");
    std::fs::read_to_string(path).expect("docs/wire.md")
}

/// The blocks of docs/wire.md that open with the line `fence`.
fn blocks(fence: &str) -> Vec<Vector> {
    let text = wire_md();
    let mut out = Vec::new();
    let mut cur: Option<Vector> = None;
    let mut last_key = String::new();
    for line in text.lines() {
        match (&mut cur, line.trim_end()) {
            (None, l) if l == fence => cur = Some(Vector::default()),
            (Some(_), "```") => out.push(cur.take().unwrap()),
            (Some(v), l) => {
                if let Some((k, val)) = l.split_once(':').filter(|(k, _)| !k.starts_with(' ')) {
                    last_key = k.trim().to_string();
                    v.fields.insert(last_key.clone(), val.trim().to_string());
                } else {
                    // A continuation line (long hex).
                    let e = v.fields.entry(last_key.clone()).or_default();
                    e.push(' ');
                    e.push_str(l.trim());
                }
            }
            _ => {}
        }
    }
    assert!(cur.is_none(), "unterminated {fence} block");
    out
}

/// What every vector of a block states about its bytes: the key id derived from its key,
/// the envelope and the body as docs/wire.md renders them. Returns the bytes, the
/// receiving node, the key and the decoded envelope.
fn check_rendering(v: &Vector) -> (Vec<u8>, NodeId, [u8; KEY_LEN], proto::Envelope) {
    let name = v.get("name");
    let bytes = unhex(v.get("hex"));
    let k = key(v.get("key"));
    let kid = u32::from_str_radix(v.get("key_id").trim_start_matches("0x"), 16).unwrap();
    assert_eq!(kid, key_id(&k), "{name}: key_id");
    let env = proto::Envelope::decode(bytes.as_slice()).expect("protobuf");
    assert_eq!(render_envelope(&env), v.get("envelope"), "{name}: envelope");
    assert_eq!(
        render_body(&Schema::read(), &bytes).as_deref(),
        Ok(v.get("body")),
        "{name}: body"
    );
    let me: NodeId = v.get("at").trim_start_matches("node ").parse().unwrap();
    (bytes, me, k, env)
}

/// An edited envelope signed again with `keys` and encoded canonically (the generators'
/// bad vectors are good ones with one field changed).
fn resign(keys: &Keyring, mut env: proto::Envelope) -> Vec<u8> {
    env.tag.clear();
    env.key_id = keys.primary().id;
    let (_, t) = keys.sign(&electd::security::wire::canonical(env.clone()));
    env.tag = t;
    electd::security::wire::canonical(env)
}

/// The lines every generated vector starts with, in a `fence` block (docs/wire.md).
fn print_vector_head(fence: &str, name: &str, keys: &Keyring, at: NodeId, bytes: &[u8]) {
    println!("```{fence}");
    println!("name: {name}");
    println!("key: k1");
    println!("key_id: {:#010x}", keys.primary().id);
    println!("at: node {at}");
    let h = hex(bytes);
    for (i, chunk) in h.as_bytes().chunks(64).enumerate() {
        let chunk = std::str::from_utf8(chunk).unwrap();
        println!("{}{chunk}", if i == 0 { "hex: " } else { "     " });
    }
    let env = proto::Envelope::decode(bytes).unwrap();
    println!("envelope: {}", render_envelope(&env));
    println!("body: {}", render_body(&Schema::read(), bytes).unwrap());
}

fn gate(me: NodeId) -> Gate {
    Gate::new(GateConfig {
        me,
        cluster: CLUSTER.into(),
        roster: ROSTER.to_vec(),
        keys: Some(Keyring::new(Key::new(key("k1")))),
        sources: None,
        group: false,
    })
}

/// Key id as the document defines it, computed without electd's keyring.
fn key_id(k: &[u8; KEY_LEN]) -> u32 {
    let d = Sha256::digest(k);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]]).max(1)
}

/// Cut the tag field (number 8, wire type 2: byte 0x42, a one-byte length 0x20 and 32
/// bytes) out of a datagram: what the HMAC covers.
fn without_tag(bytes: &[u8]) -> Vec<u8> {
    let tag_value: Vec<u8> = proto::Envelope::decode(bytes).unwrap().tag;
    let mut needle = vec![0x42, tag_value.len() as u8];
    needle.extend_from_slice(&tag_value);
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the tag field is in the datagram");
    [&bytes[..at], &bytes[at + needle.len()..]].concat()
}

#[test]
fn the_documents_vectors_hold_against_the_codec() {
    let schema = Schema::read();
    let vectors = document_vectors();
    assert!(
        vectors.len() >= 10,
        "docs/wire.md has {} vectors",
        vectors.len()
    );
    let by_name: BTreeMap<&str, &Vector> = vectors.iter().map(|v| (v.get("name"), v)).collect();
    let mut accepted = 0;
    let mut reasons = std::collections::BTreeSet::new();
    for v in &vectors {
        let name = v.get("name");
        let bytes = unhex(v.get("hex"));
        let k = key(v.get("key"));
        // The key id the document states is the one derived from the key.
        let kid = u32::from_str_radix(v.get("key_id").trim_start_matches("0x"), 16).unwrap();
        assert_eq!(kid, key_id(&k), "{name}: key_id");
        assert_eq!(kid, Key::new(k).id, "{name}: electd derives another key id");

        // Field by field, as the document renders it.
        match proto::Envelope::decode(bytes.as_slice()) {
            Ok(env) => {
                assert_eq!(render_envelope(&env), v.get("envelope"), "{name}: envelope");
                let body = render_body(&schema, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(body, v.get("body"), "{name}: body");
            }
            Err(e) => assert_eq!(v.get("envelope"), "not protobuf", "{name}: {e}"),
        }

        // Through a receiving node's gate; `after:` vectors arrive first.
        let me: NodeId = v.get("at").trim_start_matches("node ").parse().unwrap();
        let mut g = gate(me);
        // `after: a, b`: those vectors arrive first, in that order.
        for before in v
            .fields
            .get("after")
            .into_iter()
            .flat_map(|a| a.split(", "))
        {
            let first = by_name[before];
            g.open(&unhex(first.get("hex")), None, NOW_US)
                .unwrap_or_else(|e| panic!("{name}: {before} first: {e}"));
        }
        let verdict = g.open(&bytes, None, NOW_US);
        let expect = v.get("expect");
        match (&verdict, expect) {
            (Ok(d), "accept") => {
                accepted += 1;
                // Canonical and deterministic: electd's encoder gives the same bytes.
                let env = proto::Envelope::decode(bytes.as_slice()).unwrap();
                let codec = Codec::new(CLUSTER, &ROSTER, Some(Keyring::new(Key::new(k))));
                let header = Header {
                    to: env.receiver,
                    counter: env.counter,
                };
                assert_eq!(
                    hex(&codec.encode(d, header).unwrap()),
                    hex(&bytes),
                    "{name}: electd encodes this datagram differently"
                );
                // The tag: HMAC-SHA256 with the key over the datagram minus its tag field.
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k).unwrap();
                mac.update(&without_tag(&bytes));
                assert_eq!(
                    mac.finalize().into_bytes().to_vec(),
                    env.tag,
                    "{name}: the tag is not the HMAC the document describes"
                );
            }
            (Err(e), want) if want.strip_prefix("drop ") == Some(e.reason()) => {
                reasons.insert(e.reason());
            }
            _ => panic!(
                "{name}: expected {expect}, got {:?}",
                verdict.map_err(|e| e.reason())
            ),
        }
    }
    assert!(accepted >= 4, "only {accepted} accepted vectors");
    assert!(reasons.len() >= 6, "drop reasons covered: {reasons:?}");
}

// ---------------------------------------------------------------------------------
// proto/electd.proto, read as text: the schema the vectors must cover.

/// One field of a message of the schema.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    number: u64,
    ty: String,
    /// The oneof it belongs to (the envelope's `body`), if any.
    oneof: Option<String>,
}

#[derive(Debug, Default)]
struct Schema {
    messages: BTreeMap<String, Vec<Field>>,
    /// Enum name → (value name, number).
    enums: BTreeMap<String, Vec<(String, u64)>>,
}

impl Schema {
    fn read() -> Schema {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/proto/electd.proto");
        let text = std::fs::read_to_string(path).expect("proto/electd.proto");
        let mut code = String::new();
        for line in text.lines() {
            let line = line.split("//").next().unwrap_or("");
            for c in line.chars() {
                if "{};=".contains(c) {
                    code.push(' ');
                    code.push(c);
                    code.push(' ');
                } else {
                    code.push(c);
                }
            }
            code.push('\n');
        }
        let tokens: Vec<&str> = code.split_whitespace().collect();
        let mut schema = Schema::default();
        let mut i = 0;
        // The top level: `syntax = …;`, `package …;`, `enum N { … }`, `message N { … }`.
        while i < tokens.len() {
            match tokens[i] {
                "enum" => {
                    let name = tokens[i + 1].to_string();
                    assert_eq!(tokens[i + 2], "{");
                    i += 3;
                    let mut values = Vec::new();
                    while tokens[i] != "}" {
                        // VALUE = N ;
                        assert_eq!((tokens[i + 1], tokens[i + 3]), ("=", ";"), "enum {name}");
                        let n = tokens[i + 2].parse().expect("enum value");
                        values.push((tokens[i].to_string(), n));
                        i += 4;
                    }
                    schema.enums.insert(name, values);
                    i += 1;
                }
                "message" => {
                    let name = tokens[i + 1].to_string();
                    assert_eq!(tokens[i + 2], "{");
                    i += 3;
                    let mut fields = Vec::new();
                    let mut oneof: Option<String> = None;
                    loop {
                        match tokens[i] {
                            "}" if oneof.is_some() => {
                                oneof = None;
                                i += 1;
                            }
                            "}" => break,
                            "oneof" => {
                                oneof = Some(tokens[i + 1].to_string());
                                assert_eq!(tokens[i + 2], "{");
                                i += 3;
                            }
                            _ => {
                                // [repeated] TYPE NAME = N ;
                                let repeated = tokens[i] == "repeated";
                                let at = i + usize::from(repeated);
                                assert_eq!(
                                    (tokens[at + 2], tokens[at + 4]),
                                    ("=", ";"),
                                    "message {name}: {:?}",
                                    &tokens[i..at + 5]
                                );
                                let ty = if repeated {
                                    format!("repeated {}", tokens[at])
                                } else {
                                    tokens[at].to_string()
                                };
                                fields.push(Field {
                                    name: tokens[at + 1].to_string(),
                                    number: tokens[at + 3].parse().expect("field number"),
                                    ty,
                                    oneof: oneof.clone(),
                                });
                                i = at + 5;
                            }
                        }
                    }
                    schema.messages.insert(name, fields);
                    i += 1;
                }
                _ => {
                    // `syntax = "proto3";`, `package electd.v1;`: up to the `;`.
                    while tokens[i] != ";" {
                        i += 1;
                    }
                    i += 1;
                }
            }
        }
        schema
    }

    fn is_message(&self, ty: &str) -> bool {
        self.messages.contains_key(ty)
    }
}

// ---------------------------------------------------------------------------------
// A protobuf reader of its own (not prost): keys, varints and length-delimited values.

/// A varint; `strict`: in its shortest form only (docs/wire.md §3).
fn read_varint(b: &mut &[u8], strict: bool) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().ok_or("truncated varint")?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            if strict && byte == 0 && shift > 0 {
                return Err("over-long varint".into());
            }
            return Ok(v);
        }
    }
    Err("varint over 10 bytes".into())
}

/// The fields of one message as written: (number, value), the value a varint or the
/// bytes of a length-delimited field.
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
}

fn read_fields(mut b: &[u8], strict: bool) -> Result<Vec<(u64, Value<'_>)>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = read_varint(&mut b, strict)?;
        let value = match key & 7 {
            0 => Value::Varint(read_varint(&mut b, strict)?),
            1 => {
                if b.len() < 8 {
                    return Err("fixed64 beyond the end".into());
                }
                let (v, rest) = b.split_at(8);
                b = rest;
                let mut le = [0u8; 8];
                le.copy_from_slice(v);
                Value::Fixed64(u64::from_le_bytes(le))
            }
            2 => {
                let n = usize::try_from(read_varint(&mut b, strict)?).map_err(|e| e.to_string())?;
                if n > b.len() {
                    return Err("length beyond the end".into());
                }
                let (v, rest) = b.split_at(n);
                b = rest;
                Value::Bytes(v)
            }
            w => return Err(format!("wire type {w}")),
        };
        out.push((key >> 3, value));
    }
    Ok(out)
}

/// What the vectors show of the schema: per message, the field numbers seen set (not
/// default) in some accepted vector; the enum values seen.
#[derive(Default)]
struct Seen {
    fields: BTreeMap<String, std::collections::BTreeSet<u64>>,
    enum_values: std::collections::BTreeSet<(String, u64)>,
}

/// Walk `bytes` as message `name` of `schema`: every field known, in ascending number
/// order, no scalar at its default (docs/wire.md §3); record what is set in `seen`.
fn walk(schema: &Schema, name: &str, bytes: &[u8], seen: &mut Seen) -> Result<(), String> {
    let fields = &schema.messages[name];
    let mut last = 0;
    let mut bodies = 0;
    for (number, value) in read_fields(bytes, true)? {
        let f = fields
            .iter()
            .find(|f| f.number == number)
            .ok_or_else(|| format!("{name}: unknown field {number}"))?;
        // A repeated message field is one field per element, one after another.
        let ty = f.ty.strip_prefix("repeated ").unwrap_or(&f.ty);
        let again = number == last && ty != f.ty && schema.is_message(ty);
        if number <= last && !again {
            return Err(format!("{name}: field {number} after field {last}"));
        }
        last = number;
        bodies += usize::from(f.oneof.is_some());
        seen.fields.entry(name.into()).or_default().insert(number);
        match value {
            Value::Varint(0) | Value::Fixed64(0) => {
                return Err(format!("{name}.{}: default written", f.name))
            }
            Value::Fixed64(_) => {}
            Value::Varint(v) => {
                if schema.enums.contains_key(&f.ty) {
                    seen.enum_values.insert((f.ty.clone(), v));
                }
            }
            Value::Bytes(b) if schema.is_message(ty) => walk(schema, ty, b, seen)?,
            Value::Bytes([]) => return Err(format!("{name}.{}: empty written", f.name)),
            Value::Bytes(_) => {}
        }
    }
    if bodies > 1 {
        return Err(format!("{name}: {bodies} members of one oneof"));
    }
    Ok(())
}

/// Every message of proto/electd.proto, every field of every body message and every
/// enum value shows up in an accepted vector of docs/wire.md, each in canonical form.
#[test]
fn every_type_and_field_of_the_schema_has_a_vector() {
    let schema = Schema::read();
    let envelope = &schema.messages["Envelope"];
    let bodies: Vec<&Field> = envelope.iter().filter(|f| f.oneof.is_some()).collect();
    assert!(!bodies.is_empty(), "no oneof read from the schema");
    let mut seen = Seen::default();
    for v in document_vectors()
        .into_iter()
        .chain(config_vectors())
        .chain(beats::beats_vectors())
    {
        let name = v.get("name");
        let bytes = unhex(v.get("hex"));
        let walked = walk(&schema, "Envelope", &bytes, &mut Seen::default());
        match v.get("expect") {
            "accept" => {
                walked.unwrap_or_else(|e| panic!("{name}: {e}"));
                walk(&schema, "Envelope", &bytes, &mut seen).unwrap();
            }
            // Not canonical to this reader either.
            "drop decode" => assert!(walked.is_err(), "{name} is canonical"),
            _ => {}
        }
    }
    // Every body of the oneof, in an accepted vector, with each of its fields set.
    let mut missing = Vec::new();
    for b in &bodies {
        if !seen.fields["Envelope"].contains(&b.number) {
            missing.push(format!("body {} ({})", b.name, b.number));
        }
    }
    // Every message reachable from the envelope, every field of it set somewhere.
    for (msg, fields) in &schema.messages {
        let got = seen.fields.get(msg);
        if got.is_none() && !fields.is_empty() {
            missing.push(format!("message {msg}"));
            continue;
        }
        for f in fields.iter().filter(|f| f.oneof.is_none()) {
            if !got.is_some_and(|g| g.contains(&f.number)) {
                missing.push(format!("{msg}.{} set", f.name));
            }
        }
    }
    // A message without fields (`Ack`) is reached as the type of a body.
    for (msg, fields) in &schema.messages {
        if fields.is_empty() && !bodies.iter().any(|b| &b.ty == msg) {
            missing.push(format!("message {msg} (no field, not a body)"));
        }
    }
    // Every value of every enum, UNSPECIFIED (0) included (written as absent: the
    // ack-only vectors).
    for (e, values) in &schema.enums {
        for (value, n) in values {
            let shown = if *n == 0 {
                document_vectors().iter().any(|v| {
                    v.get("expect") == "accept" && v.get("envelope").contains(value.as_str())
                })
            } else {
                seen.enum_values.contains(&(e.clone(), *n))
            };
            if !shown {
                missing.push(format!("{e}.{value}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/wire.md §10 has no accepted vector showing: {missing:#?}"
    );
}

/// Every `reason` of `electd_invalid_datagrams_total` (the list electd registers the
/// metric's series from) is a row of docs/wire.md §8, and every reason there is one.
#[test]
fn every_invalid_datagram_reason_is_documented() {
    let text = wire_md();
    let start = text.find("## 8. Drop reasons").expect("§8");
    let end = start + text[start..].find("\n## 9.").expect("§9");
    let mut documented = std::collections::BTreeSet::new();
    let rows: Vec<&str> = text[start..end]
        .lines()
        .filter(|l| l.starts_with("| "))
        .collect();
    let cells = |row: &str| -> Vec<String> { row.split('|').map(|c| c.trim().into()).collect() };
    // The table's `reason` column, found by its header.
    let column = cells(rows.first().expect("the §8 table"))
        .iter()
        .position(|c| c == "reason")
        .expect("a `reason` column");
    for row in &rows[1..] {
        for part in cells(row)
            .get(column)
            .map_or("", |c| c.as_str())
            .split([',', '/'])
        {
            if let Some(r) = part
                .trim()
                .strip_prefix('`')
                .and_then(|r| r.strip_suffix('`'))
            {
                documented.insert(r.to_string());
            }
        }
    }
    let code: std::collections::BTreeSet<String> = electd::daemon::metrics::invalid_reasons()
        .into_iter()
        .map(String::from)
        .collect();
    let undocumented: Vec<_> = code.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "reasons of electd_invalid_datagrams_total missing in docs/wire.md §8: {undocumented:?}"
    );
    let unknown: Vec<_> = documented.difference(&code).collect();
    assert!(
        unknown.is_empty(),
        "docs/wire.md §8 names reasons electd never counts: {unknown:?}"
    );
}

/// docs/wire.md §9 lays out the `bully-coordinator` vector byte by byte (the tag's
/// middle elided with `…`): the bytes it shows are the vector's, in place.
#[test]
fn the_byte_by_byte_listing_is_the_vector() {
    let text = wire_md();
    let start = text.find("## 9. One datagram").expect("§9");
    let listing = &text[start..];
    let listing = &listing[listing.find("```text\n").expect("listing") + 8..];
    let listing = &listing[..listing.find("```").expect("end of listing")];
    // The bytes before the elision and after it: each line's leading hex tokens (the
    // column up to the first double space; the field numbers follow it).
    let (mut before, mut after, mut elided) = (Vec::new(), Vec::new(), false);
    for line in listing.lines() {
        let column = line.trim_start().split("  ").next().unwrap_or("");
        for token in column.split_whitespace() {
            if token == "…" {
                elided = true;
            } else if token.len() == 2 && token.chars().all(|c| c.is_ascii_hexdigit()) {
                let b = u8::from_str_radix(token, 16).unwrap();
                if elided {
                    after.push(b);
                } else {
                    before.push(b);
                }
            } else {
                break;
            }
        }
    }
    let vectors = document_vectors();
    let v = vectors
        .iter()
        .find(|v| v.get("name") == "bully-coordinator")
        .expect("the bully-coordinator vector");
    let bytes = unhex(v.get("hex"));
    assert!(elided, "the listing elides the tag");
    assert_eq!(
        hex(&bytes[..before.len()]),
        hex(&before),
        "§9 before the `…`"
    );
    assert_eq!(
        hex(&bytes[bytes.len() - after.len()..]),
        hex(&after),
        "§9 after the `…`"
    );
    // What is elided is the middle of the 32-byte tag: 32 minus the 2 + 2 shown.
    assert_eq!(before.len() + 28 + after.len(), bytes.len(), "§9 length");
}

// CONFIG (body 32, docs/wire.md §11): its own blocks and checks.
mod beats;
mod config;
