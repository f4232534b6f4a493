// SPDX-License-Identifier: Apache-2.0
// A small stdio MCP server for the cases the npm servers do not cover: paginated tools/list,
// requests from the server to the client (ping, roots/list, an unknown method), a tool that
// crashes the server, one that never answers, a tool list that changes, a chatty stderr.
// Mode (argv[2]): "paged" (default), "old" (paged, but initialize answers revision 2024-11-05)
// or "silent" (reads its input, never answers).
import readline from 'node:readline';

const mode = process.argv[2] || 'paged';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const rl = readline.createInterface({ input: process.stdin });
if (mode === 'silent') {
  rl.on('line', () => {});
} else {
  let nextId = 1;
  const pending = new Map();
  const ask = (method, params) =>
    new Promise((resolve) => {
      const id = `s${nextId++}`;
      pending.set(id, resolve);
      send({ id, method, params });
    });
  const seen = {};
  let extra = false;
  const tools = () => {
    const t = ['t1', 't2', 't3', 't4', 't5'].map((name) => ({ name, inputSchema: { type: 'object' } }));
    if (extra) t.push({ name: 't6', inputSchema: { type: 'object' } });
    return t;
  };
  // One secret-looking line and many more lines than the client will pass on.
  if (process.env.FAKE_SECRET) console.error(`token is ${process.env.FAKE_SECRET}!`);
  if (process.env.FAKE_CHATTER) for (let i = 0; i < 500; i++) console.error(`chatter ${i}`);
  rl.on('line', async (line) => {
    const m = JSON.parse(line);
    if (m.id !== undefined && !m.method) {
      pending.get(m.id)?.(m);
      pending.delete(m.id);
      return;
    }
    if (m.method === 'notifications/cancelled') {
      seen.cancelled = m.params.requestId;
      console.error(`cancelled request ${m.params.requestId}`);
    }
    if (m.method === 'notifications/roots/list_changed') seen.rootsChanged = (seen.rootsChanged || 0) + 1;
    if (m.id === undefined) return;
    switch (m.method) {
      case 'initialize':
        seen.initialize = m.params;
        return send({
          id: m.id,
          result: { protocolVersion: mode === 'old' ? '2024-11-05' : '2025-06-18', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'fake', version: '1' } },
        });
      case 'tools/list': {
        if (process.env.FAKE_ENDLESS) {
          // A list that never ends: every page names a next one.
          const at = Number(m.params?.cursor ?? 0);
          const page = [0, 1].map((k) => ({ name: `e${at + k}`, inputSchema: { type: 'object' } }));
          return send({ id: m.id, result: { tools: page, nextCursor: String(at + 2) } });
        }
        const all = tools();
        const start = m.params?.cursor ? Number(m.params.cursor) : 0;
        const page = all.slice(start, start + 2);
        const next = start + 2 < all.length ? String(start + 2) : undefined;
        return send({ id: m.id, result: { tools: page, ...(next ? { nextCursor: next } : {}) } });
      }
      case 'tools/call': {
        const name = m.params.name;
        if (name === 'report') {
          // Notifications we do not use are ignored; the call still completes.
          send({ method: 'notifications/message', params: { level: 'info', data: 'hello' } });
          send({ method: 'notifications/made-up', params: { x: 1 } });
          const ping = await ask('ping');
          const unknown = await ask('sampling/createMessage', { messages: [] });
          const roots = await ask('roots/list');
          const text = JSON.stringify({ ping: ping.result, unknown: unknown.error, roots: roots.result, seen });
          return send({ id: m.id, result: { content: [{ type: 'text', text }] } });
        }
        if (name === 'crash') process.exit(3);
        if (name === 'hang') return; // never answers
        if (name === 'change') {
          extra = true;
          send({ method: 'notifications/tools/list_changed' });
          return send({ id: m.id, result: { content: [{ type: 'text', text: 'changed' }] } });
        }
        if (name === 'leak') return send({ id: m.id, error: { code: -32603, message: `cannot use ${process.env.FAKE_SECRET}` } });
        if (name === 'fail') return send({ id: m.id, error: { code: -32602, message: 'bad arguments for fail' } });
        return send({ id: m.id, result: { content: [{ type: 'text', text: `called ${name}` }] } });
      }
      default:
        return send({ id: m.id, error: { code: -32601, message: 'no such method' } });
    }
  });
}
