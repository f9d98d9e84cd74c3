//! Shared-key authentication of datagrams: HMAC-SHA256 (RFC 2104 over FIPS 180-4)
//! with a keyring.
//!
//! # Contract
//! - A key file holds one key per line as 64 hex digits (32 bytes); blank lines and
//!   lines starting with `#` are ignored. The **first** key is the primary: every
//!   datagram is signed with it. Every key in the file is accepted when verifying, so
//!   a key is rotated by (1) adding the new key as a second line everywhere, (2) moving
//!   it first everywhere, (3) removing the old one.
//! - A key's id (the envelope's `key_id`) is derived from the key itself (the first
//!   four bytes of SHA-256 of the key, never 0), so files need no numbering and two
//!   nodes can never disagree on which id names which key.
//! - Tags are compared in constant time (`hmac`'s `verify_slice`).
//! - `electd keygen` writes a fresh key file with mode 0600 from the OS generator.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Read;
use std::path::Path;

type HmacSha256 = Hmac<Sha256>;

/// Length of a key in bytes.
pub const KEY_LEN: usize = 32;
#[cfg(test)]
/// Length of a tag in bytes (full HMAC-SHA256 output).
pub(crate) const TAG_LEN: usize = 32;

/// One 32-byte key and its id.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    /// The key's id, derived from its bytes: datagrams name the key that tagged them.
    pub id: u32,
    bytes: [u8; KEY_LEN],
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        write!(f, "Key(id={:#010x})", self.id)
    }
}

impl Key {
    /// The key of these bytes (its id computed from them).
    pub fn new(bytes: [u8; KEY_LEN]) -> Key {
        let digest = Sha256::digest(bytes);
        let id = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]).max(1);
        Key { id, bytes }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail for 32 bytes.
        <HmacSha256 as Mac>::new_from_slice(&self.bytes).expect("HMAC takes any key length")
    }
}

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read.
    #[error("cannot read key file: {0}")]
    Io(#[from] std::io::Error),
    /// A line that is not one key.
    #[error("line {line}: expected 64 hex digits (32 bytes), {what}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// No key at all.
    #[error("the key file holds no key")]
    Empty,
    /// The same key twice.
    #[error("line {line}: the same key is listed twice")]
    Duplicate {
        /// 1-based line number of the second one.
        line: usize,
    },
}

/// Keys to verify with; the first signs (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keyring {
    keys: Vec<Key>,
}

impl Keyring {
    /// A keyring of one key, used to seal and to check.
    pub fn new(primary: Key) -> Keyring {
        Keyring {
            keys: vec![primary],
        }
    }

    /// Parse the text of a key file.
    pub(crate) fn parse(text: &str) -> Result<Keyring, KeyError> {
        let mut keys: Vec<Key> = Vec::new();
        // A byte-order mark (some editors write one) is not part of the key.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bytes =
                parse_hex(line).map_err(|what| KeyError::Malformed { line: i + 1, what })?;
            let key = Key::new(bytes);
            if keys.iter().any(|k| k.bytes == key.bytes) {
                return Err(KeyError::Duplicate { line: i + 1 });
            }
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Keyring { keys })
    }

    /// Read a key file (one key per line; the first seals, every one checks).
    pub fn load(path: &Path) -> Result<Keyring, KeyError> {
        Keyring::parse(&std::fs::read_to_string(path)?)
    }

    /// The key that seals outgoing datagrams.
    pub fn primary(&self) -> &Key {
        &self.keys[0]
    }

    /// The key with id `id`, if the ring holds it.
    pub(crate) fn get(&self, id: u32) -> Option<&Key> {
        self.keys.iter().find(|k| k.id == id)
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Holds no key (never, for a loaded ring).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Tag `msg` with the primary key: (key id, tag).
    pub fn sign(&self, msg: &[u8]) -> (u32, Vec<u8>) {
        let key = self.primary();
        let mut mac = key.mac();
        mac.update(msg);
        (key.id, mac.finalize().into_bytes().to_vec())
    }

    /// Check `tag` over `msg` with key `key_id`, in constant time.
    pub(crate) fn verify(&self, key_id: u32, msg: &[u8], tag: &[u8]) -> Result<(), VerifyError> {
        let key = self.get(key_id).ok_or(VerifyError::UnknownKey)?;
        let mut mac = key.mac();
        mac.update(msg);
        mac.verify_slice(tag).map_err(|_| VerifyError::BadTag)
    }
}

/// Outcome of a failed verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VerifyError {
    /// No key of the ring has this id.
    UnknownKey,
    /// The tag does not match.
    BadTag,
}

fn parse_hex(s: &str) -> Result<[u8; KEY_LEN], String> {
    let chars = s.chars().count();
    if chars != 2 * KEY_LEN || s.len() != chars {
        return Err(if chars == 2 * KEY_LEN {
            "found a non-hex character".to_string()
        } else {
            format!("found {chars} characters")
        });
    }
    let mut out = [0u8; KEY_LEN];
    let digits = s.as_bytes();
    for (i, byte) in out.iter_mut().enumerate() {
        let hi = hex_val(digits[2 * i]);
        let lo = hex_val(digits[2 * i + 1]);
        match (hi, lo) {
            (Some(h), Some(l)) => *byte = (h << 4) | l,
            _ => {
                return Err(format!(
                    "found a non-hex character near position {}",
                    2 * i + 1
                ))
            }
        }
    }
    Ok(out)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Hex encoding (lower case).
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// 32 random bytes from the operating system's generator (`/dev/urandom`).
pub fn random_key() -> std::io::Result<[u8; KEY_LEN]> {
    let mut bytes = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The text of a fresh key file (a comment line and one key).
pub fn new_key_file() -> std::io::Result<String> {
    let key = random_key()?;
    Ok(format!(
        "# electd cluster key (HMAC-SHA256); keep it secret, copy it to every node.\n{}\n",
        to_hex(&key)
    ))
}

/// A warning if the key file at `path` can be read or written by anyone but its owner
/// (mode bits `0o077`), naming the file, its mode and the fix; `None` if it is private
/// or cannot be inspected (reading it reports that).
pub fn permission_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        // Group bits alone on a read-only mount: a Kubernetes Secret mounted with
        // `defaultMode: 0440` for the pod's fsGroup (deploy/k8s), where `chmod` cannot
        // be run and the group is the service's own. Others' bits are warned of always.
        if mode & 0o007 == 0 && mode & 0o070 != 0 && read_only_mount(path) {
            return None;
        }
        (mode & 0o077 != 0).then(|| {
            format!(
                "key file {} has mode {mode:04o}: other users may read the cluster key; run `chmod 600 {}`",
                path.display(),
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Is `path` on a file system mounted read-only (statvfs's `ST_RDONLY`)?
#[cfg(unix)]
fn read_only_mount(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs(2) fills the zeroed struct from a NUL-terminated path.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0
    }
}

/// Write a fresh key file at `path` with mode 0600. Refuses to overwrite a file.
pub fn write_key_file(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let text = new_key_file()?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> String {
        to_hex(&[b; KEY_LEN])
    }

    #[test]
    fn sign_with_primary_verify_with_any() {
        let old = Keyring::parse(&key(1)).unwrap();
        let both = Keyring::parse(&format!("# rotation\n{}\n\n{}\n", key(2), key(1))).unwrap();
        assert_eq!(both.len(), 2);
        let (id, tag) = old.sign(b"hello");
        assert_eq!(tag.len(), TAG_LEN);
        // The new ring still accepts the old key's tags…
        assert_eq!(both.verify(id, b"hello", &tag), Ok(()));
        // …but signs with its primary, which the old ring does not know.
        let (id2, tag2) = both.sign(b"hello");
        assert_ne!(id, id2);
        assert_eq!(
            old.verify(id2, b"hello", &tag2),
            Err(VerifyError::UnknownKey)
        );
        assert_eq!(both.verify(id, b"hellO", &tag), Err(VerifyError::BadTag));
        assert_eq!(
            both.verify(id, b"hello", &tag[..31]),
            Err(VerifyError::BadTag)
        );
    }

    /// docs/security.md's rotation steps on files `electd keygen` wrote (a comment line,
    /// then the key): step 2 (the new key's hex line appended, as the doc's `grep`
    /// does) keeps the old key signing; step 3 (the new key's line moved above the old
    /// one's) signs with the new key. The doc said "the second line", which in such a
    /// file is above the old key: the new key signed at once.
    #[test]
    fn the_documented_rotation_steps_hold_on_keygen_files() {
        let old_file = new_key_file().unwrap();
        let new_file = new_key_file().unwrap();
        let hex = |f: &str| {
            f.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let old = Keyring::parse(&old_file).unwrap();
        let new = Keyring::parse(&new_file).unwrap();
        let step2 = Keyring::parse(&format!("{old_file}{}\n", hex(&new_file))).unwrap();
        assert_eq!(step2.len(), 2);
        assert_eq!(
            step2.primary().id,
            old.primary().id,
            "step 2 signs with the old key"
        );
        let step3_text = format!(
            "{}\n{}\n{}\n",
            old_file.lines().next().unwrap(),
            hex(&new_file),
            hex(&old_file)
        );
        let step3 = Keyring::parse(&step3_text).unwrap();
        assert_eq!(
            step3.primary().id,
            new.primary().id,
            "step 3 signs with the new key"
        );
        // What "the second line" of a keygen file did: the new key above the old one.
        let mut lines: Vec<&str> = old_file.lines().collect();
        let new_hex = hex(&new_file);
        lines.insert(1, &new_hex);
        let second_line = Keyring::parse(&lines.join("\n")).unwrap();
        assert_eq!(second_line.primary().id, new.primary().id);
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_key_and_lengths_count_characters() {
        let plain = Keyring::parse(&key(9)).unwrap();
        let bom = Keyring::parse(&format!("\u{feff}{}\n", key(9))).unwrap();
        assert_eq!(plain.primary().id, bom.primary().id);
        // A multi-byte character inside the hex is a character, not three.
        let odd = format!("{}é", &key(9)[..63]);
        let e = Keyring::parse(&odd).unwrap_err().to_string();
        assert!(e.contains("non-hex"), "{e}");
        let short = format!("{}é", &key(9)[..10]);
        let e = Keyring::parse(&short).unwrap_err().to_string();
        assert!(e.contains("found 11 characters"), "{e}");
    }

    #[test]
    fn malformed_files_are_rejected_with_the_line() {
        assert!(matches!(Keyring::parse(""), Err(KeyError::Empty)));
        assert!(matches!(
            Keyring::parse("# only a comment\n"),
            Err(KeyError::Empty)
        ));
        let short = Keyring::parse("abcd").unwrap_err().to_string();
        assert!(
            short.contains("line 1") && short.contains("4 characters"),
            "{short}"
        );
        let bad = format!("{}\n{}zz", key(1), &key(1)[..62]);
        let e = Keyring::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("non-hex"), "{e}");
        let dup = format!("{}\n{}", key(1), key(1).to_uppercase());
        assert!(matches!(
            Keyring::parse(&dup),
            Err(KeyError::Duplicate { line: 2 })
        ));
    }

    #[test]
    fn key_ids_are_stable_and_never_zero() {
        let a = Key::new([7; KEY_LEN]);
        assert_eq!(a.id, Key::new([7; KEY_LEN]).id);
        assert_ne!(a.id, 0);
        assert!(
            !format!("{a:?}").contains("0707"),
            "Debug must not leak the key"
        );
    }

    #[test]
    fn keygen_writes_a_private_parseable_file_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("electd-keygen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        let _ = std::fs::remove_file(&path);
        write_key_file(&path).unwrap();
        let ring = Keyring::load(&path).unwrap();
        assert_eq!(ring.len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(write_key_file(&path).is_err(), "must not overwrite a key");
        assert_eq!(permission_warning(&path), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let w = permission_warning(&path).expect("0644 is warned about");
            assert!(
                w.contains("0644") && w.contains(&path.display().to_string()),
                "{w}"
            );
            assert!(w.contains("chmod 600"), "{w}");
            // Group bits alone are warned of where chmod can be run (a writable
            // mount); only a read-only one (a Kubernetes Secret) is spared.
            assert!(
                !read_only_mount(&path),
                "the temporary directory is writable"
            );
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o440)).unwrap();
            assert!(permission_warning(&path).is_some_and(|w| w.contains("0440")));
        }
        // Two fresh keys differ.
        assert_ne!(random_key().unwrap(), random_key().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
