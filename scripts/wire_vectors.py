#!/usr/bin/env python3
"""The test vectors of docs/wire.md §10, made from the document alone.

An implementation of docs/wire.md apart from electd: protobuf bytes written by hand
(keys, varints, fields in ascending number order, defaults left out, §3), key ids from
SHA-256 of the key (§4), tags from Python's hmac over the datagram with the tag field
cut out (§4). It shares no code with electd's codec (prost), so
`cargo test --test wire wire_vectors` checking its output against electd is a check of two
implementations against each other.

    python3 scripts/wire_vectors.py            # print every ```vector block
    python3 scripts/wire_vectors.py --check    # exit 1 if docs/wire.md's blocks differ

To add a vector: add an entry to VECTORS (the body as (oneof field name, {field:
value})), run with --check to see it is missing, paste the printed block into §10.
"""

import hashlib
import hmac
import pathlib
import re
import sys

CLUSTER = "prod"
INCARNATION = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in unix microseconds
NOW_US = INCARNATION + 1_000_000  # the receiver's clock
KEYS = {"k1": bytes(range(0x00, 0x20)), "k2": bytes(range(0x20, 0x40))}
ALGORITHMS = ["UNSPECIFIED", "BULLY", "IMPROVED_BULLY", "RING", "LCR", "HS", "RAFT"]

# proto/electd.proto, written out by hand: field name -> (number, type).
ELECTION_TAG = {"initiator": (1, "uint32"), "seq": (2, "uint64")}
BODIES = {
    "election": (10, {"tag": (1, ELECTION_TAG), "epoch": (2, "uint64")}),
    "ok": (11, {"responder": (1, "uint32"), "tag": (2, ELECTION_TAG)}),
    "coordinator": (12, {"leader": (1, "uint32"), "epoch": (2, "uint64"), "tag": (3, ELECTION_TAG)}),
    "you_are_coordinator": (13, {"tag": (1, ELECTION_TAG), "epoch": (2, "uint64")}),
    "ring_election": (14, {"initiator": (1, "uint32"), "ids": (2, "packed"), "epoch": (3, "uint64")}),
    "ring_coordinator": (15, {"initiator": (1, "uint32"), "leader": (2, "uint32"), "epoch": (3, "uint64")}),
    "lcr_election": (16, {"candidate": (1, "uint32"), "round": (2, "uint64")}),
    "lcr_elected": (17, {"leader": (1, "uint32"), "epoch": (2, "uint64")}),
    "probe": (18, {"candidate": (1, "uint32"), "phase": (2, "uint32"), "hops": (3, "uint32"),
                   "to_right": (4, "bool"), "round": (5, "uint64")}),
    "reply": (19, {"candidate": (1, "uint32"), "phase": (2, "uint32"), "to_right": (3, "bool"),
                   "round": (4, "uint64")}),
    "terminate": (20, {"leader": (1, "uint32"), "epoch": (2, "uint64")}),
    "request_vote": (21, {"term": (1, "uint64"), "pre_vote": (2, "bool"), "transfer": (3, "bool")}),
    "vote": (22, {"term": (1, "uint64"), "granted": (2, "bool"), "pre_vote": (3, "bool")}),
    "heartbeat": (23, {"term": (1, "uint64"), "leader": (2, "uint32")}),
    "heartbeat_ack": (24, {"term": (1, "uint64"), "leader": (2, "uint32")}),
    "resign": (25, {"epoch": (1, "uint64")}),
    "ack_only": (26, {}),
    "timeout_now": (29, {"term": (1, "uint64")}),
    "handoff": (30, {"epoch": (1, "uint64"), "to": (2, "uint32")}),
    "priority": (31, {"term": (1, "uint64"), "priority": (2, "uint32")}),
}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(number, wire_type):
    return varint(number << 3 | wire_type)


def length_delimited(number, payload):
    return key(number, 2) + varint(len(payload)) + payload


def message(schema, values):
    """Fields in ascending number order; scalars equal to their default left out; a
    present message field always written (§3)."""
    out = b""
    for name, (number, typ) in sorted(schema.items(), key=lambda kv: kv[1][0]):
        if name not in values:
            continue
        v = values[name]
        if isinstance(typ, dict):
            out += length_delimited(number, message(typ, v))
        elif typ == "packed":
            if v:
                out += length_delimited(number, b"".join(varint(i) for i in v))
        elif typ == "bool":
            if v:
                out += key(number, 0) + b"\x01"
        elif v:
            out += key(number, 0) + varint(v)
    return out


def envelope(v, tag=b"", key_id=0, prost_order=False):
    """The envelope of vector `v`, fields 1–9, the body and 27–28 in number order (or,
    `prost_order`, the body before 27 whatever its number: the encoding electd used
    to send for bodies 29–31)."""
    head = b""
    head += key(1, 0) + varint(1)
    head += length_delimited(2, v.get("cluster", CLUSTER).encode())
    head += key(3, 0) + varint(v["sender"])
    head += key(4, 0) + varint(v.get("incarnation", INCARNATION))
    for number, field in [(5, "seq"), (6, "ack")]:
        if v.get(field, 0):
            head += key(number, 0) + varint(v[field])
    algorithm = ALGORITHMS.index(v["algorithm"])
    if algorithm:
        head += key(7, 0) + varint(algorithm)
    if tag:
        head += length_delimited(8, tag)
    if key_id:
        head += key(9, 0) + varint(key_id)
    name, fields = v["body"]
    number, schema = BODIES[name]
    body = length_delimited(number, message(schema, fields))
    trailer = key(27, 0) + varint(v["counter"]) + key(28, 0) + varint(v["receiver"])
    if number < 27 or prost_order:
        return head + body + trailer
    return head + trailer + body


def key_id_of(k):
    return int.from_bytes(hashlib.sha256(k).digest()[:4], "big") or 1


def signed(v):
    k = KEYS[v["key"]]
    kid = key_id_of(k)
    prost_order = v.get("prost_order", False)
    tag = hmac.new(k, envelope(v, key_id=kid, prost_order=prost_order), hashlib.sha256).digest()
    if v.get("flip_tag"):
        tag = tag[:-1] + bytes([tag[-1] ^ 1])
    data = envelope(v, tag=tag, key_id=kid, prost_order=prost_order)
    if v.get("overlong_version"):
        assert data[:2] == b"\x08\x01"
        data = b"\x08\x81\x00" + data[2:]
    return data


def render(v):
    e = (f'version=1 cluster="{v.get("cluster", CLUSTER)}" sender={v["sender"]} '
         f'incarnation={v.get("incarnation", INCARNATION)} seq={v.get("seq", 0)} '
         f'ack={v.get("ack", 0)} algorithm=ALGORITHM_{v["algorithm"]} tag=32-bytes '
         f'key_id={key_id_of(KEYS[v["key"]]):#010x} counter={v["counter"]} '
         f'receiver={v["receiver"]}')
    name, fields = v["body"]
    _, schema = BODIES[name]
    parts = [name]
    for field, (_, typ) in sorted(schema.items(), key=lambda kv: kv[1][0]):
        val = fields.get(field)
        if isinstance(typ, dict):
            val = "absent" if val is None else \
                "{" + " ".join(f"{f}={val.get(f, 0)}" for f in typ) + "}"
        elif typ == "packed":
            val = "[" + ", ".join(str(i) for i in (val or [])) + "]"
        elif typ == "bool":
            val = "true" if val else "false"
        else:
            val = val or 0
        parts.append(f"{field}={val}")
    return e, " ".join(parts)


def block(v):
    data = signed(v)
    h = data.hex()
    lines = ["```vector", f'name: {v["name"]}', f'key: {v["key"]}',
             f'key_id: {key_id_of(KEYS[v["key"]]):#010x}', f'at: node {v["at"]}']
    if "after" in v:
        lines.append(f'after: {v["after"]}')
    chunks = [h[i:i + 64] for i in range(0, len(h), 64)]
    lines.append("hex: " + chunks[0])
    lines += ["     " + c for c in chunks[1:]]
    env, body = render(v)
    lines += [f"envelope: {env}", f"body: {body}", f'expect: {v["expect"]}', "```"]
    return "\n".join(lines)


TAG51 = {"initiator": 5, "seq": 1}
TAG2 = {"initiator": 2, "seq": 4097}  # incarnation · 2¹² + n in electd; any value is valid
COORD = dict(key="k1", at=1, sender=5, receiver=1, seq=1, counter=1, algorithm="BULLY",
             body=("coordinator", {"leader": 5, "epoch": 1, "tag": TAG51}))
ACK = dict(key="k1", at=5, sender=1, receiver=5, ack=1, counter=1, algorithm="UNSPECIFIED",
           body=("ack_only", {}))
HEARTBEAT = dict(key="k1", at=2, sender=5, receiver=2, counter=7, algorithm="RAFT",
                 body=("heartbeat", {"term": 3, "leader": 5}))


def vec(name, base=None, **kw):
    v = dict(base or {})
    v.update(kw, name=name)
    v.setdefault("expect", "accept")
    return v


def reliable(name, algorithm, sender, receiver, body):
    return vec(name, key="k1", at=receiver, sender=sender, receiver=receiver, seq=2,
               counter=3, algorithm=algorithm, body=body)


def liveness(name, algorithm, sender, receiver, body):
    return vec(name, key="k1", at=receiver, sender=sender, receiver=receiver, counter=4,
               algorithm=algorithm, body=body)


VECTORS = [
    vec("bully-coordinator", COORD),
    vec("ack-only", ACK),
    vec("raft-heartbeat", HEARTBEAT),
    vec("ring-election-with-ack", key="k1", at=3, sender=2, receiver=3, seq=4, ack=3,
        counter=9, algorithm="RING",
        body=("ring_election", {"initiator": 1, "ids": [1, 2], "epoch": 0})),
    # One of every body type, every field set (§7).
    reliable("bully-election", "BULLY", 2, 5, ("election", {"tag": TAG2, "epoch": 3})),
    reliable("bully-ok", "BULLY", 5, 2, ("ok", {"responder": 5, "tag": TAG2})),
    reliable("improved-bully-you-are-coordinator", "IMPROVED_BULLY", 2, 5,
             ("you_are_coordinator", {"tag": TAG2, "epoch": 3})),
    reliable("ring-election", "RING", 3, 4,
             ("ring_election", {"initiator": 2, "ids": [2, 3], "epoch": 6})),
    reliable("ring-coordinator", "RING", 1, 2,
             ("ring_coordinator", {"initiator": 1, "leader": 5, "epoch": 7})),
    reliable("lcr-election", "LCR", 4, 5, ("lcr_election", {"candidate": 4, "round": 2})),
    reliable("lcr-elected", "LCR", 5, 1, ("lcr_elected", {"leader": 5, "epoch": 2})),
    reliable("hs-probe", "HS", 3, 4, ("probe", {"candidate": 3, "phase": 2, "hops": 1,
                                                 "to_right": True, "round": 2})),
    reliable("hs-reply", "HS", 4, 3, ("reply", {"candidate": 3, "phase": 2,
                                                 "to_right": True, "round": 2})),
    reliable("hs-terminate", "HS", 5, 1, ("terminate", {"leader": 5, "epoch": 2})),
    reliable("raft-pre-vote", "RAFT", 2, 3,
             ("request_vote", {"term": 4, "pre_vote": True})),
    reliable("raft-request-vote-transfer", "RAFT", 2, 3,
             ("request_vote", {"term": 4, "transfer": True})),
    reliable("raft-vote", "RAFT", 3, 2,
             ("vote", {"term": 4, "granted": True, "pre_vote": True})),
    liveness("bully-heartbeat-ack", "BULLY", 2, 4, ("heartbeat_ack", {"term": 3, "leader": 5})),
    reliable("bully-resign", "BULLY", 5, 3, ("resign", {"epoch": 3})),
    reliable("raft-timeout-now", "RAFT", 5, 2, ("timeout_now", {"term": 3})),
    reliable("bully-handoff", "BULLY", 5, 4, ("handoff", {"epoch": 3, "to": 4})),
    liveness("bully-priority", "BULLY", 5, 3, ("priority", {"term": 3, "priority": 50})),
    # Drops.
    vec("replayed-coordinator", COORD, after="bully-coordinator", expect="drop replay"),
    vec("wrong-receiver", COORD, at=2, expect="drop receiver"),
    vec("bad-tag", COORD, flip_tag=True, expect="drop bad_tag"),
    vec("unknown-key", COORD, key="k2", expect="drop no_key"),
    vec("other-cluster", COORD, cluster="staging", expect="drop cluster"),
    vec("heartbeat-with-seq", HEARTBEAT, seq=1, expect="drop invalid_field"),
    vec("ack-only-with-algorithm", ACK, algorithm="BULLY", expect="drop algorithm"),
    vec("sender-not-in-roster", COORD, sender=9, expect="drop unknown_sender"),
    vec("future-incarnation", COORD, incarnation=NOW_US + 2 * 86_400 * 1_000_000,
        expect="drop future_incarnation"),
    vec("stale-incarnation", COORD, incarnation=INCARNATION - 1_000_000, counter=2,
        after="bully-coordinator, lcr-elected", expect="drop stale_incarnation"),
    vec("overlong-varint", COORD, overlong_version=True, expect="drop decode"),
    # TIMEOUT_NOW with its body before counter and receiver: not ascending order.
    vec("timeout-now-before-counter", key="k1", at=2, sender=5, receiver=2, seq=2, counter=3,
        algorithm="RAFT", body=("timeout_now", {"term": 3}), prost_order=True,
        expect="drop decode"),
    # A body of another group (§7).
    vec("election-under-raft", key="k1", at=5, sender=2, receiver=5, seq=2, counter=3,
        algorithm="RAFT", body=("election", {"tag": TAG2, "epoch": 3}),
        expect="drop algorithm"),
    vec("timeout-now-under-bully", key="k1", at=2, sender=5, receiver=2, seq=2, counter=3,
        algorithm="BULLY", body=("timeout_now", {"term": 3}), expect="drop algorithm"),
]


def main():
    blocks = [block(v) for v in VECTORS]
    if "--check" not in sys.argv:
        print("\n\n".join(blocks))
        return 0
    doc = pathlib.Path(__file__).resolve().parent.parent / "docs" / "wire.md"
    found = re.findall(r"```vector\n.*?\n```", doc.read_text(), flags=re.S)
    missing = [b for b in blocks if b not in found]
    extra = [b for b in found if b not in blocks]
    for b in missing:
        print("not in docs/wire.md (or different there):\n" + b + "\n")
    for b in extra:
        print("in docs/wire.md but not made here:\n" + b + "\n")
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
