//! Check-then-parse decoding of V2 commands, in nsqd's order of checks.
//!
//! [`decode`] looks at the front of a client's input buffer. It returns
//! [`Decoded::Incomplete`] while a line or body is not all there (that is not an error), the
//! validated [`Command`] and its length once it is, or nsqd's error. nsqd checks state,
//! parameters, names and sizes before it reads a body, so this decoder takes the client's state
//! in a [`DecodeContext`] and reports the same error nsqd would, as soon as the bytes that
//! decide it have arrived: a huge size prefix is refused at once, not buffered.
//!
//! Every error the decoder returns is fatal, as in nsqd.

use super::command::{Command, RawId, TopicName};
use super::error::{go_quote_bytes, ProtocolError};
use super::is_valid_name_bytes;
use crate::options::Limits;

/// nsqd reads lines through a 16 KiB `bufio.Reader`; a longer line ends the connection.
pub const MAX_LINE_LENGTH: usize = 16 * 1024;

/// `FIN <16-byte ID>\n`.
const FIN_LINE: usize = 4 + 16 + 1;

/// The client's protocol state, as nsqd's `stateInit` / `stateSubscribed` / `stateClosing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientState {
    Init,
    Subscribed,
    Closing,
}

/// What the decoder needs to know about the client and the server.
pub struct DecodeContext<'a> {
    pub state: ClientState,
    /// The client's heartbeat interval is not disabled.
    pub heartbeats_enabled: bool,
    /// TLS is not required, or the client already upgraded.
    pub tls_ok: bool,
    pub limits: Limits,
    pub max_rdy_count: i64,
    /// `--max-req-timeout` in milliseconds (bounds DPUB).
    pub max_req_timeout_ms: u64,
    /// nsqd's `CheckAuth(cmd, topic, channel)`; MPUB calls it before reading its body.
    pub check_auth: &'a dyn Fn(&str, &str, &str) -> Result<(), ProtocolError>,
    /// A topic name this client published to before, so known to be valid: a publish that
    /// names it again skips the name check.
    pub known_topic: Option<&'a str>,
    /// How far an MPUB at the front of the buffer was walked by an earlier call (see
    /// [`MpubWalk`]); `None` walks it from its start every time.
    pub mpub_walk: Option<&'a std::cell::Cell<MpubWalk>>,
}

/// How far [`read_mpub`] got through an MPUB still arriving: the messages whose sizes it
/// checked, and the offset after them. A large MPUB arrives in many reads; walking it from
/// its start on each one cost O(n²): a 5 MiB MPUB of a million messages whose reads reached
/// the broker in one wake-up held it for 120 ms. The caller keeps it while the same MPUB is
/// at the front of its buffer, and resets it when a command is consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MpubWalk {
    messages: i32,
    pos: usize,
}

/// The result of looking at the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// More bytes are needed.
    Incomplete,
    /// A command, and how many bytes it used.
    Command(Command, usize),
    /// A command nsqd accepts and ignores (RDY after CLS), and its length.
    Ignored(usize),
    /// nsqd closes the connection without a frame (a line longer than its read buffer).
    Close,
    /// An MPUB whose body size passed but whose messages did not: nsqd has made the topic by
    /// then (`GetTopic` comes before `readMPUB`), so the broker makes it too, then sends the
    /// (fatal) error.
    Refused {
        topic: TopicName,
        error: ProtocolError,
    },
    /// An MPUB of more than [`MPUB_STEP`] messages, whole and checked, and how many bytes it
    /// used: its messages are read from the batch a step at a time, as they are published.
    LargeMpub {
        topic: TopicName,
        batch: MpubBatch,
        len: usize,
    },
}

/// Messages a large MPUB publishes per step (see `Broker`): between steps the broker serves
/// its other clients.
pub const MPUB_STEP: usize = 4096;

/// The messages of a large MPUB in one shared copy of its body, read a step at a time. Its
/// sizes were checked when it was decoded. Making the million bodies of a 5 MiB MPUB at
/// once held its partition for 20 ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpubBatch {
    /// `([4-byte size][body])*`.
    buf: std::sync::Arc<[u8]>,
    /// Where the next message's size is.
    at: usize,
    left: usize,
}

impl MpubBatch {
    /// Messages not yet taken.
    pub fn len(&self) -> usize {
        self.left
    }

    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// The next `n` messages' bodies (fewer at the end).
    pub fn take(&mut self, n: usize) -> Vec<crate::message::Body> {
        let n = n.min(self.left);
        self.left -= n;
        (0..n)
            .map(|_| {
                let size = read_len(&self.buf, self.at).expect("a checked size") as usize;
                let body = self.at + 4..self.at + 4 + size;
                self.at = body.end;
                crate::message::Body::range_of(&self.buf, body)
            })
            .collect()
    }
}

type Res = Result<Decoded, ProtocolError>;

fn fatal(code: &'static str, text: impl Into<String>) -> ProtocolError {
    ProtocolError::fatal(code, text)
}

/// A command line split on single spaces. No command reads more than three parameters, so
/// the rest are only counted (AUTH checks the exact count); no allocation per command.
struct Params<'a> {
    items: [&'a [u8]; 4],
    len: usize,
}

impl<'a> Params<'a> {
    fn split(line: &'a [u8]) -> Self {
        let mut p = Params {
            items: [&[]; 4],
            len: 0,
        };
        let mut start = 0;
        for space in memchr::memchr_iter(b' ', line) {
            if p.len < 4 {
                p.items[p.len] = &line[start..space];
            }
            p.len += 1;
            start = space + 1;
        }
        if p.len < 4 {
            p.items[p.len] = &line[start..];
        }
        p.len += 1;
        p
    }

    /// The parameters as a slice: up to four are kept, enough for every check nsqd makes
    /// (a fifth parameter only matters to AUTH's `!= 1`, which the length of 4 still fails).
    fn as_slice(&self) -> &[&'a [u8]] {
        &self.items[..self.len.min(4)]
    }
}

/// nsqd's `protocol.ByteToBase10`: decimal digits only, wrapping on overflow.
fn base10(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        // nsqd accepts an empty number as 0.
        return Some(0);
    }
    let mut n: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.wrapping_mul(10).wrapping_add((c - b'0') as u64);
    }
    Some(n)
}

/// nsqd's `readLen`: a big-endian int32.
fn read_len(buf: &[u8], at: usize) -> Option<i32> {
    let b = buf.get(at..at + 4)?;
    Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn message_id(b: &[u8]) -> Result<RawId, ProtocolError> {
    b.try_into()
        .map_err(|_| fatal("E_INVALID", "invalid message ID"))
}

/// Decode the command at the front of `buf` (after the magic).
pub fn decode(buf: &[u8], ctx: &DecodeContext<'_>) -> Res {
    // The most frequent command has a fixed length: `FIN <16 lowercase hex>\n` needs no
    // line search and no split (anything else takes the general path below).
    if let Some(line) = buf.get(..FIN_LINE) {
        if line.starts_with(b"FIN ")
            && line[FIN_LINE - 1] == b'\n'
            && ctx.tls_ok
            && ctx.state != ClientState::Init
            && crate::message::MessageId::from_hex(&line[4..FIN_LINE - 1]).is_some()
        {
            let raw = line[4..FIN_LINE - 1].try_into().expect("16 bytes");
            return Ok(Decoded::Command(Command::Fin(raw), FIN_LINE));
        }
    }
    decode_line(buf, ctx)
}

/// The client's input ended (it closed its sending side) with `buf` still short of a whole
/// command (one [`decode`] found [`Decoded::Incomplete`]): the error nsqd sends when that
/// read fails, naming what it was reading. `None` when nsqd closes without a frame (a line
/// cut short, or no command begun).
pub fn at_eof(buf: &[u8], limits: Limits) -> Option<ProtocolError> {
    let nl = memchr::memchr(b'\n', &buf[..buf.len().min(MAX_LINE_LENGTH)])?;
    let mut line = &buf[..nl];
    if let [rest @ .., b'\r'] = line {
        line = rest;
    }
    let at = nl + 1;
    let name = Params::split(line).as_slice()[0];
    let size_read = read_len(buf, at).is_some();
    let (code, text) = match name {
        b"IDENTIFY" | b"AUTH" => {
            let what = if size_read { "body" } else { "body size" };
            (
                "E_BAD_BODY",
                format!("{} failed to read {what}", lossy(name)),
            )
        }
        b"PUB" | b"DPUB" => {
            let what = if size_read {
                "message body"
            } else {
                "message body size"
            };
            (
                "E_BAD_MESSAGE",
                format!("{} failed to read {what}", lossy(name)),
            )
        }
        b"MPUB" if !size_read => ("E_BAD_BODY", "MPUB failed to read body size".into()),
        b"MPUB" => match read_mpub(&buf[at + 4..], limits) {
            Ok(MpubRead::Incomplete(MpubShort::Count)) => {
                ("E_BAD_BODY", "MPUB failed to read message count".into())
            }
            Ok(MpubRead::Incomplete(MpubShort::Size(i))) => (
                "E_BAD_MESSAGE",
                format!("MPUB failed to read message({i}) body size"),
            ),
            Ok(MpubRead::Incomplete(MpubShort::Body(_))) => {
                ("E_BAD_MESSAGE", "MPUB failed to read message body".into())
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(fatal(code, text))
}

/// [`decode`] without the FIN shortcut: find the line, split it, dispatch on the name.
fn decode_line(buf: &[u8], ctx: &DecodeContext<'_>) -> Res {
    let window = &buf[..buf.len().min(MAX_LINE_LENGTH)];
    let Some(nl) = memchr::memchr(b'\n', window) else {
        return Ok(if buf.len() >= MAX_LINE_LENGTH {
            Decoded::Close
        } else {
            Decoded::Incomplete
        });
    };
    let mut line = &buf[..nl];
    if let [rest @ .., b'\r'] = line {
        line = rest;
    }
    let body_at = nl + 1;
    let params = Params::split(line);
    let params = params.as_slice();
    let name = params[0];

    if name == b"IDENTIFY" {
        return identify(buf, body_at, ctx);
    }
    if !ctx.tls_ok {
        return Err(fatal(
            "E_INVALID",
            format!("cannot {} in current state (TLS required)", lossy(name)),
        ));
    }
    match name {
        b"FIN" => fin(params, ctx, body_at),
        b"RDY" => rdy(params, ctx, body_at),
        b"REQ" => req(params, ctx, body_at),
        b"PUB" => publish(buf, params, body_at, ctx),
        b"MPUB" => mpub(buf, params, body_at, ctx),
        b"DPUB" => dpub(buf, params, body_at, ctx),
        b"NOP" => Ok(Decoded::Command(Command::Nop, body_at)),
        b"TOUCH" => touch(params, ctx, body_at),
        b"SUB" => sub(params, ctx, body_at),
        b"CLS" => {
            if ctx.state != ClientState::Subscribed {
                return Err(fatal("E_INVALID", "cannot CLS in current state"));
            }
            Ok(Decoded::Command(Command::Cls, body_at))
        }
        b"AUTH" => auth(buf, params, body_at, ctx),
        _ => Err(fatal(
            "E_INVALID",
            format!("invalid command {}", lossy(name)),
        )),
    }
}

fn identify(buf: &[u8], at: usize, ctx: &DecodeContext<'_>) -> Res {
    if ctx.state != ClientState::Init {
        return Err(fatal("E_INVALID", "cannot IDENTIFY in current state"));
    }
    let Some(len) = read_len(buf, at) else {
        return Ok(Decoded::Incomplete);
    };
    let max = ctx.limits.max_body_size;
    if len as i64 > max as i64 {
        return Err(fatal(
            "E_BAD_BODY",
            format!("IDENTIFY body too big {len} > {max}"),
        ));
    }
    if len <= 0 {
        return Err(fatal(
            "E_BAD_BODY",
            format!("IDENTIFY invalid body size {len}"),
        ));
    }
    let end = at + 4 + len as usize;
    let Some(body) = buf.get(at + 4..end) else {
        return Ok(Decoded::Incomplete);
    };
    Ok(Decoded::Command(Command::Identify(body.to_vec()), end))
}

fn auth(buf: &[u8], params: &[&[u8]], at: usize, ctx: &DecodeContext<'_>) -> Res {
    if ctx.state != ClientState::Init {
        return Err(fatal("E_INVALID", "cannot AUTH in current state"));
    }
    if params.len() != 1 {
        return Err(fatal("E_INVALID", "AUTH invalid number of parameters"));
    }
    let Some(len) = read_len(buf, at) else {
        return Ok(Decoded::Incomplete);
    };
    let max = ctx.limits.max_body_size;
    if len as i64 > max as i64 {
        return Err(fatal(
            "E_BAD_BODY",
            format!("AUTH body too big {len} > {max}"),
        ));
    }
    if len <= 0 {
        return Err(fatal("E_BAD_BODY", format!("AUTH invalid body size {len}")));
    }
    let end = at + 4 + len as usize;
    let Some(body) = buf.get(at + 4..end) else {
        return Ok(Decoded::Incomplete);
    };
    Ok(Decoded::Command(Command::Auth(body.to_vec()), end))
}

fn sub(params: &[&[u8]], ctx: &DecodeContext<'_>, end: usize) -> Res {
    if ctx.state != ClientState::Init {
        return Err(fatal("E_INVALID", "cannot SUB in current state"));
    }
    if !ctx.heartbeats_enabled {
        return Err(fatal("E_INVALID", "cannot SUB with heartbeats disabled"));
    }
    if params.len() < 3 {
        return Err(fatal("E_INVALID", "SUB insufficient number of parameters"));
    }
    let topic = valid_name::<String>(params[1], "E_BAD_TOPIC", "SUB topic")?;
    let channel = valid_name::<String>(params[2], "E_BAD_CHANNEL", "SUB channel")?;
    (ctx.check_auth)("SUB", &topic, &channel)?;
    Ok(Decoded::Command(Command::Sub { topic, channel }, end))
}

fn valid_name<S: for<'s> From<&'s str>>(
    b: &[u8],
    code: &'static str,
    what: &str,
) -> Result<S, ProtocolError> {
    // nsqd's names are ASCII: bytes that pass the check are always UTF-8.
    match is_valid_name_bytes(b).then(|| std::str::from_utf8(b)) {
        Some(Ok(s)) => Ok(S::from(s)),
        _ => Err(fatal(
            code,
            format!("{what} name {} is not valid", go_quote_bytes(b)),
        )),
    }
}

/// A publish's topic name: the known one again, or a newly checked one.
fn topic_name(b: &[u8], ctx: &DecodeContext<'_>, what: &str) -> Result<TopicName, ProtocolError> {
    match ctx.known_topic {
        Some(known) if known.as_bytes() == b => Ok(TopicName::from(known)),
        _ => valid_name(b, "E_BAD_TOPIC", what),
    }
}

fn rdy(params: &[&[u8]], ctx: &DecodeContext<'_>, end: usize) -> Res {
    match ctx.state {
        ClientState::Closing => return Ok(Decoded::Ignored(end)),
        ClientState::Subscribed => {}
        ClientState::Init => return Err(fatal("E_INVALID", "cannot RDY in current state")),
    }
    let mut count: i64 = 1;
    if params.len() > 1 {
        match base10(params[1]) {
            Some(n) => count = n as i64,
            None => {
                return Err(fatal(
                    "E_INVALID",
                    format!("RDY could not parse count {}", lossy(params[1])),
                ))
            }
        }
    }
    if count < 0 || count > ctx.max_rdy_count {
        return Err(fatal(
            "E_INVALID",
            format!("RDY count {count} out of range 0-{}", ctx.max_rdy_count),
        ));
    }
    Ok(Decoded::Command(Command::Rdy(count), end))
}

fn in_flight_state(ctx: &DecodeContext<'_>, cmd: &str) -> Result<(), ProtocolError> {
    match ctx.state {
        ClientState::Subscribed | ClientState::Closing => Ok(()),
        ClientState::Init => Err(fatal("E_INVALID", format!("cannot {cmd} in current state"))),
    }
}

fn fin(params: &[&[u8]], ctx: &DecodeContext<'_>, end: usize) -> Res {
    in_flight_state(ctx, "FIN")?;
    if params.len() < 2 {
        return Err(fatal("E_INVALID", "FIN insufficient number of params"));
    }
    Ok(Decoded::Command(Command::Fin(message_id(params[1])?), end))
}

fn touch(params: &[&[u8]], ctx: &DecodeContext<'_>, end: usize) -> Res {
    in_flight_state(ctx, "TOUCH")?;
    if params.len() < 2 {
        return Err(fatal("E_INVALID", "TOUCH insufficient number of params"));
    }
    Ok(Decoded::Command(
        Command::Touch(message_id(params[1])?),
        end,
    ))
}

fn req(params: &[&[u8]], ctx: &DecodeContext<'_>, end: usize) -> Res {
    in_flight_state(ctx, "REQ")?;
    if params.len() < 3 {
        return Err(fatal("E_INVALID", "REQ insufficient number of params"));
    }
    let id = message_id(params[1])?;
    let Some(timeout_ms) = base10(params[2]) else {
        return Err(fatal(
            "E_INVALID",
            format!("REQ could not parse timeout {}", lossy(params[2])),
        ));
    };
    Ok(Decoded::Command(Command::Req { id, timeout_ms }, end))
}

/// A `[4-byte size][body]` message body, with nsqd's PUB/DPUB checks.
fn message_body<'b>(
    buf: &'b [u8],
    at: usize,
    cmd: &str,
    ctx: &DecodeContext<'_>,
) -> Result<Option<(&'b [u8], usize)>, ProtocolError> {
    let Some(len) = read_len(buf, at) else {
        return Ok(None);
    };
    if len <= 0 {
        return Err(fatal(
            "E_BAD_MESSAGE",
            format!("{cmd} invalid message body size {len}"),
        ));
    }
    let max = ctx.limits.max_msg_size;
    if len as i64 > max as i64 {
        return Err(fatal(
            "E_BAD_MESSAGE",
            format!("{cmd} message too big {len} > {max}"),
        ));
    }
    let end = at + 4 + len as usize;
    Ok(buf.get(at + 4..end).map(|b| (b, end)))
}

fn publish(buf: &[u8], params: &[&[u8]], at: usize, ctx: &DecodeContext<'_>) -> Res {
    if params.len() < 2 {
        return Err(fatal("E_INVALID", "PUB insufficient number of parameters"));
    }
    let topic = topic_name(params[1], ctx, "PUB topic")?;
    let Some((body, end)) = message_body(buf, at, "PUB", ctx)? else {
        return Ok(Decoded::Incomplete);
    };
    (ctx.check_auth)("PUB", &topic, "")?;
    Ok(Decoded::Command(
        Command::Pub {
            topic,
            body: crate::message::Body::from(body),
        },
        end,
    ))
}

fn dpub(buf: &[u8], params: &[&[u8]], at: usize, ctx: &DecodeContext<'_>) -> Res {
    if params.len() < 3 {
        return Err(fatal("E_INVALID", "DPUB insufficient number of parameters"));
    }
    let topic = topic_name(params[1], ctx, "DPUB topic")?;
    let Some(defer_ms) = base10(params[2]) else {
        return Err(fatal(
            "E_INVALID",
            format!("DPUB could not parse timeout {}", lossy(params[2])),
        ));
    };
    // nsqd multiplies into a time.Duration (int64 ns) and range-checks that.
    let ns = (defer_ms as i64).wrapping_mul(1_000_000);
    let max_ms = ctx.max_req_timeout_ms;
    if ns < 0 || ns as u64 > max_ms.saturating_mul(1_000_000) {
        return Err(fatal(
            "E_INVALID",
            format!("DPUB timeout {defer_ms} out of range 0-{max_ms}"),
        ));
    }
    let Some((body, end)) = message_body(buf, at, "DPUB", ctx)? else {
        return Ok(Decoded::Incomplete);
    };
    (ctx.check_auth)("DPUB", &topic, "")?;
    Ok(Decoded::Command(
        Command::Dpub {
            topic,
            defer_ms,
            body: crate::message::Body::from(body),
        },
        end,
    ))
}

fn mpub(buf: &[u8], params: &[&[u8]], at: usize, ctx: &DecodeContext<'_>) -> Res {
    if params.len() < 2 {
        return Err(fatal("E_INVALID", "MPUB insufficient number of parameters"));
    }
    // nsqd's MPUB repeats the code inside its text: "E_BAD_TOPIC E_BAD_TOPIC MPUB topic …".
    let topic = topic_name(params[1], ctx, "E_BAD_TOPIC MPUB topic")?;
    (ctx.check_auth)("MPUB", &topic, "")?;
    let Some(body_len) = read_len(buf, at) else {
        return Ok(Decoded::Incomplete);
    };
    if body_len <= 0 {
        return Err(fatal(
            "E_BAD_BODY",
            format!("MPUB invalid body size {body_len}"),
        ));
    }
    let max_body = ctx.limits.max_body_size;
    if body_len as i64 > max_body as i64 {
        return Err(fatal(
            "E_BAD_BODY",
            format!("MPUB body too big {body_len} > {max_body}"),
        ));
    }
    // nsqd then reads the messages straight from the stream (the body size is only checked).
    let fresh = std::cell::Cell::new(MpubWalk::default());
    let walk = ctx.mpub_walk.unwrap_or(&fresh);
    let read = match read_mpub_from(&buf[at + 4..], ctx.limits, walk, true) {
        Ok(read) => read,
        Err(error) => return Ok(Decoded::Refused { topic, error }),
    };
    match read {
        MpubRead::Done(bodies, n) => Ok(Decoded::Command(
            Command::Mpub { topic, bodies },
            at + 4 + n,
        )),
        MpubRead::Large(batch, n) => Ok(Decoded::LargeMpub {
            topic,
            batch,
            len: at + 4 + n,
        }),
        MpubRead::Incomplete(_) => Ok(Decoded::Incomplete),
    }
}

/// Where [`read_mpub`] ran out of bytes (nsqd's "failed to read …" errors name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpubShort {
    Count,
    Size(i32),
    Body(i32),
}

/// The outcome of [`read_mpub`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpubRead {
    /// The bodies and how many bytes they used.
    Done(Vec<crate::message::Body>, usize),
    /// More than [`MPUB_STEP`] messages (when asked for), and how many bytes they used.
    Large(MpubBatch, usize),
    /// More bytes are needed.
    Incomplete(MpubShort),
}

/// nsqd's `readMPUB`: `[4-byte count]([4-byte size][body])*`, with its checks and texts.
/// Shared by MPUB and HTTP `/mpub?binary=true`.
pub fn read_mpub(buf: &[u8], limits: Limits) -> Result<MpubRead, ProtocolError> {
    read_mpub_from(
        buf,
        limits,
        &std::cell::Cell::new(MpubWalk::default()),
        false,
    )
}

/// [`read_mpub`], resuming where `walk` says an earlier call got to (and saying how far this
/// one got, when more bytes are needed).
/// With `batch`, more than [`MPUB_STEP`] messages come as an [`MpubBatch`].
fn read_mpub_from(
    buf: &[u8],
    limits: Limits,
    walk: &std::cell::Cell<MpubWalk>,
    batch: bool,
) -> Result<MpubRead, ProtocolError> {
    let Some(count) = read_len(buf, 0) else {
        return Ok(MpubRead::Incomplete(MpubShort::Count));
    };
    let max_messages = (limits.max_body_size as i64 - 4) / 5;
    if count <= 0 || count as i64 > max_messages {
        return Err(fatal(
            "E_BAD_BODY",
            format!("MPUB invalid message count {count}"),
        ));
    }
    let max_msg = limits.max_msg_size;
    // Walk the sizes first, without copying (its bodies are copied once, when all of it is
    // there), from where the last walk of this MPUB stopped.
    let from = walk.get();
    let (first, mut pos) = match from {
        MpubWalk { messages, pos } if messages > 0 && messages < count && pos <= buf.len() => {
            (messages, pos)
        }
        _ => (0, 4),
    };
    for i in first..count {
        let Some(size) = read_len(buf, pos) else {
            walk.set(MpubWalk { messages: i, pos });
            return Ok(MpubRead::Incomplete(MpubShort::Size(i)));
        };
        if size <= 0 {
            return Err(fatal(
                "E_BAD_MESSAGE",
                format!("MPUB invalid message({i}) body size {size}"),
            ));
        }
        if size as i64 > max_msg as i64 {
            return Err(fatal(
                "E_BAD_MESSAGE",
                format!("MPUB message too big {size} > {max_msg}"),
            ));
        }
        let end = pos + 4 + size as usize;
        // nsqd reads the messages from the stream whatever the declared body size; nsqlab
        // also refuses to buffer more than --max-body-size for one MPUB.
        if (end - 4) as u64 > limits.max_body_size {
            return Err(fatal(
                "E_BAD_BODY",
                format!("MPUB body too big {} > {}", end - 4, limits.max_body_size),
            ));
        }
        if buf.len() < end {
            walk.set(MpubWalk { messages: i, pos });
            return Ok(MpubRead::Incomplete(MpubShort::Body(i)));
        }
        pos = end;
    }
    walk.set(MpubWalk::default());
    if batch && count as usize > MPUB_STEP {
        let batch = MpubBatch {
            buf: buf[4..pos].into(),
            at: 0,
            left: count as usize,
        };
        return Ok(MpubRead::Large(batch, pos));
    }
    // One buffer for the whole batch (its size fields included, so offsets carry over).
    let mut at = 0;
    let ranges = (0..count).map(|_| {
        let size = read_len(&buf[4..pos], at).unwrap_or_default() as usize;
        let body = at + 4..at + 4 + size;
        at = body.end;
        body
    });
    let bodies = crate::message::Body::ranges(&buf[4..pos], ranges);
    Ok(MpubRead::Done(bodies, pos))
}

/// Used in docs and by tests: a context that allows everything a fresh client may do.
pub fn no_auth(_: &str, _: &str, _: &str) -> Result<(), ProtocolError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(state: ClientState) -> DecodeContext<'static> {
        DecodeContext {
            state,
            heartbeats_enabled: true,
            tls_ok: true,
            limits: Limits {
                max_msg_size: 1024 * 1024,
                max_body_size: 5 * 1024 * 1024,
            },
            max_rdy_count: 2500,
            max_req_timeout_ms: 3_600_000,
            check_auth: &no_auth,
            known_topic: None,
            mpub_walk: None,
        }
    }

    /// The error frame's text: a decode error, or the error of a refused MPUB.
    fn err(buf: &[u8], state: ClientState) -> String {
        match decode(buf, &ctx(state)) {
            Err(e) | Ok(Decoded::Refused { error: e, .. }) => e.to_string(),
            Ok(other) => panic!("{other:?} is not an error"),
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn an_mpub_refused_for_its_messages_names_its_topic_and_one_for_its_size_does_not() {
        // Count 0, a message of size 0, one too big: nsqd has made the topic by then.
        for buf in [
            &b"MPUB t\n\x00\x00\x00\x08\x00\x00\x00\x00"[..],
            b"MPUB t\n\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x00",
            b"MPUB t\n\x00\x00\x00\x08\x00\x00\x00\x01\x00\x20\x00\x00",
        ] {
            match decode(buf, &ctx(ClientState::Init)) {
                Ok(Decoded::Refused { topic, error }) => {
                    assert_eq!(&*topic, "t");
                    assert!(error.fatal, "{error}");
                }
                other => panic!("{other:?}"),
            }
        }
        // A body size out of range, a bad name: refused before nsqd makes the topic.
        for buf in [
            &b"MPUB t\n\x00\x00\x00\x00"[..],
            b"MPUB t\n\x00\x60\x00\x00",
            b"MPUB t!\n",
        ] {
            assert!(decode(buf, &ctx(ClientState::Init)).is_err(), "{buf:?}");
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn partial_frames_are_incomplete() {
        let full = Command::Pub {
            topic: "t".into(),
            body: crate::message::Body::from(b"hello"),
        }
        .to_bytes();
        for cut in 0..full.len() {
            assert_eq!(
                decode(&full[..cut], &ctx(ClientState::Init)).unwrap(),
                Decoded::Incomplete,
                "cut at {cut}"
            );
        }
        let Decoded::Command(Command::Pub { topic, body }, n) =
            decode(&full, &ctx(ClientState::Init)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (topic.as_str(), &body[..], n),
            ("t", &b"hello"[..], full.len())
        );
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn nsqd_error_texts() {
        use ClientState::*;
        assert_eq!(
            err(b"SUB t c\n", Subscribed),
            "E_INVALID cannot SUB in current state"
        );
        assert_eq!(
            err(b"SUB t\n", Init),
            "E_INVALID SUB insufficient number of parameters"
        );
        assert_eq!(
            err(b"SUB t! c\n", Init),
            "E_BAD_TOPIC SUB topic name \"t!\" is not valid"
        );
        assert_eq!(
            err(b"SUB t c!\n", Init),
            "E_BAD_CHANNEL SUB channel name \"c!\" is not valid"
        );
        assert_eq!(
            err(b"RDY 2501\n", Subscribed),
            "E_INVALID RDY count 2501 out of range 0-2500"
        );
        assert_eq!(
            err(b"RDY x\n", Subscribed),
            "E_INVALID RDY could not parse count x"
        );
        assert_eq!(
            err(b"FIN 123\n", Subscribed),
            "E_INVALID invalid message ID"
        );
        assert_eq!(
            err(b"FIN 0123456789abcdef\n", Init),
            "E_INVALID cannot FIN in current state"
        );
        assert_eq!(err(b"BOGUS\n", Init), "E_INVALID invalid command BOGUS");
        assert_eq!(
            err(b"PUB t\n\x00\x20\x00\x00", Init),
            "E_BAD_MESSAGE PUB message too big 2097152 > 1048576"
        );
        assert_eq!(
            err(b"PUB t\n\x00\x00\x00\x00", Init),
            "E_BAD_MESSAGE PUB invalid message body size 0"
        );
        assert_eq!(
            err(b"DPUB t 3600001\n", Init),
            "E_INVALID DPUB timeout 3600001 out of range 0-3600000"
        );
        assert_eq!(
            err(b"MPUB t\n\x00\x00\x00\x08\x00\x00\x00\x00", Init),
            "E_BAD_BODY MPUB invalid message count 0"
        );
        assert_eq!(err(b"CLS\n", Init), "E_INVALID cannot CLS in current state");
        assert_eq!(
            err(b"MPUB t!\n", Init),
            "E_BAD_TOPIC E_BAD_TOPIC MPUB topic name \"t!\" is not valid"
        );
        assert_eq!(err(b"FIN \n", Subscribed), "E_INVALID invalid message ID");
        assert_eq!(err(b"\n", Init), "E_INVALID invalid command ");
        assert_eq!(
            err(b"RDY -1\n", Subscribed),
            "E_INVALID RDY could not parse count -1"
        );
        assert_eq!(
            err(b"AUTH\n\x00\x60\x00\x00", Init),
            "E_BAD_BODY AUTH body too big 6291456 > 5242880"
        );
        assert_eq!(
            err(b"IDENTIFY\n\xff\xff\xff\xff", Init),
            "E_BAD_BODY IDENTIFY invalid body size -1"
        );
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn rdy_after_cls_is_ignored_and_long_lines_close() {
        assert_eq!(
            decode(b"RDY 5\n", &ctx(ClientState::Closing)).unwrap(),
            Decoded::Ignored(6)
        );
        let long = vec![b'A'; MAX_LINE_LENGTH];
        assert_eq!(
            decode(&long, &ctx(ClientState::Init)).unwrap(),
            Decoded::Close
        );
        assert_eq!(
            decode(&long[..MAX_LINE_LENGTH - 1], &ctx(ClientState::Init)).unwrap(),
            Decoded::Incomplete
        );
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn mpub_total_is_bounded_before_buffering() {
        // Six 1 MiB messages: the fifth already passes --max-body-size (5 MiB), and that is
        // refused without waiting for the bytes.
        let mut big = b"MPUB t\n\x00\x00\x00\x10\x00\x00\x00\x06".to_vec();
        big.extend_from_slice(&(1024u32 * 1024).to_be_bytes());
        assert_eq!(
            decode(&big, &ctx(ClientState::Init)).unwrap(),
            Decoded::Incomplete
        );
        for _ in 0..4 {
            big.extend_from_slice(&vec![b'x'; 1024 * 1024]);
            big.extend_from_slice(&(1024u32 * 1024).to_be_bytes());
        }
        assert_eq!(
            err(&big, ClientState::Init),
            "E_BAD_BODY MPUB body too big 5242900 > 5242880"
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::*;
        use proptest::prelude::*;

        fn name() -> impl Strategy<Value = String> {
            "[a-zA-Z0-9._-]{1,20}(#ephemeral)?"
        }
        fn body() -> impl Strategy<Value = crate::message::Body> {
            proptest::collection::vec(any::<u8>(), 1..64).prop_map(crate::message::Body::from)
        }
        fn id() -> impl Strategy<Value = RawId> {
            proptest::array::uniform16(
                any::<u8>()
                    .prop_filter("no space/newline", |b| !matches!(*b, b' ' | b'\n' | b'\r')),
            )
        }
        fn command() -> impl Strategy<Value = (Command, ClientState)> {
            use ClientState::*;
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 1..64)
                    .prop_map(|b| (Command::Identify(b), Init)),
                (name(), name())
                    .prop_map(|(topic, channel)| (Command::Sub { topic, channel }, Init)),
                (name(), body()).prop_map(|(topic, body)| (
                    Command::Pub {
                        topic: topic.into(),
                        body
                    },
                    Init
                )),
                (name(), proptest::collection::vec(body(), 1..5)).prop_map(|(topic, bodies)| (
                    Command::Mpub {
                        topic: topic.into(),
                        bodies
                    },
                    Subscribed
                )),
                (name(), 0u64..3_600_000, body()).prop_map(|(topic, defer_ms, body)| (
                    Command::Dpub {
                        topic: topic.into(),
                        defer_ms,
                        body
                    },
                    Init
                )),
                (0i64..=2500).prop_map(|n| (Command::Rdy(n), Subscribed)),
                id().prop_map(|i| (Command::Fin(i), Subscribed)),
                (id(), any::<u32>()).prop_map(|(id, t)| (
                    Command::Req {
                        id,
                        timeout_ms: t as u64
                    },
                    Closing
                )),
                id().prop_map(|i| (Command::Touch(i), Subscribed)),
                Just((Command::Cls, Subscribed)),
                Just((Command::Nop, Init)),
            ]
        }

        proptest! {
            #[cfg_attr(not(target_arch = "wasm32"), test)]
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            fn encode_decode_round_trip((cmd, state) in command(), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
                let mut bytes = cmd.to_bytes();
                let len = bytes.len();
                bytes.extend_from_slice(&tail);
                prop_assert_eq!(decode(&bytes, &ctx(state)).unwrap(), Decoded::Command(cmd, len));
            }

            #[cfg_attr(not(target_arch = "wasm32"), test)]
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            fn the_fin_shortcut_decodes_as_the_general_path(
                id in prop_oneof![
                    proptest::collection::vec(prop::sample::select(b"0123456789abcdef".to_vec()), 16),
                    proptest::collection::vec(prop::sample::select(b"0123456789abcdefAF \r\nx".to_vec()), 16),
                ],
                tail in proptest::collection::vec(any::<u8>(), 0..4),
                s in 0u8..3,
                tls_ok: bool,
            ) {
                let state = [ClientState::Init, ClientState::Subscribed, ClientState::Closing][s as usize];
                let mut buf = b"FIN ".to_vec();
                buf.extend_from_slice(&id);
                buf.push(b'\n');
                buf.extend_from_slice(&tail);
                let mut c = ctx(state);
                c.tls_ok = tls_ok;
                prop_assert_eq!(decode(&buf, &c), decode_line(&buf, &c));
            }

            #[cfg_attr(not(target_arch = "wasm32"), test)]
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), s in 0u8..3) {
                let state = [ClientState::Init, ClientState::Subscribed, ClientState::Closing][s as usize];
                let _ = decode(&bytes, &ctx(state));
            }

            #[cfg_attr(not(target_arch = "wasm32"), test)]
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            fn decoder_never_panics_on_command_shaped_input(
                head in prop_oneof![Just("PUB t\n"), Just("MPUB t\n"), Just("DPUB t 10\n"), Just("IDENTIFY\n"), Just("AUTH\n")],
                bytes in proptest::collection::vec(any::<u8>(), 0..128)
            ) {
                let mut b = head.as_bytes().to_vec();
                b.extend_from_slice(&bytes);
                let _ = decode(&b, &ctx(ClientState::Init));
            }
        }
    }

    /// An MPUB arriving a piece at a time is walked on from where the last look stopped,
    /// and decodes to what it decodes to whole; a walk left from another MPUB is not used.
    #[test]
    fn an_mpub_arriving_in_pieces_is_walked_once() {
        let bodies: Vec<crate::message::Body> = (0..3000u32)
            .map(|i| i.to_string().into_bytes().into())
            .collect();
        let bytes = Command::Mpub {
            topic: "t".into(),
            bodies: bodies.clone(),
        }
        .to_bytes();
        let walk = std::cell::Cell::new(MpubWalk::default());
        let mut c = ctx(ClientState::Init);
        c.mpub_walk = Some(&walk);
        let mut last = MpubWalk::default();
        for end in (1..bytes.len()).step_by(97) {
            assert_eq!(decode(&bytes[..end], &c), Ok(Decoded::Incomplete));
            let now = walk.get();
            assert!(now.messages >= last.messages, "the walk never goes back");
            last = now;
        }
        assert!(last.messages > 2900, "{last:?}");
        let whole = Ok(Decoded::Command(
            Command::Mpub {
                topic: "t".into(),
                bodies,
            },
            bytes.len(),
        ));
        assert_eq!(decode(&bytes, &c), whole);
        assert_eq!(
            walk.get(),
            MpubWalk::default(),
            "done: nothing left to resume"
        );
        // A walk from a longer MPUB is not taken for a shorter one's.
        walk.set(MpubWalk {
            messages: 2999,
            pos: 20_000,
        });
        let small = Command::Mpub {
            topic: "t".into(),
            bodies: vec![b"a".as_slice().into(), b"b".as_slice().into()],
        }
        .to_bytes();
        assert!(matches!(decode(&small, &c), Ok(Decoded::Command(..))));
    }

    /// An MPUB of more than a step's messages comes as a batch read a step at a time, with
    /// the same bodies a list would have had.
    #[test]
    fn a_large_mpub_is_a_batch_of_the_same_bodies() {
        let n = MPUB_STEP * 2 + 5;
        let bodies: Vec<crate::message::Body> =
            (0..n).map(|i| i.to_string().into_bytes().into()).collect();
        let bytes = Command::Mpub {
            topic: "t".into(),
            bodies: bodies.clone(),
        }
        .to_bytes();
        let Ok(Decoded::LargeMpub {
            topic,
            mut batch,
            len,
        }) = decode(&bytes, &ctx(ClientState::Init))
        else {
            panic!("not a batch");
        };
        assert_eq!((topic.as_str(), len, batch.len()), ("t", bytes.len(), n));
        let mut got = Vec::new();
        while !batch.is_empty() {
            let step = batch.take(MPUB_STEP);
            assert!(step.len() <= MPUB_STEP);
            got.extend(step);
        }
        assert!(got == bodies, "the same bodies, in order");
        // (`read_mpub`, for HTTP, still gives the list.)
        let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 5;
        let limits = ctx(ClientState::Init).limits;
        assert!(matches!(read_mpub(&bytes[at..], limits), Ok(MpubRead::Done(b, _)) if b == bodies));
    }
}
