//! Durable storage, black-box: the real binary killed with SIGKILL at seeded random moments,
//! restarted cleanly, fed corrupt files, and run out of room.

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_tests::tempdir::TempDir;
use nsqlab_tests::{Client, Nsqd};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A published message the server acknowledged: body, and the earliest time it may be
/// delivered (sent + defer) when deferred.
///
/// Due times are wall-clock times (nsqd's too: `UnixNano`, and they are kept across
/// restarts), so they are checked against the wall clock, not `Instant`: on some virtual
/// machines here the wall clock ran 0.5 % faster than the monotonic one for a while after
/// boot, and a DPUB due in 3 s came 15 ms "early" by `Instant`.
#[derive(Debug, Clone)]
struct Acked {
    body: String,
    not_before: Option<SystemTime>,
}

fn sub(d: &Nsqd, topic: &str, channel: &str, rdy: i64) -> Client {
    let mut c = d.client();
    c.cmd(&Command::Sub {
        topic: topic.into(),
        channel: channel.into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(rdy));
    c
}

/// Consume from `c` (FIN everything) until `stop` says so; returns (body, first arrival).
fn drain(
    c: &mut Client,
    seen: &mut HashMap<String, (SystemTime, u32)>,
    mut stop: impl FnMut(&HashMap<String, (SystemTime, u32)>) -> bool,
    idle: Duration,
) {
    let mut last = Instant::now();
    while !stop(seen) && last.elapsed() < idle {
        match c.frame_within(Duration::from_millis(200)) {
            Some(Frame::Message(m)) => {
                let now = Instant::now();
                let body = String::from_utf8_lossy(&m.body).into_owned();
                seen.entry(body).or_insert((SystemTime::now(), 0)).1 += 1;
                c.cmd(&Command::Fin(m.id.to_hex()));
                last = now;
            }
            Some(Frame::Response(r)) if r == b"_heartbeat_" => c.cmd(&Command::Nop),
            Some(_) => {}
            None => {}
        }
    }
}

fn segments(data: &Path, topic: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data.join("nsqlab").join(topic))
        .expect("topic dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

fn corrupt_files(data: &Path, topic: &str) -> usize {
    std::fs::read_dir(data.join("nsqlab").join(topic))
        .expect("topic dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .count()
}

/// Producers publish PUB, MPUB and DPUB over several connections while the server is killed
/// with SIGKILL at seeded random moments, round after round, on the same data path. Then every
/// acknowledged message must arrive, and no deferred one before its due time.
#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_message() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261130);
    let rounds: usize = std::env::var("CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let data = TempDir::new();
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let mut seen: HashMap<String, (SystemTime, u32)> = HashMap::new();
    for round in 0..rounds {
        // Small segments and a small memory queue: rolling, deleting finished segments and
        // reading bodies back from the log all happen under the kills too.
        let d = Nsqd::start_in(
            Some(data.path()),
            &["--max-bytes-per-file=65536", "--mem-queue-size=100"],
        );
        if round == 0 {
            for path in ["/topic/create?topic=t", "/channel/create?topic=t&channel=c"] {
                assert_eq!(d.http("POST", path, b"").status, 200);
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut producers = Vec::new();
        for p in 0..3u64 {
            let (acked, stop) = (acked.clone(), stop.clone());
            let mut c = d.client();
            let mut prng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (round as u64 * 7 + p));
            producers.push(std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    // Topic "h" has no channel until the end: its messages are held.
                    let topic = if p == 2 && n.is_multiple_of(3) {
                        "h"
                    } else {
                        "t"
                    };
                    let tag = format!("r{round}-p{p}-{n}");
                    let kind = prng.next_u64() % 3;
                    let sent = SystemTime::now();
                    let (cmd, batch) = match kind {
                        0 => (
                            Command::Pub {
                                topic: topic.into(),
                                body: tag.as_bytes().into(),
                            },
                            vec![Acked {
                                body: tag.clone(),
                                not_before: None,
                            }],
                        ),
                        1 => {
                            let bodies: Vec<String> = (0..1 + prng.next_u64() % 20)
                                .map(|k| format!("{tag}-{k}"))
                                .collect();
                            (
                                Command::Mpub {
                                    topic: topic.into(),
                                    bodies: bodies.iter().map(|b| b.as_bytes().into()).collect(),
                                },
                                bodies
                                    .into_iter()
                                    .map(|body| Acked {
                                        body,
                                        not_before: None,
                                    })
                                    .collect(),
                            )
                        }
                        _ => {
                            let ms = 100 + prng.next_u64() % 2500;
                            (
                                Command::Dpub {
                                    topic: topic.into(),
                                    defer_ms: ms,
                                    body: tag.as_bytes().into(),
                                },
                                vec![Acked {
                                    body: tag.clone(),
                                    not_before: Some(sent + Duration::from_millis(ms)),
                                }],
                            )
                        }
                    };
                    if c.stream.write_all_ok(&cmd.to_bytes()).is_err() {
                        return;
                    }
                    match c.frame_within(Duration::from_secs(5)) {
                        Some(Frame::Response(r)) if r == b"OK" => {
                            acked.lock().unwrap().extend(batch);
                        }
                        Some(Frame::Response(r)) if r == b"_heartbeat_" => {
                            // Not an answer; the OK follows.
                            if let Some(Frame::Response(r)) = c.frame_within(Duration::from_secs(5))
                            {
                                if r == b"OK" {
                                    acked.lock().unwrap().extend(batch);
                                }
                            }
                        }
                        _ => return, // killed: unacknowledged, may or may not arrive
                    }
                }
            }));
        }
        // A consumer FINs what it gets, as at-least-once consumers do.
        let mut c = sub(&d, "t", "c", 100);
        let kill_at = Instant::now() + Duration::from_millis(300 + rng.next_u64() % 1200);
        drain(
            &mut c,
            &mut seen,
            |_| Instant::now() >= kill_at,
            Duration::MAX,
        );
        d.kill9();
        stop.store(true, Ordering::Relaxed);
        for p in producers {
            p.join().expect("producer");
        }
    }
    let acked = acked.lock().unwrap().clone();
    let want: HashSet<&str> = acked.iter().map(|a| a.body.as_str()).collect();
    assert!(
        want.len() > 100,
        "the producers got few OKs: {}",
        want.len()
    );
    let d = Nsqd::start_in(
        Some(data.path()),
        &["--max-bytes-per-file=65536", "--mem-queue-size=100"],
    );
    let mut ct = sub(&d, "t", "c", 2500);
    let mut ch = sub(&d, "h", "c", 2500);
    let all =
        |seen: &HashMap<String, (SystemTime, u32)>| want.iter().all(|b| seen.contains_key(*b));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !all(&seen) && Instant::now() < deadline {
        drain(&mut ct, &mut seen, |_| true, Duration::ZERO);
        drain(&mut ch, &mut seen, |_| false, Duration::from_millis(300));
        drain(&mut ct, &mut seen, |_| false, Duration::from_millis(300));
    }
    let lost: Vec<&&str> = want.iter().filter(|b| !seen.contains_key(**b)).collect();
    let early: Vec<(&str, Duration)> = acked
        .iter()
        .filter_map(|a| {
            let nb = a.not_before?;
            let (at, _) = seen.get(&a.body)?;
            (*at < nb).then(|| (a.body.as_str(), nb.duration_since(*at).unwrap_or_default()))
        })
        .collect();
    let dups = seen.values().filter(|(_, n)| *n > 1).count();
    let files = segments(data.path(), "t").len();
    eprintln!(
        "crash test (seed {seed}, {rounds} SIGKILLs): {} acknowledged, {} lost, {} deferred early, {} delivered more than once (allowed: at-least-once); {files} segment(s) left",
        want.len(),
        lost.len(),
        early.len(),
        dups
    );
    assert!(lost.is_empty(), "acknowledged messages lost: {lost:?}");
    assert!(early.is_empty(), "deferred messages early: {early:?}");
}

trait WriteOk {
    fn write_all_ok(&mut self, b: &[u8]) -> std::io::Result<()>;
}

impl WriteOk for std::net::TcpStream {
    fn write_all_ok(&mut self, b: &[u8]) -> std::io::Result<()> {
        std::io::Write::write_all(self, b)
    }
}

/// SIGTERM and restart: unfinished messages come back, finished ones do not, deferred ones
/// keep their due time; pauses persist, deleted topics and ephemeral channels are gone.
#[test]
fn clean_restart_keeps_due_times_pauses_and_deletions() {
    let data = TempDir::new();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    for path in [
        "/topic/create?topic=t",
        "/topic/create?topic=pt",
        "/channel/create?topic=t&channel=c",
        "/channel/create?topic=t&channel=pc",
        "/channel/pause?topic=t&channel=pc",
        "/channel/create?topic=pt&channel=c",
        "/topic/pause?topic=pt",
        "/topic/create?topic=gone",
        "/topic/delete?topic=gone",
    ] {
        assert_eq!(d.http("POST", path, b"").status, 200, "{path}");
    }
    let _eph = sub(&d, "t", "e#ephemeral", 1);
    let mut p = d.client();
    let sent = SystemTime::now();
    for i in 0..100 {
        p.cmd(&Command::Dpub {
            topic: "t".into(),
            defer_ms: 3000,
            body: format!("d{i}").into_bytes().into(),
        });
        assert_eq!(p.next_text(), "R:OK");
    }
    for i in 0..10 {
        assert_eq!(pub_text(&mut p, "t", format!("m{i}").as_bytes()), "R:OK");
    }
    let mut c = d.client();
    c.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "c".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(10));
    let mut got = Vec::new();
    while got.len() < 10 {
        if let Frame::Message(m) = c.frame() {
            got.push(m);
        }
    }
    // FIN the first five; the others stay in flight over the restart.
    for m in &got[..5] {
        c.cmd(&Command::Fin(m.id.to_hex()));
    }
    c.cmd(&Command::Nop);
    std::thread::sleep(Duration::from_millis(200));
    assert!(d.terminate().success());

    let d = Nsqd::start_in(Some(data.path()), &[]);
    let stats = d.http("GET", "/stats?format=json", b"").json();
    let topics = stats["topics"].as_array().unwrap();
    let topic = |n: &str| topics.iter().find(|t| t["topic_name"] == n).cloned();
    assert!(topic("gone").is_none(), "deleted topics stay deleted");
    assert_eq!(topic("pt").expect("paused topic")["paused"], true);
    let t = topic("t").expect("topic t");
    let chans: Vec<(String, bool)> = t["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["channel_name"].as_str().unwrap().to_string(),
                c["paused"] == true,
            )
        })
        .collect();
    assert_eq!(chans, vec![("c".into(), false), ("pc".into(), true)]);

    let mut seen = HashMap::new();
    let mut c = sub(&d, "t", "c", 200);
    drain(&mut c, &mut seen, |s| s.len() >= 5, Duration::from_secs(2));
    let mut early: Vec<&String> = seen.keys().collect();
    early.sort();
    assert_eq!(
        early,
        vec!["m5", "m6", "m7", "m8", "m9"],
        "unfinished come back, finished do not"
    );
    drain(
        &mut c,
        &mut seen,
        |s| s.len() >= 105,
        Duration::from_secs(6),
    );
    let due = sent + Duration::from_millis(3000);
    let mut late = Vec::new();
    for i in 0..100 {
        let (at, n) = seen[&format!("d{i}")];
        assert_eq!(n, 1);
        let Ok(late_by) = at.duration_since(due) else {
            panic!(
                "d{i} arrived {:?} before its due time",
                due.duration_since(at)
            );
        };
        late.push(late_by);
    }
    late.sort();
    eprintln!(
        "deferred after a restart: lateness p50 {:?}, max {:?}",
        late[50], late[99]
    );
    assert!(
        late[99] < Duration::from_secs(1),
        "deferred on time: {:?}",
        late[99]
    );
}

/// nsqd on `data` with topic `t` and its channel `c`.
fn start_with_channel(data: &Path, extra: &[&str]) -> Nsqd {
    let d = Nsqd::start_in(Some(data), extra);
    for path in ["/topic/create?topic=t", "/channel/create?topic=t&channel=c"] {
        assert_eq!(d.http("POST", path, b"").status, 200, "{path}");
    }
    d
}

/// Publish `body` to `topic` on `c` and return the answer's text.
fn pub_text(c: &mut Client, topic: &str, body: &[u8]) -> String {
    c.cmd(&Command::Pub {
        topic: topic.into(),
        body: body.to_vec().into(),
    });
    c.next_text()
}

/// Wait (at most 5 s) for `/ping` to say OK; `what` says what it means when it does not.
fn wait_healthy(d: &Nsqd, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while d.http("GET", "/ping", b"").status != 200 {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn publish_n(d: &Nsqd, topic: &str, n: usize) {
    let mut p = d.client();
    for i in 0..n {
        assert_eq!(
            pub_text(&mut p, topic, format!("m{i:03}").as_bytes()),
            "R:OK"
        );
    }
}

fn consume_all(d: &Nsqd, topic: &str) -> HashMap<String, (SystemTime, u32)> {
    let mut seen = HashMap::new();
    let mut c = sub(d, topic, "c", 1000);
    drain(&mut c, &mut seen, |_| false, Duration::from_millis(800));
    seen
}

#[test]
fn a_torn_last_record_is_set_aside_and_the_rest_delivered() {
    let data = TempDir::new();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    publish_n(&d, "t", 50);
    d.kill9();
    let seg = segments(data.path(), "t").pop().unwrap();
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    let want: HashSet<String> = (0..49).map(|i| format!("m{i:03}")).collect();
    let got: HashSet<String> = seen.keys().cloned().collect();
    assert_eq!(got, want, "all but the torn last message");
    assert_eq!(corrupt_files(data.path(), "t"), 1);
    // The next restart finds a clean file.
    drop(d);
    let _d = Nsqd::start_in(Some(data.path()), &[]);
    assert_eq!(corrupt_files(data.path(), "t"), 1);
}

#[test]
fn flipped_bytes_cost_only_the_records_they_hit() {
    let data = TempDir::new();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    publish_n(&d, "t", 100);
    d.kill9();
    let seg = segments(data.path(), "t").pop().unwrap();
    let mut b = std::fs::read(&seg).unwrap();
    let mid = b.len() / 2;
    for x in &mut b[mid..mid + 4] {
        *x ^= 0xa5;
    }
    std::fs::write(&seg, &b).unwrap();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    let all: HashSet<String> = (0..100).map(|i| format!("m{i:03}")).collect();
    for k in seen.keys() {
        assert!(all.contains(k), "a corrupt record was delivered: {k:?}");
    }
    assert!(
        seen.len() >= 98,
        "only the hit records are lost: got {}",
        seen.len()
    );
    assert_eq!(corrupt_files(data.path(), "t"), 1);
}

/// What a publisher who knows the log's format (today's and the one before it) but not a
/// segment's salt could put in a body: a FIN of message `victim` on the first channel (key
/// 0), and a PUB of its own with a high ID, each framed as a record.
fn forged_records(victim: u64) -> Vec<u8> {
    let mut fin = vec![2u8];
    fin.extend_from_slice(&0u32.to_le_bytes());
    fin.extend_from_slice(&victim.to_le_bytes());
    let mut publ = vec![1u8, 0];
    publ.extend_from_slice(&0u64.to_le_bytes()); // not deferred
    publ.extend_from_slice(&(u64::MAX / 2).to_le_bytes()); // ID
    publ.extend_from_slice(&0u64.to_le_bytes()); // timestamp
    publ.extend_from_slice(&1u16.to_le_bytes()); // attempts
    publ.extend_from_slice(b"FORGED");
    let mut out = b"carrier:".to_vec();
    for p in [&fin, &publ] {
        // [u32 length][u32 CRC-32C][payload]
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(p).to_le_bytes());
        out.extend_from_slice(p);
    }
    for p in [&fin, &publ] {
        // [u32 length][u64 check][payload], the salt guessed to be 0.
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&u64::from(crc32c::crc32c(p)).to_le_bytes());
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b":end");
    out
}

/// A publisher's body holds well-formed records (a FIN of another client's unfinished
/// message, a PUB with a high ID). Its own record is then damaged on disk: torn by a crash,
/// its check or its length or a payload byte flipped. Recovery must never read the forged
/// records: the other message is still owed, nothing forged is delivered, and every message
/// published after the carrier arrives.
#[test]
fn records_forged_inside_a_body_never_come_back() {
    for damage in ["torn", "check", "length", "payload"] {
        let data = TempDir::new();
        let d = start_with_channel(data.path(), &[]);
        let mut p = d.client();
        p.cmd(&Command::Pub {
            topic: "t".into(),
            body: b"victim".to_vec().into(),
        });
        assert_eq!(p.next_text(), "R:OK");
        // The victim is delivered once and not finished: it is owed.
        let victim = {
            let mut c = sub(&d, "t", "c", 1);
            match c.frame() {
                Frame::Message(m) => m.id.0,
                f => panic!("{f:?}"),
            }
        };
        let body = forged_records(victim);
        p.cmd(&Command::Pub {
            topic: "t".into(),
            body: body.clone().into(),
        });
        assert_eq!(p.next_text(), "R:OK");
        let after: HashSet<String> = if damage == "torn" {
            HashSet::new()
        } else {
            (0..55).map(|i| format!("after {i}")).collect()
        };
        for a in &after {
            assert_eq!(pub_text(&mut p, "t", a.as_bytes()), "R:OK");
        }
        d.kill9();
        let seg = segments(data.path(), "t").pop().unwrap();
        let mut b = std::fs::read(&seg).unwrap();
        let body_at = b
            .windows(8)
            .position(|w| w == b"carrier:")
            .expect("the carrier is in the last segment");
        // The carrier's record: its header, then kind, flags, due, ID, timestamp, attempts.
        let header = if b.starts_with(b"nsqlab\0\x02") {
            12
        } else {
            8
        };
        let rec = body_at - 28 - header;
        match damage {
            "torn" => b.truncate(body_at + body.len() - 2),
            "check" => b[rec + 4] ^= 0x01,
            "length" => b[rec + 1] ^= 0x01,
            _ => b[body_at - 1] ^= 0x20,
        }
        std::fs::write(&seg, &b).unwrap();
        let d = Nsqd::start_in(Some(data.path()), &[]);
        let seen = consume_all(&d, "t");
        assert!(seen.contains_key("victim"), "{damage}: the victim was lost");
        for k in seen.keys() {
            assert!(!k.contains("FORGED"), "{damage}: a forged message: {k:?}");
        }
        let missing: Vec<&String> = after.iter().filter(|a| !seen.contains_key(*a)).collect();
        assert!(missing.is_empty(), "{damage}: lost {missing:?}");
        drop(d);
    }
}

#[test]
fn a_deleted_metadata_file_loses_no_message() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    publish_n(&d, "t", 20);
    assert!(d.terminate().success());
    std::fs::remove_file(data.path().join("nsqlab/t/meta.json")).unwrap();
    // Twice: the messages stay held across a restart with no channel yet, and a paused
    // topic (metadata written again) does not lose them either.
    let d = Nsqd::start_in(Some(data.path()), &[]);
    assert_eq!(d.http("POST", "/topic/pause?topic=t", b"").status, 200);
    assert_eq!(d.http("POST", "/topic/unpause?topic=t", b"").status, 200);
    d.kill9();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    assert_eq!(seen.len(), 20, "every message waits for the first channel");
    // Once a channel has them, they are its: finished ones do not come back.
    drop(d);
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let again = consume_all(&d, "t");
    assert!(
        again.is_empty(),
        "finished messages stay finished: {}",
        again.len()
    );
}

/// FINs with nothing after them are written within moments (they wait for company at most
/// `FIN_WAIT`, 20 ms): messages finished before a SIGKILL do not come back.
#[test]
fn fins_with_nothing_after_them_are_written_before_a_crash() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    publish_n(&d, "t", 30);
    let seen = consume_all(&d, "t");
    assert_eq!(seen.len(), 30);
    d.kill9();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let again = consume_all(&d, "t");
    assert!(
        again.is_empty(),
        "finished before the crash, delivered again: {}",
        again.len()
    );
}

/// The data file cannot grow (RLIMIT_FSIZE, set on the running server with prlimit): PUB gets
/// nsqd's fatal E_PUB_FAILED, HTTP /pub nsqd's 503 EXITING, /ping 500 NOK; when room returns,
/// the server is healthy again and nothing acknowledged was lost.
#[test]
fn a_full_disk_fails_publishes_and_ping_until_there_is_room() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    publish_n(&d, "t", 10);
    let seg = segments(data.path(), "t").pop().unwrap();
    let len = std::fs::metadata(&seg).unwrap().len();
    let limit = |v: &str| {
        let ok = std::process::Command::new("prlimit")
            .arg(format!("--pid={}", d.pid()))
            .arg(format!("--fsize={v}"))
            .status()
            .expect("prlimit (util-linux)")
            .success();
        assert!(ok, "prlimit --fsize={v}");
    };
    // The soft limit only (raising a hard limit back needs CAP_SYS_RESOURCE).
    limit(&format!("{}:", len + 100));
    let mut p = d.client();
    let mut failed = None;
    for i in 0..20 {
        p.cmd(&Command::Pub {
            topic: "t".into(),
            body: format!("{i:0>60}").into_bytes().into(),
        });
        match p.next_text() {
            t if t == "R:OK" => continue,
            t => {
                failed = Some(t);
                break;
            }
        }
    }
    let failed = failed.expect("a publish failed");
    assert!(
        failed.starts_with("E:E_PUB_FAILED PUB failed write ") && failed.contains("File too large"),
        "{failed}"
    );
    assert!(
        p.closed_within(Duration::from_secs(2)),
        "E_PUB_FAILED is fatal"
    );
    let ping = d.http("GET", "/ping", b"");
    assert_eq!(ping.status, 500);
    assert!(ping.text().starts_with("NOK - write "), "{}", ping.text());
    let r = d.http("POST", "/pub?topic=t", b"x");
    assert_eq!(
        (r.status, r.text().as_str()),
        (503, r#"{"message":"EXITING"}"#)
    );
    let stats = d.http("GET", "/stats?format=json", b"").json();
    assert!(stats["health"].as_str().unwrap().starts_with("NOK - "));

    limit("unlimited:");
    wait_healthy(&d, "healthy again once there is room");
    let mut p = d.client();
    assert_eq!(pub_text(&mut p, "t", b"after"), "R:OK");
    d.kill9();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    for i in 0..10 {
        assert!(seen.contains_key(&format!("m{i:03}")));
    }
    assert!(seen.contains_key("after"));
}

/// The data path is removed while the server runs (`rm -rf`, or one topic's directory). A
/// publish after that must not be acknowledged unless it is stored: each one answers OK
/// and survives a restart, or answers E_PUB_FAILED (with `/ping` 500) and is never
/// delivered; once the store has made its files again, publishing works and is durable, and
/// what was acknowledged before the removal is on disk again.
#[test]
fn a_removed_data_path_is_noticed_and_nothing_acknowledged_is_lost() {
    for removed in ["nsqlab", "nsqlab/t"] {
        let data = TempDir::new();
        let d = start_with_channel(data.path(), &[]);
        publish_n(&d, "t", 100);
        std::fs::remove_dir_all(data.path().join(removed)).unwrap();
        // Acknowledged before the removal: still owed, so written again once the path is.
        let mut acked: Vec<String> = (0..100).map(|i| format!("m{i:03}")).collect();
        let mut refused = Vec::new();
        let mut failed = 0;
        let mut p = d.client();
        let mut sick = false;
        for i in 0..200 {
            let body = format!("after {i}");
            p.cmd(&Command::Pub {
                topic: "t".into(),
                body: body.clone().into_bytes().into(),
            });
            let t = p.next_text();
            if t == "R:OK" {
                acked.push(body);
            } else {
                assert!(
                    t.starts_with("E:E_PUB_FAILED PUB failed "),
                    "{removed}: {t}"
                );
                failed += 1;
                refused.push(body);
                sick |= d.http("GET", "/ping", b"").status == 500;
                p = d.client(); // E_PUB_FAILED closes the connection, as nsqd's does
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(failed > 0, "{removed}: every publish was acknowledged");
        assert!(sick, "{removed}: /ping said OK while publishes failed");
        // It comes back by itself.
        wait_healthy(&d, &format!("{removed}: healthy again"));
        for i in 0..20 {
            let body = format!("later {i}");
            assert_eq!(pub_text(&mut p, "t", body.as_bytes()), "R:OK", "{removed}");
            acked.push(body);
        }
        assert!(d.terminate().success());
        let d = start_with_channel(data.path(), &[]);
        let seen = consume_all(&d, "t");
        let lost: Vec<&String> = acked.iter().filter(|b| !seen.contains_key(*b)).collect();
        assert!(
            lost.is_empty(),
            "{removed}: acknowledged and lost: {} of {}, e.g. {:?}",
            lost.len(),
            acked.len(),
            &lost[..lost.len().min(5)]
        );
        let delivered: Vec<&String> = refused.iter().filter(|b| seen.contains_key(*b)).collect();
        assert!(
            delivered.is_empty(),
            "{removed}: refused with E_PUB_FAILED, delivered anyway: {delivered:?}"
        );
    }
}

/// A disk filled by the segment being written (default `--max-bytes-per-file`, larger than
/// the room left: here the file size limit stops it) recovers once consumers finish what it
/// holds: the finished segment's blocks are freed, publishing and `/ping` work again without
/// anyone making room by hand.
#[test]
fn a_full_disk_recovers_once_the_segment_that_filled_it_is_consumed() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    publish_n(&d, "t", 10);
    let seg = segments(data.path(), "t").pop().unwrap();
    let len = std::fs::metadata(&seg).unwrap().len();
    let ok = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", d.pid()))
        .arg(format!("--fsize={}:", len + 4000))
        .status()
        .expect("prlimit (util-linux)")
        .success();
    assert!(ok);
    let mut p = d.client();
    let mut published = 10;
    loop {
        p.cmd(&Command::Pub {
            topic: "t".into(),
            body: format!("m{published:03}").into_bytes().into(),
        });
        let t = p.next_text();
        if t != "R:OK" {
            assert!(t.starts_with("E:E_PUB_FAILED"), "{t}");
            break;
        }
        published += 1;
        assert!(published < 1000, "the limit never bit");
    }
    assert_eq!(d.http("GET", "/ping", b"").status, 500);
    // Consumers drain it (FINs are taken although they cannot be logged).
    let seen = consume_all(&d, "t");
    for i in 0..published {
        assert!(seen.contains_key(&format!("m{i:03}")), "m{i:03}");
    }
    wait_healthy(
        &d,
        "never healthy again: the finished segment still fills the disk",
    );
    assert!(
        std::fs::metadata(&seg).unwrap().len() < 200,
        "its blocks are freed"
    );
    let mut p = d.client();
    for i in 0..20 {
        assert_eq!(
            pub_text(&mut p, "t", format!("after {i}").as_bytes()),
            "R:OK"
        );
    }
    d.kill9();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    for i in 0..20 {
        assert!(seen.contains_key(&format!("after {i}")), "after {i}");
    }
}

/// nsqd refuses to start on a full disk even with messages owed (`write .probe: no space`),
/// so consumers cannot drain it and free the room. nsqlab starts: consumers get every owed
/// message and FIN them, publishes get E_PUB_FAILED and `/ping` 500 until there is room.
/// (The file size limit stands in for the full disk: every write fails with EFBIG.)
#[test]
fn it_starts_on_a_full_disk_serves_consumers_and_refuses_publishes_until_there_is_room() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    publish_n(&d, "t", 30);
    assert!(d.terminate().success());
    let d = Nsqd::start_wrapped(Some(data.path()), &[], &["prlimit", "--fsize=1:"]);
    let ping = d.http("GET", "/ping", b"");
    assert_eq!(ping.status, 500);
    assert!(ping.text().starts_with("NOK - write "), "{}", ping.text());
    let mut p = d.client();
    p.cmd(&Command::Pub {
        topic: "t".into(),
        body: b"refused"[..].into(),
    });
    let t = p.next_text();
    assert!(t.starts_with("E:E_PUB_FAILED"), "{t}");
    let seen = consume_all(&d, "t");
    for i in 0..30 {
        assert!(seen.contains_key(&format!("m{i:03}")), "m{i:03}");
    }
    // Room again (the soft limit lifted): healthy, and publishing works.
    let ok = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", d.pid()))
        .arg("--fsize=unlimited:")
        .status()
        .expect("prlimit (util-linux)")
        .success();
    assert!(ok);
    wait_healthy(&d, "healthy again once there is room");
    let mut p = d.client();
    assert_eq!(pub_text(&mut p, "t", b"after"), "R:OK");
}

/// With a limit of 200 open files (hard: it cannot be raised), 400 topics each get a durable
/// publish: a topic's files close while others are written, so none fails with `Too many
/// open files` (each topic held two descriptors for ever), and every message is there after
/// a restart under the same limit.
#[test]
fn many_topics_do_not_run_out_of_file_descriptors() {
    let data = TempDir::new();
    let d = Nsqd::start_wrapped(Some(data.path()), &[], &["prlimit", "--nofile=200:200"]);
    let mut p = d.client();
    for i in 0..400 {
        p.cmd(&Command::Pub {
            topic: format!("t{i}").as_str().into(),
            body: format!("m{i}").into_bytes().into(),
        });
        let t = p.next_text();
        assert_eq!(t, "R:OK", "topic {i}");
    }
    let fds = std::fs::read_dir(format!("/proc/{}/fd", d.pid()))
        .unwrap()
        .count();
    assert!(fds < 200, "{fds} open");
    assert!(d.terminate().success());
    // The restart, under the same limit: recovery keeps to the budget the running server
    // does (it opened a descriptor per topic, and could not start again).
    let d = Nsqd::start_wrapped(Some(data.path()), &[], &["prlimit", "--nofile=200:200"]);
    let fds = std::fs::read_dir(format!("/proc/{}/fd", d.pid()))
        .unwrap()
        .count();
    assert!(fds < 100, "{fds} open after the restart");
    for i in [0, 1, 199, 399] {
        let topic = format!("t{i}");
        let mut c = sub(&d, &topic, "c", 10);
        // Held for the first channel (published before it existed).
        match c.frame_within(Duration::from_secs(5)) {
            Some(Frame::Message(m)) => assert_eq!(&m.body[..], format!("m{i}").as_bytes()),
            f => panic!("{topic}: {f:?}"),
        }
    }
}

#[test]
fn an_unwritable_data_path_fails_publishes_until_it_is_back() {
    let data = TempDir::new();
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let root = data.path().join("nsqlab");
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::write(&root, b"not a directory").unwrap();
    let mut p = d.client();
    p.cmd(&Command::Pub {
        topic: "new".into(),
        body: b"x"[..].into(),
    });
    let t = p.next_text();
    assert!(t.starts_with("E:E_PUB_FAILED PUB failed create "), "{t}");
    assert_eq!(d.http("GET", "/ping", b"").status, 500);
    std::fs::remove_file(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    wait_healthy(&d, "healthy again");
    let mut p = d.client();
    assert_eq!(pub_text(&mut p, "new", b"y"), "R:OK");
}

/// `--mem-queue-size=0`: every body waits in the log (as nsqd sends everything through its
/// disk queue); consumers still get every message, live and after SIGKILL.
#[test]
fn mem_queue_size_zero_sends_everything_through_disk() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &["--mem-queue-size=0"]);
    publish_n(&d, "t", 30);
    let s = d.http("GET", "/stats?format=json&topic=t", b"").json();
    assert_eq!(s["topics"][0]["channels"][0]["backend_depth"], 30);
    d.kill9();
    let d = Nsqd::start_in(Some(data.path()), &["--mem-queue-size=0"]);
    let seen = consume_all(&d, "t");
    let want: HashSet<String> = (0..30).map(|i| format!("m{i:03}")).collect();
    assert_eq!(seen.keys().cloned().collect::<HashSet<_>>(), want);
}

/// As nsqd (which persists its metadata before answering), an admin change is on disk when
/// its HTTP answer comes: a crash right after `/topic/pause` answered cannot unpause it.
#[test]
fn admin_answers_come_after_the_metadata_is_written() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &[]);
    let meta = data.path().join("nsqlab/t/meta.json");
    let paused = |path: &Path| -> (bool, bool) {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        (
            v["paused"].as_bool().unwrap(),
            v["channels"]["c"]["paused"].as_bool().unwrap(),
        )
    };
    for i in 0..40 {
        let on = i % 2 == 0;
        let verb = if on { "pause" } else { "unpause" };
        assert_eq!(
            d.http("POST", &format!("/topic/{verb}?topic=t"), b"")
                .status,
            200
        );
        assert_eq!(
            paused(&meta).0,
            on,
            "topic {verb} answered before it was written"
        );
        let r = d.http("POST", &format!("/channel/{verb}?topic=t&channel=c"), b"");
        assert_eq!(r.status, 200);
        assert_eq!(
            paused(&meta).1,
            on,
            "channel {verb} answered before it was written"
        );
    }
}

/// The next segment is made ahead, its disk blocks reserved (cheaper writes), once the tail is
/// half full; the roll writes into it, a restart after a crash takes an unused one as its tail
/// and gives back what the old tail did not use, and a clean stop deletes an unused one.
/// None of it changes what a restart finds.
#[test]
#[cfg(target_os = "linux")]
fn the_next_segment_is_made_ahead_with_its_blocks_and_none_of_it_is_left_behind() {
    use std::os::unix::fs::MetadataExt;
    const MAX: u64 = 65536;
    let data = TempDir::new();
    let args = [&*format!("--max-bytes-per-file={MAX}")];
    let d = start_with_channel(data.path(), &args);
    let mut p = d.client();
    let mut want = HashSet::new();
    let allocated = |path: &PathBuf| {
        let m = std::fs::metadata(path).unwrap();
        (m.len(), m.blocks() * 512)
    };
    // 40 messages of about 1 KB: each batch takes the tail past half (a batch ends in a roll
    // or in the first half of a segment).
    let mut mpub = |p: &mut Client, batch: usize| {
        let bodies: Vec<String> = (0..40)
            .map(|i| format!("{batch}-{i}-{}", "x".repeat(1000)))
            .collect();
        want.extend(bodies.iter().cloned());
        p.cmd(&Command::Mpub {
            topic: "t".into(),
            bodies: bodies.into_iter().map(|b| b.into_bytes().into()).collect(),
        });
        assert_eq!(p.next_text(), "R:OK");
    };
    // The next segment: empty, its blocks reserved, there before the tail is full.
    let wait_for_next = |count: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let segs = segments(data.path(), "t");
            if segs.len() == count {
                let (len, bytes) = allocated(segs.last().unwrap());
                if len == 0 && bytes >= MAX {
                    return segs;
                }
            }
            assert!(Instant::now() < deadline, "no next segment: {segs:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    mpub(&mut p, 0);
    wait_for_next(2);
    mpub(&mut p, 1);
    // The roll wrote into the segment made ahead: it has messages and its reservation.
    let segs = segments(data.path(), "t");
    assert_eq!(segs.len(), 2, "{segs:?}");
    let (len, bytes) = allocated(&segs[1]);
    assert!(len > 0 && len < MAX / 2 && bytes >= MAX, "{len} of {bytes}");
    mpub(&mut p, 2);
    let segs = wait_for_next(3);
    let old_tail = &segs[1];
    let (tail_len, _) = allocated(old_tail);
    d.kill9();
    // The restart takes the empty segment as its tail; the old tail is full now and gives
    // back what it did not use.
    let d = Nsqd::start_in(Some(data.path()), &args);
    let (len, bytes) = allocated(old_tail);
    assert_eq!(len, tail_len);
    assert!(
        bytes <= len.next_multiple_of(4096),
        "after a restart: {bytes} allocated for {len}"
    );
    let mut p = d.client();
    mpub(&mut p, 3);
    wait_for_next(4);
    // A clean stop deletes the unused one and leaves no blocks past a segment's end.
    assert!(d.terminate().success());
    let segs = segments(data.path(), "t");
    assert_eq!(segs.len(), 3, "{segs:?}");
    for seg in &segs {
        let (len, bytes) = allocated(seg);
        assert!(
            len > 0 && bytes <= len.next_multiple_of(4096),
            "{seg:?}: {bytes} allocated for {len}"
        );
    }
    let d = Nsqd::start_in(Some(data.path()), &args);
    let seen = consume_all(&d, "t");
    assert_eq!(seen.keys().cloned().collect::<HashSet<_>>(), want);
}

/// What nothing needs any more leaves the disk: segments whose messages were all finished (the
/// tail stays), and the files of a deleted topic. Both go on the sync thread, so the test waits
/// for them; a restart then finds only what is owed.
#[test]
fn finished_segments_and_deleted_topics_leave_the_disk() {
    let data = TempDir::new();
    let d = start_with_channel(data.path(), &["--max-bytes-per-file=65536"]);
    let mut p = d.client();
    for batch in 0..4 {
        let bodies: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("{batch}-{i}-{}", "x".repeat(1000)).into_bytes())
            .collect();
        p.cmd(&Command::Mpub {
            topic: "t".into(),
            bodies: bodies.into_iter().map(Into::into).collect(),
        });
        assert_eq!(p.next_text(), "R:OK");
    }
    for path in [
        "/topic/create?topic=gone",
        "/channel/create?topic=gone&channel=c",
    ] {
        assert_eq!(d.http("POST", path, b"").status, 200, "{path}");
    }
    publish_n(&d, "gone", 10);
    assert!(segments(data.path(), "t").len() >= 3);
    assert_eq!(consume_all(&d, "t").len(), 200);
    assert_eq!(d.http("POST", "/topic/delete?topic=gone", b"").status, 200);
    // Anything left of "gone", under its name or set aside for deletion.
    let left_of_gone = || {
        std::fs::read_dir(data.path().join("nsqlab"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("gone"))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while segments(data.path(), "t").len() > 1 || left_of_gone() > 0 {
        assert!(
            Instant::now() < deadline,
            "still on disk: {:?} and {} of the deleted topic",
            segments(data.path(), "t"),
            left_of_gone()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    publish_n(&d, "t", 5);
    assert!(d.terminate().success());
    let d = Nsqd::start_in(Some(data.path()), &[]);
    let seen = consume_all(&d, "t");
    let want: HashSet<String> = (0..5).map(|i| format!("m{i:03}")).collect();
    assert_eq!(seen.keys().cloned().collect::<HashSet<_>>(), want);
    assert_eq!(left_of_gone(), 0);
}
