//! The real binary's HTTP API: nsqd's status codes, bodies and headers.

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
