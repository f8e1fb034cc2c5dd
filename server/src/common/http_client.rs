//! NSQ's HTTP client conventions, for the tools and for nsqd's own requests (nsqlookupd
//! queries, auth): Go's host:port joining and query escaping, and JSON fetched with NSQ's
//! Accept header and its error text.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// Go's `net.JoinHostPort`: an IPv6 host goes in brackets.
pub fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A query value, percent-encoded: everything but letters, digits and `-_.~` (a space is
/// `%20`; for topic and channel names, whose characters are `.a-zA-Z0-9_-` and `#`, this is
/// what Go's `url.QueryEscape` gives).
pub fn urlencode(s: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    utf8_percent_encode(s, QUERY_VALUE).to_string()
}

/// `http://<addr><path>`; an address may carry its scheme (go-nsq adds `http://` only when
/// it has none).
fn http_url(addr: &str, path: &str) -> String {
    if addr.contains("://") {
        format!("{}{path}", addr.trim_end_matches('/'))
    } else {
        format!("http://{addr}{path}")
    }
}

/// `GET http://<addr><path>` with NSQ's Accept header, within `timeout`; the JSON body of a
/// 200 (else nsq's `got response <status> "<body>"`).
pub async fn http_get_json(
    addr: &str,
    path: &str,
    timeout: Duration,
) -> Result<serde_json::Value, String> {
    let client: HttpClient<_, Empty<Bytes>> =
        HttpClient::builder(TokioExecutor::new()).build_http();
    let req = hyper::Request::get(http_url(addr, path))
        .header("Accept", "application/vnd.nsq; version=1.0")
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    fetch_json(&client, req, timeout).await
}

/// Send `req` and parse the JSON body of a 200, within `timeout`; any other status is NSQ's
/// `got response <status> "<body>"` (as its `http_api` client).
pub async fn fetch_json<C, B, T>(
    client: &HttpClient<C, B>,
    req: hyper::Request<B>,
    timeout: Duration,
) -> Result<T, String>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T: serde::de::DeserializeOwned,
{
    let fut = async {
        let resp = client.request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if status != hyper::StatusCode::OK {
            return Err(format!(
                "got response {status} {:?}",
                String::from_utf8_lossy(&body)
            ));
        }
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| "timed out".to_string())?
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_lookupd_address_may_carry_its_scheme() {
        assert_eq!(super::http_url("h:4161", "/lookup"), "http://h:4161/lookup");
        assert_eq!(
            super::http_url("http://h:4161/", "/lookup"),
            "http://h:4161/lookup"
        );
        assert_eq!(super::http_url("https://h", "/nodes"), "https://h/nodes");
    }
}
