//! WebSocket on the HTTP port: NSQ V2 over binary messages, the live event stream, and the
//! deferred / in-flight listing.

use nsqlab_core::protocol::{decode_frame, Frame};
use nsqlab_tests::Nsqd;
use std::time::{Duration, Instant};
use tungstenite::Message;

fn ws(d: &Nsqd, path: &str) -> tungstenite::WebSocket<std::net::TcpStream> {
    let stream = std::net::TcpStream::connect(d.http).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (ws, _) =
        tungstenite::client(format!("ws://{}{path}", d.http), stream).expect("websocket handshake");
    ws
}

/// The WebSocket carries the same byte stream as TCP: a message may hold several frames (or
/// part of one), so frames are read from a buffer.
fn next_frame(w: &mut tungstenite::WebSocket<std::net::TcpStream>, buf: &mut Vec<u8>) -> Frame {
    loop {
        if let Some((f, n)) = decode_frame(buf).expect("frame") {
            buf.drain(..n);
            return f;
        }
        if let Message::Binary(b) = w.read().expect("ws message") {
            buf.extend_from_slice(&b);
        }
    }
}

#[test]
fn nsq_protocol_over_websocket() {
    let d = Nsqd::start(&[]);
    let mut w = ws(&d, "/ws/nsq");
    let mut buf = Vec::new();
    w.send(Message::binary(&b"  V2SUB t c\nRDY 5\n"[..]))
        .unwrap();
    assert_eq!(
        next_frame(&mut w, &mut buf),
        Frame::Response(b"OK".to_vec())
    );
    assert_eq!(d.http("POST", "/pub?topic=t", b"from http").status, 200);
    let Frame::Message(m) = next_frame(&mut w, &mut buf) else {
        panic!("message")
    };
    assert_eq!(&m.body[..], b"from http");
    let mut fin = b"FIN ".to_vec();
    fin.extend_from_slice(&m.id.to_hex());
    fin.push(b'\n');
    w.send(Message::binary(fin)).unwrap();
    // Publishing from the browser side works too.
    w.send(Message::binary(&b"PUB t\n\x00\x00\x00\x02ws"[..]))
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(next_frame(&mut w, &mut buf));
    }
    assert!(got.contains(&Frame::Response(b"OK".to_vec())), "{got:?}");
    assert!(
        got.iter()
            .any(|f| matches!(f, Frame::Message(m) if &m.body[..] == b"ws")),
        "{got:?}"
    );
}

#[test]
fn live_events_and_queue_listing() {
    let d = Nsqd::start(&[]);
    assert_eq!(d.http("POST", "/topic/create?topic=live", b"").status, 200);
    assert_eq!(
        d.http("POST", "/channel/create?topic=live&channel=c", b"")
            .status,
        200
    );
    let mut events = ws(&d, "/ws/events");
    // Give the broker a moment to see its listener (events are made only while someone listens).
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    // Due times are wall-clock times (see nsqd_storage.rs): checked against the wall clock.
    let wall = std::time::SystemTime::now();
    assert_eq!(
        d.http("POST", "/pub?topic=live&defer=400", b"hi").status,
        200
    );

    let q = d
        .http("GET", "/api/queues?topic=live&channel=c", b"")
        .json();
    assert_eq!(q["deferred"].as_array().unwrap().len(), 1);
    let due = q["deferred"][0]["due"].as_u64().unwrap();
    assert!(due > q["now"].as_u64().unwrap());
    assert_eq!(
        d.http("GET", "/api/queues?topic=live&channel=nope", b"")
            .status,
        404
    );

    let mut kinds = Vec::new();
    while !kinds.iter().any(|k: &String| k == "queued") {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no queued event: {kinds:?}"
        );
        if let Message::Text(t) = events.read().expect("event") {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert_eq!(v["type"], "frame", "{v}");
            for e in v["events"].as_array().expect("events") {
                kinds.push(e["type"].as_str().unwrap_or_default().to_string());
            }
            // Every frame draws the channel as it is, with IDs and never a body.
            let c = &v["frame"]["topics"][0]["channels"][0];
            assert_eq!(c["channel"], "c", "{v}");
            assert!(!t.contains("\"hi\""), "a frame carries a body: {t}");
            assert_eq!(c["deferred"], c["heap"].as_array().unwrap().len(), "{v}");
        }
    }
    let waited = wall.elapsed().unwrap_or_default();
    assert!(
        waited >= Duration::from_millis(390),
        "due early: {waited:?}"
    );
    for k in ["published", "deferred", "became_due", "queued"] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
    }
}

/// A raw `/ws/nsq` connection (handshake by hand), to send frames tungstenite would not.
fn raw_ws(d: &Nsqd) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(d.http).unwrap();
    s.write_all(b"GET /ws/nsq HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "handshake answer");
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s
}

/// A client frame: `fin`, `opcode`, masked with a zero key (the payload as it is).
fn ws_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![(fin as u8) << 7 | opcode, 0x80 | 127];
    f.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    f.extend_from_slice(&[0; 4]);
    f.extend_from_slice(payload);
    f
}

/// The server ended the connection (a close frame, EOF or a reset) within `wait`.
fn ended_within(s: &mut std::net::TcpStream, wait: Duration) -> bool {
    use std::io::Read;
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => b[0] == 0x88,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// A message that never ends (fragments, no last one) is not buffered past the largest
/// command (`--max-body-size`, 5 MiB by default): tungstenite's own limit was 64 MiB per
/// connection, and 8 such connections took 500 MB.
#[test]
fn a_websocket_message_that_never_ends_is_cut_off_at_the_body_limit() {
    use std::io::Write;
    let d = Nsqd::start(&[]);
    let mut s = raw_ws(&d);
    let mib = vec![b'x'; 1 << 20];
    let mut sent = 0;
    for i in 0..12 {
        let opcode = if i == 0 { 2 } else { 0 };
        if s.write_all(&ws_frame(false, opcode, &mib)).is_err() {
            break;
        }
        sent += 1;
    }
    assert!(
        ended_within(&mut s, Duration::from_secs(3)),
        "still open after {sent} MiB of one message"
    );
    // Others are served.
    assert_eq!(d.http("GET", "/ping", b"").status, 200);
}

/// A message that arrives slowly (here: its first fragment, then nothing) is not held
/// longer than a client with heartbeats would take to send one: twice
/// `--max-heartbeat-interval`.
#[test]
fn a_websocket_message_sent_slowly_is_cut_off() {
    use std::io::Write;
    let d = Nsqd::start(&["--max-heartbeat-interval=1s"]);
    let mut s = raw_ws(&d);
    let start = Instant::now();
    s.write_all(&ws_frame(false, 2, b"  V2PUB t\n")).unwrap();
    assert!(
        ended_within(&mut s, Duration::from_secs(6)),
        "a message begun and never finished held its connection"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
}
