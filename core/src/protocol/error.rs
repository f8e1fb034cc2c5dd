//! Protocol errors as nsqd sends them: `E_CODE description` in an error frame; fatal ones
//! close the connection after the frame (nsqd's `FatalClientErr` versus `ClientErr`).

use std::fmt;

/// An error a client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ProtocolError {
    /// nsqd's code, e.g. `E_INVALID`.
    pub code: &'static str,
    /// nsqd's description (may be empty).
    pub text: String,
    /// Whether the connection closes after the error frame.
    pub fatal: bool,
}

impl ProtocolError {
    /// A fatal error: frame, then close (nsqd's `NewFatalClientErr`).
    pub fn fatal(code: &'static str, text: impl Into<String>) -> Self {
        Self {
            code,
            text: text.into(),
            fatal: true,
        }
    }

    /// A non-fatal error: frame only (nsqd's `NewClientErr`).
    pub fn soft(code: &'static str, text: impl Into<String>) -> Self {
        Self {
            code,
            text: text.into(),
            fatal: false,
        }
    }

    /// The error frame's data.
    pub fn frame_data(&self) -> Vec<u8> {
        self.to_string().into_bytes()
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            f.write_str(self.code)
        } else {
            write!(f, "{} {}", self.code, self.text)
        }
    }
}

/// Go's `%q` for a string: double-quoted with Go's escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` for bytes that may not be UTF-8 (invalid bytes become `\xNN`).
pub(crate) fn go_quote_bytes(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => go_quote(s),
        Err(_) => {
            let mut out = String::from("\"");
            for chunk in b.utf8_chunks() {
                let q = go_quote(chunk.valid());
                out.push_str(&q[1..q.len() - 1]);
                for byte in chunk.invalid() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            out.push('"');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn display_as_nsqd() {
        let e = ProtocolError::fatal("E_INVALID", "cannot SUB in current state");
        assert_eq!(e.to_string(), "E_INVALID cannot SUB in current state");
        assert_eq!(
            ProtocolError::fatal("E_BAD_PROTOCOL", "").to_string(),
            "E_BAD_PROTOCOL"
        );
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn quotes_like_go() {
        assert_eq!(go_quote("a b"), "\"a b\"");
        assert_eq!(go_quote("a\"\n"), "\"a\\\"\\n\"");
        assert_eq!(go_quote_bytes(b"a\xffb"), "\"a\\xffb\"");
    }
}
