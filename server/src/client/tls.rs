//! TLS for the tools' nsqd connections (`--consumer-opt` / `--producer-opt`), as go-nsq's
//! `tls_v1` and its `tls_config` keys set it up: `tls_root_ca_file` (else the system's
//! roots), `tls_insecure_skip_verify`, `tls_cert` + `tls_key` (a client certificate) and
//! `tls_min_version`. The server name checked is the host of the nsqd address, as go-nsq
//! fills in `ServerName`.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::sync::Arc;

/// go-nsq's `tls_config` settings.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub root_ca_file: String,
    pub insecure_skip_verify: bool,
    pub cert: String,
    pub key: String,
    /// `ssl3.0`, `tls1.0`, `tls1.1`, `tls1.2` (all served as TLS 1.2 and 1.3 by rustls) or
    /// `tls1.3`.
    pub min_version: String,
}

impl TlsOptions {
    /// Take one go-nsq `tls_config` key; `false` if `key` is not one of them.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match key {
            "tls_root_ca_file" => self.root_ca_file = value.to_string(),
            "tls_insecure_skip_verify" => self.insecure_skip_verify = crate::cli::go_bool(value)?,
            "tls_cert" => self.cert = value.to_string(),
            "tls_key" => self.key = value.to_string(),
            "tls_min_version" => match value.to_ascii_lowercase().as_str() {
                v @ ("ssl3.0" | "tls1.0" | "tls1.1" | "tls1.2" | "tls1.3") => {
                    self.min_version = v.to_string()
                }
                _ => return Err(format!("unknown tls_min_version {value:?}")),
            },
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The rustls client configuration these settings make.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] = if self.min_version == "tls1.3" {
            &[&rustls::version::TLS13]
        } else {
            &[&rustls::version::TLS12, &rustls::version::TLS13]
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| e.to_string())?;
        let webpki = if self.insecure_skip_verify {
            None
        } else {
            let file = match self.root_ca_file.as_str() {
                "" => crate::nsqd::tls::system_roots_file(),
                f => f.to_string(),
            };
            let pem = std::fs::read(&file).map_err(|e| crate::cli::go_read_error(&file, &e))?;
            let mut ders = Vec::new();
            for c in CertificateDer::pem_slice_iter(&pem) {
                ders.push(c.map_err(|e| format!("{file}: {e}"))?);
            }
            // A system bundle may hold certificates WebPKI cannot use: those are skipped.
            let strict = !self.root_ca_file.is_empty();
            Some(webpki_roots(&provider, ders, strict).map_err(|e| format!("{file}: {e}"))?)
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier { provider, webpki }));
        let cfg = match (self.cert.as_str(), self.key.as_str()) {
            ("", "") => builder.with_no_client_auth(),
            ("", _) | (_, "") => return Err("tls_cert and tls_key must be set together".into()),
            (cert, key) => {
                let cert_pem =
                    std::fs::read(cert).map_err(|e| crate::cli::go_read_error(cert, &e))?;
                let key_pem = std::fs::read(key).map_err(|e| crate::cli::go_read_error(key, &e))?;
                let certs = CertificateDer::pem_slice_iter(&cert_pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("{cert}: {e}"))?;
                let key =
                    PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| format!("{key}: {e}"))?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| e.to_string())?
            }
        };
        Ok(Arc::new(cfg))
    }
}

/// The name to verify nsqd's certificate against: the host of `addr` (`host:port`,
/// `[v6]:port`).
pub fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = match addr.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))
}

type WebPki = (
    Arc<rustls::client::WebPkiServerVerifier>,
    Vec<CertificateDer<'static>>,
);

/// WebPKI verification against `ders` (those WebPKI cannot use refused when `strict`, else
/// skipped), keeping the roots for [`Verifier`]'s own-root rule.
fn webpki_roots(
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
struct Verifier {
    provider: Arc<CryptoProvider>,
    /// `None`: skip verification.
    webpki: Option<WebPki>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_the_host_of_the_address() {
        assert_eq!(
            server_name("nsqd.example:4150").unwrap(),
            ServerName::try_from("nsqd.example").unwrap()
        );
        assert_eq!(
            server_name("[::1]:4150").unwrap(),
            ServerName::try_from("::1").unwrap()
        );
        assert_eq!(
            server_name("127.0.0.1:4150").unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
    }

    #[test]
    fn go_nsq_tls_keys() {
        let mut t = TlsOptions::default();
        assert_eq!(t.set("tls_insecure_skip_verify", "true"), Ok(true));
        assert!(t.insecure_skip_verify);
        assert_eq!(t.set("tls_min_version", "TLS1.2"), Ok(true));
        assert_eq!(t.min_version, "tls1.2");
        assert!(t.set("tls_min_version", "tls9").is_err());
        assert_eq!(t.set("max_in_flight", "1"), Ok(false));
        t.cert = "c.pem".into();
        assert!(t.client_config().is_err(), "a certificate without its key");
    }
}
