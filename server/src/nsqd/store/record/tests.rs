use super::legacy::LEGACY_HEADER;
use super::read_ahead::*;
use super::scan::*;
use super::*;

/// The salt of the segments these tests write.
const S: Salt = Salt(0x005e_ed0f_7e57);

/// Records for a buffer that starts a file.
fn seal0() -> Seal {
    Seal { salt: S, base: 0 }
}

fn pub_record(out: &mut Vec<u8>, id: u64, body: &[u8]) -> u64 {
    let at = out.len() as u64;
    put_pub(
        out,
        seal0(),
        false,
        None,
        &Message::new(MessageId(id), 0, body.into()),
    );
    at
}

/// A segment file of `bodies` (message i + 1 has body `bodies[i]`) with a FIN record
/// after each message; the messages' offsets.
fn segment(name: &str, bodies: &[Vec<u8>]) -> (crate::common::TestPath, Vec<u64>, u64) {
    let path = crate::common::test_file(name);
    let mut b = new_segment(S, MessageId(0));
    let offs = (0..bodies.len())
        .map(|i| {
            let at = pub_record(&mut b, i as u64 + 1, &bodies[i]);
            put_fin(&mut b, seal0(), 0, &[MessageId(i as u64 + 1)]);
            at
        })
        .collect();
    std::fs::write(&path, &b).unwrap();
    (path, offs, b.len() as u64)
}

#[test]
fn a_load_reads_forward_to_its_record_and_the_next_follows_from_memory() {
    let bodies: Vec<Vec<u8>> = (1..=200u8).map(|i| vec![i; 100]).collect();
    let (path, offs, end) = segment("ahead", &bodies);
    let file = std::fs::File::open(&path).unwrap();
    let mut ahead = ReadAhead::default();
    let find = |ahead: &mut ReadAhead, from, id: u64, exact| {
        ahead
            .find((&file, None), 7, S, from, end, MessageId(id), exact)
            .unwrap()
            .map(|b| b.to_vec())
    };
    // From the first record of the segment (past other records) to message 50.
    let first = FILE_HEADER as u64;
    assert_eq!(find(&mut ahead, first, 50, false), Some(vec![50; 100]));
    // The next load resumes after it (at the FIN record that follows)...
    let pub_len = (HEADER + PUB_FIELDS + 100) as u64;
    assert_eq!(ahead.resume(7, 1, 51), Some(offs[49] + pub_len));
    assert_eq!(ahead.resume(7, 1, 50), None);
    assert_eq!(ahead.resume(8, 1, 51), None);
    // ...and once past what the first load read, reads a whole stretch ahead: the rest
    // comes from memory, with the file gone.
    let load_from_last = |ahead: &mut ReadAhead, id: u64| {
        let from = ahead.resume(7, 1, id).unwrap();
        assert_eq!(find(ahead, from, id, false), Some(vec![id as u8; 100]));
    };
    for id in 51..=120u64 {
        load_from_last(&mut ahead, id);
    }
    assert_eq!(ahead.len as u64, end - ahead.at);
    std::fs::File::create(&path).unwrap();
    for id in 121..=200u64 {
        load_from_last(&mut ahead, id);
    }
    // Not in the segment: beyond the last.
    assert_eq!(find(&mut ahead, offs[150], 300, false), None);
    // Its segment deleted, the stretch goes, and nothing resumes in it.
    assert!(ahead.len > 0);
    ahead.forget(7);
    assert!(ahead.len == 0 && ahead.resume(7, 1, 201).is_none());
    let _ = std::fs::remove_file(&path);
}

/// Message `id`'s body from segment `seg` (records at `offs`, `end` long), read on from
/// the last load or else from its own record, as the loader thread does.
fn load(
    ahead: &mut ReadAhead,
    files: (&std::fs::File, Option<&std::fs::File>),
    (seg, offs, end): (u64, &[u64], u64),
    id: u64,
) -> Body {
    let from = ahead.resume(seg, 1, id).unwrap_or(offs[id as usize - 1]);
    let body = ahead.find(files, seg, S, from, end, MessageId(id), false);
    body.unwrap().expect("stored")
}

#[test]
fn bodies_are_ranges_of_their_stretch_which_is_read_into_again_once_none_is_used() {
    // Records of bodies a 256th of a stretch: a stretch holds about 250 of them.
    const N: usize = ReadAhead::SIZE / 256;
    let bodies: Vec<Vec<u8>> = (0..2000u32).map(|i| vec![i as u8; N]).collect();
    let (path, offs, end) = segment("shared", &bodies);
    let file = std::fs::File::open(&path).unwrap();
    let mut ahead = ReadAhead::default();
    let load = |ahead: &mut ReadAhead, id: u64| {
        let body = load(ahead, (&file, None), (3, &offs, end), id);
        assert_eq!(&body[..], &[(id - 1) as u8; N][..]);
        body
    };
    // Bodies held (in flight, say) keep their stretches: each new one is new memory.
    let held: Vec<Body> = (1..=1000).map(|id| load(&mut ahead, id)).collect();
    assert!(held.iter().all(Body::shares_buffer));
    assert!(held[0].as_ptr() < held[1].as_ptr() && held[1].as_ptr() < held[2].as_ptr());
    let first = held[0].as_ptr();
    assert!(ahead.spare.0.borrow().len() >= 3);
    // Once they are gone, the next stretches are read into the same memory again.
    drop(held);
    let mut again = false;
    for id in 1001..=2000 {
        let b = load(&mut ahead, id);
        let range = first as usize..first as usize + STRETCH;
        again |= range.contains(&(b.as_ptr() as usize));
    }
    assert!(again, "a spare stretch is read into again");
    assert!(ahead.spare.0.borrow().len() <= ReadAhead::SPARE + 1);
    assert_eq!(ahead.direct_reads, 0);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn topics_share_one_set_of_spare_stretches() {
    let n = ReadAhead::SIZE / 256;
    let bodies: Vec<Vec<u8>> = (0..1000u32).map(|i| vec![i as u8; n]).collect();
    let (path, offs, end) = segment("spare", &bodies);
    let file = std::fs::File::open(&path).unwrap();
    let spare = Spare::default();
    // Twenty topics each read the segment through (four stretches or so), and the
    // bodies stay in use (in flight, say).
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut ahead = ReadAhead::sharing(&spare);
        for id in 1..=1000u64 {
            held.push(load(&mut ahead, (&file, None), (3, &offs, end), id));
        }
    }
    // The stretches kept for reading into again are the thread's few, not each topic's.
    assert_eq!(spare.0.borrow().len(), ReadAhead::SPARE);
    drop(held);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn what_the_page_cache_dropped_is_read_with_direct_io_and_the_rest_from_the_cache() {
    use std::os::unix::fs::FileExt;
    // Bodies of odd sizes, so records straddle pages and stretches: about 4 MB.
    let bodies: Vec<Vec<u8>> = (0..6000u32)
        .map(|i| vec![i as u8; 300 + (i as usize % 7) * 111])
        .collect();
    let (path, offs, end) = segment("direct", &bodies);
    let file = std::fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    let direct = super::super::sys::open_direct(&path)
        .expect("the temporary directory's file system does direct I/O");
    super::super::sys::no_read_ahead(&file);
    // The cache drops the file (as it drops older segments), then holds its second
    // half again.
    super::super::sys::drop_cached(&file, 0, 0);
    let half = end / 2;
    let mut b = vec![0; (end - half) as usize];
    file.read_exact_at(&mut b, half).unwrap();
    let dropped_half = |f| super::super::sys::cached_pages(f, 0, half / 4096 * 4096);
    let mut ahead = ReadAhead::default();
    let mut before = None;
    for id in 1..=bodies.len() as u64 {
        let got = load(&mut ahead, (&file, Some(&direct)), (5, &offs, end), id);
        assert_eq!(&got[..], &bodies[id as usize - 1][..], "message {id}");
        // (The first load of a run is a small read through the cache.)
        before = before.or(Some(dropped_half(&file)));
    }
    let before = before.unwrap();
    let stretches = end.div_ceil(ReadAhead::SIZE as u64);
    let d = ahead.direct_reads;
    assert!(
        d >= stretches / 2 - 1,
        "{d} of {stretches} stretches read directly"
    );
    assert!(
        d <= stretches / 2 + 1,
        "{d} of {stretches} stretches read directly"
    );
    // What was read directly did not come back into the page cache.
    assert_eq!(
        dropped_half(&file),
        before,
        "pages of the dropped half cached (after the first load: {before:?})"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_lone_load_reads_little_and_a_large_record_whole() {
    let mut bodies: Vec<Vec<u8>> = (1..=20u8).map(|i| vec![i; 100]).collect();
    bodies[9] = vec![b'L'; 3 * ReadAhead::SIZE];
    let (path, offs, end) = segment("lone", &bodies);
    let file = std::fs::File::open(&path).unwrap();
    let mut ahead = ReadAhead::default();
    let got = ahead
        .find((&file, None), 1, S, offs[4], end, MessageId(5), true)
        .unwrap();
    assert_eq!(got.as_deref(), Some(&[5u8; 100][..]));
    assert_eq!(ahead.len, ReadAhead::LONE);
    // A record larger than any stretch is read whole; its buffer is not kept after.
    let got = ahead
        .find((&file, None), 1, S, offs[9], end, MessageId(10), true)
        .unwrap();
    assert_eq!(got.map(|b| b.len()), Some(3 * ReadAhead::SIZE));
    let got = ahead
        .find((&file, None), 1, S, offs[15], end, MessageId(16), true)
        .unwrap();
    assert_eq!(got.as_deref(), Some(&[16u8; 100][..]));
    assert!(ahead.buf.len() <= STRETCH);
    // Skipping over the large one to a later message works too.
    let got = ahead
        .find((&file, None), 1, S, offs[8], end, MessageId(12), false)
        .unwrap();
    assert_eq!(got.as_deref(), Some(&[12u8; 100][..]));
    // A length that runs past the end is an error, not a guess.
    let err = ahead.find(
        (&file, None),
        1,
        S,
        offs[19],
        offs[19] + 50,
        MessageId(20),
        true,
    );
    assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
    let _ = std::fs::remove_file(&path);
}

fn sample() -> (Vec<u8>, Vec<Record>) {
    let mut m = Message::new(MessageId(42), 7, b"hello".into());
    m.attempts = 3;
    let recs = vec![
        Record::Mark {
            last_id: MessageId(1),
        },
        Record::Pub {
            held: true,
            due: Some(99),
            msg: m,
        },
        Record::Fin {
            key: 2,
            ids: vec![MessageId(42)],
        },
        Record::Fin {
            key: 3,
            ids: vec![MessageId(43), MessageId(7), MessageId(u64::MAX)],
        },
        Record::Req {
            key: 2,
            id: MessageId(42),
            due: 5,
        },
        Record::Dispatch,
        Record::DropHeld,
    ];
    let mut b = Vec::new();
    put_file_header(&mut b, S);
    let o = seal0();
    for r in &recs {
        match r {
            Record::Mark { last_id } => put_mark(&mut b, o, *last_id),
            Record::Pub { held, due, msg } => put_pub(&mut b, o, *held, *due, msg),
            Record::Fin { key, ids } => put_fin(&mut b, o, *key, ids),
            Record::Req { key, id, due } => put_req(&mut b, o, *key, *id, *due),
            Record::Dispatch => put_dispatch(&mut b, o),
            Record::DropHeld => put_drop_held(&mut b, o),
        }
    }
    (b, recs)
}

fn records(s: &Scan) -> Vec<Record> {
    s.records.iter().map(|(_, r)| r.clone()).collect()
}

#[test]
fn round_trip() {
    let (b, recs) = sample();
    let s = scan(&b);
    assert_eq!(records(&s), recs);
    assert!(s.bad.is_empty());
    assert_eq!(s.layout, Layout::Salted(S));
    assert!(!s.needs_rewrite());
    // Without bodies: the same records, the message's body left in the file.
    let s = scan_without_bodies(&b);
    let bodiless: Vec<Record> = recs
        .iter()
        .cloned()
        .map(|mut r| {
            if let Record::Pub { msg, .. } = &mut r {
                msg.body = nsqlab_core::message::evicted_body();
            }
            r
        })
        .collect();
    assert_eq!(records(&s), bodiless);
    for (at, _) in &s.records {
        assert_eq!(
            record_at(&b, *at, seal0()).map(|(_, n)| n),
            Some(record_len(&b, *at))
        );
    }
}

#[test]
fn a_torn_tail_is_one_bad_range_and_the_prefix_survives() {
    let (b, recs) = sample();
    for cut in FILE_HEADER..b.len() {
        let s = scan(&b[..cut]);
        let got = records(&s);
        assert_eq!(got[..], recs[..got.len()], "cut at {cut}");
        let good_end = s.records.last().map_or(FILE_HEADER, |(at, _)| {
            *at + record_at(&b[..cut], *at, seal0()).expect("intact").1
        });
        if good_end < cut {
            assert_eq!(s.bad, vec![good_end..cut], "cut at {cut}");
        }
    }
}

#[test]
fn a_flipped_byte_costs_only_the_record_it_hits() {
    let (b, recs) = sample();
    for i in 0..b.len() {
        let mut c = b.clone();
        c[i] ^= 0x40;
        let got = records(&scan(&c));
        assert!(got.len() >= recs.len() - 1, "flip at {i}: {got:?}");
        for r in &got {
            assert!(recs.contains(r), "flip at {i}: invented {r:?}");
        }
    }
}

/// PUB records appended unsealed and sealed later, in threes and singly, are byte for
/// byte the records `put_pub` writes, wherever the buffer lies in its file.
#[test]
fn sealed_later_is_sealed_now() {
    let sizes = [1usize, 7, 8, 9, 200, 33, 1000, 64, 2, 150];
    for n in 0..=sizes.len() {
        for base in [0u64, 4096 + 3] {
            let seal = Seal { salt: S, base };
            let (mut now, mut later, mut starts) = (Vec::new(), Vec::new(), Vec::new());
            put_fin(&mut now, seal, 1, &[MessageId(9)]);
            put_fin(&mut later, seal, 1, &[MessageId(9)]);
            for (i, &size) in sizes[..n].iter().enumerate() {
                let body: Vec<u8> = (0..size).map(|b| (b * 31 + i) as u8).collect();
                let m = Message::new(MessageId(i as u64 + 10), 5, body.into());
                put_pub(&mut now, seal, i % 2 == 0, Some(i as Time), &m);
                starts.push(put_pub_unsealed(
                    &mut later,
                    i % 2 == 0,
                    Some(i as Time),
                    &m,
                ));
            }
            if n == 0 {
                assert_eq!(now, later);
                continue;
            }
            assert_ne!(now, later, "not sealed yet");
            seal_checks(&mut later, seal, &starts);
            assert_eq!(now, later, "{n} records at base {base}");
        }
    }
}

fn msg(id: u64, body: &[u8]) -> Record {
    Record::Pub {
        held: false,
        due: None,
        msg: Message::new(MessageId(id), 0, body.into()),
    }
}

/// What a publisher who knows the format, but not the segment's salt, could put in a
/// body: a FIN of message 5 (someone else's) and a PUB of its own with a high ID, in the
/// legacy format and in this one sealed with `salts` for exactly where they will lie
/// (the body starts at file offset `body_at`).
fn forged_body(body_at: u64, salts: &[Salt]) -> Vec<u8> {
    let mut body = b"carrier ".to_vec();
    put_legacy(
        &mut body,
        &Record::Fin {
            key: 0,
            ids: vec![MessageId(5)],
        },
    );
    put_legacy(&mut body, &msg(1000, b"FORGED"));
    for &salt in salts {
        let seal = Seal {
            salt,
            base: body_at,
        };
        put_fin(&mut body, seal, 0, &[MessageId(5)]);
        put_pub(
            &mut body,
            seal,
            false,
            None,
            &Message::new(MessageId(1001), 0, b"FORGED".as_slice().into()),
        );
    }
    body.extend_from_slice(b" end of the carrier");
    body
}

/// A segment: mark, message 5, the carrier (message 6, its body from `forged_body`),
/// messages 7..=12. Returns the bytes and the carrier's offset and length.
fn carrier_segment(salt_guesses: &[Salt]) -> (Vec<u8>, usize, usize) {
    let mut b = new_segment(S, MessageId(0));
    pub_record(&mut b, 5, b"victim");
    let at = b.len();
    let body = forged_body((at + HEADER + PUB_FIELDS) as u64, salt_guesses);
    let seal = seal0();
    put_pub(
        &mut b,
        seal,
        false,
        None,
        &Message::new(MessageId(6), 0, body.into()),
    );
    let len = b.len() - at;
    for id in 7..=12 {
        pub_record(&mut b, id, format!("after {id}").as_bytes());
    }
    (b, at, len)
}

/// Every way to damage the carrier: torn (cut inside its body, after the forged
/// records), its check flipped, its length flipped (shorter, longer, wild), a payload
/// byte flipped before the forged records.
fn damages(b: &[u8], at: usize, len: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("torn".to_string(), b[..at + len - 5].to_vec())];
    let mut flip = |name: &str, i: usize, x: u8| {
        let mut c = b.to_vec();
        c[i] ^= x;
        out.push((name.to_string(), c));
    };
    flip("check", at + 4, 0x01);
    flip("check high", at + HEADER - 1, 0x80);
    flip("length shorter", at, 0x10);
    flip("length longer", at + 1, 0x01);
    flip("length wild", at + 3, 0x40);
    flip("payload", at + HEADER + PUB_FIELDS + 2, 0x20);
    out
}

fn ids(s: &Scan) -> Vec<u64> {
    s.records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Pub { msg, .. } => Some(msg.id.0),
            _ => None,
        })
        .collect()
}

#[test]
fn records_a_client_puts_in_a_body_are_never_read_back_whatever_the_damage() {
    let guesses = [Salt(0), Salt(1), Salt(u64::MAX), Salt(0x005e_ed0f_7e56)];
    let (b, at, len) = carrier_segment(&guesses);
    assert_eq!(ids(&scan(&b)), vec![5, 6, 7, 8, 9, 10, 11, 12]);
    for (damage, c) in damages(&b, at, len) {
        let s = scan(&c);
        let got = ids(&s);
        let fins = s
            .records
            .iter()
            .filter(|(_, r)| matches!(r, Record::Fin { .. }));
        assert_eq!(fins.count(), 0, "{damage}: a forged FIN was read back");
        let want: Vec<u64> = if damage == "torn" {
            vec![5]
        } else {
            vec![5, 7, 8, 9, 10, 11, 12]
        };
        assert_eq!(got, want, "{damage}: {:?}", s.bad);
        assert!(s.needs_rewrite(), "{damage}");
    }
}

/// The test above can fail: the same forged records sealed with the segment's own salt
/// (which no client has) are read back after the damage.
#[test]
fn a_forger_who_knew_the_salt_would_succeed() {
    let (b, at, len) = carrier_segment(&[S]);
    let forged = damages(&b, at, len).into_iter().filter(|(_, c)| {
        let s = scan(c);
        ids(&s).contains(&1001)
            && s.records
                .iter()
                .any(|(_, r)| matches!(r, Record::Fin { .. }))
    });
    assert!(
        forged.count() >= 3,
        "torn, check and payload damage all resume inside the body"
    );
}

#[test]
fn a_record_moved_or_in_another_segment_fails_its_check() {
    let mut b = Vec::new();
    put_fin(&mut b, Seal { salt: S, base: 100 }, 1, &[MessageId(9)]);
    let fin = (
        Record::Fin {
            key: 1,
            ids: vec![MessageId(9)],
        },
        b.len(),
    );
    assert_eq!(record_at(&b, 0, Seal { salt: S, base: 100 }), Some(fin));
    assert_eq!(record_at(&b, 0, Seal { salt: S, base: 101 }), None);
    assert_eq!(
        record_at(
            &b,
            0,
            Seal {
                salt: Salt(7),
                base: 100
            }
        ),
        None
    );
    assert_ne!(Salt::random(), Salt::random());
}

#[test]
fn either_copy_of_the_file_header_is_enough() {
    let (b, recs) = sample();
    let mut c = b.clone();
    c[3] ^= 1;
    let s = scan(&c);
    assert_eq!((s.layout, records(&s)), (Layout::Salted(S), recs.clone()));
    assert_eq!(s.bad, vec![0..COPY]);
    let mut c = b.clone();
    c[COPY + 9] ^= 1;
    let s = scan(&c);
    assert_eq!((s.layout, records(&s)), (Layout::Salted(S), recs));
    assert_eq!(s.bad, vec![COPY..FILE_HEADER]);
    c[3] ^= 1;
    let s = scan(&c);
    assert_eq!((s.layout, s.records.len()), (Layout::Unknown, 0));
    assert_eq!(s.bad, vec![0..c.len()]);
    // An empty file (made, then a crash before its header was written) is one too.
    let s = scan(&[]);
    assert!(s.layout == Layout::Unknown && s.bad.is_empty() && s.needs_rewrite());
}

#[test]
fn a_legacy_segment_is_read_along_its_length_fields_only() {
    let mut b = Vec::new();
    put_legacy(
        &mut b,
        &Record::Mark {
            last_id: MessageId(0),
        },
    );
    put_legacy(&mut b, &msg(5, b"victim"));
    let at = b.len();
    put_legacy(&mut b, &msg(6, &forged_body(0, &[])));
    let len = b.len() - at;
    for id in 7..=9 {
        put_legacy(&mut b, &msg(id, b"after"));
    }
    let s = scan(&b);
    assert_eq!((s.layout, ids(&s)), (Layout::Legacy, vec![5, 6, 7, 8, 9]));
    assert!(s.needs_rewrite(), "converted when the store opens");
    let payload = s.payload(&b, at);
    assert_eq!(payload.len(), len - LEGACY_HEADER);
    // Its CRC flipped, the carrier is skipped by its length; its length flipped, the rest
    // of the file is set aside; nothing inside the body is read.
    let mut c = b.clone();
    c[at + 5] ^= 1;
    assert_eq!(ids(&scan(&c)), vec![5, 7, 8, 9]);
    let mut c = b.clone();
    c[at] ^= 0x10;
    let s = scan(&c);
    assert_eq!(ids(&s), vec![5]);
    assert_eq!(s.bad, vec![at..c.len()]);
    // Torn inside the body.
    let s = scan(&b[..at + len - 5]);
    assert_eq!(ids(&s), vec![5]);
    // A damaged mark is still recognised by its length and the record after it.
    let mut c = b.clone();
    c[6] ^= 1;
    let s = scan(&c);
    assert_eq!((s.layout, ids(&s)), (Layout::Legacy, vec![5, 6, 7, 8, 9]));
}
