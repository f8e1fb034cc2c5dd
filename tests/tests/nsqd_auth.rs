//! AUTH against a small nsqauthd-compatible server run by the test.

use nsqlab_core::protocol::Command;
use nsqlab_tests::{need, Nsqd, Tool};
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Serves `GET /auth?...`: the secret "pynsq-secret" or "good" gets publish+subscribe on
/// topics starting with "ok" or "pynsq"; anything else gets 403. Records the query strings.
fn auth_server() -> (String, Arc<Mutex<Vec<String>>>) {
    spawn_auth(None)
}

/// The auth server on a port of its own, over TLS with `tls`; its address and what it was
/// asked.
fn spawn_auth(tls: Option<Arc<rustls::ServerConfig>>) -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            match &tls {
                None => answer_auth(&mut s, &seen2),
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
                    answer_auth(&mut rustls::StreamOwned::new(conn, s), &seen2);
                }
            }
        }
    });
    (addr, seen)
}

/// The same server over HTTPS, with a certificate for 127.0.0.1: from its own CA, or (with
/// `self_signed`) self-signed and marked as a CA, as `openssl req -x509` makes one. Returns
/// the address, the PEM to trust (the CA's, or the certificate itself) and what it was asked.
fn https_auth_server(self_signed: bool) -> (String, String, Arc<Mutex<Vec<String>>>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let (cert, trust) = if self_signed {
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        let pem = cert.pem();
        (cert, pem)
    } else {
        (params.signed_by(&key, &ca, &ca_key).unwrap(), ca.pem())
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
            )
            .unwrap(),
    );
    let (addr, seen) = spawn_auth(Some(cfg));
    (addr, trust, seen)
}

/// Answer one request on `s` (see [`auth_server`]); a failed handshake or read ends it.
fn answer_auth(s: &mut (impl std::io::Read + Write), seen: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let line = head.lines().next().unwrap_or_default();
    let query = line.split(' ').nth(1).unwrap_or("").to_string();
    seen.lock().unwrap().push(query.clone());
    let ok = query.contains("secret=good") || query.contains("secret=pynsq-secret");
    let (status, body) = if ok {
        (
            "200 OK",
            r#"{"ttl":3600,"identity":"tester","identity_url":"http://x/tester","authorizations":[{"topic":"^(ok|pynsq)","channels":[".*"],"permissions":["subscribe","publish"]}]}"#,
        )
    } else {
        ("403 Forbidden", r#"{"message":"NOT_AUTHORIZED"}"#)
    };
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.flush();
}

/// An `https://` auth server is verified against `--tls-root-ca-file` (nsqd v1.3), else
/// the system's roots, which do not know the test's CA; a self-signed certificate given as
/// the CA file is trusted for itself, as by Go.
#[test]
fn auth_over_https_against_the_root_ca_file() {
    let auth = |d: &Nsqd| {
        let mut c = d.client();
        c.cmd(&Command::Identify(
            br#"{"feature_negotiation":true}"#.to_vec(),
        ));
        let reply = c.next_text();
        assert!(reply.contains(r#""auth_required":true"#), "{reply}");
        c.cmd(&Command::Auth(b"good".to_vec()));
        c.next_text()
    };
    let granted =
        r#"R:{"identity":"tester","identity_url":"http://x/tester","permission_count":1}"#;
    let dir = nsqlab_tests::tempdir::TempDir::new();
    for self_signed in [false, true] {
        let (addr, trust, seen) = https_auth_server(self_signed);
        let ca = dir.path().join(format!("ca-{self_signed}.pem"));
        std::fs::write(&ca, trust).unwrap();
        let url = format!("--auth-http-address=https://{addr}/auth");
        let d = Nsqd::start(&[&url, &format!("--tls-root-ca-file={}", ca.display())]);
        assert_eq!(auth(&d), granted, "self-signed: {self_signed}");
        assert_eq!(seen.lock().unwrap().len(), 1);
        // Without the CA file the handshake fails: no request reaches the server.
        let d = Nsqd::start(&[&url]);
        assert_eq!(auth(&d), "E:E_AUTH_FAILED AUTH failed");
        assert_eq!(seen.lock().unwrap().len(), 1, "self-signed: {self_signed}");
    }
}

#[test]
fn auth_against_an_auth_server() {
    let (addr, seen) = auth_server();
    let d = Nsqd::start(&[&format!("-auth-http-address={addr}")]);

    let mut c = d.client();
    c.cmd(&Command::Identify(
        br#"{"feature_negotiation":true}"#.to_vec(),
    ));
    let reply = c.next_text();
    assert!(reply.contains(r#""auth_required":true"#), "{reply}");
    c.cmd(&Command::Pub {
        topic: "ok".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(c.next_text(), "E:E_AUTH_FIRST AUTH required before PUB");

    let mut c = d.client();
    c.cmd(&Command::Auth(b"good".to_vec()));
    assert_eq!(
        c.next_text(),
        r#"R:{"identity":"tester","identity_url":"http://x/tester","permission_count":1}"#
    );
    c.cmd(&Command::Pub {
        topic: "ok1".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Pub {
        topic: "other".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(
        c.next_text(),
        r#"E:E_UNAUTHORIZED AUTH failed for PUB on "other" """#
    );
    assert!(c.closed_within(Duration::from_secs(2)));

    let mut c = d.client();
    c.cmd(&Command::Auth(b"bad".to_vec()));
    assert_eq!(c.next_text(), "E:E_AUTH_FAILED AUTH failed");

    let q = seen.lock().unwrap().clone();
    assert!(
        q.iter()
            .any(|q| q.starts_with("/auth?common_name=&remote_ip=127.0.0.1&secret=good&tls=false")),
        "{q:?}"
    );

    // pynsq, unchanged, with an auth secret.
    let Some(python) = need(Tool::Python) else {
        return;
    };
    let out = std::process::Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/interop/pynsq_check.py"
        ))
        .arg(d.tcp.to_string())
        .arg("pynsq_auth")
        .arg("auth")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pynsq auth failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|q| q.contains("secret=pynsq-secret")));
}

/// A CA, and a client certificate it signed with subject common name `cn`.
struct Pki {
    ca_pem: String,
    client_der: Vec<u8>,
    client_key_der: Vec<u8>,
}

fn pki(cn: &str) -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
    Pki {
        ca_pem: ca.pem(),
        client_der: cert.der().to_vec(),
        client_key_der: key.serialize_der(),
    }
}

/// Accepts the server's self-signed test certificate.
#[derive(Debug)]
struct TrustAnyServer(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for TrustAnyServer {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &rustls_pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &rustls_pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Read one V2 frame: (type, data).
fn read_frame(r: &mut impl std::io::Read) -> std::io::Result<(u32, Vec<u8>)> {
    let mut h = [0u8; 8];
    r.read_exact(&mut h)?;
    let size = u32::from_be_bytes(h[..4].try_into().unwrap()) as usize;
    let ty = u32::from_be_bytes(h[4..].try_into().unwrap());
    let mut data = vec![0u8; size - 4];
    r.read_exact(&mut data)?;
    Ok((ty, data))
}

type TlsClient = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

/// Connect, IDENTIFY with tls_v1 and make the TLS handshake with `cfg`; nsqd's `OK` over TLS
/// has been read. Or the error that ended the connection.
fn tls_connect(d: &Nsqd, cfg: rustls::ClientConfig) -> Result<TlsClient, String> {
    let mut s = std::net::TcpStream::connect(d.tcp).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"  V2").unwrap();
    let mut identify = Vec::new();
    Command::Identify(br#"{"tls_v1":true,"feature_negotiation":true}"#.to_vec())
        .encode(&mut identify);
    s.write_all(&identify).unwrap();
    let (_, json) = read_frame(&mut s).map_err(|e| e.to_string())?;
    assert!(String::from_utf8_lossy(&json).contains(r#""tls_v1":true"#));
    let conn =
        rustls::ClientConnection::new(Arc::new(cfg), "localhost".try_into().unwrap()).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, s);
    // nsqd answers the upgrade with OK, over TLS.
    let (_, ok) = read_frame(&mut tls).map_err(|e| e.to_string())?;
    assert_eq!(ok, b"OK");
    Ok(tls)
}

/// A self-signed certificate for localhost and its key, as PEM files in `dir`.
fn server_cert(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let server = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (c, k) = (dir.join("c.pem"), dir.join("k.pem"));
    std::fs::write(&c, server.cert.pem()).unwrap();
    std::fs::write(&k, server.key_pair.serialize_pem()).unwrap();
    (c, k)
}

/// The TLS handshake (with `client_cert`, if any), then AUTH "good"; returns the AUTH reply,
/// or the error that ended the connection.
fn tls_auth(d: &Nsqd, client_cert: Option<&Pki>) -> Result<String, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(TrustAnyServer(provider)));
    let cfg = match client_cert {
        Some(p) => b
            .with_client_auth_cert(
                vec![rustls_pki_types::CertificateDer::from(p.client_der.clone())],
                rustls_pki_types::PrivateKeyDer::try_from(p.client_key_der.clone()).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    let mut tls = tls_connect(d, cfg)?;
    let mut auth = Vec::new();
    Command::Auth(b"good".to_vec()).encode(&mut auth);
    tls.write_all(&auth).map_err(|e| e.to_string())?;
    let (_, reply) = read_frame(&mut tls).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// `--tls-client-auth-policy=require` (no CA, as Go's RequireAnyClientCert) wants a client
/// certificate but does not verify it; its subject common name reaches the auth server.
/// `require-verify` checks it against `--tls-root-ca-file`, or the system roots without one.
#[test]
fn client_certificates_and_the_auth_common_name() {
    let dir = nsqlab_tests::tempdir::TempDir::new();
    let (c, k) = server_cert(dir.path());
    let ca = dir.path().join("ca.pem");
    let alice = pki("alice");
    std::fs::write(&ca, &alice.ca_pem).unwrap();
    let (addr, seen) = auth_server();
    let tls = [
        format!("-tls-cert={}", c.display()),
        format!("-tls-key={}", k.display()),
        format!("-auth-http-address={addr}"),
    ];
    let args = |extra: &[String]| -> Vec<String> { tls.iter().chain(extra).cloned().collect() };
    let start = |a: Vec<String>| Nsqd::start(&a.iter().map(String::as_str).collect::<Vec<_>>());

    let d = start(args(&["-tls-client-auth-policy=require".into()]));
    let reply = tls_auth(&d, Some(&alice)).unwrap();
    assert!(reply.contains(r#""identity":"tester""#), "{reply}");
    let q = seen.lock().unwrap().clone();
    assert!(
        q.iter()
            .any(|q| q
                .starts_with("/auth?common_name=alice&remote_ip=127.0.0.1&secret=good&tls=true")),
        "{q:?}"
    );
    assert!(tls_auth(&d, None).is_err(), "a certificate is required");
    drop(d);

    // require-verify with the CA that signed it: accepted; with the system roots: refused.
    let d = start(args(&[
        "-tls-client-auth-policy=require-verify".into(),
        format!("-tls-root-ca-file={}", ca.display()),
    ]));
    assert!(tls_auth(&d, Some(&alice)).is_ok());
    let mallory = pki("mallory");
    assert!(
        tls_auth(&d, Some(&mallory)).is_err(),
        "signed by another CA"
    );
    drop(d);
    let d = start(args(&["-tls-client-auth-policy=require-verify".into()]));
    assert!(
        tls_auth(&d, Some(&alice)).is_err(),
        "not signed by a system root"
    );
}

/// A TLS client's entry in `/stats` names its session as nsqd does: Go's table knows TLS
/// versions up to 1.2 and thirteen cipher suites by name, and calls the rest `Unknown <n>`
/// (every TLS 1.3 session, then).
#[test]
fn stats_name_a_tls_session_as_nsqd_does() {
    use rustls::crypto::ring::cipher_suite as suites;
    let dir = nsqlab_tests::tempdir::TempDir::new();
    let (c, k) = server_cert(dir.path());
    let d = Nsqd::start(&[
        &format!("-tls-cert={}", c.display()),
        &format!("-tls-key={}", k.display()),
    ]);
    let cases = [
        (
            &rustls::version::TLS12,
            suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            "TLS1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        ),
        (
            &rustls::version::TLS12,
            suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            "TLS1.2",
            "Unknown 49196",
        ),
        (
            &rustls::version::TLS13,
            suites::TLS13_AES_128_GCM_SHA256,
            "Unknown 772",
            "Unknown 4865",
        ),
    ];
    for (i, (version, suite, want_version, want_suite)) in cases.into_iter().enumerate() {
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites = vec![suite];
        let provider = Arc::new(provider);
        let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[version])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TrustAnyServer(provider)))
            .with_no_client_auth();
        let mut tls = tls_connect(&d, cfg).unwrap();
        let channel = format!("c{i}");
        let mut sub = Vec::new();
        Command::Sub {
            topic: "t".into(),
            channel: channel.as_str().into(),
        }
        .encode(&mut sub);
        tls.write_all(&sub).unwrap();
        assert_eq!(read_frame(&mut tls).unwrap().1, b"OK");
        let stats = d
            .http("GET", &format!("/stats?format=json&channel={channel}"), b"")
            .json();
        let client = &stats["topics"][0]["channels"][0]["clients"][0];
        assert_eq!(client["tls"], true, "{client}");
        assert_eq!(client["tls_version"], want_version, "{client}");
        assert_eq!(client["tls_cipher_suite"], want_suite, "{client}");
        assert_eq!(client["tls_negotiated_protocol"], "", "{client}");
        assert_eq!(
            client["tls_negotiated_protocol_is_mutual"], true,
            "{client}"
        );
    }
    // Without TLS: all empty.
    let mut plain = d.client();
    plain.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "plain".into(),
    });
    assert_eq!(plain.next_text(), "R:OK");
    let stats = d
        .http("GET", "/stats?format=json&channel=plain", b"")
        .json();
    let client = &stats["topics"][0]["channels"][0]["clients"][0];
    assert_eq!(client["tls"], false, "{client}");
    assert_eq!(client["tls_version"], "", "{client}");
    assert_eq!(client["tls_cipher_suite"], "", "{client}");
    assert_eq!(
        client["tls_negotiated_protocol_is_mutual"], false,
        "{client}"
    );
}

/// The tools speak AUTH as go-nsq does: with `auth_secret` in `--consumer-opt` /
/// `--producer-opt`, after IDENTIFY says `auth_required`; without one, go-nsq's "Auth
/// Required".
#[test]
fn the_tools_authenticate_with_auth_secret() {
    use std::io::Read;
    use std::process::Stdio;
    let (addr, _) = auth_server();
    let d = Nsqd::start(&[&format!("-auth-http-address={addr}")]);
    let (_t, mut tail) = nsqlab_tests::tool("nsq_tail");
    let mut tail = tail
        .args([
            "--topic=ok_tools",
            "-n",
            "2",
            "--consumer-opt=auth_secret,good",
        ])
        .arg(format!("--nsqd-tcp-address={}", d.tcp))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_n, mut to_nsq) = nsqlab_tests::tool("to_nsq");
    let mut p = to_nsq
        .args(["-topic", "ok_tools", "--producer-opt", "auth_secret,good"])
        .arg(format!("-nsqd-tcp-address={}", d.tcp))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The channel must exist before the publish, or tail's would miss it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let s = d
            .http("GET", "/stats?format=json&topic=ok_tools", b"")
            .json();
        if s["topics"][0]["channels"][0]["client_count"] == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tail never subscribed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    p.stdin.take().unwrap().write_all(b"one\ntwo\n").unwrap();
    let status = p.wait().unwrap();
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "to_nsq: {err}");
    let mut out = String::new();
    tail.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(tail.wait().unwrap().success());
    assert_eq!(out, "one\ntwo\n");

    // No secret: the producer is refused before it publishes.
    let (_n, mut to_nsq) = nsqlab_tests::tool("to_nsq");
    let mut p = to_nsq
        .args(["-topic", "ok_tools"])
        .arg(format!("-nsqd-tcp-address={}", d.tcp))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(b"three\n").unwrap();
    let status = p.wait().unwrap();
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(
        !status.success() && err.contains("Auth Required"),
        "{status}: {err}"
    );
    let s = d
        .http("GET", "/stats?format=json&topic=ok_tools", b"")
        .json();
    assert_eq!(s["topics"][0]["message_count"], 2);
}
