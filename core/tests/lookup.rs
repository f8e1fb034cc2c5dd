//! nsqlookupd's V1 protocol and registration rules, as an nsqd on the other end sees them.

use nsqlab_core::lookup::{Lookupd, LookupdOptions, PeerId};
use nsqlab_core::time::SECOND;

fn lookupd() -> Lookupd {
    Lookupd::new(LookupdOptions {
        broadcast_address: "lookup-host".into(),
        hostname: "lookup-host".into(),
        tcp_port: 4160,
        http_port: 4161,
        inactive_producer_timeout: 300 * SECOND,
        tombstone_lifetime: 45 * SECOND,
    })
}

/// Split a V1 response stream into its texts.
fn responses(out: &[u8]) -> Vec<String> {
    let mut v = Vec::new();
    let mut at = 0;
    while at + 4 <= out.len() {
        let n = u32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        v.push(String::from_utf8_lossy(&out[at + 4..at + 4 + n]).into_owned());
        at += 4 + n;
    }
    assert_eq!(at, out.len(), "whole frames only");
    v
}

fn send(l: &mut Lookupd, now: u64, p: PeerId, bytes: &[u8]) -> (Vec<String>, bool) {
    l.handle_bytes(now, p, bytes);
    let (out, close) = l.take_output(p);
    (responses(&out), close)
}

fn identify_bytes(json: impl AsRef<[u8]>) -> Vec<u8> {
    let json = json.as_ref();
    let mut b = b"IDENTIFY\n".to_vec();
    b.extend_from_slice(&(json.len() as u32).to_be_bytes());
    b.extend_from_slice(json);
    b
}

const NSQD: &str = r#"{"broadcast_address":"node1","hostname":"node1","http_port":4151,"tcp_port":4150,"version":"1.3.0"}"#;

fn node(l: &mut Lookupd, now: u64, remote: &str) -> PeerId {
    let p = l.connect(remote);
    let mut b = b"  V1".to_vec();
    b.extend(identify_bytes(NSQD));
    let (r, close) = send(l, now, p, &b);
    assert!(!close);
    assert_eq!(
        r,
        vec![
            r#"{"broadcast_address":"lookup-host","hostname":"lookup-host","http_port":4161,"tcp_port":4160,"version":"1.3.0"}"#
        ]
    );
    p
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn errors_are_nsqlookupds_texts_and_close_the_connection() {
    let mut l = lookupd();
    let cases: Vec<(&[u8], &str)> = vec![
        (b"  V2", "E_BAD_PROTOCOL"),
        (b"  V1REGISTER t\n", "E_INVALID client must IDENTIFY"),
        (b"  V1NOPE\n", "E_INVALID invalid command NOPE"),
        (b"  V1\n", "E_INVALID invalid command "),
    ];
    for (bytes, want) in cases {
        let p = l.connect("10.0.0.1:1");
        let (r, close) = send(&mut l, 0, p, bytes);
        assert_eq!(r, vec![want.to_string()]);
        assert!(close, "{want} closes");
    }
    let p = l.connect("10.0.0.1:2");
    let mut b = b"  V1".to_vec();
    b.extend(identify_bytes(r#"{"broadcast_address":"x","tcp_port":1}"#));
    assert_eq!(
        send(&mut l, 0, p, &b).0,
        vec!["E_BAD_BODY IDENTIFY missing fields"]
    );
    let p = l.connect("10.0.0.1:3");
    let mut b = b"  V1".to_vec();
    b.extend(identify_bytes("{"));
    assert_eq!(
        send(&mut l, 0, p, &b).0,
        vec!["E_BAD_BODY IDENTIFY failed to decode JSON body"]
    );
    let p = node(&mut l, 0, "10.0.0.1:4");
    assert_eq!(
        send(&mut l, 0, p, b"REGISTER bad!topic\n").0,
        vec!["E_BAD_TOPIC REGISTER topic name 'bad!topic' is not valid"]
    );
    let p = node(&mut l, 0, "10.0.0.1:5");
    assert_eq!(
        send(&mut l, 0, p, b"UNREGISTER t bad!\n").0,
        vec!["E_BAD_CHANNEL UNREGISTER channel name 'bad!' is not valid"]
    );
    let p = node(&mut l, 0, "10.0.0.1:6");
    assert_eq!(
        send(&mut l, 0, p, &identify_bytes(NSQD)).0,
        vec!["E_INVALID cannot IDENTIFY again"]
    );
    let p = node(&mut l, 0, "10.0.0.1:7");
    assert_eq!(
        send(&mut l, 0, p, b"REGISTER\n").0,
        vec!["E_INVALID REGISTER insufficient number of params"]
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn register_lookup_nodes_and_byte_at_a_time_input() {
    let mut l = lookupd();
    let p = l.connect("10.0.0.1:9");
    let mut all = b"  V1".to_vec();
    all.extend(identify_bytes(NSQD));
    all.extend_from_slice(b"REGISTER t c\r\nREGISTER u\nPING\n");
    let mut got = Vec::new();
    for b in &all {
        l.handle_bytes(0, p, std::slice::from_ref(b));
        got.extend(l.take_output(p).0);
    }
    let r = responses(&got);
    assert_eq!(&r[1..], ["OK", "OK", "OK"]);
    let a = l.lookup(0, "t").unwrap();
    assert_eq!(a.channels, vec!["c"]);
    assert_eq!(a.producers.len(), 1);
    assert_eq!(a.producers[0].remote_address, "10.0.0.1:9");
    assert_eq!(a.producers[0].tcp_port, 4150);
    assert_eq!(
        serde_json::to_string(&a.producers[0]).unwrap(),
        r#"{"remote_address":"10.0.0.1:9","hostname":"node1","broadcast_address":"node1","tcp_port":4150,"http_port":4151,"version":"1.3.0"}"#
    );
    assert_eq!(l.topics(), vec!["t", "u"]);
    let n = l.nodes(0);
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].topics, vec!["t", "u"]);
    assert_eq!(n[0].tombstones, vec![false, false]);
    assert!(l.lookup(0, "none").is_none());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn unregister_disconnect_and_ephemeral_rules() {
    let mut l = lookupd();
    let p = node(&mut l, 0, "10.0.0.1:1");
    for line in [
        "REGISTER t c\n",
        "REGISTER t e#ephemeral\n",
        "UNREGISTER t e#ephemeral\n",
        "UNREGISTER t c\n",
    ] {
        assert_eq!(send(&mut l, 0, p, line.as_bytes()).0, vec!["OK"]);
    }
    // The ephemeral channel went with its last producer; the durable one stays, empty.
    assert_eq!(l.channels("t"), vec!["c"]);
    // Still a producer of the topic (a channel UNREGISTER leaves the topic alone).
    assert_eq!(l.lookup(0, "t").unwrap().producers.len(), 1);
    send(&mut l, 0, p, b"REGISTER t c\nUNREGISTER t\n");
    assert!(l.lookup(0, "t").unwrap().producers.is_empty());
    assert_eq!(
        l.channels("t"),
        vec!["c"],
        "registrations outlive producers"
    );
    send(
        &mut l,
        0,
        p,
        b"REGISTER x#ephemeral\nUNREGISTER x#ephemeral\n",
    );
    assert!(l.lookup(0, "x#ephemeral").is_none());
    send(&mut l, 0, p, b"REGISTER y y\n");
    l.disconnect(p);
    assert!(l.lookup(0, "y").unwrap().producers.is_empty());
    assert!(l.nodes(0).is_empty());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn inactive_producers_and_tombstones_are_filtered_at_query_time() {
    let mut l = lookupd();
    let a = node(&mut l, 0, "10.0.0.1:1");
    let b = node(&mut l, 0, "10.0.0.2:1");
    send(&mut l, 0, a, b"REGISTER t\n");
    send(&mut l, 0, b, b"REGISTER t\n");
    // b keeps pinging, a does not.
    send(&mut l, 200 * SECOND, b, b"PING\n");
    assert_eq!(l.lookup(300 * SECOND, "t").unwrap().producers.len(), 2);
    let late = l.lookup(301 * SECOND, "t").unwrap().producers;
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].remote_address, "10.0.0.2:1");
    // Tombstone both (same broadcast address and port): gone for 45 s, then back.
    let now = 310 * SECOND;
    send(&mut l, now, b, b"PING\n");
    l.tombstone(now, "t", "node1:4151");
    assert!(l.lookup(now, "t").unwrap().producers.is_empty());
    assert_eq!(l.nodes(now)[0].tombstones, vec![true]);
    let later = now + 45 * SECOND;
    assert_eq!(l.lookup(later, "t").unwrap().producers.len(), 1);
    assert_eq!(l.nodes(later)[0].tombstones, vec![false]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn http_side_creates_and_deletes_registrations() {
    let mut l = lookupd();
    l.create_channel("t", "c");
    assert_eq!(l.topics(), vec!["t"]);
    assert_eq!(l.lookup(0, "t").unwrap().channels, vec!["c"]);
    assert!(!l.delete_channel("t", "nope"));
    assert!(l.delete_channel("t", "c"));
    l.create_topic("u");
    l.delete_topic("t");
    assert_eq!(l.topics(), vec!["u"]);
    let p = node(&mut l, 0, "10.0.0.1:1");
    send(&mut l, 0, p, b"REGISTER u c\n");
    let d = l.debug();
    let keys: Vec<&String> = d.keys().collect();
    assert_eq!(keys, ["channel:u:c", "client::", "topic:u:"]);
    assert_eq!(d["topic:u:"][0].tombstoned_at, -6_795_364_578_871_345_152);
}

/// IDENTIFY's JSON decoded into nsqlookupd's `PeerInfo` as Go does: `remote_address` is a
/// string field (a number fails) whose value the connection's address then replaces, and
/// bytes that are not UTF-8 become U+FFFD.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn identify_decodes_into_peer_info_as_go() {
    let mut l = lookupd();
    let p = l.connect("10.0.0.1:1");
    let mut b = b"  V1".to_vec();
    b.extend(identify_bytes(
        r#"{"remote_address":1,"broadcast_address":"n","http_port":4151,"tcp_port":4150,"version":"1.3.0"}"#,
    ));
    let (r, close) = send(&mut l, 0, p, &b);
    assert_eq!(r, vec!["E_BAD_BODY IDENTIFY failed to decode JSON body"]);
    assert!(close);

    let p = l.connect("10.0.0.1:2");
    let mut b = b"  V1".to_vec();
    b.extend(identify_bytes(b"{\"remote_address\":\"spoofed\",\"broadcast_address\":\"n\",\"hostname\":\"h\xff\",\"http_port\":4151,\"tcp_port\":4150,\"version\":\"1.3.0\"}"));
    let (r, close) = send(&mut l, 0, p, &b);
    assert!(!close, "{r:?}");
    assert!(r[0].contains("lookup-host"), "{r:?}");
    let nodes = l.nodes(0);
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].peer.remote_address, "10.0.0.1:2");
    assert_eq!(nodes[0].peer.hostname, "h\u{fffd}");
}

/// `topic=*` as nsqlookupd's registry matches it: `/lookup` is every topic (all channels, each
/// producer once), `/topic/tombstone` one topic's registration of the node, `/topic/delete`
/// every topic.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_star_topic_is_every_topic() {
    let mut l = lookupd();
    assert!(l.lookup(0, "*").is_none(), "no topic yet");
    let a = node(&mut l, 0, "10.0.0.1:1");
    send(&mut l, 0, a, b"REGISTER t c\nREGISTER u d\n");
    let all = l.lookup(0, "*").unwrap();
    assert_eq!(all.channels, vec!["c", "d"]);
    assert_eq!(all.producers.len(), 1, "the node once");
    l.tombstone(0, "*", "node1:4151");
    assert!(l.lookup(0, "t").unwrap().producers.is_empty());
    assert_eq!(l.lookup(0, "u").unwrap().producers.len(), 1);
    l.delete_topic("*");
    assert!(l.topics().is_empty());
    assert!(l.channels("*").is_empty());
    assert!(l.lookup(0, "*").is_none());
}
