//! Client sessions: connections, their input, auth, output ordering and closing.

use super::migrate::Forward;
use super::migrate::Routed;
use super::timer::arm_read;
use super::{Broker, Transmit};
use crate::auth::{AuthRequest, AuthResponse, AuthState};
use crate::client::TlsPeer;
use crate::client::{Client, MpubPending};
use crate::event::{CloseReason, EventKind};
use crate::protocol::decode::{decode, ClientState, DecodeContext, Decoded};
use crate::protocol::identify::ClientSettings;
use crate::protocol::{
    encode_frame, Command, ProtocolError, FRAME_TYPE_ERROR, FRAME_TYPE_RESPONSE, MAGIC_V2,
};
use crate::time::{Time, MILLISECOND};
use crate::ClientId;
use std::collections::VecDeque;

impl Broker {
    /// The auth server's answer (or why there was none) for `client`.
    pub fn handle_auth_response(
        &mut self,
        now: Time,
        client: ClientId,
        answer: Result<AuthResponse, String>,
    ) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        if !c.auth_wait {
            return;
        }
        c.auth_wait = false;
        let first = c.auth.is_none();
        let state = answer.and_then(|r| AuthState::from_response(&r, now));
        match state {
            Err(_) => {
                // nsqd logs the reason and tells the client only this.
                self.fail(
                    now,
                    client,
                    ProtocolError::fatal("E_AUTH_FAILED", "AUTH failed"),
                );
                return;
            }
            Ok(state) if first && state.permission_count() == 0 => {
                self.fail(
                    now,
                    client,
                    ProtocolError::fatal("E_UNAUTHORIZED", "AUTH no authorizations found"),
                );
                return;
            }
            Ok(state) => {
                if first {
                    let reply = serde_json::json!({
                        "identity": state.identity,
                        "identity_url": state.identity_url,
                        "permission_count": state.permission_count(),
                    });
                    let body = crate::protocol::to_go_json(&reply).expect("auth reply serialises");
                    self.send_frame(client, FRAME_TYPE_RESPONSE, &body);
                }
                if let Some(c) = self.clients.get_mut(&client) {
                    c.auth = Some(state);
                }
            }
        }
        // Carry on with whatever the client sent meanwhile.
        self.handle_bytes(now, client, &[]);
    }

    /// The client's TLS handshake finished (the I/O layer reads the session: the subject
    /// common name of the client's certificate, which AUTH sends to the auth server as nsqd
    /// does, and the version and cipher suite that `/stats` shows).
    pub fn handle_tls_peer(&mut self, client: ClientId, peer: TlsPeer) {
        if let Some(c) = self.clients.get_mut(&client) {
            c.tls_peer = peer;
        }
    }

    /// A new connection. Its first bytes must be the V2 magic.
    pub fn connect(&mut self, now: Time, remote_address: impl Into<String>) -> ClientId {
        let now = self.clock.advance(now);
        let id = ClientId(self.next_client);
        self.next_client += self.opts.partitions.max(1) as u64;
        let c = Client::new(
            id,
            remote_address.into(),
            now,
            ClientSettings::defaults(&self.opts),
        );
        self.clients.insert(id, c);
        self.emit(now, EventKind::ClientConnected { client: id });
        // No heartbeat and no read deadline until the magic: nsqd waits for it without a
        // deadline, and its message pump (with the heartbeat ticker) starts after it.
        id
    }

    /// The transport closed. Messages the client had in flight stay in flight until they time
    /// out, as in nsqd.
    pub fn disconnect(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        if self.clients.contains_key(&client) {
            self.remove_client(now, client, CloseReason::Disconnected, false);
        }
    }

    /// The client closed its sending side (or the whole connection). As nsqd reads on to
    /// that end: a command cut short gets the error nsqd sends when its read fails
    /// (`E_BAD_MESSAGE PUB failed to read message body`, …); then the connection closes, after
    /// the answers still owed (a publish waiting for the store is answered first).
    pub fn handle_eof(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        // An MPUB still being published is finished first (then what followed it is read).
        if self
            .clients
            .get(&client)
            .is_some_and(|c| c.mpub_rest.is_some())
        {
            self.continue_mpub(now, client, true);
        }
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        // Input waiting on something else (an auth answer, a move) is not read any more.
        let reading = c.magic_ok && !c.auth_wait && c.forward_wait.is_none() && !c.migrate_wait;
        let cut_short = reading
            .then(|| crate::protocol::decode::at_eof(&c.inbuf, self.opts.limits()))
            .flatten();
        match cut_short {
            Some(e) => {
                self.fail(now, client, e);
            }
            None => self.remove_client(now, client, CloseReason::Disconnected, true),
        }
    }

    /// Bytes from a client. Complete commands are executed; a partial one waits for more.
    pub fn handle_bytes(&mut self, now: Time, client: ClientId, data: &[u8]) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        let mut buf = std::mem::take(&mut c.inbuf);
        let owned = !buf.is_empty();
        if owned {
            buf.extend_from_slice(data);
        }
        let input: &[u8] = if owned { &buf } else { data };
        let used = self.process_input(now, client, input);
        if let Some(c) = self.clients.get_mut(&client) {
            if owned {
                buf.drain(..used);
                c.inbuf = buf;
            } else {
                c.inbuf = data[used..].to_vec();
            }
        }
    }

    /// Process as many whole commands as `input` holds; returns the bytes used.
    pub(super) fn process_input(&mut self, now: Time, id: ClientId, input: &[u8]) -> usize {
        let mut pos = 0;
        let Some(c) = self.clients.get_mut(&id) else {
            return 0;
        };
        if !c.magic_ok {
            if input.len() < 4 {
                return 0;
            }
            if &input[..4] != MAGIC_V2 {
                self.send_frame(id, FRAME_TYPE_ERROR, b"E_BAD_PROTOCOL");
                self.remove_client(now, id, CloseReason::BadInput, true);
                return 0;
            }
            c.magic_ok = true;
            c.read_base = now;
            pos = 4;
            self.arm_client_timers(id, now, true);
        }
        loop {
            let Some(c) = self.clients.get(&id) else {
                return pos;
            };
            if c.auth_wait || c.forward_wait.is_some() || c.migrate_wait || c.mpub_rest.is_some() {
                return pos;
            }
            let opts = &self.opts;
            if opts.auth_enabled
                && c.auth.as_ref().is_some_and(|a| a.is_expired(now))
                && needs_auth(&input[pos..])
            {
                // nsqd re-queries the auth server when the TTL has passed.
                self.auth_requests.push_back(auth_request(c));
                self.clients.get_mut(&id).expect("client exists").auth_wait = true;
                return pos;
            }
            let (enabled, auth) = (opts.auth_enabled, c.auth.as_ref());
            let check = move |cmd: &str, topic: &str, channel: &str| {
                check_auth(enabled, auth, cmd, topic, channel)
            };
            let ctx = DecodeContext {
                state: c.state,
                heartbeats_enabled: c.settings.heartbeat_interval.is_some(),
                tls_ok: !opts.tls_required || c.tls,
                limits: opts.limits(),
                max_rdy_count: opts.max_rdy_count,
                max_req_timeout_ms: opts.max_req_timeout / MILLISECOND,
                check_auth: &check,
                known_topic: c.last_pub.as_ref().map(|l| &*l.name),
                mpub_walk: Some(&c.mpub_walk),
            };
            let res = match decode(&input[pos..], &ctx) {
                // For another partition's topic, whole (it goes there as a small one does).
                Ok(Decoded::LargeMpub {
                    topic,
                    mut batch,
                    len,
                }) if self.owner_elsewhere(&topic).is_some() => {
                    let bodies = batch.take(batch.len());
                    Ok(Decoded::Command(Command::Mpub { topic, bodies }, len))
                }
                res => res,
            };
            match res {
                Ok(Decoded::Incomplete) => return pos,
                Ok(Decoded::Close) => {
                    self.remove_client(now, id, CloseReason::BadInput, true);
                    return pos;
                }
                Ok(Decoded::Ignored(n)) => {
                    pos += n;
                    self.command_done(now, id);
                }
                Ok(Decoded::LargeMpub { topic, batch, len }) => {
                    pos += len;
                    if let Err(e) = self.mpub(now, id, topic, MpubPending::Batch(batch)) {
                        if !self.fail(now, id, e) {
                            return pos;
                        }
                    }
                    self.command_done(now, id);
                }
                Ok(Decoded::Command(cmd, n)) => {
                    if let Some(to) = self.elsewhere(&cmd) {
                        match self.route_elsewhere(id, cmd, to, &input[pos..]) {
                            Routed::Moved => return input.len(),
                            Routed::Wait => return pos,
                            Routed::Forwarded => {
                                pos += n;
                                self.command_done(now, id);
                                continue;
                            }
                        }
                    }
                    pos += n;
                    let (upgrades_before, parked_before) =
                        (self.transmits.len(), self.parked.len());
                    if let Err(e) = self.exec(now, id, cmd) {
                        if !self.fail(now, id, e) {
                            return pos;
                        }
                    }
                    self.command_done(now, id);
                    // After IDENTIFY negotiated a TLS or compression upgrade, anything the client
                    // sent behind it in plaintext is dropped (nsqd loses it too): it must not
                    // count as sent over TLS, nor be read as compressed.
                    // (Behind a publish still waiting for the store, the upgrade is parked.)
                    let is_upgrade = |t: &Transmit| matches!(t, Transmit::Upgrade { client, .. } if *client == id);
                    let upgraded = self.transmits.iter().skip(upgrades_before).any(is_upgrade)
                        || self
                            .parked
                            .iter()
                            .skip(parked_before)
                            .any(|(_, t)| is_upgrade(t));
                    if upgraded {
                        return input.len();
                    }
                }
                Ok(Decoded::Refused { topic, error }) => {
                    // nsqd makes the topic before it reads the messages. One another partition
                    // owns is made there: a client that is not subscribed moves there (it is
                    // closed anyway) and meets the same refusal; a subscribed one stays with
                    // its channel and forwards a publish of nothing, which makes the topic
                    // (its answer finds no client waiting).
                    match self.owner_elsewhere(&topic) {
                        None => {
                            self.topic_slot(now, &topic);
                        }
                        Some(owner) if self.clients[&id].state == ClientState::Init => {
                            return match self.move_client(id, owner, &input[pos..], true) {
                                Routed::Wait => pos,
                                _ => input.len(),
                            };
                        }
                        Some(owner) => self.forwards.push_back(Forward {
                            client: id,
                            to: owner,
                            topic: topic.to_string(),
                            bodies: Vec::new(),
                            defer: None,
                            cmd: "MPUB",
                        }),
                    }
                    self.fail(now, id, error);
                    return pos;
                }
                Err(e) => {
                    self.fail(now, id, e);
                    return pos;
                }
            }
        }
    }

    /// Send an error frame; close when fatal. Returns whether the client is still there.
    pub(super) fn fail(&mut self, now: Time, id: ClientId, e: ProtocolError) -> bool {
        self.send_frame(id, FRAME_TYPE_ERROR, e.to_string().as_bytes());
        if e.fatal {
            self.remove_client(now, id, CloseReason::ProtocolError(e.to_string()), true);
            false
        } else {
            true
        }
    }

    /// A command was read: the read deadline starts again from now (one client lookup).
    pub(super) fn command_done(&mut self, now: Time, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            // The front of its input moved on: an MPUB there is a new one.
            c.mpub_walk.set(Default::default());
            c.read_base = now;
            let deadline = c.read_deadline();
            arm_read(&mut self.timers, c, deadline);
        }
    }

    pub(super) fn send_frame(&mut self, id: ClientId, frame_type: i32, data: &[u8]) {
        if let Some(c) = self.clients.get_mut(&id) {
            push_frame(&mut self.dirty, c, frame_type, data);
        }
    }

    /// Move a client's pending bytes into the ordered queue (before an upgrade or close).
    pub(super) fn flush_ordered(&mut self, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            if !c.out.is_empty() {
                let data = c.take_out();
                self.push_ordered(Transmit::Data { client: id, data });
                // What was held is parked now (until the last held publish is stored); later
                // output is held behind it, whole.
                if let Some(h) = self.clients.get_mut(&id).and_then(|c| c.hold.as_mut()) {
                    h.at = 0;
                    h.first = h.until;
                    h.later.clear();
                }
            }
        }
    }

    /// Queue an ordered transmit, parked behind the store when the client's output is held.
    pub(super) fn push_ordered(&mut self, t: Transmit) {
        let client = match &t {
            Transmit::Data { client, .. }
            | Transmit::Upgrade { client, .. }
            | Transmit::Close { client }
            | Transmit::WriteTimeout { client, .. } => *client,
        };
        let waiting = self
            .clients
            .get(&client)
            .and_then(|c| c.hold.as_ref().map(|h| h.until))
            .or_else(|| {
                self.parked
                    .iter()
                    .rev()
                    .find(|(_, p)| {
                        matches!(p, Transmit::Data { client: c, .. }
                            | Transmit::Upgrade { client: c, .. }
                            | Transmit::Close { client: c } if *c == client)
                    })
                    .map(|(k, _)| *k)
            });
        match waiting {
            Some(k) => self.parked.push_back((k, t)),
            None => self.transmits.push_back(t),
        }
    }

    /// Forget a client: unsubscribe (deleting an ephemeral channel it leaves empty), cancel its
    /// timers, and (when `close`) ask the transport to close after what was already queued.
    pub(super) fn remove_client(
        &mut self,
        now: Time,
        id: ClientId,
        reason: CloseReason,
        close: bool,
    ) {
        self.flush_ordered(id);
        let Some(c) = self.clients.remove(&id) else {
            return;
        };
        if close {
            self.push_ordered(Transmit::Close { client: id });
        }
        self.timers.cancel_client(id);
        self.emit(now, EventKind::ClientClosed { client: id, reason });
        if let Some(ch) = c.channel {
            if let Some(chan) = self.channels[ch.0 as usize].as_mut() {
                chan.remove_client(id);
                if chan.ephemeral && chan.clients.is_empty() {
                    self.delete_channel_inner(now, ch);
                }
            }
        }
    }
}

/// nsqd's `CheckAuth`.
pub(super) fn check_auth(
    enabled: bool,
    auth: Option<&AuthState>,
    cmd: &str,
    topic: &str,
    channel: &str,
) -> Result<(), ProtocolError> {
    if !enabled {
        return Ok(());
    }
    let Some(a) = auth else {
        return Err(ProtocolError::fatal(
            "E_AUTH_FIRST",
            format!("AUTH required before {cmd}"),
        ));
    };
    if a.is_allowed(topic, channel) {
        Ok(())
    } else {
        Err(ProtocolError::fatal(
            "E_UNAUTHORIZED",
            format!(
                "AUTH failed for {cmd} on {} {}",
                crate::protocol::error::go_quote(topic),
                crate::protocol::error::go_quote(channel)
            ),
        ))
    }
}

/// Whether the command at the front of `input` is one nsqd checks authorizations for.
pub(super) fn needs_auth(input: &[u8]) -> bool {
    let name = input
        .split(|&c| c == b' ' || c == b'\n')
        .next()
        .unwrap_or_default();
    input.contains(&b'\n') && matches!(name, b"SUB" | b"PUB" | b"MPUB" | b"DPUB")
}

/// Append a frame to client `c`'s output, and queue the client for sending if it was not.
pub(super) fn push_frame(
    dirty: &mut VecDeque<ClientId>,
    c: &mut Client,
    frame_type: i32,
    data: &[u8],
) {
    encode_frame(c.out_buf(), frame_type, data);
    if !c.out_queued {
        c.out_queued = true;
        dirty.push_back(c.id);
    }
}

/// What the auth server is asked about client `c` (its secret from AUTH).
pub(super) fn auth_request(c: &Client) -> AuthRequest {
    AuthRequest {
        client: c.id,
        secret: c.auth_secret.clone(),
        remote_ip: c.remote_ip().to_string(),
        tls: c.tls,
        common_name: c.tls_peer.common_name.clone(),
    }
}
