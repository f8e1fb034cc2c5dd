//! The page's forms, checked as nsqd checks what they send.
//!
//! Every field is checked on its own, and a refusal says why in nsqd's words: a value that
//! would go on the wire is decoded by the core's own decoder ([`nsqlab_core::protocol::decode`]),
//! so "delay -500" gets `E_INVALID DPUB timeout -500 out of range 0-3600000`, exactly what
//! nsqd answers. Limits of the page's own (how many messages one click publishes) say so.
//! Nothing is clamped or dropped silently.

use crate::i18n::Text;
use nsqlab_core::protocol::decode::{no_auth, ClientState};
use nsqlab_core::protocol::{decode, DecodeContext, Decoded};
use nsqlab_core::Options;

/// The forms' fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    PubTopic,
    PubBody,
    PubDelay,
    PubCount,
    ManageTopic,
    ManageChannel,
    ManageRdy,
    Seed,
}

impl Field {
    /// The input's id on the page.
    pub fn id(self) -> &'static str {
        match self {
            Field::PubTopic => "pub-topic",
            Field::PubBody => "pub-body",
            Field::PubDelay => "pub-defer",
            Field::PubCount => "pub-count",
            Field::ManageTopic => "m-topic",
            Field::ManageChannel => "m-channel",
            Field::ManageRdy => "m-rdy",
            Field::Seed => "seed",
        }
    }
}

/// At most this many messages per click of "publish" (the page's limit, not nsqd's).
pub const MAX_COUNT: usize = 1000;

/// The longest a simulated consumer may work on one message, in ms (the page's limit).
pub const MAX_WORK_MS: u64 = 3_600_000;

/// A checked publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publish {
    pub topic: String,
    pub body: String,
    pub defer_ms: u64,
    pub count: usize,
}

/// Refusals, by field.
pub type Refusals = Vec<(Field, Text)>;

fn ctx<'a>(opts: &Options, state: ClientState) -> DecodeContext<'a> {
    DecodeContext {
        state,
        heartbeats_enabled: true,
        tls_ok: true,
        limits: opts.limits(),
        max_rdy_count: opts.max_rdy_count,
        max_req_timeout_ms: opts.max_req_timeout / 1_000_000,
        check_auth: &no_auth,
        known_topic: None,
        mpub_walk: None,
    }
}

/// What nsqd answers to these bytes: `Ok` when it takes them, or its error frame's text.
fn nsqd_says(opts: &Options, state: ClientState, bytes: &[u8]) -> Result<(), String> {
    match decode(bytes, &ctx(opts, state)) {
        Ok(Decoded::Command(..)) | Ok(Decoded::Ignored(_)) | Ok(Decoded::LargeMpub { .. }) => {
            Ok(())
        }
        Ok(Decoded::Refused { error, .. }) | Err(error) => Err(error.to_string()),
        Ok(Decoded::Incomplete) | Ok(Decoded::Close) => Err("E_INVALID".to_string()),
    }
}

/// A command line with a body, as a client sends it.
fn with_body(line: &str, body: &[u8]) -> Vec<u8> {
    let mut b = line.as_bytes().to_vec();
    b.extend_from_slice(&(body.len() as u32).to_be_bytes());
    b.extend_from_slice(body);
    b
}

/// nsqd's `%q` of a name, for names that cannot go on a command line.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// nsqd's error for a name, with the rule for names.
fn bad_name(error: String) -> Text {
    Text::new("refuse.name").arg("error", error)
}

/// nsqd's error as it is.
fn nsqd(error: String) -> Text {
    Text::new("refuse.nsqd").arg("error", error)
}

/// Check a topic name as `cmd` would send it.
fn check_topic(opts: &Options, cmd: &str, topic: &str) -> Result<(), Text> {
    let refused = || {
        bad_name(format!(
            "E_BAD_TOPIC {cmd} topic name {} is not valid",
            quoted(topic)
        ))
    };
    if topic.is_empty() || topic.contains(char::is_whitespace) {
        return Err(refused());
    }
    let bytes = if cmd == "SUB" {
        format!("SUB {topic} c\n").into_bytes()
    } else {
        with_body(&format!("{cmd} {topic}\n"), b"x")
    };
    nsqd_says(opts, ClientState::Init, &bytes).map_err(|e| {
        if e.starts_with("E_BAD_TOPIC") {
            bad_name(e)
        } else {
            nsqd(e)
        }
    })
}

/// Check the publish form. Delay 0 is a plain PUB; a count over 1 is an MPUB, or that many
/// DPUBs when there is a delay.
pub fn check_publish(
    opts: &Options,
    topic: &str,
    body: &str,
    delay: &str,
    count: &str,
) -> Result<Publish, Refusals> {
    let mut no = Refusals::new();
    if let Err(e) = check_topic(opts, "PUB", topic) {
        no.push((Field::PubTopic, e));
    }
    if let Err(e) = nsqd_says(
        opts,
        ClientState::Init,
        &with_body("PUB t\n", body.as_bytes()),
    ) {
        no.push((Field::PubBody, nsqd(e)));
    }
    let delay = delay.trim();
    let defer_ms = if delay.is_empty() {
        no.push((Field::PubDelay, Text::new("refuse.delay.empty")));
        0
    } else if delay.contains(char::is_whitespace) {
        no.push((
            Field::PubDelay,
            nsqd(format!("E_INVALID DPUB could not parse timeout {delay}")),
        ));
        0
    } else {
        match nsqd_says(
            opts,
            ClientState::Init,
            &with_body(&format!("DPUB t {delay}\n"), b"x"),
        ) {
            Ok(()) => delay.parse().unwrap_or(0),
            Err(e) => {
                no.push((Field::PubDelay, nsqd(e)));
                0
            }
        }
    };
    let count = match count.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_COUNT as i64).contains(&n) => n as usize,
        Ok(n) if n < 1 => {
            no.push((
                Field::PubCount,
                Text::new("refuse.count.low").arg(
                    "error",
                    format!("E_BAD_BODY MPUB invalid message count {n}"),
                ),
            ));
            1
        }
        Ok(n) => {
            no.push((
                Field::PubCount,
                Text::new("refuse.count.high")
                    .arg("n", n)
                    .arg("max", MAX_COUNT),
            ));
            1
        }
        Err(_) => {
            no.push((
                Field::PubCount,
                Text::new("refuse.count.nan").arg("max", MAX_COUNT),
            ));
            1
        }
    };
    if no.is_empty() && count > 1 {
        let bodies: usize = (1..=count).map(|i| body.len() + 1 + digits(i)).sum();
        let size = 4 + count * 4 + bodies;
        if size as u64 > opts.max_body_size {
            no.push((
                Field::PubCount,
                nsqd(format!(
                    "E_BAD_BODY MPUB body too big {size} > {}",
                    opts.max_body_size
                )),
            ));
        }
    }
    if no.is_empty() {
        Ok(Publish {
            topic: topic.to_string(),
            body: body.to_string(),
            defer_ms,
            count,
        })
    } else {
        Err(no)
    }
}

fn digits(n: usize) -> usize {
    n.to_string().len()
}

/// Check an RDY count as nsqd would (`RDY <count>` from a subscribed client).
pub fn check_rdy(opts: &Options, rdy: &str) -> Result<i64, Text> {
    let rdy = rdy.trim();
    let unparsable = || nsqd(format!("E_INVALID RDY could not parse count {rdy}"));
    if rdy.is_empty() || rdy.contains(char::is_whitespace) {
        return Err(unparsable());
    }
    nsqd_says(
        opts,
        ClientState::Subscribed,
        format!("RDY {rdy}\n").as_bytes(),
    )
    .map_err(nsqd)?;
    rdy.parse().map_err(|_| unparsable())
}

/// Check the names a new consumer subscribes with (`SUB <topic> <channel>`).
pub fn check_sub(opts: &Options, topic: &str, channel: &str) -> Refusals {
    let mut no = Refusals::new();
    if let Err(e) = check_topic(opts, "SUB", topic) {
        no.push((Field::ManageTopic, e));
        return no;
    }
    let bad_channel = || {
        bad_name(format!(
            "E_BAD_CHANNEL SUB channel name {} is not valid",
            quoted(channel)
        ))
    };
    if channel.is_empty() || channel.contains(char::is_whitespace) {
        no.push((Field::ManageChannel, bad_channel()));
    } else if let Err(e) = nsqd_says(
        opts,
        ClientState::Init,
        format!("SUB {topic} {channel}\n").as_bytes(),
    ) {
        no.push((Field::ManageChannel, bad_name(e)));
    }
    no
}

/// Check names for nsqd's HTTP `/topic/…` and `/channel/…` (its 400 answers).
pub fn check_admin(topic: &str, channel: Option<&str>) -> Refusals {
    let valid = nsqlab_core::protocol::is_valid_name;
    let mut no = Refusals::new();
    if !valid(topic) {
        no.push((
            Field::ManageTopic,
            bad_name("400 INVALID_TOPIC".to_string()),
        ));
    }
    if let Some(c) = channel {
        if !valid(c) {
            no.push((
                Field::ManageChannel,
                bad_name("400 INVALID_CHANNEL".to_string()),
            ));
        }
    }
    no
}

/// A whole number in `lo..=hi`, for the page's own settings (`what` is a catalogue word).
pub fn check_number(what: &'static str, value: &str, lo: u64, hi: u64) -> Result<u64, Text> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(Text::new("refuse.number")
            .word("what", what)
            .arg("lo", lo)
            .arg("hi", hi)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options::default()
    }

    fn refusal(r: Result<Publish, Refusals>, f: Field) -> String {
        let no = r.expect_err("refused");
        no.into_iter()
            .find(|(x, _)| *x == f)
            .map(|(_, t)| t.en())
            .unwrap_or_else(|| panic!("no refusal for {f:?}"))
    }

    #[test]
    fn publish_refusals_are_nsqds() {
        let o = opts();
        let r = |t: &str, b: &str, d: &str, c: &str| check_publish(&o, t, b, d, c);
        assert_eq!(
            r("orders", "hi", "0", "1"),
            Ok(Publish {
                topic: "orders".into(),
                body: "hi".into(),
                defer_ms: 0,
                count: 1
            })
        );
        assert!(refusal(r("", "hi", "0", "1"), Field::PubTopic)
            .starts_with("E_BAD_TOPIC PUB topic name \"\" is not valid"));
        assert!(refusal(r("no such!", "hi", "0", "1"), Field::PubTopic)
            .starts_with("E_BAD_TOPIC PUB topic name \"no such!\" is not valid"));
        assert_eq!(
            refusal(r("t", "", "0", "1"), Field::PubBody),
            "E_BAD_MESSAGE PUB invalid message body size 0"
        );
        assert_eq!(
            refusal(r("t", "hi", "-500", "1"), Field::PubDelay),
            "E_INVALID DPUB could not parse timeout -500"
        );
        assert_eq!(
            refusal(r("t", "hi", "99999999", "1"), Field::PubDelay),
            "E_INVALID DPUB timeout 99999999 out of range 0-3600000"
        );
        assert!(refusal(r("t", "hi", "abc", "1"), Field::PubDelay).starts_with("E_INVALID DPUB"));
        assert!(refusal(r("t", "hi", "0", "1000000"), Field::PubCount).contains("at most 1000"));
        assert!(
            refusal(r("t", "hi", "0", "0"), Field::PubCount).contains("invalid message count 0")
        );
        assert!(refusal(r("t", "hi", "0", "lots"), Field::PubCount).contains("whole number"));
        // A delay with a count is that many DPUBs, not a dropped delay.
        assert_eq!(r("t", "hi", "3000", "3").unwrap().defer_ms, 3000);
    }

    #[test]
    fn rdy_and_names() {
        let o = opts();
        assert_eq!(check_rdy(&o, "5"), Ok(5));
        assert_eq!(
            check_rdy(&o, "-5").unwrap_err().en(),
            "E_INVALID RDY could not parse count -5"
        );
        assert_eq!(
            check_rdy(&o, "2501").unwrap_err().en(),
            "E_INVALID RDY count 2501 out of range 0-2500"
        );
        assert!(check_rdy(&o, "lots")
            .unwrap_err()
            .en()
            .starts_with("E_INVALID RDY could not parse"));
        assert!(check_sub(&o, "t", "c").is_empty());
        assert_eq!(check_sub(&o, "t", "bad name")[0].0, Field::ManageChannel);
        assert_eq!(check_sub(&o, "bad!", "c")[0].0, Field::ManageTopic);
        assert!(check_admin("t", Some("c")).is_empty());
        assert_eq!(check_admin("t", Some("")).len(), 1);
        assert_eq!(
            check_number("knob.fail", "101", 0, 100).unwrap_err().en(),
            "fail %: a whole number from 0 to 100"
        );
    }
}
