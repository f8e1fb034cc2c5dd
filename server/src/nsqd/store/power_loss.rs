//! Power loss, simulated: the store's files as a power cut could leave them, at thousands
//! of seeded cut points, opened again and checked.
//!
//! `kill -9` keeps the page cache, so it never shows a missing or misordered sync. Here every
//! sync the store makes is heard as it completes (`sys::synced`) and what it made durable is
//! kept: a file's bytes (by inode) at its last `fdatasync`, a directory's names at its last
//! `fsync`. A cut then makes, from the live files, a disk image a power loss could leave:
//!
//! - a file holds what its last sync made durable, then (when it only grew since) any
//!   prefix of what was written after, its last piece possibly torn (garbage where the write
//!   did not finish); a file cut back or rewritten since holds either its synced bytes or
//!   its current ones;
//! - a directory keeps each name made, removed or renamed since its last sync, or not, each
//!   independently (a stronger adversary than ext4, which orders its metadata).
//!
//! The store opened on the image must start, and what it owes must be what was promised:
//! - every message acknowledged (its commit returned `Ok`) before the last sync, and not
//!   finished since, is owed (nothing acknowledged and synced is lost);
//! - no message finished (its FIN written) before the last sync is owed again (the bound on
//!   what comes back: at-least-once allows only FINs after the last sync);
//! - nothing owed was never acknowledged (no phantom).
//!
//! The sync thread runs inline (its requests go to the test), so a seed replays exactly.

use super::sync::SyncThread;
use super::sys::synced::{self, Synced};
use super::*;
use nsqlab_core::{Message, MessageId, StoreOp};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;

/// A file, whatever its name: its inode and when it was made (an inode number is used
/// again once its file is gone).
type FileId = (u64, Option<std::time::SystemTime>);

fn file_id(m: &fs::Metadata) -> FileId {
    (m.ino(), m.created().ok())
}

/// What syncs made durable, under one root.
#[derive(Default)]
struct Durable {
    /// A file's bytes at its last sync.
    files: HashMap<FileId, Vec<u8>>,
    /// A directory's names (and their files) at its last sync.
    dirs: HashMap<PathBuf, BTreeMap<OsString, FileId>>,
}

static DURABLE: Mutex<Option<(PathBuf, Durable)>> = Mutex::new(None);

fn durable<T>(f: impl FnOnce(&mut Durable) -> T) -> T {
    let mut d = DURABLE.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut d.as_mut().expect("listening").1)
}

/// Keep what each sync under `root` makes durable (replacing what was kept before).
fn listen(root: &Path) {
    *DURABLE.lock().unwrap_or_else(|e| e.into_inner()) = Some((root.into(), Durable::default()));
    synced::listen(Some(Box::new(|s: Synced<'_>| {
        let mut g = DURABLE.lock().unwrap_or_else(|e| e.into_inner());
        let Some((root, d)) = g.as_mut() else { return };
        match s {
            Synced::File(f) => {
                use std::os::fd::AsRawFd;
                let proc = format!("/proc/self/fd/{}", f.as_raw_fd());
                let Ok(path) = fs::read_link(&proc) else {
                    return;
                };
                if !path.starts_with(&*root) {
                    return; // another test's
                }
                let (Ok(m), Ok(bytes)) = (f.metadata(), fs::read(&proc)) else {
                    return;
                };
                d.files.insert(file_id(&m), bytes);
            }
            Synced::Dir(dir) => {
                if !dir.starts_with(&*root) {
                    return;
                }
                d.dirs.insert(dir.to_path_buf(), names(dir));
            }
        }
    })));
}

/// A directory's names now, with their files.
fn names(dir: &Path) -> BTreeMap<OsString, FileId> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| Some((e.file_name(), file_id(&e.metadata().ok()?))))
                .collect()
        })
        .unwrap_or_default()
}

/// Make in `img` what a power cut could leave of the live directory `live` (see the module
/// docs), choosing with `rng`.
fn image(live: &Path, img: &Path, rng: &mut Xoshiro256PlusPlus) {
    fs::create_dir_all(img).unwrap();
    let synced = durable(|d| d.dirs.get(live).cloned());
    let now = names(live);
    let mut all: BTreeSet<&OsString> = now.keys().collect();
    if let Some(s) = &synced {
        all.extend(s.keys());
    }
    for name in all {
        let old = synced.as_ref().and_then(|s| s.get(name)).copied();
        let new = now.get(name).copied();
        let coin = |rng: &mut Xoshiro256PlusPlus| rng.next_u32() & 1 == 0;
        // A directory never synced keeps none of its names for sure; each change since its
        // last sync is kept or not.
        let pick = match (old, new) {
            (Some(o), Some(n)) if o == n => Some(n),
            (Some(o), Some(n)) => Some(if coin(rng) { o } else { n }),
            (Some(o), None) => coin(rng).then_some(o),
            (None, Some(n)) => coin(rng).then_some(n),
            (None, None) => None,
        };
        let Some(id) = pick else { continue };
        let path = live.join(name);
        let is_current = new == Some(id);
        if is_current && path.is_dir() {
            image(&path, &img.join(name), rng);
            continue;
        }
        let synced_bytes = durable(|d| d.files.get(&id).cloned()).unwrap_or_default();
        let current = match is_current {
            true => fs::read(&path).unwrap_or_default(),
            // Replaced or removed since: what it holds now is not known, only what was synced.
            false => synced_bytes.clone(),
        };
        let bytes = if current.starts_with(&synced_bytes) {
            // Grown since its sync: any prefix of the rest, the last piece maybe torn.
            let extra = current.len() - synced_bytes.len();
            let keep = synced_bytes.len() + (rng.next_u64() as usize % (extra + 1));
            let mut b = current[..keep].to_vec();
            if keep > synced_bytes.len() && coin(rng) {
                let torn = 1 + rng.next_u64() as usize % (keep - synced_bytes.len()).min(512);
                let at = keep - torn;
                for x in &mut b[at..] {
                    *x = rng.next_u32() as u8;
                }
            }
            b
        } else if coin(rng) {
            synced_bytes
        } else {
            current
        };
        fs::write(img.join(name), bytes).unwrap();
    }
}

/// Topic `t`'s messages the store opened from `dir` owes: its channel's and those it holds.
fn owed_after_restart(dir: &Path, topics: &[Name]) -> Result<BTreeSet<(String, u64)>, String> {
    let cfg = config(dir);
    let mut broker = Broker::new(
        nsqlab_core::Options {
            durable: true,
            ..Default::default()
        },
        1,
        0,
    );
    let (store, _) = Store::open(cfg, &mut broker, 0).map_err(|e| e.to_string())?;
    let mut owed = BTreeSet::new();
    for t in topics {
        if let Some(c) = broker.channel(t, "c") {
            owed.extend(c.message_ids().iter().map(|id| (t.to_string(), id.0)));
        }
        if let Some(topic) = broker.topic(t) {
            owed.extend(topic.queue.ids().map(|id| (t.to_string(), id.0)));
        }
    }
    drop(store);
    Ok(owed)
}

/// Small segments: rolls, and deletions of finished ones, come often.
const SEGMENT: u64 = 6 << 10;

/// The store's settings here: under `dir`, small segments, syncs only when the test says.
fn config(dir: &Path) -> StoreConfig {
    StoreConfig {
        data_path: dir.to_path_buf(),
        max_bytes_per_file: SEGMENT,
        sync_every: 2500,
        sync_timeout: Duration::from_secs(3600),
        partition: (0, 1),
    }
}

/// What the test promised itself, by (topic, ID).
#[derive(Default, Clone)]
struct Promised {
    /// Acknowledged: their commit returned `Ok`.
    acked: BTreeSet<(String, u64)>,
    /// Finished (their FIN written).
    finished: BTreeSet<(String, u64)>,
}

/// One seed: a workload of publishes, FINs, commits and syncs on two topics, with a power cut
/// after some steps (each checked on several images). Returns how many cuts it checked.
fn run(seed: u64) -> usize {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let dir = crate::common::test_dir("power");
    listen(&dir);
    let (mut store, _) = {
        let cfg = config(&dir);
        let mut broker = Broker::new(nsqlab_core::Options::default(), 1, 0);
        Store::open(cfg, &mut broker, 0).unwrap()
    };
    // The sync thread's requests come here; the test runs them (at its sync steps).
    let (tx, rx) = mpsc::channel();
    store.sync = tx;
    if let Some(t) = store.sync_thread.take() {
        t.join().unwrap();
    }
    let mut syncer = SyncThread::default();
    let topics: Vec<Name> = vec![Arc::from("a"), Arc::from("b")];
    for t in &topics {
        store.apply(StoreOp::TopicCreated { topic: t.clone() });
        store.apply(StoreOp::ChannelCreated {
            topic: t.clone(),
            channel: Arc::from("c"),
            start: MessageId(1),
        });
    }
    store.commit_all().unwrap();
    let mut now = Promised::default();
    // As of the last sync that completed.
    let mut at_sync = Promised::default();
    let mut next_id = 1u64;
    let mut cuts = 0;
    for step in 0..400 {
        match rng.next_u32() % 10 {
            0..=4 => {
                // A publisher's batch, to one topic.
                let t = &topics[rng.next_u32() as usize % topics.len()];
                let n = 1 + rng.next_u32() % 6;
                let mut ids = Vec::new();
                for _ in 0..n {
                    let len = 20 + rng.next_u32() as usize % 700;
                    store.apply(StoreOp::Publish {
                        ticket: 0,
                        topic: t.clone(),
                        held: false,
                        copies: 1,
                        due: None,
                        msg: Message::new(MessageId(next_id), 0, vec![b'm'; len].into()),
                    });
                    ids.push((t.to_string(), next_id));
                    next_id += 1;
                }
                store.commit().expect("the disk works");
                now.acked.extend(ids);
            }
            5..=7 => {
                // A consumer finishes some of what is owed.
                let owed: Vec<(String, u64)> =
                    now.acked.difference(&now.finished).cloned().collect();
                for m in owed.iter().filter(|_| rng.next_u32() % 3 == 0) {
                    store.apply(StoreOp::Finished {
                        topic: Arc::from(m.0.as_str()),
                        channel: Arc::from("c"),
                        ids: vec![MessageId(m.1)],
                    });
                    now.finished.insert(m.clone());
                }
                store.commit_all().expect("the disk works");
            }
            _ => {
                // The sync thread's turn: what it was asked for, then a sync.
                for msg in rx.try_iter() {
                    syncer.handle(msg);
                }
                syncer.sync();
                at_sync = now.clone();
            }
        }
        // What the store asked of the sync thread meanwhile is taken in (deleting finished
        // segments is done at once, as that thread does); the syncs wait for a sync step.
        for msg in rx.try_iter() {
            syncer.handle(msg);
        }
        if rng.next_u32() % 4 != 0 {
            continue;
        }
        cuts += 1;
        for k in 0..2 {
            let img = crate::common::test_dir("power-image");
            image(&dir, &img, &mut rng);
            let owed = owed_after_restart(&img, &topics)
                .unwrap_or_else(|e| panic!("seed {seed} step {step} image {k}: no start: {e}"));
            let phantom: Vec<_> = owed.difference(&now.acked).collect();
            assert!(
                phantom.is_empty(),
                "seed {seed} step {step} image {k}: never acknowledged: {phantom:?}"
            );
            let lost: Vec<_> = at_sync
                .acked
                .iter()
                .filter(|m| !now.finished.contains(*m) && !owed.contains(*m))
                .collect();
            assert!(
                lost.is_empty(),
                "seed {seed} step {step} image {k}: acknowledged before the last sync, lost: {lost:?}"
            );
            let back: Vec<_> = at_sync.finished.intersection(&owed).collect();
            assert!(
                back.is_empty(),
                "seed {seed} step {step} image {k}: finished before the last sync, owed again: {back:?}"
            );
        }
    }
    synced::listen(None);
    drop(store);
    cuts
}

/// Thousands of cut points over seeded workloads (`POWER_SEEDS` seeds, 40 by default).
#[test]
fn a_power_cut_at_any_point_loses_nothing_synced_and_brings_back_no_finished_message() {
    let seeds: u64 = std::env::var("POWER_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cuts: usize = (0..seeds).map(run).sum();
    assert!(cuts > 1000 * seeds as usize / 40, "only {cuts} cut points");
}

/// The sync listener is one for the process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
