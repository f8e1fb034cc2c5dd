"""Interop check with gnsq (PyPI), unchanged, against a running nsqd (and nsqlookupd).

usage: gnsq_check.py <tcp-host:port> <http-host:port> <lookupd-http-host:port or -> <topic>
                     [plain|snappy|deflate|tls|tls+snappy]

gnsq speaks to nsqd three ways, and each is checked:
- NsqdTCPClient, gnsq's raw V2 connection: IDENTIFY's negotiated features, the upgrades,
  PUB/MPUB/DPUB answers, SUB/RDY, a delivered message's fields, TOUCH, REQ, FIN, and nsqd's
  error frames as gnsq's exception classes (E_FIN_FAILED non-fatal, E_INVALID fatal).
- Producer (plain: see below) and Consumer: every message published arrives once FINed, a requeued one comes
  back with attempts 2, a deferred one is not early.
- NsqdHTTPClient (plain mode): every endpoint it wraps, the answers it expects, and an error
  status as its NSQHttpError; LookupdClient and a Consumer given only nsqlookupd.
Prints "gnsq: N passed, 0 failed" and exits 0 on success.
"""
import sys
import time

import gevent
import gnsq
from gnsq import errors

from checks import check, conn_options, finish

tcp, http_addr, lookupd, topic = sys.argv[1:5]
mode = sys.argv[5] if len(sys.argv) > 5 else "plain"
host, port = tcp.split(":")
port = int(port)
conn_opts = conn_options(mode, deflate_level=3)


def read_frame(conn, want_type, what):
    """The next frame that is not a heartbeat (gnsq answers those with NOP itself)."""
    while True:
        frame, data = conn.read_response()
        if frame == gnsq.protocol.FRAME_TYPE_RESPONSE and data == gnsq.protocol.HEARTBEAT:
            continue
        check(frame == want_type, "%s: frame type %r, want %r (%r)" % (what, frame, want_type, data))
        return data


def raw_connection():
    """gnsq's NsqdTCPClient: the protocol one frame at a time."""
    conn = gnsq.NsqdTCPClient(host, port, timeout=10, **conn_opts)
    conn.connect()
    features = conn.identify()
    check(isinstance(features, dict), "IDENTIFY negotiates features: %r" % (features,))
    check(features.get("version") == "1.3.0", "IDENTIFY version: %r" % (features,))
    check(features.get("max_rdy_count") == 2500, "max_rdy_count: %r" % (features,))
    check(features.get("msg_timeout") == 60000, "msg_timeout: %r" % (features,))
    check(features.get("tls_v1") == ("tls" in mode), "tls_v1 negotiated: %r" % (features,))
    check(features.get("snappy") == ("snappy" in mode), "snappy negotiated: %r" % (features,))
    check(features.get("deflate") == ("deflate" in mode), "deflate negotiated: %r" % (features,))
    if "deflate" in mode:
        check(features.get("deflate_level") == 3, "deflate_level echoed: %r" % (features,))
    check(features.get("auth_required") is False, "auth_required: %r" % (features,))
    return conn


def raw_checks():
    ok = gnsq.protocol.OK
    RESPONSE, ERROR, MESSAGE = (
        gnsq.protocol.FRAME_TYPE_RESPONSE,
        gnsq.protocol.FRAME_TYPE_ERROR,
        gnsq.protocol.FRAME_TYPE_MESSAGE,
    )
    raw_topic = topic + "_raw"
    pub = raw_connection()
    pub.publish(raw_topic, b"raw-1")
    check(read_frame(pub, RESPONSE, "PUB") == ok, "PUB answers OK")
    pub.multipublish(raw_topic, [b"raw-2", b"raw-3"])
    check(read_frame(pub, RESPONSE, "MPUB") == ok, "MPUB answers OK")
    pub.publish(raw_topic, b"raw-deferred", defer=300)
    deferred_at = time.time()
    check(read_frame(pub, RESPONSE, "DPUB") == ok, "DPUB answers OK")
    # An empty body is E_BAD_MESSAGE, fatal: gnsq's NSQBadMessage, and the connection closes.
    pub.publish(raw_topic, b"")
    err = read_frame(pub, ERROR, "PUB empty")
    check(isinstance(err, errors.NSQBadMessage), "empty PUB is NSQBadMessage: %r" % (err,))
    check(err.args[0] == b"PUB invalid message body size 0", "E_BAD_MESSAGE text: %r" % (err.args,))
    check(not pub.is_connected, "a fatal error closes gnsq's connection")

    sub = raw_connection()
    sub.subscribe(raw_topic, "raw")
    check(read_frame(sub, RESPONSE, "SUB") == ok, "SUB answers OK")
    sub.ready(10)
    got = {}
    while len(got) < 3:
        msg = read_frame(sub, MESSAGE, "message")
        if not isinstance(msg, gnsq.Message):
            break
        got[msg.body] = msg
    check(sorted(got) == [b"raw-1", b"raw-2", b"raw-3"], "raw SUB gets PUB and MPUB: %r" % (sorted(got),))
    for m in got.values():
        check(m.attempts == 1, "first delivery has attempts 1: %r" % (m.attempts,))
        check(len(m.id) == 16, "message ID is 16 bytes: %r" % (m.id,))
        check(abs(m.timestamp / 1e9 - time.time()) < 30, "timestamp is ns since the epoch: %r" % (m.timestamp,))
    m1, m2, m3 = got[b"raw-1"], got[b"raw-2"], got[b"raw-3"]
    sub.touch(m1.id)
    sub.finish(m1.id)
    sub.requeue(m2.id, 0)
    again = read_frame(sub, MESSAGE, "requeued message")
    check(getattr(again, "body", None) == b"raw-2" and again.attempts == 2,
          "REQ redelivers with attempts 2: %r" % (again,))
    sub.finish(again.id)
    sub.finish(m3.id)
    late = read_frame(sub, MESSAGE, "deferred message")
    check(getattr(late, "body", None) == b"raw-deferred", "the DPUB arrives: %r" % (late,))
    check(time.time() - deferred_at >= 0.3 - 0.005, "the DPUB is not early")
    sub.finish(late.id)
    # FIN of a finished message: E_FIN_FAILED, not fatal.
    sub.finish(m1.id)
    err = read_frame(sub, ERROR, "FIN again")
    check(isinstance(err, errors.NSQFinishFailed), "FIN again is NSQFinishFailed: %r" % (err,))
    check(err.args[0] == b"FIN %s failed ID not in flight" % m1.id,
          "E_FIN_FAILED text: %r" % (err.args,))
    check(sub.is_connected, "a non-fatal error keeps the connection")
    # A second SUB: E_INVALID, fatal.
    sub.subscribe(raw_topic, "raw")
    err = read_frame(sub, ERROR, "SUB again")
    check(isinstance(err, errors.NSQInvalid), "SUB again is NSQInvalid: %r" % (err,))
    check(err.args[0] == b"cannot SUB in current state", "E_INVALID text: %r" % (err.args,))
    check(not sub.is_connected, "the fatal error closed it")


def producer_consumer_checks():
    # gnsq 1.0.2's Producer cannot upgrade a connection against any nsqd (the upgrade's OK
    # reaches its response queue before the queue exists: KeyError), so it publishes over a
    # plain connection; the Consumer and the raw client use the mode's upgrades.
    producer = gnsq.Producer(nsqd_tcp_addresses=[tcp])
    producer.start()
    expected = set()
    for i in range(20):
        body = ("pub-%d" % i).encode()
        expected.add(body)
        check(producer.publish(topic, body) == b"OK", "Producer.publish answers OK")
    bodies = [("mpub-%d" % i).encode() for i in range(30)]
    expected.update(bodies)
    check(producer.multipublish(topic, bodies) == b"OK", "Producer.multipublish answers OK")
    due = time.time() + 0.25
    check(producer.publish(topic, b"dpub", defer=250) == b"OK", "Producer.publish(defer=) answers OK")
    expected.add(b"dpub")

    seen = {}
    requeued = []
    consumer = gnsq.Consumer(topic, "pc", nsqd_tcp_addresses=[tcp], max_in_flight=8, **conn_opts)

    @consumer.on_message.connect
    def handler(consumer, message):
        body = message.body
        if body == b"dpub":
            check(time.time() >= due - 0.005, "the deferred message is not early")
        if body == b"pub-3" and message.attempts == 1:
            requeued.append(body)
            message.requeue(0, backoff=False)
            return
        if body == b"pub-3":
            check(message.attempts == 2, "a requeued message comes back with attempts 2")
        seen[body] = seen.get(body, 0) + 1
        message.finish()

    consumer.start(block=False)
    deadline = time.time() + 15
    while set(seen) != expected and time.time() < deadline:
        gevent.sleep(0.05)
    check(set(seen) == expected, "Consumer gets every message: missing %r" % (sorted(expected - set(seen)),))
    check(all(n == 1 for n in seen.values()), "each FINed message arrives once: %r" % (seen,))
    check(requeued == [b"pub-3"], "one message was requeued: %r" % (requeued,))
    consumer.close()
    consumer.join(timeout=5)
    producer.close()
    producer.join(timeout=5)


def http_checks():
    h = gnsq.NsqdHTTPClient.from_url("http://" + http_addr)
    t = topic + "_http"
    check(h.ping() == b"OK", "ping")
    info = h.info()
    check(info.get("version") == "1.3.0" and info.get("tcp_port") == port, "info: %r" % (info,))
    check(h.create_topic(t) == b"", "topic/create answers an empty body")
    check(h.create_channel(t, "c") == b"", "channel/create answers an empty body")
    check(h.publish(t, b"one") == b"OK", "pub answers OK")
    check(h.publish(t, b"later", defer=60000) == b"OK", "pub?defer= answers OK")
    check(h.multipublish(t, [b"a", b"b"]) == b"OK", "mpub answers OK")
    check(h.multipublish(t, [b"x\ny", b"z"], binary=True) == b"OK", "mpub?binary=true answers OK")
    stats = h.stats(topic=t, channel="c")
    topics = stats.get("topics", [])
    check(len(topics) == 1 and topics[0]["topic_name"] == t, "stats?topic= filters: %r" % (topics,))
    ch = topics[0]["channels"][0] if topics and topics[0]["channels"] else {}
    check(ch.get("depth") == 5 and ch.get("deferred_count") == 1 and ch.get("message_count") == 6,
          "channel depth 5, deferred 1, messages 6: %r" % (ch,))
    text = h.stats(topic=t, text=True)
    check(text.startswith(b"nsqd v1.3.0") and (b"[%s" % t.encode()) in text, "stats as text: %r" % (text[:200],))
    for call, want in [
        (lambda: h.pause_channel(t, "c"), True),
        (lambda: h.unpause_channel(t, "c"), False),
        (lambda: h.pause_topic(t), True),
        (lambda: h.unpause_topic(t), False),
    ]:
        check(call() == b"", "pause/unpause answers an empty body")
    paused = h.stats(topic=t)["topics"][0]
    check(paused["paused"] is False and paused["channels"][0]["paused"] is False, "unpaused again: %r" % (paused,))
    check(h.empty_channel(t, "c") == b"", "channel/empty answers an empty body")
    check(h.stats(topic=t)["topics"][0]["channels"][0]["depth"] == 0, "channel/empty empties")
    check(h.empty_topic(t) == b"", "topic/empty answers an empty body")
    try:
        h.publish(t, b"")
        check(False, "an empty /pub body is an error")
    except errors.NSQHttpError as e:
        check(str(e) == "http error <400>", "empty /pub is a 400: %r" % (str(e),))
    try:
        h.delete_channel(t, "nope")
        check(False, "deleting a missing channel is an error")
    except errors.NSQHttpError as e:
        check(str(e) == "http error <404>", "missing channel is a 404: %r" % (str(e),))
    check(h.delete_channel(t, "c") == b"", "channel/delete answers an empty body")
    check(h.delete_topic(t) == b"", "topic/delete answers an empty body")
    gone = h.stats(topic=t)
    check(gone["topics"] is None and gone["producers"] is None, "the topic is gone (nsqd: null lists): %r" % (gone,))


def lookupd_checks():
    lk = gnsq.LookupdClient.from_url("http://" + lookupd)
    t = topic + "_lookupd"
    h = gnsq.NsqdHTTPClient.from_url("http://" + http_addr)
    h.create_topic(t)
    h.create_channel(t, "via_lookupd")
    deadline = time.time() + 10
    found = {}
    while time.time() < deadline:
        # nsqd registers with nsqlookupd in the background; until the topic arrives, /lookup
        # answers 404 TOPIC_NOT_FOUND, as nsqlookupd does.
        try:
            found = lk.lookup(t)
        except errors.NSQHttpError as e:
            check(str(e) == "http error <404>", "lookup before registration is a 404: %r" % (str(e),))
            found = {}
        if found.get("producers") and found.get("channels"):
            break
        gevent.sleep(0.05)
    producers = found.get("producers", [])
    check(len(producers) == 1 and producers[0]["tcp_port"] == port, "lookup lists our nsqd: %r" % (found,))
    check(found.get("channels") == ["via_lookupd"], "lookup lists the channel: %r" % (found,))
    check(t in lk.topics().get("topics", []), "topics lists it")
    check(lk.channels(t).get("channels") == ["via_lookupd"], "channels lists it")
    nodes = lk.nodes().get("producers", [])
    check(any(n["tcp_port"] == port and t in n["topics"] for n in nodes), "nodes lists our nsqd: %r" % (nodes,))
    check(lk.ping() == b"OK", "lookupd ping")

    bodies = [("via-lookupd-%d" % i).encode() for i in range(10)]
    h.multipublish(t, bodies)
    seen = set()
    consumer = gnsq.Consumer(t, "via_lookupd", lookupd_http_addresses=["http://" + lookupd], max_in_flight=4)

    @consumer.on_message.connect
    def handler(consumer, message):
        seen.add(message.body)
        message.finish()

    consumer.start(block=False)
    deadline = time.time() + 10
    while len(seen) < len(bodies) and time.time() < deadline:
        gevent.sleep(0.05)
    check(seen == set(bodies), "a Consumer given only nsqlookupd gets every message: %r" % (sorted(seen),))
    consumer.close()
    consumer.join(timeout=5)


raw_checks()
producer_consumer_checks()
if mode == "plain":
    http_checks()
if lookupd != "-":
    lookupd_checks()
finish("gnsq (%s)" % mode)
