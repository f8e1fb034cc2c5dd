use super::cache::{PageCache, TRIM_STEP};
use super::sync::mark_dirty;
use super::write::{FIN_BATCH, FIN_WAIT, SYNC_GAP, SYNC_UNIT};
use super::*;
use crate::common::TestPath;
use nsqlab_core::{LoadRun, MessageId, StoreOp};
use std::io::Read;
use std::io::Write;
use std::sync::atomic::Ordering;

/// Resident pages of `f` (mincore on a mapping of it).
#[cfg(target_os = "linux")]
fn resident_pages(f: &File, len: usize) -> usize {
    use std::os::fd::AsRawFd;
    let page = 4096;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a read-only shared mapping of an open file, unmapped before returning;
    // mincore writes one byte per page into `vec`, which has that many.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

/// A finished segment is deleted in the directory it was in, even when that directory
/// was renamed (its topic deleted) and a new one made under the old name meanwhile.
#[test]
fn a_finished_segment_is_deleted_where_it_was_not_by_path() {
    let root = crate::common::test_dir("unlink");
    let (dir, gone) = (root.join("t"), root.join(".deleted-t"));
    fs::create_dir_all(&dir).unwrap();
    fs::write(seg_path(&dir, 0), b"old").unwrap();
    fs::write(seg_path(&dir, 1), b"old").unwrap();
    let dir_fd = Arc::new(File::open(&dir).unwrap());
    fs::rename(&dir, &gone).unwrap();
    fs::create_dir_all(&dir).unwrap();
    fs::write(seg_path(&dir, 0), b"new").unwrap();
    let (tx, rx) = mpsc::channel();
    let thread = spawn_sync_thread(rx, Duration::from_secs(60));
    for num in [0, 1] {
        tx.send(SyncMsg::RemoveSegment(dir_fd.clone(), seg_path(&dir, num)))
            .unwrap();
    }
    tx.send(SyncMsg::Stop).unwrap();
    thread.join().unwrap();
    assert_eq!(fs::read(seg_path(&dir, 0)).unwrap(), b"new");
    assert_eq!(fs::read_dir(&gone).unwrap().count(), 0);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_tail_is_sent_to_the_sync_thread_once_per_sync() {
    let dir = crate::common::test_dir("tail");
    fs::create_dir_all(&dir).unwrap();
    let tail = Tail::new(File::create(dir.join("0.log")).unwrap());
    // Many commits before a sync: one message.
    let (tx, rx) = mpsc::channel();
    for _ in 0..3 {
        mark_dirty(&tx, Some(&tail));
    }
    assert_eq!(rx.try_iter().count(), 1);
    // The sync thread clears the flag as it syncs, so the next write is sent again.
    let (tx, rx) = mpsc::channel();
    let thread = spawn_sync_thread(rx, Duration::from_secs(3600));
    tx.send(SyncMsg::Dirty(tail.clone())).unwrap();
    tx.send(SyncMsg::Now).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tail.queued.load(Ordering::Acquire) {
        assert!(
            std::time::Instant::now() < deadline,
            "the sync never cleared it"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let (probe, seen) = mpsc::channel();
    mark_dirty(&probe, Some(&tail));
    assert_eq!(seen.try_iter().count(), 1);
    tx.send(SyncMsg::Stop).unwrap();
    thread.join().unwrap();
    let _ = fs::remove_dir_all(&dir);
}

/// A store under a fresh directory whose sync thread is replaced by `rx`'s end.
fn store_with_sync_channel(name: &str) -> (Store, mpsc::Receiver<SyncMsg>, TestPath) {
    store_with_segments_of(name, 100 << 20)
}

fn store_with_segments_of(
    name: &str,
    max_bytes_per_file: u64,
) -> (Store, mpsc::Receiver<SyncMsg>, TestPath) {
    let dir = crate::common::test_dir(name);
    let _ = fs::remove_dir_all(&dir);
    let (mut store, _) = open_in(&dir, max_bytes_per_file);
    let (tx, rx) = mpsc::channel();
    // (The store's own sync thread sees its sender go and stops.)
    store.sync = tx;
    if let Some(t) = store.sync_thread.take() {
        t.join().unwrap();
    }
    (store, rx, dir)
}

/// The store under `dir` (opened, and what it recovered), for one partition of one.
fn open_in(dir: &Path, max_bytes_per_file: u64) -> (Store, Recovered) {
    let cfg = StoreConfig {
        data_path: dir.to_path_buf(),
        max_bytes_per_file,
        sync_every: 2500,
        sync_timeout: Duration::from_secs(3600),
        partition: (0, 1),
    };
    let mut broker = Broker::new(nsqlab_core::Options::default(), 1, 0);
    Store::open(cfg, &mut broker, 0).unwrap()
}

fn publish(store: &mut Store, topic: &Name, id: u64, size: usize) {
    publish_body(store, topic, id, vec![b'a'; size]);
}

fn publish_body(store: &mut Store, topic: &Name, id: u64, body: Vec<u8>) {
    store.apply(StoreOp::Publish {
        ticket: 0,
        topic: topic.clone(),
        held: true,
        copies: 1,
        due: None,
        msg: nsqlab_core::Message::new(MessageId(id), 0, body.into()),
    });
}

/// Publish message `id` (`size` bytes) to topic `topic`'s channels, `copies` of them (not
/// held by the topic: as the broker publishes to a topic with channels).
fn publish_to_channels(store: &mut Store, topic: &Name, id: u64, copies: u32, size: usize) {
    store.apply(StoreOp::Publish {
        ticket: 0,
        topic: topic.clone(),
        held: false,
        copies,
        due: None,
        msg: nsqlab_core::Message::new(MessageId(id), 0, vec![b'a'; size].into()),
    });
}

/// The end of a test's store: stop it, then remove its directory.
fn close_and_remove(store: Store, dir: &Path) {
    drop(store);
    let _ = fs::remove_dir_all(dir);
}

/// Create topic `t` (one commit).
fn new_topic(store: &mut Store) -> Name {
    let topic: Name = Arc::from("t");
    store.apply(StoreOp::TopicCreated {
        topic: topic.clone(),
    });
    store.commit().unwrap();
    topic
}

/// Message `id`'s body: its ID, then filler (some long, most short).
fn body_of(id: u64) -> Vec<u8> {
    let len = if id.is_multiple_of(97) {
        20_000
    } else {
        20 + (id * 37 % 300) as usize
    };
    let mut b = id.to_le_bytes().to_vec();
    b.resize(len, b'a' + (id % 26) as u8);
    b
}

/// A data path written before salts opens: its segments are converted, every message and
/// FIN in them kept.
#[test]
fn a_legacy_segment_is_converted_when_the_store_opens() {
    use record::Record;
    let dir = crate::common::test_dir("legacy");
    let _ = fs::remove_dir_all(&dir);
    let tdir = dir.join("nsqlab/t");
    fs::create_dir_all(&tdir).unwrap();
    let meta = r#"{"next_key":1,"channels":{"c":{"key":0,"start":0}}}"#;
    fs::write(tdir.join("meta.json"), meta).unwrap();
    let msg = |id: u64| Record::Pub {
        held: false,
        due: None,
        msg: nsqlab_core::Message::new(MessageId(id), 0, body_of(id).into()),
    };
    let mut b = Vec::new();
    for r in [
        Record::Mark {
            last_id: MessageId(0),
        },
        msg(1),
        msg(2),
        Record::Fin {
            key: 0,
            ids: vec![MessageId(2)],
        },
        msg(3),
    ] {
        record::put_legacy(&mut b, &r);
    }
    let seg = seg_path(&tdir, 0);
    fs::write(&seg, &b).unwrap();
    let (mut store, rec) = open_in(&dir, 1 << 20);
    assert_eq!((rec.messages, rec.corrupt_ranges), (2, 0));
    let now = fs::read(&seg).unwrap();
    assert!(matches!(
        record::scan_without_bodies(&now).layout,
        record::Layout::Salted(_)
    ));
    for id in [1, 3] {
        let body = store.load("t", MessageId(id)).map(|b| b.to_vec());
        assert_eq!(body, Ok(body_of(id)), "message {id}");
    }
    // It is appended to in the new format, and read back so after a restart.
    let topic: Name = Arc::from("t");
    publish(&mut store, &topic, 4, 10);
    store.commit().unwrap();
    drop(store);
    let (store, rec) = open_in(&dir, 1 << 20);
    assert_eq!((rec.messages, rec.corrupt_ranges), (3, 0));
    close_and_remove(store, &dir);
}

/// Past `max_open` topics, the least recently written close their files; writing or
/// reading one opens them again.
#[test]
fn only_so_many_topics_keep_their_files_open() {
    let (mut store, _rx, dir) = store_with_segments_of("fds", 1 << 20);
    store.max_open = 4;
    let names: Vec<Name> = (0..20)
        .map(|i| Arc::from(format!("t{i}").as_str()))
        .collect();
    let open = |store: &Store| store.topics.values().filter(|t| t.tail.is_some()).count();
    for (i, topic) in names.iter().enumerate() {
        store.apply(StoreOp::TopicCreated {
            topic: topic.clone(),
        });
        publish(&mut store, topic, i as u64 + 1, 10);
        store.open_checked -= Duration::from_secs(1);
        store.commit().unwrap();
        assert!(open(&store) <= 4, "{} open after topic {i}", open(&store));
    }
    // The newest stay open; the first is closed, and written and read again.
    assert!(store.topics[&names[19]].tail.is_some());
    assert!(store.topics[&names[0]].tail.is_none());
    publish(&mut store, &names[0], 100, 10);
    store.commit().unwrap();
    assert!(store.topics[&names[0]].tail.is_some());
    for (topic, id) in [(&names[0], 1), (&names[0], 100), (&names[7], 8)] {
        let body = store.load(topic, MessageId(id)).map(|b| b.to_vec());
        assert_eq!(body, Ok(vec![b'a'; 10]), "{topic} {id}");
    }
    close_and_remove(store, &dir);
}

#[test]
fn loads_find_every_message_through_the_sparse_index() {
    let (mut store, _rx, dir) = store_with_segments_of("sparse", 256 << 10);
    let topic = new_topic(&mut store);
    let n = 3000u64;
    for id in 1..=n {
        store.apply(StoreOp::Publish {
            ticket: 0,
            topic: topic.clone(),
            held: true,
            copies: 1,
            // Every seventh deferred (those get an index entry each).
            due: (id % 7 == 0).then_some(1_000 + id),
            msg: nsqlab_core::Message::new(MessageId(id * 3), id, body_of(id).into()),
        });
        if id % 50 == 0 {
            store.commit().unwrap();
        }
    }
    store.commit().unwrap();
    let ts = &store.topics[&topic];
    assert!(ts.segments.len() > 4, "{} segments", ts.segments.len());
    let deferred = n / 7;
    assert!(
        ts.index.entries() < (deferred + n / 10) as usize,
        "{} index entries for {n} messages",
        ts.index.entries()
    );
    let load =
        |store: &mut Store, id: u64| store.load(&topic, MessageId(id * 3)).map(|b| b.to_vec());
    // In order (a consumer's backlog), backwards, and scattered (two consumers, deferred
    // messages coming due).
    for id in (1..=n)
        .chain((1..=n).rev())
        .chain((0..n).map(|k| k * 1237 % n + 1))
    {
        assert_eq!(load(&mut store, id), Ok(body_of(id)), "message {id}");
    }
    // IDs between and beyond the stored ones are not there.
    for id in [1, 3001, 4501, 9001, 9004] {
        assert!(store.load(&topic, MessageId(id)).is_err(), "ID {id}");
    }
    close_and_remove(store, &dir);
}

fn load_run(topic: &Name, ids: std::ops::RangeInclusive<u64>) -> LoadRun {
    LoadRun {
        topic: topic.clone(),
        channel: "c".into(),
        ids: ids.map(MessageId).collect(),
    }
}

/// The next `n` bodies from the loader thread, in the order they came.
fn loaded_bodies(store: &mut Store, n: usize) -> Vec<(u64, Result<Vec<u8>, StoreError>)> {
    let mut got = Vec::new();
    while got.len() < n {
        let batch = store
            .loaded
            .blocking_recv()
            .expect("the loader thread runs");
        got.extend(
            batch
                .into_iter()
                .flat_map(|run| run.bodies)
                .map(|(id, body)| (id.0, body.map(|b| b.to_vec()))),
        );
    }
    got
}

#[test]
fn loads_come_back_from_the_loader_thread_in_order_even_with_their_segment_gone() {
    let (mut store, _rx, dir) = store_with_sync_channel("loader");
    let topic = new_topic(&mut store);
    for id in 1..=60u64 {
        publish_body(&mut store, &topic, id, body_of(id));
    }
    store.commit().unwrap();
    // Asked for in two batches (with one the store never had, answered at once), read
    // in order; the second batch is asked for once the segment's file is unlinked (as
    // the sync thread does once its messages are finished): the loads hold it open.
    let failed = store.request_loads([load_run(&topic, 1..=30)]);
    assert!(failed.is_empty(), "{failed:?}");
    let failed = store.request_loads([load_run(&topic, 999..=999)]);
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].bodies[0].1.as_ref().map_err(|e| e.to_string()),
        Err("message 00000000000003e7 of t is not stored".into())
    );
    fs::remove_file(seg_path(&store.topics[&topic].dir, 0)).unwrap();
    let failed = store.request_loads([load_run(&topic, 31..=60)]);
    assert!(failed.is_empty(), "{failed:?}");
    let want: Vec<_> = (1..=60u64).map(|id| (id, Ok(body_of(id)))).collect();
    assert_eq!(loaded_bodies(&mut store, 60), want);

    // A topic deleted and made again under its name reads its own new log, not what the
    // loader kept of the old one at the same offsets (the start of its first segment,
    // read last).
    assert!(store.request_loads([load_run(&topic, 1..=1)]).is_empty());
    assert_eq!(loaded_bodies(&mut store, 1), vec![(1, Ok(body_of(1)))]);
    store.apply(StoreOp::TopicDeleted {
        topic: topic.clone(),
    });
    store.commit().unwrap();
    let topic = new_topic(&mut store);
    for id in 61..=70u64 {
        publish(&mut store, &topic, id, 100 + id as usize);
    }
    store.commit().unwrap();
    assert!(store.request_loads([load_run(&topic, 61..=70)]).is_empty());
    let want: Vec<_> = (61..=70u64)
        .map(|id| (id, Ok(vec![b'a'; 100 + id as usize])))
        .collect();
    assert_eq!(loaded_bodies(&mut store, 10), want);
    close_and_remove(store, &dir);
}

#[test]
fn a_failed_write_releases_no_copies_and_loads_nothing_of_what_it_lost() {
    let (mut store, _rx, dir) = store_with_sync_channel("failedwrite");
    let topic = new_topic(&mut store);
    let finish = |store: &mut Store, ids: std::ops::RangeInclusive<u64>| {
        for id in ids {
            store.apply(StoreOp::Finished {
                topic: topic.clone(),
                channel: Arc::from("c"),
                ids: vec![MessageId(id)],
            });
        }
    };
    for id in 1..=100 {
        publish(&mut store, &topic, id, 100);
    }
    store.commit().unwrap();
    // The next batch's write fails (the tail is open read-only meanwhile).
    let path = seg_path(&dir.join("nsqlab").join("t"), 0);
    let writable = store
        .topics
        .get_mut(&topic)
        .unwrap()
        .tail
        .replace(Tail::new(File::open(&path).unwrap()));
    for id in 101..=110 {
        publish(&mut store, &topic, id, 100);
    }
    assert!(store.commit().is_err());
    store.topics.get_mut(&topic).unwrap().tail = writable;
    let refs = |store: &Store| store.topics[&topic].segments[0].refs;
    assert_eq!(refs(&store), 100);
    // Their FINs release nothing; the written ones' do.
    finish(&mut store, 101..=110);
    store.commit().unwrap();
    assert_eq!(refs(&store), 100);
    assert!(store.load(&topic, MessageId(105)).is_err());
    assert_eq!(store.load(&topic, MessageId(50)).unwrap().len(), 100);
    // Written after the failure: recorded and found again.
    publish(&mut store, &topic, 111, 100);
    store.commit().unwrap();
    assert_eq!(store.load(&topic, MessageId(111)).unwrap().len(), 100);
    finish(&mut store, 1..=100);
    assert_eq!(refs(&store), 1);
    close_and_remove(store, &dir);
}

/// A commit is all or nothing: when one topic's write fails, what the same commit wrote to
/// other topics, and the pieces a long batch wrote before its last, are taken out of the log
/// again (their publishers hear E_PUB_FAILED, so a restart must not deliver them).
#[test]
fn a_failed_commit_leaves_nothing_of_its_batch_in_any_log() {
    let (mut store, _rx, dir) = store_with_sync_channel("undo");
    let (a, b): (Name, Name) = (Arc::from("a"), Arc::from("b"));
    for t in [&a, &b] {
        store.apply(StoreOp::TopicCreated { topic: t.clone() });
    }
    for id in 1..=10 {
        publish(&mut store, &a, id, 100);
        publish(&mut store, &b, 1000 + id, 100);
    }
    store.commit().unwrap();
    let len = |store: &Store, t: &Name| store.topics[t].segments.back().unwrap().len;
    let before = (len(&store, &a), len(&store, &b));
    // Topic b's next write fails (its tail is open read-only meanwhile); topic a's succeeds,
    // and is long enough to be written in pieces as it is applied.
    let path = seg_path(&dir.join("nsqlab").join("b"), 0);
    let writable = store
        .topics
        .get_mut(&b)
        .unwrap()
        .tail
        .replace(Tail::new(File::open(&path).unwrap()));
    for id in 11..=40 {
        publish(&mut store, &a, id, 100_000);
    }
    publish(&mut store, &b, 1011, 100);
    assert!(store.commit().is_err());
    store.topics.get_mut(&b).unwrap().tail = writable;
    assert_eq!((len(&store, &a), len(&store, &b)), before);
    assert_eq!(store.topics[&a].segments[0].refs, 10);
    assert!(store.load(&a, MessageId(20)).is_err());
    // The next commit works, and lands where the failed one began.
    publish(&mut store, &a, 41, 100);
    store.commit().unwrap();
    assert_eq!(store.load(&a, MessageId(41)).unwrap().len(), 100);
    drop(store);
    let mut broker = Broker::new(nsqlab_core::Options::default(), 1, 0);
    let cfg = StoreConfig {
        data_path: dir.to_path_buf(),
        max_bytes_per_file: 100 << 20,
        sync_every: 2500,
        sync_timeout: Duration::from_secs(3600),
        partition: (0, 1),
    };
    let (store, rec) = Store::open(cfg, &mut broker, 0).unwrap();
    assert_eq!(rec.messages, 21, "10 + 10 before the failure, 1 after");
    assert_eq!(rec.corrupt_ranges, 0);
    close_and_remove(store, &dir);
}

/// The same across a roll: a batch that filled its segment and began the next one, then
/// failed, leaves the old segment as it was and no new one.
#[test]
fn a_failed_commit_takes_back_the_segment_it_began() {
    let (mut store, _rx, dir) = store_with_segments_of("undoroll", 64 << 10);
    let topic = new_topic(&mut store);
    let other: Name = Arc::from("o");
    store.apply(StoreOp::TopicCreated {
        topic: other.clone(),
    });
    for id in 1..=10 {
        publish(&mut store, &topic, id, 1000);
    }
    store.commit().unwrap();
    let segs = |store: &Store| {
        let ts = &store.topics[&topic];
        (ts.segments.len(), ts.segments.back().unwrap().len)
    };
    let before = segs(&store);
    for id in 11..=200 {
        publish(&mut store, &topic, id, 1000);
    }
    assert!(store.topics[&topic].segments.len() > 1, "it rolled");
    let path = seg_path(&dir.join("nsqlab").join("o"), 0);
    store.topics.get_mut(&other).unwrap().tail = Some(Tail::new(File::open(&path).unwrap()));
    publish(&mut store, &other, 1, 10);
    assert!(store.commit().is_err());
    assert_eq!(segs(&store), before);
    let files = fs::read_dir(dir.join("nsqlab").join("t"))
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_str().unwrap().ends_with(".log")
        })
        .count();
    assert_eq!(files, 1);
    close_and_remove(store, &dir);
}

fn sync_requests(rx: &mpsc::Receiver<SyncMsg>) -> usize {
    rx.try_iter().filter(|m| matches!(m, SyncMsg::Now)).count()
}

#[test]
fn a_new_topic_is_synced_by_the_sync_thread_not_on_the_broker() {
    let (mut store, rx, dir) = store_with_sync_channel("newtopic");
    new_topic(&mut store);
    let root = dir.join("nsqlab");
    let meta = root.join("t").join("meta.json");
    // Its metadata is there whole at once (a process crash keeps it)...
    let m: TopicMeta = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
    assert!(!m.paused && m.channels.is_empty());
    assert!(!root.join("t").join("meta.tmp").exists());
    // ...and the sync thread is told to sync it and both directories.
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    for msg in rx.try_iter() {
        match msg {
            SyncMsg::DirtyFile(f) => files.push(f),
            SyncMsg::DirtyDir(d) => dirs.push(d),
            _ => {}
        }
    }
    assert_eq!(files, [meta]);
    dirs.sort();
    assert_eq!(dirs, [root.clone(), root.join("t")]);
    close_and_remove(store, &dir);
}

#[test]
fn a_sync_is_asked_for_every_sync_every_messages_or_that_many_sync_units_at_most_every_gap() {
    let (mut store, rx, dir) = store_with_sync_channel("syncbytes");
    let topic = new_topic(&mut store);
    let _ = rx.try_iter().count();
    // Small messages: a sync per --sync-every (2500) of them, in commits of 100.
    let mut id = 1;
    for _ in 0..50 {
        for _ in 0..100 {
            publish(&mut store, &topic, id, 10);
            id += 1;
        }
        store.commit().unwrap();
    }
    assert_eq!(sync_requests(&rx), 2);
    // Large ones: a sync per 2500 x SYNC_UNIT bytes written, long before 2500 of them...
    let size = 16 << 10;
    let per_sync = (2500 * SYNC_UNIT).div_ceil(size as u64 + 64);
    let mut write = |store: &mut Store, n: u64| {
        for _ in 0..n {
            publish(store, &topic, id, size);
            id += 1;
            store.commit().unwrap();
        }
    };
    for _ in 0..4 {
        // (The last one asked for long enough ago.)
        let before = std::time::Instant::now().checked_sub(2 * SYNC_GAP);
        store.last_sync_ask = before.expect("an instant before now");
        write(&mut store, per_sync);
    }
    let n = sync_requests(&rx);
    assert!(
        (3..=4).contains(&n),
        "{n} sync requests for 4 x 2500 x SYNC_UNIT bytes"
    );
    // ...but not within SYNC_GAP of the last (as if that had been asked for just now).
    store.last_sync_ask = std::time::Instant::now() + Duration::from_secs(3600);
    write(&mut store, 4 * per_sync);
    assert_eq!(sync_requests(&rx), 0);
    close_and_remove(store, &dir);
}

#[test]
#[cfg(target_os = "linux")]
fn full_segments_beyond_the_budget_leave_the_page_cache_oldest_first_a_step_at_a_time() {
    let dir = crate::common::test_dir("pagecache");
    fs::create_dir_all(&dir).unwrap();
    let len = 2 * TRIM_STEP as usize;
    let pages = len / 4096;
    let mut cache = PageCache {
        keep: 2 * len as u64,
        lag: 1 << 40,
        ..PageCache::default()
    };
    let mut files = Vec::new();
    for i in 0..4u8 {
        let path = dir.join(format!("{i}.log"));
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![i; len]).unwrap();
        f.sync_data().unwrap();
        let f = OpenOptions::new().read(true).open(&path).unwrap();
        // Read it so that its pages are cached for certain.
        let mut b = Vec::new();
        (&f).read_to_end(&mut b).unwrap();
        assert_eq!(resident_pages(&f, len), pages);
        cache.full(path.clone(), len as u64);
        files.push((path, f));
    }
    let resident = |files: &Vec<(PathBuf, File)>| -> Vec<usize> {
        files.iter().map(|(_, f)| resident_pages(f, len)).collect()
    };
    assert_eq!(cache.bytes, 4 * len as u64);
    // One step: the first half of the oldest segment.
    cache.trim();
    assert_eq!(cache.bytes, 3 * len as u64 + len as u64 / 2);
    assert_eq!(resident(&files), [pages / 2, pages, pages, pages]);
    // Three more finish the two oldest; a fourth drops nothing (the two newest stay).
    for _ in 0..4 {
        cache.trim();
    }
    assert_eq!(cache.bytes, 2 * len as u64);
    assert_eq!(resident(&files), [0, 0, pages, pages]);
    // Dropped pages are read back from the disk unchanged.
    for (i, (path, _)) in files.iter().enumerate() {
        assert_eq!(fs::read(path).unwrap(), vec![i as u8; len]);
    }

    // A segment deleted meanwhile is passed over.
    let far_behind = || PageCache {
        keep: 0,
        lag: 0,
        ..PageCache::default()
    };
    let mut cache = far_behind();
    cache.full(dir.join("deleted.log"), len as u64);
    cache.trim();
    assert_eq!((cache.bytes, cache.full.len()), (0, 0));
    // Far behind (past `keep + lag`): an eighth of the excess per trim (here 4 MiB, the
    // whole segment), not a step (2 MiB).
    let mut cache = far_behind();
    for _ in 0..8 {
        cache.full(files[3].0.clone(), len as u64);
    }
    cache.trim();
    assert_eq!((cache.bytes, cache.full.len()), (7 * len as u64, 7));
    assert_eq!(resident_pages(&files[3].1, len), 0);
    let _ = fs::remove_dir_all(&dir);
}

/// A message's copies count on its own segment, found directly when the segments are
/// consecutive and by search past a gap (a file lost by hand); one in a lost segment counts
/// nowhere.
#[test]
fn a_copy_counts_on_its_own_segment_even_past_a_gap() {
    let (mut store, _rx, dir) = store_with_segments_of("refs-gap", 1000);
    let topic = new_topic(&mut store);
    for id in 1..=20 {
        publish(&mut store, &topic, id, 300);
    }
    store.commit().unwrap();
    let ts = store.topics.get_mut(&topic).unwrap();
    assert!(ts.segments.len() >= 5, "{} segments", ts.segments.len());
    let refs = |ts: &TopicStore| -> Vec<(u64, i64)> {
        ts.segments.iter().map(|s| (s.num, s.refs)).collect()
    };
    let seg_of = |ts: &mut TopicStore, id: u64| ts.index.segment_of(id).unwrap() as u64;
    // Consecutive: each message's segment, first and last included.
    for id in [1, 7, 20] {
        let before = refs(ts);
        let seg = seg_of(ts, id);
        write::add_ref(ts, MessageId(id), -1);
        let after = refs(ts);
        for ((num, r0), (_, r1)) in before.iter().zip(&after) {
            assert_eq!(
                *r1,
                r0 - (*num == seg) as i64,
                "message {id}, segment {num}"
            );
        }
    }
    // A gap: segment 1 lost. Later segments are found by number, not by place.
    let lost = ts.segments.remove(1).unwrap().num;
    let later = (1..=20).find(|&id| seg_of(ts, id) > lost + 1).unwrap();
    let in_lost = (1..=20).find(|&id| seg_of(ts, id) == lost).unwrap();
    let before = refs(ts);
    let seg = seg_of(ts, later);
    write::add_ref(ts, MessageId(later), 2);
    write::add_ref(ts, MessageId(in_lost), 5);
    let after = refs(ts);
    for ((num, r0), (_, r1)) in before.iter().zip(&after) {
        assert_eq!(*r1, r0 + 2 * (*num == seg) as i64, "segment {num}");
    }
    close_and_remove(store, &dir);
}

/// FINs alone wait to be written: until there are FIN_BATCH bytes of them, a commit after
/// FIN_WAIT, anything else to write, or the store closing; and what was written is finished
/// when the store opens again.
#[test]
fn fins_alone_are_written_in_batches_or_when_due() {
    let (mut store, _rx, dir) = store_with_sync_channel("fin-batch");
    let topic = new_topic(&mut store);
    store.apply(StoreOp::ChannelCreated {
        topic: topic.clone(),
        channel: Arc::from("c"),
        start: MessageId(0),
    });
    let n = 2 * FIN_BATCH as u64 / 25;
    let publish = |store: &mut Store, id: u64| publish_to_channels(store, &topic, id, 1, 10);
    for id in 1..=n {
        publish(&mut store, id);
    }
    store.commit().unwrap();
    let fin = |store: &mut Store, id: u64| {
        store.apply(StoreOp::Finished {
            topic: topic.clone(),
            channel: Arc::from("c"),
            ids: vec![MessageId(id)],
        })
    };
    let len = |store: &Store| store.topics[&topic].segments.back().unwrap().len;
    let written = len(&store);
    assert_eq!(store.fins_due(), None);
    // A few FINs: not written, and due FIN_WAIT from now.
    let before = std::time::Instant::now();
    for id in 1..=3 {
        fin(&mut store, id);
    }
    store.commit().unwrap();
    assert_eq!(len(&store), written);
    let due = store.fins_due().expect("FINs wait");
    assert!(due >= before + FIN_WAIT && due <= std::time::Instant::now() + FIN_WAIT);
    // Still waiting at the next commit; written by the first commit once due.
    fin(&mut store, 4);
    store.commit().unwrap();
    assert_eq!(len(&store), written);
    std::thread::sleep(FIN_WAIT);
    store.commit().unwrap();
    assert!(len(&store) > written);
    assert_eq!(store.fins_due(), None);
    // FIN_BATCH bytes of them are written at once.
    let written = len(&store);
    let mut id = 5;
    while store.topics[&topic].pending.len() < FIN_BATCH {
        fin(&mut store, id);
        id += 1;
    }
    store.commit().unwrap();
    assert_eq!(len(&store), written + FIN_BATCH.next_multiple_of(25) as u64);
    // With anything else, at once.
    fin(&mut store, id);
    publish(&mut store, n + 1);
    store.commit().unwrap();
    assert_eq!(store.fins_due(), None);
    assert!(store.topics[&topic].pending.is_empty());
    // Closing writes the waiting ones: every FIN'd message is finished on the next start.
    for id in id + 1..=n {
        fin(&mut store, id);
    }
    store.commit().unwrap();
    assert!(store.fins_due().is_some());
    store.close();
    let (store, recovered) = open_in(&dir, 100 << 20);
    assert_eq!(recovered.messages, 1, "only message {} is owed", n + 1);
    close_and_remove(store, &dir);
}

/// `apply_all` (the driver's way: a run of one channel's FINs looked up once) records and
/// releases exactly what applying the ops one at a time does, across runs of other
/// channels, unknown channels and a topic the store does not have.
#[test]
fn a_run_of_fins_applied_together_does_what_one_at_a_time_does() {
    let state = |together: bool| {
        let name = format!("fin-run-{together}");
        let (mut store, _rx, dir) = store_with_segments_of(&name, 2000);
        let topic = new_topic(&mut store);
        let (c, d, x): (Name, Name, Name) = (Arc::from("c"), Arc::from("d"), Arc::from("x"));
        for ch in [&c, &d] {
            store.apply(StoreOp::ChannelCreated {
                topic: topic.clone(),
                channel: ch.clone(),
                start: MessageId(0),
            });
        }
        for id in 1..=30 {
            publish_to_channels(&mut store, &topic, id, 2, 200);
        }
        store.commit().unwrap();
        let fin = |topic: &Name, channel: &Name, id: u64| StoreOp::Finished {
            topic: topic.clone(),
            channel: channel.clone(),
            ids: vec![MessageId(id)],
        };
        let gone: Name = Arc::from("gone");
        let mut ops: Vec<StoreOp> = (1..=12).map(|id| fin(&topic, &c, id)).collect();
        ops.extend((1..=5).map(|id| fin(&topic, &d, id)));
        // The same names in other allocations, a channel the store does not know, and a
        // topic it does not have.
        ops.push(fin(&Arc::from("t"), &Arc::from("c"), 13));
        ops.push(fin(&topic, &x, 14));
        ops.push(fin(&gone, &c, 15));
        ops.extend((16..=30).map(|id| fin(&topic, &c, id)));
        if together {
            assert!(store.apply_all(ops));
            assert!(!store.apply_all(Vec::new()));
        } else {
            for op in ops {
                store.apply(op);
            }
        }
        let ts = &store.topics[&topic];
        let refs: Vec<(u64, i64)> = ts.segments.iter().map(|s| (s.num, s.refs)).collect();
        let got = (
            ts.pending.len(),
            ts.pending_fins,
            refs,
            store.failed.is_some(),
        );
        store.failed = None;
        store.close();
        // On the next start: c owes 14 (FIN'd on a channel the store does not know) and 15
        // (on a topic it does not have), d owes 6..=30: 27 copies.
        let (store, recovered) = open_in(&dir, 2000);
        close_and_remove(store, &dir);
        (got, recovered.messages)
    };
    let (one, together) = (state(false), state(true));
    assert_eq!(one, together);
    let ((pending, fins, refs, failed), owed) = one;
    assert_eq!(pending, fins, "only FINs are waiting");
    assert_eq!(fins, 33 * 25, "a FIN record per known channel's FIN");
    assert!(failed, "the topic the store does not have is an error");
    assert!(refs.len() > 2, "{refs:?}");
    assert_eq!(owed, 27);
}

/// A consumer's FINs of one commit are one FIN record (8 bytes an ID), at most
/// `FINS_PER_RECORD` IDs each, and a restart honours every ID in each record: only the
/// messages not FIN'd are owed.
#[test]
fn a_batch_of_fins_is_one_record_per_so_many_ids_and_a_restart_honours_each() {
    let (mut store, _rx, dir) = store_with_sync_channel("fin-records");
    let topic = new_topic(&mut store);
    let c: Name = Arc::from("c");
    store.apply(StoreOp::ChannelCreated {
        topic: topic.clone(),
        channel: c.clone(),
        start: MessageId(0),
    });
    let per = record::FINS_PER_RECORD as u64;
    let n = per + 100;
    for id in 1..=n {
        publish_to_channels(&mut store, &topic, id, 1, 10);
    }
    store.commit().unwrap();
    // Every ID but 7, 8 and the last 10, out of order.
    let mut ids: Vec<MessageId> = (1..=n - 10)
        .filter(|id| ![7, 8].contains(id))
        .map(MessageId)
        .collect();
    ids.swap(0, 100);
    let fins = ids.len();
    store.apply(StoreOp::Finished {
        topic: topic.clone(),
        channel: c.clone(),
        ids,
    });
    let pending = store.topics[&topic].pending.len();
    assert_eq!(
        pending,
        2 * (record::HEADER + 1 + 4) + 8 * fins,
        "two FIN records for {fins} IDs"
    );
    store.commit().unwrap();
    store.close();
    let (store, recovered) = open_in(&dir, 100 << 20);
    assert_eq!(recovered.messages, 12, "7, 8 and the last 10 are owed");
    close_and_remove(store, &dir);
}

/// One bad sector over a segment's first bytes takes both copies of its header (they lie
/// side by side): its records are still read, with the salt its topic's metadata keeps (the
/// segment is not set aside whole).
#[test]
fn a_segment_whose_headers_are_both_gone_is_read_with_the_salt_its_topic_keeps() {
    let dir = crate::common::test_dir("headless");
    let (mut store, _) = open_in(&dir, 100 << 20);
    let topic = new_topic(&mut store);
    for id in 1..=50 {
        publish(&mut store, &topic, id, 200);
    }
    store.commit().unwrap();
    drop(store);
    let path = seg_path(&dir.join("nsqlab").join("t"), 0);
    let mut bytes = fs::read(&path).unwrap();
    // A 512-byte sector's worth: both header copies and the first records.
    for b in &mut bytes[..512] {
        *b = 0xA5;
    }
    fs::write(&path, &bytes).unwrap();
    let (mut store, rec) = open_in(&dir, 100 << 20);
    assert!(rec.corrupt_ranges > 0);
    // The first records went with the sector; every one after it is back, and loads.
    assert!(rec.messages >= 48, "{} of 50 recovered", rec.messages);
    assert_eq!(store.load(&topic, MessageId(50)).unwrap().len(), 200);
    drop(store);
    let meta = dir.join("nsqlab").join("t").join("meta.json");
    let m: serde_json::Value = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
    assert!(m["secret"].is_u64(), "{m}");
}
