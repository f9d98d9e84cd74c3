//! `electd keygen [--out FILE]`: a fresh cluster key (32 random bytes, hex).

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Write the key here (mode 0600; an existing file is never overwritten).
    /// Without it the key file's text is printed.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

pub fn run(args: KeygenArgs) -> anyhow::Result<()> {
    match args.out {
        Some(path) => {
            electd::security::keyring::write_key_file(&path)
                .map_err(|e| anyhow::anyhow!("cannot write key file {}: {e}", path.display()))?;
            eprintln!(
                "wrote a new key to {} (mode 0600); copy it to every node and set security.key_file",
                path.display()
            );
        }
        None => print!("{}", electd::security::keyring::new_key_file()?),
    }
    Ok(())
}
