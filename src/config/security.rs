//! `[security]` (the cluster key or the explicit opt-out) and `[admin]` (the bearer
//! token of the admin routes).

use super::raw::RawConfig;
use super::validate::Validator;
use super::{ConfigError, Security};
use crate::security::keyring::Keyring;
use std::path::{Path, PathBuf};

impl Validator<'_> {
    /// The key file (absolute) and how datagrams are authenticated.
    pub(super) fn security(
        &self,
        raw: &RawConfig,
    ) -> Result<(Option<PathBuf>, Security), ConfigError> {
        let key_file = raw.security.key_file.as_ref().map(|f| self.path(f));
        let security = match (&raw.security.key_file, raw.security.insecure.unwrap_or(false)) {
            (Some(_), true) => {
                return Err(self.err("security.insecure", "true while security.key_file is set: choose one"))
            }
            (Some(f), false) => {
                let path = self.path(f);
                let ring = Keyring::load(&path)
                    .map_err(|e| self.err("security.key_file", format!("{}: {e}", path.display())))?;
                Security::Keyring(ring)
            }
            (None, true) => Security::Insecure,
            (None, false) => {
                return Err(self.err(
                    "security",
                    "no key_file: run `electd keygen --out electd.key` and set key_file (or, for a test \
                     network only, insecure = true)",
                ))
            }
        };
        Ok((key_file, security))
    }

    /// The admin token and its file (absolute).
    pub(super) fn admin(
        &self,
        raw: &RawConfig,
    ) -> Result<(Option<String>, Option<PathBuf>), ConfigError> {
        let admin_token_file = raw.admin.token_file.as_ref().map(|f| self.path(f));
        let admin_token = match &raw.admin.token_file {
            None => None,
            Some(f) => {
                let path = self.path(f);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    self.err("admin.token_file", format!("{}: {e}", path.display()))
                })?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
                if lines > 1 {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: holds {lines} lines; the token must be one line (a bearer \
                             token cannot contain a line break, so no request would match)",
                            path.display()
                        ),
                    ));
                }
                let token = text.trim().to_string();
                if let Some(c) = token.chars().find(|c| !c.is_ascii_graphic()) {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: the token contains {c:?}; use printable ASCII without spaces \
                             (e.g. `openssl rand -hex 32`)",
                            path.display()
                        ),
                    ));
                }
                if token.len() < 16 {
                    return Err(self.err(
                        "admin.token_file",
                        format!(
                            "{}: the token is shorter than 16 characters",
                            path.display()
                        ),
                    ));
                }
                Some(token)
            }
        };
        Ok((admin_token, admin_token_file))
    }
}

/// The permission bits of `path` when group or others have any access to it.
pub(super) fn group_or_world_access(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}
