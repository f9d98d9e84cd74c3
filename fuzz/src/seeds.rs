//! Write the seed corpus: `cargo run --bin seeds -- corpus/datagram` (from fuzz/).
fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus/datagram".into());
    std::fs::create_dir_all(&dir)?;
    for (name, bytes) in electd_fuzz::seeds() {
        std::fs::write(std::path::Path::new(&dir).join(name), bytes)?;
    }
    Ok(())
}
