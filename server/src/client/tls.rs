//! TLS for the tools' nsqd connections (`--consumer-opt` / `--producer-opt`), as go-nsq's
//! `tls_v1` and its `tls_config` keys set it up: `tls_root_ca_file` (else the system's
//! roots), `tls_insecure_skip_verify`, `tls_cert` + `tls_key` (a client certificate) and
//! `tls_min_version`. The server name checked is the host of the nsqd address, as go-nsq
//! fills in `ServerName`.

use crate::common::tls::{system_roots_file, webpki_roots, Verifier};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
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
                "" => system_roots_file(),
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
