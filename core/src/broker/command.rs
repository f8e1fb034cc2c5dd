//! The V2 protocol's commands, executed for a client.

use super::session::auth_request;
use super::timer::TimerKey;
use super::{Broker, Transmit, Upgrade};
use crate::channel::InFlightError;
use crate::client::MpubPending;
use crate::event::EventKind;
use crate::message::MessageId;
use crate::protocol::decode::ClientState;
use crate::protocol::identify::{IdentifyData, IdentifyResponse, Upgrades};
use crate::protocol::{Command, ProtocolError, CLOSE_WAIT, FRAME_TYPE_RESPONSE, OK};
use crate::time::{Nanos, Time, MILLISECOND};
use crate::{ChannelId, ClientId};

impl Broker {
    pub(super) fn exec(
        &mut self,
        now: Time,
        id: ClientId,
        cmd: Command,
    ) -> Result<(), ProtocolError> {
        match cmd {
            Command::Nop => Ok(()),
            Command::Identify(body) => self.identify(now, id, &body),
            Command::Auth(secret) => {
                let enabled = self.opts.auth_enabled;
                let c = self.clients.get_mut(&id).expect("client exists");
                if c.auth.is_some() {
                    return Err(ProtocolError::fatal("E_INVALID", "AUTH already set"));
                }
                if !enabled {
                    return Err(ProtocolError::fatal("E_AUTH_DISABLED", "AUTH disabled"));
                }
                c.auth_wait = true;
                c.auth_secret = secret;
                self.auth_requests.push_back(auth_request(c));
                Ok(())
            }
            Command::Sub { topic, channel } => self.sub(now, id, &topic, &channel),
            Command::Pub { topic, body } => {
                self.check_health("PUB")?;
                let t =
                    self.publish_inner(now, &topic, std::iter::once(body), None, Some(id), None);
                self.respond_stored(id, t, "PUB");
                Ok(())
            }
            Command::Mpub { topic, bodies } => {
                self.mpub(now, id, topic, MpubPending::List(bodies.into_iter()))
            }
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => {
                let defer = dpub_defer(defer_ms);
                self.check_health("DPUB")?;
                let t = self.publish_inner(
                    now,
                    &topic,
                    std::iter::once(body),
                    Some(defer),
                    Some(id),
                    None,
                );
                self.respond_stored(id, t, "DPUB");
                Ok(())
            }
            Command::Rdy(n) => {
                let c = self.clients.get_mut(&id).expect("client exists");
                c.ready_count = n;
                let ch = c.channel;
                self.emit(
                    now,
                    EventKind::ClientReady {
                        client: id,
                        count: n,
                    },
                );
                if let Some(ch) = ch {
                    self.pump(now, ch);
                }
                Ok(())
            }
            Command::Fin(raw) => self.fin(now, id, &raw),
            Command::Req {
                id: raw,
                timeout_ms,
            } => self.req(now, id, &raw, timeout_ms),
            Command::Touch(raw) => self.touch(now, id, &raw),
            Command::Cls => {
                let c = self.clients.get_mut(&id).expect("client exists");
                c.ready_count = 0;
                c.state = ClientState::Closing;
                self.send_frame(id, FRAME_TYPE_RESPONSE, CLOSE_WAIT);
                self.emit(now, EventKind::ClientClosing { client: id });
                Ok(())
            }
        }
    }

    /// An MPUB: published [`MPUB_STEP`](crate::protocol::decode::MPUB_STEP) messages at a time. Between steps the broker serves
    /// its other clients (published whole, a 5 MiB MPUB of a million one-byte messages held
    /// every client of its partition for far longer than nsqd does). Its messages keep their
    /// order, its `OK` comes once the last step is stored, and the
    /// client's further input waits for it; another publisher's messages may come between
    /// its steps (nsqd publishes it under the topic's lock).
    pub(super) fn mpub(
        &mut self,
        now: Time,
        id: ClientId,
        topic: crate::protocol::command::TopicName,
        mut bodies: MpubPending,
    ) -> Result<(), ProtocolError> {
        self.check_health("MPUB")?;
        let step = bodies.step();
        let t = self.publish_inner(now, &topic, step, None, Some(id), None);
        if bodies.is_empty() {
            self.respond_stored(id, t, "MPUB");
        } else if let Some(c) = self.clients.get_mut(&id) {
            c.mpub_rest = Some(Box::new(crate::client::MpubRest {
                topic,
                bodies,
                ticket: t,
            }));
            // Due at once, but not in this call: what waits meanwhile goes first.
            self.timers.start(TimerKey::Mpub(id), now + 1);
        }
        Ok(())
    }

    /// The next step of a large MPUB; with `to_end`, all of it. Once it is all published,
    /// its `OK` waits for the store and the client's input is read again.
    pub(super) fn continue_mpub(&mut self, now: Time, id: ClientId, to_end: bool) {
        let Some(mut rest) = self.clients.get_mut(&id).and_then(|c| c.mpub_rest.take()) else {
            return;
        };
        loop {
            if let Err(e) = self.check_health("MPUB") {
                self.fail(now, id, e);
                return;
            }
            let step = rest.bodies.step();
            let t = self.publish_inner(now, &rest.topic, step, None, Some(id), None);
            rest.ticket = t.or(rest.ticket);
            if rest.bodies.is_empty() {
                self.respond_stored(id, rest.ticket, "MPUB");
                // Carry on with whatever the client sent meanwhile.
                self.handle_bytes(now, id, &[]);
                return;
            }
            if !to_end {
                break;
            }
        }
        if let Some(c) = self.clients.get_mut(&id) {
            c.mpub_rest = Some(rest);
            self.timers.start(TimerKey::Mpub(id), now + 1);
        }
    }

    pub(super) fn identify(
        &mut self,
        now: Time,
        id: ClientId,
        body: &[u8],
    ) -> Result<(), ProtocolError> {
        let data = IdentifyData::parse(body)?;
        let opts = &self.opts;
        let c = self.clients.get_mut(&id).expect("client exists");
        c.identify = IdentifyData {
            client_id: data.client_id.clone(),
            hostname: data.hostname.clone(),
            user_agent: data.user_agent.clone(),
            ..c.identify.clone()
        };
        let heartbeat_was = c.settings.heartbeat_interval;
        c.settings
            .apply(&data, opts)
            .map_err(|e| ProtocolError::fatal("E_BAD_BODY", format!("IDENTIFY {e}")))?;
        let s = c.settings.clone();
        if s.heartbeat_interval != heartbeat_was {
            self.transmits.push_back(Transmit::WriteTimeout {
                client: id,
                timeout: s.heartbeat_interval,
            });
        }
        self.emit(
            now,
            EventKind::ClientIdentified {
                client: id,
                client_id: data.client_id.clone(),
                hostname: data.hostname.clone(),
                user_agent: data.user_agent.clone(),
                msg_timeout: s.msg_timeout,
                heartbeat_interval: s.heartbeat_interval,
            },
        );
        self.arm_client_timers(id, now, true);
        if !data.feature_negotiation {
            self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
            return Ok(());
        }
        let (resp, up) = IdentifyResponse::negotiate(&data, &s, &self.opts)?;
        let json = crate::protocol::to_go_json(&resp).expect("identify reply serialises");
        self.send_frame(id, FRAME_TYPE_RESPONSE, &json);
        let c = self.clients.get_mut(&id).expect("client exists");
        let Upgrades {
            tls,
            snappy,
            deflate,
        } = up;
        c.tls = tls;
        c.snappy = snappy;
        c.deflate = deflate.is_some();
        for u in [
            tls.then_some(Upgrade::Tls),
            snappy.then_some(Upgrade::Snappy),
            deflate.map(|level| Upgrade::Deflate { level }),
        ]
        .into_iter()
        .flatten()
        {
            self.flush_ordered(id);
            self.push_ordered(Transmit::Upgrade {
                client: id,
                upgrade: u,
            });
            self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
            self.flush_ordered(id);
        }
        Ok(())
    }

    pub(super) fn sub(
        &mut self,
        now: Time,
        id: ClientId,
        topic: &str,
        channel: &str,
    ) -> Result<(), ProtocolError> {
        let t = self.get_or_create_topic(now, topic);
        let ch = self.get_or_create_channel(now, &t, channel);
        let max = self.opts.max_channel_consumers;
        let c = self.ch(ch);
        if max != 0 && c.clients.len() >= max {
            return Err(ProtocolError::fatal(
                "E_SUB_FAILED",
                format!("SUB failed consumers for {topic}:{channel} exceeds limit of {max}"),
            ));
        }
        c.clients.push(id);
        let (tn, cn) = (c.topic.clone(), c.name.clone());
        let cl = self.clients.get_mut(&id).expect("client exists");
        cl.state = ClientState::Subscribed;
        cl.channel = Some(ch);
        self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
        self.emit(
            now,
            EventKind::ClientSubscribed {
                client: id,
                topic: tn,
                channel: cn,
            },
        );
        Ok(())
    }

    /// Find an in-flight message owned by `client`, or nsqd's error text.
    /// The channel and message a client's FIN, REQ or TOUCH names (not yet checked to be in
    /// flight to it: the channel does that).
    fn in_flight_target(
        &self,
        id: ClientId,
        raw: &[u8; 16],
    ) -> Result<(ChannelId, MessageId), InFlightError> {
        let ch = self
            .clients
            .get(&id)
            .and_then(|c| c.channel)
            .ok_or(InFlightError::NotInFlight)?;
        let mid = MessageId::from_hex(raw).ok_or(InFlightError::NotInFlight)?;
        Ok((ch, mid))
    }

    pub(super) fn fin(
        &mut self,
        now: Time,
        id: ClientId,
        raw: &[u8; 16],
    ) -> Result<(), ProtocolError> {
        let failed = |e: InFlightError| in_flight_failed("FIN", raw, e);
        // The hot path: one client lookup (not `in_flight_target`'s and another), and one
        // index lookup finds, checks the owner and removes.
        let cl = self
            .clients
            .get_mut(&id)
            .ok_or_else(|| failed(InFlightError::NotInFlight))?;
        let ch = cl
            .channel
            .ok_or_else(|| failed(InFlightError::NotInFlight))?;
        let mid = MessageId::from_hex(raw).ok_or_else(|| failed(InFlightError::NotInFlight))?;
        let window = self.opts.e2e_window;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("a subscribed client's channel exists");
        c.finish(now, mid, id, window).map_err(failed)?;
        cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
        cl.finish_count += 1;
        self.out
            .finished(now, c, mid, |topic, channel| EventKind::Finished {
                topic,
                channel,
                id: mid,
                client: id,
            });
        self.settle(now, ch, true);
        Ok(())
    }

    pub(super) fn req(
        &mut self,
        now: Time,
        id: ClientId,
        raw: &[u8; 16],
        timeout_ms: u64,
    ) -> Result<(), ProtocolError> {
        let failed = |e: InFlightError| in_flight_failed("REQ", raw, e);
        // nsqd: time.Duration(ms) * time.Millisecond, clamped to 0..=max-req-timeout.
        let ns = (timeout_ms as i64).wrapping_mul(MILLISECOND as i64);
        let delay = if ns < 0 {
            0
        } else {
            (ns as u64).min(self.opts.max_req_timeout)
        };
        let (ch, mid) = self.in_flight_target(id, raw).map_err(failed)?;
        let msg = self.ch(ch).requeue(mid, id).map_err(failed)?;
        let cl = self.clients.get_mut(&id).expect("client exists");
        cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
        cl.requeue_count += 1;
        let due = (delay > 0).then(|| now.saturating_add(delay));
        let c = self.channels[ch.0 as usize].as_ref().expect("live channel");
        self.out.requeued(now, c, mid, id, delay, due);
        self.enter_channel(now, ch, msg, due);
        self.settle(now, ch, true);
        Ok(())
    }

    pub(super) fn touch(
        &mut self,
        now: Time,
        id: ClientId,
        raw: &[u8; 16],
    ) -> Result<(), ProtocolError> {
        let failed = |e: InFlightError| in_flight_failed("TOUCH", raw, e);
        let (ch, mid) = self.in_flight_target(id, raw).map_err(failed)?;
        let msg_timeout = self.clients[&id].settings.msg_timeout;
        let max = self.opts.max_msg_timeout;
        let deadline = self
            .ch(ch)
            .touch(now, mid, id, msg_timeout, max)
            .map_err(failed)?;
        self.emit_ch(now, ch, |topic, channel| EventKind::Touched {
            topic,
            channel,
            id: mid,
            client: id,
            deadline,
        });
        self.settle(now, ch, false);
        Ok(())
    }
}

/// DPUB's delay as nsqd computes it (and the decoder's range check):
/// `time.Duration(ms) * time.Millisecond`, which wraps in int64.
pub(super) fn dpub_defer(defer_ms: u64) -> Nanos {
    (defer_ms as i64).wrapping_mul(MILLISECOND as i64) as u64
}

/// nsqd's soft error for FIN, REQ or TOUCH (`cmd`) of message `raw` that failed for `reason`:
/// `E_FIN_FAILED FIN <id> failed ID not in flight`, …
fn in_flight_failed(cmd: &str, raw: &[u8; 16], reason: InFlightError) -> ProtocolError {
    let code = match cmd {
        "FIN" => "E_FIN_FAILED",
        "REQ" => "E_REQ_FAILED",
        _ => "E_TOUCH_FAILED",
    };
    let id = String::from_utf8_lossy(raw);
    ProtocolError::soft(code, format!("{cmd} {id} failed {reason}"))
}
