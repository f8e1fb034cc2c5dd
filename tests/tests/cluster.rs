//! Several nodes on loopback: three `nsqd` and two `nsqlookupd` (the real binary through
//! symlinks with those names), a real client library finding the nodes through lookupd, and
//! what NSQ documents for a node leaving, tombstones and a lookupd restart.

use nsqlab_tests::{need, Nsqd, Nsqlookupd, Tool};
use std::process::Command;
use std::time::{Duration, Instant};

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn producers(l: &Nsqlookupd, topic: &str) -> Vec<u16> {
    let r = l.http("GET", &format!("/lookup?topic={topic}"), b"");
    if r.status != 200 {
        return Vec::new();
    }
    let mut ports: Vec<u16> = r.json()["producers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tcp_port"].as_u64().unwrap() as u16)
        .collect();
    ports.sort();
    ports
}

fn node(lookupds: &[&Nsqlookupd]) -> Nsqd {
    let mut args = vec!["--broadcast-address=127.0.0.1".to_string()];
    for l in lookupds {
        args.push(format!("--lookupd-tcp-address={}", l.tcp));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Nsqd::start(&args)
}

#[test]
fn three_nodes_two_lookupds_and_pynsq_through_lookupd() {
    let (la, lb) = (
        Nsqlookupd::start(&["--tombstone-lifetime=2s"]),
        Nsqlookupd::start(&["--tombstone-lifetime=2s"]),
    );
    let nodes: Vec<Nsqd> = (0..3).map(|_| node(&[&la, &lb])).collect();
    let mut ports: Vec<u16> = nodes.iter().map(|n| n.tcp.port()).collect();
    ports.sort();
    // Each node gets 30 messages of its own.
    for (i, n) in nodes.iter().enumerate() {
        let body: Vec<u8> = (0..30)
            .map(|k| format!("n{i}-{k}"))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes();
        assert_eq!(n.http("POST", "/mpub?topic=spread", &body).status, 200);
    }
    for l in [&la, &lb] {
        wait_until("all three producers", Duration::from_secs(10), || {
            producers(l, "spread") == ports
        });
        let nodes_json = l.http("GET", "/nodes", b"").json();
        assert_eq!(nodes_json["producers"].as_array().unwrap().len(), 3);
    }

    // pynsq, given only the lookupds, consumes all 90 from the three nodes.
    let Some(python) = need(Tool::Python) else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/pynsq_lookupd.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(format!("{},{}", la.http, lb.http))
        .arg("spread")
        .arg("90")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pynsq via lookupd: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("received 90 distinct from nodes ['n0', 'n1', 'n2']"),
        "{stdout}"
    );
    // The lookupds learnt the channel the reader made on every node.
    for l in [&la, &lb] {
        wait_until("the reader's channel", Duration::from_secs(5), || {
            l.http("GET", "/channels?topic=spread", b"").json()["channels"]
                == serde_json::json!(["via_lookupd"])
        });
    }

    // Tombstone node 0's topic on lookupd A: gone from /lookup for the lifetime, still in
    // /nodes with its tombstone flagged; back afterwards (it still has the topic).
    let n0 = &nodes[0];
    let node0 = format!("127.0.0.1:{}", n0.http.port());
    let r = la.http(
        "POST",
        &format!("/topic/tombstone?topic=spread&node={node0}"),
        b"",
    );
    assert_eq!(r.status, 200);
    assert!(!producers(&la, "spread").contains(&n0.tcp.port()));
    assert!(
        producers(&lb, "spread").contains(&n0.tcp.port()),
        "only on lookupd A"
    );
    let nodes_json = la.http("GET", "/nodes", b"").json();
    let entry = nodes_json["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tcp_port"] == n0.tcp.port())
        .cloned()
        .unwrap();
    assert_eq!(entry["topics"], serde_json::json!(["spread"]));
    assert_eq!(entry["tombstones"], serde_json::json!([true]));
    wait_until("the tombstone to lapse", Duration::from_secs(5), || {
        producers(&la, "spread").contains(&n0.tcp.port())
    });
    // Tombstone, then delete the topic on the node (nsqadmin's way): it stays gone.
    la.http(
        "POST",
        &format!("/topic/tombstone?topic=spread&node={node0}"),
        b"",
    );
    assert_eq!(
        n0.http("POST", "/topic/delete?topic=spread", b"").status,
        200
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!producers(&la, "spread").contains(&n0.tcp.port()));
    assert!(!producers(&lb, "spread").contains(&n0.tcp.port()));

    // A node that stops leaves both lookupds at once (its connections close).
    let mut nodes = nodes;
    let n2 = nodes.pop().unwrap();
    let gone = n2.tcp.port();
    assert!(n2.terminate().success());
    for l in [&la, &lb] {
        wait_until("the stopped node to leave", Duration::from_secs(5), || {
            !producers(l, "spread").contains(&gone)
                && l.http("GET", "/nodes", b"").json()["producers"]
                    .as_array()
                    .unwrap()
                    .len()
                    == 2
        });
    }

    // PUT /config/nsqlookupd_tcp_addresses: node 1 leaves lookupd B, live.
    let n1 = &nodes[1];
    let r = n1.http(
        "PUT",
        "/config/nsqlookupd_tcp_addresses",
        format!("[\"{}\"]", la.tcp).as_bytes(),
    );
    assert_eq!(r.status, 200);
    wait_until("node 1 to leave lookupd B", Duration::from_secs(5), || {
        !producers(&lb, "spread").contains(&n1.tcp.port())
    });
    assert!(producers(&la, "spread").contains(&n1.tcp.port()));
}

#[test]
fn nsqd_registers_again_after_a_lookupd_restart() {
    let l = Nsqlookupd::start(&[]);
    let (tcp, http) = (l.tcp, l.http);
    let n = node(&[&l]);
    assert_eq!(n.http("POST", "/topic/create?topic=t", b"").status, 200);
    assert_eq!(
        n.http("POST", "/channel/create?topic=t&channel=c", b"")
            .status,
        200
    );
    wait_until("registration", Duration::from_secs(5), || {
        producers(&l, "t") == vec![n.tcp.port()]
    });
    drop(l);
    // Same ports: nsqd notices the closed connection, redials and registers everything again.
    let l = Nsqlookupd::start(&[
        &format!("-tcp-address={tcp}"),
        &format!("-http-address={http}"),
    ]);
    assert!(producers(&l, "t").is_empty());
    wait_until("re-registration", Duration::from_secs(10), || {
        producers(&l, "t") == vec![n.tcp.port()]
    });
    assert_eq!(
        l.http("GET", "/channels?topic=t", b"").json()["channels"],
        serde_json::json!(["c"])
    );
}

#[test]
fn a_new_topic_gets_the_channels_lookupd_knows() {
    let l = Nsqlookupd::start(&[]);
    for channel in ["archive", "audit"] {
        let path = format!("/channel/create?topic=fresh&channel={channel}");
        assert_eq!(l.http("POST", &path, b"").status, 200);
    }
    l.http(
        "POST",
        "/channel/create?topic=fresh&channel=tmp%23ephemeral",
        b"",
    );
    let n = node(&[&l]);
    wait_until("the node to connect", Duration::from_secs(5), || {
        l.http("GET", "/nodes", b"").json()["producers"]
            .as_array()
            .unwrap()
            .len()
            == 1
    });
    // Publishing creates the topic; nsqd asks lookupd for its channels and creates them
    // (not the ephemeral one), so the messages wait in "archive" and in "audit" both.
    assert_eq!(
        n.http("POST", "/mpub?topic=fresh", b"hello\nworld").status,
        200
    );
    wait_until("the pre-created channels", Duration::from_secs(5), || {
        let s = n.http("GET", "/stats?format=json&topic=fresh", b"").json();
        s["topics"][0]["channels"].as_array().is_some_and(|c| {
            let got: Vec<_> = c
                .iter()
                .map(|c| (c["channel_name"].clone(), c["depth"].clone()))
                .collect();
            got == [
                (serde_json::json!("archive"), serde_json::json!(2)),
                (serde_json::json!("audit"), serde_json::json!(2)),
            ]
        })
    });
}

/// `/nodes` lists each node's fields in nsqlookupd's order (its `node` struct), not sorted.
#[test]
fn nodes_lists_fields_in_nsqlookupds_order() {
    let l = Nsqlookupd::start(&[]);
    let n = node(&[&l]);
    assert_eq!(
        n.http("POST", "/topic/create?topic=listed", b"").status,
        200
    );
    wait_until("the registration", Duration::from_secs(10), || {
        producers(&l, "listed").contains(&n.tcp.port())
    });
    let nodes = l.http("GET", "/nodes", b"").text();
    let keys = [
        "remote_address",
        "hostname",
        "broadcast_address",
        "tcp_port",
        "http_port",
        "version",
        "tombstones",
        "topics",
    ];
    let at: Vec<usize> = keys
        .iter()
        .map(|k| nodes.find(&format!("\"{k}\":")).expect(k))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{nodes}");
    assert!(
        nodes.ends_with(r#""version":"1.3.0","tombstones":[false],"topics":["listed"]}]}"#),
        "{nodes}"
    );
}
