//! The TCP listener: one task per connection, reading bytes into the broker task and writing
//! what the broker sends back, in order.

use super::driver::{DriverHandle, Out, ToDriver};
use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

/// Accept connections until `shutdown` flips.
pub async fn serve(
    listener: TcpListener,
    driver: DriverHandle,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, addr)) => {
                    tracing::info!("TCP: new client({addr})");
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(stream, addr.to_string(), driver.clone(), shutdown.clone()));
                }
                Err(e) => tracing::warn!("temporary Accept() failure - {e}"),
            },
            _ = shutdown.changed() => break,
        }
    }
}

async fn connection(
    mut stream: TcpStream,
    remote: String,
    driver: DriverHandle,
    mut shutdown: watch::Receiver<bool>,
) {
    let (out_tx, mut out_rx) = mpsc::unbounded_channel();
    let (reply_tx, reply_rx) = oneshot::channel();
    if !driver
        .send(ToDriver::Connect {
            remote: remote.clone(),
            out: out_tx,
            reply: reply_tx,
        })
        .await
    {
        return;
    }
    let Ok(client) = reply_rx.await else { return };
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut wbuf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut told_driver = false;
    loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(64 * 1024);
        }
        tokio::select! {
            r = stream.read_buf(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let data = buf.split().freeze();
                    if !driver.send(ToDriver::Bytes { client, data }).await {
                        break;
                    }
                }
            },
            o = out_rx.recv() => {
                let Some(o) = o else { told_driver = true; break };
                // Coalesce everything already queued into one write.
                let mut next = Some(o);
                let mut close = false;
                while let Some(o) = next.take() {
                    match o {
                        Out::Data(d) => wbuf.extend_from_slice(&d),
                        Out::Close => { close = true; break }
                        Out::Upgrade(u) => {
                            tracing::warn!("[{remote}] upgrade {u:?} requested but not supported yet; closing");
                            close = true;
                            break;
                        }
                    }
                    next = out_rx.try_recv().ok();
                }
                if !wbuf.is_empty() {
                    if stream.write_all(&wbuf).await.is_err() {
                        break;
                    }
                    wbuf.clear();
                }
                if close {
                    // The broker already forgot this client.
                    told_driver = true;
                    let _ = stream.shutdown().await;
                    break;
                }
            }
            _ = shutdown.changed() => break,
        }
    }
    if !told_driver {
        driver.send(ToDriver::Closed { client }).await;
    }
}
