//! Query-string parsing shared by the handlers: strict, so that a typo is a 400 with a
//! message instead of a silently ignored parameter.

use super::error::ApiError;
use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::shared::Shared;
use axum::extract::RawQuery;

/// Does the route need a group when the node runs several?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Need {
    /// One group: `algorithm` may be left out only if the node runs exactly one.
    One,
    /// `algorithm` optional; absent means every group.
    Any,
    /// The route takes no parameter at all.
    Nothing,
}

/// Parse `?algorithm=A` (the only parameter any route takes) for `need`.
/// `Ok(None)` means "every group" (only with [`Need::Any`] or [`Need::Nothing`]).
pub(super) fn algorithm(
    query: &RawQuery,
    shared: &Shared,
    need: Need,
) -> Result<Option<AlgorithmKind>, ApiError> {
    let pairs: Vec<(String, String)> = match &query.0 {
        None => Vec::new(),
        Some(q) => parse_pairs(q)?,
    };
    let mut given: Option<String> = None;
    for (key, value) in pairs {
        if key != "algorithm" || need == Need::Nothing {
            let expected = if need == Need::Nothing {
                "this route takes no parameters".to_string()
            } else {
                "expected: algorithm".to_string()
            };
            return Err(ApiError::bad_request(format!(
                "unknown query parameter {key:?}; {expected}"
            )));
        }
        if given.is_some() {
            return Err(ApiError::bad_request("parameter \"algorithm\" given twice"));
        }
        given = Some(value);
    }
    let running = running(shared);
    let Some(name) = given else {
        return match (need, shared.algorithms.as_slice()) {
            (Need::One, [only]) => Ok(Some(*only)),
            (Need::One, _) => Err(ApiError::bad_request(format!(
                "missing parameter ?algorithm=; this node runs: {running}"
            ))),
            _ => Ok(None),
        };
    };
    if name.trim().is_empty() {
        return Err(ApiError::bad_request(format!(
            "empty parameter algorithm; this node runs: {running}"
        )));
    }
    let kind: AlgorithmKind = name.parse().map_err(|_| {
        ApiError::not_found(format!(
            "unknown algorithm {name:?}; this node runs: {running}"
        ))
    })?;
    if !shared.algorithms.contains(&kind) {
        return Err(ApiError::not_found(format!(
            "algorithm {kind} is not configured on this node; it runs: {running}"
        )));
    }
    Ok(Some(kind))
}

/// Parse `?algorithm=A&to=N` of `POST /admin/transfer`: the group (`None`: every
/// group, where the node runs several) and the target's roster id (required).
pub(super) fn transfer_target(
    query: &RawQuery,
    shared: &Shared,
) -> Result<(Option<AlgorithmKind>, crate::NodeId), ApiError> {
    let pairs = match &query.0 {
        None => Vec::new(),
        Some(q) => parse_pairs(q)?,
    };
    let mut algorithm: Option<String> = None;
    let mut to: Option<String> = None;
    for (key, value) in pairs {
        let slot = match key.as_str() {
            "algorithm" => &mut algorithm,
            "to" => &mut to,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter {key:?}; expected: algorithm, to"
                )))
            }
        };
        if slot.is_some() {
            return Err(ApiError::bad_request(format!(
                "parameter {key:?} given twice"
            )));
        }
        *slot = Some(value);
    }
    let to = to.ok_or_else(|| {
        ApiError::bad_request("missing parameter ?to=N: the roster id of the node to hand over to")
    })?;
    let to: crate::NodeId = to
        .trim()
        .parse()
        .ok()
        .filter(|&n: &crate::NodeId| n > 0)
        .ok_or_else(|| ApiError::bad_request(format!("to={to:?} is not a roster id (1, 2, …)")))?;
    let only = RawQuery(algorithm.map(|a| format!("algorithm={a}")));
    let kind = match shared.algorithms.as_slice() {
        [one] if only.0.is_none() => Some(*one),
        _ => self::algorithm(&only, shared, Need::Any)?,
    };
    Ok((kind, to))
}

fn running(shared: &Shared) -> String {
    shared
        .algorithms
        .iter()
        .map(|a| a.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Decode `a=b&c=d` (percent-decoding, `+` as space) into pairs.
fn parse_pairs(q: &str) -> Result<Vec<(String, String)>, ApiError> {
    let mut out = Vec::new();
    for part in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        out.push((decode(k)?, decode(v)?));
    }
    Ok(out)
}

fn decode(s: &str) -> Result<String, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ApiError::bad_request("malformed percent-encoding in query"))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| ApiError::bad_request("query is not valid UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_and_plus() {
        assert_eq!(
            parse_pairs("algorithm=improved%2Dbully&x=a+b").expect("valid"),
            vec![
                ("algorithm".to_string(), "improved-bully".to_string()),
                ("x".to_string(), "a b".to_string())
            ]
        );
        assert!(parse_pairs("algorithm=%zz").is_err());
        assert!(parse_pairs("algorithm=%").is_err());
        assert!(parse_pairs("algorithm=%ff").is_err());
    }
}
