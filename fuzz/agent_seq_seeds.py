#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the hand-made seeds of fuzz/corpus/agent_seq/ (run from anywhere:
fuzz/agent_seq_seeds.py fuzz/corpus/agent_seq). The byte layout is agent_seq.c's: a variant
byte, then steps, each an op byte (bit 7 the second connection, bit 6 no loop turn after it,
the rest an index into `kinds`) and its param bytes, each an index into a dictionary. Keep the
tables below in step with agent_seq.c; seeds the fuzzer found are committed as it wrote them."""
import os, sys

# Index of each step kind in agent_seq.c's `kinds` (its first occurrence).
K = dict(init=0, auth=1, logout=2, new=3, load=5, resume=6, list=7, close=8, delete=9, prompt=10,
         cancel=13, mode=14, config=15, cancel_req=16, answer=17, ext=20, fault=21, tick=22, eof=23, restart=24)
# agent_seq.c's `texts`, by a short name.
T = {t: i for i, t in enumerate(["hello", "/stream 3 5", "/stream 0 1", "/stream 2 999", "/sleep 0", "/sleep long",
     "/sleep -5", "/title Fuzzed", "/title", "/plan", "/read a.txt", "/read sub/b.txt", "/read link", "/read /etc",
     "/read other", "/read missing", "/write new", "/write a", "/write other", "/write /etc", "/write", "/mcp",
     "/call ok", "/call bad", "/call", "/notice", "/compact", "/usage", "/mode ask", "/mode code", "/mode nope",
     "/set model", "/set verbose", "/set mode", "/set nope", "/term", "/term empty", "/ask", "/elicit", "/ext",
     "/unknown", "empty", "utf8", "/stream big"])}
# pick_caps: fs read and write, terminal, elicitation, notices and compaction, _meta.acp-agent.
ALL_CAPS = 0x8F | 0x10  # fs r/w, terminal, elicitation, notices+compaction, _meta
def step(kind, *params, conn=0, pipe=False):
    return bytes([(0x80 if conn else 0) | (0x40 if pipe else 0) | K[kind]] + list(params))
def seed(name, variant, *steps):
    d = sys.argv[1]
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes([variant]) + b"".join(steps))
def init(conn=0, caps=ALL_CAPS): return step("init", 0, caps, conn=conn)
def prompt(sid, text, conn=0, shape=0, pipe=False): return step("prompt", sid, T[text], shape, conn=conn, pipe=pipe)
def new(conn=0, cwd=0, dirs=0, mcp=0, pipe=False): return step("new", cwd, dirs, mcp, conn=conn, pipe=pipe)
def load(sid, conn=0, cwd=0, dirs=0, mcp=0, kind="load"): return step(kind, sid, cwd, dirs, mcp, conn=conn)
def answer(how=0, pick=0, conn=0): return step("answer", pick, how, conn=conn)
# do_fault: the operation (store/inject.h), what happens at its step, which step of which call.
FOPS = dict(create=0, get=1, set_info=2, set_roots=3, set_state=4, append=5, commit=6, replay=7, list=8, delete=9, writes=10, all=11)
FHOW = dict(busy=0, full=1, ioerr=2, kill=3)
def fault(op, how="busy", at=1, nth=1, sid=0, conn=0, stays=False):
    return step("fault", FOPS[op] + 12 * FHOW[how], 0xf0 + at if stays else at + 4 * (nth - 1), sid, conn=conn)


seed("lifecycle", 0, init(), new(), prompt(0, "hello"), prompt(0, "/plan"), step("list", 2, 3),
     step("close", 0), load(0), prompt(0, "utf8", shape=4), step("delete", 0), load(0))
seed("two_connections", 0, init(0), init(1), new(0), prompt(0, "hello"), load(0, conn=1),
     prompt(0, "/stream 3 5", conn=1), step("delete", 0, conn=1), prompt(0, "hello"), load(0),
     step("list", 2, 3, conn=1))
seed("client_calls", 0, init(), new(), prompt(0, "/ask"), answer(0), prompt(0, "/write new"), answer(0), answer(0),
     prompt(0, "/term"), answer(0), answer(0), answer(0), answer(0), answer(0), prompt(0, "/elicit"), answer(0),
     prompt(0, "/ext"), answer(0), prompt(0, "/read a.txt"), answer(0))
seed("client_refuses", 0, init(), new(), prompt(0, "/ask"), answer(14), prompt(0, "/write a"), answer(3),
     prompt(0, "/term"), answer(0), answer(1), prompt(0, "/elicit"), answer(3 * 16), answer(15),
     prompt(0, "/read a.txt"), answer(13))
seed("local_files", 0, init(caps=0), new(dirs=3), prompt(0, "/read a.txt"), prompt(0, "/read link"),
     prompt(0, "/read other"), prompt(0, "/write new"), answer(0), prompt(0, "/write other"), answer(0),
     prompt(0, "/write /etc"), prompt(0, "/read /etc"), prompt(0, "/mode ask"), prompt(0, "/write a"))
seed("cancel", 0, init(), new(), prompt(0, "/sleep long"), step("cancel", 0), prompt(0, "/ask"),
     step("cancel", 0), prompt(0, "/sleep long"), step("cancel_req", 4), prompt(0, "/term"),
     answer(0), step("close", 0), prompt(0, "/sleep long"))
seed("auth", 1, init(), new(), step("auth", 0), new(), prompt(0, "hello"), step("logout"),
     prompt(0, "hello"), step("list", 2, 3))
seed("auth_refused", 3, init(), step("auth", 0), step("auth", 1), step("auth", 2), new(), step("close", 200))
seed("eof_pending", 0, init(), new(), prompt(0, "/sleep long"), new(pipe=True), prompt(0, "/ask"),
     step("eof"), init(1), load(0, conn=1), step("restart"), init(), load(0), prompt(0, "/plan"))
seed("store_faults", 0, init(), new(), fault("commit", "ioerr"), prompt(0, "hello"), fault("replay", "busy", at=2),
     load(0), fault("set_state", "full"), step("mode", 0, 0), fault("delete"), step("delete", 0),
     fault("create", "busy", at=2), new(), fault("set_info"), prompt(0, "/title Fuzzed"),
     fault("append", "full"), prompt(0, "hello"), fault("list"), step("list", 2, 3),
     fault("all", "full", at=0, stays=True), new(), prompt(0, "hello"), load(0), step("delete", 0))
seed("delete_at_step", 0, init(0), init(1), new(0), prompt(0, "/stream 3 5"), step("tick", 3),
     fault("commit", "kill", at=1, sid=0), prompt(0, "hello"), new(1), fault("replay", "kill", at=1, sid=1, conn=1),
     load(1, conn=0), load(1, conn=1), fault("set_state", "kill", at=1, sid=1, conn=1), step("mode", 0, 1, conn=1),
     prompt(1, "hello"), step("list", 2, 3, conn=1))
seed("disabled", 12, init(), new(dirs=3), load(0), load(0, kind="resume"), step("list", 2, 3),
     step("close", 0), step("delete", 0), prompt(0, "hello"))
seed("bad_params", 0, step("init", 3, 0xFF), new(), init(), new(cwd=5), new(cwd=4), new(dirs=5),
     new(mcp=3), new(mcp=4), new(mcp=5), new(mcp=6), new(mcp=7), prompt(0, "hello", shape=6),
     prompt(0, "hello", shape=7), prompt(200, "hello"), prompt(196, "hello"), step("config", 9, 0),
     step("list", 1, 1), step("ext", 0), step("ext", 1), step("ext", 2), step("ext", 3), step("ext", 4))
seed("pipelined", 0, init(), new(pipe=True), prompt(0, "/sleep long", pipe=True),
     prompt(0, "hello", pipe=True), step("close", 0, pipe=True), load(0), step("tick", 5))
seed("modes", 0, init(), new(), step("mode", 0, 0), step("mode", 2, 0), step("config", 0, 0),
     step("config", 5, 0), step("config", 7, 0), step("config", 3, 0), prompt(0, "/mode code"),
     prompt(0, "/set model"), prompt(0, "/set verbose"), prompt(0, "hello"), load(0, conn=1),
     init(1), load(0, conn=1), prompt(0, "/set nope", conn=1))
seed("resume_and_double_load", 0, init(0), init(1), new(0), prompt(0, "/sleep long"),
     load(0, conn=1, kind="resume"), prompt(0, "/compact", conn=1), load(0), load(0),
     step("delete", 0, conn=1), prompt(0, "/usage"), step("tick", 3), step("list", 2, 3))
seed("mcp_and_commands", 0, init(), new(mcp=3), prompt(0, "/mcp"), prompt(0, "/call ok"),
     prompt(0, "/call bad"), prompt(0, "/notice"), prompt(0, "/compact"), prompt(0, "/usage"),
     prompt(0, "/stream 2 999"), prompt(0, "/sleep -5"), prompt(0, "/sleep 0"), step("tick", 2),
     prompt(0, "/title"), prompt(0, "/unknown"), prompt(0, "empty"))
seed("delete_during_load", 0, init(0), init(1), new(0), prompt(0, "/stream big"), step("tick", 5), step("close", 0),
     load(0), step("delete", 0, conn=1), step("tick", 3), load(0, conn=1), prompt(0, "hello"))
seed("two_loads", 0, init(0), init(1), new(0), prompt(0, "/stream big"), step("tick", 5), load(0, conn=1),
     load(0), prompt(0, "hello", conn=1), prompt(0, "hello"), step("tick", 3), step("list", 2, 3))
