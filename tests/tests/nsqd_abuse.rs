//! Clients that misbehave must not hurt the others: a slowloris HTTP client, a consumer that
//! never reads, huge size prefixes.

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_tests::Nsqd;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Topic `t` with channel `stuck`, made over HTTP.
fn make_stuck_channel(d: &Nsqd) {
    for path in [
        "/topic/create?topic=t",
        "/channel/create?topic=t&channel=stuck",
    ] {
        assert_eq!(d.http("POST", path, b"").status, 200, "{path}");
    }
}

#[test]
fn slowloris_http_is_cut_off_and_others_are_served() {
    let d = Nsqd::start(&["-http-header-timeout=1s"]);
    let mut slow = TcpStream::connect(d.http).unwrap();
    slow.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let start = Instant::now();
    let mut closed = false;
    while start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        // Others are served meanwhile.
        assert_eq!(d.http("GET", "/ping", b"").status, 200);
        if slow.write_all(b"X-Dribble: 1\r\n").is_err() {
            closed = true;
            break;
        }
    }
    assert!(closed, "the slowloris connection was never closed");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
}

/// nsqd keeps an idle keep-alive connection as long as the client does, and pooled clients
/// (Go's keeps them 90 s) reuse one much later: the header timeout must time a request's
/// headers only, not the wait between requests.
#[test]
fn an_idle_keep_alive_connection_stays_open_past_the_header_timeout() {
    let d = Nsqd::start(&["-http-header-timeout=1s"]);
    let mut c = TcpStream::connect(d.http).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let ask = |c: &mut TcpStream| -> String {
        c.write_all(b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
            .unwrap();
        let mut buf = [0u8; 512];
        let n = c.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert!(ask(&mut c).starts_with("HTTP/1.1 200 OK"));
    std::thread::sleep(Duration::from_millis(2500));
    let again = ask(&mut c);
    assert!(
        again.starts_with("HTTP/1.1 200 OK"),
        "the idle connection was closed: {again:?}"
    );
}

#[test]
fn a_consumer_that_never_reads_does_not_slow_others() {
    let d = Nsqd::start(&[]);
    // The channel exists before anything is published: the stuck consumer's SUB is never
    // answered (it does not read), so it could come after the first MPUB, and a channel made
    // after a publish does not get that message (as in nsqd).
    make_stuck_channel(&d);
    // A consumer on channel "stuck" takes up to 2500 messages and never reads its socket.
    let mut stuck = d.client();
    stuck.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "stuck".into(),
    });
    stuck.cmd(&Command::Rdy(2500));
    // A healthy consumer on channel "ok".
    let mut ok = d.client();
    ok.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "ok".into(),
    });
    assert_eq!(ok.next_text(), "R:OK");
    ok.cmd(&Command::Rdy(2500));
    let mut p = d.client();
    let body = vec![b'x'; 4096];
    let n = 20_000;
    let start = Instant::now();
    for chunk in 0..(n / 100) {
        let bodies = (0..100).map(|_| body.clone().into()).collect();
        p.cmd(&Command::Mpub {
            topic: "t".into(),
            bodies,
        });
        assert_eq!(p.next_text(), "R:OK", "chunk {chunk}");
    }
    let mut got = 0;
    let mut fins = Vec::new();
    while got < n {
        match ok
            .frame_within(Duration::from_secs(10))
            .expect("the healthy consumer keeps receiving")
        {
            Frame::Message(m) => {
                got += 1;
                fins.extend_from_slice(&Command::Fin(m.id.to_hex()).to_bytes());
                if fins.len() > 500 * 21 {
                    ok.send(&fins);
                    fins.clear();
                }
            }
            Frame::Response(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    // The stuck consumer holds at most its RDY in flight.
    let stats = d
        .http("GET", "/stats?format=json&channel=stuck", b"")
        .json();
    let ch = &stats["topics"][0]["channels"][0];
    assert!(ch["in_flight_count"].as_u64().unwrap() <= 2500, "{ch}");
    assert_eq!(
        ch["depth"].as_u64().unwrap() + ch["in_flight_count"].as_u64().unwrap(),
        n as u64
    );
    drop(stuck);
}

#[test]
fn huge_size_prefixes_are_refused_at_once() {
    let d = Nsqd::start(&[]);
    for head in [
        &b"PUB t\n"[..],
        b"MPUB t\n",
        b"DPUB t 1\n",
        b"IDENTIFY\n",
        b"AUTH\n",
    ] {
        let mut c = d.client();
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
        c.send(&bytes);
        let start = Instant::now();
        let text = c.next_text();
        assert!(text.starts_with("E:E_BAD_"), "{text}");
        assert!(c.closed_within(Duration::from_secs(2)));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "refused without waiting for 2 GiB"
        );
    }
}

/// nsqd's write deadline: a write to a client that takes longer than its heartbeat interval
/// fails and the connection is closed, so a consumer that stopped reading does not hold its
/// connection, and what was queued for it, for ever. (The broker forgets it already when it
/// sends nothing for two intervals; the connection must go too.)
#[test]
fn a_consumer_that_stops_reading_is_disconnected_after_its_heartbeat_interval() {
    let d = Nsqd::start(&[]);
    make_stuck_channel(&d);
    let mut stuck = d.client();
    stuck.cmd(&Command::Identify(
        br#"{"heartbeat_interval":1000}"#.to_vec(),
    ));
    stuck.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "stuck".into(),
    });
    stuck.cmd(&Command::Rdy(2500));
    // Far more than the socket buffers hold (2500 in flight of 16 KiB: 40 MB).
    let mut p = d.client();
    let body = vec![b'x'; 16 * 1024];
    for chunk in 0..30 {
        let bodies = (0..100).map(|_| body.clone().into()).collect();
        p.cmd(&Command::Mpub {
            topic: "t".into(),
            bodies,
        });
        assert_eq!(p.next_text(), "R:OK", "chunk {chunk}");
    }
    // The stuck consumer keeps writing (NOPs, which the server cannot read while its write
    // waits) and never reads. Once the server gives up and closes with those NOPs unread, the
    // close is a reset, and a write here fails.
    let start = Instant::now();
    let mut closed = None;
    while start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        if stuck.stream.write_all(b"NOP\n").is_err() {
            closed = Some(start.elapsed());
            break;
        }
    }
    let closed = closed.expect("the connection of a consumer that never reads stays open");
    assert!(closed < Duration::from_secs(5), "closed after {closed:?}");
    // The server goes on: the producer still publishes.
    p.cmd(&Command::Pub {
        topic: "t".into(),
        body: b"after".to_vec().into(),
    });
    assert_eq!(p.next_text(), "R:OK");
}

/// The soft and hard limits on open files of process `pid`.
fn open_file_limits(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let v: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (v[0], v[1])
}

/// Go raises the soft limit on open files to the hard limit when a program starts, so nsqd
/// runs with it; nsqlab does the same.
#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit() {
    let d = Nsqd::start_wrapped(None, &[], &["prlimit", "--nofile=256:"]);
    let (soft, hard) = open_file_limits(d.pid());
    assert!(hard > 256, "the hard limit here ({hard}) shows nothing");
    assert_eq!(soft, hard);
}

/// CPU time (user + system) of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Out of file descriptors, `accept` fails until one is free. nsqlab retried at once: a core
/// and a half spent and 48 MB/s of log. It now waits (5 ms, doubling to 1 s), logs once a
/// second, and serves again once descriptors are free.
#[test]
fn out_of_descriptors_accept_backs_off_quietly_and_recovers() {
    let d = Nsqd::start(&[]);
    let pid = d.pid();
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let limit = |soft: usize| {
        let ok = std::process::Command::new("prlimit")
            .arg(format!("--pid={pid}"))
            .arg(format!("--nofile={soft}:"))
            .status()
            .expect("prlimit (util-linux)")
            .success();
        assert!(ok);
    };
    limit(open + 4);
    // The kernel completes the connections; the server cannot take them all.
    let conns: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(d.tcp).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    while d.log.try_recv().is_ok() {}
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(pid) - before;
    let lines = std::iter::from_fn(|| d.log.try_recv().ok())
        .filter(|l| l.contains("temporary Accept() failure"))
        .count();
    assert!(
        spent < 30,
        "{spent} ticks of CPU in 2 s while out of descriptors"
    );
    assert!(lines <= 4, "{lines} log lines in 2 s");
    drop(conns);
    limit(open + 200);
    let mut c = d.client();
    c.cmd(&Command::Pub {
        topic: "t".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(c.next_text(), "R:OK");
}

/// Resident memory of process `pid`, in MiB.
fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    kb / 1024
}

/// Connections that come and go leave their buffers in the allocator; that memory goes back
/// to the system by itself (it took `POST /debug/freememory`: 20 rounds of 3 000
/// connections left 330 MB resident). Two worker threads, as a memory-only server on two
/// cores runs: each has its own allocator arena, and the churn takes the most memory.
///
/// Each connection leaves 32 KiB of a PUB's body unfinished, which the server must keep, so
/// a round holds about 94 MiB whatever the machine's allocator habits; the test waits until
/// the server has read it (a busy machine reads late, never less).
#[test]
fn memory_returns_to_the_system_after_connection_churn() {
    const CONNS: usize = 3000;
    const HELD: usize = 32 << 10;
    let d = Nsqd::start(&["--worker-threads=2"]);
    let pid = d.pid();
    let before = rss_mib(pid);
    let mut peak = before;
    let mut partial = b"  V2PUB churn\n".to_vec();
    partial.extend_from_slice(&1_000_000u32.to_be_bytes());
    partial.resize(partial.len() + HELD, b'x');
    let want = before + ((CONNS * HELD) >> 20) as u64 * 2 / 3;
    for round in 0..3 {
        let conns: Vec<TcpStream> = (0..CONNS)
            .map(|_| {
                let mut c = TcpStream::connect(d.tcp).unwrap();
                c.write_all(&partial).unwrap();
                c
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let now = rss_mib(pid);
            peak = peak.max(now);
            if now >= want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: the server never held the churn's bytes ({before} -> {now} MiB, \
                 {want} wanted)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(conns);
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while rss_mib(pid) > before + 40 {
        assert!(
            Instant::now() < deadline,
            "{} MiB resident 20 s after the churn ({before} MiB before it, {peak} at the peak)",
            rss_mib(pid)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// nsqd (Go) listens with the system's `somaxconn` as its backlog; with the runtime's 128, a
/// burst of connections beyond it waited for SYN retries, a second at a time (3 000
/// connections took 13 s).
#[test]
fn a_burst_of_connections_is_accepted_without_waiting_for_syn_retries() {
    let d = Nsqd::start(&[]);
    let start = Instant::now();
    let conns: Vec<TcpStream> = (0..3000)
        .map(|_| TcpStream::connect(d.tcp).unwrap())
        .collect();
    let took = start.elapsed();
    assert_eq!(conns.len(), 3000);
    assert!(
        took < Duration::from_secs(4),
        "3000 connections took {took:?}"
    );
}
