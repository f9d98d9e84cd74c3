//! The program, the arrival times, and the kernel's selection on a real socket pair.

use super::program::*;
use super::*;

#[test]
fn the_program_selects_exactly_the_matching_prefixes() {
    let a = Pattern::new(b"\x08\x01heartbeat-a", &[true; 13]);
    // Bytes 4..7 ("-XY") are not compared.
    let mut mask = [true; 10];
    mask[4..7].fill(false);
    let b = Pattern::new(b"\x08\x01hb-XYZ-b", &mask);
    let prog = program(&[a, b]).unwrap();
    assert_eq!(run(&prog, b"\x08\x01heartbeat-a"), BATCHED);
    assert_eq!(run(&prog, b"\x08\x01heartbeat-a and more"), BATCHED);
    assert_eq!(run(&prog, b"\x08\x01heartbeat-b"), MAIN);
    assert_eq!(run(&prog, b"\x08\x01heartbeat-"), MAIN, "too short");
    assert_eq!(run(&prog, b"\x08\x01hb-XYZ-b"), BATCHED);
    assert_eq!(run(&prog, b"\x08\x01hb\xff\xfe\xfdZ-b!"), BATCHED);
    assert_eq!(run(&prog, b"\x08\x01hb\xff\xfe\xfd\xfc-b"), MAIN);
    assert_eq!(run(&prog, b"\x08\x01hb-XYZ-c"), MAIN);
    assert_eq!(run(&prog, b""), MAIN);
    assert_eq!(run(&program(&[]).unwrap(), b"\x08\x01heartbeat-a"), MAIN);
}

#[test]
fn every_single_byte_change_of_a_compared_byte_is_a_mismatch() {
    let prefix: Vec<u8> = (0..61u8).map(|i| i.wrapping_mul(37)).collect();
    let mut mask = vec![true; prefix.len()];
    mask[20..52].fill(false);
    let prog = program(&[Pattern::new(&prefix, &mask)]).unwrap();
    assert_eq!(run(&prog, &prefix), BATCHED);
    for i in 0..prefix.len() {
        for flip in [1u8, 0x80, 0xff] {
            let mut p = prefix.clone();
            p[i] ^= flip;
            let want = if mask[i] { MAIN } else { BATCHED };
            assert_eq!(run(&prog, &p), want, "byte {i} ^ {flip:#x}");
        }
    }
}

#[test]
fn a_pattern_beyond_a_jump_is_refused() {
    let long = vec![1u8; 600];
    let odd: Vec<bool> = (0..600).map(|i| i % 2 == 0).collect();
    assert!(matches!(
        program(&[Pattern::new(&long, &odd)]),
        Err(ProgramError::TooLong(_))
    ));
}

#[test]
fn arrival_takes_the_kernel_time_and_never_an_early_one() {
    let ms = Duration::from_millis;
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let cur = Drain {
        now: Duration::from_secs(500),
        wall,
    };
    let prev = Drain {
        now: cur.now - ms(90),
        wall: wall - ms(90),
    };
    let now = cur.now;
    // Arrived 40 ms ago: 40 ms before now.
    assert_eq!(arrival(Some(wall - ms(40)), cur, prev), now - ms(40));
    // Just before the previous drain (queued just after it).
    assert_eq!(arrival(Some(wall - ms(91)), cur, prev), now - ms(91));
    // Long before the previous drain: the wall clock moved; now.
    assert_eq!(arrival(Some(wall - ms(500)), cur, prev), now);
    // From the future, or none: now.
    assert_eq!(arrival(Some(wall + ms(5)), cur, prev), now);
    assert_eq!(arrival(None, cur, prev), now);
    // The wall clock jumped 50 ms ahead since the previous drain (an NTP step, a
    // VM resumed): a heartbeat of 10 ms ago looks 60 ms old; now, not 60 ms ago.
    let stepped = Drain {
        now: cur.now,
        wall: wall + ms(50),
    };
    assert_eq!(arrival(Some(wall - ms(10)), stepped, prev), now);
    // ... or back: now again.
    let back = Drain {
        now: cur.now,
        wall: wall - ms(50),
    };
    assert_eq!(arrival(Some(wall - ms(60)), back, prev), now);
    // Within the slack the stamps are used.
    let slewed = Drain {
        now: cur.now,
        wall: wall + ms(1),
    };
    assert_eq!(arrival(Some(wall - ms(9)), slewed, prev), now - ms(10));
}

mod wire {
    use super::super::program::run;
    use super::super::*;
    use crate::contract::algorithm::AlgorithmKind;
    use crate::contract::message::{ElectionTag, Message};
    use crate::contract::rng::Rng;
    use crate::node::Datagram;
    use crate::security::keyring::{Key, Keyring, KEY_LEN};
    use crate::security::wire::{Codec, Header};

    const L: u32 = 5;
    const INC: u64 = 1_764_000_000_123_456;
    const T: u64 = 7;
    const KIND: AlgorithmKind = AlgorithmKind::Bully;

    fn codecs() -> Vec<Codec> {
        let keys = Keyring::new(Key::new([9; KEY_LEN]));
        vec![
            Codec::new("prod-east", &[1, 2, 3, 4, 5], Some(keys)),
            Codec::new("prod-east", &[1, 2, 3, 4, 5], None),
        ]
    }

    fn datagram(from: u32, inc: u64, kind: AlgorithmKind, msg: Message) -> Datagram {
        Datagram {
            from,
            incarnation: inc,
            seq: 0,
            ack: 0,
            group: Some(kind),
            body: Some(msg),
        }
    }

    fn beat(term: u64) -> Message {
        Message::Heartbeat { term, leader: L }
    }

    fn prog(c: &Codec) -> Vec<Insn> {
        let (prefix, compare) = c.heartbeat_prefix(L, INC, KIND, T);
        program(&[Pattern::new(&prefix, &compare)]).unwrap()
    }

    /// The patterns of a BEATS from L to node 2 holding the heartbeats of `groups`.
    fn beats_prog(c: &Codec, groups: &[(AlgorithmKind, u64)]) -> Vec<Insn> {
        let patterns: Vec<Pattern> = (1..=BEATS_COUNTER_LENGTHS)
            .filter_map(|len| c.beats_prefix(L, INC, groups, 2, len))
            .map(|(p, m)| Pattern::new(&p, &m))
            .collect();
        assert_eq!(patterns.len(), BEATS_COUNTER_LENGTHS as usize);
        program(&patterns).unwrap()
    }

    #[test]
    fn a_beats_of_exactly_the_followed_groups_is_selected_at_every_counter_length() {
        let groups = [(AlgorithmKind::Bully, T), (AlgorithmKind::Ring, T + 1)];
        for c in codecs() {
            let prog = beats_prog(&c, &groups);
            let (b, r) = (beat(T), beat(T + 1));
            let held = [(AlgorithmKind::Bully, &b), (AlgorithmKind::Ring, &r)];
            let enc = |beats: &[(AlgorithmKind, &Message)], to, counter| {
                c.encode_beats(L, INC, beats, Header { to, counter })
                    .unwrap()
            };
            // Counters of one to five varint bytes, at both ends of each length.
            for counter in [
                1u64,
                127,
                128,
                16_383,
                16_384,
                (1 << 28) - 1,
                1 << 28,
                (1 << 35) - 1,
            ] {
                assert_eq!(
                    run(&prog, &enc(&held, 2, counter)),
                    BATCHED,
                    "counter {counter}"
                );
            }
            // Six varint bytes: beyond the patterns, read at once.
            assert_eq!(run(&prog, &enc(&held, 2, 1 << 35)), MAIN);
            // For another receiver, another term, another incarnation, one group more
            // or less, a priority advert beside: the main socket.
            assert_eq!(run(&prog, &enc(&held, 3, 9)), MAIN);
            let later = beat(T + 2);
            let other_term = [(AlgorithmKind::Bully, &b), (AlgorithmKind::Ring, &later)];
            assert_eq!(run(&prog, &enc(&other_term, 2, 9)), MAIN);
            let again = c
                .encode_beats(L, INC + 1, &held, Header { to: 2, counter: 9 })
                .unwrap();
            assert_eq!(run(&prog, &again), MAIN);
            let hs = beat(T);
            let more = [
                (AlgorithmKind::Bully, &b),
                (AlgorithmKind::Ring, &r),
                (AlgorithmKind::Hs, &hs),
            ];
            assert_eq!(run(&prog, &enc(&more, 2, 9)), MAIN);
            let prio = Message::Priority {
                term: T,
                priority: 3,
            };
            let advert = [
                (AlgorithmKind::Bully, &b),
                (AlgorithmKind::Bully, &prio),
                (AlgorithmKind::Ring, &r),
            ];
            assert_eq!(run(&prog, &enc(&advert, 2, 9)), MAIN);
            // A lone heartbeat of one of the groups does not match a BEATS pattern.
            let lone = c
                .encode(
                    &datagram(L, INC, KIND, b.clone()),
                    Header { to: 2, counter: 9 },
                )
                .unwrap();
            assert_eq!(run(&prog, &lone), MAIN);
        }
    }

    #[test]
    fn every_heartbeat_of_the_followed_leader_is_selected() {
        for c in codecs() {
            let p = prog(&c);
            for counter in [1, 127, 128, 300_000, u64::MAX / 3] {
                for to in [1, 2, 4, 200] {
                    let h = Header { to, counter };
                    let d = c.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
                    assert_eq!(run(&p, &d), BATCHED, "counter {counter} to {to}");
                }
            }
        }
    }

    /// A Raft leader's pattern for follower 3's answers at term T (leader field 0),
    /// and `[lease] require_quorum`'s (naming the leader L).
    #[test]
    fn a_followers_answers_of_the_term_are_selected_and_nothing_else() {
        const F: u32 = 3;
        for c in codecs() {
            for (kind, named) in [(AlgorithmKind::Raft, 0), (KIND, L)] {
                let (prefix, compare) = c.heartbeat_ack_prefix(F, INC, kind, T, named);
                let p = program(&[Pattern::new(&prefix, &compare)]).unwrap();
                let ack = |from, inc, kind, term, leader| {
                    datagram(from, inc, kind, Message::HeartbeatAck { term, leader })
                };
                for counter in [1, 127, 128, 300_000, u64::MAX / 3] {
                    let h = Header { to: L, counter };
                    let d = c.encode(&ack(F, INC, kind, T, named), h).unwrap();
                    assert_eq!(run(&p, &d), BATCHED, "{kind:?} counter {counter}");
                }
                let h = Header { to: L, counter: 9 };
                let mut others = vec![
                    // A follower ahead (the leader must step down at once), behind,
                    // another follower or incarnation, another group, another name.
                    ack(F, INC, kind, T + 1, named),
                    ack(F, INC, kind, T - 1, named),
                    ack(4, INC, kind, T, named),
                    ack(F, INC + 1, kind, T, named),
                    ack(F, INC, AlgorithmKind::Hs, T, named),
                    ack(F, INC, kind, T, if named == 0 { L } else { 0 }),
                    datagram(F, INC, kind, Message::Heartbeat { term: T, leader: F }),
                    datagram(F, INC, kind, Message::Resign { epoch: T }),
                ];
                let mut acked = ack(F, INC, kind, T, named);
                acked.ack = 9;
                others.push(acked);
                for d in &others {
                    let bytes = c.encode(d, h).unwrap();
                    assert_eq!(run(&p, &bytes), MAIN, "{d:?}");
                }
            }
        }
    }

    /// A Raft leader of 256 members: the answers' patterns are added while the
    /// program fits the kernel's limit, the kernel takes that program, and it selects
    /// the answers of the members it holds, in order, and no other's.
    #[test]
    fn a_leader_of_256_selects_the_answers_that_fit_and_the_kernel_takes_them() {
        let roster: Vec<u32> = (1..=256).collect();
        let keys = Keyring::new(Key::new([9; KEY_LEN]));
        let c = Codec::new("prod-east", &roster, Some(keys));
        let (kind, term, me) = (AlgorithmKind::Raft, 9, 256);
        let patterns_of = |f: u32| {
            let (prefix, compare) = c.heartbeat_ack_prefix(f, INC, kind, term, 0);
            Pattern::new(&prefix, &compare)
        };
        let mut patterns = vec![];
        let added = extend_within_limit(&mut patterns, (1..me).map(patterns_of));
        let prog = program(&patterns).unwrap();
        assert_eq!(prog.len(), program_len(&patterns));
        assert!(prog.len() <= MAX_PROGRAM, "{} instructions", prog.len());
        let next = patterns_of(added as u32 + 1);
        assert!(
            added < 255 && prog.len() + next.len() > MAX_PROGRAM,
            "stops at the first pattern that does not fit ({added} of 255)"
        );
        assert!(added >= 40, "only {added} members' answers fit");
        let h = Header {
            to: me,
            counter: 77,
        };
        for f in 1..me {
            let ack = datagram(f, INC, kind, Message::HeartbeatAck { term, leader: 0 });
            let want = if (f as usize) <= added { BATCHED } else { MAIN };
            assert_eq!(run(&prog, &c.encode(&ack, h).unwrap()), want, "member {f}");
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _in_rt = rt.enter();
        let (_main, hb) = bind_udp_pair("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let hb = hb.expect("a heartbeat socket: this kernel refused SO_ATTACH_REUSEPORT_CBPF");
        hb.select(&patterns)
            .expect("the kernel takes a program of MAX_PROGRAM instructions");
    }

    #[test]
    fn nothing_else_is_selected() {
        let h = Header { to: 1, counter: 42 };
        let tag = ElectionTag {
            initiator: L,
            seq: 3,
        };
        for c in codecs() {
            let p = prog(&c);
            let mut others = vec![
                datagram(L, INC, KIND, beat(T + 1)),
                datagram(L, INC, KIND, beat(T - 1)),
                datagram(L, INC, KIND, beat(0)),
                datagram(L, INC, KIND, Message::Heartbeat { term: T, leader: 4 }),
                datagram(4, INC, KIND, Message::Heartbeat { term: T, leader: L }),
                datagram(L, INC + 1, KIND, beat(T)),
                datagram(L, INC - 1, KIND, beat(T)),
                datagram(L, INC, AlgorithmKind::Raft, beat(T)),
                datagram(L, INC, AlgorithmKind::ImprovedBully, beat(T)),
                datagram(L, INC, KIND, Message::HeartbeatAck { term: T, leader: L }),
                datagram(L, INC, KIND, Message::Resign { epoch: T }),
                datagram(
                    L,
                    INC,
                    KIND,
                    Message::Priority {
                        term: T,
                        priority: 1,
                    },
                ),
                datagram(
                    L,
                    INC,
                    KIND,
                    Message::Coordinator {
                        leader: L,
                        epoch: T,
                        tag,
                    },
                ),
                datagram(L, INC, KIND, Message::Election { tag, epoch: T }),
            ];
            let mut acked = datagram(L, INC, KIND, beat(T));
            acked.ack = 9;
            others.push(acked);
            let mut reliable = datagram(L, INC, KIND, beat(T));
            reliable.seq = 9;
            others.push(reliable);
            others.push(Datagram {
                from: L,
                incarnation: INC,
                seq: 0,
                ack: 9,
                group: None,
                body: None,
            });
            for d in &others {
                let bytes = c.encode(d, h).unwrap();
                assert_eq!(run(&p, &bytes), MAIN, "{d:?}");
            }
            // Another cluster, another key.
            let other = Codec::new("prod-west", &[1, 2, 3, 4, 5], None);
            let b = other.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
            assert_eq!(run(&p, &b), MAIN);
            let rotated = Codec::new(
                "prod-east",
                &[1, 2, 3, 4, 5],
                Some(Keyring::new(Key::new([8; KEY_LEN]))),
            );
            let b = rotated.encode(&datagram(L, INC, KIND, beat(T)), h).unwrap();
            if c.is_authenticated() {
                assert_eq!(run(&p, &b), MAIN, "another key id");
            }
        }
    }

    /// Whatever the program selects and the codec accepts is that heartbeat: random
    /// corruptions of a real one, and random datagrams.
    #[test]
    fn a_selected_datagram_that_decodes_is_the_followed_heartbeat() {
        let mut rng = Rng::new(17);
        for c in codecs() {
            let p = prog(&c);
            let good = c
                .encode(
                    &datagram(L, INC, KIND, beat(T)),
                    Header { to: 1, counter: 5 },
                )
                .unwrap();
            let (mut selected, mut decoded) = (0, 0);
            for _ in 0..20_000 {
                let mut b = good.clone();
                match rng.below(3) {
                    0 => {
                        for _ in 0..=rng.below(3) {
                            let i = rng.below(b.len() as u64) as usize;
                            b[i] = rng.next_u64() as u8;
                        }
                    }
                    1 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
                    _ => {
                        let extra = rng.below(8) as usize;
                        b.extend((0..extra).map(|_| rng.next_u64() as u8));
                    }
                }
                if run(&p, &b) != BATCHED {
                    continue;
                }
                selected += 1;
                if let Ok((d, _)) = c.decode(&b) {
                    decoded += 1;
                    assert_eq!(
                        (d.from, d.incarnation, d.seq, d.ack, d.group, d.body),
                        (L, INC, 0, 0, Some(KIND), Some(beat(T)))
                    );
                }
            }
            // Corruptions of the tag or of the trailing fields stay selected.
            assert!(selected > 100, "{selected}");
            assert!(
                decoded > 0,
                "the untouched and the retagged-alike ones decode"
            );
        }
    }
}

/// The next datagram of the heartbeat socket, waiting for it up to 5 s.
async fn batched(hb: &HeartbeatSocket, buf: &mut [u8]) -> Batched {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(r) = hb.try_recv(buf) {
            return r.unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no datagram on the heartbeat socket within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test]
async fn the_kernel_sends_matching_datagrams_to_the_heartbeat_socket() {
    let (main, hb) = bind_udp_pair("127.0.0.1:0".parse().unwrap(), true).unwrap();
    let Some(hb) = hb else {
        panic!("this kernel refused SO_ATTACH_REUSEPORT_CBPF or SO_TIMESTAMPNS");
    };
    let to = main.local_addr().unwrap();
    // A second electd on the same address is refused, as without the pair.
    let again = bind_udp_pair(to, true).unwrap_err();
    assert_eq!(again.kind(), io::ErrorKind::AddrInUse);
    hb.select(&[Pattern::new(b"beat", &[true; 4])]).unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let before = SystemTime::now();
    for d in [&b"beat 1"[..], b"other", b"beat 2", b"bea"] {
        tx.send_to(d, to).unwrap();
    }
    // The main socket gets the two others, in order.
    let mut buf = [0u8; 64];
    for want in [&b"other"[..], b"bea"] {
        let (n, from) = tokio::time::timeout(Duration::from_secs(5), main.recv_from(&mut buf))
            .await
            .expect("a datagram on the main socket within 5 s")
            .unwrap();
        assert_eq!(&buf[..n], want);
        assert_eq!(from, tx.local_addr().unwrap());
    }
    for want in [&b"beat 1"[..], b"beat 2"] {
        let got = batched(&hb, &mut buf).await;
        assert_eq!(&buf[..got.len], want);
        assert_eq!(got.from, tx.local_addr().unwrap());
        let at = got.at.expect("a kernel timestamp");
        assert!(
            at >= before - Duration::from_millis(1),
            "stamped after the send"
        );
        assert!(at <= SystemTime::now());
    }
    assert!(hb.try_recv(&mut buf).is_none());
    // Nothing selected: everything to the main socket again.
    hb.select(&[]).unwrap();
    tx.send_to(b"beat 3", to).unwrap();
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), main.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"beat 3");
    assert!(hb.try_recv(&mut buf).is_none());
}
