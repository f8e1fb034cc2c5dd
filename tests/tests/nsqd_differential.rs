//! Answers compared byte for byte with nsqd v1.3.0's.
//!
//! Each case is raw bytes a client sends (then, for most, it closes its sending side) and the
//! raw bytes nsqd v1.3.0 answered, recorded from the real binary
//! (`../shared/nsq-v1.3.0/bin/nsqd`, default flags). nsqlab must answer the same, and close
//! when nsqd closes. Where that binary is present (or `NSQD_V13` names one), the same table is
//! also run against it, so the recorded answers are checked to be nsqd's own.
//!
//! HTTP answers are compared whole, headers in their order, with only the value of `Date`
//! (a time) left out.

use nsqlab_tests::Nsqd;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Case {
    name: &'static str,
    send: Vec<u8>,
    /// Close the sending side after sending.
    half_close: bool,
    want: &'static [u8],
    /// nsqd closes the connection after answering.
    closes: bool,
}

fn tcp_case(name: &'static str, send: &[u8], want: &'static [u8]) -> Case {
    let mut b = b"  V2".to_vec();
    b.extend_from_slice(send);
    Case {
        name,
        send: b,
        half_close: true,
        want,
        closes: true,
    }
}

fn tcp_cases() -> Vec<Case> {
    vec![
        tcp_case(
            "PUB body cut short",
            b"PUB t\n\x00\x00\x00\nabc",
            b"\x00\x00\x001\x00\x00\x00\x01E_BAD_MESSAGE PUB failed to read message body",
        ),
        tcp_case(
            "PUB size cut short",
            b"PUB t\n\x00\x00",
            b"\x00\x00\x006\x00\x00\x00\x01E_BAD_MESSAGE PUB failed to read message body size",
        ),
        tcp_case(
            "MPUB size cut short",
            b"MPUB t\n\x00\x00",
            b"\x00\x00\x00,\x00\x00\x00\x01E_BAD_BODY MPUB failed to read body size",
        ),
        tcp_case(
            "MPUB message size cut short",
            b"MPUB t\n\x00\x00\x00\x14\x00\x00\x00\x02\x00\x00\x00",
            b"\x00\x00\x00:\x00\x00\x00\x01E_BAD_MESSAGE MPUB failed to read message(0) body size",
        ),
        tcp_case(
            "MPUB count cut short",
            b"MPUB t\n\x00\x00\x00\x14\x00\x00\x00",
            b"\x00\x00\x000\x00\x00\x00\x01E_BAD_BODY MPUB failed to read message count",
        ),
        tcp_case(
            "MPUB message body cut short",
            b"MPUB t\n\x00\x00\x00\x14\x00\x00\x00\x02\x00\x00\x00\x03ab",
            b"\x00\x00\x002\x00\x00\x00\x01E_BAD_MESSAGE MPUB failed to read message body",
        ),
        tcp_case(
            "IDENTIFY size cut short",
            b"IDENTIFY\n\x00\x00",
            b"\x00\x00\x000\x00\x00\x00\x01E_BAD_BODY IDENTIFY failed to read body size",
        ),
        tcp_case(
            "IDENTIFY body cut short",
            b"IDENTIFY\n\x00\x00\x00\n{\"a",
            b"\x00\x00\x00+\x00\x00\x00\x01E_BAD_BODY IDENTIFY failed to read body",
        ),
        tcp_case(
            "DPUB body cut short",
            b"DPUB t 1000\n\x00\x00\x00\nabc",
            b"\x00\x00\x002\x00\x00\x00\x01E_BAD_MESSAGE DPUB failed to read message body",
        ),
        tcp_case(
            "DPUB size cut short",
            b"DPUB t 1000\n\x00\x00",
            b"\x00\x00\x007\x00\x00\x00\x01E_BAD_MESSAGE DPUB failed to read message body size",
        ),
        tcp_case("a line cut short", b"PUB t", b""),
        tcp_case("nothing after the magic", b"", b""),
        tcp_case(
            "a PUB, then the input ends",
            b"PUB t\n\x00\x00\x00\x03abc",
            b"\x00\x00\x00\x06\x00\x00\x00\x00OK",
        ),
        tcp_case(
            "a PUB, then a PUB cut short",
            b"PUB t\n\x00\x00\x00\x03abcPUB t\n\x00\x00\x00\nab",
            b"\x00\x00\x00\x06\x00\x00\x00\x00OK\x00\x00\x001\x00\x00\x00\x01E_BAD_MESSAGE PUB failed to read message body",
        ),
    ]
}

fn http_case(name: &'static str, send: &[u8], half_close: bool, want: &'static [u8]) -> Case {
    Case {
        name,
        send: send.to_vec(),
        half_close,
        want,
        closes: true,
    }
}

fn http_cases() -> Vec<Case> {
    let mut too_big =
        b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n".to_vec();
    too_big.extend_from_slice(&[b'x'; 1000]);
    let mut big_header = b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    big_header.extend_from_slice(&vec![b'a'; 2_000_000]);
    big_header.extend_from_slice(b"\r\n\r\n");
    vec![
        Case {
            name: "413 from the declared length, the body not sent",
            send: too_big,
            half_close: false,
            want: b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 25\r\nConnection: close\r\n\r\n{\"message\":\"MSG_TOO_BIG\"}",
            closes: true,
        },
        http_case(
            "a request line that is not one",
            b"GARBAGE\r\n\r\n",
            false,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
        ),
        http_case(
            "a header without a colon",
            b"GET /ping HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n",
            false,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
        ),
        http_case(
            "a 2 MB header",
            &big_header,
            false,
            b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large",
        ),
        http_case(
            "HTTP/2.5",
            b"GET /ping HTTP/2.5\r\nHost: x\r\n\r\n",
            false,
            b"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n505 HTTP Version Not Supported: unsupported protocol version",
        ),
        http_case(
            "headers cut short by the end of the input",
            b"GET /ping HTTP/1.1\r\nHost: x\r\n",
            true,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
        ),
        http_case(
            "HTTP/1.1 without Host",
            b"GET /ping HTTP/1.1\r\n\r\n",
            false,
            b"HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: missing required Host header",
        ),
        http_case(
            "HTTP/1.1 with two Hosts",
            b"GET /ping HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            false,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
        ),
        http_case(
            "HTTP/1.0 without Host",
            b"GET /ping HTTP/1.0\r\n\r\n",
            false,
            b"HTTP/1.0 200 OK\r\nDate: -\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK",
        ),
        http_case(
            "an unknown path",
            b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            false,
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 23\r\nConnection: close\r\n\r\n{\"message\":\"NOT_FOUND\"}",
        ),
        http_case(
            "HEAD of a GET route",
            b"HEAD /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            false,
            b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, OPTIONS\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 32\r\nConnection: close\r\n\r\n",
        ),
        http_case(
            "GET of a POST route",
            b"GET /topic/create HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            false,
            b"HTTP/1.1 405 Method Not Allowed\r\nAllow: OPTIONS, POST\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 32\r\nConnection: close\r\n\r\n{\"message\":\"METHOD_NOT_ALLOWED\"}",
        ),
        http_case(
            "a publish after 100-continue",
            b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\nhello",
            false,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nOK",
        ),
        http_case(
            "a missing argument",
            b"POST /topic/create HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 31\r\nConnection: close\r\n\r\n{\"message\":\"MISSING_ARG_TOPIC\"}",
        ),
        // Go's handling of a body the handler does not read (issue 49): with `Expect:
        // 100-continue` it never sends the 100 and closes (`Connection: close`, after the
        // length); without it, it reads the body away and keeps the connection.
        Case {
            name: "an unread body after Expect: 100-continue",
            send: b"POST /topic/create?topic=u HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            closes: true,
        },
        Case {
            name: "a GET with an unread body after Expect: 100-continue",
            send: b"GET /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 200 OK\r\nDate: -\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nOK",
            closes: true,
        },
        Case {
            name: "an unknown path with a body after Expect: 100-continue",
            send: b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 23\r\nConnection: close\r\n\r\n{\"message\":\"NOT_FOUND\"}",
            closes: true,
        },
        Case {
            name: "an unread body, no Expect",
            send: b"POST /topic/create?topic=u HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 0\r\n\r\n",
            closes: false,
        },
        Case {
            name: "an mpub without a topic after Expect: 100-continue",
            send: b"POST /mpub HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\nhello\nworld".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 31\r\nConnection: close\r\n\r\n{\"message\":\"MISSING_ARG_TOPIC\"}",
            closes: true,
        },
        Case {
            name: "a channel created after Expect: 100-continue",
            send: b"POST /channel/create?topic=u&channel=c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 0\r\n\r\n",
            closes: false,
        },
        Case {
            name: "an Expect other than 100-continue",
            send: b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: foo\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: -\r\nContent-Length: 0\r\n\r\n",
            closes: true,
        },
        Case {
            name: "HTTP/1.0: a body too big",
            send: b"POST /pub?topic=t HTTP/1.0\r\nHost: x\r\nContent-Length: 2000000\r\n\r\nxxxxxxxx".to_vec(),
            half_close: false,
            want: b"HTTP/1.0 413 Request Entity Too Large\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 25\r\n\r\n{\"message\":\"MSG_TOO_BIG\"}",
            closes: true,
        },
        Case {
            name: "HTTP/1.0 keep-alive: a body too big",
            send: b"POST /pub?topic=t HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 2000000\r\n\r\nxxxxxxxx".to_vec(),
            half_close: false,
            want: b"HTTP/1.0 413 Request Entity Too Large\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 25\r\nConnection: close\r\n\r\n{\"message\":\"MSG_TOO_BIG\"}",
            closes: true,
        },
        Case {
            name: "HTTP/1.0 keep-alive: an unread body",
            send: b"POST /topic/create?topic=u HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.0 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n",
            closes: false,
        },
        Case {
            name: "a bad binary mpub body, read whole",
            send: b"POST /mpub?topic=t&binary=true HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 22\r\n\r\n{\"message\":\"BAD_BODY\"}",
            closes: false,
        },
        Case {
            name: "HTTP/1.0 keep-alive: a bad binary mpub body, read whole",
            send: b"POST /mpub?topic=t&binary=true HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
            half_close: false,
            want: b"HTTP/1.0 413 Request Entity Too Large\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 22\r\nConnection: keep-alive\r\n\r\n{\"message\":\"BAD_BODY\"}",
            closes: false,
        },
        Case {
            name: "a topic deleted after Expect: 100-continue",
            send: b"POST /topic/delete?topic=nosuch HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: -\r\nContent-Length: 29\r\n\r\n{\"message\":\"TOPIC_NOT_FOUND\"}",
            closes: false,
        },
        Case {
            name: "a keep-alive request",
            send: b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            half_close: false,
            want: b"HTTP/1.1 200 OK\r\nDate: -\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK",
            closes: false,
        },
    ]
}

/// What a server answered: its bytes, and whether it closed (within the wait).
fn exchange(addr: SocketAddr, c: &Case) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(addr).expect("connect");
    // A large request is written from its own thread: the server may answer (and close)
    // before reading it all.
    let send = c.send.clone();
    let mut w = s.try_clone().unwrap();
    let half_close = c.half_close;
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&send);
        if half_close {
            let _ = w.shutdown(Shutdown::Write);
        }
    });
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut closed = false;
    let mut buf = [0u8; 65536];
    while Instant::now() < deadline {
        // An open connection that answered is given a moment more, then taken as open.
        let wait = if !c.closes && !got.is_empty() {
            Duration::from_millis(300)
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        s.set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                closed = true;
                break;
            }
            Err(_) if !got.is_empty() && !c.closes => break,
            Err(_) => {}
        }
    }
    drop(s);
    let _ = writer.join();
    (got, closed)
}

/// An HTTP answer with the value of its `Date` header (if any) made `-`.
fn without_date(b: &[u8]) -> Vec<u8> {
    let Some(at) = b.windows(8).position(|w| w == b"\r\nDate: ") else {
        return b.to_vec();
    };
    let start = at + 8;
    let end = b[start..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(b.len(), |e| start + e);
    [&b[..start], b"-", &b[end..]].concat()
}

fn check(server: &str, tcp: SocketAddr, http: SocketAddr) {
    let mut failures = Vec::new();
    for (addr, cases, is_http) in [(tcp, tcp_cases(), false), (http, http_cases(), true)] {
        for c in cases {
            let (got, closed) = exchange(addr, &c);
            let same = match is_http {
                true => without_date(&got) == c.want,
                false => got == c.want,
            };
            if !same || closed != c.closes {
                failures.push(format!(
                    "{}: got {:?} (closed: {closed}), nsqd answers {:?} (closes: {})",
                    c.name,
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(c.want),
                    c.closes
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{server} differs from nsqd v1.3.0:\n{}",
        failures.join("\n")
    );
}

#[test]
fn nsqlab_answers_as_nsqd_v1_3_0() {
    let d = Nsqd::start(&[]);
    check("nsqlab", d.tcp, d.http);
}

/// The reference binary: `NSQD_V13`, else NSQ v1.3.0's nsqd where the tests find NSQ's
/// programs ([`nsqlab_tests::nsq_v13`]).
fn reference_nsqd() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NSQD_V13") {
        return Some(PathBuf::from(p));
    }
    nsqlab_tests::nsq_v13("nsqd")
}

/// nsqd v1.3.0 running (killed when dropped), with its data directory.
struct Reference {
    child: Child,
    _data: nsqlab_tests::tempdir::TempDir,
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start `bin` listening on `host:tcp` and `host:http` (with `extra` flags), once both ports
/// answer on 127.0.0.1.
fn start_reference(
    bin: &std::path::Path,
    host: &str,
    tcp: u16,
    http: u16,
    extra: &[&str],
) -> Reference {
    let data = nsqlab_tests::tempdir::TempDir::new();
    let child = Command::new(bin)
        .arg(format!("--tcp-address={host}:{tcp}"))
        .arg(format!("--http-address={host}:{http}"))
        .arg(format!("--data-path={}", data.path().display()))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nsqd v1.3.0");
    let guard = Reference { child, _data: data };
    let deadline = Instant::now() + Duration::from_secs(10);
    let up = |p: u16| TcpStream::connect(("127.0.0.1", p)).is_ok();
    while !up(tcp) || !up(http) {
        assert!(Instant::now() < deadline, "nsqd v1.3.0 did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    guard
}

/// The recorded answers are nsqd's: the same table holds for nsqd v1.3.0 itself, where its
/// binary is present on this machine.
#[test]
fn the_recorded_answers_are_nsqd_v1_3_0s() {
    let Some(bin) = reference_nsqd() else {
        eprintln!("nsqd v1.3.0 is not found (set NSQD_V13 or NSQ_BIN): only nsqlab's answers are checked, against the recorded ones");
        return;
    };
    let (tcp, http) = (free_port(), free_port());
    let _nsqd = start_reference(&bin, "127.0.0.1", tcp, http, &[]);
    let at = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    check("nsqd v1.3.0", at(tcp), at(http));
}

/// The end of a client's input follows it to its topic's partition: a PUB then a half-close
/// is answered `OK` and closed, whichever partition the connection started in and whichever
/// owns the topic (nsqd answers it so: "a PUB, then the input ends" above).
#[test]
fn the_end_of_input_follows_a_client_that_moves_partition() {
    let d = Nsqd::start(&["--partitions=2"]);
    for topic in ["t", "u"] {
        for _ in 0..4 {
            let mut send = b"  V2PUB ".to_vec();
            send.extend_from_slice(topic.as_bytes());
            send.extend_from_slice(b"\n\x00\x00\x00\x03abc");
            let c = Case {
                name: "PUB then EOF",
                send,
                half_close: true,
                want: b"\x00\x00\x00\x06\x00\x00\x00\x00OK",
                closes: true,
            };
            let (got, closed) = exchange(d.tcp, &c);
            assert_eq!((got.as_slice(), closed), (c.want, true), "topic {topic}");
        }
    }
}

/// `/info` with `port` (the server's own) and the start time masked.
fn info_masked(http: SocketAddr, tcp_port: u16, http_port: u16) -> String {
    let req = b"GET /info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut s = TcpStream::connect(http).expect("connect");
    s.write_all(req).unwrap();
    let mut got = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&without_date(&got)).into_owned();
    let text = text
        .replace(&format!("\"tcp_port\":{tcp_port},"), "\"tcp_port\":$TCP,")
        .replace(
            &format!("\"http_port\":{http_port},"),
            "\"http_port\":$HTTP,",
        );
    match text.find("\"start_time\":") {
        Some(at) => {
            let end = text[at..].find('}').map_or(text.len(), |e| at + e);
            format!("{}\"start_time\":-{}", &text[..at], &text[end..])
        }
        None => text,
    }
}

/// Issue 49: `/info` reports the ports (and broadcast address) nsqd v1.3.0 reports, however
/// the addresses are given: each server's own listening ports are masked, a broadcast port
/// is not.
#[test]
fn info_reports_what_nsqd_v1_3_0_reports() {
    let Some(bin) = reference_nsqd() else {
        eprintln!("nsqd v1.3.0 is not found (set NSQD_V13 or NSQ_BIN): not compared");
        return;
    };
    let sets: [(&str, &[&str]); 4] = [
        ("127.0.0.1", &[]),
        ("0.0.0.0", &[]),
        ("localhost", &[]),
        (
            "127.0.0.1",
            &[
                "--broadcast-address=bc.example",
                "--broadcast-tcp-port=1111",
                "--broadcast-http-port=2222",
            ],
        ),
    ];
    for (host, extra) in sets {
        let (tcp, http) = (free_port(), free_port());
        let _nsqd = start_reference(&bin, host, tcp, http, extra);
        let addr = SocketAddr::from(([127, 0, 0, 1], http));
        let want = info_masked(addr, tcp, http);
        let mut flags = vec![
            format!("--tcp-address={host}:0"),
            format!("--http-address={host}:0"),
        ];
        flags.extend(extra.iter().map(|f| f.to_string()));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let d = Nsqd::start(&flags);
        let ours: SocketAddr = format!("127.0.0.1:{}", d.http.port()).parse().unwrap();
        let got = info_masked(ours, d.tcp.port(), d.http.port());
        assert_eq!(got, want, "{host} {extra:?}");
        assert!(want.contains("\"tcp_port\":"), "{want}");
    }
}
