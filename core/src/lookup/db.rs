//! nsqlookupd's registration database: which producers (nsqd nodes) have which topics and
//! channels. Pure data; time comes in as arguments.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::time::{Nanos, Time};

/// What a registration is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Every identified connection (key and subkey empty).
    Client,
    /// A topic (key: the topic).
    Topic,
    /// A channel (key: the topic, subkey: the channel).
    Channel,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Client => "client",
            Category::Topic => "topic",
            Category::Channel => "channel",
        }
    }
}

/// nsqlookupd's `Registration{Category, Key, SubKey}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Registration {
    pub category: Category,
    pub key: String,
    pub subkey: String,
}

impl Registration {
    pub fn client() -> Self {
        Self::new(Category::Client, "", "")
    }

    pub fn topic(topic: &str) -> Self {
        Self::new(Category::Topic, topic, "")
    }

    pub fn channel(topic: &str, channel: &str) -> Self {
        Self::new(Category::Channel, topic, channel)
    }

    pub fn new(category: Category, key: &str, subkey: &str) -> Self {
        Self {
            category,
            key: key.to_string(),
            subkey: subkey.to_string(),
        }
    }

    /// `"*"` in `key` or `subkey` matches anything.
    fn matches(&self, category: Category, key: &str, subkey: &str) -> bool {
        self.category == category
            && (key == "*" || self.key == key)
            && (subkey == "*" || self.subkey == subkey)
    }
}

/// What an nsqd said about itself in IDENTIFY (nsqlookupd's `PeerInfo`), in its JSON order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeerInfo {
    pub remote_address: String,
    pub hostname: String,
    pub broadcast_address: String,
    pub tcp_port: i64,
    pub http_port: i64,
    pub version: String,
    /// The connection's remote address: the producer's key.
    #[serde(skip)]
    pub id: String,
    /// Last IDENTIFY or PING.
    #[serde(skip)]
    pub last_update: Time,
}

/// A producer of one registration: shared peer info, tombstone per registration.
#[derive(Debug, Clone)]
pub struct Producer {
    pub peer: Arc<PeerInfo>,
    pub tombstoned: bool,
    pub tombstoned_at: Time,
}

impl Producer {
    pub fn is_tombstoned(&self, now: Time, lifetime: Nanos) -> bool {
        self.tombstoned && now.saturating_sub(self.tombstoned_at) < lifetime
    }
}

/// Registrations and their producers (by peer id).
#[derive(Debug, Default, Clone)]
pub struct RegistrationDb {
    map: BTreeMap<Registration, BTreeMap<String, Producer>>,
}

impl RegistrationDb {
    /// Create the registration (with no producers) if it is not there.
    pub fn add_registration(&mut self, r: Registration) {
        self.map.entry(r).or_default();
    }

    /// Add a producer; returns whether it was new.
    pub fn add_producer(&mut self, r: Registration, peer: &Arc<PeerInfo>) -> bool {
        let producers = self.map.entry(r).or_default();
        if producers.contains_key(&peer.id) {
            return false;
        }
        producers.insert(
            peer.id.clone(),
            Producer {
                peer: peer.clone(),
                tombstoned: false,
                tombstoned_at: 0,
            },
        );
        true
    }

    /// Remove a producer; returns (removed, producers left). The registration stays.
    pub fn remove_producer(&mut self, r: &Registration, id: &str) -> (bool, usize) {
        match self.map.get_mut(r) {
            None => (false, 0),
            Some(p) => {
                let removed = p.remove(id).is_some();
                (removed, p.len())
            }
        }
    }

    pub fn remove_registration(&mut self, r: &Registration) -> bool {
        self.map.remove(r).is_some()
    }

    pub fn has(&self, r: &Registration) -> bool {
        self.map.contains_key(r)
    }

    pub fn find_registrations<'a>(
        &'a self,
        category: Category,
        key: &'a str,
        subkey: &'a str,
    ) -> impl Iterator<Item = &'a Registration> + 'a {
        self.map
            .keys()
            .filter(move |r| r.matches(category, key, subkey))
    }

    /// Producers of every matching registration, once per peer.
    pub fn find_producers(&self, category: Category, key: &str, subkey: &str) -> Vec<&Producer> {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for (r, ps) in &self.map {
            if r.matches(category, key, subkey) {
                for (id, p) in ps {
                    if seen.insert(id.as_str()) {
                        out.push(p);
                    }
                }
            }
        }
        out
    }

    /// Every registration that lists peer `id`.
    pub fn lookup_registrations(&self, id: &str) -> Vec<Registration> {
        self.map
            .iter()
            .filter(|(_, ps)| ps.contains_key(id))
            .map(|(r, _)| r.clone())
            .collect()
    }

    pub fn producers_mut(&mut self, r: &Registration) -> Option<&mut BTreeMap<String, Producer>> {
        self.map.get_mut(r)
    }

    pub fn producers(&self, r: &Registration) -> Option<&BTreeMap<String, Producer>> {
        self.map.get(r)
    }

    /// Every registration with its producers.
    pub fn iter(&self) -> impl Iterator<Item = (&Registration, &BTreeMap<String, Producer>)> {
        self.map.iter()
    }

    /// Replace a peer's shared info (after PING) in every registration that lists it.
    pub fn update_peer(&mut self, peer: &Arc<PeerInfo>) {
        for ps in self.map.values_mut() {
            if let Some(p) = ps.get_mut(&peer.id) {
                p.peer = peer.clone();
            }
        }
    }
}

/// nsqlookupd's `FilterByActive`: producers heard from within `inactive` and not tombstoned
/// within `lifetime`.
pub fn active<'a>(
    producers: impl IntoIterator<Item = &'a Producer>,
    now: Time,
    inactive: Nanos,
    lifetime: Nanos,
) -> Vec<&'a Producer> {
    producers
        .into_iter()
        .filter(|p| now.saturating_sub(p.peer.last_update) <= inactive)
        .filter(|p| !p.is_tombstoned(now, lifetime))
        .collect()
}
