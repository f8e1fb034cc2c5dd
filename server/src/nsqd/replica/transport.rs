//! Raft messages between nodes over TCP: one outgoing connection per peer, kept open and
//! opened again when it breaks, and a listener for the peers' connections to this node.
//!
//! What could not be delivered is said back ([`Report`]), for the node's
//! `report_unreachable` and `report_snapshot`: raft then probes the peer again instead of
//! waiting for an answer that will not come. A snapshot is reported delivered once it is
//! written to the peer's connection.
//!
//! # Format
//! Each message is a frame: `len:u32` (little-endian) then `len` bytes of the protobuf
//! `eraftpb.Message` (`nsqlab_core::replica::encode_message`). A frame over
//! [`MAX_FRAME`] closes the connection. Messages addressed to another node are dropped.

use nsqlab_core::replica::raft::eraftpb::MessageType;
use nsqlab_core::replica::raft::prelude::Message;
use nsqlab_core::replica::{decode_frame, encode_message, NodeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The largest frame read (a snapshot of everything a partition owes fits well within).
pub const MAX_FRAME: usize = 256 << 20;

/// How long to wait before connecting to a peer again after a failure (doubling up to
/// [`MAX_RETRY`]).
const FIRST_RETRY: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(1);

/// Room for what a connection writes or reads at a time: frames up to this size (an append
/// of up to raft's 1 MiB per message among them) go out in one write per batch and come in
/// with a few reads, not two system calls a frame.
const BUFFER: usize = 1 << 20;

/// What the transport tells the node about messages it sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A message to this peer was lost (no connection, or it broke).
    Unreachable(NodeId),
    /// A snapshot to this peer was written out (`true`) or lost.
    Snapshot { to: NodeId, delivered: bool },
}

/// Sends raft messages to peers (see the [module docs](self)).
pub struct Transport {
    me: NodeId,
    peers: HashMap<NodeId, (String, mpsc::UnboundedSender<Message>)>,
    reports: mpsc::UnboundedSender<Report>,
}

impl Transport {
    /// Start: accept peers' connections on `listener` (their messages arrive on `inbox`) and
    /// connect to each of `peers` (id and `host:port`) when there is something to send.
    /// Reports go to `reports`.
    pub fn start(
        me: NodeId,
        listener: TcpListener,
        peers: &[(NodeId, String)],
        inbox: mpsc::UnboundedSender<Received>,
        reports: mpsc::UnboundedSender<Report>,
    ) -> Transport {
        tokio::spawn(accept(me, listener, inbox));
        let mut t = Transport {
            me,
            peers: HashMap::new(),
            reports,
        };
        for (id, addr) in peers {
            t.add_peer(*id, addr);
        }
        t
    }

    /// Reach node `id` at `addr` from now on (a node that joined, or moved).
    pub fn add_peer(&mut self, id: NodeId, addr: &str) {
        if id == self.me || addr.is_empty() {
            return;
        }
        if self.peers.get(&id).is_some_and(|(a, _)| a == addr) {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(sender(id, addr.to_string(), rx, self.reports.clone()));
        // The old sender, if any, ends with its channel.
        self.peers.insert(id, (addr.to_string(), tx));
    }

    /// Stop reaching node `id` (it left the group).
    pub fn remove_peer(&mut self, id: NodeId) {
        self.peers.remove(&id);
    }

    /// The peers reached, and where.
    pub fn peers(&self) -> Vec<(NodeId, String)> {
        let mut v: Vec<_> = self
            .peers
            .iter()
            .map(|(id, (a, _))| (*id, a.clone()))
            .collect();
        v.sort();
        v
    }

    /// Send `m` to its addressee (dropped, and reported, if it is not a known peer).
    pub fn send(&self, m: Message) -> Result<(), Report> {
        match self.peers.get(&m.to) {
            Some((_, tx)) => tx.send(m).map_err(|m| lost(&m.0)),
            None => Err(lost(&m)),
        }
    }
}

/// A message received, with the frame it came in (its entries' data are ranges of it:
/// [`nsqlab_core::replica::decode_frame`]), for [`nsqlab_core::replica::Node::handle_frame`].
pub type Received = (Message, Arc<[u8]>);

fn lost(m: &Message) -> Report {
    if m.get_msg_type() == MessageType::MsgSnapshot {
        Report::Snapshot {
            to: m.to,
            delivered: false,
        }
    } else {
        Report::Unreachable(m.to)
    }
}

/// One peer's outgoing connection: what is queued goes out in order, in as few writes as
/// it takes; a broken connection loses what it held (reported) and is opened again.
async fn sender(
    to: NodeId,
    addr: String,
    mut rx: mpsc::UnboundedReceiver<Message>,
    reports: mpsc::UnboundedSender<Report>,
) {
    let mut retry = FIRST_RETRY;
    let mut conn: Option<BufWriter<TcpStream>> = None;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(m) = rx.try_recv() {
            batch.push(m);
        }
        if conn.is_none() {
            match TcpStream::connect(&addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    conn = Some(BufWriter::with_capacity(BUFFER, s));
                    retry = FIRST_RETRY;
                }
                Err(e) => {
                    tracing::debug!("raft: node {to} at {addr}: {e}");
                    for m in &batch {
                        let _ = reports.send(lost(m));
                    }
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(MAX_RETRY);
                    continue;
                }
            }
        }
        let w = conn.as_mut().expect("connected");
        let mut written = Ok(());
        for m in &batch {
            let b = encode_message(m);
            written = async {
                w.write_all(&(b.len() as u32).to_le_bytes()).await?;
                w.write_all(&b).await
            }
            .await;
            if written.is_err() {
                break;
            }
        }
        if written.is_ok() {
            written = w.flush().await;
        }
        match written {
            Ok(()) => {
                for m in batch
                    .iter()
                    .filter(|m| m.get_msg_type() == MessageType::MsgSnapshot)
                {
                    let _ = reports.send(Report::Snapshot {
                        to: m.to,
                        delivered: true,
                    });
                }
            }
            Err(e) => {
                tracing::debug!("raft: node {to} at {addr}: {e}");
                conn = None;
                for m in &batch {
                    let _ = reports.send(lost(m));
                }
            }
        }
    }
}

async fn accept(me: NodeId, listener: TcpListener, inbox: mpsc::UnboundedSender<Received>) {
    loop {
        match listener.accept().await {
            Ok((s, peer)) => {
                let _ = s.set_nodelay(true);
                let inbox = inbox.clone();
                tokio::spawn(async move {
                    if let Err(e) = receive(me, s, inbox).await {
                        tracing::debug!("raft: connection from {peer}: {e}");
                    }
                });
            }
            Err(e) => {
                tracing::warn!("raft: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn receive(
    me: NodeId,
    s: TcpStream,
    inbox: mpsc::UnboundedSender<Received>,
) -> std::io::Result<()> {
    let mut s = BufReader::with_capacity(BUFFER, s);
    loop {
        let len = match s.read_u32_le().await {
            Ok(n) => n as usize,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        };
        if len > MAX_FRAME {
            return Err(std::io::Error::other(format!(
                "a frame of {len} bytes (at most {MAX_FRAME})"
            )));
        }
        // A buffer per frame: the entries decoded from it are ranges of it, and so are the
        // bodies the node applies from them: no copies.
        let mut frame: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
        s.read_exact(Arc::get_mut(&mut frame).expect("a new frame is not shared"))
            .await?;
        match decode_frame(&frame) {
            Ok(m) if m.to == me => {
                if inbox.send((m, frame)).is_err() {
                    return Ok(());
                }
            }
            Ok(m) => tracing::debug!("raft: a message for node {} reached node {me}", m.to),
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(from: NodeId, to: NodeId, t: MessageType, index: u64) -> Message {
        let mut m = Message::default();
        m.set_msg_type(t);
        m.from = from;
        m.to = to;
        m.index = index;
        m
    }

    async fn node(
        me: NodeId,
        listener: TcpListener,
        peers: &[(NodeId, String)],
    ) -> (
        Transport,
        mpsc::UnboundedReceiver<Received>,
        mpsc::UnboundedReceiver<Report>,
    ) {
        let (itx, irx) = mpsc::unbounded_channel();
        let (rtx, rrx) = mpsc::unbounded_channel();
        (Transport::start(me, listener, peers, itx, rtx), irx, rrx)
    }

    async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("within 20 s")
    }

    #[tokio::test]
    async fn messages_arrive_in_order_and_a_snapshot_is_reported_delivered() {
        let l1 = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let l2 = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let peers = vec![
            (1, l1.local_addr().expect("addr").to_string()),
            (2, l2.local_addr().expect("addr").to_string()),
        ];
        let (t1, _in1, mut r1) = node(1, l1, &peers).await;
        let (_t2, mut in2, _r2) = node(2, l2, &peers).await;
        for i in 0..100 {
            t1.send(msg(1, 2, MessageType::MsgAppend, i))
                .expect("sends");
        }
        t1.send(msg(1, 2, MessageType::MsgSnapshot, 100))
            .expect("sends");
        for i in 0..=100 {
            let (m, _) = within(in2.recv()).await.expect("a message");
            assert_eq!((m.from, m.to, m.index), (1, 2, i));
        }
        assert_eq!(
            within(r1.recv()).await,
            Some(Report::Snapshot {
                to: 2,
                delivered: true
            })
        );
        // Not a peer: reported at once.
        assert_eq!(
            t1.send(msg(1, 9, MessageType::MsgAppend, 0)),
            Err(Report::Unreachable(9))
        );
    }

    #[tokio::test]
    async fn a_peer_that_is_down_is_reported_and_reached_once_it_is_up() {
        // Take a free port for node 2, and leave it closed for now.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
            l.local_addr().expect("addr").port()
        };
        let l1 = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let peers = vec![
            (1, l1.local_addr().expect("addr").to_string()),
            (2, format!("127.0.0.1:{port}")),
        ];
        let (t1, _in1, mut r1) = node(1, l1, &peers).await;
        t1.send(msg(1, 2, MessageType::MsgHeartbeat, 1))
            .expect("queued");
        assert_eq!(within(r1.recv()).await, Some(Report::Unreachable(2)));
        t1.send(msg(1, 2, MessageType::MsgSnapshot, 2))
            .expect("queued");
        // (After a backoff the snapshot is tried, and lost.)
        assert_eq!(
            within(r1.recv()).await,
            Some(Report::Snapshot {
                to: 2,
                delivered: false
            })
        );
        let l2 = TcpListener::bind(("127.0.0.1", port)).await.expect("binds");
        let (_t2, mut in2, _r2) = node(2, l2, &peers).await;
        // Raft sends again (heartbeats, probes): one of them gets through.
        let got = within(async {
            loop {
                t1.send(msg(1, 2, MessageType::MsgHeartbeat, 3))
                    .expect("queued");
                if let Ok(Some((m, _))) =
                    tokio::time::timeout(Duration::from_millis(200), in2.recv()).await
                {
                    break m;
                }
            }
        })
        .await;
        assert_eq!((got.from, got.index), (1, 3));
    }

    #[tokio::test]
    async fn an_oversized_frame_or_a_message_for_another_node_is_not_taken() {
        let l2 = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = l2.local_addr().expect("addr");
        let (_t2, mut in2, _r2) = node(2, l2, &[]).await;
        let mut s = TcpStream::connect(addr).await.expect("connects");
        // For node 3: dropped. Then one for node 2: taken.
        for to in [3, 2] {
            let b = encode_message(&msg(1, to, MessageType::MsgAppend, to));
            s.write_all(&(b.len() as u32).to_le_bytes())
                .await
                .expect("writes");
            s.write_all(&b).await.expect("writes");
        }
        let (m, frame) = within(in2.recv()).await.expect("a message");
        assert_eq!(m.to, 2);
        assert_eq!(decode_frame(&frame).expect("its frame").to, 2);
        s.write_all(&((MAX_FRAME as u32) + 1).to_le_bytes())
            .await
            .expect("writes");
        // The connection is closed: a read sees its end.
        let mut b = [0u8; 1];
        let n = within(s.read(&mut b)).await.unwrap_or(0);
        assert_eq!(n, 0);
    }
}
