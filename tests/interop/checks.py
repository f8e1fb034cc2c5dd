"""Shared by the Python interop checks (pynsq_check.py, gnsq_check.py).

conn_options(mode): the connection options a mode (plain, tls, snappy, deflate, auth, joined
with +) names; pynsq and gnsq take the same keyword names. check(cond, what) counts a check
and prints a failure; finish(name) prints "<name>: N passed, M failed" and exits 1 on any.
"""
import ssl
import sys

_checks = 0
_failures = []


def conn_options(mode, deflate_level=6):
    opts = {}
    if "tls" in mode:
        opts["tls_v1"] = True
        opts["tls_options"] = {"cert_reqs": ssl.CERT_NONE}
    if "snappy" in mode:
        opts["snappy"] = True
    if "deflate" in mode:
        opts["deflate"] = True
        opts["deflate_level"] = deflate_level
    if "auth" in mode:
        opts["auth_secret"] = b"pynsq-secret"
    return opts


def check(cond, what):
    global _checks
    _checks += 1
    if not cond:
        _failures.append(what)
        print("FAIL:", what, flush=True)


def failed():
    return len(_failures)


def finish(name):
    print("%s: %d passed, %d failed" % (name, _checks - len(_failures), len(_failures)), flush=True)
    sys.exit(1 if _failures else 0)
