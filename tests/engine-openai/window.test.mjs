// SPDX-License-Identifier: Apache-2.0
// The context window (issue 12): without --context-tokens, the window a server lists for the model
// in GET /models (vLLM's max_model_len, OpenRouter's and LM Studio's context_length) is the one
// usage_update reports and compaction works against; --context-tokens wins over it.
import http from "node:http";
import { test, tempDir, assert, openaiAgent, scripted } from "./lib.mjs";
import { chunksOf } from "./fake-openai.mjs";

/** A model server whose /models lists `models` as given (objects) and that answers every chat. */
async function server(t, models) {
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method === "GET" && req.url.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ object: "list", data: models }));
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const e of chunksOf({ text: "ok", usage: { prompt_tokens: 10, completion_tokens: 1 } }, JSON.parse(body)))
        res.write(`data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
      res.end();
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => srv.close(r)));
  // requests: what lib.mjs checks after each test (bodies it can parse); this server keeps none
  return { url: `http://127.0.0.1:${srv.address().port}/v1`, requests: [] };
}

const size = async (a, dir) => {
  const sid = await a.newSession(dir);
  const r = await a.prompt(sid, "hi");
  return r.updates.filter((u) => u.sessionUpdate === "usage_update").at(-1)?.size;
};

test("a listed window is used; --context-tokens wins; none listed: 32768", async (t) => {
  if (scripted(t)) return;
  const dir = tempDir(t);
  const s = await server(t, [
    { id: "m", object: "model", max_model_len: 8192 },
    { id: "other", object: "model", context_length: 4096 },
  ]);
  const a = openaiAgent(t, dir, s, { baseUrl: s.url, store: `${dir}/a.db` });
  await a.init();
  assert.equal(await size(a, dir), 8192, "vLLM's max_model_len is not the window");
  await a.end();
  const b = openaiAgent(t, dir, s, { baseUrl: s.url, store: `${dir}/b.db`, args: ["--context-tokens", "2000"] });
  await b.init();
  assert.equal(await size(b, dir), 2000, "--context-tokens did not win");
  await b.end();
  const bare = await server(t, [{ id: "m", object: "model" }]);
  const c = openaiAgent(t, dir, bare, { baseUrl: bare.url, store: `${dir}/c.db` });
  await c.init();
  assert.equal(await size(c, dir), 32768);
  await c.end();
});
