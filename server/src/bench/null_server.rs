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

use clap::Args;
use nsqlab_core::protocol::{encode_frame, FRAME_TYPE_ERROR, FRAME_TYPE_RESPONSE};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

#[derive(Debug, Args)]
pub struct NullServerArgs {
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    #[arg(long, default_value = "127.0.0.1:4151")]
    pub http_address: String,
}

const MAX_LINE: usize = 1024;
const MAX_BODY: usize = 64 << 20;

/// Serve until the process is stopped: a thread per connection.
pub fn run(a: NullServerArgs) -> anyhow::Result<()> {
    let tcp = TcpListener::bind(&a.tcp_address)?;
    let http = TcpListener::bind(&a.http_address)?;
    eprintln!(
        "null-server: TCP {} HTTP {} (answers OK, keeps nothing)",
        tcp.local_addr()?,
        http.local_addr()?
    );
    std::thread::spawn(move || {
        for s in http.incoming().flatten() {
            let _ = answer_http(s);
        }
    });
    for s in tcp.incoming().flatten() {
        std::thread::spawn(move || {
            let _ = serve(s);
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

fn serve(mut s: TcpStream) -> io::Result<()> {
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
        loop {
            match next(&buf[at..filled]) {
                Step::Incomplete => break,
                Step::Ok(len) => {
                    encode_frame(&mut out, FRAME_TYPE_RESPONSE, b"OK");
                    at += len;
                }
                Step::Quiet(len) => at += len,
                Step::Invalid => {
                    encode_frame(&mut out, FRAME_TYPE_ERROR, b"E_INVALID invalid command");
                    return s.write_all(&out);
                }
            }
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
        std::thread::spawn(move || serve(l.accept().unwrap().0));
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
    fn an_endless_line_or_a_huge_body_is_invalid() {
        assert_eq!(next(&[b'x'; MAX_LINE + 1]), Step::Invalid);
        assert_eq!(next(b"PUB t"), Step::Incomplete);
        assert_eq!(next(b"PUB t\n\0\0"), Step::Incomplete);
        let mut huge = b"PUB t\n".to_vec();
        huge.extend_from_slice(&((MAX_BODY + 1) as u32).to_be_bytes());
        assert_eq!(next(&huge), Step::Invalid);
    }
}
