//! The decoder must never panic, and must agree with itself when bytes arrive in pieces.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nsqlab_core::options::Limits;
use nsqlab_core::protocol::decode::{decode, no_auth, ClientState, DecodeContext};

fuzz_target!(|data: &[u8]| {
    let state = match data.first().map(|b| b % 3) {
        Some(0) | None => ClientState::Init,
        Some(1) => ClientState::Subscribed,
        _ => ClientState::Closing,
    };
    let ctx = DecodeContext {
        state,
        heartbeats_enabled: true,
        tls_ok: true,
        limits: Limits { max_msg_size: 1024, max_body_size: 4096 },
        max_rdy_count: 2500,
        max_req_timeout_ms: 3_600_000,
        check_auth: &no_auth,
        // A topic published to before skips the name check: it must decode the same.
        known_topic: data.first().filter(|b| *b & 4 != 0).map(|_| "t"),
        mpub_walk: None,
    };
    let bytes = data.get(1..).unwrap_or(&[]);
    let whole = decode(bytes, &ctx);
    // A prefix of a complete command is incomplete or the same error, never a different command.
    if let Ok(nsqlab_core::protocol::Decoded::Command(_, n)) = &whole {
        for cut in 0..*n {
            match decode(&bytes[..cut], &ctx) {
                Ok(nsqlab_core::protocol::Decoded::Incomplete) => {}
                other => panic!("prefix {cut} of a {n}-byte command decoded as {other:?}"),
            }
        }
    }
});
