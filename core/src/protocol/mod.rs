//! NSQ protocol V2: framing, errors, names, and the command decoder.
//!
//! # Format
//!
//! A client opens with the 4-byte magic `"  V2"`, then sends commands: a text line ending in
//! `\n` (a trailing `\r` is dropped, parameters are split on single spaces), followed for
//! IDENTIFY, AUTH, PUB, MPUB and DPUB by a `[4-byte big-endian size][body]` block.
//!
//! The server answers with frames:
//!
//! ```text
//! [4-byte size = len(data) + 4][4-byte frame type][data]
//! ```
//!
//! frame type 0 is a response (`OK`, `CLOSE_WAIT`, `_heartbeat_`, IDENTIFY JSON), 1 an error
//! (`E_CODE description`), 2 a message (see [`crate::message`]).

pub mod command;
pub mod decode;
pub mod error;
pub mod identify;

pub use command::Command;
pub use decode::{decode, DecodeContext, Decoded};
pub use error::ProtocolError;
pub use identify::{IdentifyData, IdentifyResponse};

/// The magic a V2 client sends first.
pub const MAGIC_V2: &[u8; 4] = b"  V2";

/// Frame type of a response.
pub const FRAME_TYPE_RESPONSE: i32 = 0;
/// Frame type of an error.
pub const FRAME_TYPE_ERROR: i32 = 1;
/// Frame type of a message.
pub const FRAME_TYPE_MESSAGE: i32 = 2;

pub const OK: &[u8] = b"OK";
pub const CLOSE_WAIT: &[u8] = b"CLOSE_WAIT";
pub const HEARTBEAT: &[u8] = b"_heartbeat_";

/// Append one frame.
pub fn encode_frame(out: &mut Vec<u8>, frame_type: i32, data: &[u8]) {
    out.extend_from_slice(&((data.len() as u32 + 4).to_be_bytes()));
    out.extend_from_slice(&frame_type.to_be_bytes());
    out.extend_from_slice(data);
}

/// Append a message frame without building the message encoding separately.
pub fn encode_message_frame(out: &mut Vec<u8>, msg: &crate::Message) {
    out.reserve(8 + msg.encoded_len());
    out.extend_from_slice(&((msg.encoded_len() as u32 + 4).to_be_bytes()));
    out.extend_from_slice(&FRAME_TYPE_MESSAGE.to_be_bytes());
    msg.encode(out);
}

/// A decoded server frame (used by clients, tests and the simulator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Response(Vec<u8>),
    Error(Vec<u8>),
    Message(crate::Message),
    /// An unknown frame type, kept as it came.
    Unknown(i32, Vec<u8>),
}

/// Parse one server frame from the front of `buf`: `Ok(None)` when more bytes are needed,
/// otherwise the frame and how many bytes it used.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, &'static str> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if size < 4 {
        return Err("frame size below 4");
    }
    if buf.len() < 4 + size {
        return Ok(None);
    }
    let ty = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let data = &buf[8..4 + size];
    let frame = match ty {
        FRAME_TYPE_RESPONSE => Frame::Response(data.to_vec()),
        FRAME_TYPE_ERROR => Frame::Error(data.to_vec()),
        FRAME_TYPE_MESSAGE => Frame::Message(crate::Message::decode(data).ok_or("bad message")?),
        other => Frame::Unknown(other, data.to_vec()),
    };
    Ok(Some((frame, 4 + size)))
}

const EPHEMERAL_SUFFIX: &str = "#ephemeral";

/// nsqd's name rule for topics and channels: 1–64 characters of `[.a-zA-Z0-9_-]`, optionally
/// ending in `#ephemeral` (counted in the 64).
pub fn is_valid_name(name: &str) -> bool {
    is_valid_name_bytes(name.as_bytes())
}

/// [`is_valid_name`] on bytes (a valid name is ASCII).
pub fn is_valid_name_bytes(name: &[u8]) -> bool {
    if name.is_empty() || name.len() > 64 {
        return false;
    }
    let base = name
        .strip_suffix(EPHEMERAL_SUFFIX.as_bytes())
        .unwrap_or(name);
    !base.is_empty() && base.iter().fold(true, |ok, &c| ok & NAME_BYTE[c as usize])
}

/// The bytes nsqd allows in a name: `[.a-zA-Z0-9_-]`.
const NAME_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-';
        c += 1;
    }
    t
};

/// JSON as Go's `json.Marshal` writes it: `<`, `>`, `&`, U+2028 and U+2029 come out as
/// `\u003c`, `\u003e`, `\u0026`, `\u2028` and `\u2029`. Outside strings JSON has none of
/// them, so escaping every one is safe.
pub fn to_go_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, serde_json::Error> {
    let raw = serde_json::to_vec(v)?;
    // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
    if !raw.iter().any(|&b| matches!(b, b'<' | b'>' | b'&' | 0xE2)) {
        return Ok(raw);
    }
    let text = String::from_utf8(raw).expect("serde_json writes UTF-8");
    let mut out = String::with_capacity(text.len() + 16);
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out.into_bytes())
}

/// Whether a (valid) name marks an ephemeral topic or channel.
pub fn is_ephemeral(name: &str) -> bool {
    name.ends_with(EPHEMERAL_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn json_escapes_what_go_escapes() {
        let v = serde_json::json!({"a": "x<y>&z\u{2028}\u{2029}é", "b": 1});
        assert_eq!(
            String::from_utf8(to_go_json(&v).unwrap()).unwrap(),
            r#"{"a":"x\u003cy\u003e\u0026z\u2028\u2029é","b":1}"#
        );
        assert_eq!(to_go_json(&"plain").unwrap(), b"\"plain\"");
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn names_follow_nsqd_rule() {
        for ok in ["a", "test_topic", "a.b-c", "x#ephemeral", &"a".repeat(64)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "#ephemeral",
            "a b",
            "a#b",
            "a#ephemeral#ephemeral",
            "ü",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
        assert!(is_valid_name(&format!("{}#ephemeral", "a".repeat(54))));
        assert!(!is_valid_name(&format!("{}#ephemeral", "a".repeat(55))));
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn frames_round_trip() {
        let mut out = Vec::new();
        encode_frame(&mut out, FRAME_TYPE_ERROR, b"E_INVALID x");
        assert_eq!(&out[..8], &[0, 0, 0, 15, 0, 0, 0, 1]);
        let (f, n) = decode_frame(&out).unwrap().unwrap();
        assert_eq!(n, out.len());
        assert_eq!(f, Frame::Error(b"E_INVALID x".to_vec()));
        assert_eq!(decode_frame(&out[..out.len() - 1]).unwrap(), None);
    }
}
