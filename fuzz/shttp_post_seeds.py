#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds for fuzz/shttp_post.c: request sequences against the Streamable HTTP profile (records
separated by NUL: op byte, session id length, session id, body; see that file). Writes
fuzz/corpus/shttp_post/."""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "shttp_post")
POST, INIT, GET, GETS, DELETE, ABORT, READ, AGENT = range(8)


def rec(op, body="", sid=""):
    return bytes([op, len(sid)]) + sid.encode() + body.encode()


def seq(*recs):
    return b"\0".join(recs)


def m(**kw):
    return json.dumps({"jsonrpc": "2.0", **kw})


INITM = m(id=0, method="initialize", params={"protocolVersion": 1})
UPDATE = m(method="session/update", params={"sessionId": "s1", "update": {"x": "y" * 300}})

SEEDS = {
    "flow": seq(
        rec(INIT, INITM),
        rec(GET),
        rec(GETS, sid="s1"),
        rec(POST, m(id=1, method="session/prompt", params={"sessionId": "s1"}), "s1"),
        rec(AGENT, UPDATE),
        rec(AGENT, m(id=1, result={"stopReason": "end_turn"})),
        rec(AGENT, m(id=0, method="session/request_permission", params={"sessionId": "s1"})),
        rec(POST, m(id=0, result={}), "s1"),
        rec(READ),
        rec(DELETE),
    ),
    "backpressure": seq(
        rec(INIT, INITM),
        rec(AGENT, UPDATE),
        rec(AGENT, UPDATE),
        rec(POST, m(id=2, method="session/list")),
        rec(POST, m(method="session/cancel", params={"sessionId": "s1"}), "s1"),
        rec(GETS, sid="s1"),
        rec(READ),
        rec(ABORT),
    ),
    "load": seq(
        rec(INIT, INITM),
        rec(GET),
        rec(GETS, sid="s9"),
        rec(POST, m(id=3, method="session/load", params={"sessionId": "s9"}), "s9"),
        rec(AGENT, m(method="session/update", params={"sessionId": "s9"})),
        rec(AGENT, m(id=3, result={})),
        rec(ABORT),
        rec(ABORT),
    ),
    "refusals": seq(
        rec(POST, m(id=1, method="session/new")),
        rec(INIT, "[" + INITM + "]"),
        rec(INIT, "{"),
        rec(INIT, m(id=None, method="initialize")),
        rec(INIT, INITM),
        rec(INIT, INITM),
        rec(POST, INITM),
        rec(POST, m(id=1, method="session/prompt", params={"sessionId": "a"}), "b"),
        rec(GET),
        rec(GET),
        rec(DELETE),
        rec(DELETE),
    ),
    "init_abort": seq(rec(AGENT, "{}"), rec(INIT, m(id=5, method="initialize")), rec(ABORT), rec(READ)),
    # Issue 21: ids that are not a string, a number or null, and over-long ones, refused before
    # a route is stored; initialize with one too.
    "nonscalar_ids": seq(
        rec(INIT, INITM),
        rec(POST, m(id={"a": [1, {"b": None}]}, method="session/list")),
        rec(POST, m(id=[1, 2], method="session/list")),
        rec(POST, m(id=True, method="session/list")),
        rec(POST, m(id=False, method="_x")),
        rec(POST, m(id=None, method="_x")),
        rec(POST, '{"jsonrpc":"2.0","method":"_x","id":' + "9" * 1100 + "}"),
        rec(POST, m(id="x" * 1100, method="_x")),
        rec(POST, m(id=1.5e300, method="_x")),
        rec(INIT, m(id={"x": 1}, method="initialize")),
        rec(INIT, m(id=[0], method="initialize")),
        rec(AGENT, m(id=None, error={"code": -32600, "message": "x"})),
        rec(DELETE),
    ),
    # Issue 21: initialize in a loop from one socket (op / 8 names it) and from others: the
    # per-socket and total bounds.
    "init_flood": seq(*[rec(INIT + 8 * (1 if i < 40 else 2), INITM) for i in range(60)]),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
