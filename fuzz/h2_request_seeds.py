#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds for fuzz/h2_request.c: HTTP/2 client frames (after the preface and SETTINGS the harness
sends) carrying Streamable HTTP requests. Header blocks are HPACK literals without indexing, so
the fuzzer can see and change every name and value. Writes fuzz/corpus/h2_request/."""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "h2_request")


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def hint(n, prefix, first=0):
    limit = (1 << prefix) - 1
    if n < limit:
        return bytes([first | n])
    out = [first | limit]
    n -= limit
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])


def block(fields):
    b = b""
    for name, value in fields:
        b += b"\x00" + hint(len(name), 7) + name.encode() + hint(len(value), 7) + value.encode()
    return b


def request(stream, method, headers=(), body=None, path="/acp"):
    fields = [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)]
    fields += list(headers)
    out = frame(1, 0x4 | (0 if body is not None else 0x1), stream, block(fields))
    if body is not None:
        out += frame(0, 0x1, stream, body.encode() if isinstance(body, str) else body)
    return out


JSON = ("content-type", "application/json")
SSE = ("accept", "text/event-stream")
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
# A connection id the harness cannot know: requests with it get 404, which is still a path.
CID = ("acp-connection-id", "00000000-0000-4000-8000-000000000000")


def msg(i, method, sid=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if sid:
        m["params"] = {"sessionId": sid}
    return json.dumps(m)


SEEDS = {
    "initialize": request(1, "POST", [JSON], INIT),
    "initialize_then_get": request(1, "POST", [JSON], INIT) + request(3, "GET", [SSE, CID]),
    # A whole connection: initialize, both streams, a prompt, the answer to the agent's request,
    # a notification, then DELETE (the harness's connection id is this CID).
    "session_flow": request(1, "POST", [JSON], INIT)
    + request(3, "GET", [SSE, CID])
    + request(5, "GET", [SSE, CID, ("acp-session-id", "s1")])
    + request(7, "POST", [JSON, CID, ("acp-session-id", "s1")], msg(1, "session/prompt", "s1"))
    + request(9, "POST", [JSON, CID, ("acp-session-id", "s1")], json.dumps({"jsonrpc": "2.0", "id": 0, "result": {}}))
    + request(11, "POST", [JSON, CID, ("acp-session-id", "s1")], json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}))
    + request(13, "POST", [JSON, CID], msg("x", "session/load", "s2"))
    + frame(3, 0, 5, struct.pack(">I", 8))
    + request(15, "DELETE", [CID]),
    "get_session": request(1, "GET", [SSE, CID, ("acp-session-id", "s1")]),
    "post_prompt": request(1, "POST", [JSON, CID, ("acp-session-id", "s1")], msg(1, "session/prompt", "s1")),
    "post_no_cid": request(1, "POST", [JSON], msg(1, "session/new")),
    "batch": request(1, "POST", [JSON], "[" + INIT + "]"),
    "bad_json": request(1, "POST", [JSON], "{\"jsonrpc\":"),
    "wrong_type": request(1, "POST", [("content-type", "text/plain")], INIT),
    "delete": request(1, "DELETE", [CID]),
    "put": request(1, "PUT", [JSON], "{}"),
    "not_acp": request(1, "GET", [], path="/other"),
    "too_big": request(1, "POST", [JSON], "x" * 5000),
    "content_length": request(1, "POST", [JSON, ("content-length", "99999999")], "{}"),
    "split_body": frame(1, 0x4, 1, block([(":method", "POST"), (":scheme", "http"), (":path", "/acp"), JSON]))
    + frame(0, 0, 1, INIT[:20].encode())
    + frame(0, 0x1, 1, INIT[20:].encode()),
    "reset": request(1, "GET", [SSE, CID]) + frame(3, 0, 1, struct.pack(">I", 8)),
    "cookies": request(1, "POST", [JSON, ("cookie", "a=1"), ("cookie", "b=2")], INIT),
    "window_ping_goaway": request(1, "POST", [JSON], INIT)
    + frame(8, 0, 0, struct.pack(">I", 1000))
    + frame(6, 0, 0, b"12345678")
    + frame(7, 0, 0, struct.pack(">II", 1, 0)),
    # Issue 21: many streams on one connection, each with an unfinished body (no END_STREAM):
    # together past the harness's max_message (4096), past the 256 concurrent streams.
    "many_unfinished": b"".join(
        frame(1, 0x4, 2 * i + 1, block([(":method", "POST"), (":scheme", "http"), (":path", "/acp"), JSON]))
        + frame(0, 0, 2 * i + 1, b"{" + b" " * 200)
        for i in range(260)
    ),
    # Some finish, some never do, one is reset midway, then more arrive.
    "many_mixed": b"".join(
        frame(1, 0x4, 2 * i + 1, block([(":method", "POST"), (":scheme", "http"), (":path", "/acp"), JSON]))
        + frame(0, 0, 2 * i + 1, INIT[:30].encode())
        + (frame(0, 0x1, 2 * i + 1, INIT[30:].encode()) if i % 3 == 0 else b"")
        + (frame(3, 0, 2 * i + 1, struct.pack(">I", 8)) if i % 7 == 0 else b"")
        for i in range(40)
    )
    + request(81, "POST", [JSON], INIT),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, frames in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([128]) + frames)


if __name__ == "__main__":
    main()
