"""pynsq (PyPI, unchanged) consuming through nsqlookupd.

usage: pynsq_lookupd.py <lookupd-http,lookupd-http,...> <topic> <expected-count> [timeout-s]
A nsq.Reader given only lookupd HTTP addresses (polled every second) finds every nsqd that
has the topic and consumes. Prints one line: "received N distinct from nodes [...]"; exits 0
once it has the expected number of distinct bodies, 1 on timeout.
"""
import sys

import nsq
import tornado.ioloop

lookupds = sys.argv[1].split(",")
topic = sys.argv[2]
want = int(sys.argv[3])
timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 30
io = tornado.ioloop.IOLoop.current()
bodies = set()
nodes = set()


def handler(message):
    bodies.add(message.body)
    nodes.add(message.body.split(b"-")[0].decode())
    if len(bodies) >= want:
        io.call_later(0.2, io.stop)
    return True


reader = nsq.Reader(
    topic=topic,
    channel="via_lookupd",
    lookupd_http_addresses=["http://" + a for a in lookupds],
    lookupd_poll_interval=1,
    message_handler=handler,
    max_in_flight=50,
)
io.call_later(timeout, io.stop)
io.start()
print("received %d distinct from nodes %s" % (len(bodies), sorted(nodes)), flush=True)
sys.exit(0 if len(bodies) >= want else 1)
