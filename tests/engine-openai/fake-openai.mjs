// SPDX-License-Identifier: Apache-2.0
// A scripted OpenAI-compatible model server for the `openai` engine's tests and benchmark (issue 12).
//
// It speaks what the engine speaks to llama.cpp's llama-server, Ollama, vLLM or OpenAI:
//   POST /v1/chat/completions   stream:true -> SSE `data: {chunk}` events, then `data: [DONE]`;
//                               stream:false -> one chat.completion JSON object
//   GET  /v1/models             the model list ({object: "list", data: [{id, object: "model", ...}]})
// on 127.0.0.1 with an ephemeral port, and replays scripted replies instead of running a model.
//
// The chunk shapes are those of real servers (fixtures.mjs says where each comes from): OpenAI's
// (role chunk with content "" and refusal null, tool-call deltas split across chunks, `usage: null`
// on every chunk and a final `choices: []` chunk with the usage when stream_options.include_usage)
// and llama.cpp's (role chunk with content null, `reasoning_content` deltas, `timings` on the last
// chunk, the usage chunk after the finish chunk).
//
// Script: which reply answers a request.
//   - a queue: server.push(reply...) - each conversation request takes the next one;
//   - by the last user message: server.on("text" | /regex/, reply...) - requests whose last
//     user message matches take that key's replies in order (a tool round's follow-up request
//     still has the same last user message, so one key scripts a whole turn);
//   - a function: server.respond = (body, req) => reply | undefined, tried first;
//   - otherwise server.fallback (a short plain answer), so an extra request the engine makes
//     (a title, a summary) never hangs a test. `server.repeat = true` keeps the last queued
//     reply for every later request.
// Replies (plain objects; fixtures.mjs has builders):
//   {text, reasoning, tools: [{name, arguments (string), id}], finish, usage, format: "openai"|"llama",
//    split: n (content/arguments fragment size), cutAfter: n (destroy the socket after n events),
//    delayMs: n (between events), hang: true (send the role chunk, then nothing until the client
//    goes), status: n + body + headers (an HTTP error, e.g. 429 with Retry-After)}
//
// Every request is recorded in server.requests: {method, path, headers, body (parsed JSON or
// null), raw, at (ms), aborted (the client closed the socket before the response ended),
// closed (a promise resolved when the socket closed)}. server.waitRequest(pred) resolves with the
// first request that matches (received or future); server.waitAborted() with the first request
// the client gave up on.
//
// With opts.upstream (a real server's base URL: make test-live) every request is forwarded there
// instead, still recorded, and a client that goes away aborts the upstream request too.
//
// As a program (for curl, the benchmark, a person): `node fake-openai.mjs [--port N] [--tokens N]`
// prints `listening http://127.0.0.1:PORT/v1` and serves a plain answer, or with --tokens N one of
// N tokens streamed as fast as the socket takes them. Admin endpoints: GET /_admin/requests (the
// recorded requests as JSON), POST /_admin/push (a reply or array of replies, queued),
// POST /_admin/reset.

import http from "node:http";
import { fileURLToPath } from "node:url";

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** Text of a message's content (a string or an array of parts). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("");
  return "";
}

/** The last message of role "user" in a chat/completions body, as text ("" when none). */
export function lastUserText(body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i]?.role === "user") return contentText(msgs[i].content);
  return "";
}

let idSeq = 0;
const alnum = (n, seed) => {
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let s = "";
  let x = (seed * 2654435761) >>> 0;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += abc[(x >>> 16) % abc.length];
  }
  return s;
};

function pieces(s, size) {
  if (!size || s.length <= size) return [s];
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/**
 * The SSE events (each a JSON object, or the string "[DONE]") of a reply, in the chunk shapes of
 * `format`. `body` is the request (its model, stream_options.include_usage).
 */
export function chunksOf(reply, body = {}) {
  const format = reply.format ?? "openai";
  const llama = format === "llama";
  const n = ++idSeq;
  const id = llama ? `chatcmpl-${alnum(32, n)}` : `chatcmpl-${alnum(29, n)}`;
  const created = 1764720000 + n;
  const model = typeof body.model === "string" ? body.model : "m";
  const includeUsage = body.stream_options?.include_usage === true;
  const size = reply.split ?? 4;
  const text = reply.text ?? "";
  const reasoning = reply.reasoning ?? "";
  const tools = reply.tools ?? [];
  const usage = reply.usage ?? { prompt_tokens: 17, completion_tokens: Math.max(1, Math.ceil((text.length + reasoning.length) / 4)), total_tokens: 0 };
  if (!usage.total_tokens) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const finish = reply.finish ?? (tools.length ? "tool_calls" : "stop");
  const events = [];
  // OpenAI: every chunk carries usage: null when usage was asked for; the envelope has
  // system_fingerprint and service_tier. llama.cpp: its build as system_fingerprint.
  const env = llama
    ? (choices) => ({ choices, created, id, model, system_fingerprint: "b7140-00efb3e1", object: "chat.completion.chunk" })
    : (choices) => ({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        service_tier: "default",
        system_fingerprint: "fp_845eaabc1f",
        choices,
        ...(includeUsage ? { usage: null } : {}),
      });
  const choice = (delta, finishReason = null) =>
    llama ? { finish_reason: finishReason, index: 0, delta } : { index: 0, delta, logprobs: null, finish_reason: finishReason };
  // The role chunk: OpenAI sends content "" and refusal null (content null when the turn is a
  // tool call); llama.cpp content null.
  events.push(env([choice(llama ? { role: "assistant", content: null } : { role: "assistant", content: tools.length && !text ? null : "", refusal: null })]));
  for (const p of pieces(reasoning, size)) if (p) events.push(env([choice({ reasoning_content: p })]));
  for (const p of pieces(text, size)) if (p) events.push(env([choice({ content: p })]));
  tools.forEach((tc, index) => {
    const callId = tc.id ?? (llama ? alnum(32, n * 7 + index) : `call_${alnum(24, n * 7 + index)}`);
    const args = typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments ?? {});
    const frags = pieces(args, size);
    if (llama) {
      // llama.cpp: the first diff of a call carries id, type, name and the first arguments text.
      events.push(env([choice({ tool_calls: [{ index, id: callId, type: "function", function: { name: tc.name, arguments: frags[0] } }] })]));
      for (const f of frags.slice(1)) events.push(env([choice({ tool_calls: [{ index, function: { arguments: f } }] })]));
    } else {
      // OpenAI: id, type and name with empty arguments first, then arguments fragments.
      events.push(env([choice({ tool_calls: [{ index, id: callId, type: "function", function: { name: tc.name, arguments: "" } }] })]));
      for (const f of frags) if (f) events.push(env([choice({ tool_calls: [{ index, function: { arguments: f } }] })]));
    }
  });
  events.push(env([choice({}, finish)]));
  const timings = { prompt_n: usage.prompt_tokens, prompt_ms: 41.2, prompt_per_token_ms: 2.42, prompt_per_second: 412.6, predicted_n: usage.completion_tokens, predicted_ms: 87.3, predicted_per_token_ms: 8.7, predicted_per_second: 114.5 };
  if (includeUsage) {
    const u = env([]);
    u.usage = { ...usage };
    if (!llama) u.usage = { ...u.usage, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
    events.push(u);
  }
  if (llama) events[events.length - 1].timings = timings;
  events.push("[DONE]");
  return events;
}

/** The non-streaming chat.completion object of a reply. */
export function completionOf(reply, body = {}) {
  const llama = reply.format === "llama";
  const n = ++idSeq;
  const tools = reply.tools ?? [];
  const usage = reply.usage ?? { prompt_tokens: 17, completion_tokens: Math.max(1, Math.ceil((reply.text ?? "").length / 4)) };
  const message = { role: "assistant", content: tools.length && !reply.text ? null : (reply.text ?? "") };
  if (reply.reasoning) message.reasoning_content = reply.reasoning;
  if (!llama) message.refusal = null;
  if (tools.length)
    message.tool_calls = tools.map((tc, i) => ({
      id: tc.id ?? `call_${alnum(24, n * 7 + i)}`,
      type: "function",
      function: { name: tc.name, arguments: typeof tc.arguments === "string" ? tc.arguments : JSON.stringify(tc.arguments ?? {}) },
    }));
  return {
    id: `chatcmpl-${alnum(29, n)}`,
    object: "chat.completion",
    created: 1764720000 + n,
    model: typeof body.model === "string" ? body.model : "m",
    choices: [{ index: 0, message, logprobs: null, finish_reason: reply.finish ?? (tools.length ? "tool_calls" : "stop") }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    ...(llama ? { system_fingerprint: "b7140-00efb3e1" } : { system_fingerprint: "fp_845eaabc1f" }),
  };
}

/** Starts a scripted server. opts: {port (0), models: [ids] ("m" and "m-large"), fallback,
 * upstream (a real server's base URL: every request is forwarded there and recorded)}. */
export async function startFakeOpenAI(opts = {}) {
  const s = {
    upstream: opts.upstream ?? null,
    requests: [],
    queue: [],
    keyed: [], // {match, replies}
    respond: null,
    repeat: false,
    models: opts.models ?? ["m", "m-large"],
    modelsStatus: 200,
    fallback: opts.fallback ?? { text: "OK." },
    waiters: [],
    sockets: new Set(),
  };
  s.push = (...replies) => {
    s.queue.push(...replies);
    return s;
  };
  s.on = (match, ...replies) => {
    s.keyed.push({ match, replies });
    return s;
  };
  s.reset = () => {
    s.requests.length = 0;
    s.queue.length = 0;
    s.keyed.length = 0;
    s.respond = null;
    s.repeat = false;
  };
  const notify = () => (s.waiters = s.waiters.filter((w) => !w()));
  s.waitRequest = (pred = () => true, from = 0) =>
    new Promise((resolve) => {
      const check = () => {
        const r = s.requests.slice(from).find(pred);
        if (r) resolve(r);
        return !!r;
      };
      if (!check()) s.waiters.push(check);
    });
  s.waitAborted = () => s.waitRequest((r) => r.aborted);
  /** Chat requests (POST .../chat/completions) only. */
  s.chats = () => s.requests.filter((r) => r.method === "POST" && r.path.endsWith("/chat/completions"));

  const pick = (body, req) => {
    if (s.respond) {
      const r = s.respond(body, req);
      if (r) return r;
    }
    const last = lastUserText(body);
    for (const k of s.keyed) {
      const hit = typeof k.match === "string" ? last === k.match : k.match instanceof RegExp ? k.match.test(last) : k.match(body);
      if (hit && k.replies.length) return k.replies.length > 1 || !s.repeat ? k.replies.shift() : k.replies[0];
    }
    if (s.queue.length) return s.queue.length > 1 || !s.repeat ? s.queue.shift() : s.queue[0];
    return s.fallback;
  };

  const send = (res, status, obj, headers = {}) => {
    const text = typeof obj === "string" ? obj : JSON.stringify(obj);
    res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  async function stream(res, rec, reply, body) {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
    const events = chunksOf(reply, body);
    const lines = events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
    if (reply.hang) {
      res.write(lines[0]);
      return; // nothing more until the client closes the socket
    }
    for (let i = 0; i < lines.length; i++) {
      if (rec.aborted || res.destroyed) return;
      if (reply.cutAfter !== undefined && i === reply.cutAfter) {
        // A stream cut mid-way: the TCP connection goes away without the chunked terminator,
        // after what was written reached the client (else it would see no response at all).
        await new Promise((r) => res.write("", r));
        await new Promise((r) => setTimeout(r, 100));
        rec.cut = true;
        res.socket?.destroy();
        return;
      }
      if (reply.delayMs) {
        res.write(lines[i]);
        await new Promise((r) => setTimeout(r, reply.delayMs));
      } else if (!res.write(lines[i])) await new Promise((r) => res.once("drain", r));
    }
    res.end();
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {}
      const path = req.url.split("?")[0];
      if (path.startsWith("/_admin/")) return admin(req, res, path, body);
      let closedResolve;
      const rec = {
        method: req.method,
        path,
        headers: req.headers,
        body,
        raw,
        at: Date.now(),
        aborted: false,
        closed: new Promise((r) => (closedResolve = r)),
      };
      s.requests.push(rec);
      res.on("close", () => {
        // The response did not finish: the client went away (or we cut it).
        if (!res.writableFinished && !rec.cut) rec.aborted = true;
        rec.closedAt = Date.now();
        closedResolve(rec);
        notify();
      });
      notify();
      if (s.upstream) return proxy(req, res, rec, path, raw);
      if (req.method === "GET" && /\/models$/.test(path)) {
        if (s.modelsStatus !== 200) return send(res, s.modelsStatus, { error: { message: "not found", type: "invalid_request_error", code: s.modelsStatus } });
        return send(res, 200, { object: "list", data: s.models.map((id) => ({ id, object: "model", created: 1764720000, owned_by: "llamacpp" })) });
      }
      if (req.method !== "POST" || !/\/chat\/completions$/.test(path)) return send(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error", code: 404 } });
      // What llama-server and OpenAI answer to a body that is not JSON, or has no messages.
      if (raw && body === null) {
        rec.invalidJson = true;
        return send(res, 400, { error: { message: "Failed to parse the request body as JSON", type: "invalid_request_error", param: null, code: null } });
      }
      if (!isObj(body) || !Array.isArray(body.messages))
        return send(res, 400, { error: { message: "messages is required", type: "invalid_request_error", param: "messages", code: null } });
      const reply = pick(body, rec);
      rec.reply = reply;
      if (reply.status) return send(res, reply.status, reply.body ?? { error: { message: `HTTP ${reply.status}`, type: "server_error", code: reply.status } }, reply.headers);
      if (body.stream === true) return stream(res, rec, reply, body);
      return send(res, 200, completionOf(reply, body));
    });
  });
  server.on("connection", (sock) => {
    s.sockets.add(sock);
    sock.on("close", () => s.sockets.delete(sock));
  });

  // Live mode: forward to a real server (upstream base URL, e.g. http://127.0.0.1:11434/v1), still
  // recording the request and seeing the client go away, so the live suite can assert what the model
  // was sent and that a cancel closed the stream.
  async function proxy(req, res, rec, path, raw) {
    const ac = new AbortController();
    res.on("close", () => ac.abort());
    const headers = {};
    for (const h of ["authorization", "content-type", "accept"]) if (req.headers[h]) headers[h] = req.headers[h];
    try {
      const up = await fetch(s.upstream.replace(/\/$/, "") + path.replace(/^\/v1/, ""), {
        method: req.method,
        headers,
        body: req.method === "GET" ? undefined : raw,
        signal: ac.signal,
      });
      res.writeHead(up.status, { "Content-Type": up.headers.get("content-type") ?? "application/json" });
      for await (const chunk of up.body) if (!res.write(chunk)) await new Promise((r) => res.once("drain", r));
      res.end();
    } catch (e) {
      if (!res.headersSent) send(res, 502, { error: { message: `upstream: ${e.message}`, type: "server_error", code: 502 } });
      else res.destroy();
    }
  }

  function admin(req, res, path, body) {
    if (path === "/_admin/requests") return send(res, 200, s.requests.map(({ closed, reply, ...r }) => r));
    if (path === "/_admin/push" && req.method === "POST") {
      s.push(...(Array.isArray(body) ? body : [body]));
      return send(res, 200, { queued: s.queue.length });
    }
    if (path === "/_admin/reset" && req.method === "POST") {
      s.reset();
      return send(res, 200, {});
    }
    return send(res, 404, { error: "no such admin endpoint" });
  }

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", resolve);
  });
  s.port = server.address().port;
  s.url = `http://127.0.0.1:${s.port}/v1`;
  s.server = server;
  /** Stops listening and drops every open connection. */
  s.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      for (const sock of s.sockets) sock.destroy();
    });
  return s;
}

/** A port on 127.0.0.1 where nothing listens (bound, then released): "connection refused". */
export async function closedPort() {
  const srv = http.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** A reply streaming `tokens` one-word content chunks (the benchmark's), prebuilt per request. */
export function manyTokens(tokens) {
  return { text: "tok ".repeat(tokens), split: 4, usage: { prompt_tokens: 10, completion_tokens: tokens } };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  const s = await startFakeOpenAI({ port: Number(arg("--port", 0)) });
  const tokens = Number(arg("--tokens", 0));
  if (tokens) {
    s.fallback = manyTokens(tokens);
    s.fallback.format = arg("--format", "openai");
  }
  console.log(`listening ${s.url}`);
  const stop = () => s.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
