//! IDENTIFY: the client's JSON, checked as nsqd's `clientV2.Identify` checks it, and the
//! feature-negotiation reply.
//!
//! # Format
//!
//! ```text
//! IDENTIFY\n[4-byte size][JSON object]
//! ```
//!
//! Keys are matched as Go's `encoding/json` does (case-insensitively, unknown keys ignored, a
//! value of the wrong type is an error). Integer keys: `heartbeat_interval`, `output_buffer_size`,
//! `output_buffer_timeout`, `msg_timeout`, `deflate_level`, `sample_rate`; booleans:
//! `feature_negotiation`, `tls_v1`, `snappy`, `deflate`; strings: `client_id`, `hostname`,
//! `user_agent`. Bytes that are not UTF-8 become U+FFFD, as Go's decoder makes them.

use super::error::ProtocolError;
use crate::options::Options;
use crate::time::{Nanos, MILLISECOND};
use serde::Serialize;
use serde_json::Value;

/// The fields a client may send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentifyData {
    pub client_id: String,
    pub hostname: String,
    pub user_agent: String,
    pub heartbeat_interval: i64,
    pub output_buffer_size: i64,
    pub output_buffer_timeout: i64,
    pub feature_negotiation: bool,
    pub tls_v1: bool,
    pub deflate: bool,
    pub deflate_level: i64,
    pub snappy: bool,
    pub sample_rate: i32,
    pub msg_timeout: i64,
}

fn decode_failed() -> ProtocolError {
    ProtocolError::fatal("E_BAD_BODY", "IDENTIFY failed to decode JSON body")
}

fn as_int(v: &Value, min: i64, max: i64) -> Result<Option<i64>, ProtocolError> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_i64() {
            Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
            _ => Err(decode_failed()),
        },
        _ => Err(decode_failed()),
    }
}

fn as_bool(v: &Value) -> Result<Option<bool>, ProtocolError> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        _ => Err(decode_failed()),
    }
}

fn as_string(v: &Value) -> Result<Option<String>, ProtocolError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(decode_failed()),
    }
}

impl IdentifyData {
    /// Parse the JSON body as Go's `json.Unmarshal` into nsqd's `identifyDataV2` would.
    pub fn parse(body: &[u8]) -> Result<IdentifyData, ProtocolError> {
        let text = String::from_utf8_lossy(body);
        let v: Value = serde_json::from_str(&text).map_err(|_| decode_failed())?;
        let mut d = IdentifyData::default();
        let obj = match v {
            Value::Null => return Ok(d),
            Value::Object(o) => o,
            _ => return Err(decode_failed()),
        };
        let mut failed = false;
        for (k, v) in &obj {
            let r: Result<(), ProtocolError> = (|| {
                let i64r = (i64::MIN, i64::MAX);
                match k.to_ascii_lowercase().as_str() {
                    "client_id" => set(&mut d.client_id, as_string(v)?),
                    "hostname" => set(&mut d.hostname, as_string(v)?),
                    "user_agent" => set(&mut d.user_agent, as_string(v)?),
                    "heartbeat_interval" => {
                        set(&mut d.heartbeat_interval, as_int(v, i64r.0, i64r.1)?)
                    }
                    "output_buffer_size" => {
                        set(&mut d.output_buffer_size, as_int(v, i64r.0, i64r.1)?)
                    }
                    "output_buffer_timeout" => {
                        set(&mut d.output_buffer_timeout, as_int(v, i64r.0, i64r.1)?)
                    }
                    "msg_timeout" => set(&mut d.msg_timeout, as_int(v, i64r.0, i64r.1)?),
                    "deflate_level" => set(&mut d.deflate_level, as_int(v, i64r.0, i64r.1)?),
                    "sample_rate" => set(
                        &mut d.sample_rate,
                        as_int(v, i32::MIN as i64, i32::MAX as i64)?.map(|x| x as i32),
                    ),
                    "feature_negotiation" => set(&mut d.feature_negotiation, as_bool(v)?),
                    "tls_v1" => set(&mut d.tls_v1, as_bool(v)?),
                    "deflate" => set(&mut d.deflate, as_bool(v)?),
                    "snappy" => set(&mut d.snappy, as_bool(v)?),
                    _ => {}
                }
                Ok(())
            })();
            // Go keeps decoding after a type error and reports it at the end.
            failed |= r.is_err();
        }
        if failed {
            return Err(decode_failed());
        }
        Ok(d)
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

/// Per-client settings IDENTIFY controls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientSettings {
    /// `None` when heartbeats are disabled (`heartbeat_interval: -1`).
    pub heartbeat_interval: Option<Nanos>,
    pub output_buffer_size: i64,
    pub output_buffer_timeout: Nanos,
    pub sample_rate: i32,
    pub msg_timeout: Nanos,
}

impl ClientSettings {
    /// A fresh client's settings under `opts`.
    pub fn defaults(opts: &Options) -> Self {
        Self {
            heartbeat_interval: Some(opts.default_heartbeat_interval()),
            output_buffer_size: 16 * 1024,
            output_buffer_timeout: opts.output_buffer_timeout,
            sample_rate: 0,
            msg_timeout: opts.msg_timeout,
        }
    }

    /// Apply IDENTIFY values in nsqd's order; the error text is what follows `IDENTIFY `.
    pub fn apply(&mut self, d: &IdentifyData, opts: &Options) -> Result<(), String> {
        let ms = |n: Nanos| (n / MILLISECOND) as i64;
        match d.heartbeat_interval {
            -1 => self.heartbeat_interval = None,
            0 => {}
            n if n >= 1000 && n <= ms(opts.max_heartbeat_interval) => {
                self.heartbeat_interval = Some(n as u64 * MILLISECOND)
            }
            n => return Err(format!("heartbeat interval ({n}) is invalid")),
        }
        match d.output_buffer_timeout {
            -1 => self.output_buffer_timeout = 0,
            0 => {}
            n if n >= ms(opts.min_output_buffer_timeout)
                && n <= ms(opts.max_output_buffer_timeout) =>
            {
                self.output_buffer_timeout = n as u64 * MILLISECOND
            }
            n => return Err(format!("output buffer timeout ({n}) is invalid")),
        }
        match d.output_buffer_size {
            -1 => {
                self.output_buffer_size = 1;
                self.output_buffer_timeout = 0;
            }
            0 => {}
            n if n >= 64 && n <= opts.max_output_buffer_size => self.output_buffer_size = n,
            n => return Err(format!("output buffer size ({n}) is invalid")),
        }
        if !(0..=99).contains(&d.sample_rate) {
            return Err(format!("sample rate ({}) is invalid", d.sample_rate));
        }
        self.sample_rate = d.sample_rate;
        match d.msg_timeout {
            0 => {}
            n if n >= 1000 && n <= ms(opts.max_msg_timeout) => {
                self.msg_timeout = n as u64 * MILLISECOND
            }
            n => return Err(format!("msg timeout ({n}) is invalid")),
        }
        Ok(())
    }
}

/// The negotiated features, in nsqd's JSON field order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentifyResponse {
    pub max_rdy_count: i64,
    pub version: String,
    pub max_msg_timeout: i64,
    pub msg_timeout: i64,
    pub tls_v1: bool,
    pub deflate: bool,
    pub deflate_level: i64,
    pub max_deflate_level: i64,
    pub snappy: bool,
    pub sample_rate: i32,
    pub auth_required: bool,
    pub output_buffer_size: i64,
    pub output_buffer_timeout: i64,
}

/// Transport upgrades a client negotiated, performed in this order after the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Upgrades {
    pub tls: bool,
    pub snappy: bool,
    pub deflate: Option<u32>,
}

impl IdentifyResponse {
    /// nsqd's negotiation: returns the reply and the upgrades, or E_IDENTIFY_FAILED.
    pub fn negotiate(
        d: &IdentifyData,
        s: &ClientSettings,
        opts: &Options,
    ) -> Result<(IdentifyResponse, Upgrades), ProtocolError> {
        let tls = opts.tls_enabled && d.tls_v1;
        let deflate = opts.deflate && d.deflate;
        let mut deflate_level = 6;
        if deflate && d.deflate_level > 0 {
            deflate_level = d.deflate_level;
        }
        if (opts.max_deflate_level as i64) < deflate_level {
            deflate_level = opts.max_deflate_level as i64;
        }
        let snappy = opts.snappy && d.snappy;
        if deflate && snappy {
            return Err(ProtocolError::fatal(
                "E_IDENTIFY_FAILED",
                "cannot enable both deflate and snappy compression",
            ));
        }
        let resp = IdentifyResponse {
            max_rdy_count: opts.max_rdy_count,
            version: opts.version.clone(),
            max_msg_timeout: (opts.max_msg_timeout / MILLISECOND) as i64,
            msg_timeout: (s.msg_timeout / MILLISECOND) as i64,
            tls_v1: tls,
            deflate,
            deflate_level,
            max_deflate_level: opts.max_deflate_level as i64,
            snappy,
            sample_rate: s.sample_rate,
            auth_required: opts.auth_enabled,
            output_buffer_size: s.output_buffer_size,
            output_buffer_timeout: (s.output_buffer_timeout / MILLISECOND) as i64,
        };
        let up = Upgrades {
            tls,
            snappy,
            deflate: deflate.then_some(deflate_level as u32),
        };
        Ok((resp, up))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(json: &str) -> Result<ClientSettings, String> {
        let opts = Options::default();
        let d = IdentifyData::parse(json.as_bytes()).map_err(|e| e.to_string())?;
        let mut s = ClientSettings::defaults(&opts);
        s.apply(&d, &opts).map(|_| s)
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn parses_like_go() {
        let d = IdentifyData::parse(br#"{"Client_ID":"x","heartbeat_interval":1000,"extra":[1]}"#)
            .unwrap();
        assert_eq!(d.client_id, "x");
        assert_eq!(d.heartbeat_interval, 1000);
        assert!(IdentifyData::parse(b"null").is_ok());
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"msg_timeout":"1"}"#,
            br#"{"msg_timeout":1.5}"#,
            br#"{"snappy":1}"#,
        ] {
            assert_eq!(
                IdentifyData::parse(bad).unwrap_err().to_string(),
                "E_BAD_BODY IDENTIFY failed to decode JSON body"
            );
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn validates_like_nsqd() {
        assert_eq!(
            apply(r#"{"heartbeat_interval":100}"#).unwrap_err(),
            "heartbeat interval (100) is invalid"
        );
        assert_eq!(
            apply(r#"{"heartbeat_interval":-1}"#)
                .unwrap()
                .heartbeat_interval,
            None
        );
        assert_eq!(
            apply(r#"{"output_buffer_size":63}"#).unwrap_err(),
            "output buffer size (63) is invalid"
        );
        assert_eq!(
            apply(r#"{"output_buffer_timeout":5}"#).unwrap_err(),
            "output buffer timeout (5) is invalid"
        );
        assert_eq!(
            apply(r#"{"sample_rate":100}"#).unwrap_err(),
            "sample rate (100) is invalid"
        );
        assert_eq!(
            apply(r#"{"msg_timeout":999}"#).unwrap_err(),
            "msg timeout (999) is invalid"
        );
        assert_eq!(
            apply(r#"{"msg_timeout":5000}"#).unwrap().msg_timeout,
            5000 * MILLISECOND
        );
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn negotiation_reply_order_and_conflict() {
        let opts = Options::default();
        let d = IdentifyData::parse(
            br#"{"feature_negotiation":true,"deflate":true,"deflate_level":9}"#,
        )
        .unwrap();
        let s = ClientSettings::defaults(&opts);
        let (r, up) = IdentifyResponse::negotiate(&d, &s, &opts).unwrap();
        assert_eq!(up.deflate, Some(6));
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.starts_with(r#"{"max_rdy_count":2500,"version":"#),
            "{json}"
        );
        assert!(
            json.contains(r#""msg_timeout":60000,"tls_v1":false,"deflate":true,"deflate_level":6"#)
        );
        let plain = IdentifyData::parse(br#"{"feature_negotiation":true}"#).unwrap();
        let (r, _) = IdentifyResponse::negotiate(&plain, &s, &opts).unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"max_rdy_count":2500,"version":"1.3.0","max_msg_timeout":900000,"msg_timeout":60000,"tls_v1":false,"deflate":false,"deflate_level":6,"max_deflate_level":6,"snappy":false,"sample_rate":0,"auth_required":false,"output_buffer_size":16384,"output_buffer_timeout":250}"#
        );
        let both = IdentifyData::parse(br#"{"deflate":true,"snappy":true}"#).unwrap();
        assert_eq!(
            IdentifyResponse::negotiate(&both, &s, &opts)
                .unwrap_err()
                .to_string(),
            "E_IDENTIFY_FAILED cannot enable both deflate and snappy compression"
        );
    }
}
