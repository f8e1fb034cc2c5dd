//! The TCP listener: one task per connection. It reads bytes into the broker task and writes
//! what the broker sends back, in order, performing the TLS / snappy / deflate upgrades that
//! IDENTIFY negotiates at the point in the stream where the broker asks for them.

use super::driver::{within_deadline, DriverHandle, Out};
use super::link::Link;
use crate::common::codec::{Codec, Deflate};
use crate::net::Conn;
use bytes::{Bytes, BytesMut};
use nsqlab_core::Upgrade;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_util::either::Either;

/// Accept connections until `shutdown` flips.
pub async fn serve(
    listener: crate::net::Listener,
    driver: DriverHandle,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    while let Some((stream, addr)) = crate::net::accept_any(&listener, &mut shutdown, "TCP").await {
        tracing::info!("TCP: new client({addr})");
        let conn = Connection {
            stream: Some(Either::Left(stream)),
            codec: Codec::Plain,
            remote: addr,
            acceptor: acceptor.clone(),
            write_timeout: driver.write_timeout(),
        };
        let (driver, shutdown) = (driver.clone(), shutdown.clone());
        tokio::spawn(async move {
            conn.run(driver, shutdown).await;
            crate::common::connection_closed();
        });
    }
    listener.remove_socket();
}

/// The socket (TCP or unix), plain or upgraded to TLS.
type Stream = Either<Conn, Box<tokio_rustls::server::TlsStream<Conn>>>;

/// The connection's stream: it is taken only by a TLS handshake, and a failed one ends the
/// connection, so it is always there when read or written.
fn io(s: &mut Option<Stream>) -> &mut Stream {
    s.as_mut().expect("a stream outside a TLS handshake")
}

/// A connection reads up to this much at once.
const READ: usize = 64 * 1024;

struct Connection {
    stream: Option<Stream>,
    codec: Codec,
    remote: String,
    acceptor: Option<TlsAcceptor>,
    /// nsqd's write deadline: a client that reads nothing for this long is disconnected,
    /// instead of holding its connection (and what it was sent) for ever.
    write_timeout: Option<Duration>,
}

impl Connection {
    async fn run(mut self, driver: DriverHandle, mut shutdown: watch::Receiver<bool>) {
        // The partition this client lives in (it may move to its topic's).
        let Some((mut link, mut out_rx)) = Link::connect(driver, self.remote.clone()).await else {
            return;
        };
        let mut rbuf = BytesMut::with_capacity(READ);
        let mut plain = Vec::new();
        let mut wbuf: Vec<u8> = Vec::new();
        // The client closed its sending side: nothing more is read; the broker answers what
        // it owes and closes (as nsqd, which reads on to the end of the stream).
        let mut eof = false;
        'conn: loop {
            tokio::select! {
                // Output first: an upgrade the broker asked for must happen before the next
                // read, which may already be the client's TLS handshake.
                biased;
                o = out_rx.recv() => {
                    let Some(o) = o else { link.broker_closed(); break };
                    // Everything already queued goes out in one write.
                    let mut next = Some(o);
                    while let Some(o) = next.take() {
                        match o {
                            // The first is written as it came, not copied; only more
                            // queued behind it are appended.
                            Out::Data(d) if wbuf.is_empty() => wbuf = d,
                            Out::Data(d) => wbuf.extend_from_slice(&d),
                            Out::Close => {
                                link.broker_closed();
                                let _ = self.write(&mut wbuf).await;
                                let _ = io(&mut self.stream).shutdown().await;
                                break 'conn;
                            }
                            Out::Upgrade(u) => {
                                if self.write(&mut wbuf).await.is_err() {
                                    break 'conn;
                                }
                                match self.upgrade(u).await {
                                    Err(e) => {
                                        tracing::warn!("[{}] upgrade {u:?} failed - {e}", self.remote);
                                        break 'conn;
                                    }
                                    // Before anything read over TLS reaches the broker.
                                    Ok(Some(peer)) => {
                                        if !link.tls(peer).await {
                                            break 'conn;
                                        }
                                    }
                                    Ok(None) => {}
                                }
                            }
                            Out::Moved(to) => {
                                if !link.moved(to).await {
                                    break 'conn;
                                }
                            }
                            Out::WriteTimeout(t) => self.write_timeout = t,
                        }
                        next = out_rx.try_recv().ok();
                    }
                    if let Err(e) = self.write(&mut wbuf).await {
                        tracing::warn!("PROTOCOL(V2): [{}] error sending - {e}", self.remote);
                        break;
                    }
                }
                r = io(&mut self.stream).read_buf(&mut rbuf), if !eof => {
                    match r {
                        Ok(0) => {
                            eof = true;
                            if !link.eof().await {
                                break 'conn;
                            }
                            continue;
                        }
                        Err(_) => break,
                        Ok(_) => {}
                    }
                    if let Codec::Plain = self.codec {
                        // What was read goes to the broker as it is, not copied.
                        let data = rbuf.split().freeze();
                        if !link.bytes(data).await {
                            break 'conn;
                        }
                    } else {
                        plain.clear();
                        let decoded = self.codec.decode(&rbuf, &mut plain);
                        rbuf.clear();
                        if let Err(e) = decoded {
                            tracing::warn!("[{}] {e}", self.remote);
                            break;
                        }
                        // In pieces of at most READ bytes: the broker's queue is bounded in
                        // messages, so this bounds it in bytes too, however much a read
                        // decompresses to.
                        for piece in plain.chunks(READ) {
                            if !link.bytes(Bytes::copy_from_slice(piece)).await {
                                break 'conn;
                            }
                        }
                    }
                    // Reads go on into what is left of the buffer (small ones share it) until
                    // it runs low; never empty, or the next read would look like EOF.
                    if rbuf.capacity() < READ / 4 {
                        rbuf.reserve(READ);
                    }
                }
                _ = shutdown.changed() => break,
            }
        }
        link.close().await;
    }

    /// Encode and write what is buffered, within the write deadline.
    async fn write(&mut self, wbuf: &mut Vec<u8>) -> std::io::Result<()> {
        if wbuf.is_empty() {
            return Ok(());
        }
        let write = async {
            match &mut self.codec {
                Codec::Plain => io(&mut self.stream).write_all(wbuf).await,
                codec => {
                    let mut wire = Vec::with_capacity(wbuf.len() / 2 + 64);
                    codec.encode(wbuf, &mut wire)?;
                    io(&mut self.stream).write_all(&wire).await
                }
            }
        };
        let result = within_deadline(self.write_timeout, write)
            .await
            .unwrap_or_else(|| Err(std::io::ErrorKind::TimedOut.into()));
        wbuf.clear();
        result
    }

    /// Apply an upgrade; a TLS handshake gives the session (its version, cipher suite and the
    /// subject common name of a client certificate).
    async fn upgrade(&mut self, u: Upgrade) -> anyhow::Result<Option<nsqlab_core::TlsPeer>> {
        match u {
            Upgrade::Tls => {
                let acceptor = self
                    .acceptor
                    .clone()
                    .ok_or_else(|| anyhow::anyhow!("TLS is not configured"))?;
                let Some(Either::Left(tcp)) = self.stream.take() else {
                    anyhow::bail!("TLS upgrade on an upgraded stream");
                };
                let tls =
                    tokio::time::timeout(Duration::from_secs(5), acceptor.accept(tcp)).await??;
                let session = tls.get_ref().1;
                let peer = nsqlab_core::TlsPeer {
                    common_name: session
                        .peer_certificates()
                        .and_then(|certs| certs.first())
                        .and_then(|c| super::tls::common_name(c))
                        .unwrap_or_default(),
                    version: session.protocol_version().map_or(0, u16::from),
                    cipher_suite: session
                        .negotiated_cipher_suite()
                        .map_or(0, |s| u16::from(s.suite())),
                };
                self.stream = Some(Either::Right(Box::new(tls)));
                return Ok(Some(peer));
            }
            Upgrade::Snappy => self.codec = Codec::Snappy(Box::default()),
            Upgrade::Deflate { level } => self.codec = Codec::Deflate(Deflate::new(level)),
        }
        Ok(None)
    }
}
