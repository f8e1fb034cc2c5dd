"""Interop check with pynsq (PyPI), unchanged, against a running nsqd.

usage: pynsq_check.py <tcp-host:port> <topic> [plain|tls|snappy|deflate|tls+snappy|tls+deflate]
Publishes with PUB, MPUB and DPUB through nsq.Writer, consumes with nsq.Reader, and checks:
every message arrives; FIN finishes; REQ redelivers with attempts+1; TOUCH extends; a message
the handler never answers times out and comes back with attempts+1; DPUB is not early.
Prints "pynsq: N passed, 0 failed" and exits 0 on success.
"""
import sys
import time

import nsq
import tornado.ioloop

from checks import check, conn_options, finish

addr, topic = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "plain"
conn_opts = conn_options(mode)
io = tornado.ioloop.IOLoop.current()
published = {}
seen = {}
done = set()
dpub_due = {}
expected = set()


def on_pub(conn, data):
    check(not isinstance(data, nsq.Error), "publish answered OK: %r" % (data,))


writer = nsq.Writer([addr], **conn_opts)


def publish():
    for i in range(10):
        body = ("pub-%d" % i).encode()
        expected.add(body)
        writer.pub(topic, body, callback=on_pub)
    bodies = [("mpub-%d" % i).encode() for i in range(10)]
    expected.update(bodies)
    writer.mpub(topic, bodies, callback=on_pub)
    for name in (b"req-me", b"timeout-me", b"touch-me"):
        expected.add(name)
        writer.pub(topic, name, callback=on_pub)
    expected.add(b"dpub-300")
    dpub_due[b"dpub-300"] = time.time() + 0.3
    writer.dpub(topic, 300, b"dpub-300", callback=on_pub)


def handler(message):
    body = bytes(message.body)
    seen.setdefault(body, []).append(message.attempts)
    if body in dpub_due:
        check(time.time() >= dpub_due[body] - 0.005, "DPUB not early (%.3fs)" % (time.time() - dpub_due[body]))
    if body == b"req-me" and message.attempts == 1:
        message.enable_async()
        message.requeue(time_ms=50, backoff=False)
        return
    if body == b"timeout-me" and message.attempts == 1:
        message.enable_async()  # never answer: the server must time it out
        return
    if body == b"touch-me":
        message.enable_async()
        message.touch()
        io.call_later(0.2, message.finish)
        done.add(body)
        maybe_stop()
        return
    done.add(body)
    maybe_stop()
    return True


def maybe_stop():
    if expected and expected <= done:
        io.call_later(0.3, io.stop)


reader = nsq.Reader(
    topic=topic,
    channel="interop",
    nsqd_tcp_addresses=[addr],
    message_handler=handler,
    max_in_flight=5,
    msg_timeout=2,  # seconds in pynsq
    lookupd_poll_interval=15,
    **conn_opts
)

io.call_later(0.5, publish)
io.call_later(20, io.stop)
io.start()

for conn in reader.conns.values():
    sock = type(conn.socket).__name__
    if "tls" in mode:
        check(type(conn.stream).__name__ == "SSLIOStream", "TLS negotiated (%s)" % type(conn.stream).__name__)
    if "snappy" in mode:
        check(sock == "SnappySocket", "snappy negotiated (%s)" % sock)
    if "deflate" in mode:
        check(sock == "DeflateSocket", "deflate negotiated (%s)" % sock)
    if mode == "plain":
        check(sock == "socket", "no upgrade (%s)" % sock)
check(len(reader.conns) == 1, "reader connected")
check(expected <= done, "all messages finished; missing %r" % sorted(expected - done))
check(seen.get(b"req-me", [])[:2] == [1, 2], "REQ redelivers with attempts+1: %r" % seen.get(b"req-me"))
check(seen.get(b"timeout-me", [])[:2] == [1, 2], "timeout redelivers with attempts+1: %r" % seen.get(b"timeout-me"))
check(seen.get(b"touch-me") == [1], "TOUCHed message delivered once: %r" % seen.get(b"touch-me"))
for body, attempts in seen.items():
    if body not in (b"req-me", b"timeout-me"):
        check(attempts == [1], "%r delivered once: %r" % (body, attempts))
finish("pynsq")
