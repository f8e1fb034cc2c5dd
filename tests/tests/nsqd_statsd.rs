//! statsd push to a UDP listener run by the test.

use nsqlab_tests::Nsqd;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

#[test]
fn pushes_counters_and_gauges() {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let addr = udp.local_addr().unwrap();
    let d = Nsqd::start(&[
        &format!("-statsd-address={addr}"),
        "-statsd-interval=200ms",
        "-statsd-prefix=nsq.test",
        "-statsd-udp-packet-size=200",
    ]);
    assert_eq!(
        d.http("GET", "/config/statsd_prefix", b"").text(),
        "nsq.test."
    );
    assert_eq!(d.http("POST", "/topic/create?topic=s", b"").status, 200);
    assert_eq!(
        d.http("POST", "/channel/create?topic=s&channel=c", b"")
            .status,
        200
    );
    for _ in 0..3 {
        assert_eq!(d.http("POST", "/pub?topic=s", b"x").status, 200);
    }
    // Counters are deltas: they add up to the messages published, whichever pushes they fell in.
    let (mut topic_count, mut depth_seen) = (0i64, false);
    let start = Instant::now();
    let mut buf = [0u8; 2048];
    while start.elapsed() < Duration::from_secs(5) && !(topic_count == 3 && depth_seen) {
        let Ok(n) = udp.recv(&mut buf) else { continue };
        assert!(n <= 200, "packet of {n} bytes > --statsd-udp-packet-size");
        for line in std::str::from_utf8(&buf[..n]).unwrap().lines() {
            if let Some(v) = line.strip_prefix("nsq.test.topic.s.message_count:") {
                topic_count += v.trim_end_matches("|c").parse::<i64>().unwrap();
            }
            if line == "nsq.test.topic.s.channel.c.depth:3|g" {
                depth_seen = true;
            }
        }
    }
    assert_eq!(topic_count, 3);
    assert!(depth_seen, "channel depth gauge");
}
