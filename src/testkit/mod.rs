//! Harnesses shared by `electd bench` and the integration tests; not a stable API
//! (hidden from the documentation). The bench is part of the binary, and integration
//! tests can only reach the library, so what both need lives here: [`procs`], a
//! cluster of real `electd run` processes on 127.0.0.1.

pub mod procs;
