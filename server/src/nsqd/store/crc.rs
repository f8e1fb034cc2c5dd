//! CRC-32C of three buffers at once, for checking the records a load reads back.
//!
//! One record's CRC is a chain: each step of the CPU's `crc32` instruction waits for the one
//! before (three cycles), so a 200-byte record takes about 75 cycles, most of them waiting.
//! Three records' chains interleaved keep the instruction busy: the loader checks the
//! records of a batch of loads three at a time.

/// The CRC-32C (Castagnoli) of each of `a`, `b` and `c`, as `crc32c::crc32c` gives it.
pub fn crc32c_3(a: &[u8], b: &[u8], c: &[u8]) -> [u32; 3] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, which is all `interleaved` uses.
        return unsafe { interleaved(a, b, c) };
    }
    [crc32c::crc32c(a), crc32c::crc32c(b), crc32c::crc32c(c)]
}

/// The three chains in step over the words all three have, then each one's rest.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn interleaved(a: &[u8], b: &[u8], c: &[u8]) -> [u32; 3] {
    use std::arch::x86_64::_mm_crc32_u64;
    let words = a.len().min(b.len()).min(c.len()) / 8;
    let word = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
    let start = u64::from(u32::MAX);
    let (mut x, mut y, mut z) = (start, start, start);
    let (wa, wb, wc) = (
        a[..words * 8].chunks_exact(8),
        b[..words * 8].chunks_exact(8),
        c[..words * 8].chunks_exact(8),
    );
    for ((p, q), r) in wa.zip(wb).zip(wc) {
        x = _mm_crc32_u64(x, word(p));
        y = _mm_crc32_u64(y, word(q));
        z = _mm_crc32_u64(z, word(r));
    }
    // (The running value is the CRC's complement; `crc32c_append` goes on from a CRC.)
    let rest = words * 8;
    [
        crc32c::crc32c_append(!(x as u32), &a[rest..]),
        crc32c::crc32c_append(!(y as u32), &b[rest..]),
        crc32c::crc32c_append(!(z as u32), &c[rest..]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_at_once_are_each_ones_crc() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut bytes = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect()
        };
        let lens = [0, 1, 7, 8, 9, 15, 16, 63, 200, 231, 257, 4096];
        for &la in &lens {
            for &lb in &lens {
                for lc in [0, 8, 199, 230] {
                    let (a, b, c) = (bytes(la), bytes(lb), bytes(lc));
                    let want = [crc32c::crc32c(&a), crc32c::crc32c(&b), crc32c::crc32c(&c)];
                    assert_eq!(crc32c_3(&a, &b, &c), want, "lengths {la} {lb} {lc}");
                }
            }
        }
        // The check value of the standard: "123456789".
        assert_eq!(crc32c_3(b"123456789", b"", b"123456789")[0], 0xE306_9283);
    }
}
