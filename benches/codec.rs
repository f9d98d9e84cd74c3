//! Criterion benchmark of the wire codec: encode (protobuf + HMAC-SHA256 tag) and
//! decode (parse, canonical check, tag verification, validation) of the typical
//! datagrams `electd bench` reports on (the same samples: `src/bench/codec.rs`, part of
//! the binary, included here).
//!
//! `cargo bench --bench codec`

// criterion_group! defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
#[path = "../src/bench/codec.rs"]
// Its report-only parts and unit tests are unused here.
#[allow(dead_code, unused_imports, unreachable_pub)]
mod bench_codec;

use bench_codec::{codec, samples, HEADER};
use std::hint::black_box;

fn codec_benches(c: &mut Criterion) {
    for authenticated in [true, false] {
        let codec = codec(authenticated);
        let mode = if authenticated { "hmac" } else { "insecure" };
        let mut g = c.benchmark_group(format!("codec/{mode}"));
        for (name, d) in samples() {
            let bytes = codec.encode(&d, HEADER).expect("sample encodes");
            g.throughput(Throughput::Bytes(bytes.len() as u64));
            g.bench_function(format!("encode/{name}"), |b| {
                b.iter(|| codec.encode(black_box(&d), HEADER))
            });
            g.bench_function(format!("decode/{name}"), |b| {
                b.iter(|| codec.decode(black_box(&bytes)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, codec_benches);
criterion_main!(benches);
