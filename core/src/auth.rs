//! AUTH against an nsqauthd-compatible server, sans-IO.
//!
//! `AUTH` makes the broker emit an [`AuthRequest`] ([`crate::Output::Auth`]) and
//! hold the client's later input until the caller answers with
//! [`crate::Broker::handle_auth_response`]. When the answer's TTL has passed, the next SUB,
//! PUB, MPUB or DPUB triggers a refresh the same way, as nsqd's `IsAuthorized` does.
//!
//! # Format
//!
//! ```text
//! AUTH\n[4-byte size][secret]    →  {"identity":…,"identity_url":…,"permission_count":N}
//! ```
//!
//! The auth server answers `GET /auth?remote_ip=&tls=&secret=&common_name=` with
//! `{"ttl":s,"identity":…,"identity_url":…,"authorizations":[{"topic":re,"channels":[re],"permissions":["subscribe"|"publish"]}]}`.

use crate::time::{Time, SECOND};
use crate::ClientId;
use regex::Regex;
use serde::{Deserialize, Serialize};

/// What the caller must ask the auth server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    pub client: ClientId,
    pub secret: Vec<u8>,
    /// The client's IP (no port).
    pub remote_ip: String,
    pub tls: bool,
    /// The TLS client certificate's common name, if any.
    pub common_name: String,
}

/// One grant from the auth server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Authorization {
    #[serde(default)]
    pub topic: String,
    #[serde(default)]
    pub channels: Vec<String>,
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// The auth server's answer, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AuthResponse {
    #[serde(default)]
    pub ttl: i64,
    #[serde(default)]
    pub authorizations: Vec<Authorization>,
    #[serde(default)]
    pub identity: String,
    #[serde(default)]
    pub identity_url: String,
}

#[derive(Debug, Clone)]
struct Grant {
    topic: Regex,
    channels: Vec<Regex>,
    subscribe: bool,
    publish: bool,
}

/// A client's current authorizations.
#[derive(Debug, Clone)]
pub struct AuthState {
    pub identity: String,
    pub identity_url: String,
    pub expires: Time,
    grants: Vec<Grant>,
}

impl AuthState {
    /// Validate an answer as nsqd's `QueryAuthd` does (its error texts).
    pub fn from_response(r: &AuthResponse, now: Time) -> Result<AuthState, String> {
        let mut grants = Vec::new();
        for a in &r.authorizations {
            let mut subscribe = false;
            let mut publish = false;
            for p in &a.permissions {
                match p.as_str() {
                    "subscribe" => subscribe = true,
                    "publish" => publish = true,
                    other => return Err(format!("unknown permission {other}")),
                }
            }
            let topic = Regex::new(&a.topic)
                .map_err(|e| format!("unable to compile topic {:?} {e}", a.topic))?;
            let channels = a
                .channels
                .iter()
                .map(|c| Regex::new(c).map_err(|e| format!("unable to compile channel {c:?} {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            grants.push(Grant {
                topic,
                channels,
                subscribe,
                publish,
            });
        }
        if r.ttl <= 0 {
            return Err(format!("invalid TTL {} (must be >0)", r.ttl));
        }
        Ok(AuthState {
            identity: r.identity.clone(),
            identity_url: r.identity_url.clone(),
            expires: now.saturating_add((r.ttl as u64).saturating_mul(SECOND)),
            grants,
        })
    }

    pub fn permission_count(&self) -> usize {
        self.grants.len()
    }

    pub fn is_expired(&self, now: Time) -> bool {
        now >= self.expires
    }

    /// nsqd's `IsAllowed`: subscribe needs a channel, publish has none; the topic regex and
    /// one channel regex must match (unanchored).
    pub fn is_allowed(&self, topic: &str, channel: &str) -> bool {
        self.grants.iter().any(|g| {
            let perm = if channel.is_empty() {
                g.publish
            } else {
                g.subscribe
            };
            perm && g.topic.is_match(topic) && g.channels.iter().any(|c| c.is_match(channel))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(json: &str) -> Result<AuthState, String> {
        AuthState::from_response(&serde_json::from_str(json).unwrap(), 0)
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn grants_as_nsqd() {
        let s = state(r#"{"ttl":60,"identity":"me","authorizations":[{"topic":"^t","channels":[".*"],"permissions":["subscribe","publish"]},{"topic":"ro","channels":["^c$"],"permissions":["subscribe"]}]}"#).unwrap();
        assert!(s.is_allowed("t1", "") && s.is_allowed("tx", "any"));
        assert!(s.is_allowed("ro", "c") && !s.is_allowed("ro", "d") && !s.is_allowed("ro", ""));
        assert_eq!(s.permission_count(), 2);
        assert!(s.is_expired(60 * SECOND) && !s.is_expired(60 * SECOND - 1));
        assert_eq!(
            state(r#"{"ttl":0}"#).unwrap_err(),
            "invalid TTL 0 (must be >0)"
        );
        assert_eq!(
            state(r#"{"ttl":1,"authorizations":[{"topic":"t","channels":[],"permissions":["write"]}]}"#).unwrap_err(),
            "unknown permission write"
        );
    }
}
