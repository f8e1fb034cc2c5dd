//! A connected client, as the broker tracks it.

use crate::event::Name;
use crate::protocol::decode::ClientState;
use crate::protocol::identify::{ClientSettings, IdentifyData};
use crate::time::Time;
use crate::{ChannelId, ClientId};

/// A client's TLS session, once its handshake is done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsPeer {
    /// The subject common name of the client's certificate; empty without one.
    pub common_name: String,
    /// The protocol version's number (0x0303: TLS 1.2, 0x0304: TLS 1.3).
    pub version: u16,
    /// The cipher suite's IANA number (0xc02f: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256).
    pub cipher_suite: u16,
}

#[derive(Debug, Clone)]
pub struct Client {
    pub id: ClientId,
    pub remote_address: String,
    /// The 4-byte magic has been read.
    pub(crate) magic_ok: bool,
    pub state: ClientState,
    /// Bytes received but not yet a whole command.
    pub(crate) inbuf: Vec<u8>,
    pub settings: ClientSettings,
    pub identify: IdentifyData,
    pub channel: Option<ChannelId>,
    pub ready_count: i64,
    pub in_flight_count: u64,
    pub message_count: u64,
    pub finish_count: u64,
    pub requeue_count: u64,
    pub connect_ts: Time,
    /// When nsqd would have started reading the current command (the read deadline counts
    /// from here).
    pub(crate) read_base: Time,
    /// The key of this client's read timer, when armed. It may be earlier than the read
    /// deadline (which moves on with every command): on firing it is re-armed, not acted on.
    pub(crate) read_armed: Option<Time>,
    /// The TLS session once its handshake is done (all empty and 0 before): the subject
    /// common name of the client's certificate, which nsqd sends to the auth server as
    /// `common_name`, and the version and cipher suite `/stats` shows.
    pub tls_peer: TlsPeer,
    pub tls: bool,
    pub snappy: bool,
    pub deflate: bool,
    /// Messages published per topic (nsqd's `pub_counts`), in the order of first publish.
    pub pub_counts: Vec<(Name, u64)>,
    /// The topic this client published to last, so that the next publish to it needs no
    /// name check and no search.
    pub(crate) last_pub: Option<LastPub>,
    /// Frames waiting for the next transmit (`Broker::poll_output`).
    pub(crate) out: Vec<u8>,
    /// How much output the last transmit carried: the next buffer starts that big (up to
    /// [`OUT_HINT_MAX`]) instead of doubling its way there.
    pub(crate) out_hint: usize,
    pub(crate) out_queued: bool,
    /// Authorizations from the auth server (after AUTH).
    pub auth: Option<crate::auth::AuthState>,
    /// The secret AUTH sent (kept for refreshes when the TTL runs out).
    pub(crate) auth_secret: Vec<u8>,
    /// Input is held until the auth server answers.
    pub(crate) auth_wait: bool,
    /// An MPUB published a step at a time (see `Broker::continue_mpub`): its messages not yet
    /// published. Input is held until it is done.
    pub(crate) mpub_rest: Option<Box<MpubRest>>,
    /// How far the MPUB at the front of its input was walked (see `decode::MpubWalk`).
    pub(crate) mpub_walk: std::cell::Cell<crate::protocol::decode::MpubWalk>,
    /// Output waits for the store (a publish not yet acknowledged by it).
    pub(crate) hold: Option<crate::store::Hold>,
    /// Input is held until another partition answers a forwarded publish (this one).
    pub(crate) forward_wait: Option<&'static str>,
    /// Input is held until the client can move to another partition (its output is no longer
    /// held, and its last move has settled).
    pub(crate) migrate_wait: bool,
    /// It moved here, and input may still be on its way from the partition it left.
    pub(crate) settling: bool,
    /// It moved once to publish: later publishes elsewhere are forwarded (no ping-pong).
    pub(crate) moved_to_publish: bool,
}

impl Client {
    /// The output buffer to append frames to.
    #[inline]
    pub(crate) fn out_buf(&mut self) -> &mut Vec<u8> {
        if self.out.capacity() == 0 {
            self.out.reserve(self.out_hint);
        }
        &mut self.out
    }

    /// Take the output for a transmit.
    pub(crate) fn take_out(&mut self) -> Vec<u8> {
        self.out_hint = self.out.len().min(OUT_HINT_MAX);
        std::mem::take(&mut self.out)
    }

    pub(crate) fn new(
        id: ClientId,
        remote_address: String,
        now: Time,
        settings: ClientSettings,
    ) -> Self {
        // nsqd starts client_id and hostname as the host part of the remote address.
        let host = match remote_address.rsplit_once(':') {
            Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']').to_string(),
            None => remote_address.clone(),
        };
        let identify = IdentifyData {
            client_id: host.clone(),
            hostname: host,
            ..IdentifyData::default()
        };
        Self {
            id,
            remote_address,
            magic_ok: false,
            state: ClientState::Init,
            inbuf: Vec::new(),
            settings,
            identify,
            channel: None,
            ready_count: 0,
            in_flight_count: 0,
            message_count: 0,
            finish_count: 0,
            requeue_count: 0,
            connect_ts: now,
            read_base: now,
            read_armed: None,
            tls_peer: Default::default(),
            tls: false,
            snappy: false,
            deflate: false,
            pub_counts: Vec::new(),
            last_pub: None,
            out: Vec::new(),
            out_hint: 0,
            out_queued: false,
            auth: None,
            auth_secret: Vec::new(),
            auth_wait: false,
            mpub_rest: None,
            mpub_walk: Default::default(),
            hold: None,
            forward_wait: None,
            migrate_wait: false,
            settling: false,
            moved_to_publish: false,
        }
    }

    /// The host part of the remote address.
    pub fn remote_ip(&self) -> &str {
        match self.remote_address.rsplit_once(':') {
            Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']'),
            None => &self.remote_address,
        }
    }

    /// nsqd's `IsReadyForMessages`: subscribed, and fewer messages in flight than its RDY.
    pub fn is_ready(&self) -> bool {
        self.state == ClientState::Subscribed
            && self.ready_count > 0
            && (self.in_flight_count as i64) < self.ready_count
    }

    /// Subscribed with RDY above 0: it takes messages, now or once it finishes some.
    pub fn wants_messages(&self) -> bool {
        self.state == ClientState::Subscribed && self.ready_count > 0
    }

    /// When the client is closed for not sending anything, if heartbeats are on.
    pub(crate) fn read_deadline(&self) -> Option<Time> {
        self.settings
            .heartbeat_interval
            .map(|hb| self.read_base.saturating_add(hb.saturating_mul(2)))
    }
}

/// The largest buffer a client's output starts with.
pub(crate) const OUT_HINT_MAX: usize = 1 << 20;

/// A client's last published topic: the name (a clone of the topic's own, which keeps the
/// pointer unique while held), the topic's slot and the entry in `pub_counts`.
#[derive(Debug, Clone)]
pub(crate) struct LastPub {
    pub name: Name,
    pub slot: u32,
    pub count: usize,
}

/// What is left of a large MPUB.
#[derive(Debug, Clone)]
pub(crate) struct MpubRest {
    pub topic: crate::protocol::command::TopicName,
    pub bodies: MpubPending,
    /// The store's ticket for the last step that went to the store.
    pub ticket: Option<crate::store::Ticket>,
}

/// An MPUB's messages not yet published: a list (an MPUB from elsewhere), or the shared
/// batch a large one was decoded into.
#[derive(Debug, Clone)]
pub(crate) enum MpubPending {
    List(std::vec::IntoIter<crate::message::Body>),
    Batch(crate::protocol::decode::MpubBatch),
}

impl MpubPending {
    pub fn is_empty(&self) -> bool {
        match self {
            MpubPending::List(l) => l.len() == 0,
            MpubPending::Batch(b) => b.is_empty(),
        }
    }

    /// The next step's bodies (a list short enough is handed on as it is: an MPUB of a few
    /// hundred messages costs no second vector).
    pub fn step(&mut self) -> std::vec::IntoIter<crate::message::Body> {
        let n = crate::protocol::decode::MPUB_STEP;
        match self {
            MpubPending::List(l) if l.len() <= n => std::mem::take(l),
            MpubPending::List(l) => l.by_ref().take(n).collect::<Vec<_>>().into_iter(),
            MpubPending::Batch(b) => b.take(n).into_iter(),
        }
    }
}
