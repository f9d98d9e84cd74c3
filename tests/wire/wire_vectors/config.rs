//! The CONFIG vectors of docs/wire.md §11 against the real codec: each ```` ```config-vector ````
//! block (body 32) is decoded and rendered as the ```` ```vector ```` ones are, goes
//! through a receiving node's gate, and must be accepted with the digest the block names
//! (and be what electd's CONFIG encoder produces) or dropped for the block's reason.
//! They are apart from the ```` ```vector ```` blocks because a CONFIG decodes to no
//! election datagram. The parent module's readers and constants are in scope.

use super::*;

#[test]
fn the_config_digest_vectors_hold_against_the_codec() {
    let vectors = config_vectors();
    let mut accepted = 0;
    let mut dropped = std::collections::BTreeSet::new();
    for v in &vectors {
        let name = v.get("name");
        let (bytes, me, k, env) = check_rendering(v);
        let verdict = gate(me).open_with_config(&bytes, None, NOW_US);
        let expect = v.get("expect");
        match (&verdict, expect) {
            (Ok((d, Some(digest))), "accept") => {
                accepted += 1;
                let want = u64::from_str_radix(v.get("digest").trim_start_matches("0x"), 16);
                assert_eq!(Ok(*digest), want, "{name}: digest");
                // Nothing for an election group: no group, no body, no ack.
                assert_eq!(
                    (d.group.is_none(), d.body.is_none(), d.ack),
                    (true, true, 0)
                );
                let codec = Codec::new(CLUSTER, &ROSTER, Some(Keyring::new(Key::new(k))));
                let header = Header {
                    to: env.receiver,
                    counter: env.counter,
                };
                let again = codec
                    .encode_config(d.from, d.incarnation, *digest, header)
                    .unwrap();
                assert_eq!(
                    hex(&again),
                    hex(&bytes),
                    "{name}: electd encodes it otherwise"
                );
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k).unwrap();
                mac.update(&without_tag(&bytes));
                assert_eq!(mac.finalize().into_bytes().to_vec(), env.tag, "{name}: tag");
                // An electd that does not know CONFIG (the plain decode) is handed no
                // election message either.
                let (plain, _) = codec.decode(&bytes).unwrap();
                assert_eq!(plain.body, None, "{name}");
            }
            (Err(e), want) if want.strip_prefix("drop ") == Some(e.reason()) => {
                dropped.insert(e.reason());
            }
            _ => panic!(
                "{name}: expected {expect}, got {:?}",
                verdict.map(|(_, c)| c).map_err(|e| e.reason())
            ),
        }
    }
    assert_eq!(accepted, 1, "one accepted CONFIG vector");
    assert_eq!(
        dropped,
        ["algorithm", "invalid_field"].into_iter().collect(),
        "the CONFIG rules each have a vector"
    );
}

/// The ```config-vector blocks of docs/wire.md §11, as they were made.
#[test]
#[ignore = "prints the config-vector blocks of docs/wire.md"]
fn print_config_vectors() {
    let k1 = Keyring::new(Key::new(key("k1")));
    let codec = Codec::new(CLUSTER, &ROSTER, Some(k1.clone()));
    let digest = 0x0123_4567_89ab_cdef;
    let good = codec
        .encode_config(5, INCARNATION, digest, Header { to: 1, counter: 3 })
        .unwrap();
    let sign = |env: proto::Envelope| resign(&k1, env);
    let print = |name: &str, bytes: &[u8], expect: &str, digest: Option<u64>| {
        print_vector_head("config-vector", name, &k1, 1, bytes);
        if let Some(d) = digest {
            println!("digest: {d:#018x}");
        }
        println!("expect: {expect}");
        println!("```\n");
    };
    print("config", &good, "accept", Some(digest));
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.algorithm = proto::Algorithm::Bully as i32;
    print("config-with-algorithm", &sign(env), "drop algorithm", None);
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.seq = 1;
    print("config-with-seq", &sign(env), "drop invalid_field", None);
    let mut env = proto::Envelope::decode(good.as_slice()).unwrap();
    env.body = Some(proto::envelope::Body::Config(proto::ConfigDigest {
        digest: 0,
    }));
    print("config-digest-zero", &sign(env), "drop invalid_field", None);
}
