//! `nsqlab bench null-server`: a stand-in that answers every publish with `OK` and keeps
//! nothing. Run `bench latency` against it to see what the machine itself allows, with no
//! broker (no queues, no storage) behind the socket.
//!
//! # Format
//! After the 4-byte magic `  V2`, one command per line. `PUB`, `MPUB`, `DPUB` and `IDENTIFY`
//! (a line, a 4-byte big-endian size, that many bytes) are answered with an `OK` frame,
//! without looking at the body; `NOP` gets nothing. Anything else, a line longer than 1 KiB or
//! a body over 64 MiB gets an `E_INVALID` error frame, and the connection closes. Over HTTP,
//! every request gets `200 OK` (so `/ping` works).
//!
//! With `--log FILE`, each read's publishes (the bytes from the first to the end of the last)
//! are first written to `FILE` with one `pwrite` (a ring of `--log-size` bytes, at least
//! 128 MiB, so its page-cache pages are reused, and its size stays put), and a thread `fdatasync`s it every `--log-sync` (2 ms) while written to:
//! about the least a server that keeps what it is sent can do, for how close a durable
//! server could come to the plain null server.

use clap::Args;
use nsqlab_core::protocol::{encode_frame, FRAME_TYPE_ERROR, FRAME_TYPE_RESPONSE};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct NullServerArgs {
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    #[arg(long, default_value = "127.0.0.1:4151")]
    pub http_address: String,
    /// write what is published to this file before answering (see the module docs)
    #[arg(long)]
    pub log: Option<std::path::PathBuf>,
    /// the size of the --log file's ring, in bytes (at least 128 MiB: twice the largest body)
    #[arg(long, default_value_t = 1 << 30)]
    pub log_size: u64,
    /// how often the --log file is synced while written to (0: never)
    #[arg(long, default_value = "2ms", value_parser = crate::cli::duration_arg)]
    pub log_sync: std::time::Duration,
}

/// The `--log` file: a ring written at reserved offsets, synced by a thread of its own.
struct Log {
    file: std::fs::File,
    size: u64,
    next: AtomicU64,
    dirty: AtomicBool,
}

impl Log {
    fn open(path: &std::path::Path, size: u64, every: Duration) -> io::Result<Arc<Log>> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        file.set_len(size.max(MAX_BODY as u64 * 2))?;
        let log = Arc::new(Log {
            size: file.metadata()?.len(),
            file,
            next: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
        });
        let syncer = log.clone();
        if !every.is_zero() {
            std::thread::spawn(move || loop {
                std::thread::sleep(every);
                if syncer.dirty.swap(false, Ordering::AcqRel) {
                    let _ = syncer.file.sync_data();
                }
            });
        }
        Ok(log)
    }

    /// Append `b` (wrapping to the start of the ring where it would not fit).
    fn write(&self, b: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let len = b.len() as u64;
        let at = self.next.fetch_add(len, Ordering::Relaxed) % self.size;
        let at = if at + len > self.size { 0 } else { at };
        self.file.write_all_at(b, at)?;
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }
}

const MAX_LINE: usize = 1024;
const MAX_BODY: usize = 64 << 20;

/// Serve until the process is stopped: a thread per connection.
pub fn run(a: NullServerArgs) -> anyhow::Result<()> {
    let tcp = TcpListener::bind(&a.tcp_address)?;
    let http = TcpListener::bind(&a.http_address)?;
    let log = a
        .log
        .as_deref()
        .map(|p| Log::open(p, a.log_size, a.log_sync))
        .transpose()?;
    eprintln!(
        "null-server: TCP {} HTTP {} (answers OK, {})",
        tcp.local_addr()?,
        http.local_addr()?,
        match &a.log {
            Some(p) => format!("writes publishes to {}", p.display()),
            None => "keeps nothing".into(),
        }
    );
    std::thread::spawn(move || {
        for s in http.incoming().flatten() {
            let _ = answer_http(s);
        }
    });
    for s in tcp.incoming().flatten() {
        let log = log.clone();
        std::thread::spawn(move || {
            let _ = serve(s, log.as_deref());
        });
    }
    Ok(())
}

fn answer_http(mut s: TcpStream) -> io::Result<()> {
    let mut b = [0u8; 4096];
    let _ = s.read(&mut b)?;
    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")
}

/// What the next bytes of a connection hold.
#[derive(Debug, PartialEq)]
enum Step {
    /// Not all of it is here yet.
    Incomplete,
    /// A command of this many bytes, answered with `OK`.
    Ok(usize),
    /// A command of this many bytes, answered with nothing.
    Quiet(usize),
    Invalid,
}

fn next(b: &[u8]) -> Step {
    let Some(nl) = b.iter().position(|&c| c == b'\n') else {
        return if b.len() > MAX_LINE {
            Step::Invalid
        } else {
            Step::Incomplete
        };
    };
    if nl > MAX_LINE {
        return Step::Invalid;
    }
    let line = &b[..nl];
    let word = line.split(|&c| c == b' ').next().unwrap_or_default();
    match word {
        b"NOP" => Step::Quiet(nl + 1),
        b"PUB" | b"MPUB" | b"DPUB" | b"IDENTIFY" => {
            let Some(size) = b.get(nl + 1..nl + 5) else {
                return Step::Incomplete;
            };
            let size = u32::from_be_bytes(size.try_into().expect("4 bytes")) as usize;
            if size > MAX_BODY {
                return Step::Invalid;
            }
            let len = nl + 5 + size;
            if b.len() < len {
                Step::Incomplete
            } else {
                Step::Ok(len)
            }
        }
        _ => Step::Invalid,
    }
}

fn serve(mut s: TcpStream, log: Option<&Log>) -> io::Result<()> {
    s.set_nodelay(true)?;
    let mut magic = [0u8; 4];
    s.read_exact(&mut magic)?;
    if &magic != b"  V2" {
        return Ok(());
    }
    let mut buf = vec![0u8; 1 << 20];
    let (mut filled, mut out) = (0, Vec::new());
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = s.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(());
        }
        filled += n;
        let mut at = 0;
        // This read's publishes (from the first to the end of the last), written before
        // they are answered.
        let mut published: Option<(usize, usize)> = None;
        loop {
            match next(&buf[at..filled]) {
                Step::Incomplete => break,
                Step::Ok(len) => {
                    encode_frame(&mut out, FRAME_TYPE_RESPONSE, b"OK");
                    published = Some((published.map_or(at, |p| p.0), at + len));
                    at += len;
                }
                Step::Quiet(len) => at += len,
                Step::Invalid => {
                    encode_frame(&mut out, FRAME_TYPE_ERROR, b"E_INVALID invalid command");
                    return s.write_all(&out);
                }
            }
        }
        if let (Some(log), Some((from, to))) = (log, published) {
            log.write(&buf[from..to])?;
        }
        buf.copy_within(at..filled, 0);
        filled -= at;
        if !out.is_empty() {
            s.write_all(&out)?;
            out.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::protocol::Command;

    #[test]
    fn publishes_get_ok_in_pieces_and_anything_else_closes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || serve(l.accept().unwrap().0, None));
        let mut c = TcpStream::connect(addr).unwrap();
        let mut input = b"  V2".to_vec();
        for cmd in [
            Command::Mpub {
                topic: "t".into(),
                bodies: vec![b"a".into(), b"bc".into(), b"def".into()],
            },
            Command::Nop,
            Command::Pub {
                topic: "t".into(),
                body: b"hello".into(),
            },
            Command::Dpub {
                topic: "t".into(),
                defer_ms: 100,
                body: b"later".into(),
            },
        ] {
            cmd.encode(&mut input);
        }
        // Byte by byte: every command arrives in pieces.
        for b in &input {
            c.write_all(&[*b]).unwrap();
        }
        let mut got = [0u8; 30];
        c.read_exact(&mut got).unwrap();
        assert_eq!(
            got.as_slice(),
            [&[0, 0, 0, 6, 0, 0, 0, 0][..], b"OK"].concat().repeat(3)
        );
        c.write_all(b"SUB t ch\n").unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap();
        assert_eq!(&rest[8..], b"E_INVALID invalid command");
        assert_eq!(&rest[4..8], &[0, 0, 0, 1]);
    }

    #[test]
    fn with_a_log_the_publishes_are_written_before_the_ok() {
        let path = crate::common::test_file("nulllog");
        let log = Log::open(&path, 1 << 20, Duration::from_millis(2)).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server_log = log.clone();
        std::thread::spawn(move || serve(l.accept().unwrap().0, Some(&server_log)));
        let mut c = TcpStream::connect(addr).unwrap();
        let mut publish = Vec::new();
        Command::Pub {
            topic: "t".into(),
            body: b"kept".into(),
        }
        .encode(&mut publish);
        c.write_all(&[b"  V2".as_slice(), &publish, b"NOP\n"].concat())
            .unwrap();
        let mut ok = [0u8; 10];
        c.read_exact(&mut ok).unwrap();
        assert_eq!(&ok[8..], b"OK");
        let mut got = vec![0u8; publish.len() + 4];
        use std::os::unix::fs::FileExt;
        log.file.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(&got[..publish.len()], publish.as_slice());
        assert_eq!(
            &got[publish.len()..],
            [0; 4],
            "the NOP after it is not a publish"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_endless_line_or_a_huge_body_is_invalid() {
        assert_eq!(next(&[b'x'; MAX_LINE + 1]), Step::Invalid);
        assert_eq!(next(b"PUB t"), Step::Incomplete);
        assert_eq!(next(b"PUB t\n\0\0"), Step::Incomplete);
        let mut huge = b"PUB t\n".to_vec();
        huge.extend_from_slice(&((MAX_BODY + 1) as u32).to_be_bytes());
        assert_eq!(next(&huge), Step::Invalid);
    }
}
