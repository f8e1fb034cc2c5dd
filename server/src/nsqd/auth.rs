//! Asking an nsqauthd-compatible server about a client's secret (nsqd's `QueryAnyAuthd`):
//! `GET http://<addr>/auth?remote_ip=&tls=&secret=&common_name=` (or `POST` with a form body
//! when `--auth-http-request-method=post`), trying each `--auth-http-address` in turn from a
//! random start until one answers. An address may be a full URL, `https://` too, verified
//! against `--tls-root-ca-file` (else the system's roots), as nsqd v1.3 does.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use nsqlab_core::{AuthRequest, AuthResponse};
use std::time::Duration;

/// Auth server settings.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub addresses: Vec<String>,
    pub method_post: bool,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// For `https://` auth servers ([`super::tls::client_config`]).
    pub tls: std::sync::Arc<rustls::ClientConfig>,
}

fn form_encode(pairs: &[(&str, &[u8])]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        for &b in *v {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
    }
    out
}

/// Ask the auth servers; the first good answer wins.
pub async fn query(
    cfg: &AuthConfig,
    req: &AuthRequest,
    start: usize,
) -> Result<AuthResponse, String> {
    let tls = if req.tls { "true" } else { "false" };
    // Sorted like Go's url.Values.Encode().
    let form = form_encode(&[
        ("common_name", req.common_name.as_bytes()),
        ("remote_ip", req.remote_ip.as_bytes()),
        ("secret", &req.secret),
        ("tls", tls.as_bytes()),
    ]);
    let mut last = String::from("no auth server configured");
    let n = cfg.addresses.len();
    for i in 0..n {
        let addr = &cfg.addresses[(start + i) % n];
        let endpoint = if addr.contains("://") {
            addr.clone()
        } else {
            format!("http://{addr}/auth")
        };
        match one(cfg, &endpoint, &form).await {
            Ok(r) => return Ok(r),
            Err(e) => {
                tracing::warn!("failed to auth against {addr} - {e}");
                last = e;
            }
        }
    }
    Err(last)
}

async fn one(cfg: &AuthConfig, endpoint: &str, form: &str) -> Result<AuthResponse, String> {
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.set_connect_timeout(Some(cfg.connect_timeout));
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*cfg.tls).clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let request = if cfg.method_post {
        hyper::Request::post(endpoint)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(form.to_string())))
    } else {
        hyper::Request::get(format!("{endpoint}?{form}")).body(Full::new(Bytes::new()))
    }
    .map_err(|e| e.to_string())?;
    crate::common::http_client::fetch_json(&client, request, cfg.request_timeout).await
}
