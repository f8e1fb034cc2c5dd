//! nsqlab's benchmark clients (`nsqlab bench …`) against the real server: what they print
//! and that the messages they count went through. Never how fast (that is for
//! `scripts/bench.sh`, on demand): every check here holds on a slow machine too.

use nsqlab_tests::{binary, Nsqd};
use std::process::Command;

/// Run `nsqlab bench <args>` (it must exit 0): its stdout.
fn bench(args: &[&str]) -> String {
    let out = Command::new(binary())
        .arg("bench")
        .args(args)
        .output()
        .expect("run nsqlab bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// NSQ's bench_writer / bench_reader summary:
/// `duration: <Go duration> - <x.xxx>mb/s - <x.xxx>ops/s - <x.xxx>us/op`; the ops/s.
fn summary_ops(line: &str) -> f64 {
    let parts: Vec<&str> = line.trim_end().split(" - ").collect();
    assert_eq!(parts.len(), 4, "{line:?}");
    let d = parts[0].strip_prefix("duration: ").expect("duration first");
    assert!(
        d.ends_with('s') && d[..d.len() - 1].parse::<f64>().is_ok(),
        "{d:?}"
    );
    let num = |p: &str, unit: &str| -> f64 {
        let n = p
            .strip_suffix(unit)
            .unwrap_or_else(|| panic!("{p:?} in {unit}"));
        let (_, frac) = n.split_once('.').expect("three decimals");
        assert_eq!(frac.len(), 3, "{p:?}");
        n.parse().unwrap()
    };
    num(parts[1], "mb/s");
    num(parts[3], "us/op");
    num(parts[2], "ops/s")
}

fn channel_count(d: &Nsqd, key: &str) -> u64 {
    let s = d
        .http("GET", "/stats?format=json&topic=sub_bench", b"")
        .json();
    s["topics"][0]["channels"][0][key].as_u64().unwrap()
}

#[test]
fn writer_and_reader_print_nsqs_summary_and_move_what_they_count() {
    let d = Nsqd::start(&[]);
    let tcp = d.tcp.to_string();
    d.http("POST", "/topic/create?topic=sub_bench", b"");
    d.http("POST", "/channel/create?topic=sub_bench&channel=ch", b"");
    let out = bench(&[
        "writer",
        "--tcp-address",
        &tcp,
        "--runfor",
        "1s",
        "--size",
        "50",
        "--batch-size",
        "10",
    ]);
    assert!(summary_ops(&out) > 0.0, "{out}");
    let published = channel_count(&d, "message_count");
    assert!(
        published > 0 && published.is_multiple_of(10),
        "MPUBs of 10: {published}"
    );
    assert_eq!(channel_count(&d, "depth"), published);

    let out = bench(&["reader", "--tcp-address", &tcp, "--runfor", "1s"]);
    assert!(summary_ops(&out) > 0.0, "{out}");
    // What it finished is gone (the rest waits for the next reader).
    let depth = channel_count(&d, "depth");
    assert!(
        depth < published,
        "read nothing: depth {depth} of {published}"
    );
}

#[test]
fn lateness_and_deferred_mem_report_what_they_measured() {
    let d = Nsqd::start(&[]);
    let tcp = d.tcp.to_string();
    let out = bench(&[
        "lateness",
        "--tcp-address",
        &tcp,
        "--count",
        "50",
        "--window",
        "200ms",
        "--background",
        "100",
    ]);
    assert!(
        out.starts_with("lateness: 50 of 50 delivered (100 pending in background,"),
        "{out}"
    );
    assert!(out.contains(" - p50 ") && out.contains(" - p99 "), "{out}");
    assert!(out.trim_end().ends_with(" - early 0"), "{out}");

    let pid = d.pid().to_string();
    let out = bench(&[
        "deferred-mem",
        "--tcp-address",
        &tcp,
        "--pid",
        &pid,
        "--count",
        "2000",
    ]);
    assert!(
        out.starts_with("deferred-mem: 2000 pending deferred 100-byte messages - RSS "),
        "{out}"
    );
    assert!(out.trim_end().ends_with(" bytes per message"), "{out}");
}
