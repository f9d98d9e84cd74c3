//! `[policy]` and the peers' `priority` keys: parsed and checked by
//! [`crate::contract::policy`], reported here with the key to blame.

use super::raw::RawPeer;
use super::validate::Validator;
use super::ConfigError;
use crate::contract::policy::{self, Policy};
use crate::NodeId;

impl Validator<'_> {
    /// `[policy]` and the peers' `priority` keys.
    pub(super) fn policy(
        &self,
        table: Option<&toml::Value>,
        peers: &[RawPeer],
    ) -> Result<Policy, ConfigError> {
        let prio: Vec<(usize, NodeId, Option<i64>)> = peers
            .iter()
            .enumerate()
            .map(|(i, p)| (i, NodeId::try_from(p.id).unwrap_or(0), p.priority))
            .collect();
        policy::parse(table, &prio).map_err(|e| self.err(e.key, e.message))
    }
}
