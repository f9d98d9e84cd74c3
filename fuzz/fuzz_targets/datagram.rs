//! Datagram decode + authentication + replay window + handling by a Node; see
//! fuzz/src/lib.rs for the harness and its invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| electd_fuzz::run(data));
