//! A connection's side of the broker tasks, the same for every transport (TCP, `/ws/nsq`):
//! connect to a partition, send the client's input to the partition it is in, follow it
//! when it moves ([`Out::Moved`]), and say when the connection is gone.

use super::driver::{DriverHandle, Out, Part, ToDriver};
use bytes::Bytes;
use nsqlab_core::partition::ClientInput;
use nsqlab_core::{ClientId, TlsPeer};
use tokio::sync::{mpsc, oneshot};

/// A client's link to the partition it is in.
pub struct Link {
    part: Part,
    client: ClientId,
    /// The client closed its sending side (sticky: a partition it moves to hears it too).
    eof: bool,
    /// The broker already forgot this client (it asked the connection to close).
    broker_closed: bool,
}

impl Link {
    /// Connect a new client from `remote` to a partition; its output arrives on the receiver.
    /// `None` when the server is stopping.
    pub async fn connect(
        driver: DriverHandle,
        remote: String,
    ) -> Option<(Link, mpsc::UnboundedReceiver<Out>)> {
        let (out, out_rx) = mpsc::unbounded_channel();
        let (reply, reply_rx) = oneshot::channel();
        let part = driver.pick();
        drop(driver);
        if !part.send(ToDriver::Connect { remote, out, reply }).await {
            return None;
        }
        let client = reply_rx.await.ok()?;
        let link = Link {
            part,
            client,
            eof: false,
            broker_closed: false,
        };
        Some((link, out_rx))
    }

    pub fn client(&self) -> ClientId {
        self.client
    }

    async fn send(&self, input: ClientInput<Bytes>) -> bool {
        let client = self.client;
        self.part.send(ToDriver::Client { client, input }).await
    }

    /// Bytes the client sent; false when the broker is gone.
    pub async fn bytes(&self, data: Bytes) -> bool {
        self.send(ClientInput::Bytes(data)).await
    }

    /// The client closed its sending side.
    pub async fn eof(&mut self) -> bool {
        self.eof = true;
        self.send(ClientInput::Eof).await
    }

    /// The client's TLS handshake finished.
    pub async fn tls(&self, peer: TlsPeer) -> bool {
        self.send(ClientInput::Tls(peer)).await
    }

    /// The client now lives in partition `to`: tell the one it left that nothing more comes
    /// from here, then send everything to `to`.
    pub async fn moved(&mut self, to: Part) -> bool {
        if !self.send(ClientInput::Drained).await {
            return false;
        }
        self.part = to;
        !self.eof || self.send(ClientInput::Eof).await
    }

    /// The broker asked to close the connection (it has forgotten the client).
    pub fn broker_closed(&mut self) {
        self.broker_closed = true;
    }

    /// The connection is gone: the broker forgets the client (unless it already has).
    pub async fn close(self) {
        if !self.broker_closed {
            self.send(ClientInput::Closed).await;
        }
    }
}
