//! Stream compression negotiated by IDENTIFY: snappy's framing format and raw DEFLATE, as
//! nsqd's `UpgradeSnappy` / `UpgradeDeflate` speak them. Each direction is incremental: bytes
//! in, whole plaintext out as soon as a frame (snappy) or any output (deflate) is complete.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use std::io;

/// The compression a connection uses.
pub enum Codec {
    Plain,
    Snappy(Box<Snappy>),
    Deflate(Deflate),
}

impl Codec {
    /// Compress `plain` and append what goes on the wire (flushed: the peer can decode all of
    /// it at once, as nsqd flushes).
    pub fn encode(&mut self, plain: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Codec::Plain => {
                out.extend_from_slice(plain);
                Ok(())
            }
            Codec::Snappy(s) => s.encode(plain, out),
            Codec::Deflate(d) => d.encode(plain, out),
        }
    }

    /// Feed wire bytes; append whatever plaintext they complete.
    pub fn decode(&mut self, wire: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Codec::Plain => {
                out.extend_from_slice(wire);
                Ok(())
            }
            Codec::Snappy(s) => s.decode(wire, out),
            Codec::Deflate(d) => d.decode(wire, out),
        }
    }
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

const STREAM_ID: &[u8] = b"\xff\x06\x00\x00sNaPpY";
const MAX_BLOCK: usize = 65_536;
/// The longest a compressed chunk of a 64 KiB block can be (snappy's bound), plus its CRC.
const MAX_CHUNK: usize = 32 + MAX_BLOCK + MAX_BLOCK / 6 + 4;
/// How much one read may decompress to (a bomb is refused, not buffered).
const MAX_INFLATE_PER_READ: usize = 16 * 1024 * 1024;

/// The snappy framing format (stream identifier, then compressed or uncompressed chunks with
/// masked CRC-32C checksums).
pub struct Snappy {
    enc: snap::raw::Encoder,
    dec: snap::raw::Decoder,
    sent_id: bool,
    inbuf: Vec<u8>,
    seen_id: bool,
}

fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c::crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

impl Default for Snappy {
    fn default() -> Self {
        Self::new()
    }
}

impl Snappy {
    pub fn new() -> Self {
        Snappy {
            enc: snap::raw::Encoder::new(),
            dec: snap::raw::Decoder::new(),
            sent_id: false,
            inbuf: Vec::new(),
            seen_id: false,
        }
    }

    fn encode(&mut self, plain: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        if !self.sent_id {
            out.extend_from_slice(STREAM_ID);
            self.sent_id = true;
        }
        for block in plain.chunks(MAX_BLOCK) {
            let crc = masked_crc(block);
            let compressed = self
                .enc
                .compress_vec(block)
                .map_err(|e| bad(&e.to_string()))?;
            let (kind, data): (u8, &[u8]) = if compressed.len() < block.len() - block.len() / 8 {
                (0x00, &compressed)
            } else {
                (0x01, block)
            };
            let len = (data.len() + 4) as u32;
            out.push(kind);
            out.extend_from_slice(&len.to_le_bytes()[..3]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(data);
        }
        Ok(())
    }

    fn decode(&mut self, wire: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.inbuf.extend_from_slice(wire);
        let mut at = 0;
        while self.inbuf.len() - at >= 4 {
            let h = &self.inbuf[at..at + 4];
            let kind = h[0];
            let len = u32::from_le_bytes([h[1], h[2], h[3], 0]) as usize;
            // Refuse an oversized data chunk on its header, before buffering it.
            if kind <= 0x7f && len > MAX_CHUNK {
                return Err(bad("snappy: chunk too long"));
            }
            if self.inbuf.len() - at - 4 < len {
                break;
            }
            let body = &self.inbuf[at + 4..at + 4 + len];
            match kind {
                0xff => {
                    if body != b"sNaPpY" {
                        return Err(bad("snappy: bad stream identifier"));
                    }
                    self.seen_id = true;
                }
                0x00 | 0x01 => {
                    if !self.seen_id || len < 4 {
                        return Err(bad("snappy: chunk before stream identifier"));
                    }
                    let crc = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
                    let data = if kind == 0x00 {
                        self.dec
                            .decompress_vec(&body[4..])
                            .map_err(|e| bad(&e.to_string()))?
                    } else {
                        body[4..].to_vec()
                    };
                    if data.len() > MAX_BLOCK || masked_crc(&data) != crc {
                        return Err(bad("snappy: corrupt chunk"));
                    }
                    out.extend_from_slice(&data);
                }
                0x02..=0x7f => return Err(bad("snappy: unsupported chunk type")),
                _ => {} // skippable chunks and padding
            }
            at += 4 + len;
        }
        self.inbuf.drain(..at);
        Ok(())
    }
}

/// Raw DEFLATE (no zlib header), sync-flushed after every write.
pub struct Deflate {
    comp: Compress,
    decomp: Decompress,
}

impl Deflate {
    pub fn new(level: u32) -> Self {
        Deflate {
            comp: Compress::new(Compression::new(level.min(9)), false),
            decomp: Decompress::new(false),
        }
    }

    fn encode(&mut self, mut plain: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        loop {
            out.reserve(plain.len() / 2 + 64);
            let before_in = self.comp.total_in();
            let before_out = out.len();
            self.comp
                .compress_vec(plain, out, FlushCompress::Sync)
                .map_err(|e| bad(&e.to_string()))?;
            let used = (self.comp.total_in() - before_in) as usize;
            plain = &plain[used..];
            // Done when all input is in and the flush did not fill the space we gave it.
            if plain.is_empty() && out.len() < out.capacity() {
                return Ok(());
            }
            if used == 0 && out.len() == before_out && out.len() < out.capacity() {
                return Ok(());
            }
        }
    }

    fn decode(&mut self, mut wire: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        loop {
            if out.len() - start > MAX_INFLATE_PER_READ {
                return Err(bad("deflate: too much output for one read"));
            }
            out.reserve(wire.len() * 4 + 1024);
            let before_in = self.decomp.total_in();
            let before_out = out.len();
            let status = self
                .decomp
                .decompress_vec(wire, out, FlushDecompress::None)
                .map_err(|e| bad(&e.to_string()))?;
            let used = (self.decomp.total_in() - before_in) as usize;
            wire = &wire[used..];
            if status == Status::StreamEnd {
                return Err(bad("deflate: stream ended"));
            }
            if wire.is_empty() && out.len() < out.capacity() {
                return Ok(());
            }
            if used == 0 && out.len() == before_out {
                return if wire.is_empty() {
                    Ok(())
                } else {
                    Err(bad("deflate: stuck"))
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(mut a: Codec, mut b: Codec) {
        let msgs: Vec<Vec<u8>> = vec![
            b"hello".to_vec(),
            vec![7u8; 200_000],
            (0..5000u32).flat_map(|i| i.to_le_bytes()).collect(),
        ];
        let mut wire = Vec::new();
        for m in &msgs {
            a.encode(m, &mut wire).unwrap();
        }
        // Feed the wire in awkward pieces.
        let mut got = Vec::new();
        for piece in wire.chunks(37) {
            b.decode(piece, &mut got).unwrap();
        }
        assert_eq!(got, msgs.concat());
    }

    #[test]
    fn snappy_round_trip_in_pieces() {
        round_trip(Codec::Snappy(Box::default()), Codec::Snappy(Box::default()));
    }

    #[test]
    fn deflate_round_trip_in_pieces() {
        round_trip(
            Codec::Deflate(Deflate::new(6)),
            Codec::Deflate(Deflate::new(6)),
        );
    }

    #[test]
    fn snappy_matches_the_reference_framing() {
        // Our frames decode with the snap crate's own frame reader.
        let mut s = Snappy::new();
        let mut wire = Vec::new();
        s.encode(&[42u8; 100_000], &mut wire).unwrap();
        let mut r = snap::read::FrameDecoder::new(&wire[..]);
        let mut out = Vec::new();
        io::Read::read_to_end(&mut r, &mut out).unwrap();
        assert_eq!(out, vec![42u8; 100_000]);
        // And we decode theirs.
        let mut theirs = Vec::new();
        {
            let mut w = snap::write::FrameEncoder::new(&mut theirs);
            io::Write::write_all(&mut w, b"from snap").unwrap();
        }
        let mut got = Vec::new();
        Snappy::new().decode(&theirs, &mut got).unwrap();
        assert_eq!(got, b"from snap");
    }

    #[test]
    fn bombs_are_refused() {
        // Snappy: a chunk claiming a huge length, and a block that inflates past 64 KiB.
        let mut s = Snappy::new();
        let mut wire = STREAM_ID.to_vec();
        wire.extend_from_slice(&[0x00, 0xff, 0xff, 0xff]);
        assert!(s.decode(&wire, &mut Vec::new()).is_err());
        let mut s = Snappy::new();
        let block = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 200_000])
            .unwrap();
        let mut wire = STREAM_ID.to_vec();
        wire.push(0x00);
        wire.extend_from_slice(&((block.len() + 4) as u32).to_le_bytes()[..3]);
        wire.extend_from_slice(&masked_crc(&vec![0u8; 200_000]).to_le_bytes());
        wire.extend_from_slice(&block);
        assert!(s.decode(&wire, &mut Vec::new()).is_err());
        // Deflate: 64 MiB of zeros in a few KiB.
        use std::io::Write;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::new(9));
        e.write_all(&vec![0u8; 64 * 1024 * 1024]).unwrap();
        e.flush().unwrap();
        let wire = e.get_ref().clone();
        assert!(wire.len() < 200_000);
        assert!(Deflate::new(6).decode(&wire, &mut Vec::new()).is_err());
    }

    #[test]
    fn deflate_interoperates_with_flate2_streams() {
        use std::io::Write;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::new(6));
        e.write_all(b"abc abc abc").unwrap();
        e.flush().unwrap();
        let wire = e.get_ref().clone();
        let mut got = Vec::new();
        Deflate::new(6).decode(&wire, &mut got).unwrap();
        assert_eq!(got, b"abc abc abc");
    }
}
