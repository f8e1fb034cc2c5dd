//! TLS for `tls_v1` upgrades (and HTTPS), from nsqd's `--tls-cert`, `--tls-key`,
//! `--tls-root-ca-file` and `--tls-client-auth-policy` flags, with rustls.
//!
//! rustls speaks TLS 1.2 and 1.3 only; `--tls-min-version` below 1.2 is accepted and served as
//! 1.2 (older versions are broken and deliberately not offered).

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// Build the server config, or `None` when no certificate is configured.
pub fn server_config(args: &super::NsqdArgs) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    if args.tls_cert.is_empty() && args.tls_key.is_empty() {
        if matches!(args.tls_required.as_str(), "true" | "tcp-https")
            || !args.tls_client_auth_policy.is_empty()
        {
            anyhow::bail!("cannot require TLS client connections without TLS key and cert");
        }
        return Ok(None);
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&args.tls_cert)
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
    let key = PrivateKeyDer::from_pem_file(&args.tls_key)
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
        "require" | "require-verify" => {
            if args.tls_root_ca_file.is_empty() {
                anyhow::bail!("failed to build TLS config - --tls-client-auth-policy={} needs --tls-root-ca-file", args.tls_client_auth_policy);
            }
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(&args.tls_root_ca_file)? {
                roots.add(c?)?;
            }
            let v =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
            builder.with_client_cert_verifier(v)
        }
        other => {
            anyhow::bail!("failed to build TLS config - invalid --tls-client-auth-policy {other:?}")
        }
    };
    let cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| anyhow::anyhow!("failed to build TLS config - {e}"))?;
    Ok(Some(Arc::new(cfg)))
}
