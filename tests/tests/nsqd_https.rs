//! HTTPS (`--https-address` with a certificate) and `--tls-required` on plain HTTP.

use nsqlab_tests::{tempdir::TempDir, Nsqd};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

fn cert(dir: &TempDir) -> (String, String, Vec<u8>) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cp, kp) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cp, c.cert.pem()).unwrap();
    std::fs::write(&kp, c.key_pair.serialize_pem()).unwrap();
    (
        format!("-tls-cert={}", cp.display()),
        format!("-tls-key={}", kp.display()),
        c.cert.der().to_vec(),
    )
}

fn https_line(d: &Nsqd) -> SocketAddr {
    loop {
        let line = d
            .log
            .recv_timeout(Duration::from_secs(10))
            .expect("an HTTPS: listening line");
        if let Some(a) = line.split("HTTPS: listening on ").nth(1) {
            return a.trim().parse().unwrap();
        }
    }
}

fn https_get(addr: SocketAddr, der: &[u8], path: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from(der.to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(cfg), "localhost".try_into().unwrap()).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn https_serves_the_api() {
    let dir = TempDir::new();
    let (c, k, der) = cert(&dir);
    let d = Nsqd::start(&[&c, &k]);
    let https = https_line(&d);
    let r = https_get(https, &der, "/ping");
    assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("OK"), "{r}");
    let r = https_get(https, &der, "/info");
    assert!(r.contains(&format!("\"tcp_port\":{}", d.tcp.port())), "{r}");
    // Plain HTTP still works without --tls-required.
    assert_eq!(d.http("GET", "/ping", b"").status, 200);
}

#[test]
fn tls_required_closes_plain_http() {
    let dir = TempDir::new();
    let (c, k, der) = cert(&dir);
    let d = Nsqd::start(&[&c, &k, "-tls-required=true"]);
    let https = plain_http_refused(&d);
    assert!(https_get(https, &der, "/ping").ends_with("OK"));
}

/// Plain HTTP answers nsqd's 403 (with its odd spacing) naming the HTTPS port, returned.
fn plain_http_refused(d: &Nsqd) -> SocketAddr {
    let https = https_line(d);
    let r = d.http("GET", "/ping", b"");
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text(),
        format!(
            r#"{{"message": "TLS_REQUIRED", "https_port": {}}}"#,
            https.port()
        )
    );
    https
}

/// nsqd turns a client certificate policy without `--tls-required` into `--tls-required=true`:
/// plain HTTP is closed too.
#[test]
fn a_client_auth_policy_closes_plain_http_too() {
    let dir = TempDir::new();
    let (c, k, _) = cert(&dir);
    let d = Nsqd::start(&[&c, &k, "-tls-client-auth-policy=require"]);
    plain_http_refused(&d);
}
