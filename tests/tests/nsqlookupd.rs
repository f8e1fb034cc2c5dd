//! `nsqlookupd` black-box: its HTTP API's codes and bodies, and the V1 TCP protocol's bytes.

use nsqlab_tests::Nsqlookupd;
use std::io::{Read, Write};
use std::net::TcpStream;

#[test]
fn http_api_codes_and_bodies() {
    let l = Nsqlookupd::start(&[]);
    let cases: &[(&str, &str, u16, &str)] = &[
        ("GET", "/ping", 200, "OK"),
        ("GET", "/info", 200, r#"{"version":"1.3.0"}"#),
        ("GET", "/topics", 200, r#"{"topics":[]}"#),
        ("GET", "/lookup", 400, r#"{"message":"MISSING_ARG_TOPIC"}"#),
        (
            "GET",
            "/lookup?topic=t",
            404,
            r#"{"message":"TOPIC_NOT_FOUND"}"#,
        ),
        ("GET", "/channels?topic=t", 200, r#"{"channels":[]}"#),
        (
            "POST",
            "/topic/create?topic=bad!",
            400,
            r#"{"message":"INVALID_ARG_TOPIC"}"#,
        ),
        (
            "POST",
            "/channel/create?topic=t",
            400,
            r#"{"message":"MISSING_ARG_CHANNEL"}"#,
        ),
        ("POST", "/channel/create?topic=t&channel=c", 200, ""),
        (
            "GET",
            "/lookup?topic=t",
            200,
            r#"{"channels":["c"],"producers":[]}"#,
        ),
        (
            "POST",
            "/channel/delete?topic=t&channel=x",
            404,
            r#"{"message":"CHANNEL_NOT_FOUND"}"#,
        ),
        (
            "POST",
            "/topic/tombstone?topic=t",
            400,
            r#"{"message":"MISSING_ARG_NODE"}"#,
        ),
        (
            "GET",
            "/topic/create?topic=t",
            405,
            r#"{"message":"METHOD_NOT_ALLOWED"}"#,
        ),
        ("GET", "/nope", 404, r#"{"message":"NOT_FOUND"}"#),
        ("POST", "/topic/delete?topic=t", 200, ""),
        ("GET", "/topics", 200, r#"{"topics":[]}"#),
        ("GET", "/nodes", 200, r#"{"producers":[]}"#),
    ];
    for (method, path, status, body) in cases {
        let r = l.http(method, path, b"");
        assert_eq!(
            (r.status, r.text().as_str()),
            (*status, *body),
            "{method} {path}"
        );
        if *path != "/ping" {
            assert_eq!(
                r.header("X-NSQ-Content-Type"),
                Some("nsq; version=1.0"),
                "{path}"
            );
        }
    }
    let r = l.http("GET", "/topic/create", b"");
    assert_eq!(r.header("Allow"), Some("OPTIONS, POST"));
}

fn frames(s: &mut TcpStream, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        let mut size = [0u8; 4];
        s.read_exact(&mut size).unwrap();
        let mut b = vec![0u8; u32::from_be_bytes(size) as usize];
        s.read_exact(&mut b).unwrap();
        out.push(String::from_utf8(b).unwrap());
    }
    out
}

#[test]
fn v1_protocol_over_tcp() {
    let l = Nsqlookupd::start(&[]);
    let mut s = TcpStream::connect(l.tcp).unwrap();
    let body = br#"{"broadcast_address":"127.0.0.1","hostname":"h","http_port":4151,"tcp_port":4150,"version":"1.3.0"}"#;
    let mut b = b"  V1IDENTIFY\n".to_vec();
    b.extend_from_slice(&(body.len() as u32).to_be_bytes());
    b.extend_from_slice(body);
    b.extend_from_slice(b"REGISTER t c\nPING\nBOGUS\n");
    s.write_all(&b).unwrap();
    let r = frames(&mut s, 4);
    let identify: serde_json::Value = serde_json::from_str(&r[0]).unwrap();
    assert_eq!(identify["version"], "1.3.0");
    assert_eq!(identify["tcp_port"], l.tcp.port());
    assert_eq!(identify["http_port"], l.http.port());
    assert_eq!(identify["broadcast_address"], "127.0.0.1");
    assert_eq!(&r[1..], ["OK", "OK", "E_INVALID invalid command BOGUS"]);
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after the error");
    let a = l.http("GET", "/lookup?topic=t", b"").json();
    assert_eq!(a["channels"], serde_json::json!(["c"]));
    assert_eq!(
        a["producers"],
        serde_json::json!([]),
        "left when its connection closed"
    );
}
