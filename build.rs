//! Compiles `proto/electd.proto` with prost-build, parsing it with protox (pure Rust),
//! so building electd never needs `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const PROTO: &str = "proto/electd.proto";
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = protox::compile([PROTO], ["proto"])?;
    prost_build::Config::new()
        // Six groups' entries make BEATS the largest body by far: boxed, so that every
        // envelope is not that large (clippy::large_enum_variant).
        .boxed(".electd.v1.Envelope.body.beats")
        .compile_fds(descriptors)?;
    Ok(())
}
