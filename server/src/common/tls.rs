//! Certificates as Go checks them, for every TLS client in the binary (the tools' nsqd
//! connections, nsqd's HTTPS requests to its auth servers): the system's roots where Go
//! looks for them, and a server certificate verifier that accepts what Go's does.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::Arc;

/// Where the system's CA bundle is (Go looks in the same places on Linux).
pub(crate) fn system_roots_file() -> String {
    if let Ok(f) = std::env::var("SSL_CERT_FILE") {
        return f;
    }
    [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/pki/tls/cacert.pem",
        "/etc/ssl/cert.pem",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .unwrap_or("/etc/ssl/certs/ca-certificates.crt")
    .to_string()
}

pub(crate) type WebPki = (
    Arc<rustls::client::WebPkiServerVerifier>,
    Vec<CertificateDer<'static>>,
);

/// WebPKI verification against `ders` (those WebPKI cannot use refused when `strict`, else
/// skipped), keeping the roots for [`Verifier`]'s own-root rule.
pub(crate) fn webpki_roots(
    provider: &Arc<CryptoProvider>,
    ders: Vec<CertificateDer<'static>>,
    strict: bool,
) -> Result<WebPki, String> {
    let mut roots = RootCertStore::empty();
    let mut kept = Vec::new();
    for c in ders {
        match roots.add(c.clone()) {
            Ok(()) => kept.push(c),
            Err(e) if strict => return Err(e.to_string()),
            Err(_) => {}
        }
    }
    let inner =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), provider.clone())
            .build()
            .map_err(|e| e.to_string())?;
    Ok((inner, kept))
}

/// A server certificate verifier for `ders` as Go verifies against a root pool ([`Verifier`]),
/// for nsqd's own HTTPS requests (its auth servers).
pub fn go_verifier(
    provider: Arc<CryptoProvider>,
    ders: Vec<CertificateDer<'static>>,
) -> Result<Arc<dyn ServerCertVerifier>, String> {
    let webpki = Some(webpki_roots(&provider, ders, false)?);
    Ok(Arc::new(Verifier { provider, webpki }))
}

/// How nsqd's certificate is checked.
///
/// With roots: WebPKI verification against them, except that a certificate which is itself
/// one of the roots is accepted for the names it carries while it is valid, as Go's verifier
/// accepts it: a self-signed certificate made as NSQ's docs make one (`openssl req -x509 …`,
/// a CA certificate) and given as `tls_root_ca_file`, which WebPKI refuses as "CA used as
/// end entity". Without (go-nsq's `tls_insecure_skip_verify`): any certificate. Either way
/// the handshake's signatures are checked, so the peer holds the certificate's key.
#[derive(Debug)]
pub(crate) struct Verifier {
    pub(crate) provider: Arc<CryptoProvider>,
    /// `None`: skip verification.
    pub(crate) webpki: Option<WebPki>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some((inner, roots)) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        let refused =
            match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
        if !roots.iter().any(|r| r.as_ref() == end_entity.as_ref()) {
            return Err(refused);
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        let valid = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .ok()
            .and_then(|(_, c)| {
                let at = x509_parser::time::ASN1Time::from_timestamp(now.as_secs() as i64).ok()?;
                Some(c.validity().is_valid_at(at))
            });
        match valid {
            Some(true) => Ok(ServerCertVerified::assertion()),
            _ => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
