//! The real binary's HTTP API: nsqd's status codes, bodies and headers.

use nsqlab_core::protocol::Command;
use nsqlab_tests::Nsqd;

#[test]
fn http_api_as_nsqd() {
    let d = Nsqd::start(&["-max-msg-size=10", "-max-body-size=40"]);
    let r = d.http("GET", "/ping", b"");
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));

    let r = d.http("GET", "/info", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-nsq-content-type"), Some("nsq; version=1.0"));
    let v = r.json();
    assert_eq!(v["tcp_port"], d.tcp.port());
    assert_eq!(v["http_port"], d.http.port());
    assert_eq!(v["max_heartbeat_interval"], 60_000_000_000u64);

    let r = d.http("POST", "/pub?topic=t", b"hi");
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    assert_eq!(r.header("x-nsq-content-type"), Some("nsq; version=1.0"));
    for (path, body, status, msg) in [
        ("/pub", &b"x"[..], 400, "MISSING_ARG_TOPIC"),
        ("/pub?topic=bad!", b"x", 400, "INVALID_TOPIC"),
        ("/pub?topic=t", b"", 400, "MSG_EMPTY"),
        ("/pub?topic=t", b"01234567890", 413, "MSG_TOO_BIG"),
        ("/pub?topic=t&defer=x", b"x", 400, "INVALID_DEFER"),
        ("/pub?topic=t&defer=3600001", b"x", 400, "INVALID_DEFER"),
        ("/mpub?topic=t", &[b'a'; 41][..], 413, "BODY_TOO_BIG"),
        ("/mpub?topic=t", b"a\n01234567890\n", 413, "MSG_TOO_BIG"),
        (
            "/mpub?topic=t&binary=true",
            b"\x00\x00\x00\x00",
            413,
            "BAD_BODY",
        ),
        (
            "/mpub?topic=t&binary=true",
            b"\x00\x00\x00\x01\x00\x00\x00\x00",
            413,
            "BAD_MESSAGE",
        ),
        ("/topic/delete?topic=nope", b"", 404, "TOPIC_NOT_FOUND"),
        (
            "/channel/pause?topic=t&channel=nope",
            b"",
            404,
            "CHANNEL_NOT_FOUND",
        ),
        ("/channel/create?topic=t", b"", 400, "MISSING_ARG_CHANNEL"),
    ] {
        let r = d.http("POST", path, body);
        assert_eq!(r.status, status, "{path}");
        assert_eq!(r.text(), format!(r#"{{"message":"{msg}"}}"#), "{path}");
        assert_eq!(
            r.header("content-type"),
            Some("application/json; charset=utf-8")
        );
    }
    let r = d.http("POST", "/mpub?topic=t", b"a\n\nb\n");
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    let r = d.http(
        "POST",
        "/mpub?topic=t&binary=1",
        b"\x00\x00\x00\x02\x00\x00\x00\x01x\x00\x00\x00\x01y",
    );
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));

    assert_eq!(
        d.http("POST", "/channel/create?topic=t&channel=c", b"")
            .status,
        200
    );
    assert_eq!(d.http("POST", "/topic/pause?topic=t", b"").status, 200);
    let r = d.http("GET", "/stats?format=json", b"");
    let v = r.json();
    assert_eq!(v["health"], "OK");
    let t = &v["topics"][0];
    assert_eq!(t["topic_name"], "t");
    // 1 + 2 + 2 messages published; held in the topic until the channel existed.
    assert_eq!(t["message_count"], 5);
    assert_eq!(t["paused"], true);
    assert_eq!(t["channels"][0]["channel_name"], "c");
    assert_eq!(t["channels"][0]["depth"], 5);

    let r = d.http("GET", "/nope", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (404, r#"{"message":"NOT_FOUND"}"#)
    );
    let r = d.http("GET", "/", b"");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("nsqlab"));
}

#[test]
fn visualiser_can_be_turned_off() {
    let d = Nsqd::start(&["-no-visualiser"]);
    assert_eq!(d.http("GET", "/", b"").status, 404);
}

#[test]
fn routing_methods_and_options_as_httprouter() {
    let d = Nsqd::start(&[]);
    let r = d.http("GET", "/pub", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (405, r#"{"message":"METHOD_NOT_ALLOWED"}"#)
    );
    assert_eq!(r.header("allow"), Some("OPTIONS, POST"));
    let r = d.http("POST", "/stats", b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, OPTIONS")));
    let r = d.http("POST", "/config/log_level", b"");
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, OPTIONS, PUT"))
    );
    let r = d.http("OPTIONS", "/pub", b"");
    assert_eq!(
        (r.status, r.body.len(), r.header("allow")),
        (200, 0, Some("OPTIONS, POST"))
    );
    let r = d.http("HEAD", "/ping", b"");
    assert_eq!(r.status, 405);
    // nsqd v1.3's /debug/freememory frees memory, then answers from its panic handler (its
    // plain-text decorator has no body to write).
    let r = d.http("POST", "/debug/freememory", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (500, r#"{"message":"INTERNAL_ERROR"}"#)
    );
    assert_eq!(r.header("x-nsq-content-type"), Some("nsq; version=1.0"));
    let r = d.http("GET", "/debug/freememory", b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("OPTIONS, POST")));
}

#[test]
fn admin_endpoints_validate_like_nsqd() {
    let d = Nsqd::start(&[]);
    for (path, status, msg) in [
        ("/topic/create?topic=bad!", 400, "INVALID_TOPIC"),
        ("/topic/empty?topic=x$", 400, "INVALID_TOPIC"),
        // delete and pause do not validate: an invalid name is just not found.
        ("/topic/delete?topic=bad!", 404, "TOPIC_NOT_FOUND"),
        ("/topic/pause?topic=bad!", 404, "TOPIC_NOT_FOUND"),
        ("/channel/empty", 400, "MISSING_ARG_TOPIC"),
        ("/channel/empty?topic=t", 400, "MISSING_ARG_CHANNEL"),
        (
            "/channel/create?topic=bad!&channel=c",
            400,
            "INVALID_ARG_TOPIC",
        ),
        (
            "/channel/create?topic=t&channel=c!",
            400,
            "INVALID_ARG_CHANNEL",
        ),
        // Channel endpoints need an existing topic, even create.
        (
            "/channel/create?topic=missing&channel=c",
            404,
            "TOPIC_NOT_FOUND",
        ),
    ] {
        let r = d.http("POST", path, b"");
        assert_eq!(
            (r.status, r.text()),
            (status, format!(r#"{{"message":"{msg}"}}"#)),
            "{path}"
        );
    }
    let r = d.http("POST", "/topic/create?topic=t", b"");
    assert_eq!(
        (r.status, r.body.len(), r.header("content-type")),
        (200, 0, None)
    );
    assert_eq!(
        d.http("POST", "/channel/create?topic=t&channel=c", b"")
            .status,
        200
    );
    assert_eq!(
        d.http("POST", "/channel/delete?topic=t&channel=c", b"")
            .status,
        200
    );
    assert_eq!(
        d.http("POST", "/channel/delete?topic=t&channel=c", b"")
            .status,
        404
    );
}

#[test]
fn config_reads_and_writes() {
    let d = Nsqd::start(&["-lookupd-tcp-address=127.0.0.1:4160", "-mem-queue-size=7"]);
    let r = d.http("GET", "/config/nsqlookupd_tcp_addresses", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, r#"["127.0.0.1:4160"]"#)
    );
    assert_eq!(d.http("GET", "/config/mem_queue_size", b"").text(), "7");
    assert_eq!(
        d.http("GET", "/config/msg_timeout", b"").text(),
        "60000000000"
    );
    // Strings are raw, not JSON-quoted.
    assert_eq!(
        d.http("GET", "/config/tcp_address", b"").text(),
        "127.0.0.1:0"
    );
    assert_eq!(d.http("GET", "/config/log_level", b"").text(), "2");
    // Broadcast ports left at 0 read as the ports bound, as nsqd fills them in.
    assert_eq!(
        d.http("GET", "/config/broadcast_tcp_port", b"").text(),
        d.tcp.port().to_string()
    );
    assert_eq!(
        d.http("GET", "/config/broadcast_http_port", b"").text(),
        d.http.port().to_string()
    );
    let r = d.http("GET", "/config/nope", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"message":"INVALID_OPTION"}"#)
    );

    let r = d.http(
        "PUT",
        "/config/nsqlookupd_tcp_addresses",
        br#"["a:1","b:2"]"#,
    );
    assert_eq!((r.status, r.text().as_str()), (200, r#"["a:1","b:2"]"#));
    let r = d.http("PUT", "/config/log_level", b"fatal");
    assert_eq!((r.status, r.text().as_str()), (200, "5"));
    let r = d.http("PUT", "/config/log_level", b"loud");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"message":"INVALID_VALUE"}"#)
    );
    let r = d.http("PUT", "/config/log_level", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (413, r#"{"message":"INVALID_VALUE"}"#)
    );
    let r = d.http("PUT", "/config/msg_timeout", b"1");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"message":"INVALID_OPTION"}"#)
    );
}

#[test]
fn stats_shapes_as_nsqd() {
    let d = Nsqd::start(&[]);
    let v = d.http("GET", "/stats?format=json", b"").json();
    assert_eq!(v["topics"], serde_json::json!([]));
    assert!(v["producers"].is_null());
    assert!(v["memory"].is_object());
    let v = d
        .http(
            "GET",
            "/stats?format=json&include_mem=false&topic=missing",
            b"",
        )
        .json();
    assert!(v["topics"].is_null() && v.get("memory").is_none());

    // The heap figures follow what the broker holds: 16 MB of messages in a memory-only
    // topic show up as heap in use, and leave it when the topic is deleted (allocated bytes,
    // not resident pages, which the allocator keeps).
    let mem = |d: &Nsqd| {
        let v = d.http("GET", "/stats?format=json", b"").json();
        v["memory"]["heap_in_use_bytes"].as_u64().unwrap()
    };
    let m = Nsqd::start(&["-durable=false"]);
    let before = mem(&m);
    let body = vec![b'x'; 64 << 10];
    for _ in 0..256 {
        assert_eq!(m.http("POST", "/pub?topic=mem", &body).status, 200);
    }
    let full = mem(&m);
    assert!(
        full >= before + (15 << 20),
        "heap in use {before} -> {full}"
    );
    assert_eq!(m.http("POST", "/topic/delete?topic=mem", b"").status, 200);
    let after = mem(&m);
    assert!(
        after + (12 << 20) <= full,
        "heap in use {full} -> {after} after the delete"
    );
    // It is the heap, not the whole process (code and stacks are resident too).
    let statm = std::fs::read_to_string(format!("/proc/{}/statm", m.pid())).unwrap();
    let rss: u64 = statm
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 4096;
    assert!(after < rss, "heap in use {after} < resident {rss}");

    let mut c = d.client();
    c.send(b"SUB t c\nPUB t\n\x00\x00\x00\x01x");
    assert_eq!(c.next_text(), "R:OK");
    assert_eq!(c.next_text(), "R:OK");
    let v = d.http("GET", "/stats?format=json", b"").json();
    let ch = &v["topics"][0]["channels"][0];
    assert_eq!(ch["client_count"], 1);
    assert_eq!(ch["clients"][0]["state"], 3);
    assert_eq!(ch["clients"][0]["pub_counts"][0]["count"], 1);
    assert_eq!(v["producers"][0]["pub_counts"][0]["topic"], "t");
    let v = d
        .http("GET", "/stats?format=json&include_clients=false", b"")
        .json();
    assert!(v["topics"][0]["channels"][0]["clients"].is_null());
    assert_eq!(v["topics"][0]["channels"][0]["client_count"], 1);

    let text = d.http("GET", "/stats", b"").text();
    assert!(text.starts_with("nsqd v1.3.0"), "{text}");
    assert!(text.contains("\nHealth: OK\n"), "{text}");
    assert!(
        text.contains(
            "\nTopics:\n   [t              ] depth: 0     be-depth: 0     msgs: 1        e2e%: \n"
        ),
        "{text}"
    );
    assert!(text.contains("      [c                        ] depth: 1     be-depth: 0     inflt: 0    def: 0    re-q: 0     timeout: 0     msgs: 1        e2e%: \n"), "{text}");
    assert!(text.contains("\nProducers:\n   [V2 "), "{text}");
}

#[test]
fn prometheus_metrics() {
    let d = Nsqd::start(&[]);
    assert_eq!(
        d.http("POST", "/channel/create?topic=m&channel=c", b"")
            .status,
        404
    );
    assert_eq!(d.http("POST", "/topic/create?topic=m", b"").status, 200);
    assert_eq!(
        d.http("POST", "/channel/create?topic=m&channel=c", b"")
            .status,
        200
    );
    assert_eq!(d.http("POST", "/pub?topic=m", b"x").status, 200);
    assert_eq!(d.http("POST", "/pub?topic=m&defer=60000", b"y").status, 200);
    let r = d.http("GET", "/metrics", b"");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = r.text();
    for line in [
        "# TYPE nsq_topic_messages_total counter",
        "nsq_topic_messages_total{topic=\"m\"} 2",
        "nsq_channel_depth{topic=\"m\",channel=\"c\"} 1",
        "nsq_channel_deferred{topic=\"m\",channel=\"c\"} 1",
        "nsq_channel_clients{topic=\"m\",channel=\"c\"} 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
}

#[test]
fn e2e_processing_latency_percentiles() {
    let d = Nsqd::start(&[
        "--e2e-processing-latency-percentile=0.5,1.0",
        "--e2e-processing-latency-percentile=0.99",
    ]);
    let mut c = d.client();
    c.cmd(&nsqlab_core::protocol::Command::Sub {
        topic: "lat".into(),
        channel: "c".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&nsqlab_core::protocol::Command::Rdy(10));
    let body: Vec<u8> = (0..10)
        .map(|i| format!("m{i}"))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    assert_eq!(d.http("POST", "/mpub?topic=lat", &body).status, 200);
    for _ in 0..10 {
        let nsqlab_core::protocol::Frame::Message(m) = c.frame() else {
            panic!("a message")
        };
        std::thread::sleep(std::time::Duration::from_millis(2));
        c.cmd(&nsqlab_core::protocol::Command::Fin(m.id.to_hex()));
    }
    c.cmd(&nsqlab_core::protocol::Command::Nop);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let s = d.http("GET", "/stats?format=json&topic=lat", b"").json();
    for e2e in [
        &s["topics"][0]["e2e_processing_latency"],
        &s["topics"][0]["channels"][0]["e2e_processing_latency"],
    ] {
        assert_eq!(e2e["count"], 10, "{e2e}");
        let ps = e2e["percentiles"].as_array().unwrap();
        let qs: Vec<f64> = ps.iter().map(|p| p["quantile"].as_f64().unwrap()).collect();
        assert_eq!(
            qs,
            vec![1.0, 0.99, 0.5],
            "highest first, as nsqd sorts them"
        );
        let vs: Vec<u64> = ps.iter().map(|p| p["value"].as_u64().unwrap()).collect();
        assert!(
            vs[0] >= vs[2] && vs[2] >= 2_000_000,
            "publish → FIN took ≥ 2 ms: {vs:?}"
        );
    }
    let text = d.http("GET", "/stats?topic=lat", b"").text();
    let line = text.lines().find(|l| l.contains("[c ")).unwrap();
    let tail = line.split("e2e%: ").nth(1).unwrap();
    assert_eq!(tail.split(", ").count(), 3, "{line}");
    assert!(tail.ends_with("ms"), "{line}");
}

#[test]
fn redirects_and_dual_stack_listening_as_go() {
    // 0.0.0.0 (or ":port") listens dual-stack as Go does, and says so.
    let d = Nsqd::start(&["-tcp-address=0.0.0.0:0", "-http-address=:0"]);
    let ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    if ipv6 {
        assert_eq!(d.tcp.ip().to_string(), "::", "TCP: listening on [::]:port");
        assert_eq!(d.http.ip().to_string(), "::");
    }
    let v4 = std::net::SocketAddr::from(([127, 0, 0, 1], d.http.port()));
    let r = nsqlab_tests::http_request(v4, "GET", "/ping", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, "OK"),
        "IPv4 clients too"
    );

    // httprouter's trailing-slash and case redirects: 301 for GET (Go's body), 307 else.
    let r = d.http("GET", "/stats/?format=json", b"");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/stats?format=json"));
    assert_eq!(
        r.text(),
        "<a href=\"/stats?format=json\">Moved Permanently</a>.\n\n"
    );
    let r = d.http("POST", "/PUB?topic=t", b"x");
    assert_eq!(r.status, 307);
    assert_eq!(r.header("Location"), Some("/pub?topic=t"));
    assert_eq!(d.http("GET", "/nope/", b"").status, 404);
    // The fixed path is cleaned first; a parameter keeps its case.
    for (from, to) in [
        ("//ping", "/ping"),
        ("/./stats/", "/stats"),
        ("/topic/../ping", "/ping"),
        ("/CONFIG/Max_Msg_Size", "/config/Max_Msg_Size"),
        ("/Topic//Pause?topic=t", "/topic/pause?topic=t"),
    ] {
        let method = if from.starts_with("/Topic") {
            "POST"
        } else {
            "GET"
        };
        let r = d.http(method, from, b"");
        assert_eq!(r.header("Location"), Some(to), "{from}");
    }
    let r = d.http("GET", "/config/Max_Msg_Size", b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"message":"INVALID_OPTION"}"#)
    );
    assert_eq!(d.http("GET", "/../nope", b"").status, 404);
}

/// Request bodies are limited by nsqd's flags alone (`--max-body-size` 5 MiB by default,
/// `--max-msg-size`), not by the HTTP library's own 2 MiB; a chunked body without a
/// `Content-Length` is cut off at the limit as nsqd's `io.LimitReader` does.
#[test]
fn bodies_are_limited_by_nsqd_flags_only() {
    let d = Nsqd::start(&["--max-msg-size=4194304"]);
    let mut body = Vec::new();
    for _ in 0..3072 {
        body.extend_from_slice(&[b'x'; 1023]);
        body.push(b'\n');
    }
    let r = d.http("POST", "/mpub?topic=big", &body);
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    let r = d.http("POST", "/pub?topic=big", &vec![b'y'; 3 << 20]);
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    let v = d.http("GET", "/stats?format=json&topic=big", b"").json();
    assert_eq!(v["topics"][0]["depth"], 3073);

    let d = Nsqd::start(&["-max-msg-size=10", "-max-body-size=40"]);
    let chunked = |path: &str, chunks: &[&[u8]]| {
        let mut raw = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        for c in chunks {
            raw.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
            raw.extend_from_slice(c);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        nsqlab_tests::http_raw(d.http, &raw)
    };
    let r = chunked("/pub?topic=t", &[b"01234", b"56789"]);
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    let r = chunked("/pub?topic=t", &[b"01234", b"567890"]);
    assert_eq!(
        (r.status, r.text().as_str()),
        (413, r#"{"message":"MSG_TOO_BIG"}"#)
    );
    let r = chunked("/mpub?topic=t", &[&[b'a'; 20], &[b'\n'; 21]]);
    assert_eq!(
        (r.status, r.text().as_str()),
        (413, r#"{"message":"BODY_TOO_BIG"}"#)
    );
}

/// Only nsqd's five actions are routed under `/topic/` and `/channel/`; any other is 404
/// (and changes nothing), whatever the method.
#[test]
fn unknown_admin_actions_are_not_found() {
    let d = Nsqd::start(&[]);
    for p in [
        "/topic/create?topic=t",
        "/channel/create?topic=t&channel=c",
        "/topic/pause?topic=t",
        "/channel/pause?topic=t&channel=c",
    ] {
        assert_eq!(d.http("POST", p, b"").status, 200, "{p}");
    }
    for (m, p) in [
        ("POST", "/topic/foo?topic=t"),
        ("GET", "/topic/foo?topic=t"),
        ("POST", "/channel/foo?topic=t&channel=c"),
        ("PUT", "/channel/foo"),
    ] {
        let r = d.http(m, p, b"");
        assert_eq!(
            (r.status, r.text().as_str()),
            (404, r#"{"message":"NOT_FOUND"}"#),
            "{m} {p}"
        );
    }
    let v = d.http("GET", "/stats?format=json", b"").json();
    assert_eq!(v["topics"][0]["paused"], true);
    assert_eq!(v["topics"][0]["channels"][0]["paused"], true);
    // A known action with the wrong method is still 405.
    assert_eq!(d.http("GET", "/topic/pause?topic=t", b"").status, 405);
}

/// Details of nsqd's query parsing (Go's `url.ParseQuery`), `/stats` and `/config`.
#[test]
fn query_stats_and_config_details_as_nsqd() {
    let d = Nsqd::start(&["--e2e-processing-latency-percentile=0.99"]);
    for (m, p) in [
        ("POST", "/pub?topic=a;b"),
        ("GET", "/stats?format=json;x"),
        ("POST", "/pub?topic=t%+1"),
    ] {
        let r = d.http(m, p, b"x");
        assert_eq!(
            (r.status, r.text().as_str()),
            (400, r#"{"message":"INVALID_REQUEST"}"#),
            "{p}"
        );
    }
    // Not UTF-8 once decoded: Go keeps the bytes, and no name check accepts them.
    let r = d.http("POST", "/pub?topic=%FF", b"x");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"message":"INVALID_TOPIC"}"#)
    );

    // A producer whose client_id Go's JSON encoder escapes.
    let mut c = d.client();
    c.cmd(&Command::Identify(br#"{"client_id":"a<b>&c"}"#.to_vec()));
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Pub {
        topic: "t1".into(),
        body: b"x".as_slice().into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    assert_eq!(d.http("POST", "/topic/create?topic=t2", b"").status, 200);

    // Empty filters filter nothing.
    let r = d.http("GET", "/stats?format=json&topic=&channel=", b"");
    let text = r.text();
    assert!(
        text.contains(r#""client_id":"a\u003cb\u003e\u0026c""#),
        "{text}"
    );
    let v = r.json();
    let names: Vec<&str> = v["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| t["topic_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t1", "t2"]);
    assert_eq!(v["producers"][0]["state"], 0, "nsqd's stateInit");
    // No channel keeps latencies: nsqd's nil stream.
    assert_eq!(
        v["topics"][0]["e2e_processing_latency"],
        serde_json::json!({"count": 0, "percentiles": null})
    );

    // Text stats: the uptime as Go prints a Duration (sub-second digits).
    let t = d.http("GET", "/stats", b"").text();
    let up = t
        .lines()
        .find(|l| l.starts_with("uptime "))
        .expect("uptime");
    assert!(up.contains('.') && up.ends_with('s'), "{up}");

    let r = d.http("GET", "/config/auth_http_request_method", b"");
    assert_eq!((r.status, r.text().as_str()), (200, "get"));
}

/// On SIGTERM the server closes every client's connection and exits, as nsqd does, whoever is
/// still connected: an idle keep-alive HTTP connection (a client library's pool keeps one) and
/// an idle TCP client held it open for ever (gnsq's own test harness waits for the exit).
#[test]
fn sigterm_closes_idle_connections_and_exits() {
    use std::io::{Read, Write};
    let d = Nsqd::start(&[]);
    let mut http = std::net::TcpStream::connect(d.http).unwrap();
    http.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let mut got = [0u8; 512];
    let n = http.read(&mut got).unwrap();
    assert!(got[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &got[..n]);
    let mut tcp = d.client();
    tcp.cmd(&Command::Nop);
    // (It exits in milliseconds; `terminate` allows a busy machine 10 s. Before, it never did.)
    let status = d.terminate();
    assert!(status.success(), "{status:?}");
    // Both connections were closed: reading finds their end.
    http.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    assert_eq!(http.read(&mut got).unwrap_or(0), 0);
    assert!(tcp.closed_within(std::time::Duration::from_secs(20)));
}

/// A body over `--max-msg-size` is answered 413 from its head, before the body is read. A
/// client that sends its body after the head (here, once the answer is out) must still get
/// that answer rather than a broken pipe: the server closes its sending side, waits, and only
/// then closes (Go's `closeWriteAndWait`), so the body's bytes meanwhile are taken, and the
/// answer is read before the connection ends.
#[test]
fn a_413_can_be_read_by_a_client_still_sending_its_body() {
    use std::io::{Read, Write};
    let d = Nsqd::start(&["--max-msg-size=1000"]);
    for round in 0..3 {
        let mut s = std::net::TcpStream::connect(d.http).unwrap();
        s.write_all(b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n")
            .unwrap();
        // The answer goes out meanwhile (nsqd, and Go, answer from the head). Well inside the
        // 500 ms the server waits before closing, on a busy machine too.
        std::thread::sleep(std::time::Duration::from_millis(50));
        for i in 0..10 {
            if let Err(e) = s.write_all(&[b'x'; 20_000]) {
                panic!("round {round}: writing the body, piece {i}: {e}");
            }
        }
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let read = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        assert!(read.is_ok(), "round {round}: {read:?} after {text:?}");
        assert!(
            text.starts_with("HTTP/1.1 413 Request Entity Too Large\r\n")
                && text.ends_with(r#"{"message":"MSG_TOO_BIG"}"#),
            "round {round}: {text}"
        );
    }
}
