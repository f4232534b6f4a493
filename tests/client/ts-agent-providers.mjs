// SPDX-License-Identifier: Apache-2.0
// (unstable) An ACP agent written with the official TypeScript SDK 2.4.0 that has LLM providers
// and a sign-in state (rfds/custom-llm-endpoint.mdx, auth/status), for libacp's client side:
// providers "main" (required; anthropic, bedrock) and "openai" (optional); providers/set
// replaces one's route and, when its headers carry Authorization, signs in (auth/status_update);
// a prompt's answer names the routes in effect and the header NAMES it holds, never values.
// Every request it receives is checked strictly against schema.unstable.json
// (tests/interop-agent/schema.mjs) and recorded, with any violation, in $ACP_RECORD.
import { appendFileSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { validate } from "../interop-agent/schema.mjs";

const REQUEST = {
  "providers/list": "ListProvidersRequest",
  "providers/set": "SetProviderRequest",
  "providers/disable": "DisableProviderRequest",
  "auth/status": "AuthStatusRequest",
};
// The client's command line as `ps` shows it (the client spawned us): a header's value must not
// be there.
const parentArgv = () => {
  try {
    return readFileSync(`/proc/${process.ppid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return null;
  }
};
const record = (method, params) => {
  const bad = REQUEST[method] ? validate(REQUEST[method], params) : null;
  const extra = method === "providers/set" ? { parentArgv: parentArgv() } : {};
  if (process.env.ACP_RECORD) appendFileSync(process.env.ACP_RECORD, JSON.stringify({ method, params, bad, ...extra }) + "\n");
};

const providers = {
  main: { supported: ["anthropic", "bedrock"], required: true, current: { apiType: "anthropic", baseUrl: "https://api.anthropic.example" }, headers: {} },
  openai: { supported: ["openai"], required: false, current: null, headers: {} },
};
const state = () => (Object.values(providers).some((p) => p.current && "authorization" in lower(p.headers)) ? "authenticated" : "unauthenticated");
const lower = (h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
let told = null;

const app = acp
  .agent()
  .onRequest("initialize", ({ params }) => {
    record("initialize", params);
    return {
      protocolVersion: 1,
      agentCapabilities: { providers: {}, auth: { status: {} } },
      agentInfo: { name: "ts-agent-providers", version: "1.0.0" },
    };
  })
  .onRequest("providers/list", ({ params }) => {
    record("providers/list", params);
    return {
      providers: Object.entries(providers).map(([providerId, p]) => ({ providerId, supported: p.supported, required: p.required, current: p.current })),
    };
  })
  .onRequest("providers/set", async ({ params, client }) => {
    record("providers/set", params);
    const p = providers[params.providerId];
    if (!p || !p.supported.includes(params.apiType)) throw acp.RequestError.invalidParams(undefined, `cannot set ${params.providerId} to ${params.apiType}`);
    p.current = { apiType: params.apiType, baseUrl: params.baseUrl };
    p.headers = params.headers ?? {};
    if (state() !== told) {
      told = state();
      await client.notify("auth/status_update", { state: told, accounts: [{ label: "Client header", active: true }] });
    }
    return {};
  })
  .onRequest("providers/disable", ({ params }) => {
    record("providers/disable", params);
    const p = providers[params.providerId];
    if (p?.required) throw acp.RequestError.invalidParams(undefined, `${params.providerId} is required`);
    if (p) p.current = null;
    return {};
  })
  .onRequest("auth/status", ({ params }) => {
    record("auth/status", params);
    told = state();
    return { state: told };
  })
  .onRequest("session/new", ({ params }) => {
    record("session/new", params);
    return { sessionId: "s1" };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    record("session/prompt", params);
    const routes = Object.entries(providers)
      .map(([id, p]) => `${id}=${p.current ? `${p.current.apiType}@${p.current.baseUrl}` : "off"}[${Object.keys(p.headers).join(",")}]`)
      .join(" ");
    await client.notify("session/update", { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `routes: ${routes}` } } });
    return { stopReason: "end_turn" };
  })
  .onRequest("*", ({ method, params }) => {
    record(method, params);
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification("*", ({ method, params }) => record(method, params));

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
