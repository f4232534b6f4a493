// SPDX-License-Identifier: Apache-2.0
// Interop: our rpc/ + rt/ (tests/echo_peer, over stdio) against the official TypeScript SDK's
// raw JSON-RPC connection (the Connection class of @agentclientprotocol/sdk 2.4.0's core layer,
// which sends arbitrary methods), requests flowing both ways at once, cancellation both ways,
// and EOF with requests pending on either side. Ids the SDK cannot represent (integers above
// 2^53) are checked with raw NDJSON, since the SDK parses with JSON.parse.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

const BUILD = process.env.ACP_BUILD;
const SOURCE = process.env.ACP_SOURCE ?? process.cwd();
assert.ok(BUILD, "ACP_BUILD must point at the build directory");
const PEER = path.join(BUILD, "tests", "echo_peer");
// The raw connection is not in the package's export map; load it from its file.
const { Connection } = await import(
  pathToFileURL(path.join(SOURCE, "node_modules/@agentclientprotocol/sdk/dist/core/jsonrpc.js")).href
);

function startPeer() {
  const child = spawn(PEER, [], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, stderr: () => stderr })),
  );
  return { child, exited };
}

// An SDK connection to a fresh peer. onRequest(request) serves the peer's calls: request is
// the SDK's IncomingRequest ({method, params, signal, responder}); its result is the answer,
// a thrown RequestError the error answer.
function connect(onRequest) {
  const peer = startPeer();
  const stream = ndJsonStream(Writable.toWeb(peer.child.stdin), Readable.toWeb(peer.child.stdout));
  const handler = {
    async handleMessage(msg) {
      if (msg.kind !== "request") return { handled: true };
      let result;
      try {
        result = await onRequest(msg);
      } catch (e) {
        await msg.responder.respondWithError(
          e instanceof RequestError ? e : { code: -32603, message: String(e) },
        );
        return { handled: true };
      }
      await msg.responder.respond(result);
      return { handled: true };
    },
  };
  const conn = new Connection(stream, [handler]);
  return { ...peer, conn };
}

test("requests both ways at once, ids matched", async () => {
  let pingsServed = 0;
  const { child, conn, exited } = connect(async ({ method, params }) => {
    assert.equal(method, "_ping");
    pingsServed++;
    // Answer out of order: later pings first, half of them after a turn.
    if (params.i % 2) await new Promise((r) => setImmediate(r));
    return { i: params.i };
  });
  const N = 300;
  const echoes = [];
  for (let i = 0; i < N; i++) echoes.push(conn.sendRequest("_echo", { i, s: `é${i}"\\\n` }));
  const pings = conn.sendRequest("_start_pings", { count: N });
  for (let i = N; i < 2 * N; i++) echoes.push(conn.sendRequest("_echo", { i, s: `é${i}"\\\n` }));
  const results = await Promise.all(echoes);
  results.forEach((r, i) => assert.deepEqual(r, { i, s: `é${i}"\\\n` }));
  assert.deepEqual(await pings, { ok: N, bad: 0 });
  assert.equal(pingsServed, N);
  // Unknown methods are answered -32601 and the connection goes on.
  await assert.rejects(conn.sendRequest("_nope", {}), (e) => e.code === -32601);
  assert.deepEqual(await conn.sendRequest("_echo", { after: true }), { after: true });
  child.stdin.end();
  const { code } = await exited;
  assert.equal(code, 0);
  conn.close();
});

test("$/cancel_request both ways", async () => {
  let sawAbort = false;
  const { child, conn, exited } = connect(({ method, signal }) => {
    assert.equal(method, "_slow");
    // The peer cancels right after calling: the SDK aborts this request's signal, and we
    // answer -32800.
    return new Promise((_, reject) => {
      const onAbort = () => {
        sawAbort = true;
        reject(RequestError.requestCancelled());
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  });
  // Node -> peer: _hang only ends when cancelled.
  const ac = new AbortController();
  const hang = conn.sendRequest("_hang", {}, undefined, { cancellationSignal: ac.signal });
  await conn.sendRequest("_echo", {}); // the peer has _hang by now
  ac.abort();
  await assert.rejects(hang, (e) => e instanceof RequestError && e.code === -32800);
  // Peer -> node: it reports the code our cancelled handler answered with.
  assert.deepEqual(await conn.sendRequest("_call_and_cancel", {}), { code: -32800 });
  assert.ok(sawAbort, "the SDK saw the peer's $/cancel_request");
  child.stdin.end();
  assert.equal((await exited).code, 0);
  conn.close();
});

test("EOF with requests pending on both sides", async () => {
  // The peer calls _never on us; we never answer. When its input ends, the call resolves
  // locally with "connection closed", and it says so on stderr.
  const { child, conn, exited } = connect(() => new Promise(() => {}));
  assert.deepEqual(await conn.sendRequest("_call_pending", {}), { sent: true });
  child.stdin.end();
  const r = await exited;
  assert.equal(r.code, 0);
  assert.match(r.stderr(), /eof closed_calls=1/);
  conn.close();

  // Our side: requests pending when the peer goes away are rejected, not left hanging.
  const b = connect(() => ({}));
  const pending = [b.conn.sendRequest("_hang", {}), b.conn.sendRequest("_hang", {})];
  await b.conn.sendRequest("_echo", {});
  await b.conn.sendNotification("_quit", {});
  for (const p of pending) await assert.rejects(p);
  assert.equal((await b.exited).code, 0);
  b.child.stdin.destroy();
});

// Raw NDJSON for what JSON.parse cannot carry: ids are echoed as the exact text we sent.
test("ids echoed verbatim: huge integers, strings, null", async () => {
  const { child, exited } = startPeer();
  const lines = createInterface({ input: child.stdout });
  const got = [];
  const want = 5;
  const done = new Promise((resolve) =>
    lines.on("line", (l) => {
      got.push(l);
      if (got.length === want) resolve();
    }),
  );
  child.stdin.write(
    '{"jsonrpc":"2.0","id":9007199254740993,"method":"_echo","params":{"n":9007199254740993}}\n' +
      '{"jsonrpc":"2.0","id":-123456789012345678901234567890,"method":"_echo"}\r\n' +
      '\n{"jsonrpc":"2.0","id":"a\\"b\\u00e9","method":"_echo","params":[1]}\n' +
      '{"jsonrpc":"2.0","id":null,"method":"_echo","params":{}}\n' +
      '{"jsonrpc":"2.0","id":7,"method":"_missing"}\n',
  );
  await done;
  child.stdin.end();
  assert.equal((await exited).code, 0);
  assert.match(got[0], /"id":9007199254740993[,}]/);
  assert.match(got[0], /"n":9007199254740993[,}]/);
  assert.match(got[1], /"id":-123456789012345678901234567890[,}]/);
  assert.match(got[2], /"id":"a\\"b(\\u00e9|é)"/);
  assert.deepEqual(JSON.parse(got[2]).result, [1]);
  assert.deepEqual(JSON.parse(got[3]), { jsonrpc: "2.0", id: null, result: {} });
  assert.equal(JSON.parse(got[4]).error.code, -32601);
  for (const l of got) assert.doesNotThrow(() => JSON.parse(l)); // stdout is only JSON-RPC
});
