#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds for fuzz/http1_serve.c: a client's bytes on an HTTP/1.1 connection, Streamable HTTP
requests (pipelined, chunked, Expect: 100-continue) and WebSocket upgrades with the first masked
frames right after the head. Byte 0 is the harness's flags (piece size, max_message). Writes
fuzz/corpus/http1_serve/."""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "http1_serve")


def request(method, headers=(), body=None, path="/acp", chunked=False):
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    data = b""
    if body is not None:
        data = body.encode() if isinstance(body, str) else body
        if chunked:
            head += "Transfer-Encoding: chunked\r\n"
            half = len(data) // 2
            data = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (data[:half], data[half:]) if p) + b"0\r\n\r\n"
        else:
            head += f"Content-Length: {len(data)}\r\n"
    return (head + "\r\n").encode() + data


def frame(opcode, payload, fin=True):
    """A client frame, masked (a server must refuse unmasked ones)."""
    b = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        b += bytes([0x80 | n])
    elif n < 65536:
        b += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        b += bytes([0x80 | 127]) + struct.pack(">Q", n)
    key = b"\x01\x02\x03\x04"
    return b + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


JSON = ("Content-Type", "application/json")
ACCEPT = ("Accept", "application/json, text/event-stream")
SSE = ("Accept", "text/event-stream")
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
CID = ("Acp-Connection-Id", "00000000-0000-4000-8000-000000000000")
UPGRADE = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
           ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]


def msg(i, method, sid=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if sid:
        m["params"] = {"sessionId": sid}
    return json.dumps(m)


SEEDS = {
    "initialize": request("POST", [JSON, ACCEPT], INIT),
    # A whole connection, pipelined: initialize, session/new (the harness answers "s1"), a prompt
    # (the harness's update and request on s1 wait for a stream), the answer to the agent's
    # request, DELETE (the harness's connection id is this CID). No GET: over HTTP/1.1 a stream
    # holds its TCP connection, so what follows it waits until it ends.
    "session_flow": request("POST", [JSON, ACCEPT], INIT)
    + request("POST", [JSON, ACCEPT, CID], msg(1, "session/new"))
    + request("POST", [JSON, ACCEPT, CID, ("Acp-Session-Id", "s1")], msg(2, "session/prompt", "s1"))
    + request("POST", [JSON, ACCEPT, CID, ("Acp-Session-Id", "s1")],
              json.dumps({"jsonrpc": "2.0", "id": 0, "result": {}}))
    + request("DELETE", [CID]),
    # The same up to the prompt, then the session stream that takes what waited.
    "session_stream": request("POST", [JSON, ACCEPT], INIT)
    + request("POST", [JSON, ACCEPT, CID], msg(1, "session/new"))
    + request("POST", [JSON, ACCEPT, CID, ("Acp-Session-Id", "s1")], msg(2, "session/prompt", "s1"))
    + request("GET", [SSE, CID, ("Acp-Session-Id", "s1")]),
    "connection_stream": request("POST", [JSON, ACCEPT], INIT) + request("GET", [SSE, CID]),
    "chunked": request("POST", [JSON, ACCEPT], INIT, chunked=True),
    "expect_continue": request("POST", [JSON, ACCEPT, ("Expect", "100-continue")], INIT),
    "keepalive_http10": b"POST /acp HTTP/1.0\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(INIT)}\r\n\r\n{INIT}".encode(),
    "not_found_then_post": request("GET", [], path="/other") + request("POST", [JSON, ACCEPT], INIT),
    "too_big": request("POST", [JSON, ACCEPT], "x" * 5000),
    "bad_request": b"GET /acp HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n" + request("GET", [SSE, CID]),
    "websocket": request("GET", UPGRADE) + frame(1, INIT.encode()) + frame(9, b"hi") + frame(8, b"\x03\xe8"),
    "websocket_fragmented": request("GET", UPGRADE) + frame(1, INIT[:10].encode(), fin=False)
    + frame(0, INIT[10:].encode()),
    "websocket_bad_key": request("GET", UPGRADE[:3] + [("Sec-WebSocket-Key", "short")]),
    "websocket_version": request("GET", UPGRADE[:2] + [("Sec-WebSocket-Version", "8"), UPGRADE[3]]),
    "websocket_post": request("POST", UPGRADE, "{}"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        # Pieces of 64 bytes (bits 0-2 = 3), max_message 4 KiB (bits 3-4 = 3).
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([0x1B]) + data)


if __name__ == "__main__":
    main()
