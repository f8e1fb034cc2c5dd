//! One nsqd connection of the tools, set up as go-nsq sets one up: the magic and IDENTIFY
//! (with feature negotiation), then each upgrade nsqd's answer agrees to, in go-nsq's order —
//! TLS, then deflate or snappy — each confirmed by an `OK` in the new layer, then AUTH when
//! the answer says `auth_required` (without a configured secret: go-nsq's "Auth Required").

use super::ClientConfig;
use crate::common::codec::{Codec, Deflate};
use nsqlab_core::protocol::{decode_frame, Command, Frame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A byte stream: TCP, or TLS over it.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A set-up connection: its stream, the compression on it, and the plaintext read so far.
pub struct Conn {
    io: Box<dyn Io>,
    codec: Codec,
    plain: Vec<u8>,
    tmp: Vec<u8>,
}

/// What the handshake does next.
#[derive(Debug, PartialEq)]
enum Step {
    Send(Vec<u8>),
    Tls,
    Snappy,
    Deflate(u32),
    Done,
}

#[derive(Debug, PartialEq)]
enum State {
    Identifying,
    /// An upgrade is done; its `OK` comes in the new layer.
    Upgraded,
    Authing,
    Done,
}

/// The handshake's decisions, apart from the I/O.
struct Handshake {
    identify: serde_json::Value,
    secret: String,
    state: State,
    upgrades: std::collections::VecDeque<Step>,
    auth: bool,
}

impl Handshake {
    fn new(cfg: &ClientConfig) -> Self {
        Handshake {
            identify: serde_json::json!({
                "client_id": crate::common::hostname(),
                "hostname": crate::common::hostname(),
                "feature_negotiation": true,
                "heartbeat_interval": cfg.heartbeat_interval.as_millis() as i64,
                "user_agent": cfg.user_agent,
                "tls_v1": cfg.tls_v1,
                "snappy": cfg.snappy,
                "deflate": cfg.deflate,
                "deflate_level": cfg.deflate_level,
            }),
            secret: cfg.auth_secret.clone(),
            state: State::Identifying,
            upgrades: Default::default(),
            auth: false,
        }
    }

    /// What to send first.
    fn start(&self) -> Vec<u8> {
        let mut out = b"  V2".to_vec();
        let body = serde_json::to_vec(&self.identify).expect("identify");
        Command::Identify(body).encode(&mut out);
        out
    }

    /// Take the next frame: the next step, if any; an error ends the connection.
    fn next(&mut self, f: Frame) -> Result<Option<Step>, String> {
        let body = match f {
            Frame::Response(b) if b == b"_heartbeat_" => {
                return Ok(Some(Step::Send(Command::Nop.to_bytes())));
            }
            Frame::Response(b) => b,
            Frame::Error(e) => return Err(String::from_utf8_lossy(&e).into_owned()),
            _ => return Ok(None),
        };
        match self.state {
            State::Identifying => {
                let answer: serde_json::Value =
                    serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                if answer["tls_v1"] == true {
                    self.upgrades.push_back(Step::Tls);
                }
                if answer["deflate"] == true {
                    let level = answer["deflate_level"].as_u64().unwrap_or(6).clamp(1, 9);
                    self.upgrades.push_back(Step::Deflate(level as u32));
                }
                if answer["snappy"] == true {
                    self.upgrades.push_back(Step::Snappy);
                }
                self.auth = answer["auth_required"] == true;
                self.advance().map(Some)
            }
            State::Upgraded => self.advance().map(Some),
            State::Authing | State::Done => {
                self.state = State::Done;
                Ok(Some(Step::Done))
            }
        }
    }

    fn advance(&mut self) -> Result<Step, String> {
        if let Some(u) = self.upgrades.pop_front() {
            self.state = State::Upgraded;
            return Ok(u);
        }
        if self.auth {
            if self.secret.is_empty() {
                return Err("Auth Required".into());
            }
            self.state = State::Authing;
            return Ok(Step::Send(
                Command::Auth(self.secret.clone().into_bytes()).to_bytes(),
            ));
        }
        self.state = State::Done;
        Ok(Step::Done)
    }
}

impl Conn {
    /// Dial `addr` and set the connection up.
    pub async fn connect(addr: &str, cfg: &ClientConfig) -> Result<Conn, String> {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let mut c = Conn {
            io: Box::new(tcp),
            codec: Codec::Plain,
            plain: Vec::new(),
            tmp: vec![0u8; 64 * 1024],
        };
        let mut hello = Handshake::new(cfg);
        c.send(&hello.start()).await?;
        loop {
            let f = c.frame().await?;
            match hello.next(f)? {
                None => {}
                Some(Step::Send(b)) => c.send(&b).await?,
                Some(Step::Tls) => {
                    if !c.plain.is_empty() {
                        return Err("unexpected data before the TLS handshake".into());
                    }
                    let connector = tokio_rustls::TlsConnector::from(cfg.tls.client_config()?);
                    let name = super::tls::server_name(addr)?;
                    let io = std::mem::replace(&mut c.io, Box::new(tokio::io::empty()));
                    let tls = connector
                        .connect(name, io)
                        .await
                        .map_err(|e| e.to_string())?;
                    c.io = Box::new(tls);
                }
                Some(up @ (Step::Snappy | Step::Deflate(_))) => {
                    c.codec = match up {
                        Step::Deflate(level) => Codec::Deflate(Deflate::new(level)),
                        _ => Codec::Snappy(Box::default()),
                    };
                    // What came after the last plain frame is already compressed.
                    let rest = std::mem::take(&mut c.plain);
                    c.codec
                        .decode(&rest, &mut c.plain)
                        .map_err(|e| e.to_string())?;
                }
                Some(Step::Done) => return Ok(c),
            }
        }
    }

    /// Send plaintext (compressed if the connection is), flushed: TLS holds what the socket
    /// did not take until flushed.
    pub async fn send(&mut self, plain: &[u8]) -> Result<(), String> {
        let r = if let Codec::Plain = self.codec {
            self.io.write_all(plain).await
        } else {
            let mut wire = Vec::with_capacity(plain.len() / 2 + 16);
            self.codec
                .encode(plain, &mut wire)
                .map_err(|e| e.to_string())?;
            self.io.write_all(&wire).await
        };
        r.map_err(|e| e.to_string())?;
        self.io.flush().await.map_err(|e| e.to_string())
    }

    /// The frame already read, if there is a whole one.
    pub fn buffered_frame(&mut self) -> Option<Frame> {
        let (f, k) = decode_frame(&self.plain).ok()??;
        self.plain.drain(..k);
        Some(f)
    }

    /// Read once more from the stream (cancel-safe: nothing is lost if dropped).
    pub async fn read_more(&mut self) -> Result<(), String> {
        let n = self
            .io
            .read(&mut self.tmp)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed".into());
        }
        self.codec
            .decode(&self.tmp[..n], &mut self.plain)
            .map_err(|e| e.to_string())
    }

    /// The next frame, reading as needed.
    pub async fn frame(&mut self) -> Result<Frame, String> {
        loop {
            if let Some(f) = self.buffered_frame() {
                return Ok(f);
            }
            self.read_more().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: &str) -> Frame {
        Frame::Response(json.as_bytes().to_vec())
    }

    /// go-nsq's order: TLS, then deflate (or snappy), each confirmed by an OK, then AUTH.
    #[test]
    fn upgrades_in_go_nsqs_order_then_auth() {
        let cfg = ClientConfig {
            tls_v1: true,
            deflate: true,
            auth_secret: "s".into(),
            ..ClientConfig::default()
        };
        let mut h = Handshake::new(&cfg);
        let sent = String::from_utf8_lossy(&h.start()).into_owned();
        assert!(sent.contains(r#""tls_v1":true"#) && sent.contains(r#""deflate":true"#));
        let step = h
            .next(answer(
                r#"{"tls_v1":true,"deflate":true,"deflate_level":3,"auth_required":true}"#,
            ))
            .unwrap();
        assert_eq!(step, Some(Step::Tls));
        assert_eq!(h.next(answer("OK")).unwrap(), Some(Step::Deflate(3)));
        match h.next(answer("OK")).unwrap() {
            Some(Step::Send(b)) => assert!(b.starts_with(b"AUTH\n")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            h.next(answer(r#"{"identity":"x"}"#)).unwrap(),
            Some(Step::Done)
        );
    }

    /// What nsqd does not agree to is not done; without a secret, auth fails as go-nsq's.
    #[test]
    fn only_what_nsqd_agreed_to() {
        let cfg = ClientConfig {
            snappy: true,
            ..ClientConfig::default()
        };
        let mut h = Handshake::new(&cfg);
        assert_eq!(
            h.next(answer(r#"{"snappy":false}"#)).unwrap(),
            Some(Step::Done)
        );
        let mut h = Handshake::new(&cfg);
        assert_eq!(
            h.next(answer(r#"{"auth_required":true}"#)).unwrap_err(),
            "Auth Required"
        );
        let mut h = Handshake::new(&cfg);
        assert_eq!(
            h.next(Frame::Error(b"E_BAD_BODY x".to_vec())).unwrap_err(),
            "E_BAD_BODY x"
        );
    }
}
