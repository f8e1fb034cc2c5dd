//! TLS for `tls_v1` upgrades (and HTTPS), from nsqd's `--tls-cert`, `--tls-key`,
//! `--tls-root-ca-file` and `--tls-client-auth-policy` flags, with rustls.
//!
//! rustls speaks TLS 1.2 and 1.3 only; `--tls-min-version` below 1.2 is accepted and served as
//! 1.2 (older versions are broken and deliberately not offered).
//!
//! Client certificates, as nsqd (Go's `tls.Config.ClientAuth`):
//! - `--tls-client-auth-policy=require`: a client must present a certificate, which is not
//!   verified against any CA (Go's `RequireAnyClientCert`); the handshake still proves the
//!   client holds its key;
//! - `require-verify`: the certificate must chain to `--tls-root-ca-file`, or without one to
//!   the system's roots (Go's `RequireAndVerifyClientCert` with no `ClientCAs`).
//!
//! The certificate's subject common name goes to the auth server as `common_name`.

use crate::common::tls::system_roots_file;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::UnixTime;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// A file of the TLS config, or Go's error for it (`open <path>: no such file or directory`).
fn read(path: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        anyhow::anyhow!(
            "failed to build TLS config - {}",
            crate::cli::go_read_error(path, &e)
        )
    })
}

/// Build the server config, or `None` when no certificate is configured.
pub fn server_config(args: &super::NsqdArgs) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    if args.tls_cert.is_empty() && args.tls_key.is_empty() {
        if args.tls_required_mode() != super::options::TlsRequired::No {
            anyhow::bail!("cannot require TLS client connections without TLS key and cert");
        }
        return Ok(None);
    }
    let (cert_pem, key_pem) = (read(&args.tls_cert)?, read(&args.tls_key)?);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = if args.tls_min_version == "tls1.3" {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS12, &rustls::version::TLS13]
    };
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let builder = match args.tls_client_auth_policy.as_str() {
        "" => builder.with_no_client_auth(),
        "require" => builder.with_client_cert_verifier(Arc::new(AnyClientCert { provider })),
        "require-verify" => {
            let file = match args.tls_root_ca_file.as_str() {
                "" => system_roots_file(),
                f => f.to_string(),
            };
            let mut roots = RootCertStore::empty();
            let pem = read(&file)?;
            for c in CertificateDer::pem_slice_iter(&pem) {
                // A system bundle may hold certificates webpki cannot use; skip those.
                let c = c.map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
                if roots.add(c).is_err() && !args.tls_root_ca_file.is_empty() {
                    anyhow::bail!(
                        "failed to build TLS config - failed to append certificate to pool"
                    );
                }
            }
            let v =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
            builder.with_client_cert_verifier(v)
        }
        // nsqd's `buildTLSConfig`: any other policy asks for no certificate (and still makes
        // TLS required).
        _ => builder.with_no_client_auth(),
    };
    let cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
    Ok(Some(Arc::new(cfg)))
}

/// The TLS client configuration of nsqd's auth requests (nsqd v1.3's `buildClientTLSConfig`):
/// `--tls-min-version`, and the roots of `--tls-root-ca-file` in place of the system's when
/// given. Built at start, with or without a certificate of nsqd's own, so a bad CA file stops
/// nsqd (`failed to build client TLS config - …`).
pub fn client_config(args: &super::NsqdArgs) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let fail = |e: String| anyhow::anyhow!("failed to build client TLS config - {e}");
    let (file, given) = match args.tls_root_ca_file.as_str() {
        "" => (system_roots_file(), false),
        f => (f.to_string(), true),
    };
    // The system's bundle (hundreds of certificates) is read only if an auth server is
    // reached over HTTPS.
    let https = args
        .auth_http_address
        .iter()
        .any(|a| a.to_ascii_lowercase().starts_with("https://"));
    let mut ders = Vec::new();
    match (given || https).then(|| std::fs::read(&file)) {
        Some(Ok(pem)) => ders.extend(CertificateDer::pem_slice_iter(&pem).flatten()),
        Some(Err(e)) if given => return Err(fail(crate::cli::go_read_error(&file, &e))),
        // No system bundle (or none needed): only a CA file makes HTTPS auth verifiable.
        _ => {}
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Go's AppendCertsFromPEM found nothing it could use.
    let verifier = match crate::common::tls::go_verifier(provider.clone(), ders) {
        Ok(v) => Some(v),
        Err(_) if given => return Err(fail("failed to append certificate to pool".into())),
        Err(_) => None,
    };
    let versions: &[&rustls::SupportedProtocolVersion] = if args.tls_min_version == "tls1.3" {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS12, &rustls::version::TLS13]
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| fail(e.to_string()))?;
    let cfg = match verifier {
        // As Go verifies against a pool: a self-signed certificate given as the CA file is
        // accepted for itself.
        Some(v) => builder.dangerous().with_custom_certificate_verifier(v),
        None => builder.with_root_certificates(RootCertStore::empty()),
    }
    .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// Go's `RequireAnyClientCert`: a certificate is required but not checked against a CA; its
/// handshake signature is still verified.
#[derive(Debug)]
struct AnyClientCert {
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for AnyClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The subject common name of a certificate (Go's `Subject.CommonName`: the last CN), if any.
pub fn common_name(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, c) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = c
        .subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()?;
    Some(cn.to_string())
}
